//! hooktrack's own side of a hook, which no agent setting decides: does the binary the
//! installed entries run exist, run, and is it the hooktrack in use (not one moved, deleted
//! or replaced since the install); can the per-user default store, where an environment-
//! routed hook started outside `hooktrack session` delivers, take rows. The file's shape
//! is [`super::check`]'s; what the agent decides is [`super::preflight`]'s.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hooktrack_core::agent::{Agent, ConfigFormat};

use super::command::{OBSERVER_LABEL, emitter_of, is_routed_command};
use super::json_hooks::Settings;
use super::preflight::Finding;
use super::toml_block::find_blocks;
use crate::emit::default_store::default_store;

/// What one of hooktrack's entries runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The hook binary, as the entry names it.
    pub emitter: PathBuf,
    /// The entry names no session: it delivers where the agent's environment says, else
    /// to the agent's default store.
    pub routed: bool,
}

/// The command `hooktrack` installs `agent` with, as a fix names it: `hooktrack install
/// AGENT`, and `hooktrack setup`, which installs every agent found (Kimi Code's routed
/// block too; a launch still writes its own block, so `hooktrack session` is named for an
/// agent whose config also belongs to each launch).
pub fn install_command(agent: Agent) -> String {
    let word = super::preflight::agent_word(agent);
    if agent.descriptor().install.per_session_entries {
        let program = agent.descriptor().programs.first().copied().unwrap_or(word);
        format!(
            "`hooktrack install {word}` (or `hooktrack setup` for every agent found, or start it with `hooktrack session -- {program}`)"
        )
    } else {
        format!("`hooktrack install {word}` (or `hooktrack setup` for every agent found)")
    }
}

/// hooktrack's entries in the text of `agent`'s config: the commands of its JSON entries,
/// of its TOML block, or the argv of its plugin. Text that holds none (or that cannot be
/// read as the format) gives none: the file's shape is [`super::check`]'s to judge.
pub fn entries(agent: Agent, text: &str) -> Vec<Entry> {
    let from_command = |command: &str| {
        emitter_of(command).map(|emitter| Entry {
            emitter: PathBuf::from(emitter),
            routed: is_routed_command(command),
        })
    };
    match agent.config().format {
        ConfigFormat::JsonHooks => Settings::parse(text)
            .map(|s| {
                s.our_commands()
                    .into_iter()
                    .filter_map(from_command)
                    .collect()
            })
            .unwrap_or_default(),
        ConfigFormat::TomlHooks => block_commands(text)
            .iter()
            .filter_map(|c| from_command(c))
            .collect(),
        // The command after `exec env -u ...` in the hook file.
        ConfigFormat::HookFiles => text
            .lines()
            .filter(|line| line.starts_with("exec env "))
            .filter_map(|line| line.find('\'').map(|at| &line[at..]))
            .filter_map(from_command)
            .collect(),
        ConfigFormat::Plugin => plugin_argv(text)
            .and_then(|argv| {
                let emitter = argv.first()?;
                Some(Entry {
                    emitter: PathBuf::from(emitter),
                    routed: argv.iter().all(|a| a != "--url")
                        && argv.iter().any(|a| a == "--agent"),
                })
            })
            .into_iter()
            .collect(),
    }
}

/// The `command` of each `[[hooks]]` entry inside hooktrack's TOML blocks (setup's routed
/// one and a launch's generation-scoped one, either or both).
fn block_commands(text: &str) -> Vec<String> {
    let Ok(blocks) = find_blocks(text) else {
        return Vec::new();
    };
    blocks
        .routed
        .iter()
        .chain(blocks.scoped.iter())
        .filter_map(|block| text[block.start..block.end].parse::<toml::Table>().ok())
        .flat_map(|table| match table.get("hooks") {
            Some(toml::Value::Array(hooks)) => hooks
                .iter()
                .filter_map(|h| h.get("command").and_then(toml::Value::as_str))
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The plugin's emit argv: the first JSON array on a line that is hooktrack's command
/// (`[<emitter>, "emit", "--observer", "hooktrack", ...]`, as the plugin renderer writes it).
fn plugin_argv(text: &str) -> Option<Vec<String>> {
    text.lines().find_map(|line| {
        let at = line.find('[')?;
        let argv = serde_json::Deserializer::from_str(&line[at..])
            .into_iter::<Vec<String>>()
            .next()?
            .ok()?;
        let label = ["emit", "--observer", OBSERVER_LABEL];
        (argv.len() > label.len() && argv[1..=label.len()] == label).then_some(argv)
    })
}

/// What stops hooktrack's side of `agent`'s hooks in `config`: each binary its entries run
/// that is missing, not executable, or not one of `current` (the binaries this hooktrack
/// installs: `hooktrack-hook` beside it, itself); and, when entries route by the
/// environment, a per-user default store it cannot write (`env` looks a variable up).
pub fn own_side(
    agent: Agent,
    config: &Path,
    current: &[PathBuf],
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<Finding> {
    let text = fs::read_to_string(config).unwrap_or_default();
    let entries = entries(agent, &text);
    let mut found = Vec::new();
    let mut seen: Vec<&Path> = Vec::new();
    for entry in &entries {
        if seen.contains(&entry.emitter.as_path()) {
            continue;
        }
        seen.push(&entry.emitter);
        if let Some(finding) = emitter_finding(agent, config, &entry.emitter, current) {
            found.push(finding);
        }
    }
    if entries.iter().any(|e| e.routed) {
        found.extend(store_finding(agent, env));
    }
    found
}

/// The one binary `emitter` an entry runs, judged.
fn emitter_finding(
    agent: Agent,
    config: &Path,
    emitter: &Path,
    current: &[PathBuf],
) -> Option<Finding> {
    let reinstall = format!(
        "run {} with the hooktrack you use now",
        install_command(agent)
    );
    let finding = |cause: String, fix: String| Finding {
        file: config.to_owned(),
        cause,
        fix,
    };
    let Ok(meta) = fs::metadata(emitter) else {
        return Some(finding(
            format!(
                "the hook binary hooktrack's entries run, {}, does not exist: every hook fails and {} delivers nothing",
                emitter.display(),
                agent.label()
            ),
            reinstall,
        ));
    };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Some(finding(
            format!(
                "the hook binary hooktrack's entries run, {}, is not an executable file: every hook fails",
                emitter.display()
            ),
            format!("make it executable (`chmod +x`), or {reinstall}"),
        ));
    }
    let canonical = fs::canonicalize(emitter).ok();
    let same = |c: &PathBuf| c == emitter || fs::canonicalize(c).ok() == canonical;
    if current.is_empty() || current.iter().any(same) {
        return None;
    }
    let now: Vec<String> = current.iter().map(|c| c.display().to_string()).collect();
    Some(finding(
        format!(
            "hooktrack's entries run {}, an old path: not the hooktrack running this check ({})",
            emitter.display(),
            now.join(" or ")
        ),
        format!(
            "{reinstall}, or check with `--emitter {}` if that binary is meant",
            emitter.display()
        ),
    ))
}

/// A routed hook outside `hooktrack session` creates `agent`'s default store (and its
/// parents) and appends to it: the store, or the nearest folder of it that exists, must be
/// a directory this user can write.
fn store_finding(agent: Agent, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Finding> {
    let Some(store) = default_store(env, agent) else {
        return Some(Finding {
            file: PathBuf::from("$HOME"),
            cause: format!(
                "neither $XDG_STATE_HOME nor $HOME is set: a hook of {} started outside `hooktrack session` has no store and drops its event",
                agent.label()
            ),
            fix: "set $HOME (or an absolute $XDG_STATE_HOME)".to_owned(),
        });
    };
    let unwritable = |at: &Path, why: &str| Finding {
        file: at.to_owned(),
        cause: format!(
            "{why}: a hook of {} started outside `hooktrack session` cannot write its default store {}",
            agent.label(),
            store.display()
        ),
        fix: format!(
            "give it back to your user (`chown -R \"$(id -un)\" {}`, if a `sudo` run left it root's) or remove it",
            at.display()
        ),
    };
    let events = crate::store::StorePaths::in_dir(&store).events;
    if fs::symlink_metadata(&events).is_ok() && !writable(&events) {
        return Some(unwritable(
            &events,
            "the store's events file is not writable",
        ));
    }
    let mut at = store.as_path();
    loop {
        match fs::metadata(at) {
            Ok(meta) if !meta.is_dir() => {
                return Some(unwritable(at, "a file stands where a folder must be"));
            }
            Ok(_) if !writable(at) => return Some(unwritable(at, "it is not writable")),
            Ok(_) => return None,
            Err(_) => match at.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                _ => return None,
            },
        }
    }
}

/// Whether this process may write (and, for a folder, enter) `path`.
fn writable(path: &Path) -> bool {
    use rustix::fs::{Access, access};
    let mut mode = Access::WRITE_OK;
    if path.is_dir() {
        mode |= Access::EXEC_OK;
    }
    access(path, mode).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::{Destination, Observer, Route};

    fn observer(route: Route) -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's here/hooktrack-hook"),
            route,
            agent_version: None,
        }
    }

    fn rendered(agent: Agent, observer: &Observer) -> String {
        match agent.config().format {
            ConfigFormat::JsonHooks => {
                crate::install::format::edit(agent, Path::new("settings.json"), "{}", observer)
                    .expect("edit")
                    .text
            }
            ConfigFormat::TomlHooks => {
                crate::install::toml_block::render_block(agent, observer, false)
            }
            ConfigFormat::Plugin => crate::install::plugin::render(agent, observer),
            ConfigFormat::HookFiles => {
                crate::install::hook_files::render(agent, observer, "TaskStart")
            }
        }
    }

    #[test]
    fn every_agents_entries_name_the_emitter_they_were_rendered_with() {
        let argv = Route::Argv(Destination {
            url: "http://127.0.0.1:1/e".to_owned(),
            dir: PathBuf::from("/s"),
            generation: 3,
        });
        for agent in Agent::ALL {
            for (route, routed) in [(Route::Environment, true), (argv.clone(), false)] {
                let found = entries(agent, &rendered(agent, &observer(route)));
                assert!(!found.is_empty(), "{agent:?}");
                for entry in found {
                    assert_eq!(
                        entry,
                        Entry {
                            emitter: PathBuf::from("/opt/it's here/hooktrack-hook"),
                            routed
                        },
                        "{agent:?}"
                    );
                }
            }
            assert!(entries(agent, "").is_empty(), "{agent:?}");
        }
    }

    #[test]
    fn the_install_command_is_named_for_every_agent() {
        for agent in Agent::ALL {
            let text = install_command(agent);
            assert!(text.contains("`hooktrack install "), "{text}");
            assert!(text.contains("`hooktrack setup`"), "{text}");
        }
    }
}
