//! [`Publisher`]: each session's update onto JetStream, never in the watch's way.

use std::collections::{HashMap, VecDeque};
use std::future::IntoFuture;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use tokio::sync::Notify;

/// An acknowledgement on its way.
type PublishAck = <jetstream::context::PublishAckFuture as std::future::IntoFuture>::IntoFuture;

use super::names::{encode_token, session_key};
use super::server::{FleetError, NatsServer, REQUEST_TIMEOUT};
use super::{BUCKET, HEARTBEAT_PREFIX};
use crate::safe_text::{Notation, SafeWriter};

/// What to publish where.
#[derive(Clone, Debug)]
pub struct PublishConfig {
    pub server: NatsServer,
    /// This host's name in subjects, keys and records.
    pub host: String,
    /// How long a session's state stays in the bucket without being put again: a host
    /// that stops publishing ages out after it. Every live session is put again at half
    /// of it.
    pub ttl: Duration,
    /// How many updates wait while the server is away; past it the oldest are dropped
    /// (counted, [`PublishStats::dropped`]), the latest state of each session is kept.
    pub backlog: usize,
}

impl PublishConfig {
    pub fn new(server: NatsServer, host: String) -> Self {
        Self {
            server,
            host,
            ttl: Duration::from_secs(300),
            backlog: 10_000,
        }
    }
}

/// What a publisher did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublishStats {
    /// Updates the server acknowledged.
    pub published: u64,
    /// Updates dropped from a full backlog.
    pub dropped: u64,
    /// Updates waiting.
    pub waiting: usize,
    /// Whether the last request reached the server.
    pub connected: bool,
    /// Writes the server refused: this host's NATS user may not publish there (a
    /// permissions violation), or may not connect. Never retried into success: the
    /// server's auth decides.
    pub refused: u64,
    /// Writes that failed in a row (the server away, or refusing): the next try waits
    /// [`retry_delay`] of it, unless the client reconnects first.
    pub failures: u32,
}

/// One update on its way.
#[derive(Clone, Debug)]
struct Item {
    key: String,
    body: Vec<u8>,
    /// Its place in the order of updates queued: what an acknowledgement names.
    seq: u64,
}

#[derive(Default)]
struct Backlog {
    queue: VecDeque<Item>,
    /// Each session's latest update, put again on reconnect and before its TTL.
    latest: HashMap<String, Item>,
    stats: PublishStats,
    stop: bool,
    /// The next [`Item::seq`].
    next_seq: u64,
}

impl Backlog {
    fn push(&mut self, key: String, body: Vec<u8>) -> Item {
        let item = Item {
            key,
            body,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.queue.push_back(item.clone());
        item
    }
}

struct Shared {
    backlog: Mutex<Backlog>,
    wake: Notify,
    /// Set by the client's event callback on every (re)connect: put every latest again.
    reconnected: AtomicBool,
    /// How many times the client (re)connected: a wait after a failure ends when it moves.
    connects: AtomicU64,
    /// [`PublishConfig::backlog`].
    limit: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Backlog> {
        // A panic while holding the lock leaves plain data behind: go on with it.
        self.backlog.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Publishes sessions' updates (see the module's doc); dropping it stops at once,
/// [`Publisher::finish`] first sends what waits, for a bounded time.
pub struct Publisher {
    host: String,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    /// Starts the publishing thread; it connects in the background (a server that is not
    /// up yet is retried, its updates wait).
    pub fn start(config: PublishConfig) -> Result<Publisher, FleetError> {
        config.server.check()?;
        let shared = Arc::new(Shared {
            backlog: Mutex::new(Backlog::default()),
            wake: Notify::new(),
            reconnected: AtomicBool::new(false),
            connects: AtomicU64::new(0),
            limit: config.backlog.max(1),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| FleetError::Thread { source })?;
        let host = config.host.clone();
        let inner = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hooktrack-publish".into())
            .spawn(move || runtime.block_on(run(config, inner)))
            .map_err(|source| FleetError::Thread { source })?;
        Ok(Publisher {
            host,
            shared,
            thread: Some(thread),
        })
    }

    /// Queues one session's `watch --ndjson` line (a JSON object): it goes out with
    /// `"v":1` and this host's name added, made safe, as soon as the server takes it.
    pub fn publish(&self, agent: &str, session: &str, line: &[u8]) {
        let Some(rest) = line.strip_prefix(b"{") else {
            return;
        };
        let mut body = SafeWriter::new(Vec::with_capacity(line.len() + 64), Notation::Json);
        let host = serde_json::to_string(&self.host).unwrap_or_else(|_| "\"\"".into());
        let written = std::io::Write::write_all(&mut body, b"{\"v\":1,\"host\":")
            .and_then(|()| std::io::Write::write_all(&mut body, host.as_bytes()))
            .and_then(|()| {
                std::io::Write::write_all(&mut body, if rest == b"}" { b"" } else { b"," })
            })
            .and_then(|()| std::io::Write::write_all(&mut body, rest));
        if written.is_err() {
            return;
        }
        let mut backlog = self.shared.lock();
        let item = backlog.push(session_key(&self.host, agent, session), body.into_inner());
        backlog.latest.insert(item.key.clone(), item);
        let limit = self.shared.limit;
        while backlog.queue.len() > limit {
            backlog.queue.pop_front();
            backlog.stats.dropped += 1;
        }
        backlog.stats.waiting = backlog.queue.len();
        drop(backlog);
        self.shared.wake.notify_one();
    }

    /// A session is gone for good (dropped by the watch): its state leaves the bucket.
    pub fn forget(&self, agent: &str, session: &str) {
        let key = session_key(&self.host, agent, session);
        let mut backlog = self.shared.lock();
        backlog.latest.remove(&key);
        backlog.push(key, Vec::new());
        backlog.stats.waiting = backlog.queue.len();
        drop(backlog);
        self.shared.wake.notify_one();
    }

    pub fn stats(&self) -> PublishStats {
        self.shared.lock().stats
    }

    /// Sends what waits, for at most `within`, then stops.
    pub fn finish(mut self, within: Duration) -> PublishStats {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        let deadline = std::time::Instant::now() + within;
        if let Some(thread) = self.thread.take() {
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        self.stats()
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let mut backlog = self.shared.lock();
        backlog.stop = true;
        backlog.queue.clear();
        drop(backlog);
        self.shared.wake.notify_one();
    }
}

/// The publishing thread: connect, make the bucket, send what waits.
async fn run(config: PublishConfig, shared: Arc<Shared>) {
    let name = format!("hooktrack publish {}", config.host);
    let options = match config
        .server
        .options(&name, &host_inbox(&config.host))
        .await
    {
        Ok(o) => o,
        Err(_) => return,
    };
    let events = Arc::clone(&shared);
    let options = options.event_callback(move |event| {
        let events = Arc::clone(&events);
        async move {
            match event {
                async_nats::Event::Connected => {
                    events.reconnected.store(true, Ordering::SeqCst);
                    events.connects.fetch_add(1, Ordering::SeqCst);
                    events.lock().stats.connected = true;
                    events.wake.notify_one();
                }
                async_nats::Event::Disconnected => events.lock().stats.connected = false,
                async_nats::Event::ServerError(e) if is_refusal(&e) => {
                    events.lock().stats.refused += 1;
                }
                _ => {}
            }
        }
    });
    let Ok(client) = options.connect(config.server.url.as_str()).await else {
        return;
    };
    let js = jetstream::new(client);
    let heartbeat_every =
        (config.ttl / 3).clamp(Duration::from_millis(200), Duration::from_secs(5));
    let refresh_every = config.ttl / 2;
    let mut bucket: Option<kv::Store> = None;
    let mut last_refresh = tokio::time::Instant::now();
    let mut acks: VecDeque<(u64, PublishAck)> = VecDeque::new();
    let mut next_send = 0u64;
    let mut next_heartbeat = tokio::time::Instant::now();
    loop {
        if bucket.is_none() {
            bucket = setup(&js, &config).await;
            if bucket.is_none() {
                if shared.lock().stop {
                    return;
                }
                back_off(&shared).await;
                continue;
            }
        }
        let Some(store) = bucket.as_ref() else {
            continue;
        };
        if shared.reconnected.swap(false, Ordering::SeqCst)
            || last_refresh.elapsed() >= refresh_every
        {
            last_refresh = tokio::time::Instant::now();
            requeue_latest(&shared);
        }
        if tokio::time::Instant::now() >= next_heartbeat {
            let beat = serde_json::json!({"v": 1, "host": config.host, "at": hooktrack_live::hub::wall_clock(), "every_ms": heartbeat_every.as_millis() as u64});
            let key = format!("{HEARTBEAT_PREFIX}.{}", encode_token(&config.host));
            if put(store, &key, beat.to_string().into_bytes()).await {
                next_heartbeat = tokio::time::Instant::now() + heartbeat_every;
                shared.lock().stats.failures = 0;
            } else {
                bucket = None;
                if shared.lock().stop {
                    return;
                }
                back_off(&shared).await;
                continue;
            }
        }
        // The next update not sent yet: a put goes out without waiting for the ones
        // before it to be acknowledged (up to IN_FLIGHT), a delete once they are.
        let next = {
            let backlog = shared.lock();
            match backlog.queue.iter().find(|i| i.seq >= next_send) {
                Some(item) if acks.len() < IN_FLIGHT => Some(item.clone()),
                Some(_) => None,
                None if backlog.queue.is_empty() && backlog.stop => return,
                None => None,
            }
        };
        let sent = match next {
            Some(item) if !item.body.is_empty() => {
                next_send = item.seq + 1;
                let subject = format!("$KV.{BUCKET}.{}", item.key);
                match tokio::time::timeout(REQUEST_TIMEOUT, js.publish(subject, item.body.into()))
                    .await
                {
                    Ok(Ok(ack)) => {
                        acks.push_back((item.seq, ack.into_future()));
                        true
                    }
                    _ => false,
                }
            }
            Some(item) if acks.is_empty() => {
                next_send = item.seq + 1;
                let deleted = send(store, &item).await;
                if deleted {
                    acknowledged(&shared, item.seq);
                }
                deleted
            }
            // A delete waits for the puts before it; nothing to send: wait for an ack.
            _ => match acks.pop_front() {
                Some((seq, ack)) => {
                    let ok = matches!(tokio::time::timeout(REQUEST_TIMEOUT, ack).await, Ok(Ok(_)));
                    if ok {
                        acknowledged(&shared, seq);
                    }
                    ok
                }
                None => {
                    wait(
                        &shared,
                        next_heartbeat.saturating_duration_since(tokio::time::Instant::now()),
                    )
                    .await;
                    true
                }
            },
        };
        if !sent {
            // Everything not acknowledged goes again once the server answers.
            acks.clear();
            next_send = shared.lock().queue.front().map_or(next_send, |i| i.seq);
            shared.lock().stats.connected = false;
            if shared.lock().stop {
                return;
            }
            bucket = None;
            back_off(&shared).await;
        }
    }
}

/// The prefix of this host's reply subjects (`_INBOX.host.<host>`): its NATS user may
/// subscribe there alone (docs/fleet.md's permissions), so no host reads another's
/// replies.
pub(crate) fn host_inbox(host: &str) -> String {
    format!("_INBOX.host.{}", encode_token(host))
}

/// The longest wait between two tries of a publisher whose writes fail.
pub const RETRY_CAP: Duration = Duration::from_secs(60);

/// How long a publisher waits after `failures` failed writes in a row before it tries
/// again: a quarter second, doubled at each failure, up to [`RETRY_CAP`]. A reconnect
/// ends the wait at once (a restarted server is written to within a second); a server
/// that refuses this host's writes (its permissions) is asked less and less often.
pub fn retry_delay(failures: u32) -> Duration {
    let base = Duration::from_millis(250);
    base.checked_mul(1 << failures.saturating_sub(1).min(16))
        .map_or(RETRY_CAP, |d| d.min(RETRY_CAP))
}

/// Waits [`retry_delay`] of the failures so far; a reconnect or a stop ends it, a new
/// update does not.
async fn back_off(shared: &Shared) {
    let failures = {
        let mut backlog = shared.lock();
        backlog.stats.failures = backlog.stats.failures.saturating_add(1);
        backlog.stats.failures
    };
    let until = tokio::time::Instant::now() + retry_delay(failures);
    let connects = shared.connects.load(Ordering::SeqCst);
    while tokio::time::Instant::now() < until {
        if shared.connects.load(Ordering::SeqCst) != connects || shared.lock().stop {
            return;
        }
        wait(
            shared,
            until.saturating_duration_since(tokio::time::Instant::now()),
        )
        .await;
    }
}

/// Puts sent and not acknowledged yet, at most: a host's updates go out at the server's
/// pace, not one round trip each.
const IN_FLIGHT: usize = 256;

/// The update `seq` was acknowledged: it leaves the backlog (unless a full backlog
/// dropped it already), with what was dropped before it.
fn acknowledged(shared: &Shared, seq: u64) {
    let mut backlog = shared.lock();
    while backlog.queue.front().is_some_and(|i| i.seq <= seq) {
        backlog.queue.pop_front();
    }
    backlog.stats.published += 1;
    backlog.stats.waiting = backlog.queue.len();
    backlog.stats.connected = true;
    backlog.stats.failures = 0;
}

/// A server error that says this client may not do what it did.
fn is_refusal(error: &async_nats::ServerError) -> bool {
    match error {
        async_nats::ServerError::AuthorizationViolation => true,
        async_nats::ServerError::Other(text) => {
            text.to_ascii_lowercase().contains("permissions violation")
        }
        _ => false,
    }
}

/// The bucket there, else made (as the server's auth allows): looked up first, so that a
/// host whose user may not make it (docs/fleet.md's permissions) is refused nothing.
async fn setup(js: &jetstream::Context, config: &PublishConfig) -> Option<kv::Store> {
    if let Ok(Ok(store)) = tokio::time::timeout(REQUEST_TIMEOUT, js.get_key_value(BUCKET)).await {
        return Some(store);
    }
    let made = tokio::time::timeout(
        REQUEST_TIMEOUT,
        js.create_key_value(kv::Config {
            bucket: BUCKET.to_owned(),
            history: 1,
            max_age: config.ttl,
            ..Default::default()
        }),
    )
    .await
    .ok()?;
    match made {
        Ok(store) => Some(store),
        Err(_) => tokio::time::timeout(REQUEST_TIMEOUT, js.get_key_value(BUCKET))
            .await
            .ok()?
            .ok(),
    }
}

/// One update: one acknowledged put of the session's key (the bucket's stream is the
/// only write); an empty body deletes the key.
async fn send(store: &kv::Store, item: &Item) -> bool {
    if item.body.is_empty() {
        return matches!(
            tokio::time::timeout(REQUEST_TIMEOUT, store.delete(&item.key)).await,
            Ok(Ok(()))
        );
    }
    put(store, &item.key, item.body.clone()).await
}

async fn put(store: &kv::Store, key: &str, body: Vec<u8>) -> bool {
    matches!(
        tokio::time::timeout(REQUEST_TIMEOUT, store.put(key, body.into())).await,
        Ok(Ok(_))
    )
}

/// Every session's latest state goes out again (after a reconnect: the server may have
/// lost or aged out what it had), behind what already waits.
fn requeue_latest(shared: &Shared) {
    let mut backlog = shared.lock();
    let latest: Vec<Item> = backlog.latest.values().cloned().collect();
    for item in latest {
        if !backlog.queue.iter().any(|q| q.key == item.key) {
            backlog.push(item.key, item.body);
        }
    }
    backlog.stats.waiting = backlog.queue.len();
}

/// Sleeps until woken or `up_to` passed.
async fn wait(shared: &Shared, up_to: Duration) {
    let _ = tokio::time::timeout(up_to, shared.wake.notified()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that is not there: updates wait, at most `backlog` of them, the oldest
    /// dropped and counted; the watch that feeds the publisher never waits.
    #[test]
    fn a_publisher_without_its_server_keeps_a_bounded_backlog() {
        let server = NatsServer {
            url: "nats://127.0.0.1:1".into(),
            ..NatsServer::default()
        };
        let mut config = PublishConfig::new(server, "h".into());
        config.backlog = 5;
        let publisher = Publisher::start(config).expect("start");
        for i in 0..20 {
            publisher.publish("claude-code", "s", format!(r#"{{"n":{i}}}"#).as_bytes());
        }
        let stats = publisher.stats();
        assert_eq!((stats.waiting, stats.dropped, stats.published), (5, 15, 0));
        assert!(!stats.connected);
        let last = publisher.shared.lock().queue.back().map(|i| i.body.clone());
        assert_eq!(last.as_deref(), Some(&br#"{"v":1,"host":"h","n":19}"#[..]));
        publisher.finish(Duration::ZERO);
    }

    /// Puts are acknowledged in the order sent: an acknowledgement takes its update out
    /// of the backlog with any before it (dropped already, or sent with it), and counts
    /// one; the updates after it wait on.
    #[test]
    fn an_acknowledgement_takes_its_update_and_those_before_it() {
        let server = NatsServer {
            url: "nats://127.0.0.1:1".into(),
            ..NatsServer::default()
        };
        let publisher = Publisher::start(PublishConfig::new(server, "h".into())).expect("start");
        for i in 0..4 {
            publisher.publish("a", &format!("s{i}"), br#"{}"#);
        }
        acknowledged(&publisher.shared, 1);
        let left: Vec<u64> = publisher
            .shared
            .lock()
            .queue
            .iter()
            .map(|i| i.seq)
            .collect();
        assert_eq!(left, [2, 3]);
        let stats = publisher.stats();
        assert_eq!((stats.published, stats.waiting), (1, 2));
        // An acknowledgement of an update a full backlog dropped takes nothing else.
        acknowledged(&publisher.shared, 0);
        assert_eq!(publisher.stats().waiting, 2);
        publisher.finish(Duration::ZERO);
    }

    /// A quarter second after the first failure, doubled at each, up to the cap.
    #[test]
    fn a_failing_publisher_waits_twice_as_long_each_time_up_to_a_cap() {
        let waits: Vec<u128> = (1..=10).map(|f| retry_delay(f).as_millis()).collect();
        assert_eq!(
            waits,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]
        );
        assert_eq!(retry_delay(u32::MAX), RETRY_CAP);
        assert_eq!(retry_delay(0), Duration::from_millis(250));
    }

    /// What goes out is made safe: a control character from an agent is escaped.
    #[test]
    fn a_published_record_carries_no_raw_control_character() {
        let server = NatsServer {
            url: "nats://127.0.0.1:1".into(),
            ..NatsServer::default()
        };
        let publisher =
            Publisher::start(PublishConfig::new(server, "h\u{1b}]52".into())).expect("start");
        publisher.publish("a", "s", "{\"tool\":\"x\u{9b}6n\"}".as_bytes());
        let body = publisher.shared.lock().queue.back().map(|i| i.body.clone());
        let body = String::from_utf8(body.unwrap_or_default()).unwrap_or_default();
        assert!(!body.chars().any(crate::safe_text::is_unsafe), "{body}");
        assert!(body.contains("\\u009b"), "{body}");
        publisher.finish(Duration::ZERO);
    }
}
