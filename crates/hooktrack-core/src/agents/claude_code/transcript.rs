//! Claude Code's session transcript (`~/.claude/projects/<dir>/<session>.jsonl`).
//!
//! Markers, as Claude Code 2.1.197 writes them (recorded in
//! `corpus/claude-code/claude-code-2.1.197-interactive-escape-reject-transcript`):
//! - a `user` entry whose content is the text `[Request interrupted by user]`: Escape
//!   during the answer;
//! - a `user` entry `[Request interrupted by user for tool use]`: Escape during a tool
//!   (the entry has `interruptedMessageId`) or after a permission answered "No" (it has
//!   none);
//! - a `user` entry with a `tool_result` (`is_error`) and `toolUseResult` =
//!   `"User rejected tool use"`: the call ended, rejected (it precedes the interrupt entry
//!   in both cases).
//!
//! Every marker above carries `promptId`, the hooks' `prompt_id`: the turn it belongs to.
//!
//! A failed model call (recorded in `corpus/claude-code/claude-code-2.1.197-api-error-transcript`):
//! an `assistant` entry with `isApiErrorMessage: true` (and `error`, `apiErrorStatus`, the
//! text `API Error: …`), written just before the `StopFailure` hook, which also settles the
//! turn `known_failure`; the entry names no turn, its timestamp places it.
//!
//! Sidechain (subagent) entries are never markers.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Event, ToolRef, TurnId};
use crate::transcript::sole_text;

const INTERRUPTED: &str = "[Request interrupted by user]";
const INTERRUPTED_FOR_TOOL: &str = "[Request interrupted by user for tool use]";
const REJECTED: &str = "User rejected tool use";

/// One transcript entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    if entry.get("type").and_then(Value::as_str) == Some("assistant")
        && entry.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
    {
        let message = entry
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(sole_text)
            .map(|t| Cow::Owned(t.to_owned()));
        return Some((
            "api_error_message",
            Event::StopFailed {
                error_type: entry
                    .get("error")
                    .and_then(Value::as_str)
                    .map(|e| Cow::Owned(e.to_owned())),
                message,
                turn_id: None,
            },
        ));
    }
    if entry.get("type").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let turn_id = entry
        .get("promptId")
        .and_then(Value::as_str)
        .map(|id| TurnId::Text(id.to_owned()));
    let content = entry.get("message")?.get("content")?;
    if entry.get("toolUseResult").and_then(Value::as_str) == Some(REJECTED) {
        let call = content.as_array()?.iter().find(|part| {
            part.get("type").and_then(Value::as_str) == Some("tool_result")
                && part.get("is_error").and_then(Value::as_bool) == Some(true)
        })?;
        let call_id = call.get("tool_use_id").and_then(Value::as_str)?;
        return Some((
            "tool_use_rejected",
            Event::ToolFailed {
                tool: ToolRef {
                    call_id: Some(Cow::Owned(call_id.to_owned())),
                    ..ToolRef::default()
                },
                error: Some(Cow::Borrowed("the user rejected the tool use")),
                interrupt: false,
            },
        ));
    }
    let name = match sole_text(content)? {
        INTERRUPTED => "interrupted_by_user",
        INTERRUPTED_FOR_TOOL if entry.contains_key("interruptedMessageId") => {
            "interrupted_by_user_during_tool"
        }
        INTERRUPTED_FOR_TOOL => "interrupted_after_rejection",
        _ => return None,
    };
    Some((
        name,
        Event::Interrupted {
            turn_id,
            reason: Some(Cow::Borrowed(name)),
        },
    ))
}
