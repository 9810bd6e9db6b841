//! Trusting nothing about the store's directory (contract section 2): it is created 0700,
//! or checked to be a real directory owned by this user and tightened to 0700; files are
//! opened without following symbolic links, checked to be regular files owned by this
//! user, and tightened to 0600; temporary files get unpredictable names and are created
//! exclusively.
//!
//! A world-writable or foreign directory would let another local user plant a symlink
//! (`events.ndjson -> /etc/...`) that a writer running as root follows, or read the rows.

use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::StoreError;

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

fn my_uid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` (and missing parents) 0700, or checks an existing one: a directory, not a
/// symlink, owned by this user; its mode is tightened to 0700.
pub fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    let created = fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    created.map_err(|source| StoreError::CreateDir {
        path: dir.to_owned(),
        source,
    })?;
    let meta = fs::symlink_metadata(dir).map_err(|source| StoreError::CreateDir {
        path: dir.to_owned(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(untrusted(dir, Distrust::Symlink));
    }
    if !meta.is_dir() {
        return Err(untrusted(dir, Distrust::NotADirectory));
    }
    check_owner(dir, &meta)?;
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|source| {
            StoreError::Write {
                path: dir.to_owned(),
                source,
            }
        })?;
    }
    Ok(())
}

/// Opens (creating 0600) a store file without following a symlink; refuses anything but a
/// regular file of this user, and tightens its mode to 0600.
pub fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    let file = options
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => untrusted(path, Distrust::Symlink),
            _ => StoreError::Open {
                path: path.to_owned(),
                source,
            },
        })?;
    let meta = file.metadata().map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() {
        return Err(untrusted(path, Distrust::NotARegularFile));
    }
    check_owner(path, &meta)?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(|source| StoreError::Write {
                path: path.to_owned(),
                source,
            })?;
    }
    Ok(file)
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

fn check_owner(path: &Path, meta: &Metadata) -> Result<(), StoreError> {
    let me = my_uid();
    if meta.uid() != me {
        return Err(untrusted(
            path,
            Distrust::OwnedBy {
                uid: meta.uid(),
                me,
            },
        ));
    }
    Ok(())
}

fn untrusted(path: &Path, reason: Distrust) -> StoreError {
    StoreError::Untrusted {
        path: path.to_owned(),
        reason,
    }
}
