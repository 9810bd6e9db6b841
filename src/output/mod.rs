//! `hooktrack replay`'s three output formats, written to any `io::Write`.
//!
//! - `text`: a timeline (one line per input line), then the turn ledger and diagnostics;
//! - `json`: one document `{"provider", "turns", "final", "diagnostics"}`;
//! - `ndjson`: one line per input line with the posture after it, then one `end` line;
//! - `html`: one self-contained page picturing the campaign (`html.rs`).

mod html;
mod timeline;

use std::io::{self, BufRead, Write};

use serde::Serialize;
use thiserror::Error;

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::{Diagnostics, Note};
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::Posture;
use hooktrack_core::provider::{Detection, ProviderChoice};
use hooktrack_core::read::LineReader;
use hooktrack_core::sessions::{SessionPipeline, Sessions};
use hooktrack_core::time::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Ndjson,
    Html,
}

/// Errors of a replay: reading its input or writing its output.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("cannot read {source_name} after line {line}")]
    Read {
        source_name: String,
        line: u64,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the output")]
    Write {
        #[source]
        source: io::Error,
    },
}

impl ReplayError {
    /// True when the output was closed early (`hooktrack replay f | head`): not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ReplayError::Write { source } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// What a replay found, for the caller.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub provider: Option<Detection>,
    pub turns: Vec<TurnRecord>,
    #[serde(rename = "final")]
    pub final_posture: Posture,
    pub diagnostics: Diagnostics,
    pub lines: u64,
    pub events: u64,
}

/// Replays `input` and writes it in `format` to `out`. `source_name` names the input in
/// errors. Returns the report (turns are collected for `text`, `json` and `html`; `ndjson`
/// streams them and keeps memory flat).
pub fn replay<R: BufRead, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    out: &mut W,
) -> Result<Report, ReplayError> {
    replay_into(
        input,
        source_name,
        format,
        out,
        Sessions::with_limit(choice, 1),
    )
}

/// As [`replay`], with one ledger per `session_id` of the log (text and json; ndjson and
/// html read it as one stream). A log of one session gives the same bytes as [`replay`];
/// one of several gives, in text, a summary section per session after the timeline, in
/// json `{"sessions": [{"session_id", ...a report}], "lines", "events", "overflow_rows"}`.
/// Returns the first session's report.
pub fn replay_by_session<R: BufRead, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    out: &mut W,
) -> Result<Report, ReplayError> {
    let sessions = match format {
        Format::Text | Format::Json => Sessions::new(choice),
        Format::Ndjson | Format::Html => Sessions::with_limit(choice, 1),
    };
    replay_into(input, source_name, format, out, sessions)
}

fn replay_into<R: BufRead, W: Write>(
    input: R,
    source_name: &str,
    format: Format,
    out: &mut W,
    mut sessions: Sessions,
) -> Result<Report, ReplayError> {
    let choice = sessions.choice();
    let mut reader = LineReader::new(input);
    // Per session: the turns it closed and the posture after its last line.
    let mut turns: Vec<Vec<TurnRecord>> = Vec::new();
    let mut previous: Vec<Posture> = Vec::new();
    let mut lines = 0;
    let mut recorder = html::Recorder::default();
    let write = |source| ReplayError::Write { source };
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(source) => {
                return Err(ReplayError::Read {
                    source_name: source_name.to_owned(),
                    line: lines,
                    source,
                });
            }
        };
        lines = line.number();
        let (index, fed) = sessions.feed(line);
        let pipeline = &sessions.get(index).pipeline;
        while turns.len() <= index {
            turns.push(Vec::new());
            previous.push(Pipeline::new(choice).posture());
        }
        match format {
            Format::Text => {
                let posture = pipeline.posture();
                timeline::write_line(out, &fed, &previous[index], &posture).map_err(write)?;
                previous[index] = posture;
            }
            Format::Ndjson => {
                write_ndjson_line(out, &fed, pipeline).map_err(write)?;
            }
            Format::Html => recorder.record(&fed, pipeline),
            Format::Json => {}
        }
        if let (Fed::Event(step), Format::Text | Format::Json | Format::Html) = (&fed, format) {
            turns[index].extend(step.outcome.closed.iter().cloned());
        }
    }
    turns.resize_with(sessions.len(), Vec::new);
    let mut reports: Vec<Report> = sessions
        .all()
        .iter()
        .zip(turns)
        .map(|(session, turns)| session_report(session, turns, lines))
        .collect();
    if reports.len() > 1 {
        return write_sessions(out, format, &sessions, reports, lines);
    }
    let pipeline = &sessions.get(0).pipeline;
    let report = reports.remove(0);
    // ndjson streamed the closed turns; its end line lists the open ones.
    let open = match format {
        Format::Ndjson => pipeline.open_turns(),
        Format::Text | Format::Json | Format::Html => Vec::new(),
    };
    match format {
        Format::Text => timeline::write_summary(out, &report).map_err(write)?,
        Format::Html => html::write(out, source_name, &report, &recorder).map_err(write)?,
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)
                .map_err(|e| write(io::Error::other(e)))?;
            writeln!(out).map_err(write)?;
        }
        Format::Ndjson => {
            let end = EndLine {
                end: true,
                provider: report.provider.as_ref(),
                open_turns: &open,
                final_posture: &report.final_posture,
                diagnostics: &report.diagnostics,
                lines,
                events: report.events,
            };
            serde_json::to_writer(&mut *out, &end).map_err(|e| write(io::Error::other(e)))?;
            writeln!(out).map_err(write)?;
        }
    }
    out.flush().map_err(write)?;
    Ok(report)
}

/// One session's report; `lines` is the input's (one session: the whole input).
fn session_report(session: &SessionPipeline, turns: Vec<TurnRecord>, lines: u64) -> Report {
    let pipeline = &session.pipeline;
    Report {
        provider: pipeline.detection().cloned(),
        turns: pipeline.ledger(turns),
        final_posture: pipeline.posture(),
        diagnostics: pipeline.diagnostics().clone(),
        lines,
        events: pipeline.events(),
    }
}

/// A store that held several sessions: a ledger per session (text: a section each after
/// the timeline; json: `{"sessions": [...], "lines", "events", "overflow_rows"}`).
/// Returns the first session's report.
fn write_sessions<W: Write>(
    out: &mut W,
    format: Format,
    sessions: &Sessions,
    mut reports: Vec<Report>,
    lines: u64,
) -> Result<Report, ReplayError> {
    let write = |source| ReplayError::Write { source };
    for (report, session) in reports.iter_mut().zip(sessions.all()) {
        report.lines = session.lines;
    }
    let ids: Vec<Option<&str>> = sessions
        .all()
        .iter()
        .map(|s| s.session_id.as_deref())
        .collect();
    match format {
        Format::Json => {
            let doc = SessionsDoc {
                sessions: ids
                    .iter()
                    .zip(&reports)
                    .map(|(id, report)| SessionDoc {
                        session_id: *id,
                        report,
                    })
                    .collect(),
                lines,
                events: reports.iter().map(|r| r.events).sum(),
                overflow_rows: sessions.overflow_rows(),
            };
            serde_json::to_writer_pretty(&mut *out, &doc)
                .map_err(|e| write(io::Error::other(e)))?;
            writeln!(out).map_err(write)?;
        }
        Format::Text | Format::Ndjson | Format::Html => {
            writeln!(out).map_err(write)?;
            writeln!(
                out,
                "{} sessions in one log (split by session_id){}",
                reports.len(),
                if sessions.overflow_rows() > 0 {
                    format!(
                        "; {} rows of further sessions went to the current one",
                        sessions.overflow_rows()
                    )
                } else {
                    String::new()
                }
            )
            .map_err(write)?;
            for (id, report) in ids.iter().zip(&reports) {
                writeln!(out).map_err(write)?;
                writeln!(out, "== session {} ==", id.unwrap_or("(none)")).map_err(write)?;
                timeline::write_summary(out, report).map_err(write)?;
            }
        }
    }
    out.flush().map_err(write)?;
    Ok(reports.swap_remove(0))
}

#[derive(Serialize)]
struct SessionsDoc<'a> {
    sessions: Vec<SessionDoc<'a>>,
    lines: u64,
    events: u64,
    overflow_rows: u64,
}

#[derive(Serialize)]
struct SessionDoc<'a> {
    session_id: Option<&'a str>,
    #[serde(flatten)]
    report: &'a Report,
}

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
    posture: &'a Posture,
}

#[derive(Serialize)]
struct SkipLine<'a> {
    line: u64,
    skipped: &'static str,
    detail: &'a str,
}

#[derive(Serialize)]
struct EndLine<'a> {
    end: bool,
    provider: Option<&'a Detection>,
    open_turns: &'a [TurnRecord],
    #[serde(rename = "final")]
    final_posture: &'a Posture,
    diagnostics: &'a Diagnostics,
    lines: u64,
    events: u64,
}

fn write_ndjson_line<W: Write>(out: &mut W, fed: &Fed<'_>, pipeline: &Pipeline) -> io::Result<()> {
    let result = match fed {
        Fed::Skipped(skip) => serde_json::to_writer(
            &mut *out,
            &SkipLine {
                line: skip.line,
                skipped: skip.diag.name(),
                detail: &skip.detail,
            },
        ),
        Fed::Event(step) => serde_json::to_writer(
            &mut *out,
            &EventLine {
                line: step.line,
                at: step.at,
                event: &step.name,
                kind: step.event.kind(),
                notes: &step.outcome.notes,
                closed: &step.outcome.closed,
                posture: &pipeline.posture(),
            },
        ),
    };
    result.map_err(io::Error::other)?;
    writeln!(out)
}
