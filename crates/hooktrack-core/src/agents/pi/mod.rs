//! Pi 0.73 (`@mariozechner/pi-coding-agent`): no command hooks. hooktrack ships a
//! TypeScript extension Pi loads in-process from `~/.pi/agent/extensions/` that hands each
//! event it forwards to the same `hooktrack-hook emit` every other agent's hooks run
//! (docs/providers.md, "Pi"). A user turn runs from `agent_start` to `agent_end` (Pi's
//! `turn_start` / `turn_end` frame each model call); tool executions carry `toolCallId`;
//! the last assistant message's `stopReason` says how the turn ended (`aborted` on Escape,
//! `error` on a failed call). Pi has no permission system and no subagents.

pub(crate) mod adapter;

use super::{
    Descriptor, DetectRule, Headless, InstallFacts, Plugin, PluginExclusion, PluginLoading,
    PreflightFacts, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// The extension (`extension.ts`): the same queue and exit flush as OpenCode's plugin, on
/// Pi's `pi.on(event, handler)`. Each handler returns at once (Pi awaits handlers in turn,
/// so an awaited spawn would hold the agent), and forwards only the few fields of Pi's
/// event hooktrack reads: Pi's events carry whole messages and tool outputs. Pi retries a
/// failed model call by running its agent loop again with no prompt
/// (`before_agent_start` fires only for a prompt): `agent_start` says which.
pub const EXTENSION_SOURCE: &str = include_str!("extension.ts");

/// Pi 0.73.1 skips every extension it would discover, hooktrack's among them, when started
/// with `--no-extensions` or `-ne` (an extension named by `--extension PATH` still loads):
/// seen for real, a headless run with either flag left no row but the launcher's. No
/// environment variable does the same, and Pi has no command that lists what it loads; a
/// `settings.json` exclusion is the other way ([`PluginExclusion`]).
pub const PLUGIN_LOADING: PluginLoading = PluginLoading {
    who: "Pi",
    env: &[],
    flags: &["--no-extensions", "-ne"],
    skipped: "every extension it discovers",
    list: &[],
    listed_off: "",
};

/// Pi.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::Pi,
    name: "pi",
    store_name: "pi",
    label: "Pi",
    aliases: &[],
    family: None,
    programs: &["pi"],
    config: ConfigLocation {
        // Pi's agent folder is `$PI_CODING_AGENT_DIR` when set, else `~/.pi/agent`.
        home_env: Some("PI_CODING_AGENT_DIR"),
        user_home_env: None,
        dot_dir: ".pi/agent",
        file: "extensions/hooktrack.ts",
        format: ConfigFormat::Plugin,
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // No subagents, no permission system and no tool that asks the user.
        agent_scopes: false,
        subagent_scope_is_turn: false,
        dialogs: Dialogs {
            permission_answer: PermissionAnswer::Event,
            request_echo: None,
            ask_user_tools: &[],
        },
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 27,
        test: pi_event,
    }],
    named_by_row: "the row names pi",
    transcript: None,
    // `--no-extensions` (`-ne`) is a command-line switch, not a file's: `PLUGIN_LOADING`.
    install: InstallFacts::plugin("Pi reports an extension that fails to load and runs without it"),
    preflight: PreflightFacts::NONE,
    // `pi -p MESSAGE` is one headless turn.
    headless: Headless {
        flags: &["-p", "--print"],
        subcommands: &[],
        value_options: &[
            "--model",
            "--provider",
            "--mode",
            "--session",
            "-e",
            "--extension",
        ],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "pi",
        oldest: "0.73.1",
        newest: "0.73.1",
        events_since: &[],
    },
    plugin: Some(Plugin {
        source: EXTENSION_SOURCE,
        loading: PLUGIN_LOADING,
        // `pi config` writes `-path` or `!pattern` into `settings.json`'s `extensions` to
        // turn an extension off.
        exclusion: Some(PluginExclusion {
            file: "settings.json",
            key: "extensions",
            prefixes: &['-', '!'],
        }),
    }),
    screen: None, // No argument: the extension forwards no tool input.
    tool_arguments: &[],
    session_key: super::SessionKey::Payload,
};

/// The events the extension forwards. `turn_end` and `message_start` only when a prompt
/// typed while Pi worked starts inside the running agent run (a user message that is not
/// the run's own prompt): after an answer, that answer's `turn_end` and the message's
/// start, a turn of its own; before one (Pi's steer, Enter during tool calls) only the
/// message's start, which joins the running turn. `before_agent_start` only when a prompt
/// comes while Pi waits to retry a failed model call (the wait cancelled). Not forwarded: the other `turn_start` /
/// `turn_end` / `message_*` (one per model call and message; the turn's outcome is the
/// last message's `stopReason`, which `agent_end` carries), `tool_call` / `tool_result` /
/// `tool_execution_update` (the same call again, and its partial output), `input`,
/// `before_agent_start` otherwise (the extension reads it to tell Pi's own retries from
/// prompts), `context`, provider requests, model and thinking-level selection, resources: none says
/// where a turn stands, and each would cost a process.
const EVENTS: [&str; 11] = [
    "session_start",
    "session_shutdown",
    "agent_start",
    "agent_end",
    "tool_execution_start",
    "tool_execution_end",
    "session_before_compact",
    "session_compact",
    "turn_end",
    "message_start",
    "before_agent_start",
];

/// The extension's payloads carry Pi's event fields under `properties`.
fn pi_event(row: &Row<'_>) -> Option<&'static str> {
    let name = row.payload.hook_event_name.as_deref()?;
    (row.payload.properties.is_some() && EVENTS.contains(&name))
        .then_some("a Pi extension event with its properties (Pi)")
}
