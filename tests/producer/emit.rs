//! `hooktrack emit` as an agent CLI runs it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::util::*;

#[test]
fn a_delivery_over_http_keeps_the_payload_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    // Python spacing, an escaped non-ASCII char, a raw one, unknown fields, nested data.
    let payload = r#"{"hook_event_name": "PreToolUse", "session_id": "495571c6-adb5-491a-99ad-7e10e4e3d92e", "cwd": "/p", "tool_name": "Shell", "tool_input": {"command": "echo \u00e9 é"}, "tool_call_id": "call_1", "future_field": [1, {"x": null}]}"#;
    let out = emit(
        &dir,
        Some(&collector.url()),
        Some(TOKEN),
        "PreToolUse",
        payload.as_bytes(),
    );
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "emit wrote to stdout");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("events.ndjson")).expect("events");
    // The payload verbatim, then the agent process that ran the hook (this test).
    assert!(
        text.contains(&format!(
            ",\"payload\":{payload},\"agent_pid\":{},\"emitter_parent\":",
            std::process::id()
        )),
        "payload not verbatim in {text}"
    );
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["v"], 1);
    assert_eq!(row["provider"], "kimi-cli");
    assert_eq!(row["generation"], 1);
    assert_eq!(row["via"], "http");
    assert_eq!(row["sequence"], 1);
    assert_eq!(row["emitter_seq"], 1);
    assert_eq!(row["event"], "PreToolUse");
    let at = row["received_at"].as_str().expect("received_at");
    assert_eq!(at.len(), "2026-10-20T09:14:03.512Z".len(), "{at}");
    assert!(at.ends_with('Z'));
    // The envelope's keys, in the contract's order.
    let head = r#"{"v":1,"provider":"kimi-cli","generation":1,"via":"http","sequence":1,"emitter_seq":1,"received_at":""#;
    assert!(text.starts_with(head), "{text}");
    let after_time = &text[head.len() + at.len()..];
    assert!(
        after_time.starts_with(r#"","event":"PreToolUse","payload":{"#),
        "{text}"
    );
    assert!(
        !dir.join("emit.log").exists(),
        "a clean delivery logs nothing"
    );
    assert!(collector.stop().success());
}

/// `hooktrack-hook emit` (what installs run when it sits beside `hooktrack`) is the same
/// command: over HTTP, by fallback, nothing on stdout; anything but `emit` is a usage error.
#[test]
fn the_hook_binary_delivers_like_hooktrack_emit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let payload = r#"{"hook_event_name": "Stop", "session_id": "s1", "cwd": "/p"}"#;
    let dead = format!("http://127.0.0.1:{}/events", dead_port());
    for url in [collector.url(), dead] {
        let mut child = hook_command(&dir, "Stop")
            .args(["--url", &url])
            .env("HOOKTRACK_TOKEN", TOKEN)
            .spawn()
            .expect("spawn hooktrack-hook");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.as_bytes())
            .expect("write payload");
        let out = child.wait_with_output().expect("hooktrack-hook output");
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "the hook wrote to stdout");
    }
    let rows = rows(&dir.join("events.ndjson"));
    let vias: Vec<&str> = rows.iter().filter_map(|r| r["via"].as_str()).collect();
    assert_eq!(vias, ["http", "command_fallback"]);
    for row in &rows {
        assert_eq!(row["payload"]["session_id"], "s1");
        assert_eq!(row["event"], "Stop");
    }
    assert!(collector.stop().success());

    let hook = || std::process::Command::new(env!("CARGO_BIN_EXE_hooktrack-hook"));
    let bare = hook().output().expect("run hooktrack-hook");
    assert_eq!(bare.status.code(), Some(2));
    assert!(bare.stdout.is_empty());
    assert!(String::from_utf8_lossy(&bare.stderr).starts_with("usage: hooktrack-hook emit"));
    let help = hook()
        .args(["emit", "--help"])
        .output()
        .expect("run hooktrack-hook");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("hooktrack emit --help"));
}

#[test]
fn a_refused_connection_means_a_fallback_row() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    std::fs::create_dir(&dir).expect("mkdir");
    let url = format!("http://127.0.0.1:{}/events", dead_port());
    let payload = kimi_cli("Stop", r#""stop_hook_active": false"#);
    let out = emit(&dir, Some(&url), Some(TOKEN), "Stop", payload.as_bytes());
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    assert_eq!(rows[0]["sequence"], serde_json::Value::Null);
    assert_eq!(rows[0]["emitter_seq"], 1);
    assert_eq!(rows[0]["payload"]["stop_hook_active"], false);
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("cannot connect"), "{log}");
    assert!(log.contains("delivered=command_fallback"), "{log}");
}

#[test]
fn a_collector_that_accepts_and_never_answers_costs_only_the_deadline() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    std::fs::create_dir(&dir).expect("mkdir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accept and read, never answer; hold the connection until the test ends.
    let holder = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 4096];
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
    });
    let url = format!("http://127.0.0.1:{port}/events");
    let started = Instant::now();
    let out = emit(
        &dir,
        Some(&url),
        Some(TOKEN),
        "Stop",
        kimi_cli("Stop", "").as_bytes(),
    );
    let took = started.elapsed();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    // Kimi kills a hook after 5 s; the emitter's own deadline is 1.5 s for HTTP.
    assert!(took < Duration::from_secs(5), "emit took {took:?}");
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("timed out"), "{log}");
    holder.join().expect("holder");
}

#[test]
fn a_bad_payload_is_still_a_delivery_and_the_reader_counts_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let url = collector.url();
    let too_big = vec![b'x'; 2 * 1024 * 1024];
    for (event, payload) in [
        ("Stop", &b"not json at all"[..]),
        ("Stop", &b""[..]),
        ("Stop", &too_big[..]),
    ] {
        let out = emit(&dir, Some(&url), Some(TOKEN), event, payload);
        assert!(out.status.success());
        assert!(out.stdout.is_empty());
    }
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 3);
    let errors: Vec<&str> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["payload"], serde_json::Value::Null);
            assert_eq!(r["via"], "http");
            r["payload_error"].as_str().expect("payload_error")
        })
        .collect();
    assert!(errors[0].contains("not JSON"), "{errors:?}");
    assert!(errors[1].contains("empty"), "{errors:?}");
    assert!(errors[2].contains("over the"), "{errors:?}");
    assert!(errors[2].contains("2097152 bytes"), "{errors:?}");
    // The reader takes them (the event name came from our own hook config).
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(report["events"], 3);
    assert!(collector.stop().success());
}

#[test]
fn a_broken_argv_still_exits_zero_and_prints_nothing_on_stdout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for args in [
        vec!["emit"],
        vec!["emit", "--bogus"],
        vec!["emit", "--dir"],
        vec![
            "emit",
            "--dir",
            "/nonexistent/hooktrack/dir",
            "--generation",
            "x",
        ],
    ] {
        let mut child = hooktrack()
            .args(&args)
            .current_dir(tmp.path())
            .env_remove("HOOKTRACK_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let _ = child.stdin.take().expect("stdin").write_all(b"{}");
        let out = child.wait_with_output().expect("output");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    }
}

#[test]
fn fallback_rows_replay_exactly_like_http_rows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let http_dir = tmp.path().join("http");
    let fallback_dir = tmp.path().join("fallback");
    std::fs::create_dir(&fallback_dir).expect("mkdir");
    let collector = Collector::start(&http_dir, 1);
    let dead = format!("http://127.0.0.1:{}/events", dead_port());
    for (event, payload) in kimi_cli_session() {
        let a = emit(
            &http_dir,
            Some(&collector.url()),
            Some(TOKEN),
            event,
            payload.as_bytes(),
        );
        let b = emit(
            &fallback_dir,
            Some(&dead),
            Some(TOKEN),
            event,
            payload.as_bytes(),
        );
        assert!(a.status.success() && b.status.success());
    }
    assert!(collector.stop().success());
    let http_rows = rows(&http_dir.join("events.ndjson"));
    let fallback_rows = rows(&fallback_dir.join("events.ndjson"));
    assert!(http_rows.iter().all(|r| r["via"] == "http"));
    assert!(fallback_rows.iter().all(|r| r["via"] == "command_fallback"));
    let a = replay_json(&http_dir.join("events.ndjson"));
    let b = replay_json(&fallback_dir.join("events.ndjson"));
    assert_eq!(ledger(&a["turns"]), ["main success 1"]);
    assert_eq!(ledger(&a["turns"]), ledger(&b["turns"]));
    let strip_times = |mut v: serde_json::Value| {
        v["last_turn"]["at"] = serde_json::Value::Null;
        v["maintenance"]["since"] = serde_json::Value::Null;
        v
    };
    assert_eq!(
        strip_times(a["final"].clone()),
        strip_times(b["final"].clone())
    );
    assert_eq!(a["diagnostics"], b["diagnostics"]);
    assert_eq!(a["provider"]["provider"], "kimi-cli");
}

#[test]
fn inside_tmux_the_row_names_the_agents_pane() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let dead = format!("http://127.0.0.1:{}/events", dead_port());
    // Over HTTP (the collector writes it), by fallback (the emitter does), and a value
    // that is not a pane id (not recorded).
    for (url, pane) in [
        (collector.url(), "%3"),
        (dead, "%12"),
        (collector.url(), "x;y"),
    ] {
        let mut child = hooktrack()
            .args(["emit", "--url", &url, "--dir"])
            .arg(&dir)
            .args([
                "--provider",
                "claude",
                "--generation",
                "1",
                "--event",
                "Stop",
            ])
            .env("HOOKTRACK_TOKEN", TOKEN)
            .env("TMUX_PANE", pane)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn emit");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(br#"{"hook_event_name":"Stop","stop_hook_active":false}"#)
            .expect("write the payload");
        assert!(child.wait_with_output().expect("wait").status.success());
    }
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["via"], "http");
    assert_eq!(rows[0]["tmux_pane"], "%3");
    assert_eq!(rows[1]["via"], "command_fallback");
    assert_eq!(rows[1]["tmux_pane"], "%12");
    assert!(rows[2].get("tmux_pane").is_none(), "{}", rows[2]);
    assert!(collector.stop().success());
}

#[test]
fn the_watchdog_ends_a_hook_whose_stdin_never_closes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    // The store exists (the collector or the installer made it); the log goes there.
    std::fs::create_dir_all(&dir).expect("store dir");
    let started = Instant::now();
    let mut child = emit_command(&dir, "Stop").spawn().expect("spawn emit");
    // Half a payload, and the pipe held open: the hook would read forever.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"{\"hook_event_name\":").expect("write");
    let status = wait_child(&mut child, Duration::from_secs(20));
    let took = started.elapsed();
    drop(stdin);
    assert_eq!(status.code(), Some(0), "the hook must exit 0");
    assert!(
        took >= Duration::from_millis(2900),
        "ended after {took:?}, before the deadline"
    );
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut stdout)
        .expect("read stdout");
    assert!(stdout.is_empty(), "emit wrote to stdout");
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("gave up after 3000 ms"), "{log}");
}

/// Whether process `pid` has a handler for `signal` (its `SigCgt` mask in
/// `/proc/PID/status`): the hook has armed its watchdog.
fn catches(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// Kimi Code 2.1.0 sends SIGTERM (then SIGKILL 100 ms later) to the fire-and-forget hooks
/// of a tool call whose subagent ended; a hook killed by it left no row, so the subagent's
/// last `PostToolUse` was lost under load. A SIGTERM now brings the deadline forward: the
/// hook exits 0 with a give-up row naming the signal.
#[test]
fn a_hook_ended_by_sigterm_records_a_give_up_row_instead_of_dying_without_a_trace() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    std::fs::create_dir_all(&dir).expect("store dir");
    let mut child = emit_command(&dir, "PostToolUse")
        .spawn()
        .expect("spawn emit");
    // Half a payload, and the pipe held open: the hook is still reading when it is ended.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"{\"hook_event_name\":").expect("write");
    let armed = Instant::now();
    while !catches(child.id(), libc::SIGTERM) {
        assert!(
            armed.elapsed() < Duration::from_secs(20),
            "the hook never handled SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on the pid of our own child, not yet waited for.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0);
    let status = wait_child(&mut child, Duration::from_secs(20));
    drop(stdin);
    assert_eq!(
        status.code(),
        Some(0),
        "the hook must exit 0, not die: {status:?}"
    );
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["via"], "command_fallback");
    assert_eq!(rows[0]["event"], "PostToolUse");
    let cause = rows[0]["payload_error"].as_str().unwrap_or_default();
    assert!(cause.contains("SIGTERM"), "{cause}");
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(log.contains("the agent ended the hook (SIGTERM)"), "{log}");
}

#[test]
fn a_hook_started_with_its_standard_descriptors_closed_keeps_its_files_clean() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let url = format!("http://127.0.0.1:{}/events", dead_port());
    // The binary opens /dev/null in their place before anything else: otherwise the store
    // files would take the numbers 0-2, and a message for standard error would land in
    // one of them.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$0" emit --url "$1" --dir "$2" --provider kimi-cli --generation 1 --event Stop <&- >&- 2>&-"#)
        .arg(env!("CARGO_BIN_EXE_hooktrack"))
        .arg(&url)
        .arg(&dir)
        .env("HOOKTRACK_TOKEN", TOKEN)
        .status()
        .expect("run sh");
    assert!(status.success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["via"], "command_fallback");
    assert_eq!(rows[0]["payload_error"], "the hook payload is empty");
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("emit.log");
    assert!(
        log.lines().all(|l| l.contains(" pid=")),
        "only log lines in emit.log: {log}"
    );
}

#[test]
fn the_watchdog_fires_even_when_the_agent_blocked_or_ignored_sigalrm() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let mut command = emit_command(&dir, "Stop");
    command.stderr(std::process::Stdio::null());
    // SAFETY: between fork and exec only async-signal-safe calls on locals: a signal
    // mask and a disposition, both inherited across exec, as an agent could leave them.
    unsafe {
        command.pre_exec(|| {
            let mut alarm: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut alarm);
            libc::sigaddset(&mut alarm, libc::SIGALRM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &alarm, std::ptr::null_mut());
            libc::signal(libc::SIGALRM, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = command.spawn().expect("spawn emit");
    // The stdin never closes: only the watchdog can end the hook.
    let stdin = child.stdin.take();
    let status = wait_child(&mut child, Duration::from_secs(30));
    drop(stdin);
    assert_eq!(status.code(), Some(0));
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["event"], "Stop");
}
