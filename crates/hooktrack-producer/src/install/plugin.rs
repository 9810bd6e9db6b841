//! The plugin format: a file the agent loads in-process (OpenCode's and Kilo's
//! `plugin/hooktrack.js`, Pi's `extensions/hooktrack.ts`), wholly hooktrack's: the source
//! the agent's descriptor holds ([`Plugin`](hooktrack_core::agents::Plugin)). It forwards
//! the events the descriptor lists to the same `hooktrack-hook emit` every hook runs, one process per
//! event with the event as JSON on stdin, so the envelope, the store, the no-loss and
//! no-stdout guarantees and the routing by `HOOKTRACK_*` (the agent's own environment,
//! which the plugin sees) are the emitter's, unchanged.
//!
//! The file is rendered whole from the observer; its first line names hooktrack's version
//! and the route, which is how `check` tells a stale plugin, and the read-back compares
//! the whole text.

use std::path::Path;

use hooktrack_core::agent::Agent;
use hooktrack_core::agents::PluginExclusion;

use super::format::{Edit, Removal};
use super::{InstallError, Observer, Route, Validation, Violation};

/// The first line's start: how hooktrack knows the file is its own.
const MARK: &str = "// hooktrack observer plugin ";

/// The version of hooktrack that writes the plugin, and that `check` expects.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The plugin's text for `agent`.
pub fn render(agent: Agent, observer: &Observer) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let mut argv = vec![
        observer.emitter.to_string_lossy().into_owned(),
        "emit".to_owned(),
        "--observer".to_owned(),
        super::command::OBSERVER_LABEL.to_owned(),
    ];
    let route = match &observer.route {
        Route::Environment => {
            argv.extend(["--agent".to_owned(), agent.store_name().to_owned()]);
            "routed by the environment".to_owned()
        }
        Route::Argv(to) => {
            argv.extend([
                "--url".to_owned(),
                to.url.clone(),
                "--dir".to_owned(),
                to.dir.to_string_lossy().into_owned(),
                "--provider".to_owned(),
                agent.store_name().to_owned(),
                "--generation".to_owned(),
                to.generation.to_string(),
            ]);
            format!("generation {}", to.generation)
        }
    };
    let argv: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    let events: Vec<String> = agent
        .descriptor()
        .hook_events
        .iter()
        .map(|e| quote(e))
        .collect();
    // A plugin-format agent without a plugin source (the core's descriptor tests rule it
    // out) gets the header alone, which the read-back refuses: it forwards no event.
    let source = agent
        .descriptor()
        .plugin
        .map_or_else(String::new, |plugin| {
            plugin.filled(&argv.join(", "), &events.join(", "))
        });
    format!(
        "{MARK}{VERSION} for {label} ({route})\n\
// Written by `hooktrack install {name}`; `hooktrack uninstall {name}` removes it, and the
// next install rewrites it whole. Each event below goes to the hook command as JSON on
// stdin, only the fields hooktrack reads, one after another (the store keeps the agent's
// order), never awaited by the agent, every failure swallowed: the agent never waits on
// or sees hooktrack. The queue is bounded (the oldest dropped and counted in the store);
// at the agent's exit what is still queued gets 400 ms in all, the rest is counted.
{source}",
        label = agent.label(),
        name = agent.typed_name(),
    )
}

/// The install edit: the whole file, rendered. A file already there is replaced only when
/// its first line is hooktrack's marker: the agent loads any file in that folder, and one
/// the user wrote at hooktrack's path is theirs.
pub(crate) fn edit(
    agent: Agent,
    config: &Path,
    before: &str,
    observer: &Observer,
) -> Result<Edit, InstallError> {
    super::whole_file::edit(
        config,
        before,
        header(before).map(|h| h.generation),
        render(agent, observer),
    )
}

/// The read-back: exactly the text rendered.
pub(crate) fn read_back(
    agent: Agent,
    back: &str,
    observer: &Observer,
    _outside: &str,
) -> Result<Validation, Violation> {
    if back != render(agent, observer) {
        return Err(Violation::new(
            "the plugin read back differs from what was written",
        ));
    }
    validate(back, agent)
}

/// Removes the plugin (with `generation`, only a plugin of that generation).
pub(crate) fn remove(text: &str, generation: Option<u64>) -> Removal {
    super::whole_file::remove(header(text).map(|h| h.generation), generation)
}

/// The plugin is hooktrack's, of this version, and forwards every event hooktrack reads.
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
) -> Result<Validation, InstallError> {
    let Some(text) = text else {
        return Err(InstallError::NotInstalled {
            path: config.to_owned(),
            reason: "the plugin file does not exist",
            install: super::own_side::install_command(agent),
        });
    };
    let valid = validate(text, agent).map_err(|violation| InstallError::Invalid {
        path: config.to_owned(),
        violation,
    })?;
    if let Some(plugin) = agent.descriptor().plugin
        && let Some(exclusion) = plugin.exclusion
        && let Some(entry) = excluded(config, agent.config().file, &exclusion)
    {
        let who = plugin.loading.who;
        return Err(InstallError::Invalid {
            path: config.to_owned(),
            violation: Violation::new(format!(
                "{who}'s {} excludes it (`{entry}` in `{}`): {who} does not load it",
                exclusion.file, exclusion.key
            )),
        });
    }
    Ok(valid)
}

/// The entry of the agent's settings that keeps it from loading the plugin at `config`
/// (`file`, the config location's file, under the agent's home). A missing or unreadable
/// settings file excludes nothing.
fn excluded(config: &Path, file: &str, exclusion: &PluginExclusion) -> Option<String> {
    let mut dir = config;
    for _ in Path::new(file).components() {
        dir = dir.parent()?;
    }
    let text = std::fs::read_to_string(dir.join(exclusion.file)).ok()?;
    let settings: serde_json::Value = serde_json::from_str(&text).ok()?;
    let full = config.to_string_lossy();
    let relative = config
        .strip_prefix(dir)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = config
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    settings
        .get(exclusion.key)?
        .as_array()?
        .iter()
        .filter_map(|e| e.as_str())
        .find(|entry| {
            let Some(pattern) = entry.strip_prefix(exclusion.prefixes) else {
                return false;
            };
            [full.as_ref(), relative.as_str(), name.as_str()]
                .iter()
                .any(|candidate| glob(pattern, candidate))
        })
        .map(str::to_owned)
}

/// `*` (and `**`) match any run of characters, `?` one; enough to tell whether an
/// exclusion names the extension.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether `text` is a plugin hooktrack wrote (of any version): its first line is
/// hooktrack's marker.
pub fn is_ours(text: &str) -> bool {
    header(text).is_some()
}

/// Whether `text` is hooktrack's plugin of this version for `agent`, and (with an
/// observer) exactly the one it renders.
pub fn validate(text: &str, agent: Agent) -> Result<Validation, Violation> {
    let Some(h) = header(text) else {
        return Err(Violation::new(format!(
            "it is not hooktrack's plugin (its first line is not hooktrack's marker): rename it or move it out of that folder, then run `hooktrack install {}`",
            agent.typed_name()
        )));
    };
    if h.version != VERSION {
        return Err(Violation::new(format!(
            "the plugin is hooktrack {}'s, not {VERSION}'s: run `hooktrack install {}`",
            h.version,
            agent.typed_name()
        )));
    }
    for event in agent.descriptor().hook_events {
        let quoted = serde_json::to_string(event).unwrap_or_default();
        if !text.contains(&quoted) {
            return Err(Violation::new(format!(
                "the plugin does not forward {event}"
            )));
        }
    }
    Ok(Validation {
        entries: 1,
        ours: 1,
        generation: h.generation,
        routed: h.generation.is_none(),
    })
}

/// What the first line says.
struct Header<'a> {
    version: &'a str,
    generation: Option<u64>,
}

fn header(text: &str) -> Option<Header<'_>> {
    let first = text.lines().next()?.strip_prefix(MARK)?;
    let (version, rest) = first.split_once(' ')?;
    let generation = rest
        .rsplit_once("(generation ")
        .and_then(|(_, g)| g.strip_suffix(')'))
        .and_then(|g| g.parse().ok());
    Some(Header {
        version,
        generation,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use hooktrack_core::agent::ConfigFormat;

    use super::*;

    fn observer() -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's/hooktrack-hook"),
            route: Route::Environment,
            agent_version: None,
        }
    }

    /// Every agent that loads hooktrack as a plugin file.
    fn plugin_agents() -> Vec<Agent> {
        let agents: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| a.config().format == ConfigFormat::Plugin)
            .collect();
        assert!(!agents.is_empty());
        agents
    }

    #[test]
    fn the_rendered_plugin_validates_and_names_the_emitter_quoted() {
        for agent in plugin_agents() {
            let text = render(agent, &observer());
            assert!(
                text.contains(r#"const ARGV = ["/opt/it's/hooktrack-hook", "emit""#),
                "{agent}"
            );
            let routed = format!(r#""--agent", "{}"]"#, agent.store_name());
            assert!(text.contains(&routed), "{agent}: {text}");
            assert!(
                !text.contains("@ARGV@") && !text.contains("@EVENTS@"),
                "{agent}"
            );
            let v = validate(&text, agent).expect("valid");
            assert_eq!((v.ours, v.generation, v.routed), (1, None, true), "{agent}");
        }
    }

    #[test]
    fn an_older_plugin_another_file_or_one_missing_an_event_is_not_valid() {
        for agent in plugin_agents() {
            let text = render(agent, &observer());
            let old = text.replacen(VERSION, "0.0.0-old", 1);
            let e = validate(&old, agent).expect_err("stale");
            assert!(e.contains("0.0.0-old"), "{agent}: {e}");
            assert!(validate("export const X = 1;\n", agent).is_err(), "{agent}");
            for event in agent.descriptor().hook_events {
                let quoted = format!("\"{event}\"");
                let fewer = text.replace(&quoted, "\"gone\"");
                assert!(validate(&fewer, agent).is_err(), "{agent} without {event}");
            }
        }
    }

    /// An agent whose settings can exclude the plugin: an entry led by an excluding
    /// prefix that names the file (its path, a glob of its name, a glob of its folder)
    /// fails `check`; other entries do not.
    #[test]
    fn a_plugin_excluded_in_the_agents_settings_fails_check() {
        let excluding: Vec<(Agent, PluginExclusion)> = plugin_agents()
            .into_iter()
            .filter_map(|a| {
                a.descriptor()
                    .plugin
                    .and_then(|p| p.exclusion)
                    .map(|e| (a, e))
            })
            .collect();
        assert!(!excluding.is_empty());
        for (agent, exclusion) in excluding {
            let tmp = tempfile::tempdir().expect("tempdir");
            let file = Path::new(agent.config().file);
            let config = tmp.path().join(file);
            let name = file.file_name().expect("a file name").to_string_lossy();
            let folder = file.parent().expect("a folder").to_string_lossy();
            let ext = file.extension().expect("an extension").to_string_lossy();
            let text = render(agent, &observer());
            let settings = tmp.path().join(exclusion.file);
            assert!(check(agent, &config, Some(&text)).is_ok(), "{agent}");
            for prefix in exclusion.prefixes {
                for entry in [
                    format!("{prefix}{}", config.display()),
                    format!("{prefix}**/{name}"),
                    format!("{prefix}{folder}/*.{ext}"),
                ] {
                    let doc = serde_json::json!({ exclusion.key: [entry] }).to_string();
                    std::fs::write(&settings, doc).expect("write");
                    match check(agent, &config, Some(&text)) {
                        Err(InstallError::Invalid { violation, .. }) => {
                            assert!(violation.contains("excludes"), "{violation:?}");
                            assert!(violation.contains(&entry), "{violation:?}");
                        }
                        other => panic!("{agent} {entry}: {other:?}"),
                    }
                }
                let other = format!("{prefix}other.{ext}");
                let doc =
                    serde_json::json!({ exclusion.key: [other, config.display().to_string()] });
                std::fs::write(&settings, doc.to_string()).expect("write");
                assert!(check(agent, &config, Some(&text)).is_ok(), "{agent}");
            }
        }
    }

    #[test]
    fn removal_deletes_only_hooktracks_plugin_of_the_generation() {
        for agent in plugin_agents() {
            let text = render(agent, &observer());
            assert_eq!(remove(&text, None), Removal::Delete { generation: None });
            assert_eq!(remove("// a user's plugin\n", None), Removal::Nothing);
        }
    }
}
