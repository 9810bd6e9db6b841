//! Where a tailer stopped, persisted so a restarted supervisor neither loses nor repeats
//! lines.
//!
//! A checkpoint names the file (device, inode, and a checksum of its first line, which
//! tells a recreated file apart even when the inode number was reused) and the offset after
//! the last whole line handed out. It is written atomically: a temporary file in the same
//! directory, fsync, rename over the old one, fsync of the directory.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::FileId;
use hooktrack_core::row::MAX_LINE_BYTES;

const VERSION: u32 = 1;
/// A checkpoint is one small JSON object; anything larger is not one.
const MAX_CHECKPOINT_BYTES: u64 = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// After the last whole line handed out.
    pub offset: u64,
    /// Lines handed out before `offset` (numbering goes on from here).
    pub lines: u64,
    pub dev: u64,
    pub ino: u64,
    /// The first line of the file, once it was whole.
    pub first_line: Option<FirstLine>,
}

/// The first line's length and FNV-1a 64 checksum (`None` for a line over the limit,
/// whose bytes are never held: then its length and newline are checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstLine {
    pub len: u64,
    pub fnv1a: Option<u64>,
}

impl FirstLine {
    pub(super) fn of(len: u64, bytes: Option<&[u8]>) -> Self {
        Self {
            len,
            fnv1a: bytes.map(fnv1a),
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    v: u32,
    #[serde(flatten)]
    checkpoint: Checkpoint,
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CheckpointError {
    #[error("cannot read the checkpoint {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: super::TailError,
    },
    #[error("the checkpoint {path} is not valid")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the checkpoint {path} has version {found}, expected {VERSION}")]
    Version { path: PathBuf, found: u32 },
    #[error("cannot write the checkpoint {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Why a checkpoint does not fit the file found at its path.
#[derive(Debug, Error)]
pub enum Mismatch {
    #[error("another file: device or inode changed")]
    OtherFile,
    #[error("the file has {len} bytes, fewer than the checkpoint's {offset}")]
    Shorter { len: u64, offset: u64 },
    #[error("no first-line checksum")]
    NoFirstLine,
    /// A notice, not a chain: the cause is part of the one line.
    #[error("cannot read the first line: {error}")]
    ReadFirstLine { error: io::Error },
    #[error("the first line differs")]
    FirstLineDiffers,
}

impl Checkpoint {
    /// Loads a checkpoint; `None` if there is none yet.
    pub fn load(path: &Path) -> Result<Option<Self>, CheckpointError> {
        // A FIFO named as the checkpoint must not hang the start (see `open_regular`).
        let bytes = match super::read_regular(path, MAX_CHECKPOINT_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(CheckpointError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let disk: OnDisk =
            serde_json::from_slice(&bytes).map_err(|source| CheckpointError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        if disk.v != VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: disk.v,
            });
        }
        Ok(Some(disk.checkpoint))
    }

    /// Writes the checkpoint atomically: after a crash, `path` holds this one or the one
    /// before, never a mix.
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        let err = |source| CheckpointError::Write {
            path: path.to_path_buf(),
            source,
        };
        let bytes = serde_json::to_vec(&OnDisk {
            v: VERSION,
            checkpoint: *self,
        })
        .map_err(|e| err(io::Error::other(e)))?;
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp = path.with_file_name(tmp_name);
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        // A FIFO or a symlink planted at the temporary name must neither block the save
        // (opening a FIFO to write waits for a reader) nor redirect it.
        #[cfg(unix)]
        {
            use rustix::fs::OFlags;
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(
                (OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY)
                    .bits()
                    .cast_signed(),
            );
        }
        let mut file = options.open(&tmp).map_err(err)?;
        if !file.metadata().map_err(err)?.is_file() {
            return Err(err(io::Error::other("not a regular file")));
        }
        file.write_all(&bytes).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        fs::rename(&tmp, path).map_err(err)?;
        sync_parent(path).map_err(err)?;
        Ok(())
    }

    /// Checks that `file` is the file this checkpoint was taken on; the reason if not.
    pub(super) fn matches(
        &self,
        file: &mut File,
        meta: &Metadata,
        id: FileId,
    ) -> Result<(), Mismatch> {
        if self.offset == 0 {
            return Ok(());
        }
        if (self.dev, self.ino) != (id.dev, id.ino) {
            return Err(Mismatch::OtherFile);
        }
        if meta.len() < self.offset {
            return Err(Mismatch::Shorter {
                len: meta.len(),
                offset: self.offset,
            });
        }
        let Some(first) = self.first_line else {
            return Err(Mismatch::NoFirstLine);
        };
        first.check(file)
    }
}

impl FirstLine {
    /// Checks that `file` still starts with this line, without moving its position. A
    /// held first line is compared whole; one over the limit by its newline alone.
    pub(super) fn check(&self, file: &File) -> Result<(), Mismatch> {
        use std::os::unix::fs::FileExt;
        let (at, hash) = match self.fnv1a {
            Some(hash) if self.len <= MAX_LINE_BYTES as u64 => (0, Some(hash)),
            _ => (self.len, None),
        };
        let mut head = vec![0; (self.len - at) as usize + 1];
        if let Err(e) = file.read_exact_at(&mut head, at) {
            return Err(Mismatch::ReadFirstLine { error: e });
        }
        let (line, newline) = head.split_at(head.len() - 1);
        if newline != b"\n" || hash.is_some_and(|h| h != fnv1a(line)) {
            return Err(Mismatch::FirstLineDiffers);
        }
        Ok(())
    }
}

#[cfg(unix)]
fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(not(unix))]
fn sync_parent(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
