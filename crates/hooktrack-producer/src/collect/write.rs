//! Writing an accepted delivery: its `emitter_seq` checked against the store's counter,
//! the next `sequence`, the row (as [`judge::row`] renders and checks it) appended under
//! the store lock, and only then the 200.

use std::sync::{PoisonError, TryLockError};
use std::time::Duration;

use hooktrack_core::delivery::Delivery;
use hooktrack_core::diagnostics::error_chain;

use super::judge::{self, Reply};
use super::{Appender, Shared};
use crate::store::{self, StoreError};

/// How long an append may wait for the store's locks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Up to [`store::LOCK_WAIT`], on a connection's own thread.
    Bounded,
    /// Not at all, on the accept thread: a held lock is [`WouldWait`].
    Never,
}

/// The append would have had to wait for a lock (only with [`Wait::Never`]); nothing was
/// written.
pub(super) struct WouldWait;

/// Appends `delivery` as the next row and says what to answer.
pub(super) fn deliver(
    shared: &Shared,
    mut delivery: Delivery<'_>,
    wait: Wait,
) -> Result<Reply, WouldWait> {
    // A genuine emitter takes its emitter_seq from the counter before posting. A higher
    // one was never handed out: kept, it would make the real delivery with that key look
    // like a duplicate later, so the row is written without it (unkeyed).
    if let Some(seq) = delivery.emitter_seq {
        match store::last_emitter_seq(&shared.store, &shared.counter) {
            Ok(last) if seq > last => delivery.emitter_seq = None,
            Ok(_) => {}
            Err(e) => return Ok(Reply::error(500, &error_chain(&e))),
        }
    }
    let mut appender = match wait {
        Wait::Bounded => shared
            .appender
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
        Wait::Never => match shared.appender.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(WouldWait),
        },
    };
    let sequence = appender.sequence + 1;
    let row = match judge::row(&delivery, sequence, store::now()) {
        Ok(row) => row,
        Err(reply) => return Ok(reply),
    };
    let lock_wait = match wait {
        Wait::Bounded => store::LOCK_WAIT,
        Wait::Never => Duration::ZERO,
    };
    let Appender { events, .. } = &mut *appender;
    match store::append_following_within(&shared.store, events, &shared.counter, &row, lock_wait) {
        Ok(()) => {
            appender.sequence = sequence;
            Ok(Reply::new(200, format!("{{\"sequence\":{sequence}}}")))
        }
        Err(StoreError::LockTimeout { .. }) if wait == Wait::Never => Err(WouldWait),
        Err(e @ StoreError::LockTimeout { .. }) => Ok(Reply::error(503, &error_chain(&e))),
        Err(e) => Ok(Reply::error(500, &error_chain(&e))),
    }
}
