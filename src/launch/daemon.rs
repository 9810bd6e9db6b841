//! The daemon an agent runs its hooks in (Cline's hub: `InstallFacts::daemon`). The first
//! CLI starts it and later ones share it, so a shared daemon holds whoever started it's
//! environment: a session's variables there reach no hook (the hook files drop them). A
//! launch gives its agent a daemon of its own instead: a discovery record of the
//! launch's own (in the store folder: the CLI reuses whatever daemon the shared record
//! names, whatever port it is told) and a loopback port it picks, named in
//! [`SESSION_DAEMON_PORT`] too; the hook files keep the session's routing in that daemon
//! alone, and the launch ends it with the session, so no daemon outlives the session it
//! routes to.
//!
//! [`SESSION_DAEMON_PORT`]: hooktrack_producer::install::hook_files::SESSION_DAEMON_PORT

use std::ffi::OsString;
use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hooktrack_core::agent::Agent;
use hooktrack_core::agents::HookDaemon;
use hooktrack_producer::install::hook_files::SESSION_DAEMON_PORT;
use hooktrack_producer::store::TOKEN_ENV;
use rustix::process::{Pid, Signal, kill_process};

/// The port a launch gave its agent's daemon, and the variable that says it.
#[derive(Clone, Debug)]
pub(crate) struct OwnDaemon {
    daemon: HookDaemon,
    port: u16,
    record: PathBuf,
}

impl OwnDaemon {
    /// A free loopback port for `agent`'s daemon; `None` for an agent without one, or
    /// when no port can be had (the agent then shares the default daemon, as without a
    /// session).
    pub(crate) fn pick(agent: Agent, store: &Path) -> Option<Self> {
        let daemon = agent.descriptor().install.daemon?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        Some(Self {
            daemon,
            port,
            record: store.join("daemon.json"),
        })
    }

    /// The agent's variables: the record, and the port in the agent's variable and in
    /// hooktrack's.
    pub(crate) fn env(&self) -> [(String, OsString); 3] {
        let port = OsString::from(self.port.to_string());
        [
            (
                self.daemon.record_var.to_owned(),
                self.record.clone().into_os_string(),
            ),
            (self.daemon.port_var.to_owned(), port.clone()),
            (SESSION_DAEMON_PORT.to_owned(), port),
        ]
    }

    /// Ends what runs with this launch's daemon variables and `token` (only this launch's
    /// agent and the daemon it started carry both), all but `spare` (the agent itself,
    /// while it runs): SIGTERM by pid, then SIGKILL to one still there after
    /// [`STOP_GRACE`]. Returns once they are gone (or the kill was sent): a session that
    /// ended leaves no daemon behind. How many were signalled.
    pub(crate) fn stop(&self, token: &str, spare: Option<u32>) -> usize {
        let pids = self.running(token, spare);
        for pid in &pids {
            let _ = kill_process(*pid, Signal::TERM);
        }
        let started = Instant::now();
        let mut left: Vec<Pid> = pids.clone();
        while !left.is_empty() && started.elapsed() < STOP_GRACE {
            std::thread::sleep(STOP_POLL);
            left.retain(|pid| runs(*pid));
        }
        for pid in left {
            let _ = kill_process(pid, Signal::KILL);
        }
        pids.len()
    }

    /// The processes with this launch's daemon variables and `token`, but `spare`.
    fn running(&self, token: &str, spare: Option<u32>) -> Vec<Pid> {
        let port = format!("{SESSION_DAEMON_PORT}={}", self.port);
        let token = format!("{TOKEN_ENV}={token}");
        let Ok(procs) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        let me = std::process::id();
        let mut found = Vec::new();
        for entry in procs.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me || Some(pid) == spare {
                continue;
            }
            // Another user's process, or one gone meanwhile: not readable, not ours.
            let Ok(environ) = fs::read(entry.path().join("environ")) else {
                continue;
            };
            let has = |want: &str| environ.split(|b| *b == 0).any(|v| v == want.as_bytes());
            if !(has(&port) && has(&token)) {
                continue;
            }
            let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                continue;
            };
            found.push(pid);
        }
        found
    }
}

/// How long a daemon gets to end on SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
const STOP_POLL: Duration = Duration::from_millis(20);

/// Whether `pid` still runs: there, and not a zombie (an ended daemon's parent is often
/// init, which may reap it late).
fn runs(pid: Pid) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())) else {
        return false;
    };
    // `pid (comm) STATE …`: the state follows the last `)`.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}
