//! Qwen Code's chat file (`~/.qwen/projects/<cwd-slug>/chats/<session>.jsonl`).
//!
//! Markers, as Qwen Code 0.24.4 writes them (recorded in
//! `corpus/qwen-code/qwen-code-0.24.4-api-error-headless-transcript` and
//! `corpus/qwen-code/qwen-code-0.24.4-interactive-resume-transcript`):
//! - a `system` entry of subtype `ui_telemetry` whose `uiEvent` is `qwen-code.api_error`
//!   with a `status_code` the client does not retry (a 4xx other than 408 and 429): the
//!   model call failed. In `-p` no hook follows it at all; in the TUI `StopFailure` does.
//!   It also follows a failed `/compress` outside any turn, where it ends nothing.
//! - a `tool_result` entry whose response error is `[Operation Cancelled] Reason: User did
//!   not allow tool call`: a permission answered "No", after which the turn stops (the
//!   hooks give only `PostToolBatch` and `Notification(idle_prompt)`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::Event;

const REJECTED: &str = "[Operation Cancelled] Reason: User did not allow tool call";

/// One chat-file entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    match entry.get("type").and_then(Value::as_str)? {
        "system" => api_error(entry),
        "tool_result" => rejected(entry),
        _ => None,
    }
}

fn api_error(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("subtype").and_then(Value::as_str) != Some("ui_telemetry") {
        return None;
    }
    let event = entry.get("systemPayload")?.get("uiEvent")?;
    if event.get("event.name").and_then(Value::as_str) != Some("qwen-code.api_error") {
        return None;
    }
    // A status the client retries may still be followed by an answer: only a final one
    // ends the turn.
    let status = event.get("status_code").and_then(Value::as_u64)?;
    if !(400..500).contains(&status) || status == 408 || status == 429 {
        return None;
    }
    let text = |key: &str| {
        event
            .get(key)
            .and_then(Value::as_str)
            .map(|t| Cow::Owned(t.to_owned()))
    };
    Some((
        "api_error",
        Event::StopFailed {
            error_type: text("error_type"),
            message: text("error_message"),
            turn_id: None,
        },
    ))
}

fn rejected(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    let parts = entry.get("message")?.get("parts")?.as_array()?;
    let refused = parts.iter().any(|part| {
        part.get("functionResponse")
            .and_then(|r| r.get("response"))
            .and_then(|r| r.get("error"))
            .and_then(Value::as_str)
            .is_some_and(|e| e.starts_with(REJECTED))
    });
    refused.then_some((
        "tool_call_not_allowed",
        Event::Interrupted {
            turn_id: None,
            reason: Some(Cow::Borrowed("tool_call_not_allowed")),
        },
    ))
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::transcript::tests_support::marker;
    use crate::transcript::{Entry, classify};

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
}
