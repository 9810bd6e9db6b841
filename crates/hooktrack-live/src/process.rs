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

#[cfg(target_os = "linux")]
struct WaiterShared {
    /// Watched processes by the owner's key; `None` asks the thread to stop.
    watched: std::sync::Mutex<Option<Vec<(u64, std::os::fd::OwnedFd)>>>,
}

/// The longest one `poll(2)` of the waiter sleeps: a bound on every wait, and how late a
/// change of the watched set could be seen if a wake-up byte were ever lost.
#[cfg(target_os = "linux")]
const WAITER_TICK_MS: libc::c_int = 1_000;

#[cfg(target_os = "linux")]
impl ExitWaiter {
    /// Starts the thread; `ended(key)` is called from it once per watched process that
    /// ended. `None` when the pipe or the thread cannot be had: the caller's re-check
    /// still sees every end.
    pub fn start(ended: impl Fn(u64) + Send + 'static) -> Option<Self> {
        use std::os::fd::FromRawFd;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills two descriptors on success and nothing on failure.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (read, wake) = unsafe {
            (
                std::os::fd::OwnedFd::from_raw_fd(fds[0]),
                std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            )
        };
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
            list.push((key, fd));
        });
        true
    }

    pub fn unwatch(&self, key: u64) {
        self.change(|list| list.retain(|(k, _)| *k != key));
    }

    fn change(&self, f: impl FnOnce(&mut Vec<(u64, std::os::fd::OwnedFd)>)) {
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
        use std::os::fd::AsRawFd;
        let byte = 1u8;
        // SAFETY: one byte from a live buffer into our own pipe. A full pipe (EAGAIN)
        // already holds a wake-up.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), (&raw const byte).cast(), 1) };
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
    use std::os::fd::AsRawFd;
    loop {
        // The set is copied as raw descriptors under the lock; a descriptor closed by an
        // `unwatch` while the poll runs is harmless (the poll reports it invalid, or a
        // reused number wakes us once: the owner's re-check decides).
        let (keys, mut pfds) = {
            let Ok(guard) = shared.watched.lock() else {
                return;
            };
            let Some(list) = guard.as_ref() else {
                return;
            };
            let mut pfds = Vec::with_capacity(list.len() + 1);
            pfds.push(libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            pfds.extend(list.iter().map(|(_, fd)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            (list.iter().map(|(k, _)| *k).collect::<Vec<_>>(), pfds)
        };
        let n = libc::nfds_t::try_from(pfds.len()).unwrap_or(libc::nfds_t::MAX);
        // SAFETY: `pfds` is a live array of `n` pollfds for the duration of the call.
        let rc = unsafe { libc::poll(pfds.as_mut_ptr(), n, WAITER_TICK_MS) };
        if rc < 0 {
            // EINTR, or a descriptor that went away under us: look again, bounded by
            // the tick.
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        if pfds[0].revents != 0 {
            let mut buf = [0u8; 64];
            // SAFETY: reads into a live buffer from our own non-blocking pipe.
            while unsafe { libc::read(wake.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
        }
        let gone: Vec<(u64, libc::c_int)> = pfds[1..]
            .iter()
            .zip(&keys)
            .filter(|(p, _)| p.revents & libc::POLLIN != 0)
            .map(|(p, k)| (*k, p.fd))
            .collect();
        if gone.is_empty() {
            continue;
        }
        // By key and descriptor: a key re-watched meanwhile keeps its new pidfd.
        if let Ok(mut guard) = shared.watched.lock()
            && let Some(list) = guard.as_mut()
        {
            list.retain(|(k, fd)| !gone.contains(&(*k, fd.as_raw_fd())));
        }
        for (key, _) in gone {
            ended(key);
        }
    }
}

/// `kill(pid, 0)`: false only when no such process exists.
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; it only checks that the pid exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just returned to us and is owned by nobody else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
fn pidfd_readable(fd: &std::os::fd::OwnedFd, timeout: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    rc > 0 && pfd.revents & libc::POLLIN != 0
}

/// True when no process has the id `pid` (`kill(pid, 0)` fails with `ESRCH`): a record
/// that says `running` with this pid was left by a process killed without its cleanup.
/// A process of another user counts as there (`EPERM`).
pub fn is_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks the pid.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
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
    // SAFETY: sysconf only reads a configuration value.
    let hz = i64::from(i32::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?);
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
