//! Gemini CLI's chat recording (`~/.gemini/tmp/<project>/chats/session-*.jsonl`): one
//! JSON object per line (messages, and `$set` updates of the session's metadata).
//!
//! Marker, as Gemini CLI 0.61.0 writes it (recorded in
//! `corpus/gemini-cli/gemini-cli-0.61.0-interactive-escape-reject-transcript`): a message
//! `{"type": "info", "content": "Request cancelled."}`, written for a permission answered
//! "No", for Escape during a tool and for Escape during the answer. The entry names no
//! turn; its timestamp places it.
//!
//! A failed model call (recorded in `corpus/gemini-cli/gemini-cli-0.61.0-api-error-transcript`):
//! a message `{"type": "error", "content": "[API Error: …]"}`, followed by an `info` entry
//! ("This request failed. …", not a marker) and then an `AfterAgent` hook with
//! `prompt_response` `"[no response text]"`. The error entry, placed before that
//! `AfterAgent` by its timestamp, settles the turn `known_failure`; the `AfterAgent` then
//! finds no open turn and cannot make the failure a `success`.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::Event;

const CANCELLED: &str = "Request cancelled.";

/// One transcript entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("type").and_then(Value::as_str) == Some("error") {
        let message = entry.get("content").and_then(Value::as_str)?;
        return Some((
            "error_message",
            Event::StopFailed {
                error_type: None,
                message: Some(Cow::Owned(message.to_owned())),
                turn_id: None,
            },
        ));
    }
    if entry.get("type").and_then(Value::as_str) != Some("info")
        || entry.get("content").and_then(Value::as_str) != Some(CANCELLED)
    {
        return None;
    }
    Some((
        "request_cancelled",
        Event::Interrupted {
            turn_id: None,
            reason: Some(Cow::Borrowed("request_cancelled")),
        },
    ))
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::transcript::tests_support::marker;
    use crate::transcript::{Entry, classify};

    #[test]
    fn gemini_request_cancelled_info_is_the_marker() {
        let line = r#"{"id":"x","timestamp":"2026-12-01T13:19:04.160Z","type":"info","content":"Request cancelled."}"#;
        assert_eq!(marker(Agent::GeminiCli, line), Some("request_cancelled"));
        assert_eq!(
            classify(Agent::GeminiCli, br#"{"$set":{"lastUpdated":"x"}}"#),
            Entry::Ignored
        );
        assert_eq!(classify(Agent::GeminiCli, b"not json"), Entry::Unreadable);
    }

    #[test]
    fn a_failed_model_call_is_an_error_marker_and_the_notice_after_it_is_not() {
        let gemini = r#"{"id":"x","timestamp":"2026-12-01T13:50:13.508Z","type":"error","content":"[API Error: {\"error\":{\"code\":400}}]"}"#;
        assert_eq!(marker(Agent::GeminiCli, gemini), Some("error_message"));
        let notice =
            r#"{"type":"info","content":"This request failed. Press F12 for diagnostics."}"#;
        assert_eq!(
            classify(Agent::GeminiCli, notice.as_bytes()),
            Entry::Ignored
        );
    }
}
