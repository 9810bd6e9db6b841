//! hooktrack's pure core: no clock, no file, no socket, no environment.
//!
//! Data flows one way: a line of `events.ndjson` ([`read`], [`row`]) passes the
//! delivery filter (`deliveries.rs`), is mapped by a [`provider`] adapter into the canonical
//! [`event`] vocabulary, and drives the [`correlate`] state machine, which projects a
//! [`posture`] and a turn ledger. [`pipeline`] wires these stages together.
//!
//! Beside the pipeline: [`channel`] judges the hook channel's health from inputs and
//! time, [`merge`] combines a posture with a supervisor's terminal facts, and [`store`] is
//! the on-disk contract both edges share (paths, the envelope row, the metadata records).
//! Where the hooks are silent, [`transcript`] classifies the entries of the transcript a
//! payload names and the pipeline takes the agent process's end; every event carries its
//! [`source`], and [`provenance`] says which source, event and line set each posture fact.

pub mod agent;
pub mod agents;
pub mod channel;
pub mod correlate;
mod deliveries;
pub mod delivery;
pub mod diagnostics;
pub mod envelope;
pub mod event;
pub mod follow;
pub mod hold;
pub mod merge;
pub mod payload;
pub mod pipeline;
pub mod posture;
pub mod provenance;
pub mod provider;
pub mod read;
pub mod row;
pub mod screen;
pub mod sessions;
pub mod source;
pub mod store;
pub mod time;
pub mod tool_argument;
pub mod tracker;
pub mod transcript;
