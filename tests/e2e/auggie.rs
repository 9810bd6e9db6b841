//! End to end with Augment's Auggie 0.36.0 from npm (`@augmentcode/auggie`, one bundled
//! script run by the system's Node), installed once into `target/tmp/e2e-auggie`, driven
//! against `tests/e2e/mock_model.py` on 127.0.0.1 with a scratch HOME: the mock is its
//! tenant (`AUGMENT_SESSION_AUTH` names it), answers Augment's API and turns the hooks on
//! (the tenant flag `enable_hooks` in its `get-models` answer). Headless through
//! `hooktrack session` and after `hooktrack setup`, and its TUI in tmux.
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

const PACKAGES: [&str; 1] = ["@augmentcode/auggie@0.36.0"];
const WHAT: &str = "auggie 0.36.0";

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The cached install's `node_modules`.
pub(crate) fn installed() -> Result<PathBuf, String> {
    // It says "0.36.0 (commit 7c61e5bb)".
    npm_cli(&INSTALL, "e2e-auggie", &PACKAGES, "auggie", |version| {
        version.starts_with("0.36.0 ")
    })
}

/// A scratch HOME whose Auggie's tenant is the mock.
struct World {
    world: SessionWorld,
    modules: PathBuf,
    /// `AUGMENT_SESSION_AUTH`: a token and the mock's URL as the tenant.
    auth: String,
}

impl std::ops::Deref for World {
    type Target = SessionWorld;
    fn deref(&self) -> &SessionWorld {
        &self.world
    }
}

impl World {
    fn new(modules: &Path, mock: &Mock) -> Self {
        let auth = format!(
            r#"{{"accessToken":"x","tenantURL":"http://127.0.0.1:{}/","scopes":["email"]}}"#,
            mock.port
        );
        Self {
            world: SessionWorld::new(),
            modules: modules.to_owned(),
            auth,
        }
    }

    fn auggie(&self) -> PathBuf {
        self.modules.join(".bin/auggie")
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("HOME", &self.world.home)
            .env("AUGMENT_SESSION_AUTH", &self.auth)
            .env_remove("AUGMENT_API_TOKEN")
            .env_remove("AUGMENT_API_URL")
            .env_remove("TMUX_PANE");
    }

    /// `hooktrack session -- auggie ARGS`.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.session(self.auggie());
        cmd.args(args);
        self.env(&mut cmd);
        cmd
    }

    /// `hooktrack ARGS` (setup, replay) with this world's HOME and state folder.
    fn hooktrack(&self, state: &Path, args: &[&str]) -> String {
        let mut cmd = hooktrack();
        // `setup` finds Auggie on PATH.
        cmd.args(args)
            .env("XDG_STATE_HOME", state)
            .env("PATH", path_with(&self.modules.join(".bin")))
            .current_dir(&self.world.work);
        self.env(&mut cmd);
        for var in [
            "HOOKTRACK_URL",
            "HOOKTRACK_DIR",
            "HOOKTRACK_GENERATION",
            "HOOKTRACK_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        let out = cmd.output().expect("run hooktrack");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "hooktrack {args:?}: {text}");
        text
    }
}

/// Three calls (`launch-process`, `save-file`, `view`) in one `--print` turn: its `Stop`
/// (`end_turn`) ends it a success with the three calls, paired by name and input.
fn auggie_tool_turn_through_session_ends_success_with_three_tools() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);
    let (code, out, lines) = world
        .world
        .run(world.command(&["--print", "Run a command, write a file, read it. [[tools]]"]));
    let (_, end, context) = assert_tools_run(&world, code, &out, &lines, "auggie");
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    let settings =
        fs::read_to_string(world.home.join(".augment/settings.json")).expect("Auggie's settings");
    assert!(settings.contains("PromptSubmit"), "{settings}");
}

/// A 400 from the model: Auggie prints the error and exits 1, and fires no `Stop` (its
/// `PromptSubmit`, then `SessionEnd`): the hooks cannot tell how the turn ended.
fn auggie_failed_model_call_through_session_ends_unseen() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);
    let (code, out, lines) = world
        .world
        .run(world.command(&["--print", "Fail please. [[fail]]"]));
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(1), "{context}");
    let end = lines.last().expect("end line");
    assert_eq!(end["kind"], "end", "{context}");
    assert_eq!(ledger(&end["turns"]), ["main terminal_gap 0"], "{context}");
}

/// After `hooktrack setup`, a plain `auggie --print` (no session) delivers to Auggie's
/// default store, which replays as one successful turn.
fn auggie_after_setup_a_headless_turn_reaches_the_default_store() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e(WHAT, &reason),
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);
    let state = world.scratch("state");
    let mut cmd = Command::new(world.auggie());
    cmd.env("PATH", path_with(&modules.join(".bin")));
    world.env(&mut cmd);
    let said = world.hooktrack(&state, &["setup"]);
    assert!(said.contains("auggie"), "{said}");
    cmd.args(["--print", "Say hi. [[plain]]"])
        .env("XDG_STATE_HOME", &state)
        .current_dir(&world.work);
    for var in [
        "HOOKTRACK_URL",
        "HOOKTRACK_DIR",
        "HOOKTRACK_GENERATION",
        "HOOKTRACK_TOKEN",
    ] {
        cmd.env_remove(var);
    }
    let out = run_bounded(&mut cmd, PATIENCE).expect("auggie --print exits 0");
    assert!(out.contains("Hello from the mock model."), "{out}");
    let store = state.join("hooktrack/agents/auggie/events.ndjson");
    let rows: Vec<Value> = fs::read_to_string(&store)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let events: Vec<&str> = rows.iter().filter_map(|r| r["event"].as_str()).collect();
    assert_eq!(
        events,
        ["SessionStart", "PromptSubmit", "Stop", "SessionEnd"],
        "{rows:?}"
    );
    let report: Value = serde_json::from_str(&world.hooktrack(
        &state,
        &["replay", "--format", "json", &store.to_string_lossy()],
    ))
    .expect("replay json");
    assert_eq!(report["provider"]["provider"], "auggie", "{report}");
    let turns: Vec<String> = report["turns"]
        .as_array()
        .map(|turns| {
            turns
                .iter()
                .map(|t| format!("{} {}", t["scope"], t["result"]).replace('"', ""))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(turns, ["main success"], "{report}");
}

/// The TUI in tmux under `session`: a plain turn, then Escape while a `launch-process`
/// runs ("Interrupted by the user" on screen; `Stop` with `interrupted`), then `/quit`.
fn auggie_tui_escape_during_a_command_ends_interrupted() {
    let modules = match installed() {
        Ok(m) => m,
        Err(reason) => return skip_e2e("auggie 0.36.0 (tmux)", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip_e2e("auggie 0.36.0 (tmux)", "no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&modules, &mock);
    let cmd = world.command(&[]);
    let tmux = Tmux::start(
        format!("hooktrack-e2e-auggie-{}", std::process::id()),
        &cmd,
        &world.work,
        &world.home,
    );
    let limit = PATIENCE;
    // A first start shows onboarding pages (Enter continues, Escape skips), and may ask
    // whether to index the work folder, before the prompt's box; the tips pages say "esc
    // to skip", the indexing question (a work folder outside HOME) "Esc to skip": skipping
    // indexes nothing. Whatever shows, it is answered until the prompt's box is drawn.
    let started = std::time::Instant::now();
    let mut welcomed = false;
    loop {
        let screen = tmux.screen();
        if screen.contains("to show shortcuts") {
            break;
        }
        if !welcomed && screen.contains("Welcome to Augment") {
            tmux.keys(&["Enter"]);
            welcomed = true;
        } else if screen.to_lowercase().contains("esc to skip") {
            tmux.keys(&["Escape"]);
        }
        assert!(
            started.elapsed() < limit,
            "gave up waiting for the prompt; the screen:\n{screen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let said = |text: &str| tmux.screen().contains(text).then_some(());
    // hooktrack's entries are all valid to it: no warning under the banner (0.36.0 draws
    // "Some plugin hooks use unsupported configuration." for a `matcher` on an event that
    // takes none).
    let start = tmux.screen();
    assert!(!start.contains("unsupported configuration"), "{start}");
    tmux.keys(&["-l", "Say hi. [[plain]]"]);
    wait_for(limit, "the prompt typed", || said("[[plain]]"));
    tmux.keys(&["Enter"]);
    wait_for(limit, "the answer", || said("Hello from the mock model."));
    tmux.keys(&["-l", "Wait a while. [[slow]]"]);
    wait_for(limit, "the prompt typed", || said("[[slow]]"));
    tmux.keys(&["Enter"]);
    wait_for(limit, "the command running", || said("Executing tools"));
    tmux.keys(&["Escape"]);
    wait_for(limit, "the interrupt on screen", || {
        said("Interrupted by the user")
    });
    // `/quit`: the first Enter opens the command menu (`/ quit`, "exit (quit) Exit the
    // application"), the second runs it.
    tmux.keys(&["-l", "/quit"]);
    wait_for(limit, "/quit typed", || said("› /quit"));
    tmux.keys(&["Enter"]);
    wait_for(limit, "the command menu", || said("Exit the application"));
    tmux.keys(&["Enter"]);
    let end = wait_for(limit, "the session's end line", || {
        world.lines().into_iter().find(|l| l["kind"] == "end")
    });
    let context = format!("screen:\n{}\nsession:\n{:#?}", tmux.screen(), world.lines());
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 0", "main interrupted 1"],
        "{context}"
    );
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            auggie_tool_turn_through_session_ends_success_with_three_tools,
            [Auggie]
        ),
        e2e!(
            auggie_failed_model_call_through_session_ends_unseen,
            [Auggie]
        ),
        e2e!(
            auggie_after_setup_a_headless_turn_reaches_the_default_store,
            [Auggie]
        ),
        e2e!(
            auggie_tui_escape_during_a_command_ends_interrupted,
            [Auggie, Tmux]
        ),
    ]
}
