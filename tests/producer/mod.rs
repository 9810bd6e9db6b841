//! The producer side: `hooktrack emit`, `collect`, `install|uninstall|check` (kimi, claude,
//! codex, gemini) and `session`, run as real processes.

mod util;

mod check;
mod collect;
pub(crate) mod e2e;
mod e2e_kilo;
mod e2e_kimi_code;
pub(crate) mod e2e_more_agents;
pub(crate) mod e2e_npm;
mod e2e_opencode;
mod e2e_pi;
mod emit;
mod hardening;
mod install;
mod install_json;
mod no_loss;
mod security;
mod session;
mod socket;
