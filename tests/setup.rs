//! `hooktrack setup` / `setup --undo` in a scratch home, and the default store a routed
//! hook delivers to when the agent was started without hooktrack's environment.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    bin: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let state = dir.path().join("state");
        // An empty PATH directory: only the agents' config directories say what is there.
        let bin = dir.path().join("bin");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&bin).unwrap();
        Home {
            _dir: dir,
            home,
            state,
            bin,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_hooktrack"))
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("PATH", &self.bin)
            .current_dir(&self.home)
            .output()
            .unwrap()
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Settings in a shape no serializer writes (tabs, key order, no final newline): only a
/// byte-for-byte restore gives them back.
const CLAUDE_SETTINGS: &str = "{\t\"theme\":\"dark\",\n\t\"model\" : \"x\"}";

#[test]
fn setup_installs_for_the_agents_found_and_undo_restores_every_byte() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    // Gemini CLI's directory without its file: setup creates the file, undo removes it.
    fs::create_dir_all(h.file(".gemini")).unwrap();
    let gemini = h.file(".gemini/settings.json");

    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    assert!(said.contains("claude: check: ok"), "{said}");
    // No agent on PATH to ask: the window is said anyway, as `check` says it.
    assert!(
        said.contains(
            "claude: check: Claude Code: `claude --version` gave no version; the tested window is"
        ),
        "{said}"
    );
    assert!(said.contains("gemini: 11 hooktrack entries"), "{said}");
    // Gemini's check names its auth and folder trust; the tmux lines follow.
    assert!(
        said.contains("gemini: check:") && said.contains("selectedType"),
        "{said}"
    );
    assert!(said.contains("set -g status-right"), "{said}");
    assert!(said.contains("set -g window-status-format"), "{said}");
    // Agents not found are not touched.
    assert!(!h.file(".codex").exists());
    let installed = fs::read_to_string(&claude).unwrap();
    assert!(installed.contains("emit --observer hooktrack --agent 'claude'"));
    assert!(!installed.contains("--dir"), "routed entries name no store");
    // A second setup changes nothing undo must know about.
    assert!(h.run(&["setup"]).status.success());
    assert_eq!(fs::read_to_string(&claude).unwrap(), installed);
    assert_eq!(mode(&h.state.join("hooktrack")), 0o700);

    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
    assert!(!gemini.exists(), "setup created it: undo removes it");
    assert!(h.file(".gemini").is_dir(), "the directory was there before");
    assert!(!h.state.join("hooktrack/setup.json").exists());
    // Nothing left to undo.
    let out = h.run(&["setup", "--undo"]);
    assert!(text(&out).contains("nothing to undo"), "{}", text(&out));
}

#[test]
fn undo_keeps_an_edit_made_since_and_removes_only_the_entries() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let edited = fs::read_to_string(&claude)
        .unwrap()
        .replace("\"dark\"", "\"light\"");
    fs::write(&claude, &edited).unwrap();

    let out = h.run(&["setup", "--undo"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("changed since setup"), "{said}");
    let after = fs::read_to_string(&claude).unwrap();
    assert!(after.contains("\"light\""), "{after}");
    assert!(!after.contains("hooktrack"), "{after}");
}

/// `sudo -E hooktrack setup`: root, with the user's $HOME and sudo's $SUDO_UID. Setup
/// refuses in one line and writes nothing, rather than leave the user's files root's.
/// Being root is what triggers it: run as another user, the same environment is set up.
#[test]
fn sudo_e_setup_is_refused_and_leaves_nothing_owned_by_root() {
    use std::os::unix::fs::MetadataExt;
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    let user = 4242;
    let as_root = rustix::process::geteuid().is_root();
    if as_root {
        // The home is the user's, as `sudo -E` finds it.
        for path in [&h.home, &h.file(".claude"), &claude] {
            std::os::unix::fs::chown(path, Some(user), Some(user)).unwrap();
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .arg("setup")
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", &h.bin)
        .env("SUDO_UID", user.to_string())
        .current_dir(&h.home)
        .output()
        .unwrap();
    let said = text(&out);
    if as_root {
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.contains(&format!(
                "refusing to set up as root for uid {user} ($HOME {} belongs to uid {user}, started through sudo)",
                h.home.display()
            )),
            "{said}"
        );
        assert!(said.contains("without sudo"), "{said}");
        assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
        assert_eq!(fs::metadata(&claude).unwrap().uid(), user);
        assert!(!h.state.exists(), "setup wrote its record");
    } else {
        assert!(out.status.success(), "{said}");
        assert!(!said.contains("refusing"), "{said}");
        assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    }
}

#[test]
fn setup_finds_nothing_in_an_empty_home() {
    let h = Home::new();
    let out = h.run(&["setup"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("no supported agent found"));
    assert_eq!(fs::read_dir(&h.home).unwrap().count(), 0);
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A routed hook run the way an agent runs it, without any `HOOKTRACK_*` variable.
fn unrouted_hook(h: &Home, event: &str, payload: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooktrack-hook"))
        .args(["emit", "--observer", "hooktrack", "--agent", "claude"])
        .args(["--event", event])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("TMUX_PANE", "%5")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn rows(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_agent_started_without_hooktrack_delivers_to_its_default_store() {
    let h = Home::new();
    let payload = r#"{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    let out = unrouted_hook(&h, "UserPromptSubmit", payload);
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
    let store = h.state.join("hooktrack/agents/claude");
    assert_eq!(mode(&store), 0o700);
    let rows = rows(&store.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["provider"], "claude");
    assert_eq!(row["via"], "command_fallback");
    assert_eq!(row["generation"], 0);
    assert_eq!(row["emitter_seq"], 1);
    assert_eq!(row["payload"]["session_id"], "s1");
    assert_eq!(row["tmux_pane"], "%5");
    // The process that ran the hook: this test, standing in for the agent.
    assert_eq!(row["agent_pid"], std::process::id());
    // No collector is expected there: nothing to complain about in the store's log.
    assert!(!store.join("emit.log").exists());
    // Replay reads the default store like any other.
    let out = h.run(&["replay", store.join("events.ndjson").to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn the_default_store_is_rotated_past_its_size() {
    let h = Home::new();
    let store = h.state.join("hooktrack/agents/claude");
    let payload = r#"{"session_id":"s1","hook_event_name":"Stop"}"#;
    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    let events = store.join("events.ndjson");
    // Over the rotation size with whole rows, as the hooks would have made it.
    let row = fs::read_to_string(&events).unwrap();
    let limit = hooktrack_producer::emit::default_store::ROTATE_BYTES as usize;
    let big = row.repeat(limit / row.len() + 2);
    fs::write(&events, &big).unwrap();

    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    let rotated = store.join("events.ndjson.1");
    assert_eq!(fs::read_to_string(&rotated).unwrap(), big);
    let now = rows(&events);
    assert_eq!(now.len(), 1, "the new file holds only the new row");
    assert_eq!(
        now[0]["emitter_seq"], 2,
        "the counter goes on across the rotation"
    );
}

#[test]
fn a_session_keeps_its_own_store() {
    let h = Home::new();
    let session = h.home.join("session-store");
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooktrack-hook"))
        .args([
            "emit",
            "--observer",
            "hooktrack",
            "--agent",
            "claude",
            "--event",
            "Stop",
        ])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("HOOKTRACK_DIR", &session)
        .env("HOOKTRACK_GENERATION", "4")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"session_id":"s1","hook_event_name":"Stop"}"#)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let rows = rows(&session.join("events.ndjson"));
    assert_eq!(rows[0]["generation"], 4);
    assert!(
        rows[0].get("agent_pid").is_none(),
        "a launcher watches that agent"
    );
    assert!(!h.state.join("hooktrack/agents").exists());
}

#[test]
fn watch_without_a_path_follows_a_default_store_that_appears_later() {
    use std::io::BufRead;
    let h = Home::new();
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(["watch", "--ndjson", "--recheck-ms", "50"])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    let (etx, errs) = std::sync::mpsc::channel::<String>();
    let stderr = watch.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = etx.send(line);
        }
    });
    // The watch has looked at the (missing) folder once it says so.
    let said = errs
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap();
    assert!(said.contains("watching every default store"), "{said}");
    let payload = r#"{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    assert!(
        unrouted_hook(&h, "UserPromptSubmit", payload)
            .status
            .success()
    );
    // Bounded: the watch re-lists the folder every second.
    let line = lines.recv_timeout(std::time::Duration::from_secs(30));
    let _ = watch.kill();
    let _ = watch.wait();
    let line: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
    assert_eq!(line["session"], "claude");
    assert_eq!(line["agent"], "claude-code");
    assert_eq!(line["tmux_pane"], "%5");
    assert_eq!(line["posture"]["turn"]["phase"], "active");
}

/// A private tmux server, killed when dropped (its own socket: nobody else's panes).
struct TmuxServer {
    socket: String,
}

impl TmuxServer {
    /// A private server named `name-<pid>` whose first pane (`columns`x`rows`) runs
    /// `script`; the server and that pane's id.
    fn start(name: &str, script: &Path, (columns, rows): (u16, u16)) -> (Self, String) {
        let tmux = TmuxServer {
            socket: format!("{name}-{}", std::process::id()),
        };
        let (columns, rows) = (columns.to_string(), rows.to_string());
        let started = tmux
            .tmux()
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                &columns,
                "-y",
                &rows,
            ])
            .args(["-P", "-F", "#{pane_id}"])
            .arg(script)
            .output()
            .unwrap();
        assert!(started.status.success(), "{}", text(&started));
        let pane = String::from_utf8_lossy(&started.stdout).trim().to_owned();
        (tmux, pane)
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.tmux().args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn option(&self, pane: &str, name: &str) -> String {
        self.run(&["show-options", "-p", "-v", "-t", pane, name])
            .trim_end()
            .to_owned()
    }

    fn screen(&self, pane: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", pane])
    }
}

/// Writes `text` to `path` as a script only its owner may run.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).unwrap();
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// Polls the pane's options until `done` says so (bounded: the agent answers from a
/// local mock in well under a second; the bound only keeps a broken run from hanging).
/// Returns every distinct `@hooktrack_phase` seen meanwhile, and whether `done` held.
fn wait_pane(
    tmux: &TmuxServer,
    pane: &str,
    done: impl Fn(&TmuxServer) -> bool,
) -> (Vec<String>, bool) {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..1200 {
        let phase = tmux.option(pane, "@hooktrack_phase");
        if seen.last() != Some(&phase) {
            seen.push(phase);
        }
        if done(tmux) {
            return (seen, true);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (seen, false)
}

/// Waits until the pane's `@hooktrack_<option>` reads `value` while its screen shows
/// `text`; panics naming `what`, the phases seen and the screen otherwise. Returns the
/// phases seen on the way.
fn wait_state(
    tmux: &TmuxServer,
    pane: &str,
    what: &str,
    (option, value): (&str, &str),
    text: &str,
) -> Vec<String> {
    let option = format!("@hooktrack_{option}");
    let (seen, ok) = wait_pane(tmux, pane, |t| {
        t.option(pane, &option) == value && t.screen(pane).contains(text)
    });
    assert!(ok, "{what} ({seen:?}):\n{}", tmux.screen(pane));
    seen
}

/// Issue 25's end to end: `setup` into a scratch home, a real Claude Code 2.1.197 typed
/// into a pane of a private tmux server (no `hooktrack session`), `watch --tmux` with no
/// path; then `setup --undo`.
///
/// What the screen showed at each checkpoint (recorded by hand with the same steps):
/// - started: the banner `Claude Code v2.1.197`, an empty `❯` prompt;
/// - after `Run a command, write a file, read it back. [[tools]]`: `● Bash(echo
///   hello-from-shell)` ran without a question, then `● Write(notes.txt)` and `Do you
///   want to create notes.txt?` with `❯ 1. Yes / 2. … / 3. No`, `Esc to cancel`;
/// - after Enter (Yes): `Wrote 2 lines to notes.txt`, `Read 1 file`, `● The file holds
///   two lines. Done.`, an empty prompt;
/// - after `/clear` and the same prompt: the same question; after Escape: `User rejected
///   write to notes.txt` and an empty prompt.
///
/// Then a real Qwen Code 0.24.4 typed into a second pane of the same server (`qwen` with
/// the mock's OpenAI URL and `--approval-mode default`, so a shell call asks), seen by the
/// same `watch --tmux`. What its screen showed (recorded by hand with the same steps):
/// - started: the banner `Qwen Code (v0.24.4)`, `>   Type your message or @path/to/file`,
///   `⏸ Ask permissions (shift + tab to cycle)`;
/// - after `Make a file. [[perm]]`: `? Shell touch approved.txt (Create a file)`, `Allow
///   execution of: 'touch'?` with `› 1. Yes, allow once` … `4. No, suggest changes (esc)`,
///   `Waiting for user confirmation...`;
/// - after Enter (Yes): `✓ Shell touch approved.txt`, `◆︎ The file holds two lines. Done.`
///   and the empty input box;
/// - after `Wait a while. [[slow]]`: `Allow execution of: 'sleep'?`; after Enter the
///   shell runs (`esc to cancel`); after Escape: `●︎ Request cancelled.` and the input box;
/// - after `/quit`: the pane closes.
#[test]
fn setup_then_a_claude_typed_in_a_tmux_pane_shows_in_watch_tmux() {
    let bin = match crate::producer::e2e_npm::npm_bin() {
        Ok(b) => b,
        Err(reason) => return crate::producer::e2e_npm::skip("claude-code 2.1.197", &reason),
    };
    let qwen = match crate::producer::e2e_more_agents::installed() {
        Ok(q) => q,
        Err(reason) => return crate::producer::e2e_npm::skip("qwen-code 0.24.4", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return crate::producer::e2e_npm::skip("claude-code 2.1.197 in tmux", "no tmux");
    }
    let h = Home::new();
    let work = h.home.join("work");
    fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(bin.join("claude"), h.bin.join("claude")).unwrap();
    std::os::unix::fs::symlink(qwen.bin.join("qwen"), h.bin.join("qwen")).unwrap();
    // Qwen Code's settings as a person who ran it has them: only a byte-for-byte undo
    // gives them back.
    let qwen_settings = h.file(".qwen/settings.json");
    fs::create_dir_all(qwen_settings.parent().unwrap()).unwrap();
    fs::write(&qwen_settings, QWEN_SETTINGS).unwrap();
    // Node for the agent's shebang, and nothing else from this PATH.
    let node_dir = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|d| d.join("node").is_file())
        .expect("node on PATH");
    let path = format!("{}:{}:/usr/bin:/bin", h.bin.display(), node_dir.display());
    // Past the first-run dialogs (theme, API key, folder trust), as a user who used it.
    fs::write(
        h.home.join(".claude.json"),
        serde_json::json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
            "projects": {work.to_str().unwrap(): {
                "hasTrustDialogAccepted": true,
                "hasCompletedProjectOnboarding": true
            }}
        })
        .to_string(),
    )
    .unwrap();

    let setup = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .arg("setup")
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", &path)
        .current_dir(&work)
        .output()
        .unwrap();
    let said = text(&setup);
    assert!(setup.status.success(), "{said}");
    assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    assert!(
        said.contains("claude: check: Claude Code 2.1.197: within the tested window"),
        "{said}"
    );
    assert!(said.contains("qwen: 21 hooktrack entries"), "{said}");
    assert!(said.contains("qwen: check: ok"), "{said}");
    let settings = h.file(".claude/settings.json");
    assert!(settings.exists());

    let mock = crate::producer::e2e::Mock::start(Path::new("python3"));
    let script = h.home.join("claude.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\ncd '{work}'\nexec env -i PATH='{path}' HOME='{home}' XDG_STATE_HOME='{state}' \
             TERM=xterm-256color TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" \
             ANTHROPIC_BASE_URL=http://127.0.0.1:{port} ANTHROPIC_API_KEY=dummy \
             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 claude\n",
            work = work.display(),
            home = h.home.display(),
            state = h.state.display(),
            port = mock.port,
        ),
    );
    let (tmux, pane) = TmuxServer::start("hooktrack-setup", &script, (160, 45));
    // Qwen Code in a second window of the same server, Node 22 first on its PATH.
    let qwen_script = h.home.join("qwen.sh");
    write_script(
        &qwen_script,
        &format!(
            "#!/bin/sh\ncd '{work}'\nexec env -i PATH='{node22}:{path}' HOME='{home}' XDG_STATE_HOME='{state}' \
             TERM=xterm-256color TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" \
             qwen --auth-type openai --openai-base-url http://127.0.0.1:{port}/v1 \
             --openai-api-key x -m qwen-mock --approval-mode default\n",
            work = work.display(),
            node22 = qwen.node_bin.display(),
            home = h.home.display(),
            state = h.state.display(),
            port = mock.port,
        ),
    );
    // Its pane waits for a line: it also keeps the server up once Claude Code's closes.
    let started = tmux
        .tmux()
        .args(["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .arg(format!("read go; exec '{}'", qwen_script.display()))
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", text(&started));
    let qpane = String::from_utf8_lossy(&started.stdout).trim().to_owned();
    // The tmux lines `setup` printed, as a person pastes them into ~/.tmux.conf.
    let conf = h.home.join("tmux.conf");
    let lines: Vec<&str> = said.lines().filter(|l| l.starts_with("set -g ")).collect();
    assert_eq!(lines.len(), 2, "{said}");
    fs::write(&conf, lines.join("\n")).unwrap();
    let sourced = tmux.tmux().arg("source-file").arg(&conf).output().unwrap();
    assert!(sourced.status.success(), "{}", text(&sourced));
    let status_line = |format: &str| {
        tmux.run(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            &format!("#{{T:{format}}}"),
        ])
        .trim_end()
        .to_owned()
    };

    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
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
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SessionStart: the pane is known, the agent ready.
        wait_state(
            &tmux,
            &pane,
            "never ready",
            ("phase", "ready"),
            "Claude Code v2.1.197",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_agent"), "claude-code");

        // Enter only once the text is in the input box: keys typed while the TUI is still
        // starting are lost.
        let prompt = |text: &str| {
            tmux.run(&["send-keys", "-t", &pane, "-l", text]);
            let (_, typed) = wait_pane(&tmux, &pane, |t| {
                t.screen(&pane)
                    .lines()
                    .any(|l| l.starts_with('❯') && l.contains(text))
            });
            assert!(typed, "{text} not typed:\n{}", tmux.screen(&pane));
            tmux.run(&["send-keys", "-t", &pane, "Enter"]);
        };
        prompt("Run a command, write a file, read it back. [[tools]]");
        let seen = wait_state(
            &tmux,
            &pane,
            "never blocked",
            ("phase", "blocked"),
            "Do you want to create notes.txt?",
        );
        assert!(seen.contains(&"active".to_owned()), "{seen:?}");
        assert_eq!(tmux.option(&pane, "@hooktrack_blocked"), "Write");
        assert_eq!(tmux.option(&pane, "@hooktrack_attention"), "1");
        // What the status line and the window list read now (the README shows them).
        let right = status_line("status-right");
        assert!(
            right.starts_with("#[fg=white bg=red bold] claude-code blocked Write #[default]"),
            "{right}"
        );
        let window = status_line("window-status-format");
        assert!(
            window.ends_with("#[fg=white bg=red] ⏸ Write #[default]"),
            "{window}"
        );
        eprintln!("status-right: {right}\nwindow-status-format: {window}");

        tmux.run(&["send-keys", "-t", &pane, "Enter"]);
        wait_state(
            &tmux,
            &pane,
            "never success",
            ("last", "success"),
            "The file holds two lines. Done.",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_phase"), "ready");

        fs::remove_file(work.join("notes.txt")).unwrap();
        prompt("/clear");
        let (_, ok) = wait_pane(&tmux, &pane, |t| !t.screen(&pane).contains("Done."));
        assert!(ok, "/clear:\n{}", tmux.screen(&pane));
        prompt("Run a command, write a file, read it back. [[tools]]");
        wait_state(
            &tmux,
            &pane,
            "never blocked again",
            ("phase", "blocked"),
            "Do you want to create notes.txt?",
        );
        tmux.run(&["send-keys", "-t", &pane, "Escape"]);
        wait_state(
            &tmux,
            &pane,
            "never interrupted",
            ("last", "interrupted"),
            "User rejected write to notes.txt",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_phase"), "ready");

        prompt("/exit");
        let gone = |t: &TmuxServer, p: &str| {
            !t.run(&["list-panes", "-a", "-F", "#{pane_id}"])
                .lines()
                .any(|l| l == p)
        };
        let (_, ok) = wait_pane(&tmux, &pane, |t| gone(t, &pane));
        assert!(ok, "claude did not exit");

        // The second agent, in the second pane, started now (two TUIs starting at once on
        // a busy machine only slow each other), seen by the same watch.
        tmux.run(&["send-keys", "-t", &qpane, "go", "Enter"]);
        let qprompt = |text: &str| {
            tmux.run(&["send-keys", "-t", &qpane, "-l", text]);
            let (_, typed) = wait_pane(&tmux, &qpane, |t| t.screen(&qpane).contains(text));
            assert!(typed, "{text} not typed:\n{}", tmux.screen(&qpane));
            tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        };
        let (_, ok) = wait_pane(&tmux, &qpane, |t| {
            t.screen(&qpane).contains("Type your message")
        });
        assert!(ok, "qwen never started:\n{}", tmux.screen(&qpane));
        qprompt("Make a file. [[perm]]");
        let seen = wait_state(
            &tmux,
            &qpane,
            "qwen never blocked",
            ("phase", "blocked"),
            "Allow execution of: 'touch'?",
        );
        assert!(seen.contains(&"active".to_owned()), "{seen:?}");
        assert_eq!(tmux.option(&qpane, "@hooktrack_agent"), "qwen-code");
        assert_eq!(
            tmux.option(&qpane, "@hooktrack_blocked"),
            "run_shell_command"
        );
        tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        wait_state(
            &tmux,
            &qpane,
            "qwen never success",
            ("last", "success"),
            "The file holds two lines. Done.",
        );
        assert_eq!(tmux.option(&qpane, "@hooktrack_phase"), "ready");
        qprompt("Wait a while. [[slow]]");
        wait_state(
            &tmux,
            &qpane,
            "qwen never asked for sleep",
            ("phase", "blocked"),
            "Allow execution of: 'sleep'?",
        );
        tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        wait_state(
            &tmux,
            &qpane,
            "the shell never ran",
            ("phase", "active"),
            "esc to cancel",
        );
        tmux.run(&["send-keys", "-t", &qpane, "Escape"]);
        wait_state(
            &tmux,
            &qpane,
            "qwen never interrupted",
            ("last", "interrupted"),
            "Request cancelled.",
        );
        assert_eq!(tmux.option(&qpane, "@hooktrack_phase"), "ready");
        qprompt("/quit");
        let (_, ok) = wait_pane(&tmux, &qpane, |t| gone(t, &qpane));
        assert!(ok, "qwen did not exit:\n{}", tmux.screen(&qpane));
    }));
    let _ = watch.kill();
    let _ = watch.wait();
    drop(tmux);
    drop(mock);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    // Every row went to the default store, each naming the pane and the agent's pid.
    let rows = rows(&h.state.join("hooktrack/agents/claude/events.ndjson"));
    assert!(rows.len() > 10, "{rows:?}");
    assert!(rows.iter().all(|r| r["tmux_pane"] == pane.as_str()));
    assert!(rows.iter().all(|r| r["agent_pid"].as_u64().is_some()));

    let rows = self::rows(&h.state.join("hooktrack/agents/qwen/events.ndjson"));
    assert!(rows.len() > 5, "{rows:?}");
    assert!(rows.iter().all(|r| r["tmux_pane"] == qpane.as_str()));
    assert!(rows.iter().all(|r| r["agent_pid"].as_u64().is_some()));

    let undo = h.run(&["setup", "--undo"]);
    assert!(undo.status.success(), "{}", text(&undo));
    assert!(!settings.exists(), "setup created it: {}", text(&undo));
    assert_eq!(
        fs::read_to_string(&qwen_settings).unwrap(),
        QWEN_SETTINGS,
        "{}",
        text(&undo)
    );
}

/// Qwen Code settings as Qwen Code 0.24.4 itself leaves them (tabs, `$version` last, no
/// final newline): it rewrites a file without `$version` when it starts (seen: `{"ui" :
/// …}` came back migrated and re-indented, which `--undo` then rightly keeps, removing
/// only hooktrack's entries), so a person who has run it has this shape.
const QWEN_SETTINGS: &str = "{\n\t\"ui\": {\n\t\t\"hideTips\": false\n\t},\n\t\"$version\": 4\n}";

#[test]
fn watch_notify_sends_one_desktop_notification_per_transition() {
    let h = Home::new();
    let log = h.home.join("notified");
    let stub = h.bin.join("notify-send");
    fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let session = |event: &str, extra: &str| {
        let payload = format!(r#"{{"session_id":"s1","hook_event_name":"{event}"{extra}}}"#);
        assert!(unrouted_hook(&h, event, &payload).status.success());
    };
    // The store exists before the watch starts: what it holds then is the baseline.
    session("SessionStart", r#","source":"startup""#);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(["watch", "--notify", "--ndjson", "--recheck-ms", "50"])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", format!("{}:/usr/bin:/bin", h.bin.display()))
        .env("DISPLAY", ":0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    let bound = std::time::Duration::from_secs(30);
    assert!(lines.recv_timeout(bound).is_ok(), "the baseline update");
    session("UserPromptSubmit", r#","prompt":"hi""#);
    session(
        "PreToolUse",
        r#","tool_name":"Bash","tool_input":{"command":"ls"}"#,
    );
    session(
        "PermissionRequest",
        r#","tool_name":"Bash","tool_input":{"command":"ls"}"#,
    );
    session(
        "PostToolUse",
        r#","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{}"#,
    );
    session("Stop", "");
    // Bounded wait for the worker's two runs.
    let mut got = String::new();
    for _ in 0..600 {
        got = fs::read_to_string(&log).unwrap_or_default();
        if got.lines().count() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        got,
        "--app-name|hooktrack|claude-code waits for you|Bash · %5 · claude|\n\
         --app-name|hooktrack|claude-code turn ended|success · %5 · claude|\n",
        "nothing for the baseline, one per transition"
    );
}

/// Issue 25 item 3: `watch` drops a session whose agent process is gone, after the grace
/// period. A stand-in agent (python, so the hook's parent is the agent, as with a real
/// CLI) runs the routed hook in a tmux pane and waits for a line; a row of an agent long
/// gone is in the store already. The watch (no path, `--tmux`, `--ndjson`, `--drop-after
/// 1`) drops the old session at once, shows the live one active, sees it `absent` when the
/// line ends it, then drops it: one `dropped` line, the pane's options removed.
#[test]
fn watch_drops_a_session_whose_agent_is_gone() {
    if Command::new("tmux").arg("-V").output().is_err() {
        return crate::producer::e2e_npm::skip("watch --drop-after in tmux", "no tmux");
    }
    let h = Home::new();
    // An agent that ran long ago, in a store of its own (each store holds one session: its
    // lines carry no session_id, the dropped line does): a process that has ended, its row
    // from 2020.
    let store = h.state.join("hooktrack/agents/old");
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    fs::create_dir_all(&store).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    }
    fs::write(
        store.join("events.ndjson"),
        format!(
            "{{\"v\":1,\"provider\":\"claude\",\"generation\":0,\"via\":\"command_fallback\",\"emitter_seq\":1,\"received_at\":\"2020-01-01T00:00:00.000Z\",\"event\":\"UserPromptSubmit\",\"payload\":{{\"session_id\":\"s-old\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"x\"}},\"tmux_pane\":\"%99\",\"agent_pid\":{gone_pid}}}\n"
        ),
    )
    .unwrap();
    let agent = h.home.join("agent.py");
    fs::write(
        &agent,
        r#"import subprocess, sys
payload = b'{"session_id":"s-live","hook_event_name":"UserPromptSubmit","prompt":"hi"}'
subprocess.run([sys.argv[1], "emit", "--observer", "hooktrack", "--agent", "claude",
                "--event", "UserPromptSubmit"], input=payload, check=True)
print("agent-waiting", flush=True)
sys.stdin.readline()
"#,
    )
    .unwrap();
    let script = h.home.join("agent.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\nexport HOME='{home}' XDG_STATE_HOME='{state}'\npython3 '{agent}' '{hook}'\necho agent-ended\nexec cat\n",
            home = h.home.display(),
            state = h.state.display(),
            agent = agent.display(),
            hook = env!("CARGO_BIN_EXE_hooktrack-hook"),
        ),
    );
    let (tmux, pane) = TmuxServer::start("hooktrack-drop", &script, (100, 20));

    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args([
            "watch",
            "--ndjson",
            "--recheck-ms",
            "50",
            "--drop-after",
            "1",
        ])
        .args(["--tmux", "--tmux-socket", &tmux.socket])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    // Bounded waits: every step is a poll away (50 ms) or the grace (1 s) away.
    let mut seen: Vec<serde_json::Value> = Vec::new();
    /// Reads lines until one satisfies `done` (kept in `seen`, like every line read).
    fn until(
        lines: &std::sync::mpsc::Receiver<String>,
        seen: &mut Vec<serde_json::Value>,
        done: &dyn Fn(&serde_json::Value) -> bool,
    ) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(line) = lines.recv_timeout(left) else {
                return false;
            };
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            seen.push(v.clone());
            if done(&v) {
                return true;
            }
        }
        false
    }
    let dropped = |sid: &'static str| {
        move |v: &serde_json::Value| v["session_id"] == sid && v.get("dropped").is_some()
    };
    let phase = |v: &serde_json::Value| v["posture"]["turn"]["phase"].clone();
    let presence = |v: &serde_json::Value| v["posture"]["presence"].clone();

    // The old session: its agent was gone long before the grace period: dropped at once.
    assert!(until(&lines, &mut seen, &dropped("s-old")), "{seen:#?}");
    let old = seen.last().unwrap().clone();
    assert_eq!(old["session"], "old");
    assert_eq!(old["dropped"]["gone_since"], "2020-01-01T00:00:00.000Z");
    // The live one: active, its pid the stand-in agent's, on the pane.
    assert!(
        until(&lines, &mut seen, &|v| v["session"] == "claude"
            && phase(v) == "active"),
        "{seen:#?}"
    );
    let live = seen.last().unwrap().clone();
    let agent_pid = live["agent_pid"].as_u64().unwrap();
    assert_eq!(live["tmux_pane"], pane.as_str());
    let (_, published) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase") == "active"
    });
    assert!(published, "{}", tmux.screen(&pane));
    assert!(tmux.screen(&pane).contains("agent-waiting"));
    assert!(
        !seen.iter().any(|v| v["session"] == "old"
            && v.get("dropped").is_none()
            && v["at"].as_str() > old["at"].as_str()),
        "a dropped session is not reported again: {seen:#?}"
    );

    // The agent ends: absent, then dropped after the grace period.
    tmux.run(&["send-keys", "-t", &pane, "bye", "Enter"]);
    assert!(
        until(&lines, &mut seen, &|v| v["session"] == "claude"
            && presence(v) == "absent"),
        "{seen:#?}"
    );
    let absent = seen.last().unwrap().clone();
    assert!(absent["gone_since"].is_string(), "{absent:#}");
    assert!(
        absent["notices"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains(&format!("agent process {agent_pid} ended"))),
        "{absent:#}"
    );
    let (_, absent_published) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase") == "absent"
    });
    assert!(absent_published);
    assert!(until(&lines, &mut seen, &dropped("s-live")), "{seen:#?}");
    let (_, cleared) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase").is_empty()
    });
    let screen = tmux.screen(&pane);
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(cleared, "the dropped session's pane options are removed");
    assert!(screen.contains("agent-ended"), "{screen}");
    assert_eq!(
        seen.iter().filter(|v| v.get("dropped").is_some()).count(),
        2,
        "one dropped line per session: {seen:#?}"
    );
}

/// The plugin format (OpenCode): setup writes hooktrack's plugin beside a user's own,
/// `--undo` removes exactly hooktrack's file, and the `plugin/` folder only when setup
/// created it.
#[test]
fn setup_writes_the_opencode_plugin_and_undo_removes_exactly_it() {
    let h = Home::new();
    // A user's plugin already in OpenCode's plugin folder.
    let mine = h.file(".config/opencode/plugin/mine.js");
    fs::create_dir_all(mine.parent().unwrap()).unwrap();
    fs::write(&mine, "export const Mine = async () => ({});\n").unwrap();
    let plugin = h.file(".config/opencode/plugin/hooktrack.js");

    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("opencode: check: ok"), "{said}");
    let written = fs::read_to_string(&plugin).unwrap();
    assert!(
        written.starts_with("// hooktrack observer plugin "),
        "{written}"
    );
    assert!(written.contains("\"--agent\", \"opencode\""), "{written}");

    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!plugin.exists(), "setup created it: undo removes it");
    assert_eq!(
        fs::read_to_string(&mine).unwrap(),
        "export const Mine = async () => ({});\n"
    );

    // Only the config folder: setup creates `plugin/`, undo takes it away again.
    let h = Home::new();
    fs::create_dir_all(h.file(".config/opencode")).unwrap();
    assert!(h.run(&["setup"]).status.success());
    assert!(h.file(".config/opencode/plugin/hooktrack.js").is_file());
    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !h.file(".config/opencode/plugin").exists(),
        "{}",
        text(&out)
    );
    assert!(h.file(".config/opencode").is_dir());
}

/// Kilo CLI (OpenCode's plugin, rendered for Kilo): setup finds it by a `kilo` on `PATH`
/// alone, writes the plugin into `~/.config/kilo/plugin/` beside a user's own, and
/// `--undo` removes exactly that file.
#[test]
fn setup_finds_kilo_on_path_writes_its_plugin_and_undo_removes_exactly_it() {
    use std::os::unix::fs::PermissionsExt;

    let stub = |h: &Home| {
        let kilo = h.bin.join("kilo");
        fs::write(&kilo, "#!/bin/sh\necho 7.7.7\n").unwrap();
        fs::set_permissions(&kilo, fs::Permissions::from_mode(0o755)).unwrap();
    };
    // Nothing of Kilo's in HOME: the program on PATH is what setup finds.
    let h = Home::new();
    stub(&h);
    let plugin = h.file(".config/kilo/plugin/hooktrack.js");
    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("kilo: check: ok"), "{said}");
    let written = fs::read_to_string(&plugin).unwrap();
    assert!(written.contains("\"--agent\", \"kilo\""), "{written}");
    assert!(!h.file(".config/opencode").exists(), "{said}");
    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!plugin.exists(), "{}", text(&out));
    assert!(!h.file(".config/kilo/plugin").exists(), "{}", text(&out));

    // A user's plugin beside it stays.
    let h = Home::new();
    stub(&h);
    let mine = h.file(".config/kilo/plugin/mine.js");
    fs::create_dir_all(mine.parent().unwrap()).unwrap();
    fs::write(&mine, "export const Mine = async () => ({});\n").unwrap();
    assert!(h.run(&["setup"]).status.success());
    assert!(h.file(".config/kilo/plugin/hooktrack.js").is_file());
    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!h.file(".config/kilo/plugin/hooktrack.js").exists());
    assert_eq!(
        fs::read_to_string(&mine).unwrap(),
        "export const Mine = async () => ({});\n"
    );
}
