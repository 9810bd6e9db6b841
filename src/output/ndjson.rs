//! The ndjson replay's lines. Each is built in one reused buffer and written with one
//! call, and the posture's six parts are serialized only when they changed: most lines
//! change one part or none, and serializing the whole posture on every line was a third
//! of an ndjson replay.
//!
//! The event line's head and the turn part, written on nearly every line, are built key
//! by key: their keys are constants written as they are (serde_json escapes every key it
//! writes, which cost more than the values), their values are serde_json's. The tests
//! below hold both to the bytes `serde_json` writes for the whole line.

use std::io::{self, Write};

use serde::Serialize;

use hooktrack_core::pipeline::{Fed, Step};
use hooktrack_core::posture::{
    Channel, LastTurn, Maintenance, Posture, Presence, TurnPosture, Work,
};

/// Skips the `session` field of the first session's lines: a log of one session reads
/// the same as before it was split.
fn is_first(session: &usize) -> bool {
    *session == 0
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
        self.json_by(value, |out, value| json(out, value))
    }

    /// [`Part::json`] with the text written by `write` (the bytes serde_json writes).
    fn json_by(
        &mut self,
        value: &T,
        write: impl FnOnce(&mut Vec<u8>, &T) -> io::Result<()>,
    ) -> io::Result<&[u8]> {
        if self.value.as_ref() != Some(value) {
            self.json.clear();
            write(&mut self.json, value)?;
            self.value = Some(value.clone());
        }
        Ok(&self.json)
    }
}

/// Appends `value` as serde_json writes it.
fn json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    serde_json::to_writer(out, value).map_err(io::Error::other)
}

/// Appends `,"key":`, a constant's bytes in one piece (nothing in a key here is escaped).
macro_rules! key {
    ($out:expr, $key:literal) => {
        $out.extend_from_slice(concat!(",\"", $key, "\":").as_bytes())
    };
}

/// An event line before its posture, as serde_json writes a struct of the fields `line`,
/// `session` (not for the first session's lines), `source`, `at`, `event`, `kind`,
/// `notes` and `closed` (not when empty), without its closing brace.
fn event_head(out: &mut Vec<u8>, step: &Step<'_>, session: usize) -> io::Result<()> {
    out.extend_from_slice(b"{\"line\":");
    json(out, &step.line)?;
    if !is_first(&session) {
        key!(out, "session");
        json(out, &session)?;
    }
    key!(out, "source");
    json(out, &step.source)?;
    key!(out, "at");
    // The collector's shape is digits and separators: nothing in it is escaped.
    match step.at.and_then(|t| t.collector_format()) {
        Some(text) => {
            out.push(b'"');
            out.extend_from_slice(&text);
            out.push(b'"');
        }
        None => json(out, &step.at)?,
    }
    key!(out, "event");
    json(out, &*step.name)?;
    key!(out, "kind");
    json(out, step.event.kind())?;
    if !step.outcome.notes.is_empty() {
        key!(out, "notes");
        json(out, &step.outcome.notes)?;
    }
    if !step.outcome.closed.is_empty() {
        key!(out, "closed");
        json(out, &step.outcome.closed)?;
    }
    Ok(())
}

/// The turn part as serde_json writes a [`TurnPosture`] (a field added to it does not
/// compile here until it is written).
fn turn_part(out: &mut Vec<u8>, turn: &TurnPosture) -> io::Result<()> {
    let TurnPosture {
        phase,
        epoch,
        turn_id,
        scope_depth,
        open_tool_calls,
        pending_permissions,
        queue_length,
        blocked_tool,
        // Tool inputs: not serialized (serde skips them too).
        blocked_argument: _,
        running_call: _,
        background_scopes,
        background_tasks,
        background_tool_calls,
    } = turn;
    out.extend_from_slice(b"{\"phase\":");
    json(out, phase)?;
    key!(out, "epoch");
    json(out, epoch)?;
    key!(out, "turn_id");
    json(out, turn_id)?;
    key!(out, "scope_depth");
    json(out, scope_depth)?;
    key!(out, "open_tool_calls");
    json(out, open_tool_calls)?;
    key!(out, "pending_permissions");
    json(out, pending_permissions)?;
    key!(out, "queue_length");
    json(out, queue_length)?;
    if let Some(tool) = blocked_tool {
        key!(out, "blocked_tool");
        json(out, tool)?;
    }
    key!(out, "background_scopes");
    json(out, background_scopes)?;
    key!(out, "background_tasks");
    json(out, background_tasks)?;
    key!(out, "background_tool_calls");
    json(out, background_tool_calls)?;
    out.push(b'}');
    Ok(())
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
                event_head(&mut self.buf, step, session)?;
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
        buf.extend_from_slice(self.turn.json_by(turn, turn_part)?);
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
    use hooktrack_core::correlate::TurnRecord;
    use hooktrack_core::diagnostics::Note;
    use hooktrack_core::pipeline::Pipeline;
    use hooktrack_core::provider::ProviderChoice;
    use hooktrack_core::read::ReadLine;
    use hooktrack_core::source::Source;
    use hooktrack_core::time::Timestamp;

    /// An event line as the derived serializer writes it: what [`Lines::write`] must
    /// write, byte for byte.
    #[derive(Serialize)]
    struct EventLine<'a> {
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
        posture: &'a Posture,
    }

    fn serde_line(step: &Step<'_>, session: usize, posture: &Posture) -> String {
        let line = EventLine {
            line: step.line,
            session,
            source: step.source,
            at: step.at,
            event: &step.name,
            kind: step.event.kind(),
            notes: &step.outcome.notes,
            closed: &step.outcome.closed,
            posture,
        };
        serde_json::to_string(&line).unwrap() + "\n"
    }

    #[test]
    fn event_lines_are_the_lines_serde_writes() {
        // Notes (a duplicate, an unknown event), closed turns, escapes in event names,
        // a transcript's markers and the process's end (a step without a time), in the
        // first session and in another.
        let campaigns = [
            include_str!("../../corpus/kimi-code/http-fallback-duplicate.ndjson"),
            include_str!("../../corpus/kimi-code/heartbeat-and-notification.ndjson"),
            include_str!("../../corpus/kimi-code/kill-9-terminal-gap.ndjson"),
            include_str!("../../corpus/kimi-code/permission-allow.ndjson"),
            include_str!(
                "../../corpus/claude-code/claude-code-2.1.197-interactive-interrupt-permission-compact.ndjson"
            ),
            r#"{"event":"Odd \"name\"\u0001é","payload":{"session_id":"s"}}"#,
        ];
        let mut lines = Lines::default();
        let (mut events, mut with_notes, mut with_closed) = (0, 0, 0);
        for campaign in campaigns {
            let mut pipeline = Pipeline::new(ProviderChoice::Auto);
            let mut steps = Vec::new();
            for (i, line) in campaign.lines().enumerate() {
                let fed = pipeline.feed(ReadLine::Line {
                    number: i as u64 + 1,
                    bytes: line.as_bytes(),
                });
                steps.push((fed, pipeline.posture()));
            }
            steps.push((
                Fed::Event(pipeline.process_ended(None, None)),
                pipeline.posture(),
            ));
            for (fed, posture) in &steps {
                let Fed::Event(step) = fed else { continue };
                for session in [0, 3] {
                    let mut out = Vec::new();
                    lines
                        .write(&mut out, fed, session, || posture.clone())
                        .unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&out),
                        serde_line(step, session, posture),
                        "line {}",
                        step.line
                    );
                }
                events += 1;
                with_notes += usize::from(!step.outcome.notes.is_empty());
                with_closed += usize::from(!step.outcome.closed.is_empty());
            }
        }
        assert!(
            events > 40 && with_notes > 2 && with_closed > 5,
            "{events} {with_notes} {with_closed}"
        );
    }

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
