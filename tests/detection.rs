//! Provider detection from the payload alone: every recording, stripped of its capture
//! wrapper (and every hand-written campaign, of its envelope), is recognised as the CLI
//! that wrote it and tracked the same way.

use hooktrack::{Agent, Format};

use crate::support::{campaigns, replay_bytes, turn_results};

/// A corpus folder is named after its agent's wire name.
fn expected_provider(dir: &str) -> &'static str {
    match Agent::from_name(dir) {
        Ok(agent) if agent.name() == dir => agent.name(),
        _ => panic!("corpus/{dir} is not named after an agent"),
    }
}

/// Every agent has recordings to be recognised from: adding one means adding its campaigns.
#[test]
fn every_agent_has_a_corpus_folder_with_campaigns() {
    let all = campaigns();
    for agent in Agent::ALL {
        assert!(
            all.iter().any(|path| path
                .parent()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n == agent.name())),
            "no campaign in corpus/{}/",
            agent.name()
        );
    }
}

/// The payloads of a campaign, one per line, as a plain `cat >> file` hook would write them.
fn bare_payloads(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(row) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        // The launcher's row (the agent process's end) is no agent payload: kept whole,
        // as a replay of the store reads it.
        if row.get("via").and_then(serde_json::Value::as_str) == Some("launcher") {
            out.extend_from_slice(line);
            out.push(b'\n');
            continue;
        }
        let Some(payload) = row.get("payload") else {
            continue;
        };
        out.extend_from_slice(payload.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[test]
fn every_campaign_is_recognised_from_its_payloads_alone() {
    let mut failures = Vec::new();
    for path in campaigns() {
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_owned();
        let original = std::fs::read(&path).expect("read campaign");
        let bare = bare_payloads(&original);
        let (with_wrapper, _) = replay_bytes(&original, Format::Json);
        let (alone, _) = replay_bytes(&bare, Format::Json);
        let detected = alone
            .provider
            .as_ref()
            .map(|d| d.provider.name())
            .unwrap_or("none");
        if detected != expected_provider(&dir) {
            failures.push(format!("{}: detected {detected}", path.display()));
        }
        if turn_results(&alone) != turn_results(&with_wrapper) {
            failures.push(format!(
                "{}: payloads alone give {:?}, rows give {:?}",
                path.display(),
                turn_results(&alone),
                turn_results(&with_wrapper)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
