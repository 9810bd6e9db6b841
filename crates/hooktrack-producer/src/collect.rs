//! `hooktrack collect`: one collector per session, on 127.0.0.1 only.
//!
//! Every `POST /events` must carry the session's bearer token (compared in constant
//! time; 401 otherwise), a `Content-Length` (411) no larger than the body limit (413), and
//! a JSON body (400): a delivery envelope from `hooktrack emit`, or a bare hook payload.
//! An accepted delivery is appended to `events.ndjson` as a `via: "http"` row with the
//! next `sequence`, and only then answered `200 {"sequence": N}`, so a 2xx always means
//! "on disk". `GET /health` answers without a token and tells nothing secret.
//!
//! The row's `generation` is the collector's own (a body cannot move it), an `emitter_seq`
//! above the store's counter (never handed out) is left out of the row, and a body is
//! answered 200 only when the row it renders to is one the reader keeps (the core's
//! `parse_line` judges it): anything else is a 400 (413 over the line limit) and nothing is
//! written.
//!
//! A request that has wholly arrived when its connection is accepted (an emitter's, which
//! writes it in one go; the listener defers the accept until the first bytes are in) is
//! served on the accept thread without waiting for anything. Any other gets a thread of
//! its own, at most [`CollectConfig::max_connections`] at once, each exchange bounded by
//! [`CollectConfig::io_timeout`]. At the limit, the oldest connection that has not yet
//! presented the token is closed to make room (503 only when every slot holds an
//! authenticated exchange), so idle connections from a local process without the token
//! cannot deny the emitters. [`Stopper::stop`] (the binary calls it on
//! SIGTERM/SIGINT) stops accepting, lets in-flight requests finish, and records
//! `status: "stopped"` in `collector.json`.
//!
//! One collector per store: `collector.lock` is held for the collector's lifetime. Before
//! each append, under the store lock, the collector checks that `events.ndjson` still
//! names its open file and reopens the path when it was rotated away.

mod accept;
mod auth;
mod judge;
mod request;
mod socket;
mod write;

use std::fs::File;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use thiserror::Error;

use crate::store::{self, MAX_BODY_BYTES, StoreError, StorePaths};
use crate::stream::Stream;
use hooktrack_core::agent::Agent;
use hooktrack_core::store::{CollectorRecord, CollectorState};
use hooktrack_core::time::Timestamp;

use judge::Rules;
use socket::SocketFile;

/// The one address a collector binds.
pub const BIND_ADDR: Ipv4Addr = Ipv4Addr::LOCALHOST;

#[derive(Clone)]
pub struct CollectConfig {
    pub dir: PathBuf,
    /// Named in the rows of deliveries whose body names no agent.
    pub provider: Agent,
    pub generation: u64,
    /// Must be 127.0.0.1; anything else is refused before binding.
    pub bind: IpAddr,
    /// 0 picks an ephemeral port (the normal case); a restarted collector may ask for
    /// its old one.
    pub port: u16,
    pub token: String,
    pub max_body: usize,
    pub max_connections: usize,
    /// Longest time one exchange (request in, response out) may take.
    pub io_timeout: Duration,
}

impl std::fmt::Debug for CollectConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectConfig")
            .field("dir", &self.dir)
            .field("provider", &self.provider)
            .field("generation", &self.generation)
            .field("bind", &self.bind)
            .field("port", &self.port)
            .field("token", &"<redacted>")
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl CollectConfig {
    pub fn new(dir: PathBuf, provider: Agent, generation: u64, token: String) -> Self {
        Self {
            dir,
            provider,
            generation,
            bind: IpAddr::V4(BIND_ADDR),
            port: 0,
            token,
            max_body: MAX_BODY_BYTES,
            max_connections: 128,
            io_timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CollectError {
    #[error("refusing to listen on {addr}: a collector binds 127.0.0.1 only")]
    NotLoopback { addr: IpAddr },
    #[error("the bearer token is empty (set ${})", store::TOKEN_ENV)]
    NoToken,
    #[error("the body limit {max_body} is over {MAX_BODY_BYTES}, the most a row can carry")]
    BodyLimit { max_body: usize },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("cannot prepare the store in {dir}")]
    Store {
        dir: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("cannot publish {path}")]
    Status {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
}

/// Counts of one collector run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectSummary {
    pub accepted: u64,
    pub rejected: u64,
}

struct Shared {
    /// What every request is judged by.
    rules: Rules,
    max_connections: usize,
    io_timeout: Duration,
    store: StorePaths,
    /// The last sequence written and the open events file. Held while a row is appended,
    /// so file order and sequence order agree.
    appender: Mutex<Appender>,
    counter: File,
    /// Held (locked) while the collector lives: one collector per store.
    _collector_lock: File,
    stopping: AtomicBool,
    in_flight: Mutex<usize>,
    /// The exchanges in flight, oldest first, for making room at the connection limit.
    conns: Mutex<Vec<Conn>>,
    next_conn: AtomicU64,
    idle: Condvar,
    accepted: AtomicU64,
    rejected: AtomicU64,
}

struct Appender {
    sequence: u64,
    events: File,
}

/// One exchange in flight: a handle on its socket to close it, and whether it presented
/// the token (then it is never closed to make room).
struct Conn {
    id: u64,
    stream: Stream,
    authenticated: bool,
}

pub struct Collector {
    listener: TcpListener,
    addr: SocketAddr,
    /// The store's Unix socket for the same exchanges ([`socket_path`](crate::stream::socket_path)), when
    /// its path fits a socket address and it could be made.
    unix: Option<(UnixListener, SocketFile)>,
    shared: Arc<Shared>,
    started_at: Timestamp,
}

/// Stops a running collector from another thread (or a signal handler thread).
#[derive(Clone)]
pub struct Stopper {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl Stopper {
    /// Stops accepting; [`Collector::run`] returns once in-flight requests are done.
    pub fn stop(&self) {
        if !self.shared.stopping.swap(true, Ordering::SeqCst) {
            // Wake the accept loop. One byte: with a deferred accept, a connection that
            // sends nothing is not handed over at once.
            if let Ok(mut wake) = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)) {
                let _ = wake.write_all(b"\n");
            }
        }
    }
}

impl Collector {
    /// Prepares the store, binds, and publishes `collector.json` with `status: "running"`.
    pub fn bind(config: CollectConfig) -> Result<Self, CollectError> {
        if config.bind != IpAddr::V4(BIND_ADDR) {
            return Err(CollectError::NotLoopback { addr: config.bind });
        }
        if config.token.is_empty() {
            return Err(CollectError::NoToken);
        }
        if config.max_body > MAX_BODY_BYTES {
            return Err(CollectError::BodyLimit {
                max_body: config.max_body,
            });
        }
        let store = StorePaths::in_dir(&config.dir);
        let store_err = |source| CollectError::Store {
            dir: config.dir.clone(),
            source,
        };
        store::create_dir(&store).map_err(store_err)?;
        let collector_lock = store::lock_collector(&store).map_err(store_err)?;
        let events = store::open_events(&store).map_err(store_err)?;
        let counter = store::open_counter(&store).map_err(store_err)?;
        let last_sequence = store::max_sequence(&store).map_err(store_err)?;
        let requested = SocketAddr::new(config.bind, config.port);
        let listener = TcpListener::bind(requested).map_err(|source| CollectError::Bind {
            addr: requested,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| CollectError::Bind {
            addr: requested,
            source,
        })?;
        socket::defer_accept(&listener);
        let unix = socket::bind_socket(&store.dir, addr.port());
        let shared = Arc::new(Shared {
            rules: Rules {
                token: config.token.into_bytes(),
                max_body: config.max_body,
                provider: config.provider,
                generation: config.generation,
            },
            max_connections: config.max_connections.max(1),
            io_timeout: config.io_timeout,
            store,
            appender: Mutex::new(Appender {
                sequence: last_sequence,
                events,
            }),
            counter,
            _collector_lock: collector_lock,
            stopping: AtomicBool::new(false),
            in_flight: Mutex::new(0),
            conns: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(0),
            idle: Condvar::new(),
            accepted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        });
        let collector = Self {
            listener,
            addr,
            unix,
            shared,
            started_at: store::now(),
        };
        collector.publish(None)?;
        Ok(collector)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The URL emitters post to.
    pub fn url(&self) -> String {
        format!("http://{}/events", self.addr)
    }

    /// The Unix socket emitters of this store reach the collector by, if it listens on
    /// one (see [`socket_path`](crate::stream::socket_path)).
    pub fn socket(&self) -> Option<&Path> {
        self.unix.as_ref().map(|(_, file)| file.0.as_path())
    }

    pub fn stopper(&self) -> Stopper {
        Stopper {
            shared: Arc::clone(&self.shared),
            addr: self.addr,
        }
    }

    fn publish(&self, stopped_at: Option<Timestamp>) -> Result<(), CollectError> {
        publish(&self.shared, self.port(), self.started_at, stopped_at)
    }
}

fn publish(
    shared: &Shared,
    port: u16,
    started_at: Timestamp,
    stopped_at: Option<Timestamp>,
) -> Result<(), CollectError> {
    let status = CollectorRecord {
        pid: Some(std::process::id()),
        port: Some(port),
        generation: Some(shared.rules.generation),
        status: Some(if stopped_at.is_some() {
            CollectorState::Stopped
        } else {
            CollectorState::Running
        }),
        started_at: Some(started_at.to_string()),
        stopped_at: stopped_at.map(|t| t.to_string()),
    };
    let path = shared.store.collector.clone();
    store::write_json_atomic(&path, &status).map_err(|source| CollectError::Status { path, source })
}
