//! `hooktrack watch --tmux`: each session's posture as tmux user options on the agent's
//! pane (`set-option -p -t PANE @hooktrack_phase blocked`), for `status-right` and
//! `window-status-format`, and server options counting what waits for the person
//! (`@hooktrack_waiting`, `@hooktrack_done`) and saying a watch runs (`@hooktrack_watch`);
//! see `docs/tmux.md`.
//!
//! A pane waits for the person while its agent is blocked, and once its turn has ended
//! until the person has had it in front of them: the worker asks tmux which panes are
//! visible on an attached client (`list-panes`) while some pane is done.
//!
//! The tracking loop never waits for tmux: it hands the values to a worker thread over a
//! bounded queue (a value that does not fit is sent again at the next change), and every
//! tmux command is killed after a deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use hooktrack_core::posture::{Phase, Presence, TurnResult};
use hooktrack_core::time::Timestamp;

use super::bounded::{run_bounded, run_bounded_output};
use super::facts::{Facts, background_text, call_text, coarse_age_text, display_text};
use hooktrack_core::diagnostics::error_chain;

/// The options published on a pane, in this order.
pub const OPTIONS: [&str; 12] = [
    "@hooktrack_agent",
    "@hooktrack_phase",
    "@hooktrack_blocked",
    "@hooktrack_last",
    "@hooktrack_turn",
    "@hooktrack_turn_age",
    "@hooktrack_attention",
    "@hooktrack_status",
    "@hooktrack_background",
    "@hooktrack_summary",
    "@hooktrack_waits",
    "@hooktrack_waits_since",
];

/// The server options: how many panes wait blocked, how many finished unseen, and the
/// pid of the watch that publishes (absent: no watch runs, the status line can say so).
pub const SERVER_OPTIONS: [&str; 3] = ["@hooktrack_waiting", "@hooktrack_done", "@hooktrack_watch"];

/// Longest payload-derived text put in an option.
const MAX_VALUE_CHARS: usize = 40;
/// Pane updates waiting for the worker.
const QUEUE: usize = 64;

/// Where the tmux server is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TmuxTarget {
    /// `-L NAME` (a name) or `-S PATH` (contains a `/`); `None`: tmux's own default
    /// (`$TMUX` inside tmux).
    pub socket: Option<String>,
    /// Every tmux command is killed after this long.
    pub timeout: Duration,
}

impl TmuxTarget {
    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        match &self.socket {
            Some(s) if s.contains('/') => {
                command.args(["-S", s]);
            }
            Some(s) => {
                command.args(["-L", s]);
            }
            None => {}
        }
        command
    }

    fn socket_text(&self) -> String {
        self.socket
            .as_deref()
            .map_or_else(String::new, |s| format!(" on socket {s}"))
    }

    /// Runs one tmux invocation: `set-option -p [-u] -t PANE NAME [VALUE]` for each
    /// pair, separated by `;`.
    fn set(&self, pane: &str, values: &[(&str, Option<String>)]) -> Result<(), TmuxError> {
        let mut command = self.command();
        for (i, (name, value)) in values.iter().enumerate() {
            if i > 0 {
                command.arg(";");
            }
            match value {
                Some(v) => command.args(["set-option", "-p", "-t", pane, name, v]),
                None => command.args(["set-option", "-p", "-u", "-t", pane, name]),
            };
        }
        self.run(&mut command, &format!("set-option on pane {pane}"))
    }

    /// The server options: `set-option -s NAME VALUE` for each pair, in one invocation.
    fn set_server(&self, values: &[(&str, String)]) -> Result<(), TmuxError> {
        let mut command = self.command();
        for (i, (name, value)) in values.iter().enumerate() {
            if i > 0 {
                command.arg(";");
            }
            command.args(["set-option", "-s", name, value]);
        }
        self.run(&mut command, "set-option on the server")
    }

    /// Removes the server options, if `@hooktrack_watch` still names `pid`: a second
    /// watch on the server took them over, and they are its.
    fn unset_server(&self, pid: u32) -> Result<(), TmuxError> {
        let unset: Vec<String> = SERVER_OPTIONS
            .iter()
            .map(|o| format!("set-option -s -u {o}"))
            .collect();
        let mut command = self.command();
        command.args([
            "if-shell",
            "-F",
            &format!("#{{==:#{{@hooktrack_watch}},{pid}}}"),
            &unset.join(" ; "),
        ]);
        self.run(&mut command, "set-option -u on the server")
    }

    fn run(&self, command: &mut Command, what: &str) -> Result<(), TmuxError> {
        match run_bounded(command, self.timeout) {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(TmuxError::Failed {
                what: what.to_owned(),
                status,
                socket: self.socket_text(),
            }),
            Err(source) => Err(TmuxError::Run {
                what: what.to_owned(),
                source,
            }),
        }
    }

    /// Starts one tmux command and does not wait for it (`display-menu`, which tmux
    /// answers only when the menu closes).
    pub(super) fn start(&self, args: &[String]) -> Result<(), TmuxError> {
        let mut command = self.command();
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let what = args.first().map_or("tmux", String::as_str).to_owned();
        command.spawn().map(drop).map_err(|source| TmuxError::Run {
            what,
            source: super::bounded::RunError::Spawn { source },
        })
    }

    /// Runs one tmux command that answers (`list-clients`, `display-message -p`) and
    /// returns what it printed.
    pub(super) fn query(&self, args: &[&str]) -> Result<String, TmuxError> {
        let mut command = self.command();
        command.args(args);
        let what = args.first().copied().unwrap_or("tmux").to_owned();
        match run_bounded_output(&mut command, self.timeout) {
            Ok((status, out)) if status.success() => Ok(String::from_utf8_lossy(&out).into_owned()),
            Ok((status, _)) => Err(TmuxError::Failed {
                what,
                status,
                socket: self.socket_text(),
            }),
            Err(source) => Err(TmuxError::Run { what, source }),
        }
    }
}

/// Why a tmux command failed; for `watch` a warning, never a stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TmuxError {
    #[error("tmux {what} failed ({status}); is the pane there, and the server{socket}?")]
    Failed {
        what: String,
        status: std::process::ExitStatus,
        socket: String,
    },
    #[error("tmux {what}")]
    Run {
        what: String,
        #[source]
        source: super::bounded::RunError,
    },
}

/// True for what `--tmux-pane` accepts as a target: tmux target characters only (a
/// pane id `%3`, `session:window.pane`), not starting with `-`.
pub fn is_pane_target(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 128
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "%$@:._+=-".contains(c))
}

enum Job {
    Pane {
        pane: String,
        values: Vec<(&'static str, Option<String>)>,
    },
    Server(Vec<(&'static str, String)>),
    /// Which panes are in front of the person now (answered on the looks channel).
    Look,
}

/// The jobs a [`Tmux::without_worker`] queued, for a test to look at.
#[cfg(test)]
pub(super) struct Queued(Receiver<Job>);

#[cfg(test)]
impl Queued {
    /// The options queued for `pane` so far (the server's and other panes' are skipped).
    pub(super) fn for_pane(&self, pane: &str) -> usize {
        self.0
            .try_iter()
            .filter(|job| matches!(job, Job::Pane { pane: p, .. } if p == pane))
            .count()
    }
}

/// What an update leaves to the next tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Defer {
    Nothing,
    /// A change of the summary alone (the call a working turn runs): a tool's start is
    /// followed at once by its permission request, whose `blocked` must not wait behind a
    /// tmux command for it; a call shorter than a tick is never shown.
    RunningCall,
}

/// True when two option lists ([`OPTIONS`] order) differ in `@hooktrack_summary` alone.
fn only_summary_differs(published: &[String], values: &[String]) -> bool {
    const SUMMARY: usize = 9;
    published.len() == values.len()
        && published
            .iter()
            .zip(values)
            .enumerate()
            .all(|(i, (a, b))| i == SUMMARY || a == b)
}

/// Why a pane waits for the person (`@hooktrack_waits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waits {
    /// Its agent waits for an answer.
    Blocked,
    /// Its turn ended after the person last had the pane in front of them.
    Done,
}

impl Waits {
    fn word(self) -> &'static str {
        match self {
            Waits::Blocked => "blocked",
            Waits::Done => "done",
        }
    }
}

/// The publisher, owned by the tracking loop.
pub struct Tmux {
    target: TmuxTarget,
    tx: Option<SyncSender<Job>>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    /// What each pane was last sent, to send only changes.
    published: BTreeMap<String, Vec<String>>,
    /// The latest facts per pane, to refresh the turn age between updates (a pane shows
    /// one session: the one whose rows came last).
    latest: BTreeMap<String, Facts>,
    /// Since when each blocked pane has been blocked (the first update that said so).
    blocked_since: BTreeMap<String, Timestamp>,
    /// Each pane's last ended turn (its epoch) and when it ended: its line's time, else
    /// when an update first showed it.
    ended: BTreeMap<String, (Option<u64>, Timestamp)>,
    /// When each pane was last seen in front of the person; before that, the watch's
    /// start: what ended earlier is history, as for notifications.
    looked: BTreeMap<String, Timestamp>,
    started: Timestamp,
    /// The worker's answers to [`Job::Look`]: the panes visible on an attached client.
    looks: Receiver<BTreeSet<String>>,
    /// When the look under way was asked for: what ended after it is news even to a
    /// pane that look finds visible (the person may have gone away since).
    looking: Option<Timestamp>,
    /// The counts last sent (`@hooktrack_waiting`, `@hooktrack_done`).
    counts: Option<(usize, usize)>,
}

impl Tmux {
    /// Starts the worker and says on the server that a watch runs (`@hooktrack_watch`).
    /// Problems (tmux missing, a pane gone) are sent to `warnings`, once each until they
    /// change.
    pub fn start(
        target: TmuxTarget,
        now: Timestamp,
        warnings: Sender<String>,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let (looks_tx, looks) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let target = target.clone();
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("hooktrack-tmux".into())
                .spawn(move || work(&target, &rx, &stop, &warnings, &looks_tx))?
        };
        Ok(Self::with_queue(target, now, tx, stop, Some(worker), looks))
    }

    /// The publisher around its queue (the worker, if any, reads the other end).
    fn with_queue(
        target: TmuxTarget,
        now: Timestamp,
        tx: SyncSender<Job>,
        stop: Arc<AtomicBool>,
        worker: Option<JoinHandle<()>>,
        looks: Receiver<BTreeSet<String>>,
    ) -> Self {
        let mut tmux = Self {
            target,
            tx: Some(tx),
            stop,
            worker,
            published: BTreeMap::new(),
            latest: BTreeMap::new(),
            blocked_since: BTreeMap::new(),
            ended: BTreeMap::new(),
            looked: BTreeMap::new(),
            started: now,
            looks,
            looking: None,
            counts: None,
        };
        tmux.send(Job::Server(vec![(
            "@hooktrack_watch",
            std::process::id().to_string(),
        )]));
        tmux.publish_counts();
        tmux
    }

    /// A publisher whose jobs no worker runs: the test reads the queue instead.
    #[cfg(test)]
    pub(super) fn without_worker(target: TmuxTarget, now: Timestamp) -> (Self, Queued) {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let (_, looks) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let tmux = Self::with_queue(target, now, tx, stop, None, looks);
        (tmux, Queued(rx))
    }

    /// A session changed: publish what differs on its pane.
    pub fn update(&mut self, facts: &Facts, now: Timestamp) {
        let Some(pane) = &facts.pane else { return };
        if facts.phase == Phase::Blocked && facts.presence != Presence::Absent {
            self.blocked_since.entry(pane.clone()).or_insert(now);
        } else {
            self.blocked_since.remove(pane);
        }
        if facts.last_result != TurnResult::None
            && self
                .ended
                .get(pane)
                .is_none_or(|(epoch, _)| *epoch != facts.last_turn_epoch)
        {
            // A line without a time: ended now, unless this is the pane's first
            // update, which holds what the logs held (history).
            let seen = self.latest.contains_key(pane);
            let at = facts
                .last_turn_at
                .unwrap_or(if seen { now } else { self.started });
            self.ended.insert(pane.clone(), (facts.last_turn_epoch, at));
        }
        self.latest.insert(pane.clone(), facts.clone());
        self.publish(facts, now, Defer::RunningCall);
        self.publish_counts();
    }

    /// A session was dropped (its agent gone past the grace period): its pane's options
    /// are removed, and nothing is published there until a session names it again.
    /// `session` is the dropped one: a pane another session shows since is left alone.
    pub fn forget(&mut self, pane: &str, session: &str) {
        if self.latest.get(pane).is_none_or(|f| f.session != session) {
            return;
        }
        self.latest.remove(pane);
        self.published.remove(pane);
        self.blocked_since.remove(pane);
        self.ended.remove(pane);
        // Full: the removal is lost and the options stay until `finish` removes them.
        self.send(Job::Pane {
            pane: pane.to_owned(),
            values: OPTIONS.iter().map(|name| (*name, None)).collect(),
        });
        self.publish_counts();
    }

    /// Time passed: take in which panes the person has in front of them, republish turn
    /// ages that read differently now, and ask again while some pane is done.
    pub fn tick(&mut self, now: Timestamp) {
        for visible in self.looks.try_iter().collect::<Vec<_>>() {
            let asked = self.looking.take().unwrap_or(self.started);
            for pane in visible {
                self.looked.insert(pane, asked);
            }
        }
        let latest: Vec<Facts> = self.latest.values().cloned().collect();
        for facts in &latest {
            self.publish(facts, now, Defer::Nothing);
        }
        self.publish_counts();
        let some_done = latest
            .iter()
            .any(|f| self.waits(f).is_some_and(|(w, _)| w == Waits::Done));
        if some_done && self.looking.is_none() && self.send(Job::Look) {
            self.looking = Some(now);
        }
    }

    /// Whether and since when the pane of `facts` waits for the person.
    fn waits(&self, facts: &Facts) -> Option<(Waits, Timestamp)> {
        let pane = facts.pane.as_ref()?;
        waits(
            facts,
            self.blocked_since
                .get(pane)
                .copied()
                .unwrap_or(self.started),
            self.ended.get(pane).map(|(_, at)| *at),
            self.looked.get(pane).copied().unwrap_or(self.started),
        )
    }

    fn publish(&mut self, facts: &Facts, now: Timestamp, defer: Defer) {
        let Some(pane) = &facts.pane else { return };
        let values = values(facts, now, self.waits(facts));
        let published = self.published.get(pane);
        if published == Some(&values)
            || (defer == Defer::RunningCall
                && published.is_some_and(|p| only_summary_differs(p, &values)))
        {
            return;
        }
        let Some(tx) = &self.tx else { return };
        let job = Job::Pane {
            pane: pane.clone(),
            values: OPTIONS
                .iter()
                .copied()
                .zip(values.iter().cloned().map(Some))
                .collect(),
        };
        match tx.try_send(job) {
            Ok(()) => {
                self.published.insert(pane.clone(), values);
            }
            // Full: tmux is slow; this pane is sent again at its next change or tick.
            Err(TrySendError::Full(_)) => {
                self.published.remove(pane);
            }
            Err(TrySendError::Disconnected(_)) => self.tx = None,
        }
    }

    /// `@hooktrack_waiting` and `@hooktrack_done`, when they changed.
    fn publish_counts(&mut self) {
        let (mut waiting, mut done) = (0, 0);
        for facts in self.latest.values() {
            match self.waits(facts) {
                Some((Waits::Blocked, _)) => waiting += 1,
                Some((Waits::Done, _)) => done += 1,
                None => {}
            }
        }
        if self.counts == Some((waiting, done)) {
            return;
        }
        let job = Job::Server(vec![
            ("@hooktrack_waiting", waiting.to_string()),
            ("@hooktrack_done", done.to_string()),
        ]);
        // Not queued: sent again at the next update or tick.
        self.counts = self.send(job).then_some((waiting, done));
    }

    /// Queues a job; `false` when it could not be (the queue full, the worker gone).
    fn send(&mut self, job: Job) -> bool {
        let Some(tx) = &self.tx else { return false };
        match tx.try_send(job) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => false,
            Err(TrySendError::Disconnected(_)) => {
                self.tx = None;
                false
            }
        }
    }

    /// Stops the worker (dropping what it has not sent) and removes hooktrack's options
    /// from every pane it published on and from the server, each removal bounded by the
    /// timeout.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.tx = None;
        if let Some(worker) = self.worker.take() {
            // The worker ends after its current tmux command, itself bounded.
            let _ = worker.join();
        }
        for pane in self.published.keys() {
            let unset: Vec<(&str, Option<String>)> = OPTIONS.iter().map(|o| (*o, None)).collect();
            let _ = self.target.set(pane, &unset);
        }
        let _ = self.target.unset_server(std::process::id());
    }
}

fn work(
    target: &TmuxTarget,
    rx: &Receiver<Job>,
    stop: &AtomicBool,
    warnings: &Sender<String>,
    looks: &Sender<BTreeSet<String>>,
) {
    let mut last_problem: Option<String> = None;
    loop {
        let job = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::SeqCst) => continue,
            Err(_) => return,
        };
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let result = match job {
            Job::Pane { pane, values } => target.set(&pane, &values),
            Job::Server(values) => target.set_server(&values),
            Job::Look => {
                let answer = target.query(&[
                    "list-panes",
                    "-a",
                    "-F",
                    "#{pane_id} #{pane_active} #{window_active} #{session_attached}",
                ]);
                // Answered even on failure, so that the next tick asks again.
                let _ = looks.send(answer.as_deref().map(visible_panes).unwrap_or_default());
                answer.map(|_| ())
            }
        };
        match result {
            Ok(()) => last_problem = None,
            Err(e) => {
                let problem = error_chain(&e);
                if last_problem.as_deref() != Some(problem.as_str()) {
                    let _ = warnings.send(problem.clone());
                    last_problem = Some(problem);
                }
            }
        }
    }
}

/// Whether and since when a pane waits for the person: its agent blocked (since
/// `blocked_since`), or its turn `ended` after the person `looked` at it last.
fn waits(
    facts: &Facts,
    blocked_since: Timestamp,
    ended: Option<Timestamp>,
    looked: Timestamp,
) -> Option<(Waits, Timestamp)> {
    if facts.presence == Presence::Absent {
        return None;
    }
    if facts.phase == Phase::Blocked {
        return Some((Waits::Blocked, blocked_since));
    }
    let ended = ended?;
    (facts.phase == Phase::Ready && facts.last_result != TurnResult::None && ended > looked)
        .then_some((Waits::Done, ended))
}

/// The panes of `list-panes -a -F '#{pane_id} #{pane_active} #{window_active}
/// #{session_attached}'` that a person sees: the active pane of the current window of a
/// session some client is attached to.
fn visible_panes(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let pane = fields.next()?;
            let shown = fields.next()? == "1"
                && fields.next()? == "1"
                && fields.next()?.parse::<u32>().is_ok_and(|n| n > 0);
            shown.then(|| pane.to_owned())
        })
        .collect()
}

/// The option values for a session, in [`OPTIONS`] order. Empty means "not so", which
/// `#{?@hooktrack_blocked,…,…}` reads as false.
fn values(facts: &Facts, now: Timestamp, waits: Option<(Waits, Timestamp)>) -> Vec<String> {
    let agent = facts
        .agent
        .unwrap_or(super::facts::UNKNOWN_AGENT)
        .to_owned();
    let phase = facts.phase_name().to_owned();
    let blocked = if facts.phase == Phase::Blocked {
        facts.blocked_tool.as_deref().map_or_else(
            || "permission".to_owned(),
            |t| display_text(t, MAX_VALUE_CHARS),
        )
    } else {
        String::new()
    };
    let last = facts.last_result.name().to_owned();
    let turn = facts
        .turn
        .as_deref()
        .map_or_else(String::new, |t| display_text(t, MAX_VALUE_CHARS));
    let age = facts
        .turn_age_ms(now)
        .map_or_else(String::new, coarse_age_text);
    // A person should look: it waits for an answer, or its last turn did not succeed.
    let attention = facts.phase == Phase::Blocked
        || (facts.phase == Phase::Ready
            && matches!(
                facts.last_result,
                TurnResult::Interrupted | TurnResult::KnownFailure | TurnResult::TerminalGap
            ));
    let status = match facts.phase {
        Phase::Blocked => format!("{agent} blocked {blocked}"),
        Phase::Active if !age.is_empty() => format!("{agent} active {age}"),
        Phase::Ready if facts.last_result != TurnResult::None => format!("{agent} ready {last}"),
        _ => format!("{agent} {phase}"),
    } + &background_text(facts.background);
    let background = match facts.background {
        0 => String::new(),
        n => n.to_string(),
    };
    // What the agent does or waits on, for a menu or a window list: the phase's own
    // words, the tool a blocked turn waits on or the call a running one makes, with what
    // it acts on (`waits on Bash: cargo build --rel…`).
    let running = facts
        .running_call
        .as_ref()
        .map_or_else(String::new, |call| {
            format!(
                " · {}",
                call_text(&call.tool, call.argument.as_deref(), MAX_VALUE_CHARS)
            )
        });
    let summary = if facts.presence == Presence::Absent {
        "gone".to_owned()
    } else {
        match facts.phase {
            Phase::Blocked => match (&facts.blocked_tool, &facts.blocked_argument) {
                (Some(tool), argument) => {
                    format!(
                        "waits on {}",
                        call_text(tool, argument.as_deref(), MAX_VALUE_CHARS)
                    )
                }
                (None, _) => format!("waits on {blocked}"),
            },
            Phase::Active if !age.is_empty() => format!("works, {age}{running}"),
            Phase::Active => format!("works{running}"),
            Phase::Ready if facts.last_result != TurnResult::None => format!("turn ended: {last}"),
            Phase::Ready => "ready".to_owned(),
            Phase::Unknown => "unknown".to_owned(),
        }
    } + &background_text(facts.background);
    let (waits, since) = waits.map_or_else(
        || (String::new(), String::new()),
        |(w, at)| (w.word().to_owned(), at.as_millis().to_string()),
    );
    vec![
        agent,
        phase,
        blocked,
        last,
        turn,
        age,
        if attention { "1" } else { "" }.to_owned(),
        status,
        background,
        summary,
        waits,
        since,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooktrack_core::posture::RunningCall;

    fn facts(phase: Phase, tool: Option<&str>) -> Facts {
        Facts {
            session: "s".into(),
            agent: Some("claude-code"),
            presence: Presence::Present,
            phase,
            turn: Some("3".into()),
            turn_started_at: Some(Timestamp::from_millis(1_000)),
            blocked_tool: tool.map(str::to_owned),
            blocked_argument: None,
            running_call: None,
            background: 0,
            last_result: TurnResult::None,
            last_turn_at: None,
            last_turn_epoch: None,
            pane: Some("%1".into()),
        }
    }

    #[test]
    fn a_blocked_pane_names_its_tool_and_asks_for_attention() {
        let v = values(
            &facts(Phase::Blocked, Some("Bash")),
            Timestamp::from_millis(66_000),
            Some((Waits::Blocked, Timestamp::from_millis(60_000))),
        );
        assert_eq!(
            v,
            [
                "claude-code",
                "blocked",
                "Bash",
                "none",
                "3",
                "1m",
                "1",
                "claude-code blocked Bash",
                "",
                "waits on Bash",
                "blocked",
                "60000",
            ]
        );
        let v = values(
            &facts(Phase::Active, None),
            Timestamp::from_millis(13_000),
            None,
        );
        assert_eq!(v[2], "");
        assert_eq!(v[6], "");
        assert_eq!(v[7], "claude-code active 10s");
        assert_eq!(v[9], "works, 10s");
        assert_eq!((v[10].as_str(), v[11].as_str()), ("", ""));
    }

    #[test]
    fn a_blocked_panes_summary_names_the_command_it_waits_on_cut_and_made_safe() {
        let mut f = facts(Phase::Blocked, Some("Bash"));
        // As the core hands it: already cut to its length, control characters kept.
        f.blocked_argument = Some(format!(
            "cargo build #{{E:x}}; \x1b]0;t\x07 {}…",
            "x".repeat(30)
        ));
        let v = values(&f, Timestamp::from_millis(2_000), None);
        assert_eq!(v[2], "Bash", "@hooktrack_blocked stays the tool alone");
        assert_eq!(
            v[9],
            format!(
                "waits on Bash: cargo build __E:x__ \\u{{1b}}]0_t\\u{{7}} {}…",
                "x".repeat(30)
            )
        );
        f.blocked_argument = None;
        let v = values(&f, Timestamp::from_millis(2_000), None);
        assert_eq!(v[9], "waits on Bash", "no argument: the tool alone");
    }

    #[test]
    fn a_working_panes_summary_names_the_call_it_runs() {
        let mut f = facts(Phase::Active, None);
        f.running_call = Some(RunningCall {
            tool: "Read".into(),
            argument: Some("/src/main.rs".into()),
        });
        let v = values(&f, Timestamp::from_millis(13_000), None);
        assert_eq!(v[9], "works, 10s · Read: /src/main.rs");
        f.running_call = Some(RunningCall {
            tool: "mcp__x".into(),
            argument: None,
        });
        f.turn_started_at = None;
        let v = values(&f, Timestamp::from_millis(13_000), None);
        assert_eq!(v[9], "works · mcp__x");
    }

    #[test]
    fn a_running_calls_summary_alone_waits_for_the_tick_and_blocked_never_does() {
        let at = Timestamp::from_millis;
        let mut working = facts(Phase::Active, None);
        let published = values(&working, at(13_000), None);
        working.running_call = Some(RunningCall {
            tool: "Bash".into(),
            argument: Some("make".into()),
        });
        let now = values(&working, at(13_000), None);
        assert_eq!(OPTIONS[9], "@hooktrack_summary");
        assert!(only_summary_differs(&published, &now));
        let blocked = values(
            &facts(Phase::Blocked, Some("Bash")),
            at(13_000),
            Some((Waits::Blocked, at(13_000))),
        );
        assert!(!only_summary_differs(&published, &blocked));
    }

    #[test]
    fn a_ready_pane_with_background_work_says_how_much() {
        let mut f = facts(Phase::Ready, None);
        f.last_result = TurnResult::Success;
        f.background = 1;
        let v = values(&f, Timestamp::from_millis(13_000), None);
        assert_eq!(v[7], "claude-code ready success · 1 background");
        assert_eq!(v[9], "turn ended: success · 1 background");
        assert_eq!(v[8], "1");
        assert_eq!(v[6], "", "background work alone asks for nobody");
    }

    #[test]
    fn a_finished_turn_waits_until_the_person_has_looked_and_a_blocked_one_always() {
        let at = Timestamp::from_millis;
        let mut f = facts(Phase::Ready, None);
        f.last_result = TurnResult::Success;
        let ended = Some(at(5_000));
        assert_eq!(
            waits(&f, at(0), ended, at(4_000)),
            Some((Waits::Done, at(5_000)))
        );
        assert_eq!(waits(&f, at(0), ended, at(6_000)), None, "looked at since");
        f.last_result = TurnResult::None;
        assert_eq!(waits(&f, at(0), ended, at(0)), None, "no turn ended");
        let blocked = facts(Phase::Blocked, Some("Bash"));
        assert_eq!(
            waits(&blocked, at(7_000), None, at(9_000)),
            Some((Waits::Blocked, at(7_000))),
            "looking does not answer"
        );
        let mut gone = blocked;
        gone.presence = Presence::Absent;
        assert_eq!(waits(&gone, at(7_000), None, at(0)), None);
    }

    #[test]
    fn a_pane_in_front_of_the_person_is_one_an_attached_client_shows() {
        let listing = "%1 1 1 1\n%2 0 1 1\n%3 1 0 1\n%4 1 1 0\n%5 1 1 2\n";
        let visible: Vec<String> = visible_panes(listing).into_iter().collect();
        assert_eq!(visible, ["%1", "%5"]);
    }

    #[test]
    fn pane_targets_are_tmux_targets_only() {
        assert!(is_pane_target("%3"));
        assert!(is_pane_target("work:2.1"));
        assert!(!is_pane_target("-t"));
        assert!(!is_pane_target("a;b"));
        assert!(!is_pane_target(""));
    }
}
