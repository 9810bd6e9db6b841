//! The reading side of the fault audit: rows a reader must keep, and files rewritten under
//! a follower. One test per audited case, named after it; real files only.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use hooktrack::{Format, Session, SessionConfig, StorePaths, Timestamp};
use hooktrack_live::tail::{Notice, TailLine, Tailer};

use crate::support::{kimi, replay_bytes};

fn lines(rows: &[String]) -> String {
    rows.iter().map(|r| format!("{r}\n")).collect()
}

fn append(path: &Path, rows: &[String]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(lines(rows).as_bytes()).expect("append");
}

/// A Kimi Code turn with one tool call, as bare payloads (no delivery keys).
fn turn(n: u32) -> Vec<String> {
    vec![
        kimi("UserPromptSubmit", &format!(r#""prompt":"task {n}""#)),
        kimi(
            "PreToolUse",
            &format!(
                r#""tool_name":"Shell","tool_call_id":"call_{n}","tool_input":{{"command":"ls"}}"#
            ),
        ),
        kimi(
            "PostToolUse",
            &format!(r#""tool_name":"Shell","tool_call_id":"call_{n}","tool_output":"ok""#),
        ),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]
}

fn envelope(generation: u64, seq: u64, event: &str, fields: &str) -> String {
    format!(
        r#"{{"v":1,"provider":"kimi","generation":{generation},"via":"http","sequence":{seq},"emitter_seq":{seq},"received_at":"2026-10-20T09:14:{:02}.000Z","event":"{event}","payload":{}}}"#,
        seq % 60,
        kimi(event, fields)
    )
}

fn json_report(text: &str) -> serde_json::Value {
    let (_, out) = replay_bytes(text.as_bytes(), Format::Json);
    serde_json::from_str(&out).expect("replay JSON")
}

#[test]
fn one_row_with_a_huge_generation_does_not_blind_the_tracker() {
    let mut rows = vec![envelope(1, 1, "SessionStart", r#""source":"startup""#)];
    // A tool subprocess inherited the token and posted a row of its own making.
    rows.push(envelope(
        1 << 60,
        2,
        "SessionStart",
        r#""source":"startup""#,
    ));
    let events = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"];
    let fields = [
        r#""prompt":"go""#,
        r#""tool_name":"Shell","tool_call_id":"c1","tool_input":{}"#,
        r#""tool_name":"Shell","tool_call_id":"c1","tool_output":"ok""#,
        r#""stop_hook_active":false"#,
    ];
    for (i, (event, f)) in events.iter().zip(fields).enumerate() {
        rows.push(envelope(1, 3 + i as u64, event, f));
    }
    let report = json_report(&lines(&rows));
    let turns = report["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "{report:#}");
    assert_eq!(turns[0]["result"], "success");
    assert_eq!(turns[0]["tool_calls"], 1);
    let diags = &report["diagnostics"]["counters"];
    assert_eq!(diags["generation_jump"], 1, "{diags}");
    assert_eq!(diags["stale_generation"], 0, "{diags}");
}

#[test]
fn a_lone_surrogate_in_a_payload_string_costs_nothing() {
    // What Python's json.dumps and JS JSON.stringify write for unpaired surrogates.
    let rows = vec![
        kimi("SessionStart", r#""source":"startup""#),
        kimi("UserPromptSubmit", r#""prompt":"fix \ud800 this""#),
        kimi(
            "PreToolUse",
            r#""tool_name":"Shell\udc00","tool_call_id":"call_\ud83d","tool_input":{"command":"echo \ud800"}"#,
        ),
        kimi(
            "PostToolUse",
            r#""tool_name":"Shell\udc00","tool_call_id":"call_\ud83d","tool_output":"ok""#,
        ),
        kimi("Stop", r#""stop_hook_active":false"#),
    ];
    let report = json_report(&lines(&rows));
    let diags = &report["diagnostics"]["counters"];
    assert_eq!(diags["line_not_json"], 0, "{diags}");
    assert_eq!(diags["line_bad_field"], 0, "{diags}");
    assert_eq!(diags["lone_surrogate"], 3, "{diags}");
    let turns = report["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "{report:#}");
    assert_eq!(turns[0]["tool_calls"], 1);
    assert_eq!(turns[0]["result"], "success");
}

#[test]
fn copy_truncate_then_regrowth_past_the_offset_before_a_poll_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events.ndjson");
    let before: Vec<String> = (1..=5).map(|n| format!(r#"{{"old":{n}}}"#)).collect();
    append(&path, &before);
    let mut tailer = Tailer::new(&path);
    let mut got = Vec::new();
    let mut sink = |tl: TailLine<'_>| {
        if let hooktrack_core::read::ReadLine::Line { bytes, .. } = tl.line {
            got.push(String::from_utf8_lossy(bytes).into_owned());
        }
    };
    tailer.poll(&mut sink).expect("poll");
    // Copy-truncate rotation, and the writer appends more than was read before the
    // follower looks again.
    fs::copy(&path, dir.path().join("events.1")).expect("copy");
    OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open")
        .set_len(0)
        .expect("truncate");
    let after: Vec<String> = (1..=12)
        .map(|n| format!(r#"{{"new_row_after_rotation":{n}}}"#))
        .collect();
    append(&path, &after);
    let progress = tailer.poll(&mut sink).expect("poll");
    let mut expected = before.clone();
    expected.extend(after);
    assert_eq!(got, expected);
    assert!(
        progress
            .notices
            .iter()
            .any(|n| matches!(n, Notice::Truncated { .. })),
        "{:?}",
        progress.notices
    );
}

#[test]
fn truncate_and_rewrite_of_unkeyed_rows_does_not_double_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = StorePaths::for_provider(dir.path(), "kimi");
    fs::create_dir_all(&paths.dir).expect("mkdir");
    let mut rows = vec![kimi("SessionStart", r#""source":"startup""#)];
    rows.extend(turn(1));
    append(&paths.events, &rows);
    let config = SessionConfig {
        keep_ledger: true,
        ..SessionConfig::default()
    };
    let mut session = Session::open(paths.clone(), config);
    let mut closed = Vec::new();
    let mut now = Timestamp::from_millis(1_000);
    if let Some(u) = session.poll(now) {
        closed.extend(u.current().closed.clone());
    }
    assert_eq!(closed.len(), 1);
    // A log tool rewrites the file in place: truncate (seen by a poll), then the same
    // rows again plus one new turn.
    OpenOptions::new()
        .write(true)
        .open(&paths.events)
        .expect("open")
        .set_len(0)
        .expect("truncate");
    now = Timestamp::from_millis(now.as_millis() + 1_000);
    if let Some(u) = session.poll(now) {
        closed.extend(u.current().closed.clone());
    }
    rows.extend(turn(2));
    append(&paths.events, &rows);
    for _ in 0..3 {
        now = Timestamp::from_millis(now.as_millis() + 1_000);
        if let Some(u) = session.poll(now) {
            closed.extend(u.current().closed.clone());
        }
    }
    let ledger = session.ledger();
    assert_eq!(ledger.len(), 2, "{ledger:#?}");
    assert_eq!(
        closed.len(),
        2,
        "turn 1 reported once, turn 2 once: {closed:#?}"
    );
}

// Issue 24: files a payload, an argument or a checkpoint names.

fn hooktrack() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_hooktrack"))
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path without NUL");
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Waits for a child, killing it once `Wake::PATIENCE` (a hang guard, not a measure of
/// speed) has passed; `None` if it had to be killed.
fn exit_within_patience(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + crate::support::Wake::PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn sigterm(child: &std::process::Child) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on a child this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

/// A Kimi Code session whose rows name `transcript` as their transcript.
fn naming_transcript(transcript: &Path) -> Vec<String> {
    let named = format!(r#""transcript_path":"{}""#, transcript.display());
    let mut rows = vec![kimi(
        "SessionStart",
        &format!(r#""source":"startup",{named}"#),
    )];
    rows.extend(turn(1));
    rows
}

#[test]
fn item_1_a_fifo_transcript_stalls_neither_another_store_nor_sigterm_in_watch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    fs::create_dir_all(&a).expect("mkdir");
    fs::create_dir_all(&b).expect("mkdir");
    let fifo = tmp.path().join("transcript.jsonl");
    mkfifo(&fifo);
    append(&a.join("events.ndjson"), &naming_transcript(&fifo));
    let mut child = hooktrack()
        .args(["watch", "--ndjson", "--recheck-ms", "50"])
        .arg(a.join("events.ndjson"))
        .arg(b.join("events.ndjson"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn watch");
    let rx = crate::watch::lines_of(&mut child);
    let mut rows = vec![kimi("SessionStart", r#""source":"startup""#)];
    rows.extend(turn(1));
    append(&b.join("events.ndjson"), &rows);
    let b_name = b.join("events.ndjson").display().to_string();
    let mut closed_in_b = 0;
    let deadline = std::time::Instant::now() + crate::support::Wake::PATIENCE;
    while closed_in_b == 0 && std::time::Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(crate::support::Wake::PATIENCE) else {
            break;
        };
        let update: serde_json::Value = serde_json::from_str(&line).expect("JSON line");
        if update["session"] == b_name.as_str() {
            closed_in_b += update["closed"].as_array().map_or(0, Vec::len);
        }
    }
    sigterm(&child);
    let status = exit_within_patience(&mut child);
    assert_eq!(closed_in_b, 1, "the other store's turn was not reported");
    assert!(
        status.is_some_and(|s| s.success()),
        "watch did not end on SIGTERM: {status:?}"
    );
}

#[test]
fn item_1_a_fifo_transcript_does_not_hang_replay() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("transcript.jsonl");
    mkfifo(&fifo);
    let log = tmp.path().join("events.ndjson");
    append(&log, &naming_transcript(&fifo));
    let mut child = hooktrack()
        .args(["replay", "--format", "json"])
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn replay");
    let status = exit_within_patience(&mut child);
    assert!(
        status.is_some_and(|s| s.success()),
        "replay did not return: {status:?}"
    );
}

#[test]
fn item_7_a_fifo_given_as_watch_checkpoint_does_not_hang_the_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let checkpoint = tmp.path().join("watch.checkpoint");
    mkfifo(&checkpoint);
    let store = tmp.path().join("events.ndjson");
    let mut rows = vec![kimi("SessionStart", r#""source":"startup""#)];
    rows.extend(turn(1));
    append(&store, &rows);
    let mut child = hooktrack()
        .args(["watch", "--ndjson", "--recheck-ms", "50", "--checkpoint"])
        .arg(&checkpoint)
        .arg(&store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn watch");
    let rx = crate::watch::lines_of(&mut child);
    let first = rx.recv_timeout(crate::support::Wake::PATIENCE);
    sigterm(&child);
    let status = exit_within_patience(&mut child);
    let first: serde_json::Value =
        serde_json::from_str(&first.expect("no update: watch hung at start")).expect("JSON");
    // Reported as a checkpoint that cannot be loaded, and the store read from its start.
    assert_eq!(first["closed"].as_array().map_or(0, Vec::len), 1, "{first}");
    assert!(first.to_string().contains("not a regular file"), "{first}");
    assert!(
        status.is_some_and(|s| s.success()),
        "watch did not end on SIGTERM: {status:?}"
    );
}

/// Runs `hooktrack replay` on `log` under a 1 GiB data-segment limit (so a regression
/// cannot take the machine's memory) and returns its exit status and peak resident size in
/// KiB (`wait4`'s rusage). `None`: it did not exit within five minutes.
// `wait4` reaps the child on the path that returns its status.
#[allow(clippy::zombie_processes)]
fn replay_peak_kib(log: &Path) -> Option<(std::process::ExitStatus, i64)> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut cmd = hooktrack();
    cmd.args(["replay", "--format", "json"])
        .arg(log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setrlimit(2) between fork and exec, async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn replay");
    let pid = i32::try_from(child.id()).expect("pid");
    // Waits for the exit itself; the bound only keeps a hang from stalling the suite. Half a
    // GiB read in bounded pieces takes a debug build seconds, and over 10 s with the cores
    // busy: the bound is generous, the assertion is the memory, never the time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4(2) to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4(2) on our own child, with valid out-pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc == pid {
            return Some((std::process::ExitStatus::from_raw(status), usage.ru_maxrss));
        }
        assert_eq!(rc, 0, "wait4");
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A replay of a small log holds far less than this, whatever its transcript holds.
const BOUNDED_KIB: i64 = 128 * 1024;

#[test]
fn item_3_a_transcript_is_never_read_whole_dev_zero() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("events.ndjson");
    append(&log, &naming_transcript(Path::new("/dev/zero")));
    let (status, peak) = replay_peak_kib(&log).expect("replay did not return");
    assert!(status.success(), "{status:?}");
    assert!(peak < BOUNDED_KIB, "peak {peak} KiB");
}

#[test]
fn item_3_a_transcript_is_never_read_whole_half_a_gib_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let transcript = tmp.path().join("big.jsonl");
    // Sparse: half a GiB of zero bytes (no newline) costs no disk.
    fs::File::create(&transcript)
        .and_then(|f| f.set_len(512 << 20))
        .expect("sparse file");
    let log = tmp.path().join("events.ndjson");
    append(&log, &naming_transcript(&transcript));
    let (status, peak) = replay_peak_kib(&log).expect("replay did not return");
    assert!(status.success(), "{status:?}");
    assert!(peak < BOUNDED_KIB, "peak {peak} KiB");
}
