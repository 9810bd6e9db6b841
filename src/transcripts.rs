//! Finding and reading the transcripts a hook log names, for a replay. The one place
//! outside `cli/` that opens files: the tests replay the corpus the way the binary does.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use hooktrack_core::agent::Agent;
use hooktrack_core::follow::{MAX_TRANSCRIPT_BYTES, Named};
use hooktrack_core::row::{MAX_LINE_BYTES, parse_line};
use memchr::{memchr, memmem, memrchr};

use std::io::{BufRead, Write};

use hooktrack_core::agents::SessionFile;
use hooktrack_core::provider::{ProviderChoice, detect};
use hooktrack_live::follow::find_session_file;

use crate::output::{
    Find, Format, Options, ReplayError, Replayed, Report, Transcripts, replay_finding,
};

/// Where the transcripts are looked for.
#[derive(Clone, Copy, Debug)]
pub enum TranscriptLookup<'a> {
    /// `--no-transcripts`: the hooks alone.
    Off,
    /// At the path the payloads name.
    AsNamed,
    /// `--transcripts DIR`: by file name in DIR (a recording moved from another machine).
    InDir(&'a Path),
}

/// Reads the main agent's transcripts the rows name, where they exist, each for the
/// session whose rows named it (its lines go to that session alone, as live reads them).
/// A transcript that is missing or unreadable is left out: the replay then has the hooks
/// alone for it.
pub fn load_transcripts<R: Read>(input: R, lookup: &TranscriptLookup<'_>) -> Transcripts {
    let mut named: Vec<(PathBuf, Option<String>)> = Vec::new();
    // The session files the payloads do not name (Kimi Code, GitHub Copilot CLI before
    // its first `Stop`): looked for in DIR only.
    let mut sessions: Vec<(SessionFile, String)> = Vec::new();
    // Subagents that run as sessions of their own (Factory Droid's `Task`): their rows
    // belong to the caller's session as a subagent's (see hooktrack-core's `sessions.rs`),
    // so their own transcripts are not the main agent's.
    let mut subagents: Vec<String> = Vec::new();
    let in_dir = matches!(lookup, TranscriptLookup::InDir(_));
    let key: &[u8] = if in_dir {
        b"\"session_id\""
    } else {
        b"\"transcript_path\""
    };
    // A read error ends the search: the replay that follows reports it.
    let _ = lines_containing(input, key, |bytes| {
        let Ok(row) = parse_line(bytes) else {
            return;
        };
        // A subagent's row names nothing of its session's (see `Named::by`).
        if row.payload.agent_id.is_some() {
            return;
        }
        // The transcript a row names does not depend on its agent; its session file does,
        // and is looked for only where no transcript is named.
        let says = Named::by(&row, Agent::ASSUMED);
        if let Some(id) = row.payload.session_id.as_deref() {
            if subagents.iter().any(|known| known == id) {
                return;
            }
            if row
                .payload
                .calling_session_id
                .as_deref()
                .is_some_and(|caller| caller != id)
            {
                subagents.push(id.to_owned());
                return;
            }
        }
        if let Some(path) = says.transcript {
            let path = PathBuf::from(path);
            if !named.iter().any(|(known, _)| *known == path) {
                let session = row.payload.session_id.as_deref().map(str::to_owned);
                named.push((path, session));
            }
        } else if in_dir
            && let Some((agent, _)) = detect(&row)
            && let Some((file, id)) = Named::by(&row, agent).session_file
            && !sessions.iter().any(|(_, known)| known == id)
        {
            sessions.push((file, id.to_owned()));
        }
    });
    let mut transcripts = Transcripts::default();
    if let TranscriptLookup::InDir(dir) = lookup {
        for (file, id) in &sessions {
            if let Some(lines) = find_session_file(dir, file, id).and_then(|p| read_transcript(&p))
            {
                transcripts.add_file_of(Some(id), lines);
            }
        }
    }
    for (path, session) in named {
        let path = match lookup {
            TranscriptLookup::InDir(dir) => match path.file_name() {
                Some(name) => dir.join(name),
                None => continue,
            },
            TranscriptLookup::AsNamed | TranscriptLookup::Off => path,
        };
        if let Some(lines) = read_transcript(&path) {
            transcripts.add_file_of(session.as_deref(), lines);
        }
    }
    transcripts
}

/// One transcript's non-empty lines, read as the live follower reads it: opened without
/// blocking and only if it is a regular file (a FIFO or `/dev/zero` named by a payload is
/// left out), a line over [`MAX_LINE_BYTES`] skipped while it is read, at most
/// [`MAX_TRANSCRIPT_BYTES`] read. `None`: missing or unreadable.
fn read_transcript(path: &Path) -> Option<Vec<Vec<u8>>> {
    let (file, _) = hooktrack_live::tail::open_regular(path).ok()??;
    let mut input = io::BufReader::with_capacity(1 << 16, file.take(MAX_TRANSCRIPT_BYTES));
    let mut lines = Vec::new();
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let (used, ended) = match input.fill_buf() {
            Ok([]) => break,
            Ok(buf) => match memchr(b'\n', buf) {
                Some(i) => {
                    if !oversized {
                        line.extend_from_slice(&buf[..i]);
                    }
                    (i + 1, true)
                }
                None => {
                    if !oversized {
                        line.extend_from_slice(buf);
                    }
                    (buf.len(), false)
                }
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // What was read stays: the replay has it, the hooks tell the rest.
            Err(_) => break,
        };
        input.consume(used);
        if line.len() > MAX_LINE_BYTES {
            oversized = true;
            line = Vec::new();
        }
        if ended {
            if !oversized && !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            line.clear();
            oversized = false;
        }
    }
    if !oversized && !line.is_empty() {
        lines.push(line);
    }
    Some(lines)
}

/// Replays what `open` reads with the transcripts its rows name, found as `lookup` says:
/// what `hooktrack replay FILE` does. `open` is called once for the log, and again for
/// each pass over it: to find the transcripts (text and ndjson look first, as they write
/// from the first line; json and html only once a row names a transcript, so a log that
/// names none is read once), and to start over in json and html when a transcript found
/// on the way has lines earlier than rows already read.
pub fn replay_named<R: BufRead + Send, W: Write>(
    mut open: impl FnMut() -> io::Result<R>,
    lookup: &TranscriptLookup<'_>,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    (explain, one_stream, threads): (bool, bool, usize),
    out: &mut W,
) -> Result<Report, ReplayError> {
    let failed = |source| ReplayError::Open {
        source_name: source_name.to_owned(),
        source,
    };
    let options = |transcripts| Options {
        transcripts,
        explain,
        one_stream,
        threads,
        no_transcripts: matches!(lookup, TranscriptLookup::Off),
    };
    let search = |open: &mut dyn FnMut() -> io::Result<R>| match open() {
        Ok(input) => Ok(load_transcripts(input, lookup)),
        Err(e) => Err(failed(e)),
    };
    let transcripts = match (lookup, format) {
        (TranscriptLookup::Off, _) => Transcripts::default(),
        (_, Format::Json | Format::Html) => {
            let input = open().map_err(failed)?;
            let mut find = || search(&mut open);
            // In DIR a session file is found for rows that name none (Kimi Code's).
            let session_files = matches!(lookup, TranscriptLookup::InDir(_));
            let first = replay_finding(
                input,
                source_name,
                choice,
                format,
                options(Transcripts::default()),
                Some(Find {
                    search: &mut find,
                    session_files,
                }),
                out,
            )?;
            match first {
                Replayed::Done(report) => return Ok(*report),
                Replayed::NamedLate(transcripts) => transcripts,
            }
        }
        _ => search(&mut open)?,
    };
    let input = open().map_err(failed)?;
    crate::output::replay_with(
        input,
        source_name,
        choice,
        format,
        options(transcripts),
        out,
    )
}

/// Calls `each` with every whole line of `input` (ended by a newline, at most
/// [`MAX_LINE_BYTES`], without the newline) that contains `key`, as the replay's reader
/// would split them. The key is searched for in the read buffer, not line by line: most
/// logs name no transcript (Kimi's), and this pass then costs about one read of the file
/// (split into lines first, it cost three times that).
fn lines_containing(
    mut input: impl Read,
    key: &[u8],
    mut each: impl FnMut(&[u8]),
) -> io::Result<()> {
    let finder = memmem::Finder::new(key);
    let mut buf = vec![0u8; 1 << 20];
    // `buf[..len]` is unread input that starts a line (or, while `skipping`, ends one
    // over the limit whose start was dropped).
    let mut len = 0;
    let mut skipping = false;
    loop {
        if len == buf.len() {
            // One partial line fills the buffer.
            if buf.len() > MAX_LINE_BYTES {
                skipping = true;
                len = 0;
            } else {
                buf.resize((buf.len() * 2).min(MAX_LINE_BYTES + 1), 0);
            }
        }
        let end = match input.read(&mut buf[len..]) {
            Ok(0) => return Ok(()),
            Ok(n) => len + n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut start = 0;
        if skipping {
            match memchr(b'\n', &buf[len..end]) {
                Some(i) => {
                    start = len + i + 1;
                    skipping = false;
                }
                None => {
                    len = 0;
                    continue;
                }
            }
        }
        // The bytes kept from the last read hold no newline: only the new ones are looked at.
        let fresh = start.max(len);
        let complete = match memrchr(b'\n', &buf[fresh..end]) {
            Some(i) => fresh + i + 1,
            None => start,
        };
        let lines = &buf[start..complete];
        let mut at = 0;
        while let Some(found) = finder.find(&lines[at..]) {
            let hit = at + found;
            let line_start = memrchr(b'\n', &lines[..hit]).map_or(0, |i| i + 1);
            let line_end = memchr(b'\n', &lines[hit..]).map_or(lines.len(), |i| hit + i);
            if line_end - line_start <= MAX_LINE_BYTES {
                each(&lines[line_start..line_end]);
            }
            at = line_end + 1;
            if at >= lines.len() {
                break;
            }
        }
        buf.copy_within(start.max(complete)..end, 0);
        len = end - start.max(complete);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read, to cut lines anywhere.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.data.len().min(self.step).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_with_the_key_are_found_whole_wherever_reads_cut_them() {
        let long = format!("{{\"k\":1,\"pad\":\"{}\"}}", "x".repeat(MAX_LINE_BYTES));
        let mut data = String::new();
        data.push_str("{\"a\":1}\n");
        data.push_str("{\"k\":2} {\"k\":2}\n");
        data.push_str(&long);
        data.push('\n');
        data.push_str("{\"k\":3}\n\n{\"b\":\"kk\"}\n{\"k\":4}");
        for step in [1, 7, 4096, 1 << 20, usize::MAX] {
            let mut found = Vec::new();
            let input = Trickle {
                data: data.as_bytes(),
                step,
            };
            lines_containing(input, b"\"k\"", |line| {
                found.push(String::from_utf8_lossy(line).into_owned());
            })
            .unwrap();
            // The line over the limit is skipped, the last one has no newline.
            assert_eq!(found, ["{\"k\":2} {\"k\":2}", "{\"k\":3}"], "step {step}");
        }
    }
}

#[cfg(test)]
mod session_files {
    use super::*;

    /// GitHub Copilot CLI's `session-state/<id>/events.jsonl` (no workspace level) in DIR,
    /// found by the session id of a row that names no transcript (a first turn's prompt).
    #[test]
    fn a_flat_session_file_is_found_by_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = "9ef183b4-d120-470c-9e31-fef4ac8dc327";
        let session = dir.path().join("session-state").join(id);
        std::fs::create_dir_all(&session).expect("mkdir");
        std::fs::write(
            session.join("events.jsonl"),
            "{\"type\":\"abort\",\"data\":{\"reason\":\"user_abort\"}}\n",
        )
        .expect("log");
        let prompt = format!(
            "{{\"v\":1,\"provider\":\"copilot\",\"event\":\"UserPromptSubmit\",\"payload\":\
             {{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"{id}\",\
             \"timestamp\":\"2026-12-02T00:50:01.708Z\",\"prompt\":\"hi\"}}}}\n"
        );
        let found = load_transcripts(prompt.as_bytes(), &TranscriptLookup::InDir(dir.path()));
        assert!(!found.is_empty());
        let other = prompt.replace(id, "another");
        let found = load_transcripts(other.as_bytes(), &TranscriptLookup::InDir(dir.path()));
        assert!(found.is_empty());
        // Named in DIR itself (`DIR/<id>/events.jsonl`), as a recording keeps it.
        let moved = dir.path().join(id);
        std::fs::rename(&session, &moved).expect("mv");
        let found = load_transcripts(prompt.as_bytes(), &TranscriptLookup::InDir(dir.path()));
        assert!(!found.is_empty());
    }
}
