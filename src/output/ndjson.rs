//! The ndjson replay's lines. Each is built in one reused buffer and written with one
//! call, and the posture's six parts are serialized only when they changed: most lines
//! change one part or none, and serializing the whole posture on every line was a third
//! of an ndjson replay.

use std::io::{self, Write};

use serde::Serialize;

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Note;
use hooktrack_core::pipeline::Fed;
use hooktrack_core::posture::{
    Channel, LastTurn, Maintenance, Posture, Presence, TurnPosture, Work,
};
use hooktrack_core::source::Source;
use hooktrack_core::time::Timestamp;

/// Skips the `session` field of the first session's lines: a log of one session reads
/// the same as before it was split.
fn is_first(session: &usize) -> bool {
    *session == 0
}

/// An event line before its posture (which [`Lines`] appends from its parts).
#[derive(Serialize)]
struct EventHead<'a> {
    line: u64,
    #[serde(skip_serializing_if = "is_first")]
    session: usize,
    source: Source,
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
    #[serde(skip_serializing_if = "is_first")]
    session: usize,
    skipped: &'static str,
    detail: &'a str,
}

/// One posture part and its JSON text, kept until the part changes.
#[derive(Default)]
struct Part<T> {
    value: Option<T>,
    json: Vec<u8>,
}

impl<T: PartialEq + Clone + Serialize> Part<T> {
    fn json(&mut self, value: &T) -> io::Result<&[u8]> {
        if self.value.as_ref() != Some(value) {
            self.json.clear();
            serde_json::to_writer(&mut self.json, value).map_err(io::Error::other)?;
            self.value = Some(value.clone());
        }
        Ok(&self.json)
    }
}

/// The line buffer and the posture parts last written (whichever session they were
/// of: a part is reused only when its value is equal).
#[derive(Default)]
pub(super) struct Lines {
    buf: Vec<u8>,
    presence: Part<Presence>,
    turn: Part<TurnPosture>,
    maintenance: Part<Maintenance>,
    last_turn: Part<LastTurn>,
    work: Part<Work>,
    channel: Part<Channel>,
}

impl Lines {
    /// Writes the line of one fed line; `posture` is the pipeline's after it.
    pub(super) fn write<W: Write>(
        &mut self,
        out: &mut W,
        fed: &Fed<'_>,
        session: usize,
        posture: impl FnOnce() -> Posture,
    ) -> io::Result<()> {
        self.buf.clear();
        match fed {
            Fed::Skipped(skip) => {
                let line = SkipLine {
                    line: skip.line,
                    session,
                    skipped: skip.diag.name(),
                    detail: &skip.detail,
                };
                serde_json::to_writer(&mut self.buf, &line).map_err(io::Error::other)?;
            }
            Fed::Event(step) => {
                let head = EventHead {
                    line: step.line,
                    session,
                    source: step.source,
                    at: step.at,
                    event: &step.name,
                    kind: step.event.kind(),
                    notes: &step.outcome.notes,
                    closed: &step.outcome.closed,
                };
                serde_json::to_writer(&mut self.buf, &head).map_err(io::Error::other)?;
                // The head is an object: its closing brace makes way for the posture.
                if self.buf.pop() != Some(b'}') {
                    return Err(io::Error::other("an event line is not a JSON object"));
                }
                self.buf.extend_from_slice(b",\"posture\":");
                self.posture(&posture())?;
                self.buf.push(b'}');
            }
        }
        self.buf.push(b'\n');
        out.write_all(&self.buf)
    }

    /// Appends the posture as `serde_json` writes a [`Posture`] (the test below holds the
    /// two to the same bytes).
    fn posture(&mut self, p: &Posture) -> io::Result<()> {
        let Posture {
            presence,
            turn,
            maintenance,
            last_turn,
            work,
            channel,
        } = p;
        let buf = &mut self.buf;
        buf.extend_from_slice(b"{\"presence\":");
        buf.extend_from_slice(self.presence.json(presence)?);
        buf.extend_from_slice(b",\"turn\":");
        buf.extend_from_slice(self.turn.json(turn)?);
        buf.extend_from_slice(b",\"maintenance\":");
        buf.extend_from_slice(self.maintenance.json(maintenance)?);
        buf.extend_from_slice(b",\"last_turn\":");
        buf.extend_from_slice(self.last_turn.json(last_turn)?);
        buf.extend_from_slice(b",\"work\":");
        buf.extend_from_slice(self.work.json(work)?);
        buf.extend_from_slice(b",\"channel\":");
        buf.extend_from_slice(self.channel.json(channel)?);
        buf.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooktrack_core::pipeline::Pipeline;
    use hooktrack_core::provider::ProviderChoice;
    use hooktrack_core::read::ReadLine;

    #[test]
    fn the_posture_from_parts_is_the_posture_serde_writes() {
        // Every posture some corpus campaigns pass through, in order, so that parts are
        // both reused and rewritten: permissions, compaction, a dead process, Claude.
        let campaigns = [
            include_str!("../../corpus/kimi-code/permission-allow.ndjson"),
            include_str!("../../corpus/kimi-code/manual-compaction.ndjson"),
            include_str!("../../corpus/kimi-code/kill-9-terminal-gap.ndjson"),
            include_str!(
                "../../corpus/claude-code/claude-code-2.1.197-interactive-interrupt-permission-compact.ndjson"
            ),
        ];
        let mut lines = Lines::default();
        let mut seen = 0;
        for campaign in campaigns {
            let mut pipeline = Pipeline::new(ProviderChoice::Auto);
            for (i, line) in campaign.lines().enumerate() {
                let number = i as u64 + 1;
                let _ = pipeline.feed(ReadLine::Line {
                    number,
                    bytes: line.as_bytes(),
                });
                let posture = pipeline.posture();
                lines.buf.clear();
                lines.posture(&posture).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&lines.buf),
                    serde_json::to_string(&posture).unwrap(),
                    "line {number}"
                );
                seen += 1;
            }
        }
        assert!(seen > 40, "{seen} lines");
    }
}
