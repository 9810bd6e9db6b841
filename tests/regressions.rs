//! One test per contract case that is easy to get wrong, named after the case.

use hooktrack::{Format, Report};

use crate::support::{kimi, kimi_cli, lines, replay_bytes, turn_results};

fn replay(rows: &[String]) -> Report {
    replay_bytes(&lines(rows), Format::Json).0
}

fn counter(report: &Report, name: &str) -> u64 {
    report
        .diagnostics
        .nonzero()
        .find(|(d, _)| d.name() == name)
        .map_or(0, |(_, n)| n)
}

fn envelope(generation: u64, seq: u64, via: &str, payload: &str) -> String {
    let sequence = if via == "http" {
        seq.to_string()
    } else {
        "null".into()
    };
    let event =
        serde_json::from_str::<serde_json::Value>(payload).expect("payload")["hook_event_name"]
            .as_str()
            .expect("name")
            .to_owned();
    format!(
        r#"{{"v":1,"provider":"kimi","generation":{generation},"via":"{via}","sequence":{sequence},"emitter_seq":{seq},"received_at":"2026-10-20T09:14:{:02}.000Z","event":"{event}","payload":{payload}}}"#,
        seq % 60
    )
}

#[test]
fn stop_hook_active_is_not_terminal() {
    let r = replay(&[
        kimi(
            "UserPromptSubmit",
            r#""prompt":[{"type":"text","text":"go"}],"is_steer":false"#,
        ),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        kimi("Stop", r#""stop_hook_active":true"#),
    ]);
    assert_eq!(turn_results(&r), ["main open"]);
    assert_eq!(counter(&r, "stop_hook_continuation"), 1);
}

#[test]
fn interrupt_naming_the_parent_closes_the_nested_scope_too() {
    let r = replay(&[
        kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        kimi("TurnStarted", r#""turn_id":4,"origin_kind":"user""#),
        kimi("SubagentStart", r#""agent_name":"coder""#),
        kimi(
            "TurnStarted",
            r#""turn_id":1,"origin_kind":"system_trigger","origin_name":"subagent""#,
        ),
        kimi("Interrupt", r#""turn_id":4,"reason":"cancelled""#),
    ]);
    assert_eq!(turn_results(&r), ["main interrupted", "nested interrupted"]);
    assert_eq!(r.final_posture.last_turn.result.name(), "interrupted");
}

#[test]
fn interrupt_with_colliding_ids_takes_the_innermost_turn_and_says_so() {
    let r = replay(&[
        kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        kimi("SubagentStart", r#""agent_name":"coder""#),
        kimi(
            "TurnStarted",
            r#""turn_id":1,"origin_kind":"system_trigger","origin_name":"subagent""#,
        ),
        kimi("Interrupt", r#""turn_id":1,"reason":"cancelled""#),
        kimi("Interrupt", r#""turn_id":1,"reason":"cancelled""#),
    ]);
    assert_eq!(turn_results(&r), ["main interrupted", "nested interrupted"]);
    assert_eq!(counter(&r, "interrupt_scope_ambiguous"), 1);
}

#[test]
fn permission_request_blocks_and_result_unblocks() {
    let rows = [
        kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        kimi("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c1""#),
        kimi(
            "PermissionRequest",
            r#""id":"a1","agent_id":"main","turn_id":1,"tool_call_id":"c1","tool_name":"Bash""#,
        ),
    ];
    let blocked = replay(&rows);
    assert_eq!(
        blocked.final_posture.turn.phase.to_owned(),
        hooktrack::Phase::Blocked
    );
    let mut rows = rows.to_vec();
    rows.push(kimi(
        "PermissionResult",
        r#""id":"a1","agent_id":"main","turn_id":1,"tool_call_id":"c1","decision":"approved""#,
    ));
    let answered = replay(&rows);
    assert_eq!(answered.final_posture.turn.phase, hooktrack::Phase::Active);
}

#[test]
fn session_end_mid_turn_is_a_terminal_gap_never_success() {
    let r = replay(&[
        kimi_cli("SessionStart", r#""source": "startup""#),
        kimi_cli("UserPromptSubmit", r#""prompt": "slow""#),
        kimi_cli("PreToolUse", r#""tool_name": "Shell", "tool_call_id": "c""#),
        kimi_cli("SessionEnd", r#""reason": "exit""#),
        kimi_cli("Stop", r#""stop_hook_active": false"#),
    ]);
    assert_eq!(turn_results(&r), ["main terminal_gap"]);
    assert_eq!(r.final_posture.last_turn.result.name(), "terminal_gap");
    assert_eq!(counter(&r, "event_after_session_end"), 1);
}

#[test]
fn kimi_code_stop_with_no_open_turn_is_counted_not_invented() {
    let r = replay(&[
        kimi("SessionStart", r#""source":"startup""#),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]);
    assert!(r.turns.is_empty());
    assert_eq!(counter(&r, "stop_without_turn"), 1);
    assert_eq!(r.final_posture.last_turn.result.name(), "none");
}

#[test]
fn missing_turn_started_is_implied_by_a_tool_call() {
    let r = replay(&[
        kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        kimi("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c1""#),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]);
    assert_eq!(turn_results(&r), ["main success"]);
    assert_eq!(counter(&r, "turn_start_implied"), 1);
    assert_eq!(r.turns[0].tool_calls, 1);
}

#[test]
fn steer_prompt_does_not_open_an_epoch() {
    let r = replay(&[
        kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        kimi(
            "UserPromptSubmit",
            r#""prompt":[{"type":"text","text":"also"}],"is_steer":true"#,
        ),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]);
    assert_eq!(turn_results(&r), ["main success"]);
    assert_eq!(r.final_posture.turn.epoch, 1);
}

#[test]
fn fallback_duplicate_of_an_http_row_is_dropped() {
    let start = kimi("SessionStart", r#""source":"startup""#);
    let prompt = kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#);
    let r = replay(&[
        envelope(1, 1, "http", &start),
        envelope(1, 2, "http", &prompt),
        envelope(1, 2, "command_fallback", &prompt),
    ]);
    assert_eq!(counter(&r, "duplicate_delivery"), 1);
    assert_eq!(r.final_posture.turn.epoch, 1);
    assert_eq!(counter(&r, "epoch_abandoned"), 0);
}

#[test]
fn rows_of_an_older_generation_are_ignored() {
    let stop = kimi("Stop", r#""stop_hook_active":false"#);
    let r = replay(&[
        envelope(2, 1, "http", &kimi("SessionStart", r#""source":"resume""#)),
        envelope(
            2,
            2,
            "http",
            &kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        ),
        // The turn runs (an armed prompt alone leaves the phase as it was).
        envelope(
            2,
            3,
            "http",
            &kimi("TurnStarted", r#""turn_id":0,"origin_kind":"user""#),
        ),
        envelope(1, 9, "command_fallback", &stop),
    ]);
    assert_eq!(counter(&r, "stale_generation"), 1);
    assert_eq!(r.final_posture.turn.phase, hooktrack::Phase::Active);
}

#[test]
fn a_new_generation_ends_the_open_turn_as_a_gap() {
    let r = replay(&[
        envelope(
            1,
            1,
            "http",
            &kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        ),
        envelope(
            1,
            2,
            "http",
            &kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        ),
        envelope(
            2,
            1,
            "http",
            &kimi("UserPromptSubmit", r#""prompt":[],"is_steer":false"#),
        ),
    ]);
    assert_eq!(turn_results(&r), ["main terminal_gap"]);
    assert_eq!(counter(&r, "terminal_gap_new_session"), 1);
}

#[test]
fn kimi_cli_subagent_prompts_are_nested_and_do_not_end_the_parent() {
    let r = replay(&[
        kimi_cli("UserPromptSubmit", r#""prompt": "delegate""#),
        kimi_cli("SubagentStart", r#""agent_name": "coder", "prompt": "x""#),
        kimi_cli("UserPromptSubmit", r#""prompt": "x""#),
        kimi_cli("Stop", r#""stop_hook_active": false"#),
        kimi_cli("SubagentStop", r#""agent_name": "coder", "response": "ok""#),
    ]);
    assert_eq!(turn_results(&r), ["main open", "nested success"]);
    assert_eq!(r.final_posture.turn.phase, hooktrack::Phase::Active);
}

#[test]
fn unknown_events_are_counted_by_name() {
    let r = replay(&[
        kimi("FutureEvent", ""),
        kimi("FutureEvent", ""),
        kimi("OtherEvent", ""),
    ]);
    assert_eq!(counter(&r, "unknown_event"), 3);
    assert_eq!(r.diagnostics.unknown_events()["FutureEvent"], 2);
    assert_eq!(r.diagnostics.unknown_events()["OtherEvent"], 1);
}

#[test]
fn crlf_line_endings_are_accepted() {
    let text = format!(
        "{}\r\n{}\r\n",
        kimi("SessionStart", r#""source":"startup""#),
        kimi("SessionHeartbeat", "")
    );
    let (r, _) = replay_bytes(text.as_bytes(), Format::Json);
    assert_eq!(r.events, 2);
    assert_eq!(r.diagnostics.total(), 0);
}

#[test]
fn a_provider_identified_after_the_first_row_applies_from_then_on() {
    // A Claude stream whose first row says nothing about its CLI: the Kimi Code mapping is
    // assumed for it, then Claude's prompt-starts-the-turn structure applies.
    let r = replay(&[
        r#"{"hook_event_name":"Notification","message":"hi"}"#.to_owned(),
        r#"{"session_id":"s","transcript_path":"/t","cwd":"/p","prompt_id":"p1","hook_event_name":"UserPromptSubmit","prompt":"go"}"#.to_owned(),
        r#"{"session_id":"s","transcript_path":"/t","cwd":"/p","prompt_id":"p1","hook_event_name":"Stop","stop_hook_active":false}"#.to_owned(),
    ]);
    assert_eq!(
        r.provider.as_ref().map(|d| d.provider.name()),
        Some("claude-code")
    );
    assert_eq!(counter(&r, "provider_assumed"), 1);
    assert_eq!(turn_results(&r), ["main success"]);
    assert_eq!(counter(&r, "turn_start_implied"), 0);
}

/// Two real Claude Code recordings in one log (a second `claude` started by hand with the
/// first one's routing): `replay` gives each its own ledger by default, the one its file
/// gives alone (ndjson too: lines of the second carry `"session": 1`, the end line the
/// finals of each); `--one-stream` reads one ledger; a log of one session reads byte for
/// byte the same either way, and `--by-session` is accepted and changes nothing.
#[test]
fn two_claude_sessions_in_one_log_replay_as_two_ledgers() {
    use std::process::Command;
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/claude-code");
    let files = [
        corpus.join("claude-code-2.1.197-plain-two-turn.ndjson"),
        corpus.join("claude-code-2.1.197-tools.ndjson"),
    ];
    let run = |args: &[&str], file: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
            .arg("replay")
            .args(args)
            .arg(file)
            .output()
            .expect("replay");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let json =
        |bytes: Vec<u8>| -> serde_json::Value { serde_json::from_slice(&bytes).expect("json") };
    let tmp = tempfile::tempdir().expect("tempdir");
    let both = tmp.path().join("two-sessions.ndjson");
    let mut joined = Vec::new();
    for f in &files {
        joined.extend(std::fs::read(f).expect("corpus"));
    }
    std::fs::write(&both, joined).expect("write");

    let split = json(run(&["--format", "json"], &both));
    assert_eq!(
        split,
        json(run(&["--by-session", "--format", "json"], &both))
    );
    let sessions = split["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "{split:#}");
    assert_eq!(split["overflow_rows"], 0);
    // The same turns (their rows numbered in the joined log), posture and diagnostics.
    let turns = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .expect("turns")
            .iter()
            .map(|t| {
                format!(
                    "{} {} {} {} {}",
                    t["id"], t["turn_id"], t["scope"], t["result"], t["tool_calls"]
                )
            })
            .collect()
    };
    for (session, file) in sessions.iter().zip(&files) {
        let alone = json(run(&["--format", "json"], file));
        assert_eq!(
            turns(&session["turns"]),
            turns(&alone["turns"]),
            "{}",
            file.display()
        );
        assert_eq!(session["final"], alone["final"]);
        assert_eq!(session["diagnostics"], alone["diagnostics"]);
    }
    assert_eq!(sessions[1]["turns"][0]["first_row"], 10);
    assert_eq!(
        sessions[0]["session_id"],
        "922d5401-9d51-4403-a46b-e8288f0221de"
    );
    // With --one-stream it is one ledger: the second session's turn is its third turn.
    let mixed = json(run(&["--one-stream", "--format", "json"], &both));
    assert_eq!(mixed["turns"].as_array().map(Vec::len), Some(3));
    let ndjson = String::from_utf8(run(&["--format", "ndjson"], &both)).expect("utf-8");
    let rows: Vec<serde_json::Value> = ndjson.lines().map(|l| json(l.into())).collect();
    let (end, events) = rows.split_last().expect("an end line");
    let second: Vec<u64> = events
        .iter()
        .filter(|r| r["session"] == 1)
        .filter_map(|r| r["line"].as_u64())
        .collect();
    assert_eq!(second.first(), Some(&9), "{ndjson}");
    assert!(
        events
            .iter()
            .all(|r| r["session"].is_null() || r["session"] == 1)
    );
    let finals = end["sessions"]
        .as_array()
        .expect("end line lists the sessions");
    assert_eq!(finals.len(), 2, "{end:#}");
    for (session, file) in finals.iter().zip(&files) {
        let alone = String::from_utf8(run(&["--format", "ndjson"], file)).expect("utf-8");
        let alone_end = json(alone.lines().last().expect("end line").into());
        assert_eq!(session["final"], alone_end["final"], "{}", file.display());
        assert_eq!(session["diagnostics"], alone_end["diagnostics"]);
        assert_eq!(session["open_turns"], alone_end["open_turns"]);
    }
    assert_eq!(end["lines"], rows.len() as u64 - 1);
    let text = String::from_utf8(run(&[], &both)).expect("utf-8");
    assert!(
        text.contains("2 sessions in one log (split by session_id)"),
        "{text}"
    );
    assert!(text.contains("== session 2d76a7e0-3ec5-4463-b1d8-f2df03651a63 =="));
    // One session: the same bytes either way.
    for format in ["text", "json", "ndjson", "html"] {
        assert_eq!(
            run(&["--one-stream", "--format", format], &files[1]),
            run(&["--format", format], &files[1]),
            "{format}"
        );
    }
}

/// json and html look for transcripts only once a row names one. A transcript first named
/// after rows later than its first line makes the replay start over with it: the result
/// is what a search over the whole log first gives, and a log naming none is read once.
#[test]
fn a_transcript_named_after_later_rows_replays_as_if_found_first() {
    use hooktrack::ProviderChoice;
    use hooktrack::transcripts::{TranscriptLookup, load_transcripts, replay_named};
    use std::cell::Cell;
    use std::io::Cursor;

    let campaign = "corpus/claude-code/claude-code-2.1.197-interactive-escape-reject-transcript";
    let hooks = std::fs::read_to_string(format!("{campaign}.ndjson")).expect("campaign");
    let dir = std::path::PathBuf::from(format!("{campaign}.transcripts"));
    let lookup = TranscriptLookup::InDir(&dir);
    // A row that names no transcript, stamped after every line of the transcript.
    let first = hooks.lines().next().expect("a first row");
    let mut early: serde_json::Value = serde_json::from_str(first).expect("json");
    early["recv_ts"] = "2099-01-01T00:00:00.000Z".into();
    if let Some(payload) = early["payload"].as_object_mut() {
        payload.remove("transcript_path");
    }
    let late_named = format!("{early}\n{hooks}");
    let kimi = std::fs::read_to_string("corpus/kimi-code/permission-allow.ndjson").expect("kimi");

    // A Kimi Code log names no transcript, but its rows name a session whose file DIR may
    // hold (`sessions/<workspace>/<session_id>/...`): looked for at its first row.
    for (log, opens_json) in [(&hooks, 2), (&late_named, 3), (&kimi, 2)] {
        for format in [Format::Json, Format::Html, Format::Text, Format::Ndjson] {
            let found_first = {
                let transcripts = load_transcripts(Cursor::new(log.as_bytes()), &lookup);
                let options = hooktrack::ReplayOptions {
                    transcripts,
                    ..hooktrack::ReplayOptions::default()
                };
                let mut out = Vec::new();
                hooktrack::replay_with(
                    log.as_bytes(),
                    "log",
                    ProviderChoice::Auto,
                    format,
                    options,
                    &mut out,
                )
                .expect("replay");
                out
            };
            let opens = Cell::new(0);
            let open = || {
                opens.set(opens.get() + 1);
                Ok(Cursor::new(log.as_bytes()))
            };
            let mut out = Vec::new();
            replay_named(
                open,
                &lookup,
                "log",
                ProviderChoice::Auto,
                format,
                (false, false, 1),
                &mut out,
            )
            .expect("replay");
            assert!(
                out == found_first,
                "{format:?}: the output differs from a replay with the transcripts found first"
            );
            let expected = match format {
                Format::Json | Format::Html => opens_json,
                // They write from the first line: the search comes first.
                Format::Text | Format::Ndjson => 2,
            };
            assert_eq!(opens.get(), expected, "{format:?}");
        }
    }
}

/// Kimi Code 2.1.0's rows of a turn, then a turn it started itself after a background task
/// (`TurnStarted(origin_kind = task)`): the recording the delivery races below reorder.
fn kimi_code_background_task() -> Vec<String> {
    std::fs::read_to_string("corpus/kimi-code/kimi-code-2.1.0-background-task.ndjson")
        .expect("corpus campaign")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The campaign with row `row` (1-based) delivered right after row `after`.
fn delivered_after(rows: &[String], row: usize, after: usize) -> Vec<String> {
    let mut out = rows.to_vec();
    let late = out.remove(row - 1);
    out.insert(after - 1, late);
    out
}

/// Kimi Code does not wait for its `TurnStarted` hook: under load the turn's `Stop`
/// (awaited) reached the store first. The late `TurnStarted(user)` is that turn's start,
/// not a new turn: one turn per prompt, none left active after its `Stop`.
#[test]
fn kimi_code_stop_before_its_turn_started_is_one_turn() {
    let rows = kimi_code_background_task();
    assert!(rows[2].contains(r#""event":"TurnStarted""#) && rows[6].contains(r#""event":"Stop""#));
    let recorded = replay(&rows);
    // Row 3 (TurnStarted, turn 0) delivered after row 7 (the turn's Stop).
    let raced = delivered_after(&rows, 3, 7);
    let r = replay(&raced);
    assert_eq!(turn_results(&r), turn_results(&recorded));
    assert_eq!(turn_results(&r), ["main success", "main success"]);
    assert_eq!(counter(&r, "turn_started_after_its_stop"), 1);
    assert_eq!(counter(&r, "turn_started_without_prompt"), 0);
    assert_eq!(counter(&r, "turn_superseded"), 0);
    // Up to the late row: the turn ended in success, and nothing is active.
    let upto = replay(&raced[..7]);
    assert_eq!(turn_results(&upto), ["main success"]);
    assert_eq!(
        upto.final_posture.turn.phase,
        hooktrack::posture::Phase::Ready
    );
    assert_eq!(upto.final_posture.last_turn.result.name(), "success");
    // The late row names the turn it started.
    assert_eq!(
        upto.final_posture
            .last_turn
            .turn_id
            .as_ref()
            .map(ToString::to_string),
        Some("0".to_owned())
    );
}

/// The same race for the turn Kimi Code starts itself when background work finishes: its
/// `Stop` first (no turn open), then its `TurnStarted(task)`. That is one agent turn,
/// started and ended at once with the `Stop`'s result, never a turn left open.
#[test]
fn kimi_code_stop_before_its_agent_turn_started_is_one_turn() {
    let rows = kimi_code_background_task();
    assert!(rows[7].contains(r#""origin_kind":"task""#) && rows[9].contains(r#""event":"Stop""#));
    let recorded = replay(&rows);
    // Row 8 (TurnStarted(task), turn 1) delivered after row 10 (that turn's Stop).
    let raced = delivered_after(&rows, 8, 10);
    let r = replay(&raced);
    assert_eq!(turn_results(&r), turn_results(&recorded));
    assert_eq!(turn_results(&r), ["main success", "main success"]);
    assert_eq!(counter(&r, "stop_before_its_turn_started"), 1);
    assert_eq!(counter(&r, "stop_without_turn"), 1);
    let agent_turn = r
        .turns
        .iter()
        .find(|t| t.epoch == 2)
        .expect("the agent turn");
    assert_eq!(agent_turn.origin.to_string(), "agent");
    assert_eq!(
        agent_turn.turn_id.as_ref().map(ToString::to_string),
        Some("1".to_owned())
    );
    // Up to the late row: no turn open, nothing active.
    let upto = replay(&raced[..10]);
    assert_eq!(turn_results(&upto), ["main success", "main success"]);
    assert_eq!(
        upto.final_posture.turn.phase,
        hooktrack::posture::Phase::Ready
    );
    assert_eq!(upto.final_posture.last_turn.result.name(), "success");
}

/// What is owed to a late delivery does not outlive the next prompt: a `TurnStarted(task)`
/// after a prompt that came after a stray `Stop` is not bound to that `Stop`.
#[test]
fn a_stop_without_turn_is_not_owed_past_the_next_prompt() {
    let r = replay(&[
        kimi("SessionStart", r#""source":"startup""#),
        kimi("Stop", r#""stop_hook_active":false"#),
        kimi(
            "UserPromptSubmit",
            r#""prompt":[{"type":"text","text":"go"}],"is_steer":false"#,
        ),
        kimi("TurnStarted", r#""turn_id":0,"origin_kind":"user""#),
        kimi("Stop", r#""stop_hook_active":false"#),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"task""#),
    ]);
    assert_eq!(turn_results(&r), ["main success", "main open"]);
    assert_eq!(counter(&r, "stop_before_its_turn_started"), 0);
    assert_eq!(counter(&r, "turn_started_after_its_stop"), 0);
}

/// An early `Stop` is owed its agent turn for seconds, not for ever: the `TurnStarted(task)`
/// of racing hooks comes within milliseconds; one ten seconds after a stray `Stop` is a turn
/// of its own, still running.
#[test]
fn a_stop_without_turn_is_not_owed_to_a_task_turn_seconds_later() {
    let at = |s: &str| format!(r#""timestamp":"2026-12-05T09:00:{s}Z""#);
    let rows = |late: &str| {
        vec![
            kimi(
                "SessionStart",
                &format!(r#""source":"startup",{}"#, at("00.000")),
            ),
            kimi(
                "Stop",
                &format!(r#""stop_hook_active":false,{}"#, at("01.000")),
            ),
            kimi(
                "TurnStarted",
                &format!(r#""turn_id":1,"origin_kind":"task",{}"#, at(late)),
            ),
        ]
    };
    let soon = replay(&rows("01.120"));
    assert_eq!(turn_results(&soon), ["main success"]);
    assert_eq!(counter(&soon, "stop_before_its_turn_started"), 1);
    let later = replay(&rows("11.000"));
    assert_eq!(turn_results(&later), ["main open"]);
    assert_eq!(counter(&later, "stop_before_its_turn_started"), 0);
}

fn campaign_rows(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("corpus/kimi-code/{name}.ndjson"))
        .expect("corpus campaign")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Kimi Code runs `SubagentStop` without waiting for it: the parent's `Stop` can reach the
/// store first. That `Stop` is the parent's (the subagent's turn already ended by its own),
/// not a second subagent turn, and the parent's turn ends in success.
#[test]
fn kimi_code_parent_stop_before_the_subagent_stop_ends_the_parent() {
    let rows = campaign_rows("kimi-code-2.1.0-subagent-permission");
    assert!(rows[11].contains(r#""event":"SubagentStop""#));
    assert!(rows[13].contains(r#""event":"Stop""#));
    let recorded = replay(&rows);
    // Row 12 (SubagentStop) delivered after row 14 (the parent's Stop).
    let r = replay(&delivered_after(&rows, 12, 14));
    assert_eq!(turn_results(&r), turn_results(&recorded));
    assert_eq!(turn_results(&r), ["main success", "nested success"]);
    assert_eq!(counter(&r, "stop_before_subagent_stop"), 1);
    assert_eq!(counter(&r, "nested_turn_implied"), 0);
}

/// A subagent's `TurnStarted(system_trigger)` (not awaited) delivered after the subagent's
/// `Stop`: the `Stop` implied the subagent's turn, the late opener starts no second one.
#[test]
fn kimi_code_subagent_stop_before_its_turn_started_is_one_nested_turn() {
    let rows = campaign_rows("kimi-code-2.1.0-subagent");
    assert!(rows[4].contains(r#""origin_kind":"system_trigger""#));
    let recorded = replay(&rows);
    for after in 9..=12 {
        // Row 5 delivered after the subagent's Stop, its SubagentStop, the Agent call's
        // end, the parent's Stop.
        let r = replay(&delivered_after(&rows, 5, after));
        assert_eq!(
            turn_results(&r),
            turn_results(&recorded),
            "after row {after}"
        );
        assert_eq!(
            counter(&r, "turn_started_after_its_stop"),
            1,
            "after row {after}"
        );
    }
}

/// A turn's `TurnStarted` delivered after its session's `SessionEnd` (awaited): the late
/// opener still names the turn its `Stop` ended and starts none.
#[test]
fn kimi_code_turn_started_after_the_session_end_starts_no_turn() {
    let rows = campaign_rows("kimi-code-2.1.0-tui-permissions-escape-compact");
    assert!(rows[24].contains(r#""event":"TurnStarted""#));
    assert!(rows[26].contains(r#""event":"SessionEnd""#));
    let recorded = replay(&rows);
    let r = replay(&delivered_after(&rows, 25, 27));
    assert_eq!(turn_results(&r), turn_results(&recorded));
    assert_eq!(counter(&r, "turn_started_after_its_stop"), 1);
}
