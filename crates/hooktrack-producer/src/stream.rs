//! One connection between an emitter and its collector: TCP on loopback, or the Unix
//! socket the collector keeps in its store (`collector-<port>.sock`, see
//! [`socket_path`]). The same HTTP exchange with the same bearer token runs over either;
//! the socket only spares both ends the loopback TCP stack (handshake, segments, the close)
//! on every hook of every turn.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("it is owned by uid {}, not {me}", meta.uid()));
    }
    Ok(true)
}

/// The uid of the process at the other end of a connected Unix socket (`SO_PEERCRED`).
fn peer_uid(fd: RawFd) -> io::Result<u32> {
    // SAFETY: an all-zero ucred is a valid value of the type.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt(2) filling a ucred of the size passed.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    if rc == 0 {
        Ok(cred.uid)
    } else {
        Err(io::Error::last_os_error())
    }
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
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        set_timeout(owned.as_raw_fd(), libc::SO_SNDTIMEO, limit)?;
        // SAFETY: an all-zero sockaddr_un is a valid value of the type.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (slot, &b) in addr.sun_path.iter_mut().zip(bytes) {
            *slot = b as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
        loop {
            // SAFETY: connect(2) on our descriptor with an initialised address of `len`
            // bytes (at most the struct's size: the path's length was checked).
            let rc = unsafe {
                libc::connect(
                    owned.as_raw_fd(),
                    (&raw const addr).cast(),
                    len as libc::socklen_t,
                )
            };
            if rc == 0 {
                // The listener must be this user's too: a socket file of ours can still
                // be bound by a process of another uid (before anything is sent).
                // SAFETY: geteuid(2) cannot fail.
                let me = unsafe { libc::geteuid() };
                let peer = peer_uid(owned.as_raw_fd())?;
                if peer != me {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("the peer is uid {peer}, not {me}"),
                    ));
                }
                return Ok(Self::Unix(UnixStream::from(owned)));
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
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

fn set_timeout(fd: RawFd, option: libc::c_int, limit: Duration) -> io::Result<()> {
    // A zero timeval means "no timeout": the shortest real limit is one microsecond.
    let limit = limit.max(Duration::from_micros(1));
    let tv = libc::timeval {
        tv_sec: libc::time_t::try_from(limit.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_usec: libc::suseconds_t::from(limit.subsec_micros()),
    };
    // SAFETY: setsockopt(2) with a timeval of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&raw const tv).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
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
