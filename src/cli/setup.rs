//! `hooktrack setup [--undo]`: install once, see every agent. Environment-routed entries
//! go into the user config of every agent found (its program on `PATH`, or its config
//! directory), so an agent started anywhere delivers (to its session's collector when
//! started through `hooktrack session`, else to its default store); each agent's `check`
//! is reported, and the tmux lines are printed.
//!
//! What setup changed is recorded in `$XDG_STATE_HOME/hooktrack/setup.json`: each file it
//! wrote, whether it created it, and the directories it created. `--undo` takes
//! hooktrack's entries out of each file as the file is now, through the uninstaller, so
//! whatever the user changed since stays (the installers edit in place, so a file nobody
//! touched comes back byte for byte); a file setup created and that holds nothing else is
//! removed. Setup and undo hold `setup.lock` beside the record while they run, so two at
//! once take turns, and the record is only ever what the runs before wrote.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use hooktrack::Agent;
use hooktrack::ConfigFormat;
use hooktrack::emit::state_dir;
use hooktrack::error_chain;
use hooktrack::install::preflight::{self, Probe};
use hooktrack::install::{self, Observer, ReadOnly, Route, Uninstalled, own_side};
use hooktrack::store::StoreError;

use super::fail;
use super::install::{TargetError, hook_binary};

/// Install hooktrack's environment-routed hooks for every agent found, once.
///
/// For each supported agent whose program is on PATH or whose config directory exists:
/// the entries of `hooktrack install AGENT` (routed by environment: an agent started
/// through `hooktrack session` delivers to that session, any other to its per-user
/// default store under $XDG_STATE_HOME/hooktrack/agents/), then what `check` says.
/// `--undo` takes hooktrack's entries out of every file setup changed, keeping whatever
/// else is in it now; a file setup created that holds nothing else is removed.
///
/// A config the user made read-only is refused, naming it, unless `--force`; a plugin file
/// at hooktrack's path that hooktrack did not write is never replaced or removed.
///
/// Run it as yourself: as root for another user (`sudo -E hooktrack setup`, or a $HOME
/// that is not root's) it refuses and changes nothing, since every file it writes and
/// every folder it creates would become root's.
#[derive(Args)]
#[command(after_long_help = super::install::agents_table())]
pub struct SetupArgs {
    /// Remove what setup added: hooktrack's entries come out of each file it changed,
    /// whatever else the file holds now stays; a file it created and that holds nothing
    /// else is removed.
    #[arg(long)]
    undo: bool,
    /// Rewrite a config even if it is read-only (its mode is kept).
    #[arg(long)]
    force: bool,
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
    /// Setup created the file (version 1 records say so by a `before` of `null`).
    #[serde(default)]
    created: bool,
    /// Version 1 only: the bytes before the first setup (`None`: no file). Undo no longer
    /// writes them back, save a user's own plugin file that a version 1 setup replaced.
    #[serde(default, skip_serializing)]
    before: Option<String>,
    /// Directories setup created for it, innermost first.
    created_dirs: Vec<PathBuf>,
}

/// 2: files and whether setup created them; 1 also held their bytes before and after.
const LEDGER_VERSION: u32 = 2;

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
    #[error("cannot take the lock {}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
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
    let result = lock(&state.join("setup.lock")).and_then(|_held| {
        if args.undo {
            undo(&ledger_path, super::install::read_only(args.force))
        } else {
            setup(args, &ledger_path, &env)
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => fail(&error_chain(&e)),
    }
}

/// Takes `path`'s lock, waiting (and saying so) while another setup or undo holds it;
/// held until the file returned is dropped (the kernel drops it with the process).
fn lock(path: &Path) -> Result<fs::File, SetupError> {
    use rustix::fs::{FlockOperation, flock};
    let err = |source: io::Error| SetupError::Lock {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        hooktrack::store::ensure_dir(dir).map_err(|e| err(io::Error::other(error_chain(&e))))?;
    }
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => return Ok(file),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {}
        Err(e) => return Err(err(e.into())),
    }
    say!(
        "waiting for another hooktrack setup or undo to finish ({} is held)",
        path.display()
    );
    flock(&file, FlockOperation::LockExclusive).map_err(|e| err(e.into()))?;
    Ok(file)
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
        say!("no supported agent found (on PATH or by its config directory)");
    }
    let mut failed = false;
    for (agent, detected) in agents {
        let name = agent.typed_name();
        if let Err(reason) = detected {
            say!("{name}: skipped: {reason}");
            failed = true;
            continue;
        }
        // An agent whose launches write a block of their own (Kimi Code) gets setup's
        // routed block beside it: `session` adds and removes only its own, and while it
        // runs, the routed entries stand down (`HOOKTRACK_LAUNCH_BLOCK`).
        let Some(file) = agent.config().user_file(env) else {
            say!("{name}: skipped: {}", TargetError::NoHome { agent });
            failed = true;
            continue;
        };
        let file = fs::canonicalize(&file).unwrap_or(file);
        let missing_dirs = missing_dirs(&file);
        // The events the installed version knows (an older Claude Code stops at launch on
        // an event name it does not know).
        observer.agent_version = super::install::agent_version(agent, None);
        match install::install(
            &file,
            agent,
            &observer,
            super::install::read_only(args.force),
        ) {
            Ok(report) => {
                if agent.config().format == ConfigFormat::HookFiles {
                    // One file per event, run by the agent's own daemon: they name no
                    // session.
                    say!(
                        "{name}: {} hooktrack hook files in {} (to {}'s default store)",
                        report.ours,
                        report.config.parent().unwrap_or(&report.config).display(),
                        agent.label()
                    );
                } else {
                    say!(
                        "{name}: {} hooktrack entries in {} (routed by environment{})",
                        report.ours,
                        report.config.display(),
                        if report.created { ", file created" } else { "" }
                    );
                }
                record(
                    &mut ledger,
                    agent,
                    &report.config,
                    report.created,
                    missing_dirs,
                );
                // Written after each file, so an interrupted setup can still be undone.
                write_ledger(ledger_path, &ledger)?;
            }
            Err(e) => {
                say!("{name}: not installed: {}", error_chain(&e));
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
        say!(
            "{name}: check: {}",
            versions.verdict(
                agent.label(),
                agent.typed_name(),
                observer.agent_version.as_deref()
            )
        );
        if findings.is_empty() {
            say!("{name}: check: ok");
        }
        for finding in findings {
            say!("{name}: check: {finding}");
        }
    }
    say!(
        "recorded in {} (`hooktrack setup --undo` takes hooktrack's entries out again)",
        ledger_path.display()
    );
    say!();
    say!("{TMUX_LINES}");
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

/// Records a change; a file setup already changed stays as first recorded (created by
/// the first setup, still created by it).
fn record(
    ledger: &mut Ledger,
    agent: Agent,
    file: &Path,
    created: bool,
    created_dirs: Vec<PathBuf>,
) {
    if ledger.files.iter().any(|c| c.file == file) {
        return;
    }
    ledger.files.push(Changed {
        agent: agent.typed_name().to_owned(),
        file: file.to_owned(),
        created,
        before: None,
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
            let mut ledger: Ledger =
                serde_json::from_slice(&bytes).map_err(|source| SetupError::BadLedger {
                    path: path.to_owned(),
                    source,
                })?;
            if ledger.v < 2 {
                for changed in &mut ledger.files {
                    changed.created = changed.before.is_none();
                }
            }
            Ok(Some(ledger))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SetupError::ReadLedger {
            path: path.to_owned(),
            source,
        }),
    }
}

fn undo(ledger_path: &Path, read_only: ReadOnly) -> Result<ExitCode, SetupError> {
    let Some(ledger) = read_ledger(ledger_path)? else {
        say!("nothing to undo ({} does not exist)", ledger_path.display());
        return Ok(ExitCode::SUCCESS);
    };
    let mut failed = false;
    for changed in &ledger.files {
        let name = &changed.agent;
        let Ok(agent) = Agent::from_name(name) else {
            say!(
                "{name}: {}: not an agent hooktrack knows: left alone",
                changed.file.display()
            );
            failed = true;
            continue;
        };
        match undo_one(agent, changed, read_only) {
            Ok(done) => say!("{name}: {}: {done}", changed.file.display()),
            Err(e) => {
                say!("{name}: {}: {e}", changed.file.display());
                failed = true;
            }
        }
    }
    if failed {
        say!(
            "{} is kept: run `hooktrack setup --undo` again once the files above are fixed",
            ledger_path.display()
        );
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

/// Takes setup's entries out of one file as it is now (through a symlink, as install
/// writes), removes it if setup created it and nothing else is left, and says what was
/// done only once the file, read again, holds none of setup's entries.
fn undo_one(agent: Agent, changed: &Changed, read_only: ReadOnly) -> Result<String, String> {
    let file = &changed.file;
    let format = agent.config().format;
    if let Some(done) = give_back_users_plugin(agent, changed)? {
        return Ok(done);
    }
    // Only setup's entries: a running session's block stays for its own cleanup.
    let removed = match install::uninstall_routed(file, format, read_only) {
        Ok(Uninstalled::Removed { .. }) => true,
        Ok(_) => false,
        Err(e) => return Err(error_chain(&e)),
    };
    let is_link = fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_symlink());
    let now = fs::read(file)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let left = now.as_deref().map_or(0, |text| routed_entries(agent, text));
    if left > 0 {
        return Err(format!("still holds {left} of hooktrack's entries"));
    }
    let mut done = match (removed, now.is_some()) {
        (true, true) => {
            "hooktrack's entries removed; the rest of the file is as it is now".to_owned()
        }
        (true, false) if format == ConfigFormat::HookFiles => {
            "removed (hooktrack's hook files, one per event)".to_owned()
        }
        (true, false) => "removed (hooktrack's plugin)".to_owned(),
        (false, true) => "holds no hooktrack entries: left alone".to_owned(),
        (false, false) => "does not exist".to_owned(),
    };
    if changed.created
        && !is_link
        && now
            .as_deref()
            .is_some_and(|t| install::holds_nothing(t, format))
    {
        fs::remove_file(file).map_err(|e| format!("cannot remove it: {e}"))?;
        done = "removed (setup created it, and nothing else is in it)".to_owned();
    }
    if !file.exists() {
        // Only directories setup created, and only while empty.
        for dir in &changed.created_dirs {
            let _ = fs::remove_dir(dir);
        }
    }
    Ok(done)
}

/// A version 1 setup replaced a user's own plugin file at hooktrack's path with its
/// plugin and kept the user's bytes: while hooktrack's plugin is still there, the user's
/// file goes back in its place.
fn give_back_users_plugin(agent: Agent, changed: &Changed) -> Result<Option<String>, String> {
    let (ConfigFormat::Plugin, Some(theirs)) = (agent.config().format, &changed.before) else {
        return Ok(None);
    };
    if install::is_our_plugin(theirs) {
        return Ok(None);
    }
    let now = fs::read_to_string(&changed.file).ok();
    if !now.as_deref().is_some_and(install::is_our_plugin) {
        return Ok(None);
    }
    hooktrack::store::write_atomic(&changed.file, theirs.as_bytes(), 0o644)
        .map_err(|e| error_chain(&e))?;
    Ok(Some(
        "your own file, which an earlier setup replaced, is back".to_owned(),
    ))
}

/// How many of setup's (environment-routed) entries `text` holds.
fn routed_entries(agent: Agent, text: &str) -> usize {
    own_side::entries(agent, text)
        .iter()
        .filter(|e| e.routed)
        .count()
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
