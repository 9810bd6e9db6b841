//! Helpers of the end-to-end tests alone: npm installs cached under `target/tmp/`, a
//! scratch world for `hooktrack session`, a private tmux server. The helpers the producer
//! tests share (`tests/producer/util.rs`) come with them.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub use crate::shared::*;

/// How long one step of a real agent (an answer, a screen, a session's end) may take
/// before a test gives up: a bound generous enough for a loaded 2-core machine, where an
/// npm CLI takes tens of seconds to start, never a measure of speed.
pub const PATIENCE: Duration = Duration::from_secs(180);

/// A prerequisite `what` needs (`reason`: what failed) that broke inside a test. The
/// harness (`main.rs`) checks every test's prerequisites first and reports a test whose
/// prerequisites are missing as ignored, with the reason; reaching this means one that was
/// ready failed meanwhile, so the test fails, naming it.
pub fn skip_e2e(what: &str, reason: &str) {
    panic!("{what}: a prerequisite found ready before the test failed in it: {reason}");
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
    super::kimi_cli::run_bounded(
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

/// One npm CLI cached under `target/tmp/<dir>` ([`npm_cached`]), looked up once per run
/// (`memo`): its `node_modules`, once `.bin/<bin> --version` (run with the cache as its
/// HOME) prints what `version_ok` accepts.
pub fn npm_cli(
    memo: &std::sync::Mutex<Option<Result<std::path::PathBuf, String>>>,
    dir: &str,
    packages: &[&str],
    bin: &str,
    version_ok: fn(&str) -> bool,
) -> Result<std::path::PathBuf, String> {
    let mut guard = memo.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = npm_cached(dir, packages, |base| {
        let version = super::kimi_cli::run_bounded(
            Command::new(base.join("node_modules/.bin").join(bin))
                .arg("--version")
                .env("HOME", base),
            PATIENCE,
        )
        .map_err(|e| format!("{bin} installed but does not run: {e}"))?;
        if version_ok(version.trim()) {
            Ok(())
        } else {
            Err(format!("{bin} --version says {version:?}"))
        }
    })
    .map(|base| base.join("node_modules"));
    *guard = Some(result.clone());
    result
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
    /// A fresh HOME and working folder; with `HOOKTRACK_E2E_KEEP=1` they outlive the test
    /// (their path goes to stderr), to read a failed run's store and transcripts.
    pub fn new() -> Self {
        let mut tmp = tempfile::tempdir().expect("tempdir");
        if std::env::var_os("HOOKTRACK_E2E_KEEP").is_some_and(|v| v == "1") {
            tmp.disable_cleanup(true);
            eprintln!("kept: {}", tmp.path().display());
        }
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
            // A person's terminal has no `CI`: with it set, the Ink TUIs (Gemini CLI, Qwen
            // Code, Auggie) draw no frame until they exit. The server takes the client's
            // environment at its start.
            .env_remove("CI")
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

/// Types `quit` (the agent's own command) into the pane and waits (at most [`PATIENCE`])
/// for the session's end line: that line, and the screen and every line for a failure's
/// message.
pub fn quit_tui(tmux: &Tmux, world: &SessionWorld, quit: &str) -> (serde_json::Value, String) {
    tmux.keys(&["-l", quit]);
    tmux.keys(&["Enter"]);
    tui_end(tmux, world)
}

/// Waits (at most [`PATIENCE`]) for the session's end line once the agent in the pane
/// was told to quit: that line, and the screen and every line for a failure's message.
pub fn tui_end(tmux: &Tmux, world: &SessionWorld) -> (serde_json::Value, String) {
    let end = wait_for(PATIENCE, "the session's end line", || {
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

/// The `session.status` types an OpenCode-family store holds, in order (`busy`, `retry`,
/// `idle`…).
pub fn session_statuses(events: &Path) -> Vec<String> {
    fs::read_to_string(events)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["event"] == "session.status")
        .filter_map(|r| {
            r["payload"]["properties"]["status"]["type"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Writes `home/.claude.json` past Claude Code's first-run dialogs, the key `dummy`
/// approved (`scratch_home::claude_past_first_run`).
pub fn claude_past_first_run(home: &Path, work: &Path) {
    crate::scratch_home::claude_past_first_run(home, work, "dummy");
}

/// `hooktrack setup` in the scratch home `h`, run in `work` with `path` as its whole
/// `PATH` and nothing else of this environment; what it said, once it succeeded.
pub fn setup_in(h: &crate::scratch_home::Home, work: &Path, path: &str) -> String {
    let setup = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .arg("setup")
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", path)
        .current_dir(work)
        .output()
        .expect("setup");
    let said = crate::scratch_home::text(&setup);
    assert!(setup.status.success(), "{said}");
    said
}

/// Writes `claude.sh` in `h`'s home for a tmux pane to run: Claude Code's TUI in `work`
/// with `path` as its `PATH`, `h`'s home and state, the pane's tmux variables and the mock
/// on `port` as its API, and nothing else of the environment. Returns its path.
pub fn claude_pane_script(
    h: &crate::scratch_home::Home,
    work: &Path,
    path: &str,
    port: u16,
) -> std::path::PathBuf {
    let script = h.home.join("claude.sh");
    crate::scratch_home::write_script(
        &script,
        &format!(
            "#!/bin/sh\ncd '{work}'\nexec env -i PATH='{path}' HOME='{home}' XDG_STATE_HOME='{state}' \
             TERM=xterm-256color TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" \
             ANTHROPIC_BASE_URL=http://127.0.0.1:{port} ANTHROPIC_API_KEY=dummy \
             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 claude\n",
            work = work.display(),
            home = h.home.display(),
            state = h.state.display(),
        ),
    );
    script
}

/// Writes the `set -g` lines `setup` printed (`said`) into `h`'s `tmux.conf`, as a person
/// pastes them into `~/.tmux.conf`, and has the server `tmux` source it; how many lines
/// there were.
pub fn source_setups_tmux_lines(
    tmux: &crate::scratch_home::TmuxServer,
    h: &crate::scratch_home::Home,
    said: &str,
) -> usize {
    let conf = h.home.join("tmux.conf");
    let lines: Vec<&str> = said.lines().filter(|l| l.starts_with("set -g ")).collect();
    fs::write(&conf, lines.join("\n")).expect("tmux.conf");
    let sourced = tmux
        .tmux()
        .arg("source-file")
        .arg(&conf)
        .output()
        .expect("source");
    assert!(
        sourced.status.success(),
        "{}",
        crate::scratch_home::text(&sourced)
    );
    lines.len()
}

/// `hooktrack watch --tmux` with no path on the server `tmux`, in `h`'s home and state
/// with `/usr/bin:/bin` as its `PATH` and nothing else of the environment, its stderr
/// dropped; the caller adds its flags and its stdout.
pub fn watch_tmux_in(
    tmux: &crate::scratch_home::TmuxServer,
    h: &crate::scratch_home::Home,
) -> Command {
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"));
    watch
        .args([
            "watch",
            "--tmux",
            "--tmux-socket",
            &tmux.socket,
            "--recheck-ms",
            "50",
        ])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", "/usr/bin:/bin")
        .stderr(Stdio::null());
    watch
}
