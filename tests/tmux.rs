//! `hooktrack watch --tmux` against a real tmux server on a private socket: the options
//! appear on the pane the rows name and on the pane the supervisor names, follow the
//! session, and are removed when `watch` stops.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::support::{Wake, append, approved_and_stopped, blocked_turn, kimi, prompt};
use crate::watch::{Running, hooktrack, lines_of, next_json};

/// A tmux server this test started, on its own socket; killed (that server only) on
/// drop, and its socket file removed.
pub(crate) struct Server {
    pub(crate) socket: String,
    socket_path: Option<String>,
}

impl Server {
    /// A server on a socket of its own whose first window runs `sleep 600` (a login
    /// shell can exit early on a busy machine and take the server with it); `env` is
    /// what the server and its panes get besides the test's environment.
    pub(crate) fn start(label: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with_config(label, Path::new("/dev/null"), env)
    }

    /// [`Server::start`] with `config` as its `-f` file (whose commands have run when
    /// this returns: tmux runs a config's `run-shell` before it answers).
    pub(crate) fn start_with_config(label: &str, config: &Path, env: &[(&str, &str)]) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut server = Server {
            socket: format!("hooktrack-{label}-{}-{nanos}", std::process::id()),
            socket_path: None,
        };
        let mut start = server.tmux();
        for name in ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"] {
            start.env_remove(name);
        }
        let out = start
            .envs(env.iter().copied())
            .arg("-f")
            .arg(config)
            .args(["new-session", "-d", "-s", "t", "-x", "100"])
            .args(["-y", "30", "sleep 600"])
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.socket_path = Some(
            server
                .run(&["display-message", "-p", "#{socket_path}"])
                .trim()
                .to_owned(),
        );
        server
    }

    pub(crate) fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]).env_remove("TMUX");
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let out = self.tmux().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    /// hooktrack's options on `pane`, unquoted.
    pub(crate) fn options(&self, pane: &str) -> BTreeMap<String, String> {
        self.run(&["show-options", "-p", "-t", pane])
            .lines()
            .filter(|l| l.starts_with("@hooktrack_"))
            .map(|l| {
                let (name, value) = l.split_once(' ').unwrap_or((l, ""));
                (name.to_owned(), value.trim_matches(['"', '\'']).to_owned())
            })
            .collect()
    }

    /// Waits (bounded) until `pane`'s options satisfy `ok`.
    pub(crate) fn wait_for(
        &self,
        pane: &str,
        what: &str,
        ok: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> BTreeMap<String, String> {
        let deadline = Instant::now() + Wake::PATIENCE;
        loop {
            let options = self.options(pane);
            if ok(&options) {
                return options;
            }
            assert!(
                Instant::now() < deadline,
                "{what} on {pane}: options are {options:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(path) = &self.socket_path {
            let _ = fs::remove_file(path);
        }
    }
}

/// An envelope row, as the emitter writes it inside tmux (`tmux_pane` last).
pub(crate) fn row(seq: u64, payload: &str, pane: Option<&str>) -> String {
    let event: serde_json::Value = serde_json::from_str(payload).expect("payload JSON");
    let name = event["hook_event_name"].as_str().expect("an event name");
    let pane = pane.map_or_else(String::new, |p| format!(r#","tmux_pane":"{p}""#));
    format!(
        r#"{{"v":1,"provider":"kimi","generation":1,"via":"http","sequence":{seq},"emitter_seq":{seq},"event":"{name}","payload":{payload}{pane}}}"#
    )
}

#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn watch_publishes_each_session_on_its_pane_and_cleans_up() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut server = Server {
        socket: format!("hooktrack-test-{}-{nanos}", std::process::id()),
        socket_path: None,
    };
    server.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "100",
        "-y",
        "30",
        // A pane command that lives as long as the test: a login shell can exit early
        // (no terminal, a busy machine) and take the server with it.
        "sleep 600",
    ]);
    server.socket_path = Some(
        server
            .run(&["display-message", "-p", "#{socket_path}"])
            .trim()
            .to_owned(),
    );
    // `-a`: after the target window, never at an index in use (a loaded run once got
    // "create window failed: index 0 in use" from a plain `-t t`).
    server.run(&["new-window", "-d", "-a", "-t", "t", "sleep 600"]);
    let panes: Vec<String> = server
        .run(&["list-panes", "-a", "-F", "#{pane_id}"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(panes.len(), 2, "{panes:?}");
    let (pane_a, pane_b) = (panes[0].as_str(), panes[1].as_str());

    let root = tempfile::tempdir().expect("tempdir");
    // A: the rows name the pane (the emitter recorded $TMUX_PANE).
    let a = root.path().join("a").join("events.ndjson");
    // B: an older emitter, no pane in the rows; the supervisor names it.
    let b = root.path().join("b").join("events.ndjson");
    for file in [&a, &b] {
        fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    }
    let rows_a = |first: u64, payloads: &[String]| -> Vec<String> {
        payloads
            .iter()
            .zip(first..)
            .map(|(p, seq)| row(seq, p, Some(pane_a)))
            .collect()
    };
    append(&a, &rows_a(1, &blocked_turn()));
    let mut rows_b = vec![kimi("SessionStart", r#""source":"startup""#)];
    rows_b.extend(prompt(1));
    rows_b.push(kimi("Stop", r#""stop_hook_active":false"#));
    append(&b, &rows_b);

    let b_arg = b.display().to_string();
    let mut watch = Running::spawn(
        hooktrack()
            .args([
                "watch",
                "--ndjson",
                "--recheck-ms",
                "50",
                "--tmux",
                "--tmux-socket",
            ])
            .arg(&server.socket)
            .arg("--tmux-pane")
            .arg(format!("{b_arg}={pane_b}"))
            .arg(&a)
            .arg(&b)
            .env_remove("TMUX")
            .stderr(Stdio::piped()),
    );
    let rx = lines_of(watch.child());
    next_json(&rx, "the first update");

    let blocked = server.wait_for(pane_a, "blocked on Bash", |o| {
        o.get("@hooktrack_blocked").map(String::as_str) == Some("Bash")
    });
    assert_eq!(blocked["@hooktrack_phase"], "blocked");
    assert_eq!(blocked["@hooktrack_agent"], "kimi-code");
    assert_eq!(blocked["@hooktrack_turn"], "1");
    assert_eq!(blocked["@hooktrack_attention"], "1");
    assert_eq!(blocked["@hooktrack_status"], "kimi-code blocked Bash");
    assert!(
        blocked["@hooktrack_turn_age"].ends_with(['s', 'm']),
        "{blocked:?}"
    );

    let done_b = server.wait_for(pane_b, "B's finished turn", |o| {
        o.get("@hooktrack_last").map(String::as_str) == Some("success")
    });
    assert_eq!(done_b["@hooktrack_phase"], "ready");
    assert_eq!(done_b["@hooktrack_blocked"], "");
    assert_eq!(done_b["@hooktrack_turn_age"], "");
    assert_eq!(done_b["@hooktrack_attention"], "");

    append(&a, &rows_a(6, &approved_and_stopped()));
    let done_a = server.wait_for(pane_a, "A's answered permission", |o| {
        o.get("@hooktrack_last").map(String::as_str) == Some("success")
    });
    assert_eq!(done_a["@hooktrack_phase"], "ready");
    assert_eq!(done_a["@hooktrack_blocked"], "");

    watch.interrupt_cleanly();
    for pane in [pane_a, pane_b] {
        assert_eq!(server.options(pane), BTreeMap::new(), "left on {pane}");
    }
}

#[test]
fn a_pane_flag_must_name_a_watched_path_and_a_tmux_target() {
    let out = hooktrack()
        .args(["watch", "--tmux", "--tmux-pane", "elsewhere=%1", "."])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not one of the watched paths"), "{stderr}");
    let out = hooktrack()
        .args(["watch", "--tmux", "--tmux-pane", ".=a;b", "."])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
