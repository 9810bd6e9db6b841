//! The one integration-test binary: a module per area.

mod support;

mod cli;
mod expectations;
mod properties;
mod regressions;
mod timeline;
mod tail;
mod channel;
