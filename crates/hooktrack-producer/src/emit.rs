//! `hooktrack emit`: the hook command an agent CLI runs on every event.
//!
//! 1. read the hook payload from stdin (at most [`MAX_PAYLOAD_BYTES`]);
//! 2. take `emitter_seq` under the exclusive lock on the store's counter;
//! 3. POST the delivery to the collector with the bearer token, bounded by [`Limits`]:
//!    over the collector's Unix socket in the store when it listens there
//!    ([`crate::stream::socket_path`]), else over TCP to the URL;
//! 4. on any failure (refused, timed out, non-2xx, no token), append a `command_fallback`
//!    row to `events.ndjson` under the same lock.
//!
//! Nothing here returns an error to the caller: every problem is collected in the
//! [`EmitReport`] and written to `emit.log` in the store (see [`log`] for where it goes
//! when the store cannot take it), because the hook must always exit 0 and never write to
//! stdout. No delivery vanishes without trace: a missing store directory is created, a
//! store lock held by a stuck process is given up on after a bounded wait (the row is
//! then appended without it), and when the watchdog ends the emitter it records a row
//! with the event name and the cause ([`watchdog`]'s signal handler, or its stand-in
//! thread where the timer cannot be armed: the same code).

pub mod argv;
pub mod default_store;
pub mod log;
pub mod parent;
pub mod watchdog;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::value::RawValue;
use thiserror::Error;

use crate::http::{self, Limits, PostError, Url};
use crate::store::{self, MAX_PAYLOAD_BYTES, StoreError, StorePaths};
use hooktrack_core::agent::Agent;
use hooktrack_core::delivery::{Delivery, hook_event_name};
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::envelope::{Via, clip_name};

/// Limits of the HTTP attempt: loopback connects at once or is refused, so a slow connect
/// means trouble; the whole exchange stays far inside Kimi's 5 s hook timeout.
pub const DEFAULT_LIMITS: Limits = Limits {
    connect: Duration::from_millis(500),
    total: Duration::from_millis(1500),
};

/// After this long the emitter gives up whatever it is doing and exits 0 (enforced by the
/// binary with [`watchdog`]'s signal timer).
pub const HARD_DEADLINE: Duration = Duration::from_millis(3000);

/// How much oversized stdin is read and thrown away (so the agent's write does not fail).
const DRAIN_LIMIT: u64 = 64 * 1024 * 1024;

/// What one emitter invocation knows from its argv and environment.
#[derive(Clone, Debug)]
pub struct EmitConfig {
    /// The collector; `None` means "append the fallback row directly".
    pub url: Option<Url>,
    /// The store's artifact directory.
    pub dir: PathBuf,
    /// Named in every row (by its store name).
    pub provider: Agent,
    pub generation: u64,
    /// The event the hook was configured for; else the payload's `hook_event_name`.
    pub event: Option<String>,
    pub token: Option<String>,
    pub limits: Limits,
    /// The agent's tmux pane (`$TMUX_PANE`), recorded in the row when it is a pane id.
    pub tmux_pane: Option<String>,
    /// The agent's process id, recorded in every row: a default store's rows say who to
    /// watch (no launcher watches that agent), and in every store a row that names
    /// another process than its session's agent is known for a tool step's.
    pub agent_pid: Option<u32>,
    /// The process that ran this emitter ([`parent::emitter_parent`]), in every row.
    pub emitter_parent: Option<hooktrack_core::envelope::EmitterParent>,
    /// A store no collector serves (the per-user default store): `events.ndjson` is
    /// rotated past this many bytes, and the missing URL is expected, not a problem.
    pub rotate_at: Option<u64>,
}

/// Something that went wrong in one invocation. None of these stops the emitter.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EmitError {
    #[error("bad arguments: {detail}")]
    Args { detail: String },
    #[error("cannot read the hook payload from stdin")]
    Stdin {
        #[source]
        source: io::Error,
    },
    #[error("the hook payload is empty")]
    EmptyPayload,
    #[error("the hook payload of {len} bytes is over the {MAX_PAYLOAD_BYTES}-byte limit")]
    PayloadTooLarge { len: u64 },
    #[error("the hook payload is not JSON")]
    PayloadNotJson {
        #[source]
        source: serde_json::Error,
    },
    #[error("no collector URL given")]
    NoUrl,
    #[error("bad collector URL")]
    BadUrl {
        #[source]
        source: crate::http::UrlError,
    },
    #[error("${} is not set", store::TOKEN_ENV)]
    NoToken,
    #[error("${} holds characters an HTTP header cannot carry", store::TOKEN_ENV)]
    BadToken,
    #[error("cannot prepare the store directory; nothing is written there")]
    StoreDir {
        #[source]
        source: StoreError,
    },
    #[error(
        "an empty --dir names no store (it would be the agent's working directory); nothing is written there"
    )]
    EmptyDir,
    #[error("refusing the collector socket {path}: {reason}; delivering over TCP")]
    SocketUntrusted { path: PathBuf, reason: String },
    #[error("no store to append the fallback row to; delivery lost")]
    NoStore,
    #[error(
        "moved {} aside to {}: it was uid {uid}'s, and hooktrack's folders are this user's alone",
        path.display(),
        to.display()
    )]
    MovedAside {
        path: PathBuf,
        to: PathBuf,
        uid: u32,
    },
    #[error("the store lock is stuck; the fallback row was appended without it")]
    AppendedUnlocked {
        #[source]
        source: StoreError,
    },
    #[error("cannot take an emitter_seq")]
    Seq {
        #[source]
        source: StoreError,
    },
    #[error("delivery over HTTP failed")]
    Post {
        #[source]
        source: PostError,
    },
    #[error("cannot append the fallback row")]
    Fallback {
        #[source]
        source: StoreError,
    },
    #[error("the watchdog timer could not be armed; a watchdog thread stands in")]
    Watchdog {
        #[source]
        source: watchdog::WatchdogError,
    },
}

/// How the delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    Http,
    Fallback,
    /// Neither path worked: the delivery is lost (and logged).
    Lost,
}

/// What one invocation did.
#[derive(Debug)]
pub struct EmitReport {
    pub emitter_seq: Option<u64>,
    pub event: Option<String>,
    pub delivered: Delivered,
    pub problems: Vec<EmitError>,
    /// The store directory was refused: nothing was written there, and the problems go
    /// to the per-user log.
    pub store_refused: bool,
}

impl EmitReport {
    fn new() -> Self {
        Self {
            emitter_seq: None,
            event: None,
            delivered: Delivered::Lost,
            problems: Vec::new(),
            store_refused: false,
        }
    }
}

/// One hook delivery, start to end. `problems` found while parsing argv come in first.
pub fn emit(config: &EmitConfig, stdin: impl Read, mut report: EmitReport) -> EmitReport {
    let store = StorePaths::in_dir(&config.dir);
    // A refused directory is written nowhere: no counter, no socket, no fallback row, no
    // `emit.log` (the problems go to the per-user log).
    if config.dir.as_os_str().is_empty() {
        report.problems.push(EmitError::EmptyDir);
        report.store_refused = true;
    } else if let Err(source) = store::create_dir(&store) {
        report.problems.push(EmitError::StoreDir { source });
        report.store_refused = true;
    }
    let (bytes, mut payload_error) = match read_payload(stdin) {
        Ok(bytes) => (Some(bytes), None),
        Err(e) => {
            let text = e.to_string();
            report.problems.push(e);
            (None, Some(text))
        }
    };
    let payload: Option<&RawValue> = match &bytes {
        Some(b) if b.iter().all(u8::is_ascii_whitespace) => {
            payload_error = Some(EmitError::EmptyPayload.to_string());
            report.problems.push(EmitError::EmptyPayload);
            None
        }
        Some(b) => match serde_json::from_slice::<&RawValue>(b) {
            Ok(raw) => Some(raw),
            Err(e) => {
                let err = EmitError::PayloadNotJson { source: e };
                payload_error = Some(error_chain(&err));
                report.problems.push(err);
                None
            }
        },
        None => None,
    };
    let event: Option<String> = config.event.clone().or_else(|| {
        payload
            .and_then(hook_event_name)
            .map(std::borrow::Cow::into_owned)
    });
    let event = event.map(|e| clip_name(&e).to_owned());
    report.event.clone_from(&event);
    let mut delivery = Delivery {
        provider: config.provider,
        generation: config.generation,
        emitter_seq: None,
        event: event.as_deref().map(Into::into),
        payload,
        payload_error: payload_error.as_deref().map(Into::into),
        tmux_pane: config
            .tmux_pane
            .as_deref()
            .filter(|p| hooktrack_core::store::is_tmux_pane_id(p))
            .map(Into::into),
        agent_pid: config.agent_pid,
        emitter_parent: config.emitter_parent.clone(),
    };

    // emitter_seq, under the lock. Without it the delivery still goes out, unkeyed.
    let opened = (!report.store_refused).then(|| store::open_counter(&store));
    let counter = match opened {
        None => None,
        Some(Ok(counter)) => match store::take_emitter_seq(&store, &counter) {
            Ok(seq) => {
                report.emitter_seq = Some(seq);
                Some(counter)
            }
            Err(source) => {
                report.problems.push(EmitError::Seq { source });
                Some(counter)
            }
        },
        Some(Err(source)) => {
            report.problems.push(EmitError::Seq { source });
            None
        }
    };
    delivery.emitter_seq = report.emitter_seq;

    // HTTP first.
    let http_result = match (&config.url, &config.token) {
        // A default store has no collector: its rows are always the emitter's own.
        (None, _) if config.rotate_at.is_some() => Err(None),
        (None, _) => Err(Some(EmitError::NoUrl)),
        (Some(_), None) => Err(Some(EmitError::NoToken)),
        (Some(_), Some(token)) if !token.bytes().all(|b| b.is_ascii_graphic()) => {
            Err(Some(EmitError::BadToken))
        }
        (Some(url), Some(token)) => {
            let body = delivery.render();
            // The collector's socket in the store, named after the URL's port: the same
            // collector, without the loopback TCP stack.
            // Only a socket of this user's, not a symlink, is given the token (and the
            // peer is checked again once connected: `Stream::connect_unix`).
            let socket = crate::stream::socket_path(&config.dir, url.addr.port())
                .filter(|_| !report.store_refused)
                .filter(|path| match crate::stream::socket_trust(path) {
                    Ok(trusted) => trusted,
                    Err(reason) => {
                        report.problems.push(EmitError::SocketUntrusted {
                            path: path.clone(),
                            reason,
                        });
                        false
                    }
                });
            http::post_json(url, socket.as_deref(), token, &body, config.limits)
                .map(|_| ())
                .map_err(|source| Some(EmitError::Post { source }))
        }
    };
    match http_result {
        Ok(()) => {
            report.delivered = Delivered::Http;
            return report;
        }
        Err(e) => report.problems.extend(e),
    }

    if report.store_refused {
        report.problems.push(EmitError::NoStore);
        return report;
    }
    // Fallback: append the row ourselves, under the same lock.
    let row = delivery
        .envelope(Via::CommandFallback, None, store::now())
        .render();
    let appended = (|| {
        let counter = match counter {
            Some(c) => c,
            None => store::open_counter(&store)?,
        };
        if let Some(limit) = config.rotate_at {
            store::rotate_events(&store, &counter, limit)?;
        }
        // Following a rotation another hook made since the file was opened.
        let mut events = store::open_events(&store)?;
        store::append_following(&store, &mut events, &counter, &row)
    })();
    match appended {
        Ok(()) => report.delivered = Delivered::Fallback,
        Err(source @ StoreError::LockTimeout { .. }) => {
            report.problems.push(EmitError::AppendedUnlocked { source });
            match store::append_unlocked(&store, &row) {
                Ok(()) => report.delivered = Delivered::Fallback,
                Err(source) => report.problems.push(EmitError::Fallback { source }),
            }
        }
        Err(source) => report.problems.push(EmitError::Fallback { source }),
    }
    report
}

/// Starts a report with the problems found while reading argv.
pub fn report_with(problems: Vec<EmitError>) -> EmitReport {
    let mut report = EmitReport::new();
    report.problems = problems;
    report
}

/// Reads stdin up to the payload limit; past it, reads on (bounded) and discards.
fn read_payload(stdin: impl Read) -> Result<Vec<u8>, EmitError> {
    let mut buf = Vec::with_capacity(4096);
    let mut limited = stdin.take(MAX_PAYLOAD_BYTES as u64 + 1);
    limited
        .read_to_end(&mut buf)
        .map_err(|source| EmitError::Stdin { source })?;
    if buf.len() > MAX_PAYLOAD_BYTES {
        let mut rest = limited.into_inner().take(DRAIN_LIMIT);
        let drained = io::copy(&mut rest, &mut io::sink()).unwrap_or(0);
        return Err(EmitError::PayloadTooLarge {
            len: buf.len() as u64 + drained,
        });
    }
    Ok(buf)
}

/// Appends one line per problem to `emit.log` (0600), best effort.
pub fn log_report(dir: &Path, report: &EmitReport) {
    if report.problems.is_empty() {
        return;
    }
    let mut text = String::new();
    let head = format!(
        "{} pid={} event={} emitter_seq={} delivered={}",
        store::now(),
        std::process::id(),
        report.event.as_deref().unwrap_or("-"),
        report
            .emitter_seq
            .map_or_else(|| "-".to_owned(), |s| s.to_string()),
        match report.delivered {
            Delivered::Http => "http",
            Delivered::Fallback => "command_fallback",
            Delivered::Lost => "LOST",
        }
    );
    for problem in &report.problems {
        text.push_str(&head);
        text.push_str(": ");
        text.push_str(&hooktrack_core::diagnostics::error_chain(problem));
        text.push('\n');
    }
    if report.store_refused {
        log::log_text_user(&text);
    } else {
        log_text(dir, &text);
    }
}

/// Appends `text` to `emit.log` (or wherever [`log::log_text`] finds room), best effort.
pub fn log_text(dir: &Path, text: &str) {
    log::log_text(dir, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_stdin_is_drained_and_measured() {
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 10];
        match read_payload(&big[..]) {
            Err(EmitError::PayloadTooLarge { len }) => assert_eq!(len, big.len() as u64),
            other => panic!("{other:?}"),
        }
    }
}
