//! Reading and replacing a config file: symlinks followed, mode kept, atomic writes that
//! never overwrite a save made since the read.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{InstallError, ReadOnly};
use crate::store::{self, StoreError};

/// Follows a symlinked config file, so the link survives the atomic replace.
pub(crate) fn resolve(config: &Path) -> PathBuf {
    match fs::symlink_metadata(config) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(config).unwrap_or_else(|_| config.to_owned())
        }
        _ => config.to_owned(),
    }
}

/// `Ok(None)` when the file does not exist.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, InstallError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| InstallError::NotUtf8 {
                path: path.to_owned(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Refuses a file the user made read-only (no owner write bit), unless `read_only` says
/// to rewrite it. A file that does not exist is writable.
pub(crate) fn check_writable(path: &Path, read_only: ReadOnly) -> Result<(), InstallError> {
    match fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o200 == 0 && read_only == ReadOnly::Refuse => {
            Err(InstallError::ReadOnly {
                path: path.to_owned(),
                mode: m.permissions().mode() & 0o7777,
            })
        }
        _ => Ok(()),
    }
}

/// The file's permission bits, 0600 for a file that does not exist yet.
pub(crate) fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600)
}

/// How many times an edit is redone on a file that keeps changing under it.
pub(crate) const MAX_EDIT_ATTEMPTS: u32 = 8;

/// What [`replace_if`] found.
#[derive(Debug)]
pub(crate) enum Replace {
    /// `text` is in place, and what it replaced was `base`.
    Done,
    /// The file no longer held `base` (another writer, an editor saving): nothing of theirs
    /// was replaced; this is what it holds now (`None`: removed). Redo the edit on it.
    Changed(Option<String>),
}

/// Replaces `config` with `text` only while it holds `base` (`None`: while it does not
/// exist), so an edit made from a stale read never drops another writer's save.
///
/// The file is re-read just before the rename; the rename itself is an exchange
/// (`renameat2(RENAME_EXCHANGE)`), which hands back the file it displaced: if another
/// writer saved in the microseconds between that re-read and the rename, their file is
/// seen, swapped back into place, and reported as [`Replace::Changed`]. The remaining
/// risk: a reader (an editor reloading) that looks in the instant between the two
/// exchanges sees hooktrack's text built on the older file; and on a file system without
/// `RENAME_EXCHANGE` only the re-read guards the rename (a window of one `rename`).
pub(crate) fn replace_if(
    config: &Path,
    base: Option<&str>,
    text: &str,
    mode: u32,
) -> Result<Replace, InstallError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let write_err = |source: io::Error| InstallError::Write {
        path: config.to_owned(),
        source: StoreError::Write {
            path: config.to_owned(),
            source,
        },
    };
    if let Some(parent) = config.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|source| InstallError::Write {
            path: config.to_owned(),
            source: StoreError::CreateDir {
                path: parent.to_owned(),
                source,
            },
        })?;
    }
    let tmp = store::secure::temp_path(config).map_err(|source| InstallError::Write {
        path: config.to_owned(),
        source,
    })?;
    let written = (|| {
        use std::io::Write;
        let mut file = store::secure::create_temp(&tmp, mode)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    })();
    let cleanup = |e| {
        let _ = fs::remove_file(&tmp);
        write_err(e)
    };
    written.map_err(cleanup)?;
    // The re-read, as late as it can be: after the fsync.
    let now = read_text(config).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })?;
    if now.as_deref() != base {
        let _ = fs::remove_file(&tmp);
        return Ok(Replace::Changed(now));
    }
    let Some(base) = base else {
        // It did not exist: create it only if it still does not.
        return match renameat_with(CWD, &tmp, CWD, config, RenameFlags::NOREPLACE) {
            Ok(()) => sync_parent(config)
                .map(|()| Replace::Done)
                .map_err(write_err),
            Err(e) if e == rustix::io::Errno::EXIST => {
                let _ = fs::remove_file(&tmp);
                Ok(Replace::Changed(read_text(config)?))
            }
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
                fs::rename(&tmp, config).map_err(cleanup)?;
                sync_parent(config)
                    .map(|()| Replace::Done)
                    .map_err(write_err)
            }
            Err(e) => Err(cleanup(e.into())),
        };
    };
    match renameat_with(CWD, &tmp, CWD, config, RenameFlags::EXCHANGE) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::NOENT => {
            // Removed since the re-read.
            let _ = fs::remove_file(&tmp);
            return Ok(Replace::Changed(read_text(config)?));
        }
        Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {
            fs::rename(&tmp, config).map_err(cleanup)?;
            return sync_parent(config)
                .map(|()| Replace::Done)
                .map_err(write_err);
        }
        Err(e) => return Err(cleanup(e.into())),
    }
    let displaced = read_text(&tmp);
    if matches!(&displaced, Ok(Some(d)) if d == base) {
        let _ = fs::remove_file(&tmp);
        return sync_parent(config)
            .map(|()| Replace::Done)
            .map_err(write_err);
    }
    // Another writer saved between the re-read and the exchange: theirs goes back.
    renameat_with(CWD, &tmp, CWD, config, RenameFlags::EXCHANGE)
        .map_err(|e| write_err(e.into()))?;
    let _ = fs::remove_file(&tmp);
    Ok(Replace::Changed(read_text(config)?))
}

fn sync_parent(config: &Path) -> io::Result<()> {
    match config.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => store::secure::sync_dir(dir),
        None => store::secure::sync_dir(Path::new(".")),
    }
}
