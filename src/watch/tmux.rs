//! `hooktrack watch --tmux`: each session's posture as tmux user options on the agent's
//! pane (`set-option -p -t PANE @hooktrack_phase blocked`), for `status-right` and
//! `window-status-format` (see `docs/tmux.md`).
//!
//! The tracking loop never waits for tmux: it hands the values to a worker thread over a
//! bounded queue (a value that does not fit is sent again at the next change), and every
//! tmux command is killed after a deadline.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use hooktrack_core::posture::{Phase, TurnResult};
use hooktrack_core::time::Timestamp;

use super::bounded::run_bounded;
use super::facts::{Facts, background_text, coarse_age_text, display_text};
use hooktrack_core::diagnostics::error_chain;

/// The options published on a pane, in this order.
pub const OPTIONS: [&str; 9] = [
    "@hooktrack_agent",
    "@hooktrack_phase",
    "@hooktrack_blocked",
    "@hooktrack_last",
    "@hooktrack_turn",
    "@hooktrack_turn_age",
    "@hooktrack_attention",
    "@hooktrack_status",
    "@hooktrack_background",
];

/// Longest payload-derived text put in an option.
const MAX_VALUE_CHARS: usize = 40;
/// Pane updates waiting for the worker.
const QUEUE: usize = 64;

/// Where the tmux server is.
#[derive(Clone, Debug, Default)]
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
        match run_bounded(&mut command, self.timeout) {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(TmuxError::Failed {
                pane: pane.to_owned(),
                status,
                socket: self
                    .socket
                    .as_deref()
                    .map_or_else(String::new, |s| format!(" on socket {s}")),
            }),
            Err(source) => Err(TmuxError::Run {
                pane: pane.to_owned(),
                source,
            }),
        }
    }
}

/// Why a pane's options could not be set; a warning, never a stop.
#[derive(Debug, thiserror::Error)]
enum TmuxError {
    #[error(
        "tmux set-option on pane {pane} failed ({status}); is the pane there, and the server{socket}?"
    )]
    Failed {
        pane: String,
        status: std::process::ExitStatus,
        socket: String,
    },
    #[error("tmux set-option on pane {pane}")]
    Run {
        pane: String,
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

struct Job {
    pane: String,
    values: Vec<(&'static str, Option<String>)>,
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
}

impl Tmux {
    /// Starts the worker. Problems (tmux missing, a pane gone) are sent to `warnings`,
    /// once each until they change.
    pub fn start(target: TmuxTarget, warnings: Sender<String>) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let target = target.clone();
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("hooktrack-tmux".into())
                .spawn(move || work(&target, &rx, &stop, &warnings))?
        };
        Ok(Self {
            target,
            tx: Some(tx),
            stop,
            worker: Some(worker),
            published: BTreeMap::new(),
            latest: BTreeMap::new(),
        })
    }

    /// A session changed: publish what differs on its pane.
    pub fn update(&mut self, facts: &Facts, now: Timestamp) {
        let Some(pane) = &facts.pane else { return };
        self.latest.insert(pane.clone(), facts.clone());
        self.publish(facts, now);
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
        let Some(tx) = &self.tx else { return };
        let job = Job {
            pane: pane.to_owned(),
            values: OPTIONS.iter().map(|name| (*name, None)).collect(),
        };
        // Full: the removal is lost and the options stay until `finish` removes them.
        if let Err(TrySendError::Disconnected(_)) = tx.try_send(job) {
            self.tx = None;
        }
    }

    /// Time passed: republish turn ages that read differently now.
    pub fn tick(&mut self, now: Timestamp) {
        let latest: Vec<Facts> = self.latest.values().cloned().collect();
        for facts in &latest {
            self.publish(facts, now);
        }
    }

    fn publish(&mut self, facts: &Facts, now: Timestamp) {
        let Some(pane) = &facts.pane else { return };
        let values = values(facts, now);
        if self.published.get(pane) == Some(&values) {
            return;
        }
        let Some(tx) = &self.tx else { return };
        let job = Job {
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

    /// Stops the worker (dropping what it has not sent) and removes hooktrack's options
    /// from every pane it published on, each removal bounded by the timeout.
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
    }
}

fn work(target: &TmuxTarget, rx: &Receiver<Job>, stop: &AtomicBool, warnings: &Sender<String>) {
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
        match target.set(&job.pane, &job.values) {
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

/// The option values for a session, in [`OPTIONS`] order. Empty means "not so", which
/// `#{?@hooktrack_blocked,…,…}` reads as false.
fn values(facts: &Facts, now: Timestamp) -> Vec<String> {
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooktrack_core::posture::Presence;

    fn facts(phase: Phase, tool: Option<&str>) -> Facts {
        Facts {
            session: "s".into(),
            agent: Some("claude-code"),
            presence: Presence::Present,
            phase,
            turn: Some("3".into()),
            turn_started_at: Some(Timestamp::from_millis(1_000)),
            blocked_tool: tool.map(str::to_owned),
            background: 0,
            last_result: TurnResult::None,
            pane: Some("%1".into()),
        }
    }

    #[test]
    fn a_blocked_pane_names_its_tool_and_asks_for_attention() {
        let v = values(
            &facts(Phase::Blocked, Some("Bash")),
            Timestamp::from_millis(66_000),
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
                ""
            ]
        );
        let v = values(&facts(Phase::Active, None), Timestamp::from_millis(13_000));
        assert_eq!(v[2], "");
        assert_eq!(v[6], "");
        assert_eq!(v[7], "claude-code active 10s");
    }

    #[test]
    fn a_ready_pane_with_background_work_says_how_much() {
        let mut f = facts(Phase::Ready, None);
        f.last_result = TurnResult::Success;
        f.background = 1;
        let v = values(&f, Timestamp::from_millis(13_000));
        assert_eq!(v[7], "claude-code ready success · 1 background");
        assert_eq!(v[8], "1");
        assert_eq!(v[6], "", "background work alone asks for nobody");
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
