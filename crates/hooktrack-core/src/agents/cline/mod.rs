//! Cline CLI 3.0 (npm `cline`): one executable file per hook event in `~/.cline/hooks/`
//! (`$CLINE_DIR/hooks/`), named by the event (`TaskStart`, `PreToolUse`, ...), run with
//! the payload as JSON on stdin (docs/providers.md, "Cline").
//!
//! The hooks run inside Cline's hub daemon, which the first CLI starts and which outlives
//! it with that CLI's environment: a variable a later launch sets never reaches them. So
//! hooktrack's hook files drop the session variables and deliver to Cline's per-user
//! default store, and sessions are told apart by the payload's `taskId` (one per CLI
//! session, the same across its prompts). A prompt runs from `TaskStart` to
//! `TaskComplete` or `TaskError`; Escape fires `SessionShutdown` (the session goes on);
//! tool calls carry `tool_call.id`. No hook marks a permission wait, and
//! `UserPromptSubmit` never fires.

pub(crate) mod adapter;

use super::{Descriptor, DetectRule, Headless, HookDaemon, InstallFacts, PreflightFacts, Versions};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// Cline CLI.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::Cline,
    name: "cline",
    store_name: "cline",
    label: "Cline",
    aliases: &[],
    family: None,
    programs: &["cline"],
    config: ConfigLocation {
        // `$CLINE_DIR` replaces `~/.cline` (Cline's `resolveHooksConfigSearchPaths`, as the
        // daemon's environment has it).
        home_env: Some("CLINE_DIR"),
        user_home_env: None,
        dot_dir: ".cline",
        // The first event's file; the others are its siblings (`ConfigFormat::HookFiles`).
        file: "hooks/TaskStart",
        format: ConfigFormat::HookFiles,
        // Cline also runs `<workspace>/.cline/hooks/`; hooktrack installs the user's only.
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // Escape fires `SessionShutdown` while the turn runs (no `Interrupt` event: the
        // adapter maps it to the interrupt itself).
        interrupt_hook: false,
        dialogs: Dialogs {
            // No permission hook: nothing opens a permission window.
            permission_answer: PermissionAnswer::Event,
            request_echo: None,
            // `ask_question` waits on the user's answer while it is open.
            ask_user_tools: &["ask_question"],
        },
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        // Before GitHub Copilot CLI's (a timestamp and a session id, no transcript), which a
        // Cline payload also fits.
        rank: 12,
        test: cline_hook,
    }],
    named_by_row: "the row names cline",
    transcript: None,
    // Cline runs every file in the folder it can execute; one that fails is logged and
    // skipped (the daemon's log), the others still run.
    // Its hub daemon: the CLI reuses the hub its discovery record names (by default
    // `~/.cline/data/locks/hub/production.json`), else starts one on `CLINE_HUB_PORT`
    // (25463 when unset) that writes the record; seen with 3.0.65 (docs/providers.md).
    install: InstallFacts::hook_files(
        "Cline logs a hook file that fails to run and runs the others",
        HookDaemon {
            port_var: "CLINE_HUB_PORT",
            record_var: "CLINE_HUB_DISCOVERY_PATH",
        },
    ),
    preflight: PreflightFacts::NONE,
    // `cline PROMPT` is one headless task; `-i` / `--tui` opens the TUI.
    headless: Headless {
        flags: &[],
        subcommands: &[Headless::ANY_WORD],
        value_options: &[
            "-c",
            "--cwd",
            "-m",
            "--model",
            "-P",
            "--provider",
            "-k",
            "--key",
            "-s",
            "--system",
            "-t",
            "--timeout",
            "--id",
            "--config",
            "--data-dir",
            "--hooks-dir",
            "--thinking",
            "--compaction",
            "--auto-approve",
            "--retries",
        ],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "cline",
        oldest: "3.0.65",
        newest: "3.0.65",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// What Cline's tools act on, from its recordings (`corpus/cline/`): `editor`'s `path`.
/// `run_commands` and `read_files` take lists (`commands`, `paths`), which the table's
/// one string field cannot name: their calls show no argument.
pub(crate) const TOOL_ARGUMENTS: &[crate::tool_argument::ArgumentField] =
    &[crate::tool_argument::ArgumentField::new("editor", "path")];

/// The hook files hooktrack writes, Cline 3.0.65's names. Not written: `UserPromptSubmit`
/// (never run: a prompt is `TaskStart`, which would count it twice if it ever ran) and
/// `PreCompact` (mapped to no hook event, so never run).
const EVENTS: [&str; 8] = [
    "TaskStart",
    "TaskResume",
    "TaskComplete",
    "TaskError",
    "TaskCancel",
    "PreToolUse",
    "PostToolUse",
    "SessionShutdown",
];

/// Cline's own event names, in every payload's `hookName`.
const HOOK_NAMES: [&str; 9] = [
    "agent_start",
    "agent_resume",
    "agent_end",
    "agent_error",
    "agent_abort",
    "tool_call",
    "tool_result",
    "session_shutdown",
    "prompt_submit",
];

/// Only Cline names its event in `hookName`.
fn cline_hook(row: &Row<'_>) -> Option<&'static str> {
    let name = row.payload.hook_name.as_deref()?;
    HOOK_NAMES
        .contains(&name)
        .then_some("a hookName of Cline's (Cline)")
}
