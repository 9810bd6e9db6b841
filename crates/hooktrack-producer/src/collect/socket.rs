//! The collector's listening sockets: loopback TCP with deferred accepts, and the Unix
//! socket in the store ([`stream::socket_path`]), which goes with the collector.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use crate::stream;

/// Listens on the store's socket for `port`, 0600 (in the 0700 store), after removing any
/// socket an earlier collector of this store left: the caller holds `collector.lock`, so
/// none of them is live. `None` when the path is too long or the socket cannot be made;
/// the collector is then reached over TCP only, as before sockets.
pub(super) fn bind_socket(dir: &Path, port: u16) -> Option<(UnixListener, SocketFile)> {
    crate::store::leftover::remove_sockets(dir);
    let path = stream::socket_path(dir, port)?;
    let listener = UnixListener::bind(&path).ok()?;
    if std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).is_err() {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    Some((listener, SocketFile(path)))
}

/// The collector's socket file, removed when the collector is done with it: at the end of
/// [`Collector::run`](super::Collector::run), or when a bound collector is dropped
/// without running.
pub(super) struct SocketFile(pub(super) PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Asks the kernel to hand over a connection only once its first bytes have arrived
/// (Linux's `TCP_DEFER_ACCEPT`), so that the accept thread finds an emitter's request
/// already there and can serve it inline. Without it the accept returns as soon as the
/// handshake is done, nearly always before the request, and every connection would take
/// the thread path. A connection that sends nothing is still handed over once the
/// deferral (about a second) has passed. Best effort: where it is missing or refused, the
/// collector works as before.
pub(super) fn defer_accept(listener: &TcpListener) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let seconds: libc::c_int = 1;
        // SAFETY: setsockopt(2) on the listener's descriptor, open while `listener` is
        // borrowed, with a pointer to a live c_int and that c_int's size, which is what
        // TCP_DEFER_ACCEPT reads; the kernel only reads the value. rustix has no call for
        // this option.
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
