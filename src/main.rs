//! The `hooktrack` binary: see `cli` for the subcommands, and `entry` for why it starts
//! at the C `main`.
//!
//! The unit tests keep the test harness's own `main`.
#![cfg_attr(not(test), no_main)]

mod cli;
#[cfg(not(test))]
mod entry;

// Under test the harness has its own entry point; this keeps the subcommands reachable
// (and so checked) there.
#[cfg(test)]
fn main() -> std::process::ExitCode {
    cli::run()
}

/// Called by the C runtime with the process arguments, which std reads for itself
/// (`std::env::args_os`).
#[cfg(not(test))]
// SAFETY: `no_mangle` exports this function as the C symbol `main`, which the C runtime
// calls; no other definition of `main` is linked (`no_main` drops std's), so the symbol
// names exactly this function, and its signature is C's `int main(int, char **)`.
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    entry::c_main(cli::run)
}
