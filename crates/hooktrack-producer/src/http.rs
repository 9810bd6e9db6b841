//! The smallest HTTP/1.1 the emitter and the collector need, over `std::net`.
//!
//! One request per connection (`Connection: close`), bodies sized by `Content-Length`
//! only, every read and write bounded by a deadline. The emitter is a fresh process per
//! hook, so connection reuse would buy nothing, and an async runtime or a general client
//! would cost start-up time on every hook of every turn.
//!
//! The collector parses request heads with `httparse` (see `collect/judge.rs` for the
//! stricter rules it adds). What stays written by hand here is the emitter's side: the
//! request it writes (one `write!` of five header lines) and the response head it reads
//! (a status line and `Content-Length`). `httparse` would be a dependency of every hook run
//! for that, and its first parse detects the CPU's vector features at run time (`cpuid`,
//! a trap to the hypervisor on a virtual machine), which a process that lives for one
//! request pays every time. A URL must name a loopback address: the bearer token is
//! never sent anywhere else.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use thiserror::Error;

pub use crate::stream::Endpoint;
use crate::stream::Stream;

/// Longest request or response head (request line or status line plus headers).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// A parsed `http://HOST:PORT/PATH` URL. Only loopback IP literals (127.0.0.0/8, ::1) and
/// `localhost` are accepted: the emitter never resolves names, and never sends the token
/// off the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub addr: SocketAddr,
    pub path: String,
    text: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    #[error("{url:?} is not an http:// URL")]
    Scheme { url: String },
    #[error("{url:?} has no port")]
    NoPort { url: String },
    #[error("{url:?} has a bad port")]
    BadPort { url: String },
    #[error("{url:?} does not name an IP address or localhost")]
    BadHost { url: String },
    #[error("{url:?} has spaces or control characters in its path")]
    BadPath { url: String },
    #[error("{url:?} names {ip}, not a loopback address (the collector is on this machine only)")]
    NotLoopback { url: String, ip: IpAddr },
}

impl Url {
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| UrlError::Scheme {
                url: url.to_owned(),
            })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !path.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(UrlError::BadPath {
                url: url.to_owned(),
            });
        }
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let (host, after) = inner.split_once(']').ok_or_else(|| UrlError::BadHost {
                url: url.to_owned(),
            })?;
            let port = after.strip_prefix(':').ok_or_else(|| UrlError::NoPort {
                url: url.to_owned(),
            })?;
            (host, port)
        } else {
            authority.rsplit_once(':').ok_or_else(|| UrlError::NoPort {
                url: url.to_owned(),
            })?
        };
        let port: u16 = port.parse().map_err(|_| UrlError::BadPort {
            url: url.to_owned(),
        })?;
        if port == 0 {
            return Err(UrlError::BadPort {
                url: url.to_owned(),
            });
        }
        let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            host.parse().map_err(|_| UrlError::BadHost {
                url: url.to_owned(),
            })?
        };
        let ip = match ip {
            // `::ffff:127.0.0.1` is loopback too, and connects as IPv4.
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        if !ip.is_loopback() {
            return Err(UrlError::NotLoopback {
                url: url.to_owned(),
                ip,
            });
        }
        Ok(Self {
            addr: SocketAddr::new(ip, port),
            path: path.to_owned(),
            text: url.to_owned(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Why a POST did not get a 2xx answer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PostError {
    #[error("cannot connect to {to}")]
    Connect {
        to: Endpoint,
        #[source]
        source: io::Error,
    },
    #[error("timed out {stage} {to} after {ms} ms")]
    Timeout {
        stage: &'static str,
        to: Endpoint,
        ms: u128,
    },
    #[error("cannot send the request to {to}")]
    Send {
        to: Endpoint,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the response from {to}")]
    Receive {
        to: Endpoint,
        #[source]
        source: io::Error,
    },
    #[error("{to} sent a malformed response: {detail}")]
    Malformed { to: Endpoint, detail: String },
    #[error("{to} answered {status}")]
    Status { to: Endpoint, status: u16 },
}

/// Time limits of one POST.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub connect: Duration,
    /// The whole exchange, connect included.
    pub total: Duration,
}

/// POSTs `body` as JSON with a bearer token to the collector at `url`: over its Unix
/// socket `socket` when one is given and accepts the connection, else over TCP to the
/// URL's address. `Ok` carries the status and the response body of a 2xx answer.
///
/// A socket that does not connect (absent, nobody listening, a path too long) costs one
/// failed `connect` and the exchange goes over TCP; once connected, a failure is the
/// POST's (the request may have been taken: the caller's fallback row is then a duplicate
/// by `emitter_seq`, never a loss).
pub fn post_json(
    url: &Url,
    socket: Option<&Path>,
    token: &str,
    body: &[u8],
    limits: Limits,
) -> Result<(u16, Vec<u8>), PostError> {
    let start = Instant::now();
    let tcp = Endpoint::Tcp(url.addr);
    let remaining = |stage: &'static str, to: &Endpoint| {
        let left = limits.total.saturating_sub(start.elapsed());
        if left.is_zero() {
            Err(PostError::Timeout {
                stage,
                to: to.clone(),
                ms: limits.total.as_millis(),
            })
        } else {
            Ok(left)
        }
    };
    let unix = socket.and_then(|path| {
        let limit = limits.connect.min(remaining("connecting to", &tcp).ok()?);
        let stream = Stream::connect_unix(path, limit).ok()?;
        Some((stream, Endpoint::Unix(path.to_owned())))
    });
    let (mut stream, to) = match unix {
        Some(connected) => connected,
        None => {
            let connect_for = limits.connect.min(remaining("connecting to", &tcp)?);
            let stream = TcpStream::connect_timeout(&url.addr, connect_for).map_err(|source| {
                if is_timeout(&source) {
                    PostError::Timeout {
                        stage: "connecting to",
                        to: tcp.clone(),
                        ms: connect_for.as_millis(),
                    }
                } else {
                    PostError::Connect {
                        to: tcp.clone(),
                        source,
                    }
                }
            })?;
            let _ = stream.set_nodelay(true);
            (Stream::Tcp(stream), tcp)
        }
    };
    let mut request = Vec::with_capacity(body.len() + 256);
    let host = match url.addr {
        SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    };
    let _ = write!(
        request,
        "POST {} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        url.path,
        body.len()
    );
    request.extend_from_slice(body);
    let send_timeout = |source: io::Error| {
        if is_timeout(&source) {
            PostError::Timeout {
                stage: "sending to",
                to: to.clone(),
                ms: limits.total.as_millis(),
            }
        } else {
            PostError::Send {
                to: to.clone(),
                source,
            }
        }
    };
    // One deadline for the whole send. `SO_SNDTIMEO` bounds a wait, not a `write`: on a
    // Unix socket each buffer of a long write waits afresh, so a peer that reads a little
    // now and then held one `write` of a 900 KiB payload past the watchdog (issue 34
    // item 5). Non-blocking writes take what fits at once, and `poll` waits for room for
    // at most what is left of the deadline.
    stream.set_nonblocking(true).map_err(send_timeout)?;
    let mut unsent: &[u8] = &request;
    while !unsent.is_empty() {
        match stream.write(unsent) {
            Ok(0) => {
                return Err(send_timeout(io::Error::from(io::ErrorKind::WriteZero)));
            }
            Ok(n) => unsent = &unsent[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_writable(&stream, remaining("sending to", &to)?).map_err(send_timeout)?;
            }
            Err(e) => return Err(send_timeout(e)),
        }
    }
    stream.set_nonblocking(false).map_err(send_timeout)?;
    // Read the head, then as much body as Content-Length says (bounded).
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 4096];
    let malformed = |detail: String| PostError::Malformed {
        to: to.clone(),
        detail,
    };
    let head_end = loop {
        if let Some(i) = find_head_end(&buf) {
            break i;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(malformed("response head too long".into()));
        }
        let n = read_some(
            &mut stream,
            &mut chunk,
            remaining("waiting for", &to)?,
            &to,
            limits,
        )?;
        if n == 0 {
            return Err(malformed("connection closed before a response".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| malformed("response head is not UTF-8".into()))?;
    let status = parse_status(head).ok_or_else(|| {
        malformed(format!(
            "bad status line {:?}",
            head.lines().next().unwrap_or("")
        ))
    })?;
    if !(200..300).contains(&status) {
        return Err(PostError::Status { to, status });
    }
    let want = header(head, "content-length")
        .and_then(parse_content_length)
        .unwrap_or(0)
        .min(64 * 1024);
    let mut response = buf[head_end + 4..].to_vec();
    while response.len() < want {
        let Ok(left) = remaining("reading from", &to) else {
            break;
        };
        match read_some(&mut stream, &mut chunk, left, &to, limits) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
    }
    response.truncate(want);
    Ok((status, response))
}

/// Waits until `stream` takes more bytes, at most `left`; a timeout is `TimedOut`.
fn wait_writable(stream: &Stream, left: Duration) -> io::Result<()> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let limit = Timespec::try_from(left).map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?;
    let mut fds = [PollFd::new(stream, PollFlags::OUT)];
    match poll(&mut fds, Some(&limit)) {
        Ok(0) => Err(io::Error::from(io::ErrorKind::TimedOut)),
        // Ready, or an error or hang-up the next `write` reports; after a signal the
        // caller's next round waits again for what is left.
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn read_some(
    stream: &mut Stream,
    chunk: &mut [u8],
    left: Duration,
    to: &Endpoint,
    limits: Limits,
) -> Result<usize, PostError> {
    stream
        .set_read_timeout(Some(left))
        .map_err(|source| PostError::Receive {
            to: to.clone(),
            source,
        })?;
    loop {
        match stream.read(chunk) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => {
                return Err(PostError::Timeout {
                    stage: "waiting for the response from",
                    to: to.clone(),
                    ms: limits.total.as_millis(),
                });
            }
            Err(source) => {
                return Err(PostError::Receive {
                    to: to.clone(),
                    source,
                });
            }
        }
    }
}

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Where the blank line ending a head starts. A plain scan, not `memchr`'s: the first
/// search there detects the CPU's vector features (a dozen `cpuid` instructions, each a
/// trap to the hypervisor on a virtual machine: about 40 µs of a hook run that takes 600),
/// and a head is a few hundred bytes.
pub(crate) fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

fn parse_status(head: &str) -> Option<u16> {
    let line = head.split("\r\n").next()?;
    let mut parts = line.splitn(3, ' ');
    let version = parts.next()?;
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    code.parse().ok()
}

/// A `Content-Length` value: one or more digits, nothing else (no sign, no inner space).
pub fn parse_content_length(value: &str) -> Option<usize> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// The value of the first header called `name` (case-insensitive) in a response head.
pub(crate) fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Writes a whole response with a JSON body and closes the exchange.
pub(crate) fn respond(
    stream: &mut Stream,
    status: u16,
    body: &str,
    extra_headers: &str,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    };
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/events").unwrap();
        assert_eq!(u.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(u.path, "/events");
        let u = Url::parse("http://localhost:9").unwrap();
        assert_eq!(u.path, "/");
        let u = Url::parse("http://[::1]:7/x").unwrap();
        assert_eq!(u.addr, "[::1]:7".parse().unwrap());
        assert!(matches!(
            Url::parse("https://127.0.0.1:1/"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            Url::parse("http://example.com:80/"),
            Err(UrlError::BadHost { .. })
        ));
        assert!(Url::parse("http://127.7.0.1:80/").is_ok());
        assert!(Url::parse("http://[::ffff:127.0.0.1]:80/").is_ok());
        for remote in [
            "http://192.0.2.1:80/",
            "http://0.0.0.0:80/",
            "http://[::]:80/",
            "http://[2001:db8::1]:80/",
        ] {
            assert!(
                matches!(Url::parse(remote), Err(UrlError::NotLoopback { .. })),
                "{remote}"
            );
        }
        assert!(matches!(
            Url::parse("http://127.0.0.1/"),
            Err(UrlError::NoPort { .. })
        ));
        assert!(matches!(
            Url::parse("http://127.0.0.1:0/"),
            Err(UrlError::BadPort { .. })
        ));
        assert!(matches!(
            Url::parse("http://127.0.0.1:1/a\r\nX: y"),
            Err(UrlError::BadPath { .. })
        ));
    }

    #[test]
    fn heads() {
        let head = "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: b";
        assert_eq!(parse_status(head), Some(201));
        assert_eq!(header(head, "content-length"), Some("5"));
        assert_eq!(header(head, "x-a"), Some("b"));
        assert_eq!(parse_status("garbage"), None);
        assert_eq!(parse_status("HTTP/1.9 200 OK"), None);
        assert_eq!(parse_status("HTTP/1.1 +20 OK"), None);
    }

    #[test]
    fn content_lengths_are_digits_only() {
        assert_eq!(parse_content_length("12"), Some(12));
        for bad in ["+12", "-1", "1 2", "", "0x10", "99999999999999999999999"] {
            assert_eq!(parse_content_length(bad), None, "{bad:?}");
        }
    }
}
