//! What a collector killed without its cleanup (`kill -9` of `hooktrack session`) leaves
//! in its store: `collector.json` saying `running` for a pid that is gone, and its socket
//! file. The collector holds `collector.lock` for its whole life and the kernel lets go
//! of it when the process dies, so a free lock under a `running` record is a dead
//! collector, whatever pid has been reused since. [`clean_dead_collector`] marks the
//! record stopped and removes the sockets, holding the lock meanwhile so a collector
//! starting on the store never finds its own record rewritten.

use std::fmt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use hooktrack_core::store::{CollectorState, StorePaths, parse_collector};

use super::{StoreError, lock_collector, now, write_json_atomic};

/// A dead collector whose leftovers were cleaned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadCollector {
    /// The store's directory.
    pub dir: PathBuf,
    /// The pid its record named.
    pub pid: Option<u32>,
    pub generation: Option<u64>,
    /// Socket files removed.
    pub sockets: usize,
}

impl fmt::Display for DeadCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the collector")?;
        if let Some(pid) = self.pid {
            write!(f, " (pid {pid}")?;
            if let Some(g) = self.generation {
                write!(f, ", generation {g}")?;
            }
            write!(f, ")")?;
        }
        write!(
            f,
            " of {} was gone without its cleanup: its collector.json now says stopped",
            self.dir.display()
        )?;
        match self.sockets {
            0 => Ok(()),
            1 => write!(f, ", its socket removed"),
            n => write!(f, ", its {n} sockets removed"),
        }
    }
}

/// Whether a collector serves `store` now: its lock is held. `false` for a store whose
/// lock cannot be taken for another reason (missing, another user's): nothing of ours
/// serves it.
pub fn collector_alive(store: &StorePaths) -> bool {
    store.collector_lock.exists()
        && matches!(
            lock_collector(store),
            Err(StoreError::CollectorRunning { .. })
        )
}

/// Cleans what a dead collector left in `store` (see the module's text); `None` when
/// the record is absent, not `running`, or its collector lives.
pub fn clean_dead_collector(store: &StorePaths) -> Result<Option<DeadCollector>, StoreError> {
    let Some(record) = read_record(&store.collector) else {
        return Ok(None);
    };
    if record.status != Some(CollectorState::Running) || !store.collector_lock.exists() {
        return Ok(None);
    }
    let _lock = match lock_collector(store) {
        Ok(lock) => lock,
        Err(StoreError::CollectorRunning { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut stopped = record.clone();
    stopped.status = Some(CollectorState::Stopped);
    stopped.stopped_at = Some(now().to_string());
    write_json_atomic(&store.collector, &stopped)?;
    Ok(Some(DeadCollector {
        dir: store.dir.clone(),
        pid: record.pid,
        generation: record.generation,
        sockets: remove_sockets(&store.dir),
    }))
}

/// `collector.json` is a few hundred bytes; a larger one is no collector's.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

fn read_record(path: &Path) -> Option<hooktrack_core::store::CollectorRecord> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).ok()?;
    parse_collector(&bytes).ok()
}

/// Removes every collector socket (`collector-<port>.sock`) in `dir`; the caller holds
/// the collector lock, so none of them is live. Returns how many went.
pub(crate) fn remove_sockets(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_prefix("collector-"))
            .and_then(|n| n.strip_suffix(".sock"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if ours
            && entry.file_type().is_ok_and(|t| t.is_socket())
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    fn running(store: &StorePaths) {
        std::fs::create_dir_all(&store.dir).expect("mkdir");
        std::fs::write(
            &store.collector,
            r#"{"pid":4242,"port":9,"generation":3,"status":"running","started_at":"x"}"#,
        )
        .expect("record");
        std::fs::write(&store.collector_lock, "").expect("lock file");
    }

    #[test]
    fn a_running_record_with_a_free_lock_is_marked_stopped_and_its_socket_removed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = StorePaths::in_dir(tmp.path().join("s"));
        running(&store);
        let socket = store.dir.join("collector-9.sock");
        drop(UnixListener::bind(&socket).expect("socket"));
        let mine = store.dir.join("collector-9.sock.txt");
        std::fs::write(&mine, "").expect("file");
        let dead = clean_dead_collector(&store).expect("clean").expect("dead");
        assert_eq!(
            (dead.pid, dead.generation, dead.sockets),
            (Some(4242), Some(3), 1)
        );
        assert!(!socket.exists() && mine.exists());
        let record = read_record(&store.collector).expect("record");
        assert_eq!(record.status, Some(CollectorState::Stopped));
        assert!(record.stopped_at.is_some());
        assert_eq!(record.port, Some(9), "the rest of the record is kept");
        assert_eq!(clean_dead_collector(&store).expect("again"), None);
    }

    #[test]
    fn a_collector_holding_its_lock_is_left_alone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = StorePaths::in_dir(tmp.path().join("s"));
        running(&store);
        let held = lock_collector(&store).expect("lock");
        assert!(collector_alive(&store));
        assert_eq!(clean_dead_collector(&store).expect("clean"), None);
        drop(held);
        assert!(!collector_alive(&store));
        assert!(clean_dead_collector(&store).expect("clean").is_some());
    }
}
