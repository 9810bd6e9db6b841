//! Factory Droid's session file (`~/.factory/sessions/<cwd-slug>/<session_id>.jsonl`, the
//! payloads' `transcript_path`).
//!
//! Markers, as Factory Droid 0.225.2 writes them, each just before the `Stop` hook that
//! ends the turn (whose `message_id` is the marker's `id`):
//! - a user-role `message` whose content is a `tool_result` with `is_error` and the
//!   content `Error: Tool execution cancelled by user`: Escape while the tool ran;
//!   `Tool execution cancelled by user` (no `Error:`): a permission dialog answered
//!   "No, cancel". Either way the turn stops there and only a plain `Stop` follows.
//! - a user-role `message` of `visibility` `user_only` whose text starts with `Error:` or
//!   `BYOK Error:` (a custom model's endpoint): the model call failed; a plain `Stop`
//!   follows. The same for `The model repeatedly generated the same output…`: Droid
//!   refused an answer that repeats itself (after one silent resample); its
//!   `agent_turn_outcome` says `error`.
//! - a user-role `message` of `visibility` `llm_only` whose text is `Request cancelled by
//!   user`: Escape while the answer streamed, no tool running. No `Stop` follows at all,
//!   only `Notification(idle_prompt)` ("Agent stopped by user and is waiting for input"),
//!   so without this marker the turn stays open until the next prompt.
//!
//! The file's own verdict, `agent_turn_outcome` (`reason` `completed`, `cancelled`,
//! `model_request_rejected`, `error`), has no timestamp and is written after the `Stop` hook has
//! run (before the `Notification` where no `Stop` comes): where it counts it comes after
//! the hook that settled the turn, so it is not read.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::Event;

/// Every marker line holds one of these.
pub(crate) const NEEDLES: &[&str] = &[
    "\"is_error\":true",
    "\"visibility\":\"user_only\"",
    "\"visibility\":\"llm_only\"",
];

const ESCAPED: &str = "Error: Tool execution cancelled by user";
const REJECTED: &str = "Tool execution cancelled by user";
/// How Droid's refusal of a model answer that repeats itself begins (0.225.2,
/// `LLMOutputDegenerationError`, not retried): the turn failed, a plain `Stop` follows.
const REPEATED: &str = "The model repeatedly generated the same output";
/// What the file tells the model after an Escape with no tool running.
const STREAM_CANCELLED: &str = "Request cancelled by user";

/// One session-file entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    let message = entry.get("message")?;
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    // Hook runs are user-role messages the user alone sees too: they name their event.
    if message.get("hookEventName").is_some() {
        return None;
    }
    let parts = message.get("content")?.as_array()?;
    let visibility = message.get("visibility").and_then(Value::as_str);
    let user_only = visibility == Some("user_only");
    let llm_only = visibility == Some("llm_only");
    parts
        .iter()
        .find_map(|part| match part.get("type")?.as_str()? {
            "tool_result" if part.get("is_error").and_then(Value::as_bool) == Some(true) => {
                let reason = match part.get("content")?.as_str()? {
                    ESCAPED => "user_cancelled",
                    REJECTED => "tool_call_not_allowed",
                    _ => return None,
                };
                Some((
                    reason,
                    Event::Interrupted {
                        turn_id: None,
                        reason: Some(Cow::Borrowed(reason)),
                    },
                ))
            }
            "text" if llm_only && part.get("text")?.as_str()? == STREAM_CANCELLED => Some((
                "request_cancelled",
                Event::Interrupted {
                    turn_id: None,
                    reason: Some(Cow::Borrowed("request_cancelled")),
                },
            )),
            // Every error Droid shows the user: a failed model call, and one of its own
            // refusals without an `Error:` (degenerate output: `REPEATED`).
            "text" if user_only => {
                let text = part.get("text")?.as_str()?;
                let bare = text.strip_prefix("BYOK ").unwrap_or(text);
                let error = match bare.strip_prefix("Error: ") {
                    Some(error) => error,
                    None if text.starts_with(REPEATED) => text,
                    None => return None,
                };
                Some((
                    "model_error",
                    Event::StopFailed {
                        error_type: None,
                        message: error.lines().next().map(|l| Cow::Owned(l.to_owned())),
                        turn_id: None,
                    },
                ))
            }
            _ => None,
        })
}
