//! End to end with OpenCode 1.18.33 from npm (`opencode-ai`), installed once into
//! `target/tmp/e2e-opencode`, driven through `hooktrack session` against
//! `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME. OpenCode has no command
//! hooks: `session` writes hooktrack's plugin into `~/.config/opencode/plugin/`, which
//! OpenCode loads in-process.
//!
//! OpenCode npm-installs `@opencode-ai/plugin` into its config folder at start (even into
//! a folder with no plugin in it) unless it is there: the scratch config folder gets the
//! cached install's `package.json`, lock file and (linked) `node_modules`, so no run goes
//! to the registry.
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;
use crate::npm::{Asks, Tui, approved_timed};

const PACKAGES: [&str; 2] = ["opencode-ai@1.18.33", "@opencode-ai/plugin@1.18.33"];
const WHAT: &str = "opencode 1.18.33";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `node_modules`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached("e2e-opencode", &PACKAGES, |base| {
        run_bounded(
            Command::new(base.join("node_modules/.bin/opencode")).arg("--version"),
            PATIENCE,
        )
        .map(drop)
        .map_err(|e| format!("opencode installed but does not run: {e}"))
    })
    .map(|base| base.join("node_modules"));
    *guard = Some(result.clone());
    result
}

/// An OpenCode (or Kilo) config whose only provider is the mock, with `extra`'s keys on top.
pub(super) fn mock_config(mock: &Mock, extra: Value) -> Value {
    let mut doc = json!({
        "autoupdate": false,
        "share": "disabled",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": format!("http://127.0.0.1:{}/v1", mock.port), "apiKey": "x"},
            // The mock answers an `opencode…` model with OpenCode's tool names, which are
            // Kilo's too.
            "models": {"opencode-mock": {"name": "Mock"}}
        }},
        "model": "mock/opencode-mock"
    });
    if let (Some(doc), Some(extra)) = (doc.as_object_mut(), extra.as_object()) {
        doc.extend(extra.clone());
    }
    doc
}

/// A scratch HOME whose OpenCode config names the mock as its only provider.
struct World(SessionWorld);

impl std::ops::Deref for World {
    type Target = SessionWorld;
    fn deref(&self) -> &SessionWorld {
        &self.0
    }
}

impl World {
    fn new(modules: &Path, mock: &Mock, extra: Value) -> Self {
        let world = SessionWorld::new();
        let config = world.home.join(".config/opencode");
        fs::create_dir_all(&config).expect("mkdir");
        fs::write(
            config.join("opencode.json"),
            mock_config(mock, extra).to_string(),
        )
        .expect("config");
        // The cached install's project (its lock file included: without one OpenCode
        // reinstalls over the link), so OpenCode finds its package there and installs nothing.
        let base = modules.parent().expect("the cache folder");
        for file in ["package.json", "package-lock.json"] {
            fs::copy(base.join(file), config.join(file)).expect("copy the npm project");
        }
        std::os::unix::fs::symlink(modules, config.join("node_modules")).expect("symlink");
        Self(world)
    }

    /// `hooktrack session -- opencode ARGS` with the world's environment.
    fn command(&self, modules: &Path, args: &[&str]) -> Command {
        let mut cmd = self.session(modules.join(".bin/opencode"));
        cmd.args(args)
            // OpenCode takes its project folder from `$PWD` when it is set.
            .env("PWD", &self.work)
            .env("OPENCODE_DISABLE_MODELS_FETCH", "true")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("OPENCODE_CONFIG_DIR")
            .env_remove("OPENCODE_PURE");
        cmd
    }

    /// `hooktrack session -- opencode run PROMPT`, to its end.
    fn run(&self, modules: &Path, prompt: &str) -> (Option<i32>, String, Vec<Value>) {
        self.0.run(self.command(modules, &["run", prompt]))
    }
}

fn opencode_tool_turn_through_session_ends_success_with_three_tools() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    let (code, out, lines) = world.run(&modules, "Run a command, write a file, read it. [[tools]]");
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "opencode");
    // `busy` … `idle` is one turn whatever OpenCode repeats in between; its three tool
    // parts pair by `callID`.
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let plugin = fs::read_to_string(world.home.join(".config/opencode/plugin/hooktrack.js"))
        .expect("the plugin");
    assert!(
        plugin.starts_with("// hooktrack observer plugin "),
        "{plugin}"
    );
    // OpenCode installed nothing over the cached packages.
    assert!(
        fs::symlink_metadata(world.home.join(".config/opencode/node_modules"))
            .expect("node_modules")
            .file_type()
            .is_symlink()
    );
}

fn opencode_failed_model_call_through_session_ends_known_failure() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    let (code, out, lines) = world.run(&modules, "This call fails. [[fail]]");
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(1), "{context}");
    let end = lines.last().expect("end line");
    // `session.error {name: APIError}` settles the turn before its `idle`.
    assert_eq!(ledger(&end["turns"]), ["main known_failure 0"], "{context}");
}

/// OpenCode retries a model call that failed with a 500 by itself: its status goes busy,
/// retry, busy (once or twice), idle. One prompt, one turn (it was one per `busy`, all but
/// the last `terminal_gap`). Recorded as
/// `corpus/opencode/opencode-1.18.33-retry-headless`.
fn opencode_a_model_call_it_retries_is_one_turn() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    let (code, out, lines) = world.run(&modules, "Say hello. [[retry]]");
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    assert!(out.contains("Hello from the mock model."), "{context}");
    let statuses = session_statuses(&world.root.join("hook-observation/opencode/events.ndjson"));
    // One retry or two: OpenCode's title call, made beside the answer's, may take one of
    // the mock's two failures. Each wait ends in `busy` again.
    let retries = statuses.iter().filter(|s| *s == "retry").count();
    let mut expected = vec!["busy"];
    for _ in 0..retries {
        expected.extend(["retry", "busy"]);
    }
    expected.push("idle");
    assert!(retries >= 1, "{statuses:?}\n{context}");
    assert_eq!(statuses, expected, "{context}");
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main success 0"], "{context}");
}

/// With `$XDG_CONFIG_HOME` set elsewhere, OpenCode reads its config and plugins from
/// `$XDG_CONFIG_HOME/opencode/`: `session` installs the plugin there, and it delivers (it
/// was installed under `~/.config/opencode/`, never loaded, and nothing arrived).
fn opencode_with_xdg_config_home_elsewhere_gets_its_plugin_there() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    // The world's OpenCode folder, moved where `$XDG_CONFIG_HOME` points.
    let xdg = world.work.parent().expect("the world").join("xdg");
    fs::create_dir_all(&xdg).expect("mkdir xdg");
    fs::rename(world.home.join(".config/opencode"), xdg.join("opencode")).expect("move");
    let mut cmd = world.command(
        &modules,
        &["run", "Run a command, write a file, read it. [[tools]]"],
    );
    cmd.env("XDG_CONFIG_HOME", &xdg);
    let (code, out, lines) = world.0.run(cmd);
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "opencode");
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    assert!(
        xdg.join("opencode/plugin/hooktrack.js").is_file(),
        "{context}"
    );
    assert!(
        !world
            .home
            .join(".config/opencode/plugin/hooktrack.js")
            .exists(),
        "{context}"
    );
}

fn opencode_run_permission_auto_rejected_is_known_failure() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({"permission": {"bash": "ask"}}));
    let (code, out, lines) = world.run(&modules, "Create a file. [[perm]]");
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    assert!(!world.work.join("approved.txt").exists(), "{context}");
    // Headless OpenCode rejects the request itself: the turn was blocked on it, then the
    // rejected call ends it, a failure of the run (nobody was asked, nobody interrupted).
    let blocked = lines
        .iter()
        .any(|l| l["event"] == "permission.asked" && l["posture"]["turn"]["phase"] == "blocked");
    assert!(blocked, "{context}");
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main known_failure 1"], "{context}");
}

fn opencode_escape_twice_during_a_tool_in_tmux_ends_interrupted() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e("opencode 1.18.33 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip_e2e("opencode 1.18.33 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    // The session's whole command line and environment, in a script tmux runs.
    let cmd = world.command(&modules, &[]);
    let (end, context) = escape_twice_during_a_slow_call(&world, &cmd, "opencode");
    // `session.error {MessageAbortedError}` ends the turn before its `idle`.
    assert_eq!(ledger(&end["turns"]), ["main interrupted 1"], "{context}");
}

/// OpenCode's TUI (or Kilo's: the same TUI) in a private tmux server running `cmd`: a slow
/// bash call, Escape twice while it runs (the first only arms the interrupt: "esc again to
/// interrupt"), then Ctrl-C twice. The session's end line, and the screen and lines for a
/// failure's message.
pub(super) fn escape_twice_during_a_slow_call(
    world: &SessionWorld,
    cmd: &Command,
    name: &str,
) -> (Value, String) {
    let tmux = Tmux::start(
        format!("hooktrack-e2e-{name}-{}", std::process::id()),
        cmd,
        &world.work,
        &world.home,
    );
    let limit = PATIENCE;
    let seen = |event: &str, status: &str| {
        world
            .lines()
            .iter()
            .any(|l| l["event"] == event && l["changed"].to_string().contains(status))
            .then_some(())
    };
    wait_for(limit, "the TUI's input box", || {
        tmux.screen().contains("Ask anything").then_some(())
    });
    tmux.keys(&["-l", "Wait a while. [[slow]]"]);
    wait_for(limit, "the prompt typed", || {
        tmux.screen().contains("[[slow]]").then_some(())
    });
    tmux.keys(&["Enter"]);
    wait_for(limit, "the slow bash call running", || {
        seen("message.part.updated", "tools")
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "the second Escape's prompt", || {
        tmux.screen().contains("esc again").then_some(())
    });
    tmux.keys(&["Escape"]);
    wait_for(limit, "the turn's end", || {
        seen("session.error", "interrupted")
    });
    tmux.keys(&["C-c"]);
    std::thread::sleep(Duration::from_millis(500));
    tmux.keys(&["C-c"]);
    let end = wait_for(limit, "the session's end line", || {
        world.lines().into_iter().find(|l| l["kind"] == "end")
    });
    let context = format!("screen:\n{}\nsession:\n{:#?}", tmux.screen(), world.lines());
    (end, context)
}

/// OpenCode's (or Kilo's) dialog as the plugin reports it: `permission.asked` opens it
/// (`permission.replied` ends it); a turn starts at `session.status` `busy`, the call asked
/// about ends at its tool part `completed` (by `callID`). The TUI draws it as
/// `△ Permission required`; hooktrack does not read that pane.
pub(super) fn plugin_asks(agent: hooktrack::Agent, screens: &'static str) -> Asks {
    Asks {
        agent,
        started: |r| {
            r["event"] == "session.status" && r["payload"]["properties"]["status"]["type"] == "busy"
        },
        asked: |r| r["event"] == "permission.asked",
        ended: |r, id| {
            let part = &r["payload"]["properties"]["part"];
            r["event"] == "message.part.updated"
                && part["callID"] == id
                && part["state"]["status"] == "completed"
        },
        screens,
        drawn: Some("Permission required"),
        // Not rejected here (Escape on Kilo's dialog opens a second one).
        rejected_turn: "main interrupted 1",
    }
}

/// OpenCode's (or Kilo's) TUI in tmux through `hooktrack session` (`argv`: the agent and
/// its arguments, `env` its environment), its config asking before bash calls: a 20-second
/// call allowed ("Allow once", preselected: Enter) shows the agent running from the
/// plugin's `permission.replied`, before the call's end, and `success` at the turn's end
/// (then `HOOKTRACK_E2E_DIALOGS` 3-second ones, timed); `/exit` ends the session with every
/// turn a success.
pub(super) fn allowed_dialogs_show_running_before_the_call_ends(
    world: SessionWorld,
    mock: Mock,
    store: &str,
    env: &[(&str, std::ffi::OsString)],
    argv: &[std::ffi::OsString],
    asks: &Asks,
) {
    // `launch` unsets no XDG folder: the world's own, as when they are unset.
    let mut env = env.to_vec();
    env.push(("XDG_CONFIG_HOME", world.home.join(".config").into()));
    env.push(("XDG_DATA_HOME", world.home.join(".local/share").into()));
    let tui = Tui::launch(world, mock, store, &env, argv);
    tui.wait_screen("the TUI's input box", |s| s.contains("Ask anything"));
    let approved = approved_timed(&tui, asks, ("call_o_t", "call_o_3"), &["esc interrupt"]);
    let end = tui.quit("/exit");
    assert_eq!(
        ledger(&end["turns"]),
        vec!["main success 1"; approved],
        "{end}"
    );
}

/// Issue 33 item 1: OpenCode 1.18.33's "Allow once" shows the agent running from the
/// plugin's `permission.replied` (the tool part completes 20 s later).
fn opencode_tui_allowed_dialog_shows_running_before_the_call_ends() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e("opencode 1.18.33 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip_e2e("opencode 1.18.33 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let World(world) = World::new(&modules, &mock, json!({"permission": {"bash": "ask"}}));
    allowed_dialogs_show_running_before_the_call_ends(
        world,
        mock,
        "opencode",
        &[("OPENCODE_DISABLE_MODELS_FETCH", "true".into())],
        &[modules.join(".bin/opencode").into()],
        &plugin_asks(hooktrack::Agent::OpenCode, "1.18.33-tui"),
    );
}

/// `check opencode` asks OpenCode itself (`opencode debug info`) which plugins it loads:
/// the installed plugin is listed; `OPENCODE_PURE=1` stops it; a valid plugin file in a
/// folder OpenCode does not read is not listed.
fn check_opencode_asks_opencode_whether_it_loads_the_plugin() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    check_asks_whether_the_plugin_loads(&world, &modules.join(".bin/opencode"), OPENCODE, "true");
}

/// An agent that loads OpenCode's plugin: its name, its label in findings, the prefix of
/// its environment variables (`{prefix}_PURE`, `{prefix}_CONFIG_DIR`, ...).
pub(super) struct PluginAgent {
    pub(super) name: &'static str,
    pub(super) label: &'static str,
    pub(super) env_prefix: &'static str,
}

const OPENCODE: PluginAgent = PluginAgent {
    name: "opencode",
    label: "OpenCode",
    env_prefix: "OPENCODE",
};

/// `install NAME`, then `check NAME` against the agent itself (`NAME debug info`): the
/// plugin is listed; `{prefix}_PURE=pure` stops it; the same plugin text in a folder the
/// agent does not read is not listed.
pub(super) fn check_asks_whether_the_plugin_loads(
    world: &SessionWorld,
    bin: &Path,
    agent: PluginAgent,
    pure: &str,
) {
    let var = |suffix: &str| format!("{}_{suffix}", agent.env_prefix);
    let run = |args: &[&str], pure: Option<&str>| {
        let mut cmd = hooktrack();
        cmd.args(args)
            .arg("--agent-bin")
            .arg(bin)
            .current_dir(&world.work)
            .env("HOME", &world.home)
            .env(var("DISABLE_MODELS_FETCH"), "true")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove(var("CONFIG_DIR"))
            .env_remove(var("PURE"));
        if let Some(pure) = pure {
            cmd.env(var("PURE"), pure);
        }
        let out = cmd.output().expect("run hooktrack");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let out = hooktrack()
        .args(["install", agent.name])
        .env("HOME", &world.home)
        .env_remove(var("CONFIG_DIR"))
        .output()
        .expect("install");
    assert!(out.status.success(), "{out:?}");
    let (ok, text) = run(&["check", agent.name], None);
    assert!(ok, "{text}");
    assert!(text.starts_with("ok: "), "{text}");

    let (ok, text) = run(&["check", agent.name], Some(pure));
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "{}={pure} in the environment makes {} skip every external plugin",
            var("PURE"),
            agent.label
        )),
        "{text}"
    );

    // The same plugin text where the agent does not look for plugins.
    let elsewhere = world.work.join("elsewhere/hooktrack.js");
    fs::create_dir_all(elsewhere.parent().expect("parent")).expect("mkdir");
    fs::copy(
        world
            .home
            .join(format!(".config/{}/plugin/hooktrack.js", agent.name)),
        &elsewhere,
    )
    .expect("copy");
    let path = elsewhere.to_string_lossy().into_owned();
    let (ok, text) = run(&["check", agent.name, "--config", &path], None);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "`{} debug info` does not list this file among the plugins {} loads",
            agent.name, agent.label
        )),
        "{text}"
    );
}

/// `session -- opencode --pure` says once that the plugin will not load, and runs the
/// agent all the same.
fn session_with_opencode_pure_says_so_once_and_goes_on() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock, json!({}));
    let (code, _, lines) = world
        .0
        .run(world.command(&modules, &["--pure", "run", "Say hello."]));
    assert_one_finding_then_a_whole_run(
        code,
        &lines,
        "`--pure` makes OpenCode skip every external plugin",
    );
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            opencode_tool_turn_through_session_ends_success_with_three_tools,
            [OpenCode]
        ),
        e2e!(
            opencode_failed_model_call_through_session_ends_known_failure,
            [OpenCode]
        ),
        e2e!(opencode_a_model_call_it_retries_is_one_turn, [OpenCode]),
        e2e!(
            opencode_with_xdg_config_home_elsewhere_gets_its_plugin_there,
            [OpenCode]
        ),
        e2e!(
            opencode_run_permission_auto_rejected_is_known_failure,
            [OpenCode]
        ),
        e2e!(
            opencode_escape_twice_during_a_tool_in_tmux_ends_interrupted,
            [OpenCode, Tmux]
        ),
        e2e!(
            opencode_tui_allowed_dialog_shows_running_before_the_call_ends,
            [OpenCode, Tmux]
        ),
        e2e!(
            check_opencode_asks_opencode_whether_it_loads_the_plugin,
            [OpenCode]
        ),
        e2e!(
            session_with_opencode_pure_says_so_once_and_goes_on,
            [OpenCode]
        ),
    ]
}
