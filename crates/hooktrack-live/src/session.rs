//! One tracked store: the tailers, the metadata records, the checkpoint and the process
//! watch around a [`Tracker`] and its live view, behind a handle a supervisor polls.
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
//!     println!("{:?} ({})", update.posture().turn.phase, update.channel.detail);
//! }
//! # Ok::<(), hooktrack_live::locate::LocateError>(())
//! ```
//!
//! Time is always an argument: the session reads files, never a clock. A hub
//! ([`crate::hub`]) drives many sessions from one watcher and reads the clock for them.
//! The rules (which session a row goes to, which file each session's second signal is in
//! and how many are held open, where a transcript line goes among the rows, which turns
//! closed, when a process end counts) are the core's [`Tracker`]'s, the same a replay
//! uses: this file carries out its [`Request`]s and hands back what it read and saw; what
//! to report is `report.rs`'s.

mod report;
mod update;

use std::convert::Infallible;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::follow::find_session_file;
use crate::process::ProcessWatch;
use crate::screen::ScreenError;
pub use crate::screen::TmuxServer;
use crate::tail::{Checkpoint, Prefix, Tailer};
use hooktrack_core::agents::SessionFile;
use hooktrack_core::channel::{ChannelConfig, ChannelStatus};
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::{Diagnostics, error_chain};
use hooktrack_core::follow::{Offset, PidEnd, Place, Request};
use hooktrack_core::posture::Posture;
use hooktrack_core::provenance::Provenance;
use hooktrack_core::provider::ProviderChoice;
use hooktrack_core::read::ReadLine;
use hooktrack_core::store::{self, StorePaths};
use hooktrack_core::time::Timestamp;
use hooktrack_core::tracker::{FedLine, SeenEnd, Tracker, TrackerConfig};

use report::View;
pub use update::{LineReport, SessionNotice, SessionUpdate, Update};

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
    /// Keep every closed turn for [`Session::ledger`] (a launch's final ledger). Off, the
    /// memory of a long-followed session stays flat and the ledger holds the open turns.
    pub keep_ledger: bool,
    /// The agent's home directory as the agent runs (its home variable's value, else its
    /// dot directory): where an agent whose payloads name no transcript keeps its session
    /// files (Kimi Code's `sessions/`), found from the payload's `session_id`.
    pub agent_home: Option<PathBuf>,
    /// Read the tmux pane a session's rows name, on this tmux server, while its agent
    /// waits on the user, to end the window when its dialog is gone
    /// (`hooktrack_core::screen`). `None`: a window waits for a hook.
    pub read_screens: Option<TmuxServer>,
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
    /// The rules: sessions, the transcript merge, closed turns.
    tracker: Tracker,
    /// The channel, line reports, updates.
    view: View,
    checkpoint_path: Option<PathBuf>,
    saved: Option<Checkpoint>,
    collector_stamp: Option<Stamp>,
    channel_stamp: Option<Stamp>,
    pending: Vec<SessionNotice>,
    /// The last line fed was a replayed one.
    replaying: bool,
    more: bool,
    /// The next poll lets every waiting row go ([`Session::poll_final`]).
    final_poll: bool,
    /// The store directory as the last full poll found it, and the cheap re-checks since.
    dir_stamp: Option<Stamp>,
    quiet_rechecks: u32,
    healthy: bool,
    /// Per agent session (the tracker's index): the file the tracker asked to follow for
    /// it (its transcript or session file), followed by offset like `events.ndjson`.
    files: Vec<Option<FileSlot>>,
    agent_home: Option<PathBuf>,
    process: Option<ProcessWatch>,
    /// Per agent session (the tracker's index): the watch of the pid its rows name.
    agents: Vec<Option<AgentWatch>>,
    /// Process ends seen in this poll, for its [`Update::process_ends`].
    ended: Vec<SeenEnd>,
    /// Panes read for the tracker's [`Request::ReadScreen`]s, to hand it back: the
    /// session, and the text or the failure.
    screens: Vec<(usize, Option<String>)>,
    /// The tmux server the panes are read on ([`SessionConfig::read_screens`]).
    tmux: Option<TmuxServer>,
    /// The collector `collector.json` says is running, to see it gone (`kill -9` of its
    /// process leaves the record saying `running`).
    collector_running: Option<(u32, store::CollectorRecord)>,
}

/// The watch of one agent session's process (the `agent_pid` of its rows).
#[derive(Debug)]
struct AgentWatch {
    watch: ProcessWatch,
    /// The pid names a process started after the session's last row: not its agent.
    reused: bool,
    /// A look found it running: its end is then timed when seen, not by its last row.
    seen_alive: bool,
}

/// Stands for a long transcript line that holds none of the agent's needles.
const SKIMMED: &[u8] = b"{}";

/// The file of one agent session, as this driver holds it.
#[derive(Debug)]
enum FileSlot {
    /// Open, read at every poll: its path as named, its tailer.
    Open { path: String, tailer: Box<Tailer> },
    /// A session file not found yet under the agent's home: looked for at every full poll.
    Unresolved { file: SessionFile, id: String },
    /// Closed (let go for a more recently active session's, or unreadable): where it
    /// stood, to read on from there when the tracker asks for it again.
    Parked {
        path: String,
        at: Option<Checkpoint>,
    },
}

/// Every this many quiet re-checks, [`Session::recheck`] does a full poll anyway: it is
/// the only way to see a metadata record rewritten in place while its notification was
/// lost (5 s with the hub's default 500 ms re-check).
pub const FULL_POLL_EVERY: u32 = 10;

/// A metadata record (`collector.json`, `channel.json`) is one small JSON object.
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

impl Session {
    /// Opens a session on a store. Nothing is read until the first poll, except the
    /// checkpoint (and, with [`SessionConfig::skip_existing`], the rows already there):
    /// an unreadable one is reported in the first update and the file is read from the
    /// start (nothing lost; turns before the restart may be reported again).
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
        // The lines before the checkpoint are replayed into the tracker, so the posture
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
            tracker: Tracker::new(TrackerConfig {
                choice: config.provider,
                by_session: true,
                keep_ledger: config.keep_ledger,
                report_closed: true,
                follow_files: !config.no_transcripts,
                read_screens: config.read_screens.is_some(),
                // The summary a live reader publishes names what a call acts on.
                tool_arguments: true,
            }),
            view: View::new(config.channel, config.report_lines),
            checkpoint_path: config.checkpoint,
            saved: checkpoint,
            collector_stamp: None,
            channel_stamp: None,
            pending,
            replaying: false,
            more: false,
            final_poll: false,
            dir_stamp: None,
            quiet_rechecks: 0,
            healthy: false,
            files: Vec::new(),
            agent_home: config.agent_home.clone(),
            process: None,
            agents: Vec::new(),
            ended: Vec::new(),
            screens: Vec::new(),
            tmux: config.read_screens.clone(),
            collector_running: None,
            paths,
        }
    }

    pub fn paths(&self) -> &StorePaths {
        &self.paths
    }

    /// The supervisor sent a prompt to the agent.
    pub fn prompt_sent(&mut self, now: Timestamp) {
        self.view.channel.on_prompt_sent(now);
    }

    /// A prompt was sent longer than the startup grace ago and no event came.
    pub fn startup_silent(&self, now: Timestamp) -> bool {
        self.view.channel.startup_silent(now)
    }

    /// The supervisor saw the agent's terminal change.
    pub fn terminal_changed(&mut self, now: Timestamp) {
        self.view.channel.on_terminal_changed(now);
    }

    /// Watches the agent's process (a supervisor that started the agent knows its pid;
    /// tmux gives `#{pane_pid}`): when it ends, an open turn ends `terminal_gap` and
    /// presence becomes absent at the next poll, with a [`SessionNotice::ProcessEnded`].
    pub fn watch_process(&mut self, pid: u32) {
        self.process = Some(ProcessWatch::new(pid));
    }

    /// The current session's followed transcript (the one its payloads name, once a row
    /// named it and transcripts are on, or its session file).
    pub fn transcript_path(&self) -> Option<&Path> {
        match self.files.get(self.tracker.current())? {
            Some(FileSlot::Open { path, .. }) => Some(Path::new(path.as_str())),
            _ => None,
        }
    }

    /// What a hub watches for this session: every file followed now
    /// ([`Session::transcript_paths`]), and a session file asked for and not made yet
    /// whose place is known ahead (a flat layout: `<home>/<dir>/<id>/<file>`), so that its
    /// making wakes the session at once (Copilot CLI's session log, made after the rows
    /// that name it: only it says a permission was answered).
    pub fn watched_paths(&self) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter_map(|slot| match slot {
                Some(FileSlot::Open { path, .. }) => Some(PathBuf::from(path)),
                Some(FileSlot::Unresolved { file, id })
                    if file.layout == hooktrack_core::agents::SessionLayout::Flat =>
                {
                    let home = self.agent_home.as_ref()?;
                    Some(home.join(file.dir).join(id).join(file.file))
                }
                _ => None,
            })
            .collect()
    }

    /// Every file followed now, one per agent session at most (see
    /// [`MAX_FOLLOWED`](hooktrack_core::follow::MAX_FOLLOWED)): a hub watches their
    /// directories.
    pub fn transcript_paths(&self) -> Vec<&Path> {
        self.files
            .iter()
            .filter_map(|slot| match slot {
                Some(FileSlot::Open { path, .. }) => Some(Path::new(path.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Adds a notice to the next update.
    pub fn notice(&mut self, notice: SessionNotice) {
        self.pending.push(notice);
    }

    /// True when the last poll stopped at its read budget: poll again soon.
    pub fn more(&self) -> bool {
        self.more
    }

    /// When a row that waits for its session's transcript goes on anyway (see
    /// `hooktrack_core::hold`): poll again by then. `None` when nothing waits.
    pub fn held_until(&self) -> Option<Timestamp> {
        self.tracker.held_until()
    }

    /// When this session wants polling again whatever its files say: a row's wait for its
    /// transcript ends ([`Session::held_until`]) or a pane is due a read
    /// ([`SessionConfig::read_screens`]). `None` when nothing is timed.
    pub fn due(&self) -> Option<Timestamp> {
        match (self.tracker.held_until(), self.tracker.screen_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// [`Session::poll`] once the agent is gone and its files are written: no row waits
    /// for a transcript any more.
    pub fn poll_final(&mut self, now: Timestamp) -> Option<Update> {
        self.final_poll = true;
        self.poll(now)
    }

    /// Reads what is new and re-judges the channel at `now`. `Some` when something
    /// changed (always on the first poll).
    pub fn poll(&mut self, now: Timestamp) -> Option<Update> {
        // Taken first: whatever changes in the directory from here on shows next time.
        self.dir_stamp = Stamp::of(&self.paths.dir);
        self.quiet_rechecks = 0;
        let mut notices = std::mem::take(&mut self.pending);
        self.refresh_records(&mut notices);
        // The followed files' new lines are read first and placed among this poll's hook
        // rows by the tracker (the rule of a replay).
        self.carry_out(&mut notices);
        let mut read_lines = self.read_files();
        let (tracker, view, replaying) = (&mut self.tracker, &mut self.view, &mut self.replaying);
        let mut sink = |l: FedLine<'_, '_>| -> Result<(), Infallible> {
            view.on_line(&l, now);
            Ok(())
        };
        let polled = self.tailer.poll(&mut |tl| {
            // A replayed prefix (a checkpoint's, or a file rewritten in place) is fed to
            // a tracker that starts over, so what it builds is not built twice.
            if tl.replay && !*replaying {
                tracker.restart();
            }
            *replaying = tl.replay;
            let Ok(()) = tracker.feed_live(tl.line, tl.replay, now, &mut sink);
        });
        // The rows may have asked for files not followed yet: read them now, after them.
        self.carry_out(&mut notices);
        read_lines |= self.read_files();
        let all = std::mem::take(&mut self.final_poll);
        let (tracker, view) = (&mut self.tracker, &mut self.view);
        let mut sink = |l: FedLine<'_, '_>| -> Result<(), Infallible> {
            view.on_line(&l, now);
            Ok(())
        };
        let Ok(()) = tracker.release(now, all, &mut sink);
        let Ok(()) = tracker.flush_transcript(&mut sink);
        read_lines |= self.poll_process(now, &mut notices);
        read_lines |= self.poll_agents(now, &mut notices);
        // A poll that read rows hands their update out first and reads the pane at the
        // next poll (due at once: [`Session::due`]): a `capture-pane` never holds up what
        // the rows said, such as the `blocked` of a window one just opened (the first read
        // of it cannot end it anyway: the hook runs before the dialog is drawn).
        if !matches!(&polled, Ok(progress) if progress.lines > 0) {
            read_lines |= self.read_screens(now, &mut notices);
        }
        match polled {
            Ok(progress) => {
                self.view.channel.on_read_ok();
                self.healthy = true;
                self.more = progress.more;
                read_lines |= progress.lines > 0;
                notices.extend(progress.notices.into_iter().map(SessionNotice::Tail));
            }
            Err(e) => {
                self.more = false;
                self.healthy = false;
                self.view.channel.on_read_failed(now, error_chain(&e));
            }
        }
        self.save_checkpoint(&mut notices);
        let mut update = self
            .view
            .update(&mut self.tracker, now, read_lines, notices);
        // An end always comes with its notice, so with an update.
        if let Some(update) = &mut update {
            update.process_ends = std::mem::take(&mut self.ended);
        }
        update
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
            && self.files.iter().flatten().all(|slot| match slot {
                FileSlot::Open { tailer, .. } => tailer.caught_up(),
                // A session file asked for and not there yet is looked for at every
                // re-check (a lookup under the agent's home), not only at a full poll
                // seconds later: Copilot CLI's first permission answer, which only its
                // session log says, waited for it (4.8 s).
                FileSlot::Unresolved { file, id } => self.find(file, id).is_none(),
                FileSlot::Parked { .. } => true,
            })
            && self.tracker.held_until().is_none()
            && self.tracker.screen_due().is_none_or(|at| at > now)
            && self.process.as_mut().is_none_or(|p| !p.has_ended())
            && self
                .agents
                .iter_mut()
                .flatten()
                .all(|a| !a.reused && !a.watch.has_ended())
            && self
                .collector_running
                .as_ref()
                .is_none_or(|(pid, _)| !crate::process::is_gone(*pid));
        if !quiet {
            return self.poll(now);
        }
        self.quiet_rechecks += 1;
        self.view.update(&mut self.tracker, now, false, Vec::new())
    }

    /// The current session's posture at `now`, without reading anything.
    pub fn posture(&self, now: Timestamp) -> Posture {
        self.hook_posture()
            .with_channel(self.view.channel.status(now).state)
    }

    pub fn channel(&self, now: Timestamp) -> ChannelStatus {
        self.view.channel.status(now)
    }

    /// Events read from `events.ndjson` alone (not the transcript or the process).
    pub fn hook_events(&self) -> u64 {
        self.tracker
            .sessions()
            .iter()
            .map(|s| s.pipeline.hook_events())
            .sum()
    }

    /// The current session's posture as the hooks alone see it, no channel state applied.
    pub fn hook_posture(&self) -> Posture {
        self.tracker.pipeline().hook_posture()
    }

    /// The turn ledger: per agent session of the store, in the order of their first rows,
    /// the turns it closed (with [`SessionConfig::keep_ledger`]) and the ones still open,
    /// in turn order.
    pub fn ledger(&self) -> Vec<TurnRecord> {
        (0..self.tracker.sessions().len())
            .flat_map(|i| self.tracker.ledger(i))
            .collect()
    }

    /// [`Session::ledger`] with the closed turns given per agent session (a driver that
    /// streamed them elsewhere and read them back): those and the open ones, in turn order.
    pub fn ledger_with(&self, mut closed: Vec<Vec<TurnRecord>>) -> Vec<TurnRecord> {
        let sessions = self.tracker.sessions();
        closed.resize_with(closed.len().max(sessions.len()), Vec::new);
        closed
            .into_iter()
            .enumerate()
            .flat_map(|(i, turns)| match sessions.get(i) {
                Some(s) => s.pipeline.ledger(turns),
                None => turns,
            })
            .collect()
    }

    /// The current agent session's counters.
    pub fn diagnostics(&self) -> &Diagnostics {
        self.tracker.pipeline().diagnostics()
    }

    /// The counters of agent session `index` (in the order of their first rows, as
    /// [`Update::sessions`]), if there is one.
    pub fn session_diagnostics(&self, index: usize) -> Option<&Diagnostics> {
        self.tracker
            .sessions()
            .get(index)
            .map(|s| s.pipeline.diagnostics())
    }

    /// What set each posture fact (source, event, line).
    pub fn provenance(&self) -> &Provenance {
        self.tracker.pipeline().provenance()
    }

    /// Carries out what the tracker asked for since the last call: follow a session's
    /// file, let one go, watch a session's pid.
    fn carry_out(&mut self, notices: &mut Vec<SessionNotice>) {
        for request in self.tracker.take_requests() {
            match request {
                Request::Follow {
                    session,
                    place,
                    from,
                } => self.follow(session, place, from, notices),
                Request::Unfollow { session } => {
                    if let Some(slot) = self.files.get_mut(session) {
                        *slot = match slot.take() {
                            Some(FileSlot::Open { path, tailer }) => Some(FileSlot::Parked {
                                at: tailer.checkpoint(),
                                path,
                            }),
                            other => other,
                        };
                    }
                }
                Request::WatchPid { session, pid } => {
                    let last_row_at = self.view.agents.get(session).and_then(|a| a.last_row_at);
                    if self.agents.len() <= session {
                        self.agents.resize_with(session + 1, || None);
                    }
                    self.agents[session] = Some(AgentWatch {
                        watch: ProcessWatch::new(pid),
                        reused: last_row_at
                            .is_some_and(|at| crate::process::started_after(pid, at.as_millis())),
                        seen_alive: false,
                    });
                }
                Request::ReadScreen { session, pane } => {
                    match self.tmux.as_ref().map(|t| t.capture(&pane)) {
                        // Late is not gone (a loaded machine): this read is not taken, the
                        // next is due as usual. A window whose hook is the last row (Codex's
                        // `PermissionRequest`, Gemini CLI's `Notification`) would otherwise
                        // lose its pane until its call's end.
                        Some(Err(ScreenError::Timeout)) => {}
                        read => self.screens.push((session, read.and_then(Result::ok))),
                    }
                }
            }
        }
    }

    /// Reads the panes due at `now` and hands their text to the tracker: a dialog seen
    /// gone ends its window. True when that changed something to report.
    fn read_screens(&mut self, now: Timestamp, notices: &mut Vec<SessionNotice>) -> bool {
        if self.tracker.screen_due().is_none_or(|at| at > now) {
            return false;
        }
        self.tracker.ask_screens(now);
        self.carry_out(notices);
        let mut fed = false;
        let (tracker, view) = (&mut self.tracker, &mut self.view);
        let mut sink = |l: FedLine<'_, '_>| -> Result<(), Infallible> {
            fed = true;
            view.on_line(&l, now);
            Ok(())
        };
        for (session, text) in std::mem::take(&mut self.screens) {
            match text {
                Some(text) => {
                    let Ok(()) = tracker.screen_read(session, &text, now, &mut sink);
                }
                None => tracker.screen_failed(session),
            }
        }
        fed
    }

    /// Follows `place` for `session` from `from`. A session file is found under the
    /// agent's home (the one lookup a replay uses too); not there yet, it is looked for at
    /// every full poll. The same file under another name goes on from where it stands;
    /// a file let go reads on from where it stood.
    fn follow(
        &mut self,
        session: usize,
        place: Place,
        from: Offset,
        notices: &mut Vec<SessionNotice>,
    ) {
        if self.files.len() <= session {
            self.files.resize_with(session + 1, || None);
        }
        let path = match place {
            Place::Named(path) => path,
            Place::SessionFile { file, id } => match self.find(&file, &id) {
                Some(path) => path,
                None => {
                    self.files[session] = Some(FileSlot::Unresolved { file, id });
                    return;
                }
            },
        };
        let slot = self.files[session].take();
        let tailer = match slot {
            Some(FileSlot::Open { path: old, tailer }) if old == path || same_file(&old, &path) => {
                self.files[session] = Some(FileSlot::Open { path: old, tailer });
                return;
            }
            Some(FileSlot::Parked { path: old, at })
                if from != Offset::default() && (old == path || same_file(&old, &path)) =>
            {
                match at {
                    Some(cp) => Tailer::resume(Path::new(&path), cp, Prefix::Skip),
                    None => Tailer::new(Path::new(&path)),
                }
            }
            _ => {
                notices.push(SessionNotice::TranscriptFollowed { path: path.clone() });
                Tailer::new(Path::new(&path))
            }
        };
        // The agent's needles: its long entries (Claude Code's `api-request-shape`, tens of
        // KB each) are skipped while read, not held; a long one with a needle is read again.
        let needles = self
            .tracker
            .sessions()
            .get(session)
            .and_then(|s| s.pipeline.detection())
            .and_then(|d| d.provider.descriptor().transcript)
            .map_or(&[][..], |t| t.needles);
        self.files[session] = Some(FileSlot::Open {
            path,
            tailer: Box::new(tailer.skimming(needles)),
        });
    }

    /// A session file under the agent's home (see [`find_session_file`]), once it exists.
    fn find(&self, file: &SessionFile, id: &str) -> Option<String> {
        let home = self.agent_home.as_ref()?;
        find_session_file(home, file, id).and_then(|path| path.to_str().map(str::to_owned))
    }

    /// Reads every followed file's new whole lines into the tracker, tagged with their
    /// session (a session file found now is opened first). True if there were any.
    fn read_files(&mut self) -> bool {
        let mut notices = Vec::new();
        for session in 0..self.files.len() {
            if let Some(FileSlot::Unresolved { file, id }) = &self.files[session] {
                let (file, id) = (*file, id.clone());
                if self.find(&file, &id).is_some() {
                    self.follow(
                        session,
                        Place::SessionFile { file, id },
                        Offset::default(),
                        &mut notices,
                    );
                }
            }
        }
        self.pending.extend(notices);
        let mut any = false;
        for session in 0..self.files.len() {
            let Some(FileSlot::Open { tailer, .. }) = &mut self.files[session] else {
                continue;
            };
            let mut read = Vec::new();
            let polled = tailer.poll(&mut |tl| match tl.line {
                ReadLine::Line { number, bytes } => read.push((number, bytes.to_vec())),
                // A long entry holding no needle is no marker: it is counted as the
                // classifier counts such a line (an object holding no needle is ignored),
                // untimed.
                ReadLine::Long {
                    number,
                    needle: false,
                    ..
                } => read.push((number, SKIMMED.to_vec())),
                _ => {}
            });
            let offset = Offset {
                bytes: tailer.offset(),
                lines: tailer.checkpoint().map_or(0, |cp| cp.lines),
            };
            if !read.is_empty() {
                self.tracker.transcript_read(session, read, offset);
                any = true;
            }
            // A file that cannot be read leaves the hooks alone in charge of its session,
            // no error: it is closed, and asked for again at the session's next row.
            if polled.is_err()
                && let Some(FileSlot::Open { path, tailer }) = self.files[session].take()
            {
                self.files[session] = Some(FileSlot::Parked {
                    at: tailer.checkpoint(),
                    path,
                });
                self.tracker.follow_failed(session);
            }
        }
        any
    }

    /// Settles the end of the watched process, once. True if it ended now.
    fn poll_process(&mut self, now: Timestamp, notices: &mut Vec<SessionNotice>) -> bool {
        let Some(watch) = self.process.as_mut() else {
            return false;
        };
        if !watch.has_ended() {
            return false;
        }
        let (pid, mechanism) = (watch.pid(), watch.mechanism().name());
        self.process = None;
        let view = &mut self.view;
        let Ok(()) = self.tracker.process_ended(Some(pid), Some(now), &mut |l| {
            view.on_line(&l, now);
            Ok::<(), Infallible>(())
        });
        notices.push(SessionNotice::ProcessEnded { pid, mechanism });
        true
    }

    /// Settles the end of each agent session's process the tracker asked to watch (the
    /// `agent_pid` its rows name): the tracker times it and ends an open turn
    /// `terminal_gap`, presence becomes absent, with a [`SessionNotice::ProcessEnded`]; the
    /// end goes out in [`Update::process_ends`] for the store. A pid that now names a
    /// process started after the session's last row was reused: that agent is gone too.
    /// True if any ended.
    fn poll_agents(&mut self, now: Timestamp, notices: &mut Vec<SessionNotice>) -> bool {
        let mut ended_any = false;
        for index in 0..self.agents.len() {
            // Its end is known already (a `process_ended` row): nothing to watch.
            if self
                .view
                .agents
                .get(index)
                .is_some_and(|a| a.gone_since.is_some())
            {
                self.agents[index] = None;
                continue;
            }
            let Some(agent) = self.agents[index].as_mut() else {
                continue;
            };
            if !agent.reused && !agent.watch.has_ended() {
                agent.seen_alive = true;
                continue;
            }
            let pid = agent.watch.pid();
            let mechanism = if agent.reused {
                "its pid now names a later process"
            } else {
                agent.watch.mechanism().name()
            };
            let how = if agent.seen_alive {
                PidEnd::SeenRunning
            } else {
                PidEnd::GoneAtFirstLook
            };
            self.agents[index] = None;
            let view = &mut self.view;
            let Ok(seen) = self.tracker.pid_ended(index, pid, how, now, &mut |l| {
                view.on_line(&l, now);
                Ok::<(), Infallible>(())
            });
            if let Some(seen) = seen {
                self.ended.push(seen);
                notices.push(SessionNotice::ProcessEnded { pid, mechanism });
                ended_any = true;
            }
        }
        ended_any
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
                Ok(record) => {
                    // The collector's record announces its generation: fallback rows of
                    // it are the real session's, not a tool's forgery.
                    if let Some(generation) = record.generation {
                        self.tracker.announce_generation(generation);
                    }
                    self.collector_running = match (record.status, record.pid) {
                        (Some(store::CollectorState::Running), Some(pid)) => {
                            Some((pid, record.clone()))
                        }
                        _ => None,
                    };
                    self.view.channel.on_collector(record);
                }
                Err(e) => notices.push(SessionNotice::BadRecord {
                    detail: error_chain(&e),
                }),
            }
        }
        // A record saying `running` whose process is gone: the collector died without
        // its cleanup, and readers see it stopped, not running.
        if let Some((pid, record)) = &self.collector_running
            && crate::process::is_gone(*pid)
        {
            let mut dead = record.clone();
            dead.status = Some(store::CollectorState::Stopped);
            dead.stopped_at = Some(format!("an unknown time (its process {pid} is gone)"));
            self.collector_running = None;
            self.view.channel.on_collector(dead);
        }
        if let Some(bytes) = changed(&self.paths.channel, &mut self.channel_stamp, notices) {
            match store::parse_channel(&bytes) {
                Ok(record) => {
                    if let Some(generation) = record.generation {
                        self.tracker.announce_generation(generation);
                    }
                    self.view.channel.on_record(record)
                }
                Err(e) => notices.push(SessionNotice::BadRecord {
                    detail: error_chain(&e),
                }),
            }
        }
    }
}

/// The file's bytes if it changed since `stamp` (which is updated).
/// Two names of one file (the session file found under the agent's home, then the same
/// file as a payload names it, through a symlink or a differently spelled home): its
/// follower goes on, rather than a new one reading it again from the start.
fn same_file(a: &str, b: &str) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

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
    // Without blocking and bounded: a FIFO planted as a record must not stall the poll.
    match crate::tail::read_regular(path, MAX_RECORD_BYTES) {
        Ok(bytes) => bytes,
        Err(e) => {
            notices.push(SessionNotice::BadRecord {
                detail: error_chain(&e),
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::same_file;

    /// The session file found under the agent's home and the path a payload names later
    /// may spell one file two ways: its follower goes on.
    #[test]
    fn one_file_named_through_a_symlink_is_the_same_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let session = home.join("session-state/id");
        fs::create_dir_all(&session).expect("mkdir");
        fs::write(session.join("events.jsonl"), "{}\n").expect("log");
        fs::write(session.join("other.jsonl"), "{}\n").expect("log");
        std::os::unix::fs::symlink(&home, dir.path().join("link")).expect("symlink");
        let at = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let found = at(&session.join("events.jsonl"));
        let named = at(&dir.path().join("link/session-state/id/events.jsonl"));
        assert!(same_file(&found, &named));
        assert!(!same_file(&found, &at(&session.join("other.jsonl"))));
        assert!(!same_file(&found, &at(&session.join("missing.jsonl"))));
    }
}
