//! `hooktrack-hook`: the hook command alone. `hooktrack-hook emit ARGS` does what
//! `hooktrack emit ARGS` does, from a binary about a third of the size.
//!
//! Agents run the hook on every event of every turn, and its start is their latency.
//! The same code starts faster from a small binary: the hook's path lies in fewer pages
//! of the file, so the process takes fewer page faults and cache misses on its way
//! (`docs/benchmarks.md`). `hooktrack install` and `hooktrack session` write hooks that
//! run this binary when it sits beside `hooktrack` (as `cargo install` and
//! `just hook-static` put it), else `hooktrack` itself.
#![no_main]

#[path = "../entry.rs"]
mod entry;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "usage: hooktrack-hook emit [OPTIONS]\n\
    The hook command agents run on every event: the same as `hooktrack emit` (its options: \
    `hooktrack emit --help`), in a smaller binary.\n";

/// Called by the C runtime with the process arguments, which std reads for itself
/// (`std::env::args_os`).
// SAFETY: `no_mangle` exports this function as the C symbol `main`, which the C runtime
// calls; no other definition of `main` is linked (`no_main` drops std's), so the symbol
// names exactly this function, and its signature is C's `int main(int, char **)`.
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    entry::c_main(run)
}

fn run() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let rest = args.get(2..).unwrap_or(&[]);
    if args.get(1).is_some_and(|a| a == "emit") {
        if rest.iter().any(|a| a == "--help" || a == "-h") {
            // Asked by a person, not an agent: the usage on stdout.
            let _ = std::io::stdout().write_all(USAGE.as_bytes());
            return ExitCode::SUCCESS;
        }
        hooktrack_producer::emit::argv::run(rest);
        return ExitCode::SUCCESS;
    }
    let _ = std::io::stderr().write_all(USAGE.as_bytes());
    ExitCode::from(2)
}
