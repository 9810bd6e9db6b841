//! Every campaign's hand-written expectation (`X.expect.toml` next to `X.ndjson`),
//! checked against a replay.

use std::path::Path;

use hooktrack::Format;
use serde::Deserialize;

use crate::support::{campaigns, replay_file, turn_results};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expectation {
    turns: Vec<String>,
    final_phase: String,
    last_result: String,
}

fn check(path: &Path) -> Result<(), String> {
    let expect_path = path.with_extension("expect.toml");
    let text = std::fs::read_to_string(&expect_path)
        .map_err(|e| format!("{}: {e}", expect_path.display()))?;
    let expected: Expectation =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", expect_path.display()))?;
    let (report, _) = replay_file(path, Format::Json);
    let posture = serde_json::to_value(&report.final_posture).map_err(|e| e.to_string())?;
    let actual_turns = turn_results(&report);
    let phase = posture["turn"]["phase"].as_str().unwrap_or("?").to_owned();
    let last = report.final_posture.last_turn.result.name().to_owned();
    let mut problems = Vec::new();
    if actual_turns != expected.turns {
        problems.push(format!(
            "turns: expected {:?}, got {:?}",
            expected.turns, actual_turns
        ));
    }
    if phase != expected.final_phase {
        problems.push(format!(
            "final_phase: expected {}, got {phase}",
            expected.final_phase
        ));
    }
    if last != expected.last_result {
        problems.push(format!(
            "last_result: expected {}, got {last}",
            expected.last_result
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}:\n    {}",
            path.display(),
            problems.join("\n    ")
        ))
    }
}

#[test]
fn every_campaign_meets_its_expectation() {
    let campaigns = campaigns();
    assert!(
        campaigns.len() >= 25,
        "corpus has {} campaigns",
        campaigns.len()
    );
    let failures: Vec<String> = campaigns.iter().filter_map(|p| check(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} campaigns differ:\n  {}",
        failures.len(),
        campaigns.len(),
        failures.join("\n  ")
    );
}
