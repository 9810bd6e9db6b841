//! Where an emitter's failures are written: `emit.log` in the store; when the store cannot
//! take it, a per-user log (`$XDG_STATE_HOME/hooktrack/emit.log`, else
//! `~/.local/state/hooktrack/emit.log`); when neither can, standard error (never
//! standard output, which the agent may read as the hook's answer).
//!
//! `emit.log` is moved to `emit.log.1` past [`LOG_ROTATE_BYTES`] under an exclusive lock on
//! the log itself, and only while the path still names the locked file: two emitters
//! rotating at once cannot move each other's lines (or the old log) away.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::OFlags;

use crate::store::{LockGuard, StorePaths, secure};

/// `emit.log` is moved to `emit.log.1` when it grows past this.
pub const LOG_ROTATE_BYTES: u64 = 1024 * 1024;

/// How long a log line waits for another emitter's rotation.
const LOG_LOCK_WAIT: Duration = Duration::from_millis(200);

/// Appends `text` to the store's `emit.log`, else to the per-user log, else to stderr.
pub fn log_text(dir: &Path, text: &str) {
    if append_store_log(dir, text).is_ok() {
        return;
    }
    if let Some(path) = user_log_path()
        && append_user_log(&path, text).is_ok()
    {
        return;
    }
    let _ = io::stderr().write_all(text.as_bytes());
}

/// Appends `text` to the per-user log, else to stderr: for an emitter whose store was
/// refused (it writes nothing there, not even its log).
pub fn log_text_user(text: &str) {
    if let Some(path) = user_log_path()
        && append_user_log(&path, text).is_ok()
    {
        return;
    }
    let _ = io::stderr().write_all(text.as_bytes());
}

/// The per-user log, from the environment (`None` without `XDG_STATE_HOME` or `HOME`).
pub fn user_log_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?);
            Some(home.join(".local").join("state"))
        })?;
    Some(state.join("hooktrack").join("emit.log"))
}

fn append_store_log(dir: &Path, text: &str) -> io::Result<()> {
    let store = StorePaths::in_dir(dir);
    append_rotating(&store.emit_log, text)
}

fn append_user_log(path: &Path, text: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("no log directory"))?;
    secure::ensure_dir(dir).map_err(io::Error::other)?;
    append_rotating(path, text)
}

fn open_log(path: &Path) -> io::Result<File> {
    secure::open_private(path, OFlags::WRONLY | OFlags::APPEND).map_err(io::Error::other)
}

fn append_rotating(path: &Path, text: &str) -> io::Result<()> {
    let file = open_log(path)?;
    // A log line is worth more than the rotation: past the wait, write without it.
    let guard = LockGuard::lock_within(&file, path, LOG_LOCK_WAIT).ok();
    let full = file.metadata()?.len() > LOG_ROTATE_BYTES;
    if guard.is_some() && full && names(path, &file) {
        let rotated = path.with_extension("log.1");
        if std::fs::rename(path, &rotated).is_ok() {
            drop(guard);
            return open_log(path)?.write_all(text.as_bytes());
        }
    }
    (&file).write_all(text.as_bytes())
}

/// True while `path` names the open `file` (not rotated away by another emitter).
fn names(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(p), Ok(f)) => p.dev() == f.dev() && p.ino() == f.ino(),
        _ => false,
    }
}
