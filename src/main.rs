//! The `hooktrack` binary: see `cli` for the subcommands.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
