//! The agent's workers: processes of its own program that its process runs the agent loop
//! in and that outlive it ([`Worker`] in its descriptor). Factory Droid's TUI runs each
//! turn in a `droid exec` child: a `kill -9` of the TUI leaves that child to cancel the
//! running call and fire the turn's `Stop` and the session's `SessionEnd` itself, after
//! the TUI's end. So the launch looks for them among the agent's children while it runs,
//! and takes the agent's end to be the last one's, waiting at most [`WORKER_PATIENCE`]
//! after the agent's own end; its status stays the agent's own.
//!
//! Linux only (`/proc`); elsewhere none is found and the agent's end is its process's.

use std::time::{Duration, Instant};

use hooktrack_core::agents::Worker;
use hooktrack_live::process::ProcessWatch;

/// How long after the agent's own end its workers are waited for.
pub(crate) const WORKER_PATIENCE: Duration = Duration::from_secs(30);

/// How often the agent's children are looked at while it runs (a worker starts with the
/// agent, or with its first turn, and lives as long as it).
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The workers found so far.
pub(crate) struct Workers {
    worker: Worker,
    found: Vec<ProcessWatch>,
    looked: Option<Instant>,
}

impl Workers {
    pub(crate) fn new(worker: Worker) -> Self {
        Self {
            worker,
            found: Vec::new(),
            looked: None,
        }
    }

    /// Looks at `agent`'s children (at most every [`LOOK_EVERY`]) for new workers.
    pub(crate) fn look(&mut self, agent: u32) {
        if self.looked.is_some_and(|at| at.elapsed() < LOOK_EVERY) {
            return;
        }
        self.looked = Some(Instant::now());
        for pid in workers_of(agent, self.worker.args) {
            if !self.found.iter().any(|w| w.pid() == pid) {
                self.found.push(ProcessWatch::new(pid));
            }
        }
    }

    /// Whether a worker found still runs (those that ended are forgotten).
    pub(crate) fn running(&mut self) -> bool {
        self.found.retain_mut(|w| !w.has_ended());
        !self.found.is_empty()
    }

    /// Waits up to `up_to` for the first running worker to end.
    pub(crate) fn wait(&mut self, up_to: Duration) {
        if let Some(w) = self.found.first_mut() {
            w.wait(up_to);
        } else {
            std::thread::sleep(up_to);
        }
    }
}

/// The children of `agent` that run its program with `args` among their arguments.
#[cfg(target_os = "linux")]
fn workers_of(agent: u32, args: &[&str]) -> Vec<u32> {
    use std::fs;
    let Ok(program) = fs::read_link(format!("/proc/{agent}/exe")) else {
        return Vec::new();
    };
    let mut children = Vec::new();
    // A child may have been started by any of the agent's threads.
    let Ok(tasks) = fs::read_dir(format!("/proc/{agent}/task")) else {
        return Vec::new();
    };
    for task in tasks.flatten() {
        let Ok(text) = fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        children.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    children.retain(|child| {
        let same = fs::read_link(format!("/proc/{child}/exe")).is_ok_and(|exe| exe == program);
        let own: Vec<String> = fs::read(format!("/proc/{child}/cmdline"))
            .map(|bytes| {
                bytes
                    .split(|b| *b == 0)
                    .map(|arg| String::from_utf8_lossy(arg).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        same && args.iter().all(|arg| own.iter().any(|a| a == arg))
    });
    children.sort_unstable();
    children.dedup();
    children
}

#[cfg(not(target_os = "linux"))]
fn workers_of(_agent: u32, _args: &[&str]) -> Vec<u32> {
    Vec::new()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Command;

    /// A `sh` whose child is another `sh` with the worker's argument, and one without: only
    /// the first is its worker; it outlives the agent and is waited for to its end.
    #[test]
    fn a_child_of_the_agents_program_with_the_workers_arguments_is_found_and_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let go = dir.path().join("go");
        let script = dir.path().join("w.sh");
        std::fs::write(
            &script,
            format!(
                "n=0\nwhile [ ! -e '{}' ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n",
                go.display()
            ),
        )
        .expect("script");
        let w = script.display();
        let mut agent = Command::new("sh")
            .args([
                "-c",
                &format!("sh '{w}' worker-arg & sh '{w}' other & wait"),
            ])
            .spawn()
            .expect("sh");
        let pid = agent.id();
        let mut workers = Workers::new(Worker {
            args: &["worker-arg"],
            seen_in: "a test",
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !workers.running() && Instant::now() < deadline {
            workers.looked = None;
            workers.look(pid);
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(workers.running(), "the worker was not found");
        assert_eq!(workers.found.len(), 1, "only the child with the argument");
        let _ = agent.kill();
        let _ = agent.wait();
        assert!(workers.running(), "the worker outlives the agent");
        std::fs::write(&go, "").expect("go");
        let deadline = Instant::now() + Duration::from_secs(30);
        while workers.running() && Instant::now() < deadline {
            workers.wait(Duration::from_millis(100));
        }
        assert!(!workers.running(), "the worker's end was not seen");
    }
}
