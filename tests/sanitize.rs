//! Text from agents is data, never terminal control (contract section 12): a row whose
//! turn id, tool name, transcript path and error carry OSC 52, OSC 8, CSI, the one-byte
//! C1 CSI, DCS, DSR and bidi controls reaches no output raw: text and HTML show them as
//! `\u{1b}`, JSON escapes them (`\u009b`) and still parses to the original string.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use hooktrack::Format;

use crate::support::{Wake, replay_bytes};
use crate::watch::{Running, hooktrack, lines_of, next_json};

/// Every kind of sequence the audit found passing through, in one string.
const HOSTILE: &str = concat!(
    "\x1b]52;c;ZXZpbA==\x07",                // OSC 52: writes the clipboard
    "\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\", // OSC 8: a hyperlink
    "\x1b[31m",                              // CSI
    "\u{9b}2J",                              // C1 CSI: clears the screen
    "\x1bP1$r\x1b\\",                        // DCS
    "\x1b[6n",                               // DSR: its answer lands in the input
    "\u{202e}\u{2066}\u{61c}\u{200f}",       // bidi overrides and marks
);

/// A character a terminal or viewer would act on (newline and tab aside), found
/// independently of the code under test.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c < ' ' && c != '\n' && c != '\t')
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || matches!(
                    c,
                    '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
                )
        })
        .collect()
}

fn assert_no_raw(what: &str, text: &str) {
    let found = raw_controls(text);
    assert!(found.is_empty(), "{what} passes {found:?} raw:\n{text}");
}

/// Claude Code rows: the turn id (`prompt_id`), the tool name, the transcript path and
/// the errors carry `HOSTILE`.
fn hostile_rows(session: &str) -> Vec<String> {
    let path = format!("/tmp/t{HOSTILE}.jsonl");
    let prompt_id = format!("p{HOSTILE}");
    let tool = format!("Bash{HOSTILE}");
    let base = |event: &str| {
        serde_json::json!({
            "hook_event_name": event,
            "session_id": session,
            "transcript_path": path,
            "cwd": "/p",
        })
    };
    let with = |event: &str, fields: serde_json::Value| {
        let mut row = base(event);
        if let (Some(row), Some(fields)) = (row.as_object_mut(), fields.as_object()) {
            row.extend(fields.clone());
        }
        row.to_string()
    };
    vec![
        with("SessionStart", serde_json::json!({"source": "startup"})),
        with(
            "UserPromptSubmit",
            serde_json::json!({"prompt": "hi", "prompt_id": prompt_id}),
        ),
        with(
            "PreToolUse",
            serde_json::json!({"prompt_id": prompt_id, "tool_name": tool, "tool_use_id": "t1", "tool_input": {}}),
        ),
        with(
            "PostToolUseFailure",
            serde_json::json!({"prompt_id": prompt_id, "tool_name": tool, "tool_use_id": "t1", "tool_input": {}, "error": format!("boom{HOSTILE}")}),
        ),
        with(
            "StopFailure",
            serde_json::json!({"prompt_id": prompt_id, "error": format!("api{HOSTILE}")}),
        ),
    ]
}

fn log(rows: &[String]) -> Vec<u8> {
    let mut bytes = rows.join("\n").into_bytes();
    bytes.push(b'\n');
    bytes
}

/// The notation text outputs use for `HOSTILE`'s turn id.
fn shown_turn_id() -> String {
    format!("p{}", hooktrack::safe_text::visible(HOSTILE))
}

#[test]
fn replay_text_shows_osc52_osc8_csi_c1_dcs_dsr_and_bidi_in_a_turn_id_and_tool_name() {
    let (_, text) = replay_bytes(&log(&hostile_rows("s1")), Format::Text);
    assert_no_raw("replay text", &text);
    assert!(text.contains(&shown_turn_id()), "{text}");
    assert!(
        text.contains(r"Bash\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]8;;http://x"),
        "{text}"
    );
    assert!(text.contains(r"\u{9b}2J"), "{text}");
    assert!(text.contains(r"\u{202e}\u{2066}\u{61c}\u{200f}"), "{text}");
}

#[test]
fn replay_json_and_ndjson_escape_c1_and_bidi_and_still_parse_to_the_turn_id() {
    let prompt_id = format!("p{HOSTILE}");
    let (_, json) = replay_bytes(&log(&hostile_rows("s1")), Format::Json);
    assert_no_raw("replay json", &json);
    assert!(
        json.contains(r"\u009b2J") && json.contains(r"\u202e"),
        "{json}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json parses");
    assert_eq!(
        doc["turns"][0]["turn_id"],
        serde_json::json!(prompt_id),
        "{json}"
    );

    let (_, ndjson) = replay_bytes(&log(&hostile_rows("s1")), Format::Ndjson);
    assert_no_raw("replay ndjson", &ndjson);
    for line in ndjson.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("ndjson line parses");
    }
    assert!(ndjson.contains(r"\u009b2J"), "{ndjson}");
    // Value equality: the string that comes back is the one the row held.
    assert!(
        ndjson
            .lines()
            .any(|l| serde_json::from_str::<serde_json::Value>(l)
                .is_ok_and(|v| contains_string(&v, &prompt_id))),
        "no ndjson line holds the turn id: {ndjson}"
    );
}

fn contains_string(v: &serde_json::Value, wanted: &str) -> bool {
    match v {
        serde_json::Value::String(s) => s == wanted,
        serde_json::Value::Array(a) => a.iter().any(|v| contains_string(v, wanted)),
        serde_json::Value::Object(o) => o.values().any(|v| contains_string(v, wanted)),
        _ => false,
    }
}

#[test]
fn replay_html_shows_the_controls_of_a_tool_name_and_turn_id() {
    let (_, html) = replay_bytes(&log(&hostile_rows("s1")), Format::Html);
    assert_no_raw("replay html", &html);
    assert!(
        html.contains(r"Bash\u{1b}]52;c;ZXZpbA=="),
        "tool name not shown"
    );
    assert!(html.contains(r"\u{9b}2J"), "C1 CSI not shown");
}

fn append(path: &Path, rows: &[String]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    for row in rows {
        writeln!(f, "{row}").expect("append");
    }
}

#[test]
fn watch_lines_show_a_hostile_turn_id_and_its_ended_line_without_raw_controls() {
    let root = tempfile::tempdir().expect("tempdir");
    let events = root.path().join("events.ndjson");
    let rows = hostile_rows("s1");
    append(&events, &rows[..1]);
    let mut watch = Running::spawn(
        hooktrack()
            .args(["watch", "--recheck-ms", "50"])
            .arg(&events)
            .stderr(Stdio::piped()),
    );
    let rx = lines_of(watch.child());
    let mut seen = vec![rx.recv_timeout(Wake::PATIENCE).expect("a first line")];
    // History is not news for the ended lines: the turn is written after watch started.
    append(&events, &rows[1..]);
    let deadline = Instant::now() + Wake::PATIENCE;
    while !seen.iter().any(|l| l.contains("ended")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("no `ended` line ({e}): {seen:#?}"),
        }
    }
    let output = watch.interrupt();
    let text = seen.join("\n") + "\n" + &String::from_utf8_lossy(&output.stdout);
    assert_no_raw("watch text", &text);
    assert_no_raw("watch notices", &String::from_utf8_lossy(&output.stderr));
    let ended = seen
        .iter()
        .find(|l| l.contains("ended"))
        .expect("an ended line");
    assert!(ended.contains(&shown_turn_id()), "{ended}");
}

#[test]
fn watch_ndjson_escapes_a_hostile_turn_id_and_tool_name_and_parses_back() {
    let root = tempfile::tempdir().expect("tempdir");
    let events = root.path().join("events.ndjson");
    append(&events, &hostile_rows("s1")[..3]);
    let mut watch = Running::spawn(
        hooktrack()
            .args(["watch", "--ndjson", "--recheck-ms", "50"])
            .arg(&events)
            .stderr(Stdio::piped()),
    );
    let stdout = watch.child().stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = Vec::new();
        let mut reader = std::io::BufReader::new(stdout);
        let _ = std::io::BufRead::read_until(&mut reader, b'\n', &mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Wake::PATIENCE).expect("the first update");
    drop(watch.interrupt());
    let text = String::from_utf8(line).expect("UTF-8");
    assert_no_raw("watch ndjson line", &text);
    assert!(
        text.contains(r"\u009b2J") && text.contains(r"\u202e"),
        "{text}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).expect("parses");
    assert!(contains_string(&value, &format!("p{HOSTILE}")), "{text}");
}

#[test]
fn notify_send_gets_a_tool_named_like_a_link_as_escaped_text() {
    let root = tempfile::tempdir().expect("tempdir");
    let bin = root.path().join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let got = root.path().join("notify-send.args");
    let fake = bin.join("notify-send");
    fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{}'\n",
            got.display()
        ),
    )
    .expect("write fake notify-send");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let events = root.path().join("events.ndjson");
    let rows = hostile_rows("s1");
    append(&events, &rows[..2]);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.clone()];
    dirs.extend(std::env::split_paths(&path));
    let mut watch = Running::spawn(
        hooktrack()
            .args(["watch", "--ndjson", "--recheck-ms", "50", "--notify"])
            .arg(&events)
            .env("PATH", std::env::join_paths(dirs).expect("PATH"))
            .env("DISPLAY", ":99")
            .env_remove("TMUX")
            .stderr(Stdio::piped()),
    );
    let rx = lines_of(watch.child());
    next_json(&rx, "the first update");
    let link = r#"<a href="http://x">Bash</a><img src="file:///etc/passwd">"#;
    let permission = serde_json::json!({
        "hook_event_name": "PermissionRequest",
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/p",
        "prompt_id": "p1",
        "tool_name": format!("{link}\u{9b}2J\u{202e}"),
        "tool_input": {},
    });
    append(&events, &[permission.to_string()]);
    let deadline = Instant::now() + Wake::PATIENCE;
    let args = loop {
        let text = fs::read_to_string(&got).unwrap_or_default();
        if text.lines().count() >= 4 {
            break text;
        }
        assert!(Instant::now() < deadline, "notify-send not run: {text:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(watch.interrupt());
    assert_no_raw("notify-send arguments", &args);
    assert!(
        args.contains(
            "&lt;a href=\"http://x\"&gt;Bash&lt;/a&gt;&lt;img src=\"file:///etc/passwd\"&gt;"
        ),
        "{args}"
    );
    assert!(!args.contains("<a") && !args.contains("<img"), "{args}");
    assert!(args.contains(r"\u{9b}2J\u{202e}"), "{args}");
}
