//! The agent process when a [`Launch`](super::Launch) starts it itself: found on `PATH`
//! before anything is installed, spawned with the launch's environment, the supervisor's
//! SIGTERM and SIGHUP passed on to it, waited for in bounded steps (the caller polls the
//! live session between them), its end reported as an [`AgentExit`].

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use hooktrack_core::agents::Relay;
use hooktrack_core::envelope::{ProcessEnd, process_ended_row};
use hooktrack_core::time::Timestamp;

use super::{SpawnError, WaitError};

/// How the agent process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (e.g. 9 for `kill -9`).
    Killed(i32),
    /// It ended; how is not known (not this process's child: its end was seen by its pid).
    Unknown,
}

/// The agent process's end, as the launcher learned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentExit {
    pub pid: u32,
    pub status: AgentStatus,
    /// When the launcher saw it end.
    pub at: Timestamp,
}

impl AgentExit {
    /// The status a shell would report: the exit code, or 128 + the signal (1 when how it
    /// ended is unknown).
    pub fn shell_code(&self) -> i32 {
        match self.status {
            AgentStatus::Exited(code) => code,
            AgentStatus::Killed(signal) => 128 + signal,
            AgentStatus::Unknown => 1,
        }
    }

    /// The store row the launcher appends for it (`via: "launcher"`, `process_ended`).
    pub(crate) fn row(&self, provider: &str, generation: u64) -> Vec<u8> {
        let end = match self.status {
            AgentStatus::Exited(code) => ProcessEnd::Exited(code),
            AgentStatus::Killed(signal) => ProcessEnd::Killed(signal),
            AgentStatus::Unknown => ProcessEnd::Unknown,
        };
        process_ended_row(provider, generation, self.at, self.pid, end)
    }
}

impl From<ExitStatus> for AgentStatus {
    /// A reaped process has a code or a signal; neither (not a real end) reads as code 1.
    fn from(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Killed(signal),
            (None, None) => Self::Exited(1),
        }
    }
}

/// No agent process to pass a signal to yet.
const NO_AGENT: i32 = 0;
/// A SIGTERM (or a SIGHUP) came while there was no agent: none is started, and one being
/// started when it came gets it as soon as its pid is known.
const TERMINATED: i32 = -1;
const HUNG_UP: i32 = -2;

/// Takes this process's SIGTERM, SIGHUP and SIGINT for the launch, from
/// [`install`](Self::install) until the launch is finished or dropped: SIGTERM and SIGHUP
/// go to the agent process once [`Launch::spawn`](super::Launch::spawn) started it, and
/// before that mean "do not start it"; SIGINT is left to the agent (a terminal sends it
/// to the whole process group), so the supervisor survives Ctrl-C to clean up.
///
/// Install it before [`Launch::start`](super::Launch::start): a SIGTERM during the setup
/// then ends the launch through its cleanup instead of killing the supervisor with a
/// collector running and an observer block in place. The three signals stay caught by
/// this process afterwards (signal-hook cannot put their default action back): it suits a
/// process that exits with the launch, as `hooktrack session` does.
pub struct SignalForwarding {
    /// [`NO_AGENT`], [`TERMINATED`] / [`HUNG_UP`] or the agent's pid.
    target: Arc<AtomicI32>,
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl SignalForwarding {
    /// Registers the handlers and starts the thread that forwards.
    pub fn install() -> Result<Self, SpawnError> {
        let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(SpawnError::Signals)?;
        let target = Arc::new(AtomicI32::new(NO_AGENT));
        let handle = signals.handle();
        let thread = {
            let target = Arc::clone(&target);
            std::thread::spawn(move || {
                for signal in signals.forever() {
                    forward(&target, signal);
                }
            })
        };
        Ok(Self {
            target,
            handle,
            thread: Some(thread),
        })
    }

    /// A SIGTERM or SIGHUP came with no agent process to pass it to.
    pub fn terminated(&self) -> bool {
        self.target.load(Ordering::SeqCst) < NO_AGENT
    }

    /// Signals go to `pid` from now on. One that came while it was being started (between
    /// its start and now: the agent may already run, even have told the world so) is
    /// passed to it now, as a later one would be. Whether one had come.
    pub(super) fn attach(&self, pid: u32) -> bool {
        attach(&self.target, pid)
    }

    /// The agent is reaped and its pid free for another process: nothing goes to it.
    pub(super) fn detach(&self) {
        self.target.store(NO_AGENT, Ordering::SeqCst);
    }
}

impl Drop for SignalForwarding {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `SignalForwarding::attach` on its target.
fn attach(target: &AtomicI32, pid: u32) -> bool {
    let Some(raw) = i32::try_from(pid).ok().filter(|p| *p > 0) else {
        return false;
    };
    // A swap, not a compare: `forward` either saw no agent and left its mark (seen here),
    // or sees the pid and passes its signal on itself.
    let pending = match target.swap(raw, Ordering::SeqCst) {
        TERMINATED => Signal::TERM,
        HUNG_UP => Signal::HUP,
        _ => return false,
    };
    if let Some(pid) = Pid::from_raw(raw) {
        let _ = kill_process(pid, pending);
    }
    true
}

/// Passes one signal on to the agent, or remembers it when there is none yet.
fn forward(target: &AtomicI32, signal: i32) {
    let signal = match signal {
        SIGTERM => Signal::TERM,
        SIGHUP => Signal::HUP,
        // SIGINT: the agent's own (see `SignalForwarding`).
        _ => return,
    };
    loop {
        let pid = target.load(Ordering::SeqCst);
        if pid > 0 {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process(pid, signal);
            }
            return;
        }
        let mark = if signal == Signal::HUP {
            HUNG_UP
        } else {
            TERMINATED
        };
        if pid < NO_AGENT
            || target
                .compare_exchange(NO_AGENT, mark, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            return;
        }
        // The agent's pid was stored meanwhile: it goes there.
    }
}

/// The program as `PATH` finds it (what [`LaunchConfig::program`](super::LaunchConfig)
/// wants for the preflight), so that a command that is not there is refused before
/// anything is installed.
pub fn find_program(program: &OsStr) -> Result<PathBuf, SpawnError> {
    let not_found = || SpawnError::Start {
        command: program.to_string_lossy().into_owned(),
        source: io::Error::from(io::ErrorKind::NotFound),
    };
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path
            .is_file()
            .then(|| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
            .ok_or_else(not_found);
    }
    let dirs = std::env::var_os("PATH").ok_or_else(not_found)?;
    std::env::split_paths(&dirs)
        .map(|d| d.join(path))
        .find(|p| p.is_file())
        .ok_or_else(not_found)
}

/// `command` with its program replaced by the native binary `relay`'s launcher runs, when
/// the program found on `PATH` is that launcher and one of its native binaries is there
/// (`None` otherwise: the command runs as given).
pub(super) fn relayed(relay: &Relay, command: &[OsString]) -> Option<Vec<OsString>> {
    let (program, args) = command.split_first()?;
    let found = std::fs::canonicalize(find_program(program).ok()?).ok()?;
    let text = found.to_str()?;
    let base = Path::new(text.strip_suffix(relay.launcher)?);
    let native = relay
        .natives
        .iter()
        .map(|n| base.join(n))
        .find(|n| n.is_file())?;
    let mut relayed = vec![native.into_os_string()];
    relayed.extend(args.iter().cloned());
    Some(relayed)
}

/// Starts `command` (program and arguments) with `env` added to this process's
/// environment; with `death_signal`, the child receives it when this process dies (Linux:
/// `PR_SET_PDEATHSIG`, set between fork and exec; it fires when the spawning thread ends,
/// and the launcher spawns from the thread that lives as long as the launch).
pub(super) fn spawn(
    command: &[OsString],
    env: Vec<(String, OsString)>,
    death_signal: Option<i32>,
) -> Result<Child, SpawnError> {
    let Some((program, args)) = command.split_first() else {
        return Err(spawn_error(
            command,
            io::Error::new(io::ErrorKind::InvalidInput, "no command"),
        ));
    };
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env);
    #[cfg(target_os = "linux")]
    if let Some(number) = death_signal {
        use rustix::process::{getpid, getppid, set_parent_process_death_signal};
        use std::os::unix::process::CommandExt;
        let Some(signal) = Signal::from_named_raw(number) else {
            return Err(spawn_error(
                command,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{number} is not a signal to end the agent with"),
                ),
            ));
        };
        let parent = getpid();
        // SAFETY: the closure runs in the child between fork and exec, where only
        // async-signal-safe work is sound (another thread of ours may have held a lock,
        // the allocator's say, at the fork). It makes three system calls through rustix
        // (prctl, getppid, kill), allocates nothing (an `Errno` becomes an `io::Error`
        // without allocating), takes no lock, and reads only its own copies of `parent`
        // and `signal`.
        unsafe {
            cmd.pre_exec(move || {
                set_parent_process_death_signal(Some(signal))?;
                // The parent died before the prctl: the signal will never come.
                if getppid() != Some(parent) {
                    let _ = kill_process(getpid(), signal);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = death_signal;
    cmd.spawn().map_err(|source| spawn_error(command, source))
}

/// Why `command` was not started.
pub(super) fn spawn_error(command: &[OsString], source: io::Error) -> SpawnError {
    SpawnError::Start {
        command: command
            .first()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        source,
    }
}

/// The child's status if it has ended, looking again after `up_to` if it had not.
pub(super) fn wait_up_to(
    child: &mut Child,
    up_to: Duration,
) -> Result<Option<ExitStatus>, WaitError> {
    if let Some(status) = child.try_wait().map_err(WaitError::Wait)? {
        return Ok(Some(status));
    }
    std::thread::sleep(up_to);
    child.try_wait().map_err(WaitError::Wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race `sigterm_and_sighup_are_passed_to_the_agent_and_the_session_still_cleans_up`
    /// lost under load: the agent ran (and said so) before its pid was attached, the
    /// session's SIGHUP came in between, and the agent was killed (137) instead of getting
    /// it. Now it gets the signal that came, as it would have a moment later.
    #[test]
    fn a_hangup_between_the_agents_start_and_its_attach_is_passed_to_it() {
        use std::os::unix::process::ExitStatusExt;
        let target = AtomicI32::new(NO_AGENT);
        forward(&target, SIGHUP);
        assert_eq!(target.load(Ordering::SeqCst), HUNG_UP);
        let mut agent = match std::process::Command::new("sleep").arg("60").spawn() {
            Ok(child) => child,
            Err(e) => panic!("cannot run sleep: {e}"),
        };
        assert!(attach(&target, agent.id()), "the hangup was pending");
        let status = agent.wait().map(|s| s.signal());
        assert_eq!(status.ok(), Some(Some(SIGHUP)));
        // Later signals go to it as usual, and a pid attached afresh owes nothing.
        assert_eq!(target.load(Ordering::SeqCst), agent.id() as i32);
        let fresh = AtomicI32::new(NO_AGENT);
        assert!(!attach(&fresh, agent.id()));
    }

    #[test]
    fn a_shell_reports_the_code_or_128_plus_the_signal() {
        let exit = |status| AgentExit {
            pid: 1,
            status,
            at: Timestamp::from_millis(0),
        };
        assert_eq!(exit(AgentStatus::Exited(3)).shell_code(), 3);
        assert_eq!(exit(AgentStatus::Killed(9)).shell_code(), 137);
        assert_eq!(
            AgentStatus::from(ExitStatus::from_raw(3 << 8)),
            AgentStatus::Exited(3)
        );
        assert_eq!(
            AgentStatus::from(ExitStatus::from_raw(15)),
            AgentStatus::Killed(15)
        );
    }

    #[test]
    fn a_missing_program_is_refused_by_name() {
        let missing = find_program(OsStr::new("/nonexistent/agent-binary"));
        assert!(
            matches!(&missing, Err(SpawnError::Start { command, source })
                if command == "/nonexistent/agent-binary" && source.kind() == io::ErrorKind::NotFound),
            "{missing:?}"
        );
        assert!(find_program(OsStr::new("sh")).is_ok_and(|p| p.is_absolute()));
    }

    /// Each relaying launcher's npm layout (GitHub Copilot CLI 1.0.102's: `.bin/copilot`
    /// links to `@github/copilot/npm-loader.js`, which only relays to the platform
    /// package's binary): that binary runs instead, with the same arguments; without it,
    /// the launcher runs; another program runs as given.
    #[test]
    fn a_relaying_launcher_is_replaced_by_its_native_binary() {
        use std::os::unix::fs::symlink;
        let relays: Vec<Relay> = hooktrack_core::agent::Agent::ALL
            .iter()
            .filter_map(|a| a.descriptor().relay)
            .collect();
        assert!(!relays.is_empty(), "no agent's launcher relays");
        for relay in relays {
            let dir = tempfile::tempdir().expect("tempdir");
            let modules = dir.path().join("node_modules");
            let loader = modules.join(relay.launcher);
            let native = modules.join(relay.natives[0]);
            for file in [&loader, &native] {
                std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
                std::fs::write(file, "").expect("file");
            }
            std::fs::create_dir_all(modules.join(".bin")).expect("mkdir .bin");
            let bin = modules.join(".bin/agent");
            symlink(&loader, &bin).expect("symlink");
            let command = [
                bin.into_os_string(),
                OsString::from("-p"),
                OsString::from("hi"),
            ];
            let native_command = relayed(&relay, &command).expect("relayed");
            let canonical = std::fs::canonicalize(&native).expect("canonical");
            assert_eq!(
                native_command,
                [
                    canonical.into_os_string(),
                    OsString::from("-p"),
                    OsString::from("hi")
                ]
            );
            std::fs::remove_file(&native).expect("rm");
            assert_eq!(relayed(&relay, &command), None);
            assert_eq!(relayed(&relay, &[OsString::from("sh")]), None);
        }
    }
}
