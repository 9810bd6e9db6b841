//! Watching the agent's process: when it ends, nothing more will come from its hooks.
//!
//! On Linux a pidfd (`pidfd_open`, then `poll` for readable) says the process ended even
//! while it is an unreaped zombie, and cannot be fooled by a reused pid. Where pidfds are
//! not available (older kernels, other systems) the watch falls back to polling
//! `kill(pid, 0)`: the process is gone when that fails with `ESRCH` (a zombie still
//! counts as running until its parent reaps it, which `hooktrack session` does at once).

use std::time::Duration;

/// How a [`ProcessWatch`] learns that the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Pidfd,
    Polling,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Pidfd => "pidfd",
            Mechanism::Polling => "polling kill(pid, 0)",
        }
    }
}

/// One watched pid.
#[derive(Debug)]
pub struct ProcessWatch {
    pid: u32,
    #[cfg(target_os = "linux")]
    fd: Option<std::os::fd::OwnedFd>,
    ended: bool,
}

impl ProcessWatch {
    /// Starts watching `pid`. A pid that does not exist has ended already.
    pub fn new(pid: u32) -> Self {
        Self {
            pid,
            #[cfg(target_os = "linux")]
            fd: pidfd_open(pid),
            ended: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn mechanism(&self) -> Mechanism {
        #[cfg(target_os = "linux")]
        if self.fd.is_some() {
            return Mechanism::Pidfd;
        }
        Mechanism::Polling
    }

    /// True once the process has ended (and from then on). Never blocks.
    pub fn has_ended(&mut self) -> bool {
        if !self.ended {
            self.ended = self.check(Duration::ZERO);
        }
        self.ended
    }

    /// Waits up to `timeout` for the process to end (pidfd: one `poll`; the fallback
    /// re-checks every 10 ms). True if it has ended.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        if !self.ended {
            self.ended = self.check(timeout);
        }
        self.ended
    }

    fn check(&self, timeout: Duration) -> bool {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            return pidfd_readable(fd, timeout);
        }
        let step = Duration::from_millis(10);
        let mut waited = Duration::ZERO;
        loop {
            if !alive(self.pid) {
                return true;
            }
            if waited >= timeout {
                return false;
            }
            std::thread::sleep(step);
            waited += step;
        }
    }
}

/// Wakes its owner when a watched process ends, without polling: one thread per
/// [`ExitWaiter`] blocks in `poll(2)` on the pidfds of every watched process and on a
/// wake-up pipe (a pid added or removed, or shutdown). It only says "go look": the
/// [`ProcessWatch`] of the session decides, so a missed or early wake-up costs a poll,
/// never a result. Linux only; elsewhere (and for a pid whose pidfd cannot be opened)
/// the owner's periodic re-check is the fallback.
#[cfg(target_os = "linux")]
pub struct ExitWaiter {
    shared: std::sync::Arc<WaiterShared>,
    wake: std::os::fd::OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A watched process's pidfd, shared with the waiter thread while it polls it: an
/// `unwatch` during the poll drops the list's handle, and the descriptor closes after the
/// poll, so its number cannot be reused under the poll.
#[cfg(target_os = "linux")]
type Pidfd = std::sync::Arc<std::os::fd::OwnedFd>;

#[cfg(target_os = "linux")]
struct WaiterShared {
    /// Watched processes by the owner's key; `None` asks the thread to stop.
    watched: std::sync::Mutex<Option<Vec<(u64, Pidfd)>>>,
}

/// The longest one `poll(2)` of the waiter sleeps: a bound on every wait, and how late a
/// change of the watched set could be seen if a wake-up byte were ever lost.
#[cfg(target_os = "linux")]
const WAITER_TICK: Duration = Duration::from_secs(1);

#[cfg(target_os = "linux")]
impl ExitWaiter {
    /// Starts the thread; `ended(key)` is called from it once per watched process that
    /// ended. `None` when the pipe or the thread cannot be had: the caller's re-check
    /// still sees every end.
    pub fn start(ended: impl Fn(u64) + Send + 'static) -> Option<Self> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let (read, wake) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).ok()?;
        let shared = std::sync::Arc::new(WaiterShared {
            watched: std::sync::Mutex::new(Some(Vec::new())),
        });
        let for_thread = std::sync::Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hooktrack-pidfd".into())
            .spawn(move || wait_loop(&for_thread, &read, &ended))
            .ok()?;
        Some(Self {
            shared,
            wake,
            thread: Some(thread),
        })
    }

    /// Watches `pid` for `key` (replacing what `key` watched). False when no pidfd could
    /// be opened (the process is gone, or pidfds are not available).
    pub fn watch(&self, key: u64, pid: u32) -> bool {
        let Some(fd) = pidfd_open(pid) else {
            return false;
        };
        self.change(|list| {
            list.retain(|(k, _)| *k != key);
            list.push((key, std::sync::Arc::new(fd)));
        });
        true
    }

    pub fn unwatch(&self, key: u64) {
        self.change(|list| list.retain(|(k, _)| *k != key));
    }

    fn change(&self, f: impl FnOnce(&mut Vec<(u64, Pidfd)>)) {
        // A poisoned lock means the thread panicked: nobody waits any more, the
        // re-check still covers.
        if let Ok(mut guard) = self.shared.watched.lock()
            && let Some(list) = guard.as_mut()
        {
            f(list);
        }
        self.wake_up();
    }

    fn wake_up(&self) {
        // A full pipe (EAGAIN) already holds a wake-up.
        let _ = rustix::io::write(&self.wake, &[1]);
    }
}

#[cfg(target_os = "linux")]
impl Drop for ExitWaiter {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.shared.watched.lock() {
            *guard = None;
        }
        self.wake_up();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(target_os = "linux")]
fn wait_loop(shared: &WaiterShared, wake: &std::os::fd::OwnedFd, ended: &dyn Fn(u64)) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let tick = Timespec::try_from(WAITER_TICK).ok();
    loop {
        // The set is copied under the lock (the pidfds shared, see `Pidfd`) and polled
        // outside it, so that `watch` and `unwatch` never wait for the poll.
        let watched: Vec<(u64, Pidfd)> = {
            let Ok(guard) = shared.watched.lock() else {
                return;
            };
            let Some(list) = guard.as_ref() else {
                return;
            };
            list.clone()
        };
        let mut pfds = Vec::with_capacity(watched.len() + 1);
        pfds.push(PollFd::new(wake, PollFlags::IN));
        pfds.extend(
            watched
                .iter()
                .map(|(_, fd)| PollFd::new(&**fd, PollFlags::IN)),
        );
        if poll(&mut pfds, tick.as_ref()).is_err() {
            // EINTR or ENOMEM: look again, bounded by the tick.
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        if !pfds[0].revents().is_empty() {
            let mut buf = [0u8; 64];
            while rustix::io::read(wake, &mut buf).is_ok_and(|n| n > 0) {}
        }
        let gone: Vec<&(u64, Pidfd)> = pfds[1..]
            .iter()
            .zip(&watched)
            .filter(|(p, _)| p.revents().contains(PollFlags::IN))
            .map(|(_, w)| w)
            .collect();
        if gone.is_empty() {
            continue;
        }
        // By key and pidfd: a key re-watched meanwhile keeps its new pidfd. Only what is
        // still watched is reported: an `unwatch` during the poll (the snapshot above still
        // held it) means its end is nobody's business.
        let mut reported = Vec::new();
        if let Ok(mut guard) = shared.watched.lock()
            && let Some(list) = guard.as_mut()
        {
            list.retain(|(k, fd)| {
                let ended = gone
                    .iter()
                    .any(|(gk, gfd)| gk == k && std::sync::Arc::ptr_eq(gfd, fd));
                if ended {
                    reported.push(*k);
                }
                !ended
            });
        }
        for key in reported {
            ended(key);
        }
    }
}

/// `kill(pid, 0)`: false only when no such process exists.
fn alive(pid: u32) -> bool {
    match pid_of(pid) {
        Some(pid) => rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH),
        None => false,
    }
}

/// `pid` as a process id `kill` takes: positive and within `pid_t`.
fn pid_of(pid: u32) -> Option<rustix::process::Pid> {
    rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: u32) -> Option<std::os::fd::OwnedFd> {
    rustix::process::pidfd_open(pid_of(pid)?, rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(target_os = "linux")]
fn pidfd_readable(fd: &std::os::fd::OwnedFd, timeout: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut pfd = [PollFd::new(fd, PollFlags::IN)];
    // A timeout beyond `Timespec` (centuries) waits without one.
    let timeout = Timespec::try_from(timeout).ok();
    poll(&mut pfd, timeout.as_ref()).is_ok_and(|n| n > 0)
        && pfd[0].revents().contains(PollFlags::IN)
}

/// True when no process has the id `pid` (`kill(pid, 0)` fails with `ESRCH`): a record
/// that says `running` with this pid was left by a process killed without its cleanup.
/// A process of another user counts as there (`EPERM`).
pub fn is_gone(pid: u32) -> bool {
    pid_of(pid)
        .is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
}

/// How much later than a row a process may seem to have started and still be the one
/// that wrote it: the boot time `/proc/stat` gives is in whole seconds, and the row's time
/// was taken by another clock read.
pub const START_SLACK_MS: i64 = 2_000;

/// True when `pid` now names a process that started after `row_at` (by more than
/// [`START_SLACK_MS`]): the process that wrote a row at `row_at` cannot have, so the pid
/// was reused and that agent is gone. False when it cannot be told (the process is gone,
/// not Linux): the watch then decides by the pid alone.
pub fn started_after(pid: u32, row_at_ms: i64) -> bool {
    started_at_ms(pid).is_some_and(|start| start > row_at_ms.saturating_add(START_SLACK_MS))
}

/// When `pid` started, in milliseconds since the epoch: its start time in `/proc/<pid>/stat`
/// (clock ticks after boot) plus the boot time in `/proc/stat`. Linux only.
#[cfg(target_os = "linux")]
fn started_at_ms(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the parenthesised name (which may hold spaces and parentheses):
    // state is field 3, starttime field 22.
    let after = stat.get(stat.rfind(')')? + 1..)?;
    let ticks: i64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: i64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = i64::try_from(rustix::param::clock_ticks_per_second()).ok()?;
    if hz <= 0 {
        return None;
    }
    Some(btime.checked_mul(1000)? + ticks.checked_mul(1000)? / hz)
}

#[cfg(not(target_os = "linux"))]
fn started_at_ms(_pid: u32) -> Option<i64> {
    None
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pid_reused_after_a_row_is_told_from_the_agent_that_wrote_it() {
        let me = std::process::id();
        let start = super::started_at_ms(me).unwrap();
        assert!(start > 1_600_000_000_000, "{start}");
        // A row written a minute before this process started cannot be its own; one
        // written as it started can.
        assert!(super::started_after(me, start - 60_000));
        assert!(!super::started_after(me, start));
        assert!(
            !super::started_after(u32::MAX, 0),
            "no such process: cannot tell"
        );
    }

    use super::*;
    use std::process::Command;

    #[test]
    fn a_child_that_exits_is_seen_ended_by_pidfd_and_by_polling() {
        let mut child = match Command::new("sleep").arg("0.2").spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run sleep: {e}"),
        };
        let mut watch = ProcessWatch::new(child.id());
        assert!(!watch.has_ended(), "sleep 0.2 is still running");
        assert!(watch.wait(Duration::from_secs(10)), "sleep 0.2 ended");
        let _ = child.wait();
        // Reaped: the pid is gone, and polling sees that too.
        assert!(!alive(child.id()));
        #[cfg(target_os = "linux")]
        assert_eq!(watch.mechanism(), Mechanism::Pidfd);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_exit_waiter_reports_each_watched_process_once_it_ends() {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = match ExitWaiter::start(move |key| {
            let _ = tx.send(key);
        }) {
            Some(w) => w,
            None => panic!("cannot start the exit waiter"),
        };
        let spawn = || match Command::new("sleep").arg("60").spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run sleep: {e}"),
        };
        let (mut kept, mut killed) = (spawn(), spawn());
        assert!(waiter.watch(1, kept.id()));
        assert!(waiter.watch(2, killed.id()));
        let _ = killed.kill();
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).ok(), Some(2));
        // Unwatched, the other one's end is nobody's business.
        waiter.unwatch(1);
        let _ = kept.kill();
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        let _ = (kept.wait(), killed.wait());
        drop(waiter);
    }
}
