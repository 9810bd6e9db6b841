//! One connection between an emitter and its collector: TCP on loopback, or the Unix
//! socket the collector keeps in its store (`collector-<port>.sock`, see
//! [`socket_path`]). The same HTTP exchange with the same bearer token runs over either;
//! the socket only spares both ends the loopback TCP stack (handshake, segments, the close)
//! on every hook of every turn.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::io::Errno;
use rustix::net::sockopt::{Timeout, set_socket_timeout, socket_peercred};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType, connect, socket_with};

/// Where a request goes (and what its errors name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "{addr}"),
            Self::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Longest path a Unix socket address holds on Linux (`sun_path`, its NUL excluded).
pub const MAX_SOCKET_PATH: usize = 107;

/// The socket of the collector listening on `port` for the store in `dir`, or `None` when
/// the path is too long for a socket address (the collector then listens on TCP only).
///
/// The port is in the name so that the socket is the collector the URL names and no
/// other: a hook installed for an earlier collector of the same store (another port, maybe
/// another generation) finds no socket of its name, as it finds no listener on its port,
/// and appends its row itself.
pub fn socket_path(dir: &Path, port: u16) -> Option<PathBuf> {
    let path = dir.join(format!("collector-{port}.sock"));
    (path.as_os_str().len() <= MAX_SOCKET_PATH).then_some(path)
}

/// Whether the emitter may hand its token to the socket at `path`: `Ok(false)` when there
/// is none (the exchange goes over TCP, as always), `Ok(true)` for a socket owned by this
/// user that is not a symbolic link, `Err(why)` for anything else (a symlink, another
/// user's socket, a file of another kind: whoever planted it would receive the token).
pub fn socket_trust(path: &Path) -> Result<bool, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot inspect it: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Err("it is a symbolic link".into());
    }
    if !meta.file_type().is_socket() {
        return Err("it is not a socket".into());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!("it is owned by uid {}, not {me}", meta.uid()));
    }
    Ok(true)
}

/// A connected stream of either kind.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects to the Unix socket at `path`, waiting at most `limit` (a full listen queue
    /// makes a blocking connect wait; `SO_SNDTIMEO` bounds it, as Linux documents for
    /// `connect` on stream sockets). std's `UnixStream::connect` has no time limit.
    pub fn connect_unix(path: &Path, limit: Duration) -> io::Result<Self> {
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() > MAX_SOCKET_PATH || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "path too long for a socket address",
            ));
        }
        let fd = socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )?;
        // A zero timeout means none: the shortest real limit is one microsecond.
        let limit = limit.max(Duration::from_micros(1));
        set_socket_timeout(&fd, Timeout::Send, Some(limit))?;
        let addr = SocketAddrUnix::new(path)?;
        loop {
            match connect(&fd, &addr) {
                Ok(()) => break,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // The listener must be this user's too: a socket file of ours can still be bound
        // by a process of another uid (before anything is sent).
        let me = rustix::process::geteuid().as_raw();
        let peer = socket_peercred(&fd)?.uid.as_raw();
        if peer != me {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("the peer is uid {peer}, not {me}"),
            ));
        }
        Ok(Self::Unix(UnixStream::from(fd)))
    }

    pub fn set_read_timeout(&self, limit: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_read_timeout(limit),
            Self::Unix(s) => s.set_read_timeout(limit),
        }
    }

    pub fn set_write_timeout(&self, limit: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_write_timeout(limit),
            Self::Unix(s) => s.set_write_timeout(limit),
        }
    }

    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_nonblocking(nonblocking),
            Self::Unix(s) => s.set_nonblocking(nonblocking),
        }
    }

    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.shutdown(how),
            Self::Unix(s) => s.shutdown(how),
        }
    }

    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(match self {
            Self::Tcp(s) => Self::Tcp(s.try_clone()?),
            Self::Unix(s) => Self::Unix(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            Self::Unix(s) => s.flush(),
        }
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Tcp(s) => s.as_fd(),
            Self::Unix(s) => s.as_fd(),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Self::Tcp(s) => s.as_raw_fd(),
            Self::Unix(s) => s.as_raw_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_named_after_the_port_and_skipped_when_too_long() {
        assert_eq!(
            socket_path(Path::new("/tmp/s"), 4711),
            Some(PathBuf::from("/tmp/s/collector-4711.sock"))
        );
        let long = "d".repeat(MAX_SOCKET_PATH);
        assert_eq!(socket_path(Path::new(&long), 1), None);
        // The longest that fits: 107 bytes in all.
        let fits = "d".repeat(MAX_SOCKET_PATH - "/collector-1.sock".len());
        assert!(socket_path(Path::new(&fits), 1).is_some());
    }

    #[test]
    fn connecting_to_a_missing_or_dead_socket_fails_at_once() {
        let dir = std::env::temp_dir().join(format!("hooktrack-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("collector-1.sock");
        let _ = std::fs::remove_file(&path);
        let missing = Stream::connect_unix(&path, Duration::from_millis(100)).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        // A socket file nobody listens on (a collector killed without cleaning up).
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let dead = Stream::connect_unix(&path, Duration::from_millis(100)).unwrap_err();
        assert_eq!(dead.kind(), io::ErrorKind::ConnectionRefused);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
