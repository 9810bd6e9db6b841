//! `hooktrack replay`'s three output formats, written to any `io::Write`.
//!
//! - `text`: a timeline (one line per input line), then the turn ledger and diagnostics;
//! - `json`: one document `{"provider", "turns", "final", "diagnostics"}`;
//! - `ndjson`: one line per input line with the posture after it, then one `end` line;
//! - `html`: one self-contained page picturing the campaign (`html.rs`).
//!
//! With [`Transcripts`], the transcript lines the caller read are fed in between the hook
//! rows by time: a transcript line goes just before the first hook row received later
//! than the line's timestamp (a tie goes to the hook row, which was there first). A line
//! without a timestamp takes the time of the line before it in its file.

mod html;
mod json_report;
mod ndjson;
mod pretty;
mod read_ahead;
mod timeline;

use std::io::{self, BufRead, Write};

use serde::Serialize;
use thiserror::Error;

use crate::safe_text::{Notation, SafeWriter};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Diagnostics;
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::Posture;
use hooktrack_core::provenance::Provenance;
use hooktrack_core::provider::{Detection, ProviderChoice};
use hooktrack_core::read::LineReader;
use hooktrack_core::row::{LineError, Row, parse_read_line};
use hooktrack_core::sessions::Sessions;
use hooktrack_core::source::Source;
use hooktrack_core::time::Timestamp;
use hooktrack_core::tracker::{
    FedLine, Owner, Tracker, TrackerConfig, TranscriptClock, TranscriptLine,
};

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
#[non_exhaustive]
pub enum ReplayError {
    #[error("cannot read {source_name} after line {line}")]
    Read {
        source_name: String,
        line: u64,
        #[source]
        source: io::Error,
    },
    #[error("cannot open {source_name}")]
    Open {
        source_name: String,
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
    /// What set each fact of the final posture (source, event, line).
    pub provenance: Provenance,
    pub lines: u64,
    pub events: u64,
    /// The `session_id` the report's rows named (`None` when none did).
    #[serde(skip)]
    pub session_id: Option<String>,
    /// A log of several sessions: the reports of the second and further ones, in the order
    /// of their first rows (empty for a log of one session, and with
    /// [`Options::one_stream`]).
    #[serde(skip)]
    pub other_sessions: Vec<Report>,
}

/// Transcript lines to feed between the hook rows, from one or more transcript files.
#[derive(Debug, Default)]
pub struct Transcripts {
    lines: Vec<TranscriptLine>,
}

impl Transcripts {
    /// Adds one transcript file's lines (in file order, 1-based numbers), timed by the
    /// tracker's one rule ([`TranscriptClock`]), for the session of the row before each.
    pub fn add_file(&mut self, lines: impl IntoIterator<Item = Vec<u8>>) {
        self.add_file_of(None, lines);
    }

    /// [`Transcripts::add_file`] for the session `session_id` names: its lines go to that
    /// session alone (to the current one before that session's first row).
    pub fn add_file_of(
        &mut self,
        session_id: Option<&str>,
        lines: impl IntoIterator<Item = Vec<u8>>,
    ) {
        let numbered = lines
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| (i as u64 + 1, bytes));
        let owner = session_id.map_or(Owner::Current, |id| Owner::Id(id.into()));
        let mut stamped = TranscriptClock::default().stamp(numbered);
        for line in &mut stamped {
            line.owner = owner.clone();
        }
        self.lines.extend(stamped);
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The time of the earliest timed line.
    fn earliest(&self) -> Option<Timestamp> {
        self.lines.iter().filter_map(|l| l.at).min()
    }
}

/// What to add to a replay: the transcripts, `--explain`, `--one-stream`.
#[derive(Debug, Default)]
pub struct Options {
    pub transcripts: Transcripts,
    /// Text format: end with the provenance of the final posture.
    pub explain: bool,
    /// Read every row into one ledger, as if the log held one session (by default a log
    /// of several `session_id`s gives one ledger per session, see [`replay_with`]).
    pub one_stream: bool,
    /// Threads to read and parse on: with 2 or more a second thread reads, splits and
    /// parses ahead (`read_ahead.rs`); the output is the same, byte for byte.
    pub threads: usize,
    /// The hooks alone (`--no-transcripts`): no session follows a file.
    pub no_transcripts: bool,
}

/// Replays `input` and writes it in `format` to `out`. `source_name` names the input in
/// errors. Returns the report (turns are collected for `text`, `json` and `html`; `ndjson`
/// streams them and keeps memory flat).
pub fn replay<R: BufRead + Send, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    out: &mut W,
) -> Result<Report, ReplayError> {
    replay_with(input, source_name, choice, format, Options::default(), out)
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
    let options = Options {
        threads,
        ..Options::default()
    };
    replay_with(input, source_name, choice, format, options, out)
}

/// [`replay`] with transcripts fed in by time, `--explain` for text, and `--one-stream`.
///
/// A log of several `session_id`s (an agent started by hand into the store, a `/clear`)
/// is read as one ledger per session, unless [`Options::one_stream`]: in text a summary
/// section per session after the timeline; in json `{"sessions": [{"session_id", ...a
/// report}], "lines", "events", "overflow_rows"}`; in ndjson every line of a session but
/// the first carries `"session": N` (its index, in order of first rows) and the end line
/// adds `"sessions": [...]`, each session's id and finals; html draws a group of lanes
/// per session on one time axis, with a ledger each. A log of one session gives the same
/// bytes either way. Returns the first session's report, the others in [`Report::other_sessions`].
/// Transcript lines go to the session whose rows named their file (see
/// [`Transcripts::add_file_of`]).
pub fn replay_with<R: BufRead + Send, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    options: Options,
    out: &mut W,
) -> Result<Report, ReplayError> {
    match replay_finding(input, source_name, choice, format, options, None, out)? {
        Replayed::Done(report) => Ok(*report),
        Replayed::NamedLate(_) => {
            unreachable!("only a replay that finds its transcripts on the way stops for them")
        }
    }
}

/// How a replay that finds its transcripts on the way ended.
pub(crate) enum Replayed {
    Done(Box<Report>),
    /// A row named a transcript with lines earlier than rows already fed: nothing was
    /// written; replay again from the start with these transcripts.
    NamedLate(Transcripts),
}

/// Why the loop over the lines stopped early.
enum Stop {
    Failed(ReplayError),
    NamedLate,
}

impl From<ReplayError> for Stop {
    fn from(e: ReplayError) -> Self {
        Stop::Failed(e)
    }
}

/// [`replay_with`], and with `find` (json and html only: they write nothing before the
/// end) the transcripts are not looked for until a main agent's row names one (see
/// [`Find`]); `find` then reads them all. A log that names none (Kimi's) is read once instead of twice.
/// The result is the same as with the transcripts given at the start: if any of their
/// lines is earlier than a row already fed, the replay stops with
/// [`Replayed::NamedLate`] for the caller to start over with them.
///
/// Every format is written through [`SafeWriter`]: no character from a row, a path or a
/// transcript reaches the output as a control (`safe_text.rs`).
pub(crate) fn replay_finding<R: BufRead + Send, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    options: Options,
    find: Option<Find<'_>>,
    out: &mut W,
) -> Result<Replayed, ReplayError> {
    let notation = match format {
        Format::Json | Format::Ndjson => Notation::Json,
        Format::Text | Format::Html => Notation::Text,
    };
    // Buffered in front: serde_json writes many small pieces, each made safe in 8 KiB
    // batches rather than one by one.
    let mut out = io::BufWriter::new(SafeWriter::new(out, notation));
    let replayed = replay_finding_to(input, source_name, choice, format, options, find, &mut out)?;
    out.flush()
        .map_err(|source| ReplayError::Write { source })?;
    Ok(replayed)
}

fn replay_finding_to<R: BufRead + Send, W: Write>(
    input: R,
    source_name: &str,
    choice: ProviderChoice,
    format: Format,
    options: Options,
    mut find: Option<Find<'_>>,
    out: &mut W,
) -> Result<Replayed, ReplayError> {
    if !matches!(format, Format::Json | Format::Html) {
        find = None;
    }
    let by_session = !options.one_stream;
    let mut tracker = Tracker::new(TrackerConfig {
        choice,
        by_session,
        // ndjson streams the closed turns and keeps memory flat.
        keep_ledger: !matches!(format, Format::Ndjson),
        report_closed: false,
        // As live follows them (the let-go of files past the bound is counted the same);
        // the files themselves were read ahead (`transcripts.rs`, with the lookup and
        // limits live uses), so the requests are not carried out again.
        follow_files: !options.no_transcripts,
        // A replay reads no screen: a screen read is no row (`crate::screen`'s rules).
        read_screens: false,
        // Nothing a replay writes names what a call acts on (the summary is live's).
        tool_arguments: false,
    });
    tracker.queue_transcript(options.transcripts.lines);
    let reader = LineReader::new(input);
    let mut written = Written {
        format,
        start: Pipeline::new(choice).posture(),
        previous: Vec::new(),
        recorder: html::Recorder::default(),
        ndjson: ndjson::Lines::default(),
        timeline: timeline::Lines::default(),
    };
    let mut lines = 0;
    // The latest time of the rows fed so far, while the transcripts wait to be found.
    let mut latest: Option<Timestamp> = None;
    let mut found: Option<Transcripts> = None;
    // One step for both ways of reading: the tracker places the transcript lines received
    // before the row, then feeds the row to its session; each fed line is written.
    let mut step = |number: u64, parsed: Result<&mut Row<'_>, LineError>, out: &mut W| {
        lines = number;
        if let (
            Some(Find {
                search,
                session_files,
            }),
            Ok(row),
        ) = (find.as_mut(), &parsed)
        {
            if row.payload.agent_id.is_none()
                && (row.payload.transcript_path.is_some()
                    || *session_files && names_a_session_file(row))
            {
                let transcripts = search()?;
                find = None;
                if matches!((transcripts.earliest(), latest), (Some(f), Some(l)) if f < l) {
                    found = Some(transcripts);
                    return Err(Stop::NamedLate);
                }
                tracker.queue_transcript(transcripts.lines);
            } else {
                latest = latest.max(row.meta.at);
            }
        }
        let fed = tracker
            .feed_hook(number, parsed, false, &mut |l| written.line(&l, out))
            .map_err(Stop::from);
        // A replay watches no process: the ends are the store's rows.
        if tracker.has_requests() {
            tracker.take_requests();
        }
        fed
    };
    let read = if options.threads >= 2 {
        read_ahead::run(reader, |number, parsed| step(number, parsed, out))
    } else {
        read_one_by_one(reader, |number, parsed| step(number, parsed, out))
    };
    let read_error = match read {
        Ok(error) => error,
        Err(Stop::Failed(e)) => return Err(e),
        Err(Stop::NamedLate) => {
            return Ok(Replayed::NamedLate(found.unwrap_or_default()));
        }
    };
    if let Some(source) = read_error {
        return Err(ReplayError::Read {
            source_name: source_name.to_owned(),
            line: lines,
            source,
        });
    }
    tracker.flush_transcript(&mut |l| written.line(&l, out))?;
    let recorder = written.recorder;
    let extras = Extras {
        explain: options.explain,
        recorder: &recorder,
        source_name,
    };
    if tracker.sessions().len() > 1 {
        let reports = (0..tracker.sessions().len())
            .map(|i| {
                let ledger = tracker.take_ledger(i);
                let session = &tracker.sessions()[i];
                let mut report = report_of(&session.pipeline, ledger, session.lines);
                report.session_id.clone_from(&session.session_id);
                report
            })
            .collect();
        return write_sessions(out, format, tracker.router(), reports, lines, extras)
            .map(|report| Replayed::Done(Box::new(report)));
    }
    let ledger = tracker.take_ledger(0);
    let session_id = tracker.sessions()[0].session_id.clone();
    let mut report = finish(tracker.pipeline(), ledger, lines, format, extras, out)?;
    report.session_id = session_id;
    Ok(Replayed::Done(Box::new(report)))
}

/// What the replay writes per fed line, hook row or transcript entry, one way: the
/// posture after each session's last line (text), the page's record (html), the ndjson
/// line writer.
struct Written {
    format: Format,
    /// A fresh pipeline's posture: where a session's diff starts.
    start: Posture,
    previous: Vec<Posture>,
    recorder: html::Recorder,
    ndjson: ndjson::Lines,
    timeline: timeline::Lines,
}

impl Written {
    /// Writes one fed line in the format.
    fn line<W: Write>(&mut self, l: &FedLine<'_, '_>, out: &mut W) -> Result<(), ReplayError> {
        let (fed, index, pipeline) = (l.fed, l.session, l.pipeline);
        while self.previous.len() <= index {
            self.previous.push(self.start.clone());
        }
        let write = |source| ReplayError::Write { source };
        let previous = &mut self.previous[index];
        match self.format {
            Format::Text => {
                let posture = pipeline.posture();
                self.timeline
                    .write(out, fed, previous, &posture)
                    .map_err(write)?;
                *previous = posture;
            }
            Format::Ndjson => {
                if !matches!(fed, Fed::Skipped(skip) if skip.source != Source::Hook) {
                    self.ndjson
                        .write(out, fed, index, || l.current.posture())
                        .map_err(write)?;
                }
            }
            Format::Html => self.recorder.record(fed, pipeline, index),
            Format::Json => {}
        }
        Ok(())
    }
}

/// How [`replay_finding`] looks for the transcripts on the way: `search` reads them all;
/// with `session_files` a row naming a session whose file the lookup's directory may
/// hold (Kimi Code's) starts it too, not only one naming a transcript.
pub(crate) struct Find<'f> {
    pub search: &'f mut dyn FnMut() -> Result<Transcripts, ReplayError>,
    pub session_files: bool,
}

/// A row of an agent whose payloads name no transcript but whose session file its
/// `session_id` finds (Kimi Code's `wire.jsonl`).
fn names_a_session_file(row: &Row<'_>) -> bool {
    row.payload.session_id.is_some()
        && hooktrack_core::provider::detect(row).is_some_and(|(agent, _)| {
            agent
                .descriptor()
                .transcript
                .is_some_and(|t| t.session_file.is_some())
        })
}

/// Runs every line of `reader` through `feed`, in order, on this thread (the one-thread
/// twin of `read_ahead::run`). Returns the read error that ended the input, if one did.
fn read_one_by_one<R, E, F>(mut reader: LineReader<R>, mut feed: F) -> Result<Option<io::Error>, E>
where
    R: BufRead,
    F: for<'b> FnMut(u64, Result<&mut Row<'b>, LineError>) -> Result<(), E>,
{
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => return Ok(None),
            Err(e) => return Ok(Some(e)),
        };
        match parse_read_line(line) {
            (number, Ok(mut row)) => feed(number, Ok(&mut row))?,
            (number, Err(e)) => feed(number, Err(e))?,
        }
    }
}

/// One pipeline's report, with its ledger (the tracker's); `lines` is what it read.
fn report_of(pipeline: &Pipeline, ledger: Vec<TurnRecord>, lines: u64) -> Report {
    Report {
        provider: pipeline.detection().cloned(),
        turns: ledger,
        final_posture: pipeline.posture(),
        diagnostics: pipeline.diagnostics().clone(),
        provenance: pipeline.provenance().clone(),
        lines,
        events: pipeline.events(),
        session_id: None,
        other_sessions: Vec::new(),
    }
}

/// What the end of a replay writes besides the report: `--explain` (text) and the page's
/// recorded events (html).
struct Extras<'a> {
    explain: bool,
    recorder: &'a html::Recorder,
    source_name: &'a str,
}

fn finish<W: Write>(
    pipeline: &Pipeline,
    ledger: Vec<TurnRecord>,
    lines: u64,
    format: Format,
    extras: Extras<'_>,
    out: &mut W,
) -> Result<Report, ReplayError> {
    let Extras {
        explain,
        recorder,
        source_name,
    } = extras;
    let write = |source| ReplayError::Write { source };
    // ndjson streamed the closed turns; its end line lists the open ones.
    let open = match format {
        Format::Ndjson => pipeline.open_turns(),
        Format::Text | Format::Json | Format::Html => Vec::new(),
    };
    let report = report_of(pipeline, ledger, lines);
    match format {
        Format::Text => {
            timeline::write_summary(out, &report).map_err(write)?;
            if explain {
                timeline::write_explain(out, &report).map_err(write)?;
            }
        }
        Format::Html => html::write(out, source_name, &report, recorder).map_err(write)?,
        Format::Json => {
            json_report::write(out, &report)
                .and_then(|()| writeln!(out))
                .map_err(write)?;
        }
        Format::Ndjson => {
            let end = EndLine {
                end: true,
                provider: report.provider.as_ref(),
                open_turns: &open,
                final_posture: &report.final_posture,
                diagnostics: &report.diagnostics,
                provenance: &report.provenance,
                lines,
                events: report.events,
            };
            write_json(out, &end, false)?;
        }
    }
    out.flush().map_err(write)?;
    Ok(report)
}

/// Writes `value` as one JSON document (`pretty`: indented) and a newline.
fn write_json<W: Write>(
    out: &mut W,
    value: &impl Serialize,
    pretty: bool,
) -> Result<(), ReplayError> {
    let written = if pretty {
        value.serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            pretty::Pretty::default(),
        ))
    } else {
        serde_json::to_writer(&mut *out, value)
    };
    written
        .map_err(io::Error::other)
        .and_then(|()| writeln!(out))
        .map_err(|source| ReplayError::Write { source })
}

/// A store that held several sessions: a ledger per session (text: a section each after
/// the timeline; json: `{"sessions": [...], "lines", "events", "overflow_rows"}`; ndjson:
/// an end line with `"sessions": [...]`; html: a group of lanes each). Returns the first
/// session's report, the others in its [`Report::other_sessions`].
fn write_sessions<W: Write>(
    out: &mut W,
    format: Format,
    sessions: &Sessions,
    mut reports: Vec<Report>,
    lines: u64,
    extras: Extras<'_>,
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
            write_json(out, &doc, true)?;
        }
        Format::Ndjson => {
            let end = SessionsEndLine {
                end: true,
                sessions: sessions
                    .all()
                    .iter()
                    .zip(&reports)
                    .map(|(session, report)| SessionEnd {
                        session_id: session.session_id.as_deref(),
                        provider: report.provider.as_ref(),
                        open_turns: session.pipeline.open_turns(),
                        final_posture: &report.final_posture,
                        diagnostics: &report.diagnostics,
                        provenance: &report.provenance,
                        lines: session.lines,
                        events: report.events,
                    })
                    .collect(),
                lines,
                events: reports.iter().map(|r| r.events).sum(),
                overflow_rows: sessions.overflow_rows(),
            };
            write_json(out, &end, false)?;
        }
        Format::Html => {
            let parts: Vec<html::SessionPart<'_>> = ids
                .iter()
                .zip(&reports)
                .map(|(&session_id, report)| html::SessionPart { session_id, report })
                .collect();
            html::write_sessions(out, extras.source_name, &parts, lines, extras.recorder)
                .map_err(write)?;
        }
        Format::Text => {
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
    let mut reports = reports.into_iter();
    let mut first = reports
        .next()
        .unwrap_or_else(|| report_of(&Pipeline::new(sessions.choice()), Vec::new(), 0));
    first.other_sessions = reports.collect();
    Ok(first)
}

/// The end line of an ndjson replay of several sessions.
#[derive(Serialize)]
struct SessionsEndLine<'a> {
    end: bool,
    sessions: Vec<SessionEnd<'a>>,
    lines: u64,
    events: u64,
    overflow_rows: u64,
}

/// One session's finals in [`SessionsEndLine`]: the fields of the one-session end line.
#[derive(Serialize)]
struct SessionEnd<'a> {
    session_id: Option<&'a str>,
    provider: Option<&'a Detection>,
    open_turns: Vec<TurnRecord>,
    #[serde(rename = "final")]
    final_posture: &'a Posture,
    diagnostics: &'a Diagnostics,
    provenance: &'a Provenance,
    lines: u64,
    events: u64,
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
struct EndLine<'a> {
    end: bool,
    provider: Option<&'a Detection>,
    open_turns: &'a [TurnRecord],
    #[serde(rename = "final")]
    final_posture: &'a Posture,
    diagnostics: &'a Diagnostics,
    provenance: &'a Provenance,
    lines: u64,
    events: u64,
}
