//! Trusting nothing about the store's directory (contract section 2): it is created 0700,
//! or checked to be a real directory owned by this user and tightened to 0700; files are
//! opened without following symbolic links, checked to be regular files owned by this
//! user, and tightened to 0600; temporary files get unpredictable names and are created
//! exclusively.
//!
//! A world-writable or foreign directory would let another local user plant a symlink
//! (`events.ndjson -> /etc/...`) that a writer running as root follows, or read the rows.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::StoreError;
use super::append::{self, Failure};

/// Why a store path is not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrust {
    Symlink,
    NotADirectory,
    NotARegularFile,
    OwnedBy { uid: u32, me: u32 },
}

impl fmt::Display for Distrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distrust::Symlink => f.write_str("it is a symbolic link"),
            Distrust::NotADirectory => f.write_str("it is not a directory"),
            Distrust::NotARegularFile => f.write_str("it is not a regular file"),
            Distrust::OwnedBy { uid, me } => write!(f, "it is owned by uid {uid}, not {me}"),
        }
    }
}

/// Creates `dir` (and missing parents) 0700, or checks an existing one: a directory, not a
/// symlink, owned by this user; its mode is tightened to 0700 (the appender's
/// [`check_dir`](append::check_dir), which the watchdog uses as it is).
pub fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    let create_err = |source| StoreError::CreateDir {
        path: dir.to_owned(),
        source,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(create_err)?;
    let c_dir = append::c_path(dir).ok_or_else(|| create_err(nul_in_path()))?;
    append::check_dir(&c_dir).map_err(|failure| match failure {
        Failure::Open(e) => create_err(e.into()),
        other => store_error(dir, other),
    })
}

/// Opens (creating 0600) a store file without following a symlink; refuses anything but a
/// regular file of this user, and tightens its mode to 0600 (the appender's
/// [`open_private`](append::open_private)). `flags` says how it is opened.
pub fn open_private(path: &Path, flags: OFlags) -> Result<File, StoreError> {
    let c_path = append::c_path(path).ok_or_else(|| StoreError::Open {
        path: path.to_owned(),
        source: nul_in_path(),
    })?;
    append::open_private(&c_path, flags)
        .map(File::from)
        .map_err(|failure| store_error(path, failure))
}

/// The error a failure of the appender is for the file at `path`.
pub fn store_error(path: &Path, failure: Failure) -> StoreError {
    let path = path.to_owned();
    match failure {
        Failure::Open(e) => StoreError::Open {
            path,
            source: e.into(),
        },
        Failure::Untrusted(reason) => StoreError::Untrusted { path, reason },
        Failure::Tighten(e) | Failure::Write(e) => StoreError::Write {
            path,
            source: e.into(),
        },
        Failure::ShortWrite => StoreError::Write {
            path,
            source: io::ErrorKind::WriteZero.into(),
        },
    }
}

fn nul_in_path() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte")
}

/// A temporary name next to `path` that another user cannot guess in advance.
pub fn temp_path(path: &Path) -> Result<PathBuf, StoreError> {
    let mut random = [0u8; 12];
    getrandom::fill(&mut random).map_err(|e| StoreError::Write {
        path: path.to_owned(),
        source: io::Error::other(e.to_string()),
    })?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(path.with_file_name(format!(".{name}.{suffix}.tmp")))
}

/// Creates the temporary file exclusively (never an existing file or a planted symlink).
pub fn create_temp(tmp: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(tmp)
}

/// Flushes a directory's entries, so a rename in it survives a crash.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
