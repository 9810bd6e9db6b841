//! The producer side: `hooktrack emit`, `collect`, `install|uninstall|check` and `session`,
//! run as real processes against stand-in agents. The same with the real agent CLIs is the
//! end-to-end test binary (`tests/e2e/`).

mod util;

mod check;
mod collect;
mod emit;
mod hardening;
mod install;
mod install_json;
mod no_loss;
mod plugins;
mod security;
mod session;
mod socket;
