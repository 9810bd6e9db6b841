//! The background-work rules (contract section 11), one test per case, fed as the agents'
//! own payloads through the whole pipeline (adapter and correlator). The orders are those
//! `providers.md` records for Kimi Code 2.1.0 and Claude Code 2.1.33x.

use crate::agent::Agent;
use crate::diagnostics::Diag;
use crate::pipeline::{Fed, Pipeline};
use crate::posture::{Phase, Posture, TurnResult};
use crate::provider::ProviderChoice;

use super::TurnRecord;

struct Run {
    pipeline: Pipeline,
    line: u64,
    closed: Vec<TurnRecord>,
    notes: Vec<Diag>,
    base: &'static str,
}

impl Run {
    fn kimi() -> Self {
        Self::new(
            Agent::KimiCode,
            r#""session_id":"session_1","cwd":"/p","client_type":"kimi_code_cli""#,
        )
    }

    fn claude() -> Self {
        Self::new(
            Agent::ClaudeCode,
            r#""session_id":"s1","transcript_path":"/t.jsonl","cwd":"/p","permission_mode":"default""#,
        )
    }

    fn new(agent: Agent, base: &'static str) -> Self {
        Self {
            pipeline: Pipeline::new(ProviderChoice::Exactly(agent)),
            line: 0,
            closed: Vec::new(),
            notes: Vec::new(),
            base,
        }
    }

    /// Feeds `event` with these payload fields (`"k":v,...`, may be empty); the posture
    /// after it.
    fn feed(&mut self, event: &str, fields: &str) -> Posture {
        self.line += 1;
        let sep = if fields.is_empty() { "" } else { "," };
        let line = format!(
            r#"{{"hook_event_name":"{event}",{}{sep}{fields}}}"#,
            self.base
        );
        match self.pipeline.feed_line(self.line, line.as_bytes()) {
            Fed::Event(step) => {
                self.notes.extend(step.outcome.notes.iter().map(|n| n.diag));
                self.closed.extend(step.outcome.closed);
            }
            Fed::Skipped(skip) => panic!("line {} skipped: {}", self.line, skip.detail),
        }
        self.pipeline.posture()
    }

    /// Feeds one line of the transcript; the posture after it.
    fn transcript(&mut self, line: &str) -> Posture {
        self.line += 1;
        match self.pipeline.feed_transcript(self.line, line.as_bytes()) {
            Fed::Event(step) => {
                self.notes.extend(step.outcome.notes.iter().map(|n| n.diag));
                self.closed.extend(step.outcome.closed);
            }
            Fed::Skipped(skip) => panic!("transcript line {} skipped: {}", self.line, skip.detail),
        }
        self.pipeline.posture()
    }

    /// The ledger so far: `scope origin result`, in order of ending.
    fn ledger(&self) -> Vec<String> {
        self.closed
            .iter()
            .map(|t| format!("{} {} {}", t.scope, t.origin, t.result.name()))
            .collect()
    }

    fn noted(&self, diag: Diag) -> usize {
        self.notes.iter().filter(|&&d| d == diag).count()
    }
}

const KIMI_USER_TURN: &str = r#""turn_id":0,"origin_kind":"user""#;
const KIMI_SUBAGENT_TURN: &str =
    r#""turn_id":0,"origin_kind":"system_trigger","origin_name":"subagent""#;

fn kimi_prompt(run: &mut Run) {
    run.feed("SessionStart", r#""source":"startup""#);
    run.feed(
        "UserPromptSubmit",
        r#""prompt":[{"type":"text","text":"go"}],"is_steer":false"#,
    );
    run.feed("TurnStarted", KIMI_USER_TURN);
}

/// [`kimi_prompt`], then its `Agent` call `c1` whose subagent `coder` starts, the
/// subagent's turn before its `SubagentStart`; the posture after the `SubagentStart`.
fn kimi_subagent_started(run: &mut Run) -> Posture {
    kimi_prompt(run);
    run.feed("PreToolUse", r#""tool_name":"Agent","tool_call_id":"c1""#);
    run.feed("TurnStarted", KIMI_SUBAGENT_TURN);
    run.feed("SubagentStart", r#""agent_name":"coder""#)
}

/// The session's start and the user's prompt `p1` with these fields before its id.
fn claude_prompt(run: &mut Run, prompt: &str) {
    run.feed("SessionStart", r#""source":"startup""#);
    run.feed("UserPromptSubmit", &format!(r#"{prompt},"prompt_id":"p1""#));
}

/// [`claude_prompt`] asking to delegate, then its `Agent` call `t1`.
fn claude_agent_call(run: &mut Run) {
    claude_prompt(run, r#""prompt":"delegate""#);
    run.feed(
        "PreToolUse",
        r#""tool_name":"Agent","tool_use_id":"t1","tool_input":{"prompt":"x"}"#,
    );
}

#[test]
fn kimi_foreground_subagent_whose_turn_started_before_its_start_is_one_scope() {
    let mut run = Run::kimi();
    let p = kimi_subagent_started(&mut run);
    assert_eq!(p.turn.scope_depth, 1, "one scope, not two");
    run.feed("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    run.feed("PostToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    run.feed("Stop", "");
    run.feed("SubagentStop", r#""agent_name":"coder""#);
    run.feed("PostToolUse", r#""tool_name":"Agent","tool_call_id":"c1""#);
    let p = run.feed("Stop", "");
    assert_eq!(
        p.turn.phase,
        Phase::Ready,
        "the main Stop ends the main turn"
    );
    assert_eq!(p.turn.scope_depth, 0);
    assert_eq!(
        run.ledger(),
        [
            "subagent:coder system_trigger:subagent success",
            "main user success"
        ]
    );
    run.feed("SessionEnd", r#""reason":"exit""#);
    assert_eq!(run.ledger().len(), 2, "no terminal gap at SessionEnd");
    assert_eq!(run.noted(Diag::NestedTurnImplied), 0);
}

#[test]
fn kimi_subagent_start_before_its_turn_gives_the_same_ledger() {
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    run.feed("SubagentStart", r#""agent_name":"coder""#);
    run.feed("TurnStarted", KIMI_SUBAGENT_TURN);
    run.feed("Stop", "");
    run.feed("SubagentStop", r#""agent_name":"coder""#);
    let p = run.feed("Stop", "");
    assert_eq!(p.turn.phase, Phase::Ready);
    assert_eq!(
        run.ledger(),
        [
            "subagent:coder system_trigger:subagent success",
            "main user success"
        ]
    );
}

#[test]
fn kimi_background_subagent_outlives_the_parent_stop_with_its_calls_and_permission() {
    let mut run = Run::kimi();
    kimi_subagent_started(&mut run);
    run.feed("TaskStarted", r#""task_id":"t1","kind":"agent""#);
    run.feed("PostToolUse", r#""tool_name":"Agent","tool_call_id":"c1""#);
    let p = run.feed("Stop", "");
    assert_eq!(
        p.turn.phase,
        Phase::Ready,
        "the parent's Stop ends the parent"
    );
    assert_eq!(p.last_turn.result, TurnResult::Success);
    assert_eq!(p.turn.background_scopes, 1);
    assert_eq!(run.ledger(), ["main user success"]);
    let p = run.feed("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    assert_eq!(p.turn.background_tool_calls, 1);
    assert_eq!(p.turn.phase, Phase::Ready);
    let p = run.feed(
        "PermissionRequest",
        r#""id":"a1","agent_id":"coder","tool_call_id":"c2","tool_name":"Bash""#,
    );
    assert_eq!(p.turn.phase, Phase::Blocked, "a background dialog blocks");
    let p = run.feed(
        "PermissionResult",
        r#""id":"a1","tool_call_id":"c2","tool_name":"Bash","decision":"approved""#,
    );
    assert_eq!(p.turn.phase, Phase::Ready);
    run.feed("PostToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    run.feed("Stop", "");
    let p = run.feed("SubagentStop", r#""agent_name":"coder""#);
    assert_eq!(p.turn.background(), 0);
    let p = run.feed("TurnStarted", r#""turn_id":1,"origin_kind":"task""#);
    assert_eq!(p.turn.phase, Phase::Active, "an agent-started turn is work");
    let p = run.feed("Stop", "");
    assert_eq!(p.turn.phase, Phase::Ready);
    assert_eq!(
        run.ledger(),
        [
            "main user success",
            "subagent:coder system_trigger:subagent success",
            "main agent success"
        ]
    );
    assert_eq!(run.noted(Diag::ToolWithoutTurn), 0);
    assert_eq!(run.noted(Diag::TurnStartedWithoutPrompt), 0);
}

#[test]
fn kimi_background_process_runs_until_its_completion_is_reported() {
    // As Kimi Code 2.1.0 sends it (`Bash` with `run_in_background`, print mode).
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    run.feed("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c1""#);
    let p = run.feed(
        "TaskStarted",
        r#""task_id":"bash-1","kind":"process","status":"running","detached":true"#,
    );
    assert_eq!(p.turn.background_tasks, 1);
    run.feed("PostToolUse", r#""tool_name":"Bash","tool_call_id":"c1""#);
    let p = run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!((p.turn.phase, p.turn.background()), (Phase::Ready, 1));
    let p = run.feed("TurnStarted", r#""turn_id":1,"origin_kind":"task""#);
    assert_eq!(p.turn.phase, Phase::Active, "an agent-started turn is work");
    assert_eq!(p.turn.epoch, 2, "a main turn of its own");
    let p = run.feed(
        "Notification",
        r#""sink":"context","agent_id":"main","notification_type":"task.completed","source_id":"bash-1","severity":"info""#,
    );
    assert_eq!(
        p.turn.background_tasks, 0,
        "the notification names the task"
    );
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger(), ["main user success", "main agent success"]);
}

#[test]
fn kimi_background_subagent_call_before_the_parent_stop_moves_to_its_scope() {
    // Kimi Code 2.1.0, `Agent` with `run_in_background` (print mode): the subagent's first
    // PreToolUse comes just before the parent's Stop.
    let mut run = Run::kimi();
    kimi_subagent_started(&mut run);
    run.feed("TaskStarted", r#""task_id":"agent-1","kind":"agent""#);
    run.feed("PostToolUse", r#""tool_name":"Agent","tool_call_id":"c1""#);
    run.feed("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    let p = run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(p.turn.phase, Phase::Ready);
    assert_eq!(
        (p.turn.background_scopes, p.turn.background_tool_calls),
        (1, 1)
    );
    assert_eq!(run.noted(Diag::CallsMovedToBackground), 1);
    run.feed("PostToolUse", r#""tool_name":"Bash","tool_call_id":"c2""#);
    run.feed("Stop", r#""stop_hook_active":false"#);
    run.feed("SubagentStop", r#""agent_name":"coder""#);
    let p = run.feed("TurnStarted", r#""turn_id":1,"origin_kind":"task""#);
    assert_eq!(p.turn.phase, Phase::Active);
    run.feed(
        "Notification",
        r#""sink":"context","agent_id":"main","notification_type":"task.completed","source_id":"agent-1""#,
    );
    run.feed("Stop", r#""stop_hook_active":false"#);
    let calls: Vec<u64> = run.closed.iter().map(|t| t.tool_calls).collect();
    assert_eq!(
        run.ledger(),
        [
            "main user success",
            "subagent:coder system_trigger:subagent success",
            "main agent success"
        ]
    );
    assert_eq!(calls, [1, 1, 0], "the Bash call is the subagent's");
    for guess in [Diag::ToolOpenAtTurnEnd, Diag::ToolFinishLate] {
        assert_eq!(run.noted(guess), 0, "{guess}");
    }
}

#[test]
fn kimi_stop_hook_continuation_is_active_until_the_next_prompt_and_invents_no_result() {
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    run.feed("Stop", "");
    // The Stop hook blocked: Kimi goes on, and fires no second Stop.
    let p = run.feed("PreToolUse", r#""tool_name":"Bash","tool_call_id":"c9""#);
    assert_eq!(p.turn.phase, Phase::Active);
    assert_eq!(
        p.last_turn.result,
        TurnResult::Success,
        "the latched result stays"
    );
    assert_eq!(run.noted(Diag::ContinuationAfterStop), 1);
    assert_eq!(run.noted(Diag::ToolWithoutTurn), 0);
    let p = run.feed("PostToolUse", r#""tool_name":"Bash","tool_call_id":"c9""#);
    assert_eq!(
        p.turn.phase,
        Phase::Active,
        "still going until terminal evidence"
    );
    run.feed(
        "UserPromptSubmit",
        r#""prompt":[{"type":"text","text":"next"}],"is_steer":false"#,
    );
    run.feed("TurnStarted", r#""turn_id":2,"origin_kind":"user""#);
    let p = run.feed("Stop", "");
    assert_eq!(p.turn.phase, Phase::Ready);
    assert_eq!(run.ledger(), ["main user success", "main user success"]);
}

#[test]
fn kimi_ask_user_question_is_blocked_until_its_answer() {
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    let p = run.feed(
        "PreToolUse",
        r#""tool_name":"AskUserQuestion","tool_call_id":"q1""#,
    );
    assert_eq!(p.turn.phase, Phase::Blocked);
    assert_eq!(p.turn.blocked_tool.as_deref(), Some("AskUserQuestion"));
    let p = run.feed(
        "PostToolUse",
        r#""tool_name":"AskUserQuestion","tool_call_id":"q1""#,
    );
    assert_eq!(p.turn.phase, Phase::Active);
}

const CLAUDE_SUB: &str = r#""agent_id":"a1","agent_type":"general-purpose""#;

fn claude_background_subagent(run: &mut Run) {
    claude_agent_call(run);
    run.feed("SubagentStart", CLAUDE_SUB);
    run.feed(
        "PostToolUse",
        r#""tool_name":"Agent","tool_use_id":"t1","tool_input":{"prompt":"x"},"tool_response":{"isAsync":true,"status":"async_launched","agentId":"a1"}"#,
    );
    let p = run.feed(
        "Stop",
        r#""stop_hook_active":false,"background_tasks":[{"id":"a1","type":"local_agent","status":"running"}]"#,
    );
    assert_eq!(p.turn.phase, Phase::Ready);
    assert_eq!((p.turn.background_scopes, p.turn.background_tasks), (1, 0));
}

#[test]
fn claude_background_subagent_permission_after_the_main_stop_is_blocked() {
    let mut run = Run::claude();
    claude_background_subagent(&mut run);
    let call = format!(
        r#"{CLAUDE_SUB},"tool_name":"Bash","tool_use_id":"t2","tool_input":{{"command":"ls"}}"#
    );
    let p = run.feed("PreToolUse", &call);
    assert_eq!(
        (p.turn.phase, p.turn.background_tool_calls),
        (Phase::Ready, 1)
    );
    let request = format!(r#"{CLAUDE_SUB},"tool_name":"Bash","tool_input":{{"command":"ls"}}"#);
    let p = run.feed("PermissionRequest", &request);
    assert_eq!(p.turn.phase, Phase::Blocked);
    assert_eq!(p.turn.blocked_tool.as_deref(), Some("Bash"));
    let p = run.feed("PostToolUse", &call);
    assert_eq!(p.turn.phase, Phase::Ready);
    let p = run.feed("SubagentStop", CLAUDE_SUB);
    assert_eq!(p.turn.background(), 0);
    let p = run.feed(
        "UserPromptSubmit",
        r#""prompt":"<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>","prompt_id":"p2""#,
    );
    assert_eq!(p.turn.phase, Phase::Active);
    run.feed("Stop", r#""stop_hook_active":false,"background_tasks":[]"#);
    assert_eq!(
        run.ledger(),
        [
            "main user success",
            "subagent:general-purpose subagent success",
            "main agent success"
        ]
    );
    for late in [
        Diag::ToolFinishLate,
        Diag::SubagentStopLate,
        Diag::ToolWithoutTurn,
    ] {
        assert_eq!(run.noted(late), 0, "{late}");
    }
}

#[test]
fn claude_background_subagent_dialog_without_permission_request_is_blocked() {
    let mut run = Run::claude();
    claude_background_subagent(&mut run);
    let call = format!(
        r#"{CLAUDE_SUB},"tool_name":"Bash","tool_use_id":"t2","tool_input":{{"command":"ls"}}"#
    );
    run.feed("PreToolUse", &call);
    let notice = format!(
        r#"{CLAUDE_SUB},"message":"Claude needs your input","notification_type":"agent_needs_input""#
    );
    let p = run.feed("Notification", &notice);
    assert_eq!(
        p.turn.phase,
        Phase::Blocked,
        "auto mode's dialog, after the main Stop"
    );
    let p = run.feed("PostToolUse", &call);
    assert_eq!(p.turn.phase, Phase::Ready, "the call going on answers it");
    assert_eq!(run.noted(Diag::BlockedByNotification), 1);
}

#[test]
fn claude_permission_prompt_after_the_answer_does_not_block() {
    let mut run = Run::claude();
    claude_prompt(&mut run, r#""prompt":"go""#);
    let call = r#""tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"ls"}"#;
    run.feed("PreToolUse", call);
    let p = run.feed(
        "PermissionRequest",
        r#""tool_name":"Bash","tool_input":{"command":"ls"}"#,
    );
    assert_eq!(p.turn.phase, Phase::Blocked);
    let late =
        r#""message":"Claude needs your permission","notification_type":"permission_prompt""#;
    let p = run.feed("Notification", late);
    assert_eq!(
        p.turn.phase,
        Phase::Blocked,
        "the request's window already blocks"
    );
    let p = run.feed("PostToolUse", call);
    assert_eq!(p.turn.phase, Phase::Active);
    let p = run.feed("Notification", late);
    assert_eq!(
        p.turn.phase,
        Phase::Active,
        "a late notice after the answer"
    );
    assert_eq!(run.noted(Diag::BlockedByNotification), 0);
}

#[test]
fn claude_background_bash_is_work_until_its_task_notification() {
    let mut run = Run::claude();
    claude_prompt(&mut run, r#""prompt":"bg""#);
    let p = run.feed(
        "Stop",
        r#""stop_hook_active":false,"background_tasks":[{"id":"b1","type":"shell","status":"running","command":"sleep 2"}]"#,
    );
    assert_eq!((p.turn.phase, p.turn.background_tasks), (Phase::Ready, 1));
    let p = run.feed(
        "UserPromptSubmit",
        r#""prompt":"<task-notification>\n<task-id>b1</task-id>","prompt_id":"p2""#,
    );
    assert_eq!((p.turn.phase, p.turn.background_tasks), (Phase::Active, 0));
    run.feed("Stop", r#""stop_hook_active":false,"background_tasks":[]"#);
    assert_eq!(run.ledger(), ["main user success", "main agent success"]);
}

#[test]
fn a_background_scope_ends_unseen_at_session_end() {
    let mut run = Run::claude();
    claude_background_subagent(&mut run);
    let p = run.feed("SessionEnd", r#""reason":"other""#);
    assert_eq!(p.turn.background(), 0);
    assert_eq!(
        run.ledger(),
        [
            "main user success",
            "subagent:general-purpose subagent terminal_gap"
        ]
    );
}

#[test]
fn kimi_interrupted_subagent_sends_no_subagent_stop_and_leaves_no_background_scope() {
    let mut run = Run::kimi();
    kimi_subagent_started(&mut run);
    // Escape inside the subagent: one Interrupt per agent, no SubagentStop.
    run.feed("Interrupt", r#""turn_id":0,"reason":"cancelled""#);
    let p = run.feed("Interrupt", r#""turn_id":0,"reason":"cancelled""#);
    assert_eq!((p.turn.phase, p.turn.scope_depth), (Phase::Ready, 0));
    assert_eq!(
        run.ledger(),
        [
            "subagent:coder system_trigger:subagent interrupted",
            "main user interrupted"
        ]
    );
    // The main agent goes on after a subagent it interrupted: its Stop leaves nothing behind.
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    run.feed("TurnStarted", KIMI_SUBAGENT_TURN);
    run.feed("SubagentStart", r#""agent_name":"coder""#);
    run.feed("Interrupt", r#""turn_id":0,"reason":"cancelled""#);
    let p = run.feed("Stop", "");
    assert_eq!((p.turn.phase, p.turn.background()), (Phase::Ready, 0));
    assert_eq!(run.noted(Diag::ScopeInBackground), 0);
}

#[test]
fn claude_auto_mode_dialog_on_the_agent_call_ends_when_the_subagent_starts() {
    let mut run = Run::claude();
    claude_agent_call(&mut run);
    let p = run.feed(
        "Notification",
        r#""message":"Claude needs your input","notification_type":"agent_needs_input""#,
    );
    assert_eq!(p.turn.phase, Phase::Blocked);
    let p = run.feed("SubagentStart", CLAUDE_SUB);
    assert_eq!(
        p.turn.phase,
        Phase::Active,
        "answered: the subagent it asked about runs"
    );
}

#[test]
fn kimi_background_subagent_announced_before_its_start_asks_after_the_parent_stop() {
    // Kimi Code 2.1.0 in the TUI (manual mode): the fire-and-forget TaskStarted comes
    // before the awaited SubagentStart; the subagent's Bash asks after the parent's Stop.
    let mut run = Run::kimi();
    kimi_prompt(&mut run);
    run.feed(
        "PreToolUse",
        r#""tool_name":"Agent","tool_call_id":"call_a_2""#,
    );
    run.feed("TurnStarted", KIMI_SUBAGENT_TURN);
    run.feed("TaskStarted", r#""task_id":"agent-1","kind":"agent""#);
    run.feed(
        "PostToolUse",
        r#""tool_name":"Agent","tool_call_id":"call_a_2""#,
    );
    let p = run.feed("SubagentStart", r#""agent_name":"coder""#);
    assert_eq!((p.turn.scope_depth, p.turn.background_scopes), (1, 1));
    run.feed(
        "PreToolUse",
        r#""tool_name":"Bash","tool_call_id":"call_sub_0""#,
    );
    let p = run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(p.turn.phase, Phase::Ready, "the screen: the prompt is free");
    let ask = r#""turn_id":0,"tool_name":"Bash","tool_call_id":"call_sub_0","agent_id":"agent-0""#;
    let p = run.feed("PermissionRequest", &format!(r#"{ask},"id":"ap1""#));
    assert_eq!(
        p.turn.phase,
        Phase::Blocked,
        "the screen: Run this command?"
    );
    let p = run.feed(
        "PermissionResult",
        &format!(r#"{ask},"id":"ap1","decision":"approved""#),
    );
    assert_eq!(p.turn.phase, Phase::Ready);
    run.feed(
        "PostToolUse",
        r#""tool_name":"Bash","tool_call_id":"call_sub_0""#,
    );
    run.feed("Stop", r#""stop_hook_active":false"#);
    run.feed("SubagentStop", r#""agent_name":"coder""#);
    run.feed("TurnStarted", r#""turn_id":1,"origin_kind":"task""#);
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(
        run.ledger(),
        [
            "main user success",
            "subagent:coder system_trigger:subagent success",
            "main agent success"
        ]
    );
}

#[test]
fn codex_subagent_open_at_the_main_stop_ends_with_it_as_before() {
    // Nothing shows Codex running subagents in the background: a scope still open at the
    // main Stop ended with it, unseen.
    let mut run = Run::new(
        Agent::Codex,
        r#""session_id":"019a-c0de","transcript_path":"/r.jsonl","cwd":"/p","turn_id":"t1""#,
    );
    run.feed("SessionStart", r#""source":"startup""#);
    run.feed("UserPromptSubmit", r#""prompt":"delegate""#);
    run.feed("SubagentStart", r#""agent_id":"c1","agent_type":"worker""#);
    let p = run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!((p.turn.phase, p.turn.scope_depth), (Phase::Ready, 0));
    assert_eq!(p.turn.background(), 0);
    assert_eq!(run.noted(Diag::ScopeOpenAtTurnEnd), 1);
    assert_eq!(
        run.ledger(),
        ["subagent:worker subagent terminal_gap", "main user success"]
    );
}

/// Claude Code 2.1.332's transcript entry for a task-notification prompt (as in
/// `corpus/claude-code/claude-code-2.1.332-background-bash`, shortened), for turn `id`.
fn claude_task_notification_entry(id: &str) -> String {
    format!(
        r#"{{"parentUuid":"e9","isSidechain":false,"promptId":"{id}","type":"user","message":{{"role":"user","content":"<task-notification>\n<task-id>b1</task-id>\n</task-notification>"}},"uuid":"1d","timestamp":"2026-12-01T22:30:25.751Z","origin":{{"kind":"task-notification","producer":"session-task"}},"promptSource":"system","turnOrigin":"task_notification","sessionId":"s1","version":"2.1.332"}}"#
    )
}

/// A user turn that ended, then the agent's own turn whose hook prompt does not say so
/// (a cut or missing prompt): the hooks alone take it for a user's.
fn claude_user_turn_then(run: &mut Run) {
    claude_prompt(run, r#""prompt":"bg""#);
    run.feed("Stop", r#""stop_hook_active":false"#);
}

#[test]
fn claude_task_notification_turn_with_a_cut_prompt_is_the_agents_by_its_transcript_entry() {
    // Claude Code writes the entry before the hook fires: replay and live read it first.
    let mut run = Run::claude();
    claude_user_turn_then(&mut run);
    let p = run.transcript(&claude_task_notification_entry("p2"));
    assert_eq!(p.turn.phase, Phase::Ready, "the entry starts no turn");
    let p = run.feed("UserPromptSubmit", r#""prompt":"","prompt_id":"p2""#);
    assert_eq!(p.turn.phase, Phase::Active);
    assert_eq!(run.noted(Diag::TurnOriginFromTranscript), 1);
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger(), ["main user success", "main agent success"]);
    assert_eq!(run.noted(Diag::TranscriptMarkerStale), 0);
}

#[test]
fn claude_task_notification_entry_read_after_its_hook_corrects_the_open_turn() {
    let mut run = Run::claude();
    claude_user_turn_then(&mut run);
    run.feed("UserPromptSubmit", r#""prompt_id":"p2""#);
    let p = run.transcript(&claude_task_notification_entry("p2"));
    assert_eq!(p.turn.phase, Phase::Active);
    assert_eq!(
        p.last_turn.result,
        TurnResult::Success,
        "no result of its own"
    );
    assert_eq!(run.noted(Diag::TurnOriginFromTranscript), 1);
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger(), ["main user success", "main agent success"]);
}

#[test]
fn claude_task_notification_entry_agrees_with_the_hook_prompt_silently() {
    let mut run = Run::claude();
    claude_user_turn_then(&mut run);
    run.transcript(&claude_task_notification_entry("p2"));
    run.feed(
        "UserPromptSubmit",
        r#""prompt":"<task-notification>\n<task-id>b1</task-id>","prompt_id":"p2""#,
    );
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger(), ["main user success", "main agent success"]);
    assert_eq!(run.noted(Diag::TurnOriginFromTranscript), 0);
    assert_eq!(run.noted(Diag::TranscriptMarkerStale), 0);
}

#[test]
fn claude_task_notification_entry_for_another_turn_changes_no_turn() {
    let mut run = Run::claude();
    claude_user_turn_then(&mut run);
    let p = run.transcript(&claude_task_notification_entry("p9"));
    assert_eq!(
        (p.turn.phase, p.last_turn.result),
        (Phase::Ready, TurnResult::Success),
        "no turn, no result"
    );
    run.feed("UserPromptSubmit", r#""prompt":"typed","prompt_id":"p3""#);
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger(), ["main user success", "main user success"]);
    assert_eq!(run.noted(Diag::TurnOriginFromTranscript), 0);
    assert_eq!(run.noted(Diag::TranscriptMarkerStale), 1);
    // Nor the open turn of another id.
    run.feed("UserPromptSubmit", r#""prompt":"typed","prompt_id":"p4""#);
    let p = run.transcript(&claude_task_notification_entry("p5"));
    assert_eq!(p.turn.phase, Phase::Active);
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.ledger()[2], "main user success");
    assert_eq!(run.noted(Diag::TurnOriginFromTranscript), 0);
}

/// Qwen Code 0.24.4's `/compress`, as `corpus/qwen-code/qwen-code-0.24.4-compaction`
/// recorded it: one that keeps the history ("not beneficial") fires `PreCompact` and then
/// only `Notification(idle_prompt)`; one that replaces it `PostCompact` first.
#[test]
fn qwen_compress_that_keeps_the_history_ends_at_the_idle_prompt() {
    let mut run = Run::new(
        Agent::QwenCode,
        r#""session_id":"s1","transcript_path":"/h/.qwen/projects/p/chats/s1.jsonl","cwd":"/p""#,
    );
    run.feed("SessionStart", r#""source":"startup""#);
    let p = run.feed(
        "PreCompact",
        r#""trigger":"manual","custom_instructions":"""#,
    );
    assert!(p.maintenance.compacting);
    let p = run.feed(
        "Notification",
        r#""notification_type":"idle_prompt","message":"Qwen Code is waiting for your input""#,
    );
    assert!(!p.maintenance.compacting, "the input prompt is back");
    assert_eq!(p.turn.phase, Phase::Ready);
    run.feed(
        "UserPromptSubmit",
        r#""prompt":"hello","prompt_id":"s1########1""#,
    );
    run.feed("Stop", r#""stop_hook_active":false"#);
    assert_eq!(run.noted(Diag::CompactionUnclosed), 0);
    // Another notification (a permission dialog) ends nothing.
    run.feed(
        "PreCompact",
        r#""trigger":"manual","custom_instructions":"""#,
    );
    let p = run.feed(
        "Notification",
        r#""notification_type":"permission_prompt","message":"Qwen Code needs your permission""#,
    );
    assert!(p.maintenance.compacting);
    let p = run.feed("PostCompact", r#""trigger":"manual","compact_summary":"s""#);
    assert!(!p.maintenance.compacting);
    assert_eq!(run.ledger(), ["main user success"]);
}
