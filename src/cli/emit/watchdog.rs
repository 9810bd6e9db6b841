//! The emitter's watchdog, without a thread: an interval timer (`setitimer`) whose
//! `SIGALRM` handler appends one line, prepared in advance, to `emit.log` and ends the
//! process with status 0.
//!
//! A thread costs the hook about a tenth of a millisecond on every run (its stack, the
//! clone, a new malloc arena when it starts); the timer is one system call. The handler
//! does only what is safe in a signal handler (`open`, `write`, `close`, `_exit`) and so
//! ends the process even while the main thread is blocked in a read, a lock or a connect.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// What the handler writes, and where.
struct Armed {
    log: CString,
    line: Vec<u8>,
}

static ARMED: OnceLock<Armed> = OnceLock::new();

/// Arms the timer: after `deadline`, `line` is appended to `log` and the process exits 0.
/// Returns false when the timer could not be armed (the caller then needs another
/// watchdog).
pub(super) fn arm(log: &Path, line: String, deadline: Duration) -> bool {
    let Ok(log) = CString::new(log.as_os_str().as_bytes()) else {
        return false;
    };
    if ARMED
        .set(Armed {
            log,
            line: line.into_bytes(),
        })
        .is_err()
    {
        return false;
    }
    let Ok(secs) = libc::time_t::try_from(deadline.as_secs()) else {
        return false;
    };
    let micros = libc::suseconds_t::from(deadline.subsec_micros());
    // SAFETY: `sigaction` and `setitimer` get fully initialised structures; the handler
    // is an `extern "C" fn(c_int)` that makes only async-signal-safe calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
            return false;
        }
        let timer = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: secs,
                tv_usec: micros,
            },
        };
        libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) == 0
    }
}

extern "C" fn on_alarm(_signal: libc::c_int) {
    if let Some(armed) = ARMED.get() {
        // SAFETY: open, write, close and _exit are async-signal-safe; the path and the
        // line were built before the timer was armed and are never changed.
        unsafe {
            let fd = libc::open(
                armed.log.as_ptr(),
                libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
                0o600,
            );
            if fd >= 0 {
                let _ = libc::write(fd, armed.line.as_ptr().cast(), armed.line.len());
                let _ = libc::close(fd);
            }
        }
    }
    // SAFETY: ends the process at once, without unwinding or running destructors.
    unsafe { libc::_exit(0) }
}
