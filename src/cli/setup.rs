//! `hooktrack setup [--undo]`: install once, see every agent. Environment-routed entries
//! go into the user config of every agent found (its program on `PATH`, or its config
//! directory), so an agent started anywhere delivers (to its session's collector when
//! started through `hooktrack session`, else to its default store); each agent's `check`
//! is reported, and the tmux lines are printed.
//!
//! What setup changed is recorded in `$XDG_STATE_HOME/hooktrack/setup.json`: each file's
//! bytes before and after, and the directories it created. `--undo` puts the bytes back
//! (or removes a file setup created) when a file still holds what setup wrote; a file
//! changed since loses only hooktrack's entries, through the uninstaller.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use hooktrack::Agent;
use hooktrack::emit::state_dir;
use hooktrack::error_chain;
use hooktrack::install::preflight::{self, Probe};
use hooktrack::install::{self, Observer, Route, Uninstalled};
use hooktrack::store::StoreError;

use super::fail;
use super::install::{TargetError, hook_binary};

/// Install hooktrack's environment-routed hooks for every agent found, once.
///
/// For each supported agent whose program is on PATH or whose config directory exists:
/// the entries of `hooktrack install AGENT` (routed by environment: an agent started
/// through `hooktrack session` delivers to that session, any other to its per-user
/// default store under $XDG_STATE_HOME/hooktrack/agents/), then what `check` says.
/// `--undo` restores every file setup changed, byte for byte.
///
/// Run it as yourself: as root for another user (`sudo -E hooktrack setup`, or a $HOME
/// that is not root's) it refuses and changes nothing, since every file it writes and
/// every folder it creates would become root's.
#[derive(Args)]
#[command(after_long_help = super::install::agents_table())]
pub struct SetupArgs {
    /// Remove what setup added: each file it changed gets its bytes back (a file it
    /// created is removed); a file edited since loses only hooktrack's entries.
    #[arg(long)]
    undo: bool,
    /// The binary the hooks run (default: `hooktrack-hook` beside this one, else this one).
    #[arg(long, conflicts_with = "undo")]
    emitter: Option<PathBuf>,
}

/// What setup records for `--undo`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Ledger {
    v: u32,
    files: Vec<Changed>,
}

/// One file setup changed.
#[derive(Debug, Serialize, Deserialize)]
struct Changed {
    agent: String,
    file: PathBuf,
    /// The bytes before the first setup; `None`: the file did not exist.
    before: Option<String>,
    /// Its permission bits then.
    mode: Option<u32>,
    /// The bytes setup left.
    after: String,
    /// Directories setup created for it, innermost first.
    created_dirs: Vec<PathBuf>,
}

const LEDGER_VERSION: u32 = 1;

#[derive(Debug, Error)]
enum SetupError {
    #[error("cannot find hooktrack's state directory: set $XDG_STATE_HOME or $HOME")]
    NoStateDir,
    #[error("cannot read {}", path.display())]
    ReadLedger {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not setup's record", path.display())]
    BadLedger {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot record what setup changed")]
    WriteLedger {
        #[source]
        source: StoreError,
    },
    #[error(transparent)]
    Target(#[from] TargetError),
}

pub fn run(args: &SetupArgs) -> ExitCode {
    let env = |name: &str| std::env::var_os(name);
    let owner = |path: &Path| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).ok().map(|m| m.uid())
    };
    if let Some(refusal) = root_for_a_user(rustix::process::geteuid().as_raw(), &env, &owner) {
        return fail(&refusal);
    }
    let Some(state) = state_dir(env) else {
        return fail(&SetupError::NoStateDir.to_string());
    };
    let ledger_path = state.join("setup.json");
    let result = if args.undo {
        undo(&ledger_path)
    } else {
        setup(args, &ledger_path, &env)
    };
    match result {
        Ok(code) => code,
        Err(e) => fail(&error_chain(&e)),
    }
}

/// Why setup refuses to run as this process: root (`euid` 0) setting up a normal user's
/// files, as `sudo -E hooktrack setup` does (sudo names the user in $SUDO_UID; `-E` keeps
/// their $HOME), would leave every file it writes and folder it creates owned by root, so
/// that the user's own agent and `setup --undo` could no longer change them. Keeping each
/// owner by hand would have to cover every file, folder and rename setup and install make;
/// refusing covers them all. Whose files they are is said by $HOME's owner, and by
/// $SUDO_UID when $HOME does not exist. `None`: go ahead (a normal user, or root in root's
/// own home).
fn root_for_a_user(
    euid: u32,
    env: &dyn Fn(&str) -> Option<OsString>,
    owner_of: &dyn Fn(&Path) -> Option<u32>,
) -> Option<String> {
    if euid != 0 {
        return None;
    }
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let shown = home
        .as_deref()
        .map_or_else(|| "(unset)".to_owned(), |h| h.display().to_string());
    let sudo_uid = env("SUDO_UID")
        .and_then(|u| u.to_str().and_then(|u| u.parse::<u32>().ok()))
        .filter(|u| *u != 0);
    let through_sudo = if sudo_uid.is_some() {
        ", started through sudo"
    } else {
        ""
    };
    // The home decides whose files setup writes; sudo's word only where it does not exist.
    let (uid, why) = match (home.as_deref().and_then(owner_of), sudo_uid) {
        (Some(0), _) | (None, None) => return None,
        (Some(uid), _) => (
            uid,
            format!("$HOME {shown} belongs to uid {uid}{through_sudo}"),
        ),
        (None, Some(uid)) => (
            uid,
            format!("started through sudo by uid {uid}, and $HOME {shown} does not exist"),
        ),
    };
    Some(format!(
        "refusing to set up as root for uid {uid} ({why}): the files setup writes would become root's; run `hooktrack setup` as that user, without sudo"
    ))
}

/// The agents to set up: each found one, a family by its installed member.
fn found_agents(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<(Agent, Result<(), String>)> {
    let mut out: Vec<(Agent, Result<(), String>)> = Vec::new();
    let mut families_done: Vec<&'static str> = Vec::new();
    for agent in Agent::ALL {
        let found = |a: Agent| {
            a.descriptor().programs.iter().any(|p| on_path(p))
                || a.config().home(env).is_some_and(|h| h.is_dir())
        };
        if let Some(family) = agent.family() {
            if families_done.contains(&family.name) {
                continue;
            }
            families_done.push(family.name);
            if !family.members().any(found) {
                continue;
            }
            match install::detect_member(family, env, None) {
                Ok(member) => out.push((member, Ok(()))),
                Err(e) => out.push((agent, Err(error_chain(&e)))),
            }
        } else if found(agent) {
            out.push((agent, Ok(())));
        }
    }
    out
}

fn on_path(program: &str) -> bool {
    let Some(dirs) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&dirs).any(|d| {
        fs::metadata(d.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn setup(
    args: &SetupArgs,
    ledger_path: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<ExitCode, SetupError> {
    let emitter = match &args.emitter {
        Some(e) => std::path::absolute(e).unwrap_or_else(|_| e.clone()),
        None => hook_binary()?,
    };
    let mut observer = Observer {
        emitter,
        route: Route::Environment,
        agent_version: None,
    };
    let mut ledger = read_ledger(ledger_path)?.unwrap_or_default();
    ledger.v = LEDGER_VERSION;
    let cwd = std::env::current_dir().unwrap_or_default();
    let agents = found_agents(env);
    if agents.is_empty() {
        println!("no supported agent found (on PATH or by its config directory)");
    }
    let mut failed = false;
    for (agent, detected) in agents {
        let name = agent.typed_name();
        if let Err(reason) = detected {
            println!("{name}: skipped: {reason}");
            failed = true;
            continue;
        }
        // An agent whose launches write a block of their own (Kimi Code) gets setup's
        // routed block beside it: `session` adds and removes only its own, and while it
        // runs, the routed entries stand down (`HOOKTRACK_LAUNCH_BLOCK`).
        let Some(file) = agent.config().user_file(env) else {
            println!("{name}: skipped: {}", TargetError::NoHome { agent });
            failed = true;
            continue;
        };
        let file = fs::canonicalize(&file).unwrap_or(file);
        let before = fs::read(&file)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let mode = fs::metadata(&file)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777);
        let missing_dirs = missing_dirs(&file);
        // The events the installed version knows (an older Claude Code stops at launch on
        // an event name it does not know).
        observer.agent_version = super::install::agent_version(agent, None);
        match install::install(&file, agent, &observer) {
            Ok(report) => {
                println!(
                    "{name}: {} hooktrack entries in {} (routed by environment{})",
                    report.ours,
                    report.config.display(),
                    if report.created { ", file created" } else { "" }
                );
                let after = fs::read_to_string(&report.config).unwrap_or_default();
                record(
                    &mut ledger,
                    agent,
                    &report.config,
                    before,
                    mode,
                    after,
                    missing_dirs,
                );
                // Written after each file, so an interrupted setup can still be undone.
                write_ledger(ledger_path, &ledger)?;
            }
            Err(e) => {
                println!("{name}: not installed: {}", error_chain(&e));
                failed = true;
                continue;
            }
        }
        let findings = preflight::preflight(&Probe {
            agent,
            config: &file,
            env,
            cwd: &cwd,
            args: &[],
            program: None,
            file_named: false,
            // `kimi doctor` is asked by `check` alone (it takes seconds).
            ask_doctor: false,
        });
        // The version window, as `check` says it: a version outside it still works, but
        // its hooks were not seen by anyone.
        let versions = agent.descriptor().versions;
        println!(
            "{name}: check: {}",
            versions.verdict(
                agent.label(),
                agent.typed_name(),
                observer.agent_version.as_deref()
            )
        );
        if findings.is_empty() {
            println!("{name}: check: ok");
        }
        for finding in findings {
            println!("{name}: check: {finding}");
        }
    }
    println!(
        "recorded in {} (`hooktrack setup --undo` puts every file back)",
        ledger_path.display()
    );
    println!();
    println!("{TMUX_LINES}");
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What to add to `~/.tmux.conf` (docs/tmux.md explains each option), then run
/// `hooktrack watch --tmux` (or use the plugin, `hooktrack.tmux`, which starts it).
const TMUX_LINES: &str = "add to ~/.tmux.conf, then run `hooktrack watch --tmux --notify` \
(or add `run-shell PATH/hooktrack.tmux`, the plugin that starts and keeps it):\n\
set -g status-right '#{?@hooktrack_agent,#{?@hooktrack_attention,#[fg=white bg=red bold] #{@hooktrack_status} #[default],#[fg=colour250] #{@hooktrack_status} #[default]},}#{?@hooktrack_watch,#{?#{!=:#{@hooktrack_waiting},0},#[fg=white bg=red] #{@hooktrack_waiting} waiting #[default],}#{?#{!=:#{@hooktrack_done},0}, #{@hooktrack_done} done ,},#[fg=white bg=red] hooktrack down #[default]}%H:%M'\n\
set -g window-status-format '#I:#W#{?@hooktrack_blocked,#[fg=white bg=red] ⏸ #{@hooktrack_blocked} #[default],#{?@hooktrack_turn_age, ⏵#{@hooktrack_turn_age},}#{?@hooktrack_attention, !,}}'\n\
bind-key W run-shell 'hooktrack jump --client \"#{client_name}\"'";

/// The directories `install` will create for `file`, innermost first.
fn missing_dirs(file: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut dir = file.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        dirs.push(d.to_owned());
        dir = d.parent();
    }
    dirs
}

/// Records a change; a file setup already changed keeps its first `before`, so `--undo`
/// after two setups still gives the bytes from before the first.
fn record(
    ledger: &mut Ledger,
    agent: Agent,
    file: &Path,
    before: Option<String>,
    mode: Option<u32>,
    after: String,
    created_dirs: Vec<PathBuf>,
) {
    if let Some(known) = ledger.files.iter_mut().find(|c| c.file == file) {
        known.after = after;
        return;
    }
    ledger.files.push(Changed {
        agent: agent.typed_name().to_owned(),
        file: file.to_owned(),
        before,
        mode,
        after,
        created_dirs,
    });
}

fn write_ledger(path: &Path, ledger: &Ledger) -> Result<(), SetupError> {
    let write = || {
        if let Some(dir) = path.parent() {
            hooktrack::store::ensure_dir(dir)?;
        }
        hooktrack::store::write_json_atomic(path, ledger)
    };
    write().map_err(|source| SetupError::WriteLedger { source })
}

fn read_ledger(path: &Path) -> Result<Option<Ledger>, SetupError> {
    match fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| SetupError::BadLedger {
                    path: path.to_owned(),
                    source,
                })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SetupError::ReadLedger {
            path: path.to_owned(),
            source,
        }),
    }
}

fn undo(ledger_path: &Path) -> Result<ExitCode, SetupError> {
    let Some(ledger) = read_ledger(ledger_path)? else {
        println!("nothing to undo ({} does not exist)", ledger_path.display());
        return Ok(ExitCode::SUCCESS);
    };
    let mut failed = false;
    for changed in &ledger.files {
        let name = &changed.agent;
        let file = &changed.file;
        let now = fs::read(file).ok();
        if now.as_deref() == Some(changed.after.as_bytes()) {
            let restored = match &changed.before {
                Some(before) => hooktrack::store::write_atomic(
                    file,
                    before.as_bytes(),
                    changed.mode.unwrap_or(0o600),
                )
                .map_err(|e| error_chain(&e)),
                None => fs::remove_file(file).map_err(|e| e.to_string()),
            };
            match restored {
                Ok(()) => {
                    // Only directories setup created, and only while empty.
                    for dir in &changed.created_dirs {
                        let _ = fs::remove_dir(dir);
                    }
                    println!(
                        "{name}: {} {}",
                        file.display(),
                        if changed.before.is_some() {
                            "restored"
                        } else {
                            "removed (setup created it)"
                        }
                    );
                }
                Err(e) => {
                    println!("{name}: cannot restore {}: {e}", file.display());
                    failed = true;
                }
            }
            continue;
        }
        // Edited since setup: its bytes cannot come back without losing that edit.
        let format = Agent::from_name(name)
            .map(|a| a.config().format)
            .unwrap_or(hooktrack::ConfigFormat::JsonHooks);
        // Only setup's entries: a running session's block stays for its own cleanup.
        match install::uninstall_routed(file, format) {
            Ok(Uninstalled::Removed { .. }) => println!(
                "{name}: {} changed since setup: removed hooktrack's entries only",
                file.display()
            ),
            Ok(_) => println!(
                "{name}: {} changed since setup and holds no hooktrack entries: left alone",
                file.display()
            ),
            Err(e) => {
                println!("{name}: {}: {}", file.display(), error_chain(&e));
                failed = true;
            }
        }
    }
    if failed {
        return Ok(ExitCode::FAILURE);
    }
    match fs::remove_file(ledger_path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(SetupError::ReadLedger {
                path: ledger_path.to_owned(),
                source,
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    /// `/home/ann` is uid 1000's, `/root` root's.
    fn owner(path: &Path) -> Option<u32> {
        match path.to_str() {
            Some("/home/ann") => Some(1000),
            Some("/root") => Some(0),
            _ => None,
        }
    }

    #[test]
    fn sudo_e_setup_is_refused_naming_the_user_and_what_to_run() {
        let vars = [("HOME", "/home/ann"), ("SUDO_UID", "1000")];
        let refusal = root_for_a_user(0, &env(&vars), &owner).unwrap_or_default();
        assert!(
            refusal.contains("$HOME /home/ann belongs to uid 1000, started through sudo"),
            "{refusal}"
        );
        assert!(
            refusal.contains("run `hooktrack setup` as that user, without sudo"),
            "{refusal}"
        );
        assert_eq!(refusal.lines().count(), 1, "{refusal}");
    }

    #[test]
    fn root_in_a_users_home_without_sudo_is_refused() {
        let refusal = root_for_a_user(0, &env(&[("HOME", "/home/ann")]), &owner);
        assert!(
            refusal
                .as_deref()
                .is_some_and(|r| r.contains("$HOME /home/ann belongs to uid 1000)")),
            "{refusal:?}"
        );
    }

    #[test]
    fn sudo_with_a_home_that_does_not_exist_is_refused() {
        let vars = [("HOME", "/home/gone"), ("SUDO_UID", "1000")];
        let refusal = root_for_a_user(0, &env(&vars), &owner);
        assert!(
            refusal.as_deref().is_some_and(|r| r
                .contains("started through sudo by uid 1000, and $HOME /home/gone does not exist")),
            "{refusal:?}"
        );
    }

    #[test]
    fn sudo_to_roots_own_home_and_a_normal_user_go_ahead() {
        // `sudo -H` / `sudo -i`: root's own home, whoever started it.
        let vars = [("HOME", "/root"), ("SUDO_UID", "1000")];
        assert_eq!(root_for_a_user(0, &env(&vars), &owner), None);
        assert_eq!(root_for_a_user(0, &env(&[("HOME", "/root")]), &owner), None);
        // A normal user, whatever sudo left in the environment.
        let vars = [("HOME", "/home/ann"), ("SUDO_UID", "1000")];
        assert_eq!(root_for_a_user(1000, &env(&vars), &owner), None);
        // Root with no home and no sudo: setup itself says it has no state directory.
        assert_eq!(root_for_a_user(0, &env(&[]), &owner), None);
        // A SUDO_UID of root or not a number names no user.
        for sudo_uid in ["0", "ann"] {
            let vars = [("HOME", "/home/gone"), ("SUDO_UID", sudo_uid)];
            assert_eq!(root_for_a_user(0, &env(&vars), &owner), None);
        }
    }
}
