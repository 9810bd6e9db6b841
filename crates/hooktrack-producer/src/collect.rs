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

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::http::{self, MAX_HEAD_BYTES};
use crate::store::{self, MAX_BODY_BYTES, StoreError, StorePaths};
use crate::stream::{self, Stream};
use crate::token::constant_time_eq;
use hooktrack_core::envelope::{Envelope, Via, clip_name};
use hooktrack_core::row::{LineError, MAX_LINE_BYTES, parse_line};
use hooktrack_core::store::{CollectorRecord, CollectorState};
use hooktrack_core::time::Timestamp;

/// The one address a collector binds.
pub const BIND_ADDR: Ipv4Addr = Ipv4Addr::LOCALHOST;

#[derive(Clone)]
pub struct CollectConfig {
    pub dir: PathBuf,
    pub provider: String,
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
    pub fn new(dir: PathBuf, provider: String, generation: u64, token: String) -> Self {
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
    provider: String,
    generation: u64,
    token: Vec<u8>,
    max_body: usize,
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
    /// The store's Unix socket for the same exchanges ([`stream::socket_path`]), when
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
        defer_accept(&listener);
        let unix = bind_socket(&store.dir, addr.port());
        let shared = Arc::new(Shared {
            provider: clip_name(&config.provider).to_owned(),
            generation: config.generation,
            token: config.token.into_bytes(),
            max_body: config.max_body,
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
    /// one (see [`stream::socket_path`]).
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

    /// Serves until stopped, then waits for in-flight requests and records `stopped`.
    pub fn run(self) -> Result<CollectSummary, CollectError> {
        // Both listeners are polled by this one thread; each is non-blocking so that a
        // connection gone between the poll and the accept costs a `WouldBlock`, not a
        // stalled loop. (Accepted sockets do not inherit O_NONBLOCK on Linux: the
        // exchanges stay blocking, bounded by their timeouts.)
        let _ = self.listener.set_nonblocking(true);
        let mut fds = vec![libc::pollfd {
            fd: self.listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some((unix, _)) = &self.unix {
            let _ = unix.set_nonblocking(true);
            fds.push(libc::pollfd {
                fd: unix.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        while !self.shared.stopping.load(Ordering::SeqCst) {
            // SAFETY: poll(2) on `fds.len()` initialised entries that live across the call.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if ready < 0 {
                if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            if self.shared.stopping.load(Ordering::SeqCst) {
                break;
            }
            if fds[0].revents != 0 {
                match self.listener.accept() {
                    Ok((stream, _)) => self.dispatch(Stream::Tcp(stream)),
                    Err(e) => self.accept_failed(&e),
                }
            }
            if let (Some(entry), Some((unix, _))) = (fds.get(1), &self.unix)
                && entry.revents != 0
            {
                match unix.accept() {
                    Ok((stream, _)) => self.dispatch(Stream::Unix(stream)),
                    Err(e) => self.accept_failed(&e),
                }
            }
        }
        // New emitters find no socket and go to the (closed) port, then append.
        drop(self.unix);
        drop(self.listener);
        let shared = &self.shared;
        let mut in_flight = shared
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *in_flight > 0 {
            in_flight = shared
                .idle
                .wait(in_flight)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(in_flight);
        let summary = CollectSummary {
            accepted: shared.accepted.load(Ordering::SeqCst),
            rejected: shared.rejected.load(Ordering::SeqCst),
        };
        publish(
            shared,
            self.addr.port(),
            self.started_at,
            Some(store::now()),
        )?;
        Ok(summary)
    }

    /// Out of descriptors or similar: back off instead of spinning.
    fn accept_failed(&self, e: &io::Error) {
        if !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock
                | io::ErrorKind::Interrupted
                | io::ErrorKind::ConnectionAborted
        ) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn dispatch(&self, mut stream: Stream) {
        // Where accepted sockets inherit the listener's O_NONBLOCK (the BSDs, macOS), the
        // exchange is made blocking again: its reads and writes are bounded by timeouts.
        #[cfg(not(target_os = "linux"))]
        let _ = match &stream {
            Stream::Tcp(s) => s.set_nonblocking(false),
            Stream::Unix(s) => s.set_nonblocking(false),
        };
        let shared = Arc::clone(&self.shared);
        // The fast path: a request that has wholly arrived is served here, on the accept
        // thread, without a thread of its own (its stack, the clone, the bookkeeping):
        // what every emitter sends. Nothing here waits for the client (what has arrived
        // is read without blocking, the answer's write is bounded by
        // `INLINE_WRITE_TIMEOUT`) nor for the store (one try of each lock; a held lock
        // hands the request to a thread, which waits as every exchange may).
        let buf = match serve_inline(&shared, &mut stream) {
            Inline::Done => return,
            Inline::Pending(buf) => buf,
        };
        {
            let mut n = shared
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if *n >= shared.max_connections && !shared.make_room() {
                drop(n);
                shared.rejected.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_write_timeout(Some(INLINE_WRITE_TIMEOUT));
                let _ = http::respond(&mut stream, 503, r#"{"error":"busy"}"#, "");
                return;
            }
            *n += 1;
        }
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        if let Ok(handle) = stream.try_clone() {
            shared.conns_lock().push(Conn {
                id,
                stream: handle,
                authenticated: false,
            });
        }
        let worker = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("collect-conn".into())
            .spawn(move || {
                handle(&worker, stream, buf, id);
                finish(&worker, id);
            });
        if spawned.is_err() {
            shared.rejected.fetch_add(1, Ordering::Relaxed);
            finish(&shared, id);
        }
    }
}

/// Longest write of an answer on the accept thread (a loopback answer of a few hundred
/// bytes goes into an empty send buffer at once; this bounds a peer that reads nothing).
const INLINE_WRITE_TIMEOUT: Duration = Duration::from_millis(100);

/// Most bytes read on the accept thread: an emitter's delivery is about a kilobyte; a
/// larger request goes on in its thread.
const INLINE_READ_LIMIT: usize = 64 * 1024;

enum Inline {
    /// Answered (or the peer went away): nothing left to do.
    Done,
    /// Not wholly arrived, or the store is busy: serve it on a thread, starting from these
    /// bytes.
    Pending(Vec<u8>),
}

/// Serves a request whose bytes have all arrived, without waiting for anything.
fn serve_inline(shared: &Shared, stream: &mut Stream) -> Inline {
    let mut buf = Vec::new();
    if read_arrived(stream, &mut buf).is_err() {
        // Reset or closed before a whole request: nobody to answer.
        return Inline::Done;
    }
    if !request_complete(&buf) {
        return Inline::Pending(buf);
    }
    // A past deadline: should `read_request` want to read on (it does not for a whole
    // request), it answers 408 at once instead of waiting.
    let deadline = Instant::now();
    let reply = match read_request(shared, stream, &mut buf, deadline, None) {
        Request::Body(body) => match accept(shared, &buf[body], Wait::Never) {
            Ok(reply) => reply,
            Err(WouldWait) => return Inline::Pending(buf),
        },
        Request::Reply(reply) => reply,
        Request::Gone => return Inline::Done,
    };
    let _ = stream.set_write_timeout(Some(INLINE_WRITE_TIMEOUT));
    // Nothing is left unread in a whole request, so no lingering close here.
    answer(shared, stream, &reply);
    Inline::Done
}

/// Appends whatever the socket holds now to `buf`, without blocking (at most
/// [`INLINE_READ_LIMIT`]); `Err` when the peer closed or reset before anything useful.
fn read_arrived(stream: &Stream, buf: &mut Vec<u8>) -> Result<(), ()> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // SAFETY: recv(2) into a buffer of `chunk.len()` bytes on this frame, on the
        // stream's open descriptor. MSG_DONTWAIT makes this one call non-blocking without
        // changing the socket's mode (which the thread path relies on staying blocking).
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                chunk.as_mut_ptr().cast(),
                chunk.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match usize::try_from(n) {
            Ok(0) => return if buf.is_empty() { Err(()) } else { Ok(()) },
            Ok(n) => {
                buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
                // A short read drained the socket: no second call to learn it.
                if n < chunk.len() || buf.len() >= INLINE_READ_LIMIT {
                    return Ok(());
                }
            }
            Err(_) => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::Interrupted => {}
                e if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                _ => return Err(()),
            },
        }
    }
}

/// True when `buf` holds a whole request as [`read_request`] reads it: the head and the
/// body its `Content-Length` declares, or enough to refuse it without reading on (a head
/// over the limit, a malformed length). `read_request` reads nothing more from a complete
/// request, and nothing of it is left unread on the socket.
fn request_complete(buf: &[u8]) -> bool {
    let head_end = match http::find_head_end(buf) {
        Some(i) if i > MAX_HEAD_BYTES => return true,
        Some(i) => i,
        None => return buf.len() >= MAX_HEAD_BYTES + 4,
    };
    let Ok(head) = std::str::from_utf8(&buf[..head_end]) else {
        return true;
    };
    match content_length(head) {
        Ok(Some(n)) => buf.len() - (head_end + 4) >= n,
        Ok(None) | Err(()) => true,
    }
}

/// Asks the kernel to hand over a connection only once its first bytes have arrived
/// (Linux's `TCP_DEFER_ACCEPT`), so that the accept thread finds an emitter's request
/// already there and can serve it inline. Without it the accept returns as soon as the
/// handshake is done, nearly always before the request, and every connection would take
/// the thread path. A connection that sends nothing is still handed over once the
/// deferral (about a second) has passed. Best effort: where it is missing or refused, the
/// collector works as before.
/// Listens on the store's socket for `port`, 0600 (in the 0700 store), after removing any
/// socket an earlier collector of this store left: the caller holds `collector.lock`, so
/// none of them is live. `None` when the path is too long or the socket cannot be made;
/// the collector is then reached over TCP only, as before sockets.
fn bind_socket(dir: &Path, port: u16) -> Option<(UnixListener, SocketFile)> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let stale = name
                .to_str()
                .and_then(|n| n.strip_prefix("collector-"))
                .and_then(|n| n.strip_suffix(".sock"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if stale && entry.file_type().is_ok_and(|t| t.is_socket()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let path = stream::socket_path(dir, port)?;
    let listener = UnixListener::bind(&path).ok()?;
    if std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).is_err() {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    Some((listener, SocketFile(path)))
}

/// The collector's socket file, removed when the collector is done with it: at the end of
/// [`Collector::run`], or when a bound collector is dropped without running.
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn defer_accept(listener: &TcpListener) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let seconds: libc::c_int = 1;
        // SAFETY: setsockopt(2) on the listener's open descriptor with a pointer to a
        // c_int and its size, as TCP_DEFER_ACCEPT takes.
        let _ = unsafe {
            libc::setsockopt(
                listener.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                std::ptr::from_ref(&seconds).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = listener;
}

impl Shared {
    fn conns_lock(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the oldest exchange that has not presented the token; `false` when every
    /// exchange in flight is authenticated. Its thread sees the closed socket and ends.
    fn make_room(&self) -> bool {
        let mut conns = self.conns_lock();
        let Some(i) = conns.iter().position(|c| !c.authenticated) else {
            return false;
        };
        let victim = conns.remove(i);
        let _ = victim.stream.shutdown(Shutdown::Both);
        true
    }

    fn authenticated(&self, id: u64) {
        if let Some(conn) = self.conns_lock().iter_mut().find(|c| c.id == id) {
            conn.authenticated = true;
        }
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
        generation: Some(shared.generation),
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

fn finish(shared: &Shared, id: u64) {
    shared.conns_lock().retain(|c| c.id != id);
    let mut n = shared
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    *n = n.saturating_sub(1);
    if *n == 0 {
        shared.idle.notify_all();
    }
}

/// What to answer.
struct Reply {
    status: u16,
    body: String,
    extra_headers: &'static str,
    /// Unread request bytes to discard before closing (a lingering close, so the client
    /// reads our answer instead of a reset).
    unread: usize,
}

impl Reply {
    fn new(status: u16, body: String) -> Self {
        Self {
            status,
            body,
            extra_headers: "",
            unread: 0,
        }
    }

    fn error(status: u16, message: &str) -> Self {
        Self::new(status, serde_json::json!({ "error": message }).to_string())
    }
}

fn handle(shared: &Shared, mut stream: Stream, mut buf: Vec<u8>, id: u64) {
    let deadline = Instant::now() + shared.io_timeout;
    if let Stream::Tcp(tcp) = &stream {
        let _ = tcp.set_nodelay(true);
    }
    let _ = stream.set_write_timeout(Some(shared.io_timeout));
    let reply = match read_request(shared, &mut stream, &mut buf, deadline, Some(id)) {
        Request::Body(body) => match accept(shared, &buf[body], Wait::Bounded) {
            Ok(reply) => reply,
            // A bounded wait ends in a 503 reply, never here.
            Err(WouldWait) => Reply::error(503, "the store is busy"),
        },
        Request::Reply(reply) => reply,
        Request::Gone => return,
    };
    answer(shared, &mut stream, &reply);
    if reply.unread > 0 {
        let _ = stream.shutdown(Shutdown::Write);
        let linger = Instant::now() + Duration::from_millis(500);
        let mut left = reply.unread.min(2 * shared.max_body + MAX_HEAD_BYTES);
        let mut chunk = [0u8; 16 * 1024];
        while left > 0 {
            let now = Instant::now();
            if now >= linger || stream.set_read_timeout(Some(linger - now)).is_err() {
                break;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    }
}

/// Counts the reply and writes it.
fn answer(shared: &Shared, stream: &mut Stream, reply: &Reply) {
    if reply.status == 200 {
        shared.accepted.fetch_add(1, Ordering::Relaxed);
    } else {
        shared.rejected.fetch_add(1, Ordering::Relaxed);
    }
    let _ = http::respond(stream, reply.status, &reply.body, reply.extra_headers);
}

/// How long an append may wait for the store's locks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Up to [`store::LOCK_WAIT`], on a connection's own thread.
    Bounded,
    /// Not at all, on the accept thread: a held lock is [`WouldWait`].
    Never,
}

/// The append would have had to wait for a lock (only with [`Wait::Never`]); nothing was
/// written.
struct WouldWait;

/// What reading a request came to.
enum Request {
    /// A request to judge: its body is `buf[range]`.
    Body(std::ops::Range<usize>),
    /// Answered without looking at a body (refused, or `GET /health`).
    Reply(Reply),
    /// The peer went away: nothing to answer.
    Gone,
}

enum ReadError {
    Closed,
    TimedOut,
}

fn read_more(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ReadError> {
    let now = Instant::now();
    if now >= deadline {
        return Err(ReadError::TimedOut);
    }
    stream
        .set_read_timeout(Some(deadline - now))
        .map_err(|_| ReadError::Closed)?;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Err(ReadError::Closed),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if http::is_timeout(&e) => return Err(ReadError::TimedOut),
            Err(_) => return Err(ReadError::Closed),
        }
    }
}

/// Reads one request, starting from the bytes already in `buf`, and judges everything but
/// its body. `conn` is the exchange's slot in the connection bookkeeping (none on the
/// accept thread, where nothing can evict it).
fn read_request(
    shared: &Shared,
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    conn: Option<u64>,
) -> Request {
    let head_end = loop {
        match http::find_head_end(buf) {
            Some(i) if i > MAX_HEAD_BYTES => {
                return Request::Reply(Reply::error(431, "request head too large"));
            }
            Some(i) => break i,
            None if buf.len() >= MAX_HEAD_BYTES + 4 => {
                return Request::Reply(Reply::error(431, "request head too large"));
            }
            None => {}
        }
        match read_more(stream, buf, deadline) {
            Ok(_) => {}
            Err(ReadError::Closed) => return Request::Gone,
            Err(ReadError::TimedOut) => {
                return Request::Reply(Reply::error(408, "request timed out"));
            }
        }
    };
    let Ok(head) = std::str::from_utf8(&buf[..head_end]) else {
        return Request::Reply(Reply::error(400, "request head is not UTF-8"));
    };
    let (method, path) = match http::parse_request_head(head) {
        Ok(parsed) => parsed,
        Err(e) => return Request::Reply(Reply::error(400, &e.to_string())),
    };
    let path = path.split('?').next().unwrap_or(path);
    let declared = content_length(head);
    let already = buf.len() - (head_end + 4);
    let unread_after = |len: Option<usize>| len.unwrap_or(0).saturating_sub(already);
    match (method, path) {
        ("GET", "/health") => {
            return Request::Reply(Reply::new(
                200,
                serde_json::json!({"status": "running", "generation": shared.generation})
                    .to_string(),
            ));
        }
        (_, "/events") if method != "POST" => {
            let mut r = Reply::error(405, "use POST");
            r.unread = unread_after(declared.ok().flatten());
            return Request::Reply(r);
        }
        (_, "/events") => {}
        _ => {
            let mut r = Reply::error(404, "no such path");
            r.unread = unread_after(declared.ok().flatten());
            return Request::Reply(r);
        }
    }
    // Authenticate before looking at the body.
    let presented = http::header(head, "authorization")
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .unwrap_or("");
    if !constant_time_eq(presented.as_bytes(), &shared.token) {
        let mut r = Reply::error(401, "missing or wrong bearer token");
        r.extra_headers = "WWW-Authenticate: Bearer realm=\"hooktrack\"\r\n";
        r.unread = unread_after(declared.ok().flatten());
        return Request::Reply(r);
    }
    if let Some(id) = conn {
        shared.authenticated(id);
    }
    if http::header(head, "transfer-encoding").is_some() {
        return Request::Reply(Reply::error(
            411,
            "send a Content-Length; no transfer encoding",
        ));
    }
    let length = match declared {
        Ok(Some(n)) => n,
        Ok(None) => return Request::Reply(Reply::error(411, "Content-Length required")),
        Err(()) => return Request::Reply(Reply::error(400, "bad Content-Length")),
    };
    if length > shared.max_body {
        let mut r = Reply::error(
            413,
            &format!(
                "body of {length} bytes is over the {}-byte limit",
                shared.max_body
            ),
        );
        r.unread = unread_after(Some(length));
        return Request::Reply(r);
    }
    let body_start = head_end + 4;
    // curl sends `Expect: 100-continue` for larger bodies and waits a second for this.
    if buf.len() - body_start < length
        && http::header(head, "expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    while buf.len() - body_start < length {
        match read_more(stream, buf, deadline) {
            Ok(_) => {}
            Err(ReadError::Closed) => return Request::Gone,
            Err(ReadError::TimedOut) => {
                return Request::Reply(Reply::error(408, "request timed out"));
            }
        }
    }
    Request::Body(body_start..body_start + length)
}

/// `Ok(None)` when absent; `Err` when malformed or contradictory.
fn content_length(head: &str) -> Result<Option<usize>, ()> {
    let mut found: Option<usize> = None;
    for v in http::headers(head, "content-length") {
        let n = http::parse_content_length(v).ok_or(())?;
        if found.is_some_and(|f| f != n) {
            return Err(());
        }
        found = Some(n);
    }
    Ok(found)
}

#[derive(Deserialize)]
struct Delivery<'a> {
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    // No `generation`: the row's generation is the collector's, whatever a body says.
    emitter_seq: Option<u64>,
    #[serde(borrow)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    payload_error: Option<Cow<'a, str>>,
    /// Kept only when it is a pane id; anything else is dropped, never the delivery.
    #[serde(default)]
    tmux_pane: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct EventName<'a> {
    #[serde(borrow)]
    hook_event_name: Option<Cow<'a, str>>,
}

fn accept(shared: &Shared, body: &[u8], wait: Wait) -> Result<Reply, WouldWait> {
    let delivery: Delivery<'_> = match serde_json::from_slice(body) {
        Ok(d) => d,
        Err(e) => {
            return Ok(Reply::error(
                400,
                &format!("body is not a JSON object: {e}"),
            ));
        }
    };
    let envelope = delivery.payload.is_some() || delivery.payload_error.is_some();
    let bare: Option<&RawValue>;
    let (payload, event) = if envelope {
        let event = match delivery.event {
            Some(e) => Some(e),
            None => delivery
                .payload
                .and_then(|p| serde_json::from_str::<EventName<'_>>(p.get()).ok())
                .and_then(|n| n.hook_event_name),
        };
        (delivery.payload, event)
    } else if delivery.hook_event_name.is_some() {
        // A bare hook payload posted as is (`curl --data-binary @-`): the whole body.
        bare = match std::str::from_utf8(body)
            .ok()
            .and_then(|t| serde_json::from_str::<&RawValue>(t).ok())
        {
            Some(raw) => Some(raw),
            None => return Ok(Reply::error(400, "body is not JSON")),
        };
        (bare, delivery.hook_event_name)
    } else {
        return Ok(Reply::error(
            400,
            "body is neither a delivery envelope (with payload) nor a hook payload (with hook_event_name)",
        ));
    };
    let provider = delivery
        .provider
        .as_deref()
        .map_or(shared.provider.as_str(), clip_name);
    // A genuine emitter takes its emitter_seq from the counter before posting. A higher
    // one was never handed out: kept, it would make the real delivery with that key look
    // like a duplicate later, so the row is written without it (unkeyed).
    let emitter_seq = match delivery.emitter_seq {
        Some(seq) => match store::last_emitter_seq(&shared.store, &shared.counter) {
            Ok(last) if seq > last => None,
            Ok(_) => Some(seq),
            Err(e) => {
                return Ok(Reply::error(
                    500,
                    &hooktrack_core::diagnostics::error_chain(&e),
                ));
            }
        },
        None => None,
    };
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
    let row = Envelope {
        provider,
        generation: shared.generation,
        via: Via::Http,
        sequence: Some(sequence),
        emitter_seq,
        received_at: store::now(),
        event: event.as_deref().map(clip_name),
        payload,
        payload_error: delivery.payload_error.as_deref(),
        tmux_pane: delivery
            .tmux_pane
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .filter(|p| hooktrack_core::store::is_tmux_pane_id(p)),
    }
    .render();
    // 200 means "on disk and read": a row the reader would skip is refused instead.
    let line = row.strip_suffix(b"\n").unwrap_or(&row);
    match parse_line(line) {
        Ok(_) => {}
        Err(e @ LineError::Oversized { .. }) => {
            return Ok(Reply::error(
                413,
                &format!("the row would be over the {MAX_LINE_BYTES}-byte line limit: {e}"),
            ));
        }
        Err(e) => {
            return Ok(Reply::error(
                400,
                &format!("the reader would skip this row: {e}"),
            ));
        }
    }
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
        Err(e @ StoreError::LockTimeout { .. }) => Ok(Reply::error(
            503,
            &hooktrack_core::diagnostics::error_chain(&e),
        )),
        Err(e) => Ok(Reply::error(
            500,
            &hooktrack_core::diagnostics::error_chain(&e),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_complete_only_with_its_whole_body_or_a_refusal_in_hand() {
        let head = "POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 5\r\n\r\n";
        let whole = format!("{head}hello");
        assert!(request_complete(whole.as_bytes()));
        assert!(!request_complete(&whole.as_bytes()[..whole.len() - 1]));
        assert!(!request_complete(&head.as_bytes()[..20]));
        assert!(!request_complete(b""));
        // No body declared: the head is the request.
        assert!(request_complete(b"GET /health HTTP/1.1\r\n\r\n"));
        // Refused without reading on: a bad length, a head past the limit.
        assert!(request_complete(
            b"POST /events HTTP/1.1\r\nContent-Length: +5\r\n\r\n"
        ));
        let long = format!("POST /events HTTP/1.1\r\nX: {}", "p".repeat(MAX_HEAD_BYTES));
        assert!(request_complete(long.as_bytes()));
        assert!(!request_complete(&long.as_bytes()[..MAX_HEAD_BYTES]));
    }
}
