//! Auggie's hook payloads: `{hook_event_name, conversation_id, workspace_roots}` plus the
//! event's own part: `user_prompt` on `PromptSubmit`; `tool_name`, `tool_input`,
//! `tool_output`, `tool_error` on `PreToolUse` / `PostToolUse` (no call id);
//! `agent_stop_cause` and the whole exchange (`_exchange`) on `Stop`.
//!
//! Seen in Auggie 0.36.0: a prompt fires `PromptSubmit` (headless and in the TUI), its
//! answer `Stop` with `agent_stop_cause` `end_turn`; Escape while a command runs ends the
//! call with a `PostToolUse` whose `tool_error` says the operation was aborted, then `Stop`
//! with `interrupted`; a call the user denied ends with a `PostToolUse` whose `tool_error`
//! says so; a model call that failed fires no `Stop` at all.

use std::borrow::Cow;

use crate::agents::claude_code::adapter::{self as claude, CallField};
use crate::event::Event;
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let tool = |p: &mut Payload<'a>| claude::tool(p, CallField::Absent, None);
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted { source: None },
        "SessionEnd" => Event::SessionEnded { reason: None },
        "PromptSubmit" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: false,
            turn_id: None,
            agent: None,
        },
        "PreToolUse" => Event::ToolStarted { tool: tool(p) },
        // A failed command, an aborted one (Escape) and a denied one all carry
        // `tool_error`; `Stop(interrupted)` tells an Escape.
        "PostToolUse" => match p.tool_error.take() {
            Some(error) => Event::ToolFailed {
                tool: tool(p),
                error: Some(Cow::Owned(first_line(&error).to_owned())),
                interrupt: false,
            },
            None => Event::ToolFinished { tool: tool(p) },
        },
        "Stop" => stopped(p.agent_stop_cause.take()),
        // Sent with the type `info` and a message; no dialog fires it (a tool approval
        // fires nothing beyond its `PreToolUse`).
        "Notification" => Event::Notification {
            kind: p.notification_type.take(),
            severity: None,
            turn_id: None,
        },
        _ => Event::Unknown { name: name.clone() },
    }
}

/// `Stop` by its `agent_stop_cause` (Auggie's `end_turn`, `interrupted`,
/// `max_iterations`, `empty_completion`, `error`); a `Stop` without one is a plain stop.
fn stopped(cause: Option<Cow<'_, str>>) -> Event<'_> {
    match cause.as_deref() {
        Some("interrupted") => Event::Interrupted {
            turn_id: None,
            reason: cause,
        },
        // The loop gave up (its iteration limit), the model answered nothing, or the loop
        // failed: the turn did not do what was asked.
        Some("max_iterations" | "empty_completion" | "error") => Event::StopFailed {
            error_type: cause,
            message: None,
            turn_id: None,
        },
        _ => Event::Stopped {
            stop_hook_active: false,
            turn_id: None,
            background_tasks: None,
        },
    }
}

/// The first non-empty line of a tool's error that is not Auggie's preamble (`Here are
/// the results from executing the command.`, the return code's tags): what went wrong.
fn first_line(error: &str) -> &str {
    error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Here are the results") && !l.starts_with('<'))
        .find(|l| l.parse::<i64>().is_err())
        .unwrap_or_else(|| error.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, json: &str) -> String {
        crate::agents::normalized(normalize, name, json)
    }

    /// As recorded from Auggie 0.36.0: the stop causes of a plain turn and of an Escape.
    #[test]
    fn stop_reads_its_agent_stop_cause() {
        let done = event("Stop", r#"{"agent_stop_cause":"end_turn"}"#);
        assert!(done.starts_with("Stopped"), "{done}");
        let escape = event("Stop", r#"{"agent_stop_cause":"interrupted"}"#);
        assert!(
            escape.starts_with("Interrupted") && escape.contains("interrupted"),
            "{escape}"
        );
        for cause in ["max_iterations", "empty_completion", "error"] {
            let failed = event("Stop", &format!(r#"{{"agent_stop_cause":"{cause}"}}"#));
            assert!(
                failed.starts_with("StopFailed") && failed.contains(cause),
                "{failed}"
            );
        }
    }

    /// As recorded from Auggie 0.36.0: Escape's aborted command and a denied call carry
    /// `tool_error` (the aborted one wrapped in the command's result tags); a call that ran
    /// carries `null`.
    #[test]
    fn a_tool_error_fails_the_call_with_its_message() {
        let aborted = event(
            "PostToolUse",
            r#"{"tool_name":"launch-process","tool_input":{"command":"sleep 40"},"tool_error":"Here are the results from executing the command.\n<return-code>\n-1\n</return-code>\n<output>\n\nProcess error: The operation was aborted\n</output>"}"#,
        );
        assert!(
            aborted.starts_with("ToolFailed")
                && aborted.contains("Process error: The operation was aborted"),
            "{aborted}"
        );
        let denied = event(
            "PostToolUse",
            r#"{"tool_name":"launch-process","tool_input":{},"tool_error":"Tool execution denied by user: launch-process"}"#,
        );
        assert!(denied.contains("denied by user"), "{denied}");
        let ran = event(
            "PostToolUse",
            r#"{"tool_name":"view","tool_input":{"path":"notes.txt"},"tool_error":null}"#,
        );
        assert!(ran.starts_with("ToolFinished"), "{ran}");
    }

    #[test]
    fn prompt_submit_carries_the_prompt() {
        let prompt = event("PromptSubmit", r#"{"user_prompt":"Say hi."}"#);
        assert!(
            prompt.starts_with("PromptSubmitted") && prompt.contains("Say hi."),
            "{prompt}"
        );
    }
}
