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
//!   emit.log         the emitter's failures (it never writes to stdout)
//!   collector.lock   held by the one collector serving the store
//! ```
//!
//! Every writer appends a row as one `write` on an `O_APPEND` descriptor while holding an
//! exclusive `flock` on `emitter.seq`, so rows from the collector and from emitters never
//! interleave. Before appending, a writer checks that the file ends with a newline: a row
//! cut off by a crash (a collector killed mid-write, a full disk) becomes its own bad line,
//! and the new row stays whole. That is [`append`], the one appender: the functions here
//! and the emitter's watchdog (in its signal handler) all go through it.
//!
//! The directory and its files are checked before use ([`secure`]): a directory of another
//! user, a symlink in place of a file, loose modes are refused or tightened. Every lock
//! wait is bounded ([`LockGuard`], [`lock_collector`]).

pub mod append;
pub mod leftover;
mod lock;
pub mod secure;

pub use lock::{LOCK_WAIT, LockGuard, lock_collector};

use std::fs::{self, File};
use std::io::{self, BufReader, Write};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::OFlags;
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
/// hook it runs delivers there. Without [`DIR_ENV`] the hook delivers to the agent's
/// per-user default store ([`crate::emit::default_store`]); only without a state directory
/// or a home either does it exit at once.
pub const URL_ENV: &str = "HOOKTRACK_URL";
/// The store's artifact directory of the session the agent belongs to.
pub const DIR_ENV: &str = "HOOKTRACK_DIR";
/// The session's channel generation.
pub const GENERATION_ENV: &str = "HOOKTRACK_GENERATION";
/// Set by a launch that wrote its own generation-scoped block into the agent's config
/// (Kimi Code's `config.toml`), to the agent's store name: that agent's
/// environment-routed entries (`setup`'s, in the same file) then stand down, so each
/// hook delivers once, through the launch's block.
pub const LAUNCH_BLOCK_ENV: &str = "HOOKTRACK_LAUNCH_BLOCK";

/// Errors of the store files.
#[derive(Debug, Error)]
#[non_exhaustive]
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
    #[error("gave up waiting for the store lock {path} after {waited_ms} ms (its holder is stuck)")]
    LockTimeout { path: PathBuf, waited_ms: u128 },
    #[error("another collector serves this store (it holds {path})")]
    CollectorRunning { path: PathBuf },
    #[error("refusing to use {path}: {reason}")]
    Untrusted {
        path: PathBuf,
        reason: secure::Distrust,
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

/// Creates the store directory (0700) and its parents if missing; checks and tightens an
/// existing one (see [`secure::ensure_dir`]).
pub fn create_dir(store: &StorePaths) -> Result<(), StoreError> {
    secure::ensure_dir(&store.dir)
}

/// Opens `events.ndjson` for appending (and reading its last byte), creating it 0600.
pub fn open_events(store: &StorePaths) -> Result<File, StoreError> {
    secure::open_private(&store.events, OFlags::RDWR | OFlags::APPEND)
}

/// True while `events.ndjson` still names the open file `events` (not renamed away,
/// deleted, or replaced by rotation). Checked under the store lock before each append.
pub fn still_names(store: &StorePaths, events: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::symlink_metadata(&store.events), events.metadata()) {
        (Ok(path), Ok(open)) => path.dev() == open.dev() && path.ino() == open.ino(),
        _ => false,
    }
}

/// Opens the counter file, which is also the store's lock.
pub fn open_counter(store: &StorePaths) -> Result<File, StoreError> {
    secure::open_private(&store.counter, OFlags::RDWR)
}

/// Takes the next `emitter_seq` (1, 2, ...) under the exclusive lock.
pub fn take_emitter_seq(store: &StorePaths, counter: &File) -> Result<u64, StoreError> {
    let path = store.counter.clone();
    let _guard = LockGuard::lock(counter, &path)?;
    let next = last_emitter_seq(store, counter)? + 1;
    // Fixed width: the new text always covers the old, no truncation needed.
    let line = format!("{next:020}\n");
    counter
        .write_all_at(line.as_bytes(), 0)
        .map_err(|source| StoreError::Write { path, source })?;
    Ok(next)
}

/// The last `emitter_seq` handed out (0 before the first). Read without the lock: the
/// counter only grows and is written in one fixed-width `pwrite`, so a reader sees every
/// value handed out before it looked.
pub fn last_emitter_seq(store: &StorePaths, counter: &File) -> Result<u64, StoreError> {
    let path = &store.counter;
    // Positioned reads: the collector's threads share one descriptor.
    let mut buf = [0u8; 64];
    let mut len = 0;
    while len < buf.len() {
        match counter.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(StoreError::Read {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    let text = String::from_utf8_lossy(&buf[..len]);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(0);
    }
    trimmed.parse::<u64>().map_err(|_| StoreError::BadCounter {
        path: path.clone(),
        content: trimmed.chars().take(40).collect(),
    })
}

/// Appends one row (which must end with a newline) under the store lock.
pub fn append_locked(
    store: &StorePaths,
    events: &File,
    counter: &File,
    row: &[u8],
) -> Result<(), StoreError> {
    let _guard = LockGuard::lock(counter, &store.counter)?;
    append_row(store, events, row)
}

/// Appends one row under the store lock to whatever file `events.ndjson` names now: a
/// file rotated away (renamed, deleted, replaced) is closed and the path reopened (created
/// if missing) before the row is written, so no row goes to an inode nobody reads.
pub fn append_following(
    store: &StorePaths,
    events: &mut File,
    counter: &File,
    row: &[u8],
) -> Result<(), StoreError> {
    append_following_within(store, events, counter, row, LOCK_WAIT)
}

/// [`append_following`] waiting at most `wait` for the store lock (`Duration::ZERO`: one
/// try, for a caller that must not wait).
pub fn append_following_within(
    store: &StorePaths,
    events: &mut File,
    counter: &File,
    row: &[u8],
    wait: std::time::Duration,
) -> Result<(), StoreError> {
    let _guard = LockGuard::lock_within(counter, &store.counter, wait)?;
    if !still_names(store, events) {
        *events = open_events(store)?;
    }
    append_row(store, events, row)
}

/// Appends a row of the store's own writers other than the collector and the emitter (the
/// launcher's `process_ended`), under the store lock, to whatever `events.ndjson` names now.
pub fn append_row_now(store: &StorePaths, row: &[u8]) -> Result<(), StoreError> {
    create_dir(store)?;
    let counter = open_counter(store)?;
    let mut events = open_events(store)?;
    append_following(store, &mut events, &counter, row)
}

/// How much of the end of `events.ndjson` [`append_row_unless`] shows its caller.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// Appends the row `decide` makes from the whole lines at the end of `events.ndjson`
/// (its last [`TAIL_BYTES`] at most), under the store lock, or nothing when it makes
/// none. The way for writers that may race one another (two `watch`es seeing the same
/// agent end) to write a row once: each looks for the other's row under the lock.
/// Returns whether a row was written. The store must exist already.
pub fn append_row_unless(
    store: &StorePaths,
    decide: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
) -> Result<bool, StoreError> {
    let counter = open_counter(store)?;
    let _guard = LockGuard::lock(&counter, &store.counter)?;
    let events = open_events(store)?;
    let tail = read_tail(&store.events, &events, TAIL_BYTES)?;
    let Some(row) = decide(&tail) else {
        return Ok(false);
    };
    append_row(store, &events, &row)?;
    Ok(true)
}

/// The whole lines among the last `limit` bytes of `file` (a line cut by the window's
/// start is left out).
fn read_tail(path: &Path, file: &File, limit: u64) -> Result<Vec<u8>, StoreError> {
    let read_error = |source| StoreError::Read {
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(read_error)?.len();
    let start = len.saturating_sub(limit);
    let mut buf = vec![0; usize::try_from(len - start).unwrap_or(0)];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], start + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(read_error(source)),
        }
    }
    buf.truncate(done);
    if start > 0 {
        let first = buf
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |i| i + 1);
        buf.drain(..first);
    }
    Ok(buf)
}

/// Renames `events.ndjson` to `events.ndjson.1` (replacing an older one) under the store
/// lock when it is over `limit` bytes, so a store no collector serves stays bounded.
/// Returns whether it rotated. Readers follow the rename (the tailer reads the old file
/// to its end, then the new one).
pub fn rotate_events(store: &StorePaths, counter: &File, limit: u64) -> Result<bool, StoreError> {
    let _guard = LockGuard::lock(counter, &store.counter)?;
    let len = match fs::symlink_metadata(&store.events) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(StoreError::Read {
                path: store.events.clone(),
                source,
            });
        }
    };
    if len <= limit {
        return Ok(false);
    }
    let mut rotated = store.events.clone().into_os_string();
    rotated.push(".1");
    fs::rename(&store.events, &rotated).map_err(|source| StoreError::Write {
        path: store.events.clone(),
        source,
    })?;
    Ok(true)
}

/// Appends one row without the lock: the last resort when the lock's holder is stuck.
/// One `write` of a whole row on an `O_APPEND` descriptor is not interleaved with another
/// on a local file system; only the cut-off-line repair can race.
pub fn append_unlocked(store: &StorePaths, row: &[u8]) -> Result<(), StoreError> {
    let events = open_events(store)?;
    append_row(store, &events, row)
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
            Ok(Some(ReadLine::Oversized { .. } | ReadLine::Long { .. })) => {}
            Ok(None) => return Ok(max),
            Err(source) => return Err(StoreError::Read { path, source }),
        }
    }
}

/// The appender's [`append`](append::append) on `events`, its failure named after the file.
fn append_row(store: &StorePaths, events: &File, row: &[u8]) -> Result<(), StoreError> {
    append::append(events, row).map_err(|failure| secure::store_error(&store.events, failure))
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

/// Replaces `path` with `bytes` atomically: a temporary file with an unpredictable name,
/// created exclusively in the same directory with `mode`, flushed, renamed over the
/// target, and the directory flushed so the rename survives a crash.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    let write_err = |source| StoreError::Write {
        path: path.to_owned(),
        source,
    };
    let tmp = secure::temp_path(path)?;
    let result = (|| {
        let mut file = secure::create_temp(&tmp, mode)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(write_err)?;
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => secure::sync_dir(dir).map_err(write_err),
        None => secure::sync_dir(Path::new(".")).map_err(write_err),
    }
}
