//! The command line: one file per subcommand; this one only parses and dispatches.

mod replay;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Turn AI coding agents' hook events into trustworthy turn state.
#[derive(Parser)]
#[command(name = "hooktrack", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Replay(replay::ReplayArgs),
    Watch(watch::WatchArgs),
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Replay(args) => replay::run(args),
        Command::Watch(args) => watch::run(args),
    }
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("hooktrack: error: {message}");
    ExitCode::FAILURE
}
