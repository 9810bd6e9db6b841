//! One tracked session: the tailer, the pipeline and the channel state machine behind a
//! handle a supervisor polls.
//!
//! ```no_run
//! use hooktrack_live::session::{Session, SessionConfig};
//! use hooktrack_core::store::StorePaths;
//! use hooktrack_core::time::Timestamp;
//!
//! let paths = hooktrack_live::locate::locate_store("/tmp/session-1".as_ref())?;
//! let mut session = Session::open(paths, SessionConfig::default());
//! let now = Timestamp::from_millis(1_790_000_000_000);
//! session.prompt_sent(now);
//! if let Some(update) = session.poll(now) {
//!     println!("{:?} ({})", update.posture.turn.phase, update.channel.detail);
//! }
//! # Ok::<(), hooktrack_live::locate::LocateError>(())
//! ```
//!
//! Time is always an argument: the session reads files, never a clock. A hub
//! ([`crate::hub`]) drives many sessions from one watcher and reads the clock for them.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Serialize, Serializer};

use crate::process::ProcessWatch;
use crate::tail::{self, Checkpoint, Prefix, Tailer};
use hooktrack_core::agent::Agent;
use hooktrack_core::channel::{Channel, ChannelConfig, ChannelStatus};
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Diagnostics;
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::{FieldChange, Posture};
use hooktrack_core::provider::ProviderChoice;
use hooktrack_core::read::ReadLine;
use hooktrack_core::row::parse_read_line;
use hooktrack_core::sessions::Sessions;
use hooktrack_core::source::Source;
use hooktrack_core::store::{self, StorePaths};
use hooktrack_core::time::Timestamp;

#[derive(Clone, Debug, Default)]
pub struct SessionConfig {
    pub channel: ChannelConfig,
    pub provider: ProviderChoice,
    /// Persist the tailer's position here after every poll that read lines, and resume
    /// from it at open. Keep it outside the store directory (the store is the producer's).
    pub checkpoint: Option<PathBuf>,
    /// Report every line read in [`Update::lines`] (a posture per line: for a view of one
    /// session such as `hooktrack session`, not for a hub of hundreds).
    pub report_lines: bool,
    /// Do not follow the transcript the payloads name (the hooks alone).
    pub no_transcripts: bool,
    /// Follow only what is appended after [`Session::open`]: the rows already in the
    /// store (an earlier generation's, in a reused session root) are neither fed to the
    /// pipeline nor reported, so the ledger and the event count are this run's alone. A
    /// loaded checkpoint wins (a restarted follower resumes where it was).
    pub skip_existing: bool,
}

/// One line read, with what it changed (see [`SessionConfig::report_lines`]).
#[derive(Clone, Debug, Serialize)]
pub struct LineReport {
    pub line: u64,
    /// Where the line came from: `events.ndjson` (hook), the transcript, the process.
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// The provider's event name; `None` for a skipped line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Why the line was skipped: the diagnostic's name and the detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// What the line changed in the posture (channel state applied).
    pub changes: Vec<FieldChange>,
    /// The posture after the line, channel state applied.
    pub posture: Posture,
}

/// What changed since the last update. Sent when the posture or the channel status
/// changed, a turn ended, or there is something to log.
#[derive(Clone, Debug, Serialize)]
pub struct Update {
    /// The session's time of this update (the `now` given to [`Session::poll`]).
    pub at: Timestamp,
    /// The posture after the last whole line read, with the channel state applied (hook
    /// facts withdrawn when the channel is not active).
    pub posture: Posture,
    pub channel: ChannelStatus,
    /// Every turn that ended since the last update, in order: a coalesced update never
    /// loses a terminal result.
    pub closed: Vec<TurnRecord>,
    pub notices: Vec<SessionNotice>,
    /// Events read so far (lines that became events).
    pub events: u64,
    /// When the tracker saw the last event (the `now` of that poll).
    pub last_event_at: Option<Timestamp>,
    /// Every line read since the last update, when [`SessionConfig::report_lines`] is on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineReport>,
    /// The agent the rows were recognised as, once they say (for
    /// [`merge`](hooktrack_core::merge::merge)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Agent>,
    /// The tmux pane the last row that named one was emitted from (`$TMUX_PANE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    /// When the open main turn started: its first row's time, else the `now` of the poll
    /// that first saw it. `None` when no main turn is open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_started_at: Option<Timestamp>,
    /// A store of several `session_id`s (an agent started by hand into it, a `/clear`):
    /// each session's own state, in the order of their first rows. The fields above are
    /// then the current session's (the one the last row went to), `closed` and `events`
    /// every session's. Empty for a store of one session.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<SessionState>,
}

/// One session of a store of several (see [`Update::sessions`]).
#[derive(Clone, Debug, Serialize)]
pub struct SessionState {
    pub session_id: Option<String>,
    /// The session's posture, the store's channel state applied.
    pub posture: Posture,
    /// The session's turns that ended since the last update.
    pub closed: Vec<TurnRecord>,
    pub events: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Agent>,
    /// The session the last row went to (whose state the update's own fields show).
    pub current: bool,
}

impl Update {
    /// One update per session of the store: this one for a store of one session; else,
    /// per session, this update with that session's posture, closed turns, events and
    /// agent (notices and lines go with the current session's).
    pub fn per_session(&self) -> Vec<(Option<&str>, Update)> {
        if self.sessions.is_empty() {
            return vec![(None, self.clone())];
        }
        self.sessions
            .iter()
            .map(|s| {
                let mine = s.current;
                let update = Update {
                    posture: s.posture.clone(),
                    closed: s.closed.clone(),
                    events: s.events,
                    agent: s.agent,
                    notices: if mine {
                        self.notices.clone()
                    } else {
                        Vec::new()
                    },
                    lines: if mine { self.lines.clone() } else { Vec::new() },
                    turn_started_at: if mine { self.turn_started_at } else { None },
                    sessions: Vec::new(),
                    ..self.clone()
                };
                (s.session_id.as_deref(), update)
            })
            .collect()
    }
}

/// Something to log; never an error of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionNotice {
    Tail(tail::Notice),
    /// A metadata record could not be used; the previous one stays in force.
    BadRecord {
        detail: String,
    },
    /// The checkpoint could not be loaded: everything is read from 0 instead.
    CheckpointNotLoaded {
        detail: String,
    },
    CheckpointNotSaved {
        detail: String,
    },
    /// [`SessionConfig::skip_existing`] could not read past the rows already there: they
    /// are read (and reported) as new.
    ExistingNotSkipped {
        detail: String,
    },
    /// The directory could not be watched: changes are seen at the periodic re-check only.
    WatchFailed {
        detail: String,
    },
    /// The agent process handed to [`Session::watch_process`] ended.
    ProcessEnded {
        pid: u32,
        mechanism: &'static str,
    },
    /// Following the transcript the payloads name from here on.
    TranscriptFollowed {
        path: String,
    },
}

impl fmt::Display for SessionNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionNotice::Tail(n) => n.fmt(f),
            SessionNotice::BadRecord { detail } => write!(f, "ignored a metadata record: {detail}"),
            SessionNotice::CheckpointNotLoaded { detail } => {
                write!(
                    f,
                    "checkpoint not loaded ({detail}): reading from the start"
                )
            }
            SessionNotice::CheckpointNotSaved { detail } => {
                write!(f, "checkpoint not saved: {detail}")
            }
            SessionNotice::ExistingNotSkipped { detail } => {
                write!(
                    f,
                    "earlier rows not skipped ({detail}): reading them as new"
                )
            }
            SessionNotice::WatchFailed { detail } => {
                write!(f, "not watched, re-checked periodically: {detail}")
            }
            SessionNotice::ProcessEnded { pid, mechanism } => {
                write!(f, "the agent process {pid} ended (seen by {mechanism})")
            }
            SessionNotice::TranscriptFollowed { path } => {
                write!(f, "following the transcript {path}")
            }
        }
    }
}

impl Serialize for SessionNotice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A metadata file's identity and version, to re-read it only when it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    id: (u64, u64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = fs::metadata(path).ok()?;
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let id = (0, 0);
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            id,
        })
    }
}

#[derive(Debug)]
pub struct Session {
    paths: StorePaths,
    tailer: Tailer,
    /// One pipeline per `session_id` of the store; transcript and process events go to
    /// the current one.
    sessions: Sessions,
    channel: Channel,
    checkpoint_path: Option<PathBuf>,
    saved: Option<Checkpoint>,
    collector_stamp: Option<Stamp>,
    channel_stamp: Option<Stamp>,
    last: Option<(Posture, ChannelStatus)>,
    /// Each session's posture at the last update, for a store of several.
    last_sessions: Vec<Posture>,
    pending: Vec<SessionNotice>,
    /// The last line fed was a replayed one.
    replaying: bool,
    more: bool,
    /// The store directory as the last full poll found it, and the cheap re-checks since.
    dir_stamp: Option<Stamp>,
    quiet_rechecks: u32,
    healthy: bool,
    /// With [`SessionConfig::report_lines`]: the posture after the last line reported.
    line_posture: Option<Posture>,
    lines: Vec<LineReport>,
    tmux_pane: Option<String>,
    /// The open main turn's ledger id and when the tracker first saw it.
    turn_seen: Option<(u64, Timestamp)>,
    /// The transcript the payloads name, followed by offset like `events.ndjson`.
    transcript: Option<(String, Tailer)>,
    /// The time of the last timed transcript entry read (for the untimed ones after it).
    transcript_at: Option<Timestamp>,
    follow_transcripts: bool,
    process: Option<ProcessWatch>,
}

/// The longest `tmux_pane` value kept from a row (pane ids are `%` and a few digits).
const MAX_PANE_LEN: usize = 64;

/// Every this many quiet re-checks, [`Session::recheck`] does a full poll anyway: it is
/// the only way to see a metadata record rewritten in place while its notification was
/// lost (5 s with the hub's default 500 ms re-check).
pub const FULL_POLL_EVERY: u32 = 10;

impl Session {
    /// Opens a session on a store. Nothing is read until the first poll, except the
    /// checkpoint (and, with [`SessionConfig::skip_existing`], the rows already there): an unreadable one is reported in the first update and the file is read
    /// from the start (nothing lost; turns before the restart may be reported again).
    pub fn open(paths: StorePaths, config: SessionConfig) -> Self {
        let mut pending = Vec::new();
        let checkpoint = match &config.checkpoint {
            Some(path) => match Checkpoint::load(path) {
                Ok(cp) => cp,
                Err(e) => {
                    pending.push(SessionNotice::CheckpointNotLoaded {
                        detail: error_chain(&e),
                    });
                    None
                }
            },
            None => None,
        };
        // The lines before the checkpoint are replayed into the pipeline, so the posture
        // after a restart is the posture before it; only the lines after it are reported.
        let mut tailer = match checkpoint {
            Some(cp) => Tailer::resume(&paths.events, cp, Prefix::Replay),
            None => Tailer::new(&paths.events),
        };
        if config.skip_existing && checkpoint.is_none() {
            match tailer.skip_existing() {
                Ok(skipped) => pending.extend(skipped.notices.into_iter().map(SessionNotice::Tail)),
                Err(e) => pending.push(SessionNotice::ExistingNotSkipped {
                    detail: error_chain(&e),
                }),
            }
        }
        Self {
            tailer,
            sessions: Sessions::new(config.provider),
            channel: Channel::new(config.channel),
            checkpoint_path: config.checkpoint,
            saved: checkpoint,
            collector_stamp: None,
            channel_stamp: None,
            last: None,
            last_sessions: Vec::new(),
            pending,
            replaying: false,
            more: false,
            dir_stamp: None,
            quiet_rechecks: 0,
            healthy: false,
            line_posture: config.report_lines.then(Posture::default),
            lines: Vec::new(),
            tmux_pane: None,
            turn_seen: None,
            transcript: None,
            transcript_at: None,
            follow_transcripts: !config.no_transcripts,
            process: None,
            paths,
        }
    }

    pub fn paths(&self) -> &StorePaths {
        &self.paths
    }

    /// The supervisor sent a prompt to the agent.
    pub fn prompt_sent(&mut self, now: Timestamp) {
        self.channel.on_prompt_sent(now);
    }

    /// A prompt was sent longer than the startup grace ago and no event came.
    pub fn startup_silent(&self, now: Timestamp) -> bool {
        self.channel.startup_silent(now)
    }

    /// The supervisor saw the agent's terminal change.
    pub fn terminal_changed(&mut self, now: Timestamp) {
        self.channel.on_terminal_changed(now);
    }

    /// Watches the agent's process (a supervisor that started the agent knows its pid;
    /// tmux gives `#{pane_pid}`): when it ends, an open turn ends `terminal_gap` and
    /// presence becomes absent at the next poll, with a [`SessionNotice::ProcessEnded`].
    pub fn watch_process(&mut self, pid: u32) {
        self.process = Some(ProcessWatch::new(pid));
    }

    /// The transcript being followed (the one the payloads name, once a row named it and
    /// transcripts are on): a hub watches its directory.
    pub fn transcript_path(&self) -> Option<&Path> {
        self.transcript.as_ref().map(|(p, _)| Path::new(p.as_str()))
    }

    /// Adds a notice to the next update.
    pub fn notice(&mut self, notice: SessionNotice) {
        self.pending.push(notice);
    }

    /// True when the last poll stopped at its read budget: poll again soon.
    pub fn more(&self) -> bool {
        self.more
    }

    /// Reads what is new and re-judges the channel at `now`. `Some` when something
    /// changed (always on the first poll).
    pub fn poll(&mut self, now: Timestamp) -> Option<Update> {
        // Taken first: whatever changes in the directory from here on shows next time.
        self.dir_stamp = Stamp::of(&self.paths.dir);
        self.quiet_rechecks = 0;
        let mut notices = std::mem::take(&mut self.pending);
        self.refresh_records(&mut notices);
        let mut closed = Vec::new();
        // The transcript's new lines are read first and fed between this poll's hook rows
        // by time, the rule of a replay (docs/posture.md): a line goes just before the
        // first row received later than its timestamp.
        self.sync_transcript(&mut notices);
        let mut ahead = self.read_transcript().into_iter().peekable();
        let mut read_lines = ahead.peek().is_some();
        let (sessions, channel, pane) =
            (&mut self.sessions, &mut self.channel, &mut self.tmux_pane);
        let (line_posture, lines) = (&mut self.line_posture, &mut self.lines);
        let replaying = &mut self.replaying;
        let polled = self.tailer.poll(&mut |tl| {
            // A replayed prefix (a checkpoint's, or a file rewritten in place) is fed to
            // pipelines that start over, so what they build is not built twice.
            if tl.replay && !*replaying {
                sessions.restart();
            }
            *replaying = tl.replay;
            // Parsed once: the row's time places pending transcript lines, then the row
            // goes to its session.
            let (number, parsed) = parse_read_line(tl.line);
            if ahead.peek().is_some() && !tl.replay {
                let hook_at = parsed.as_ref().ok().and_then(|r| r.meta.at);
                while let Some(t) =
                    ahead.next_if(|t| matches!((t.at, hook_at), (Some(a), Some(h)) if a < h))
                {
                    let current = sessions.current();
                    feed_transcript_line(
                        &mut sessions.get_mut(current).pipeline,
                        channel,
                        now,
                        (line_posture, lines),
                        (&mut closed, current),
                        &t,
                    );
                }
            }
            let fed = match parsed {
                Ok(mut row) => sessions.feed_row(number, Ok(&mut row)),
                Err(e) => sessions.feed_row(number, Err(e)),
            };
            let index = sessions.current();
            let pipeline = &sessions.get(index).pipeline;
            let report = match &fed {
                Fed::Event(step) => {
                    channel.on_event(now, step.generation);
                    if let Some(p) = step.tmux_pane.as_ref().filter(|p| p.len() <= MAX_PANE_LEN) {
                        *pane = Some(p.clone());
                    }
                    (step.line, step.at, Some(step.name.to_string()), None)
                }
                Fed::Skipped(skip) => (
                    skip.line,
                    None,
                    None,
                    Some(format!("{}: {}", skip.diag.name(), skip.detail)),
                ),
            };
            if let (Some(before), false) = (line_posture.as_mut(), tl.replay) {
                let posture = pipeline
                    .hook_posture()
                    .with_channel(channel.status(now).state);
                let (line, at, event, skipped) = report;
                lines.push(LineReport {
                    line,
                    source: Source::Hook,
                    at,
                    event,
                    skipped,
                    changes: before.changes_to(&posture),
                    posture: posture.clone(),
                });
                *before = posture;
            }
            if let (Fed::Event(step), false) = (fed, tl.replay) {
                closed.extend(step.outcome.closed.into_iter().map(|t| (index, t)));
            }
        });
        for t in ahead {
            self.feed_transcript(now, &mut closed, &t);
        }
        // The rows may have named a transcript not followed yet: read it now, after them.
        if self.sync_transcript(&mut notices) {
            for t in self.read_transcript() {
                read_lines = true;
                self.feed_transcript(now, &mut closed, &t);
            }
        }
        read_lines |= self.poll_process(now, &mut closed, &mut notices);
        match polled {
            Ok(progress) => {
                self.channel.on_read_ok();
                self.healthy = true;
                self.more = progress.more;
                read_lines |= progress.lines > 0;
                notices.extend(progress.notices.into_iter().map(SessionNotice::Tail));
            }
            Err(e) => {
                self.more = false;
                self.healthy = false;
                self.channel.on_read_failed(now, error_chain(&e));
            }
        }
        self.save_checkpoint(&mut notices);
        self.report(now, read_lines, closed, notices)
    }

    /// The periodic re-check, cheaper than [`Session::poll`] on an idle store: when the
    /// store directory is unchanged (nothing created, removed or renamed in it) and the
    /// open file holds nothing new, only the channel is re-judged at `now`. Anything else,
    /// and every [`FULL_POLL_EVERY`]th time, is a full poll.
    pub fn recheck(&mut self, now: Timestamp) -> Option<Update> {
        let quiet = self.healthy
            && self.pending.is_empty()
            && !self.more
            && self.quiet_rechecks + 1 < FULL_POLL_EVERY
            && self.dir_stamp.is_some()
            && Stamp::of(&self.paths.dir) == self.dir_stamp
            && self.tailer.caught_up()
            && self.transcript.as_ref().is_none_or(|(_, t)| t.caught_up())
            && self.process.as_mut().is_none_or(|p| !p.has_ended());
        if !quiet {
            return self.poll(now);
        }
        self.quiet_rechecks += 1;
        self.report(now, false, Vec::new(), Vec::new())
    }

    /// The update after a poll, if anything changed.
    fn report(
        &mut self,
        now: Timestamp,
        read_lines: bool,
        closed: Vec<(usize, TurnRecord)>,
        notices: Vec<SessionNotice>,
    ) -> Option<Update> {
        let channel = self.channel.status(now);
        // The posture moves only with lines; an idle poll ends here, cheaply.
        let quiet = !read_lines && notices.is_empty();
        if quiet && self.last.as_ref().is_some_and(|(_, c)| *c == channel) {
            return None;
        }
        let posture = self.pipeline().hook_posture().with_channel(channel.state);
        let postures: Vec<Posture> = match self.sessions.len() {
            1 => Vec::new(),
            _ => self
                .sessions
                .all()
                .iter()
                .map(|s| s.pipeline.hook_posture().with_channel(channel.state))
                .collect(),
        };
        let unchanged = self
            .last
            .as_ref()
            .is_some_and(|(p, c)| *p == posture && *c == channel)
            && postures == self.last_sessions;
        if unchanged && closed.is_empty() && notices.is_empty() && self.lines.is_empty() {
            return None;
        }
        self.last = Some((posture.clone(), channel.clone()));
        let turn_started_at = self.turn_started_at(now);
        let sessions = postures
            .iter()
            .zip(self.sessions.all())
            .enumerate()
            .map(|(i, (posture, s))| SessionState {
                session_id: s.session_id.clone(),
                posture: posture.clone(),
                closed: closed
                    .iter()
                    .filter(|(index, _)| *index == i)
                    .map(|(_, t)| t.clone())
                    .collect(),
                events: s.pipeline.events(),
                agent: s.pipeline.detection().map(|d| d.provider),
                current: i == self.sessions.current(),
            })
            .collect();
        self.last_sessions = postures;
        Some(Update {
            at: now,
            posture,
            channel,
            closed: closed.into_iter().map(|(_, t)| t).collect(),
            notices,
            events: self
                .sessions
                .all()
                .iter()
                .map(|s| s.pipeline.events())
                .sum(),
            last_event_at: self.channel.last_event(),
            lines: std::mem::take(&mut self.lines),
            agent: self.pipeline().detection().map(|d| d.provider),
            tmux_pane: self.tmux_pane.clone(),
            turn_started_at,
            sessions,
        })
    }

    /// The current session's pipeline (the one the last row went to).
    fn pipeline(&self) -> &Pipeline {
        &self.sessions.get(self.sessions.current()).pipeline
    }

    fn pipeline_mut(&mut self) -> &mut Pipeline {
        let current = self.sessions.current();
        &mut self.sessions.get_mut(current).pipeline
    }

    /// When the open main turn started (see [`Update::turn_started_at`]).
    fn turn_started_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        let open = self.pipeline().open_turns();
        let Some(main) = open.iter().find(|t| t.is_main()) else {
            self.turn_seen = None;
            return None;
        };
        let seen = match self.turn_seen {
            Some((id, at)) if id == main.id => at,
            _ => {
                self.turn_seen = Some((main.id, now));
                now
            }
        };
        Some(main.started_at.unwrap_or(seen))
    }

    /// The posture at `now`, without reading anything.
    pub fn posture(&self, now: Timestamp) -> Posture {
        self.pipeline()
            .hook_posture()
            .with_channel(self.channel.status(now).state)
    }

    pub fn channel(&self, now: Timestamp) -> ChannelStatus {
        self.channel.status(now)
    }

    /// Events read from `events.ndjson` alone (not the transcript or the process).
    pub fn hook_events(&self) -> u64 {
        self.sessions
            .all()
            .iter()
            .map(|s| s.pipeline.hook_events())
            .sum()
    }

    /// The posture as the hooks alone see it, no channel state applied.
    pub fn hook_posture(&self) -> Posture {
        self.pipeline().hook_posture()
    }

    /// The turn ledger: `closed` (the turns the updates reported) with the turns still
    /// open, in turn order.
    pub fn ledger(&self, closed: Vec<TurnRecord>) -> Vec<TurnRecord> {
        self.pipeline().ledger(closed)
    }

    pub fn diagnostics(&self) -> &Diagnostics {
        self.pipeline().diagnostics()
    }

    /// What set each posture fact (source, event, line).
    pub fn provenance(&self) -> &hooktrack_core::provenance::Provenance {
        self.pipeline().provenance()
    }

    /// Follows the transcript the payloads name: starts a tailer when the path changes
    /// (a `/clear` names a new one). True if it started one now.
    fn sync_transcript(&mut self, notices: &mut Vec<SessionNotice>) -> bool {
        if !self.follow_transcripts {
            return false;
        }
        let Some(path) = self.pipeline().transcript_path() else {
            return false;
        };
        if self.transcript.as_ref().is_some_and(|(p, _)| p == path) {
            return false;
        }
        notices.push(SessionNotice::TranscriptFollowed {
            path: path.to_owned(),
        });
        self.transcript = Some((path.to_owned(), Tailer::new(Path::new(path))));
        self.transcript_at = None;
        true
    }

    /// The followed transcript's new whole lines, each with its time (an untimed entry
    /// takes the time of the entry before it, leading ones that of the first timed
    /// one, as in a replay).
    fn read_transcript(&mut self) -> Vec<TranscriptLine> {
        let Some((_, tailer)) = &mut self.transcript else {
            return Vec::new();
        };
        let last = &mut self.transcript_at;
        let mut read = Vec::new();
        // A transcript that cannot be read leaves the hooks alone in charge: no error.
        let _ = tailer.poll(&mut |tl| {
            let ReadLine::Line { number, bytes } = tl.line else {
                return;
            };
            if let Some(at) = hooktrack_core::transcript::entry_time(bytes) {
                *last = Some(at);
            }
            read.push(TranscriptLine {
                number,
                at: *last,
                bytes: bytes.to_vec(),
            });
        });
        // Leading untimed lines (a file's header) ride with the first timed one.
        if let Some(first) = read.iter().find_map(|t| t.at) {
            for t in read.iter_mut().take_while(|t| t.at.is_none()) {
                t.at = Some(first);
            }
        }
        read
    }

    fn feed_transcript(
        &mut self,
        now: Timestamp,
        closed: &mut Vec<(usize, TurnRecord)>,
        t: &TranscriptLine,
    ) {
        let current = self.sessions.current();
        feed_transcript_line(
            &mut self.sessions.get_mut(current).pipeline,
            &self.channel,
            now,
            (&mut self.line_posture, &mut self.lines),
            (closed, current),
            t,
        );
    }

    /// Settles the end of the watched process, once. True if it ended now.
    fn poll_process(
        &mut self,
        now: Timestamp,
        closed: &mut Vec<(usize, TurnRecord)>,
        notices: &mut Vec<SessionNotice>,
    ) -> bool {
        let Some(watch) = self.process.as_mut() else {
            return false;
        };
        if !watch.has_ended() {
            return false;
        }
        let (pid, mechanism) = (watch.pid(), watch.mechanism().name());
        self.process = None;
        let step = self.pipeline_mut().process_ended(Some(pid), Some(now));
        notices.push(SessionNotice::ProcessEnded { pid, mechanism });
        let posture = self
            .pipeline()
            .hook_posture()
            .with_channel(self.channel.status(now).state);
        if let Some(before) = self.line_posture.as_mut() {
            self.lines.push(LineReport {
                line: 0,
                source: Source::Process,
                at: Some(now),
                event: Some(step.name.to_string()),
                skipped: None,
                changes: before.changes_to(&posture),
                posture: posture.clone(),
            });
            *before = posture;
        }
        let current = self.sessions.current();
        closed.extend(step.outcome.closed.into_iter().map(|t| (current, t)));
        true
    }

    /// Where the tailer stands (what a checkpoint would record).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        self.tailer.checkpoint()
    }

    fn save_checkpoint(&mut self, notices: &mut Vec<SessionNotice>) {
        let Some(path) = &self.checkpoint_path else {
            return;
        };
        let Some(cp) = self.tailer.checkpoint() else {
            return;
        };
        if self.saved == Some(cp) {
            return;
        }
        match cp.save(path) {
            Ok(()) => self.saved = Some(cp),
            Err(e) => notices.push(SessionNotice::CheckpointNotSaved {
                detail: error_chain(&e),
            }),
        }
    }

    /// Re-reads a metadata record when its file changed. A missing file leaves the last
    /// record in force (a cleanup that deletes it does not undo a `stopped`).
    fn refresh_records(&mut self, notices: &mut Vec<SessionNotice>) {
        if let Some(bytes) = changed(&self.paths.collector, &mut self.collector_stamp, notices) {
            match store::parse_collector(&bytes) {
                Ok(record) => self.channel.on_collector(record),
                Err(e) => notices.push(SessionNotice::BadRecord {
                    detail: error_chain(&e),
                }),
            }
        }
        if let Some(bytes) = changed(&self.paths.channel, &mut self.channel_stamp, notices) {
            match store::parse_channel(&bytes) {
                Ok(record) => self.channel.on_record(record),
                Err(e) => notices.push(SessionNotice::BadRecord {
                    detail: error_chain(&e),
                }),
            }
        }
    }
}

/// A transcript line read, waiting for its place among the hook rows.
#[derive(Debug)]
struct TranscriptLine {
    number: u64,
    at: Option<Timestamp>,
    bytes: Vec<u8>,
}

/// Feeds one transcript line; a marker's report and the turns it closed are kept.
fn feed_transcript_line(
    pipeline: &mut Pipeline,
    channel: &Channel,
    now: Timestamp,
    (line_posture, lines): (&mut Option<Posture>, &mut Vec<LineReport>),
    (closed, session): (&mut Vec<(usize, TurnRecord)>, usize),
    t: &TranscriptLine,
) {
    let Fed::Event(step) = pipeline.feed_transcript(t.number, &t.bytes) else {
        return;
    };
    if let Some(before) = line_posture.as_mut() {
        let posture = pipeline
            .hook_posture()
            .with_channel(channel.status(now).state);
        lines.push(LineReport {
            line: step.line,
            source: Source::Transcript,
            at: step.at,
            event: Some(step.name.to_string()),
            skipped: None,
            changes: before.changes_to(&posture),
            posture: posture.clone(),
        });
        *before = posture;
    }
    closed.extend(step.outcome.closed.into_iter().map(|t| (session, t)));
}

/// The file's bytes if it changed since `stamp` (which is updated).
fn changed(
    path: &Path,
    stamp: &mut Option<Stamp>,
    notices: &mut Vec<SessionNotice>,
) -> Option<Vec<u8>> {
    let now = Stamp::of(path);
    if now == *stamp {
        return None;
    }
    *stamp = now;
    now?;
    match fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            notices.push(SessionNotice::BadRecord {
                detail: format!("cannot read {}: {e}", path.display()),
            });
            None
        }
    }
}
