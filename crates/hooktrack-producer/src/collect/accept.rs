//! The accept loop: both listeners polled by one thread; a request that has wholly
//! arrived served right there, any other on a thread of its own, within the connection
//! limit (making room by closing the oldest exchange that has not presented the token).

use std::io::{self, Read};
use std::net::Shutdown;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;

use super::judge::{self, Reply, Verdict};
use super::request::{self, Request};
use super::write::{self, Wait, WouldWait};
use super::{CollectError, CollectSummary, Collector, Conn, Shared, publish};
use crate::http::{self, MAX_HEAD_BYTES};
use crate::store;
use crate::stream::Stream;

/// Longest write of an answer on the accept thread (a loopback answer of a few hundred
/// bytes goes into an empty send buffer at once; this bounds a peer that reads nothing).
const INLINE_WRITE_TIMEOUT: Duration = Duration::from_millis(100);

impl Collector {
    /// Serves until stopped, then waits for in-flight requests and records `stopped`.
    pub fn run(self) -> Result<CollectSummary, CollectError> {
        // Both listeners are polled by this one thread; each is non-blocking so that a
        // connection gone between the poll and the accept costs a `WouldBlock`, not a
        // stalled loop. (Accepted sockets do not inherit O_NONBLOCK on Linux: the
        // exchanges stay blocking, bounded by their timeouts.)
        let _ = self.listener.set_nonblocking(true);
        let mut fds = vec![PollFd::new(&self.listener, PollFlags::IN)];
        if let Some((unix, _)) = &self.unix {
            let _ = unix.set_nonblocking(true);
            fds.push(PollFd::new(unix, PollFlags::IN));
        }
        while !self.shared.stopping.load(Ordering::SeqCst) {
            if let Err(e) = poll(&mut fds, None) {
                if e != Errno::INTR {
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            if self.shared.stopping.load(Ordering::SeqCst) {
                break;
            }
            let ready = |i: usize| fds.get(i).is_some_and(|fd| !fd.revents().is_empty());
            if ready(0) {
                match self.listener.accept() {
                    Ok((stream, _)) => self.dispatch(Stream::Tcp(stream)),
                    Err(e) => self.accept_failed(&e),
                }
            }
            if let (true, Some((unix, _))) = (ready(1), &self.unix) {
                match unix.accept() {
                    Ok((stream, _)) => self.dispatch(Stream::Unix(stream)),
                    Err(e) => self.accept_failed(&e),
                }
            }
        }
        drop(fds);
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
    if request::read_arrived(stream, &mut buf).is_err() {
        // Reset or closed before a whole request: nobody to answer.
        return Inline::Done;
    }
    let reply = match judge::judge(&buf, &shared.rules) {
        Verdict::Partial => return Inline::Pending(buf),
        // Bytes of a refused request still on their way: its thread reads them before
        // closing, so the client reads the answer instead of a reset.
        Verdict::Answer(reply) if reply.unread > 0 => return Inline::Pending(buf),
        Verdict::Answer(reply) => reply,
        Verdict::Deliver(delivery) => match write::deliver(shared, delivery, Wait::Never) {
            Ok(reply) => reply,
            Err(WouldWait) => return Inline::Pending(buf),
        },
    };
    let _ = stream.set_write_timeout(Some(INLINE_WRITE_TIMEOUT));
    // Nothing is left unread in a whole request, so no lingering close here.
    answer(shared, stream, &reply);
    Inline::Done
}

fn handle(shared: &Shared, mut stream: Stream, mut buf: Vec<u8>, id: u64) {
    let deadline = Instant::now() + shared.io_timeout;
    if let Stream::Tcp(tcp) = &stream {
        let _ = tcp.set_nodelay(true);
    }
    let _ = stream.set_write_timeout(Some(shared.io_timeout));
    let reply = match request::read_request(shared, &mut stream, &mut buf, deadline, Some(id)) {
        Request::Body(body) => match judge::body(&buf[body], &shared.rules) {
            Ok(delivery) => match write::deliver(shared, delivery, Wait::Bounded) {
                Ok(reply) => reply,
                // A bounded wait ends in a 503 reply, never here.
                Err(WouldWait) => Reply::error(503, "the store is busy"),
            },
            Err(reply) => reply,
        },
        Request::Reply(reply) => reply,
        Request::Gone => return,
    };
    answer(shared, &mut stream, &reply);
    if reply.unread > 0 {
        let _ = stream.shutdown(Shutdown::Write);
        let linger = Instant::now() + Duration::from_millis(500);
        let mut left = reply.unread.min(2 * shared.rules.max_body + MAX_HEAD_BYTES);
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

impl Shared {
    pub(super) fn conns_lock(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the oldest exchange that has not presented the token; `false` when every
    /// exchange in flight is authenticated. Its thread sees the closed socket and ends.
    pub(super) fn make_room(&self) -> bool {
        let mut conns = self.conns_lock();
        let Some(i) = conns.iter().position(|c| !c.authenticated) else {
            return false;
        };
        let victim = conns.remove(i);
        let _ = victim.stream.shutdown(Shutdown::Both);
        true
    }

    pub(super) fn authenticated(&self, id: u64) {
        if let Some(conn) = self.conns_lock().iter_mut().find(|c| c.id == id) {
            conn.authenticated = true;
        }
    }
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
