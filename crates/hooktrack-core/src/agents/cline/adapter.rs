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
struct Call {
    id: Option<String>,
    name: Option<String>,
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

/// One hook file's event as a canonical event: by the file's name (the envelope's event),
/// or, for a bare payload without its envelope, by Cline's own `hookName`.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let tool = |call: Call| ToolRef {
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
        "TaskCancel" | "SessionShutdown" | "agent_abort" | "session_shutdown" => {
            Event::Interrupted {
                turn_id: None,
                reason: p.reason.take().or(Some(Cow::Borrowed("session_shutdown"))),
            }
        }
        "PreToolUse" | "tool_call" => Event::ToolStarted {
            tool: tool(part(p.tool_call)),
        },
        "PostToolUse" | "tool_result" => {
            let call: Call = part(p.tool_result);
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
