//! Letta Code 0.25 (npm `@letta-ai/letta-code`): Claude Code-style command hooks in
//! `~/.letta/settings.json`, with a payload of Letta's own (`event_type`,
//! `working_directory`, no `session_id`; docs/providers.md, "Letta Code").
//!
//! No event names its session on its own: the conversation is on `SessionStart`,
//! `UserPromptSubmit` and `SessionEnd` only, the tool events name the main agent
//! (`agent_id`), `Stop` and `Notification` only the folder. So a session is the agent
//! process that ran the hook ([`SessionKey::AgentProcess`](super::SessionKey)). A turn
//! runs from `UserPromptSubmit` to `Stop` (fired at `end_turn` only); Escape during a
//! call leaves the call's failure with Letta's own "Interrupted by user" as its output; a
//! failed model call only `Notification(level: error)`.

pub(crate) mod adapter;

use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, Headless, InstallFacts, OffSwitch,
    PreflightFacts, SessionKey, Strictness, TimeoutUnit, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// Letta Code.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::LettaCode,
    name: "letta-code",
    store_name: "letta",
    label: "Letta Code",
    aliases: &["letta"],
    family: None,
    programs: &["letta"],
    config: ConfigLocation {
        // `getSettingsPath()`: `$HOME/.letta/settings.json` (`os.homedir()` when `$HOME`
        // is unset), no variable of its own: `$HOME` is its home.
        home_env: None,
        user_home_env: Some("HOME"),
        dot_dir: ".letta",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        // Letta also reads `<project>/.letta/settings.json` and `settings.local.json`.
        project_install: true,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // No hook marks a permission wait that hooktrack may subscribe to (see `EVENTS`).
        dialogs: Dialogs {
            permission_answer: PermissionAnswer::CallGoesOn,
            request_echo: None,
            ask_user_tools: &["AskUserQuestion"],
        },
        // `letta -p` fires the tool events only: its first call starts the turn (in the
        // TUI a prompt always came first).
        tool_starts_turn: true,
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        // Only Letta names its event `event_type` (and sends no `hook_event_name`).
        rank: 11,
        test: letta_event_type,
    }],
    named_by_row: "the row names letta",
    // Its session file (`~/.letta/lc-local-backend/conversations/…/messages.jsonl`, the
    // local backend's only) is not followed: it records neither a failed model call nor
    // an Escape the hooks do not already tell.
    transcript: None,
    install: InstallFacts {
        // Milliseconds (`hook.timeout ?? DEFAULT_TIMEOUT_MS`, handed to the launcher).
        timeout: 5000,
        timeout_unit: TimeoutUnit::Milliseconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        strict: Strictness::Lenient,
        strictness: "Letta Code runs the entries it can read",
        schema: COMMON_SCHEMA,
        off_switches: &[OffSwitch {
            path: &["hooks", "disabled"],
            off_when: true,
            why: "`hooks.disabled` is true (`/hooks` → Disable all hooks)",
        }],
        per_session_entries: false,
        daemon: None,
    },
    preflight: PreflightFacts::NONE,
    // `-p` / `--prompt`: one headless turn.
    headless: Headless {
        flags: &["-p", "--prompt"],
        subcommands: &[],
        value_options: &[],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "letta",
        oldest: "0.25.9",
        newest: "0.25.9",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
    session_key: SessionKey::AgentProcess,
};

/// What Letta Code's tools act on (its recordings: `Bash`, `Write`, `Read`; the others
/// as its tool schemas name them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("Bash", "command"),
    ArgumentField::new("Read", "file_path"),
    ArgumentField::new("Write", "file_path"),
    ArgumentField::new("Edit", "file_path"),
    ArgumentField::new("Glob", "pattern"),
    ArgumentField::new("Grep", "pattern"),
];

/// Letta Code 0.25.9's events hooktrack subscribes to. Left out: `PermissionRequest`,
/// because a `PermissionRequest` hook that exits 0 *allows* the call without asking
/// (`checkPermissionWithHooks`: "Allowed by hook"), and hooktrack's hook always exits 0;
/// `SubagentStop` and `PreCompact`, never seen fire (no subagent, no compaction against
/// the mock), whose ends no hook would close.
const EVENTS: [&str; 8] = [
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
];

/// Only Letta Code names its event `event_type`, with no `hook_event_name`.
fn letta_event_type(row: &Row<'_>) -> Option<&'static str> {
    (row.payload.event_type.is_some() && row.payload.hook_event_name.is_none())
        .then_some("an event_type of Letta Code's (Letta Code)")
}
