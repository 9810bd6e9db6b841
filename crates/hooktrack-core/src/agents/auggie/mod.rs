//! Augment's Auggie 0.36 (npm `@augmentcode/auggie`): Claude-format command hooks in
//! `~/.augment/settings.json`, run only when the tenant's feature flag `enable_hooks` is
//! on (the server's `get-models` answer: nothing local tells), with events of its own
//! (docs/providers.md, "Auggie").
//!
//! Seven events: `SessionStart`, `PromptSubmit` (its prompt hook, not `UserPromptSubmit`),
//! `PreToolUse`, `PostToolUse`, `Stop`, `Notification`, `SessionEnd`; its settings schema
//! takes no other name in the `hooks` table. The session is the payload's
//! `conversation_id`; no tool call carries an id. A turn runs from `PromptSubmit` to `Stop`,
//! whose `agent_stop_cause` tells an Escape (`interrupted`) from an answer (`end_turn`). A
//! tool approval dialog fires nothing beyond the call's `PreToolUse`; a denied call ends
//! with a `PostToolUse` whose `tool_error` says so; a model call that failed fires no
//! `Stop`. The session file (`~/.augment/sessions/<conversation_id>.json`) is one JSON
//! document rewritten whole, without the failed exchange: not followed.

pub(crate) mod adapter;

use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, EntrySchema, Headless, InstallFacts,
    PreflightFacts, Strictness, TimeoutUnit, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// Augment's Auggie.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::Auggie,
    name: "auggie",
    store_name: "auggie",
    label: "Auggie",
    aliases: &[],
    family: None,
    programs: &["auggie"],
    config: ConfigLocation {
        // No variable moves `~/.augment` (only the flag `--augment-cache-dir`, per
        // launch): Auggie reads `$HOME/.augment/settings.json`. No home variable, so no
        // `--home` for it.
        home_env: None,
        user_home_env: None,
        dot_dir: ".augment",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        // Auggie also reads `<workspace>/.augment/settings.json`; hooktrack installs the
        // user's only.
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // No call id in any hook: calls pair by name and input.
        tool_ids: false,
        // No `Interrupt` event: Escape is a `Stop` with `agent_stop_cause: "interrupted"`,
        // which the adapter maps to the interrupt itself.
        interrupt_hook: false,
        dialogs: Dialogs {
            // The approval dialog fires no hook: nothing opens a permission window.
            permission_answer: PermissionAnswer::Event,
            request_echo: None,
            ask_user_tools: &[],
        },
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 13,
        test: workspace_roots,
    }],
    named_by_row: "the row names auggie",
    transcript: None,
    install: InstallFacts {
        // Milliseconds: Auggie's hook runner waits `timeout` ms ("Hook execution timed out
        // after ${timeout}ms"), 60000 when absent.
        timeout: 5000,
        timeout_unit: TimeoutUnit::Milliseconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        // Its `hooks` table is a strict schema of its seven events: an unknown name voids
        // the table ("Some plugin hooks use unsupported configuration").
        strict: Strictness::EveryEvent,
        strictness: "Auggie drops a settings file whose hooks table has an unknown event or a malformed entry",
        // No `matcher` key: its tool events default to every tool (`.*`), and on its other
        // events 0.36.0 warns of one at every TUI start ("Unknown property \"matcher\" …
        // This property will be ignored.", under `/hooks`).
        schema: EntrySchema {
            matcher: false,
            ..COMMON_SCHEMA
        },
        off_switches: &[],
        per_session_entries: false,
        daemon: None,
    },
    // The switch that matters, the tenant's `enable_hooks`, is the server's: nothing on
    // this machine tells.
    preflight: PreflightFacts::NONE,
    // `--print` / `-p` runs one prompt headless; an instruction (positional, `-i`, `-if`)
    // is run at launch in the TUI too.
    headless: Headless {
        flags: &[
            "-p",
            "--print",
            "-i",
            "--instruction",
            "-if",
            "--instruction-file",
        ],
        subcommands: &[Headless::ANY_WORD],
        value_options: &[
            "-m",
            "--model",
            "-w",
            "--workspace-root",
            "--augment-cache-dir",
            "--permission",
            "--rules",
            "--output-format",
            "--persona",
            "--shell",
            "--mcp-config",
            "-r",
            "--resume",
        ],
    },
    launch_gate: None,
    session_key: super::SessionKey::Payload,
    worker: None,
    relay: None,
    versions: Versions {
        program: "auggie",
        oldest: "0.36.0",
        newest: "0.36.0",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
};

/// What Auggie's tools act on (0.36.0's recordings: `launch-process`'s `command`,
/// `save-file`'s and `view`'s `path`; `str-replace-editor` and `remove-files` as its tool
/// list names them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("launch-process", "command"),
    ArgumentField::new("save-file", "path"),
    ArgumentField::new("view", "path"),
    ArgumentField::new("str-replace-editor", "path"),
];

/// Auggie 0.36.0's hook events, its settings schema's whole list.
const EVENTS: [&str; 7] = [
    "SessionStart",
    "PromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "Notification",
    "SessionEnd",
];

/// Every Auggie payload names its workspace folders; no other agent's does.
fn workspace_roots(row: &Row<'_>) -> Option<&'static str> {
    row.payload
        .workspace_roots
        .is_some()
        .then_some("workspace_roots (Auggie)")
}
