//! End to end with Kilo CLI 7.7.7 from npm (`@kilocode/cli`; 7.8.1's platform packages
//! are missing on the registry), installed once into `target/tmp/e2e-kilo`, driven through
//! `hooktrack session` against `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME.
//! Kilo is a fork of OpenCode with no command hooks: `session` writes hooktrack's plugin
//! (OpenCode's, rendered for Kilo) into `~/.config/kilo/plugin/`, which Kilo loads
//! in-process.
//!
//! `KILO_DISABLE_MODELS_FETCH=true` keeps Kilo from fetching its model catalogue; with it
//! Kilo 7.7.7 goes to no registry at start (it installs nothing into its config folder,
//! plugin or not), so the scratch config folder needs no cached npm project.
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::kimi_cli::{Mock, run_bounded};
use super::opencode::{
    PluginAgent, allowed_dialogs_show_running_before_the_call_ends,
    check_asks_whether_the_plugin_loads, escape_twice_during_a_slow_call, mock_config, plugin_asks,
};
use super::util::*;

const PACKAGES: [&str; 1] = ["@kilocode/cli@7.7.7"];
const WHAT: &str = "kilo 7.7.7";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `kilo`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached("e2e-kilo", &PACKAGES, |base| {
        run_bounded(
            Command::new(base.join("node_modules/.bin/kilo")).arg("--version"),
            PATIENCE,
        )
        .map(drop)
        .map_err(|e| format!("kilo installed but does not run: {e}"))
    })
    .map(|base| base.join("node_modules/.bin/kilo"));
    *guard = Some(result.clone());
    result
}

/// A scratch HOME whose Kilo config names the mock as its only provider.
struct World(SessionWorld);

impl std::ops::Deref for World {
    type Target = SessionWorld;
    fn deref(&self) -> &SessionWorld {
        &self.0
    }
}

impl World {
    fn new(mock: &Mock, extra: Value) -> Self {
        let world = SessionWorld::new();
        let config = world.home.join(".config/kilo");
        fs::create_dir_all(&config).expect("mkdir");
        fs::write(
            config.join("kilo.json"),
            mock_config(mock, extra).to_string(),
        )
        .expect("config");
        Self(world)
    }

    /// `hooktrack session -- kilo ARGS` with the world's environment.
    fn command(&self, kilo: &Path, args: &[&str]) -> Command {
        let mut cmd = self.session(kilo);
        cmd.args(args)
            // Kilo, like OpenCode, takes its project folder from `$PWD` when it is set.
            .env("PWD", &self.work)
            .env("KILO_DISABLE_MODELS_FETCH", "true")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("KILO_CONFIG_DIR")
            .env_remove("KILO_PURE");
        cmd
    }

    /// `hooktrack session -- kilo ARGS`, to its end.
    fn run(&self, kilo: &Path, args: &[&str]) -> (Option<i32>, String, Vec<Value>) {
        self.0.run(self.command(kilo, args))
    }
}

fn kilo_tool_turn_through_session_ends_success_with_three_tools() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({}));
    let (code, out, lines) = world.run(
        &kilo,
        &["run", "Run a command, write a file, read it. [[tools]]"],
    );
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "kilo");
    // OpenCode's adapter: `busy` … `idle` is one turn, its three tool parts paired by
    // `callID`.
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let plugin = fs::read_to_string(world.home.join(".config/kilo/plugin/hooktrack.js"))
        .expect("the plugin");
    assert!(
        plugin.starts_with("// hooktrack observer plugin ") && plugin.contains("for Kilo CLI"),
        "{plugin}"
    );
    assert!(plugin.contains("\"--agent\", \"kilo\""), "{plugin}");
}

/// Kilo retries a model call that failed with a 500 by itself, as OpenCode does: one
/// prompt, one turn.
fn kilo_a_model_call_retried_is_one_turn() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({}));
    let (code, out, lines) = world.run(&kilo, &["run", "Say hello. [[retry]]"]);
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    let statuses = session_statuses(&world.root.join("hook-observation/kilo/events.ndjson"));
    assert!(
        statuses.iter().any(|s| s == "retry"),
        "{statuses:?}\n{context}"
    );
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main success 0"], "{context}");
}

/// `kilo run` without `--auto` rejects a permission itself ("auto-rejecting") and exits 1:
/// the run failed, nobody interrupted it.
fn kilo_run_permission_auto_rejected_is_known_failure() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({"permission": {"bash": "ask"}}));
    let (code, out, lines) = world.run(&kilo, &["run", "Create a file. [[perm]]"]);
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(1), "{context}");
    assert!(!world.work.join("approved.txt").exists(), "{context}");
    let blocked = lines
        .iter()
        .any(|l| l["event"] == "permission.asked" && l["posture"]["turn"]["phase"] == "blocked");
    assert!(blocked, "{context}");
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main known_failure 1"], "{context}");
}

fn kilo_escape_twice_during_a_tool_in_tmux_ends_interrupted() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e("kilo 7.7.7 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip_e2e("kilo 7.7.7 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({}));
    // The session's whole command line and environment, in a script tmux runs.
    let cmd = world.command(&kilo, &[]);
    // As in OpenCode, the same TUI.
    let (end, context) = escape_twice_during_a_slow_call(&world, &cmd, "kilo");
    // `session.error {MessageAbortedError}` ends the turn before its `idle`.
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{context}");
}

/// Issue 33 item 1: Kilo 7.7.7's "Allow once" shows the agent running from the plugin's
/// `permission.replied` (the tool part completes 20 s later).
fn kilo_tui_allowed_dialog_shows_running_before_the_call_ends() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e("kilo 7.7.7 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip_e2e("kilo 7.7.7 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let World(world) = World::new(&mock, json!({"permission": {"bash": "ask"}}));
    allowed_dialogs_show_running_before_the_call_ends(
        world,
        mock,
        "kilo",
        &[("KILO_DISABLE_MODELS_FETCH", "true".into())],
        &[kilo.into()],
        &plugin_asks(hooktrack::Agent::Kilo, "7.7.7-tui"),
    );
}

/// `check kilo` asks Kilo itself (`kilo debug info`) which plugins it loads: the
/// installed plugin is listed; `KILO_PURE=1` stops it; a valid plugin file in a folder
/// Kilo does not read is not listed.
fn check_kilo_asks_kilo_whether_it_loads_the_plugin() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({}));
    let agent = PluginAgent {
        name: "kilo",
        label: "Kilo",
        env_prefix: "KILO",
    };
    check_asks_whether_the_plugin_loads(&world, &kilo, agent, "1");
}

/// `session -- kilo --pure` says once that the plugin will not load, and runs the agent
/// all the same.
fn session_with_kilo_pure_says_so_once_and_goes_on() {
    let kilo = match installed() {
        Ok(k) => k,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock, json!({}));
    let (code, _, lines) = world.run(&kilo, &["--pure", "run", "Say hello."]);
    assert_one_finding_then_a_whole_run(
        code,
        &lines,
        "`--pure` makes Kilo skip every external plugin",
    );
    let context = format!("session:\n{lines:#?}");
    let end = lines.last().expect("end line");
    // The plugin did not load: no turn was seen.
    assert_eq!(ledger(&end["turns"]), Vec::<String>::new(), "{context}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(kilo_a_model_call_retried_is_one_turn, [Kilo]),
        e2e!(
            kilo_tool_turn_through_session_ends_success_with_three_tools,
            [Kilo]
        ),
        e2e!(
            kilo_escape_twice_during_a_tool_in_tmux_ends_interrupted,
            [Kilo, Tmux]
        ),
        e2e!(kilo_run_permission_auto_rejected_is_known_failure, [Kilo]),
        e2e!(
            kilo_tui_allowed_dialog_shows_running_before_the_call_ends,
            [Kilo, Tmux]
        ),
        e2e!(check_kilo_asks_kilo_whether_it_loads_the_plugin, [Kilo]),
        e2e!(session_with_kilo_pure_says_so_once_and_goes_on, [Kilo]),
    ]
}
