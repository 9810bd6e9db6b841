//! OpenCode 1.18: no command hooks. hooktrack ships a plugin OpenCode loads in-process
//! from `~/.config/opencode/plugin/` that hands each bus event it forwards to the same
//! `hooktrack-hook emit` every other agent's hooks run (docs/providers.md, "OpenCode").
//! A user turn runs from the session's `busy` to its `idle`; tool parts carry `callID`;
//! a subagent is a child session (`parentID`); Escape is `session.error
//! {MessageAbortedError}`, a failed model call `session.error {APIError}`.

pub(crate) mod adapter;

use super::{
    Descriptor, DetectRule, Headless, InstallFacts, Plugin, PluginLoading, PreflightFacts, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::agents::claude_code::PROMPT_TO_STOP;
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// OpenCode.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::OpenCode,
    name: "opencode",
    store_name: "opencode",
    label: "OpenCode",
    aliases: &[],
    family: None,
    programs: &["opencode"],
    config: ConfigLocation {
        // OpenCode also loads `plugin/` from the directory `$OPENCODE_CONFIG_DIR` names.
        home_env: Some("OPENCODE_CONFIG_DIR"),
        user_home_env: None,
        dot_dir: ".config/opencode",
        file: "plugin/hooktrack.js",
        format: ConfigFormat::Plugin,
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        // A child session's `busy` … `idle` is its subagent's turn, keyed by its id.
        agent_scopes: true,
        subagent_scope_is_turn: true,
        // `permission.replied` answers every request; the `question` tool asks the user.
        dialogs: Dialogs {
            permission_answer: PermissionAnswer::Event,
            request_echo: None,
            ask_user_tools: &["question"],
        },
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 25,
        test: opencode_event,
    }],
    named_by_row: "the row names opencode",
    transcript: None,
    install: InstallFacts::plugin("OpenCode logs a plugin that fails to load and runs without it"),
    preflight: PreflightFacts::NONE,
    // `opencode run MESSAGE` is one headless turn.
    headless: Headless {
        flags: &[],
        subcommands: &["run"],
        value_options: &["--log-level", "--port", "--hostname"],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "opencode",
        oldest: "1.18.33",
        newest: "1.18.33",
        events_since: &[],
    },
    plugin: Some(Plugin {
        source: PLUGIN_SOURCE,
        loading: PLUGIN_LOADING,
        // No config key turns a file in `plugin/` off.
        exclusion: None,
    }),
    screen: None, // No argument: the plugin forwards no tool input.
    tool_arguments: &[],
    session_key: super::SessionKey::Payload,
};

/// The plugin (`plugin.js`), loaded from `plugin/` as an ES module whose export OpenCode
/// calls once: its `event` handler sees every bus event. It hands those of `EVENTS`, only
/// the fields hooktrack reads, to the plugins' bounded queue
/// ([`PLUGIN_QUEUE`](crate::agents::PLUGIN_QUEUE)). It drops the
/// status repeats OpenCode publishes (the same session or tool-call status again) and
/// names a child session's events by the root session, the child as `agent_id` (a
/// subagent).
pub const PLUGIN_SOURCE: &str = include_str!("plugin.js");

/// OpenCode 1.18.33 skips every external plugin (hooktrack's is one; its built-in ones are
/// not) when `OPENCODE_PURE` is `1` or `true`, and `--pure` sets that variable before any
/// command runs. `OPENCODE_DISABLE_DEFAULT_PLUGINS` turns off only the built-in ones. No
/// config key turns a file in `plugin/` off. `opencode debug info` lists the plugins it
/// resolved, or says they are disabled (docs/providers.md, "OpenCode").
pub const PLUGIN_LOADING: PluginLoading = PluginLoading {
    who: "OpenCode",
    env: &["OPENCODE_PURE"],
    flags: &["--pure"],
    skipped: "every external plugin",
    list: &["debug", "info"],
    listed_off: "external plugins disabled",
};

/// The bus events the plugin forwards. Not forwarded: streaming deltas
/// (`message.part.delta`, `message.part.updated` of text and reasoning parts), whole-message
/// and session metadata updates (`message.updated`, `session.updated`, `session.diff`),
/// `session.idle` (the same moment as `session.status` idle), files, LSP, plugins and the
/// catalog: none says where a turn stands, and each would cost a process.
pub(crate) const EVENTS: [&str; 11] = [
    "session.created",
    "session.deleted",
    "session.status",
    "session.error",
    "session.compacted",
    "message.part.updated",
    "permission.asked",
    "permission.replied",
    "question.asked",
    "question.replied",
    "question.rejected",
];

/// The plugin's payloads carry the bus event's `properties` under an event name with a dot.
fn opencode_event(row: &Row<'_>) -> Option<&'static str> {
    let name = row.payload.hook_event_name.as_deref()?;
    (row.payload.properties.is_some() && EVENTS.contains(&name))
        .then_some("an OpenCode bus event with its properties (OpenCode)")
}
