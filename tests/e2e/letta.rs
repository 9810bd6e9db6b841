//! End to end with Letta Code 0.25.9 from npm (`@letta-ai/letta-code`, the newest npm can
//! install), installed once into `target/tmp/e2e-letta`, run on its local backend
//! (`LETTA_LOCAL_BACKEND_EXPERIMENTAL=1`, no Letta server, no login) against
//! `tests/e2e/mock_model.py` on 127.0.0.1 over chat completions
//! (`OLLAMA_BASE_URL`, `-m ollama/letta-mock`: the mock answers with Letta's tool names),
//! with a scratch HOME.
//!
//! `letta -p` fires the tool hooks only (no prompt, no `Stop`): its first call starts the
//! turn. Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

const PACKAGES: [&str; 1] = ["@letta-ai/letta-code@0.25.9"];
const WHAT: &str = "letta 0.25.9";
const PROMPT: &str = "Run a command, write a file, read it. [[tools]]";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `node_modules`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    npm_cli(&INSTALL, "e2e-letta", &PACKAGES, "letta", |version| {
        version.starts_with("0.25.9")
    })
}

/// Letta's local backend on the mock, the mock's model for Letta, its `bin` first on
/// `PATH`.
fn letta_env(cmd: &mut Command, modules: &Path, mock: &Mock) {
    cmd.env("LETTA_LOCAL_BACKEND_EXPERIMENTAL", "1")
        .env(
            "OLLAMA_BASE_URL",
            format!("http://127.0.0.1:{}/v1", mock.port),
        )
        .env("PATH", path_with(&modules.join(".bin")))
        .env_remove("TMUX_PANE");
}

/// The letta arguments of a headless turn on the mock.
fn headless(prompt: &str) -> [&str; 4] {
    ["-m", "ollama/letta-mock", "-p", prompt]
}

fn letta_after_setup_two_headless_runs_are_two_sessions_of_the_default_store() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = SessionWorld::new();
    let state = world.scratch("state");
    let env = |cmd: &mut Command| {
        for var in [
            "HOOKTRACK_URL",
            "HOOKTRACK_DIR",
            "HOOKTRACK_GENERATION",
            "HOOKTRACK_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &world.home)
            .env("XDG_STATE_HOME", &state)
            .current_dir(&world.work);
        letta_env(cmd, &modules, &mock);
    };
    let hooktrack_run = |args: &[&str]| {
        let mut cmd = hooktrack();
        cmd.args(args);
        env(&mut cmd);
        let out = cmd.output().expect("run hooktrack");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hooktrack {args:?}: {text}");
        text
    };
    let setup = hooktrack_run(&["setup"]);
    let settings = world.home.join(".letta/settings.json");
    let file = fs::read_to_string(&settings).unwrap_or_default();
    assert!(file.contains("--agent 'letta'"), "{setup}\n{file}");
    // Never a `PermissionRequest` entry: one that exits 0 approves the call.
    assert!(!file.contains("PermissionRequest"), "{file}");

    let store = state.join("hooktrack/agents/letta/events.ndjson");
    for run in 0..2 {
        let mut cmd = Command::new(modules.join(".bin/letta"));
        cmd.args(headless(PROMPT));
        env(&mut cmd);
        let out = run_bounded(&mut cmd, PATIENCE).expect("letta -p [[tools]] exits 0");
        assert!(
            out.contains("The file holds two lines. Done."),
            "run {run}: {out}"
        );
    }
    let rows = rows_once(&store, 12);
    let pids: std::collections::BTreeSet<_> = rows
        .iter()
        .filter_map(|r| r["agent_pid"].as_u64())
        .collect();
    assert_eq!(pids.len(), 2, "{rows:#?}");
    let out = hooktrack_run(&["replay", "--format", "json", &store.to_string_lossy()]);
    let report: Value = serde_json::from_str(&out).expect("replay json");
    let sessions = report["sessions"].as_array().cloned().unwrap_or_default();
    let ids: Vec<_> = sessions
        .iter()
        .map(|s| s["session_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{report}");
    for (session, pid) in sessions.iter().zip(&pids) {
        assert_eq!(session["session_id"], format!("pid:{pid}"), "{report}");
        assert_eq!(session["provider"]["provider"], "letta-code", "{report}");
        assert_eq!(ledger(&session["turns"]), ["main open 3"], "{report}");
    }
}

fn letta_tool_turn_through_session_has_three_tools_and_ends_with_the_process() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = SessionWorld::new();
    let mut cmd = world.session(modules.join(".bin/letta"));
    cmd.args(headless(PROMPT));
    letta_env(&mut cmd, &modules, &mock);
    let (code, out, lines) = world.run(cmd);
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "letta");
    assert_eq!(ledger(&end["turns"]), ["main terminal_gap 3"], "{context}");
}

/// The rows of `store` once it holds `n` (a hook may land after the CLI exits).
fn rows_once(store: &Path, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let rows: Vec<Value> = fs::read_to_string(store)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if rows.len() >= n {
            return rows;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{} rows of {n} in {}: {rows:?}",
            rows.len(),
            store.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            letta_after_setup_two_headless_runs_are_two_sessions_of_the_default_store,
            [Letta]
        ),
        e2e!(
            letta_tool_turn_through_session_has_three_tools_and_ends_with_the_process,
            [Letta]
        ),
    ]
}
