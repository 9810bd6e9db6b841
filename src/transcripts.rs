//! Finding and reading the transcripts a hook log names, for a replay. The one place
//! outside `cli/` that opens files: the tests replay the corpus the way the binary does.

use std::fs;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use hooktrack_core::read::{LineReader, ReadLine};
use hooktrack_core::row::parse_line;

use crate::output::Transcripts;

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

/// Reads the main agent's transcripts the rows name, where they exist. A transcript that
/// is missing or unreadable is left out: the replay then has the hooks alone for it.
pub fn load_transcripts<R: BufRead>(input: R, lookup: &TranscriptLookup<'_>) -> Transcripts {
    let mut named: Vec<PathBuf> = Vec::new();
    let mut reader = LineReader::new(input);
    // Built once: a search set up per line cost as much as the search.
    let key = memchr::memmem::Finder::new(b"\"transcript_path\"");
    while let Ok(Some(line)) = reader.next_line() {
        let ReadLine::Line { bytes, .. } = line else {
            continue;
        };
        // Most logs name no transcript at all (Kimi's): a line without the key is not
        // parsed, so this pass costs a scan, not a second parse of the whole log.
        if key.find(bytes).is_none() {
            continue;
        }
        let Ok(row) = parse_line(bytes) else {
            continue;
        };
        if row.payload.agent_id.is_some() {
            continue;
        }
        if let Some(path) = row.payload.transcript_path.as_deref() {
            let path = PathBuf::from(path);
            if !named.contains(&path) {
                named.push(path);
            }
        }
    }
    let mut transcripts = Transcripts::default();
    for path in named {
        let path = match lookup {
            TranscriptLookup::InDir(dir) => match path.file_name() {
                Some(name) => dir.join(name),
                None => continue,
            },
            TranscriptLookup::AsNamed | TranscriptLookup::Off => path,
        };
        if let Ok(bytes) = fs::read(&path) {
            transcripts.add_file(
                bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    transcripts
}
