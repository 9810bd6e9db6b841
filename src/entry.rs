//! The start of both binaries (`hooktrack` and `hooktrack-hook`): the C `main` itself,
//! not std's runtime start (`#![no_main]` in each).
//!
//! Agents run the hook command on every hook, and std's start costs each run about
//! 0.04 ms (`docs/benchmarks.md`): it reads `/proc/self/maps` to find the main thread's
//! stack guard, maps an alternate signal stack and installs the handlers that print "has
//! overflowed its stack". [`c_main`] does the two things the programs rely on (what std
//! does for them, as it does it) and leaves out the stack-overflow report: an overflow
//! still ends the process (SIGSEGV), without that message, and the main thread has no name
//! in a panic message (`'<unnamed>'`).
//!
//! Each binary includes this file as its `entry` module and exports `main` itself
//! (`#[unsafe(no_mangle)]` belongs in the binary, not in a library every test links).

use std::process::ExitCode;

/// What a binary's C `main` returns: `run`'s status, after the standard descriptors are
/// open and SIGPIPE is ignored, with a panic reported as status 101 as std's start does.
pub fn c_main(run: fn() -> ExitCode) -> libc::c_int {
    open_missing_standard_fds();
    ignore_sigpipe();
    // A panic must not unwind out of an `extern "C"` function (that aborts); std's start
    // reports one as status 101, and so does this.
    let code = std::panic::catch_unwind(run).unwrap_or_else(|_| ExitCode::from(101));
    // `exit` runs std's cleanup first (standard output's buffer is flushed).
    std::process::exit(i32::from(status_of(code)))
}

/// The status byte of an `ExitCode`: it has no accessor on stable Rust, but compares equal
/// to the code made from the same byte (on Unix the byte is all there is).
fn status_of(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(1)
}

/// A standard descriptor the parent left closed is opened on `/dev/null`, as std's start
/// does: otherwise the first file this process opens would get the number, and a message
/// meant for standard error (or a hook's never-written standard output) would land in it
/// (`events.ndjson`, say).
///
/// One `poll` of the three numbers says whether any is closed (it is the hook's only cost
/// here: an `open` and `close` of `/dev/null` to find out would cost ten times as much on
/// the hook's path, `docs/benchmarks.md`). Only then, or when `poll` fails, `/dev/null` is
/// opened until it lands above 2: `open` takes the lowest free number, so each number below
/// was one of the closed three and keeps its descriptor (without close-on-exec, as std's
/// start opens it, so that children get it too), and the one above is closed again. Where
/// std's start would abort when `/dev/null` cannot be opened, the number stays closed: a
/// hook must still exit 0.
fn open_missing_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll(2) reads and writes the three initialised entries of `fds`, which live
    // across the call, and with a zero timeout does not wait. It takes descriptor numbers,
    // not borrowed descriptors, so a closed one is no breach of I/O safety: poll reports it
    // (POLLNVAL), which is the question. rustix's `poll` takes only open descriptors
    // (`BorrowedFd`), which these may not be.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    if polled && fds.iter().all(|entry| entry.revents & libc::POLLNVAL == 0) {
        return;
    }
    use rustix::fs::{Mode, OFlags, open};
    use std::os::fd::{AsRawFd, IntoRawFd};
    for _ in 0..3 {
        match open(c"/dev/null", OFlags::RDWR, Mode::empty()) {
            Ok(fd) if fd.as_raw_fd() <= 2 => {
                // Now standard input, output or error, for the life of the process.
                let _ = fd.into_raw_fd();
            }
            _ => return,
        }
    }
}

/// Writes to a closed pipe fail with `EPIPE` instead of killing the process, as in every
/// Rust program started by std (`hooktrack replay | head` ends cleanly, a hook whose
/// standard error was closed still exits 0).
fn ignore_sigpipe() {
    // SAFETY: signal(2) sets SIGPIPE's disposition to SIG_IGN: no handler of ours runs,
    // so there is no handler code to be async-signal-safe; it is done before any thread
    // exists, so nothing races the change, and std's start does the same.
    let _ = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}
