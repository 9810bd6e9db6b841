//! End to end with Cline CLI 3.0.65 from npm (`cline`, a Node launcher over its native
//! binary), installed once into `target/tmp/e2e-cline`, driven headless against
//! `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME after `hooktrack setup`.
//! Cline runs its hook files in a hub daemon the first `cline` starts and leaves running:
//! the test gives it a port of its own (`CLINE_HUB_PORT`, so no other Cline on the machine
//! is reached) and ends it by its pid when done.
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

const PACKAGES: [&str; 1] = ["cline@3.0.65"];
const WHAT: &str = "cline 3.0.65";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `node_modules`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    npm_cli(&INSTALL, "e2e-cline", &PACKAGES, "cline", |version| {
        version == "3.0.65"
    })
}

/// A scratch HOME and state folder after `hooktrack setup`, whose Cline names the mock;
/// the hub daemon its first `cline` starts is ended when this is dropped.
struct World {
    world: SessionWorld,
    state: PathBuf,
    modules: PathBuf,
    hub_port: u16,
}

impl World {
    fn new(modules: &Path, mock: &Mock) -> Self {
        let world = SessionWorld::new();
        let state = world.scratch("state");
        // A free port for this test's hub daemon.
        let hub_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let this = Self {
            world,
            state,
            modules: modules.to_owned(),
            hub_port,
        };
        let setup = this.hooktrack(&["setup"]);
        assert!(
            setup.contains("cline: 8 hooktrack hook files in"),
            "{setup}"
        );
        let base = format!("http://127.0.0.1:{}/v1", mock.port);
        let auth = [
            "auth",
            "-p",
            "openai",
            "-k",
            "x",
            "-m",
            "cline-mock",
            "-b",
            &base,
        ];
        if let Err(e) = run_bounded(&mut this.cline(&auth), PATIENCE) {
            panic!("cline auth: {e}");
        }
        this
    }

    fn env(&self, cmd: &mut Command) {
        for var in [
            "HOOKTRACK_URL",
            "HOOKTRACK_DIR",
            "HOOKTRACK_GENERATION",
            "HOOKTRACK_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.world.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("CLINE_HUB_PORT", self.hub_port.to_string())
            .env("PATH", path_with(&self.modules.join(".bin")))
            .env_remove("CLINE_DIR")
            .env_remove("TMUX_PANE")
            .current_dir(&self.world.work);
    }

    fn hooktrack(&self, args: &[&str]) -> String {
        let mut cmd = hooktrack();
        cmd.args(args);
        self.env(&mut cmd);
        let out = cmd.output().expect("run hooktrack");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hooktrack {args:?}: {text}");
        text
    }

    fn cline(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.modules.join(".bin/cline"));
        cmd.args(args);
        self.env(&mut cmd);
        cmd
    }

    /// Cline's default store, where its hook files deliver.
    fn store(&self) -> PathBuf {
        self.state.join("hooktrack/agents/cline/events.ndjson")
    }

    /// The store's rows once one of them is `event` (the hooks run detached from the
    /// daemon: the last may land after the CLI exits).
    fn rows_once(&self, event: &str) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let rows: Vec<Value> = fs::read_to_string(self.store())
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if rows.iter().any(|r| r["event"] == event) {
                return rows;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "no {event} row in {}: {rows:?}",
                self.store().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `hooktrack replay --format json` of the default store.
    fn replay(&self) -> Value {
        let store = self.store();
        let out = self.hooktrack(&["replay", "--format", "json", &store.to_string_lossy()]);
        serde_json::from_str(&out).expect("replay json")
    }
}

impl World {
    /// The hub daemons this world's Cline started that still run (found by their command
    /// line and this world's HOME; an ended one's command line reads empty).
    fn daemons(&self) -> Vec<u32> {
        let home = format!("HOME={}", self.world.home.display());
        let Ok(procs) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut pids: Vec<u32> = procs
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).contains("--cline-hub-daemon")
                    && environ.split(|b| *b == 0).any(|v| v == home.as_bytes())
            })
            .collect();
        pids.sort_unstable();
        pids
    }
}

impl Drop for World {
    /// Ends the hub daemons this world's Cline started, by their pids.
    fn drop(&mut self) {
        for pid in self.daemons() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// The ledger of a replay's JSON: "scope result tool_calls" per turn.
fn turns(report: &Value) -> Vec<String> {
    report["turns"]
        .as_array()
        .map(|turns| {
            turns
                .iter()
                .map(|t| format!("{} {} {}", t["scope"], t["result"], t["tool_calls"]))
                .map(|s| s.replace('"', ""))
                .collect()
        })
        .unwrap_or_default()
}

fn cline_after_setup_a_headless_tool_turn_and_a_failure_reach_the_default_store() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);

    let out = run_bounded(
        &mut world.cline(&["Run a command, write a file, read it. [[tools]]"]),
        PATIENCE,
    )
    .expect("cline [[tools]] exits 0");
    assert!(out.contains("The file holds two lines. Done."), "{out}");
    let rows = world.rows_once("TaskComplete");
    // The daemon ran the hooks: routed to the default store (no session, no generation).
    assert!(rows.iter().all(|r| r["generation"] == 0), "{rows:?}");
    let report = world.replay();
    assert_eq!(report["provider"]["provider"], "cline", "{report}");
    assert_eq!(turns(&report), ["main success 3"], "{report}");

    // A 400 from the model: TaskError, a known failure; a new task of its own.
    fs::remove_file(world.store()).expect("start the store again");
    let failed = run_bounded(&mut world.cline(&["Fail please. [[fail]]"]), PATIENCE);
    assert!(failed.is_err(), "cline [[fail]] exits non-zero: {failed:?}");
    world.rows_once("TaskError");
    assert_eq!(turns(&world.replay()), ["main known_failure 0"]);
}

/// `hooktrack session -- cline` while a shared daemon runs (started by a plain `cline` on
/// the port the user's environment names, as after any earlier use): the session gives its
/// Cline a daemon of its own, whose hooks deliver to the session, which reports the turn;
/// that daemon is gone after the session, the shared one runs on and got none of its rows.
fn cline_under_session_with_a_shared_daemon_running_reports_its_own_turns() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);
    run_bounded(&mut world.cline(&["Say hello. [[plain]]"]), PATIENCE)
        .expect("a plain cline exits 0");
    let shared_rows = world.rows_once("TaskComplete").len();
    let shared = world.daemons();
    assert_eq!(shared.len(), 1, "the shared daemon: {shared:?}");

    let mut cmd = world.world.session(modules.join(".bin/cline"));
    world.env(&mut cmd);
    cmd.arg("Run a command, write a file, read it. [[tools]]");
    let (code, out, lines) = world.world.run(cmd);
    let (start, end, context) = assert_tools_run(&world.world, code, &out, &lines, "cline");
    assert_eq!(start["findings"], serde_json::json!([]), "{context}");
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");

    // The session's daemon ended with it (its rows all came before); the shared one runs
    // on, and the default store holds only the plain run's rows.
    assert_eq!(world.daemons(), shared, "{context}");
    let default_rows = fs::read_to_string(world.store()).unwrap_or_default();
    assert_eq!(default_rows.lines().count(), shared_rows, "{default_rows}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            cline_after_setup_a_headless_tool_turn_and_a_failure_reach_the_default_store,
            [Cline]
        ),
        e2e!(
            cline_under_session_with_a_shared_daemon_running_reports_its_own_turns,
            [Cline]
        ),
    ]
}
