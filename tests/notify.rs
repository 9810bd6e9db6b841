//! `hooktrack watch --on-change CMD`: a real command, run once per transition with the
//! facts in its environment; the history already in the log is not news.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use crate::support::{Wake, kimi};
use crate::watch::{Running, hooktrack, lines_of, next_json};

fn append(path: &Path, lines: &[String]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    for line in lines {
        writeln!(f, "{line}").expect("append");
    }
}

/// Waits (bounded) until the command has written `n` lines, and returns them.
fn wait_for_lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Wake::PATIENCE;
    loop {
        let text = fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {n} runs, have {lines:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn on_change_runs_once_per_transition_with_the_facts() {
    let root = tempfile::tempdir().expect("tempdir");
    let events = root.path().join("events.ndjson");
    let out = root.path().join("notified.txt");
    let prompt = |n: u64| {
        [
            kimi(
                "UserPromptSubmit",
                r#""prompt":[{"type":"text","text":"go"}],"is_steer":false"#,
            ),
            kimi(
                "TurnStarted",
                &format!(r#""turn_id":{n},"origin_kind":"user""#),
            ),
        ]
    };
    // History: one finished turn before watch starts.
    let mut history = vec![kimi("SessionStart", r#""source":"startup""#)];
    history.extend(prompt(1));
    history.push(kimi("Stop", r#""stop_hook_active":false"#));
    append(&events, &history);

    let command = r#"printf '%s|%s|%s|%s|%s|%s|%s\n' "$HOOKTRACK_EVENT" "$HOOKTRACK_AGENT" "$HOOKTRACK_RESULT" "$HOOKTRACK_TOOL" "$HOOKTRACK_ARGUMENT" "$HOOKTRACK_TURN" "$HOOKTRACK_SESSION" >> "$NOTIFY_OUT""#;
    let mut watch = Running::spawn(
        hooktrack()
            .args([
                "watch",
                "--ndjson",
                "--recheck-ms",
                "50",
                "--on-change",
                command,
            ])
            .arg(&events)
            .env("NOTIFY_OUT", &out)
            .stderr(Stdio::piped()),
    );
    let rx = lines_of(watch.child());
    let first = next_json(&rx, "the first update");
    assert_eq!(first["posture"]["last_turn"]["result"], "success");

    let mut turn = prompt(2).to_vec();
    turn.extend([
        kimi(
            "PreToolUse",
            r#""tool_call_id":"c1","tool_name":"Bash","tool_input":{"command":"cargo build\u001b[2J"}"#,
        ),
        kimi(
            "PermissionRequest",
            r#""tool_call_id":"c1","turn_id":2,"id":"a1","tool_name":"Bash""#,
        ),
    ]);
    append(&events, &turn);
    let session = events.display().to_string();
    assert_eq!(
        wait_for_lines(&out, 1),
        [format!(
            "blocked|kimi-code|success|Bash|cargo build\\u{{1b}}[2J|2|{session}"
        )]
    );

    append(
        &events,
        &[
            kimi(
                "PermissionResult",
                r#""tool_call_id":"c1","id":"a1","decision":"approved""#,
            ),
            kimi("PostToolUse", r#""tool_call_id":"c1","tool_name":"Bash""#),
            kimi("Stop", r#""stop_hook_active":false"#),
        ],
    );
    wait_for_lines(&out, 2);
    append(&events, &[kimi("SessionEnd", r#""reason":"exit""#)]);
    // Runs are one at a time, in order: when the last one is there, every earlier one
    // is, and a repeated transition would show as an extra line.
    let lines = wait_for_lines(&out, 3);
    assert_eq!(
        lines,
        [
            format!("blocked|kimi-code|success|Bash|cargo build\\u{{1b}}[2J|2|{session}"),
            format!("turn_ended|kimi-code|success|||2|{session}"),
            format!("absent|kimi-code|success||||{session}"),
        ]
    );

    let exit = watch.interrupt();
    assert!(exit.status.success(), "exit {:?}", exit.status);
    assert!(
        exit.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&exit.stderr)
    );
}
