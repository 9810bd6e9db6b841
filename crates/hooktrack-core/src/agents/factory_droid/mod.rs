//! Factory Droid 0.225: Claude-format command hooks in `~/.factory/settings.json`, payloads
//! in Claude Code's snake_case shape, so Claude Code's adapter reads them.
//!
//! A TUI turn runs from `UserPromptSubmit` to `Stop`; `droid exec` sends no
//! `UserPromptSubmit`, so its one turn is the unannounced one its `Stop` ends. No hook
//! carries a tool-call id: calls pair by name and input. A permission dialog is only
//! `Notification(permission_prompt)` after `PreToolUse`; its answer only the pane shows
//! ([`SCREEN`]). The TUI runs its agent loop in a `droid exec` child, its worker, which
//! outlives a killed TUI and fires the hooks of its end (the descriptor's `worker`). Escape and a failed model call
//! both end with a plain `Stop`, and an Escape while the answer streams with none (only
//! `Notification(idle_prompt)`): the session file (`transcript_path`) tells them apart
//! (`transcript.rs`). A `Task` subagent is a session of its own, which the session
//! router folds into its caller's (`sessions.rs`, `adapter.rs`).

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, DialogLook, Headless, InstallFacts,
    PreflightFacts, Screen, Strictness, TimeoutUnit, Transcript, Versions, Worker,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::Capabilities;
use crate::row::Row;

/// Factory Droid.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::FactoryDroid,
    name: "factory-droid",
    store_name: "droid",
    label: "Factory Droid",
    aliases: &["droid"],
    family: None,
    programs: &["droid"],
    config: ConfigLocation {
        home_env: None,
        // `$FACTORY_HOME_OVERRIDE` replaces HOME: it holds `.factory/` (seen in 0.225.2:
        // settings, hooks and sessions all under it).
        user_home_env: Some("FACTORY_HOME_OVERRIDE"),
        dot_dir: ".factory",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        // A project's `.factory/settings.json` runs only in a folder the user trusted
        // (the TUI asks before its first prompt); hooktrack installs user-level entries,
        // which fired in 0.225.2 in an untrusted folder, in `exec` as in the TUI.
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // No tool-call id in any hook.
        tool_ids: false,
        // `droid exec` runs its one turn without a `UserPromptSubmit`: its first tool
        // call starts it, its `Stop` ends it (or, with no call, ends a turn no prompt
        // announced).
        unannounced_turns: true,
        tool_starts_turn: true,
        // A `Task` subagent's session, routed into its caller's and named by its id
        // (`sessions.rs`, which also names it in the caller's `SubagentStop`), is one scope
        // from its `SessionStart` to that `SubagentStop`: its nested turn. Every `Stop`
        // left is the main agent's (the subagent's own is activity), also while a
        // background subagent runs.
        agent_scopes: true,
        subagent_scope_is_turn: true,
        subagents_outlive_turn: true,
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 17,
        test: droid_transcript,
    }],
    named_by_row: "the row names droid",
    transcript: Some(Transcript {
        location: "~/.factory/sessions/<cwd-slug>/<session_id>.jsonl",
        classify: transcript::classify,
        // A marker is a message of the user's role the user alone sees, or a tool result
        // that is an error; the long lines (system reminders, tool schemas) hold neither.
        needles: transcript::NEEDLES,
        session_file: None,
    }),
    install: InstallFacts {
        // Seconds, as Claude Code's.
        timeout: 5,
        timeout_unit: TimeoutUnit::Seconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        strict: Strictness::Lenient,
        strictness: "Factory Droid drops a malformed hook entry",
        schema: COMMON_SCHEMA,
        off_switches: &[],
        per_session_entries: false,
        daemon: None,
    },
    // Folder trust gates a project's own settings only (see `project_install`).
    // A native binary (`@factory/cli-linux-x64`).
    preflight: PreflightFacts::NONE,
    headless: Headless {
        flags: &[],
        subcommands: &["exec"],
        value_options: &[
            "--settings",
            "--append-system-prompt",
            "--append-system-prompt-file",
            "--fork",
            "--cwd",
            "--worktree-dir",
            "--auto",
        ],
    },
    launch_gate: None,
    // The TUI runs its agent loop in a child `droid exec --input-format stream-jsonrpc
    // --output-format stream-jsonrpc` (seen in 0.225.2's process tree), which goes on
    // after the TUI is killed: it cancels the running call and fires `Stop` and
    // `SessionEnd` (0.4 s after a `kill -9` of the TUI, in a real run).
    worker: Some(Worker {
        args: &["exec", "--input-format", "stream-jsonrpc"],
        seen_in: "0.225.2, the TUI's child from its start",
    }),
    relay: None,
    versions: Versions {
        program: "droid",
        oldest: "0.225.2",
        newest: "0.225.2",
        events_since: &[],
    },
    plugin: None,
    screen: Some(SCREEN),
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// Factory Droid's permission dialog, as its TUI draws it: no hook fires on the answer
/// (`Notification(permission_prompt)` opens the window, the call's `PostToolUse` is the
/// next hook), so only the pane says "Yes" was chosen while the call runs. The screens it
/// was taken from are kept beside this file (`screens/`, read by the tests below): the
/// dialog drawn, the pane once "Yes, allow" was chosen and the command runs, once "No,
/// cancel" was, and the idle input box. Neither text is drawn on any of those.
pub const SCREEN: Screen = Screen {
    dialog: &[
        DialogLook {
            text: "Command to approve",
            seen_in: "0.225.2, an Execute call's permission dialog's title (screens/0.225.2-execute-dialog.txt)",
        },
        DialogLook {
            text: "to inspect approval details",
            seen_in: "0.225.2, the permission dialog's key line, \"Alt/Option+E to inspect approval details\" (screens/0.225.2-execute-dialog.txt)",
        },
    ],
};

/// What Factory Droid's tools act on (0.225.2's recordings: `Execute`'s `command`,
/// `Read`'s `file_path`, `Task`'s `description`; `Edit` and `Create` as its tool list
/// names them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("Execute", "command"),
    ArgumentField::new("Read", "file_path"),
    ArgumentField::new("Edit", "file_path"),
    ArgumentField::new("Create", "file_path"),
    ArgumentField::new("Task", "description"),
];

/// The Claude-format events Factory Droid 0.225.2 fires.
const EVENTS: [&str; 9] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
];

/// Every payload names its session file under `~/.factory/sessions/`.
fn droid_transcript(row: &Row<'_>) -> Option<&'static str> {
    let path = row.payload.transcript_path.as_deref()?;
    (path.contains("/.factory/sessions/") && path.ends_with(".jsonl"))
        .then_some("transcript_path under .factory/sessions/ (Factory Droid)")
}
