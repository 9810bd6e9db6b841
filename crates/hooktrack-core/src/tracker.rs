//! The one tracker: what replay and live both do with a store's lines, without I/O.
//!
//! A driver reads `events.ndjson`, the transcripts the payloads name and the agent
//! process's end, and hands them to a [`Tracker`]. The tracker owns the rules both ways of
//! reading share:
//!
//! - the session router ([`Sessions`]): one pipeline per `session_id`;
//! - the time merge: a transcript line goes just before the first hook row received later
//!   than its timestamp (a tie goes to the hook row, which was there first); an untimed
//!   transcript line takes the time of the line before it in its file
//!   ([`TranscriptClock`]);
//! - the closed turns and the ledger: every turn a step ended is kept per session (when
//!   asked, [`TrackerConfig::keep_ledger`]) and drained for the caller's updates (when
//!   asked, [`TrackerConfig::report_closed`]).
//!
//! - what to read besides the rows ([`crate::follow`]): after each row it asks its driver,
//!   as [`Request`]s, to follow each session's own transcript or session file (at most
//!   [`MAX_FOLLOWED`](crate::follow::MAX_FOLLOWED) at once), and to watch the pid each
//!   session's rows name; the driver hands back the lines, tagged with their session
//!   ([`Tracker::transcript_read`]), and the ends it saw ([`Tracker::pid_ended`], timed by
//!   [`end_time`](crate::follow::end_time)).
//!
//! Every line fed, hook row or transcript line or the process's end, is handed to the
//! driver's sink as a [`FedLine`], in the order the tracker fed it: the driver writes it in
//! its format (a replay) or reports it (live). Time only comes in with the lines.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::correlate::TurnRecord;
use crate::diagnostics::Diag;
use crate::envelope::{PROCESS_ENDED, Via};
use crate::follow::{Follows, Offset, PidEnd, Request};
use crate::hold::{HOLD_MS, Held, HeldLine};
use crate::pipeline::{Fed, Pipeline};
use crate::provider::ProviderChoice;
use crate::read::ReadLine;
use crate::row::{LineError, Row, parse_line, parse_read_line};
use crate::screen::{Screens, Seen};
use crate::sessions::{SessionPipeline, Sessions};
use crate::time::Timestamp;
use crate::transcript::entry_time;

/// One transcript line read, with its time (see [`TranscriptClock`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptLine {
    /// Its 1-based line number in its file.
    pub number: u64,
    /// The entry's own timestamp, else the one before it in its file.
    pub at: Option<Timestamp>,
    pub bytes: Vec<u8>,
    /// The session whose file it was read from.
    pub owner: Owner,
}

/// The session a transcript line belongs to: a line is never fed to another session's
/// pipeline.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Owner {
    /// The session of the hook row before it (a file no row tied to a session).
    #[default]
    Current,
    /// A session by its index (see [`Tracker::sessions`]): a live driver's.
    Session(usize),
    /// A session by its `session_id`: a replay reads the files before the rows that
    /// make the sessions; a line read before its session's first row goes to the current
    /// one.
    Id(Arc<str>),
}

/// Times one transcript file's lines as they are read, in one or more batches: an untimed
/// line takes the time of the last timed line before it; untimed lines at the start of
/// the file (its header) take the time of the first timed line of their batch.
#[derive(Clone, Copy, Debug, Default)]
pub struct TranscriptClock {
    last: Option<Timestamp>,
}

impl TranscriptClock {
    /// The time of the last timed line read.
    pub fn last(&self) -> Option<Timestamp> {
        self.last
    }

    /// Times a batch of `(line number, bytes)` read from the file, in file order.
    pub fn stamp(
        &mut self,
        batch: impl IntoIterator<Item = (u64, Vec<u8>)>,
    ) -> Vec<TranscriptLine> {
        let mut lines: Vec<TranscriptLine> = batch
            .into_iter()
            .map(|(number, bytes)| {
                if let Some(at) = entry_time(&bytes) {
                    self.last = Some(at);
                }
                TranscriptLine {
                    number,
                    at: self.last,
                    bytes,
                    owner: Owner::Current,
                }
            })
            .collect();
        if let Some(first) = lines.iter().find_map(|t| t.at) {
            for t in lines.iter_mut().take_while(|t| t.at.is_none()) {
                t.at = Some(first);
            }
        }
        lines
    }
}

/// What a tracker keeps and reports.
#[derive(Clone, Copy, Debug)]
pub struct TrackerConfig {
    pub choice: ProviderChoice,
    /// Split the store into one pipeline per `session_id` (else one pipeline for every row).
    pub by_session: bool,
    /// Keep every closed turn per session, for [`Tracker::ledger`].
    pub keep_ledger: bool,
    /// Keep the closed turns for [`Tracker::take_closed`] (a live driver's updates).
    pub report_closed: bool,
    /// Ask for each session's transcript or session file ([`Request::Follow`]); off, only
    /// pids are asked to be watched (`--no-transcripts`).
    pub follow_files: bool,
    /// Ask to read the tmux pane of a session whose agent waits on the user
    /// ([`Request::ReadScreen`], [`crate::screen`]): a live reader's, never a replay's.
    pub read_screens: bool,
    /// Read what each tool call acts on ([`crate::tool_argument`]) for the posture's
    /// one-line summary: a live reader's; a replay shows none and skips the work.
    pub tool_arguments: bool,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        Self {
            choice: ProviderChoice::Auto,
            by_session: true,
            keep_ledger: false,
            report_closed: false,
            follow_files: true,
            read_screens: false,
            tool_arguments: false,
        }
    }
}

/// A process end a driver saw ([`Tracker::pid_ended`]) that no row of the store holds
/// yet: a reader that may write the store appends it as a `process_ended` row
/// (`envelope::process_ended_row`, with `session_id`), so a later replay agrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenEnd {
    /// The session's index (see [`Tracker::sessions`]).
    pub session: usize,
    /// Its `session_id`, if its rows named one.
    pub session_id: Option<String>,
    /// The agent its rows were identified as, if they were.
    pub agent: Option<crate::agent::Agent>,
    pub pid: u32,
    /// When it counts (see [`end_time`](crate::follow::end_time)).
    pub at: Timestamp,
}

/// One line the tracker fed, handed to the driver's sink.
#[derive(Debug)]
pub struct FedLine<'s, 'a> {
    pub fed: &'s Fed<'a>,
    /// The index of the session it went to (see [`Tracker::sessions`]).
    pub session: usize,
    /// That session's pipeline, after the line.
    pub pipeline: &'s Pipeline,
    /// The current session's pipeline after the line ([`Tracker::current`]): the line's
    /// own, unless the line ended its session while the agent was already in another.
    pub current: &'s Pipeline,
    /// A line fed again after a restart (a checkpoint's prefix, a file rewritten in
    /// place): it rebuilds the state, it is not news.
    pub replayed: bool,
}

#[derive(Debug)]
pub struct Tracker {
    config: TrackerConfig,
    sessions: Sessions,
    /// Transcript lines waiting for their place among the hook rows: by time, untimed last,
    /// equal times in the order they came.
    pending: VecDeque<TranscriptLine>,
    /// Per session, the turns it closed (with [`TrackerConfig::keep_ledger`]).
    ledgers: Vec<Vec<TurnRecord>>,
    /// The turns closed since the last [`Tracker::take_closed`], with their session.
    closed: Vec<(usize, TurnRecord)>,
    /// What to read besides the rows: each session's file, each session's pid.
    follows: Follows,
    /// Store lines a live reader keeps back while a row waits for its session's
    /// transcript ([`crate::hold`]).
    held: Held,
    /// Which panes to read while their agents wait on the user ([`crate::screen`]).
    screens: Screens,
    /// The screen reads asked for since the last [`Tracker::take_requests`].
    screen_requests: Vec<Request>,
}

impl Tracker {
    pub fn new(config: TrackerConfig) -> Self {
        let limit = if config.by_session {
            crate::sessions::MAX_SESSIONS
        } else {
            1
        };
        Self {
            config,
            sessions: Sessions::with_limit(config.choice, limit)
                .with_tool_arguments(config.tool_arguments),
            pending: VecDeque::new(),
            ledgers: Vec::new(),
            closed: Vec::new(),
            follows: Follows::default(),
            held: Held::default(),
            screens: Screens::default(),
            screen_requests: Vec::new(),
        }
    }

    /// Adds transcript lines to place among the hook rows fed next (by time: see the
    /// module's rules).
    pub fn queue_transcript(&mut self, lines: impl IntoIterator<Item = TranscriptLine>) {
        self.pending.extend(lines);
        // Stable: equal times keep the order they came in.
        self.pending
            .make_contiguous()
            .sort_by_key(|l| l.at.map_or(i64::MAX, |t| t.as_millis()));
    }

    /// Feeds one hook row (or a line that is not one): first the waiting transcript lines
    /// received before it, then the row, to its session. A `replayed` row places no
    /// transcript line (see [`FedLine::replayed`]).
    pub fn feed_hook<'a, E>(
        &mut self,
        number: u64,
        parsed: Result<&mut Row<'a>, LineError>,
        replayed: bool,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !replayed && !self.pending.is_empty() {
            let hook_at = parsed.as_ref().ok().and_then(|r| r.meta.at);
            while let Some(line) = self
                .pending
                .pop_front_if(|t| matches!((t.at, hook_at), (Some(a), Some(h)) if a < h))
            {
                self.feed_transcript_line(&line, sink)?;
            }
        }
        // What the follow rules need of the row, taken before the pipeline consumes it.
        let seen = parsed.as_ref().ok().map(|r| {
            let ended = r.meta.via == Some(Via::Launcher) && r.event_name == PROCESS_ENDED;
            (r.meta.at, r.agent_pid, ended.then_some(r.payload.pid))
        });
        let fed = self.sessions.feed_row(number, parsed);
        let index = self.sessions.routed();
        if let Some((at, agent_pid, ended)) = seen {
            if let Some(pid) = ended {
                self.follows.pid_end_in_store(index, pid);
            } else {
                let pipeline = &self.sessions.get(index).pipeline;
                let let_go =
                    self.follows
                        .on_row(index, pipeline, at, agent_pid, self.config.follow_files);
                if let Some(other) = let_go {
                    self.sessions
                        .get_mut(other)
                        .pipeline
                        .count(Diag::TranscriptLetGo);
                }
            }
        }
        self.settle(&fed, index, replayed, sink)
    }

    /// Feeds one line of the store as a live reader reads it, at `now`: a row that would
    /// end its session's open turn while that session's transcript is not yet read past
    /// the row's time waits, with every line after it (see [`crate::hold`]), until
    /// [`Tracker::release`] lets it go. A `replayed` line never waits.
    pub fn feed_live<E>(
        &mut self,
        line: ReadLine<'_>,
        replayed: bool,
        now: Timestamp,
        sink: &mut impl for<'x> FnMut(FedLine<'_, 'x>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.held.is_empty() {
            self.held.lines.push_back(HeldLine::own(line));
            return self.release(now, false, sink);
        }
        let bytes = match line {
            ReadLine::Line { bytes, .. } if !replayed => Some(bytes),
            _ => None,
        };
        let (number, parsed) = parse_read_line(line);
        if let (Ok(row), Some(bytes)) = (&parsed, bytes)
            && let Some(waits) = self.must_wait(row, now)
        {
            self.held.lines.push_back(HeldLine::Row {
                number,
                bytes: bytes.to_vec(),
                waits: Some(waits),
            });
            self.count_in(waits.0, Diag::RowHeldForTranscript);
            return Ok(());
        }
        self.feed_parsed(number, parsed, replayed, sink)
    }

    /// Feeds the lines kept back by [`Tracker::feed_live`] whose wait is over at `now`
    /// (their session's file was read past the waiting row's time, or
    /// [`HOLD_MS`] passed); with `all`, every one (the agent is gone
    /// and its files are read to their end).
    pub fn release<E>(
        &mut self,
        now: Timestamp,
        all: bool,
        sink: &mut impl for<'x> FnMut(FedLine<'_, 'x>) -> Result<(), E>,
    ) -> Result<(), E> {
        while let Some(line) = self.held.lines.pop_front() {
            match line {
                HeldLine::Other { number, error } => {
                    self.feed_hook(number, Err(error), false, sink)?
                }
                HeldLine::Row {
                    number,
                    bytes,
                    waits: Some((session, at)),
                } => {
                    let behind = self.follows.behind(session, at);
                    if behind && !all && now.as_millis() < at.as_millis() + HOLD_MS {
                        self.held.lines.push_front(HeldLine::Row {
                            number,
                            bytes,
                            waits: Some((session, at)),
                        });
                        return Ok(());
                    }
                    if behind {
                        self.count_in(session, Diag::RowHoldExpired);
                    }
                    self.feed_parsed(number, parse_line(&bytes), false, sink)?;
                }
                HeldLine::Row {
                    number,
                    bytes,
                    waits: None,
                } => {
                    let parsed = parse_line(&bytes);
                    // A row behind the one that waited may have to wait in its turn.
                    let waits = match &parsed {
                        Ok(row) if !all => self.must_wait(row, now),
                        _ => None,
                    };
                    if let Some(waits) = waits {
                        drop(parsed);
                        self.count_in(waits.0, Diag::RowHeldForTranscript);
                        self.held.lines.push_front(HeldLine::Row {
                            number,
                            bytes,
                            waits: Some(waits),
                        });
                        return Ok(());
                    }
                    self.feed_parsed(number, parsed, false, sink)?;
                }
            }
        }
        Ok(())
    }

    /// Feeds one parsed line of the store.
    fn feed_parsed<E>(
        &mut self,
        number: u64,
        parsed: Result<Row<'_>, LineError>,
        replayed: bool,
        sink: &mut impl for<'x> FnMut(FedLine<'_, 'x>) -> Result<(), E>,
    ) -> Result<(), E> {
        match parsed {
            Ok(mut row) => self.feed_hook(number, Ok(&mut row), replayed, sink),
            Err(e) => self.feed_hook(number, Err(e), replayed, sink),
        }
    }

    /// When the row that waits goes on even if its session's file stays behind (see
    /// [`Tracker::release`]): a live driver reads again by then. `None` when nothing waits.
    pub fn held_until(&self) -> Option<Timestamp> {
        self.held.until()
    }

    /// The session and time a row must wait with (see [`crate::hold`]).
    fn must_wait(&self, row: &Row<'_>, now: Timestamp) -> Option<(usize, Timestamp)> {
        let at = row.meta.at?;
        if now.as_millis() >= at.as_millis().saturating_add(HOLD_MS) {
            return None;
        }
        let session = self.sessions.peek(row)?;
        if session >= self.sessions.len() || !self.follows.behind(session, at) {
            return None;
        }
        self.sessions
            .get(session)
            .pipeline
            .would_supersede(row)
            .then_some((session, at))
    }

    fn count_in(&mut self, session: usize, diag: Diag) {
        if session < self.sessions.len() {
            self.sessions.get_mut(session).pipeline.count(diag);
        }
    }

    /// What the driver is asked to do since the last call (see [`Request`]).
    pub fn take_requests(&mut self) -> Vec<Request> {
        let mut requests = self.follows.take_requests();
        requests.append(&mut self.screen_requests);
        requests
    }

    /// True when requests wait for [`Tracker::take_requests`].
    pub fn has_requests(&self) -> bool {
        self.follows.has_requests() || !self.screen_requests.is_empty()
    }

    /// When the next screen read is due (with [`TrackerConfig::read_screens`]): a live
    /// driver calls [`Tracker::ask_screens`] by then. `None` when no agent waits on a
    /// dialog its pane may show answered.
    pub fn screen_due(&self) -> Option<Timestamp> {
        self.screens.due()
    }

    /// Asks for the screen reads due at `now` ([`Request::ReadScreen`], handed out by
    /// [`Tracker::take_requests`]).
    pub fn ask_screens(&mut self, now: Timestamp) {
        self.screens.ask(now, &mut self.screen_requests);
    }

    /// The text of `session`'s pane as the driver read it at `now`
    /// ([`Request::ReadScreen`]): where the dialog its agent was seen drawing is gone, the
    /// window it was drawn for ends (an event of source `screen`, fed to the sink); see
    /// [`crate::screen`] for the rules.
    pub fn screen_read<'a, E>(
        &mut self,
        session: usize,
        text: &str,
        now: Timestamp,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if session >= self.sessions.len() {
            return Ok(());
        }
        let pipeline = &self.sessions.get(session).pipeline;
        let drawn = pipeline
            .detection()
            .and_then(|d| d.provider.descriptor().screen)
            .is_some_and(|screen| screen.draws_dialog(text));
        match self.screens.read(session, drawn, pipeline.screen_target()) {
            Seen::Nothing => Ok(()),
            Seen::Answered => {
                let step = self.sessions.get_mut(session).pipeline.screen_answered(now);
                self.settle(&Fed::Event(step), session, false, sink)
            }
        }
    }

    /// The driver could not read `session`'s pane: it is not asked for again until a row
    /// names a pane (counted: [`Diag::ScreenUnread`]).
    pub fn screen_failed(&mut self, session: usize) {
        self.screens.failed(session);
        self.count_in(session, Diag::ScreenUnread);
    }

    /// Lines the driver read from the file it follows for `session` (numbered in their
    /// file, in file order); `offset` is where it stands after them. They wait for their
    /// place among the hook rows (see [`Tracker::queue_transcript`]) and go to `session`
    /// alone. Lines of a file the tracker no longer follows for it are dropped.
    pub fn transcript_read(&mut self, session: usize, batch: Vec<(u64, Vec<u8>)>, offset: Offset) {
        if let Some(mut lines) = self.follows.read(session, batch, offset) {
            for line in &mut lines {
                line.owner = Owner::Session(session);
            }
            self.queue_transcript(lines);
        }
    }

    /// The driver could not find or read `session`'s file: it is asked for again at that
    /// session's next row.
    pub fn follow_failed(&mut self, session: usize) {
        self.follows.failed(session);
    }

    /// The driver saw the pid it watches for `session` ([`Request::WatchPid`]) end, at
    /// `now`, as `how` says: an open turn of that session ends `terminal_gap` and presence
    /// becomes absent, at the time [`end_time`](crate::follow::end_time) gives. Returns the
    /// end for the store ([`SeenEnd`]); `None` if that pid is not the one watched, or its
    /// end is known already (seen, or a `process_ended` row of the store).
    pub fn pid_ended<'a, E>(
        &mut self,
        session: usize,
        pid: u32,
        how: PidEnd,
        now: Timestamp,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<Option<SeenEnd>, E> {
        if session >= self.sessions.len() {
            return Ok(None);
        }
        let Some(at) = self.follows.pid_ended(session, pid, how, now) else {
            return Ok(None);
        };
        self.process_ended_in(session, Some(pid), Some(at), sink)?;
        let s = self.sessions.get(session);
        Ok(Some(SeenEnd {
            session,
            session_id: s.session_id.clone(),
            agent: s.pipeline.detection().map(|d| d.provider),
            pid,
            at,
        }))
    }

    /// Feeds every transcript line still waiting (at the end of a replay, or of a live
    /// poll: nothing later is known to come before them).
    /// While a row waits for its session's transcript (see [`Tracker::feed_live`]), only
    /// the lines before its time are fed: the rest go after it.
    pub fn flush_transcript<'a, E>(
        &mut self,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        let before = self.held.waiting().map(|(_, at)| at);
        while let Some(line) = self.pending.pop_front_if(|t| match before {
            None => true,
            Some(row) => t.at.is_some_and(|a| a < row),
        }) {
            self.feed_transcript_line(&line, sink)?;
        }
        Ok(())
    }

    /// The agent process ended at `at`: an open turn of the current session ends
    /// `terminal_gap`, presence becomes absent.
    pub fn process_ended<'a, E>(
        &mut self,
        pid: Option<u32>,
        at: Option<Timestamp>,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        let index = self.sessions.current();
        self.process_ended_in(index, pid, at, sink)
    }

    /// The agent process of session `index` (an index of [`Tracker::sessions`]) ended: a
    /// live reader watching the pid each session's rows name (`agent_pid`) saw it gone.
    /// An index past the sessions is ignored.
    pub fn process_ended_in<'a, E>(
        &mut self,
        index: usize,
        pid: Option<u32>,
        at: Option<Timestamp>,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if index >= self.sessions.len() {
            return Ok(());
        }
        let step = self.sessions.get_mut(index).pipeline.process_ended(pid, at);
        self.settle(&Fed::Event(step), index, false, sink)
    }

    /// A transcript line goes to its own session (see [`Owner`]).
    fn feed_transcript_line<'a, E>(
        &mut self,
        line: &TranscriptLine,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        let index = match &line.owner {
            Owner::Session(index) if *index < self.sessions.len() => *index,
            Owner::Id(id) => self
                .sessions
                .all()
                .iter()
                .position(|s| s.session_id.as_deref() == Some(&**id))
                .unwrap_or_else(|| self.sessions.current()),
            Owner::Session(_) | Owner::Current => self.sessions.current(),
        };
        let fed = self
            .sessions
            .get_mut(index)
            .pipeline
            .feed_transcript(line.number, &line.bytes);
        self.settle(&fed, index, false, sink)
    }

    /// Keeps the turns a line fed to session `session` closed, then hands the line to the
    /// sink.
    fn settle<'a, E>(
        &mut self,
        fed: &Fed<'a>,
        session: usize,
        replayed: bool,
        sink: &mut impl FnMut(FedLine<'_, 'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.config.read_screens
            && let Fed::Event(step) = fed
        {
            let pipeline = &self.sessions.get(session).pipeline;
            let target = step
                .provider
                .descriptor()
                .screen
                .and(pipeline.screen_target());
            self.screens
                .on_line(session, step.tmux_pane.as_deref(), target);
        }
        if let Fed::Event(step) = fed
            && !step.outcome.closed.is_empty()
        {
            if self.config.keep_ledger {
                if self.ledgers.len() <= session {
                    self.ledgers.resize_with(session + 1, Vec::new);
                }
                self.ledgers[session].extend(step.outcome.closed.iter().cloned());
            }
            if self.config.report_closed && !replayed {
                self.closed
                    .extend(step.outcome.closed.iter().map(|t| (session, t.clone())));
            }
        }
        sink(FedLine {
            fed,
            session,
            pipeline: &self.sessions.get(session).pipeline,
            current: &self.sessions.get(self.sessions.current()).pipeline,
            replayed,
        })
    }

    /// The store announced `generation` (a reader saw it in its collector's or launcher's
    /// record): rows of it may move a session to it, fallback rows included.
    pub fn announce_generation(&mut self, generation: u64) {
        self.sessions.announce_generation(generation);
    }

    /// Starts over with fresh pipelines (a checkpoint's prefix or a file rewritten in
    /// place is fed again): what the lines built is built again, not twice.
    pub fn restart(&mut self) {
        self.held = Held::default();
        self.screens = Screens::default();
        self.sessions.restart();
        self.ledgers.clear();
    }

    /// The turns closed since the last call, with the index of their session (with
    /// [`TrackerConfig::report_closed`]; replayed lines' turns are not news).
    pub fn take_closed(&mut self) -> Vec<(usize, TurnRecord)> {
        std::mem::take(&mut self.closed)
    }

    /// Session `index`'s turn ledger: the turns it closed (with
    /// [`TrackerConfig::keep_ledger`]) and the ones still open, in turn order.
    pub fn ledger(&self, index: usize) -> Vec<TurnRecord> {
        let closed = self.ledgers.get(index).cloned().unwrap_or_default();
        self.sessions.get(index).pipeline.ledger(closed)
    }

    /// [`Tracker::ledger`], the closed turns moved out instead of cloned (a replay's end:
    /// a long log's ledger is most of what it keeps).
    pub fn take_ledger(&mut self, index: usize) -> Vec<TurnRecord> {
        let closed = self
            .ledgers
            .get_mut(index)
            .map(std::mem::take)
            .unwrap_or_default();
        self.sessions.get(index).pipeline.ledger(closed)
    }

    /// Every session, in the order of their first rows.
    pub fn sessions(&self) -> &[SessionPipeline] {
        self.sessions.all()
    }

    /// The session the agent is in (see [`Sessions::current`]).
    pub fn current(&self) -> usize {
        self.sessions.current()
    }

    /// The current session's pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.sessions.get(self.sessions.current()).pipeline
    }

    /// The router (its counters: sessions past the limit).
    pub fn router(&self) -> &Sessions {
        &self.sessions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u64, text: &str) -> (u64, Vec<u8>) {
        (number, text.as_bytes().to_vec())
    }

    #[test]
    fn untimed_lines_take_the_time_before_them_and_a_header_the_first() {
        let mut clock = TranscriptClock::default();
        let first = clock.stamp([
            line(1, r#"{"type":"header"}"#),
            line(2, r#"{"timestamp":"2026-01-01T00:00:01Z"}"#),
            line(3, r#"{"type":"x"}"#),
        ]);
        let at: Vec<_> = first.iter().map(|l| l.at.map(|t| t.as_millis())).collect();
        let one = Some(1_767_225_601_000);
        assert_eq!(at, [one, one, one]);
        // The next batch continues from the last timed line.
        let second = clock.stamp([line(4, r#"{"type":"y"}"#)]);
        assert_eq!(second[0].at.map(|t| t.as_millis()), one);
    }

    fn feed_rows(tracker: &mut Tracker, rows: &[&str]) {
        for (i, row) in rows.iter().enumerate() {
            let mut sink = |_: FedLine<'_, '_>| Ok::<(), ()>(());
            let number = i as u64 + 1;
            match crate::row::parse_line(row.as_bytes()) {
                Ok(mut row) => tracker.feed_hook(number, Ok(&mut row), false, &mut sink),
                Err(e) => tracker.feed_hook(number, Err(e), false, &mut sink),
            }
            .unwrap();
        }
    }

    fn claude(session: &str, event: &str, at: u32, pid: u32) -> String {
        format!(
            r#"{{"v":1,"provider":"claude","received_at":"2026-01-01T00:00:{at:02}.000Z","event":"{event}","agent_pid":{pid},"payload":{{"hook_event_name":"{event}","session_id":"{session}","transcript_path":"/t/{session}.jsonl"}}}}"#
        )
    }

    /// The tracker asks for each session's own file and pid once, and a line read from a
    /// session's file goes to that session, whichever session wrote last.
    #[test]
    fn each_session_is_asked_its_own_file_and_pid_and_gets_its_own_lines() {
        use crate::follow::{Offset, Place, Request};
        let mut tracker = Tracker::new(TrackerConfig::default());
        let rows = [
            claude("a", "SessionStart", 1, 10),
            claude("b", "SessionStart", 2, 20),
            claude("a", "Stop", 3, 10),
        ];
        feed_rows(
            &mut tracker,
            &rows.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let follow = |session: usize, name: &str| Request::Follow {
            session,
            place: Place::Named(format!("/t/{name}.jsonl")),
            from: Offset::default(),
        };
        assert_eq!(
            tracker.take_requests(),
            [
                Request::WatchPid {
                    session: 0,
                    pid: 10
                },
                follow(0, "a"),
                Request::WatchPid {
                    session: 1,
                    pid: 20
                },
                follow(1, "b"),
            ]
        );
        // b wrote last; a line of a's file goes to a.
        feed_rows(&mut tracker, &[&claude("b", "Stop", 4, 20)]);
        assert!(tracker.take_requests().is_empty());
        let line = br#"{"type":"user","timestamp":"2026-01-01T00:00:05Z"}"#.to_vec();
        tracker.transcript_read(
            0,
            vec![(1, line)],
            Offset {
                bytes: 52,
                lines: 1,
            },
        );
        let mut sessions = Vec::new();
        tracker
            .flush_transcript(&mut |l| {
                sessions.push(l.session);
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(sessions, [0]);
        // A pid's end counts when it was seen, or at the last row if never seen running.
        let now = Timestamp::from_millis(1_767_225_700_000);
        let mut sink = |_: FedLine<'_, '_>| Ok::<(), ()>(());
        let seen = tracker
            .pid_ended(
                1,
                20,
                crate::follow::PidEnd::GoneAtFirstLook,
                now,
                &mut sink,
            )
            .unwrap();
        assert_eq!(seen.map(|s| s.at.as_millis()), Some(1_767_225_604_000));
        // Once.
        let again = tracker
            .pid_ended(1, 20, crate::follow::PidEnd::SeenRunning, now, &mut sink)
            .unwrap();
        assert_eq!(again, None);
    }

    #[test]
    fn a_transcript_line_goes_before_the_first_row_received_later() {
        let mut tracker = Tracker::new(TrackerConfig::default());
        let mut clock = TranscriptClock::default();
        tracker.queue_transcript(clock.stamp([
            line(1, r#"{"timestamp":"2026-01-01T00:00:02Z","type":"user"}"#),
            line(2, r#"{"timestamp":"2026-01-01T00:00:05Z","type":"user"}"#),
        ]));
        let rows = [
            r#"{"v":1,"provider":"claude","received_at":"2026-01-01T00:00:01.000Z","event":"SessionStart","payload":{"hook_event_name":"SessionStart","session_id":"s"}}"#,
            r#"{"v":1,"provider":"claude","received_at":"2026-01-01T00:00:02.000Z","event":"Stop","payload":{"hook_event_name":"Stop","session_id":"s"}}"#,
            r#"{"v":1,"provider":"claude","received_at":"2026-01-01T00:00:03.000Z","event":"Stop","payload":{"hook_event_name":"Stop","session_id":"s"}}"#,
        ];
        let mut order = Vec::new();
        let mut sink = |l: FedLine<'_, '_>| -> Result<(), ()> {
            let (source, line) = match l.fed {
                Fed::Event(s) => (s.source, s.line),
                Fed::Skipped(s) => (s.source, s.line),
            };
            order.push(format!("{}:{line}", source.name()));
            Ok(())
        };
        for (i, row) in rows.iter().enumerate() {
            let parsed = crate::row::parse_line(row.as_bytes());
            match parsed {
                Ok(mut row) => tracker.feed_hook(i as u64 + 1, Ok(&mut row), false, &mut sink),
                Err(e) => tracker.feed_hook(i as u64 + 1, Err(e), false, &mut sink),
            }
            .unwrap();
        }
        tracker.flush_transcript(&mut sink).unwrap();
        // The tie at 2 s goes to the hook row; the line at 5 s waits for the end.
        assert_eq!(
            order,
            ["hook:1", "hook:2", "transcript:1", "hook:3", "transcript:2"]
        );
    }
}
