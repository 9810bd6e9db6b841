//! The one integration-test binary: a module per area.

mod support;

mod cli;
mod docs;
mod expectations;
mod properties;
mod regressions;
mod timeline;
