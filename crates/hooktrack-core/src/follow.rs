//! What the tracker asks its driver to read besides `events.ndjson`, and the limits every
//! driver reads it with.
//!
//! The tracker decides, the driver does: after each hook row the [`Tracker`] looks at the
//! row's session and hands its driver [`Request`]s — follow this file for this session
//! from this offset, stop following it, watch this pid — and takes the results back as
//! inputs (the file's lines tagged with the session, "not found", "the pid ended"). A
//! replay and a live session carry the same requests out with the same limits (the
//! constants below), so they cannot read different files.
//!
//! Rules, per session of the store (never through another session's file):
//!
//! - the file is the transcript its payloads name last (a subagent's is not its own), else
//!   the agent's session file found under its home by the session's id;
//! - at most [`MAX_FOLLOWED`] files are followed at once: opening one more lets go the one
//!   whose session wrote least recently ([`Diag::TranscriptLetGo`] in that session); a
//!   session let go is followed again from where it stood when it writes again;
//! - a file the driver could not find or read is asked for again at the session's next
//!   row (a session file appears after the agent's first hooks);
//! - the pid a session's rows name (`agent_pid`) is watched; when the driver sees it end,
//!   [`end_time`] says when it counts.
//!
//! [`Tracker`]: crate::tracker::Tracker
//! [`Diag::TranscriptLetGo`]: crate::diagnostics::Diag::TranscriptLetGo

use crate::agent::Agent;
use crate::agents::SessionFile;
use crate::pipeline::Pipeline;
use crate::row::Row;
use crate::time::Timestamp;
use crate::tracker::TranscriptClock;

/// The most files (transcripts, session files) one store's sessions follow at once.
pub const MAX_FOLLOWED: usize = 32;

/// The most directory entries a driver lists to find one session's file.
pub const MAX_LISTED: usize = 4096;

/// The most of one transcript a driver reads: past it, the hooks alone tell the rest.
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 * 1024 * 1024;

/// Where a session's second signal is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The path the session's payloads name (`transcript_path`).
    Named(String),
    /// The agent's session file, which its payloads do not name: `file` under the agent's
    /// home, found by the session's `id` (Kimi Code's `wire.jsonl`).
    SessionFile { file: SessionFile, id: String },
}

/// What one row says about its session's second signal: the one rule a pipeline (for the
/// tracker's requests) and a replay reading its files ahead both apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Named<'r> {
    /// The transcript the row names (`transcript_path`).
    pub transcript: Option<&'r str>,
    /// The session file of the row's agent, by the row's `session_id`, where the agent
    /// keeps one its payloads do not name (Kimi Code's).
    pub session_file: Option<(SessionFile, &'r str)>,
}

impl<'r> Named<'r> {
    /// What `row`, of agent `provider`, names. A subagent's row (`agent_id`) names its own
    /// transcript (Codex's), not its session's: nothing.
    pub fn by(row: &'r Row<'_>, provider: Agent) -> Self {
        let p = &row.payload;
        if p.agent_id.is_some() {
            return Self::default();
        }
        Self {
            transcript: p.transcript_path.as_deref(),
            session_file: provider
                .descriptor()
                .transcript
                .and_then(|t| t.session_file)
                .zip(p.session_id.as_deref()),
        }
    }

    /// The place a session follows after this row: the transcript named, else the
    /// session file.
    pub fn place(&self) -> Option<Place> {
        match (self.transcript, self.session_file) {
            (Some(path), _) => Some(Place::Named(path.to_owned())),
            (None, Some((file, id))) => Some(Place::SessionFile {
                file,
                id: id.to_owned(),
            }),
            (None, None) => None,
        }
    }
}

/// How far a followed file was read: bytes, and the lines they held (the next line's
/// number is `lines + 1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offset {
    pub bytes: u64,
    pub lines: u64,
}

/// What the tracker asks its driver to do. `session` is an index of
/// [`Tracker::sessions`](crate::tracker::Tracker::sessions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Follow `place` for `session` from `from` (replacing the file it followed, if any);
    /// hand its lines back with
    /// [`Tracker::transcript_read`](crate::tracker::Tracker::transcript_read), or say it
    /// is not there with [`Tracker::follow_failed`](crate::tracker::Tracker::follow_failed).
    Follow {
        session: usize,
        place: Place,
        from: Offset,
    },
    /// Stop following `session`'s file (close it): it is asked for again, from where it
    /// stood, when the session writes again.
    Unfollow { session: usize },
    /// Watch process `pid`, the agent of `session` (its rows' `agent_pid`); say when it
    /// ends with [`Tracker::pid_ended`](crate::tracker::Tracker::pid_ended).
    WatchPid { session: usize, pid: u32 },
    /// Read the screen of tmux pane `pane` (`%N`), where `session`'s agent waits on the
    /// user, once, now; hand its text back with
    /// [`Tracker::screen_read`](crate::tracker::Tracker::screen_read), or say it could not
    /// be read with [`Tracker::screen_failed`](crate::tracker::Tracker::screen_failed)
    /// (see [`crate::screen`]).
    ReadScreen { session: usize, pane: String },
}

/// How a driver found a watched pid ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidEnd {
    /// An earlier look found it running: it ended about now.
    SeenRunning,
    /// The first look found it gone, or the pid named a process started after the
    /// session's last row: it ended some time after that row, which is all that is known.
    GoneAtFirstLook,
}

/// When a process end seen by a driver counts: `now` if it was seen running before, else
/// the session's last row (its end came after it, and the rows read since are not its
/// session's).
pub fn end_time(how: PidEnd, last_row_at: Option<Timestamp>, now: Timestamp) -> Timestamp {
    match how {
        PidEnd::SeenRunning => now,
        PidEnd::GoneAtFirstLook => last_row_at.unwrap_or(now),
    }
}

/// A session's file as the tracker follows it.
#[derive(Clone, Debug)]
enum FileState {
    /// Asked for and not refused: the driver holds it open.
    Open,
    /// Let go for another session's; asked for again when this session writes.
    LetGo,
    /// The driver could not find or read it; asked for again at the next row.
    Missing,
}

#[derive(Clone, Debug)]
struct Followed {
    place: Place,
    state: FileState,
    offset: Offset,
    clock: TranscriptClock,
}

/// The pid a session's rows name, and whether its end was seen.
#[derive(Clone, Copy, Debug)]
struct Watched {
    pid: u32,
    ended: bool,
}

/// Per session: what is followed, when it last wrote, its watched pid.
#[derive(Clone, Debug, Default)]
struct PerSession {
    file: Option<Followed>,
    /// The tick of its last row (larger is more recent).
    active: u64,
    last_row_at: Option<Timestamp>,
    pid: Option<Watched>,
}

/// The follow rules' state (see the module's rules): private, changed by the tracker
/// through the methods below.
#[derive(Clone, Debug, Default)]
pub(crate) struct Follows {
    sessions: Vec<PerSession>,
    tick: u64,
    requests: Vec<Request>,
}

impl Follows {
    fn at(&mut self, session: usize) -> &mut PerSession {
        if self.sessions.len() <= session {
            self.sessions.resize_with(session + 1, PerSession::default);
        }
        &mut self.sessions[session]
    }

    /// A hook row went to `session` (whose pipeline is `pipeline` after it); returns the
    /// session whose file was let go to stay within [`MAX_FOLLOWED`], if one was.
    pub(crate) fn on_row(
        &mut self,
        session: usize,
        pipeline: &Pipeline,
        at: Option<Timestamp>,
        agent_pid: Option<u32>,
        follow_files: bool,
    ) -> Option<usize> {
        self.tick += 1;
        let tick = self.tick;
        let s = self.at(session);
        s.active = tick;
        if at.is_some() {
            s.last_row_at = at;
        }
        if let Some(pid) = agent_pid
            && s.pid.is_none_or(|w| w.pid != pid || w.ended)
        {
            s.pid = Some(Watched { pid, ended: false });
            self.requests.push(Request::WatchPid { session, pid });
        }
        if !follow_files {
            return None;
        }
        // Compared by reference first: this runs on every row of a replay, and the place
        // changes rarely (a `/clear`, a session file first named).
        let same = |place: &Place| match (place, pipeline.transcript_path()) {
            (Place::Named(known), Some(path)) => known == path,
            (Place::SessionFile { file, id }, None) => pipeline
                .session_file()
                .is_some_and(|(f, i)| f == *file && i == id),
            _ => false,
        };
        let s = &mut self.sessions[session];
        let from = match &mut s.file {
            Some(f) if same(&f.place) => match f.state {
                FileState::Open => return None,
                FileState::LetGo | FileState::Missing => {
                    f.state = FileState::Open;
                    f.offset
                }
            },
            slot => {
                let wanted = match pipeline.transcript_path() {
                    Some(path) => Place::Named(path.to_owned()),
                    None => match pipeline.session_file() {
                        Some((file, id)) => Place::SessionFile {
                            file,
                            id: id.to_owned(),
                        },
                        None => return None,
                    },
                };
                *slot = Some(Followed {
                    place: wanted,
                    state: FileState::Open,
                    offset: Offset::default(),
                    clock: TranscriptClock::default(),
                });
                Offset::default()
            }
        };
        let place = match &s.file {
            Some(f) => f.place.clone(),
            None => return None,
        };
        self.requests.push(Request::Follow {
            session,
            place,
            from,
        });
        self.bound(session)
    }

    /// Lets go the least recently active open file past [`MAX_FOLLOWED`] (never
    /// `keep`'s, just opened).
    fn bound(&mut self, keep: usize) -> Option<usize> {
        let open = |s: &PerSession| {
            matches!(
                s.file,
                Some(Followed {
                    state: FileState::Open,
                    ..
                })
            )
        };
        if self.sessions.iter().filter(|s| open(s)).count() <= MAX_FOLLOWED {
            return None;
        }
        let oldest = self
            .sessions
            .iter()
            .enumerate()
            .filter(|(i, s)| *i != keep && open(s))
            .min_by_key(|(_, s)| s.active)
            .map(|(i, _)| i)?;
        if let Some(f) = &mut self.sessions[oldest].file {
            f.state = FileState::LetGo;
        }
        self.requests.push(Request::Unfollow { session: oldest });
        Some(oldest)
    }

    /// Lines the driver read from `session`'s file, timed by that file's clock; `offset`
    /// is where the driver stands after them. Lines of a file no longer followed (a
    /// session let go or moved to another file since) are dropped: `None`.
    pub(crate) fn read(
        &mut self,
        session: usize,
        batch: Vec<(u64, Vec<u8>)>,
        offset: Offset,
    ) -> Option<Vec<crate::tracker::TranscriptLine>> {
        let f = self.sessions.get_mut(session)?.file.as_mut()?;
        if !matches!(f.state, FileState::Open) {
            return None;
        }
        f.offset = offset;
        Some(f.clock.stamp(batch))
    }

    /// Whether `session`'s file is open and not yet read to a line of time `at` or later:
    /// a line written before a row received at `at` may still come.
    pub(crate) fn behind(&self, session: usize, at: Timestamp) -> bool {
        self.sessions
            .get(session)
            .and_then(|s| s.file.as_ref())
            .is_some_and(|f| {
                matches!(f.state, FileState::Open) && f.clock.last().is_none_or(|last| last < at)
            })
    }

    /// The driver could not find or read `session`'s file.
    pub(crate) fn failed(&mut self, session: usize) {
        if let Some(f) = self.sessions.get_mut(session).and_then(|s| s.file.as_mut()) {
            f.state = FileState::Missing;
        }
    }

    /// The driver saw `session`'s pid end: when it counts, if it is the pid watched and
    /// its end was not seen yet.
    pub(crate) fn pid_ended(
        &mut self,
        session: usize,
        pid: u32,
        how: PidEnd,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let s = self.sessions.get_mut(session)?;
        let watched = s.pid.as_mut().filter(|w| w.pid == pid && !w.ended)?;
        watched.ended = true;
        Some(end_time(how, s.last_row_at, now))
    }

    /// The end of `session`'s pid is known from a row of the store (a `process_ended`
    /// row): the driver's sighting of it is no news.
    pub(crate) fn pid_end_in_store(&mut self, session: usize, pid: Option<u32>) {
        if let Some(w) = self
            .sessions
            .get_mut(session)
            .and_then(|s| s.pid.as_mut())
            .filter(|w| pid.is_none_or(|p| p == w.pid))
        {
            w.ended = true;
        }
    }

    pub(crate) fn take_requests(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.requests)
    }

    pub(crate) fn has_requests(&self) -> bool {
        !self.requests.is_empty()
    }
}
