//! `hooktrack replay --format html`: the campaign as one self-contained page.
//!
//! A time axis, one lane per scope (main, each subagent or system-triggered scope), every
//! turn a bar coloured by its result with its tool calls inside it, blocked and
//! compaction windows shaded, a mark on every guess and every skipped line (transcript
//! entries hooktrack does not read by design are counted in the summary). Inline SVG
//! and CSS, and one small inline script for hover, zoom and the overview strip; no
//! network. The same input gives the same bytes.
//!
//! A store of several sessions (read by session, as json reads it) is drawn on the one
//! axis as a group of lanes per session, headed by its label (agent, tmux pane, session
//! id) and its own events, guesses and skipped transcript lines; the store's skipped
//! lines, which may name no session, share one track above the groups.
//!
//! The turns are the report's ledger; what the ledger does not keep (each event's time,
//! notes and posture, each skipped line, which turn each tool call went to) is recorded
//! by [`Recorder`] while the replay runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::{Diag, Note};
use hooktrack_core::event::{Event, ToolRef};
use hooktrack_core::pipeline::{Fed, Pipeline, Step};
use hooktrack_core::posture::{Phase, TurnResult};
use hooktrack_core::source::Source;
use hooktrack_core::time::Timestamp;

use super::Report;
use super::timeline::describe;

/// Width of the lane-label column and of the plot, in CSS pixels.
const LABEL_W: f64 = 200.0;
const PLOT_W: f64 = 1120.0;
/// Heights of the axis and of the three mark tracks above the lanes.
const AXIS_H: f64 = 30.0;
const TRACK_H: f64 = 18.0;
/// One row of turn bars in a lane.
const ROW_H: f64 = 30.0;
const BAR_H: f64 = 26.0;
/// Smallest drawn widths, so that an instant still shows.
const MIN_BAR: f64 = 3.0;
const MIN_TOOL: f64 = 2.0;
const MARK_W: f64 = 5.0;
/// Axis labels closer than this to either end of the plot are left out.
const TICK_LABEL_ROOM: f64 = 36.0;
/// Bins of the overview strip's event histogram.
const OVERVIEW_BINS: usize = 240;
const OVERVIEW_H: f64 = 44.0;
/// The turn table starts unfolded up to this many turns.
const LEDGER_OPEN_UP_TO: usize = 100;

/// One event as the page shows it.
#[derive(Debug)]
struct EventMark {
    /// The index of its session (in order of first rows).
    session: usize,
    line: u64,
    at: Option<Timestamp>,
    name: String,
    what: String,
    kind: &'static str,
    notes: Vec<Note>,
    blocked: bool,
    blocked_tool: Option<String>,
    compacting: bool,
    trigger: Option<String>,
}

#[derive(Debug)]
struct SkipMark {
    /// The session of a transcript's line; none for a line of the store, which may name
    /// no session (it could not be read, or was dropped).
    session: Option<usize>,
    line: u64,
    diag: Diag,
    detail: String,
}

#[derive(Debug)]
enum Mark {
    Event(EventMark),
    Skip(SkipMark),
}

/// One tool call, in the turn the correlator counted it in.
#[derive(Debug)]
struct ToolSpan {
    session: usize,
    turn: u64,
    name: Option<String>,
    call_id: Option<String>,
    agent: Option<String>,
    start_line: u64,
    start_at: Option<Timestamp>,
    /// The finishing line, its time, and whether it failed.
    end: Option<(u64, Option<Timestamp>, bool)>,
}

/// What the page needs beyond the report, gathered line by line during the replay.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    marks: Vec<Mark>,
    tools: Vec<ToolSpan>,
    /// Tool calls each open turn (session, turn id) had at the last tool start: the
    /// turn whose count grows at a tool start is the one the correlator counted it in.
    tool_counts: BTreeMap<(usize, u64), u64>,
    /// Indexes into `tools` of calls not finished yet, oldest first.
    open_tools: Vec<usize>,
    /// The tmux panes each session's rows named, in order of first mention.
    panes: Vec<Vec<String>>,
    /// Transcript entries hooktrack does not read by design: counted in the summary, not
    /// drawn as skipped lines (a long transcript has hundreds, none of them an error).
    ignored: usize,
}

/// A skip that is hooktrack's choice, not a fault of the line: a transcript entry that is
/// no marker, or a transcript not followed.
fn deliberately_ignored(diag: Diag) -> bool {
    matches!(
        diag,
        Diag::TranscriptEntryIgnored | Diag::TranscriptNotFollowed
    )
}

impl Recorder {
    /// Records one fed line of the session of index `session`, `pipeline` after it.
    pub(super) fn record(&mut self, fed: &Fed<'_>, pipeline: &Pipeline, session: usize) {
        match fed {
            Fed::Skipped(skip) if deliberately_ignored(skip.diag) => self.ignored += 1,
            Fed::Skipped(skip) => self.marks.push(Mark::Skip(SkipMark {
                session: (skip.source != Source::Hook).then_some(session),
                line: skip.line,
                diag: skip.diag,
                detail: skip.detail.clone(),
            })),
            Fed::Event(step) => self.record_step(step, pipeline, session),
        }
    }

    fn record_step(&mut self, step: &Step<'_>, pipeline: &Pipeline, session: usize) {
        let posture = pipeline.posture();
        match &step.event {
            Event::ToolStarted { tool } => self.tool_started(step, tool, pipeline, session),
            Event::ToolFinished { tool } => self.tool_finished(step, tool, false, session),
            Event::ToolFailed { tool, .. } => self.tool_finished(step, tool, true, session),
            _ => {}
        }
        for closed in &step.outcome.closed {
            self.tool_counts.remove(&(session, closed.id));
            let tools = &self.tools;
            self.open_tools
                .retain(|&i| (tools[i].session, tools[i].turn) != (session, closed.id));
        }
        if let Some(pane) = &step.tmux_pane {
            if self.panes.len() <= session {
                self.panes.resize_with(session + 1, Vec::new);
            }
            if !self.panes[session].contains(pane) {
                self.panes[session].push(pane.clone());
            }
        }
        self.marks.push(Mark::Event(EventMark {
            session,
            line: step.line,
            at: step.at,
            name: step.name.to_string(),
            what: describe(&step.event),
            kind: step.event.kind(),
            notes: step.outcome.notes.clone(),
            blocked: posture.turn.phase == Phase::Blocked,
            blocked_tool: posture.turn.blocked_tool.clone(),
            compacting: posture.maintenance.compacting,
            trigger: posture.maintenance.trigger.clone(),
        }));
    }

    fn tool_started(
        &mut self,
        step: &Step<'_>,
        tool: &ToolRef<'_>,
        pipeline: &Pipeline,
        session: usize,
    ) {
        let mut owner = None;
        for rec in pipeline.open_turns().iter().chain(&step.outcome.closed) {
            let key = (session, rec.id);
            let known = self.tool_counts.get(&key).copied().unwrap_or(0);
            if rec.tool_calls > known {
                owner = Some(rec.id);
            }
            self.tool_counts.insert(key, rec.tool_calls);
        }
        // A call started with no turn open is counted in none: the ledger has no place
        // for it, and neither has the page (its event and its note still show).
        let Some(turn) = owner else { return };
        self.open_tools.push(self.tools.len());
        self.tools.push(ToolSpan {
            session,
            turn,
            name: tool.name.as_deref().map(str::to_owned),
            call_id: tool.call_id.as_deref().map(str::to_owned),
            agent: tool.agent.as_deref().map(str::to_owned),
            start_line: step.line,
            start_at: step.at,
            end: None,
        });
    }

    /// Pairs a finish with its start for drawing only: by call id (the newest open call
    /// with that id), else the oldest open id-less call of that name; in its session.
    fn tool_finished(&mut self, step: &Step<'_>, tool: &ToolRef<'_>, failed: bool, session: usize) {
        let tools = &self.tools;
        let found = match tool.call_id.as_deref() {
            Some(id) => self.open_tools.iter().rposition(|&i| {
                tools[i].session == session && tools[i].call_id.as_deref() == Some(id)
            }),
            None => self.open_tools.iter().position(|&i| {
                tools[i].session == session
                    && tools[i].call_id.is_none()
                    && tools[i].name.as_deref() == tool.name.as_deref()
            }),
        };
        if let Some(pos) = found {
            let i = self.open_tools.remove(pos);
            self.tools[i].end = Some((step.line, step.at, failed));
        }
    }
}

/// The horizontal axis: time (milliseconds after `t0`) when every event has a time, else
/// line numbers.
struct Axis {
    time: bool,
    t0: i64,
    lo: i64,
    hi: i64,
}

impl Axis {
    fn px(&self, v: i64) -> f64 {
        LABEL_W + (v - self.lo) as f64 / (self.hi - self.lo) as f64 * PLOT_W
    }
}

/// The x value of every recorded line, in line order.
struct Positions {
    lines: Vec<(u64, i64)>,
}

impl Positions {
    fn of(&self, line: u64) -> i64 {
        match self.lines.binary_search_by_key(&line, |&(l, _)| l) {
            Ok(i) => self.lines[i].1,
            // A turn row is always a recorded line; this is only a fallback.
            Err(i) => self
                .lines
                .get(i.saturating_sub(1))
                .map_or(line as i64, |&(_, v)| v),
        }
    }
}

/// A drawn lane: a scope and its rows of non-overlapping bars.
struct Lane<'a> {
    scope: String,
    rows: Vec<Vec<(&'a TurnRecord, i64, i64)>>,
}

/// One session of a store of several, as its group of lanes shows it.
pub(super) struct SessionPart<'a> {
    pub session_id: Option<&'a str>,
    pub report: &'a Report,
}

/// Writes the page.
pub(super) fn write<W: Write>(
    out: &mut W,
    source_name: &str,
    report: &Report,
    rec: &Recorder,
) -> io::Result<()> {
    let page = render(source_name, report, rec);
    out.write_all(page.as_bytes())
}

/// Writes the page of a store of several sessions: one group of lanes per session (in
/// `parts`' order, that of their first rows), on one time axis; `lines` the store's.
pub(super) fn write_sessions<W: Write>(
    out: &mut W,
    source_name: &str,
    parts: &[SessionPart<'_>],
    lines: u64,
    rec: &Recorder,
) -> io::Result<()> {
    let page = render_sessions(source_name, parts, lines, rec);
    out.write_all(page.as_bytes())
}

macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        // Writing to a String cannot fail.
        let _ = write!($dst, $($arg)*);
    }};
}

/// The recorded lines placed on the axis: what every drawing of the page shares.
struct Frame<'r> {
    events: Vec<&'r EventMark>,
    skips: Vec<&'r SkipMark>,
    untimed: usize,
    positions: Positions,
    axis: Axis,
}

impl Frame<'_> {
    /// A turn's span on the axis (an open turn runs to the end of the log).
    fn turn_span(&self, t: &TurnRecord) -> (i64, i64) {
        turn_span(
            self.axis.time,
            self.axis.t0,
            &self.positions,
            t,
            self.axis.hi,
        )
    }

    fn events_of(&self, session: usize) -> Vec<&EventMark> {
        self.events
            .iter()
            .copied()
            .filter(|e| e.session == session)
            .collect()
    }
}

fn turn_span(
    time: bool,
    t0: i64,
    positions: &Positions,
    t: &TurnRecord,
    end_of_log: i64,
) -> (i64, i64) {
    let start = match (time, t.started_at) {
        (true, Some(at)) => at.as_millis() - t0,
        _ => positions.of(t.first_row),
    };
    let end = if t.result == TurnResult::Open {
        end_of_log
    } else {
        match (time, t.ended_at) {
            (true, Some(at)) => at.as_millis() - t0,
            _ => positions.of(t.last_row),
        }
    };
    (start, end.max(start))
}

/// Places every recorded line and every turn of `turns` on one axis.
fn frame<'r>(rec: &'r Recorder, turns: &[&TurnRecord]) -> Frame<'r> {
    let events: Vec<&EventMark> = rec
        .marks
        .iter()
        .filter_map(|m| match m {
            Mark::Event(e) => Some(e),
            Mark::Skip(_) => None,
        })
        .collect();
    let skips: Vec<&SkipMark> = rec
        .marks
        .iter()
        .filter_map(|m| match m {
            Mark::Skip(s) => Some(s),
            Mark::Event(_) => None,
        })
        .collect();
    let untimed = events.iter().filter(|e| e.at.is_none()).count();
    let time = !events.is_empty() && untimed == 0;
    let t0 = if time {
        events
            .iter()
            .filter_map(|e| e.at.map(Timestamp::as_millis))
            .min()
            .unwrap_or(0)
    } else {
        0
    };

    // Every line's x: an event at its time (or line); a skipped line where the event
    // before it is (the first event's place when none is before it).
    let first_value = events
        .first()
        .map_or(1, |e| value_of(time, t0, e.line, e.at));
    let mut last_value = first_value;
    let positions = Positions {
        lines: rec
            .marks
            .iter()
            .map(|m| match m {
                Mark::Event(e) => {
                    last_value = value_of(time, t0, e.line, e.at);
                    (e.line, last_value)
                }
                Mark::Skip(s) => (s.line, if time { last_value } else { s.line as i64 }),
            })
            .collect(),
    };

    let mut lo = positions.lines.iter().map(|&(_, v)| v).min().unwrap_or(0);
    let mut hi = positions.lines.iter().map(|&(_, v)| v).max().unwrap_or(1);
    for t in turns {
        let (a, b) = turn_span(time, t0, &positions, t, hi);
        lo = lo.min(a);
        hi = hi.max(b);
    }
    if hi <= lo {
        hi = lo + 1;
    }
    // A little room at both ends, so that the first and last marks are not on the edge.
    let pad = ((hi - lo) / 100).max(if time { 1 } else { 0 });
    let (lo, hi) = if time {
        (lo - pad, hi + pad)
    } else {
        (lo.min(1) - 1, hi + pad.max(1))
    };
    Frame {
        events,
        skips,
        untimed,
        positions,
        axis: Axis { time, t0, lo, hi },
    }
}

/// Lanes: main first (or alone, with no turn), then the other scopes in order of their
/// first turn; within a lane, turns that overlap in time go to further rows (one after
/// the other share a row, however narrow they are drawn).
fn lanes<'a>(turns: &'a [TurnRecord], frame: &Frame<'_>) -> Vec<Lane<'a>> {
    let mut scopes: Vec<String> = Vec::new();
    let mut sorted: Vec<&TurnRecord> = turns.iter().collect();
    sorted.sort_by_key(|t| (t.first_row, t.id));
    if sorted.iter().any(|t| t.is_main()) || sorted.is_empty() {
        scopes.push("main".to_owned());
    }
    for t in &sorted {
        let scope = t.scope.to_string();
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let mut lanes: Vec<Lane<'a>> = scopes
        .into_iter()
        .map(|scope| Lane {
            scope,
            rows: Vec::new(),
        })
        .collect();
    let mut spans: Vec<(&TurnRecord, i64, i64)> = turns
        .iter()
        .map(|t| {
            let (a, b) = frame.turn_span(t);
            (t, a, b)
        })
        .collect();
    spans.sort_by_key(|&(t, a, _)| (a, t.id));
    for (t, a, b) in spans {
        let scope = t.scope.to_string();
        let Some(lane) = lanes.iter_mut().find(|l| l.scope == scope) else {
            continue;
        };
        let free = lane
            .rows
            .iter_mut()
            .find(|row| row.last().is_none_or(|&(_, _, end)| end <= a));
        match free {
            Some(row) => row.push((t, a, b)),
            None => lane.rows.push(vec![(t, a, b)]),
        }
    }
    for lane in &mut lanes {
        if lane.rows.is_empty() {
            lane.rows.push(Vec::new());
        }
    }
    lanes
}

fn render(source_name: &str, report: &Report, rec: &Recorder) -> String {
    let turns: Vec<&TurnRecord> = report.turns.iter().collect();
    let frame = frame(rec, &turns);
    let axis = &frame.axis;
    let lanes = lanes(&report.turns, &frame);

    let lanes_top = AXIS_H + 3.0 * TRACK_H + 6.0;
    let rows_total: usize = lanes.iter().map(|l| l.rows.len()).sum();
    let height = lanes_top + rows_total as f64 * ROW_H + 10.0;

    let mut s = String::with_capacity(64 * 1024 + rec.marks.len() * 400);
    head(&mut s, source_name, false);
    header(&mut s, source_name, report, &frame, rec.ignored);

    // The main picture.
    svg_open(&mut s, axis, height);
    // Lane backgrounds and labels.
    lane_labels(&mut s, &lanes, lanes_top);
    for (label, row) in [("events", 0.0), ("guesses", 1.0), ("skipped lines", 2.0)] {
        w!(
            s,
            "<text class=\"track-label\" x=\"8\" y=\"{:.0}\">{label}</text>",
            AXIS_H + row * TRACK_H + 13.0
        );
    }
    s.push('\n');
    axis_open_plot(&mut s, axis, height);

    windows(
        &mut s,
        axis,
        &frame.events,
        &frame.positions,
        AXIS_H,
        height - 10.0,
    );
    lane_turns(&mut s, &frame, &lanes, lanes_top, rec, 0);
    event_marks(&mut s, &frame, &frame.events, AXIS_H);
    skip_marks(&mut s, &frame, &frame.skips, AXIS_H + 2.0 * TRACK_H);
    s.push_str("</g>\n</svg></div>\n");

    let main: Vec<&TurnRecord> = report.turns.iter().filter(|t| t.is_main()).collect();
    overview(&mut s, &frame, &main, std::slice::from_ref(&frame.events));
    legend(&mut s);
    turns_table(&mut s, "Turns", &report.turns);
    guesses_table(&mut s, "Guesses", &frame.events);
    skips_table(&mut s, &frame.skips);
    diagnostics_table(&mut s, "Diagnostic counters", report);
    tail(&mut s);
    s
}

/// Height of a session's head band (its label, its events and guesses tracks).
const SESSION_HEAD_H: f64 = 3.0 * TRACK_H + 4.0;
/// Characters of a session id shown in its label (the whole id is in its tooltip).
const SESSION_ID_SHOWN: usize = 8;

/// How a session is named on the page.
struct SessionLabel {
    /// `agent · pane`.
    who: String,
    /// The session id, shortened.
    short: String,
    /// The whole id and the session's facts, for the tooltip.
    title: String,
}

/// A session's label: agent, tmux pane (the rows' `tmux_pane`), shortened session id;
/// the whole id in its tooltip.
fn session_label(part: &SessionPart<'_>, panes: &[String]) -> SessionLabel {
    let agent = part
        .report
        .provider
        .as_ref()
        .map_or("agent not identified", |d| d.provider.name());
    let pane = if panes.is_empty() {
        "no pane".to_owned()
    } else {
        panes.join(", ")
    };
    let id = part.session_id.unwrap_or("(no session id)");
    let short = if id.chars().count() > SESSION_ID_SHOWN {
        let mut short: String = id.chars().take(SESSION_ID_SHOWN).collect();
        short.push('…');
        short
    } else {
        id.to_owned()
    };
    let turns = part.report.turns.len();
    let title = format!(
        "session {id}\nagent {}\ntmux pane {}\n{turns} turn{}, {} lines, {} events\n(its events, guesses and skipped transcript lines are the marks in this band)",
        part.report.provider.as_ref().map_or_else(
            || "not identified".to_owned(),
            |d| format!("{} ({})", d.provider.name(), d.reason)
        ),
        if panes.is_empty() {
            "not known".to_owned()
        } else {
            panes.join(", ")
        },
        if turns == 1 { "" } else { "s" },
        part.report.lines,
        part.report.events,
    );
    SessionLabel {
        who: format!("{agent} · {pane}"),
        short,
        title,
    }
}

fn render_sessions(
    source_name: &str,
    parts: &[SessionPart<'_>],
    lines: u64,
    rec: &Recorder,
) -> String {
    let turns: Vec<&TurnRecord> = parts.iter().flat_map(|p| &p.report.turns).collect();
    let frame = frame(rec, &turns);
    let axis = &frame.axis;
    let groups: Vec<(Vec<Lane<'_>>, Vec<&EventMark>)> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| (lanes(&p.report.turns, &frame), frame.events_of(i)))
        .collect();
    let no_panes = Vec::new();
    let labels: Vec<SessionLabel> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| session_label(p, rec.panes.get(i).unwrap_or(&no_panes)))
        .collect();

    // One shared track (the store's skipped lines: a line that could not be read names
    // no session), then a group per session: its head band (its events, guesses and
    // skipped transcript lines), then its lanes.
    let groups_top = AXIS_H + TRACK_H + 6.0;
    let group_h = |lanes: &[Lane<'_>]| {
        SESSION_HEAD_H + lanes.iter().map(|l| l.rows.len()).sum::<usize>() as f64 * ROW_H
    };
    let height = groups_top + groups.iter().map(|(l, _)| group_h(l)).sum::<f64>() + 10.0;
    let width = LABEL_W + PLOT_W + 10.0;

    let mut s = String::with_capacity(64 * 1024 + rec.marks.len() * 400);
    head(&mut s, source_name, true);
    header_sessions(
        &mut s,
        source_name,
        (parts, lines),
        &labels,
        &frame,
        rec.ignored,
    );

    svg_open(&mut s, axis, height);
    let mut y = groups_top;
    for ((lanes, _), label) in groups.iter().zip(&labels) {
        w!(
            s,
            "<rect class=\"session-head\" x=\"0\" y=\"{y:.0}\" width=\"{width}\" height=\"{SESSION_HEAD_H:.0}\"/>"
        );
        w!(
            s,
            "<text class=\"session-label\" x=\"8\" y=\"{:.0}\"><tspan>{}</tspan><tspan class=\"session-id\" x=\"8\" dy=\"15\">session {}</tspan><title>{}</title></text>\n",
            y + 14.0,
            esc(&clip_chars(&label.who, 28)),
            esc(&label.short),
            esc(&label.title)
        );
        w!(
            s,
            "<text class=\"track-label\" x=\"8\" y=\"{:.0}\">events · guesses · skipped</text>\n",
            y + 48.0
        );
        lane_labels(&mut s, lanes, y + SESSION_HEAD_H);
        y += group_h(lanes);
    }
    w!(
        s,
        "<text class=\"track-label\" x=\"8\" y=\"{:.0}\">skipped lines</text>\n",
        AXIS_H + 13.0
    );
    axis_open_plot(&mut s, axis, height);

    let mut y = groups_top;
    for (i, ((lanes, events), part)) in groups.iter().zip(parts).enumerate() {
        let bottom = y + group_h(lanes);
        w!(
            s,
            "<g class=\"session\" data-session=\"{}\">\n",
            esc(part.session_id.unwrap_or(""))
        );
        windows(&mut s, axis, events, &frame.positions, y, bottom);
        lane_turns(&mut s, &frame, lanes, y + SESSION_HEAD_H, rec, i);
        event_marks(&mut s, &frame, events, y);
        let skips: Vec<&SkipMark> = frame
            .skips
            .iter()
            .copied()
            .filter(|sk| sk.session == Some(i))
            .collect();
        skip_marks(&mut s, &frame, &skips, y + 2.0 * TRACK_H);
        s.push_str("</g>\n");
        y = bottom;
    }
    let unowned: Vec<&SkipMark> = frame
        .skips
        .iter()
        .copied()
        .filter(|sk| sk.session.is_none())
        .collect();
    skip_marks(&mut s, &frame, &unowned, AXIS_H);
    s.push_str("</g>\n</svg></div>\n");

    let main: Vec<&TurnRecord> = turns.iter().copied().filter(|t| t.is_main()).collect();
    let runs: Vec<Vec<&EventMark>> = groups.iter().map(|(_, e)| e.clone()).collect();
    overview(&mut s, &frame, &main, &runs);
    legend(&mut s);
    for ((part, (_, events)), label) in parts.iter().zip(&groups).zip(&labels) {
        let of = format!(
            "of {} · session {}",
            esc(&label.who),
            esc(part.session_id.unwrap_or("(none)"))
        );
        turns_table(&mut s, &format!("Turns {of}"), &part.report.turns);
        guesses_table(&mut s, &format!("Guesses {of}"), events);
        diagnostics_table(&mut s, &format!("Diagnostic counters {of}"), part.report);
    }
    skips_table(&mut s, &frame.skips);
    tail(&mut s);
    s
}

fn svg_open(s: &mut String, axis: &Axis, height: f64) {
    let width = LABEL_W + PLOT_W + 10.0;
    w!(
        s,
        "<div class=\"chart\"><svg id=\"main\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height:.0}\" viewBox=\"0 0 {width} {height:.0}\" data-axis=\"{}\" data-t0=\"{}\" data-lo=\"{}\" data-hi=\"{}\" data-left=\"{LABEL_W}\" data-width=\"{PLOT_W}\" data-top=\"{AXIS_H}\" data-bottom=\"{:.0}\">\n",
        if axis.time { "time" } else { "line" },
        axis.t0,
        axis.lo,
        axis.hi,
        height - 10.0
    );
    s.push_str(
        "<defs><pattern id=\"gap\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#8a6fb8\"/><rect width=\"3\" height=\"6\" fill=\"#6a4f98\"/></pattern>",
    );
    w!(
        s,
        "<clipPath id=\"plot\"><rect x=\"{LABEL_W}\" y=\"0\" width=\"{PLOT_W}\" height=\"{height:.0}\"/></clipPath></defs>\n"
    );
}

/// The axis, and the opening of the clipped plot the marks are drawn in.
fn axis_open_plot(s: &mut String, axis: &Axis, height: f64) {
    w!(s, "<g id=\"axis\">");
    axis_ticks(s, axis, height - 10.0);
    s.push_str("</g>\n<g clip-path=\"url(#plot)\">\n");
}

/// Lane backgrounds and labels, from `top` down.
fn lane_labels(s: &mut String, lanes: &[Lane<'_>], top: f64) {
    let width = LABEL_W + PLOT_W + 10.0;
    let mut y = top;
    for (i, lane) in lanes.iter().enumerate() {
        let h = lane.rows.len() as f64 * ROW_H;
        w!(
            s,
            "<rect class=\"lane{}\" x=\"0\" y=\"{y:.0}\" width=\"{width}\" height=\"{h:.0}\"/>",
            if i % 2 == 0 { "" } else { " alt" }
        );
        let turns = lane.rows.iter().map(Vec::len).sum::<usize>();
        w!(
            s,
            "<text class=\"lane-label\" x=\"8\" y=\"{:.0}\">{}<title>scope {}: {} turn{}</title></text>\n",
            y + 18.0,
            esc(&clip_chars(&lane.scope, 28)),
            esc(&lane.scope),
            turns,
            if turns == 1 { "" } else { "s" }
        );
        y += h;
    }
}

/// The turns of the session of index `session` and their tool calls, from `top` down.
fn lane_turns(
    s: &mut String,
    frame: &Frame<'_>,
    lanes: &[Lane<'_>],
    top: f64,
    rec: &Recorder,
    session: usize,
) {
    let mut tools_by_turn: BTreeMap<u64, Vec<&ToolSpan>> = BTreeMap::new();
    for tool in rec.tools.iter().filter(|t| t.session == session) {
        tools_by_turn.entry(tool.turn).or_default().push(tool);
    }
    let axis = &frame.axis;
    let mut y = top;
    for lane in lanes {
        for row in &lane.rows {
            for &(t, a, b) in row {
                turn_bar(s, axis, t, a, b, y + 2.0);
                for tool in tools_by_turn.get(&t.id).map_or(&[][..], Vec::as_slice) {
                    tool_bar(s, axis, &frame.positions, tool, (a, b), y + 2.0);
                }
            }
            y += ROW_H;
        }
    }
}

/// The events and guesses tracks of `events`, the first at `top`.
fn event_marks(s: &mut String, frame: &Frame<'_>, events: &[&EventMark], top: f64) {
    let axis = &frame.axis;
    for e in events {
        let v = frame.positions.of(e.line);
        rect(
            s,
            "event",
            "event",
            (v, v),
            top + 4.0,
            TRACK_H - 8.0,
            1.0,
            axis,
            &format!(
                "line {} · {} · {} ({}){}",
                e.line,
                time_text(e.at),
                e.name,
                e.kind,
                suffix(&e.what)
            ),
        );
    }
    for e in events {
        let v = frame.positions.of(e.line);
        for (i, note) in e.notes.iter().enumerate() {
            rect(
                s,
                "note",
                "note",
                (v, v),
                top + TRACK_H + 2.0 + (i.min(2) as f64) * 3.0,
                TRACK_H - 8.0,
                MARK_W,
                axis,
                &format!(
                    "line {} · {} · {} ({}){}\nguess: {}\n{}",
                    e.line,
                    time_text(e.at),
                    e.name,
                    e.kind,
                    suffix(&e.what),
                    note,
                    note.diag.about()
                ),
            );
        }
    }
}

/// A track of skipped lines at `top`.
fn skip_marks(s: &mut String, frame: &Frame<'_>, skips: &[&SkipMark], top: f64) {
    for sk in skips {
        let v = frame.positions.of(sk.line);
        rect(
            s,
            "skip",
            "skip",
            (v, v),
            top + 3.0,
            TRACK_H - 6.0,
            MARK_W,
            &frame.axis,
            &format!(
                "line {} · skipped: {}\n{}\n{}",
                sk.line,
                sk.diag,
                sk.detail,
                sk.diag.about()
            ),
        );
    }
}

fn value_of(time: bool, t0: i64, line: u64, at: Option<Timestamp>) -> i64 {
    match (time, at) {
        (true, Some(at)) => at.as_millis() - t0,
        _ => line as i64,
    }
}

/// One positioned rectangle: `data-a`/`data-b` are its span on the axis, `data-m` its
/// smallest width; the script redraws from these when zooming.
#[allow(clippy::too_many_arguments)]
fn rect(
    s: &mut String,
    kind: &str,
    class: &str,
    (a, b): (i64, i64),
    y: f64,
    h: f64,
    min_w: f64,
    axis: &Axis,
    tip: &str,
) {
    let centered = a == b;
    let (x, width) = place(axis, a, b, min_w, centered);
    w!(
        s,
        "<rect data-kind=\"{kind}\" class=\"{class}\" data-a=\"{a}\" data-b=\"{b}\" data-m=\"{min_w}\"{} x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{h:.1}\"><title>{}</title></rect>\n",
        if centered { " data-c=\"1\"" } else { "" },
        esc(tip)
    );
}

fn place(axis: &Axis, a: i64, b: i64, min_w: f64, centered: bool) -> (f64, f64) {
    let (x0, x1) = (axis.px(a), axis.px(b));
    let width = (x1 - x0).max(min_w);
    let x = if centered { x0 - width / 2.0 } else { x0 };
    (x, width)
}

fn turn_bar(s: &mut String, axis: &Axis, t: &TurnRecord, a: i64, b: i64, y: f64) {
    let result = t.result.name();
    let id = t
        .turn_id
        .as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string);
    let tip = format!(
        "turn #{} · {} · {}\nturn id {id}, epoch {}, origin {}\nlines {}–{} · {} → {}\n{} tool call{}",
        t.id,
        t.scope,
        result,
        t.epoch,
        t.origin,
        t.first_row,
        t.last_row,
        time_text(t.started_at),
        if t.result == TurnResult::Open {
            "still open at the end of the log".to_owned()
        } else {
            time_text(t.ended_at)
        },
        t.tool_calls,
        if t.tool_calls == 1 { "" } else { "s" }
    );
    rect(
        s,
        "turn",
        &format!("turn r-{result}"),
        (a, b),
        y,
        BAR_H,
        MIN_BAR,
        axis,
        &tip,
    );
    let label = format!("#{} {}", t.id, result);
    let label_w = label.chars().count() as f64 * 6.2 + 6.0;
    let (x, width) = place(axis, a, b, MIN_BAR, false);
    let shown = width >= label_w + 4.0;
    w!(
        s,
        "<text class=\"turn-label\" data-a=\"{a}\" data-b=\"{b}\" data-w=\"{label_w:.0}\" x=\"{:.1}\" y=\"{:.1}\"{}>{}</text>\n",
        x.max(LABEL_W) + 3.0,
        y + 10.0,
        if shown { "" } else { " style=\"display:none\"" },
        esc(&label)
    );
}

fn tool_bar(
    s: &mut String,
    axis: &Axis,
    positions: &Positions,
    tool: &ToolSpan,
    (turn_a, turn_b): (i64, i64),
    y: f64,
) {
    let start = match (axis.time, tool.start_at) {
        (true, Some(at)) => at.as_millis() - axis.t0,
        _ => positions.of(tool.start_line),
    };
    let end = match tool.end {
        Some((_, Some(at), _)) if axis.time => at.as_millis() - axis.t0,
        Some((line, _, _)) => positions.of(line),
        None => turn_b,
    };
    // Drawn inside its turn's bar, whatever the rows say (a late finish is noted).
    let a = start.clamp(turn_a, turn_b);
    let b = end.clamp(a, turn_b);
    let name = tool.name.as_deref().unwrap_or("(unnamed tool)");
    let mut tip = format!("tool {name}");
    if let Some(id) = &tool.call_id {
        tip.push_str(&format!(" · call {id}"));
    }
    if let Some(agent) = &tool.agent {
        tip.push_str(&format!(" · agent {agent}"));
    }
    tip.push_str(&format!(
        "\nturn #{} · started line {} · {}",
        tool.turn,
        tool.start_line,
        time_text(tool.start_at)
    ));
    match tool.end {
        Some((line, at, failed)) => tip.push_str(&format!(
            "\n{} line {line} · {}",
            if failed { "failed" } else { "finished" },
            time_text(at)
        )),
        None => tip.push_str("\nno finish seen"),
    }
    let class = match tool.end {
        Some((_, _, true)) => "tool failed",
        Some(_) => "tool",
        None => "tool unfinished",
    };
    rect(
        s,
        "tool",
        class,
        (a, b),
        y + 13.0,
        10.0,
        MIN_TOOL,
        axis,
        &tip,
    );
}

/// A window being drawn: the event that opened it and the tools it waited on.
struct OpenWindow<'a> {
    from: &'a EventMark,
    tools: Vec<&'a str>,
}

/// Blocked and compaction windows: runs of events whose posture is blocked (compacting).
fn windows(
    s: &mut String,
    axis: &Axis,
    events: &[&EventMark],
    positions: &Positions,
    top: f64,
    bottom: f64,
) {
    let draw = |s: &mut String, kind: &str, open: OpenWindow<'_>, to: Option<&EventMark>| {
        window(s, axis, positions, (top, bottom), kind, &open, to);
    };
    let mut blocked: Option<OpenWindow<'_>> = None;
    let mut compacting: Option<OpenWindow<'_>> = None;
    for e in events {
        if e.blocked {
            let tool = e.blocked_tool.as_deref();
            match &mut blocked {
                Some(open) => {
                    if let Some(t) = tool
                        && !open.tools.contains(&t)
                    {
                        open.tools.push(t);
                    }
                }
                None => {
                    blocked = Some(OpenWindow {
                        from: e,
                        tools: tool.into_iter().collect(),
                    });
                }
            }
        } else if let Some(open) = blocked.take() {
            draw(s, "blocked", open, Some(e));
        }
        if e.compacting {
            if compacting.is_none() {
                compacting = Some(OpenWindow {
                    from: e,
                    tools: Vec::new(),
                });
            }
        } else if let Some(open) = compacting.take() {
            draw(s, "compaction", open, Some(e));
        }
    }
    if let Some(open) = blocked {
        draw(s, "blocked", open, None);
    }
    if let Some(open) = compacting {
        draw(s, "compaction", open, None);
    }
}

fn window(
    s: &mut String,
    axis: &Axis,
    positions: &Positions,
    (top, bottom): (f64, f64),
    kind: &str,
    open: &OpenWindow<'_>,
    to: Option<&EventMark>,
) {
    let a = positions.of(open.from.line);
    let b = to.map_or(axis.hi, |e| positions.of(e.line));
    let (what, detail) = if kind == "blocked" {
        (
            "blocked: waiting for a permission answer",
            if open.tools.is_empty() {
                String::new()
            } else {
                format!("\ntool {}", open.tools.join(", "))
            },
        )
    } else {
        (
            "compacting",
            open.from
                .trigger
                .as_deref()
                .map_or_else(String::new, |t| format!("\ntrigger {t}")),
        )
    };
    let until = match to {
        Some(e) => format!("line {} ({}) · {}", e.line, e.name, time_text(e.at)),
        None => "still open at the end of the log".to_owned(),
    };
    let tip = format!(
        "{what}{detail}\nfrom line {} ({}) · {}\nuntil {until}",
        open.from.line,
        open.from.name,
        time_text(open.from.at),
    );
    rect(
        s,
        kind,
        &format!("window {kind}"),
        (a, b),
        top,
        bottom - top,
        MIN_BAR,
        axis,
        &tip,
    );
}

/// A tick step of about a tenth of the span: round times, or 1-2-5 line counts.
fn tick_step(axis: &Axis, lo: i64, hi: i64) -> i64 {
    const TIME_STEPS: [i64; 27] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000,
        120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000,
        21_600_000, 43_200_000, 86_400_000,
    ];
    let target = ((hi - lo) as f64 / 10.0).max(1.0);
    if axis.time {
        TIME_STEPS
            .iter()
            .copied()
            .find(|&s| s as f64 >= target)
            .unwrap_or_else(|| 86_400_000 * (target / 86_400_000.0).ceil() as i64)
    } else {
        let mut p = 1_i64;
        loop {
            for c in [1, 2, 5] {
                if (c * p) as f64 >= target {
                    return c * p;
                }
            }
            match p.checked_mul(10) {
                Some(next) => p = next,
                None => return i64::MAX,
            }
        }
    }
}

fn axis_ticks(s: &mut String, axis: &Axis, bottom: f64) {
    let step = tick_step(axis, axis.lo, axis.hi);
    let base = if axis.time { axis.t0 } else { 0 };
    let mut v = (axis.lo + base).div_euclid(step) * step - base;
    if v < axis.lo {
        v += step;
    }
    if !axis.time && v < 1 {
        v += step * ((1 - v + step - 1) / step);
    }
    let mut n = 0;
    while v <= axis.hi && n < 64 {
        let x = axis.px(v);
        let label = if axis.time {
            let clock = Timestamp::from_millis(axis.t0 + v).clock();
            if step < 1000 {
                clock
            } else {
                clock.chars().take(8).collect()
            }
        } else {
            format!("line {v}")
        };
        w!(
            s,
            "<line class=\"tick\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.0}\" y2=\"{bottom:.0}\"/>",
            AXIS_H - 4.0,
        );
        // A label too near an end would be cut off.
        if (LABEL_W + TICK_LABEL_ROOM..=LABEL_W + PLOT_W - TICK_LABEL_ROOM).contains(&x) {
            w!(
                s,
                "<text class=\"tick-label\" x=\"{x:.1}\" y=\"{:.0}\">{}</text>",
                AXIS_H - 8.0,
                esc(&label)
            );
        }
        v += step;
        n += 1;
    }
}

/// The overview strip: the whole campaign at once (event density, main turns, windows),
/// with the zoomed part framed; drag on it to zoom there. `runs` are the events of each
/// session, whose postures make its windows.
fn overview(s: &mut String, frame: &Frame<'_>, main: &[&TurnRecord], runs: &[Vec<&EventMark>]) {
    let (axis, positions, events) = (&frame.axis, &frame.positions, &frame.events);
    let width = LABEL_W + PLOT_W + 10.0;
    w!(
        s,
        "<div class=\"overview\"><svg id=\"overview\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{OVERVIEW_H}\" viewBox=\"0 0 {width} {OVERVIEW_H}\">"
    );
    w!(
        s,
        "<text class=\"track-label\" x=\"8\" y=\"16\">overview</text><text class=\"hint\" x=\"8\" y=\"32\">drag to zoom</text>"
    );
    w!(
        s,
        "<rect class=\"ov-bg\" x=\"{LABEL_W}\" y=\"2\" width=\"{PLOT_W}\" height=\"{}\"/>",
        OVERVIEW_H - 4.0
    );
    let mut bins = [0_u64; OVERVIEW_BINS];
    let span = (axis.hi - axis.lo) as f64;
    for e in events {
        let v = positions.of(e.line);
        let i = (((v - axis.lo) as f64 / span) * OVERVIEW_BINS as f64) as usize;
        bins[i.min(OVERVIEW_BINS - 1)] += 1;
    }
    let peak = bins.iter().copied().max().unwrap_or(0).max(1) as f64;
    let bin_w = PLOT_W / OVERVIEW_BINS as f64;
    for (i, &n) in bins.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let h = (n as f64 / peak * 18.0).max(1.5);
        w!(
            s,
            "<rect class=\"ov-bin\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\"/>",
            LABEL_W + i as f64 * bin_w,
            22.0 - h,
            bin_w.max(1.0)
        );
    }
    for t in main {
        let (a, b) = frame.turn_span(t);
        let (x, w) = place(axis, a, b, 1.0, false);
        w!(
            s,
            "<rect class=\"ov-turn r-{}\" x=\"{x:.1}\" y=\"25\" width=\"{w:.1}\" height=\"8\"/>",
            t.result.name()
        );
    }
    for events in runs {
        let mut run: [Option<i64>; 2] = [None, None];
        for e in events {
            for (k, on) in [(0, e.blocked), (1, e.compacting)] {
                let v = positions.of(e.line);
                match (run[k], on) {
                    (None, true) => run[k] = Some(v),
                    (Some(a), false) => {
                        ov_window(s, axis, k, a, v);
                        run[k] = None;
                    }
                    _ => {}
                }
            }
        }
        for (k, open) in run.iter().enumerate() {
            if let Some(a) = open {
                ov_window(s, axis, k, *a, axis.hi);
            }
        }
    }
    w!(
        s,
        "<rect id=\"ov-window\" x=\"{LABEL_W}\" y=\"1\" width=\"{PLOT_W}\" height=\"{}\"/></svg></div>\n",
        OVERVIEW_H - 2.0
    );
}

fn ov_window(s: &mut String, axis: &Axis, kind: usize, a: i64, b: i64) {
    let (x, w) = place(axis, a, b, 1.5, false);
    w!(
        s,
        "<rect class=\"ov-{}\" x=\"{x:.1}\" y=\"35\" width=\"{w:.1}\" height=\"6\"/>",
        if kind == 0 { "blocked" } else { "compaction" }
    );
}

/// The page's head; `sessions`: with the styles of the groups of several sessions.
fn head(s: &mut String, source_name: &str, sessions: bool) {
    w!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>hooktrack timeline: {}</title>\n",
        esc(source_name)
    );
    // First, so that any later error is seen: errors and console.error calls are kept
    // and written into the page (#hooktrack-errors), where a headless browser reads them.
    s.push_str(concat!(
        "<script>\n",
        include_str!("html/errors.js"),
        "</script>\n"
    ));
    s.push_str(concat!(
        "<style>\n",
        include_str!("html/page.css"),
        "</style>\n"
    ));
    if sessions {
        s.push_str(concat!(
            "<style>\n",
            include_str!("html/sessions.css"),
            "</style>\n"
        ));
    }
    s.push_str("</head>\n<body>\n");
}

fn provider_text(report: &Report) -> String {
    match &report.provider {
        Some(d) => format!(
            "{} ({}{})",
            d.provider.name(),
            d.reason,
            d.line.map_or_else(String::new, |l| format!(", line {l}"))
        ),
        None => "not identified".to_owned(),
    }
}

/// The header of a store of one session; `ignored`: the transcript entries hooktrack does
/// not read by design (counted here, not drawn).
fn header(s: &mut String, source_name: &str, report: &Report, frame: &Frame<'_>, ignored: usize) {
    w!(s, "<header><h1>hooktrack timeline</h1>\n");
    let notes: usize = frame.events.iter().map(|e| e.notes.len()).sum();
    w!(
        s,
        "<p class=\"facts\"><span class=\"src\">{}</span> · agent {} · {} lines, {} events · {} turns · {} guesses · {} skipped lines · {} transcript entries ignored</p>\n",
        esc(source_name),
        esc(&provider_text(report)),
        report.lines,
        report.events,
        report.turns.len(),
        notes,
        frame.skips.len(),
        ignored
    );
    header_end(s, frame);
}

/// The header of a store of several sessions: the whole store's counts, then a line per
/// session (its label, its whole id, its counts).
fn header_sessions(
    s: &mut String,
    source_name: &str,
    (parts, lines): (&[SessionPart<'_>], u64),
    labels: &[SessionLabel],
    frame: &Frame<'_>,
    ignored: usize,
) {
    w!(s, "<header><h1>hooktrack timeline</h1>\n");
    let notes: usize = frame.events.iter().map(|e| e.notes.len()).sum();
    w!(
        s,
        "<p class=\"facts\"><span class=\"src\">{}</span> · {} sessions · {} lines, {} events · {} turns · {} guesses · {} skipped lines · {} transcript entries ignored</p>\n<ul class=\"sessions\">",
        esc(source_name),
        parts.len(),
        lines,
        parts.iter().map(|p| p.report.events).sum::<u64>(),
        parts.iter().map(|p| p.report.turns.len()).sum::<usize>(),
        notes,
        frame.skips.len(),
        ignored
    );
    for (part, label) in parts.iter().zip(labels) {
        let turns = part.report.turns.len();
        w!(
            s,
            "<li><b>{}</b> · session <code>{}</code> · agent {} · {} lines, {} events · {turns} turn{}</li>",
            esc(&label.who),
            esc(part.session_id.unwrap_or("(none)")),
            esc(&provider_text(part.report)),
            part.report.lines,
            part.report.events,
            if turns == 1 { "" } else { "s" }
        );
    }
    s.push_str("</ul>\n");
    header_end(s, frame);
}

/// The axis note and the zoom controls, closing the header.
fn header_end(s: &mut String, frame: &Frame<'_>) {
    let (time, untimed, events) = (frame.axis.time, frame.untimed, &frame.events);
    let axis_note = if time {
        "Axis: time (UTC), from the rows' own times. Skipped lines sit where the event before them is.".to_owned()
    } else if events.is_empty() {
        "Axis: line order (no events).".to_owned()
    } else {
        format!(
            "Axis: line order, not time — {untimed} of {} events carry no timestamp (bare payload lines), so positions follow the file's line numbers.",
            events.len()
        )
    };
    w!(
        s,
        "<p class=\"axis-note\" id=\"axis-note\">{}</p>\n",
        esc(&axis_note)
    );
    s.push_str(
        "<p class=\"controls\"><button type=\"button\" id=\"zoom-in\">zoom in</button> <button type=\"button\" id=\"zoom-out\">zoom out</button> <button type=\"button\" id=\"zoom-reset\">whole campaign</button> <span class=\"hint\">wheel to zoom, drag to pan, hover any mark for its row</span></p>\n</header>\n<div id=\"tip\" hidden></div>\n",
    );
}

fn legend(s: &mut String) {
    s.push_str("<ul class=\"legend\">");
    for (class, text) in [
        ("r-open", "open"),
        ("r-success", "success"),
        ("r-interrupted", "interrupted"),
        ("r-known_failure", "known failure"),
        ("r-terminal_gap", "terminal gap"),
        ("sw-tool", "tool call"),
        ("sw-blocked", "blocked window"),
        ("sw-compaction", "compaction window"),
        ("sw-note", "guess (note)"),
        ("sw-skip", "skipped line"),
    ] {
        w!(s, "<li><span class=\"sw {class}\"></span>{text}</li>");
    }
    s.push_str("</ul>\n");
}

/// The turn table; `title` is markup (escaped by the caller).
fn turns_table(s: &mut String, title: &str, turns: &[TurnRecord]) {
    w!(
        s,
        "<section><details{}><summary>{title} ({})</summary>\n<table class=\"ledger\"><thead><tr><th>#</th><th>scope</th><th>turn id</th><th>origin</th><th>result</th><th>lines</th><th>started</th><th>ended</th><th>tools</th></tr></thead><tbody>\n",
        // A long ledger starts folded: the picture comes first.
        if turns.len() <= LEDGER_OPEN_UP_TO {
            " open"
        } else {
            ""
        },
        turns.len()
    );
    for t in turns {
        let id = t
            .turn_id
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string);
        w!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><span class=\"sw r-{}\"></span>{}</td><td>{}–{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            t.id,
            esc(&t.scope.to_string()),
            esc(&id),
            esc(&t.origin.to_string()),
            t.result.name(),
            t.result.name(),
            t.first_row,
            t.last_row,
            esc(&time_text(t.started_at)),
            esc(&time_text(t.ended_at)),
            t.tool_calls
        );
    }
    s.push_str("</tbody></table></details></section>\n");
}

/// The guesses of `events`; `title` is markup (escaped by the caller).
fn guesses_table(s: &mut String, title: &str, events: &[&EventMark]) {
    let notes: Vec<(&EventMark, &Note)> = events
        .iter()
        .flat_map(|e| e.notes.iter().map(move |n| (*e, n)))
        .collect();
    w!(
        s,
        "<section><details><summary>{title} ({})</summary><table class=\"ledger\"><thead><tr><th>line</th><th>time</th><th>event</th><th>note</th></tr></thead><tbody>\n",
        notes.len()
    );
    for (e, n) in notes {
        w!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            e.line,
            esc(&time_text(e.at)),
            esc(&e.name),
            esc(&n.to_string())
        );
    }
    s.push_str("</tbody></table></details></section>\n");
}

fn skips_table(s: &mut String, skips: &[&SkipMark]) {
    w!(
        s,
        "<section><details><summary>Skipped lines ({})</summary><table class=\"ledger\"><thead><tr><th>line</th><th>cause</th><th>detail</th></tr></thead><tbody>\n",
        skips.len()
    );
    for sk in skips {
        w!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            sk.line,
            sk.diag,
            esc(&sk.detail)
        );
    }
    s.push_str("</tbody></table></details></section>\n");
}

/// The non-zero diagnostic counters; `title` is markup (escaped by the caller).
fn diagnostics_table(s: &mut String, title: &str, report: &Report) {
    let nonzero: Vec<_> = report.diagnostics.nonzero().collect();
    w!(
        s,
        "<section><details><summary>{title} ({} non-zero)</summary><table class=\"ledger\"><tbody>\n",
        nonzero.len()
    );
    for (diag, n) in nonzero {
        w!(
            s,
            "<tr><td>{}</td><td>{n}</td><td>{}</td></tr>\n",
            diag,
            esc(diag.about())
        );
    }
    s.push_str("</tbody></table></details></section>\n");
}

fn tail(s: &mut String) {
    s.push_str(
        "<footer><output id=\"hooktrack-check\"></output><pre id=\"hooktrack-errors\"></pre></footer>\n",
    );
    s.push_str(concat!(
        "<script>\n",
        include_str!("html/page.js"),
        "</script>\n"
    ));
    s.push_str("</body>\n</html>\n");
}

fn time_text(at: Option<Timestamp>) -> String {
    at.map_or_else(|| "no time".to_owned(), |t| t.to_string())
}

fn suffix(what: &str) -> String {
    if what.is_empty() {
        String::new()
    } else {
        format!(" {what}")
    }
}

fn clip_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Escapes text for HTML text and attribute values. Control and bidi characters other than
/// tab and newline are shown in `safe_text`'s notation (`\u{1b}`).
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            // Shown in the one notation of every output, never interpreted.
            c if crate::safe_text::is_unsafe(c) => {
                out.push_str(&crate::safe_text::visible(c.encode_utf8(&mut [0; 4])));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            esc("<script>\"a\" & 'b'</script>\u{0}\u{9b}\u{202e}"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;\\u{0}\\u{9b}\\u{202e}"
        );
    }
}
