//! `hooktrack watch --on-change CMD`: runs `sh -c CMD` when a session enters `blocked`,
//! ends a turn, or loses its agent, with the facts in its environment.
//!
//! One transition gives one run: `blocked` fires when the hooks move the turn into a
//! blocked window (a withdrawn phase while the channel is degraded neither ends nor
//! starts one), `turn_ended` once per ended main turn, `absent` when presence goes from
//! present to absent. What the log already held when `watch` started is the baseline,
//! not news. Runs happen one at a time on a worker thread, each killed after its
//! timeout; at most [`QUEUE`] wait, further ones are dropped and counted.
//!
//! `watch --notify` is the same transitions with a built-in action ([`Desktop`]): a
//! desktop notification through `notify-send`, or the terminal's own notification escape
//! (OSC 777 and OSC 9, wrapped for tmux passthrough inside tmux) written to the
//! controlling terminal. A person is not paged twice for the same thing in a row: one
//! notification per session and event per [`DESKTOP_GAP`], the rest dropped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::posture::{Phase, Presence};
use hooktrack_core::time::Timestamp;

use super::bounded::run_bounded;
use super::facts::{Facts, display_text, shown_again};
use super::tmux::{TmuxError, TmuxTarget};
use crate::safe_text::markup;
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::store::is_tmux_pane_id;

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

/// What a transition does.
#[derive(Clone, Debug)]
pub enum Action {
    /// `sh -c CMD` with the facts in its environment (`--on-change`).
    Shell(String),
    /// A notification for a person (`--notify`).
    Desktop(Desktop),
}

/// How `--notify` reaches the person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Desktop {
    /// `notify-send TITLE BODY` (a desktop session's notification daemon).
    NotifySend(PathBuf),
    /// OSC 777 then OSC 9 on the controlling terminal; `tmux`: wrapped in tmux's DCS
    /// passthrough (needs `set -g allow-passthrough on`, and reaches a client only while
    /// the writing pane is visible on it).
    Osc { tmux: bool },
    /// Everyone attached to a tmux server: OSC 777 then OSC 9 written to the terminal of
    /// every client of the server (`list-clients`), whichever window is visible, and a
    /// bell in the agent's pane, so that its window gets tmux's bell flag; also
    /// `notify-send` when one is given (a desktop session).
    Tmux {
        target: TmuxTarget,
        notify_send: Option<PathBuf>,
    },
}

/// One notification per session and event at most this often.
pub const DESKTOP_GAP: Duration = Duration::from_secs(5);

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
        action: Action,
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
                .spawn(move || work(&action, timeout, &rx, &stop, &warnings))?
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
    /// `key` names the session for good (its store and `session_id`, or a fleet's bucket
    /// key); `new`: it appeared after the first look at its store, so its first update is
    /// news, not history. `at` is the update's time, `closed` the turns it ended: a local
    /// session's `Update` and a remote one's record both come down to these.
    pub fn update<'a>(
        &mut self,
        key: &str,
        new: bool,
        facts: &Facts,
        at: Timestamp,
        closed: impl IntoIterator<Item = &'a TurnRecord>,
    ) {
        let blocked_now = facts.phase == Phase::Blocked;
        let absent_now = facts.presence == Presence::Absent;
        if new && !self.seen.contains_key(key) {
            self.seen.insert(
                key.to_owned(),
                Seen {
                    blocked: false,
                    absent: false,
                },
            );
        }
        let Some(before) = self.seen.get(key).copied() else {
            // The first update of a session is what the log already held.
            self.seen.insert(
                key.to_owned(),
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
            self.send(facts, at, "blocked", vec![]);
        }
        for turn in closed.into_iter().filter(|t| t.is_main()) {
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
            self.send(facts, at, "turn_ended", extra);
        }
        if absent_now && !before.absent {
            self.send(facts, at, "absent", vec![]);
        }
        self.seen.insert(
            key.to_owned(),
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
                facts
                    .agent
                    .unwrap_or(super::facts::UNKNOWN_AGENT)
                    .to_owned(),
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
            // What the waiting call acts on (its command, file), cut: the notification
            // names it, as the pane's summary does.
            (
                "HOOKTRACK_ARGUMENT",
                facts
                    .blocked_argument
                    .as_deref()
                    .filter(|_| event == "blocked" && facts.blocked_tool.is_some())
                    .map_or_else(String::new, |a| {
                        display_text(a, hooktrack_core::tool_argument::MAX_ARGUMENT_CHARS)
                    }),
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
    action: &Action,
    timeout: Duration,
    rx: &Receiver<Job>,
    stop: &AtomicBool,
    warnings: &Sender<String>,
) {
    let mut last_sent: BTreeMap<(String, String), Instant> = BTreeMap::new();
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
        let event = job.env.first().map_or("?", |(_, v)| v.as_str()).to_owned();
        let command = match action {
            Action::Shell(command) => {
                let mut run = Command::new("sh");
                run.arg("-c")
                    .arg(command)
                    .envs(job.env.iter().map(|(k, v)| (k, v)));
                run
            }
            Action::Desktop(desktop) => {
                let key = (var(&job, "HOOKTRACK_SESSION").to_owned(), event.clone());
                if last_sent
                    .get(&key)
                    .is_some_and(|at| at.elapsed() < DESKTOP_GAP)
                {
                    continue;
                }
                last_sent.insert(key, Instant::now());
                let (title, body) = message(&job);
                match desktop {
                    Desktop::NotifySend(program) => notify_send(program, &title, &body),
                    Desktop::Osc { tmux } => {
                        if let Err(e) = write_tty(&osc(&title, &body, *tmux)) {
                            let _ =
                                warnings.send(format!("notify: cannot write to the terminal: {e}"));
                        }
                        continue;
                    }
                    Desktop::Tmux {
                        target,
                        notify_send: program,
                    } => {
                        let pane = var(&job, "HOOKTRACK_PANE");
                        if let Err(e) = tmux_clients(target, &osc(&title, &body, false), pane) {
                            let _ = warnings.send(format!("notify: {}", error_chain(&e)));
                        }
                        match program {
                            Some(program) => notify_send(program, &title, &body),
                            None => continue,
                        }
                    }
                }
            }
        };
        let mut run = command;
        let who = match action {
            Action::Shell(_) => "on-change command",
            Action::Desktop(_) => "notify-send",
        };
        match run_bounded(&mut run, timeout) {
            Ok(status) if status.success() => {}
            Ok(status) => {
                let _ = warnings.send(format!("{who} for {event}: {status}"));
            }
            Err(e) => {
                let _ = warnings.send(format!("{who} for {event}: {}", error_chain(&e)));
            }
        }
    }
}

fn var<'a>(job: &'a Job, name: &str) -> &'a str {
    job.env
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The notification's title and body: `claude-code blocked` / `Write · %3 · claude`.
fn message(job: &Job) -> (String, String) {
    let agent = var(job, "HOOKTRACK_AGENT");
    let event = var(job, "HOOKTRACK_EVENT");
    let what = match event {
        "blocked" => "waits for you",
        "turn_ended" => "turn ended",
        "absent" => "is gone",
        other => other,
    };
    let title = format!("{agent} {what}");
    let call;
    let detail = match event {
        "blocked" => {
            // Both already made safe where the job was made.
            call = match (var(job, "HOOKTRACK_TOOL"), var(job, "HOOKTRACK_ARGUMENT")) {
                (tool, "") => tool.to_owned(),
                (tool, argument) => format!("{tool}: {argument}"),
            };
            call.as_str()
        }
        "turn_ended" => var(job, "HOOKTRACK_RESULT"),
        _ => "",
    };
    let body: Vec<&str> = [
        detail,
        var(job, "HOOKTRACK_PANE"),
        var(job, "HOOKTRACK_SESSION"),
    ]
    .into_iter()
    .filter(|p| !p.is_empty())
    .collect();
    (display_text(&title, 80), osc_text(&body.join(" · "), 160))
}

/// A notification body: at most `max` characters, no `;` (it would end OSC 777's title
/// field), controls shown; the tool name's `\u{1b}` (already made safe) shown as it is.
fn osc_text(text: &str, max: usize) -> String {
    shown_again(text, max, ';')
}

/// OSC 777 (`notify;TITLE;BODY`: urxvt, foot, WezTerm, Ghostty...) then OSC 9 (`BODY`:
/// iTerm2, Windows Terminal, kitty...), each ended by BEL; a terminal ignores the one it
/// does not know. Inside tmux each goes through tmux's passthrough (`ESC P tmux;` with
/// every ESC doubled, then `ESC \`). The texts have no control characters and no `;`
/// ([`display_text`], `osc_text`), so they cannot end the sequence early.
pub fn osc(title: &str, body: &str, tmux: bool) -> Vec<u8> {
    let sequences = [
        format!("\x1b]777;notify;{title};{body}\x07"),
        format!("\x1b]9;{title}: {body}\x07"),
    ];
    let mut out = Vec::new();
    for seq in sequences {
        if tmux {
            out.extend_from_slice(b"\x1bPtmux;");
            out.extend_from_slice(seq.replace('\x1b', "\x1b\x1b").as_bytes());
            out.extend_from_slice(b"\x1b\\");
        } else {
            out.extend_from_slice(seq.as_bytes());
        }
    }
    out
}

fn notify_send(program: &PathBuf, title: &str, body: &str) -> Command {
    let mut run = Command::new(program);
    // notify-send reads a subset of HTML: a tool named `<a href=…>` is shown as text.
    run.args(["--app-name", "hooktrack", &markup(title), &markup(body)]);
    run
}

/// Why a notification did not reach a tmux server's clients; a warning, never a stop.
#[derive(Debug, thiserror::Error)]
enum ClientsError {
    #[error("cannot list the tmux clients")]
    List {
        #[source]
        source: TmuxError,
    },
    #[error("cannot write to the terminal {tty}")]
    Write {
        tty: String,
        #[source]
        source: std::io::Error,
    },
}

/// `bytes` to the terminal of every client attached to the server (tmux forwards a
/// pane's passthrough only to the clients that show that pane: a `watch` in a window in
/// the background would reach nobody), then a bell in the agent's `pane` (a `%` id),
/// which tmux turns into its window's bell flag and `bell-action`. Every client is
/// tried; the first failure is reported.
fn tmux_clients(target: &TmuxTarget, bytes: &[u8], pane: &str) -> Result<(), ClientsError> {
    let ttys = target
        .query(&["list-clients", "-F", "#{client_tty}"])
        .map_err(|source| ClientsError::List { source })?;
    let mut first = None;
    for tty in ttys.lines().filter(|t| t.starts_with("/dev/")) {
        if let Err(source) = write_terminal(tty, bytes)
            && first.is_none()
        {
            first = Some(ClientsError::Write {
                tty: tty.to_owned(),
                source,
            });
        }
    }
    // The bell goes to the pane's terminal as output, as a program in it would ring it.
    // Best effort: a pane gone since is no failure of the notification.
    if is_tmux_pane_id(pane)
        && let Ok(tty) = target.query(&["display-message", "-p", "-t", pane, "#{pane_tty}"])
        && let Some(tty) = tty.lines().next().filter(|t| t.starts_with("/dev/"))
    {
        let _ = write_terminal(tty, b"\x07");
    }
    first.map_or(Ok(()), Err)
}

/// Writes to a terminal without ever waiting on it: a terminal that does not take the
/// bytes now (stopped output, a client gone) loses them.
/// Only a character device is written to: tmux names the terminals, but a path is a
/// path.
fn write_terminal(path: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let mut tty = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(never_wait_flags())
        .open(path)?;
    if !tty.metadata()?.file_type().is_char_device() {
        return Err(std::io::Error::other("not a terminal"));
    }
    tty.write_all(bytes)
}

/// `O_NONBLOCK | O_NOCTTY`: never wait, and never make a client's terminal ours.
fn never_wait_flags() -> i32 {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    i32::try_from(flags.bits()).unwrap_or(0)
}

/// Writes to the controlling terminal, not stdout (the status view owns that).
fn write_tty(bytes: &[u8]) -> std::io::Result<()> {
    let mut tty = std::fs::OpenOptions::new().write(true).open("/dev/tty")?;
    tty.write_all(bytes)?;
    tty.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc_777_and_9_plain_and_through_tmux() {
        let plain = osc("claude-code waits for you", "Write · %3", false);
        assert_eq!(
            plain,
            "\x1b]777;notify;claude-code waits for you;Write · %3\x07\x1b]9;claude-code waits for you: Write · %3\x07".as_bytes()
        );
        let wrapped = String::from_utf8(osc("t", "b", true)).unwrap();
        assert_eq!(
            wrapped,
            "\x1bPtmux;\x1b\x1b]777;notify;t;b\x07\x1b\\\x1bPtmux;\x1b\x1b]9;t: b\x07\x1b\\"
        );
    }

    #[test]
    fn the_message_names_the_agent_the_event_and_the_pane() {
        let job = Job {
            env: vec![
                ("HOOKTRACK_EVENT", "blocked".to_owned()),
                ("HOOKTRACK_SESSION", "claude".to_owned()),
                ("HOOKTRACK_AGENT", "claude-code".to_owned()),
                ("HOOKTRACK_TOOL", "Bash;\x1b]0;x".to_owned()),
                ("HOOKTRACK_PANE", "%3".to_owned()),
            ],
        };
        let (title, body) = message(&job);
        assert_eq!(title, "claude-code waits for you");
        // A payload's text cannot end the escape sequence: its ESC is shown, its `;` gone.
        assert_eq!(body, "Bash_\\u{1b}]0_x · %3 · claude");
    }

    /// The notification names what the waiting call acts on, as the pane's summary does.
    #[test]
    fn a_blocked_notification_names_the_call_and_its_argument() {
        let job = Job {
            env: vec![
                ("HOOKTRACK_EVENT", "blocked".to_owned()),
                ("HOOKTRACK_SESSION", "s1".to_owned()),
                ("HOOKTRACK_AGENT", "codex".to_owned()),
                ("HOOKTRACK_TOOL", "shell".to_owned()),
                ("HOOKTRACK_ARGUMENT", "cargo build --release".to_owned()),
                ("HOOKTRACK_PANE", "%4".to_owned()),
            ],
        };
        let (title, body) = message(&job);
        assert_eq!(title, "codex waits for you");
        assert_eq!(body, "shell: cargo build --release · %4 · s1");
    }
}
