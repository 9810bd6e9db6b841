//! Codex CLI 0.171.0: Claude Code's hook shape plus a string `turn_id` and an `Interrupt`
//! event; a `hooks.json` read with serde's `deny_unknown_fields`; entries that run only
//! once Codex trusts them; a rollout that records failed model calls.

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::claude_code::PROMPT_TO_STOP;
use super::{
    ArgumentField, Descriptor, DetectRule, DialogLook, EntrySchema, FeatureSwitches, Headless,
    HookTrust, InstallFacts, PreflightFacts, Screen, Strictness, TimeoutUnit, Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::event::TurnId;
use crate::payload::TurnIdField;
use crate::provider::Capabilities;
use crate::row::Row;

/// Codex CLI.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::Codex,
    name: "codex",
    store_name: "codex",
    label: "Codex CLI",
    aliases: &[],
    family: None,
    programs: &["codex"],
    config: ConfigLocation {
        home_env: Some("CODEX_HOME"),
        user_home_env: None,
        dot_dir: ".codex",
        file: "hooks.json",
        format: ConfigFormat::JsonHooks,
        project_install: true,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        agent_scopes: true,
        subagent_scope_is_turn: true,
        interrupt_hook: true,
        tool_starts_turn: false,
        ..PROMPT_TO_STOP
    },
    detect: &[
        DetectRule {
            rank: 30,
            test: string_turn_id,
        },
        DetectRule {
            rank: 50,
            test: session_start_with_permission_mode,
        },
    ],
    named_by_row: "the row names codex",
    transcript: Some(Transcript {
        location: "$CODEX_HOME/sessions/<y>/<m>/<d>/rollout-*.jsonl",
        classify: transcript::classify,
        needles: &[],
        session_file: None,
    }),
    install: InstallFacts {
        timeout: 5,
        timeout_unit: TimeoutUnit::Seconds,
        // Codex clamps these two to 3 s.
        shorter_timeouts: &[("SessionEnd", 3), ("Interrupt", 3)],
        unknown_entry_keys_fatal: false,
        // `hooks.json` is read with serde's `deny_unknown_fields`: one more key and no
        // hook runs.
        top_level_keys: Some(&["description", "hooks"]),
        // A malformed entry fails the whole file; event names it does not know are
        // ignored.
        strict: Strictness::KnownEvents,
        strictness: "Codex ignores a hooks.json with any invalid entry",
        schema: EntrySchema {
            null_matcher: true,
            hooks_optional: true,
            entry_types: Some(&["command", "mcp_tool", "prompt", "agent"]),
            whole_timeouts: true,
            matcher: true,
        },
        off_switches: &[],
        per_session_entries: false,
        daemon: None,
    },
    preflight: PreflightFacts {
        feature_switches: Some(FeatureSwitches {
            file: "config.toml",
            table: "features",
            keys: &["hooks", "codex_hooks"],
        }),
        hook_trust: Some(HookTrust {
            who: "Codex",
            program: "codex",
            trust_command: "/hooks",
            bypass_flag: "--dangerously-bypass-hook-trust",
        }),
        required_setting: None,
        folder_trust: None,
        config_doctor: None,
        runtime: None,
    },
    // The `exec` subcommand (alias `e`), after any global option.
    headless: Headless {
        flags: &[],
        subcommands: &["exec", "e"],
        value_options: &[
            "-c",
            "--config",
            "-m",
            "--model",
            "-p",
            "--profile",
            "-s",
            "--sandbox",
            "-a",
            "--ask-for-approval",
            "-C",
            "--cd",
        ],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "codex",
        oldest: "0.171.0",
        newest: "0.171.0",
        events_since: &[],
    },
    plugin: None,
    screen: Some(SCREEN),
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// Codex's approval dialog for a command, as its TUI draws it (`-a on-request`, a command
/// that asks to leave the sandbox). No hook fires on the answer: "Yes" shows "✔ You
/// approved codex to run …" and the call runs, a rejection "✗ You canceled the request to
/// run …". The screens are kept beside this file (`screens/`, read by the tests in
/// `crate::screen`): the dialog, the call running after "Yes", the prompt after the call's
/// end, a second dialog and its rejection (`0.171.0-exec-*`, the TUI alone); the dialog
/// and the call running under `hooktrack session` (`0.171.0-session-*`, kept by the
/// end-to-end test).
pub const SCREEN: Screen = Screen {
    dialog: &[DialogLook {
        text: "Would you like to run the following command?",
        seen_in: "0.171.0, a command's approval dialog (screens/0.171.0-exec-dialog.txt)",
    }],
};

/// What Codex's tools act on, as its hooks name them (0.171.0's recordings: `Bash` with
/// a `command`; `apply_patch`'s `command` is the whole patch, not shown).
const TOOL_ARGUMENTS: &[ArgumentField] = &[ArgumentField::new("Bash", "command")];

/// Codex CLI 0.171.0's events.
const EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
    "Interrupt",
];

fn string_turn_id(row: &Row<'_>) -> Option<&'static str> {
    matches!(row.payload.turn_id, Some(TurnIdField(TurnId::Text(_))))
        .then_some("string turn_id (Codex)")
}

/// Codex's `SessionStart` has a `permission_mode`, Claude Code's none.
fn session_start_with_permission_mode(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    (row.event_name == "SessionStart" && p.transcript_path.is_some() && p.permission_mode.is_some())
        .then_some("SessionStart with permission_mode (Codex)")
}
