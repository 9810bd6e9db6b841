//! Where a session's store lives, and the two metadata records published beside
//! `events.ndjson` (contract section 2). Parsing is pure; reading the files is the
//! caller's business (hooktrack-live's `session`).
//!
//! ```text
//! <session_root>/hook-observation/<provider>/events.ndjson
//!                                           /collector.json   {pid, port, generation, status, ...}
//!                                           /channel.json     {provider, generation, install: {ok, detail}, state?}
//!                                           /emitter.seq      the emitter_seq counter and the append lock
//!                                           /emit.log         the emitter's failures
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::posture::ChannelState;

pub const OBSERVATION_DIR: &str = "hook-observation";
pub const EVENTS_FILE: &str = "events.ndjson";
pub const COLLECTOR_FILE: &str = "collector.json";
pub const CHANNEL_FILE: &str = "channel.json";
/// The emitter_seq counter; its `flock` is also the store's append lock.
pub const COUNTER_FILE: &str = "emitter.seq";
/// The emitter's failures (it never writes to stdout).
pub const EMIT_LOG_FILE: &str = "emit.log";
/// Held (an exclusive `flock`) by the one collector serving the store.
pub const COLLECTOR_LOCK_FILE: &str = "collector.lock";
/// The provider directory assumed when a session root has none yet (the reference
/// provider; a fresh Kimi TUI creates its store lazily, after the first prompt).
pub const DEFAULT_PROVIDER_DIR: &str = "kimi";

/// The environment variable tmux sets in every pane (`%3`); the emitter records it in the
/// row as `tmux_pane`.
pub const TMUX_PANE_ENV: &str = "TMUX_PANE";

/// True for a tmux pane id as tmux writes it into `$TMUX_PANE`: `%` and 1 to 10 digits.
/// Only such values are recorded in rows and used as `tmux -t` targets from rows.
pub fn is_tmux_pane_id(text: &str) -> bool {
    text.strip_prefix('%')
        .is_some_and(|d| (1..=10).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The files of one store. The directory may not exist yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorePaths {
    pub dir: PathBuf,
    pub events: PathBuf,
    pub collector: PathBuf,
    pub channel: PathBuf,
    pub counter: PathBuf,
    pub emit_log: PathBuf,
    pub collector_lock: PathBuf,
}

impl StorePaths {
    /// The store in `dir` (the directory holding `events.ndjson`).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Self {
            events: dir.join(EVENTS_FILE),
            collector: dir.join(COLLECTOR_FILE),
            channel: dir.join(CHANNEL_FILE),
            counter: dir.join(COUNTER_FILE),
            emit_log: dir.join(EMIT_LOG_FILE),
            collector_lock: dir.join(COLLECTOR_LOCK_FILE),
            dir,
        }
    }

    /// The store of an events file: the metadata records are its siblings.
    pub fn for_events_file(events: impl Into<PathBuf>) -> Self {
        let events = events.into();
        let dir = match events.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Self {
            collector: dir.join(COLLECTOR_FILE),
            channel: dir.join(CHANNEL_FILE),
            counter: dir.join(COUNTER_FILE),
            emit_log: dir.join(EMIT_LOG_FILE),
            collector_lock: dir.join(COLLECTOR_LOCK_FILE),
            events,
            dir,
        }
    }

    /// The store of `agent` under a session root.
    pub fn for_agent(root: &Path, agent: crate::agent::Agent) -> Self {
        Self::for_provider(root, agent.store_name())
    }

    /// The store of a provider directory name under a session root.
    pub fn for_provider(root: &Path, provider: &str) -> Self {
        Self::in_dir(root.join(OBSERVATION_DIR).join(provider))
    }
}

/// `collector.json`: what a reader needs to find and judge the collector; no secret. The
/// collector writes every field; a reader never trusts the file, so each is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectorRecord {
    pub pid: Option<u32>,
    pub port: Option<u16>,
    pub generation: Option<u64>,
    pub status: Option<CollectorState>,
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
}

/// `collector.json`'s `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectorState {
    Running,
    Stopped,
    /// A status no collector writes.
    #[serde(other)]
    Unknown,
}

impl CollectorRecord {
    pub fn stopped(&self) -> bool {
        self.status == Some(CollectorState::Stopped)
    }
}

/// `channel.json`: the installer's verdict and any state a producer publishes; no secret.
/// Keys this type does not know are kept (`rest`), so one writer never drops another's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallRecord>,
    /// A state published by a producer: a terminal policy state, `error`, `stopped`, or
    /// `unavailable` (e.g. a remote store). A name this reader does not know is kept as
    /// written and honoured as nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<PublishedState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// `channel.json`'s `state`: a channel state, or a name kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PublishedState {
    Known(ChannelState),
    Other(String),
}

/// `channel.json`'s `install`: did the observer install pass its read-back check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRecord {
    pub ok: bool,
    pub detail: Option<String>,
}

impl ChannelRecord {
    /// The published state, if it is one this tracker honours (`active` is never taken
    /// from a file: only events make a channel active).
    pub fn published_state(&self) -> Option<ChannelState> {
        match self.state.as_ref()? {
            PublishedState::Known(ChannelState::Active) | PublishedState::Other(_) => None,
            PublishedState::Known(state) => Some(*state),
        }
    }

    /// The install failure's detail, if the install failed its read-back check.
    pub fn install_failure(&self) -> Option<&str> {
        match &self.install {
            Some(InstallRecord { ok: false, detail }) => {
                Some(detail.as_deref().unwrap_or("install failed"))
            }
            _ => None,
        }
    }
}

/// Why a metadata record could not be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordError {
    #[error("{file} is not a valid record")]
    Parse {
        file: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

pub fn parse_collector(bytes: &[u8]) -> Result<CollectorRecord, RecordError> {
    serde_json::from_slice(bytes).map_err(|source| RecordError::Parse {
        file: COLLECTOR_FILE,
        source,
    })
}

pub fn parse_channel(bytes: &[u8]) -> Result<ChannelRecord, RecordError> {
    serde_json::from_slice(bytes).map_err(|source| RecordError::Parse {
        file: CHANNEL_FILE,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_what_they_know_and_ignore_the_rest() {
        let c = parse_collector(
            br#"{"pid":12,"port":4000,"generation":2,"status":"stopped","extra":[1]}"#,
        )
        .unwrap();
        assert!(c.stopped());
        assert_eq!(c.generation, Some(2));
        let ch = parse_channel(
            br#"{"provider":"kimi","generation":1,"install":{"ok":false,"detail":"unknown key"},"state":"untrusted_workspace"}"#,
        )
        .unwrap();
        assert_eq!(ch.install_failure(), Some("unknown key"));
        assert_eq!(ch.published_state(), Some(ChannelState::UntrustedWorkspace));
        assert!(parse_channel(b"{\"generation\":\"x\"}").is_err());
    }

    #[test]
    fn active_is_never_published() {
        let ch = parse_channel(br#"{"state":"active"}"#).unwrap();
        assert_eq!(ch.published_state(), None);
    }
}
