//! `--format ndjson`: one JSON object per input line, with the posture after it.
//!
//! The bytes are those of `serde_json::to_writer` on [`EventLine`] / [`SkipLine`]; what is
//! saved is work: each line is built in one reused buffer and written once, and of the
//! posture only the parts that changed since the line before are serialized again (a tool
//! start changes `turn`, hardly ever `maintenance` or `last_turn`).

use std::io::{self, Write};

use serde::Serialize;

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Note;
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::Posture;
use hooktrack_core::time::Timestamp;

/// An event line without its posture, which [`Writer`] appends from its cache.
#[derive(Serialize)]
struct EventLine<'a> {
    line: u64,
    at: Option<Timestamp>,
    event: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "<[Note]>::is_empty")]
    notes: &'a [Note],
    #[serde(skip_serializing_if = "<[TurnRecord]>::is_empty")]
    closed: &'a [TurnRecord],
}

#[derive(Serialize)]
struct SkipLine<'a> {
    line: u64,
    skipped: &'static str,
    detail: &'a str,
}

/// The posture of the line before, and its parts as JSON.
#[derive(Default)]
struct PostureCache {
    posture: Option<Posture>,
    presence: Vec<u8>,
    turn: Vec<u8>,
    maintenance: Vec<u8>,
    last_turn: Vec<u8>,
    work: Vec<u8>,
    channel: Vec<u8>,
}

#[derive(Default)]
pub(super) struct Writer {
    line: Vec<u8>,
    cache: PostureCache,
}

impl Writer {
    pub(super) fn write_line<W: Write>(
        &mut self,
        out: &mut W,
        fed: &Fed<'_>,
        pipeline: &Pipeline,
    ) -> io::Result<()> {
        self.line.clear();
        match fed {
            Fed::Skipped(skip) => serde_json::to_writer(
                &mut self.line,
                &SkipLine {
                    line: skip.line,
                    skipped: skip.diag.name(),
                    detail: &skip.detail,
                },
            )
            .map_err(io::Error::other)?,
            Fed::Event(step) => {
                serde_json::to_writer(
                    &mut self.line,
                    &EventLine {
                        line: step.line,
                        at: step.at,
                        event: &step.name,
                        kind: step.event.kind(),
                        notes: &step.outcome.notes,
                        closed: &step.outcome.closed,
                    },
                )
                .map_err(io::Error::other)?;
                // Reopen the object for the last field, `"posture":{..}`.
                self.line.pop();
                self.line.extend_from_slice(b",\"posture\":");
                self.cache.update(pipeline.posture())?;
                self.cache.append(&mut self.line);
                self.line.push(b'}');
            }
        }
        self.line.push(b'\n');
        out.write_all(&self.line)
    }
}

impl PostureCache {
    /// Re-serializes the parts of `now` that differ from the posture before.
    fn update(&mut self, now: Posture) -> io::Result<()> {
        fn put<T: Serialize>(into: &mut Vec<u8>, value: &T) -> io::Result<()> {
            into.clear();
            serde_json::to_writer(into, value).map_err(io::Error::other)
        }
        let before = self.posture.as_ref();
        if before.map(|p| &p.presence) != Some(&now.presence) {
            put(&mut self.presence, &now.presence)?;
        }
        if before.map(|p| &p.turn) != Some(&now.turn) {
            put(&mut self.turn, &now.turn)?;
        }
        if before.map(|p| &p.maintenance) != Some(&now.maintenance) {
            put(&mut self.maintenance, &now.maintenance)?;
        }
        if before.map(|p| &p.last_turn) != Some(&now.last_turn) {
            put(&mut self.last_turn, &now.last_turn)?;
        }
        if before.map(|p| &p.work) != Some(&now.work) {
            put(&mut self.work, &now.work)?;
        }
        if before.map(|p| &p.channel) != Some(&now.channel) {
            put(&mut self.channel, &now.channel)?;
        }
        self.posture = Some(now);
        Ok(())
    }

    /// The posture as `serde_json::to_writer` writes it: fields in declaration order.
    fn append(&self, line: &mut Vec<u8>) {
        let parts: [(&[u8], &[u8]); 6] = [
            (b"{\"presence\":", &self.presence),
            (b",\"turn\":", &self.turn),
            (b",\"maintenance\":", &self.maintenance),
            (b",\"last_turn\":", &self.last_turn),
            (b",\"work\":", &self.work),
            (b",\"channel\":", &self.channel),
        ];
        for (key, value) in parts {
            line.extend_from_slice(key);
            line.extend_from_slice(value);
        }
        line.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_posture_is_what_serde_writes() {
        let mut posture = Posture::default();
        let mut cache = PostureCache::default();
        for step in 0..3 {
            posture.turn.open_tool_calls = step;
            posture.maintenance.compacting = step == 1;
            cache.update(posture.clone()).unwrap();
            let mut cached = Vec::new();
            cache.append(&mut cached);
            assert_eq!(cached, serde_json::to_vec(&posture).unwrap());
        }
    }
}
