//! The hermetic integration tests, one binary with a module per area: the corpus replayed
//! (`timeline` snapshots, `expectations`, `properties`, `regressions`), live tracking
//! (`tail`, `channel`, `live`, `merge`, `watch`, `notify`, `threads`), the producer side
//! against stand-in agents (`producer`), the CLI (`cli`, `detection`, `signals`,
//! `hardening`, `html`, `setup`), `tmux` (a private tmux server: ignored, with the reason,
//! when the build found no tmux on `PATH`), and the docs and API (`docs`, `facade`).
//! Nothing here downloads anything or needs more than `python3` and, for the tmux tests,
//! `tmux`.
//!
//! `cargo test` runs this binary with every crate's unit tests and doc-tests; the real
//! agent CLIs and Chromium are the end-to-end binary, `tests/e2e/main.rs`
//! (`cargo test --test e2e`). One area: `cargo test --test integration setup::`.

mod scratch_home;
mod support;

mod agent_folders;
mod agent_turns;
mod attention;
mod channel;
mod cli;
mod detection;
mod docs;
mod expectations;
mod facade;
mod hardening;
mod help;
mod html;
mod live;
mod many_sessions;
mod merge;
mod notify;
mod plugin_agent_turns;
mod producer;
mod properties;
mod public_api;
mod regressions;
mod sanitize;
mod setup;
mod signals;
mod tail;
mod threads;
mod timeline;
mod tmux;
mod unsafe_code;
mod watch;
