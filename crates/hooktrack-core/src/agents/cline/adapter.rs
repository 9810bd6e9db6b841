//! Cline's hook files' payloads: `{hookName, taskId, sessionContext, agent_id,
//! parent_agent_id, ...}` plus the event's own part: `tool_call` (`{id, name, input}`),
//! `tool_result` (`{id, name, output, error?}`), `turn` (`{status, outputText}`) on
//! `TaskComplete`, `error` (`{name, message}`) on `TaskError`.
//!
//! Seen in Cline 3.0.65: a prompt (headless or typed in the TUI) fires `TaskStart`, never
//! `UserPromptSubmit`; the answer `TaskComplete` with `turn.status` `completed`; a model
//! call that failed (after Cline's own retries) `TaskError`; Escape while the turn runs
//! `SessionShutdown`, after which the same session takes the next prompt.

use std::borrow::Cow;

use serde::Deserialize;

use crate::event::{Event, ToolRef};
use crate::payload::Payload;

/// `tool_call` and `tool_result`: the parts hooktrack reads.
#[derive(Debug, Default, Deserialize)]
struct Call<'a> {
    id: Option<String>,
    name: Option<String>,
    /// `tool_call` only: the call's input, handed on as the payload's `tool_input` (what
    /// the call acts on is read from it where a live reader asks: `Agent::normalize_with`).
    #[serde(borrow)]
    input: Option<&'a serde_json::value::RawValue>,
    /// `tool_result` only, when the tool failed.
    error: Option<serde_json::Value>,
}

/// `agent_end`'s `turn`.
#[derive(Debug, Default, Deserialize)]
struct Turn {
    status: Option<String>,
}

/// `agent_error`'s `error`.
#[derive(Debug, Default, Deserialize)]
struct Failure {
    message: Option<String>,
}

/// A raw part that does not parse reads as empty: the event's name still counts.
fn part<T: Default + for<'de> Deserialize<'de>>(raw: Option<&serde_json::value::RawValue>) -> T {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default()
}

/// The call part `raw` (`tool_call`, `tool_result`), borrowing its input from the line; a
/// part that does not parse reads as empty.
fn call(raw: Option<&serde_json::value::RawValue>) -> Call<'_> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default()
}

/// One hook file's event as a canonical event: by the file's name (the envelope's event),
/// or, for a bare payload without its envelope, by Cline's own `hookName`.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let tool = |call: Call| ToolRef {
        argument: None,
        call_id: call.id.map(Cow::Owned),
        name: call.name.map(Cow::Owned),
        input_hash: None,
        agent: None,
    };
    match name.as_ref() {
        // The prompt's text stays in Cline: no payload carries it.
        "TaskStart" | "TaskResume" | "agent_start" | "agent_resume" => Event::PromptSubmitted {
            text: Cow::Borrowed(""),
            steer: false,
            turn_id: None,
            agent: None,
        },
        "TaskComplete" | "agent_end" => match part::<Turn>(p.turn).status.as_deref() {
            Some("aborted") => Event::Interrupted {
                turn_id: None,
                reason: Some(Cow::Borrowed("aborted")),
            },
            _ => Event::Stopped {
                stop_hook_active: false,
                turn_id: None,
                background_tasks: None,
            },
        },
        "TaskError" | "agent_error" => Event::StopFailed {
            error_type: Some(Cow::Borrowed("error")),
            message: part::<Failure>(p.error).message.map(Cow::Owned),
            turn_id: None,
        },
        // Escape: Cline stops the running task and fires this; the session takes the next
        // prompt. Its process's end fires nothing.
        "TaskCancel" | "agent_abort" => Event::Interrupted {
            turn_id: None,
            reason: p.reason.take().or(Some(Cow::Borrowed("agent_abort"))),
        },
        "SessionShutdown" | "session_shutdown" => Event::Interrupted {
            turn_id: None,
            reason: p.reason.take().or(Some(Cow::Borrowed("session_shutdown"))),
        },
        "PreToolUse" | "tool_call" => {
            let started = call(p.tool_call);
            // Cline's input is nested in its call: where every agent's is read from.
            p.tool_input = started.input;
            Event::ToolStarted {
                tool: tool(started),
            }
        }
        "PostToolUse" | "tool_result" => {
            let call = self::call(p.tool_result);
            if call.error.is_some() {
                Event::ToolFailed {
                    tool: tool(call),
                    error: None,
                    interrupt: false,
                }
            } else {
                Event::ToolFinished { tool: tool(call) }
            }
        }
        _ => Event::Unknown { name: name.clone() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, json: &str) -> String {
        crate::agents::normalized(normalize, name, json)
    }

    /// The hook file's name and Cline's own `hookName` read the same.
    #[test]
    fn a_file_name_and_its_hook_name_map_alike() {
        for (file, own) in [
            ("TaskStart", "agent_start"),
            ("TaskComplete", "agent_end"),
            ("TaskError", "agent_error"),
            ("TaskCancel", "agent_abort"),
            ("SessionShutdown", "session_shutdown"),
            ("PreToolUse", "tool_call"),
            ("PostToolUse", "tool_result"),
        ] {
            assert_eq!(event(file, "{}"), event(own, "{}"), "{file}");
            assert!(!event(file, "{}").starts_with("Unknown"), "{file}");
        }
    }

    /// As recorded from Cline 3.0.65: a denied call's `tool_result` carries `error`, an
    /// Escape's `SessionShutdown` no reason, a failed model call's `error.message`.
    #[test]
    fn a_denied_call_fails_escape_interrupts_and_a_failure_keeps_its_message() {
        let denied = event(
            "PostToolUse",
            r#"{"tool_result":{"id":"call_l_1","name":"editor","error":"[object Object]"}}"#,
        );
        assert!(denied.starts_with("ToolFailed"), "{denied}");
        assert!(denied.contains("call_l_1"), "{denied}");
        let ran = event(
            "PostToolUse",
            r#"{"tool_result":{"id":"call_l_0","name":"run_commands","output":[]}}"#,
        );
        assert!(ran.starts_with("ToolFinished"), "{ran}");
        let escape = event("SessionShutdown", r#"{"hookName":"session_shutdown"}"#);
        assert!(
            escape.contains("Interrupted") && escape.contains("session_shutdown"),
            "{escape}"
        );
        let failed = event(
            "TaskError",
            r#"{"error":{"name":"Error","message":"mock model: scripted failure"}}"#,
        );
        assert!(
            failed.contains("StopFailed") && failed.contains("scripted failure"),
            "{failed}"
        );
        let aborted = event("TaskComplete", r#"{"turn":{"status":"aborted"}}"#);
        assert!(aborted.starts_with("Interrupted"), "{aborted}");
        let done = event("TaskComplete", r#"{"turn":{"status":"completed"}}"#);
        assert!(done.starts_with("Stopped"), "{done}");
    }
}
