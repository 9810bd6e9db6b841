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

/// Reports an end-to-end test that cannot run here (`what`: which one) where `cargo test`
/// shows it (a direct write to the process's stderr: the harness captures `println!`), and
/// fails instead under `HOOKTRACK_E2E_REQUIRE=1`.
pub fn skip_e2e(what: &str, reason: &str) {
    let message = format!(
        "\nSKIPPED {what} end to end: {reason}\n(HOOKTRACK_E2E_REQUIRE=1 makes this a failure)\n"
    );
    let _ = std::io::stderr().write_all(message.as_bytes());
    if std::env::var_os("HOOKTRACK_E2E_REQUIRE").is_some_and(|v| v == "1") {
        panic!("{message}");
    }
}

/// `target/tmp/<dir>`, with `packages` installed there by npm once for every run of the
/// tests: a lock file makes concurrent tests wait for one install, and a stamp naming the
/// packages skips it next time. `check` runs what was installed (in `<dir>`) before the
/// stamp is written, so a broken install is tried again.
pub fn npm_cached(
    dir: &str,
    packages: &[&str],
    check: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<std::path::PathBuf, String> {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let lock = fs::File::create(base.join(".lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let stamp = base.join("ready");
    let wanted = packages.join(" ");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(base);
    }
    super::e2e::run_bounded(
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&base)
            .args(packages),
        Duration::from_secs(900),
    )
    .map_err(|e| format!("cannot install {wanted} from npm: {e}"))?;
    check(&base)?;
    fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
    Ok(base)
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

/// The lines `hooktrack session --format ndjson --output OUTPUT` wrote so far.
pub fn session_lines(output: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(output)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A scratch world for one agent run through `hooktrack session`: a HOME, a work folder
/// and a session root, all inside one temporary folder that goes with it.
pub struct SessionWorld {
    _tmp: tempfile::TempDir,
    pub home: std::path::PathBuf,
    pub work: std::path::PathBuf,
    pub root: std::path::PathBuf,
}

/// hooktrack's routing variables: a test's own must never reach the session it starts.
const ROUTING_ENV: [&str; 4] = [
    "HOOKTRACK_TOKEN",
    "HOOKTRACK_DIR",
    "HOOKTRACK_URL",
    "HOOKTRACK_GENERATION",
];

impl SessionWorld {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let work = tmp.path().join("work");
        fs::create_dir_all(&home).expect("mkdir home");
        fs::create_dir_all(&work).expect("mkdir work");
        let root = tmp.path().join("root");
        Self {
            _tmp: tmp,
            home,
            work,
            root,
        }
    }

    /// A new folder of the caller's beside the world's own (an agent's config home).
    pub fn scratch(&self, name: &str) -> std::path::PathBuf {
        let dir = self._tmp.path().join(name);
        fs::create_dir_all(&dir).expect("mkdir scratch");
        dir
    }

    /// Where `session --output` writes its lines.
    pub fn output(&self) -> std::path::PathBuf {
        self.root.with_extension("ndjson")
    }

    /// The lines `hooktrack session --format ndjson` wrote so far.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        session_lines(&self.output())
    }

    /// `hooktrack session --format ndjson --root ROOT --output OUTPUT -- PROGRAM`, run in
    /// the work folder with the world's HOME; the caller adds the agent's arguments and
    /// environment.
    pub fn session(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.session_at(&self.root, program)
    }

    /// [`Self::session`] with a root of the caller's (its output beside it): for tests that
    /// run several sessions in one world.
    pub fn session_at(&self, root: &Path, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = hooktrack();
        cmd.args(["session", "--format", "ndjson", "--root"])
            .arg(root)
            .arg("--output")
            .arg(root.with_extension("ndjson"))
            .arg("--")
            .arg(program)
            .current_dir(&self.work)
            .env("HOME", &self.home);
        for var in ROUTING_ENV {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs a headless session to its end (at most 240 s): its exit code, its stdout and
    /// the lines it wrote.
    pub fn run(&self, mut cmd: Command) -> (Option<i32>, String, Vec<serde_json::Value>) {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn session");
        let status = wait_child(&mut child, Duration::from_secs(240));
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        (status.code(), out, self.lines())
    }
}

/// A private tmux server, killed (by its socket) when dropped, whose one pane (`e2e`) runs
/// an agent's session.
pub struct Tmux {
    socket: String,
    /// The server's socket file, which it leaves behind when it exits.
    path: Option<String>,
}

impl Tmux {
    /// A private server on `socket` whose one pane (140x45) runs `cmd` in `work`: its whole
    /// command line and environment go into `dir/run.sh`, which tmux runs (tmux's own
    /// environment is then moot).
    pub fn start(socket: String, cmd: &Command, work: &Path, dir: &Path) -> Tmux {
        Self::start_sized(socket, cmd, work, dir, (140, 45))
    }

    /// [`Tmux::start`] with a pane of `(columns, rows)`.
    pub fn start_sized(
        socket: String,
        cmd: &Command,
        work: &Path,
        dir: &Path,
        (columns, rows): (u16, u16),
    ) -> Tmux {
        let quote =
            |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
        let mut script = format!("#!/bin/sh\ncd {}\n", quote(work.as_os_str()));
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => script += &format!("export {}={}\n", k.to_string_lossy(), quote(v)),
                None => script += &format!("unset {}\n", k.to_string_lossy()),
            }
        }
        script += &format!("exec {}", quote(cmd.get_program()));
        for a in cmd.get_args() {
            script += &format!(" {}", quote(a));
        }
        script += "\n";
        let script_path = dir.join("run.sh");
        fs::write(&script_path, script).expect("script");
        let mut tmux = Tmux { socket, path: None };
        let (columns, rows) = (columns.to_string(), rows.to_string());
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &columns,
            "-y",
            &rows,
            "sh",
            &script_path.to_string_lossy(),
        ]);
        assert!(started.is_some(), "tmux new-session");
        tmux.path = tmux.run(&["display-message", "-p", "#{socket_path}"]);
        tmux
    }

    /// `tmux ARGS` on this server: its stdout when it succeeded.
    pub fn run(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
            .unwrap_or_default()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).is_some(), "tmux send-keys {keys:?}");
    }

    /// The pid of the pane's process (the session's shell script, then `hooktrack`).
    pub fn pane_pid(&self) -> Option<u32> {
        self.run(&["display-message", "-p", "-t", "e2e", "#{pane_pid}"])?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
        if let Some(path) = &self.path {
            let _ = fs::remove_file(path.trim());
        }
    }
}

/// A session that ran its agent to the end (exit 0, an `end` line) and said exactly one
/// finding before it started, containing `text`.
pub fn assert_one_finding_then_a_whole_run(
    code: Option<i32>,
    lines: &[serde_json::Value],
    text: &str,
) {
    let context = format!("session:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    let findings: Vec<&str> = lines
        .first()
        .and_then(|start| start["findings"].as_array())
        .map(|found| found.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(findings.len(), 1, "{context}");
    assert!(findings[0].contains(text), "{context}");
    assert_eq!(
        lines.last().map(|end| end["kind"].clone()),
        Some(serde_json::json!("end")),
        "{context}"
    );
}

/// Types `quit` (the agent's own command) into the pane and waits (at most 120 s) for the
/// session's end line: that line, and the screen and every line for a failure's message.
pub fn quit_tui(tmux: &Tmux, world: &SessionWorld, quit: &str) -> (serde_json::Value, String) {
    tmux.keys(&["-l", quit]);
    tmux.keys(&["Enter"]);
    let end = wait_for(Duration::from_secs(120), "the session's end line", || {
        world.lines().into_iter().find(|l| l["kind"] == "end")
    });
    let context = format!("screen:\n{}\nsession:\n{:#?}", tmux.screen(), world.lines());
    (end, context)
}

/// The checks every headless "[[tools]]" run shares (the mock's script: a shell command,
/// `notes.txt` written, read back, then the answer): the session exited 0, the agent
/// printed the answer, the file holds the two lines, the session's first line names
/// `provider` and its last is the end line. Returns those two lines and the context a
/// failure prints.
pub fn assert_tools_run(
    world: &SessionWorld,
    code: Option<i32>,
    out: &str,
    lines: &[serde_json::Value],
    provider: &str,
) -> (serde_json::Value, serde_json::Value, String) {
    let context = format!("agent stdout:\n{out}\nsession:\n{lines:#?}");
    assert_eq!(code, Some(0), "{context}");
    assert!(out.contains("The file holds two lines. Done."), "{context}");
    assert_eq!(
        fs::read_to_string(world.work.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("line one\nline two\n"),
        "the tool calls' file\n{context}"
    );
    let start = lines.first().cloned().unwrap_or_default();
    let end = lines.last().cloned().unwrap_or_default();
    assert_eq!(start["provider"], provider, "{context}");
    assert_eq!(end["kind"], "end", "{context}");
    (start, end, context)
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
