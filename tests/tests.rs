//! The one integration-test binary: a module per area.

mod support;

mod cli;
mod detection;
mod docs;
mod expectations;
mod producer;
mod properties;
mod regressions;
mod timeline;
