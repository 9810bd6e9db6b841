//! Channel health (contract section 6) as a pure state machine of inputs and time.
//!
//! The inputs are what the session sees (an event arrived, the store read or failed, the
//! metadata records said something) and what the supervisor tells it (it sent a prompt, the
//! terminal changed). Every input and every question carries `now`; nothing here reads a
//! clock or a file, so a fake clock drives it in tests exactly as a real one does live.
//!
//! Two layers decide the state:
//! - the **flow** of events, a private state machine: `Waiting` (no event yet) → `Live`
//!   (events arriving) ⇄ `Stale` (the terminal changed more than `stale_after` after the
//!   last event);
//! - **overlays** that win over the flow: published policy states, a stopped collector, a
//!   published error, a failing read, a failed install. Records of an older generation than
//!   the newest event's are outdated and ignored.

use serde::Serialize;

use crate::posture::ChannelState;
use crate::store::{ChannelRecord, CollectorRecord};
use crate::time::Timestamp;

/// The thresholds, in milliseconds. Every one is configurable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// How long after the first prompt a channel with no event yet is judged silent.
    pub startup_grace_ms: i64,
    /// How long without an event, while the terminal keeps changing, makes `stale`.
    pub stale_after_ms: i64,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            startup_grace_ms: 20_000,
            stale_after_ms: 30_000,
        }
    }
}

/// The state and, in words, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelStatus {
    pub state: ChannelState,
    pub detail: String,
}

impl ChannelStatus {
    fn new(state: ChannelState, detail: impl Into<String>) -> Self {
        Self {
            state,
            detail: detail.into(),
        }
    }
}

/// The flow of events. Transitions only through [`Channel::on_event`],
/// [`Channel::on_prompt_sent`] and [`Channel::on_terminal_changed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// No event yet; `first_prompt` is when the supervisor first sent a prompt.
    Waiting { first_prompt: Option<Timestamp> },
    /// Events are arriving.
    Live { last_event: Timestamp },
    /// Was live; the terminal changed at `noticed`, more than `stale_after` after the last
    /// event.
    Stale {
        last_event: Timestamp,
        noticed: Timestamp,
    },
}

#[derive(Clone, Debug)]
pub struct Channel {
    config: ChannelConfig,
    flow: Flow,
    /// The newest generation seen on an event.
    generation: Option<u64>,
    /// The store's last read failure, cleared by the next healthy read.
    read_failure: Option<(Timestamp, String)>,
    collector: Option<CollectorRecord>,
    record: Option<ChannelRecord>,
}

impl Channel {
    pub fn new(config: ChannelConfig) -> Self {
        Self {
            config,
            flow: Flow::Waiting { first_prompt: None },
            generation: None,
            read_failure: None,
            collector: None,
            record: None,
        }
    }

    pub fn config(&self) -> ChannelConfig {
        self.config
    }

    /// A current-generation event arrived (the caller drops duplicates and stale rows).
    pub fn on_event(&mut self, now: Timestamp, generation: Option<u64>) {
        self.flow = match self.flow {
            Flow::Waiting { .. } | Flow::Live { .. } | Flow::Stale { .. } => {
                Flow::Live { last_event: now }
            }
        };
        if let Some(g) = generation {
            self.generation = Some(self.generation.map_or(g, |cur| cur.max(g)));
        }
    }

    /// The supervisor sent a prompt. Only the first one before any event matters: startup
    /// silence is judged from it, never from the launch (a fresh TUI creates its session
    /// lazily, on the first prompt).
    pub fn on_prompt_sent(&mut self, now: Timestamp) {
        if let Flow::Waiting { first_prompt: None } = self.flow {
            self.flow = Flow::Waiting {
                first_prompt: Some(now),
            };
        }
    }

    /// The supervisor saw the terminal change. A change more than `stale_after` after the
    /// last event makes a live channel stale: the terminal is busy and the hooks are quiet.
    /// (A repaint right after an event, like the answer rendered after `Stop`, does not.)
    pub fn on_terminal_changed(&mut self, now: Timestamp) {
        if let Flow::Live { last_event } = self.flow
            && elapsed(last_event, now) > self.config.stale_after_ms
        {
            self.flow = Flow::Stale {
                last_event,
                noticed: now,
            };
        }
    }

    /// Reading the store failed.
    pub fn on_read_failed(&mut self, now: Timestamp, detail: impl Into<String>) {
        self.read_failure = Some((now, detail.into()));
    }

    /// The store was read (or is missing, which is "no events yet"): a failure clears.
    pub fn on_read_ok(&mut self) {
        self.read_failure = None;
    }

    /// `collector.json` was (re)read. A missing file leaves the last record in force.
    pub fn on_collector(&mut self, record: CollectorRecord) {
        self.collector = Some(record);
    }

    /// `channel.json` was (re)read.
    pub fn on_record(&mut self, record: ChannelRecord) {
        self.record = Some(record);
    }

    /// The last event's time, if any.
    pub fn last_event(&self) -> Option<Timestamp> {
        match self.flow {
            Flow::Waiting { .. } => None,
            Flow::Live { last_event } | Flow::Stale { last_event, .. } => Some(last_event),
        }
    }

    /// True when a prompt was sent more than `startup_grace_ms` before `now` and no event
    /// has arrived since: the hooks are silent (the flow's `unavailable` at `now`).
    pub fn startup_silent(&self, now: Timestamp) -> bool {
        matches!(self.flow, Flow::Waiting { first_prompt: Some(at) }
            if elapsed(at, now) > self.config.startup_grace_ms)
    }

    /// The state at `now`.
    pub fn status(&self, now: Timestamp) -> ChannelStatus {
        self.overlay().unwrap_or_else(|| self.flow_status(now))
    }

    /// A record applies unless an event of a newer generation has been seen since.
    fn applies(&self, generation: Option<u64>) -> bool {
        match (generation, self.generation) {
            (Some(record), Some(seen)) => record >= seen,
            _ => true,
        }
    }

    fn overlay(&self) -> Option<ChannelStatus> {
        let record = self.record.as_ref().filter(|r| self.applies(r.generation));
        let published = record.and_then(|r| r.published_state().map(|s| (s, r)));
        let says = |r: &ChannelRecord, default: &str| {
            format!(
                "channel.json: {}",
                r.detail.as_deref().unwrap_or(default).trim()
            )
        };
        if let Some((
            state @ (ChannelState::DisabledByPolicy | ChannelState::UntrustedWorkspace),
            r,
        )) = published
        {
            return Some(ChannelStatus::new(state, says(r, "policy state")));
        }
        if let Some(c) = self
            .collector
            .as_ref()
            .filter(|c| c.stopped() && self.applies(c.generation))
        {
            let at = c.stopped_at.as_deref().unwrap_or("an unknown time");
            return Some(ChannelStatus::new(
                ChannelState::Stopped,
                format!("collector stopped at {at}"),
            ));
        }
        match published {
            Some((ChannelState::Stopped, r)) => {
                return Some(ChannelStatus::new(
                    ChannelState::Stopped,
                    says(r, "stopped"),
                ));
            }
            Some((ChannelState::Error, r)) => {
                return Some(ChannelStatus::new(ChannelState::Error, says(r, "error")));
            }
            _ => {}
        }
        if let Some((_, detail)) = &self.read_failure {
            return Some(ChannelStatus::new(ChannelState::Error, detail.clone()));
        }
        if let Some(detail) = record.and_then(ChannelRecord::install_failure) {
            return Some(ChannelStatus::new(
                ChannelState::Unavailable,
                format!("install failed: {detail}"),
            ));
        }
        if let Some((ChannelState::Unavailable, r)) = published {
            return Some(ChannelStatus::new(
                ChannelState::Unavailable,
                says(r, "unavailable"),
            ));
        }
        None
    }

    fn flow_status(&self, now: Timestamp) -> ChannelStatus {
        match self.flow {
            Flow::Waiting { first_prompt: None } => {
                ChannelStatus::new(ChannelState::Unavailable, "no event yet")
            }
            Flow::Waiting {
                first_prompt: Some(_),
            } => {
                // The detail names the threshold, not the time waited, so the status
                // stays equal (and no update is sent) while the silence goes on.
                if self.startup_silent(now) {
                    ChannelStatus::new(
                        ChannelState::Unavailable,
                        format!(
                            "startup silence: no event within {} of the first prompt",
                            seconds(self.config.startup_grace_ms)
                        ),
                    )
                } else {
                    ChannelStatus::new(
                        ChannelState::Unavailable,
                        "no event yet (prompt sent, within the startup grace)",
                    )
                }
            }
            Flow::Live { .. } => ChannelStatus::new(ChannelState::Active, "events arriving"),
            Flow::Stale {
                last_event,
                noticed,
            } => ChannelStatus::new(
                ChannelState::Stale,
                format!(
                    "no event for {} while the terminal kept changing",
                    seconds(elapsed(last_event, noticed))
                ),
            ),
        }
    }
}

/// Milliseconds from `from` to `to`, never negative (a clock stepping back is no time).
fn elapsed(from: Timestamp, to: Timestamp) -> i64 {
    (to.as_millis() - from.as_millis()).max(0)
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}
