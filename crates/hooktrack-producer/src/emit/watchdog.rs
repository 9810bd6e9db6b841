//! The emitter's watchdog without a thread: an interval timer (`setitimer(ITIMER_REAL)`)
//! whose `SIGALRM` handler records what [`give_up`](super::give_up) records — a
//! `command_fallback` row with the configured event name and the cause, after a lock wait
//! of at most [`GIVE_UP_LOCK_WAIT`], and a log line — then ends the process with status 0.
//!
//! A thread costs every hook run a 2 MiB stack mapping, a `clone`, and a new malloc arena
//! when it first allocates; arming the timer is two system calls. The price is that the
//! handler runs in the middle of whatever the main thread was doing (a `read` of stdin, a
//! `connect`, a `malloc`, holding the stdin lock), so it may only make calls that do not
//! depend on that state:
//!
//! - everything it writes is rendered by [`arm`] *before* the timer is armed, into a
//!   [`Prepared`] that is set once in a static and only read afterwards: the row with a
//!   fixed-width slot for `received_at`, the log line around its timestamp and outcome,
//!   and every path as a NUL-terminated string;
//! - the handler itself allocates nothing, takes no Rust lock, uses no `std` I/O and
//!   cannot panic. It calls `clock_gettime`, `mkdir`, `lstat`, `chmod`, `open`, `fstat`,
//!   `fchmod`, `lseek`, `read`, `write`, `close`, `geteuid` and `_exit` (POSIX's
//!   async-signal-safe list), plus `flock` and `nanosleep`, plain system calls on Linux
//!   that touch no user-space state (`flock` because it is the store's lock; an `fcntl`
//!   lock would not exclude the collector's `flock`);
//! - it writes the row with one `write` on an `O_APPEND` descriptor, as every writer does,
//!   after sealing a cut-off last line, and checks the store as the other writers do (a
//!   real directory of this user, files opened with `O_NOFOLLOW`, regular, this user's,
//!   tightened to 0600).
//!
//! What it does not do, compared with the thread: it creates only the store directory
//! itself (not missing parents: `emit` made them at its start, or could not), it appends
//! to `emit.log` without the log's rotation (at most one line past the rotation size; the
//! next emitter rotates), and it falls back to the per-user log only when that log's
//! directory already exists (it makes no directory there), then to standard error.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thiserror::Error;

use super::{EmitConfig, HARD_DEADLINE, give_up_cause, give_up_log_head, give_up_row};
use crate::store::{self, StorePaths};
use hooktrack_core::time::Timestamp;

/// How long the give-up row waits for the store lock before it is appended without it:
/// the lock may be what stalled the emitter.
pub const GIVE_UP_LOCK_WAIT: Duration = Duration::from_millis(100);

/// Room for the give-up row on the handler's stack. The row's variable parts are bounded
/// (provider and event clipped to 128 bytes, at most 6 bytes each once JSON-escaped; a
/// pane id of 11): about 2 KiB at most.
const ROW_CAP: usize = 4096;
/// Room for the log line; a longer one (a very long store path in an error) is cut, and
/// still ends with a newline.
const LOG_CAP: usize = 8192;
/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
const STAMP_LEN: usize = 24;

/// Why the timer was not armed (the caller then needs another watchdog).
#[derive(Debug, Error)]
pub enum WatchdogError {
    #[error("the watchdog is already armed in this process")]
    AlreadyArmed,
    #[error("the store path holds a NUL byte")]
    NulInPath,
    #[error("the give-up row could not be prepared ({detail})")]
    Row { detail: &'static str },
    #[error("cannot install or unblock the SIGALRM handler")]
    Sigaction {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot arm the interval timer")]
    Timer {
        #[source]
        source: std::io::Error,
    },
}

/// Everything the handler writes, rendered before the timer is armed.
pub struct Prepared {
    dir: CString,
    counter: CString,
    events: CString,
    store_log: CString,
    user_log: Option<CString>,
    /// The give-up row, newline included; `received_at` is at `row_stamp..+STAMP_LEN`.
    row: Vec<u8>,
    row_stamp: usize,
    /// The time the timer is due, rendered: used when the clock cannot be read (or names a
    /// year outside 0000–9999) at give-up time.
    due: [u8; STAMP_LEN],
    /// ` pid=N event=E delivered=`: between the log line's timestamp and the outcome.
    log_head: Vec<u8>,
    /// `: <cause>\n`.
    log_cause: Vec<u8>,
    /// ` pid=N event=E: ...\n`: the line when the delivery was settled before the timer fired.
    log_settled: Vec<u8>,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();
/// Set once `emit` has finished with the delivery (on disk, posted, or logged as lost): a
/// timer firing after that (while the report is logged) must not add a give-up row for a
/// delivery that is already recorded.
static SETTLED: AtomicBool = AtomicBool::new(false);

/// Renders the give-up row and log line for `config`, installs the `SIGALRM` handler and
/// arms a one-shot timer of [`HARD_DEADLINE`]. Process-wide: call it once, from the hook
/// binary's main thread, before the emitter starts.
pub fn arm(config: &EmitConfig) -> Result<(), WatchdogError> {
    let prepared = Prepared::new(config, store::now(), HARD_DEADLINE)?;
    PREPARED
        .set(prepared)
        .map_err(|_| WatchdogError::AlreadyArmed)?;
    let secs = libc::time_t::try_from(HARD_DEADLINE.as_secs()).unwrap_or(libc::time_t::MAX);
    let micros = libc::suseconds_t::from(HARD_DEADLINE.subsec_micros());
    // SAFETY: `action` and `alarm` are zero-initialised (a valid `sigaction` and
    // `sigset_t`) and then filled by their own functions; the handler is an
    // `extern "C" fn(c_int)` that makes only the calls listed in the module
    // documentation, and reads `PREPARED`, set above and never changed again.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
            return Err(WatchdogError::Sigaction {
                source: std::io::Error::last_os_error(),
            });
        }
        // A signal mask is inherited across exec: a parent that blocked SIGALRM would
        // otherwise leave the timer's signal pending for ever, and the hook unwatched.
        let mut alarm: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut alarm);
        libc::sigaddset(&mut alarm, libc::SIGALRM);
        // pthread_sigmask returns its error rather than setting errno.
        let rc = libc::pthread_sigmask(libc::SIG_UNBLOCK, &alarm, std::ptr::null_mut());
        if rc != 0 {
            return Err(WatchdogError::Sigaction {
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
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
    // SAFETY: setitimer(2) with a valid, fully initialised `itimerval`; the old value is
    // not asked for.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) } != 0 {
        return Err(WatchdogError::Timer {
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Tells the handler that the delivery is settled: from now on a firing timer only logs
/// and exits.
pub fn settled() {
    SETTLED.store(true, Ordering::Release);
}

extern "C" fn on_alarm(_signal: libc::c_int) {
    if let Some(prepared) = PREPARED.get() {
        prepared.give_up(SETTLED.load(Ordering::Acquire));
    }
    // SAFETY: _exit(2) ends the process at once, without unwinding, destructors or atexit
    // handlers (none of which is safe to run from a signal handler). Status 0: a hook
    // must never fail the agent.
    unsafe { libc::_exit(0) }
}

/// How the give-up append ended, as the log line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Locked,
    Unlocked,
    /// The delivery was settled before the timer fired: no row.
    Settled,
    Lost(Failure),
}

/// Why the give-up row could not be appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `open` or `mkdir` failed with this errno.
    Open {
        what: Which,
        errno: i32,
    },
    Symlink {
        what: Which,
    },
    NotADirectory {
        what: Which,
    },
    NotARegularFile {
        what: Which,
    },
    OwnedBy {
        what: Which,
        uid: u32,
        me: u32,
    },
    Write {
        errno: i32,
    },
    ShortWrite,
}

/// Which store path a [`Failure`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Dir,
    Counter,
    Events,
}

impl Prepared {
    /// Renders everything for a timer armed at `armed_at` that fires after `deadline`.
    pub fn new(
        config: &EmitConfig,
        armed_at: Timestamp,
        deadline: Duration,
    ) -> Result<Self, WatchdogError> {
        let store = StorePaths::in_dir(&config.dir);
        let c_path = |p: &Path| CString::new(p.as_os_str().as_bytes());
        let (dir, counter, events, store_log) = match (
            c_path(&store.dir),
            c_path(&store.counter),
            c_path(&store.events),
            c_path(&store.emit_log),
        ) {
            (Ok(d), Ok(c), Ok(e), Ok(l)) => (d, c, e, l),
            _ => return Err(WatchdogError::NulInPath),
        };
        let user_log = super::log::user_log_path().and_then(|p| c_path(&p).ok());
        let deadline_ms = i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX);
        let due_at = Timestamp::from_millis(armed_at.as_millis().saturating_add(deadline_ms));
        let due = due_at.collector_format().ok_or(WatchdogError::Row {
            detail: "the clock is outside the years 0000-9999",
        })?;
        let row = give_up_row(config, due_at);
        // The first `,"received_at":"` is the key: a JSON string before it (the provider)
        // cannot hold an unescaped quote.
        let key = b",\"received_at\":\"";
        // A plain scan: `memchr` would detect the CPU's features first (see
        // `http::find_head_end`), on every hook run.
        let row_stamp = row
            .windows(key.len())
            .position(|w| w == key)
            .map(|i| i + key.len())
            .filter(|&at| row.get(at..at + STAMP_LEN) == Some(&due[..]))
            .ok_or(WatchdogError::Row {
                detail: "no received_at slot",
            })?;
        if row.len() + 1 > ROW_CAP {
            return Err(WatchdogError::Row {
                detail: "the row is over the handler's buffer",
            });
        }
        let head = give_up_log_head(config);
        let cause = give_up_cause();
        Ok(Self {
            dir,
            counter,
            events,
            store_log,
            user_log,
            row,
            row_stamp,
            due,
            log_head: format!(" {head} delivered=").into_bytes(),
            log_cause: format!(": {cause}\n").into_bytes(),
            log_settled: format!(
                " {head}: the emitter was ended at its {} ms deadline after the delivery was settled (while logging it)\n",
                deadline.as_millis()
            )
            .into_bytes(),
        })
    }

    /// The handler's work: the row (unless `settled`), then the log line. Only
    /// async-signal-safe calls, no allocation, no panic (see the module documentation).
    pub fn give_up(&self, settled: bool) -> Outcome {
        let mut stamp = self.due;
        if let Some(ms) = realtime_millis() {
            // Outside 0000-9999 the due time stays (the formatter writes four-digit years).
            let _ = format_millis(ms, &mut stamp);
        }
        let outcome = if settled {
            Outcome::Settled
        } else {
            self.append_row(&stamp)
        };
        self.log(&stamp, outcome);
        outcome
    }

    fn append_row(&self, stamp: &[u8; STAMP_LEN]) -> Outcome {
        match self.try_append(stamp) {
            Ok(outcome) => outcome,
            Err(failure) => Outcome::Lost(failure),
        }
    }

    fn try_append(&self, stamp: &[u8; STAMP_LEN]) -> Result<Outcome, Failure> {
        check_dir(&self.dir)?;
        // A fresh descriptor of the counter: its flock is the store lock. Held until the
        // descriptor is closed (by `Fd`'s drop, or by `_exit`).
        let counter = Fd::open_private(&self.counter, libc::O_RDWR, Which::Counter)?;
        let locked = counter.lock_within(GIVE_UP_LOCK_WAIT);
        let events = Fd::open_private(&self.events, libc::O_RDWR | libc::O_APPEND, Which::Events)?;
        let mut buf = Line::<ROW_CAP>::new();
        if events.ends_cut_off() {
            buf.push(b"\n");
        }
        let (before, after) = self.row.split_at(self.row_stamp.min(self.row.len()));
        buf.push(before);
        buf.push(stamp);
        buf.push(after.get(STAMP_LEN..).unwrap_or(&[]));
        events.write_whole(buf.bytes())?;
        drop(events);
        drop(counter);
        Ok(if locked {
            Outcome::Locked
        } else {
            Outcome::Unlocked
        })
    }

    fn log(&self, stamp: &[u8; STAMP_LEN], outcome: Outcome) {
        let mut line = Line::<LOG_CAP>::new();
        line.push(stamp);
        if outcome == Outcome::Settled {
            line.push(&self.log_settled);
        } else {
            line.push(&self.log_head);
            self.push_outcome(&mut line, outcome);
            line.push(&self.log_cause);
        }
        line.end_line();
        let text = line.bytes();
        if append_log(&self.store_log, text) {
            return;
        }
        if let Some(user_log) = &self.user_log
            && append_log(user_log, text)
        {
            return;
        }
        // SAFETY: write(2) to standard error of bytes on this stack frame (never
        // standard output: the agent may read it as the hook's answer).
        let _ = unsafe { libc::write(libc::STDERR_FILENO, text.as_ptr().cast(), text.len()) };
    }

    fn push_outcome(&self, line: &mut Line<LOG_CAP>, outcome: Outcome) {
        match outcome {
            Outcome::Locked | Outcome::Settled => {
                line.push(b"recorded as a command_fallback row");
            }
            Outcome::Unlocked => line.push(
                b"recorded as a command_fallback row, without the store lock (its holder is stuck)",
            ),
            Outcome::Lost(failure) => {
                line.push(b"LOST: ");
                let path = |what: Which| match what {
                    Which::Dir => self.dir.as_bytes(),
                    Which::Counter => self.counter.as_bytes(),
                    Which::Events => self.events.as_bytes(),
                };
                let refusing = |line: &mut Line<LOG_CAP>, what: Which| {
                    line.push(b"refusing to use ");
                    line.push(path(what));
                    line.push(b": ");
                };
                match failure {
                    Failure::Open { what, errno } => {
                        line.push(b"cannot open ");
                        line.push(path(what));
                        line.push(b": ");
                        push_errno(line, errno);
                    }
                    Failure::Symlink { what } => {
                        refusing(line, what);
                        line.push(b"it is a symbolic link");
                    }
                    Failure::NotADirectory { what } => {
                        refusing(line, what);
                        line.push(b"it is not a directory");
                    }
                    Failure::NotARegularFile { what } => {
                        refusing(line, what);
                        line.push(b"it is not a regular file");
                    }
                    Failure::OwnedBy { what, uid, me } => {
                        refusing(line, what);
                        line.push(b"it is owned by uid ");
                        line.push_u64(u64::from(uid));
                        line.push(b", not ");
                        line.push_u64(u64::from(me));
                    }
                    Failure::Write { errno } => {
                        line.push(b"cannot write ");
                        line.push(self.events.as_bytes());
                        line.push(b": ");
                        push_errno(line, errno);
                    }
                    Failure::ShortWrite => {
                        line.push(b"cannot write ");
                        line.push(self.events.as_bytes());
                        line.push(b": the row was written in part (is the disk full?)");
                    }
                }
            }
        }
    }
}

/// Appends a log line to `path` (created 0600, not followed if a symlink, checked like
/// every store file); false when it cannot.
fn append_log(path: &CString, text: &[u8]) -> bool {
    match Fd::open_private(path, libc::O_WRONLY | libc::O_APPEND, Which::Events) {
        Ok(fd) => fd.write_whole(text).is_ok(),
        Err(_) => false,
    }
}

/// The store directory: created 0700 if missing (its parent must exist), else a real
/// directory of this user, tightened to 0700 (as `secure::ensure_dir` checks it).
fn check_dir(dir: &CString) -> Result<(), Failure> {
    // SAFETY: mkdir(2) on a NUL-terminated path; failure (EEXIST above all) is judged by
    // the lstat below.
    let _ = unsafe { libc::mkdir(dir.as_ptr(), 0o700) };
    let mut meta = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: lstat(2) on a NUL-terminated path into a buffer of the right type; it is
    // read only when the call succeeded (and so filled it).
    let meta = unsafe {
        if libc::lstat(dir.as_ptr(), meta.as_mut_ptr()) != 0 {
            return Err(Failure::Open {
                what: Which::Dir,
                errno: errno(),
            });
        }
        meta.assume_init()
    };
    match meta.st_mode & libc::S_IFMT {
        libc::S_IFDIR => {}
        libc::S_IFLNK => return Err(Failure::Symlink { what: Which::Dir }),
        _ => return Err(Failure::NotADirectory { what: Which::Dir }),
    }
    check_owner(&meta, Which::Dir)?;
    if meta.st_mode & 0o077 != 0 {
        // SAFETY: chmod(2) on a NUL-terminated path. A failure leaves the mode as it was,
        // which the next emitter tightens.
        let _ = unsafe { libc::chmod(dir.as_ptr(), 0o700) };
    }
    Ok(())
}

fn check_owner(meta: &libc::stat, what: Which) -> Result<(), Failure> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.st_uid != me {
        return Err(Failure::OwnedBy {
            what,
            uid: meta.st_uid,
            me,
        });
    }
    Ok(())
}

/// An open descriptor, closed on drop.
struct Fd(libc::c_int);

impl Fd {
    /// Opens (creating 0600) without following a symlink; refuses anything but a regular
    /// file of this user and tightens its mode to 0600 (as `secure::open_private` does).
    fn open_private(path: &CString, flags: libc::c_int, what: Which) -> Result<Self, Failure> {
        let flags = flags | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: open(2) on a NUL-terminated path; the mode is passed as the variadic
        // argument O_CREAT reads.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            let errno = errno();
            return Err(if errno == libc::ELOOP {
                Failure::Symlink { what }
            } else {
                Failure::Open { what, errno }
            });
        }
        let fd = Self(fd);
        let meta = fd.stat().ok_or(Failure::Open {
            what,
            errno: errno(),
        })?;
        if meta.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Failure::NotARegularFile { what });
        }
        check_owner(&meta, what)?;
        if meta.st_mode & 0o077 != 0 {
            // SAFETY: fchmod(2) on a descriptor this function opened. A failure leaves the
            // mode as it was, which the next writer tightens.
            let _ = unsafe { libc::fchmod(fd.0, 0o600) };
        }
        Ok(fd)
    }

    fn stat(&self) -> Option<libc::stat> {
        let mut meta = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat(2) on an open descriptor into a buffer of the right type, read
        // only when the call succeeded.
        unsafe { (libc::fstat(self.0, meta.as_mut_ptr()) == 0).then(|| meta.assume_init()) }
    }

    /// Tries the exclusive flock until it is taken or `wait` has passed; false past it
    /// (or when flock fails otherwise): the row then goes without the lock.
    fn lock_within(&self, wait: Duration) -> bool {
        let start = monotonic();
        let mut pause_ms: i64 = 1;
        loop {
            // SAFETY: flock(2) on a descriptor this module opened.
            if unsafe { libc::flock(self.0, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return true;
            }
            let e = errno();
            if e != libc::EWOULDBLOCK && e != libc::EINTR {
                return false;
            }
            let (Some(start), Some(now)) = (start, monotonic()) else {
                return false;
            };
            let waited = now.saturating_sub(start);
            let left = i64::try_from(wait.as_nanos())
                .unwrap_or(i64::MAX)
                .saturating_sub(waited);
            if left <= 0 {
                return false;
            }
            let nap = (pause_ms * 1_000_000).min(left);
            let nap = libc::timespec {
                tv_sec: 0,
                // Below one second (the wait is 100 ms), so it fits every platform's type.
                tv_nsec: nap as libc::c_long,
            };
            // SAFETY: nanosleep(2) with a valid timespec; an interruption only shortens
            // the nap, and the loop re-checks the time.
            let _ = unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
            pause_ms = (pause_ms * 2).min(20);
        }
    }

    /// True when the file's last byte is not a newline (a writer died mid-row).
    fn ends_cut_off(&self) -> bool {
        let Some(meta) = self.stat() else {
            return false;
        };
        if meta.st_size <= 0 {
            return false;
        }
        let mut last = [0u8; 1];
        // SAFETY: lseek(2) and read(2) on a descriptor opened for reading, into a one-byte
        // buffer on this frame. With O_APPEND the offset does not steer the write.
        unsafe {
            if libc::lseek(self.0, meta.st_size - 1, libc::SEEK_SET) < 0 {
                return false;
            }
            libc::read(self.0, last.as_mut_ptr().cast(), 1) == 1 && last[0] != b'\n'
        }
    }

    /// One `write` of all of `bytes` (retried only when interrupted before writing).
    fn write_whole(&self, bytes: &[u8]) -> Result<(), Failure> {
        loop {
            // SAFETY: write(2) of a buffer that outlives the call, on an open descriptor.
            let n = unsafe { libc::write(self.0, bytes.as_ptr().cast(), bytes.len()) };
            if n < 0 {
                let e = errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(Failure::Write { errno: e });
            }
            return if usize::try_from(n).is_ok_and(|n| n == bytes.len()) {
                Ok(())
            } else {
                Err(Failure::ShortWrite)
            };
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: close(2) of the descriptor this value owns, once.
        let _ = unsafe { libc::close(self.0) };
    }
}

fn errno() -> i32 {
    // Reads errno only: `last_os_error` keeps the code inline, nothing is allocated.
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Nanoseconds of the monotonic clock, `None` if it cannot be read.
fn monotonic() -> Option<i64> {
    clock(libc::CLOCK_MONOTONIC).map(|(s, ns)| s.saturating_mul(1_000_000_000).saturating_add(ns))
}

/// Milliseconds since the Unix epoch by the system clock, `None` if it cannot be read.
fn realtime_millis() -> Option<i64> {
    clock(libc::CLOCK_REALTIME)
        .map(|(s, ns)| s.saturating_mul(1_000).saturating_add(ns / 1_000_000))
}

// `time_t` and `c_long` are 32 bits on some targets: the conversions are not useless there.
#[allow(clippy::useless_conversion)]
fn clock(id: libc::clockid_t) -> Option<(i64, i64)> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) into a valid timespec.
    (unsafe { libc::clock_gettime(id, &mut ts) } == 0)
        .then(|| (i64::from(ts.tv_sec), i64::from(ts.tv_nsec)))
}

/// `Rust's` io::Error text for the errors a give-up append meets, without `strerror`
/// (which may allocate or use locale data): the name, and the number as `os error N`.
fn push_errno<const N: usize>(line: &mut Line<N>, errno: i32) {
    let text: &[u8] = match errno {
        libc::EACCES => b"Permission denied",
        libc::EPERM => b"Operation not permitted",
        libc::ENOENT => b"No such file or directory",
        libc::ENOTDIR => b"Not a directory",
        libc::EISDIR => b"Is a directory",
        libc::ENOSPC => b"No space left on device",
        libc::EDQUOT => b"Disk quota exceeded",
        libc::EROFS => b"Read-only file system",
        libc::EIO => b"Input/output error",
        libc::EMFILE => b"Too many open files",
        libc::ENAMETOOLONG => b"File name too long",
        _ => b"error",
    };
    line.push(text);
    line.push(b" (os error ");
    line.push_u64(u64::try_from(errno).unwrap_or(0));
    line.push(b")");
}

/// Formats `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` into `out` (the text
/// `Timestamp`'s `Display` gives, by the same arithmetic, which allocates nothing); false,
/// `out` untouched, outside the years 0000–9999.
pub fn format_millis(ms: i64, out: &mut [u8; STAMP_LEN]) -> bool {
    match Timestamp::from_millis(ms).collector_format() {
        Some(text) => {
            *out = text;
            true
        }
        None => false,
    }
}

/// A fixed-capacity line on the stack: pushes past the capacity are cut.
struct Line<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Line<N> {
    fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(N - self.len);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.len..self.len + n), bytes.get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
    }

    fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            if let Some(d) = digits.get_mut(at) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || at == 0 {
                break;
            }
        }
        self.push(digits.get(at..).unwrap_or(&[]));
    }

    /// Makes the text end with a newline, replacing the last byte when it is full.
    fn end_line(&mut self) {
        if self.bytes().last() == Some(&b'\n') {
            return;
        }
        if self.len == N {
            self.len -= 1;
        }
        self.push(b"\n");
    }

    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::DEFAULT_LIMITS;

    fn config(dir: &Path, event: Option<&str>) -> EmitConfig {
        EmitConfig {
            url: None,
            dir: dir.to_owned(),
            provider: "kimi-cli".to_owned(),
            generation: 1,
            event: event.map(str::to_owned),
            token: None,
            limits: DEFAULT_LIMITS,
            tmux_pane: Some("%7".to_owned()),
        }
    }

    #[test]
    fn the_formatter_writes_what_timestamp_displays() {
        let mut cases = vec![
            0,
            -1,
            -1_750,
            951_782_400_000,     // 2000-02-29
            4_107_542_399_999,   // 2100-02-28T23:59:59.999
            253_402_300_799_999, // 9999-12-31T23:59:59.999
            -62_167_219_200_000, // 0000-01-01
            1_795_929_532_603,   // a 2026 time
        ];
        // Every day across a few centuries, at a moving time of day.
        let mut ms = -2_208_988_800_000_i64; // 1900-01-01
        while ms < 4_102_444_800_000 {
            cases.push(ms);
            ms += 86_400_000 + 3_600_007;
        }
        for ms in cases {
            let mut out = [0u8; STAMP_LEN];
            assert!(format_millis(ms, &mut out), "{ms}");
            assert_eq!(
                std::str::from_utf8(&out).unwrap(),
                Timestamp::from_millis(ms).to_string(),
                "{ms}"
            );
        }
        let mut out = [b'x'; STAMP_LEN];
        assert!(!format_millis(253_402_300_800_000, &mut out));
        assert!(!format_millis(-62_167_219_200_001, &mut out));
        assert_eq!(out, [b'x'; STAMP_LEN]);
    }

    #[test]
    fn the_handlers_row_is_the_give_up_row_at_the_give_up_time() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        let config = config(&dir, Some("PreToolUse"));
        let armed = Timestamp::from_millis(1_795_929_532_603);
        let prepared = Prepared::new(&config, armed, HARD_DEADLINE).unwrap();
        let before = store::now();
        assert_eq!(prepared.give_up(false), Outcome::Locked);
        let text = std::fs::read_to_string(dir.join("events.ndjson")).unwrap();
        let row: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        let at = Timestamp::parse_rfc3339(row["received_at"].as_str().unwrap()).unwrap();
        assert!(at >= before, "the give-up time, not the start time");
        assert_eq!(
            text.as_bytes(),
            &give_up_row(&config, at)[..],
            "byte for byte what give_up renders"
        );
        assert!(hooktrack_core::row::parse_line(text.trim_end().as_bytes()).is_ok());
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap();
        assert!(
            log.ends_with("event=PreToolUse delivered=recorded as a command_fallback row: the emitter gave up after 3000 ms (stdin not closed, or the store stuck); the payload was not delivered\n"),
            "{log}"
        );
        assert!(
            log.starts_with(row["received_at"].as_str().unwrap()),
            "{log}"
        );
    }

    #[test]
    fn a_stuck_lock_is_waited_for_briefly_and_a_cut_off_line_is_sealed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("events.ndjson"), b"{\"v\":1,\"cut").unwrap();
        let holder = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("emitter.seq"))
            .unwrap();
        holder.lock().unwrap();
        let prepared = Prepared::new(&config(&dir, None), store::now(), HARD_DEADLINE).unwrap();
        assert_eq!(prepared.give_up(false), Outcome::Unlocked);
        let text = std::fs::read_to_string(dir.join("events.ndjson")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], "{\"v\":1,\"cut");
        let row: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(row["event"], serde_json::Value::Null);
        assert_eq!(row["tmux_pane"], "%7");
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap();
        assert!(log.contains("without the store lock"), "{log}");
    }

    #[test]
    fn a_symlinked_events_file_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        std::fs::create_dir(&dir).unwrap();
        let target = tmp.path().join("precious");
        std::fs::write(&target, b"keep\n").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("events.ndjson")).unwrap();
        let prepared =
            Prepared::new(&config(&dir, Some("Stop")), store::now(), HARD_DEADLINE).unwrap();
        assert_eq!(
            prepared.give_up(false),
            Outcome::Lost(Failure::Symlink {
                what: Which::Events
            })
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"keep\n");
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap();
        assert!(
            log.contains("delivered=LOST: refusing to use ") && log.contains("symbolic link"),
            "{log}"
        );
    }

    #[test]
    fn a_settled_delivery_gets_no_second_row() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        std::fs::create_dir(&dir).unwrap();
        let prepared =
            Prepared::new(&config(&dir, Some("Stop")), store::now(), HARD_DEADLINE).unwrap();
        assert_eq!(prepared.give_up(true), Outcome::Settled);
        assert!(!dir.join("events.ndjson").exists());
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap();
        assert!(log.contains("after the delivery was settled"), "{log}");
    }

    #[test]
    fn a_long_log_line_is_cut_and_still_ends_with_a_newline() {
        let mut line = Line::<8>::new();
        line.push(b"0123456789");
        line.end_line();
        assert_eq!(line.bytes(), b"0123456\n");
        let mut line = Line::<32>::new();
        line.push_u64(0);
        line.push(b" ");
        line.push_u64(u64::MAX);
        assert_eq!(line.bytes(), b"0 18446744073709551615");
    }
}
