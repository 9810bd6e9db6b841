//! Kilo CLI 7.7 (`@kilocode/cli`), a fork of OpenCode: no command hooks. It loads the
//! same in-process plugin as OpenCode from `~/.config/kilo/plugin/` and publishes the same
//! bus events in the same shapes (docs/providers.md, "Kilo CLI"), so its descriptor reuses
//! OpenCode's event list and adapter; what differs is where the plugin lives, the program
//! and the switches that stop plugins (`KILO_PURE`, `--pure`).

use serde::Deserialize;

use super::{
    Descriptor, DetectRule, Headless, InstallFacts, Plugin, PluginLoading, PreflightFacts,
    Versions, opencode,
};
use crate::agent::{Agent, ConfigFormat, ConfigLocation};
use crate::row::Row;

/// Kilo CLI.
pub const DESCRIPTOR: Descriptor = Descriptor {
    agent: Agent::Kilo,
    name: "kilo",
    store_name: "kilo",
    label: "Kilo CLI",
    aliases: &[],
    family: None,
    // The npm package links both names to the same binary.
    programs: &["kilo", "kilocode"],
    config: ConfigLocation {
        // Kilo 7.7.7 also loads `plugin/` from the directory `$KILO_CONFIG_DIR` names
        // (beside `~/.config/kilo/plugin/`, as `kilo debug info` lists).
        home_env: Some("KILO_CONFIG_DIR"),
        user_home_env: None,
        dot_dir: ".config/kilo",
        file: "plugin/hooktrack.js",
        format: ConfigFormat::Plugin,
        project_install: false,
    },
    hook_events: &opencode::EVENTS,
    // The same bus events in the same shapes as OpenCode 1.18.33 (corpus/kilo/).
    normalize: opencode::adapter::normalize,
    capabilities: opencode::DESCRIPTOR.capabilities,
    detect: &[DetectRule {
        // Before OpenCode's rule, which matches every row of Kilo's too.
        rank: 24,
        test: kilo_session,
    }],
    named_by_row: "the row names kilo",
    transcript: None,
    install: InstallFacts::plugin("Kilo logs a plugin that fails to load and runs without it"),
    preflight: PreflightFacts::NONE,
    // `kilo run MESSAGE` is one headless turn.
    headless: Headless {
        flags: &[],
        subcommands: &["run"],
        value_options: &["--log-level", "--port", "--hostname"],
    },
    launch_gate: None,
    worker: None,
    relay: None,
    versions: Versions {
        program: "kilo",
        oldest: "7.7.7",
        newest: "7.7.7",
        events_since: &[],
    },
    // OpenCode's plugin, unchanged: the same bus events in the same shapes.
    plugin: Some(Plugin {
        source: opencode::PLUGIN_SOURCE,
        loading: PLUGIN_LOADING,
        exclusion: None,
    }),
    screen: None, // No argument: the plugin forwards no tool input.
    tool_arguments: &[],
    session_key: super::SessionKey::Payload,
};

/// Kilo 7.7.7 skips every external plugin when `KILO_PURE` is `1` or `true` or with
/// `--pure`; `kilo debug info` lists the plugins it resolved, or says "external plugins
/// disabled (--pure)" (docs/providers.md, "Kilo CLI").
pub const PLUGIN_LOADING: PluginLoading = PluginLoading {
    who: "Kilo",
    env: &["KILO_PURE"],
    flags: &["--pure"],
    skipped: "every external plugin",
    list: &["debug", "info"],
    listed_off: "external plugins disabled",
};

/// The part of `session.created` that tells Kilo from OpenCode: the session is stamped
/// with the CLI's version, Kilo's 7.x, OpenCode's 1.x.
#[derive(Deserialize)]
struct Created<'a> {
    #[serde(borrow)]
    info: Option<Info<'a>>,
}

#[derive(Deserialize)]
struct Info<'a> {
    #[serde(borrow)]
    version: Option<&'a str>,
}

/// Every other event of Kilo's looks exactly like OpenCode's: only a `session.created`
/// says which CLI made the session (a stream without one reads as OpenCode's, the same
/// events through the same adapter).
fn kilo_session(row: &Row<'_>) -> Option<&'static str> {
    if row.payload.hook_event_name.as_deref()? != "session.created" {
        return None;
    }
    let created: Created<'_> = serde_json::from_str(row.payload.properties?.get()).ok()?;
    let major: u32 = created.info?.version?.split('.').next()?.parse().ok()?;
    (major >= 7).then_some("an OpenCode bus event from a session Kilo CLI 7 created (Kilo CLI)")
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::provider::detect;
    use crate::row::parse_line;

    /// A bare payload (no envelope naming the provider): Kilo's `session.created` is
    /// Kilo's, OpenCode's is OpenCode's, and every other Kilo event reads as OpenCode's.
    #[test]
    fn a_session_created_by_kilo_7_is_kilos_and_other_events_read_as_opencodes() {
        let created = |version: &str| {
            format!(
                r#"{{"hook_event_name":"session.created","session_id":"ses_1","properties":{{"sessionID":"ses_1","info":{{"id":"ses_1","version":"{version}"}}}}}}"#
            )
        };
        let agent = |line: &str| {
            let row = parse_line(line.as_bytes()).expect("a row");
            detect(&row).map(|(agent, _)| agent)
        };
        assert_eq!(agent(&created("7.7.7")), Some(Agent::Kilo));
        assert_eq!(agent(&created("1.18.33")), Some(Agent::OpenCode));
        assert_eq!(agent(&created("seven")), Some(Agent::OpenCode));
        let status = r#"{"hook_event_name":"session.status","session_id":"ses_1","properties":{"sessionID":"ses_1","status":{"type":"busy"}}}"#;
        assert_eq!(agent(status), Some(Agent::OpenCode));
    }
}
