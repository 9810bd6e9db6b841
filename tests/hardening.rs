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
