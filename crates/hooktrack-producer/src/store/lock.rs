//! The store's locks, every wait bounded.
//!
//! - The append lock (an exclusive `flock` on `emitter.seq`) serializes rows and the
//!   `emitter_seq` counter. A process stopped while holding it (SIGSTOP, a debugger, a
//!   frozen container) must not stall the collector and every emitter: a writer waits at
//!   most [`LOCK_WAIT`] and then reports [`StoreError::LockTimeout`].
//! - The collector lock (`collector.lock`, held for the collector's lifetime) makes one
//!   collector per store: a second one is refused instead of interleaving `sequence`s and
//!   marking the first stopped when it stops.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

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

    pub fn lock_within(file: &'a File, path: &Path, wait: Duration) -> Result<Self, StoreError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { file }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(source)) => {
                    return Err(StoreError::Lock {
                        path: path.to_owned(),
                        source,
                    });
                }
            }
            let waited = start.elapsed();
            if waited >= wait {
                return Err(StoreError::LockTimeout {
                    path: path.to_owned(),
                    waited_ms: waited.as_millis(),
                });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Takes the store's collector lock for as long as the returned file is open.
pub fn lock_collector(store: &StorePaths) -> Result<File, StoreError> {
    let path = &store.collector_lock;
    let file = secure::open_private(path, OpenOptions::new().read(true).write(true))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::CollectorRunning { path: path.clone() }),
        Err(TryLockError::Error(source)) => Err(StoreError::Lock {
            path: path.clone(),
            source,
        }),
    }
}
