//! `hooktrack session -- AGENT...`: observe one agent run, start to end.
//!
//! Starts the collector (in this process), installs the observer block, runs the agent
//! with the token in its environment, follows `events.ndjson` and prints posture
//! changes, and when the agent exits uninstalls the block, stops the collector and
//! prints the turn ledger. Exits with the agent's status. The store is followed by the
//! library's live [`Session`] (tailer, pipeline and channel state machine), the same one
//! `watch` and the hub use; this file only prints what its updates say.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::Serialize;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use thiserror::Error;

use hooktrack::ConfigFormat;
use hooktrack::Diagnostics;
use hooktrack::TurnRecord;
use hooktrack::posture::Posture;
use hooktrack::wall_clock;
use hooktrack::{Agent, ProviderChoice, Timestamp};
use hooktrack::{InstallRecord as InstallState, StorePaths as StoreDir};
use hooktrack::{LineReport, Session, SessionConfig};
use hooktrack_core::store::{OBSERVATION_DIR, parse_channel, parse_collector};
use hooktrack_producer::collect::{CollectConfig, CollectError, CollectSummary, Collector};
use hooktrack_producer::install::InstallError;
use hooktrack_producer::install::{self, Observer};
use hooktrack_producer::store::StoreError;
use hooktrack_producer::store::{self, TOKEN_ENV};
use hooktrack_producer::token;
use hooktrack_producer::token::TokenError;

use super::fail;
use super::install::{KimiTarget, TargetError, this_binary};
use hooktrack_core::diagnostics::error_chain;

/// Observe an agent live: collector, observer, agent, tracking, cleanup — one command.
///
/// Example: `hooktrack session -- kimi`. The store is
/// ROOT/hook-observation/<provider>/ (events.ndjson, collector.json, channel.json). The
/// agent gets the bearer token in $HOOKTRACK_TOKEN and nowhere else. Posture changes go
/// to stderr (or --output); the exit status is the agent's.
#[derive(Args)]
pub struct SessionArgs {
    #[command(flatten)]
    target: KimiTarget,
    /// The session root (default: $XDG_STATE_HOME/hooktrack/sessions/<time>-<pid>, or
    /// ~/.local/state/...). Reusing a root starts the next generation.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Where posture changes go: a file, or - for stdout (default: stderr).
    #[arg(long)]
    output: Option<PathBuf>,
    /// text: one line per change; ndjson: one JSON line per event, then an end line.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// After the agent exits, wait until no row arrived for this long (late hooks).
    #[arg(long, default_value_t = 500)]
    linger_ms: u64,
    /// The agent command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    Text,
    Ndjson,
}

/// Why a session could not run or could not clean up. Messages are lowercase, the cause
/// is the source: the binary prints the chain in one line.
#[derive(Debug, Error)]
enum SessionError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("bad --root {path}")]
    Root {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot pick a session root: set $HOME or pass --root")]
    NoRoot,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot handle signals")]
    Signals(#[source] io::Error),
    #[error(transparent)]
    Collect(#[from] CollectError),
    #[error(transparent)]
    Uninstall(#[from] InstallError),
    #[error("cannot create {path}")]
    Output {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start {command}")]
    Spawn {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot wait for the agent")]
    Wait(#[source] io::Error),
    #[error("the collector thread panicked")]
    CollectorPanicked,
    #[error("the agent exited with status {code}, then cleanup failed")]
    AfterExit {
        code: i32,
        #[source]
        source: Box<SessionError>,
    },
}

/// How often the follower looks for new rows while the agent runs.
const POLL: Duration = Duration::from_millis(50);
/// Longest linger after the agent exits, whatever `--linger-ms` says.
const MAX_LINGER: Duration = Duration::from_secs(5);

pub fn run(args: &SessionArgs) -> ExitCode {
    match session(args) {
        Ok(code) => code,
        Err(e) => fail(&error_chain(&e)),
    }
}

fn session(args: &SessionArgs) -> Result<ExitCode, SessionError> {
    let (variant, config) = args.target.resolve()?;
    let root = match &args.root {
        Some(r) => std::path::absolute(r).map_err(|source| SessionError::Root {
            path: r.clone(),
            source,
        })?,
        None => default_root()?,
    };
    let store = StoreDir::in_dir(root.join(OBSERVATION_DIR).join(variant.store_name()));
    store::create_dir(&store)?;
    let generation = previous_generation(&store) + 1;
    let token = token::generate()?;
    let mut out = Output::open(args.output.as_deref(), args.format)?;

    // Signals first: TERM and HUP go to the agent, INT is the agent's to handle (the
    // terminal sends it to the whole process group).
    let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(SessionError::Signals)?;
    let child_pid = Arc::new(AtomicI32::new(0));
    let terminate = Arc::new(AtomicBool::new(false));
    let signal_handle = signals.handle();
    let signal_thread = {
        let child_pid = Arc::clone(&child_pid);
        let terminate = Arc::clone(&terminate);
        std::thread::spawn(move || {
            for signal in signals.forever() {
                if signal == SIGINT {
                    continue;
                }
                let pid = child_pid.load(Ordering::SeqCst);
                if pid > 0 {
                    // SAFETY: kill(2) with a pid we spawned and a valid signal number.
                    unsafe {
                        libc::kill(pid, signal);
                    }
                } else {
                    terminate.store(true, Ordering::SeqCst);
                }
            }
        })
    };

    // The collector, in this process.
    let collector = Collector::bind(CollectConfig::new(
        store.dir.as_path().to_owned(),
        variant.store_name().to_owned(),
        generation,
        token.clone(),
    ))?;
    let url = collector.url();
    let stopper = collector.stopper();
    let collector_thread = std::thread::spawn(move || collector.run());

    // The observer.
    let observer = Observer {
        emitter: this_binary()?,
        url: url.clone(),
        dir: store.dir.as_path().to_owned(),
        generation,
    };
    let install = match install::install(&config, variant, &observer) {
        Ok(r) => InstallState {
            ok: true,
            detail: Some(format!(
                "{} hooks for {} in {}",
                r.ours,
                variant.label(),
                r.config.display()
            )),
        },
        Err(e) => InstallState {
            ok: false,
            detail: Some(error_chain(&e)),
        },
    };
    out.start(variant, &store, generation, &url, &install);

    // The agent.
    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]).env(TOKEN_ENV, &token);
    if let Some(home) = &args.target.home
        && let Some(home_env) = variant.config().home_env
    {
        command.env(home_env, home);
    }
    let spawned = if terminate.load(Ordering::SeqCst) {
        Err(io::Error::other("terminated before the agent started"))
    } else {
        command.spawn()
    };
    let mut tracker = Tracker::new(store.clone(), variant);
    let status = match spawned {
        Ok(mut child) => {
            child_pid.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
            // The agent's end is a signal of its own: an open turn ends at once.
            tracker.session.watch_process(child.id());
            if terminate.load(Ordering::SeqCst) {
                let _ = child.kill();
            }
            loop {
                tracker.poll(&mut out);
                match child.try_wait() {
                    Ok(Some(status)) => break Ok(status),
                    Ok(None) => std::thread::sleep(POLL),
                    Err(e) => break Err(SessionError::Wait(e)),
                }
            }
        }
        Err(source) => Err(SessionError::Spawn {
            command: args.command[0].to_string_lossy().into_owned(),
            source,
        }),
    };
    child_pid.store(0, Ordering::SeqCst);

    // Late hooks (fire-and-forget ones can outlive the agent), then cleanup.
    let linger = Duration::from_millis(args.linger_ms).min(MAX_LINGER);
    let started = Instant::now();
    let mut quiet_since = Instant::now();
    while started.elapsed() < MAX_LINGER && quiet_since.elapsed() < linger {
        if tracker.poll(&mut out) {
            quiet_since = Instant::now();
        }
        std::thread::sleep(POLL.min(linger));
    }
    let uninstall = if install.ok {
        install::uninstall(&config, ConfigFormat::TomlHooks, Some(generation))
            .map(|_| ())
            .map_err(SessionError::from)
    } else {
        Ok(())
    };
    stopper.stop();
    let collected = collector_thread
        .join()
        .map_err(|_| SessionError::CollectorPanicked)
        .and_then(|r| r.map_err(SessionError::from));
    tracker.poll(&mut out);
    signal_handle.close();
    let _ = signal_thread.join();

    let status = status?;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    out.end(&tracker, code, collected.as_ref().ok().copied());
    if let Err(e) = uninstall {
        return Err(SessionError::AfterExit {
            code,
            source: Box::new(e),
        });
    }
    if let Err(e) = collected {
        return Err(SessionError::AfterExit {
            code,
            source: Box::new(e),
        });
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn default_root() -> Result<PathBuf, SessionError> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        })
        .ok_or(SessionError::NoRoot)?;
    let stamp = store::now().to_string().replace([':', '-', '.'], "");
    Ok(base
        .join("hooktrack")
        .join("sessions")
        .join(format!("{stamp}-{}", std::process::id())))
}

/// The generation recorded by an earlier collector or installer in this store, or 0.
fn previous_generation(store: &StoreDir) -> u64 {
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

/// The live [`Session`] on the store, with the wall clock and the turns its updates
/// reported ended (for the ledger at the end).
struct Tracker {
    session: Session,
    closed: Vec<TurnRecord>,
}

impl Tracker {
    fn new(store: StoreDir, agent: Agent) -> Self {
        let config = SessionConfig {
            provider: ProviderChoice::Exactly(agent),
            report_lines: true,
            ..SessionConfig::default()
        };
        Self {
            session: Session::open(store, config),
            closed: Vec::new(),
        }
    }

    /// Reads what was appended since the last call. True if any line arrived.
    fn poll(&mut self, out: &mut Output) -> bool {
        let mut lines = false;
        // Bounded: a poll stops at its read budget with `more`; catch up in a few rounds.
        for _ in 0..64 {
            let Some(update) = self.session.poll(wall_clock()) else {
                break;
            };
            lines |= !update.lines.is_empty();
            for notice in &update.notices {
                out.notice(&notice.to_string());
            }
            for line in &update.lines {
                out.change(line);
            }
            self.closed.extend(update.closed);
            if !self.session.more() {
                break;
            }
        }
        lines
    }

    fn ledger(&self) -> Vec<TurnRecord> {
        self.session.ledger(self.closed.clone())
    }
}

/// Where and how the session reports.
struct Output {
    sink: Box<dyn Write>,
    format: OutputFormat,
}

#[derive(Serialize)]
struct StartLine<'a> {
    kind: &'static str,
    provider: &'static str,
    store: &'a Path,
    generation: u64,
    collector: &'a str,
    install: &'a InstallState,
}

#[derive(Serialize)]
struct EventLine<'a> {
    kind: &'static str,
    line: u64,
    /// hook, transcript or process.
    source: hooktrack_core::source::Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'a str>,
    changed: serde_json::Map<String, serde_json::Value>,
    posture: &'a Posture,
}

#[derive(Serialize)]
struct EndLine<'a> {
    kind: &'static str,
    exit_code: i32,
    turns: &'a [TurnRecord],
    #[serde(rename = "final")]
    final_posture: &'a Posture,
    diagnostics: &'a Diagnostics,
    collector: Option<CollectorCounts>,
}

#[derive(Serialize)]
struct CollectorCounts {
    accepted: u64,
    rejected: u64,
}

impl Output {
    fn open(path: Option<&Path>, format: OutputFormat) -> Result<Self, SessionError> {
        let sink: Box<dyn Write> = match path {
            None => Box::new(io::stderr()),
            Some(p) if p.as_os_str() == "-" => Box::new(io::stdout()),
            Some(p) => Box::new(File::create(p).map_err(|source| SessionError::Output {
                path: p.to_owned(),
                source,
            })?),
        };
        Ok(Self { sink, format })
    }

    fn json<T: Serialize>(&mut self, value: &T) {
        if serde_json::to_writer(&mut self.sink, value).is_ok() {
            let _ = writeln!(self.sink);
        }
        let _ = self.sink.flush();
    }

    fn text(&mut self, line: &str) {
        let _ = writeln!(self.sink, "hooktrack: {line}");
        let _ = self.sink.flush();
    }

    fn start(
        &mut self,
        variant: Agent,
        store: &StoreDir,
        generation: u64,
        url: &str,
        install: &InstallState,
    ) {
        match self.format {
            OutputFormat::Ndjson => self.json(&StartLine {
                kind: "start",
                provider: variant.store_name(),
                store: store.dir.as_path(),
                generation,
                collector: url,
                install,
            }),
            OutputFormat::Text => {
                self.text(&format!(
                    "observing {} (generation {generation}); store {}; collector {url}",
                    variant.label(),
                    store.dir.as_path().display()
                ));
                if install.ok {
                    self.text(&format!(
                        "observer installed: {}",
                        install.detail.as_deref().unwrap_or_default()
                    ));
                } else {
                    self.text(&format!(
                        "observer NOT installed, channel unavailable: {}",
                        install.detail.as_deref().unwrap_or_default()
                    ));
                }
            }
        }
    }

    fn notice(&mut self, notice: &str) {
        if self.format == OutputFormat::Text {
            self.text(notice);
        }
    }

    fn change(&mut self, change: &LineReport) {
        match self.format {
            OutputFormat::Ndjson => {
                let changed = change
                    .changes
                    .iter()
                    .map(|c| {
                        (
                            c.field.to_owned(),
                            serde_json::Value::from(c.after.as_str()),
                        )
                    })
                    .collect();
                self.json(&EventLine {
                    kind: if change.event.is_some() {
                        "event"
                    } else {
                        "skipped"
                    },
                    line: change.line,
                    source: change.source,
                    at: change.at,
                    event: change.event.as_deref(),
                    skipped: change.skipped.as_deref(),
                    changed,
                    posture: &change.posture,
                });
            }
            OutputFormat::Text => {
                if let Some(skipped) = &change.skipped {
                    self.text(&format!("line {} skipped ({skipped})", change.line));
                }
                if change.changes.is_empty() {
                    return;
                }
                let what: Vec<String> = change
                    .changes
                    .iter()
                    .map(|c| format!("{} {}→{}", c.field, c.before, c.after))
                    .collect();
                let at = change.at.map(|a| a.to_string());
                let at = at.as_deref().and_then(|a| a.get(11..23)).unwrap_or("");
                self.text(&format!(
                    "{at} {} {}",
                    change.event.as_deref().unwrap_or("-"),
                    what.join(", ")
                ));
            }
        }
    }

    fn end(&mut self, tracker: &Tracker, exit_code: i32, collected: Option<CollectSummary>) {
        let turns = tracker.ledger();
        let channel = tracker.session.channel(wall_clock()).state;
        let hook_final = tracker.session.hook_posture();
        match self.format {
            OutputFormat::Ndjson => self.json(&EndLine {
                kind: "end",
                exit_code,
                turns: &turns,
                final_posture: &hook_final,
                diagnostics: tracker.session.diagnostics(),
                collector: collected.map(|c| CollectorCounts {
                    accepted: c.accepted,
                    rejected: c.rejected,
                }),
            }),
            OutputFormat::Text => {
                self.text(&format!("agent exited with status {exit_code}"));
                for t in &turns {
                    self.text(&format!(
                        "turn {} ({}, {}): {}, {} tool call{}",
                        t.id,
                        t.scope,
                        t.origin,
                        t.result.name(),
                        t.tool_calls,
                        if t.tool_calls == 1 { "" } else { "s" }
                    ));
                }
                let nonzero: Vec<String> = tracker
                    .session
                    .diagnostics()
                    .nonzero()
                    .map(|(d, n)| format!("{}={n}", d.name()))
                    .collect();
                self.text(&format!(
                    "last turn {}; channel {}; diagnostics: {}",
                    hook_final.last_turn.result.name(),
                    serde_json::to_value(channel)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    if nonzero.is_empty() {
                        "none".to_owned()
                    } else {
                        nonzero.join(" ")
                    }
                ));
            }
        }
    }
}
