//! Gemini CLI 0.61.0: turns from `BeforeAgent` to `AfterAgent`, tool calls without ids,
//! permission prompts as a `Notification`; timeouts in milliseconds; an auth setting and
//! folder trust it stops without, before any hook runs.

pub(crate) mod adapter;
pub(crate) mod transcript;

use super::claude_code::PROMPT_TO_STOP;
use super::{
    ArgumentField, COMMON_SCHEMA, Descriptor, DetectRule, DialogLook, FolderTrust, Headless,
    InstallFacts, OffSwitch, PreflightFacts, RequiredSetting, Screen, Strictness, TimeoutUnit,
    Transcript, Versions,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::provider::Capabilities;
use crate::row::Row;

/// Gemini CLI.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::GeminiCli,
    name: "gemini-cli",
    store_name: "gemini",
    label: "Gemini CLI",
    aliases: &["gemini"],
    family: None,
    programs: &["gemini"],
    // `$GEMINI_CLI_HOME` stands in for `$HOME`: it holds `.gemini/`.
    config: ConfigLocation {
        home_env: None,
        user_home_env: Some("GEMINI_CLI_HOME"),
        dot_dir: ".gemini",
        file: "settings.json",
        format: ConfigFormat::JsonHooks,
        project_install: true,
    },
    hook_events: &EVENTS,
    normalize: adapter::normalize,
    capabilities: Capabilities {
        tool_ids: false,
        ..PROMPT_TO_STOP
    },
    detect: &[DetectRule {
        rank: 20,
        test: gemini_shape,
    }],
    named_by_row: "the row names gemini",
    transcript: Some(Transcript {
        location: "~/.gemini/tmp/<project>/chats/session-*.jsonl",
        classify: transcript::classify,
        needles: &[],
        session_file: None,
    }),
    install: InstallFacts {
        timeout: 5000,
        timeout_unit: TimeoutUnit::Milliseconds,
        shorter_timeouts: &[],
        unknown_entry_keys_fatal: false,
        top_level_keys: None,
        // It discards just the malformed entry.
        strict: Strictness::Lenient,
        strictness: "Gemini CLI skips it",
        schema: COMMON_SCHEMA,
        off_switches: &[
            OffSwitch {
                path: &["hooksConfig", "enabled"],
                off_when: false,
                why: "`hooksConfig.enabled` is false",
            },
            OffSwitch {
                path: &["hooks", "enabled"],
                off_when: false,
                why: "`hooks.enabled` is false",
            },
        ],
        per_session_entries: false,
        daemon: None,
    },
    preflight: PreflightFacts {
        feature_switches: None,
        hook_trust: None,
        required_setting: Some(RequiredSetting {
            pointer: "/security/auth/selectedType",
            cause: "no `security.auth.selectedType`: Gemini CLI stops with \"Invalid auth method selected\" before any hook runs",
            fix: "set `security.auth.selectedType` (e.g. \"gemini-api-key\"), or sign in once interactively",
        }),
        folder_trust: Some(FolderTrust {
            file: "trustedFolders.json",
            enabled_pointer: "/security/folderTrust/enabled",
            skip_flag: "--skip-trust",
            skip_env: ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
            consequence: "headless Gemini CLI exits (status 55) before any hook runs",
            fix: "pass --skip-trust, set GEMINI_CLI_TRUST_WORKSPACE=true, or trust the folder in Gemini CLI's interactive mode",
        }),
        config_doctor: None,
        runtime: None,
    },
    // `-p` / `--prompt`, or `-i` / `--prompt-interactive` (a TUI started with its first
    // prompt).
    headless: Headless {
        flags: &["-p", "--prompt", "-i", "--prompt-interactive"],
        subcommands: &[],
        value_options: &[],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "gemini",
        oldest: "0.61.0",
        newest: "0.61.0",
        events_since: &[],
    },
    plugin: None,
    screen: Some(SCREEN),
    tool_arguments: TOOL_ARGUMENTS,
    session_key: super::SessionKey::Payload,
};

/// Gemini CLI's confirmation of a shell call, as its TUI draws it (the default approval
/// mode), in a box: "Allow execution of \[Shell\]?", then "1. Allow once", "2. Allow for this
/// session", "3. No, suggest changes (esc)". No hook fires on the answer: after "Allow
/// once" the box shows the call running, after a rejection "Request cancelled.". The
/// screens are kept beside this file (`screens/`, read by the tests in `crate::screen`):
/// the dialog, the call running after "Allow once", the prompt after the call's end, a
/// second dialog and its rejection (`0.61.0-shell-*`, the TUI alone); the dialog and the
/// call running under `hooktrack session` (`0.61.0-session-*`, kept by the end-to-end
/// test; a status line then names the hooks it runs).
pub const SCREEN: Screen = Screen {
    dialog: &[DialogLook {
        text: "Allow execution of",
        seen_in: "0.61.0, a shell call's confirmation (screens/0.61.0-shell-dialog.txt)",
    }],
};

/// What Gemini CLI's tools act on (0.61.0's recordings: `run_shell_command`'s `command`,
/// `read_file`'s and `write_file`'s `file_path`; the others as its tool reference names
/// them).
const TOOL_ARGUMENTS: &[ArgumentField] = &[
    ArgumentField::new("run_shell_command", "command"),
    ArgumentField::new("read_file", "file_path"),
    ArgumentField::new("write_file", "file_path"),
    ArgumentField::new("replace", "file_path"),
    ArgumentField::new("glob", "pattern"),
    ArgumentField::new("search_file_content", "pattern"),
    ArgumentField::new("web_fetch", "prompt"),
    ArgumentField::new("google_web_search", "query"),
];

/// Gemini CLI 0.61.0's events.
const EVENTS: [&str; 11] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "Notification",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

/// An event name only Gemini CLI fires, or a payload `timestamp` beside a transcript.
fn gemini_shape(row: &Row<'_>) -> Option<&'static str> {
    let p = &row.payload;
    let gemini_event = matches!(
        row.event_name.as_ref(),
        "BeforeAgent"
            | "AfterAgent"
            | "BeforeTool"
            | "AfterTool"
            | "BeforeModel"
            | "AfterModel"
            | "BeforeToolSelection"
            | "PreCompress"
    );
    (gemini_event || (p.timestamp.is_some() && p.transcript_path.is_some()))
        .then_some("Gemini event name or payload timestamp")
}
