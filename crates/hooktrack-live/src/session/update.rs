//! What a [`Session`](super::Session) reports: one [`Update`] shape, the store's common
//! facts and one [`SessionUpdate`] per agent session in it.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::tail;
use hooktrack_core::agent::Agent;
use hooktrack_core::channel::ChannelStatus;
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::posture::{FieldChange, Posture};
use hooktrack_core::source::Source;
use hooktrack_core::time::Timestamp;
use hooktrack_core::tracker::SeenEnd;

/// One line read, with what it changed (see
/// [`SessionConfig::report_lines`](super::SessionConfig::report_lines)).
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

/// What changed since the last update. Sent when a posture or the channel status
/// changed, a turn ended, or there is something to log.
///
/// A store holds one agent session or several (an agent started by hand into it, a
/// `/clear`): [`Update::sessions`] has each one's own state, in the order of their first
/// rows, and [`Update::current`] says which one the last row went to. The methods
/// [`Update::posture`], [`Update::agent`] and [`Update::turn_started_at`] read the current
/// session's.
///
/// In JSON (`hooktrack watch --ndjson`) an update is one flat object: the common fields,
/// the current session's `posture`, `agent` and `turn_started_at`, every session's
/// `closed` turns, and for a store of several sessions a `sessions` array.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Update {
    /// The session's time of this update (the `now` given to
    /// [`Session::poll`](super::Session::poll)).
    pub at: Timestamp,
    pub channel: ChannelStatus,
    pub notices: Vec<SessionNotice>,
    /// Events read so far, every agent session's (lines that became events).
    pub events: u64,
    /// When the tracker saw the last event (the `now` of that poll).
    pub last_event_at: Option<Timestamp>,
    /// Every line read since the last update, when
    /// [`SessionConfig::report_lines`](super::SessionConfig::report_lines) is on.
    pub lines: Vec<LineReport>,
    /// The tmux pane the last row that named one was emitted from (`$TMUX_PANE`).
    pub tmux_pane: Option<String>,
    /// Every agent session of the store (never empty), in the order of their first rows.
    pub sessions: Vec<SessionUpdate>,
    /// The index in [`Update::sessions`] of the session the last row went to.
    pub current: usize,
    /// The ends of agent processes (each session's `agent_pid`) seen since the last
    /// update that no row of the store holds yet, each reported once. A caller that may
    /// write the store appends each as the launcher's row
    /// (`hooktrack_core::envelope::process_ended_row_of`, naming its session, at its time),
    /// so a replay of the store ends what this session ended; read back, that row is no
    /// news. Not in the JSON form.
    pub process_ends: Vec<SeenEnd>,
}

impl Serialize for Update {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The wire shape: the current session's facts at the top, as a store of one
        /// session has always been written.
        #[derive(Serialize)]
        struct Flat<'a> {
            at: Timestamp,
            posture: &'a Posture,
            channel: &'a ChannelStatus,
            closed: Vec<&'a TurnRecord>,
            notices: &'a [SessionNotice],
            events: u64,
            last_event_at: Option<Timestamp>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            lines: &'a [LineReport],
            #[serde(skip_serializing_if = "Option::is_none")]
            agent: Option<Agent>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tmux_pane: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            turn_started_at: Option<Timestamp>,
            #[serde(skip_serializing_if = "Option::is_none")]
            agent_pid: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            gone_since: Option<Timestamp>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            sessions: &'a [SessionUpdate],
        }
        let several = self.sessions.len() > 1;
        Flat {
            at: self.at,
            posture: self.posture(),
            channel: &self.channel,
            closed: self.closed().collect(),
            notices: &self.notices,
            events: self.events,
            last_event_at: self.last_event_at,
            lines: &self.lines,
            agent: self.agent(),
            tmux_pane: self.tmux_pane.as_deref(),
            turn_started_at: self.turn_started_at(),
            agent_pid: self.current().agent_pid,
            gone_since: self.current().gone_since,
            sessions: if several { &self.sessions } else { &[] },
        }
        .serialize(serializer)
    }
}

/// One agent session of a store, in an [`Update`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct SessionUpdate {
    /// `None` until a row names one.
    pub session_id: Option<String>,
    /// The posture after the last whole line read, with the channel state applied (hook
    /// facts withdrawn when the channel is not active).
    pub posture: Posture,
    /// Every turn of this session that ended since the last update, in order: a
    /// coalesced update never loses a terminal result.
    pub closed: Vec<TurnRecord>,
    pub events: u64,
    /// The agent the rows were recognised as, once they say (for
    /// [`merge`](hooktrack_core::merge::merge)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Agent>,
    /// When the open main turn started: its first row's time, else the `now` of the poll
    /// that first saw it. `None` when no main turn is open (kept for the current session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_started_at: Option<Timestamp>,
    /// The tmux pane this session's last row that named one was emitted from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    /// The agent process its rows name (`agent_pid`: agents started without hooktrack's
    /// environment), which the session watches to see it gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_pid: Option<u32>,
    /// The time of its last hook row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_row_at: Option<Timestamp>,
    /// Since when its agent process is known gone (presence `absent`): when it was seen
    /// to end, or, for one already gone when first looked at, its last row's time. `None`
    /// while it runs or when nothing says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gone_since: Option<Timestamp>,
}

impl Update {
    /// The session the last row went to.
    pub fn current(&self) -> &SessionUpdate {
        // Never empty: a store always has a current session.
        &self.sessions[self.current.min(self.sessions.len().saturating_sub(1))]
    }

    /// The current session's posture.
    pub fn posture(&self) -> &Posture {
        &self.current().posture
    }

    /// The current session's agent.
    pub fn agent(&self) -> Option<Agent> {
        self.current().agent
    }

    /// When the current session's open main turn started.
    pub fn turn_started_at(&self) -> Option<Timestamp> {
        self.current().turn_started_at
    }

    /// Every session's turns that ended since the last update.
    pub fn closed(&self) -> impl Iterator<Item = &TurnRecord> {
        self.sessions.iter().flat_map(|s| &s.closed)
    }

    /// One update per agent session of the store: this one for a store of one session;
    /// else, per session, an update holding that session alone (notices and lines go with
    /// the current session's).
    pub fn per_session(&self) -> Vec<(Option<&str>, Update)> {
        if self.sessions.len() == 1 {
            return vec![(None, self.clone())];
        }
        self.sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mine = i == self.current;
                let update = Update {
                    notices: if mine {
                        self.notices.clone()
                    } else {
                        Vec::new()
                    },
                    lines: if mine { self.lines.clone() } else { Vec::new() },
                    events: s.events,
                    // The session's own pane: the store's is the last row's, any session's.
                    tmux_pane: s.tmux_pane.clone(),
                    sessions: vec![s.clone()],
                    current: 0,
                    process_ends: self
                        .process_ends
                        .iter()
                        .filter(|e| e.session == i)
                        .map(|e| SeenEnd {
                            session: 0,
                            ..e.clone()
                        })
                        .collect(),
                    ..self.clone()
                };
                (s.session_id.as_deref(), update)
            })
            .collect()
    }
}

/// Something to log; never an error of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// [`SessionConfig::skip_existing`](super::SessionConfig::skip_existing) could not read
    /// past the rows already there: they are read (and reported) as new.
    ExistingNotSkipped {
        detail: String,
    },
    /// The directory could not be watched: changes are seen at the periodic re-check only.
    WatchFailed {
        detail: String,
    },
    /// The agent process handed to
    /// [`Session::watch_process`](super::Session::watch_process), or the one a session's
    /// rows name (`agent_pid`), ended.
    ProcessEnded {
        pid: u32,
        mechanism: &'static str,
    },
    /// Following the transcript the payloads name from here on.
    TranscriptFollowed {
        path: String,
    },
    /// The file a launch streams its closed turns to cannot be written: they are kept in
    /// memory from here on (nothing is lost; memory grows with the run).
    LedgerInMemory {
        detail: String,
    },
}

impl fmt::Display for SessionNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionNotice::Tail(n) => n.fmt(f),
            SessionNotice::BadRecord { detail } => write!(f, "ignored a metadata record: {detail}"),
            SessionNotice::LedgerInMemory { detail } => {
                write!(f, "turn ledger kept in memory: {detail}")
            }
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
