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

#[cfg(test)]
mod tests {
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
}
