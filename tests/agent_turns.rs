//! Turns the agent starts itself, steering, and ends only a session file or an idle
//! notice tells, read from real recordings (`corpus/`, screens in `X.screen.md`): one test
//! per case, named after it.

use hooktrack::{Format, Report};

use crate::support::{
    corpus_counter as counter, corpus_dir, corpus_replay as replay, corpus_row as row,
    turn_origins, turn_results,
};

const COPILOT: &str = "copilot-cli/copilot-cli-1.0.102-interactive-bgagent-steer-transcript.ndjson";
const DROID: &str =
    "factory-droid/factory-droid-0.225.2-interactive-bgtask-repeat-transcript.ndjson";
const DROID_KILL: &str =
    "factory-droid/factory-droid-0.225.2-interactive-kill-worker-transcript.ndjson";
const QWEN_STEER: &str = "qwen-code/qwen-code-0.24.4-interactive-steer-escape.ndjson";
const QWEN_QUEUE: &str = "qwen-code/qwen-code-0.24.4-interactive-queue.ndjson";

#[test]
fn copilot_system_notification_prompts_are_turns_of_origin_agent() {
    for n in [10, 18] {
        assert!(row(COPILOT, n).contains(r#""prompt":"<system_notification>"#));
    }
    let r = replay(COPILOT);
    assert_eq!(
        turn_origins(&r),
        ["user", "subagent", "agent", "user", "agent"]
    );
    let agent_turns: Vec<_> = r
        .turns
        .iter()
        .filter(|t| t.origin.to_string() == "agent")
        .collect();
    assert_eq!(
        agent_turns.iter().map(|t| t.first_row).collect::<Vec<_>>(),
        [10, 18]
    );
}

#[test]
fn copilot_prompt_typed_while_a_shell_runs_stays_in_the_running_turn() {
    // Copilot moves the shell to the background (`PostToolUse`) and answers the typed
    // prompt in the same turn, with no hook for it: rows 13 to 17 are one user turn.
    let r = replay(COPILOT);
    let turn = r
        .turns
        .iter()
        .find(|t| t.first_row == 13)
        .expect("the turn of the slow call");
    assert_eq!((turn.last_row, turn.result.name()), (17, "success"));
    assert_eq!(turn.origin.to_string(), "user");
}

#[test]
fn droid_background_task_report_is_a_turn_of_origin_agent() {
    assert!(row(DROID, 12).contains(r#""prompt":"Background task completed."#));
    let r = replay(DROID);
    let report = r
        .turns
        .iter()
        .find(|t| t.first_row == 12)
        .expect("the report's turn");
    assert_eq!(report.origin.to_string(), "agent");
    assert_eq!(report.result.name(), "success");
}

#[test]
fn droid_background_subagent_started_twice_is_one_nested_turn() {
    // Its session's `SessionStart(startup)` (row 4), then `SessionStart(resume)` (row 7).
    assert!(row(DROID, 7).contains(r#""source":"resume","calling_session_id""#));
    let r = replay(DROID);
    let nested: Vec<_> = r.turns.iter().filter(|t| !t.is_main()).collect();
    assert_eq!(nested.len(), 1);
    assert_eq!((nested[0].first_row, nested[0].last_row), (4, 11));
    assert_eq!(nested[0].result.name(), "success");
}

#[test]
fn droid_repeated_output_refused_ends_the_turn_known_failure_despite_its_stop() {
    assert!(row(DROID, 15).contains(r#""event":"Stop""#));
    let r = replay(DROID);
    let refused = r
        .turns
        .iter()
        .find(|t| t.first_row == 14)
        .expect("the refused turn");
    assert_eq!(refused.result.name(), "known_failure");
    assert_eq!(refused.ended_by.map(|s| s.name()), Some("transcript"));
    // Without the session file the plain `Stop` is all there is.
    let hooks_only = replay_file_without_transcripts(DROID);
    let turn = hooks_only
        .turns
        .iter()
        .find(|t| t.first_row == 14)
        .expect("the refused turn");
    assert_eq!(turn.result.name(), "success");
}

#[test]
fn droid_worker_outliving_its_killed_tui_is_tracked_to_its_real_end() {
    // `kill -9` of the TUI while `sleep 40` ran: its `droid exec` worker fired the turn's
    // `Stop` (row 6) and `SessionEnd` (row 7) itself, and the launch, waiting for it, wrote
    // the TUI's end (its own status, signal 9) after them (row 8).
    assert!(row(DROID_KILL, 6).contains(r#""event":"Stop""#));
    assert!(row(DROID_KILL, 7).contains(r#""event":"SessionEnd""#));
    assert!(row(DROID_KILL, 8).contains(r#""event":"process_ended""#));
    assert!(row(DROID_KILL, 8).contains(r#""signal":9"#));
    let r = replay(DROID_KILL);
    // The worker's cancelled call (its session file) ends the turn: interrupted, not a gap
    // at the TUI's end, and its `Stop` makes up no turn.
    assert_eq!(turn_results(&r), ["main success", "main interrupted"]);
    assert_eq!(r.turns[1].ended_by.map(|s| s.name()), Some("transcript"));
    assert_eq!(counter(&r, "terminal_gap_process_ended"), 0);
    assert_eq!(counter(&r, "unannounced_turn"), 0);
}

fn replay_file_without_transcripts(campaign: &str) -> Report {
    crate::support::replay_file_with(
        &corpus_dir().join(campaign),
        Format::Json,
        hooktrack::transcripts::TranscriptLookup::Off,
        false,
    )
    .0
}

#[test]
fn droid_exec_prompt_on_the_command_line_is_the_users_turn() {
    // `droid exec "…"` fires no `UserPromptSubmit`: the turn its calls show is the prompt
    // the user gave on the command line.
    let r = replay("factory-droid/factory-droid-0.225.2-tools-headless.ndjson");
    assert_eq!(turn_origins(&r), ["user"]);
    assert_eq!(counter(&r, "unannounced_turn"), 1);
    // The report of a background task it launched is a later turn the agent started.
    let r = replay("factory-droid/factory-droid-0.225.2-bgsubagent-headless-transcript.ndjson");
    assert_eq!(turn_origins(&r), ["user", "subagent", "agent"]);
}

#[test]
fn qwen_code_steer_with_the_running_prompt_id_is_one_turn() {
    let (first, steer) = (row(QWEN_STEER, 3), row(QWEN_STEER, 7));
    let id = |row: &str| {
        let v: serde_json::Value = serde_json::from_str(row).expect("row");
        v["payload"]["prompt_id"]
            .as_str()
            .expect("prompt_id")
            .to_owned()
    };
    assert_eq!(id(&first), id(&steer));
    assert!(steer.contains(r#""prompt":"Also say hi. [[plain]]""#));
    let r = replay(QWEN_STEER);
    let turn = r
        .turns
        .iter()
        .find(|t| t.first_row == 3)
        .expect("the steered turn");
    assert_eq!((turn.last_row, turn.result.name()), (8, "success"));
    assert_eq!(counter(&r, "steer_by_turn_id"), 1);
    assert_eq!(counter(&r, "turn_superseded"), 0);
}

#[test]
fn qwen_code_queued_prompt_is_a_turn_of_its_own() {
    let r = replay(QWEN_QUEUE);
    assert_eq!(turn_results(&r), ["main success", "main success"]);
    assert_eq!(counter(&r, "steer_by_turn_id"), 0);
}

#[test]
fn qwen_code_escape_while_streaming_is_interrupted() {
    // The prompt (row 17), then only `Notification(idle_prompt)` (row 18).
    assert!(row(QWEN_STEER, 18).contains(r#""notification_type":"idle_prompt""#));
    let r = replay(QWEN_STEER);
    let turn = r
        .turns
        .iter()
        .find(|t| t.first_row == 17)
        .expect("the streamed turn");
    assert_eq!((turn.last_row, turn.result.name()), (18, "interrupted"));
    assert_eq!(counter(&r, "idle_ended_turn"), 1);
}

#[test]
fn qwen_code_idle_after_a_stop_ends_nothing() {
    // Every turn's `Stop` is followed by `Notification(idle_prompt)`: only the one with a
    // turn still running ended a turn.
    let r = replay(QWEN_QUEUE);
    assert_eq!(counter(&r, "idle_ended_turn"), 0);
}
