//! The emitter's watchdog without a thread: an interval timer (`setitimer(ITIMER_REAL)`)
//! whose `SIGALRM` handler records that the emitter gave up — a `command_fallback` row
//! with the configured event name and the cause, after a lock wait of at most
//! [`GIVE_UP_LOCK_WAIT`], and a log line — then ends the process with status 0. This is
//! the only give-up path: where the timer cannot be armed, a thread ([`stand_in`]) runs
//! the same [`Prepared::give_up`] at the deadline.
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
//!   and every path as a NUL-terminated string ([`StoreFiles`]);
//! - the handler itself allocates nothing, takes no lock, uses no `std` I/O and cannot
//!   panic. It reads the clock, formats the time with the core's
//!   [`Timestamp::collector_format`] (integer arithmetic on the stack), and writes with
//!   the store's one appender ([`crate::store::append`]: `rustix` system calls on
//!   `&CStr` paths, whose module documentation lists them and why each is safe here),
//!   then `_exit`s. Its text is pushed into fixed buffers on its stack (`Line`) with
//!   `core::fmt`, which allocates nothing either;
//! - it checks the store and appends the row as every writer does, because it is the
//!   same code: a real directory of this user, files opened with `O_NOFOLLOW`, regular,
//!   this user's, tightened to 0600, a cut-off last line sealed, one `write`.
//!
//! What it does not do, compared with the other writers: it creates only the store
//! directory itself (not missing parents: `emit` made them at its start, or could not), it
//! appends to `emit.log` without the log's rotation (at most one line past the rotation
//! size; the next emitter rotates), and it falls back to the per-user log only when that
//! log's directory already exists (it makes no directory there), then to standard error.
//!
//! `SIGTERM` brings the deadline forward to [`TERM_GRACE`]: an agent that ends a hook it no
//! longer waits for (Kimi Code 2.1.0 sends `SIGTERM`, then `SIGKILL` 100 ms later, to the
//! fire-and-forget hooks of a tool call whose subagent ended) gets the delivery if it is
//! done within the grace, else the give-up row (its cause names the signal), instead of a
//! hook that died without a trace.

use std::ffi::CString;
use std::fmt::{self, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::time::{ClockId, DynamicClockId, clock_gettime_dynamic};
use thiserror::Error;

use super::{EmitConfig, HARD_DEADLINE};
use crate::store::append::{self, Failure, StoreFiles};
use crate::store::{self, StorePaths};
use hooktrack_core::envelope::{Envelope, Via, clip_name};
use hooktrack_core::time::Timestamp;

/// How long the give-up row waits for the store lock before it is appended without it:
/// the lock may be what stalled the emitter.
pub const GIVE_UP_LOCK_WAIT: Duration = Duration::from_millis(100);

/// How long a hook sent `SIGTERM` goes on before it gives up: short enough that the
/// give-up row is on disk before a `SIGKILL` sent 100 ms after the `SIGTERM` (Kimi
/// Code's grace), long enough for a delivery already under way (about 1 ms) to finish.
pub const TERM_GRACE: Duration = Duration::from_millis(10);

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
#[non_exhaustive]
pub enum WatchdogError {
    #[error("the watchdog is already armed in this process")]
    AlreadyArmed,
    #[error("the store path holds a NUL byte")]
    NulInPath,
    #[error("the give-up row could not be prepared ({reason})")]
    Row { reason: &'static str },
    #[error("cannot install or unblock the SIGALRM or SIGTERM handler")]
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
    files: StoreFiles,
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
    /// The same row and cause when `SIGTERM` brought the deadline forward.
    row_term: Vec<u8>,
    log_cause_term: Vec<u8>,
    /// ` pid=N event=E: ...\n`: the line when the delivery was settled before the timer fired.
    log_settled: Vec<u8>,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();
/// Set once `emit` has finished with the delivery (on disk, posted, or logged as lost): a
/// timer firing after that (while the report is logged) must not add a give-up row for a
/// delivery that is already recorded.
static SETTLED: AtomicBool = AtomicBool::new(false);
/// Set by the `SIGTERM` handler: the give-up is the signal's, not the deadline's.
static TERMINATED: AtomicBool = AtomicBool::new(false);

/// Renders the give-up row and log line for `config`, installs the `SIGALRM` handler and
/// arms a one-shot timer of [`HARD_DEADLINE`]. Process-wide: call it once, from the hook
/// binary's main thread, before the emitter starts. When it fails, [`stand_in`] watches
/// instead.
pub fn arm(config: &EmitConfig) -> Result<(), WatchdogError> {
    let prepared = Prepared::new(config, store::now(), HARD_DEADLINE)?;
    // rustix finds the vDSO's `clock_gettime` on its first clock read, reading the aux
    // vector (into a stack buffer, on the heap if that is too small): done here, so the
    // handler's reads only load a pointer.
    let _ = realtime();
    PREPARED
        .set(prepared)
        .map_err(|_| WatchdogError::AlreadyArmed)?;
    let secs = libc::time_t::try_from(HARD_DEADLINE.as_secs()).unwrap_or(libc::time_t::MAX);
    let micros = libc::suseconds_t::from(HARD_DEADLINE.subsec_micros());
    // SAFETY: `action`, `term` and `alarm` are zero-initialised (a valid `sigaction` and
    // `sigset_t`: all-zero integers and an empty mask) and then filled by their own
    // functions; every pointer passed lives across its call. The handlers are
    // `extern "C" fn(c_int)` as `sa_sigaction` without `SA_SIGINFO` expects, and are sound
    // wherever they interrupt the main thread: `on_alarm` makes only the async-signal-safe
    // calls listed in the module documentation and reads `PREPARED`, set above and never
    // changed again; `on_term` touches two atomics and calls `set_timer`. rustix has no
    // safe `sigaction` or signal mask (only its experimental runtime's, unsafe too).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
            return Err(WatchdogError::Sigaction {
                source: std::io::Error::last_os_error(),
            });
        }
        let mut term: libc::sigaction = std::mem::zeroed();
        term.sa_sigaction = on_term as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut term.sa_mask);
        if libc::sigaction(libc::SIGTERM, &term, std::ptr::null_mut()) != 0 {
            return Err(WatchdogError::Sigaction {
                source: std::io::Error::last_os_error(),
            });
        }
        // A signal mask is inherited across exec: a parent that blocked SIGALRM would
        // otherwise leave the timer's signal pending for ever, and the hook unwatched.
        let mut alarm: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut alarm);
        libc::sigaddset(&mut alarm, libc::SIGALRM);
        libc::sigaddset(&mut alarm, libc::SIGTERM);
        // pthread_sigmask returns its error rather than setting errno.
        let rc = libc::pthread_sigmask(libc::SIG_UNBLOCK, &alarm, std::ptr::null_mut());
        if rc != 0 {
            return Err(WatchdogError::Sigaction {
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
    }
    if !set_timer(secs, micros) {
        return Err(WatchdogError::Timer {
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Arms the one-shot `ITIMER_REAL` to fire in `secs` s + `micros` µs (replacing any armed
/// value). One system call, so the `SIGTERM` handler may call it too.
fn set_timer(secs: libc::time_t, micros: libc::suseconds_t) -> bool {
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
    // SAFETY: setitimer(2) reads the `itimerval` behind a reference that lives across the
    // call, fully initialised; the old value is not asked for (null is allowed). One
    // system call and no shared state: async-signal-safe, as `on_term` needs. rustix has
    // no interval timer.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) == 0 }
}

/// The watchdog as a thread, for when [`arm`] failed: at [`HARD_DEADLINE`] it gives up as
/// the handler does (the same [`Prepared::give_up`]) and exits 0. Without a [`Prepared`]
/// (a store path with a NUL byte, which no writer can open) it can only log the cause.
pub fn stand_in(config: &EmitConfig) {
    let dir = config.dir.clone();
    let head = give_up_log_head(config);
    let _ = std::thread::Builder::new()
        .name("emit-watchdog".into())
        .spawn(move || {
            std::thread::sleep(HARD_DEADLINE);
            match PREPARED.get() {
                Some(prepared) => {
                    prepared.give_up(SETTLED.load(Ordering::Acquire));
                }
                None => super::log_text(
                    &dir,
                    &format!(
                        "{} {head} delivered=LOST: {}\n",
                        store::now(),
                        give_up_cause()
                    ),
                ),
            }
            std::process::exit(0);
        });
}

/// Tells the handler that the delivery is settled: from now on a firing timer only logs
/// and exits.
pub fn settled() {
    SETTLED.store(true, Ordering::Release);
}

extern "C" fn on_alarm(_signal: libc::c_int) {
    if let Some(prepared) = PREPARED.get() {
        prepared.give_up_as(
            SETTLED.load(Ordering::Acquire),
            TERMINATED.load(Ordering::Acquire),
        );
    }
    exit_now()
}

/// `SIGTERM`: the deadline comes forward to [`TERM_GRACE`] (unless the delivery is
/// settled: then the emitter is only logging, and ends by itself). Two atomic operations and
/// one system call: async-signal-safe.
extern "C" fn on_term(_signal: libc::c_int) {
    if SETTLED.load(Ordering::Acquire) {
        return;
    }
    TERMINATED.store(true, Ordering::Release);
    let micros = libc::suseconds_t::try_from(TERM_GRACE.as_micros()).unwrap_or(10_000);
    if !set_timer(0, micros) {
        // Without a timer the give-up cannot wait.
        exit_now()
    }
}

/// Ends the process at once, from a signal handler, with status 0: a hook must never fail
/// the agent.
fn exit_now() -> ! {
    // SAFETY: _exit(2) is async-signal-safe and takes no pointer; it ends the process
    // without unwinding, destructors or atexit handlers, none of which may run in a
    // signal handler (they could find the state the interrupted code left half-changed).
    // Nothing needs flushing: the handler's writes are system calls (`store::append`).
    unsafe { libc::_exit(0) }
}

/// How the give-up append ended, as the log line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Locked,
    Unlocked,
    /// The delivery was settled before the timer fired: no row.
    Settled,
    /// The row could not be appended: which path failed, and how.
    Lost(Which, Failure),
}

/// Which store path a lost row's [`Failure`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Dir,
    Counter,
    Events,
}

/// What a give-up row knows of its delivery: nothing confirmed it, yet a collector that
/// had the request may have appended it before its answer came (seen under load: Kimi
/// Code's `SIGTERM` 10 ms before the answer). That row names the same `emitter_parent`.
const UNCONFIRMED: &str = "the delivery was not confirmed (a row of it from the collector, with the same emitter_parent, may be in the store too)";

/// The `payload_error` of a give-up row, and the end of its log line.
fn give_up_cause() -> String {
    format!(
        "the emitter gave up after {} ms (stdin not closed, or the store stuck); {UNCONFIRMED}",
        HARD_DEADLINE.as_millis()
    )
}

/// The cause when `SIGTERM` brought the deadline forward.
fn term_cause() -> String {
    format!(
        "the agent ended the hook (SIGTERM) and the delivery was not done {} ms later; {UNCONFIRMED}",
        TERM_GRACE.as_millis()
    )
}

/// The give-up row, stamped `received_at`.
fn give_up_row(config: &EmitConfig, received_at: Timestamp, cause: &str) -> Vec<u8> {
    Envelope {
        provider: config.provider.store_name(),
        generation: config.generation,
        via: Via::CommandFallback,
        sequence: None,
        emitter_seq: None,
        received_at,
        event: config.event.as_deref().map(clip_name),
        payload: None,
        payload_error: Some(cause),
        tmux_pane: config
            .tmux_pane
            .as_deref()
            .filter(|p| hooktrack_core::store::is_tmux_pane_id(p)),
        agent_pid: config.agent_pid,
        emitter_parent: config.emitter_parent.as_ref(),
    }
    .render()
}

/// `pid=N event=E`: who gave up, for the log line.
fn give_up_log_head(config: &EmitConfig) -> String {
    format!(
        "pid={} event={}",
        std::process::id(),
        config.event.as_deref().map_or("-", clip_name)
    )
}

impl Prepared {
    /// Renders everything for a timer armed at `armed_at` that fires after `deadline`.
    pub fn new(
        config: &EmitConfig,
        armed_at: Timestamp,
        deadline: Duration,
    ) -> Result<Self, WatchdogError> {
        let files =
            StoreFiles::new(&StorePaths::in_dir(&config.dir)).ok_or(WatchdogError::NulInPath)?;
        let user_log = super::log::user_log_path().and_then(|p| append::c_path(&p));
        let deadline_ms = i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX);
        let due_at = Timestamp::from_millis(armed_at.as_millis().saturating_add(deadline_ms));
        let due = due_at.collector_format().ok_or(WatchdogError::Row {
            reason: "the clock is outside the years 0000-9999",
        })?;
        let row = give_up_row(config, due_at, &give_up_cause());
        let row_term = give_up_row(config, due_at, &term_cause());
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
                reason: "no received_at slot",
            })?;
        // Both rows differ only after the stamp (the cause comes later): the same slot.
        if row_term.get(row_stamp..row_stamp + STAMP_LEN) != Some(&due[..]) {
            return Err(WatchdogError::Row {
                reason: "no received_at slot",
            });
        }
        if row.len().max(row_term.len()) > ROW_CAP {
            return Err(WatchdogError::Row {
                reason: "the row is over the handler's buffer",
            });
        }
        let head = give_up_log_head(config);
        let cause = give_up_cause();
        Ok(Self {
            files,
            user_log,
            row,
            row_stamp,
            due,
            log_head: format!(" {head} delivered=").into_bytes(),
            log_cause: format!(": {cause}\n").into_bytes(),
            row_term,
            log_cause_term: format!(": {}\n", term_cause()).into_bytes(),
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
        self.give_up_as(settled, false)
    }

    /// [`Prepared::give_up`], with the cause of a `SIGTERM` when `terminated`.
    pub fn give_up_as(&self, settled: bool, terminated: bool) -> Outcome {
        // Outside 0000-9999 (or without a clock) the due time stays.
        let stamp = realtime()
            .and_then(Timestamp::collector_format)
            .unwrap_or(self.due);
        let outcome = if settled {
            Outcome::Settled
        } else {
            match self.try_append(&stamp, terminated) {
                Ok(outcome) => outcome,
                Err((what, failure)) => Outcome::Lost(what, failure),
            }
        };
        self.log(&stamp, outcome, terminated);
        outcome
    }

    fn try_append(
        &self,
        stamp: &[u8; STAMP_LEN],
        terminated: bool,
    ) -> Result<Outcome, (Which, Failure)> {
        let files = &self.files;
        append::check_dir(&files.dir).map_err(|f| (Which::Dir, f))?;
        // A fresh descriptor of the counter: its flock is the store lock. Held until the
        // descriptor is closed (when `counter` is dropped, or by `_exit`).
        let counter =
            append::open_private(&files.counter, OFlags::RDWR).map_err(|f| (Which::Counter, f))?;
        let locked = append::lock_within(&counter, GIVE_UP_LOCK_WAIT).is_ok();
        let events = append::open_private(&files.events, OFlags::RDWR | OFlags::APPEND)
            .map_err(|f| (Which::Events, f))?;
        let mut row = Line::<ROW_CAP>::new();
        let source = if terminated {
            &self.row_term
        } else {
            &self.row
        };
        let (before, after) = source.split_at(self.row_stamp.min(source.len()));
        row.push(before);
        row.push(stamp);
        row.push(after.get(STAMP_LEN..).unwrap_or(&[]));
        append::append(&events, row.bytes()).map_err(|f| (Which::Events, f))?;
        drop(events);
        drop(counter);
        Ok(if locked {
            Outcome::Locked
        } else {
            Outcome::Unlocked
        })
    }

    fn log(&self, stamp: &[u8; STAMP_LEN], outcome: Outcome, terminated: bool) {
        let mut line = Line::<LOG_CAP>::new();
        line.push(stamp);
        if outcome == Outcome::Settled {
            line.push(&self.log_settled);
        } else {
            line.push(&self.log_head);
            self.push_outcome(&mut line, outcome);
            line.push(if terminated {
                &self.log_cause_term
            } else {
                &self.log_cause
            });
        }
        line.end_line();
        let text = line.bytes();
        // A store directory that is refused takes no log either (async-signal-safe: one
        // open and fstat).
        if append::check_dir(&self.files.dir).is_ok() && append_log(&self.files.emit_log, text) {
            return;
        }
        if let Some(user_log) = &self.user_log
            && append_log(user_log, text)
        {
            return;
        }
        // Standard error, never standard output: the agent may read it as the answer.
        let _ = append::write_all(rustix::stdio::stderr(), text);
    }

    /// The outcome in the words the other writers' errors use (`StoreError`'s texts).
    fn push_outcome(&self, line: &mut Line<LOG_CAP>, outcome: Outcome) {
        let (what, failure) = match outcome {
            Outcome::Locked | Outcome::Settled => {
                return line.push(b"recorded as a command_fallback row");
            }
            Outcome::Unlocked => {
                return line.push(
                    b"recorded as a command_fallback row, without the store lock (its holder is stuck)",
                );
            }
            Outcome::Lost(what, failure) => (what, failure),
        };
        let path = match what {
            Which::Dir => self.files.dir.as_bytes(),
            Which::Counter => self.files.counter.as_bytes(),
            Which::Events => self.files.events.as_bytes(),
        };
        line.push(b"LOST: ");
        let errno = match failure {
            Failure::Open(errno) if what == Which::Dir => {
                line.push(b"cannot create the directory ");
                Some(errno)
            }
            Failure::Open(errno) => {
                line.push(b"cannot open ");
                Some(errno)
            }
            Failure::Untrusted(_) => {
                line.push(b"refusing to use ");
                None
            }
            Failure::Tighten(errno) | Failure::Write(errno) => {
                line.push(b"cannot write ");
                Some(errno)
            }
            Failure::ShortWrite => {
                line.push(b"cannot write ");
                None
            }
        };
        line.push(path);
        line.push(b": ");
        match (failure, errno) {
            (Failure::Untrusted(why), _) => {
                // `Distrust`'s own text, through `core::fmt` into the stack buffer.
                let _ = write!(line, "{why}");
            }
            (_, Some(errno)) => push_errno(line, errno),
            _ => line.push(b"the row was written in part (is the disk full?)"),
        }
    }
}

/// Appends a log line to `path` (created 0600, not followed if a symlink, checked like
/// every store file); false when it cannot.
fn append_log(path: &CString, text: &[u8]) -> bool {
    match append::open_private(path, OFlags::WRONLY | OFlags::APPEND) {
        Ok(fd) => append::write_all(&fd, text).is_ok(),
        Err(_) => false,
    }
}

/// Now by the system clock, `None` if it cannot be read.
fn realtime() -> Option<Timestamp> {
    let now = clock_gettime_dynamic(DynamicClockId::Known(ClockId::Realtime)).ok()?;
    let ms = now
        .tv_sec
        .saturating_mul(1_000)
        .saturating_add(now.tv_nsec / 1_000_000);
    Some(Timestamp::from_millis(ms))
}

/// Rust's `io::Error` text for the errors a give-up append meets, without `strerror`
/// (which may allocate or use locale data) or `io::Error`'s `Display` (which allocates):
/// the name, and the number as `os error N`.
fn push_errno<const N: usize>(line: &mut Line<N>, errno: Errno) {
    let text: &[u8] = match errno {
        Errno::ACCESS => b"Permission denied",
        Errno::PERM => b"Operation not permitted",
        Errno::NOENT => b"No such file or directory",
        Errno::NOTDIR => b"Not a directory",
        Errno::ISDIR => b"Is a directory",
        Errno::NOSPC => b"No space left on device",
        Errno::DQUOT => b"Disk quota exceeded",
        Errno::ROFS => b"Read-only file system",
        Errno::IO => b"Input/output error",
        Errno::MFILE => b"Too many open files",
        Errno::NAMETOOLONG => b"File name too long",
        _ => b"error",
    };
    line.push(text);
    let _ = write!(line, " (os error {})", errno.raw_os_error());
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

/// `write!` into the line: `core::fmt` writes numbers and `Display` texts piecewise into
/// the buffer, allocating nothing.
impl<const N: usize> fmt::Write for Line<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::emit::DEFAULT_LIMITS;

    fn config(dir: &Path, event: Option<&str>) -> EmitConfig {
        EmitConfig {
            url: None,
            dir: dir.to_owned(),
            provider: hooktrack_core::agent::Agent::ASSUMED,
            generation: 1,
            event: event.map(str::to_owned),
            token: None,
            limits: DEFAULT_LIMITS,
            tmux_pane: Some("%7".to_owned()),
            agent_pid: None,
            emitter_parent: None,
            rotate_at: None,
        }
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
            &give_up_row(&config, at, &give_up_cause())[..],
            "byte for byte what give_up renders"
        );
        assert!(hooktrack_core::row::parse_line(text.trim_end().as_bytes()).is_ok());
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap();
        assert!(
            log.ends_with("event=PreToolUse delivered=recorded as a command_fallback row: the emitter gave up after 3000 ms (stdin not closed, or the store stuck); the delivery was not confirmed (a row of it from the collector, with the same emitter_parent, may be in the store too)\n"),
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
            Outcome::Lost(
                Which::Events,
                Failure::Untrusted(crate::store::secure::Distrust::Symlink)
            )
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
        let _ = write!(line, "{} {}", 0, u64::MAX);
        assert_eq!(line.bytes(), b"0 18446744073709551615");
        let mut line = Line::<64>::new();
        push_errno(&mut line, Errno::NOENT);
        assert_eq!(
            line.bytes(),
            std::io::Error::from_raw_os_error(libc::ENOENT)
                .to_string()
                .as_bytes()
        );
    }
}
