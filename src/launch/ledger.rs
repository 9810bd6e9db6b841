//! The launch's turn ledger, streamed: every turn the live session closes is appended to
//! `ledger.ndjson` beside `events.ndjson` as it closes (one line, with the index of its
//! agent session), and the closing ledger is read back from that file. The session keeps
//! only the open turns, so a launch's memory is flat in the length of its run.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_live::session::Update;
use hooktrack_live::tail::open_regular;

/// The file's name in the store directory.
const LEDGER_FILE: &str = "ledger.ndjson";

/// A ledger line is one small record; anything longer is not one of ours.
const MAX_LINE: usize = 64 * 1024;

#[derive(Serialize)]
struct LineOut<'a> {
    session: usize,
    turn: &'a TurnRecord,
}

#[derive(Deserialize)]
struct LineIn {
    session: usize,
    turn: TurnRecord,
}

/// Where the closed turns go: the file, or (once it failed) memory, so no turn is lost.
#[derive(Debug)]
pub struct LedgerFile {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    /// Turns the file could not take, in the order they closed.
    kept: Vec<(usize, TurnRecord)>,
    /// Why the file is not written, once it is not.
    failed: Option<String>,
}

impl LedgerFile {
    /// Starts this run's ledger: the file is created or emptied (a reused root's earlier
    /// generation is not this run's), 0600, never through a symlink.
    pub fn create(dir: &Path) -> Self {
        let path = dir.join(LEDGER_FILE);
        let opened = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path);
        let (file, failed) = match opened {
            Ok(f) => (Some(BufWriter::new(f)), None),
            Err(e) => (None, Some(format!("cannot write {}: {e}", path.display()))),
        };
        Self {
            path,
            file,
            kept: Vec::new(),
            failed,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the ledger is kept in memory instead of the file, if it is.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Appends the turns the updates closed (an update's sessions are indexed as the
    /// session's), and flushes them: written as they close.
    pub fn record(&mut self, updates: &[Update]) {
        for update in updates {
            for (index, session) in update.sessions.iter().enumerate() {
                for turn in &session.closed {
                    self.append(index, turn);
                }
            }
        }
        if let Some(file) = &mut self.file
            && let Err(e) = file.flush()
        {
            self.fail(format!("cannot write {}: {e}", self.path.display()));
        }
    }

    fn append(&mut self, session: usize, turn: &TurnRecord) {
        if let Some(file) = &mut self.file {
            let written = serde_json::to_writer(&mut *file, &LineOut { session, turn })
                .map_err(io::Error::from)
                .and_then(|()| file.write_all(b"\n"));
            match written {
                Ok(()) => return,
                Err(e) => self.fail(format!("cannot write {}: {e}", self.path.display())),
            }
        }
        self.kept.push((session, turn.clone()));
    }

    fn fail(&mut self, why: String) {
        self.file = None;
        self.failed.get_or_insert(why);
    }

    /// The closed turns per agent session, read back from the file (then those memory
    /// kept after a failed write). A line that does not read back is skipped and counted.
    /// The file is opened as every file another process could have replaced is: without
    /// blocking, and read only if it is a regular file (a FIFO put in its place by a
    /// process of the same user must not hold the end of the session).
    pub fn read_back(&self) -> (Vec<Vec<TurnRecord>>, u64) {
        let mut per_session: Vec<Vec<TurnRecord>> = Vec::new();
        let mut put = |session: usize, turn: TurnRecord| {
            if per_session.len() <= session {
                per_session.resize_with(session + 1, Vec::new);
            }
            per_session[session].push(turn);
        };
        let mut skipped = 0;
        if let Ok(Some((file, _))) = open_regular(&self.path) {
            let mut reader = BufReader::new(file);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_LINE as u64 + 1)
                    .read_until(b'\n', &mut line)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if line.len() > MAX_LINE && !line.ends_with(b"\n") {
                    // Not ours: skip to the end of that line.
                    skipped += 1;
                    if reader.skip_until(b'\n').is_err() {
                        break;
                    }
                    continue;
                }
                match serde_json::from_slice::<LineIn>(&line) {
                    Ok(l) if l.session < hooktrack_core::sessions::MAX_SESSIONS => {
                        put(l.session, l.turn)
                    }
                    _ => skipped += 1,
                }
            }
        }
        for (session, turn) in &self.kept {
            put(*session, turn.clone());
        }
        (per_session, skipped)
    }
}
