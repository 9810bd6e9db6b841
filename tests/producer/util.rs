//! Helpers for the producer tests: real `hooktrack` processes, bounded waits only.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "test-token-0123456789abcdef0123456789abcdef0123456789abcdef";

pub fn hooktrack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hooktrack"))
}

/// `hooktrack ARGS --config CONFIG EXTRA...`, with the test token in the environment (an
/// installer must never write it anywhere).
pub fn run_with_config(args: &[&str], config: &Path, extra: &[&str]) -> Output {
    hooktrack()
        .args(args)
        .arg("--config")
        .arg(config)
        .args(extra)
        .env("HOOKTRACK_TOKEN", TOKEN)
        .output()
        .expect("run hooktrack")
}

/// `hooktrack ARGS --config CONFIG --dir STORE --url URL --generation N` (an install).
pub fn install_with(
    args: &[&str],
    config: &Path,
    store: &Path,
    generation: u64,
    url: &str,
) -> Output {
    let generation = generation.to_string();
    run_with_config(
        args,
        config,
        &[
            "--dir",
            store.to_str().expect("utf-8 path"),
            "--url",
            url,
            "--generation",
            &generation,
        ],
    )
}

/// The store's `channel.json`, parsed.
pub fn channel(store: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(store.join("channel.json")).expect("channel.json"))
        .expect("channel json")
}

/// Polls `f` every 10 ms until it returns `Some`, at most `limit`.
pub fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for a child, killing it past `limit`.
pub fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn send_signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on a child we spawned.
    let rc = unsafe { libc::kill(pid, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal})");
}

/// A `hooktrack collect` process.
pub struct Collector {
    pub child: Child,
    pub port: u16,
}

impl Collector {
    pub fn start(dir: &Path, generation: u64) -> Self {
        Self::start_with(dir, generation, &[])
    }

    pub fn start_with(dir: &Path, generation: u64, extra: &[&str]) -> Self {
        let child = hooktrack()
            .args(["collect", "--provider", "kimi-cli", "--generation"])
            .arg(generation.to_string())
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .env("HOOKTRACK_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn collect");
        let pid = child.id();
        let status_path = dir.join("collector.json");
        let port = wait_for(Duration::from_secs(20), "collector.json", || {
            let bytes = fs::read(&status_path).ok()?;
            let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            (v["pid"] == pid && v["status"] == "running")
                .then(|| u16::try_from(v["port"].as_u64()?).ok())
                .flatten()
        });
        Self { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/events", self.port)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> ExitStatus {
        send_signal(&self.child, libc::SIGTERM);
        wait_child(&mut self.child, Duration::from_secs(30))
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `hooktrack emit` for a Kimi CLI hook of `event` into the store `dir`, without a token
/// or a tmux pane from the test's environment, every standard stream piped.
pub fn emit_command(dir: &Path, event: &str) -> Command {
    emit_command_of(hooktrack(), dir, event)
}

/// The same with `hooktrack-hook emit` (the hook command alone, which installs run).
pub fn hook_command(dir: &Path, event: &str) -> Command {
    emit_command_of(
        Command::new(env!("CARGO_BIN_EXE_hooktrack-hook")),
        dir,
        event,
    )
}

fn emit_command_of(mut cmd: Command, dir: &Path, event: &str) -> Command {
    cmd.args(["emit", "--dir"])
        .arg(dir)
        .args([
            "--provider",
            "kimi-cli",
            "--generation",
            "1",
            "--event",
            event,
        ])
        .env_remove("HOOKTRACK_TOKEN")
        // Rows must not depend on whether the tests run inside tmux.
        .env_remove("TMUX_PANE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `hooktrack emit` with `payload` on stdin.
pub fn emit(
    dir: &Path,
    url: Option<&str>,
    token: Option<&str>,
    event: &str,
    payload: &[u8],
) -> Output {
    let mut cmd = emit_command(dir, event);
    if let Some(url) = url {
        cmd.args(["--url", url]);
    }
    if let Some(token) = token {
        cmd.env("HOOKTRACK_TOKEN", token);
    }
    let mut child = cmd.spawn().expect("spawn emit");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload)
        .expect("write payload");
    child.wait_with_output().expect("emit output")
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
pub fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Sends raw bytes, returns (status, body) of the response.
pub fn raw_request(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // A server may answer and close before reading everything: that is fine.
    let _ = s.write_all(request);
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    parse_response(&response)
}

pub fn parse_response(response: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(response);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

pub fn post(addr: SocketAddr, token: Option<&str>, body: &[u8]) -> (u16, String) {
    let mut req = format!(
        "POST /events HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str("Connection: close\r\n\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    raw_request(addr, &bytes)
}

/// Every line of a file, parsed; panics (naming the line) on a torn or non-JSON line.
/// The hook rows of a store `hooktrack session` wrote, after checking the launcher's own:
/// each run appends one `process_ended` row (`via: "launcher"`) with the agent's pid when
/// the agent ends, so that a replay of the store ends what the live run ended.
pub fn session_rows(path: &Path, runs: usize) -> Vec<serde_json::Value> {
    let (launcher, hooks): (Vec<_>, Vec<_>) =
        rows(path).into_iter().partition(|r| r["via"] == "launcher");
    assert_eq!(
        launcher.len(),
        runs,
        "one launcher row per run: {launcher:#?}"
    );
    for row in &launcher {
        assert_eq!(row["event"], "process_ended", "{row}");
        assert!(row["payload"]["pid"].is_u64(), "{row}");
        assert!(
            row["sequence"].is_null() && row["emitter_seq"].is_null(),
            "{row}"
        );
    }
    hooks
}

pub fn rows(path: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} does not end with a newline",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{} line {}: {e}: {l:?}", path.display(), i + 1))
        })
        .collect()
}

pub fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// `hooktrack replay --format json FILE`, parsed.
pub fn replay_json(path: &Path) -> serde_json::Value {
    let out = hooktrack()
        .args(["replay", "--format", "json"])
        .arg(path)
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay JSON")
}

/// `"<scope> <result> <tool_calls>"` per turn of a replay or session ledger.
pub fn ledger(turns: &serde_json::Value) -> Vec<String> {
    turns
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| {
            format!(
                "{} {} {}",
                t["scope"].as_str().unwrap_or("?"),
                t["result"].as_str().unwrap_or("?"),
                t["tool_calls"]
            )
        })
        .collect()
}

/// Kimi CLI 1.x payloads as the CLI writes them (Python json.dumps spacing).
pub fn kimi_cli(event: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { ", " };
    format!(
        r#"{{"hook_event_name": "{event}", "session_id": "495571c6-adb5-491a-99ad-7e10e4e3d92e", "cwd": "/p"{sep}{fields}}}"#
    )
}

/// A Kimi CLI turn with one tool call: (event, payload).
pub fn kimi_cli_session() -> Vec<(&'static str, String)> {
    vec![
        (
            "SessionStart",
            kimi_cli("SessionStart", r#""source": "startup""#),
        ),
        (
            "UserPromptSubmit",
            kimi_cli("UserPromptSubmit", r#""prompt": "list files""#),
        ),
        (
            "PreToolUse",
            kimi_cli(
                "PreToolUse",
                r#""tool_name": "Shell", "tool_input": {"command": "ls"}, "tool_call_id": "call_1""#,
            ),
        ),
        (
            "PostToolUse",
            kimi_cli(
                "PostToolUse",
                r#""tool_name": "Shell", "tool_input": {"command": "ls"}, "tool_output": "is_error=False", "tool_call_id": "call_1""#,
            ),
        ),
        ("Stop", kimi_cli("Stop", r#""stop_hook_active": false"#)),
        ("SessionEnd", kimi_cli("SessionEnd", r#""reason": "exit""#)),
    ]
}

/// `PATH` with `dir` first (a Node 22 before the machine's, for `#!/usr/bin/env node`).
pub fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap_or_default()
}

/// `hooktrack session` running the stand-in `agent` as Kimi CLI, with `home` as `$HOME`,
/// `out_dir` as `$OUT` and no stdin; the caller picks stdout and stderr.
pub fn fake_kimi_session(
    root: &Path,
    output: &Path,
    agent: &Path,
    home: &Path,
    out_dir: &Path,
) -> std::process::Command {
    let mut cmd = hooktrack();
    cmd.args([
        "session", "--agent", "kimi-cli", "--format", "ndjson", "--root",
    ])
    .arg(root)
    .arg("--output")
    .arg(output)
    .arg("--")
    .arg(agent)
    .env("HOME", home)
    .env("OUT", out_dir)
    .env_remove("HOOKTRACK_TOKEN")
    .env_remove("KIMI_SHARE_DIR")
    .stdin(Stdio::null());
    cmd
}

/// `hooktrack session` running `agent` as Kimi Code, with `home` as `$HOME`, `kimi_home`
/// as `$KIMI_CODE_HOME`, and no stdin, stdout or stderr; the caller adds the agent's
/// arguments and the rest of its environment.
pub fn kimi_code_session(
    root: &Path,
    output: &Path,
    agent: &Path,
    home: &Path,
    kimi_home: &Path,
) -> std::process::Command {
    let mut cmd = hooktrack();
    cmd.args([
        "session",
        "--agent",
        "kimi-code",
        "--format",
        "ndjson",
        "--root",
    ])
    .arg(root)
    .arg("--output")
    .arg(output)
    .arg("--")
    .arg(agent)
    .env("HOME", home)
    .env("KIMI_CODE_HOME", kimi_home)
    .env_remove("HOOKTRACK_TOKEN")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd
}

/// `Launch::start` of `agent` with its config file at `config`, its root (`dir/root`) and
/// working directory in `dir`, and this build's `hooktrack` as the emitter.
pub fn launch_in(dir: &Path, agent: hooktrack::Agent, config: &Path) -> hooktrack::Launch {
    hooktrack::Launch::start(hooktrack::LaunchConfig {
        agent,
        config: config.to_owned(),
        root: dir.join("root"),
        emitter: std::path::PathBuf::from(env!("CARGO_BIN_EXE_hooktrack")),
        home: None,
        cwd: dir.to_owned(),
        args: Vec::new(),
        program: None,
        channel: hooktrack::ChannelConfig::default(),
        read_screens: None,
    })
    .expect("launch")
}

/// A scratch HOME for a plugin agent's file written by `install` (OpenCode, Kilo, Pi),
/// with the agent's own home variable unset so the default folder is used.
pub struct PluginHome {
    tmp: tempfile::TempDir,
    name: &'static str,
    home_var: &'static str,
}

impl PluginHome {
    pub fn new(name: &'static str, home_var: &'static str) -> Self {
        Self {
            tmp: tempfile::tempdir().expect("tempdir"),
            name,
            home_var,
        }
    }

    pub fn home(&self) -> &Path {
        self.tmp.path()
    }

    /// `hooktrack ARGS` in this HOME.
    pub fn run(&self, args: &[&str]) -> Output {
        hooktrack()
            .args(args)
            .env("HOME", self.home())
            .env_remove(self.home_var)
            // OpenCode and Kilo read `$XDG_CONFIG_HOME/<agent>/` when it is set.
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .expect("run hooktrack")
    }

    /// `check --file-only` fails before `install`; `install` writes `rel` (under HOME),
    /// whose text runs the emitter for this agent; `check --file-only` passes. The file
    /// and its text.
    pub fn install_checked(&self, rel: &str) -> (std::path::PathBuf, String) {
        let file = self.home().join(rel);
        let out = self.run(&["check", self.name, "--file-only"]);
        assert!(!out.status.success(), "nothing installed yet: {out:?}");
        let out = self.run(&["install", self.name]);
        assert!(out.status.success(), "{out:?}");
        let text = fs::read_to_string(&file).expect("the installed file");
        assert!(
            text.contains(&format!("\"--agent\", \"{}\"", self.name)),
            "{text}"
        );
        let out = self.run(&["check", self.name, "--file-only"]);
        assert!(out.status.success(), "{out:?}");
        (file, text)
    }
}
