//! Letta Code's payloads: `{event_type, working_directory, ...}` plus the event's own
//! part: `prompt` (`UserPromptSubmit`), `tool_name`, `tool_input`, `tool_call_id` and
//! `tool_result` (`{status, output}`, `PostToolUse`), `error_message` and `error_type`
//! (`PostToolUseFailure`), `stop_reason` (`Stop`), `message` and `level`
//! (`Notification`).
//!
//! Seen in Letta Code 0.25.9 (docs/providers.md): a turn is `UserPromptSubmit` …
//! `Stop(stop_reason: end_turn)` then `Notification("Turn completed…", info)`; a call that
//! fails fires `PostToolUse(status: error)` and then `PostToolUseFailure` for the same
//! call; Escape during a call (the screen: "Interrupted by user") the same pair with
//! that text as the output, and nothing more; a failed model call
//! `Notification("Execution error", level: error)` and no `Stop`.

use std::borrow::Cow;

use serde::Deserialize;

use crate::agents::claude_code::adapter::{self as claude, CallField};
use crate::event::Event;
use crate::payload::Payload;

/// What Letta writes as a call's output when the user interrupted it (its
/// `INTERRUPTED_BY_USER`, the text its screen shows under the call).
const INTERRUPTED_BY_USER: &str = "Interrupted by user";

/// `PostToolUse`'s `tool_result`.
#[derive(Debug, Default, Deserialize)]
struct ToolResult {
    status: Option<String>,
    output: Option<String>,
}

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    // `agent_id` on Letta's events is the main agent's own id, not a subagent's: a call
    // named by it would open a subagent scope that never ends.
    p.agent_id = None;
    let tool = |p: &mut Payload<'a>| claude::tool(p, CallField::ToolCallId, None);
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted { source: None },
        "SessionEnd" => Event::SessionEnded { reason: None },
        "UserPromptSubmit" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: false,
            turn_id: None,
            agent: None,
        },
        "PreToolUse" => Event::ToolStarted { tool: tool(p) },
        "PostToolUse" => {
            let result: ToolResult = p
                .tool_result
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default();
            if result.status.as_deref() == Some("error") {
                let interrupt = result.output.as_deref() == Some(INTERRUPTED_BY_USER);
                Event::ToolFailed {
                    tool: tool(p),
                    error: result.output.map(Cow::Owned),
                    interrupt,
                }
            } else {
                Event::ToolFinished { tool: tool(p) }
            }
        }
        // Fired after `PostToolUse(status: error)` for the same call, which already
        // failed it.
        "PostToolUseFailure" => Event::Activity { name: name.clone() },
        // Fired at `end_turn` only (a cancelled or failed turn fires none).
        "Stop" => Event::Stopped {
            stop_hook_active: false,
            turn_id: None,
            background_tasks: None,
        },
        // "Execution error", "Stream error", "Processing error": the turn ended on an
        // error and no `Stop` follows.
        "Notification" if p.level.as_deref() == Some("error") => Event::StopFailed {
            error_type: p.level.take(),
            message: None,
            turn_id: None,
        },
        // "Turn completed, awaiting your input" after `Stop`; "Approval needed".
        "Notification" => Event::Notification {
            kind: None,
            severity: p.level.take(),
            turn_id: None,
        },
        _ => Event::Unknown { name: name.clone() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, json: &str) -> String {
        crate::agents::normalized(normalize, name, json)
    }

    /// As recorded from Letta Code 0.25.9: Escape's `PostToolUse` interrupts, a failed
    /// call fails without, a call that ran finishes, and the main agent's `agent_id` names
    /// no subagent.
    #[test]
    fn escape_interrupts_a_failed_call_fails_and_the_agent_id_names_no_subagent() {
        let escape = event(
            "PostToolUse",
            r#"{"event_type":"PostToolUse","tool_name":"Bash","tool_input":{"command":"sleep 30"},"tool_call_id":"call_s_0","tool_result":{"status":"error","output":"Interrupted by user"},"agent_id":"agent-local-1"}"#,
        );
        assert!(escape.starts_with("ToolFailed"), "{escape}");
        assert!(escape.contains("interrupt: true"), "{escape}");
        assert!(escape.contains("call_s_0"), "{escape}");
        assert!(escape.contains("agent: None"), "{escape}");
        let failed = event(
            "PostToolUse",
            r#"{"tool_name":"Write","tool_call_id":"call_t_1","tool_result":{"status":"error","output":"Write tool missing required parameter: file_path."}}"#,
        );
        assert!(failed.contains("interrupt: false"), "{failed}");
        let ran = event(
            "PostToolUse",
            r#"{"tool_name":"Bash","tool_call_id":"call_t_0","tool_result":{"status":"success","output":"hello\n"},"agent_id":"agent-local-1"}"#,
        );
        assert!(ran.starts_with("ToolFinished"), "{ran}");
        assert!(ran.contains("agent: None"), "{ran}");
        let after = event("PostToolUseFailure", r#"{"error_type":"tool_error"}"#);
        assert!(after.starts_with("Activity"), "{after}");
    }

    /// A failed model call's only trace is an error notification; the one after `Stop`
    /// says nothing about the turn.
    #[test]
    fn an_error_notification_fails_the_turn_and_an_info_one_does_not() {
        let error = event(
            "Notification",
            r#"{"message":"Execution error","level":"error"}"#,
        );
        assert!(error.starts_with("StopFailed"), "{error}");
        let info = event(
            "Notification",
            r#"{"message":"Turn completed, awaiting your input","level":"info"}"#,
        );
        assert!(info.starts_with("Notification"), "{info}");
        let stop = event("Stop", r#"{"stop_reason":"end_turn"}"#);
        assert!(stop.starts_with("Stopped"), "{stop}");
        let prompt = event(
            "UserPromptSubmit",
            r#"{"prompt":"hi","conversation_id":"c"}"#,
        );
        assert!(prompt.starts_with("PromptSubmitted"), "{prompt}");
    }
}
