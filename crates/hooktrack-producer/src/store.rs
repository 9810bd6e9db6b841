//! The artifact directory of one provider's store (contract section 2) and the two ways a
//! row gets into `events.ndjson`.
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

use std::borrow::Cow;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::value::RawValue;
use thiserror::Error;

use hooktrack_core::read::{LineReader, ReadLine};
use hooktrack_core::row::{MAX_LINE_BYTES, parse_line};
use hooktrack_core::time::Timestamp;

/// Longest request body the collector accepts by default, and the longest delivery an
/// emitter sends: a row adds at most a few hundred bytes, so every row stays under the
/// reader's [`MAX_LINE_BYTES`].
pub const MAX_BODY_BYTES: usize = MAX_LINE_BYTES - 1024;
/// Longest hook payload (stdin) that is embedded in a row.
pub const MAX_PAYLOAD_BYTES: usize = MAX_BODY_BYTES - 1024;
/// Longest provider or event name written into a row.
pub const MAX_NAME_BYTES: usize = 128;

/// The environment variable that carries the per-session bearer token.
pub const TOKEN_ENV: &str = "HOOKTRACK_TOKEN";

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

/// The files of one store.
#[derive(Clone, Debug)]
pub struct StoreDir {
    dir: PathBuf,
}

impl StoreDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
    // The names readers look for (`hooktrack_core::store`): one list for both sides.
    pub fn events(&self) -> PathBuf {
        self.dir.join(hooktrack_core::store::EVENTS_FILE)
    }
    pub fn collector_json(&self) -> PathBuf {
        self.dir.join(hooktrack_core::store::COLLECTOR_FILE)
    }
    pub fn channel_json(&self) -> PathBuf {
        self.dir.join(hooktrack_core::store::CHANNEL_FILE)
    }
    pub fn counter(&self) -> PathBuf {
        self.dir.join("emitter.seq")
    }
    pub fn emit_log(&self) -> PathBuf {
        self.dir.join("emit.log")
    }

    /// Creates the directory (0700) and its parents if missing.
    pub fn create(&self) -> Result<(), StoreError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|source| StoreError::CreateDir {
                path: self.dir.clone(),
                source,
            })
    }

    /// Opens `events.ndjson` for appending (and reading its last byte), creating it 0600.
    pub fn open_events(&self) -> Result<File, StoreError> {
        let path = self.events();
        let file = open_private(&path, OpenOptions::new().read(true).append(true))?;
        tighten(&file, &path)?;
        Ok(file)
    }

    /// Opens the counter file, which is also the store's lock.
    pub fn open_counter(&self) -> Result<File, StoreError> {
        let path = self.counter();
        open_private(&path, OpenOptions::new().read(true).write(true))
    }

    /// Takes the next `emitter_seq` (1, 2, ...) under the exclusive lock.
    pub fn take_emitter_seq(&self, counter: &File) -> Result<u64, StoreError> {
        let path = self.counter();
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
        &self,
        events: &File,
        counter: &File,
        row: &[u8],
    ) -> Result<(), StoreError> {
        let _guard = LockGuard::lock(counter, &self.counter())?;
        append_whole(events, row).map_err(|source| StoreError::Write {
            path: self.events(),
            source,
        })
    }

    /// The highest collector `sequence` in `events.ndjson` (0 when none), so that a
    /// restarted collector goes on increasing.
    pub fn max_sequence(&self) -> Result<u64, StoreError> {
        let path = self.events();
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

/// How a row reached the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Http,
    CommandFallback,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::CommandFallback => "command_fallback",
        }
    }
}

/// The parts of one row (contract section 2).
#[derive(Debug)]
pub struct RowParts<'a> {
    pub provider: &'a str,
    pub generation: u64,
    pub via: Via,
    pub sequence: Option<u64>,
    pub emitter_seq: Option<u64>,
    pub received_at: Timestamp,
    pub event: Option<&'a str>,
    /// The payload as it came, already one line (see [`one_line`]); `None` writes `null`.
    pub payload: Option<&'a RawValue>,
    /// Why there is no payload (stdin was not JSON, too large, ...).
    pub payload_error: Option<&'a str>,
    /// The agent's tmux pane (`$TMUX_PANE`), written last and only when known.
    pub tmux_pane: Option<&'a str>,
}

/// Renders a row, newline included, keys in the contract's order. The payload is spliced
/// in byte for byte.
pub fn render_row(parts: &RowParts<'_>) -> Vec<u8> {
    let payload = parts.payload.map(|p| one_line(p.get()));
    let mut out = Vec::with_capacity(payload.as_ref().map_or(0, |p| p.len()) + 256);
    out.extend_from_slice(b"{\"v\":1,\"provider\":");
    json_str(&mut out, parts.provider);
    out.extend_from_slice(b",\"generation\":");
    out.extend_from_slice(parts.generation.to_string().as_bytes());
    out.extend_from_slice(b",\"via\":\"");
    out.extend_from_slice(parts.via.name().as_bytes());
    out.extend_from_slice(b"\",\"sequence\":");
    opt_num(&mut out, parts.sequence);
    out.extend_from_slice(b",\"emitter_seq\":");
    opt_num(&mut out, parts.emitter_seq);
    out.extend_from_slice(b",\"received_at\":\"");
    out.extend_from_slice(parts.received_at.to_string().as_bytes());
    out.extend_from_slice(b"\",\"event\":");
    match parts.event {
        Some(e) => json_str(&mut out, e),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"payload\":");
    match &payload {
        Some(p) => out.extend_from_slice(p.as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    if let Some(err) = parts.payload_error {
        out.extend_from_slice(b",\"payload_error\":");
        json_str(&mut out, err);
    }
    if let Some(pane) = parts.tmux_pane {
        out.extend_from_slice(b",\"tmux_pane\":");
        json_str(&mut out, pane);
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A JSON text on one line: raw CR and LF can only be whitespace between tokens (inside
/// strings JSON requires them escaped), so they become spaces and nothing else changes.
pub fn one_line(json: &str) -> Cow<'_, str> {
    if json.bytes().any(|b| b == b'\n' || b == b'\r') {
        Cow::Owned(json.replace(['\n', '\r'], " "))
    } else {
        Cow::Borrowed(json)
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn opt_num(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
}

/// Cuts a name to [`MAX_NAME_BYTES`] on a character boundary.
pub fn clip_name(name: &str) -> &str {
    if name.len() <= MAX_NAME_BYTES {
        return name;
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_the_contract_key_order_and_keep_the_payload_verbatim() {
        let payload: &RawValue =
            serde_json::from_str(r#"{"hook_event_name": "Stop", "x": [1, 2], "é": "\u00e9"}"#)
                .unwrap();
        let row = render_row(&RowParts {
            provider: "kimi",
            generation: 2,
            via: Via::Http,
            sequence: Some(41),
            emitter_seq: Some(57),
            received_at: Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z").unwrap(),
            event: Some("Stop"),
            payload: Some(payload),
            payload_error: None,
            tmux_pane: None,
        });
        assert_eq!(
            String::from_utf8(row).unwrap(),
            "{\"v\":1,\"provider\":\"kimi\",\"generation\":2,\"via\":\"http\",\"sequence\":41,\"emitter_seq\":57,\"received_at\":\"2026-10-20T09:14:03.512Z\",\"event\":\"Stop\",\"payload\":{\"hook_event_name\": \"Stop\", \"x\": [1, 2], \"é\": \"\\u00e9\"}}\n"
        );
    }

    #[test]
    fn a_known_tmux_pane_is_the_last_key() {
        let row = render_row(&RowParts {
            provider: "claude",
            generation: 1,
            via: Via::CommandFallback,
            sequence: None,
            emitter_seq: Some(1),
            received_at: Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z").unwrap(),
            event: Some("Stop"),
            payload: None,
            payload_error: None,
            tmux_pane: Some("%3"),
        });
        let text = String::from_utf8(row).unwrap();
        assert!(
            text.ends_with(",\"payload\":null,\"tmux_pane\":\"%3\"}\n"),
            "{text}"
        );
        let parsed = hooktrack_core::row::parse_line(text.trim_end().as_bytes()).unwrap();
        assert_eq!(parsed.tmux_pane.as_deref(), Some("%3"));
    }

    #[test]
    fn multi_line_json_becomes_one_line_with_the_same_value() {
        let text = "{\n  \"a\": \"x\\ny\",\r\n  \"b\": 1\n}";
        let flat = one_line(text);
        assert!(!flat.contains('\n'));
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        let b: serde_json::Value = serde_json::from_str(&flat).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        let long = "é".repeat(100);
        let clipped = clip_name(&long);
        assert!(clipped.len() <= MAX_NAME_BYTES);
        assert!(clipped.chars().all(|c| c == 'é'));
    }
}
