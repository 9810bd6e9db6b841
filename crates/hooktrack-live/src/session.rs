//! One tracked session: the tailer, the pipeline and the channel state machine behind a
//! handle a supervisor polls.
//!
//! ```no_run
//! use hooktrack_live::session::{Session, SessionConfig};
//! use hooktrack_core::store::StorePaths;
//! use hooktrack_core::time::Timestamp;
//!
//! let paths = StorePaths::locate("/tmp/session-1".as_ref())?;
//! let mut session = Session::open(paths, SessionConfig::default());
//! let now = Timestamp::from_millis(1_790_000_000_000);
//! session.prompt_sent(now);
//! if let Some(update) = session.poll(now) {
//!     println!("{:?} ({})", update.posture.turn.phase, update.channel.detail);
//! }
//! # Ok::<(), hooktrack_core::store::LocateError>(())
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

use crate::tail::{self, Checkpoint, Prefix, Tailer};
use hooktrack_core::channel::{Channel, ChannelConfig, ChannelStatus};
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::Diagnostics;
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::pipeline::{Fed, Pipeline};
use hooktrack_core::posture::{FieldChange, Posture};
use hooktrack_core::provider::ProviderChoice;
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
}

/// One line read, with what it changed (see [`SessionConfig::report_lines`]).
#[derive(Clone, Debug, Serialize)]
pub struct LineReport {
    pub line: u64,
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
    /// The directory could not be watched: changes are seen at the periodic re-check only.
    WatchFailed {
        detail: String,
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
            SessionNotice::WatchFailed { detail } => {
                write!(f, "not watched, re-checked periodically: {detail}")
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
    pipeline: Pipeline,
    channel: Channel,
    checkpoint_path: Option<PathBuf>,
    saved: Option<Checkpoint>,
    collector_stamp: Option<Stamp>,
    channel_stamp: Option<Stamp>,
    last: Option<(Posture, ChannelStatus)>,
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
}

/// Every this many quiet re-checks, [`Session::recheck`] does a full poll anyway: it is
/// the only way to see a metadata record rewritten in place while its notification was
/// lost (5 s with the hub's default 500 ms re-check).
pub const FULL_POLL_EVERY: u32 = 10;

impl Session {
    /// Opens a session on a store. Nothing is read until the first poll, except the
    /// checkpoint: an unreadable one is reported in the first update and the file is read
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
        let tailer = match checkpoint {
            Some(cp) => Tailer::resume(&paths.events, cp, Prefix::Replay),
            None => Tailer::new(&paths.events),
        };
        Self {
            tailer,
            pipeline: Pipeline::new(config.provider),
            channel: Channel::new(config.channel),
            checkpoint_path: config.checkpoint,
            saved: checkpoint,
            collector_stamp: None,
            channel_stamp: None,
            last: None,
            pending,
            replaying: false,
            more: false,
            dir_stamp: None,
            quiet_rechecks: 0,
            healthy: false,
            line_posture: config.report_lines.then(Posture::default),
            lines: Vec::new(),
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

    /// The supervisor saw the agent's terminal change.
    pub fn terminal_changed(&mut self, now: Timestamp) {
        self.channel.on_terminal_changed(now);
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
        let (pipeline, channel) = (&mut self.pipeline, &mut self.channel);
        let (line_posture, lines) = (&mut self.line_posture, &mut self.lines);
        let replaying = &mut self.replaying;
        let polled = self.tailer.poll(&mut |tl| {
            // A replayed prefix (a checkpoint's, or a file rewritten in place) is fed to a
            // pipeline that starts over, so what it builds is not built twice.
            if tl.replay && !*replaying {
                pipeline.restart();
            }
            *replaying = tl.replay;
            let fed = pipeline.feed(tl.line);
            let report = match &fed {
                Fed::Event(step) => {
                    channel.on_event(now, step.generation);
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
                    at,
                    event,
                    skipped,
                    changes: before.changes_to(&posture),
                    posture: posture.clone(),
                });
                *before = posture;
            }
            if let (Fed::Event(step), false) = (fed, tl.replay) {
                closed.extend(step.outcome.closed);
            }
        });
        let mut read_lines = false;
        match polled {
            Ok(progress) => {
                self.channel.on_read_ok();
                self.healthy = true;
                self.more = progress.more;
                read_lines = progress.lines > 0;
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
            && self.tailer.caught_up();
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
        closed: Vec<TurnRecord>,
        notices: Vec<SessionNotice>,
    ) -> Option<Update> {
        let channel = self.channel.status(now);
        // The posture moves only with lines; an idle poll ends here, cheaply.
        let quiet = !read_lines && notices.is_empty();
        if quiet && self.last.as_ref().is_some_and(|(_, c)| *c == channel) {
            return None;
        }
        let posture = self.pipeline.hook_posture().with_channel(channel.state);
        let unchanged = self
            .last
            .as_ref()
            .is_some_and(|(p, c)| *p == posture && *c == channel);
        if unchanged && closed.is_empty() && notices.is_empty() && self.lines.is_empty() {
            return None;
        }
        self.last = Some((posture.clone(), channel.clone()));
        Some(Update {
            at: now,
            posture,
            channel,
            closed,
            notices,
            events: self.pipeline.events(),
            last_event_at: self.channel.last_event(),
            lines: std::mem::take(&mut self.lines),
        })
    }

    /// The posture at `now`, without reading anything.
    pub fn posture(&self, now: Timestamp) -> Posture {
        self.pipeline
            .hook_posture()
            .with_channel(self.channel.status(now).state)
    }

    pub fn channel(&self, now: Timestamp) -> ChannelStatus {
        self.channel.status(now)
    }

    /// The posture as the hooks alone see it, no channel state applied.
    pub fn hook_posture(&self) -> Posture {
        self.pipeline.hook_posture()
    }

    /// The turn ledger: `closed` (the turns the updates reported) with the turns still
    /// open, in turn order.
    pub fn ledger(&self, closed: Vec<TurnRecord>) -> Vec<TurnRecord> {
        self.pipeline.ledger(closed)
    }

    pub fn diagnostics(&self) -> &Diagnostics {
        self.pipeline.diagnostics()
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
