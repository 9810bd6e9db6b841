//! `hooktrack session [--agent A] -- AGENT...`: observe one agent run, start to end.
//!
//! A thin user of the library's [`Launch`]: it parses the arguments and recognises the
//! agent, then the launch does the work (collector, observer, preflight, the agent as its
//! child with signals forwarded, live tracking, cleanup) and this prints: what the
//! preflight found, posture changes as the live session reports them, the turn ledger, a
//! warning when the agent delivered no event. Exits with the agent's status.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Serialize;
use thiserror::Error;

use hooktrack::Diagnostics;
use hooktrack::TurnRecord;
use hooktrack::collect::CollectSummary;
use hooktrack::install::preflight::Finding;
use hooktrack::posture::Posture;
use hooktrack::safe_text::{Notation, SafeWriter};
use hooktrack::store;
use hooktrack::wall_clock;
use hooktrack::{Agent, ProviderChoice, Timestamp};
use hooktrack::{ChannelConfig, ChannelState, ChannelStatus};
use hooktrack::{FinishError, LaunchError, RunError, SpawnError};
use hooktrack::{InstallRecord as InstallState, StorePaths as StoreDir};
use hooktrack::{Launch, LaunchConfig, SignalForwarding};
use hooktrack::{LineReport, Session, SessionNotice, Update};
use hooktrack::{default_session_root, find_program};

use super::fail;
use super::install::{TargetError, choose, hook_binary};
use hooktrack::error_chain;

/// What `--startup-grace-ms` means, with each agent's headless command line from its
/// descriptor (`claude -p`, `codex exec`).
fn startup_grace_help() -> String {
    let mut headless: Vec<String> = Vec::new();
    for agent in Agent::ALL {
        let d = agent.descriptor();
        let how = d.headless.flags.first().or(d.headless.subcommands.first());
        if let (Some(program), Some(how)) = (d.programs.first(), how) {
            let line = format!("`{program} {how}`");
            if !headless.contains(&line) {
                headless.push(line);
            }
        }
    }
    format!(
        "With no event this long after the first prompt, the channel says `unavailable` \
         (startup silence). A headless command ({}) gets its prompt at launch; for a TUI the \
         first prompt is unknown, so no silence is judged while it runs",
        headless.join(", ")
    )
}

/// Observe an agent live: collector, observer, agent, tracking, cleanup — one command.
///
/// Example: `hooktrack session -- claude -p hi`. The agent is recognised from the command's
/// program (any agent --agent names below) or named with --agent. The store is
/// ROOT/hook-observation/<provider>/ (events.ndjson, collector.json, channel.json). The
/// agent gets the routing variables and the bearer token in its environment and nowhere
/// else. Posture changes go to stderr (or --output); for a TUI agent (no prompt at launch)
/// on a terminal they go to ROOT/session.log instead, so its screen stays whole, and the
/// summary comes to stderr at exit. The exit status is the agent's. Cline runs its hooks in
/// a daemon its first CLI starts and later ones share: the session gives its Cline a daemon
/// of its own (CLINE_HUB_PORT set to a free loopback port), which its hooks run in with the
/// session's routing, and ends that daemon when the session ends.
#[derive(Args)]
pub struct SessionArgs {
    #[arg(long, help = format!(
        "The agent, by any of its names (default: from the command; `kimi` asks `kimi --version`): {}",
        super::agents_by(Agent::typed_name)
    ))]
    agent: Option<String>,
    /// The agent's hooks file (default: where the agent reads it).
    #[arg(long, conflicts_with = "home")]
    config: Option<PathBuf>,
    #[arg(long, help = super::home_help())]
    home: Option<PathBuf>,
    /// The session root (default: $XDG_STATE_HOME/hooktrack/sessions/<time>-<pid>, or
    /// ~/.local/state/...). Reusing a root starts the next generation.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Where posture changes go: a file, or - for stdout (default: stderr; for a TUI agent
    /// on a terminal, ROOT/session.log, the summary to stderr at exit).
    #[arg(long)]
    output: Option<PathBuf>,
    /// text: one line per change; ndjson: one JSON line per event, then an end line.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// After the agent exits, wait until no row arrived for this long (late hooks).
    #[arg(long, default_value_t = 500)]
    linger_ms: u64,
    #[arg(long, default_value_t = 20_000, help = startup_grace_help())]
    startup_grace_ms: u32,
    /// The signal the agent receives if this process is killed without its cleanup
    /// (`kill -9`): TERM (default), HUP, INT, KILL, or none (the agent runs on).
    #[arg(long, default_value = "TERM", value_parser = parse_death_signal)]
    agent_death_signal: DeathSignal,
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
    #[error(
        "cannot tell which agent `{program}` is (supported: {}); pass --agent",
        Agent::names_for_help()
    )]
    UnknownCommand { program: String },
    #[error("unknown agent `{name}` (supported: {})", Agent::names_for_help())]
    UnknownAgent { name: String },
    #[error("cannot find {}'s hooks file: set $HOME or pass --config", agent.label())]
    NoConfig { agent: Agent },
    #[error("cannot pick a session root: set $HOME or pass --root")]
    NoRoot,
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Finish(#[from] FinishError),
    #[error("cannot create {path}")]
    Output {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the agent exited with status {code}, then cleanup failed")]
    AfterExit {
        code: i32,
        #[source]
        source: Box<SessionError>,
    },
}

pub fn run(args: &SessionArgs) -> ExitCode {
    match session(args) {
        Ok(code) => code,
        Err(e) => fail(&error_chain(&e)),
    }
}

/// The agent a session observes: `--agent` (any name the one parser takes), else the one
/// the command's program name starts; a family (`kimi`) is told apart by detection.
fn recognise(args: &SessionArgs) -> Result<Agent, SessionError> {
    let choice = match &args.agent {
        Some(name) => name
            .parse::<ProviderChoice>()
            .map_err(|_| SessionError::UnknownAgent { name: name.clone() })?,
        None => ProviderChoice::Auto,
    };
    let choice = match choice {
        ProviderChoice::Auto => Path::new(&args.command[0])
            .file_name()
            .and_then(|n| ProviderChoice::for_program(&n.to_string_lossy()))
            .ok_or_else(|| SessionError::UnknownCommand {
                program: args.command[0].to_string_lossy().into_owned(),
            })?,
        chosen => chosen,
    };
    Ok(choose(
        choice,
        args.config.as_deref(),
        args.home.as_deref(),
    )?)
}

/// The agent's own words when the command's program never starts it, so no hook can fire
/// (its descriptor's `launch_gate`: Kimi CLI 1.52's `kimi` console script is a deprecation
/// gate that prints a notice, or downloads an installer).
fn kimi_gate(agent: Agent, program: &OsString) -> Option<String> {
    let name = Path::new(program).file_name()?;
    let gate = agent.descriptor().launch_gate?;
    (name == gate.program).then(|| gate.text.to_owned())
}

fn session(args: &SessionArgs) -> Result<ExitCode, SessionError> {
    let agent = recognise(args)?;
    let location = agent.config();
    let env = |name: &str| std::env::var_os(name);
    let config = match (&args.config, &args.home) {
        (Some(c), _) => absolute(c),
        (None, Some(h)) => absolute(&location.file_in_home(h)),
        (None, None) => location
            .user_file(env)
            .map(|c| absolute(&c))
            .ok_or(SessionError::NoConfig { agent })?,
    };
    let root = match &args.root {
        Some(r) => r.clone(),
        None => default_session_root(env, store::now()).ok_or(SessionError::NoRoot)?,
    };
    // A TUI owns the terminal: lines written over its screen would break it. Unless told
    // where, its posture changes go to a file in the session root, and the summary to the
    // terminal once the agent is gone.
    let tui = args.output.is_none()
        && io::stderr().is_terminal()
        && !hooktrack::prompt_at_launch(agent, &args.command[1..]);
    let log = tui.then(|| root.join("session.log"));
    if let Some(log) = &log {
        if let Err(source) = std::fs::create_dir_all(&root) {
            return Err(SessionError::Output {
                path: root.clone(),
                source,
            });
        }
        eprintln!(
            "hooktrack: {} takes the terminal: posture changes go to {} \
             (`hooktrack watch {}` shows them live); the summary follows at exit",
            agent.label(),
            hooktrack::safe_text::visible(&log.display().to_string()),
            hooktrack::safe_text::visible(&root.display().to_string()),
        );
    }
    let mut out = Output::open(log.as_deref().or(args.output.as_deref()), args.format)?;
    // Signals first, so that a SIGTERM during the setup still ends in the cleanup.
    let signals = SignalForwarding::install()?;
    // A command that is not there is refused before anything is installed.
    let program = find_program(&args.command[0])?;
    let config_path = config.clone();
    let mut launch = Launch::start(LaunchConfig {
        agent,
        config,
        root,
        emitter: hook_binary()?,
        home: args.home.as_ref().map(|h| absolute(h)),
        cwd: std::env::current_dir().unwrap_or_default(),
        args: args.command[1..].to_vec(),
        program: Some(program),
        channel: ChannelConfig {
            startup_grace_ms: i64::from(args.startup_grace_ms),
            ..ChannelConfig::default()
        },
        // Inside tmux (the agent inherits `$TMUX`, its hooks `$TMUX_PANE`): the pane its
        // rows name is read on that server while it waits on the user.
        read_screens: std::env::var_os("TMUX").map(|_| hooktrack::TmuxServer::default()),
    })?;
    launch.set_agent_death_signal(args.agent_death_signal.0);
    let gate = kimi_gate(agent, &args.command[0]);
    out.start(&launch, gate.as_deref());

    // The agent, followed until it exits, then its late hooks.
    let linger = Duration::from_millis(args.linger_ms);
    let exit = launch.run_until_exit(&args.command, Some(signals), linger, |session, update| {
        out.update(session, &update);
    });

    let code = exit?.shell_code();
    let turns = launch.ledger();
    let findings = launch.findings().to_vec();
    let prompted = launch.first_prompt().is_some();
    let end = End {
        turns,
        channel: launch.session().channel(wall_clock()).state,
        posture: launch.session().hook_posture(),
        diagnostics: launch.session().diagnostics().clone(),
    };
    let finished = launch.finish(wall_clock());
    let (collected, events) = match &finished {
        Ok(f) => (f.collector, f.events),
        Err(_) => (None, 0),
    };
    let silence = (events == 0).then(|| {
        silence_reason(
            &findings,
            gate.as_deref(),
            code,
            prompted,
            agent,
            &config_path,
        )
    });
    out.end(&end, code, collected, silence.as_deref());
    if log.is_some() {
        Output::open(None, args.format)?.end(&end, code, collected, silence.as_deref());
    }
    if let Err(e) = finished {
        return Err(SessionError::AfterExit {
            code,
            source: Box::new(e.into()),
        });
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Why an agent that ran delivered nothing: what the preflight found, else the likely
/// cause — with a prompt given it ran hooks from another file (or none), without one it
/// may simply not have started a session.
fn silence_reason(
    findings: &[Finding],
    gate: Option<&str>,
    code: i32,
    prompted: bool,
    agent: Agent,
    config: &Path,
) -> String {
    let mut causes: Vec<String> = findings.iter().map(ToString::to_string).collect();
    if let Some(gate) = gate {
        causes.push(gate.to_owned());
    }
    if causes.is_empty() {
        causes.push(if prompted {
            format!(
                "{} got its prompt at launch and exited with status {code} without running a \
                 hook: it read its hooks from another file than {} (another home or \
                 config variable, a project or managed settings file), or it failed before \
                 its session started (see its own output)",
                agent.label(),
                config.display()
            )
        } else {
            format!(
                "the agent exited with status {code} before its first hook: it may never \
                 have got a prompt (a TUI starts its session at the first one), or it read \
                 its hooks from another file than {}",
                config.display()
            )
        });
    }
    format!("the agent delivered no hook event: {}", causes.join("; "))
}

/// What the end line reports, taken before the launch is finished.
struct End {
    turns: Vec<TurnRecord>,
    channel: hooktrack::ChannelState,
    posture: Posture,
    diagnostics: Diagnostics,
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Where and how the session reports.
struct Output {
    sink: Box<dyn Write>,
    format: OutputFormat,
    /// Startup silence was reported (once per session).
    silence_reported: bool,
}

#[derive(Serialize)]
struct ChannelLine<'a> {
    kind: &'static str,
    state: ChannelState,
    detail: &'a str,
}

#[derive(Serialize)]
struct StartLine<'a> {
    kind: &'static str,
    provider: &'static str,
    store: &'a Path,
    generation: u64,
    collector: &'a str,
    install: &'a InstallState,
    /// Why the hooks will not fire, one line each (empty: they will).
    findings: Vec<String>,
    /// What a session killed without its cleanup had left, cleaned now (absent: nothing).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    cleaned: &'a [String],
    /// The agent's `--version` (null: it gave none).
    agent_version: Option<&'a str>,
    /// Where that version stands against the tested window ("Claude Code 2.1.332:
    /// within the tested window 2.1.197–2.1.332").
    version_window: String,
}

#[derive(Serialize)]
struct EventLine<'a> {
    kind: &'static str,
    line: u64,
    /// hook, transcript or process.
    source: hooktrack::Source,
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
    /// Set when the agent delivered no hook event: the likely cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<&'a str>,
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
        // What the session shows names the agent's turns and paths: made safe here.
        let notation = match format {
            OutputFormat::Text => Notation::Text,
            OutputFormat::Ndjson => Notation::Json,
        };
        Ok(Self {
            sink: Box::new(SafeWriter::new(sink, notation)),
            format,
            silence_reported: false,
        })
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

    fn start(&mut self, launch: &Launch, gate: Option<&str>) {
        let store: &StoreDir = launch.store();
        let install = &launch.installed().record;
        let mut findings: Vec<String> = launch.findings().iter().map(ToString::to_string).collect();
        findings.extend(gate.map(str::to_owned));
        let agent = launch.agent();
        match self.format {
            OutputFormat::Ndjson => self.json(&StartLine {
                kind: "start",
                provider: agent.store_name(),
                store: store.dir.as_path(),
                generation: launch.generation(),
                collector: launch.url(),
                install,
                findings,
                cleaned: launch.cleaned(),
                agent_version: launch.agent_version(),
                version_window: launch.version_window(),
            }),
            OutputFormat::Text => {
                for cleaned in launch.cleaned() {
                    self.text(&format!("cleaned up: {cleaned}"));
                }
                self.text(&format!(
                    "observing {} (generation {}); store {}; collector {}",
                    agent.label(),
                    launch.generation(),
                    store.dir.as_path().display(),
                    launch.url()
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
                for finding in &findings {
                    self.text(&format!("WARNING: the hooks will not fire: {finding}"));
                }
                self.text(&launch.version_window());
            }
        }
    }

    /// Prints one update of the launch's live session.
    fn update(&mut self, session: &Session, update: &Update) {
        if session.startup_silent(update.at) {
            self.silence(&update.channel);
        }
        for notice in &update.notices {
            self.notice(notice);
        }
        for line in &update.lines {
            self.change(line);
        }
    }

    /// The channel turned `unavailable` for startup silence: said once (an event clears
    /// it, and the posture lines then say `active`).
    fn silence(&mut self, status: &ChannelStatus) {
        if self.silence_reported {
            return;
        }
        self.silence_reported = true;
        match self.format {
            OutputFormat::Ndjson => self.json(&ChannelLine {
                kind: "channel",
                state: status.state,
                detail: &status.detail,
            }),
            OutputFormat::Text => self.text(&format!(
                "WARNING: channel unavailable: {} (no hook has run since the prompt)",
                status.detail
            )),
        }
    }

    fn notice(&mut self, notice: &SessionNotice) {
        if self.format == OutputFormat::Text {
            self.text(&notice.to_string());
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

    fn end(
        &mut self,
        end: &End,
        exit_code: i32,
        collected: Option<CollectSummary>,
        warning: Option<&str>,
    ) {
        let turns = &end.turns;
        let hook_final = &end.posture;
        match self.format {
            OutputFormat::Ndjson => self.json(&EndLine {
                kind: "end",
                exit_code,
                turns,
                final_posture: hook_final,
                diagnostics: &end.diagnostics,
                collector: collected.map(|c| CollectorCounts {
                    accepted: c.accepted,
                    rejected: c.rejected,
                }),
                warning,
            }),
            OutputFormat::Text => {
                self.text(&format!("agent exited with status {exit_code}"));
                for t in turns {
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
                let nonzero: Vec<String> = end
                    .diagnostics
                    .nonzero()
                    .map(|(d, n)| format!("{}={n}", d.name()))
                    .collect();
                self.text(&format!(
                    "last turn {}; channel {}; diagnostics: {}",
                    hook_final.last_turn.result.name(),
                    serde_json::to_value(end.channel)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    if nonzero.is_empty() {
                        "none".to_owned()
                    } else {
                        nonzero.join(" ")
                    }
                ));
                if let Some(warning) = warning {
                    self.text(&format!("WARNING: {warning}"));
                }
            }
        }
    }
}

/// `--agent-death-signal`: a signal number, or none.
#[derive(Clone, Copy, Debug)]
pub struct DeathSignal(Option<i32>);

fn parse_death_signal(text: &str) -> Result<DeathSignal, String> {
    let upper = text.to_ascii_uppercase();
    Ok(DeathSignal(match upper.trim_start_matches("SIG") {
        "TERM" => Some(libc::SIGTERM),
        "HUP" => Some(libc::SIGHUP),
        "INT" => Some(libc::SIGINT),
        "KILL" => Some(libc::SIGKILL),
        "NONE" => None,
        _ => return Err(format!("`{text}`: expected TERM, HUP, INT, KILL or none")),
    }))
}
