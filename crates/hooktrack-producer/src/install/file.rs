//! Reading and replacing a config file: symlinks followed, mode kept, atomic writes.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hooktrack_core::diagnostics::error_chain;

use super::InstallError;
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

/// The file's permission bits, 0600 for a file that does not exist yet.
pub(crate) fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600)
}

/// Replaces `config` atomically (temporary file in the same directory, fsync, rename),
/// creating its directory if needed.
pub(crate) fn write(config: &Path, text: &str, mode: u32) -> Result<(), InstallError> {
    if let Some(parent) = config.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|source| InstallError::Write {
            path: config.to_owned(),
            source: StoreError::CreateDir {
                path: parent.to_owned(),
                source,
            },
        })?;
    }
    store::write_atomic(config, text.as_bytes(), mode).map_err(|source| InstallError::Write {
        path: config.to_owned(),
        source,
    })
}

/// Puts `original` back byte for byte, or removes the file when there was none.
pub(crate) fn restore(config: &Path, original: Option<&str>, mode: u32) -> io::Result<()> {
    match original {
        Some(text) => store::write_atomic(config, text.as_bytes(), mode)
            .map_err(|e| io::Error::other(error_chain(&e))),
        None => fs::remove_file(config),
    }
}
