//! Reads a tmux pane's screen (`tmux capture-pane -p -t %N`), the one place the live edge
//! starts a process. The tracker says when (`hooktrack_core::screen`: only while the
//! agent waits on the user, a few times a second at most); this reads, with a bound on
//! the time each wait for the output takes and on the bytes kept, and kills a `tmux` that
//! does not answer.

use std::io::Read;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use thiserror::Error;

/// The longest one wait for `tmux`'s output: a local server answers in milliseconds, and
/// the hub's thread waits meanwhile.
const WAIT_MS: i64 = 500;

/// A screen is a few kilobytes; more is cut (the dialog is in its last lines, but a pane
/// that large is no agent's).
const MAX_SCREEN_BYTES: usize = 1024 * 1024;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ScreenError {
    #[error("cannot run tmux capture-pane")]
    Spawn {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read tmux capture-pane's output")]
    Read {
        #[source]
        source: std::io::Error,
    },
    #[error("tmux capture-pane did not answer within {WAIT_MS} ms")]
    Timeout,
    #[error("tmux capture-pane failed ({status})")]
    Failed { status: std::process::ExitStatus },
}

/// The tmux server whose panes are read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TmuxServer {
    /// A socket name (`tmux -L`) or, with a `/`, a socket path (`tmux -S`); `None`: tmux's
    /// own choice (`$TMUX` inside tmux, else the default socket).
    pub socket: Option<String>,
}

impl TmuxServer {
    /// The text of pane `pane` (`%N`) now, as `tmux capture-pane -p` prints it.
    pub fn capture(&self, pane: &str) -> Result<String, ScreenError> {
        let mut command = Command::new("tmux");
        match &self.socket {
            Some(path) if path.contains('/') => command.args(["-S", path]),
            Some(name) => command.args(["-L", name]),
            None => &mut command,
        };
        capture(command.args(["capture-pane", "-p", "-t", pane]))
    }
}

fn capture(command: &mut Command) -> Result<String, ScreenError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| ScreenError::Spawn { source })?;
    let read = read_bounded(&mut child);
    if !matches!(read, Ok((_, true))) {
        // It may still run: never leave it behind.
        let _ = child.kill();
    }
    let status = child.wait().map_err(|source| ScreenError::Read { source });
    let (text, whole) = read?;
    let status = status?;
    if whole && !status.success() {
        return Err(ScreenError::Failed { status });
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Reads the child's output to its end (`true`) or to [`MAX_SCREEN_BYTES`] (`false`), each
/// wait for more bounded by [`WAIT_MS`].
fn read_bounded(child: &mut Child) -> Result<(Vec<u8>, bool), ScreenError> {
    let Some(out) = child.stdout.as_mut() else {
        return Ok((Vec::new(), true));
    };
    let mut text = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: WAIT_MS * 1_000_000,
    };
    loop {
        let ready = {
            let fd = out.as_fd();
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            poll(&mut fds, Some(&timeout))
        };
        match ready {
            Ok(0) => return Err(ScreenError::Timeout),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                return Err(ScreenError::Read {
                    source: std::io::Error::from(e),
                });
            }
        }
        let n = out
            .read(&mut buf)
            .map_err(|source| ScreenError::Read { source })?;
        if n == 0 {
            return Ok((text, true));
        }
        let room = MAX_SCREEN_BYTES.saturating_sub(text.len());
        text.extend_from_slice(&buf[..n.min(room)]);
        if text.len() >= MAX_SCREEN_BYTES {
            return Ok((text, false));
        }
    }
}
