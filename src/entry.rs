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
fn open_missing_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll(2) on three initialised pollfd entries, without waiting.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    for entry in fds {
        let closed = if polled {
            entry.revents & libc::POLLNVAL != 0
        } else {
            // poll can fail (ENOMEM, EINTR): ask about each descriptor instead.
            // SAFETY: fcntl(2) F_GETFD on a descriptor number only reads its flags.
            let bad = unsafe { libc::fcntl(entry.fd, libc::F_GETFD) } == -1;
            bad && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        };
        if closed {
            // SAFETY: open(2) of a NUL-terminated constant path; the lowest free number
            // is the closed one. Where std's start would abort if this fails, the number
            // stays closed: a hook must still exit 0.
            let _ = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

/// Writes to a closed pipe fail with `EPIPE` instead of killing the process, as in every
/// Rust program started by std (`hooktrack replay | head` ends cleanly, a hook whose
/// standard error was closed still exits 0).
fn ignore_sigpipe() {
    // SAFETY: signal(2) setting SIGPIPE's disposition to SIG_IGN, before any thread.
    let _ = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}
