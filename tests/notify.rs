//! `hooktrack watch --on-change CMD`: a real command, run once per transition with the
//! facts in its environment; the history already in the log is not news.

use crate::support::{append, approved_and_stopped, kimi, prompt};
use crate::watch::{Running, lines_of, next_json, runs, watch_on_change};

#[test]
fn on_change_runs_once_per_transition_with_the_facts() {
    let root = tempfile::tempdir().expect("tempdir");
    let events = root.path().join("events.ndjson");
    let out = root.path().join("notified.txt");
    // History: one finished turn before watch starts.
    let mut history = vec![kimi("SessionStart", r#""source":"startup""#)];
    history.extend(prompt(1));
    history.push(kimi("Stop", r#""stop_hook_active":false"#));
    append(&events, &history);

    let command = r#"printf '%s|%s|%s|%s|%s|%s|%s\n' "$HOOKTRACK_EVENT" "$HOOKTRACK_AGENT" "$HOOKTRACK_RESULT" "$HOOKTRACK_TOOL" "$HOOKTRACK_ARGUMENT" "$HOOKTRACK_TURN" "$HOOKTRACK_SESSION" >> "$NOTIFY_OUT""#;
    let mut watch = Running::spawn(
        watch_on_change(command)
            .arg(&events)
            .env("NOTIFY_OUT", &out),
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
        runs(&out, 1),
        [format!(
            "blocked|kimi-code|success|Bash|cargo build\\u{{1b}}[2J|2|{session}"
        )]
    );

    append(&events, &approved_and_stopped());
    runs(&out, 2);
    append(&events, &[kimi("SessionEnd", r#""reason":"exit""#)]);
    // Runs are one at a time, in order: when the last one is there, every earlier one
    // is, and a repeated transition would show as an extra line.
    let lines = runs(&out, 3);
    assert_eq!(
        lines,
        [
            format!("blocked|kimi-code|success|Bash|cargo build\\u{{1b}}[2J|2|{session}"),
            format!("turn_ended|kimi-code|success|||2|{session}"),
            format!("absent|kimi-code|success||||{session}"),
        ]
    );

    watch.interrupt_cleanly();
}
