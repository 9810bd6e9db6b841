//! Reading one request off a connection: what has arrived (without blocking, on the
//! accept thread), or the rest of it (bounded by the exchange's deadline, on its own
//! thread). What the bytes mean is [`judge`](super::judge)'s to say.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::time::Instant;

use rustix::io::Errno;
use rustix::net::RecvFlags;

use super::Shared;
use super::judge::{self, Head, Reply};
use crate::http;
use crate::stream::Stream;

/// Most bytes read on the accept thread: an emitter's delivery is about a kilobyte; a
/// larger request goes on in its thread.
pub(super) const INLINE_READ_LIMIT: usize = 64 * 1024;

/// What reading a request came to.
pub(super) enum Request {
    /// A request to judge: its body is `buf[range]`.
    Body(Range<usize>),
    /// Answered without looking at a body (refused, or `GET /health`).
    Reply(Reply),
    /// The peer went away: nothing to answer.
    Gone,
}

enum ReadError {
    Closed,
    TimedOut,
}

/// Reads one request, starting from the bytes already in `buf`, until its head is judged
/// and the body it declares is in. `conn` is the exchange's slot in the connection
/// bookkeeping (none on the accept thread, where nothing can evict it).
pub(super) fn read_request(
    shared: &Shared,
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    conn: Option<u64>,
) -> Request {
    let timed_out = || Request::Reply(Reply::error(408, "request timed out"));
    let (body, expect_continue) = loop {
        match judge::head(buf, &shared.rules) {
            Head::Partial => {}
            Head::Answer {
                reply,
                authenticated,
            } => {
                if authenticated && let Some(id) = conn {
                    shared.authenticated(id);
                }
                return Request::Reply(reply);
            }
            Head::Body {
                body,
                expect_continue,
            } => break (body, expect_continue),
        }
        match read_more(stream, buf, deadline) {
            Ok(_) => {}
            Err(ReadError::Closed) => return Request::Gone,
            Err(ReadError::TimedOut) => return timed_out(),
        }
    };
    if let Some(id) = conn {
        shared.authenticated(id);
    }
    if expect_continue {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    while buf.len() < body.end {
        match read_more(stream, buf, deadline) {
            Ok(_) => {}
            Err(ReadError::Closed) => return Request::Gone,
            Err(ReadError::TimedOut) => return timed_out(),
        }
    }
    Request::Body(body)
}

/// Appends whatever the socket holds now to `buf`, without blocking (at most
/// [`INLINE_READ_LIMIT`]); `Err` when the peer closed or reset before anything useful.
pub(super) fn read_arrived(stream: &Stream, buf: &mut Vec<u8>) -> Result<(), ()> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // MSG_DONTWAIT makes this one call non-blocking without changing the socket's
        // mode (which the thread path relies on staying blocking).
        let n = rustix::net::recv(stream, &mut chunk, RecvFlags::DONTWAIT).map(|(n, _)| n);
        match n {
            Ok(0) => return if buf.is_empty() { Err(()) } else { Ok(()) },
            Ok(n) => {
                buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
                // A short read drained the socket: no second call to learn it.
                if n < chunk.len() || buf.len() >= INLINE_READ_LIMIT {
                    return Ok(());
                }
            }
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => return Ok(()),
            Err(_) => return Err(()),
        }
    }
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
