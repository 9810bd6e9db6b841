//! hooktrack: trustworthy turn state from AI coding agents' lifecycle hooks.
//!
//! Data flows one way: a line of `events.ndjson` ([`read`], [`row`]) passes the
//! [`deliveries`] filter, is mapped by a [`provider`] adapter into the canonical
//! [`event`] vocabulary, and drives the [`correlate`] state machine, which projects a
//! [`posture`] and a turn ledger. [`pipeline`] wires these stages together without I/O.
//!
//! Live tracking: [`tail`] follows a growing `events.ndjson` by offset, [`channel`] judges
//! the hook channel's health from inputs and time, [`session`] puts them together behind
//! `poll(now)`, [`hub`] follows many sessions with one file watcher, and [`merge`] combines
//! a posture with the supervisor's terminal-derived facts. See `docs/live.md`.
//!
//! ```
//! use hooktrack::pipeline::{Fed, Pipeline};
//! use hooktrack::provider::ProviderChoice;
//!
//! let mut pipeline = Pipeline::new(ProviderChoice::Auto);
//! let lines = [
//!     r#"{"hook_event_name":"SessionStart","session_id":"session_1","client_type":"kimi_code_cli","source":"startup"}"#,
//!     r#"{"hook_event_name":"UserPromptSubmit","session_id":"session_1","client_type":"kimi_code_cli","prompt":[{"type":"text","text":"hi"}],"is_steer":false}"#,
//!     r#"{"hook_event_name":"TurnStarted","session_id":"session_1","client_type":"kimi_code_cli","turn_id":1,"origin_kind":"user"}"#,
//!     r#"{"hook_event_name":"Stop","session_id":"session_1","client_type":"kimi_code_cli","stop_hook_active":false}"#,
//! ];
//! for (i, line) in lines.iter().enumerate() {
//!     if let Fed::Event(step) = pipeline.feed_line(i as u64 + 1, line.as_bytes()) {
//!         for turn in &step.outcome.closed {
//!             assert_eq!(turn.result.name(), "success");
//!         }
//!     }
//! }
//! assert_eq!(pipeline.posture().last_turn.result.name(), "success");
//! ```

pub mod channel;
pub mod correlate;
pub mod deliveries;
pub mod diagnostics;
pub mod event;
pub mod hub;
pub mod merge;
pub mod output;
pub mod payload;
pub mod pipeline;
pub mod posture;
pub mod producer;
pub mod provider;
pub mod read;
pub mod row;
pub mod session;
pub mod store;
pub mod tail;
pub mod time;

pub use correlate::{Correlator, Observation, Outcome, TurnRecord};
pub use diagnostics::{Diag, Diagnostics, Note};
pub use event::{Event, TurnId};
pub use hub::{Hub, HubConfig, SessionId};
pub use pipeline::{Fed, Pipeline, Skip, Step};
pub use posture::{ChannelState, Phase, Posture, Presence, TurnResult};
pub use provider::{Provider, ProviderChoice};
pub use session::{Session, SessionConfig, Update};
pub use time::Timestamp;
