//! The tailer: follows one `events.ndjson` by byte offset. The only module that follows
//! files; it never interprets a line.
//!
//! [`Tailer::poll`] reads whatever is new and hands out whole lines. It is driven from
//! outside: a watcher's notification or a periodic re-check only means "go read", so a
//! missed or coalesced notification costs latency, never a line.
//!
//! Guarantees, line by line:
//! - a line is handed out once its newline is on disk; a partial last line stays in memory
//!   and neither the offset nor a [`Checkpoint`] ever moves past it;
//! - a line over [`MAX_LINE_BYTES`](hooktrack_core::row::MAX_LINE_BYTES) is reported as
//!   [`ReadLine::Oversized`] without being held, and the lines after it are read as usual;
//! - **truncation** (the file is shorter than what was read) restarts at offset 0; so does
//!   **truncate-and-regrow** (copy-truncate rotation, then more appended than had been read
//!   before the next poll), told by the first line: when the file grew, its first line is
//!   checked against the one kept (one `pread`), and a different one means a new file;
//! - a file **rewritten in place** (truncated, then written again starting with the same
//!   first line) re-reads its old prefix as [`TailLine::replay`] lines: they were handed
//!   out before, so a reader rebuilds its state from them without reporting them twice;
//! - **replacement** (the path names another device/inode: rotation by rename, delete and
//!   recreate) first drains the old file to its end through the handle still open, then
//!   starts the new one at 0. A partial line left at the end of a file that will not grow
//!   again is handed out as [`ReadLine::Truncated`];
//! - a **missing** file is "no events yet"; a failing open or read is an error for this
//!   poll; both recover at the next poll that succeeds;
//! - a tailer made [`skimming`](Tailer::skimming) (a transcript's) holds at most
//!   [`SKIM_WINDOW`](hooktrack_core::read::SKIM_WINDOW) of a line across reads: a longer
//!   line holding none of the needles is reported as [`ReadLine::Long`], never held; one
//!   that holds a needle is read again from the file by its offset (one `pread` of its
//!   length, at most [`MAX_LINE_BYTES`](hooktrack_core::row::MAX_LINE_BYTES)) and handed
//!   out as a [`ReadLine::Line`], or as the `Long` line if the file no longer holds it.
//!
//! Replacement detection compares device and inode, which is sound while the tailer keeps
//! the old file open (its inode number cannot be reused until then). Across a restart the
//! checkpoint also compares a checksum of the first line, because by then it can.

mod checkpoint;

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use checkpoint::{Checkpoint, CheckpointError, FirstLine, Mismatch};

use hooktrack_core::read::{LineSplitter, ReadLine};

/// Bytes read per `read` call.
const CHUNK: usize = 64 * 1024;
/// Bytes read per poll before yielding ([`Progress::more`]), so one flooded store cannot
/// starve the others a hub follows.
pub const DEFAULT_POLL_BUDGET: u64 = 8 * 1024 * 1024;

/// Why a poll failed. The tailer's state stays consistent: the next poll retries.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TailError {
    #[error("cannot open {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("cannot inspect {path}")]
    Stat {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {path} at byte {offset}")]
    Read {
        path: PathBuf,
        offset: u64,
        #[source]
        source: io::Error,
    },
    #[error("{path} holds more than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
}

/// Opens a file that a payload, an argument or a checkpoint names, for reading. The open
/// never blocks (`O_NONBLOCK`: a FIFO without a writer would hold the thread, and with it
/// every other session and the signal handling, until someone writes) and the file is kept
/// only if it is a regular file (a FIFO, a device such as `/dev/zero`, a socket or a
/// directory is refused before one byte is read). On a regular file `O_NONBLOCK` changes
/// nothing. `Ok(None)`: the file does not exist.
pub fn open_regular(path: &Path) -> Result<Option<(File, Metadata)>, TailError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits().cast_signed());
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(TailError::Open {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let meta = file.metadata().map_err(|source| TailError::Stat {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        return Err(TailError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    Ok(Some((file, meta)))
}

/// Reads a small file named from outside (a checkpoint, a metadata record) whole, through
/// [`open_regular`], refusing one over `limit` bytes without holding more than that.
/// `Ok(None)`: the file does not exist.
pub fn read_regular(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, TailError> {
    let Some((file, meta)) = open_regular(path)? else {
        return Ok(None);
    };
    let too_large = || TailError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the limit tells a file that grew since the `fstat`.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| TailError::Read {
            path: path.to_path_buf(),
            offset: 0,
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// Something about the file that a caller may want to log. Never an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The file became shorter than what had been read: restarted at 0.
    Truncated { len: u64, read: u64 },
    /// The path now names another file; `drained` bytes were read from the old one first.
    Replaced { drained: u64 },
    /// The file disappeared; `drained` bytes were read from the old one first.
    Removed { drained: u64 },
    /// Resumed from a checkpoint at this offset.
    Resumed { offset: u64 },
    /// The checkpoint did not match the file: started at 0.
    CheckpointRejected { reason: String },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Truncated { len, read } => write!(
                f,
                "file truncated to {len} bytes after {read} had been read: restarted at 0"
            ),
            Notice::Replaced { drained } => write!(
                f,
                "file replaced: read {drained} more bytes of the old one, then started the new one at 0"
            ),
            Notice::Removed { drained } => write!(
                f,
                "file removed: read {drained} more bytes of it; waiting for a new one"
            ),
            Notice::Resumed { offset } => write!(f, "resumed from the checkpoint at byte {offset}"),
            Notice::CheckpointRejected { reason } => {
                write!(f, "checkpoint not used ({reason}): started at 0")
            }
        }
    }
}

/// One line handed out by a poll. `replay` marks a line of the prefix re-read on a
/// [`Prefix::Replay`] resume: it was handed out before the restart.
#[derive(Debug, PartialEq, Eq)]
pub struct TailLine<'a> {
    pub line: ReadLine<'a>,
    pub replay: bool,
}

/// What one poll did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Lines handed out.
    pub lines: u64,
    pub notices: Vec<Notice>,
    /// The poll stopped at its byte budget with more to read: poll again.
    pub more: bool,
}

/// What to do with the lines before a checkpoint's offset on resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// Start reading at the offset.
    Skip,
    /// Re-read them, flagged [`TailLine::replay`] (to rebuild state derived from them).
    Replay,
}

/// A file's identity: device and inode (zero on platforms without them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    #[cfg(unix)]
    fn of(meta: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    #[cfg(not(unix))]
    fn of(_meta: &Metadata) -> Self {
        Self { dev: 0, ino: 0 }
    }
}

struct OpenFile {
    file: File,
    id: FileId,
}

pub struct Tailer {
    path: PathBuf,
    open: Option<OpenFile>,
    /// Bytes read from the open file.
    read_pos: u64,
    lines: FileLines,
    resume: Option<(Checkpoint, Prefix)>,
    budget: u64,
    buf: Box<[u8]>,
}

impl std::fmt::Debug for Tailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tailer")
            .field("path", &self.path)
            .field("open", &self.open.as_ref().map(|o| o.id))
            .field("offset", &self.lines.offset)
            .field("read_pos", &self.read_pos)
            .finish_non_exhaustive()
    }
}

impl Tailer {
    /// Follows `path` from its start. Nothing is opened until the first poll.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            open: None,
            read_pos: 0,
            lines: FileLines::default(),
            resume: None,
            budget: DEFAULT_POLL_BUDGET,
            buf: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// Follows `path` from a checkpoint, checked against the file at the first open: a
    /// file that is not the checkpoint's (another device/inode, shorter, another first
    /// line) is read from 0, with a [`Notice::CheckpointRejected`].
    pub fn resume(path: impl Into<PathBuf>, checkpoint: Checkpoint, prefix: Prefix) -> Self {
        let mut tailer = Self::new(path);
        tailer.resume = Some((checkpoint, prefix));
        tailer
    }

    /// Reads past what the file holds now without handing a line out, so following
    /// starts at its end (the rows already there belong to an earlier run). Line numbers
    /// go on counting. Bounded by the file's length now, in budget-sized polls.
    pub fn skip_existing(&mut self) -> Result<Progress, TailError> {
        let len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        let mut skipped = Progress::default();
        for _ in 0..len / self.budget + 2 {
            let progress = self.poll(&mut |_| {})?;
            skipped.lines += progress.lines;
            skipped.notices.extend(progress.notices);
            if !progress.more {
                break;
            }
        }
        Ok(skipped)
    }

    /// Skims lines as a transcript's follower does (see the module's rules): `needles`
    /// are what every line the reader wants holds. Empty: every line is wanted.
    pub fn skimming(mut self, needles: &'static [&'static str]) -> Self {
        self.lines = FileLines::after(needles, self.lines.split.lines());
        self
    }

    /// Bytes of memory held now for a line being read (not the read buffer).
    pub fn held(&self) -> usize {
        self.lines.split.held()
    }

    /// Bytes read per poll before [`Progress::more`] is set (at least one chunk).
    pub fn set_poll_budget(&mut self, bytes: u64) {
        self.budget = bytes.max(1);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the whole lines handed out end in the open file.
    pub fn offset(&self) -> u64 {
        self.lines.offset
    }

    /// The position to resume from: after the last whole line, never inside one. `None`
    /// while no file is open.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let open = self.open.as_ref()?;
        Some(Checkpoint {
            offset: self.lines.offset,
            lines: self.lines.split.lines(),
            dev: open.id.dev,
            ino: open.id.ino,
            first_line: self.lines.first_line,
        })
    }

    /// True when a file is open and holds nothing past what was read: one `fstat`, no
    /// path lookup. It cannot see the path being replaced; callers pair it with a look at
    /// the directory (see `Session::recheck`).
    pub fn caught_up(&self) -> bool {
        self.open.as_ref().is_some_and(|open| {
            open.file
                .metadata()
                .is_ok_and(|meta| meta.len() == self.read_pos)
        })
    }

    /// Reads what is new and hands each line to `sink`, in file order.
    pub fn poll(&mut self, sink: &mut dyn FnMut(TailLine<'_>)) -> Result<Progress, TailError> {
        let mut progress = Progress::default();
        let mut budget = self.budget;
        // At most two files per poll: the old one drained, then the new one.
        for _ in 0..2 {
            if self.open.is_none() && !self.open_file(&mut progress)? {
                return Ok(progress);
            }
            let Some(open) = &self.open else {
                return Ok(progress);
            };
            let current = match std::fs::metadata(&self.path) {
                Ok(meta) => Some(FileId::of(&meta)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(TailError::Stat {
                        path: self.path.clone(),
                        source,
                    });
                }
            };
            if current == Some(open.id) {
                let len = open
                    .file
                    .metadata()
                    .map_err(|source| TailError::Stat {
                        path: self.path.clone(),
                        source,
                    })?
                    .len();
                let regrown = len > self.read_pos
                    && self
                        .lines
                        .first_line
                        .is_some_and(|first| first.check(&open.file).is_err());
                if len < self.read_pos || regrown {
                    progress.notices.push(Notice::Truncated {
                        len,
                        read: self.read_pos,
                    });
                    self.restart_at_zero(sink, &mut progress)?;
                }
                // Nothing new: spare the read (re-checks of idle stores are the common case).
                // Up to the length just seen: bytes appended since come with their own
                // notification, and stopping there spares the read that would find the end.
                if len > self.read_pos {
                    self.read_available(sink, &mut progress, &mut budget, Some(len))?;
                }
                return Ok(progress);
            }
            // Replaced or removed: what the old file still holds comes first.
            let before = self.read_pos;
            self.read_available(sink, &mut progress, &mut budget, None)?;
            if progress.more {
                return Ok(progress);
            }
            let drained = self.read_pos - before;
            progress.notices.push(match current {
                Some(_) => Notice::Replaced { drained },
                None => Notice::Removed { drained },
            });
            progress.lines += self.lines.finish_file(sink);
            self.open = None;
            self.read_pos = 0;
            if current.is_none() {
                return Ok(progress);
            }
        }
        Ok(progress)
    }

    /// Opens the file; `false` if it does not exist (no events yet).
    fn open_file(&mut self, progress: &mut Progress) -> Result<bool, TailError> {
        let Some((mut file, meta)) = open_regular(&self.path)? else {
            return Ok(false);
        };
        let id = FileId::of(&meta);
        self.lines = FileLines::after(self.lines.needles, self.lines.split.lines());
        self.read_pos = 0;
        if let Some((checkpoint, prefix)) = self.resume.take() {
            match checkpoint.matches(&mut file, &meta, id) {
                Ok(()) => {
                    progress.notices.push(Notice::Resumed {
                        offset: checkpoint.offset,
                    });
                    match prefix {
                        Prefix::Skip => {
                            file.seek(SeekFrom::Start(checkpoint.offset))
                                .map_err(|source| TailError::Read {
                                    path: self.path.clone(),
                                    offset: checkpoint.offset,
                                    source,
                                })?;
                            self.read_pos = checkpoint.offset;
                            self.lines = FileLines {
                                offset: checkpoint.offset,
                                first_line: checkpoint.first_line,
                                ..FileLines::after(self.lines.needles, checkpoint.lines)
                            };
                        }
                        Prefix::Replay => self.lines.replay_until = checkpoint.offset,
                    }
                }
                Err(reason) => progress.notices.push(Notice::CheckpointRejected {
                    reason: reason.to_string(),
                }),
            }
            // The check read from the file: start where the state says.
            file.seek(SeekFrom::Start(self.read_pos))
                .map_err(|source| TailError::Read {
                    path: self.path.clone(),
                    offset: self.read_pos,
                    source,
                })?;
        }
        self.open = Some(OpenFile { file, id });
        Ok(true)
    }

    fn restart_at_zero(
        &mut self,
        sink: &mut dyn FnMut(TailLine<'_>),
        progress: &mut Progress,
    ) -> Result<(), TailError> {
        let before = self
            .lines
            .first_line
            .map(|first| (first, self.lines.offset));
        progress.lines += self.lines.finish_file(sink);
        self.lines.rewrite_of = before;
        self.read_pos = 0;
        if let Some(open) = &mut self.open {
            open.file
                .seek(SeekFrom::Start(0))
                .map_err(|source| TailError::Read {
                    path: self.path.clone(),
                    offset: 0,
                    source,
                })?;
        }
        Ok(())
    }

    fn read_available(
        &mut self,
        sink: &mut dyn FnMut(TailLine<'_>),
        progress: &mut Progress,
        budget: &mut u64,
        until: Option<u64>,
    ) -> Result<(), TailError> {
        let Some(open) = &mut self.open else {
            return Ok(());
        };
        loop {
            if until.is_some_and(|end| self.read_pos >= end) {
                return Ok(());
            }
            if *budget == 0 {
                progress.more = true;
                return Ok(());
            }
            let want = self
                .buf
                .len()
                .min(usize::try_from(*budget).unwrap_or(CHUNK));
            let n = match open.file.read(&mut self.buf[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(TailError::Read {
                        path: self.path.clone(),
                        offset: self.read_pos,
                        source,
                    });
                }
            };
            *budget = budget.saturating_sub(n as u64);
            self.read_pos += n as u64;
            progress.lines += self.lines.consume(&self.buf[..n], Some(&open.file), sink);
        }
    }
}

/// The lines of one file: the core's [`LineSplitter`] (which holds at most one partial
/// line, and numbers lines over every file), and where they stand in the file.
#[derive(Debug, Default)]
struct FileLines {
    split: LineSplitter,
    /// A skimming tailer's needles (empty: a plain one).
    needles: &'static [&'static str],
    /// Where the last whole line ends (after its newline).
    offset: u64,
    first_line: Option<FirstLine>,
    /// Lines ending at or before this offset are a replayed prefix.
    replay_until: u64,
    /// After a truncation: the old file's first line and how far it was read. A new first
    /// line equal to it means the file is being rewritten in place, and lines up to that
    /// offset are a replay.
    rewrite_of: Option<(FirstLine, u64)>,
}

impl FileLines {
    /// A new file; numbering goes on after `lines` lines.
    fn after(needles: &'static [&'static str], lines: u64) -> Self {
        Self {
            split: LineSplitter::skimming_after(needles, lines),
            needles,
            ..Self::default()
        }
    }

    /// Hands out every whole line in `chunk`; keeps the rest. Returns the lines handed out.
    /// A long line holding a needle is read again from `file`, where it starts.
    fn consume(
        &mut self,
        mut chunk: &[u8],
        file: Option<&File>,
        sink: &mut dyn FnMut(TailLine<'_>),
    ) -> u64 {
        let mut count = 0;
        while !chunk.is_empty() {
            let (used, line) = self.split.feed(chunk);
            // No line: the whole chunk was taken into the current line.
            let Some(line) = line else { break };
            chunk = &chunk[used..];
            let (len, held) = match line {
                ReadLine::Line { bytes, .. } => (bytes.len() as u64, Some(bytes)),
                ReadLine::Oversized { len, .. } | ReadLine::Long { len, .. } => (len, None),
                ReadLine::Truncated { .. } => unreachable!("feed ends lines at a newline"),
            };
            let start = self.offset;
            let again = match (&line, file) {
                (ReadLine::Long { needle: true, .. }, Some(file)) => read_line_at(file, start, len),
                _ => None,
            };
            self.offset = start + len + 1;
            if start == 0 {
                let first = FirstLine::of(len, held);
                self.first_line = Some(first);
                if let Some((old, read)) = self.rewrite_of.take()
                    && old == first
                {
                    self.replay_until = self.replay_until.max(read);
                }
            }
            let replay = self.offset <= self.replay_until;
            match &again {
                Some(bytes) => sink(TailLine {
                    line: ReadLine::Line {
                        number: line.number(),
                        bytes,
                    },
                    replay,
                }),
                None => sink(TailLine { line, replay }),
            }
            count += 1;
        }
        count
    }

    /// The file ends for good (removed, replaced, truncated): a partial line left is
    /// handed out as cut off, and the per-file state resets. Returns the lines handed out.
    fn finish_file(&mut self, sink: &mut dyn FnMut(TailLine<'_>)) -> u64 {
        let count = match self.split.finish() {
            Some(line) => {
                sink(TailLine {
                    line,
                    replay: false,
                });
                1
            }
            None => 0,
        };
        *self = FileLines::after(self.needles, self.split.lines());
        count
    }
}

/// The line of `len` bytes that starts at `start` in `file`, read again (a skimmed line
/// that holds a needle). `None` if the file no longer holds a line there (rewritten, cut).
#[cfg(unix)]
fn read_line_at(file: &File, start: u64, len: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(len).ok()?;
    // Its newline too: the line must end where it ended when it was skimmed.
    let mut bytes = vec![0; len.checked_add(1)?];
    file.read_exact_at(&mut bytes, start).ok()?;
    if bytes.pop() != Some(b'\n') || memchr::memchr(b'\n', &bytes).is_some() {
        return None;
    }
    Some(bytes)
}

#[cfg(not(unix))]
fn read_line_at(_file: &File, _start: u64, _len: u64) -> Option<Vec<u8>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooktrack_core::row::MAX_LINE_BYTES;

    fn split(pieces: &[&[u8]]) -> Vec<String> {
        let mut s = FileLines::default();
        let mut out = Vec::new();
        for piece in pieces {
            s.consume(piece, None, &mut |l: TailLine<'_>| {
                out.push(match l.line {
                    ReadLine::Line { number, bytes } => {
                        format!("{number}:{}", String::from_utf8_lossy(bytes))
                    }
                    ReadLine::Oversized { number, len } => format!("{number}:oversized {len}"),
                    ReadLine::Truncated { number, bytes } => {
                        format!("{number}:cut {}", String::from_utf8_lossy(bytes))
                    }
                    ReadLine::Long { number, len, .. } => format!("{number}:long {len}"),
                })
            });
        }
        s.finish_file(&mut |l: TailLine<'_>| out.push(format!("{:?}", l.line)));
        out
    }

    #[test]
    fn lines_split_across_pieces_come_out_whole_and_once() {
        assert_eq!(
            split(&[b"ab", b"c\nd", b"", b"e\n\nf\n"]),
            ["1:abc", "2:de", "3:", "4:f"]
        );
    }

    #[test]
    fn oversized_lines_are_skipped_without_losing_the_next() {
        let big = vec![b'x'; MAX_LINE_BYTES];
        assert_eq!(
            split(&[&big, b"yz\nok\n"]),
            [format!("1:oversized {}", MAX_LINE_BYTES + 2), "2:ok".into()]
        );
    }

    #[test]
    fn offset_stops_before_a_partial_line() {
        let mut s = FileLines::default();
        s.consume(b"one\ntw", None, &mut |_| {});
        assert_eq!(s.offset, 4);
        assert_eq!(s.split.lines(), 1);
        s.consume(b"o\n", None, &mut |_| {});
        assert_eq!(s.offset, 8);
    }

    #[test]
    fn a_skimming_tailer_holds_the_window_and_reads_a_long_marker_again() {
        const NEEDLES: &[&str] = &["[Request interrupted by user"];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let filler = |len: usize| format!("{{\"a\":\"{}\"}}", "x".repeat(len - 8));
        // A 900 KiB entry holding no needle, one of 200 KiB holding one past the window,
        // and a marker after them.
        let marked = format!(
            "{{\"a\":\"{}[Request interrupted by user]\"}}",
            "y".repeat(200 * 1024)
        );
        let marker = r#"{"message":"[Request interrupted by user]"}"#;
        let text = format!("{}\n{marked}\n{marker}\n", filler(900 * 1024));
        std::fs::write(&path, &text).unwrap();
        let mut tailer = Tailer::new(&path).skimming(NEEDLES);
        let (mut got, mut peak) = (Vec::new(), 0);
        // Polls of one read each: the held bytes are looked at between reads.
        tailer.set_poll_budget(CHUNK as u64);
        for _ in 0..100 {
            let progress = tailer
                .poll(&mut |l| {
                    got.push(match l.line {
                        ReadLine::Line { number, bytes } => (number, bytes.len(), true),
                        ReadLine::Long { number, len, .. } => (number, len as usize, false),
                        other => panic!("{other:?}"),
                    })
                })
                .unwrap();
            peak = peak.max(tailer.held());
            if !progress.more {
                break;
            }
        }
        assert_eq!(
            got,
            [
                (1, 900 * 1024, false),
                (2, marked.len(), true),
                (3, marker.len(), true)
            ]
        );
        assert!(
            peak <= hooktrack_core::read::SKIM_WINDOW + 256,
            "held {peak}"
        );
        assert_eq!(tailer.offset(), text.len() as u64);
    }
}
