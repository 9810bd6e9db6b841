//! Many sessions, one watcher.
//!
//! A [`Hub`] owns a thread, one `notify` watcher and the [`Session`]s added to it. It
//! watches each store's directory (or, until the store exists, its nearest existing
//! ancestor) and the directory of each session's followed transcript, and treats every
//! notification only as "go read" for the sessions under that directory (for a
//! transcript, the sessions following that very file). On Linux a second thread waits on
//! the pidfds of the processes handed to [`Hub::watch_process`] and wakes the session whose
//! process ended. A periodic re-check (default 500 ms) polls every session anyway: it covers
//! missed or coalesced notifications and queue overflows, and lets time-driven channel
//! states (startup silence) surface. A session is also polled when it says it is due
//! ([`Session::due`]: a row's wait for its transcript ends, a pane is due a read). Between
//! these the thread sleeps.
//!
//! Updates arrive as `(SessionId, Update)` on the receiver returned by [`Hub::start`].
//! This is the one place in the library that reads the clock.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use notify::event::{AccessKind, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use thiserror::Error;

#[cfg(target_os = "linux")]
use crate::process::ExitWaiter;
use crate::session::{FULL_POLL_EVERY, Session, SessionNotice, Update};
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::time::Timestamp;

/// Identifies a session within its hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct SessionId(pub u64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HubConfig {
    /// How often every session is polled whatever the watcher says.
    pub recheck: Duration,
}

impl Default for HubConfig {
    fn default() -> Self {
        Self {
            recheck: Duration::from_millis(500),
        }
    }
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HubError {
    #[error("cannot start the file watcher")]
    Watcher {
        #[source]
        source: notify::Error,
    },
    #[error("cannot start the hub thread")]
    Thread {
        #[source]
        source: std::io::Error,
    },
}

/// The wall clock as a [`Timestamp`], for callers that feed `now` into a hub's sessions.
pub fn wall_clock() -> Timestamp {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp::from_millis(ms)
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    Add(SessionId, Box<Session>),
    Remove(SessionId),
    PromptSent(SessionId, Timestamp),
    TerminalChanged(SessionId, Timestamp),
    WatchProcess(SessionId, u32),
    /// The exit waiter saw the session's process end.
    ProcessExited(SessionId),
    Shutdown,
}

/// The handle: adds and removes sessions, forwards the supervisor's signals. Dropping it
/// stops the thread.
pub struct Hub {
    tx: Sender<Msg>,
    next: u64,
    thread: Option<JoinHandle<()>>,
}

impl Hub {
    pub fn start(config: HubConfig) -> Result<(Hub, Receiver<(SessionId, Update)>), HubError> {
        let (tx, rx) = mpsc::channel();
        let (updates_tx, updates_rx) = mpsc::channel();
        let fs_tx = tx.clone();
        let watcher = notify::recommended_watcher(move |event| {
            // The hub may be gone already; then nobody needs the wake-up.
            let _ = fs_tx.send(Msg::Fs(event));
        })
        .map_err(|source| HubError::Watcher { source })?;
        #[cfg(target_os = "linux")]
        let exits = {
            let exit_tx = tx.clone();
            ExitWaiter::start(move |key| {
                let _ = exit_tx.send(Msg::ProcessExited(SessionId(key)));
            })
        };
        let worker = Worker {
            config,
            watcher,
            sessions: HashMap::new(),
            watched: HashMap::new(),
            transcript_files: HashMap::new(),
            transcript_dirs: HashMap::new(),
            transcript_waits: HashMap::new(),
            #[cfg(target_os = "linux")]
            exits,
            updates: updates_tx,
        };
        let thread = std::thread::Builder::new()
            .name("hooktrack-hub".into())
            .spawn(move || worker.run(&rx))
            .map_err(|source| HubError::Thread { source })?;
        Ok((
            Hub {
                tx,
                next: 0,
                thread: Some(thread),
            },
            updates_rx,
        ))
    }

    /// Adds an opened session; its first update follows at once.
    pub fn add(&mut self, session: Session) -> SessionId {
        self.next += 1;
        let id = SessionId(self.next);
        self.send(Msg::Add(id, Box::new(session)));
        id
    }

    /// Stops following a session. Updates already sent may still be in the receiver.
    pub fn remove(&self, id: SessionId) {
        self.send(Msg::Remove(id));
    }

    /// See [`Session::prompt_sent`].
    pub fn prompt_sent(&self, id: SessionId, now: Timestamp) {
        self.send(Msg::PromptSent(id, now));
    }

    /// See [`Session::terminal_changed`].
    pub fn terminal_changed(&self, id: SessionId, now: Timestamp) {
        self.send(Msg::TerminalChanged(id, now));
    }

    /// See [`Session::watch_process`]. On Linux the hub waits on the process's pidfd and
    /// polls the session as soon as it ends; elsewhere (or without pidfds) the end is seen
    /// at the next re-check.
    pub fn watch_process(&self, id: SessionId, pid: u32) {
        self.send(Msg::WatchProcess(id, pid));
    }

    fn send(&self, msg: Msg) {
        // The worker only stops when the hub is dropped, so this cannot fail while `self`
        // lives; if the worker panicked there is nobody to tell.
        let _ = self.tx.send(msg);
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.send(Msg::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(Clone, Copy)]
enum Poll {
    Full,
    Recheck,
}

/// A session and the directories watched for it.
struct Tracked {
    session: Session,
    watch: Option<PathBuf>,
    /// The followed transcripts (absolute, sorted; one per agent session of the store at
    /// most), whose directories are watched.
    transcript: Vec<PathBuf>,
    /// The directory watched for each: its own, or until that exists its nearest existing
    /// ancestor (a folder not made yet is watched for its creation, never an error).
    transcript_watch: HashMap<PathBuf, PathBuf>,
}

/// A watched directory: its identity (a directory deleted and recreated loses its watch
/// and must be watched again) and the sessions it wakes.
struct WatchedDir {
    id: Option<(u64, u64)>,
    sessions: HashSet<SessionId>,
}

struct Worker {
    config: HubConfig,
    watcher: RecommendedWatcher,
    sessions: HashMap<SessionId, Tracked>,
    watched: HashMap<PathBuf, WatchedDir>,
    /// Followed transcripts and the sessions following each; their directories, with how
    /// many transcripts each holds (a directory can hold many: Claude's project dir).
    transcript_files: HashMap<PathBuf, HashSet<SessionId>>,
    transcript_dirs: HashMap<PathBuf, usize>,
    /// Ancestors watched until a transcript's directory exists, and the sessions waiting.
    transcript_waits: HashMap<PathBuf, HashSet<SessionId>>,
    #[cfg(target_os = "linux")]
    exits: Option<ExitWaiter>,
    updates: Sender<(SessionId, Update)>,
}

impl Worker {
    fn run(mut self, rx: &Receiver<Msg>) {
        // Sessions to poll in full (a notification, a message) and sessions only due for
        // the periodic re-check.
        let mut dirty: HashSet<SessionId> = HashSet::new();
        let mut due: Vec<SessionId> = Vec::new();
        let mut rounds: u32 = 0;
        let mut next_recheck = Instant::now() + self.config.recheck;
        // Sessions whose row waits for their transcript, and when it goes on anyway, or
        // whose agent's pane is due a read.
        let mut holds: HashMap<SessionId, Instant> = HashMap::new();
        loop {
            // Sessions left with more to read are served again at once; otherwise sleep
            // until a message, the re-check or the end of a row's wait.
            let wake = holds.values().copied().fold(next_recheck, Instant::min);
            let wait = if dirty.is_empty() {
                wake.saturating_duration_since(Instant::now())
            } else {
                Duration::ZERO
            };
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    if !self.handle(msg, &mut dirty) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            // Coalesce whatever else is queued into this round.
            while let Ok(msg) = rx.try_recv() {
                if !self.handle(msg, &mut dirty) {
                    return;
                }
            }
            if Instant::now() >= next_recheck {
                due.extend(self.sessions.keys().filter(|id| !dirty.contains(id)));
                rounds = rounds.wrapping_add(1);
                if rounds.is_multiple_of(FULL_POLL_EVERY) {
                    // A store directory deleted and recreated lost its watch.
                    for id in self.sessions.keys().copied().collect::<Vec<_>>() {
                        self.rewatch(id);
                    }
                }
                next_recheck = Instant::now() + self.config.recheck;
            }
            let instant = Instant::now();
            holds.retain(|id, until| {
                let over = *until <= instant;
                if over {
                    dirty.insert(*id);
                }
                !over
            });
            let now = wall_clock();
            let round: Vec<SessionId> = dirty.drain().collect();
            let polled: Vec<(SessionId, Poll)> = round
                .into_iter()
                .map(|id| (id, Poll::Full))
                .chain(
                    std::mem::take(&mut due)
                        .into_iter()
                        .map(|id| (id, Poll::Recheck)),
                )
                .collect();
            for (id, how) in polled {
                if self.poll(id, now, how) {
                    dirty.insert(id);
                }
                match self.sessions.get(&id).and_then(|t| t.session.due()) {
                    Some(until) => {
                        let ms = until.as_millis().saturating_sub(now.as_millis()).max(0);
                        let ms = u64::try_from(ms).unwrap_or(0);
                        holds.insert(id, instant + Duration::from_millis(ms));
                    }
                    None => {
                        holds.remove(&id);
                    }
                }
            }
        }
    }

    /// Applies one message; `false` to stop.
    fn handle(&mut self, msg: Msg, dirty: &mut HashSet<SessionId>) -> bool {
        match msg {
            Msg::Fs(Ok(event)) => {
                if event.need_rescan() {
                    dirty.extend(self.sessions.keys().copied());
                } else if !is_own_read(&event.kind) {
                    for path in &event.paths {
                        for dir in [Some(path.as_path()), path.parent()].into_iter().flatten() {
                            if let Some(w) = self.watched.get(dir) {
                                dirty.extend(w.sessions.iter().copied());
                            }
                        }
                        if let Some(following) = self.transcript_files.get(path) {
                            dirty.extend(following.iter().copied());
                        }
                        if let Some(waiting) =
                            path.parent().and_then(|p| self.transcript_waits.get(p))
                        {
                            dirty.extend(waiting.iter().copied());
                        }
                    }
                }
            }
            // An error from the watcher (an overflow, a watch gone): read everything.
            Msg::Fs(Err(_)) => dirty.extend(self.sessions.keys().copied()),
            Msg::Add(id, session) => {
                self.sessions.insert(
                    id,
                    Tracked {
                        session: *session,
                        watch: None,
                        transcript: Vec::new(),
                        transcript_watch: HashMap::new(),
                    },
                );
                dirty.insert(id);
            }
            Msg::Remove(id) => {
                if let Some(tracked) = self.sessions.remove(&id) {
                    self.unwatch(id, tracked.watch.as_deref());
                    for file in &tracked.transcript {
                        self.unwatch_transcript(
                            id,
                            Some(file),
                            tracked.transcript_watch.get(file).map(PathBuf::as_path),
                        );
                    }
                }
                #[cfg(target_os = "linux")]
                if let Some(exits) = &self.exits {
                    exits.unwatch(id.0);
                }
                dirty.remove(&id);
            }
            Msg::PromptSent(id, now) => {
                if let Some(t) = self.sessions.get_mut(&id) {
                    t.session.prompt_sent(now);
                    dirty.insert(id);
                }
            }
            Msg::TerminalChanged(id, now) => {
                if let Some(t) = self.sessions.get_mut(&id) {
                    t.session.terminal_changed(now);
                    dirty.insert(id);
                }
            }
            Msg::WatchProcess(id, pid) => {
                if let Some(t) = self.sessions.get_mut(&id) {
                    t.session.watch_process(pid);
                    #[cfg(target_os = "linux")]
                    if let Some(exits) = &self.exits {
                        exits.watch(id.0, pid);
                    }
                    dirty.insert(id);
                }
            }
            Msg::ProcessExited(id) => {
                if self.sessions.contains_key(&id) {
                    dirty.insert(id);
                }
            }
            Msg::Shutdown => return false,
        }
        true
    }

    /// Polls one session and sends its update; `true` if it has more to read.
    fn poll(&mut self, id: SessionId, now: Timestamp, how: Poll) -> bool {
        let Some(tracked) = self.sessions.get(&id) else {
            return false;
        };
        // Until the watch sits on the store directory itself, follow it down (before the
        // read, so nothing created in between is missed).
        if tracked.watch.as_deref() != Some(tracked.session.paths().dir.as_path()) {
            self.rewatch(id);
        }
        let Some(tracked) = self.sessions.get_mut(&id) else {
            return false;
        };
        let update = match how {
            Poll::Full => tracked.session.poll(now),
            Poll::Recheck => tracked.session.recheck(now),
        };
        if let Some(update) = update {
            // A supervisor that dropped the receiver no longer listens; keep serving the
            // others until the hub is dropped.
            let _ = self.updates.send((id, update));
        }
        let more = tracked.session.more();
        // The poll may have named (new) transcripts, or asked for a session file not made
        // yet: watch their directories (or the nearest made) from now on.
        let mut followed: Vec<PathBuf> = tracked
            .session
            .watched_paths()
            .into_iter()
            .filter_map(|p| std::path::absolute(p).ok())
            .collect();
        followed.sort();
        followed.dedup();
        // A transcript whose folder was missing: its folder, or one on the way, appeared
        // (the watch moves down to it; a level made before the move is seen by the
        // re-poll after it).
        let appeared = followed.iter().any(|file| {
            file.parent().is_some_and(|dir| {
                let watched = tracked.transcript_watch.get(file).map(PathBuf::as_path);
                watched != Some(dir)
                    && nearest_existing(dir).is_some_and(|(now, _)| watched != Some(now.as_path()))
            })
        });
        if followed != tracked.transcript || appeared {
            self.follow_transcripts(id, followed);
            // Whatever was written to it between this poll's read and the watch would
            // wake nobody: read once more, now that the watch is in place.
            return true;
        }
        more
    }

    /// Moves the session's transcript watches to `files`' directories (all of them again:
    /// a watch may move down to a folder that appeared).
    fn follow_transcripts(&mut self, id: SessionId, files: Vec<PathBuf>) {
        let Some(tracked) = self.sessions.get_mut(&id) else {
            return;
        };
        let old = std::mem::replace(&mut tracked.transcript, files.clone());
        let old_watch = std::mem::take(&mut tracked.transcript_watch);
        for file in &old {
            self.unwatch_transcript(id, Some(file), old_watch.get(file).map(PathBuf::as_path));
        }
        for file in files {
            self.follow_transcript(id, file);
        }
    }

    /// Watches `file`'s directory for the session, or while that does not exist its
    /// nearest existing ancestor (to see it made). A directory that cannot be watched
    /// leaves the transcript to the periodic re-check, with a notice.
    fn follow_transcript(&mut self, id: SessionId, file: PathBuf) {
        let Some(own) = file.parent() else {
            return;
        };
        let Some((dir, _)) = nearest_existing(own) else {
            return;
        };
        if dir != own {
            self.transcript_waits
                .entry(dir.clone())
                .or_default()
                .insert(id);
        }
        if let Some(tracked) = self.sessions.get_mut(&id) {
            tracked.transcript_watch.insert(file.clone(), dir.clone());
        }
        self.transcript_files.entry(file).or_default().insert(id);
        let count = self.transcript_dirs.entry(dir.clone()).or_insert(0);
        *count += 1;
        if *count > 1 || self.watched.contains_key(&dir) {
            return;
        }
        if let Err(e) = self.watcher.watch(&dir, RecursiveMode::NonRecursive)
            && let Some(tracked) = self.sessions.get_mut(&id)
        {
            tracked.session.notice(SessionNotice::WatchFailed {
                detail: format!("{}: {}", dir.display(), error_chain(&e)),
            });
        }
    }

    fn unwatch_transcript(&mut self, id: SessionId, file: Option<&Path>, dir: Option<&Path>) {
        let Some(file) = file else { return };
        if let Some(following) = self.transcript_files.get_mut(file) {
            following.remove(&id);
            if following.is_empty() {
                self.transcript_files.remove(file);
            }
        }
        let Some(dir) = dir else { return };
        if let Some(waiting) = self.transcript_waits.get_mut(dir) {
            waiting.remove(&id);
            if waiting.is_empty() {
                self.transcript_waits.remove(dir);
            }
        }
        if let Some(count) = self.transcript_dirs.get_mut(dir) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.transcript_dirs.remove(dir);
                if !self.watched.contains_key(dir) {
                    let _ = self.watcher.unwatch(dir);
                }
            }
        }
    }

    /// Keeps the session's watch on its store directory, or on the nearest existing
    /// ancestor until the store exists (and back up if it disappears).
    fn rewatch(&mut self, id: SessionId) {
        let Some(tracked) = self.sessions.get(&id) else {
            return;
        };
        let Some((dir, dir_id)) = nearest_existing(&tracked.session.paths().dir) else {
            return;
        };
        if tracked.watch.as_ref() == Some(&dir)
            && self.watched.get(&dir).is_some_and(|w| w.id == dir_id)
        {
            return;
        }
        let old = tracked.watch.clone();
        if old.as_ref() != Some(&dir) {
            self.unwatch(id, old.as_deref());
        }
        // A new directory, or the same path naming a recreated one.
        let result = match self.watched.get(&dir) {
            Some(w) if w.id == dir_id => Ok(()),
            _ => self.watcher.watch(&dir, RecursiveMode::NonRecursive),
        };
        let entry = self
            .watched
            .entry(dir.clone())
            .or_insert_with(|| WatchedDir {
                id: dir_id,
                sessions: HashSet::new(),
            });
        entry.id = dir_id;
        entry.sessions.insert(id);
        let Some(tracked) = self.sessions.get_mut(&id) else {
            return;
        };
        // On failure the directory is still recorded, so the watch is not retried every
        // round; the periodic re-check polls the session all the same.
        tracked.watch = Some(dir.clone());
        if let Err(e) = result {
            tracked.session.notice(SessionNotice::WatchFailed {
                detail: format!("{}: {}", dir.display(), error_chain(&e)),
            });
        }
    }

    fn unwatch(&mut self, id: SessionId, dir: Option<&Path>) {
        let Some(dir) = dir else { return };
        if let Some(w) = self.watched.get_mut(dir) {
            w.sessions.remove(&id);
            if w.sessions.is_empty() {
                self.watched.remove(dir);
                // The directory may be gone, which removed the watch already; one that
                // also holds a followed transcript stays watched.
                if !self.transcript_dirs.contains_key(dir) {
                    let _ = self.watcher.unwatch(dir);
                }
            }
        }
    }
}

/// Opens, reads and closes change nothing (ours included: the tailer opening the file).
/// A writer's close, too: its bytes were announced by the modify events before it, and
/// polling again for the close doubled the work of a burst (every session read twice).
fn is_own_read(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(AccessKind::Open(_) | AccessKind::Read | AccessKind::Close(_))
    )
}

/// The directory itself or its nearest existing ancestor, with its identity. Absolute:
/// the watcher reports absolute paths, and they are matched against this one.
fn nearest_existing(dir: &Path) -> Option<(PathBuf, Option<(u64, u64)>)> {
    let dir = std::path::absolute(dir).ok()?;
    dir.ancestors().find_map(|d| {
        let meta = std::fs::metadata(d).ok().filter(|m| m.is_dir())?;
        Some((d.to_path_buf(), dir_id(&meta)))
    })
}

#[cfg(unix)]
fn dir_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn dir_id(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}
