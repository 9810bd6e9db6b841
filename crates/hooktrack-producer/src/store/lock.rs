//! The store's locks, every wait bounded.
//!
//! - The append lock (an exclusive `flock` on `emitter.seq`) serializes rows and the
//!   `emitter_seq` counter. A process stopped while holding it (SIGSTOP, a debugger, a
//!   frozen container) must not stall the collector and every emitter: a writer waits at
//!   most [`LOCK_WAIT`] and then reports [`StoreError::LockTimeout`].
//! - The collector lock (`collector.lock`, held for the collector's lifetime) makes one
//!   collector per store: a second one is refused instead of interleaving `sequence`s and
//!   marking the first stopped when it stops.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use rustix::fs::OFlags;

use super::append::{self, LockFailure};
use super::{StoreError, StorePaths, secure};

/// Longest wait for the append lock. An append holds it for microseconds; this much
/// waiting means the holder is stuck. Small enough that an emitter's seq, post and
/// fallback stay inside its hard deadline.
pub const LOCK_WAIT: Duration = Duration::from_millis(500);

/// Holds an exclusive `flock` until dropped.
pub struct LockGuard<'a> {
    file: &'a File,
}

impl<'a> LockGuard<'a> {
    /// Takes the lock, waiting at most [`LOCK_WAIT`].
    pub fn lock(file: &'a File, path: &Path) -> Result<Self, StoreError> {
        Self::lock_within(file, path, LOCK_WAIT)
    }

    /// Takes the lock, waiting at most `wait` (`Duration::ZERO`: one try); the
    /// appender's [`lock_within`](append::lock_within), as the watchdog takes it.
    pub fn lock_within(file: &'a File, path: &Path, wait: Duration) -> Result<Self, StoreError> {
        match append::lock_within(file, wait) {
            Ok(()) => Ok(Self { file }),
            Err(LockFailure::Timeout { waited }) => Err(StoreError::LockTimeout {
                path: path.to_owned(),
                waited_ms: waited.as_millis(),
            }),
            Err(LockFailure::Error(e)) => Err(StoreError::Lock {
                path: path.to_owned(),
                source: e.into(),
            }),
        }
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        append::unlock(self.file);
    }
}

/// Takes the store's collector lock for as long as the returned file is open.
pub fn lock_collector(store: &StorePaths) -> Result<File, StoreError> {
    let path = &store.collector_lock;
    let file = secure::open_private(path, OFlags::RDWR)?;
    match append::lock_within(&file, Duration::ZERO) {
        Ok(()) => Ok(file),
        Err(LockFailure::Timeout { .. }) => {
            Err(StoreError::CollectorRunning { path: path.clone() })
        }
        Err(LockFailure::Error(e)) => Err(StoreError::Lock {
            path: path.clone(),
            source: e.into(),
        }),
    }
}
