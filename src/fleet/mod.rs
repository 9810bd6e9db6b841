//! The fleet: every host's sessions in one view, carried by NATS JetStream (contract
//! section 12, "what leaves the host"; `docs/fleet.md`).
//!
//! A [`Publisher`] takes each session's update as `watch --ndjson` prints it, adds the
//! host's name, makes it safe ([`crate::safe_text`]), and puts it once, under the key
//! `<host>.<agent>.<session>` of the key-value bucket `hooktrack` (history 1, entries age
//! out after a TTL: the current state of every session, so a dead host's sessions
//! disappear). That put is the update's one persisted write: its subject,
//! `$KV.hooktrack.<host>.<agent>.<session>`, is what viewers follow (the bucket's own
//! stream, `KV_hooktrack`), and what a host's NATS user may publish on. It never blocks the watch that feeds it:
//! updates wait in a bounded backlog (the oldest dropped and counted) while the server is
//! away, puts go out without waiting for the ones before them to be acknowledged (a
//! bounded number in flight), and the latest state of every session is put again on
//! every reconnect.
//!
//! A [`Viewer`] reads the bucket: the current state of every session at once, then every
//! change, and each host's heartbeat (a host whose heartbeat stopped is shown stale).
//!
//! What goes over the wire is what `watch --ndjson` prints: posture, phase, tool names,
//! results, times, agent, host, pane; no prompt, no tool input or output (hooktrack reads
//! none into an update), and never hooktrack's bearer token (it stays in the store's
//! `collector.json`). Who may publish and read is the NATS server's business (users,
//! nkeys, creds files, TLS); each host takes its replies under its own inbox prefix
//! (`_INBOX.host.<host>`), the viewers under `_INBOX.view`, so a user may be allowed its
//! own replies alone. A publisher whose writes fail (refused, or the server away) tries
//! again after [`retry_delay`], doubling to [`RETRY_CAP`], unless the client reconnects.
//!
//! The bucket keeps one value per key: an update a later one of the same session replaced
//! before a viewer read it is not read, and counted ([`Seen::Skipped`]).
//!
//! The async runtime `async-nats` needs (tokio) runs on one thread per publisher or
//! viewer, in this module only; the rest of hooktrack stays synchronous.

mod names;
mod publish;
mod server;
mod view;

pub use names::{decode_token, encode_token, session_key};
pub use publish::{PublishConfig, PublishStats, Publisher, RETRY_CAP, retry_delay};
pub use server::{FleetError, NatsAuth, NatsServer, NatsTls};
pub use view::{Seen, ViewConfig, Viewer};

/// The key-value bucket that keeps each session's latest state.
pub const BUCKET: &str = "hooktrack";
/// The bucket's key prefix of the hosts' heartbeats (`_host.<host>`).
pub const HEARTBEAT_PREFIX: &str = "_host";
