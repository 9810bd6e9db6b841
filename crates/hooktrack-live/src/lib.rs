//! hooktrack's reading edge: [`tail`] follows a growing `events.ndjson` by offset,
//! [`session`] puts a tailer, a pipeline and the channel state machine behind
//! `poll(now)` (with the transcript the hooks name, followed by offset too, and the
//! agent [`process`] when it is handed one), and [`hub`] follows many sessions with one
//! file watcher; [`screen`] reads an agent's tmux pane while it waits on the user. See
//! `docs/live.md`.

pub mod follow;
pub mod hub;
pub mod locate;
pub mod process;
pub mod screen;
pub mod session;
pub mod tail;
