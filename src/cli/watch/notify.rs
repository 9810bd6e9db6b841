//! `hooktrack watch --on-change CMD`: runs `sh -c CMD` when a session enters `blocked`,
//! ends a turn, or loses its agent, with the facts in its environment.
//!
//! One transition gives one run: `blocked` fires when the hooks move the turn into a
//! blocked window (a withdrawn phase while the channel is degraded neither ends nor
//! starts one), `turn_ended` once per ended main turn, `absent` when presence goes from
//! present to absent. What the log already held when `watch` started is the baseline,
//! not news. Runs happen one at a time on a worker thread, each killed after its
//! timeout; at most [`QUEUE`] wait, further ones are dropped and counted.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use hooktrack_core::posture::{Phase, Presence};
use hooktrack_core::time::Timestamp;
use hooktrack_live::session::Update;

use super::bounded::run_bounded;
use super::facts::{Facts, display_text};
use hooktrack_core::diagnostics::error_chain;

/// Runs waiting for the worker; more are dropped (and counted).
pub const QUEUE: usize = 32;
/// Longest payload-derived text put in a variable.
const MAX_VALUE_CHARS: usize = 200;

/// One run: the variables it gets.
struct Job {
    env: Vec<(&'static str, String)>,
}

/// What was last seen of a session, to tell transitions.
#[derive(Clone, Copy)]
struct Seen {
    blocked: bool,
    absent: bool,
}

pub struct Notifier {
    tx: Option<SyncSender<Job>>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    seen: BTreeMap<String, Seen>,
    dropped: u64,
    warnings: Sender<String>,
}

impl Notifier {
    pub fn start(
        command: String,
        timeout: Duration,
        warnings: Sender<String>,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let stop = Arc::clone(&stop);
            let warnings = warnings.clone();
            std::thread::Builder::new()
                .name("hooktrack-on-change".into())
                .spawn(move || work(&command, timeout, &rx, &stop, &warnings))?
        };
        Ok(Self {
            tx: Some(tx),
            stop,
            worker: Some(worker),
            seen: BTreeMap::new(),
            dropped: 0,
            warnings,
        })
    }

    /// A session's update: queue a run for each transition in it.
    pub fn update(&mut self, facts: &Facts, update: &Update) {
        let blocked_now = facts.phase == Phase::Blocked;
        let absent_now = facts.presence == Presence::Absent;
        let Some(before) = self.seen.get(&facts.session).copied() else {
            // The first update of a session is what the log already held.
            self.seen.insert(
                facts.session.clone(),
                Seen {
                    blocked: blocked_now,
                    absent: absent_now,
                },
            );
            return;
        };
        // Only the hooks end a blocked window: a phase withdrawn to unknown (channel not
        // active) keeps it, so its return is not a second `blocked`.
        let blocked = match facts.phase {
            Phase::Blocked => true,
            Phase::Unknown if facts.presence == Presence::Present => before.blocked,
            _ => false,
        };
        if blocked && !before.blocked {
            self.send(facts, update.at, "blocked", vec![]);
        }
        for turn in update.closed().filter(|t| t.is_main()) {
            let mut extra = vec![
                ("HOOKTRACK_RESULT", turn.result.name().to_owned()),
                (
                    "HOOKTRACK_TURN",
                    turn.turn_id.as_ref().map_or_else(String::new, |t| {
                        display_text(&t.to_string(), MAX_VALUE_CHARS)
                    }),
                ),
            ];
            if let (Some(a), Some(b)) = (turn.started_at, turn.ended_at) {
                extra.push((
                    "HOOKTRACK_TURN_SECONDS",
                    format!(
                        "{:.1}",
                        (b.as_millis() - a.as_millis()).max(0) as f64 / 1000.0
                    ),
                ));
            }
            self.send(facts, update.at, "turn_ended", extra);
        }
        if absent_now && !before.absent {
            self.send(facts, update.at, "absent", vec![]);
        }
        self.seen.insert(
            facts.session.clone(),
            Seen {
                blocked,
                absent: absent_now,
            },
        );
    }

    fn send(
        &mut self,
        facts: &Facts,
        at: Timestamp,
        event: &'static str,
        extra: Vec<(&'static str, String)>,
    ) {
        let mut env = vec![
            ("HOOKTRACK_EVENT", event.to_owned()),
            ("HOOKTRACK_SESSION", facts.session.clone()),
            (
                "HOOKTRACK_AGENT",
                facts.agent.unwrap_or("unknown").to_owned(),
            ),
            ("HOOKTRACK_PHASE", facts.phase_name().to_owned()),
            ("HOOKTRACK_RESULT", facts.last_result.name().to_owned()),
            (
                "HOOKTRACK_TURN",
                facts
                    .turn
                    .as_deref()
                    .map_or_else(String::new, |t| display_text(t, MAX_VALUE_CHARS)),
            ),
            (
                "HOOKTRACK_TOOL",
                facts
                    .blocked_tool
                    .as_deref()
                    .filter(|_| event == "blocked")
                    .map_or_else(String::new, |t| display_text(t, MAX_VALUE_CHARS)),
            ),
            ("HOOKTRACK_PANE", facts.pane.clone().unwrap_or_default()),
            ("HOOKTRACK_AT", at.to_string()),
        ];
        // The event's own facts win over the session's.
        for (name, value) in extra {
            match env.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => env.push((name, value)),
            }
        }
        let Some(tx) = &self.tx else { return };
        match tx.try_send(Job { env }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped += 1;
                if self.dropped == 1 || self.dropped.is_power_of_two() {
                    let _ = self.warnings.send(format!(
                        "on-change: {} runs waiting already; {} notification(s) dropped so far",
                        QUEUE, self.dropped
                    ));
                }
            }
            Err(TrySendError::Disconnected(_)) => self.tx = None,
        }
    }

    /// Stops the worker: the run under way finishes (bounded by the timeout), queued ones
    /// are dropped.
    pub fn finish(mut self) {
        self.tx = None;
        self.stop.store(true, Ordering::SeqCst);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn work(
    command: &str,
    timeout: Duration,
    rx: &Receiver<Job>,
    stop: &AtomicBool,
    warnings: &Sender<String>,
) {
    loop {
        let job = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::SeqCst) => continue,
            Err(_) => return,
        };
        // Stopping: what has not started yet is dropped.
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut run = Command::new("sh");
        run.arg("-c")
            .arg(command)
            .envs(job.env.iter().map(|(k, v)| (k, v)));
        let event = job.env.first().map_or("?", |(_, v)| v.as_str()).to_owned();
        match run_bounded(&mut run, timeout) {
            Ok(status) if status.success() => {}
            Ok(status) => {
                let _ = warnings.send(format!("on-change command for {event}: {status}"));
            }
            Err(e) => {
                let _ = warnings.send(format!(
                    "on-change command for {event}: {}",
                    error_chain(&e)
                ));
            }
        }
    }
}
