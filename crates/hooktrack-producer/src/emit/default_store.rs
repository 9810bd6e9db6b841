//! Where a routed hook delivers when the agent was started without hooktrack's
//! environment: one per-user store per agent, `$XDG_STATE_HOME/hooktrack/agents/<agent>/`
//! (else `~/.local/state/hooktrack/agents/<agent>/`), 0700 like every store. There is no
//! collector behind it: the hook appends its row itself, and rotates `events.ndjson` to
//! `events.ndjson.1` past [`ROTATE_BYTES`] so the store never grows without bound (readers
//! follow the rotation, and split the rows by `session_id` as for any store).

use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hooktrack_core::agent::Agent;

/// `events.ndjson` is rotated once it is over this size (one older file is kept).
pub const ROTATE_BYTES: u64 = 8 * 1024 * 1024;

/// The folder under the state directory that holds the default stores.
pub const STORES_DIR: &str = "agents";

/// hooktrack's per-user state directory: `$XDG_STATE_HOME/hooktrack` when it is set and
/// absolute, else `$HOME/.local/state/hooktrack`; `None` without either. `env` looks a
/// variable up (the caller decides which environment).
pub fn state_dir(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    let base = set("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            set("HOME")
                .map(PathBuf::from)
                .map(|h| h.join(".local").join("state"))
        })?;
    Some(base.join("hooktrack"))
}

/// The folder holding every agent's default store.
pub fn stores_root(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    state_dir(env).map(|d| d.join(STORES_DIR))
}

/// `agent`'s default store (by its store name, as rows name it).
pub fn default_store(env: impl Fn(&str) -> Option<OsString>, agent: Agent) -> Option<PathBuf> {
    stores_root(env).map(|d| d.join(agent.store_name()))
}

/// A folder of hooktrack's own on the way to a default store that was not this user's
/// (or was a symbolic link), moved aside so the delivery goes to a folder this user owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedAside {
    pub path: PathBuf,
    pub to: PathBuf,
    /// Its owner.
    pub uid: u32,
}

/// Makes hooktrack's own folders on the way to `store` private and this user's: the
/// state directory (`.../hooktrack`), `agents/` and the store itself, each created 0700
/// or tightened to it. A loose `agents/` would let another user plant `agents/<agent>`
/// before the first hook, which every later delivery would then refuse. One that is
/// another user's, or a symbolic link, is renamed aside in its parent (this user's: the
/// folder above it was made so), `<name>.foreign-<uid>-<pid>`, and a folder of this
/// user's made in its place; what was moved is returned, for the log. A folder that cannot
/// be fixed is left for the store's own check, which refuses it and says where.
pub fn secure_parents(state: &Path, store: &Path) -> Vec<MovedAside> {
    let me = rustix::process::geteuid().as_raw();
    let mut moved = Vec::new();
    if let Some(above) = state.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(above);
    }
    let mut folders = vec![state.to_owned()];
    if let Ok(below) = store.strip_prefix(state) {
        let mut at = state.to_owned();
        for part in below.components() {
            at.push(part);
            folders.push(at.clone());
        }
    }
    for folder in folders {
        match std::fs::symlink_metadata(&folder) {
            Err(_) => {}
            Ok(meta) if meta.is_dir() && meta.uid() == me => {
                if meta.mode() & 0o077 != 0 {
                    let _ =
                        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700));
                }
                continue;
            }
            Ok(meta) => {
                let mut name = folder.file_name().unwrap_or_default().to_owned();
                name.push(format!(".foreign-{}-{}", meta.uid(), std::process::id()));
                let to = folder.with_file_name(name);
                if std::fs::rename(&folder, &to).is_err() {
                    return moved;
                }
                moved.push(MovedAside {
                    path: folder.clone(),
                    to,
                    uid: meta.uid(),
                });
            }
        }
        if std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&folder)
            .is_err()
        {
            return moved;
        }
    }
    moved
}

/// The agent process that ran the hook: the hook's parent, or the parent's parent when
/// the parent is the shell the agent ran the hook's command line with (a shell that did
/// not `exec` its last command). Linux only (`/proc`); `None` elsewhere.
pub fn agent_pid() -> Option<u32> {
    let parent = rustix::process::getppid()?.as_raw_nonzero().get();
    let parent = u32::try_from(parent).ok()?;
    if is_shell(parent) {
        return parent_of(parent).or(Some(parent));
    }
    Some(parent)
}

fn is_shell(pid: u32) -> bool {
    let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
        return false;
    };
    matches!(
        comm.trim_end(),
        "sh" | "bash" | "dash" | "zsh" | "ash" | "ksh"
    )
}

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the parenthesised name,
/// which may itself hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let ppid = after.split_whitespace().nth(1)?.parse::<u32>().ok()?;
    (ppid > 1).then_some(ppid)
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

    #[test]
    fn the_state_directory_then_home_then_none() {
        for agent in Agent::ALL {
            let store = |vars| default_store(env(vars), agent);
            assert_eq!(
                store(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]),
                Some(PathBuf::from("/s/hooktrack/agents").join(agent.store_name()))
            );
            // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
            assert_eq!(
                store(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]),
                Some(PathBuf::from("/h/.local/state/hooktrack/agents").join(agent.store_name()))
            );
            assert_eq!(store(&[("XDG_STATE_HOME", "")]), None);
        }
    }

    #[test]
    fn the_agent_is_an_ancestor_of_the_test() {
        let pid = agent_pid();
        assert!(pid.is_some_and(|p| p != std::process::id()));
    }
}
