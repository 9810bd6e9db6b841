//! The one appender: how every writer of a store — the collector, the emitter's fallback
//! and the emitter's watchdog in its `SIGALRM` handler — checks the directory, opens a
//! file, takes the store lock and adds a row.
//!
//! Everything here can run in a signal handler, because nothing here allocates, takes a
//! lock of the process or touches `std`'s I/O state:
//!
//! - paths come in as `&CStr`, made in advance ([`StoreFiles`]), so no path is copied to
//!   add its NUL;
//! - every call is a system call through `rustix` — on Linux its raw-syscall backend,
//!   which keeps no state of its own and reads no `errno` (elsewhere the libc functions of
//!   the same names): `mkdir`, `lstat`, `chmod`, `open`, `fstat`, `fchmod`, `pread`,
//!   `write`, `writev`, `close` and `geteuid` are on POSIX's async-signal-safe list;
//!   `flock` and `nanosleep` are plain system calls that touch no user-space state
//!   (`flock` because it is the store's lock: an `fcntl` lock would not exclude the
//!   collector's), and the monotonic clock is read through the vDSO (rustix looks it up
//!   on the first clock read, which the watchdog makes before it arms its timer; after
//!   that a read is a pointer load and a call);
//! - errors are `Copy` values ([`Failure`], [`LockFailure`]) that the normal path turns
//!   into [`StoreError`](super::StoreError)s naming the path afterwards.
//!
//! A row is added with one `write` (or one `writev`, when a cut-off last line is sealed
//! first) on an `O_APPEND` descriptor, so rows from the collector and from emitters never
//! interleave, and a row cut off by a crash becomes its own bad line while the new row
//! stays whole.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use rustix::fs::{FileType, FlockOperation, Mode, OFlags, RawMode, Stat};
use rustix::io::{Errno, IoSlice};
use rustix::thread::nanosleep;
use rustix::time::{ClockId, DynamicClockId, Timespec, clock_gettime_dynamic};

use super::StorePaths;
use super::secure::Distrust;

/// Why a store path could not be used or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `mkdir`, `lstat`, `open` or `fstat` failed.
    Open(Errno),
    /// The path is there but not to be trusted.
    Untrusted(Distrust),
    /// A loose mode could not be tightened.
    Tighten(Errno),
    /// `write` (or the read of the last byte before it) failed.
    Write(Errno),
    /// `write` wrote nothing (the file cannot grow).
    ShortWrite,
}

/// Why the store lock was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockFailure {
    /// Still held by another descriptor after the whole wait.
    Timeout {
        waited: Duration,
    },
    Error(Errno),
}

/// A store's files as NUL-terminated paths, made once (this allocates) so that the
/// appender never copies a path.
#[derive(Debug)]
pub struct StoreFiles {
    pub dir: CString,
    pub counter: CString,
    pub events: CString,
    pub emit_log: CString,
}

impl StoreFiles {
    /// `None` when a path holds a NUL byte (no system call could name it).
    pub fn new(store: &StorePaths) -> Option<Self> {
        Some(Self {
            dir: c_path(&store.dir)?,
            counter: c_path(&store.counter)?,
            events: c_path(&store.events)?,
            emit_log: c_path(&store.emit_log)?,
        })
    }
}

/// `path` with its NUL, `None` when it holds one already.
pub fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// The store directory: created 0700 if missing (its parent must exist), else it must be
/// a real directory of this user; a loose mode is tightened to 0700.
pub fn check_dir(dir: &CStr) -> Result<(), Failure> {
    // EEXIST above all: whatever is there is judged by the lstat below.
    let _ = rustix::fs::mkdir(dir, Mode::RWXU);
    let stat = rustix::fs::lstat(dir).map_err(Failure::Open)?;
    match file_type(&stat) {
        FileType::Directory => {}
        FileType::Symlink => return Err(Failure::Untrusted(Distrust::Symlink)),
        _ => return Err(Failure::Untrusted(Distrust::NotADirectory)),
    }
    check_owner(&stat)?;
    if loose(&stat) {
        rustix::fs::chmod(dir, Mode::RWXU).map_err(Failure::Tighten)?;
    }
    Ok(())
}

/// Opens a store file (creating it 0600) without following a symbolic link; refuses
/// anything but a regular file of this user and tightens a loose mode to 0600. `flags`
/// says how (`RDWR`, `WRONLY | APPEND`, ...).
pub fn open_private(path: &CStr, flags: OFlags) -> Result<OwnedFd, Failure> {
    let flags = flags | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::RUSR | Mode::WUSR).map_err(|e| {
        if e == Errno::LOOP {
            Failure::Untrusted(Distrust::Symlink)
        } else {
            Failure::Open(e)
        }
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(Failure::Open)?;
    if file_type(&stat) != FileType::RegularFile {
        return Err(Failure::Untrusted(Distrust::NotARegularFile));
    }
    check_owner(&stat)?;
    if loose(&stat) {
        rustix::fs::fchmod(&fd, Mode::RUSR | Mode::WUSR).map_err(Failure::Tighten)?;
    }
    Ok(fd)
}

/// Takes the exclusive `flock` on `fd`, trying again with growing naps (1 ms up to
/// 20 ms) until `wait` has passed (`Duration::ZERO`: one try).
pub fn lock_within(fd: impl AsFd, wait: Duration) -> Result<(), LockFailure> {
    let fd = fd.as_fd();
    let start = monotonic().map_err(LockFailure::Error)?;
    let mut pause = Duration::from_millis(1);
    loop {
        match rustix::fs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(e) if e == Errno::WOULDBLOCK || e == Errno::INTR => {}
            Err(e) => return Err(LockFailure::Error(e)),
        }
        let waited = monotonic()
            .map_err(LockFailure::Error)?
            .saturating_sub(start);
        if waited >= wait {
            return Err(LockFailure::Timeout { waited });
        }
        let nap = pause.min(wait - waited);
        // Below a second (the longest wait is the store's 500 ms): the nanoseconds fit.
        let nap = Timespec {
            tv_sec: 0,
            tv_nsec: nap.subsec_nanos().into(),
        };
        // An interruption only shortens the nap; the loop looks at the clock again.
        let _ = nanosleep(&nap);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Gives the `flock` back (closing the descriptor does too).
pub fn unlock(fd: impl AsFd) {
    let _ = rustix::fs::flock(fd, FlockOperation::Unlock);
}

/// Appends `row` (which ends with a newline) with one write, first ending a cut-off last
/// line if there is one. The caller holds the store lock, or has given up on it: one
/// write of a whole row on an `O_APPEND` descriptor is not interleaved with another on a
/// local file system; only the sealing can race.
pub fn append(events: impl AsFd, row: &[u8]) -> Result<(), Failure> {
    let fd = events.as_fd();
    if !ends_cut_off(fd)? {
        return write_all(fd, row);
    }
    let sealed = [IoSlice::new(b"\n"), IoSlice::new(row)];
    let n = retry(|| rustix::io::writev(fd, &sealed))?;
    match n {
        0 => Err(Failure::ShortWrite),
        // What a short write left (disk full, a signal): written on, as `write_all` does.
        n => write_all(fd, row.get(n - 1..).unwrap_or(&[])),
    }
}

/// Writes all of `bytes`, going on after a short write.
pub fn write_all(fd: impl AsFd, mut bytes: &[u8]) -> Result<(), Failure> {
    let fd = fd.as_fd();
    while !bytes.is_empty() {
        match retry(|| rustix::io::write(fd, bytes))? {
            0 => return Err(Failure::ShortWrite),
            n => bytes = bytes.get(n..).unwrap_or(&[]),
        }
    }
    Ok(())
}

/// True when the file's last byte is not a newline (a writer died mid-row).
fn ends_cut_off(fd: BorrowedFd<'_>) -> Result<bool, Failure> {
    let size = rustix::fs::fstat(fd).map_err(Failure::Write)?.st_size;
    let Some(last_at) = u64::try_from(size).ok().and_then(|s| s.checked_sub(1)) else {
        return Ok(false);
    };
    let mut last = [0u8; 1];
    let read = retry(|| rustix::io::pread(fd, &mut last, last_at))?;
    Ok(read == 1 && last != [b'\n'])
}

/// A write-side call, made again when a signal interrupted it before it did anything.
fn retry<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> Result<T, Failure> {
    loop {
        match call() {
            Err(Errno::INTR) => {}
            other => return other.map_err(Failure::Write),
        }
    }
}

/// The monotonic clock as a duration since its start. `clock_gettime_dynamic` rather than
/// `clock_gettime`: it returns the (never expected) failure instead of panicking.
fn monotonic() -> Result<Duration, Errno> {
    let now = clock_gettime_dynamic(DynamicClockId::Known(ClockId::Monotonic))?;
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(now.tv_nsec).unwrap_or(0);
    Ok(Duration::new(secs, nanos))
}

fn check_owner(stat: &Stat) -> Result<(), Failure> {
    let me = rustix::process::geteuid().as_raw();
    if stat.st_uid != me {
        return Err(Failure::Untrusted(Distrust::OwnedBy {
            uid: stat.st_uid,
            me,
        }));
    }
    Ok(())
}

// `st_mode`'s type differs between targets: the cast is not useless on all of them.
#[allow(clippy::unnecessary_cast)]
fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode as RawMode)
}

/// Group or others may do anything with it.
#[allow(clippy::unnecessary_cast)]
fn loose(stat: &Stat) -> bool {
    stat.st_mode as RawMode & 0o077 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(path: &Path) -> CString {
        c_path(path).unwrap()
    }

    #[test]
    fn a_cut_off_line_is_sealed_and_the_row_stays_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.ndjson");
        std::fs::write(&path, b"{\"cut").unwrap();
        let fd = open_private(&c(&path), OFlags::RDWR | OFlags::APPEND).unwrap();
        append(&fd, b"{\"a\":1}\n").unwrap();
        append(&fd, b"{\"b\":2}\n").unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"cut\n{\"a\":1}\n{\"b\":2}\n"
        );
    }

    #[test]
    fn a_file_is_made_owner_only_and_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let loose_file = tmp.path().join("loose");
        std::fs::write(&loose_file, b"").unwrap();
        std::fs::set_permissions(&loose_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(open_private(&c(&loose_file), OFlags::RDWR).unwrap());
        let mode = std::fs::metadata(&loose_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&loose_file, &link).unwrap();
        assert_eq!(
            open_private(&c(&link), OFlags::RDWR).unwrap_err(),
            Failure::Untrusted(Distrust::Symlink)
        );
        assert_eq!(
            check_dir(&c(&link)).unwrap_err(),
            Failure::Untrusted(Distrust::Symlink)
        );
        assert_eq!(
            check_dir(&c(&loose_file)).unwrap_err(),
            Failure::Untrusted(Distrust::NotADirectory)
        );
        let dir = tmp.path().join("store");
        check_dir(&c(&dir)).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_held_lock_is_waited_for_and_then_given_up() {
        let tmp = tempfile::tempdir().unwrap();
        let path = c(&tmp.path().join("emitter.seq"));
        let holder = open_private(&path, OFlags::RDWR).unwrap();
        let other = open_private(&path, OFlags::RDWR).unwrap();
        lock_within(&holder, Duration::ZERO).unwrap();
        match lock_within(&other, Duration::from_millis(30)) {
            Err(LockFailure::Timeout { waited }) => assert!(waited >= Duration::from_millis(30)),
            other => panic!("{other:?}"),
        }
        unlock(&holder);
        lock_within(&other, Duration::ZERO).unwrap();
    }
}
