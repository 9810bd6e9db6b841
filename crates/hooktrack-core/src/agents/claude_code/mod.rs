//! Claude Code 2.1.197–2.1.332: turns from `UserPromptSubmit` to `Stop`, identified by the
//! `prompt_id` every event of a user turn carries; subagents by `agent_id`; a JSON hooks
//! table in `settings.json`; a transcript that records Escape and rejections.

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, DialogLook, Headless, InstallFacts,
    OffSwitch, PreflightFacts, Screen, Strictness, TimeoutUnit, Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// Claude Code's dialogs, which the agents mapped by its adapter share: no answer event for
/// a permission (the call going on answers it), a `Notification(permission_prompt)` that
/// repeats the request's dialog (or is the only sign of one), and `AskUserQuestion`.
pub const DIALOGS: Dialogs = Dialogs {
    permission_answer: PermissionAnswer::CallGoesOn,
    request_echo: Some("permission_prompt"),
    ask_user_tools: &["AskUserQuestion"],
};

/// The turn shape Claude Code, Codex and Gemini CLI share: a prompt starts the turn, `Stop`
/// ends it (also after a stop hook), Claude Code's dialogs, no interrupt hook.
pub const PROMPT_TO_STOP: Capabilities = Capabilities {
    prompt_starts_turn: true,
    unannounced_turns: false,
    stop_hook_active_continues: false,
    agent_scopes: false,
    subagent_scope_is_turn: false,
    tool_ids: true,
    dialogs: DIALOGS,
    interrupt_hook: false,
    tool_starts_turn: false,
    subagents_outlive_turn: false,
    idle_ends_turn: false,
};

/// Claude Code.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::ClaudeCode,
    name: "claude-code",
    store_name: "claude",
    label: "Claude Code",
    aliases: &["claude"],
    family: None,
    programs: &["claude"],
    config: ConfigLocation {
        home_env: Some("CLAUDE_CONFIG_DIR"),
        user_home_env: None,
        dot_dir: ".claude",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        project_install: true,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        agent_scopes: true,
        subagent_scope_is_turn: true,
        subagents_outlive_turn: true,
        ..PROMPT_TO_STOP
    },
    detect: &[
        DetectRule {
            rank: 40,
            test: prompt_id,
        },
        DetectRule {
            rank: 51,
            test: session_start_without_permission_mode,
        },
    ],
    named_by_row: "the row names claude",
    transcript: Some(Transcript {
        location: "~/.claude/projects/<dir>/<session>.jsonl",
        classify: transcript::classify,
        needles: transcript::NEEDLES,
        session_file: None,
    }),
    install: InstallFacts {
        timeout: 5,
        timeout_unit: TimeoutUnit::Seconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        // "Files with errors are skipped entirely."
        strict: Strictness::EveryEvent,
        strictness: "Claude Code skips a settings file with any invalid entry",
        schema: COMMON_SCHEMA,
        off_switches: &[OffSwitch {
            path: &["disableAllHooks"],
            off_when: true,
            why: "`disableAllHooks` is true",
        }],
        per_session_entries: false,
        daemon: None,
    },
    preflight: PreflightFacts::NONE,
    // `-p` / `--print`: the prompt is an argument or stdin.
    headless: Headless {
        flags: &["-p", "--print"],
        subcommands: &[],
        value_options: &[],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "claude",
        oldest: "2.1.197",
        newest: "2.1.332",
        events_since: &NEW_IN_2_1_332,
    },
    plugin: None,
    screen: Some(SCREEN),
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// What each of Claude Code's tools acts on (its tool reference; `Bash`, `Read`, `Write`
/// and `Agent` seen in the recordings), for a person's summary.
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("Bash", "command"),
    ArgumentField::new("Read", "file_path"),
    ArgumentField::new("Write", "file_path"),
    ArgumentField::new("Edit", "file_path"),
    ArgumentField::new("MultiEdit", "file_path"),
    ArgumentField::new("NotebookEdit", "notebook_path"),
    ArgumentField::new("Glob", "pattern"),
    ArgumentField::new("Grep", "pattern"),
    ArgumentField::new("WebFetch", "url"),
    ArgumentField::new("WebSearch", "query"),
    ArgumentField::new("Agent", "description"),
    ArgumentField::new("Task", "description"),
];

/// Claude Code's permission dialog, as its TUI draws it. The screens it was taken from are
/// kept beside this file (`screens/`, read by the tests below): the dialog drawn, and the
/// same pane once "Yes" was answered and the call runs.
pub const SCREEN: Screen = Screen {
    dialog: &[DialogLook {
        text: "Do you want to proceed?",
        seen_in: "2.1.197 and 2.1.332, a Bash call's permission dialog (screens/2.1.332-bash-dialog.txt)",
    }],
};

/// Claude Code 2.1.332's events, all but `WorktreeCreate` and `WorktreeRemove` (a command
/// hook there replaces the worktree creation itself): 2.1.197's 28, then the four of
/// [`NEW_IN_2_1_332`].
const EVENTS: [&str; 32] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "MessageDisplay",
    "PreModelSwitch",
    "PostModelSwitch",
    "DirectoryAdded",
    "PreSkillShellCommand",
];

/// The events 2.1.197 does not know: its TUI opens a "Settings Warning" dialog at launch
/// for each unknown event name in `settings.json` ("Unknown hook event ... was ignored";
/// `-p` runs silently), so they are written only for a version that fires them. 2.1.332
/// is the oldest version observed with them.
const NEW_IN_2_1_332: [(&str, &str); 4] = [
    ("PreModelSwitch", "2.1.332"),
    ("PostModelSwitch", "2.1.332"),
    ("DirectoryAdded", "2.1.332"),
    ("PreSkillShellCommand", "2.1.332"),
];

fn prompt_id(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    (p.prompt_id.is_some() && p.transcript_path.is_some())
        .then_some("prompt_id with transcript_path (Claude Code)")
}

/// Codex's `SessionStart` has a `permission_mode`, Claude Code's none.
fn session_start_without_permission_mode(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    (row.event_name == "SessionStart" && p.transcript_path.is_some() && p.permission_mode.is_none())
        .then_some("SessionStart with transcript_path, no permission_mode (Claude Code)")
}
