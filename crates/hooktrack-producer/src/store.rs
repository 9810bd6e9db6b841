//! Writing one provider's store (contract section 2): the locked appends both writers use,
//! the emitter_seq counter, and atomic metadata writes. Where the files are
//! ([`StorePaths`]) and what a row looks like ([`Envelope`](hooktrack_core::envelope::Envelope))
//! are the core's contract; this file only writes them.
//!
//! ```text
//! <session_root>/hook-observation/<provider>/
//!   events.ndjson    rows, append-only, 0600 (collector and emitter fallback)
//!   collector.json   the collector's pid, port, generation, status (no secret)
//!   channel.json     the installer's verdict (no secret)
//!   emitter.seq      the emitter_seq counter; its flock also serializes appends
//!   emit.log         the emitter's failures (it never writes to stdout or stderr)
//! ```
//!
//! Both writers append a row as one `write` on an `O_APPEND` descriptor while holding an
//! exclusive `flock` on `emitter.seq`, so rows from the collector and from emitters never
//! interleave. Before appending, a writer checks that the file ends with a newline: a row
//! cut off by a crash (a collector killed mid-write, a full disk) becomes its own bad line,
//! and the new row stays whole.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use thiserror::Error;

use hooktrack_core::read::{LineReader, ReadLine};
use hooktrack_core::row::parse_line;
use hooktrack_core::time::Timestamp;

pub use hooktrack_core::envelope::{MAX_BODY_BYTES, MAX_PAYLOAD_BYTES};
pub use hooktrack_core::store::StorePaths;

/// The environment variable that carries the per-session bearer token.
pub const TOKEN_ENV: &str = "HOOKTRACK_TOKEN";

/// The routing environment of an environment-routed hook (contract section 10): the
/// agent process inherits it from `hooktrack session` (or a supervisor's launch) and every
/// hook it runs delivers there. Without [`DIR_ENV`] the hook has nowhere to deliver and
/// exits at once.
pub const URL_ENV: &str = "HOOKTRACK_URL";
/// The store's artifact directory of the session the agent belongs to.
pub const DIR_ENV: &str = "HOOKTRACK_DIR";
/// The session's channel generation.
pub const GENERATION_ENV: &str = "HOOKTRACK_GENERATION";

/// Errors of the store files.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot create the directory {path}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot open {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot lock {path}")]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the counter in {path} is not a number ({content:?})")]
    BadCounter { path: PathBuf, content: String },
}

/// Creates the store directory (0700) and its parents if missing.
pub fn create_dir(store: &StorePaths) -> Result<(), StoreError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&store.dir)
        .map_err(|source| StoreError::CreateDir {
            path: store.dir.clone(),
            source,
        })
}

/// Opens `events.ndjson` for appending (and reading its last byte), creating it 0600.
pub fn open_events(store: &StorePaths) -> Result<File, StoreError> {
    let path = &store.events;
    let file = open_private(path, OpenOptions::new().read(true).append(true))?;
    tighten(&file, path)?;
    Ok(file)
}

/// Opens the counter file, which is also the store's lock.
pub fn open_counter(store: &StorePaths) -> Result<File, StoreError> {
    open_private(&store.counter, OpenOptions::new().read(true).write(true))
}

/// Takes the next `emitter_seq` (1, 2, ...) under the exclusive lock.
pub fn take_emitter_seq(store: &StorePaths, counter: &File) -> Result<u64, StoreError> {
    let path = store.counter.clone();
    let _guard = LockGuard::lock(counter, &path)?;
    let mut text = String::new();
    (&*counter)
        .seek(SeekFrom::Start(0))
        .and_then(|_| (&*counter).take(64).read_to_string(&mut text))
        .map_err(|source| StoreError::Read {
            path: path.clone(),
            source,
        })?;
    let trimmed = text.trim();
    let last = if trimmed.is_empty() {
        0
    } else {
        trimmed.parse::<u64>().map_err(|_| StoreError::BadCounter {
            path: path.clone(),
            content: trimmed.chars().take(40).collect(),
        })?
    };
    let next = last + 1;
    // Fixed width: the new text always covers the old, no truncation needed.
    let line = format!("{next:020}\n");
    counter
        .write_all_at(line.as_bytes(), 0)
        .map_err(|source| StoreError::Write { path, source })?;
    Ok(next)
}

/// Appends one row (which must end with a newline) under the store lock.
pub fn append_locked(
    store: &StorePaths,
    events: &File,
    counter: &File,
    row: &[u8],
) -> Result<(), StoreError> {
    let _guard = LockGuard::lock(counter, &store.counter)?;
    append_whole(events, row).map_err(|source| StoreError::Write {
        path: store.events.clone(),
        source,
    })
}

/// The highest collector `sequence` in `events.ndjson` (0 when none), so that a
/// restarted collector goes on increasing.
pub fn max_sequence(store: &StorePaths) -> Result<u64, StoreError> {
    let path = store.events.clone();
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(StoreError::Open { path, source }),
    };
    let mut reader = LineReader::new(BufReader::with_capacity(1 << 16, file));
    let mut max = 0;
    loop {
        match reader.next_line() {
            Ok(Some(ReadLine::Line { bytes, .. } | ReadLine::Truncated { bytes, .. })) => {
                if let Ok(row) = parse_line(bytes)
                    && let Some(s) = row.meta.sequence
                {
                    max = max.max(s);
                }
            }
            Ok(Some(ReadLine::Oversized { .. })) => {}
            Ok(None) => return Ok(max),
            Err(source) => return Err(StoreError::Read { path, source }),
        }
    }
}

/// Holds an exclusive `flock` until dropped.
pub struct LockGuard<'a> {
    file: &'a File,
}

impl<'a> LockGuard<'a> {
    pub fn lock(file: &'a File, path: &Path) -> Result<Self, StoreError> {
        file.lock().map_err(|source| StoreError::Lock {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self { file })
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    options
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| StoreError::Open {
            path: path.to_owned(),
            source,
        })
}

/// Makes a file we own owner-only if it was created looser by someone else.
fn tighten(file: &File, path: &Path) -> Result<(), StoreError> {
    let meta = file.metadata().map_err(|source| StoreError::Open {
        path: path.to_owned(),
        source,
    })?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(|source| StoreError::Write {
                path: path.to_owned(),
                source,
            })?;
    }
    Ok(())
}

/// Appends `row` with one `write` call, first ending a cut-off last line if there is one.
/// The caller holds the store lock.
fn append_whole(events: &File, row: &[u8]) -> io::Result<()> {
    let len = events.metadata()?.len();
    let mut last = [0u8; 1];
    let needs_newline = len > 0 && {
        events.read_exact_at(&mut last, len - 1)?;
        last[0] != b'\n'
    };
    if needs_newline {
        let mut buf = Vec::with_capacity(row.len() + 1);
        buf.push(b'\n');
        buf.extend_from_slice(row);
        (&*events).write_all(&buf)
    } else {
        (&*events).write_all(row)
    }
}

/// Now, from the system clock (the producer side stamps rows on receipt).
pub fn now() -> Timestamp {
    let ms = match SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    };
    Timestamp::from_millis(ms)
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file, then rename), 0600.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Write {
        path: path.to_owned(),
        source: io::Error::other(e),
    })?;
    text.push(b'\n');
    write_atomic(path, &text, 0o600)
}

/// Replaces `path` with `bytes` atomically: a temporary file in the same directory with
/// `mode`, flushed, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    let write_err = |source| StoreError::Write {
        path: path.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.hooktrack-{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(write_err)
}
