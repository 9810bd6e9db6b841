//! The hook-files format: one executable file per event in a folder, named by the event
//! (Cline's `~/.cline/hooks/TaskStart`, ...), each wholly hooktrack's: a `#!/bin/sh` line,
//! hooktrack's marker line, and one `exec` of the same `hooktrack-hook emit` every hook
//! runs, the payload passed through on stdin.
//!
//! The agent (Cline) runs these files inside a long-lived daemon whose environment is
//! whoever started it first, so a session's `HOOKTRACK_*` there may be a session long
//! gone: the file drops them (and `TMUX_PANE`, the daemon's pane, not the CLI's) and the
//! delivery goes to the agent's per-user default store.
//!
//! The config location's file is the first event's; the driver in `mod.rs` runs the
//! one-file operations below on it and on each sibling (`files`). A file at one of
//! those paths without hooktrack's marker is the user's: an install refuses (before it
//! writes any), an uninstall leaves it.

use std::path::{Path, PathBuf};

use hooktrack_core::agent::Agent;

use super::format::{Edit, Removal};
use super::{InstallError, Observer, Route, Validation, Violation, command};

/// The second line's start: how hooktrack knows the file is its own.
const MARK: &str = "# hooktrack observer hook ";

/// The version of hooktrack that writes the files, and that `check` expects.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The mode of a hook file: the agent runs only files it can execute.
pub(crate) const MODE: u32 = 0o755;

/// The variables a hook file drops before it runs the emitter: the session routing and
/// the daemon's pane.
const DROPPED: [&str; 6] = [
    "HOOKTRACK_URL",
    "HOOKTRACK_DIR",
    "HOOKTRACK_GENERATION",
    "HOOKTRACK_TOKEN",
    "HOOKTRACK_LAUNCH_BLOCK",
    "TMUX_PANE",
];

/// Every hook file of `agent` beside `config` (the first event's), with its event: the
/// events the agent at `version` fires, or with `None` every event hooktrack knows.
pub(crate) fn files(
    config: &Path,
    agent: Agent,
    version: Option<Option<&str>>,
) -> Vec<(PathBuf, &'static str)> {
    let dir = config.parent().unwrap_or(Path::new(""));
    let events = match version {
        Some(version) => agent.descriptor().hook_events_for(version),
        None => agent.descriptor().hook_events.to_vec(),
    };
    events.into_iter().map(|e| (dir.join(e), e)).collect()
}

/// The event a hook file is for: its name.
fn event_of(config: &Path) -> String {
    config
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The variable a `hooktrack session` sets to the port of the daemon it gave its agent
/// ([`InstallFacts::daemon`]): in that daemon alone the session's routing is kept.
///
/// [`InstallFacts::daemon`]: hooktrack_core::agents::InstallFacts::daemon
pub const SESSION_DAEMON_PORT: &str = "HOOKTRACK_DAEMON_PORT";

/// The file's text for `agent`'s `event`.
pub fn render(agent: Agent, observer: &Observer, event: &str) -> String {
    let route = match &observer.route {
        Route::Environment => "to the default store".to_owned(),
        Route::Argv(to) => format!("generation {}", to.generation),
    };
    let unset: String = DROPPED.iter().map(|v| format!(" -u {v}")).collect();
    let command = command::command(agent, observer, event);
    // A daemon a session started for itself, on the port it gave the agent, carries that
    // session's variables and ends with it: there they are kept (the pane too: the
    // session's). The test compares the two variables, so a daemon started on the shared
    // port by a session's CLI never counts as that session's.
    let own_daemon = match agent.descriptor().install.daemon.map(|d| d.port_var) {
        Some(port) => format!(
            "if [ -n \"${{{SESSION_DAEMON_PORT}:-}}\" ] && [ \"${SESSION_DAEMON_PORT}\" = \"${{{port}:-}}\" ]; then\n\
             \x20   exec {command}\n\
             fi\n"
        ),
        None => String::new(),
    };
    format!(
        "#!/bin/sh\n\
{MARK}{VERSION} for {label} {event} ({route})\n\
# Written by `hooktrack install {name}` (or `hooktrack setup`); `hooktrack uninstall {name}`\n\
# removes it. {label} runs it in its hub daemon, whose environment is whoever started the\n\
# daemon: the session variables there may name a session long gone, so they are dropped,\n\
# but in the daemon a `hooktrack session` started for itself on a port of its own.\n\
{own_daemon}exec env{unset} {command}\n",
        label = agent.label(),
        name = agent.typed_name(),
    )
}

/// The install edit of one file: its whole text. A file already there is replaced only
/// when it is hooktrack's.
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
        render(agent, observer, &event_of(config)),
    )
}

/// The read-back: exactly the text rendered for the file's event.
pub(crate) fn read_back(
    agent: Agent,
    config: &Path,
    back: &str,
    observer: &Observer,
) -> Result<Validation, Violation> {
    let event = event_of(config);
    if back != render(agent, observer, &event) {
        return Err(Violation::new(format!(
            "the {event} hook file read back differs from what was written"
        )));
    }
    validate(back, agent, &event)
}

/// Removes one hook file (with `generation`, only one of that generation).
pub(crate) fn remove(text: &str, generation: Option<u64>) -> Removal {
    super::whole_file::remove(header(text).map(|h| h.generation), generation)
}

/// One hook file as the agent runs it: there, hooktrack's, of this version, for its event,
/// executable (`mode`, `None` when it does not exist).
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
    mode: Option<u32>,
) -> Result<Validation, InstallError> {
    let (Some(text), Some(mode)) = (text, mode) else {
        return Err(InstallError::NotInstalled {
            path: config.to_owned(),
            reason: "the hook file does not exist",
            install: super::own_side::install_command(agent),
        });
    };
    let invalid = |violation| InstallError::Invalid {
        path: config.to_owned(),
        violation,
    };
    let valid = validate(text, agent, &event_of(config)).map_err(invalid)?;
    if mode & 0o100 == 0 {
        return Err(invalid(Violation::new(format!(
            "it is not executable (mode {mode:o}): {} skips it",
            agent.label()
        ))));
    }
    Ok(valid)
}

/// Whether `text` is a hook file hooktrack wrote (of any version).
pub fn is_ours(text: &str) -> bool {
    header(text).is_some()
}

/// Whether `text` is hooktrack's hook file of this version for `agent`'s `event`.
pub fn validate(text: &str, agent: Agent, event: &str) -> Result<Validation, Violation> {
    let Some(h) = header(text) else {
        return Err(Violation::new(format!(
            "it is not hooktrack's hook file (no hooktrack marker at its start): rename it or move it out of that folder, then run `hooktrack install {}`",
            agent.typed_name()
        )));
    };
    if h.version != VERSION {
        return Err(Violation::new(format!(
            "the hook file is hooktrack {}'s, not {VERSION}'s: run `hooktrack install {}`",
            h.version,
            agent.typed_name()
        )));
    }
    if h.event != event {
        return Err(Violation::new(format!(
            "the hook file is hooktrack's for {}, not {event}",
            h.event
        )));
    }
    Ok(Validation {
        entries: 1,
        ours: 1,
        generation: h.generation,
        routed: h.generation.is_none(),
    })
}

/// What the marker line says.
struct Header<'a> {
    version: &'a str,
    event: &'a str,
    generation: Option<u64>,
}

fn header(text: &str) -> Option<Header<'_>> {
    let mut lines = text.lines();
    if lines.next()? != "#!/bin/sh" {
        return None;
    }
    let marker = lines.next()?.strip_prefix(MARK)?;
    let (version, rest) = marker.split_once(" for ")?;
    // `LABEL EVENT (ROUTE)`: the event is the word before the route.
    let (before_route, route) = rest.rsplit_once(" (")?;
    let event = before_route.rsplit(' ').next()?;
    let generation = route
        .strip_prefix("generation ")
        .and_then(|g| g.strip_suffix(')'))
        .and_then(|g| g.parse().ok());
    Some(Header {
        version,
        event,
        generation,
    })
}

#[cfg(test)]
mod tests {
    use hooktrack_core::agent::ConfigFormat;

    use super::*;
    use crate::install::Destination;

    fn observer(route: Route) -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's/hooktrack-hook"),
            route,
            agent_version: None,
        }
    }

    fn agents() -> Vec<Agent> {
        let agents: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| a.config().format == ConfigFormat::HookFiles)
            .collect();
        assert!(!agents.is_empty());
        agents
    }

    #[test]
    fn a_rendered_file_drops_the_session_variables_and_validates_for_its_event_only() {
        for agent in agents() {
            for event in agent.descriptor().hook_events {
                let text = render(agent, &observer(Route::Environment), event);
                assert!(text.starts_with("#!/bin/sh\n# hooktrack observer hook "));
                assert!(
                    text.contains(&format!(
                        "exec env -u HOOKTRACK_URL -u HOOKTRACK_DIR -u HOOKTRACK_GENERATION -u HOOKTRACK_TOKEN -u HOOKTRACK_LAUNCH_BLOCK -u TMUX_PANE '/opt/it'\\''s/hooktrack-hook' emit --observer hooktrack --agent '{}' --event '{event}'\n",
                        agent.store_name()
                    )),
                    "{text}"
                );
                let v = validate(&text, agent, event).expect("valid");
                assert_eq!((v.ours, v.generation, v.routed), (1, None, true));
                let other = if *event == "TaskStart" {
                    "TaskError"
                } else {
                    "TaskStart"
                };
                let e = validate(&text, agent, other).expect_err("another event's");
                assert!(e.contains(other), "{e}");
            }
        }
    }

    #[test]
    fn an_older_file_or_a_users_script_is_not_valid_and_never_removed() {
        for agent in agents() {
            let text = render(agent, &observer(Route::Environment), "TaskStart");
            let old = text.replacen(VERSION, "0.0.0-old", 1);
            let e = validate(&old, agent, "TaskStart").expect_err("stale");
            assert!(e.contains("0.0.0-old"), "{e}");
            let users = "#!/bin/sh\necho started >> ~/log\n";
            assert!(validate(users, agent, "TaskStart").is_err());
            assert_eq!(remove(users, None), Removal::Nothing);
            assert_eq!(remove(&text, None), Removal::Delete { generation: None });
            let e = edit(
                agent,
                Path::new("/h/TaskStart"),
                users,
                &observer(Route::Environment),
            )
            .expect_err("a user's file is refused");
            assert!(matches!(e, InstallError::NotOurs { .. }), "{e:?}");
        }
    }

    #[test]
    fn a_generation_scoped_file_is_removed_only_for_its_generation() {
        for agent in agents() {
            let to = Destination {
                url: "http://127.0.0.1:1/e".to_owned(),
                dir: PathBuf::from("/s"),
                generation: 7,
            };
            let text = render(agent, &observer(Route::Argv(to)), "PreToolUse");
            assert_eq!(
                remove(&text, Some(7)),
                Removal::Delete {
                    generation: Some(7)
                }
            );
            assert_eq!(
                remove(&text, Some(8)),
                Removal::KeptOther {
                    generation: Some(7)
                }
            );
            let v = validate(&text, agent, "PreToolUse").expect("valid");
            assert_eq!((v.generation, v.routed), (Some(7), false));
        }
    }

    #[test]
    fn a_file_that_is_not_executable_fails_check() {
        for agent in agents() {
            let text = render(agent, &observer(Route::Environment), "TaskStart");
            let path = Path::new("/h/TaskStart");
            assert!(check(agent, path, Some(&text), Some(0o755)).is_ok());
            match check(agent, path, Some(&text), Some(0o644)) {
                Err(InstallError::Invalid { violation, .. }) => {
                    assert!(violation.contains("not executable"), "{violation:?}")
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                check(agent, path, None, None),
                Err(InstallError::NotInstalled { .. })
            ));
        }
    }

    /// The file run by `sh` as the daemon runs it: the session's variables reach the
    /// emitter only in the daemon a session gave the port it names.
    #[test]
    fn a_session_s_routing_reaches_the_emitter_only_in_the_daemon_it_started() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("env.txt");
        let emitter = dir.path().join("emitter");
        std::fs::write(&emitter, "#!/bin/sh\nenv > \"$ENV_OUT\"\n").expect("write emitter");
        std::fs::set_permissions(&emitter, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut daemons = 0;
        for agent in agents() {
            let Some(port_var) = agent.descriptor().install.daemon.map(|d| d.port_var) else {
                continue;
            };
            daemons += 1;
            let observer = Observer {
                emitter: emitter.clone(),
                route: Route::Environment,
                agent_version: None,
            };
            let file = dir.path().join("TaskStart");
            std::fs::write(&file, render(agent, &observer, "TaskStart")).expect("write");
            let run = |vars: &[(&str, &str)]| {
                let mut cmd = std::process::Command::new("sh");
                cmd.arg(&file)
                    .env_clear()
                    .env("PATH", "/usr/bin:/bin")
                    .env("ENV_OUT", &out)
                    .env("HOOKTRACK_DIR", "/s/session")
                    .env("TMUX_PANE", "%7");
                for (k, v) in vars {
                    cmd.env(k, v);
                }
                assert!(cmd.status().expect("run sh").success());
                std::fs::read_to_string(&out).expect("the emitter ran")
            };
            // The session's own daemon: kept.
            let env = run(&[(SESSION_DAEMON_PORT, "40111"), (port_var, "40111")]);
            assert!(env.contains("HOOKTRACK_DIR=/s/session\n"), "{env}");
            assert!(env.contains("TMUX_PANE=%7\n"), "{env}");
            // A daemon on another port (the shared one a session's CLI reached): dropped.
            let env = run(&[(SESSION_DAEMON_PORT, "40111"), (port_var, "25463")]);
            assert!(!env.contains("HOOKTRACK_DIR="), "{env}");
            assert!(!env.contains("TMUX_PANE="), "{env}");
            // No session at all, the port unset: dropped.
            let env = run(&[]);
            assert!(!env.contains("HOOKTRACK_DIR="), "{env}");
            let env = run(&[(SESSION_DAEMON_PORT, "")]);
            assert!(!env.contains("HOOKTRACK_DIR="), "{env}");
        }
        assert!(daemons > 0, "no agent runs its hook files in a daemon");
    }
}
