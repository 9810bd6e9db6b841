//! The one integration-test binary: a module per area.

mod support;

mod agent_folders;

mod channel;
mod cli;
mod detection;
mod docs;
mod expectations;
mod facade;
mod hardening;
mod html;
mod live;
mod many_sessions;
mod merge;
mod notify;
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
