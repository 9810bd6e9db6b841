//! Finding a session's store on disk: what a user names (an events file, a store
//! directory, a session root) → its [`StorePaths`]. This reads directories, so it lives at
//! the reading edge; the core only builds paths.

use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

use hooktrack_core::store::{DEFAULT_PROVIDER_DIR, EVENTS_FILE, OBSERVATION_DIR, StorePaths};

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LocateError {
    #[error("{root} has stores of several providers ({found}); name one")]
    SeveralProviders { root: PathBuf, found: String },
    #[error("cannot list {dir}")]
    List {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What a user names: an events file (a file, or a path ending in `.ndjson`), a store
/// directory (one holding `events.ndjson`), or else a session root ([`locate_store`]).
pub fn resolve_store(path: &Path) -> Result<StorePaths, LocateError> {
    if path.is_file() || path.extension().is_some_and(|e| e == "ndjson") {
        return Ok(StorePaths::for_events_file(path));
    }
    if path.join(EVENTS_FILE).exists() {
        return Ok(StorePaths::in_dir(path));
    }
    locate_store(path)
}

/// The store under a session root: its only provider directory, or
/// [`DEFAULT_PROVIDER_DIR`] when there is none yet. Several are an error: the caller
/// must say which ([`StorePaths::for_provider`]).
pub fn locate_store(root: &Path) -> Result<StorePaths, LocateError> {
    let base = root.join(OBSERVATION_DIR);
    let entries = match std::fs::read_dir(&base) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(StorePaths::for_provider(root, DEFAULT_PROVIDER_DIR));
        }
        Err(source) => return Err(LocateError::List { dir: base, source }),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LocateError::List {
            dir: base.clone(),
            source,
        })?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found.sort();
    match found.as_slice() {
        [] => Ok(StorePaths::for_provider(root, DEFAULT_PROVIDER_DIR)),
        [one] => Ok(StorePaths::for_provider(root, one)),
        _ => Err(LocateError::SeveralProviders {
            root: root.to_path_buf(),
            found: found.join(", "),
        }),
    }
}
