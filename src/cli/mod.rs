//! The command line: one file per subcommand; this one only parses and dispatches.

/// `println!` that never panics: when the reader went away (`hooktrack setup | head -3`)
/// the lines are dropped and the command still does all its work.
macro_rules! say {
    () => {
        $crate::cli::say_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::say_line(format_args!($($arg)*))
    };
}

mod collect;
mod emit;
#[cfg(feature = "fleet")]
mod fleet;
mod install;
mod jump;
mod replay;
mod session;
mod setup;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Turn AI coding agents' hook events into trustworthy turn state.
#[derive(Parser)]
#[command(name = "hooktrack", version, about, long_about = None, after_help = agents_help())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Replay(replay::ReplayArgs),
    Session(session::SessionArgs),
    Emit(emit::EmitArgs),
    Collect(collect::CollectArgs),
    Install(install::InstallArgs),
    Uninstall(install::UninstallArgs),
    Check(install::CheckArgs),
    // Boxed: its fleet flags make it several times the size of the others.
    Watch(Box<watch::WatchArgs>),
    Jump(jump::JumpArgs),
    Setup(setup::SetupArgs),
}

pub fn run() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `emit` is a hook: its argv goes to the one hand parser before clap is even built
    // (see emit.rs); clap only knows `emit` for the help.
    if args.get(1).is_some_and(|a| a == "emit") {
        return emit::run(&args[2..]);
    }
    let cli = Cli::parse_from(&args);
    match &cli.command {
        Command::Replay(args) => replay::run(args),
        Command::Session(args) => session::run(args),
        // Not reached (every `emit` argv was read above); the same one parser if it were.
        Command::Emit(_) => emit::run(args.get(2..).unwrap_or_default()),
        Command::Collect(args) => collect::run(args),
        Command::Install(args) => install::run_install(args),
        Command::Uninstall(args) => install::run_uninstall(args),
        Command::Check(args) => install::run_check(args),
        Command::Watch(args) => watch::run(args),
        Command::Jump(args) => jump::run(args),
        Command::Setup(args) => setup::run(args),
    }
}

/// The one parser of agent names for every flag that takes one (`--provider`, `--agent`):
/// `auto`, `kimi` (either generation) or any name of a [`hooktrack::Agent`].
pub(crate) fn parse_agent_choice(name: &str) -> Result<hooktrack::ProviderChoice, String> {
    name.parse().map_err(|e: hooktrack::UnknownAgent| {
        format!(
            "unknown agent `{}` (expected {})",
            e.name,
            hooktrack::ProviderChoice::names_for_help()
        )
    })
}

/// Every agent with the name `name` gives it, `kimi-code (Kimi Code 2.x), claude (Claude
/// Code), ...`: the one list of agents in help texts, so that none goes stale.
pub(crate) fn agents_by(name: fn(hooktrack::Agent) -> &'static str) -> String {
    hooktrack::Agent::ALL
        .iter()
        .map(|&a| format!("{} ({})", name(a), a.label()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The top-level help's last line: the agents every command knows.
fn agents_help() -> String {
    format!("Agents: {}", agents_by(hooktrack::Agent::typed_name))
}

/// What a flag taking an agent choice (`--provider`, `--agent`) accepts.
pub(crate) fn agent_choice_help(what: &str) -> String {
    let kimi = hooktrack::ProviderChoice::Kimi
        .family()
        .map(|f| format!("{} (either {}), ", f.name, f.label))
        .unwrap_or_default();
    format!(
        "{what}: auto (detected from the rows), {kimi}{}",
        agents_by(hooktrack::Agent::typed_name)
    )
}

/// What `--home DIR` means, per agent, from the descriptors' config locations: the value
/// of the agent's home variable, which holds the agent's file itself, or (a stand-in for
/// `$HOME`) its dot directory.
pub(crate) fn home_help() -> String {
    let vars: Vec<String> = hooktrack::Agent::ALL
        .iter()
        .map(|a| {
            let location = a.config();
            match (location.home_var(), location.home_env) {
                (Some(var), Some(_)) => format!("{} ${var}", a.typed_name()),
                (Some(var), None) => {
                    format!("{} ${var} (it holds {}/)", a.typed_name(), location.dot_dir)
                }
                // No variable moves its config (Auggie's only a flag of its own).
                (None, _) => format!("{} none (--home does not move it)", a.typed_name()),
            }
        })
        .collect();
    format!(
        "The agent's home: the value of its home variable, which the agent is started with: {}",
        vars.join(", ")
    )
}

pub(crate) fn fail(message: &str) -> ExitCode {
    // An error names paths and payload text: shown, never interpreted.
    eprintln!(
        "hooktrack: error: {}",
        hooktrack::safe_text::visible_lines(message)
    );
    ExitCode::FAILURE
}

/// One line on stdout; a write error (a closed pipe) drops it (see `say!`).
pub(crate) fn say_line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
}
