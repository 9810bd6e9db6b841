//! End to end with the real Claude Code, Codex and Gemini CLIs from npm, installed once
//! into `target/tmp/e2e-cli` (Claude Code 2.1.332, the newest end of its tested window, into
//! `target/tmp/e2e-claude-2.1.332`: one package name, two versions), each driven through
//! `hooktrack session` against `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME;
//! Claude Code's, Codex's and Gemini CLI's TUIs in tmux on a private socket.
//!
//! Without its CLI (npm, the registry; tmux for the TUI) a test is reported as ignored
//! with the reason (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

const PACKAGES: [&str; 3] = [
    "@anthropic-ai/claude-code@2.1.197",
    "@openai/codex@0.171.0",
    "@google/gemini-cli@0.61.0",
];

/// One install for every test of this binary.
static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The newest end of Claude Code's tested window (`Descriptor::versions`); the oldest,
/// 2.1.197, is in [`PACKAGES`].
const CLAUDE_NEWEST: &str = "@anthropic-ai/claude-code@2.1.332";
static INSTALL_NEWEST: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The two ends of Claude Code's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claude {
    Oldest,
    Newest,
}

impl Claude {
    fn version(self) -> &'static str {
        match self {
            Claude::Oldest => "2.1.197",
            Claude::Newest => "2.1.332",
        }
    }

    /// The `claude` program of this version, installed on first use.
    pub(crate) fn bin(self) -> Result<PathBuf, String> {
        match self {
            Claude::Oldest => npm_bin().map(|b| b.join("claude")),
            Claude::Newest => {
                let mut guard = INSTALL_NEWEST.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(done) = guard.as_ref() {
                    return done.clone();
                }
                let result = install_claude_newest();
                *guard = Some(result.clone());
                result
            }
        }
    }
}

fn install_claude_newest() -> Result<PathBuf, String> {
    // The package's bin is its native binary (an optional dependency per platform); npm
    // warns that the wrapper wants Node >= 22, which the binary does not need.
    let base = npm_cached("e2e-claude-2.1.332", &[CLAUDE_NEWEST], |base| {
        let version = run_bounded(
            Command::new(base.join("node_modules/.bin/claude")).arg("--version"),
            PATIENCE,
        )
        .map_err(|e| format!("{CLAUDE_NEWEST} installed but does not run: {e}"))?;
        if version.contains("2.1.332") {
            Ok(())
        } else {
            Err(format!("{CLAUDE_NEWEST} says it is {version:?}"))
        }
    })?;
    Ok(base.join("node_modules/.bin/claude"))
}

pub(crate) fn skip(cli: &str, reason: &str) {
    skip_e2e(cli, reason);
}

/// `target/tmp/e2e-cli/node_modules/.bin`, installing the three packages on first use.
pub(crate) fn npm_bin() -> Result<PathBuf, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = install_clis();
    *guard = Some(result.clone());
    result
}

fn install_clis() -> Result<PathBuf, String> {
    let base = npm_cached("e2e-cli", &PACKAGES, |base| {
        for cli in ["claude", "codex", "gemini"] {
            run_bounded(
                Command::new(base.join("node_modules/.bin").join(cli)).arg("--version"),
                PATIENCE,
            )
            .map_err(|e| format!("{cli} installed but does not run: {e}"))?;
        }
        Ok(())
    })?;
    Ok(base.join("node_modules/.bin"))
}

/// A scratch world for one agent run: HOME, a work dir, a session root.
type World = SessionWorld;

/// What one `hooktrack session --format ndjson` run gave.
struct Run {
    code: Option<i32>,
    start: Value,
    end: Value,
    agent_out: String,
    context: String,
}

fn session(world: &World, root: &Path, env: &[(&str, OsString)], argv: &[OsString]) -> Run {
    let output = root.with_extension("ndjson");
    if let Some(parent) = output.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    let Some((program, args)) = argv.split_first() else {
        panic!("an agent's command line names its program");
    };
    let mut cmd = world.session_at(root, program);
    cmd.args(args)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn session");
    let status = wait_child(&mut child, PATIENCE);
    let mut agent_out = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stdout.take().expect("out"), &mut agent_out);
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("err"), &mut stderr);
    let lines = session_lines(&output);
    let context = format!(
        "agent stdout:\n{agent_out}\nstderr:\n{stderr}\nsession:\n{}",
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    Run {
        code: status.code(),
        start: lines.first().cloned().unwrap_or(Value::Null),
        end: lines.last().cloned().unwrap_or(Value::Null),
        agent_out,
        context,
    }
}

fn python() -> PathBuf {
    PathBuf::from("python3")
}

fn os(parts: &[&str]) -> Vec<OsString> {
    parts.iter().map(OsString::from).collect()
}

fn claude_env(mock: &Mock) -> Vec<(&'static str, OsString)> {
    vec![
        (
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port).into(),
        ),
        ("ANTHROPIC_API_KEY", "dummy".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
    ]
}

fn claude_argv(bin: &Path, prompt: &str) -> Vec<OsString> {
    let mut argv = vec![bin.join("claude").into_os_string()];
    argv.extend(os(&["-p", prompt, "--allowedTools", "Bash Write Read"]));
    argv
}

/// The end line's ledger, and that the session's store holds one session.
fn assert_one_ledger(run: &Run, expected: &[&str]) {
    assert_eq!(run.end["kind"], "end", "{}", run.context);
    assert_eq!(ledger(&run.end["turns"]), expected, "{}", run.context);
    let store = PathBuf::from(run.start["store"].as_str().expect("store"));
    let rows = session_rows(&store.join("events.ndjson"), 1);
    assert!(!rows.is_empty(), "{}", run.context);
    let mut sessions: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["payload"]["session_id"].as_str())
        .collect();
    sessions.dedup();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert!(rows.iter().all(|r| r["via"] == "http"), "{rows:#?}");
    let replay = replay_json(&store.join("events.ndjson"));
    assert_eq!(ledger(&replay["turns"]), expected);
}

fn claude_code_tool_turn_through_session_ends_success_with_three_tools() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("claude-code 2.1.197", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    let run = session(
        &world,
        &world.root,
        &claude_env(&mock),
        &claude_argv(&bin, "Run a command, write a file, read it back. [[tools]]"),
    );
    assert_eq!(run.code, Some(0), "{}", run.context);
    assert!(run.agent_out.contains("The file holds two lines. Done."));
    assert_eq!(
        fs::read_to_string(world.work.join("notes.txt")).expect("Write ran"),
        "line one\nline two\n"
    );
    assert_eq!(run.start["provider"], "claude");
    assert_eq!(
        run.start["findings"],
        serde_json::json!([]),
        "{}",
        run.context
    );
    assert_one_ledger(&run, &["main success 3"]);
    assert_eq!(run.end["final"]["presence"], "absent");
    assert!(run.end.get("warning").is_none(), "{}", run.context);
    // The routed entries stay in ~/.claude/settings.json, naming no session.
    let settings = fs::read_to_string(world.home.join(".claude/settings.json")).expect("settings");
    assert!(settings.contains("emit --observer hooktrack --agent 'claude'"));
    assert!(!settings.contains("--url") && !settings.contains("--generation"));
    // 2.1.197's TUI would stop at launch on an event name it does not know.
    assert!(!settings.contains("PreModelSwitch"), "{settings}");
    assert_eq!(
        run.start["version_window"],
        "Claude Code 2.1.197: within the tested window 2.1.197–2.1.332"
    );
}

fn claude_code_failing_model_call_ends_known_failure() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("claude-code 2.1.197", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    let run = session(
        &world,
        &world.root,
        &claude_env(&mock),
        &claude_argv(&bin, "This call fails. [[fail]]"),
    );
    assert_eq!(run.code, Some(1), "{}", run.context);
    // Claude Code reports an API error with StopFailure: a known failure, not a guess.
    assert_one_ledger(&run, &["main known_failure 0"]);
}

fn two_concurrent_claude_sessions_land_in_two_stores_with_one_ledger_each() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("claude-code 2.1.197", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    // The first session installs the routed entries; note the bytes.
    let first = session(
        &world,
        &world.root.join("warm"),
        &claude_env(&mock),
        &claude_argv(&bin, "hello [[plain]]"),
    );
    assert_eq!(first.code, Some(0), "{}", first.context);
    let settings = world.home.join(".claude/settings.json");
    let installed = fs::read(&settings).expect("settings");
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            session(
                &world,
                &world.root.join("a"),
                &claude_env(&mock),
                &claude_argv(&bin, "Run a command, write a file, read it back. [[tools]]"),
            )
        });
        let b = s.spawn(|| {
            session(
                &world,
                &world.root.join("b"),
                &claude_env(&mock),
                &claude_argv(&bin, "hello [[plain]]"),
            )
        });
        (a.join().expect("a"), b.join().expect("b"))
    });
    assert_eq!(a.code, Some(0), "{}", a.context);
    assert_eq!(b.code, Some(0), "{}", b.context);
    assert_ne!(a.start["store"], b.start["store"]);
    assert_one_ledger(&a, &["main success 3"]);
    assert_one_ledger(&b, &["main success 0"]);
    // Starting the two sessions did not rewrite the shared config.
    assert_eq!(fs::read(&settings).expect("settings"), installed);
}

fn codex_home(world: &World, mock: &Mock) -> PathBuf {
    let home = world.home.join(".codex");
    fs::create_dir_all(&home).expect("mkdir");
    fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
             name = \"mock\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\n\
             env_key = \"MOCK_API_KEY\"\n",
            mock.port
        ),
    )
    .expect("config.toml");
    home
}

fn codex_argv(bin: &Path, prompt: &str, bypass_trust: bool) -> Vec<OsString> {
    let mut argv = vec![bin.join("codex").into_os_string()];
    argv.extend(os(&[
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]));
    if bypass_trust {
        argv.push("--dangerously-bypass-hook-trust".into());
    }
    argv.push(prompt.into());
    argv
}

fn codex_tool_turn_through_session_ends_success_with_three_tools() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("codex 0.171.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    codex_home(&world, &mock);
    let run = session(
        &world,
        &world.root,
        &[("MOCK_API_KEY", "dummy".into())],
        &codex_argv(
            &bin,
            "Run a command, write a file, read it back. [[tools]]",
            true,
        ),
    );
    assert_eq!(run.code, Some(0), "{}", run.context);
    assert_eq!(
        fs::read_to_string(world.work.join("notes.txt")).expect("the command ran"),
        "line one\nline two\n"
    );
    assert_eq!(run.start["provider"], "codex");
    assert_one_ledger(&run, &["main success 3"]);
}

fn an_untrusted_codex_hook_is_reported_by_check_and_by_session() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("codex 0.171.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    let home = codex_home(&world, &mock);
    // Without the bypass, Codex skips hooks nobody trusted: session says so up front and
    // warns at the end that nothing came.
    let run = session(
        &world,
        &world.root,
        &[("MOCK_API_KEY", "dummy".into())],
        &codex_argv(&bin, "hello [[plain]]", false),
    );
    assert_eq!(run.code, Some(0), "{}", run.context);
    let findings = run.start["findings"].to_string();
    assert!(findings.contains("has not trusted"), "{}", run.context);
    assert!(
        run.end["warning"]
            .as_str()
            .is_some_and(|w| w.contains("delivered no hook event") && w.contains("/hooks")),
        "{}",
        run.context
    );
    let store = PathBuf::from(run.start["store"].as_str().expect("store"));
    assert_eq!(channel(&store)["install"]["ok"], false, "{}", run.context);
    // `check codex` asks Codex itself and names the file, the cause and the fix.
    let out = hooktrack()
        .args(["check", "codex", "--agent-bin"])
        .arg(bin.join("codex"))
        .current_dir(&world.work)
        .env("HOME", &world.home)
        .env("CODEX_HOME", &home)
        .output()
        .expect("check");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hooks.json"), "{stderr}");
    assert!(
        stderr.contains("Codex has not trusted 12 of hooktrack's entries"),
        "{stderr}"
    );
    assert!(stderr.contains("type /hooks"), "{stderr}");
}

fn gemini_settings(world: &World, auth: bool) {
    let dir = world.home.join(".gemini");
    fs::create_dir_all(&dir).expect("mkdir");
    let settings = if auth {
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#
    } else {
        "{}"
    };
    fs::write(dir.join("settings.json"), settings).expect("settings");
}

fn gemini_env(mock: &Mock) -> Vec<(&'static str, OsString)> {
    vec![
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port).into(),
        ),
        ("GEMINI_API_KEY", "dummy".into()),
    ]
}

fn gemini_argv(bin: &Path, prompt: &str) -> Vec<OsString> {
    let mut argv = vec![bin.join("gemini").into_os_string()];
    argv.extend(os(&[
        "-m",
        "gemini-2.5-flash",
        "--skip-trust",
        "--yolo",
        "-p",
        prompt,
    ]));
    argv
}

fn gemini_cli_tool_turn_through_session_ends_success_with_three_tools() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("gemini-cli 0.61.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    gemini_settings(&world, true);
    let run = session(
        &world,
        &world.root,
        &gemini_env(&mock),
        &gemini_argv(&bin, "Run a command, write a file, read it back. [[tools]]"),
    );
    assert_eq!(run.code, Some(0), "{}", run.context);
    assert_eq!(
        fs::read_to_string(world.work.join("notes.txt")).expect("write_file ran"),
        "line one\nline two\n"
    );
    assert_eq!(run.start["provider"], "gemini");
    assert_one_ledger(&run, &["main success 3"]);
}

fn gemini_cli_without_an_auth_type_is_reported_before_it_runs() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("gemini-cli 0.61.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    gemini_settings(&world, false);
    let run = session(
        &world,
        &world.root,
        &gemini_env(&mock),
        &gemini_argv(&bin, "hello [[plain]]"),
    );
    assert_ne!(run.code, Some(0), "{}", run.context);
    assert!(
        run.start["findings"]
            .to_string()
            .contains("security.auth.selectedType"),
        "{}",
        run.context
    );
    assert!(
        run.end["warning"]
            .as_str()
            .is_some_and(|w| w.contains("security.auth.selectedType")),
        "{}",
        run.context
    );
}

/// What a failing model call leaves: the session's ledger and the events in its store.
fn failing_run_summary(run: &Run) -> (Vec<String>, Vec<String>) {
    let store = PathBuf::from(run.start["store"].as_str().expect("store"));
    let events: Vec<String> = session_rows(&store.join("events.ndjson"), 1)
        .iter()
        .filter_map(|r| r["event"].as_str().map(str::to_owned))
        .collect();
    (ledger(&run.end["turns"]), events)
}

fn codex_failing_model_call_ends_as_codex_reports_it() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("codex 0.171.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    codex_home(&world, &mock);
    let run = session(
        &world,
        &world.root,
        &[("MOCK_API_KEY", "dummy".into())],
        &codex_argv(&bin, "This call fails. [[fail]]", true),
    );
    // Codex 0.171 fires no Stop (and no other hook) for a turn whose model call failed;
    // its rollout transcript records `task_complete` with the error, the one signal that
    // settles it. Exit 1.
    let (turns, events) = failing_run_summary(&run);
    assert_eq!(run.code, Some(1), "{}", run.context);
    assert_eq!(
        events,
        ["SessionStart", "UserPromptSubmit", "SessionEnd"],
        "{}",
        run.context
    );
    // Live, the marker and Codex's `SessionEnd` race: the entry is written within
    // milliseconds of the hook, and a poll that reads the `SessionEnd` row before the
    // entry exists settles the turn `terminal_gap` (docs/posture.md, live ordering). Both
    // are truthful; anything else is not.
    assert!(
        turns == ["main known_failure 0"] || turns == ["main terminal_gap 0"],
        "{turns:?} {}",
        run.context
    );
    // Offline the order is by time, so the replay of the same store and transcript is
    // exact: `known_failure`, ended by the transcript.
    let store = PathBuf::from(run.start["store"].as_str().expect("store"));
    let out = hooktrack()
        .args(["replay", "--format", "json"])
        .arg(store.join("events.ndjson"))
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(
        ledger(&report["turns"]),
        ["main known_failure 0"],
        "{report}"
    );
    assert_eq!(report["turns"][0]["ended_by"], "transcript", "{report}");
}

fn gemini_cli_failing_model_call_ends_as_gemini_reports_it() {
    let bin = match npm_bin() {
        Ok(b) => b,
        Err(reason) => return skip("gemini-cli 0.61.0", &reason),
    };
    let mock = Mock::start(&python());
    let world = World::new();
    gemini_settings(&world, true);
    let run = session(
        &world,
        &world.root,
        &gemini_env(&mock),
        &gemini_argv(&bin, "This call fails. [[fail]]"),
    );
    // Gemini CLI 0.61 fires no AfterAgent after the failed model call: the turn is open
    // at SessionEnd and ends `terminal_gap`; the CLI exits 1.
    let (turns, events) = failing_run_summary(&run);
    assert_eq!(run.code, Some(1), "{}", run.context);
    assert_eq!(turns, ["main terminal_gap 0"], "{}", run.context);
    assert_eq!(
        events,
        [
            "SessionStart",
            "BeforeAgent",
            "PreCompress",
            "BeforeModel",
            "BeforeToolSelection",
            "SessionEnd"
        ],
        "{}",
        run.context
    );
}

/// The Claude Code program at `which` end of the window, or a reported skip.
fn claude_or_skip(which: Claude) -> Option<PathBuf> {
    match which.bin() {
        Ok(bin) => Some(bin),
        Err(reason) => {
            skip(&format!("claude-code {}", which.version()), &reason);
            None
        }
    }
}

fn claude_code_2_1_332_tool_turn_through_session_installs_its_32_events() {
    let Some(claude) = claude_or_skip(Claude::Newest) else {
        return;
    };
    let mock = Mock::start(&python());
    let world = World::new();
    let mut argv = vec![claude.into_os_string()];
    argv.extend(os(&[
        "-p",
        "Run a command, write a file, read it back. [[tools]]",
        "--allowedTools",
        "Bash Write Read",
    ]));
    let run = session(&world, &world.root, &claude_env(&mock), &argv);
    assert_eq!(run.code, Some(0), "{}", run.context);
    assert!(run.agent_out.contains("The file holds two lines. Done."));
    assert_eq!(run.start["agent_version"], "2.1.332", "{}", run.context);
    assert_eq!(
        run.start["version_window"],
        "Claude Code 2.1.332: within the tested window 2.1.197–2.1.332"
    );
    assert_one_ledger(&run, &["main success 3"]);
    let settings = fs::read_to_string(world.home.join(".claude/settings.json")).expect("settings");
    for event in [
        "PreModelSwitch",
        "PostModelSwitch",
        "DirectoryAdded",
        "PreSkillShellCommand",
    ] {
        assert!(
            settings.contains(&format!("\"{event}\"")),
            "{event}: {settings}"
        );
    }
}

/// `claude -p` with a subagent: the rows' hook names in order, and the run.
fn subagent_run(which: Claude) -> Option<(Run, Vec<Value>)> {
    let claude = claude_or_skip(which)?;
    let mock = Mock::start(&python());
    let world = World::new();
    let mut argv = vec![claude.into_os_string()];
    argv.extend(os(&[
        "-p",
        "Start a helper. [[bgagent]]",
        "--allowedTools",
        "Agent Bash",
    ]));
    let run = session(&world, &world.root, &claude_env(&mock), &argv);
    assert_eq!(run.code, Some(0), "{}", run.context);
    let store = PathBuf::from(run.start["store"].as_str().expect("store"));
    let rows = session_rows(&store.join("events.ndjson"), 1);
    Some((run, rows))
}

fn position(rows: &[Value], what: impl Fn(&Value) -> bool) -> Option<usize> {
    rows.iter().position(what)
}

fn claude_code_2_1_197_runs_a_subagent_inside_its_turn() {
    let Some((run, rows)) = subagent_run(Claude::Oldest) else {
        return;
    };
    let stop = position(&rows, |r| r["event"] == "Stop");
    let subagent_stop = position(&rows, |r| r["event"] == "SubagentStop");
    assert!(subagent_stop < stop, "{}", run.context);
    assert_eq!(
        ledger(&run.end["turns"]),
        ["main success 1", "subagent:general-purpose success 1"],
        "{}",
        run.context
    );
}

fn claude_code_2_1_332_runs_a_subagent_in_the_background_and_reports_it_in_a_turn_of_its_own() {
    let Some((run, rows)) = subagent_run(Claude::Newest) else {
        return;
    };
    // The Agent call returns at once; the main Stop comes while the subagent works; its
    // end, then a turn Claude starts with a task notification.
    let launched = position(&rows, |r| {
        r["event"] == "PostToolUse" && r["payload"]["tool_response"]["isAsync"] == true
    });
    let stop = position(&rows, |r| r["event"] == "Stop");
    let subagent_stop = position(&rows, |r| r["event"] == "SubagentStop");
    let notification = position(&rows, |r| {
        r["event"] == "UserPromptSubmit"
            && r["payload"]["prompt"]
                .as_str()
                .is_some_and(|p| p.starts_with("<task-notification>"))
    });
    assert!(launched.is_some() && launched < stop, "{}", run.context);
    assert!(stop < subagent_stop, "{}", run.context);
    assert!(subagent_stop < notification, "{}", run.context);
    let turns = ledger(&run.end["turns"]);
    // The subagent outlives the main turn and ends with its own SubagentStop; the
    // task-notification turn is the agent's, not the user's.
    assert_eq!(turns.len(), 3, "{}", run.context);
    assert_eq!(turns[0], "main success 1", "{}", run.context);
    assert!(
        turns[1].starts_with("subagent:general-purpose success "),
        "{}",
        run.context
    );
    assert_eq!(turns[2], "main success 0", "{}", run.context);
    assert_eq!(run.end["turns"][0]["origin"], "user", "{}", run.context);
    assert_eq!(run.end["turns"][2]["origin"], "agent", "{}", run.context);
}

/// An agent's TUI in tmux on a private socket, through `hooktrack session`.
pub(crate) struct Tui {
    socket: String,
    world: World,
    output: PathBuf,
    events: PathBuf,
    _mock: Mock,
}

impl Tui {
    /// Starts `claude` (with `settings` as its settings.json) in a tmux pane.
    fn start(which: Claude, claude: &Path, settings: &str) -> Option<Self> {
        if let Err(e) = Command::new("tmux").arg("-V").output() {
            skip(
                &format!("claude-code {} in tmux", which.version()),
                &format!("no tmux: {e}"),
            );
            return None;
        }
        let mock = Mock::start(&python());
        let world = World::new();
        fs::create_dir_all(world.home.join(".claude")).expect("mkdir");
        fs::write(world.home.join(".claude/settings.json"), settings).expect("settings");
        // No onboarding, the folder trusted, the key approved: the prompt comes up at once.
        crate::scratch_home::claude_past_first_run(
            &world.home,
            &world.work,
            "dummy-key-0123456789",
        );
        let mut env = claude_env(&mock);
        env.push(("ANTHROPIC_API_KEY", "dummy-key-0123456789".into()));
        Some(Self::launch(world, mock, "claude", &env, &[claude.into()]))
    }

    /// Runs `hooktrack session -- ARGV` in a tmux pane (150x45) on a socket of its own, in
    /// `world`'s work folder with `env` (the later of two same names wins), the hook rows
    /// landing in the store named `store`.
    pub(crate) fn launch(
        world: World,
        mock: Mock,
        store: &str,
        env: &[(&str, OsString)],
        argv: &[OsString],
    ) -> Self {
        let output = world.root.with_extension("ndjson");
        let events = world
            .root
            .join(format!("hook-observation/{store}/events.ndjson"));
        let quote =
            |p: &std::ffi::OsStr| format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"));
        let mut exports = format!("export HOME={}", quote(world.home.as_os_str()));
        for (k, v) in env {
            exports += &format!(" {k}={}", quote(v));
        }
        let agent: Vec<String> = argv.iter().map(|a| quote(a)).collect();
        let script = format!(
            "cd {work} || exit 1\n\
             {exports}\n\
             unset CLAUDE_CONFIG_DIR CODEX_HOME GEMINI_CLI_HOME HOOKTRACK_TOKEN HOOKTRACK_DIR \
             HOOKTRACK_URL HOOKTRACK_GENERATION TMUX\n\
             {hooktrack} session --format ndjson --root {root} --output {output} -- {agent}\n\
             sleep 600\n",
            work = quote(world.work.as_os_str()),
            hooktrack = quote(Path::new(env!("CARGO_BIN_EXE_hooktrack")).as_os_str()),
            root = quote(world.root.as_os_str()),
            output = quote(output.as_os_str()),
            agent = agent.join(" "),
        );
        let run = world.home.join("run.sh");
        fs::write(&run, script).expect("run.sh");
        let socket = format!("hooktrack-e2e-{}-{}", std::process::id(), mock.port);
        let tui = Self {
            socket,
            world,
            output,
            events,
            _mock: mock,
        };
        tui.tmux(&["new-session", "-d", "-x", "150", "-y", "45", "bash"])
            .arg(&run)
            .status()
            .expect("tmux new-session");
        tui
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command
            .args(["-L", &self.socket])
            .args(args)
            .env_remove("TMUX")
            // No `CI` in the TUI's terminal (`util::Tmux::run`).
            .env_remove("CI");
        command
    }

    fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux(&["send-keys"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// A line typed at the prompt, then Enter once the line is drawn: the TUI takes a
    /// burst of input as pasted text, where an Enter read with it is a newline, so the
    /// Enter waits for the text to be read (a loaded machine may take long), not for a
    /// fixed time.
    fn prompt(&self, text: &str) {
        let before = self.screen().matches(text).count();
        self.keys(&["-l", text]);
        self.wait_screen(&format!("{text:?} typed"), |s| {
            s.matches(text).count() > before
        });
        self.keys(&["Enter"]);
    }

    /// [`Tui::prompt`], then Enter again while no row says a turn `started` within a few
    /// seconds (bounded): Gemini CLI 0.61.0 was seen to keep a prompt typed after a turn in
    /// its input box, the Enter not taken. A turn's start hook runs before any dialog is
    /// drawn, so the Enter never answers one.
    fn submit(&self, text: &str, started: fn(&Value) -> bool) {
        let count = || self.rows().iter().filter(|r| started(r)).count();
        let before = count();
        self.prompt(text);
        for _ in 0..5 {
            let pressed = std::time::Instant::now();
            while pressed.elapsed() < Duration::from_secs(3) {
                if count() > before {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            self.keys(&["Enter"]);
        }
        panic!("no turn started for {text:?}; screen:\n{}", self.screen());
    }

    fn screen(&self) -> String {
        let out = self
            .tmux(&["capture-pane", "-p"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once `ok` holds for it (bounded).
    pub(crate) fn wait_screen(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        wait_for(PATIENCE, &format!("{what}; screen:\n{last}"), || {
            last = self.screen();
            ok(&last).then(|| last.clone())
        })
    }

    /// The hook rows so far (a line still being written is left for the next look).
    fn rows(&self) -> Vec<Value> {
        fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|r: &Value| r["via"] != "launcher")
            .collect()
    }

    fn wait_row(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Vec<Value> {
        wait_for(PATIENCE, what, || {
            let rows = self.rows();
            rows.iter().any(&ok).then_some(rows)
        })
    }

    /// Answers the permission dialog on screen with its "No" choice (its number differs
    /// between versions: 3 of 3 in 2.1.197, 4 of 4 in 2.1.332's manual mode).
    fn answer_no(&self) {
        let screen = self.wait_screen("the permission dialog", |s| {
            s.contains("Do you want to proceed?")
        });
        let choice = screen
            .lines()
            .filter_map(|l| l.trim_start_matches([' ', '❯']).strip_suffix(". No"))
            .next_back()
            .unwrap_or_else(|| panic!("no \"No\" choice on screen:\n{screen}"))
            .to_owned();
        self.keys(&[&choice]);
        std::thread::sleep(Duration::from_millis(300));
        self.keys(&["Enter"]);
    }

    /// `/exit`, then the session's end line.
    fn exit(&self) -> Value {
        self.quit("/exit")
    }

    /// `command` (the agent's own quit), then the session's end line.
    pub(crate) fn quit(&self, command: &str) -> Value {
        self.prompt(command);
        wait_for(PATIENCE, "the session's end line", || {
            let text = fs::read_to_string(&self.output).ok()?;
            let last: Value = serde_json::from_str(text.lines().last()?).ok()?;
            (last["kind"] == "end").then_some(last)
        })
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // This test's tmux server only.
        let _ = self.tmux(&["kill-server"]).status();
        let _ = &self.world;
    }
}

/// A permission answered No, then a call allowed and cut by Escape: two interrupted turns,
/// each ended by the transcript (no hook fires after either).
fn reject_then_escape(which: Claude) {
    let Some(claude) = claude_or_skip(which) else {
        return;
    };
    // 2.1.332's manual mode asks at launch whether to make auto mode the default.
    let settings = match which {
        Claude::Oldest => "{}",
        Claude::Newest => r#"{"permissions": {"defaultMode": "manual"}}"#,
    };
    let Some(tui) = Tui::start(which, &claude, settings) else {
        return;
    };
    if which == Claude::Newest {
        tui.wait_screen("the auto-mode question", |s| {
            s.contains("No, keep manual mode")
        });
        tui.keys(&["Down"]);
        std::thread::sleep(Duration::from_millis(300));
        tui.keys(&["Enter"]);
    }
    tui.wait_screen("the prompt", |s| {
        s.contains('❯') && !s.contains("keep manual mode")
    });
    tui.prompt("Make a file. [[ask]]");
    tui.wait_row("the PermissionRequest", |r| {
        r["event"] == "PermissionRequest"
    });
    tui.answer_no();
    tui.wait_screen("the rejection", |s| s.contains("Interrupted"));
    tui.prompt("Wait a while. [[slow]]");
    let asked = |rows: &[Value]| {
        rows.iter()
            .filter(|r| r["event"] == "PermissionRequest")
            .count()
    };
    tui.wait_row("the second PermissionRequest", |_| asked(&tui.rows()) == 2);
    tui.wait_screen("the dialog", |s| s.contains("Do you want to proceed?"));
    tui.keys(&["1"]);
    std::thread::sleep(Duration::from_millis(300));
    tui.keys(&["Enter"]);
    tui.wait_screen("the call running", |s| {
        !s.contains("Do you want to proceed?") && s.contains("esc to interrupt")
    });
    tui.keys(&["Escape"]);
    tui.wait_screen("the interrupt", |s| s.matches("Interrupted").count() >= 2);
    let end = tui.exit();
    let turns = ledger(&end["turns"]);
    assert_eq!(
        turns,
        ["main interrupted 1", "main interrupted 1"],
        "{end}\nscreen:\n{}",
        tui.screen()
    );
    for turn in end["turns"].as_array().expect("turns") {
        assert_eq!(turn["ended_by"], "transcript", "{end}");
    }
    // No hook reported either end.
    let events: Vec<String> = tui
        .rows()
        .iter()
        .filter_map(|r| r["event"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !events
            .iter()
            .any(|e| e == "Stop" || e == "PostToolUseFailure"),
        "{events:?}"
    );
}

/// `hooktrack watch --ndjson --tmux` on the TUI's store and tmux server: the supervisor that
/// reads the agent's pane while it waits on the user.
///
/// The `tmux` it runs is a wrapper in front of the real one that logs each `capture-pane`
/// whose text holds the agent's dialog's look: when the watch has seen the dialog drawn.
struct Watcher {
    child: std::process::Child,
    output: PathBuf,
    reads: PathBuf,
    /// When each line was first read (ms), by line number (a line's `seen_at`).
    seen: std::cell::RefCell<Vec<i64>>,
}

impl Watcher {
    fn start(tui: &Tui, look: &str) -> Self {
        let store = tui.events.parent().expect("the store folder").to_owned();
        let output = tui.world.root.with_extension("watch.ndjson");
        let errors = tui.world.root.with_extension("watch.err");
        let reads = tui.world.root.with_extension("watch.reads");
        let wrap = tui.world.root.with_extension("wrap");
        crate::scratch_home::tmux_logging_dialogs(&wrap, &[look], &reads, "");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![wrap];
        paths.extend(std::env::split_paths(&path));
        let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"));
        watch
            .args(["watch", "--ndjson", "--tmux", "--tmux-socket", &tui.socket])
            .arg(&store);
        // The agent's home as the TUI has it (its HOME, no variable naming another), where
        // the watch finds the session file its payloads do not name (Copilot's log).
        for agent in hooktrack::Agent::ALL {
            if let Some(var) = agent.config().home_var() {
                watch.env_remove(var);
            }
        }
        let child = watch
            .env("HOME", &tui.world.home)
            .env_remove("TMUX")
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .stdin(Stdio::null())
            .stdout(fs::File::create(&output).expect("watch output"))
            .stderr(fs::File::create(&errors).expect("watch errors"))
            .spawn()
            .expect("hooktrack watch");
        Self {
            child,
            output,
            reads,
            seen: Default::default(),
        }
    }

    /// How many of the watch's pane reads so far showed the dialog.
    fn dialog_reads(&self) -> usize {
        fs::read_to_string(&self.reads)
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// The lines written so far (a line still being written is left for the next look).
    fn lines(&self) -> Vec<Value> {
        fs::read_to_string(&self.output)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .enumerate()
            .map(|(n, mut l): (usize, Value)| {
                let mut seen = self.seen.borrow_mut();
                if seen.len() <= n {
                    seen.resize(n + 1, wall_ms());
                }
                l["seen_at"] = seen[n].into();
                l
            })
            .collect()
    }

    /// Whether `line` shows the agent out of `blocked` (the lines looked at are those at
    /// or after the answer: [`Watcher::wait_line`]'s `since`).
    fn out_of_blocked(line: &Value) -> bool {
        line["phase"] != "blocked"
    }

    /// The first line at or after `since` (ms) for which `ok` holds (bounded).
    fn wait_line(&self, what: &str, since: i64, ok: impl Fn(&Value) -> bool) -> Value {
        wait_for(PATIENCE, what, || {
            self.lines()
                .into_iter()
                .find(|l| at_ms(&l["at"]).is_some_and(|at| at >= since) && ok(l))
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // This test's watch only.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hook rows received from `since` to `until` (ms): each event, when the agent fired
/// it (its payload's `timestamp`, where the agent writes one) and when the store received
/// it, in ms after `since`.
fn rows_between(rows: &[Value], since: i64, until: i64) -> String {
    let after = |v: &Value| at_ms(v).map(|at| (at - since).to_string());
    rows.iter()
        .filter(|r| at_ms(&r["received_at"]).is_some_and(|at| (since..=until).contains(&at)))
        .map(|r| {
            format!(
                "{} fired +{} received +{}",
                r["event"].as_str().unwrap_or("?"),
                after(&r["payload"]["timestamp"]).unwrap_or_else(|| "?".into()),
                after(&r["received_at"]).unwrap_or_else(|| "?".into()),
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A line's or row's time (RFC 3339) in milliseconds.
fn at_ms(v: &Value) -> Option<i64> {
    v.as_str()
        .and_then(hooktrack::Timestamp::parse_rfc3339)
        .map(|t| t.as_millis())
}

fn wall_ms() -> i64 {
    hooktrack::wall_clock().as_millis()
}

/// Claude Code 2.1.332's TUI in manual mode (every shell call asks), at its prompt.
fn manual_tui(claude: &Path) -> Option<Tui> {
    let tui = Tui::start(
        Claude::Newest,
        claude,
        r#"{"permissions": {"defaultMode": "manual"}}"#,
    )?;
    tui.wait_screen("the auto-mode question", |s| {
        s.contains("No, keep manual mode")
    });
    tui.keys(&["Down"]);
    std::thread::sleep(Duration::from_millis(300));
    tui.keys(&["Enter"]);
    tui.wait_screen("the prompt", |s| {
        s.contains('❯') && !s.contains("keep manual mode")
    });
    Some(tui)
}

/// One agent's permission dialog in its TUI, as `approve` answers it.
pub(crate) struct Asks {
    pub(crate) agent: hooktrack::Agent,
    /// Whether a hook row says a turn started.
    pub(crate) started: fn(&Value) -> bool,
    /// Whether a hook row says the dialog opened.
    pub(crate) asked: fn(&Value) -> bool,
    /// Whether a hook row is the end of the call asked about (`id`: its call id, where the
    /// agent's hooks name one).
    pub(crate) ended: fn(&Value, &str) -> bool,
    /// The kept screens' names: `<version>-<what>` (`-dialog.txt`, `-answered.txt`).
    pub(crate) screens: &'static str,
    /// For an agent whose descriptor reads no screen (a hook or its session log ends the
    /// dialog's window), a text the screen shows while the dialog is drawn; `None`: the
    /// descriptor's look.
    pub(crate) drawn: Option<&'static str>,
    /// The ledger's entry for the turn whose call was rejected (Qwen Code's call starts only
    /// once allowed: a rejected one is no call).
    pub(crate) rejected_turn: &'static str,
}

impl Asks {
    /// The descriptor's screen, where hooktrack reads the agent's pane.
    fn screen(&self) -> Option<hooktrack::agents::Screen> {
        self.agent.descriptor().screen
    }

    /// Whether `screen` draws the dialog.
    fn draws(&self, screen: &str) -> bool {
        match (self.screen(), self.drawn) {
            (Some(look), _) => look.draws_dialog(screen),
            (None, Some(text)) => screen.contains(text),
            (None, None) => panic!("{:?}'s screen is read or its dialog named", self.agent),
        }
    }

    /// The look the watch's tmux wrapper logs a read for.
    fn look(&self) -> &'static str {
        match (self.screen(), self.drawn) {
            (Some(look), _) => look.dialog[0].text,
            (None, Some(text)) => text,
            (None, None) => panic!("{:?}'s screen is read or its dialog named", self.agent),
        }
    }
}

/// Claude Code 2.1.332's `PermissionRequest` (it names no call id: any one counts) and
/// `PostToolUse`.
const CLAUDE_ASKS: Asks = Asks {
    agent: hooktrack::Agent::ClaudeCode,
    started: |r| r["event"] == "UserPromptSubmit",
    asked: |r| r["event"] == "PermissionRequest",
    ended: |r, id| r["event"] == "PostToolUse" && r["payload"]["tool_use_id"] == id,
    screens: "2.1.332-bash",
    drawn: None,
    rejected_turn: "main interrupted 1",
};

/// Prompts for the call `id` that asks, answers its dialog "Yes" as a person does (the
/// dialog drawn, the watch showing it blocked and having read it drawn; Enter on the
/// preselected "Yes"), and returns how long after the answer the watch showed the agent
/// running (ms) and when (ms), having checked that it did before the call's end hook, and
/// that the dialog was on screen as the descriptor says (its screens kept in `keep` the
/// first time).
fn approve(
    tui: &Tui,
    watch: &Watcher,
    asks: &Asks,
    prompt: &str,
    id: &str,
    keep: Option<&Path>,
) -> (i64, i64) {
    let before = tui.rows().iter().filter(|r| (asks.asked)(r)).count();
    // A call id may come back in a later prompt (the mock's scripts): this call's end is
    // the first end hook after those already there.
    let ends = |rows: &[Value]| rows.iter().filter(|r| (asks.ended)(r, id)).count();
    let ended_before = ends(&tui.rows());
    let reads = watch.dialog_reads();
    let since = wall_ms();
    tui.submit(prompt, asks.started);
    tui.wait_row("the dialog's hook", |_| {
        tui.rows().iter().filter(|r| (asks.asked)(r)).count() > before
    });
    let dialog = tui.wait_screen("the dialog", |s| s.contains(asks.look()));
    assert!(
        asks.draws(&dialog),
        "the descriptor does not know this dialog:\n{dialog}"
    );
    watch.wait_line("the watch showing the dialog", since, |l| {
        l["phase"] == "blocked"
    });
    // Answered once the watch has read the pane showing the dialog (an answer before that
    // leaves the screen nothing to end: the call's end would), where it reads the pane.
    if asks.screen().is_some() {
        wait_for(PATIENCE, "the watch reading the dialog drawn", || {
            (watch.dialog_reads() > reads).then_some(())
        });
    }
    // An Enter right after the dialog appeared was once not taken (the keystroke bench):
    // Enter again while the dialog stays drawn for a second and the watch still shows it;
    // the answer is the one that took (on a loaded machine the watch may see the dialog
    // gone before this pane's next capture does: then that Enter took).
    // Every press's time and when its keys were sent (ms): the first bounds the line
    // looked for (a press that took may have its line come after a later press), the one
    // that took is the last before this pane's capture saw the dialog gone.
    let mut presses: Vec<(i64, i64)> = Vec::new();
    // When this test's own capture of the pane first showed the dialog gone, and when the
    // last one that still showed it began: the screen changed between the two.
    let mut gone: Option<(i64, String)> = None;
    let mut drawn_at = None;
    for _ in 0..5 {
        // The lines so far read before the key (the session's are timed by their first read).
        watch.lines();
        let press = wall_ms();
        tui.keys(&["Enter"]);
        presses.push((press, wall_ms()));
        let first = presses[0].0;
        let pressed = std::time::Instant::now();
        let mut taken = || {
            if gone.is_some() {
                return true;
            }
            let capture = wall_ms();
            let screen = tui.screen();
            if asks.draws(&screen) {
                drawn_at = Some(capture);
            } else {
                gone = Some((wall_ms(), screen));
                return true;
            }
            watch.lines().iter().any(|l| {
                at_ms(&l["at"]).is_some_and(|at| at >= first) && Watcher::out_of_blocked(l)
            })
        };
        while !taken() && pressed.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if taken() {
            break;
        }
    }
    let first = presses[0].0;
    let running = watch.wait_line("the watch showing the agent running", first, |l| {
        Watcher::out_of_blocked(l)
    });
    let (gone_at, after) = match gone {
        Some(seen) => seen,
        None => {
            let after = tui.wait_screen("the call running", |s| !asks.draws(s));
            (wall_ms(), after)
        }
    };
    let (answered_at, sent_at) = presses
        .iter()
        .rev()
        .copied()
        .find(|(press, _)| *press <= gone_at)
        .unwrap_or(presses[0]);
    if let Some(dir) = keep {
        let name = |what: &str| dir.join(format!("{}-{what}.txt", asks.screens));
        fs::write(name("dialog"), &dialog).expect("keep the dialog");
        fs::write(name("answered"), after).expect("keep the screen");
    }
    let running_at = at_ms(&running["at"]).expect("the line's time");
    // Each stage after the Enter, for where a slow answer's time goes (and whether the pane
    // or a row said it first): the key sent, the pane (this test's captures: the dialog
    // went between the last with it and the first without it), the hook rows from the
    // answer to the watch's line, the watch's line (its `at` is when its step began, a
    // pane read's before the capture; this test's first read of it a bound from above).
    eprintln!(
        "after the Enter at {answered_at} (ms): keys sent +{}, pane with the dialog until {} \
         and without it from +{}, rows [{}], watch running +{} (read here +{})",
        sent_at - answered_at,
        drawn_at.map_or("no capture after the key".to_owned(), |at| format!(
            "+{}",
            at - answered_at
        )),
        gone_at - answered_at,
        rows_between(&tui.rows(), answered_at, running_at),
        running_at - answered_at,
        running["seen_at"].as_i64().unwrap_or(running_at) - answered_at,
    );
    let finished = wait_for(PATIENCE, "the call's end hook", || {
        let rows = tui.rows();
        (ends(&rows) > ended_before).then(|| {
            rows.iter()
                .filter(|r| (asks.ended)(r, id))
                .nth(ended_before)
                .and_then(|r| at_ms(&r["received_at"]))
                .expect("the end hook's time")
        })
    });
    assert_eq!(running["phase"], "active", "{running}");
    assert!(
        running_at < finished,
        "the watch showed the agent running only with the call's end hook ({running_at} ms, \
         the call finished at {finished} ms): the pane was not read as answered\n{running}"
    );
    (running_at - answered_at, running_at)
}

/// A 20-second call approved in the dialog: the watch shows the agent running as soon as
/// the pane no longer draws the dialog (no hook fires on the answer), and `success` at the
/// turn's end; a rejection then ends its turn as before (interrupted, by the transcript).
fn claude_code_2_1_332_tui_approved_dialog_shows_running_before_the_call_ends() {
    let Some(claude) = claude_or_skip(Claude::Newest) else {
        return;
    };
    let Some(tui) = manual_tui(&claude) else {
        return;
    };
    tui.wait_row("the SessionStart", |r| r["event"] == "SessionStart");
    let watch = Watcher::start(&tui, CLAUDE_ASKS.look());
    let keep = std::env::var_os("HOOKTRACK_E2E_SCREENS").map(PathBuf::from);
    let (took, since) = approve(
        &tui,
        &watch,
        &CLAUDE_ASKS,
        "Wait. [[wait20]]",
        "toolu_mock_t",
        keep.as_deref(),
    );
    eprintln!("answer to running: {took} ms");
    watch.wait_line("the turn's success", since, |l| {
        l["phase"] == "ready" && l["posture"]["last_turn"]["result"] == "success"
    });
    tui.prompt("Make a file. [[ask]]");
    tui.answer_no();
    tui.wait_screen("the rejection", |s| s.contains("Interrupted"));
    let end = tui.exit();
    let turns = ledger(&end["turns"]);
    assert_eq!(
        turns,
        ["main success 1", "main interrupted 1"],
        "{end}\nscreen:\n{}",
        tui.screen()
    );
    assert_eq!(end["turns"][1]["ended_by"], "transcript", "{end}");
}

/// Codex 0.171.0's `PermissionRequest` and the call's `PostToolUse` (by its `tool_use_id`).
const CODEX_ASKS: Asks = Asks {
    agent: hooktrack::Agent::Codex,
    started: |r| r["event"] == "UserPromptSubmit",
    asked: |r| r["event"] == "PermissionRequest",
    ended: |r, id| r["event"] == "PostToolUse" && r["payload"]["tool_use_id"] == id,
    screens: "0.171.0-session",
    drawn: None,
    rejected_turn: "main interrupted 1",
};

/// Gemini CLI 0.61.0's `Notification(ToolPermission)` (its only sign of the dialog) and the
/// call's `AfterTool` (its hooks name no call id: any one).
const GEMINI_ASKS: Asks = Asks {
    agent: hooktrack::Agent::GeminiCli,
    started: |r| r["event"] == "BeforeAgent",
    asked: |r| {
        r["event"] == "Notification" && r["payload"]["notification_type"] == "ToolPermission"
    },
    ended: |r, _| r["event"] == "AfterTool",
    screens: "0.61.0-session",
    drawn: None,
    rejected_turn: "main interrupted 1",
};

/// `cli`'s program from the npm install, tmux there, or a reported skip.
fn npm_tui_or_skip(cli: &str, label: &str) -> Option<PathBuf> {
    if let Err(e) = Command::new("tmux").arg("-V").output() {
        skip(&format!("{label} in tmux"), &format!("no tmux: {e}"));
        return None;
    }
    match npm_bin() {
        Ok(bin) => Some(bin.join(cli)),
        Err(reason) => {
            skip(label, &reason);
            None
        }
    }
}

/// Codex 0.171.0's TUI asking before a command that leaves the sandbox (`-a on-request`),
/// its hooks run untrusted (`--dangerously-bypass-hook-trust`), at its prompt.
fn codex_tui() -> Option<Tui> {
    let codex = npm_tui_or_skip("codex", "codex 0.171.0")?;
    let mock = Mock::start(&python());
    let world = World::new();
    let home = codex_home(&world, &mock);
    // The notices it shows once, seen: the screen-reader probe, a newer model's announcement.
    let mut config = fs::read_to_string(home.join("config.toml")).expect("config.toml");
    config += "\n[tui]\nscreen_reader_detection_done = true\n\n\
               [notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n";
    fs::write(home.join("config.toml"), config).expect("config.toml");
    let argv = [
        codex.into_os_string(),
        "--dangerously-bypass-hook-trust".into(),
        "-a".into(),
        "on-request".into(),
    ];
    let tui = Tui::launch(
        world,
        mock,
        "codex",
        &[("MOCK_API_KEY", "dummy".into())],
        &argv,
    );
    tui.wait_screen("the prompt", |s| s.contains("Ask Codex to do anything"));
    Some(tui)
}

/// Gemini CLI 0.61.0's TUI in its default approval mode (it asks before a shell call), the
/// folder's trust skipped, at its prompt.
fn gemini_tui() -> Option<Tui> {
    let gemini = npm_tui_or_skip("gemini", "gemini-cli 0.61.0")?;
    let mock = Mock::start(&python());
    let world = World::new();
    gemini_settings(&world, true);
    let env = gemini_env(&mock);
    let argv = os(&["-m", "gemini-2.5-flash", "--skip-trust"]);
    let argv: Vec<OsString> = std::iter::once(gemini.into_os_string())
        .chain(argv)
        .collect();
    let tui = Tui::launch(world, mock, "gemini", &env, &argv);
    tui.wait_screen("the prompt", |s| s.contains("Type your message"));
    Some(tui)
}

/// p50 and p99 (nearest rank) of `samples`, sorted in place.
fn p50_p99(samples: &mut [i64]) -> (i64, i64) {
    samples.sort_unstable();
    let rank = |p: usize| samples[(samples.len() * p).div_ceil(100).max(1) - 1];
    (rank(50), rank(99))
}

/// A 20-second call approved in `asks`'s dialog shows the agent running before the call's
/// end hook (where no hook fires on the answer, the pane or the session file says it), and
/// `success` at the turn's end; then `HOOKTRACK_E2E_DIALOGS` (default 0) 3-second calls
/// approved the same way, timed (p50, p99, max printed). `wait20` / `wait3`: the mock's call
/// ids; `busy`: what the TUI shows while a turn or its hooks run (an Enter then may not be
/// taken). Returns how many turns it ran.
pub(crate) fn approved_timed(
    tui: &Tui,
    asks: &Asks,
    (wait20, wait3): (&str, &str),
    busy: &[&str],
) -> usize {
    let store = tui.events.parent().expect("the store folder").to_owned();
    wait_for(PATIENCE, "the session's store", || {
        store.is_dir().then_some(())
    });
    let watch = Watcher::start(tui, asks.look());
    let keep = std::env::var_os("HOOKTRACK_E2E_SCREENS").map(PathBuf::from);
    let success = |since: i64| {
        watch.wait_line("the turn's success", since, |l| {
            l["phase"] == "ready" && l["posture"]["last_turn"]["result"] == "success"
        });
        tui.wait_screen("the TUI idle", |s| !busy.iter().any(|b| s.contains(b)));
    };
    let (took, since) = approve(
        tui,
        &watch,
        asks,
        "Wait. [[wait20]]",
        wait20,
        keep.as_deref(),
    );
    eprintln!("answer to running: {took} ms");
    success(since);
    let tries: usize = std::env::var("HOOKTRACK_E2E_DIALOGS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut samples = vec![took];
    for _ in 0..tries {
        let (took, since) = approve(tui, &watch, asks, "Wait. [[wait3]]", wait3, None);
        samples.push(took);
        success(since);
    }
    let n = samples.len();
    let (p50, p99) = p50_p99(&mut samples);
    eprintln!(
        "{:?}: answer to running over {n} dialogs: p50 {p50} ms, p99 {p99} ms, max {} ms",
        asks.agent,
        samples[n - 1]
    );
    n
}

/// [`approved_timed`], then a call rejected with Escape (the screen: `rejected`) ends its
/// turn as the agent's `rejected_turn` says.
pub(crate) fn approved_then_rejected(
    tui: &Tui,
    asks: &Asks,
    ids: (&str, &str),
    busy: &[&str],
    rejected: &str,
    quit: &str,
) {
    let approved = approved_timed(tui, asks, ids, busy);
    tui.submit("Make a file. [[reject]]", asks.started);
    tui.wait_screen("the second dialog", |s| asks.draws(s));
    tui.keys(&["Escape"]);
    tui.wait_screen("the rejection", |s| s.contains(rejected));
    let end = tui.quit(quit);
    let mut expected = vec!["main success 1"; approved];
    expected.push(asks.rejected_turn);
    assert_eq!(
        ledger(&end["turns"]),
        expected,
        "{end}\nscreen:\n{}",
        tui.screen()
    );
}

/// Codex 0.171.0: "Yes" in its command approval shows the agent running from the pane (no
/// hook fires on the answer, `PostToolUse` only 20 s later); Escape on the next one ("✗ You
/// canceled the request to run …") ends its turn interrupted.
fn codex_0_171_0_tui_approved_dialog_shows_running_before_the_call_ends() {
    let Some(tui) = codex_tui() else {
        return;
    };
    approved_then_rejected(
        &tui,
        &CODEX_ASKS,
        ("call_x_t", "call_x_3"),
        &["esc to interrupt"],
        "You canceled the request to run",
        "/quit",
    );
}

/// Gemini CLI 0.61.0: "Allow once" shows the agent running from the pane (its only hook,
/// `Notification(ToolPermission)`, opened the window; `AfterTool` comes 20 s later); Escape
/// on the next one ("Request cancelled.") ends its turn interrupted.
fn gemini_cli_0_61_0_tui_approved_dialog_shows_running_before_the_call_ends() {
    let Some(tui) = gemini_tui() else {
        return;
    };
    approved_then_rejected(
        &tui,
        &GEMINI_ASKS,
        ("", ""),
        // Seen: an Enter while "Executing Hooks: …" showed after a turn was not taken.
        &["esc to cancel", "Executing Hooks"],
        "Request cancelled.",
        "/quit",
    );
}

fn claude_code_2_1_197_tui_permission_answered_no_and_escape_during_a_tool() {
    reject_then_escape(Claude::Oldest);
}

fn claude_code_2_1_332_tui_permission_answered_no_and_escape_during_a_tool() {
    reject_then_escape(Claude::Newest);
}

fn claude_code_2_1_332_auto_mode_dialog_fires_only_a_notification() {
    let Some(claude) = claude_or_skip(Claude::Newest) else {
        return;
    };
    // The default mode is auto; behind the mock its server-side check cannot run.
    let Some(tui) = Tui::start(Claude::Newest, &claude, "{}") else {
        return;
    };
    tui.wait_screen("the prompt", |s| s.contains("auto mode on"));
    // A `touch` in the working folder runs unasked in auto mode; an `Agent` call asks.
    tui.prompt("Start a helper. [[bgagent]]");
    let rows = tui.wait_row("Notification(agent_needs_input)", |r| {
        r["event"] == "Notification" && r["payload"]["notification_type"] == "agent_needs_input"
    });
    let screen = tui.screen();
    assert!(screen.contains("Auto mode can't check actions"), "{screen}");
    assert!(
        !rows.iter().any(|r| r["event"] == "PermissionRequest"),
        "{rows:#?}"
    );
    // Escape cancels the dialog and the turn: the transcript's interrupt ends it. (That
    // the dialog reads `blocked` while it shows is issue 19's; the corpus's
    // claude-code-2.1.332-auto-dialog-background-subagent states it.)
    tui.keys(&["Escape"]);
    let end = tui.exit();
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{end}");
    assert_eq!(end["turns"][0]["ended_by"], "transcript", "{end}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(claude_code_tool_turn_through_session_ends_success_with_three_tools, [NpmClis]),
        e2e!(claude_code_failing_model_call_ends_known_failure, [NpmClis]),
        e2e!(two_concurrent_claude_sessions_land_in_two_stores_with_one_ledger_each, [NpmClis]),
        e2e!(codex_tool_turn_through_session_ends_success_with_three_tools, [NpmClis]),
        e2e!(an_untrusted_codex_hook_is_reported_by_check_and_by_session, [NpmClis]),
        e2e!(gemini_cli_tool_turn_through_session_ends_success_with_three_tools, [NpmClis]),
        e2e!(gemini_cli_without_an_auth_type_is_reported_before_it_runs, [NpmClis]),
        e2e!(codex_failing_model_call_ends_as_codex_reports_it, [NpmClis]),
        e2e!(gemini_cli_failing_model_call_ends_as_gemini_reports_it, [NpmClis]),
        e2e!(claude_code_2_1_332_tool_turn_through_session_installs_its_32_events, [ClaudeNewest]),
        e2e!(claude_code_2_1_197_runs_a_subagent_inside_its_turn, [NpmClis]),
        e2e!(claude_code_2_1_332_runs_a_subagent_in_the_background_and_reports_it_in_a_turn_of_its_own, [ClaudeNewest]),
        e2e!(claude_code_2_1_197_tui_permission_answered_no_and_escape_during_a_tool, [NpmClis, Tmux]),
        e2e!(claude_code_2_1_332_tui_permission_answered_no_and_escape_during_a_tool, [ClaudeNewest, Tmux]),
        e2e!(claude_code_2_1_332_auto_mode_dialog_fires_only_a_notification, [ClaudeNewest, Tmux]),
        e2e!(claude_code_2_1_332_tui_approved_dialog_shows_running_before_the_call_ends, [ClaudeNewest, Tmux]),
        e2e!(codex_0_171_0_tui_approved_dialog_shows_running_before_the_call_ends, [NpmClis, Tmux]),
        e2e!(gemini_cli_0_61_0_tui_approved_dialog_shows_running_before_the_call_ends, [NpmClis, Tmux]),
    ]
}
