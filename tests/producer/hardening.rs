//! The producer side of the fault audit: one test per audited case, named after it, with
//! real `hooktrack` processes, real files and loopback sockets.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::util::*;

/// A `hooktrack session` and the agent it runs (its pid, as the agent wrote it to the
/// file), both killed on drop: a failing wait must not leave them behind.
struct Reap(std::process::Child, std::path::PathBuf);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = fs::read_to_string(&self.1)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            // SAFETY: kill(2) on the agent this test started (its pid, as it wrote it).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Reap {
    /// The agent's pid, once it has marked `started` beside its pid file (a bounded wait
    /// for `what`).
    fn agent_started(&self, what: &str) -> i32 {
        let started = self.1.with_file_name("started");
        wait_for(Duration::from_secs(60), what, || {
            started.exists().then_some(())
        });
        fs::read_to_string(&self.1)
            .expect("pid")
            .trim()
            .parse()
            .expect("a pid")
    }

    /// `kill -9` of the session, and a bounded wait for its end.
    fn kill_9(&mut self) {
        send_signal(&self.0, libc::SIGKILL);
        let _ = wait_child(&mut self.0, Duration::from_secs(30));
    }

    /// `kill -9` of the session once its agent has started (a bounded wait for `what`),
    /// then bounded waits for the session's end and for its agent's: the agent is told
    /// (SIGTERM by default) rather than orphaned.
    fn kill_9_and_see_its_agent_end(&mut self, what: &str) {
        let agent_pid = self.agent_started(what);
        self.kill_9();
        wait_for(Duration::from_secs(30), "the agent to end", || {
            process_gone(agent_pid).then_some(())
        });
    }
}

fn delivery(seq: u64, event: &str) -> Vec<u8> {
    format!(
        r#"{{"v":1,"provider":"kimi-cli","generation":1,"emitter_seq":{seq},"event":"{event}","payload":{}}}"#,
        kimi_cli(event, "")
    )
    .into_bytes()
}

fn emit_stop(dir: &Path, url: Option<&str>) -> std::process::Output {
    let out = emit(
        dir,
        url,
        Some(TOKEN),
        "Stop",
        kimi_cli("Stop", "").as_bytes(),
    );
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    out
}

/// Runs `hooktrack collect` on `dir`, which must refuse to start (bounded wait); its stderr.
fn collect_must_fail(dir: &Path) -> String {
    let mut child = hooktrack()
        .args([
            "collect",
            "--provider",
            "kimi-cli",
            "--generation",
            "1",
            "--dir",
        ])
        .arg(dir)
        .env("HOOKTRACK_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn collect");
    let status = wait_child(&mut child, Duration::from_secs(20));
    let mut err = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
    }
    assert!(!status.success(), "the collector started: {err}");
    err
}

fn seqs(rows: &[serde_json::Value]) -> Vec<u64> {
    rows.iter()
        .filter_map(|r| r["emitter_seq"].as_u64())
        .collect()
}

#[test]
fn rotation_by_rename_or_delete_while_the_collector_runs_loses_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let url = collector.url();
    for _ in 0..3 {
        emit_stop(&dir, Some(&url));
    }
    fs::rename(dir.join("events.ndjson"), dir.join("events.1")).expect("rotate");
    for _ in 0..3 {
        emit_stop(&dir, Some(&url));
    }
    fs::rename(dir.join("events.ndjson"), dir.join("events.2")).expect("rotate");
    fs::remove_file(dir.join("events.2")).expect("rm");
    for _ in 0..3 {
        emit_stop(&dir, Some(&url));
    }
    assert!(collector.stop().success());
    let first = rows(&dir.join("events.1"));
    let now = rows(&dir.join("events.ndjson"));
    assert_eq!(seqs(&first), [1, 2, 3]);
    assert_eq!(seqs(&now), [7, 8, 9], "rows after rm went to the new file");
    assert!(now.iter().chain(&first).all(|r| r["via"] == "http"));
}

#[test]
fn a_body_generation_cannot_move_the_row_generation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 4);
    let body = format!(
        r#"{{"v":1,"provider":"kimi-cli","generation":1152921504606846976,"emitter_seq":1,"event":"Stop","payload":{}}}"#,
        kimi_cli("Stop", "")
    );
    let (status, reply) = post(collector.addr(), Some(TOKEN), body.as_bytes());
    assert_eq!(status, 200, "{reply}");
    assert!(collector.stop().success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["generation"], 4,
        "the collector's generation, not the body's"
    );
}

#[test]
fn a_body_cannot_claim_an_emitter_seq_never_handed_out() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    // A tool subprocess with the token claims the key the real emitter will take next.
    let (status, reply) = post(collector.addr(), Some(TOKEN), &delivery(1, "Notification"));
    assert_eq!(status, 200, "{reply}");
    emit_stop(&dir, Some(&collector.url()));
    assert!(collector.stop().success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0]["emitter_seq"],
        serde_json::Value::Null,
        "{:?}",
        rows[0]
    );
    assert_eq!(rows[1]["emitter_seq"], 1);
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(
        report["events"], 2,
        "the real Stop is not taken for a duplicate"
    );
}

#[test]
fn a_lone_surrogate_from_json_dumps_is_delivered_and_replayed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let url = collector.url();
    for (event, payload) in kimi_cli_session() {
        let payload = if event == "PreToolUse" {
            payload
                .replace(r#""ls""#, r#""echo \ud800""#)
                .replace(r#""call_1""#, r#""call_\udc01""#)
        } else if event == "PostToolUse" {
            payload.replace(r#""call_1""#, r#""call_\udc01""#)
        } else {
            payload
        };
        let out = emit(&dir, Some(&url), Some(TOKEN), event, payload.as_bytes());
        assert!(out.status.success());
    }
    assert!(collector.stop().success());
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(ledger(&report["turns"]), ["main success 1"], "{report:#}");
    let diags = &report["diagnostics"]["counters"];
    assert_eq!(diags["line_not_json"], 0, "{diags}");
    assert_eq!(diags["lone_surrogate"], 2, "{diags}");
}

#[test]
fn an_existing_store_directory_and_its_files_are_made_owner_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
    for name in ["emitter.seq", "emit.log", "events.ndjson"] {
        fs::write(dir.join(name), b"").expect("create");
        fs::set_permissions(dir.join(name), fs::Permissions::from_mode(0o666)).expect("chmod");
    }
    // An emitter with no collector: it takes a seq, appends, and logs the failed post.
    emit_stop(
        &dir,
        Some(&format!("http://127.0.0.1:{}/events", dead_port())),
    );
    assert_eq!(mode(&dir), 0o700);
    for name in ["emitter.seq", "emit.log", "events.ndjson"] {
        assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
    }
}

#[test]
fn a_symlinked_events_file_is_refused_and_its_target_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).expect("mkdir");
    let target = tmp.path().join("precious");
    fs::write(&target, b"keep me\n").expect("target");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).expect("chmod");
    symlink(&target, dir.join("events.ndjson")).expect("symlink");
    emit_stop(
        &dir,
        Some(&format!("http://127.0.0.1:{}/events", dead_port())),
    );
    assert_eq!(fs::read(&target).expect("target"), b"keep me\n");
    assert_eq!(mode(&target), 0o644);
    let log = fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("symbolic link"), "{log}");
    // The collector refuses the store outright.
    let err = collect_must_fail(&dir);
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn a_store_directory_owned_by_another_user_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).expect("mkdir");
    let c_dir = std::ffi::CString::new(dir.to_str().expect("utf-8")).expect("c path");
    // SAFETY: chown(2) on a directory this test created. CI runs as root; elsewhere the
    // call fails and the test says so rather than passing vacuously.
    let rc = unsafe { libc::chown(c_dir.as_ptr(), 65534, 65534) };
    assert_eq!(rc, 0, "this test needs root to give a directory away");
    let err = collect_must_fail(&dir);
    assert!(err.contains("owned by uid 65534"), "{err}");
    assert!(!dir.join("events.ndjson").exists());
}

#[test]
fn five_hundred_idle_connections_without_the_token_do_not_deny_a_delivery() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let mut idle = Vec::new();
    for _ in 0..500 {
        let mut s = TcpStream::connect(collector.addr()).expect("connect");
        let _ = s.write_all(b"POST /events HTTP/1.1\r\nHost: x\r\n");
        idle.push(s);
    }
    for _ in 0..5 {
        emit_stop(&dir, Some(&collector.url()));
    }
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 5);
    assert!(
        rows.iter().all(|r| r["via"] == "http"),
        "every delivery answered 200 within the emitter's deadline: {rows:?}"
    );
    drop(idle);
    assert!(collector.stop().success());
}

#[test]
fn five_hundred_connections_that_send_nothing_do_not_deny_a_delivery() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    // Connected, silent: the collector's accept waits for a first byte, so these are not
    // handed over at once; the emitters' requests are, and are served.
    let silent: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect(collector.addr()).expect("connect"))
        .collect();
    for _ in 0..5 {
        emit_stop(&dir, Some(&collector.url()));
    }
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r["via"] == "http"), "{rows:?}");
    drop(silent);
    assert!(collector.stop().success());
}

#[test]
fn a_missing_store_directory_is_created_by_the_emitter() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("not").join("yet");
    emit_stop(
        &dir,
        Some(&format!("http://127.0.0.1:{}/events", dead_port())),
    );
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn a_watchdog_timeout_is_recorded_as_a_row_with_the_event_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    // The agent never closes the hook's stdin.
    let mut child = emit_command(&dir, "PreToolUse")
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn emit");
    let stdin = child.stdin.take();
    let status = wait_child(&mut child, Duration::from_secs(30));
    drop(stdin);
    assert!(status.success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["event"], "PreToolUse");
    let cause = rows[0]["payload_error"].as_str().unwrap_or("");
    assert!(cause.contains("gave up"), "{cause}");
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(report["lines"], 1);
}

#[test]
fn a_watchdog_timeout_with_the_store_lock_stuck_is_recorded_without_the_lock() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    // A stopped emitter's lock: the hook's own seq waits for it, then the watchdog fires.
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("emitter.seq"))
        .expect("open the lock");
    lock.lock().expect("take the lock");
    let spawned = hooktrack_producer::store::now();
    let mut child = emit_command(&dir, "Stop")
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn emit");
    let stdin = child.stdin.take();
    let status = wait_child(&mut child, Duration::from_secs(30));
    drop(stdin);
    drop(lock);
    assert!(status.success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["event"], "Stop");
    assert_eq!(rows[0]["via"], "command_fallback");
    // Stamped when the emitter gave up, not when it started: the timer cannot fire early.
    let at = hooktrack_core::time::Timestamp::parse_rfc3339(
        rows[0]["received_at"].as_str().unwrap_or(""),
    )
    .expect("received_at");
    assert!(
        at.as_millis() >= spawned.as_millis() + 2_000,
        "{at} is not the give-up time (spawned {spawned})"
    );
    let log = fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(
        log.contains(
            "event=Stop delivered=recorded as a command_fallback row, without the store lock"
        ),
        "{log}"
    );
}

#[test]
fn a_delivery_that_can_be_written_nowhere_goes_to_the_per_user_log() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir(&home).expect("home");
    let blocker = tmp.path().join("a-file");
    fs::write(&blocker, b"").expect("file");
    // A store under a regular file: no directory can be made there.
    let dir = blocker.join("store");
    let mut child = emit_command(&dir, "Stop")
        .arg("--url")
        .arg(format!("http://127.0.0.1:{}/events", dead_port()))
        .env("HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .env("HOOKTRACK_TOKEN", TOKEN)
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(kimi_cli("Stop", "").as_bytes())
        .expect("payload");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let log =
        fs::read_to_string(home.join(".local/state/hooktrack/emit.log")).expect("the per-user log");
    assert!(log.contains("event=Stop") && log.contains("LOST"), "{log}");
    assert!(!log.contains(TOKEN));
}

#[test]
fn a_non_loopback_collector_url_is_refused_by_emit_and_installers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    // TEST-NET-1: never routed; the emitter must not even try it.
    emit_stop(&dir, Some("http://192.0.2.1:8080/events"));
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    let log = fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("not a loopback address"), "{log}");
    let config = tmp.path().join("settings.json");
    let out = install_with(
        &["install", "claude"],
        &config,
        &dir,
        1,
        "http://192.0.2.1:8080/events",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(!config.exists());
}

#[test]
fn an_envelope_whose_payload_is_an_array_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    for body in [
        r#"{"v":1,"event":"Stop","payload":[1,2]}"#,
        r#"{"v":1,"event":"Stop","payload":"Stop"}"#,
        r#"{"v":1,"payload":{"session_id":"s"}}"#,
        r#"{"v":1,"event":"Stop","payload":{"hook_event_name":"Stop","session_id":7}}"#,
    ] {
        let (status, reply) = post(collector.addr(), Some(TOKEN), body.as_bytes());
        assert_eq!(status, 400, "{body}: {reply}");
    }
    assert!(collector.stop().success());
    assert_eq!(rows(&dir.join("events.ndjson")).len(), 0);
}

#[test]
fn a_store_lock_held_by_a_stopped_process_is_waited_for_bounded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    // This process takes the store lock and never lets go (like a stopped emitter).
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("emitter.seq"))
        .expect("open the lock");
    lock.lock().expect("take the lock");
    let (status, reply) = post(collector.addr(), Some(TOKEN), &delivery(1, "Stop"));
    assert_eq!(status, 503, "{reply}");
    assert!(reply.contains("lock"), "{reply}");
    // The emitter gives up on the lock too, and still records the delivery.
    emit_stop(&dir, Some(&collector.url()));
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    let log = fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("lock"), "{log}");
    drop(lock);
    assert!(collector.stop().success());
}

#[test]
fn a_second_collector_for_one_store_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let first = Collector::start(&dir, 1);
    let err = collect_must_fail(&dir);
    assert!(err.contains("another collector"), "{err}");
    let status = channel_status(&dir);
    assert_eq!(status["status"], "running");
    assert_eq!(status["pid"], first.child.id());
    for seq in 1..=3 {
        let (code, _) = post(first.addr(), Some(TOKEN), &delivery(seq, "Stop"));
        assert_eq!(code, 200);
    }
    assert!(first.stop().success());
    let sequences: Vec<u64> = rows(&dir.join("events.ndjson"))
        .iter()
        .filter_map(|r| r["sequence"].as_u64())
        .collect();
    assert_eq!(sequences, [1, 2, 3]);
}

fn channel_status(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(dir.join("collector.json")).expect("collector.json"))
        .expect("json")
}

#[test]
fn http_heads_over_16_kib_and_loose_content_lengths_and_versions_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let body = delivery(1, "Stop");
    let request = |version: &str, length_header: &str, padding: usize| {
        let mut r = format!(
            "POST /events {version}\r\nAuthorization: Bearer {TOKEN}\r\n{length_header}\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(padding)
        )
        .into_bytes();
        r.extend_from_slice(&body);
        r
    };
    let len = body.len();
    let cases = [
        ("HTTP/1.1", format!("Content-Length: {len}"), 20 * 1024, 431),
        ("HTTP/1.1", format!("Content-Length: +{len}"), 0, 400),
        ("HTTP/1.1", format!("Content-Length : {len}"), 0, 400),
        ("HTTP/1.9", format!("Content-Length: {len}"), 0, 400),
        ("HTTP/1.1", format!("Content-Length: {len}"), 0, 200),
    ];
    for (version, header, padding, want) in cases {
        let (status, reply) = raw_request(collector.addr(), &request(version, &header, padding));
        assert_eq!(status, want, "{version} {header:?} pad {padding}: {reply}");
    }
    assert!(collector.stop().success());
    assert_eq!(rows(&dir.join("events.ndjson")).len(), 1);
}

#[test]
fn emit_log_rotation_by_concurrent_emitters_loses_no_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    let mut old = String::from("first old line\n");
    while old.len() <= 1024 * 1024 {
        old.push_str(&"x".repeat(99));
        old.push('\n');
    }
    old.push_str("last old line\n");
    let url = format!("http://127.0.0.1:{}/events", dead_port());
    for round in 0..6 {
        fs::write(dir.join("emit.log"), &old).expect("fill the log");
        let _ = fs::remove_file(dir.join("emit.log.1"));
        let children: Vec<_> = (0..16)
            .map(|_| {
                let mut child = emit_command(&dir, "Stop")
                    .args(["--url", &url])
                    .env("HOOKTRACK_TOKEN", TOKEN)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawn");
                let _ = child.stdin.take().map(|mut s| s.write_all(b"{}"));
                child
            })
            .collect();
        let mut pids = Vec::new();
        for mut child in children {
            pids.push(child.id());
            assert!(wait_child(&mut child, Duration::from_secs(30)).success());
        }
        let text = fs::read_to_string(dir.join("emit.log")).unwrap_or_default()
            + &fs::read_to_string(dir.join("emit.log.1")).unwrap_or_default();
        assert!(
            text.contains("first old line") && text.contains("last old line"),
            "round {round}: the old log was lost"
        );
        for pid in pids {
            assert!(
                text.contains(&format!("pid={pid} ")),
                "round {round}: pid {pid} lost"
            );
        }
    }
}

/// Writes a stand-in Kimi CLI that runs its `SessionStart` hooks with a payload naming
/// `transcript`, marks `$OUT/started`, then becomes `sleep` (ended by the signal
/// `hooktrack session` forwards).
fn agent_naming_transcript(dir: &Path, transcript: &Path) -> std::path::PathBuf {
    let payload = kimi_cli(
        "SessionStart",
        &format!(
            r#""source": "startup", "transcript_path": "{}""#,
            transcript.display()
        ),
    );
    let script = format!(
        r#"#!/bin/sh
set -eu
awk '/^\[\[hooks\]\]/ {{ found = 0 }}
  $0 == "event = \"SessionStart\"" {{ found = 1; next }}
  found && /^command = "/ {{ sub(/^command = "/, ""); sub(/"$/, ""); print; found = 0 }}' \
  "$HOME/.kimi/config.toml" > "$OUT/cmds"
while IFS= read -r cmd; do printf '%s' '{payload}' | sh -c "$cmd"; done < "$OUT/cmds"
echo $$ > "$OUT/pid"
touch "$OUT/started"
exec sleep 600
"#
    );
    let path = dir.join("fake-kimi");
    fs::write(&path, script).expect("write agent");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// Writes a stand-in Kimi Code that writes its pid to `$OUT/pid`, marks `$OUT/started`,
/// then becomes `sleep` (it runs no hook).
fn stand_in_kimi_code(dir: &Path) -> std::path::PathBuf {
    let agent = dir.join("fake-kimi-code");
    fs::write(
        &agent,
        "#!/bin/sh\necho $$ > \"$OUT/pid\"\ntouch \"$OUT/started\"\nexec sleep 600\n",
    )
    .expect("write agent");
    fs::set_permissions(&agent, fs::Permissions::from_mode(0o755)).expect("chmod");
    agent
}

#[test]
fn item_1_a_fifo_transcript_does_not_keep_session_alive_past_sigterm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, out_dir) = (tmp.path().join("home"), tmp.path().join("out"));
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&out_dir).expect("mkdir");
    fs::write(home.join(".kimi/config.toml"), "default_model = \"mock\"\n").expect("config");
    let fifo = tmp.path().join("transcript.jsonl");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let agent = agent_naming_transcript(tmp.path(), &fifo);
    let output = tmp.path().join("session.ndjson");
    let session = fake_kimi_session(&tmp.path().join("root"), &output, &agent, &home, &out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn session");
    let mut session = Reap(session, out_dir.join("pid"));
    session.agent_started("the agent's hook");
    // The session has read the row naming the FIFO once its output shows the event.
    wait_for(Duration::from_secs(30), "the row read", || {
        let text = fs::read_to_string(tmp.path().join("session.ndjson")).ok()?;
        text.contains("SessionStart").then_some(())
    });
    send_signal(&session.0, libc::SIGTERM);
    // The agent ends on the forwarded signal; the session must follow (a hang guard).
    let status = wait_child(&mut session.0, Duration::from_secs(30));
    assert!(status.code().is_some(), "{status:?}");
}

#[test]
fn item_2_one_fallback_row_of_an_unannounced_generation_does_not_blind_the_session() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let url = collector.url();
    let turn = |n: u32| {
        for (event, fields) in [
            ("UserPromptSubmit", format!(r#""prompt": "task {n}""#)),
            ("Stop", r#""stop_hook_active": false"#.to_owned()),
        ] {
            let out = emit(
                &dir,
                Some(&url),
                Some(TOKEN),
                event,
                kimi_cli(event, &fields).as_bytes(),
            );
            assert!(out.status.success());
        }
    };
    emit(
        &dir,
        Some(&url),
        Some(TOKEN),
        "SessionStart",
        kimi_cli("SessionStart", r#""source": "startup""#).as_bytes(),
    );
    turn(1);
    // A tool of the agent runs the hook with the generation it inherited plus one and a
    // dead URL: one fallback row of generation 2.
    let dead = format!("http://127.0.0.1:{}/hook", dead_port());
    let mut forged = hooktrack()
        .args(["emit", "--dir"])
        .arg(&dir)
        .args(["--provider", "kimi-cli", "--generation", "2"])
        .args(["--event", "Notification", "--url", &dead])
        .env("HOOKTRACK_TOKEN", TOKEN)
        .env_remove("TMUX_PANE")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn emit");
    forged
        .stdin
        .take()
        .expect("stdin")
        .write_all(kimi_cli("Notification", r#""message": "x""#).as_bytes())
        .expect("payload");
    assert!(forged.wait().expect("wait").success());
    turn(2);
    assert!(collector.stop().success());
    let stored = rows(&dir.join("events.ndjson"));
    assert_eq!(
        stored
            .iter()
            .filter(|r| r["via"] == "command_fallback" && r["generation"] == 2)
            .count(),
        1,
        "the forged row is in the store"
    );
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(
        ledger(&report["turns"]),
        ["main success 0", "main success 0"]
    );
    let counters = &report["diagnostics"]["counters"];
    assert_eq!(counters["unannounced_generation"], 1, "{counters}");
    assert_eq!(counters["stale_generation"], 0, "{counters}");
}

#[test]
fn item_4_a_big_payload_to_a_stopped_collector_keeps_its_body_on_the_fallback_path() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    assert!(
        dir.join(format!("collector-{}.sock", collector.port))
            .exists(),
        "the exchange must go over the socket"
    );
    // Stopped, it accepts no byte more than the socket buffers hold: every write blocks.
    send_signal(&collector.child, libc::SIGSTOP);
    let message = "x".repeat(512 * 1024);
    let payload = kimi_cli("Notification", &format!(r#""message": "{message}""#));
    let out = emit(
        &dir,
        Some(&collector.url()),
        Some(TOKEN),
        "Notification",
        payload.as_bytes(),
    );
    send_signal(&collector.child, libc::SIGCONT);
    assert!(out.status.success());
    assert!(collector.stop().success());
    let stored = rows(&dir.join("events.ndjson"));
    assert_eq!(stored.len(), 1, "one row");
    assert_eq!(stored[0]["via"], "command_fallback", "{}", stored[0]["via"]);
    assert_eq!(
        stored[0]["payload"]["message"].as_str().map(str::len),
        Some(message.len()),
        "the body was kept"
    );
}

/// A stand-in for the collector on loopback: it listens on the URL's port and on the
/// store's socket of that port, reads each request's head and then stops reading (the
/// body waits in the sender's buffers), or, with `trickle`, takes 512 bytes of it now
/// and then, never answering. A send on the sender it returns ends it.
fn stalled_peer(dir: &Path, trickle: bool) -> (String, std::sync::mpsc::Sender<()>) {
    use std::io::Read;
    use std::os::unix::net::UnixListener;
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = tcp.local_addr().expect("addr").port();
    fs::create_dir_all(dir).expect("mkdir");
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    let unix = UnixListener::bind(dir.join(format!("collector-{port}.sock"))).expect("bind");
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        // The emitter connects to the socket first; the TCP listener only holds the port.
        let _tcp = tcp;
        let Ok((mut conn, _)) = unix.accept() else {
            return;
        };
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match conn.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let mut some = [0u8; 512];
        loop {
            match stopped.recv_timeout(Duration::from_millis(20)) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if trickle => {
                    if matches!(conn.read(&mut some), Ok(0) | Err(_)) {
                        return;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        }
    });
    (format!("http://127.0.0.1:{port}/events"), stop)
}

/// Item 5: a peer on the collector's socket that reads the request head and then stops
/// reading, or reads a little now and then, must not cost a 900 KiB delivery its payload:
/// the exchange gives up at the emitter's 1.5 s limit and the row goes to the store with
/// its body, not the watchdog's give-up row at 3 s (`payload: null`). Before, one `write`
/// on the Unix socket waited afresh for every buffer the trickling peer freed.
#[test]
fn item_5_a_peer_that_stops_reading_after_the_head_costs_the_delivery_nothing() {
    for trickle in [false, true] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("store");
        let (url, stop) = stalled_peer(&dir, trickle);
        let message = "x".repeat(900 * 1024);
        let payload = kimi_cli("Notification", &format!(r#""message": "{message}""#));
        let out = emit(
            &dir,
            Some(&url),
            Some(TOKEN),
            "Notification",
            payload.as_bytes(),
        );
        let _ = stop.send(());
        assert!(out.status.success());
        let stored = rows(&dir.join("events.ndjson"));
        let log = fs::read_to_string(dir.join("emit.log")).unwrap_or_default();
        assert_eq!(stored.len(), 1, "trickle {trickle}: one row; log: {log}");
        assert_eq!(stored[0]["via"], "command_fallback");
        assert_eq!(
            stored[0]["payload"]["message"].as_str().map(str::len),
            Some(message.len()),
            "trickle {trickle}: the body was kept; log: {log}"
        );
        // The exchange's own limit ended it, not the watchdog.
        assert!(log.contains("timed out sending to"), "{log}");
        assert!(log.contains("after 1500 ms"), "{log}");
        assert!(!log.contains("gave up"), "{log}");
    }
}

/// True once `pid` is gone or a zombie nobody reaped yet (it runs nothing either way).
fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn item_6_kill_9_of_session_tells_the_agent_and_readers_see_the_collector_dead() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, out_dir) = (tmp.path().join("home"), tmp.path().join("out"));
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&out_dir).expect("mkdir");
    fs::write(home.join(".kimi/config.toml"), "default_model = \"mock\"\n").expect("config");
    let agent = agent_naming_transcript(tmp.path(), &tmp.path().join("none.jsonl"));
    let root = tmp.path().join("root");
    let output = tmp.path().join("session.ndjson");
    let session = fake_kimi_session(&root, &output, &agent, &home, &out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn session");
    // The agent is told (SIGTERM by default) rather than orphaned.
    Reap(session, out_dir.join("pid")).kill_9_and_see_its_agent_end("the agent's hook");
    // A reader of the store sees the collector dead, though its record says running.
    let store = root.join("hook-observation/kimi-cli");
    let record: serde_json::Value =
        serde_json::from_slice(&fs::read(store.join("collector.json")).expect("collector.json"))
            .expect("JSON");
    assert_eq!(record["status"], "running", "the record is left as it was");
    let paths = hooktrack::locate_store(&root).expect("store");
    let mut reader = hooktrack::Session::open(paths, hooktrack::SessionConfig::default());
    let now = hooktrack::wall_clock();
    let _ = reader.poll(now);
    let channel = reader.channel(now);
    assert_eq!(
        channel.state,
        hooktrack::ChannelState::Stopped,
        "{channel:?} {record}"
    );
}

/// `kill -9` of a `hooktrack session` of Kimi Code leaves its generation-scoped block in
/// `$KIMI_CODE_HOME/config.toml` (no cleanup ran): `hooktrack uninstall kimi-code` removes
/// it, leaving the user's own bytes, and the file then holds no hooktrack entry.
#[test]
fn item_6_uninstall_removes_the_block_of_a_dead_session() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, kimi_home, out_dir) = (
        tmp.path().join("home"),
        tmp.path().join("kimi-home"),
        tmp.path().join("out"),
    );
    for dir in [&home, &kimi_home, &out_dir] {
        fs::create_dir_all(dir).expect("mkdir");
    }
    let config = kimi_home.join("config.toml");
    let user = "default_model = \"mock\"\n";
    fs::write(&config, user).expect("config");
    let agent = stand_in_kimi_code(tmp.path());
    let session = kimi_code_session(
        &tmp.path().join("root"),
        &tmp.path().join("session.ndjson"),
        &agent,
        &home,
        &kimi_home,
    )
    .env("OUT", &out_dir)
    .spawn()
    .expect("spawn session");
    let mut session = Reap(session, out_dir.join("pid"));
    session.agent_started("the agent to start");
    let during = fs::read_to_string(&config).expect("config");
    assert!(
        during.contains("(generation 1)") && during.contains(user),
        "{during}"
    );
    session.kill_9();
    let left = fs::read_to_string(&config).expect("config");
    assert_eq!(
        left, during,
        "kill -9 ran no cleanup: the block is still there"
    );
    let out = hooktrack()
        .args(["uninstall", "kimi-code"])
        .env("HOME", &home)
        .env("KIMI_CODE_HOME", &kimi_home)
        .output()
        .expect("uninstall");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("removed the hooktrack block (generation 1)"),
        "{said}"
    );
    assert_eq!(fs::read_to_string(&config).expect("config"), user);
    let check = hooktrack()
        .args(["check", "kimi-code", "--file-only"])
        .env("HOME", &home)
        .env("KIMI_CODE_HOME", &kimi_home)
        .output()
        .expect("check");
    let checked = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(!checked.contains("generation 1"), "{checked}");
}

/// A launch's memory is flat in the length of its run: every turn that closes is written
/// to `ledger.ndjson` beside `events.ndjson` as it closes, the live session keeps the open
/// turn alone, and the closing ledger is read back from the file (all the turns, in order).
#[test]
fn item_9_the_launch_ledger_streams_to_a_file_and_memory_keeps_only_open_turns() {
    use hooktrack::TurnResult;
    const TURNS: u64 = 300;
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut launch = launch_in(
        tmp.path(),
        hooktrack::Agent::KimiCli,
        &tmp.path().join("kimi/config.toml"),
    );
    let generation = launch.generation();
    let events = launch.store().events.clone();
    let mut seq = 0;
    let mut row = |event: &str, fields: &str| {
        seq += 1;
        format!(
            r#"{{"v":1,"provider":"kimi-cli","generation":{generation},"via":"http","sequence":{seq},"emitter_seq":{seq},"received_at":"2026-12-01T10:00:00.000Z","event":"{event}","payload":{}}}"#,
            kimi_cli(event, fields)
        ) + "\n"
    };
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&events)
        .expect("events");
    file.write_all(row("SessionStart", r#""source": "startup""#).as_bytes())
        .expect("append");
    let mut most_in_memory = 0;
    for turn in 0..TURNS {
        let rows = row("UserPromptSubmit", r#""prompt": "go""#)
            + &row("Stop", r#""stop_hook_active": false"#);
        file.write_all(rows.as_bytes()).expect("append");
        if turn % 10 == 9 {
            launch.poll(hooktrack::wall_clock());
            most_in_memory = most_in_memory.max(launch.session().ledger().len());
        }
    }
    launch.poll(hooktrack::wall_clock());
    most_in_memory = most_in_memory.max(launch.session().ledger().len());
    assert!(
        most_in_memory <= 1,
        "the live session kept {most_in_memory} turns in memory"
    );
    let streamed = fs::read_to_string(launch.store().dir.as_path().join("ledger.ndjson"))
        .expect("ledger.ndjson");
    assert_eq!(
        streamed.lines().count() as u64,
        TURNS,
        "one line per closed turn"
    );
    let ledger = launch.ledger();
    assert_eq!(ledger.len() as u64, TURNS, "{:?}", ledger.last());
    let ids: Vec<u64> = ledger.iter().map(|t| t.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in turn order");
    assert!(ledger.iter().all(|t| t.result == TurnResult::Success));
    launch.finish(hooktrack::wall_clock()).expect("finish");
}

#[test]
fn item_8_a_user_saving_settings_while_hooktrack_installs_loses_no_edit() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    fs::write(&config, r#"{"user_edits": 0}"#).expect("settings");
    let stop = Arc::new(AtomicBool::new(false));
    // The user's editor: read, change, save atomically (temporary file, rename), again and
    // again. An edit is lost when the next read shows an older count than was saved.
    let writer = {
        let (config, stop) = (config.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let (mut saved, mut lost) = (0u64, 0u64);
            let tmp = config.with_file_name("settings.json.editor");
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut v) = fs::read(&config)
                    .map_err(|_| ())
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|_| ()))
                else {
                    continue;
                };
                if v["user_edits"].as_u64().is_some_and(|seen| seen < saved) {
                    lost += 1;
                }
                saved += 1;
                v["user_edits"] = saved.into();
                fs::write(&tmp, v.to_string()).expect("editor write");
                fs::rename(&tmp, &config).expect("editor save");
                std::thread::sleep(Duration::from_millis(1));
            }
            (saved, lost)
        })
    };
    let url = format!("http://127.0.0.1:{}/events", dead_port());
    let store = tmp.path().join("store");
    for round in 1..=20 {
        // Whether the install stands depends on the editor too (its save can drop the
        // entries): only the user's edits are counted.
        let _ = install_with(&["install", "claude"], &config, &store, round, &url);
    }
    stop.store(true, Ordering::Relaxed);
    let (saved, lost) = writer.join().expect("editor");
    assert!(saved > 20, "the editor saved {saved} times only");
    assert_eq!(lost, 0, "user edits lost over {saved} saves");
}

/// A stand-in Kimi CLI whose hooks fire as the CLI fires them (each configured command
/// through `sh -c`, the payload on stdin) and which, mid-turn, runs a tool: `forge-tool`, a
/// script that runs the `event` hook's command line itself with `forged` as its payload (it
/// inherited the session's `HOOKTRACK_*`, token included). Returns the rows the store got,
/// the agent's pid and the tool's.
fn run_an_agent_whose_tool_forges(event: &str, forged: &str) -> (Vec<serde_json::Value>, i64, i64) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, out_dir) = (tmp.path().join("home"), tmp.path().join("out"));
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&out_dir).expect("mkdir");
    fs::write(home.join(".kimi/config.toml"), "default_model = \"mock\"\n").expect("config");
    let tool = tmp.path().join("forge-tool");
    fs::write(
        &tool,
        format!(
            "#!/bin/sh\nset -eu\necho $$ > \"$OUT/tool-pid\"\nprintf '%s' '{forged}' > \"$OUT/forged-payload\"\nwhile IFS= read -r cmd; do eval \"$cmd\" < \"$OUT/forged-payload\"; done < \"$OUT/{event}\"\necho done > \"$OUT/forged\"\n"
        ),
    )
    .expect("write tool");
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).expect("chmod");
    let hooks: Vec<(&str, String)> = vec![
        (
            "SessionStart",
            kimi_cli("SessionStart", r#""source": "startup""#),
        ),
        (
            "UserPromptSubmit",
            kimi_cli("UserPromptSubmit", r#""prompt": "list files""#),
        ),
        ("TOOL", String::new()),
        ("Stop", kimi_cli("Stop", r#""stop_hook_active": false"#)),
    ];
    let mut script = String::from("#!/bin/sh\nset -eu\necho $$ > \"$OUT/pid\"\n");
    for event in ["SessionStart", "UserPromptSubmit", "Stop"] {
        script += &format!(
            r#"awk '/^\[\[hooks\]\]/ {{ found = 0 }}
  $0 == "event = \"{event}\"" {{ found = 1; next }}
  found && /^command = "/ {{ sub(/^command = "/, ""); sub(/"$/, ""); print; found = 0 }}' \
  "$HOME/.kimi/config.toml" > "$OUT/{event}"
"#
        );
    }
    for (event, payload) in &hooks {
        if *event == "TOOL" {
            script += &format!("'{}'\n", tool.display());
        } else {
            script += &format!(
                "while IFS= read -r cmd; do printf '%s' '{payload}' | sh -c \"$cmd\"; done < \"$OUT/{event}\"\n"
            );
        }
    }
    let agent = tmp.path().join("fake-kimi");
    fs::write(&agent, script).expect("write agent");
    fs::set_permissions(&agent, fs::Permissions::from_mode(0o755)).expect("chmod");
    let root = tmp.path().join("root");
    let session = fake_kimi_session(
        &root,
        &tmp.path().join("session.ndjson"),
        &agent,
        &home,
        &out_dir,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn session");
    let mut session = Reap(session, out_dir.join("pid"));
    let status = wait_child(&mut session.0, Duration::from_secs(60));
    assert!(status.success(), "{status}");
    assert!(out_dir.join("forged").exists(), "the tool ran");
    let pid = |name: &str| -> i64 {
        fs::read_to_string(out_dir.join(name))
            .expect("pid file")
            .trim()
            .parse()
            .expect("a pid")
    };
    let rows = rows(&root.join("hook-observation/kimi-cli/events.ndjson"));
    (rows, pid("pid"), pid("tool-pid"))
}

/// Rows of hook events (the launcher's `process_ended` row has no emitter).
fn hook_rows(rows: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    rows.iter().filter(|r| r["via"] != "launcher").collect()
}

#[test]
fn item_10_a_row_forged_by_a_tool_of_the_agent_shows_another_parent_than_the_hooks_rows() {
    let forged = kimi_cli("Stop", r#""stop_hook_active": false, "forged": true"#);
    let (rows, agent, tool) = run_an_agent_whose_tool_forges("Stop", &forged);
    let hooks = hook_rows(&rows);
    assert_eq!(hooks.len(), 4, "{rows:#?}");
    for row in &hooks {
        let parent = &row["emitter_parent"];
        let (pid, comm) = (parent["pid"].as_i64(), parent["comm"].as_str());
        if row["payload"]["forged"] == true {
            // Its parent is the tool: neither the agent nor the shell it runs hooks in.
            assert_eq!((pid, comm), (Some(tool), Some("forge-tool")), "{row}");
        } else {
            // The agent ran it through `sh -c`: the parent is that shell (or the agent,
            // when the shell ran its one command in its own place).
            assert!(
                pid == Some(agent) || matches!(comm, Some("sh" | "dash" | "bash")),
                "{row}"
            );
            assert_ne!(pid, Some(tool), "{row}");
            assert_ne!(comm, Some("forge-tool"), "{row}");
        }
        assert!(parent["exe"].is_string(), "{row}");
    }
    assert_eq!(
        hooks
            .iter()
            .filter(|r| r["payload"]["forged"] == true)
            .count(),
        1
    );
}

/// A forged `SessionStart` with another `session_id`, run by the agent's tool mid-turn,
/// becomes a session of its own: the real session's turn is neither ended nor changed by
/// it (one turn, ended `success` by the real `Stop`), and the phantom session has none.
#[test]
fn item_10_a_forged_session_start_never_moves_the_real_sessions_turn() {
    let forged = r#"{"hook_event_name": "SessionStart", "session_id": "phantom-0000", "cwd": "/p", "source": "startup"}"#;
    let (rows, _, _) = run_an_agent_whose_tool_forges("SessionStart", forged);
    assert_eq!(hook_rows(&rows).len(), 4, "{rows:#?}");
    assert_eq!(
        rows.iter().filter(|r| r["event"] == "SessionStart").count(),
        2
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events.ndjson");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    fs::write(&events, text).expect("events");
    let mut reader = hooktrack::Session::open(
        hooktrack::StorePaths::in_dir(dir.path()),
        hooktrack::SessionConfig::default(),
    );
    let update = reader.poll(hooktrack::wall_clock()).expect("an update");
    let real = update
        .sessions
        .iter()
        .find(|s| s.session_id.as_deref() == Some("495571c6-adb5-491a-99ad-7e10e4e3d92e"))
        .expect("the real session");
    let phantom = update
        .sessions
        .iter()
        .find(|s| s.session_id.as_deref() == Some("phantom-0000"))
        .expect("the phantom session");
    let turns: Vec<_> = real.closed.iter().map(|t| (t.result, t.ended_by)).collect();
    assert_eq!(
        turns,
        [(
            hooktrack::TurnResult::Success,
            Some(hooktrack::Source::Hook)
        )],
        "{update:#?}"
    );
    let stop_row = rows
        .iter()
        .position(|r| r["event"] == "Stop")
        .expect("the real Stop") as u64
        + 1;
    assert_eq!(
        real.closed[0].last_row, stop_row,
        "ended by the real Stop: {rows:#?} {update:#?}"
    );
    assert!(phantom.closed.is_empty(), "{phantom:#?}");
    assert_eq!(
        real.posture.last_turn.result,
        hooktrack::TurnResult::Success
    );
}

/// `hooktrack session` of the stand-in Kimi Code (`exec sleep 600`, its pid in
/// `$OUT/pid`) on `root`, killed with SIGKILL once the agent runs: the agent is told (it
/// ends), and the store keeps `collector.json` saying running, its socket, and the block
/// in `config` (no cleanup ran). Returns the store.
fn kill_9_a_kimi_code_session(tmp: &Path, root: &Path, config: &Path) -> std::path::PathBuf {
    let (home, out_dir) = (tmp.join("home"), tmp.join("out"));
    for dir in [&home, &out_dir] {
        fs::create_dir_all(dir).expect("mkdir");
    }
    let _ = fs::remove_file(out_dir.join("started"));
    let agent = stand_in_kimi_code(tmp);
    let session = kimi_code_session(
        root,
        &tmp.join("session.ndjson"),
        &agent,
        &home,
        config.parent().expect("home"),
    )
    .env("OUT", &out_dir)
    .spawn()
    .expect("spawn session");
    Reap(session, out_dir.join("pid")).kill_9_and_see_its_agent_end("the agent to start");
    let store = root.join("hook-observation/kimi");
    let record = fs::read_to_string(store.join("collector.json")).expect("collector.json");
    assert!(record.contains("\"running\""), "{record}");
    assert_eq!(sockets_in(&store), 1, "the socket is left");
    assert!(
        fs::read_to_string(config)
            .expect("config")
            .contains("hooktrack kimi observer (generation"),
        "the block is left"
    );
    store
}

fn sockets_in(store: &Path) -> usize {
    fs::read_dir(store)
        .expect("store")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sock"))
        .count()
}

fn says_stopped(store: &Path) -> bool {
    fs::read_to_string(store.join("collector.json")).is_ok_and(|r| r.contains("\"stopped\""))
}

/// After `kill -9` of a session nothing is orphaned: the agent ended (its death signal),
/// and what the session left is cleaned by the next `session` on the root (its start
/// line says so), by `check` (the block of a gone session), and by `watch` (the record and
/// socket of a store it follows), each saying what it cleaned.
#[test]
fn item_6_what_a_kill_9_left_is_cleaned_by_the_next_session_check_and_watch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let kimi_home = tmp.path().join("kimi-home");
    fs::create_dir_all(&kimi_home).expect("mkdir");
    let config = kimi_home.join("config.toml");
    let user = "default_model = \"mock\"\n";
    fs::write(&config, user).expect("config");
    let root = tmp.path().join("root");

    // The next session on the root.
    let store = kill_9_a_kimi_code_session(tmp.path(), &root, &config);
    kill_9_a_kimi_code_session(tmp.path(), &root, &config);
    let start: serde_json::Value = serde_json::from_str(
        fs::read_to_string(tmp.path().join("session.ndjson"))
            .expect("output")
            .lines()
            .next()
            .expect("a start line"),
    )
    .expect("JSON");
    let cleaned = start["cleaned"].to_string();
    assert!(
        cleaned.contains("generation 1") && cleaned.contains("now says stopped"),
        "{start}"
    );
    assert!(
        cleaned.contains("removed the hooktrack block (generation 1) of a session that is gone"),
        "{start}"
    );

    // check: the second session's block goes, with its store's leftovers.
    let check = hooktrack()
        .args(["check", "kimi-code", "--file-only"])
        .env("HOME", tmp.path().join("home"))
        .env("KIMI_CODE_HOME", &kimi_home)
        .output()
        .expect("check");
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(
        said.contains(
            "cleaned up: removed the hooktrack block (generation 2) of a session that is gone"
        ),
        "{said}"
    );
    assert!(said.contains("its socket removed"), "{said}");
    assert_eq!(fs::read_to_string(&config).expect("config"), user);
    assert!(says_stopped(&store) && sockets_in(&store) == 0);

    // watch: a store it follows whose collector died.
    kill_9_a_kimi_code_session(tmp.path(), &root, &config);
    let mut watch = hooktrack()
        .args(["watch", "--ndjson"])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let stderr = watch.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("watch's first notice");
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        line.contains("cleaned up: the collector")
            && line.contains("(pid ")
            && line.contains("generation 3"),
        "{line}"
    );
    assert!(says_stopped(&store) && sockets_in(&store) == 0);
}
