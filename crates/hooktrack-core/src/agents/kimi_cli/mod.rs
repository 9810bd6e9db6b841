//! Kimi CLI 1.x, the legacy Python CLI with 13 hook events: Kimi Code's event and field
//! names (a subset), so Kimi Code's adapter; its turns start at the prompt and may run
//! unannounced after a background task.

use super::kimi_code::{self, FAMILY, HEADLESS, PROGRAMS, TOML_INSTALL};
use super::{
    ArgumentField, Descriptor, DetectRule, InstalledSign, LaunchGate, Majors, Member,
    PreflightFacts, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::provider::Capabilities;
use crate::row::Row;

/// Kimi CLI 1.x.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::KimiCli,
    name: "kimi-cli",
    store_name: "kimi-cli",
    label: "Kimi CLI 1.x",
    aliases: &[],
    family: Some(Member {
        family: &FAMILY,
        majors: Majors::Only(1),
        installed: &[InstalledSign::UserFile],
    }),
    programs: PROGRAMS,
    config: ConfigLocation {
        home_env: Some("KIMI_SHARE_DIR"),
        user_home_env: None,
        dot_dir: ".kimi",
        file: "config.toml",
        format: ConfigFormat::TomlHooks,
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: kimi_code::adapter::normalize,
    capabilities: Capabilities {
        prompt_starts_turn: true,
        unannounced_turns: true,
        interrupt_hook: false,
        tool_starts_turn: false,
        subagents_outlive_turn: false,
        ..kimi_code::CAPABILITIES
    },
    detect: &[DetectRule {
        rank: 70,
        test: plain_uuid,
    }],
    named_by_row: "the row names kimi-cli",
    transcript: None,
    install: super::InstallFacts {
        // Kimi CLI ignores an unknown key in an entry.
        unknown_entry_keys_fatal: false,
        // Its entries go into the user's shared config, routed by the environment.
        per_session_entries: false,
        daemon: None,
        ..TOML_INSTALL
    },
    preflight: PreflightFacts::NONE,
    headless: HEADLESS,
    launch_gate: Some(LaunchGate {
        program: "kimi",
        text: "Kimi CLI 1.52's `kimi` command is a deprecation gate that runs neither the agent nor \
         its hooks; run the real CLI with the venv's python: `python -c 'import sys; from \
         kimi_cli.__main__ import run_original_cli; sys.exit(run_original_cli(sys.argv[1:]))' \
         ARGS` (hooktrack session --agent kimi-cli -- python -c ...)",
    }),
    worker: None,
    relay: None,
    versions: Versions {
        program: "kimi",
        oldest: "1.52.0",
        newest: "1.52.0",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// What Kimi CLI 1.x's tools act on (1.52.0's recordings: `Shell`'s `command`,
/// `ReadFile`'s and `WriteFile`'s `path`, `Agent`'s `description`; the others as its
/// tool list names them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("Shell", "command"),
    ArgumentField::new("ReadFile", "path"),
    ArgumentField::new("WriteFile", "path"),
    ArgumentField::new("StrReplaceFile", "path"),
    ArgumentField::new("Glob", "pattern"),
    ArgumentField::new("Grep", "pattern"),
    ArgumentField::new("Agent", "description"),
];

/// Kimi CLI 1.52's 13 events (an unknown event name fails its startup).
const EVENTS: [&str; 13] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
];

/// A plain-UUID session id with neither Kimi Code's `client_type` nor the transcript the
/// other CLIs name.
fn plain_uuid(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    let session = p.session_id.as_deref()?;
    let plain_uuid = session.len() == 36 && session.bytes().filter(|b| *b == b'-').count() == 4;
    if !plain_uuid || p.transcript_path.is_some() || p.client_type.is_some() {
        return None;
    }
    Some(if row.provider_hint.as_deref() == Some(FAMILY.name) {
        "kimi row with a plain-uuid session_id and no client_type"
    } else {
        "plain-uuid session_id, no client_type, no transcript_path (Kimi CLI 1.x)"
    })
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::transcript::{Entry, classify};

    #[test]
    fn kimi_cli_writes_nothing_hooktrack_follows() {
        // Kimi Code's wire file is followed; Kimi CLI 1.x's lines are not read.
        let gemini = r#"{"id":"x","timestamp":"2026-12-01T13:19:04.160Z","type":"info","content":"Request cancelled."}"#;
        let wire = r#"{"type":"turn.ended","agentId":"main","turnId":1,"reason":"cancelled","durationMs":9264,"time":1796171745762}"#;
        for line in [gemini, wire] {
            assert_eq!(
                classify(Agent::KimiCli, line.as_bytes()),
                Entry::NotFollowed
            );
        }
    }
}
