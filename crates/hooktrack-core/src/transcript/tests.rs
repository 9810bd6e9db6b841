use super::*;

fn marker(agent: Agent, line: &str) -> Option<&'static str> {
    match classify(agent, line.as_bytes()) {
        Entry::Marker(m) => Some(m.name),
        _ => None,
    }
}

#[test]
fn claude_escape_during_tool_and_rejection_are_told_apart_by_interrupted_message_id() {
    let tool = r#"{"type":"user","promptId":"p1","timestamp":"2026-12-01T13:14:45.430Z","interruptedMessageId":"m","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
    let rejected = r#"{"type":"user","promptId":"p1","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
    assert_eq!(
        marker(Agent::ClaudeCode, tool),
        Some("interrupted_by_user_during_tool")
    );
    assert_eq!(
        marker(Agent::ClaudeCode, rejected),
        Some("interrupted_after_rejection")
    );
    let Entry::Marker(m) = classify(Agent::ClaudeCode, tool.as_bytes()) else {
        panic!("not a marker");
    };
    assert_eq!(
        m.event,
        Event::Interrupted {
            turn_id: Some(crate::event::TurnId::Text("p1".into())),
            reason: Some("interrupted_by_user_during_tool".into())
        }
    );
    assert!(m.at.is_some());
}

#[test]
fn claude_user_text_that_merely_mentions_the_marker_is_ignored() {
    let prompt = r#"{"type":"user","message":{"role":"user","content":"why did it say [Request interrupted by user]?"}}"#;
    let sidechain = r#"{"type":"user","isSidechain":true,"message":{"role":"user","content":"[Request interrupted by user]"}}"#;
    assert_eq!(
        classify(Agent::ClaudeCode, prompt.as_bytes()),
        Entry::Ignored
    );
    assert_eq!(
        classify(Agent::ClaudeCode, sidechain.as_bytes()),
        Entry::Ignored
    );
}

#[test]
fn claude_rejected_tool_result_names_its_call() {
    let line = r#"{"type":"user","toolUseResult":"User rejected tool use","message":{"content":[{"type":"tool_result","is_error":true,"tool_use_id":"toolu_1","content":"The user doesn't want to proceed with this tool use."}]}}"#;
    let Entry::Marker(m) = classify(Agent::ClaudeCode, line.as_bytes()) else {
        panic!("not a marker");
    };
    assert!(
        matches!(m.event, Event::ToolFailed { ref tool, interrupt: false, .. } if tool.call_id.as_deref() == Some("toolu_1"))
    );
}

#[test]
fn codex_turn_aborted_other_than_interrupted_is_ignored() {
    let line = r#"{"timestamp":"2026-12-01T13:16:25.089Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}"#;
    let other = r#"{"type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"replaced"}}"#;
    assert_eq!(marker(Agent::Codex, line), Some("turn_aborted"));
    assert_eq!(classify(Agent::Codex, other.as_bytes()), Entry::Ignored);
}

#[test]
fn gemini_request_cancelled_info_is_the_marker() {
    let line = r#"{"id":"x","timestamp":"2026-12-01T13:19:04.160Z","type":"info","content":"Request cancelled."}"#;
    assert_eq!(marker(Agent::GeminiCli, line), Some("request_cancelled"));
    assert_eq!(
        classify(Agent::GeminiCli, br#"{"$set":{"lastUpdated":"x"}}"#),
        Entry::Ignored
    );
    assert_eq!(classify(Agent::GeminiCli, b"not json"), Entry::Unreadable);
    // Kimi CLI writes nothing hooktrack follows (Kimi Code's wire file is followed now).
    assert_eq!(
        classify(Agent::KimiCli, line.as_bytes()),
        Entry::NotFollowed
    );
}

#[test]
fn a_failed_model_call_is_a_failure_marker_for_each_cli() {
    let claude = r#"{"type":"assistant","timestamp":"2026-12-01T13:47:53.725Z","message":{"role":"assistant","content":[{"type":"text","text":"API Error: 400 mock model: scripted failure"}]},"error":"unknown","isApiErrorMessage":true,"apiErrorStatus":400}"#;
    let codex = r#"{"timestamp":"2026-12-01T13:49:16.857Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":null,"error":{"message":"scripted failure","codex_error_info":"other"}}}"#;
    let gemini = r#"{"id":"x","timestamp":"2026-12-01T13:50:13.508Z","type":"error","content":"[API Error: {\"error\":{\"code\":400}}]"}"#;
    assert_eq!(marker(Agent::ClaudeCode, claude), Some("api_error_message"));
    assert_eq!(marker(Agent::Codex, codex), Some("task_complete_error"));
    assert_eq!(marker(Agent::GeminiCli, gemini), Some("error_message"));
    let Entry::Marker(m) = classify(Agent::Codex, codex.as_bytes()) else {
        panic!("not a marker");
    };
    assert_eq!(
        m.event,
        Event::StopFailed {
            error_type: Some("other".into()),
            message: Some("scripted failure".into()),
            turn_id: Some(crate::event::TurnId::Text("t2".into())),
        }
    );
}

#[test]
fn a_completed_task_and_the_failure_notice_that_follows_an_error_are_not_markers() {
    let done = r#"{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok","error":null}}"#;
    let done_without = r#"{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1"}}"#;
    let notice = r#"{"type":"info","content":"This request failed. Press F12 for diagnostics."}"#;
    let sidechain = r#"{"type":"assistant","isSidechain":true,"isApiErrorMessage":true,"message":{"content":[{"type":"text","text":"API Error"}]}}"#;
    assert_eq!(classify(Agent::Codex, done.as_bytes()), Entry::Ignored);
    assert_eq!(
        classify(Agent::Codex, done_without.as_bytes()),
        Entry::Ignored
    );
    assert_eq!(
        classify(Agent::GeminiCli, notice.as_bytes()),
        Entry::Ignored
    );
    assert_eq!(
        classify(Agent::ClaudeCode, sidechain.as_bytes()),
        Entry::Ignored
    );
}

#[test]
fn qwen_code_api_error_and_a_refused_call_are_markers() {
    let error = r#"{"type":"system","subtype":"ui_telemetry","timestamp":"2026-12-01T23:14:34.359Z","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_error","error_message":"400 mock model: scripted failure","error_type":"BadRequestError","status_code":400}}}"#;
    let retried = error.replace("\"status_code\":400", "\"status_code\":429");
    let refused = r#"{"type":"tool_result","timestamp":"2026-12-01T23:10:41.797Z","message":{"role":"user","parts":[{"functionResponse":{"id":"call_q_r","name":"run_shell_command","response":{"error":"[Operation Cancelled] Reason: User did not allow tool call"}}}]}}"#;
    let escaped = refused.replace(
        "User did not allow tool call",
        "The tool had already completed",
    );
    assert_eq!(marker(Agent::QwenCode, error), Some("api_error"));
    assert_eq!(
        marker(Agent::QwenCode, refused),
        Some("tool_call_not_allowed")
    );
    assert_eq!(
        classify(Agent::QwenCode, retried.as_bytes()),
        Entry::Ignored
    );
    assert_eq!(
        classify(Agent::QwenCode, escaped.as_bytes()),
        Entry::Ignored
    );
}

#[test]
fn kimi_code_wire_turn_ends_and_a_blocked_prompt_are_markers_timed_by_their_millis() {
    // Lines as Kimi Code 2.1.0 writes them (kimi-code-2.1.0-wire-* recordings).
    let cancelled = r#"{"type":"turn.ended","agentId":"main","turnId":1,"reason":"cancelled","durationMs":9264,"time":1796171745762}"#;
    let completed = r#"{"type":"turn.ended","agentId":"main","turnId":0,"reason":"completed","durationMs":3344,"time":1796171859466}"#;
    let blocked = r#"{"type":"prompt.completed","agentId":"main","promptId":"msg_1","finishedAt":"2026-12-02T00:35:53.822Z","reason":"blocked","time":1796171753822}"#;
    let step_end = r#"{"turnId":0,"outcome":"done","type":"agent.turn.ended","time":1796171857600,"kind":"event"}"#;
    let done = r#"{"type":"prompt.completed","agentId":"main","promptId":"msg_2","reason":"completed","time":1796171859552}"#;
    assert_eq!(marker(Agent::KimiCode, cancelled), Some("turn_cancelled"));
    assert_eq!(marker(Agent::KimiCode, completed), Some("turn_completed"));
    assert_eq!(marker(Agent::KimiCode, blocked), Some("prompt_blocked"));
    assert_eq!(
        classify(Agent::KimiCode, step_end.as_bytes()),
        Entry::Ignored
    );
    assert_eq!(classify(Agent::KimiCode, done.as_bytes()), Entry::Ignored);
    let Entry::Marker(m) = classify(Agent::KimiCode, cancelled.as_bytes()) else {
        panic!("not a marker");
    };
    assert_eq!(
        m.event,
        Event::Interrupted {
            turn_id: Some(crate::event::TurnId::Int(1)),
            reason: Some("cancelled".into())
        }
    );
    assert_eq!(m.at, Some(Timestamp::from_millis(1_796_171_745_762)));
    assert_eq!(
        entry_time(step_end.as_bytes()),
        Some(Timestamp::from_millis(1_796_171_857_600))
    );
    // Kimi CLI 1.x still writes nothing hooktrack follows.
    assert_eq!(
        classify(Agent::KimiCli, cancelled.as_bytes()),
        Entry::NotFollowed
    );
}

#[test]
fn copilot_rejected_call_end_is_a_marker_and_other_call_ends_are_not() {
    let denied = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_r","turnId":"0","success":false,"error":{"message":"The user rejected this tool call.","code":"denied"}},"timestamp":"2026-12-02T01:45:18.806Z"}"#;
    let done = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_t","turnId":"0","success":true,"result":{"content":"ok"}},"timestamp":"2026-12-02T01:45:06.503Z"}"#;
    let failed = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_v","success":false,"error":{"message":"no such file","code":"failure"}}}"#;
    let Entry::Marker(m) = classify(Agent::CopilotCli, denied.as_bytes()) else {
        panic!("not a marker");
    };
    assert_eq!(m.name, "tool_denied");
    assert!(
        matches!(m.event, Event::ToolFailed { ref tool, interrupt: false, .. }
            if tool.call_id.as_deref() == Some("call_c_r") && tool.name.is_none())
    );
    assert_eq!(classify(Agent::CopilotCli, done.as_bytes()), Entry::Ignored);
    assert_eq!(
        classify(Agent::CopilotCli, failed.as_bytes()),
        Entry::Ignored
    );
}
