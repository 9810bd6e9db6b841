//! The producer side: getting hook payloads into `events.ndjson` (contract sections 2, 7
//! and 8).
//!
//! ```text
//! agent CLI --(hook: JSON on stdin)--> emit --HTTP--> collect --append--> events.ndjson
//!                                        \------------ fallback append --------/
//! ```
//!
//! - [`emit`]: the hook command, one short-lived process per hook;
//! - [`collect`]: the per-session collector on 127.0.0.1;
//! - [`store`]: the artifact directory, row rendering and the locked append both use;
//! - [`install`]: wiring an agent CLI's hooks to the emitter (Kimi `config.toml`);
//! - [`http`]: the minimal HTTP/1.1 both ends speak, over loopback TCP or the store's Unix
//!   socket ([`stream`]); [`token`]: the bearer token.
//!
//! Nothing here prints: the binary's `cli` module owns standard output and error.

pub mod collect;
pub mod emit;
pub mod http;
pub mod install;
pub mod store;
pub mod stream;
pub mod token;

pub use store::TOKEN_ENV;
