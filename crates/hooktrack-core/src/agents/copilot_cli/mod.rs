//! GitHub Copilot CLI 1.0: command hooks in `~/.copilot/settings.json`. hooktrack installs
//! the Claude-style dialect (`{"PreToolUse": [{"hooks": [{"type": "command", ...}]}]}`,
//! payloads in Claude Code's snake_case with `hook_event_name`) rather than the native
//! camelCase one: both fire in 1.0.102, and Claude's adapter reads the former. A group must
//! have no `matcher` at all: an empty one voids every setting of the file.
//!
//! A user turn runs from `UserPromptSubmit` to `Stop`. No hook carries a turn or tool-call
//! id, so calls are paired by name and input in order. Escape, a permission dialog's answer
//! and compaction's end are only in its session log, the second signal (`transcript.rs`).

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::{
    ArgumentField, Descriptor, DetectRule, EntrySchema, Headless, InstallFacts, PreflightFacts,
    Relay, SessionFile, SessionLayout, Strictness, TimeoutUnit, Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::Capabilities;
use crate::row::Row;

/// GitHub Copilot CLI.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::CopilotCli,
    name: "copilot-cli",
    store_name: "copilot",
    label: "GitHub Copilot CLI",
    aliases: &["copilot"],
    family: None,
    programs: &["copilot"],
    config: ConfigLocation {
        // `$COPILOT_HOME` replaces `~/.copilot` (settings, session state).
        home_env: Some("COPILOT_HOME"),
        user_home_env: None,
        dot_dir: ".copilot",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        // Repo hooks (`.github/hooks/*.json`) run only in a trusted folder and are another
        // file format; hooktrack installs user-level entries only.
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // No tool-call id in any hook.
        tool_ids: false,
        // A subagent's prompt and `Stop` carry its `agent_id`; its prompt opens its scope
        // (the adapter), `SubagentStop` closes it: that is its nested turn.
        agent_scopes: true,
        subagent_scope_is_turn: true,
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 16,
        test: copilot_shape,
    }],
    named_by_row: "the row names copilot",
    transcript: Some(Transcript {
        location: "~/.copilot/session-state/<sessionId>/events.jsonl",
        classify: transcript::classify,
        // Every marker line names its type; the log's long lines (system prompt, model
        // snapshots) hold neither.
        needles: &[
            "\"abort\"",
            "\"session.compaction_complete\"",
            "\"permission.completed\"",
            "\"tool.execution_complete\"",
        ],
        // Only `Stop`, `PreCompact` and `SubagentStart` name the log: an Escape in a
        // session's first turn comes before any of them.
        session_file: Some(SessionFile {
            dir: "session-state",
            layout: SessionLayout::Flat,
            file: "events.jsonl",
        }),
    }),
    install: InstallFacts {
        // Seconds (`timeout`, Claude-style; the native dialect's `timeoutSec`).
        timeout: 5,
        timeout_unit: TimeoutUnit::Seconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        // One malformed group ("matcher cannot be empty") makes Copilot ignore the whole
        // file: every event's groups must be well formed.
        strict: Strictness::EveryEvent,
        strictness: "GitHub Copilot CLI ignores the whole settings file",
        schema: EntrySchema {
            null_matcher: false,
            hooks_optional: false,
            entry_types: None,
            whole_timeouts: false,
            matcher: false,
        },
        off_switches: &[],
        per_session_entries: false,
        daemon: None,
    },
    // Folder trust (`config.json` `trustedFolders`) gates repo hooks only: user-level
    // hooks fired in 1.0.102 in an untrusted folder, in `-p` as in the TUI (which asks
    // to trust the folder before the first prompt, when no hook has fired yet).
    // A native binary (`@github/copilot-linux-x64`) behind a Node launcher.
    preflight: PreflightFacts::NONE,
    headless: Headless {
        flags: &["-p", "--prompt"],
        subcommands: &[],
        value_options: &[],
    },
    launch_gate: None,
    worker: None,
    // `copilot` from npm is `@github/copilot/npm-loader.js` (1.0.102): it runs
    // `@github/copilot-<platform>-<arch>` (`linuxmusl` first on a musl system) with the
    // same arguments and `stdio: inherit`, and exits with its code, or 1 after a message
    // when a signal ended it.
    relay: Some(Relay {
        launcher: "@github/copilot/npm-loader.js",
        natives: &[
            "@github/copilot-linux-x64/copilot",
            "@github/copilot-linux-arm64/copilot",
            "@github/copilot-darwin-arm64/copilot",
            "@github/copilot-darwin-x64/copilot",
        ],
        seen_in: "1.0.102",
    }),
    versions: Versions {
        program: "copilot",
        oldest: "1.0.102",
        newest: "1.0.102",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// What GitHub Copilot CLI's tools act on (1.0.102's recordings: `bash` and `Bash` with a
/// `command`, `Read` with a `path`; `view`, `edit` and `create` as its tool list names them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("bash", "command"),
    ArgumentField::new("Bash", "command"),
    ArgumentField::new("Read", "path"),
    ArgumentField::new("view", "path"),
    ArgumentField::new("edit", "path"),
    ArgumentField::new("create", "path"),
    ArgumentField::new("Agent", "description"),
];

/// The Claude-style events Copilot 1.0.102 fires (`StopFailure` and `PostCompact` it does
/// not; `ErrorOccurred` is its own).
const EVENTS: [&str; 13] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "Notification",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "ErrorOccurred",
];

/// Every payload has a `timestamp` (ISO text, or epoch milliseconds in the camelCase
/// ones); those of `Stop`, `PreCompact` and `SubagentStart` name the session log under
/// `.copilot/session-state/`. No other agent sends a `timestamp` without a transcript.
fn copilot_shape(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    match p.transcript_path.as_deref() {
        Some(path) => (path.contains("/session-state/") && path.ends_with("/events.jsonl"))
            .then_some("transcript_path under session-state/…/events.jsonl (GitHub Copilot CLI)"),
        None => (p.timestamp.is_some() && p.session_id.is_some())
            .then_some("timestamp without transcript_path (GitHub Copilot CLI)"),
    }
}
