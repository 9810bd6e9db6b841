//! [`Viewer`]: every host's sessions, read back from the bucket.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;

use super::names::decode_token;
use super::server::{FleetError, NatsServer, REQUEST_TIMEOUT};
use super::{BUCKET, HEARTBEAT_PREFIX};
use hooktrack_core::time::Timestamp;

/// Where to read from.
#[derive(Clone, Debug)]
pub struct ViewConfig {
    pub server: NatsServer,
}

/// What the viewer saw, in order.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Seen {
    /// A session's latest state: its bucket key (`<host>.<agent>.<session>`) and its
    /// record, a `watch --ndjson` line with `v` and `host` added.
    State {
        key: String,
        record: serde_json::Value,
    },
    /// A session's state left the bucket (its host dropped it, or it aged out).
    Gone { key: String },
    /// A host publishes: its heartbeat at `at`, the next due within `every`.
    Heartbeat {
        host: String,
        at: Timestamp,
        every: Duration,
    },
    /// The server is reached (`true`) or lost (`false`). After a loss, the view starts
    /// again from the bucket's current state: every state is sent again.
    Connection { up: bool },
    /// A message under the bucket that is no hooktrack record (skipped).
    Malformed { key: String },
    /// The bucket's state when the viewer (re)started reading it was sent in full: what
    /// follows is change, news to whoever follows the fleet.
    Loaded,
    /// Since [`Seen::Loaded`], `count` updates left the bucket before this viewer read
    /// them: a later update of the same session replaced them (the bucket keeps one
    /// value per key), or they aged out. Told by the gap in the bucket's sequence numbers
    /// before the next entry read, so every update put is either seen or counted here.
    Skipped { count: u64 },
}

/// Follows the bucket on its own thread; [`Viewer::recv`] hands out what it saw.
pub struct Viewer {
    seen: Receiver<Seen>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Viewer {
    /// Starts reading; a server not up yet is retried.
    pub fn start(config: ViewConfig) -> Result<Viewer, FleetError> {
        config.server.check()?;
        let (tx, seen) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| FleetError::Thread { source })?;
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("hooktrack-view".into())
            .spawn(move || runtime.block_on(run(config, tx, flag)))
            .map_err(|source| FleetError::Thread { source })?;
        Ok(Viewer {
            seen,
            stop,
            thread: Some(thread),
        })
    }

    /// The next thing seen, waiting up to `wait`; `Err(Disconnected)` once the thread
    /// stopped.
    pub fn recv(&self, wait: Duration) -> Result<Seen, RecvTimeoutError> {
        self.seen.recv_timeout(wait)
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            // The thread looks at the flag at least every TICK.
            let _ = thread.join();
        }
    }
}

const TICK: Duration = Duration::from_millis(100);

/// The prefix of a viewer's reply subjects (its watch's deliveries among them): apart
/// from every host's (`_INBOX.host.…`), so a viewer's user reads no host's replies.
pub(crate) const VIEW_INBOX: &str = "_INBOX.view";

async fn run(config: ViewConfig, tx: Sender<Seen>, stop: Arc<AtomicBool>) {
    let Ok(options) = config.server.options("hooktrack view", VIEW_INBOX).await else {
        return;
    };
    let lost = Arc::new(AtomicBool::new(false));
    let (events_tx, events_lost) = (tx.clone(), Arc::clone(&lost));
    let options = options.event_callback(move |event| {
        let (tx, lost) = (events_tx.clone(), Arc::clone(&events_lost));
        async move {
            match event {
                async_nats::Event::Connected => {
                    let _ = tx.send(Seen::Connection { up: true });
                }
                async_nats::Event::Disconnected => {
                    lost.store(true, Ordering::SeqCst);
                    let _ = tx.send(Seen::Connection { up: false });
                }
                _ => {}
            }
        }
    });
    let Ok(client) = options.connect(config.server.url.as_str()).await else {
        return;
    };
    let js = jetstream::new(client);
    while !stop.load(Ordering::SeqCst) {
        let Some((mut watch, values)) = watch_bucket(&js).await else {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        lost.store(false, Ordering::SeqCst);
        // An empty bucket has no last entry to say the current state was read.
        let mut loaded = values == 0;
        if loaded && tx.send(Seen::Loaded).is_err() {
            return;
        }
        // The bucket's sequence number of the last entry read: after the load, every
        // number is an entry read or one skipped.
        let mut last_revision: Option<u64> = None;
        loop {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            // A reconnect starts the watch again from the bucket's current state: the
            // server may have restarted, and the old watch may wait forever.
            if lost.load(Ordering::SeqCst) {
                break;
            }
            match tokio::time::timeout(TICK, watch.next()).await {
                Err(_) => continue,
                Ok(Some(Ok(entry))) => {
                    let skipped = match last_revision {
                        Some(last) if loaded => entry.revision.saturating_sub(last + 1),
                        _ => 0,
                    };
                    last_revision = Some(entry.revision);
                    if skipped > 0 && tx.send(Seen::Skipped { count: skipped }).is_err() {
                        return;
                    }
                    if tx.send(seen(&entry)).is_err() {
                        return;
                    }
                    if !loaded && entry.seen_current {
                        loaded = true;
                        if tx.send(Seen::Loaded).is_err() {
                            return;
                        }
                    }
                }
                Ok(Some(Err(_)) | None) => break,
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A watch of the bucket, and how many messages it held when it started.
async fn watch_bucket(js: &jetstream::Context) -> Option<(kv::Watch, u64)> {
    let store = tokio::time::timeout(REQUEST_TIMEOUT, js.get_key_value(BUCKET))
        .await
        .ok()?
        .ok()?;
    // The stream's state as the lookup just read it.
    let values = store.status().await.ok()?.values();
    // Every key's latest value first, then every change: the state of the fleet now.
    let watch = tokio::time::timeout(REQUEST_TIMEOUT, store.watch_with_history(">"))
        .await
        .ok()?
        .ok()?;
    Some((watch, values))
}

/// One bucket entry as what it says.
fn seen(entry: &kv::Entry) -> Seen {
    let key = entry.key.clone();
    if entry.operation != kv::Operation::Put {
        return Seen::Gone { key };
    }
    let malformed = || Seen::Malformed { key: key.clone() };
    let Ok(record) = serde_json::from_slice::<serde_json::Value>(&entry.value) else {
        return malformed();
    };
    if let Some(host) = key.strip_prefix(&format!("{HEARTBEAT_PREFIX}.")) {
        let at = record
            .get("at")
            .and_then(|a| a.as_str())
            .and_then(Timestamp::parse_rfc3339);
        let every = record.get("every_ms").and_then(serde_json::Value::as_u64);
        return match (decode_token(host), at, every) {
            (Some(host), Some(at), Some(every)) => Seen::Heartbeat {
                host,
                at,
                every: Duration::from_millis(every),
            },
            _ => malformed(),
        };
    }
    let parts: Vec<&str> = key.split('.').collect();
    let well_formed = parts.len() == 3
        && parts.iter().all(|p| decode_token(p).is_some())
        && record.get("v").and_then(serde_json::Value::as_u64) == Some(1)
        && record
            .get("host")
            .and_then(|h| h.as_str())
            .map(str::to_owned)
            == decode_token(parts[0]);
    if well_formed {
        Seen::State { key, record }
    } else {
        malformed()
    }
}
