//! A supervisor starting an agent in a tmux window under observation, with the library's
//! [`hooktrack::Launch`]: the launch gives the environment to pass (`new-window -e`), the
//! supervisor follows the session, reports the pane's process and its end, and finishes
//! the launch when the window's command is gone.
//!
//! An agent that is the supervisor's own child needs none of the tmux part:
//! `launch.spawn(&command, Some(SignalForwarding::install()?))` starts it with the
//! environment and forwards SIGTERM and SIGHUP to it, and `launch.wait(poll)` between
//! `launch.poll(now)` calls reports its end, as `hooktrack session` does.
//!
//! ```sh
//! cargo run --example launch_in_tmux -- claude -p 'hello'
//! ```
//!
//! The window lives on a private tmux server (`tmux -L hooktrack-example`), so nothing of
//! the user's tmux is touched; attach with `tmux -L hooktrack-example attach` to watch.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use hooktrack::install::detect_member;
use hooktrack::{Agent, ChannelConfig, Launch, LaunchConfig, ProviderChoice, wall_clock};
use hooktrack::{AgentExit, AgentStatus, default_session_root, find_program};

/// The private tmux server's socket name.
const SOCKET: &str = "hooktrack-example";
/// The longest the example follows one agent.
const LIMIT: Duration = Duration::from_secs(600);

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(program) = argv.first() else {
        eprintln!(
            "usage: launch_in_tmux AGENT [ARGS...]   ({})",
            Agent::names_for_help()
        );
        return ExitCode::from(2);
    };
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The name, else the program it is started with; `kimi` is whichever Kimi is installed.
    let choice = name
        .parse::<ProviderChoice>()
        .ok()
        .or_else(|| ProviderChoice::for_program(&name));
    let agent = match choice {
        Some(ProviderChoice::Exactly(agent)) => agent,
        Some(ProviderChoice::Kimi) => {
            let Some(family) = ProviderChoice::Kimi.family() else {
                eprintln!("`kimi` names no family");
                return ExitCode::from(2);
            };
            match detect_member(family, |v| std::env::var_os(v), None) {
                Ok(agent) => agent,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            }
        }
        Some(ProviderChoice::Auto) | None => {
            eprintln!(
                "unknown agent `{name}` (expected {})",
                Agent::names_for_help()
            );
            return ExitCode::from(2);
        }
    };
    let env = |name: &str| std::env::var_os(name);
    let (Some(config), Ok(emitter), Ok(cwd)) = (
        agent.config().user_file(env),
        std::env::current_exe()
            .map(|exe| exe.with_file_name("../hooktrack"))
            .and_then(std::fs::canonicalize),
        std::env::current_dir(),
    ) else {
        eprintln!("needs $HOME, a built `hooktrack` binary (cargo build) and a working directory");
        return ExitCode::FAILURE;
    };
    // Where `hooktrack session` keeps its sessions, for `hooktrack replay` afterwards.
    let root = default_session_root(env, wall_clock()).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("hooktrack-example-{}", std::process::id()))
    });
    // Refused before anything is installed; Codex's trust query runs the same program.
    let program = match find_program(program) {
        Ok(program) => program,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut launch = match Launch::start(LaunchConfig {
        agent,
        config,
        root,
        emitter,
        home: None,
        cwd,
        args: argv[1..].to_vec(),
        program: Some(program),
        channel: ChannelConfig::default(),
        // The agent runs in a pane of this server: a dialog answered is seen on its screen.
        read_screens: Some(hooktrack::TmuxServer::default()),
    }) {
        Ok(launch) => launch,
        Err(e) => {
            eprintln!("cannot start observing: {e}");
            return ExitCode::FAILURE;
        }
    };
    for finding in launch.findings() {
        eprintln!("the hooks will not fire: {finding}");
    }

    // The window: the agent with the launch's environment, kept after it exits so its end
    // can be seen (`remain-on-exit`).
    let mut window = tmux();
    window.args([
        "new-session",
        "-d",
        "-s",
        "observed",
        "-x",
        "200",
        "-y",
        "50",
    ]);
    for (key, value) in launch.env() {
        window
            .arg("-e")
            .arg(format!("{key}={}", value.to_string_lossy()));
    }
    window.arg("--").args(&argv);
    if !window.status().is_ok_and(|s| s.success()) {
        eprintln!("cannot start the tmux window (is tmux installed?)");
        return ExitCode::FAILURE;
    }
    let _ = tmux()
        .args(["set-option", "-t", "observed", "remain-on-exit", "on"])
        .status();
    let pid = pane_value("#{pane_pid}").and_then(|p| p.parse().ok());
    if let Some(pid) = pid {
        launch.set_child_pid(pid);
    }
    // A headless command got its prompt with its arguments; a TUI's first prompt is the
    // supervisor's to report (`launch.prompt_sent(now)` after `tmux send-keys`).
    launch.agent_started(wall_clock());

    let started = Instant::now();
    while started.elapsed() < LIMIT {
        for update in launch.poll(wall_clock()) {
            if update.channel.state == hooktrack::ChannelState::Unavailable {
                println!("channel unavailable: {}", update.channel.detail);
            }
            for line in update.lines.iter().filter(|l| !l.changes.is_empty()) {
                let what: Vec<String> = line
                    .changes
                    .iter()
                    .map(|c| format!("{} {}→{}", c.field, c.before, c.after))
                    .collect();
                println!(
                    "{} {}",
                    line.event.as_deref().unwrap_or("-"),
                    what.join(", ")
                );
            }
        }
        if pane_value("#{pane_dead}").is_none_or(|dead| dead == "1") {
            // The pane's process ended: its status is the launch's to know.
            if let (Some(pid), Some(status)) = (pid, pane_status()) {
                launch.agent_exited(AgentExit {
                    pid,
                    status,
                    at: wall_clock(),
                });
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Late hooks, then the ledger.
    std::thread::sleep(Duration::from_millis(500));
    launch.poll(wall_clock());
    for turn in launch.ledger() {
        println!(
            "turn {}: {}, {} tool calls",
            turn.id,
            turn.result.name(),
            turn.tool_calls
        );
    }
    if let Some(exit) = launch.agent_exit() {
        println!("the agent exited with status {}", exit.shell_code());
    }
    let _ = tmux().args(["kill-server"]).status();
    match launch.finish(wall_clock()) {
        Ok(done) => {
            println!("{} hook events", done.events);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cleanup failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tmux() -> Command {
    let mut command = Command::new("tmux");
    command.args(["-L", SOCKET]);
    command
}

/// One format value of the observed pane, `None` once the server is gone.
fn pane_value(format: &str) -> Option<String> {
    let out = tmux()
        .args(["display-message", "-p", "-t", "observed", format])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// How the dead pane's process ended: a signal (tmux 3.3's `pane_dead_signal`), else its
/// exit status.
fn pane_status() -> Option<AgentStatus> {
    let number = |format| pane_value(format)?.parse().ok();
    number("#{pane_dead_signal}")
        .filter(|s| *s > 0)
        .map(AgentStatus::Killed)
        .or_else(|| number("#{pane_dead_status}").map(AgentStatus::Exited))
}
