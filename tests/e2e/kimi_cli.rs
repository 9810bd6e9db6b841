//! End to end with a real agent CLI: Kimi CLI 1.52.0 from PyPI, in a cached virtualenv,
//! driven offline against `tests/e2e/mock_model.py`, observed by `hooktrack session`.
//!
//! Needs a CPython >= 3.12 (kimi-cli 1.52.0's Requires-Python) and PyPI for the first
//! run (`HOOKTRACK_E2E_PYTHON` names one). Without either a test is reported as ignored
//! with the reason (`main.rs`); with `HOOKTRACK_E2E_REQUIRE=1` it fails instead. Also the
//! `run_bounded`; the mock model server every end-to-end test drives its agent against is
//! `mock.rs`'s.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::util::*;

const KIMI_CLI: &str = "kimi-cli==1.52.0";

/// Kimi CLI's prerequisites, found ready by the harness before the test (`main.rs`),
/// failed in it: a failure, naming them.
fn skip(reason: &str) {
    skip_e2e(
        "Kimi CLI 1.52.0 (set HOOKTRACK_E2E_PYTHON to a CPython >= 3.12)",
        reason,
    );
}

/// `(major, minor)` of a Python binary, if it runs.
fn python_version(python: &Path) -> Option<(u32, u32)> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sys; print(sys.version_info[0], sys.version_info[1])",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace().map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// A CPython >= 3.12: $HOOKTRACK_E2E_PYTHON, python3.1x or python3 on PATH, or a pyenv
/// or uv managed one.
pub(crate) fn find_python() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("HOOKTRACK_E2E_PYTHON") {
        let p = PathBuf::from(p);
        return match python_version(&p) {
            Some(v) if v >= (3, 12) => Ok(p),
            Some((a, b)) => Err(format!(
                "HOOKTRACK_E2E_PYTHON is Python {a}.{b}, need >= 3.12"
            )),
            None => Err(format!("HOOKTRACK_E2E_PYTHON={} does not run", p.display())),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["python3.14", "python3.13", "python3.12", "python3"] {
            candidates.push(dir.join(name));
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    let mut managed: Vec<PathBuf> = Vec::new();
    if let Some(root) = pyenv {
        managed.push(root.join("versions"));
    }
    if let Some(h) = &home {
        managed.push(h.join(".local/share/uv/python"));
    }
    for dir in managed {
        if let Ok(entries) = fs::read_dir(&dir) {
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path().join("bin/python3"))
                .collect();
            found.sort();
            found.reverse();
            candidates.extend(found);
        }
    }
    let mut seen = Vec::new();
    let mut best: Option<((u32, u32), PathBuf)> = None;
    for c in candidates {
        if !c.is_file() {
            continue;
        }
        let Some(v) = python_version(&c) else {
            continue;
        };
        seen.push(format!("{} is {}.{}", c.display(), v.0, v.1));
        if v >= (3, 12) && best.as_ref().is_none_or(|(b, _)| v > *b) {
            best = Some((v, c));
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        format!(
            "no CPython >= 3.12 found (kimi-cli 1.52.0 has Requires-Python >=3.12); saw: {}",
            if seen.is_empty() {
                "no python at all".to_owned()
            } else {
                seen.join(", ")
            }
        )
    })
}

pub(super) fn run_bounded(cmd: &mut Command, limit: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    // Drain the pipes on threads so a chatty pip cannot block.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        let tail: Vec<&str> = stderr.lines().rev().take(4).collect();
        Err(format!(
            "{:?} failed ({status}): {}",
            cmd.get_program(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ))
    }
}

/// The cached virtualenv with kimi-cli installed: `target/tmp/e2e/<python>/venv`.
pub(crate) fn kimi_venv(python: &Path) -> Result<PathBuf, String> {
    let version = python_version(python).ok_or("python stopped working")?;
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(format!("kimi-cli-1.52.0-py{}.{}", version.0, version.1));
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let lock = fs::File::create(base.join(".lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let venv = base.join("venv");
    let ready = base.join("ready");
    let venv_python = venv.join("bin/python");
    if ready.exists() && venv_python.is_file() {
        return Ok(venv);
    }
    let _ = fs::remove_dir_all(&venv);
    run_bounded(
        Command::new(python).args(["-m", "venv"]).arg(&venv),
        Duration::from_secs(300),
    )
    .map_err(|e| format!("cannot create a virtualenv: {e}"))?;
    run_bounded(
        Command::new(&venv_python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                KIMI_CLI,
            ])
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        Duration::from_secs(900),
    )
    .map_err(|e| format!("cannot install {KIMI_CLI} from PyPI: {e}"))?;
    run_bounded(
        Command::new(&venv_python).args([
            "-c",
            "import kimi_cli.__main__, kimi_cli.hooks.config as c; assert len(c.HOOK_EVENT_TYPES) == 13",
        ]),
        PATIENCE,
    )
    .map_err(|e| format!("{KIMI_CLI} installed but does not import: {e}"))?;
    fs::write(&ready, "").map_err(|e| e.to_string())?;
    Ok(venv)
}

pub(crate) use super::mock::Mock;

/// `hooktrack session` running the real Kimi CLI in print mode (stream-json in and out,
/// `--yolo`) from the venv, in `work` with `home` as `$HOME`, every standard stream piped;
/// no Kimi or hooktrack variables from the test's environment.
fn kimi_session(
    root: &Path,
    output: &Path,
    venv_python: &Path,
    work: &Path,
    home: &Path,
) -> Command {
    let mut cmd = hooktrack();
    cmd.args(["session", "--agent", "kimi-cli", "--format", "ndjson", "--root"])
        .arg(root)
        .arg("--output")
        .arg(output)
        .arg("--")
        .arg(venv_python)
        .args([
            "-c",
            "import sys; from kimi_cli.__main__ import run_original_cli; sys.exit(run_original_cli(sys.argv[1:]))",
            "--print",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--yolo",
        ])
        .current_dir(work)
        .env("HOME", home)
        .env_remove("KIMI_SHARE_DIR")
        .env_remove("KIMI_BASE_URL")
        .env_remove("KIMI_API_KEY")
        .env_remove("HOOKTRACK_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn kimi_cli_multi_turn_session_with_tools_is_tracked_live() {
    let python = match find_python() {
        Ok(p) => p,
        Err(reason) => return skip(&reason),
    };
    let venv = match kimi_venv(&python) {
        Ok(v) => v,
        Err(reason) => return skip(&reason),
    };
    let venv_python = venv.join("bin/python");
    let mock = Mock::start(&venv_python);

    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    let root = tmp.path().join("root");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&work).expect("mkdir");
    let config = home.join(".kimi/config.toml");
    let operator = format!(
        "# scratch config for the end-to-end test\n\
         default_model = \"mock\"\n\
         telemetry = false\n\n\
         [providers.mockprov]\n\
         type = \"kimi\"\n\
         base_url = \"http://127.0.0.1:{}/v1\"\n\
         api_key = \"dummy\"\n\n\
         [models.mock]\n\
         provider = \"mockprov\"\n\
         model = \"kimi-mock\"\n\
         max_context_size = 131072\n",
        mock.port
    );
    fs::write(&config, &operator).expect("write config");
    let output = tmp.path().join("session.ndjson");
    let prompts = concat!(
        r#"{"role":"user","content":"Run a command, write a file, read it back. [[tools]]"}"#,
        "\n",
        r#"{"role":"user","content":"Now just say hello. [[plain]]"}"#,
        "\n"
    );
    let mut session = kimi_session(&root, &output, &venv_python, &work, &home)
        .spawn()
        .expect("spawn session");
    session
        .stdin
        .take()
        .expect("stdin")
        .write_all(prompts.as_bytes())
        .expect("prompts");
    let status = wait_child(&mut session, Duration::from_secs(240));
    let mut agent_out = String::new();
    let _ =
        std::io::Read::read_to_string(&mut session.stdout.take().expect("stdout"), &mut agent_out);
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut session.stderr.take().expect("stderr"), &mut stderr);
    let context = format!("agent stdout:\n{agent_out}\nstderr:\n{stderr}");
    assert_eq!(status.code(), Some(0), "{context}");
    // The model's scripted answers reached the user: the CLI really ran both turns.
    assert!(
        agent_out.contains("The file holds two lines. Done."),
        "{context}"
    );
    assert!(
        agent_out.contains("Hello from the mock model."),
        "{context}"
    );
    assert_eq!(
        fs::read_to_string(work.join("notes.txt")).expect("the WriteFile tool ran"),
        "line one\nline two\n"
    );

    // The operator's bytes are kept; the observer block stays, routed by the environment
    // (a user-global config is written once, not per session).
    let after = fs::read_to_string(&config).expect("config");
    assert!(after.starts_with(&operator), "{after}");
    assert!(after.contains("# >>> hooktrack kimi observer (routed by environment"));
    assert!(!after.contains("--generation"), "{after}");

    // The store: every hook of both turns, over HTTP, whole rows.
    let store = root.join("hook-observation/kimi-cli");
    let rows = session_rows(&store.join("events.ndjson"), 1);
    let count = |name: &str| rows.iter().filter(|r| r["event"] == name).count();
    assert_eq!(count("SessionStart"), 1, "{rows:#?}");
    assert_eq!(count("UserPromptSubmit"), 2);
    assert_eq!(count("PreToolUse"), 3);
    assert_eq!(count("PostToolUse"), 3);
    assert_eq!(count("Stop"), 2);
    assert_eq!(count("SessionEnd"), 1);
    assert!(rows.iter().all(|r| r["via"] == "http"), "{rows:#?}");
    assert!(
        rows.iter()
            .all(|r| r["provider"] == "kimi-cli" && r["generation"] == 1)
    );
    let tool_ids: Vec<&str> = rows
        .iter()
        .filter(|r| r["event"] == "PreToolUse")
        .filter_map(|r| r["payload"]["tool_call_id"].as_str())
        .collect();
    let mut sorted = tool_ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["call_t_0", "call_t_1", "call_t_2"]);
    // Kimi CLI's own payload bytes (Python json.dumps spacing) are in the row verbatim.
    let raw = fs::read_to_string(store.join("events.ndjson")).expect("events");
    assert!(raw.contains(r#""payload":{"hook_event_name": "UserPromptSubmit", "session_id": ""#));

    // What the session tracked live: the posture went active with the first prompt,
    // tool calls opened and closed, and the ledger has two successful main turns.
    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .expect("session output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    assert_eq!(lines[0]["install"]["ok"], true, "{:?}", lines[0]);
    let phases: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "event")
        .filter_map(|l| l["changed"]["phase"].as_str())
        .collect();
    assert_eq!(
        phases,
        ["ready", "active", "ready", "active", "ready", "unknown"]
    );
    let max_open = lines
        .iter()
        .filter_map(|l| l["posture"]["turn"]["open_tool_calls"].as_u64())
        .max();
    assert!(max_open >= Some(1), "tool calls were tracked open");
    let end = lines.last().expect("end line");
    assert_eq!(end["kind"], "end");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(ledger(&end["turns"]), ["main success 3", "main success 0"]);
    assert_eq!(end["final"]["presence"], "absent");
    assert_eq!(end["final"]["last_turn"]["result"], "success");
    assert_eq!(end["final"]["turn"]["open_tool_calls"], 0);
    assert_eq!(end["collector"]["rejected"], 0);
    assert_eq!(end["collector"]["accepted"], rows.len());
    // No bad line, no duplicate, no unknown event. (Kimi CLI fires PostToolUse without
    // waiting, so a late PostToolUse may legitimately leave an ordering note.)
    let counters = end["diagnostics"]["counters"]
        .as_object()
        .expect("counters");
    let bad: Vec<&String> = counters
        .iter()
        .filter(|(k, v)| {
            (k.starts_with("line_") || *k == "duplicate_delivery" || *k == "unknown_event")
                && v.as_u64() != Some(0)
        })
        .map(|(k, _)| k)
        .collect();
    assert!(bad.is_empty(), "diagnostics: {counters:?}");

    // Replaying the store gives the same ledger.
    let replay = replay_json(&store.join("events.ndjson"));
    assert_eq!(ledger(&replay["turns"]), ledger(&end["turns"]));
    assert_eq!(replay["provider"]["provider"], "kimi-cli");
}

fn kimi_cli_failing_model_call_ends_known_failure() {
    let python = match find_python() {
        Ok(p) => p,
        Err(reason) => return skip(&reason),
    };
    let venv = match kimi_venv(&python) {
        Ok(v) => v,
        Err(reason) => return skip(&reason),
    };
    let venv_python = venv.join("bin/python");
    let mock = Mock::start(&venv_python);
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&work).expect("mkdir");
    fs::write(
        home.join(".kimi/config.toml"),
        format!(
            "default_model = \"mock\"\ntelemetry = false\n\n[providers.mockprov]\n\
             type = \"kimi\"\nbase_url = \"http://127.0.0.1:{}/v1\"\napi_key = \"dummy\"\n\n\
             [models.mock]\nprovider = \"mockprov\"\nmodel = \"kimi-mock\"\n\
             max_context_size = 131072\n",
            mock.port
        ),
    )
    .expect("write config");
    let output = tmp.path().join("session.ndjson");
    let mut session = kimi_session(
        &tmp.path().join("root"),
        &output,
        &venv_python,
        &work,
        &home,
    )
    .spawn()
    .expect("spawn session");
    session
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"{\"role\":\"user\",\"content\":\"This call fails. [[fail]]\"}\n")
        .expect("prompt");
    let status = wait_child(&mut session, Duration::from_secs(240));
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut session.stderr.take().expect("stderr"), &mut stderr);
    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .expect("session output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    let context = format!("status {status}\nstderr:\n{stderr}\nsession:\n{lines:#?}");
    let store = tmp.path().join("root/hook-observation/kimi-cli");
    let events: Vec<String> = session_rows(&store.join("events.ndjson"), 1)
        .iter()
        .filter_map(|r| r["event"].as_str().map(str::to_owned))
        .collect();
    // Kimi CLI 1.52 reports the failed model call with StopFailure: a known failure.
    let end = lines.last().expect("end line");
    assert_eq!(status.code(), Some(1), "{context}");
    assert_eq!(ledger(&end["turns"]), ["main known_failure 0"], "{context}");
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "StopFailure",
            "SessionEnd"
        ],
        "{context}"
    );
    assert!(end.get("warning").is_none(), "{context}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            kimi_cli_multi_turn_session_with_tools_is_tracked_live,
            [KimiCli]
        ),
        e2e!(kimi_cli_failing_model_call_ends_known_failure, [KimiCli]),
    ]
}
