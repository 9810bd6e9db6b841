//! `hooktrack replay`'s three output formats, written to any `io::Write`.
//!
//! - `text`: a timeline (one line per input line), then the turn ledger and diagnostics;
//! - `json`: one document `{"provider", "turns", "final", "diagnostics"}`;
//! - `ndjson`: one line per input line with the posture after it, then one `end` line;
//! - `html`: one self-contained page picturing the campaign (`html.rs`).

mod html;
mod ndjson;
mod read_ahead;
mod timeline;

use std::io::{self, BufRead, Write};

use serde::Serialize;
use thiserror::Error;

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Diagnostics;
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::Posture;
use hooktrack_core::provider::{Detection, ProviderChoice};
use hooktrack_core::read::LineReader;

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
/// streams them and keeps memory flat). Runs on the calling thread only.
pub fn replay<R: BufRead, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    out: &mut W,
) -> Result<Report, ReplayError> {
    let mut reader = LineReader::new(input);
    let mut sink = Sink::new(Pipeline::new(choice), format, out);
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(source) => return Err(sink.read_error(source_name, source)),
        };
        let number = line.number();
        let fed = sink.pipeline.feed(line);
        sink.take(number, &fed)?;
    }
    sink.finish(source_name)
}

/// [`replay`] with the reading, line splitting and parsing shared with a second thread
/// when `threads` is 2 or more (`read_ahead.rs`); the output is the same, byte for byte.
pub fn replay_threaded<R: BufRead + Send, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    threads: usize,
    out: &mut W,
) -> Result<Report, ReplayError> {
    if threads < 2 {
        return replay(input, source_name, choice, format, out);
    }
    let mut sink = Sink::new(Pipeline::new(choice), format, out);
    let ended = read_ahead::run(LineReader::new(input), |number, parsed| {
        let fed = match parsed {
            Ok(row) => sink.pipeline.feed_row(number, row),
            Err(e) => sink.pipeline.feed_parsed(number, Err(e)),
        };
        sink.take(number, &fed)
    })?;
    if let Some(source) = ended {
        return Err(sink.read_error(source_name, source));
    }
    sink.finish(source_name)
}

/// What a replay keeps between lines, and the writing of each format.
struct Sink<'w, W> {
    pipeline: Pipeline,
    format: Format,
    out: &'w mut W,
    turns: Vec<TurnRecord>,
    lines: u64,
    previous: Posture,
    recorder: html::Recorder,
    ndjson: ndjson::Writer,
}

impl<'w, W: Write> Sink<'w, W> {
    fn new(pipeline: Pipeline, format: Format, out: &'w mut W) -> Self {
        let previous = pipeline.posture();
        Self {
            pipeline,
            format,
            out,
            turns: Vec::new(),
            lines: 0,
            previous,
            recorder: html::Recorder::default(),
            ndjson: ndjson::Writer::default(),
        }
    }

    fn read_error(&self, source_name: &str, source: io::Error) -> ReplayError {
        ReplayError::Read {
            source_name: source_name.to_owned(),
            line: self.lines,
            source,
        }
    }

    /// Writes what line `number` did.
    fn take(&mut self, number: u64, fed: &Fed<'_>) -> Result<(), ReplayError> {
        let write = |source| ReplayError::Write { source };
        self.lines = number;
        match self.format {
            Format::Text => {
                let posture = self.pipeline.posture();
                timeline::write_line(self.out, fed, &self.previous, &posture).map_err(write)?;
                self.previous = posture;
            }
            Format::Ndjson => {
                self.ndjson
                    .write_line(self.out, fed, &self.pipeline)
                    .map_err(write)?;
            }
            Format::Html => self.recorder.record(fed, &self.pipeline),
            Format::Json => {}
        }
        if let (Fed::Event(step), Format::Text | Format::Json | Format::Html) = (fed, self.format) {
            self.turns.extend(step.outcome.closed.iter().cloned());
        }
        Ok(())
    }

    fn finish(self, source_name: &str) -> Result<Report, ReplayError> {
        let write = |source| ReplayError::Write { source };
        let Sink {
            pipeline,
            format,
            out,
            turns,
            lines,
            recorder,
            ..
        } = self;
        // ndjson streamed the closed turns; its end line lists the open ones.
        let open = match format {
            Format::Ndjson => pipeline.open_turns(),
            Format::Text | Format::Json | Format::Html => Vec::new(),
        };
        let turns = pipeline.ledger(turns);
        let report = Report {
            provider: pipeline.detection().cloned(),
            turns,
            final_posture: pipeline.posture(),
            diagnostics: pipeline.diagnostics().clone(),
            lines,
            events: pipeline.events(),
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
