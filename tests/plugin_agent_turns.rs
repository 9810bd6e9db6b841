//! OpenCode, Kilo CLI and Pi as people run them, read from real recordings (`corpus/`,
//! what the terminal showed in each expectation file or `X.screen.md`): one test per case,
//! named after it.

use hooktrack::Format;

use crate::support::{
    corpus_counter as counter, corpus_dir, corpus_replay as replay, corpus_row as row, replay_file,
    turn_results,
};

const KILO_AUTO_REJECTED: &str = "kilo/kilo-7.7.7-permission-auto-rejected-headless.ndjson";
const OPENCODE_AUTO_REJECTED: &str =
    "opencode/opencode-1.18.33-permission-auto-rejected-headless.ndjson";
const KILO_TUI_PERMISSIONS: &str = "kilo/kilo-7.7.7-tui-permissions.ndjson";

#[test]
fn kilo_run_permission_auto_rejected_is_known_failure() {
    // Row 6: Kilo's own reply; rows 7 and 8: the rejected call and the run's `idle`,
    // marked by the plugin.
    assert!(row(KILO_AUTO_REJECTED, 6).contains(r#""reply":"reject""#));
    assert!(row(KILO_AUTO_REJECTED, 7).contains(r#""unattended":true"#));
    assert!(row(KILO_AUTO_REJECTED, 8).contains(r#""autoRejected":true"#));
    let r = replay(KILO_AUTO_REJECTED);
    assert_eq!(turn_results(&r), ["main known_failure"]);
    assert_eq!(r.turns[0].tool_calls, 1);
    assert_eq!(r.turns[0].last_row, 8);
    // Nothing guessed: the call ended before the turn did.
    assert_eq!(counter(&r, "tool_open_at_turn_end"), 0);
}

#[test]
fn opencode_run_permission_auto_rejected_is_known_failure() {
    assert!(row(OPENCODE_AUTO_REJECTED, 8).contains(r#""autoRejected":true"#));
    let r = replay(OPENCODE_AUTO_REJECTED);
    assert_eq!(turn_results(&r), ["main known_failure"]);
}

#[test]
fn kilo_tui_permission_rejected_by_the_user_stays_interrupted() {
    // The TUI's session is created without the rules of a headless run: "Reject" is the
    // user's, and ends the turn interrupted.
    assert!(!row(KILO_TUI_PERMISSIONS, 1).contains(r#""action":"deny""#));
    let r = replay(KILO_TUI_PERMISSIONS);
    assert_eq!(turn_results(&r), ["main success", "main interrupted"]);
}

const PI_FOLLOW_UP: &str = "pi/pi-0.73.1-tui-follow-up-steer.ndjson";

#[test]
fn pi_follow_up_typed_while_it_works_is_a_turn_of_its_own() {
    // Rows 5 and 6: the first prompt's answer ends, the follow-up starts, inside the one
    // agent run (agent_start at row 2, agent_end at row 7).
    assert!(row(PI_FOLLOW_UP, 5).contains(r#""hook_event_name":"turn_end""#));
    assert!(row(PI_FOLLOW_UP, 6).contains(r#""steer":false"#));
    let r = replay(PI_FOLLOW_UP);
    let mut turns = r.turns.clone();
    turns.sort_by_key(|t| t.first_row);
    let spans: Vec<_> = turns
        .iter()
        .map(|t| (t.first_row, t.last_row, t.origin.to_string()))
        .collect();
    assert_eq!(spans[..2], [(2, 5, "user".into()), (6, 7, "user".into())]);
    assert_eq!(turns[0].tool_calls, 1);
    assert_eq!(turns[1].tool_calls, 0);
}

#[test]
fn pi_steer_typed_during_a_tool_call_stays_in_the_running_turn() {
    assert!(row(PI_FOLLOW_UP, 11).contains(r#""steer":true"#));
    let r = replay(PI_FOLLOW_UP);
    assert_eq!(
        turn_results(&r),
        ["main success", "main success", "main success"]
    );
    let last = r.turns.iter().max_by_key(|t| t.first_row).expect("a turn");
    assert_eq!((last.first_row, last.last_row), (8, 12));
}

const PI_RETRY_WAIT: &str = "pi/pi-0.73.1-tui-retry-wait-escape.ndjson";

#[test]
fn pi_retry_wait_is_not_ready() {
    assert!(row(PI_RETRY_WAIT, 3).contains(r#""retryAttempt":1"#));
    let (report, text) = replay_file(&corpus_dir().join(PI_RETRY_WAIT), Format::Text);
    // Row 3 (the error Pi waits to retry) ends no turn: the first turn ends at row 4.
    let first = report
        .turns
        .iter()
        .min_by_key(|t| t.first_row)
        .expect("a turn");
    assert_eq!((first.first_row, first.last_row), (2, 4), "{text}");
    assert!(counter(&report, "retry_resumed") >= 3, "{text}");
}

#[test]
fn pi_escape_during_the_retry_wait_is_interrupted() {
    assert!(row(PI_RETRY_WAIT, 4).contains(r#""retryCancelled":true"#));
    let r = replay(PI_RETRY_WAIT);
    assert_eq!(turn_results(&r), ["main interrupted", "main known_failure"]);
}

#[test]
fn pi_retries_given_up_are_one_known_failure_turn() {
    // Rows 5 to 13: the prompt, three runs Pi started itself, a steer, Pi's give-up.
    let r = replay(PI_RETRY_WAIT);
    let last = r.turns.iter().max_by_key(|t| t.first_row).expect("a turn");
    assert_eq!((last.first_row, last.last_row), (5, 13));
    assert_eq!(last.origin.to_string(), "user");
}

#[test]
fn pi_retries_of_an_older_extension_read_as_before() {
    // Recorded before the extension marked retries: each run Pi started is still a turn.
    let r = replay("pi/pi-0.73.1-connection-retried-headless.ndjson");
    assert_eq!(turn_results(&r).len(), 4);
}

#[test]
fn pi_model_call_retried_once_is_one_turn() {
    let campaign = "pi/pi-0.73.1-retried-once-headless.ndjson";
    assert!(row(campaign, 3).contains(r#""retryAttempt":1"#));
    assert!(row(campaign, 4).contains(r#""retry":true"#));
    let r = replay(campaign);
    assert_eq!(turn_results(&r), ["main success"]);
    assert_eq!(counter(&r, "retry_resumed"), 1);
}
