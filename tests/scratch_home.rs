//! A scratch HOME for `hooktrack setup` and `watch` (its own state folder and an empty
//! `PATH` folder), and a private tmux server whose pane options `watch --tmux` writes:
//! shared by `setup.rs` and the end-to-end `setup` test with real agents
//! (`tests/e2e/setup.rs`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Home {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
    pub bin: PathBuf,
}

impl Home {
    pub fn new() -> Self {
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

    pub fn run(&self, args: &[&str]) -> Output {
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

    pub fn file(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The rows of a store's `events.ndjson`.
pub fn rows(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A private tmux server, killed when dropped (its own socket: nobody else's panes).
pub struct TmuxServer {
    pub socket: String,
}

impl TmuxServer {
    /// A private server named `name-<pid>` whose first pane (`columns`x`rows`) runs
    /// `script`; the server and that pane's id.
    pub fn start(name: &str, script: &Path, (columns, rows): (u16, u16)) -> (Self, String) {
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

    pub fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        // A person's terminal has no `CI` (Ink TUIs draw nothing with it set).
        c.args(["-L", &self.socket]).env_remove("CI");
        c
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = self.tmux().args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn option(&self, pane: &str, name: &str) -> String {
        self.run(&["show-options", "-p", "-v", "-t", pane, name])
            .trim_end()
            .to_owned()
    }

    pub fn screen(&self, pane: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", pane])
    }
}

/// Writes `text` to `path` as a script only its owner may run.
pub fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).unwrap();
}

/// A `tmux` in `dir` in front of the real one (the first on `PATH` now) that appends a
/// line `drawn` to `log` for each of its outputs holding one of `looks` (a `capture-pane`
/// that showed a dialog): put `dir` first on a reader's `PATH` to know that it has seen
/// the dialog drawn, after which an answer can be seen gone. No look may hold a `'`.
/// `prelude`: shell lines run first on each call (a test's delay), usually none.
pub fn tmux_logging_dialogs(dir: &Path, looks: &[&str], log: &Path, prelude: &str) {
    let real = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_owned();
    let patterns: Vec<String> = looks.iter().map(|look| format!("*'{look}'*")).collect();
    fs::create_dir_all(dir).unwrap();
    write_script(
        &dir.join("tmux"),
        &format!(
            "#!/bin/sh\n{prelude}out=$('{real}' \"$@\"); rc=$?\nprintf '%s\\n' \"$out\"\n\
             case \"$out\" in {}) echo drawn >> '{}';; esac\nexit $rc\n",
            patterns.join("|"),
            log.display()
        ),
    );
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

/// Polls the pane's options until `done` says so (bounded: the agent answers from a
/// local mock in well under a second; the bound only keeps a broken run from hanging).
/// Returns every distinct `@hooktrack_phase` seen meanwhile, and whether `done` held.
pub fn wait_pane(
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

/// Writes `home/.claude.json` as a person who used Claude Code has it: past its first-run
/// dialogs (theme, the API key ending in `key` approved, the folder `work` trusted), so
/// its prompt comes up at once. Used by the end-to-end tests and the keystroke bench.
#[allow(dead_code)]
pub fn claude_past_first_run(home: &Path, work: &Path, key: &str) {
    fs::write(
        home.join(".claude.json"),
        serde_json::json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [key], "rejected": []},
            "projects": {work.to_string_lossy(): {
                "hasTrustDialogAccepted": true,
                "hasCompletedProjectOnboarding": true
            }}
        })
        .to_string(),
    )
    .expect(".claude.json");
}
