//! The one integration-test binary: a module per area.

mod support;

mod channel;
mod cli;
mod detection;
mod docs;
mod expectations;
mod hardening;
mod live;
mod merge;
mod producer;
mod properties;
mod regressions;
mod tail;
mod timeline;
mod watch;
