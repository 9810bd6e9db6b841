//! Observing an agent run: what `hooktrack session` does, as a type.
//!
//! [`Launch::start`] makes a fresh session in a store (next generation, a bearer token, the
//! collector on 127.0.0.1 in a thread of this process), makes sure hooktrack's observer
//! entries are in the agent's config, and runs the [`preflight`](Launch::findings) that
//! says whether the hooks will fire. Then either the launch runs the agent as its child,
//! as `hooktrack session` does ([`Launch::spawn`] with the launch's environment and a
//! [`SignalForwarding`], [`Launch::wait`] between polls), or the caller starts it
//! elsewhere with [`Launch::env`] in its environment (`tmux new-window -e NAME=VALUE ...`)
//! and reports it ([`Launch::set_child_pid`], [`Launch::agent_started`],
//! [`Launch::agent_exited`]). Either way it follows the session with [`Launch::poll`] and
//! ends it with [`Launch::finish`]. Dropping a `Launch` cleans up the same way, so no exit
//! path leaves a collector running or a generation-scoped block behind.
//!
//! Routing (contract section 10): a user-global config (Claude Code, Codex, Gemini CLI,
//! Kimi CLI) gets environment-routed entries, written once and never rewritten by a
//! session, so concurrent sessions share one install and each lands in its own store. A
//! launch-owned config (Kimi Code's `$KIMI_CODE_HOME/config.toml`) gets the
//! generation-scoped block, removed again at the end.

mod child;
mod daemon;
mod ledger;
mod root;
mod workers;

pub use child::{AgentExit, AgentStatus, SignalForwarding, find_program};
pub use root::{default_session_root, default_sessions_folder};

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;

use hooktrack_core::agent::Agent;
use hooktrack_core::channel::ChannelConfig;
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::provider::ProviderChoice;
use hooktrack_core::store::{
    InstallRecord, OBSERVATION_DIR, StorePaths, parse_channel, parse_collector,
};
use hooktrack_core::time::Timestamp;
use hooktrack_live::hub::wall_clock;
use hooktrack_live::process::ProcessWatch;
use hooktrack_live::screen::TmuxServer;
use hooktrack_live::session::{Session, SessionConfig, SessionNotice, Update};
use hooktrack_producer::collect::{
    CollectConfig, CollectError, CollectSummary, Collector, Stopper,
};
use hooktrack_producer::install::preflight::{self, Finding, Probe};
use hooktrack_producer::install::{self, Destination, InstallError, Observer, Route};
use hooktrack_producer::store::{
    self, DIR_ENV, GENERATION_ENV, LAUNCH_BLOCK_ENV, StoreError, TOKEN_ENV, URL_ENV,
};
use hooktrack_producer::token::{self, TokenError};

/// What to observe and where to keep it.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    pub agent: Agent,
    /// The agent's hooks file (see [`Agent::config`]).
    pub config: PathBuf,
    /// The session root: the store is `<root>/hook-observation/<store name>/`. Reusing a
    /// root starts the next generation.
    pub root: PathBuf,
    /// The `hooktrack` binary the hooks run (absolute).
    pub emitter: PathBuf,
    /// A value for the agent's home variable (`$CLAUDE_CONFIG_DIR`, `$CODEX_HOME`,
    /// `$GEMINI_CLI_HOME`, ...), passed in [`Launch::env`].
    pub home: Option<PathBuf>,
    /// The directory the agent will run in, its arguments and program (for the preflight:
    /// Gemini's folder trust, Codex's trust state, flags that bypass either).
    pub cwd: PathBuf,
    pub args: Vec<OsString>,
    pub program: Option<PathBuf>,
    /// The channel's thresholds: after `startup_grace_ms` from the first prompt with no
    /// event the channel says `unavailable` (startup silence).
    pub channel: ChannelConfig,
    /// The tmux server the agent runs on, if it runs in a pane: while it waits on the user,
    /// the pane its rows name is read, so that a dialog answered ends its window before any
    /// hook says so (`hooktrack_core::screen`; `hooktrack session` sets it inside tmux).
    /// `None`: the hooks and the transcript alone.
    pub read_screens: Option<TmuxServer>,
}

/// Why [`Launch::start`] could not start: the session root, the store, the token or the
/// collector.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("bad session root {path}")]
    Root {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    Collect(#[from] CollectError),
}

/// Why the agent was not started: [`SignalForwarding::install`], [`find_program`] and
/// [`Launch::spawn`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SpawnError {
    #[error("cannot handle signals")]
    Signals(#[source] io::Error),
    #[error("cannot start {command}")]
    Start {
        command: String,
        #[source]
        source: io::Error,
    },
}

/// Why [`Launch::wait`] could not learn whether the agent ended.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WaitError {
    #[error("cannot wait for the agent")]
    Wait(#[source] io::Error),
}

/// Why [`Launch::run_until_exit`] could not follow the agent to its end.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error(transparent)]
    Wait(#[from] WaitError),
}

/// Why [`Launch::finish`] could not clean up: the observer's removal or the collector.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FinishError {
    #[error(transparent)]
    Uninstall(#[from] InstallError),
    #[error(transparent)]
    Collect(#[from] CollectError),
    #[error("the collector thread panicked")]
    CollectorPanicked,
}

/// What the observer install did at start.
#[derive(Clone, Debug)]
pub struct Installed {
    /// Verdict and detail, as `channel.json` records it.
    pub record: InstallRecord,
    /// The entries route by the environment (left in place at the end).
    pub routed: bool,
}

impl Installed {
    /// The launch wrote its own generation-scoped block, which delivers every hook.
    fn owns_block(&self) -> bool {
        !self.routed && self.record.ok
    }
}

/// How a finished launch went.
#[derive(Clone, Debug)]
pub struct Finished {
    pub collector: Option<CollectSummary>,
    /// Hook events this generation delivered.
    pub events: u64,
}

/// One observed agent run: collector, observer, live tracking, cleanup.
pub struct Launch {
    agent: Agent,
    config: PathBuf,
    store: StorePaths,
    generation: u64,
    url: String,
    token: String,
    home: Option<PathBuf>,
    installed: Installed,
    findings: Vec<Finding>,
    /// What a launch that died without its cleanup had left, cleaned at the start.
    cleaned: Vec<String>,
    /// The agent's `--version`, when its program is one of the agent's and says one.
    agent_version: Option<String>,
    session: Session,
    /// The closed turns, streamed to `ledger.ndjson` (the session keeps the open ones).
    ledger: ledger::LedgerFile,
    events: u64,
    child_pid: Option<u32>,
    /// The agent process when this launch started it ([`Launch::spawn`]), until reaped.
    child: Option<Child>,
    /// Held from [`Launch::spawn`] until the launch is finished or dropped, so that a
    /// SIGTERM while late hooks are read still ends in the cleanup.
    signals: Option<SignalForwarding>,
    /// How the agent process ended, once known.
    exit: Option<AgentExit>,
    /// The agent's pid, watched until its end is reported.
    watch: Option<ProcessWatch>,
    /// The agent's workers (its descriptor's [`Worker`](hooktrack_core::agents::Worker)),
    /// looked for while it runs.
    workers: Option<workers::Workers>,
    /// The agent's own end while a worker of its runs on, and when it came: reported once
    /// the last worker ended (or after [`workers::WORKER_PATIENCE`]).
    held: Option<(AgentExit, Instant)>,
    /// The arguments give the agent its first prompt (a headless run).
    prompt_at_launch: bool,
    /// When the first prompt was sent, as far as this launch knows.
    first_prompt: Option<Timestamp>,
    collector: Option<(Stopper, JoinHandle<Result<CollectSummary, CollectError>>)>,
    /// The signal the agent [`Launch::spawn`] starts receives when this process dies
    /// without ending it (`kill -9`): [`DEFAULT_AGENT_DEATH_SIGNAL`] unless set.
    death_signal: Option<i32>,
    /// The daemon the agent runs its hooks in, given a port of its own so that the
    /// session's routing reaches them (Cline's hub; `daemon.rs`), ended with the launch.
    daemon: Option<daemon::OwnDaemon>,
}

/// What an agent started by [`Launch::spawn`] receives when the launching process dies
/// without its cleanup (`kill -9`): SIGTERM, the signal `hooktrack session` forwards on a
/// polite end too, so the agent is never left running unobserved.
/// How often [`Launch::run_until_exit`] looks at the agent and the store.
const RUN_POLL: Duration = Duration::from_millis(50);
/// The longest [`Launch::run_until_exit`] waits for late hooks after the agent's exit.
const MAX_LINGER: Duration = Duration::from_secs(5);

pub const DEFAULT_AGENT_DEATH_SIGNAL: i32 = libc::SIGTERM;

impl Launch {
    /// Starts the collector, puts the observer in place and runs the preflight. An install
    /// that fails is not an error: the launch still collects (the channel says
    /// `unavailable`, [`Launch::installed`] says why).
    pub fn start(config: LaunchConfig) -> Result<Self, LaunchError> {
        let root = std::path::absolute(&config.root).map_err(|source| LaunchError::Root {
            path: config.root.clone(),
            source,
        })?;
        let agent = config.agent;
        let store = StorePaths::in_dir(root.join(OBSERVATION_DIR).join(agent.store_name()));
        store::create_dir(&store)?;
        // What a launch killed without its cleanup left (`kill -9`): its record and
        // socket in this store, its block in a config that belongs to each launch.
        let mut cleaned: Vec<String> = Vec::new();
        if let Ok(Some(dead)) = store::leftover::clean_dead_collector(&store) {
            cleaned.push(dead.to_string());
        }
        if let Ok(Some(dead)) = install::leftover::clean_dead_launch_block(&config.config, agent) {
            cleaned.push(dead.to_string());
        }
        let generation = previous_generation(&store) + 1;
        let token = token::generate()?;
        let collector = Collector::bind(CollectConfig::new(
            store.dir.as_path().to_owned(),
            agent,
            generation,
            token.clone(),
        ))?;
        let url = collector.url();
        let stopper = collector.stopper();
        let thread = std::thread::spawn(move || collector.run());

        let destination = Destination {
            url: url.clone(),
            dir: store.dir.as_path().to_owned(),
            generation,
        };
        let agent_version = config
            .program
            .as_deref()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| agent.descriptor().programs.contains(&n))
            })
            .and_then(|p| install::version_of(p).ok().flatten());
        let installed = put_observer(
            agent,
            &config.config,
            &config.emitter,
            &destination,
            agent_version.clone(),
        );
        let env = launch_env(
            agent,
            config.home.as_deref(),
            &destination,
            &token,
            installed.owns_block(),
        );
        let lookup = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var_os(name))
        };
        let findings = preflight::preflight(&Probe {
            agent,
            config: &config.config,
            env: &lookup,
            cwd: &config.cwd,
            args: &config.args,
            program: config.program.as_deref(),
            file_named: false,
            ask_doctor: false,
        });
        // The channel says `unavailable` with the reason while the hooks cannot fire.
        if installed.record.ok && !findings.is_empty() {
            let detail = findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let _ = install::write_channel(
                store.dir.as_path(),
                agent.store_name(),
                generation,
                InstallRecord {
                    ok: false,
                    detail: Some(format!("the hooks will not fire: {detail}")),
                },
            );
        }
        let session = Session::open(
            store.clone(),
            SessionConfig {
                channel: config.channel,
                provider: ProviderChoice::Exactly(agent),
                report_lines: true,
                // A reused root holds the earlier generations' rows: this launch follows
                // and ledgers only its own (read before the agent can write any).
                skip_existing: true,
                // The closed turns go to `ledger.ndjson` as they close, not memory.
                keep_ledger: false,
                // Where Kimi Code and GitHub Copilot CLI keep the session file their payloads
                // do not name (Copilot's only from its first `Stop` on).
                agent_home: agent.config().home(lookup),
                read_screens: config.read_screens.clone(),
                ..SessionConfig::default()
            },
        );
        let ledger = ledger::LedgerFile::create(store.dir.as_path());
        let daemon = daemon::OwnDaemon::pick(agent, store.dir.as_path());
        Ok(Self {
            agent,
            config: config.config,
            store,
            generation,
            url,
            token,
            home: config.home,
            installed,
            findings,
            cleaned,
            agent_version,
            session,
            ledger,
            events: 0,
            child_pid: None,
            child: None,
            signals: None,
            exit: None,
            watch: None,
            workers: agent.descriptor().worker.map(workers::Workers::new),
            held: None,
            prompt_at_launch: prompt_at_launch(agent, &config.args),
            first_prompt: None,
            collector: Some((stopper, thread)),
            death_signal: Some(DEFAULT_AGENT_DEATH_SIGNAL),
            daemon,
        })
    }

    pub fn agent(&self) -> Agent {
        self.agent
    }

    pub fn store(&self) -> &StorePaths {
        &self.store
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The collector's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn installed(&self) -> &Installed {
        &self.installed
    }

    /// The agent's version, as its program printed it (`None`: not asked or none given).
    pub fn agent_version(&self) -> Option<&str> {
        self.agent_version.as_deref()
    }

    /// Where the agent's version stands against its tested window, for people.
    pub fn version_window(&self) -> String {
        self.agent.descriptor().versions.verdict(
            self.agent.label(),
            self.agent.typed_name(),
            self.agent_version(),
        )
    }

    /// Why the hooks will not fire (empty: they will).
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// What an earlier launch killed without its cleanup (`kill -9`) had left and this
    /// one's start cleaned, one sentence each: a `collector.json` still saying `running`
    /// and its socket in this store, its generation-scoped block in the agent's config.
    pub fn cleaned(&self) -> &[String] {
        &self.cleaned
    }

    /// The environment the agent must be started with: the routing variables, the token
    /// and, when asked for, the agent's home variable.
    pub fn env(&self) -> Vec<(String, OsString)> {
        let mut env = launch_env(
            self.agent,
            self.home.as_deref(),
            &Destination {
                url: self.url.clone(),
                dir: self.store.dir.as_path().to_owned(),
                generation: self.generation,
            },
            &self.token,
            self.installed.owns_block(),
        );
        env.extend(self.daemon.iter().flat_map(daemon::OwnDaemon::env));
        env
    }

    /// The agent process, once the caller started it: its end is a signal of its own
    /// (contract section 9), an open turn ends `terminal_gap` at once. The launch watches
    /// the pid; when it ends, [`Launch::poll`] reports it through [`Launch::agent_exited`].
    pub fn set_child_pid(&mut self, pid: u32) {
        self.child_pid = Some(pid);
        self.watch = Some(ProcessWatch::new(pid));
    }

    pub fn child_pid(&self) -> Option<u32> {
        self.child_pid
    }

    /// The signal the agent [`Launch::spawn`] starts gets when this process dies without
    /// ending it (Linux `PR_SET_PDEATHSIG`); `None`: none, the agent runs on unobserved.
    /// Set it before [`Launch::spawn`].
    pub fn set_agent_death_signal(&mut self, signal: Option<i32>) {
        self.death_signal = signal;
    }

    /// Runs the agent as this process's child: `command` (program and arguments; the
    /// program as `PATH` finds it) with [`Launch::env`] added to this process's
    /// environment. Its pid is watched ([`Launch::set_child_pid`]) and its start reported
    /// ([`Launch::agent_started`], at the wall clock). With `signals` (as
    /// `hooktrack session`), the caller's SIGTERM and SIGHUP go to the agent until the
    /// launch ends (one that came while it was being started too), and one that came
    /// before is an error: the agent is not started.
    /// Follow it with [`Launch::poll`] and [`Launch::wait`] in turn.
    pub fn spawn(
        &mut self,
        command: &[OsString],
        signals: Option<SignalForwarding>,
    ) -> Result<u32, SpawnError> {
        let env = self.env();
        self.signals = signals;
        if self
            .signals
            .as_ref()
            .is_some_and(SignalForwarding::terminated)
        {
            return Err(child::spawn_error(
                command,
                io::Error::other("terminated before the agent started"),
            ));
        }
        // A launcher that only relays is skipped: the native binary's status is the agent's.
        let relayed = self
            .agent
            .descriptor()
            .relay
            .and_then(|relay| child::relayed(&relay, command));
        let child = child::spawn(
            relayed.as_deref().unwrap_or(command),
            env,
            self.death_signal,
        )?;
        let pid = child.id();
        // A SIGTERM or SIGHUP that came while it was being started is passed to it now.
        if let Some(signals) = self.signals.as_ref() {
            signals.attach(pid);
        }
        self.child = Some(child);
        // The agent's end is a signal of its own: an open turn ends at once.
        self.set_child_pid(pid);
        self.agent_started(wall_clock());
        Ok(pid)
    }

    /// What `hooktrack session` does with its agent: starts `command` ([`Launch::spawn`],
    /// `signals` forwarded to it), polls the live session and hands each update to `each`
    /// until the agent exits ([`Launch::wait`], looking every 50 ms), then keeps reading
    /// for late hooks (fire-and-forget ones can outlive the agent) until nothing arrived
    /// for `linger` (5 s at most). Returns how the agent ended; the launch is
    /// then read (ledger, posture) and cleaned up by [`Launch::finish`] (or on drop).
    pub fn run_until_exit(
        &mut self,
        command: &[OsString],
        signals: Option<SignalForwarding>,
        linger: Duration,
        mut each: impl FnMut(&Session, Update),
    ) -> Result<AgentExit, RunError> {
        let exit = self
            .spawn(command, signals)
            .map_err(RunError::from)
            .and_then(|_| {
                loop {
                    self.poll_each(wall_clock(), &mut each);
                    if let Some(exit) = self.wait(RUN_POLL)? {
                        break Ok(exit);
                    }
                }
            });
        let linger = linger.min(MAX_LINGER);
        let started = Instant::now();
        let mut quiet_since = Instant::now();
        while started.elapsed() < MAX_LINGER && quiet_since.elapsed() < linger {
            let mut lines = false;
            // The agent is gone: its files are whole, no row waits for them.
            self.poll_rounds(wall_clock(), true, |session, update| {
                lines |= !update.lines.is_empty();
                each(session, update);
            });
            if lines {
                quiet_since = Instant::now();
            }
            std::thread::sleep(RUN_POLL.min(linger));
        }
        exit
    }

    /// Whether the agent [`Launch::spawn`] started has ended: looks, and if it runs on,
    /// looks again after `up_to` (the caller polls the session in between). Its end is
    /// learned once, through [`Launch::agent_exited`]; afterwards, and for an agent this
    /// launch did not start, it is what [`Launch::agent_exit`] says (after `up_to` while
    /// that is nothing, so that a loop over `poll` and `wait` never spins).
    pub fn wait(&mut self, up_to: Duration) -> Result<Option<AgentExit>, WaitError> {
        if let Some((exit, since)) = self.held {
            return Ok(self.after_workers(exit, since, up_to));
        }
        let Some(child) = self.child.as_mut() else {
            if self.exit.is_none() {
                std::thread::sleep(up_to);
            }
            return Ok(self.exit);
        };
        let pid = child.id();
        if let Some(workers) = self.workers.as_mut() {
            workers.look(pid);
        }
        let Some(status) = child::wait_up_to(child, up_to)? else {
            return Ok(None);
        };
        self.child = None;
        if let Some(signals) = &self.signals {
            signals.detach();
        }
        let exit = AgentExit {
            pid,
            status: status.into(),
            at: wall_clock(),
        };
        if self.workers.as_mut().is_some_and(workers::Workers::running) {
            // Its worker goes on (and fires the hooks of its end): the agent's end is the
            // worker's.
            self.held = Some((exit, Instant::now()));
            return Ok(None);
        }
        self.agent_exited(exit);
        Ok(Some(exit))
    }

    /// The agent ended at `exit` (`since` then) while a worker of its ran: its end, at the
    /// last worker's (with the agent's own status), once none runs or after
    /// [`workers::WORKER_PATIENCE`]; else nothing, after waiting up to `up_to` for one.
    fn after_workers(
        &mut self,
        exit: AgentExit,
        since: Instant,
        up_to: Duration,
    ) -> Option<AgentExit> {
        let running = self.workers.as_mut().is_some_and(workers::Workers::running);
        if running && since.elapsed() < workers::WORKER_PATIENCE {
            if let Some(workers) = self.workers.as_mut() {
                workers.wait(up_to);
            }
            return None;
        }
        self.held = None;
        let exit = AgentExit {
            at: wall_clock(),
            ..exit
        };
        self.agent_exited(exit);
        Some(exit)
    }

    /// The agent process ended: the one place the launch learns it, from [`Launch::wait`],
    /// from the pid [`Launch::set_child_pid`] watches, or from a caller that runs the agent
    /// elsewhere (a tmux pane's exit status). Only the first report counts.
    ///
    /// The end is written to the store as a row (`via: "launcher"`, `process_ended`), which
    /// the live session then reads like any other: what the live run saw, a replay of the
    /// store sees. If the row cannot be written, the live session settles the end from the
    /// pid itself, and the next update says why.
    pub fn agent_exited(&mut self, exit: AgentExit) {
        if self.exit.is_some() {
            return;
        }
        self.exit = Some(exit);
        self.watch = None;
        let row = exit.row(self.agent.store_name(), self.generation);
        if let Err(e) = store::append_row_now(&self.store, &row) {
            self.session.notice(SessionNotice::BadRecord {
                detail: format!(
                    "the agent's end was not written to the store ({}): settled from its pid",
                    error_chain(&e)
                ),
            });
            self.session.watch_process(exit.pid);
        }
    }

    /// A watched agent process that ended is reported (the launch's own child is reaped
    /// for its status).
    fn check_process(&mut self, now: Timestamp) {
        let ended = self.exit.is_none() && self.watch.as_mut().is_some_and(ProcessWatch::has_ended);
        if !ended {
            return;
        }
        if self.child.is_some() || self.held.is_some() {
            // Reaped by `wait`, which reports it with its status (once its workers ended).
            if let Ok(Some(_)) = self.wait(Duration::ZERO) {
                return;
            }
            if self.held.is_some() {
                return;
            }
        }
        if let Some(pid) = self.watch.as_ref().map(ProcessWatch::pid) {
            self.agent_exited(AgentExit {
                pid,
                status: AgentStatus::Unknown,
                at: now,
            });
        }
    }

    /// How the agent process ended, once known.
    pub fn agent_exit(&self) -> Option<AgentExit> {
        self.exit
    }

    /// The caller started the agent. A headless run (see [`prompt_at_launch`]) got its
    /// first prompt with its arguments, so startup silence is judged from now on; an
    /// interactive one waits for [`Launch::prompt_sent`].
    pub fn agent_started(&mut self, now: Timestamp) {
        if self.prompt_at_launch {
            self.prompt_sent(now);
        }
    }

    /// The caller sent the agent a prompt (e.g. `tmux send-keys` into its TUI). Only the
    /// first matters: with no event `startup_grace_ms` after it, the channel says
    /// `unavailable` (startup silence).
    pub fn prompt_sent(&mut self, now: Timestamp) {
        if self.first_prompt.is_none() {
            self.first_prompt = Some(now);
        }
        self.session.prompt_sent(now);
    }

    /// When the first prompt was sent, if this launch was told or the arguments say.
    pub fn first_prompt(&self) -> Option<Timestamp> {
        self.first_prompt
    }

    /// Reads what arrived; the updates in order (none when nothing changed).
    pub fn poll(&mut self, now: Timestamp) -> Vec<Update> {
        let mut updates = Vec::new();
        self.poll_each(now, |_, update| updates.push(update));
        updates
    }

    /// [`Launch::poll`], handing each update to `each` (with the live session) as soon as
    /// it is read: a burst of rows read in many rounds is never held whole, so memory is
    /// bounded by one round's read budget, whatever the length of the run.
    pub fn poll_each(&mut self, now: Timestamp, each: impl FnMut(&Session, Update)) {
        self.poll_rounds(now, false, each);
    }

    /// [`Launch::poll_each`]; `last`: the agent is gone and its files are written, so no
    /// row waits for a transcript any more ([`Session::poll_final`]).
    fn poll_rounds(&mut self, now: Timestamp, last: bool, mut each: impl FnMut(&Session, Update)) {
        self.check_process(now);
        // Bounded: a poll stops at its read budget with `more`; catch up in a few rounds.
        for _ in 0..64 {
            let polled = if last {
                self.session.poll_final(now)
            } else {
                self.session.poll(now)
            };
            let Some(update) = polled else {
                break;
            };
            self.events = self.session.hook_events();
            let failed = self.ledger.failed().is_some();
            self.ledger.record(std::slice::from_ref(&update));
            if let (false, Some(why)) = (failed, self.ledger.failed()) {
                // Said once, in the next update: the turns are kept in memory from now on.
                let detail = why.to_owned();
                self.session
                    .notice(SessionNotice::LedgerInMemory { detail });
            }
            each(&self.session, update);
            if !self.session.more() {
                break;
            }
        }
    }

    /// The live session (posture, channel, diagnostics).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The turn ledger so far: the closed turns read back from `ledger.ndjson` (where
    /// they were written as they closed), with the ones still open, per agent session.
    pub fn ledger(&self) -> Vec<TurnRecord> {
        let (closed, _skipped) = self.ledger.read_back();
        self.session.ledger_with(closed)
    }

    /// The file the closed turns are streamed to.
    pub fn ledger_path(&self) -> &Path {
        self.ledger.path()
    }

    /// Hook events delivered so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Removes a generation-scoped block, stops the collector, reads the last rows.
    pub fn finish(mut self, now: Timestamp) -> Result<Finished, FinishError> {
        self.stop_daemon();
        let uninstall = self.remove_observer();
        let collected = self.stop_collector();
        self.poll_rounds(now, true, |_, _| {});
        uninstall?;
        Ok(Finished {
            collector: Some(collected?),
            events: self.events,
        })
    }

    /// Ends the daemon the agent started on the port this launch gave it (and nothing
    /// else: only it and the agent carry this launch's token with that port), once.
    fn stop_daemon(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            let running = self.child.as_ref().map(Child::id);
            daemon.stop(&self.token, running);
        }
    }

    fn remove_observer(&mut self) -> Result<(), FinishError> {
        if self.installed.routed || !self.installed.record.ok {
            return Ok(());
        }
        self.installed.record.ok = false;
        let format = self.agent.config().format;
        install::uninstall(
            &self.config,
            format,
            Some(self.generation),
            install::ReadOnly::Refuse,
        )?;
        Ok(())
    }

    fn stop_collector(&mut self) -> Result<CollectSummary, FinishError> {
        let Some((stopper, thread)) = self.collector.take() else {
            return Err(FinishError::CollectorPanicked);
        };
        stopper.stop();
        thread
            .join()
            .map_err(|_| FinishError::CollectorPanicked)?
            .map_err(FinishError::from)
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        self.stop_daemon();
        if self.collector.is_some() {
            let _ = self.remove_observer();
            let _ = self.stop_collector();
        }
    }
}

/// Environment-routed entries where the config is shared, a generation-scoped block where
/// the launch owns it (`InstallFacts::per_session_entries`). Routed entries already
/// complete are not rewritten.
fn put_observer(
    agent: Agent,
    config: &Path,
    emitter: &Path,
    to: &Destination,
    agent_version: Option<String>,
) -> Installed {
    let routed = !agent.descriptor().install.per_session_entries;
    let observer = Observer {
        agent_version,
        emitter: emitter.to_owned(),
        route: if routed {
            Route::Environment
        } else {
            Route::Argv(to.clone())
        },
    };
    let already = routed
        && install::check_for(config, agent, observer.agent_version.as_deref())
            .is_ok_and(|r| r.validation.routed && r.validation.ours > 0)
        && install::installed_by(config, agent, &observer);
    let result = if already {
        Ok(format!(
            "hooktrack's entries for {} in {} are in place (routed by environment)",
            agent.label(),
            config.display()
        ))
    } else {
        install::install(config, agent, &observer, install::ReadOnly::Refuse).map(|r| {
            format!(
                "{} hooktrack entries for {} in {}{}",
                r.ours,
                agent.label(),
                r.config.display(),
                if routed {
                    " (routed by environment, left in place)"
                } else {
                    ""
                }
            )
        })
    };
    let record = match result {
        Ok(detail) => InstallRecord {
            ok: true,
            detail: Some(detail),
        },
        Err(e) => InstallRecord {
            ok: false,
            detail: Some(error_chain(&e)),
        },
    };
    if routed {
        // The routed install records nothing itself: this session's channel gets it.
        let _ = install::write_channel(&to.dir, agent.store_name(), to.generation, record.clone());
    }
    Installed { record, routed }
}

/// The agent's environment: the routing variables and the token; its home; and, when the
/// launch wrote its own block, `HOOKTRACK_LAUNCH_BLOCK`, so routed entries for the same
/// agent in that file (`setup`'s) stand down and each hook delivers once.
fn launch_env(
    agent: Agent,
    home: Option<&Path>,
    to: &Destination,
    token: &str,
    own_block: bool,
) -> Vec<(String, OsString)> {
    let mut env = vec![
        (URL_ENV.to_owned(), OsString::from(&to.url)),
        (DIR_ENV.to_owned(), to.dir.clone().into_os_string()),
        (
            GENERATION_ENV.to_owned(),
            OsString::from(to.generation.to_string()),
        ),
        (TOKEN_ENV.to_owned(), OsString::from(token)),
    ];
    if let (Some(home), Some(var)) = (home, agent.config().home_var()) {
        env.push((var.to_owned(), home.as_os_str().to_owned()));
    }
    if own_block {
        env.push((
            LAUNCH_BLOCK_ENV.to_owned(),
            OsString::from(agent.store_name()),
        ));
    }
    env
}

/// True when the arguments hand the agent its first prompt at launch, so the prompt is
/// sent when the agent starts: one of the headless modes its descriptor lists
/// (`Descriptor::headless`: Claude Code's `-p`, Codex's `exec`, Gemini CLI's `-p` or
/// `-i`, Kimi's `--print` ...). Anything else is an interactive TUI whose first prompt
/// only the caller knows ([`Launch::prompt_sent`]).
pub fn prompt_at_launch(agent: Agent, args: &[OsString]) -> bool {
    agent.descriptor().headless.prompt_at_launch(args)
}

/// The generation recorded by an earlier collector or installer in this store, or 0.
fn previous_generation(store: &StorePaths) -> u64 {
    let from_collector = fs::read(&store.collector)
        .ok()
        .and_then(|b| parse_collector(&b).ok())
        .and_then(|c| c.generation)
        .unwrap_or(0);
    let from_channel = fs::read(&store.channel)
        .ok()
        .and_then(|b| parse_channel(&b).ok())
        .and_then(|c| c.generation)
        .unwrap_or(0);
    from_collector.max(from_channel)
}
