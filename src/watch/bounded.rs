//! Runs a helper command (tmux, an `--on-change` hook) with a deadline: it gets its own
//! process group, and the group is killed when the deadline passes.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use hooktrack_live::process::{Mechanism, ProcessWatch};
use thiserror::Error;

/// How often a running helper is looked at where its pidfd cannot be waited on.
const POLL: Duration = Duration::from_millis(10);

#[derive(Debug, Error)]
pub enum RunError {
    #[error("cannot start it")]
    Spawn {
        #[source]
        source: io::Error,
    },
    #[error("killed after {} ms", .after.as_millis())]
    TimedOut { after: Duration },
    #[error("cannot wait for it")]
    Wait {
        #[source]
        source: io::Error,
    },
}

/// Runs `command` with no stdin, discarded stdout and stderr, killed with its process
/// group after `timeout`.
pub fn run_bounded(command: &mut Command, timeout: Duration) -> Result<ExitStatus, RunError> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| RunError::Spawn { source })?;
    wait_bounded(child, timeout)
}

/// Like [`run_bounded`], and what the helper wrote to stdout (at most [`MAX_OUTPUT`]
/// bytes), read on a thread of its own so that a long answer cannot fill the pipe and
/// stall the helper until its deadline.
pub fn run_bounded_output(
    command: &mut Command,
    timeout: Duration,
) -> Result<(ExitStatus, Vec<u8>), RunError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| RunError::Spawn { source })?;
    let reader = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = out.take(MAX_OUTPUT).read_to_end(&mut bytes);
            bytes
        })
    });
    let status = wait_bounded(child, timeout)?;
    // The helper has ended (or its group was killed): its end of the pipe is closed.
    let bytes = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    Ok((status, bytes))
}

/// The most of a helper's stdout [`run_bounded_output`] keeps.
pub const MAX_OUTPUT: u64 = 1 << 20;

/// Waits for the helper until `deadline`: on Linux asleep in one `poll(2)` on its pidfd
/// (a helper that takes seconds on a loaded machine, a tmux server slow to answer, no
/// longer wakes this process every [`POLL`] meanwhile), elsewhere looking every [`POLL`].
fn wait_bounded(mut child: Child, timeout: Duration) -> Result<ExitStatus, RunError> {
    let deadline = Instant::now() + timeout;
    // Not reaped yet, so its pid cannot name another process.
    let mut exit = ProcessWatch::new(child.id());
    let pidfd = exit.mechanism() == Mechanism::Pidfd;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => {}
            Err(source) => {
                kill_group(child.id());
                let _ = child.wait();
                return Err(RunError::Wait { source });
            }
        }
        let now = Instant::now();
        if now >= deadline {
            kill_group(child.id());
            let _ = child.wait();
            return Err(RunError::TimedOut { after: timeout });
        }
        if pidfd {
            // Interrupted, it says not ended: looked at again above.
            exit.wait(deadline - now);
        } else {
            std::thread::sleep(POLL.min(deadline - now));
        }
    }
}

/// Kills the process group this module started for a helper (its id is the helper's pid).
fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_past_its_deadline_is_killed_with_its_children() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & sleep 30"]);
        let result = run_bounded(&mut command, Duration::from_millis(100));
        assert!(
            matches!(result, Err(RunError::TimedOut { .. })),
            "{result:?}"
        );
    }

    /// This thread's voluntary context switches so far (Linux).
    #[cfg(target_os = "linux")]
    fn switches() -> u64 {
        std::fs::read_to_string("/proc/thread-self/status")
            .expect("status")
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("voluntary_ctxt_switches")
    }

    /// Issue 33: while a tmux command hung for its 2 s timeout on a loaded machine, the
    /// worker woke every 10 ms to look at it, in the process whose hub and printing thread
    /// waited for the CPU. It sleeps until the helper ends: a 0.3 s helper is waited for
    /// in a handful of switches, where looking every 10 ms took 30 or more.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_helper_is_waited_for_asleep_not_looked_at_every_10_ms() {
        let before = switches();
        let status =
            run_bounded(Command::new("sleep").arg("0.3"), Duration::from_secs(30)).expect("runs");
        let taken = switches() - before;
        assert!(status.success());
        assert!(
            taken < 10,
            "{taken} voluntary switches waiting for sleep 0.3"
        );
    }

    #[test]
    fn a_quick_helper_reports_its_status() {
        let status = run_bounded(
            Command::new("sh").args(["-c", "exit 3"]),
            Duration::from_secs(30),
        )
        .expect("runs");
        assert_eq!(status.code(), Some(3));
    }

    #[test]
    fn a_helpers_answer_is_read_whole_past_a_pipes_buffer() {
        let (status, out) = run_bounded_output(
            Command::new("sh").args(["-c", "head -c 200000 /dev/zero"]),
            Duration::from_secs(30),
        )
        .expect("runs");
        assert!(status.success());
        assert_eq!(out.len(), 200_000);
    }
}
