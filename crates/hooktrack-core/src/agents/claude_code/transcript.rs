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
//! A turn the agent started itself (Claude Code 2.1.332, recorded in
//! `corpus/claude-code/claude-code-2.1.332-background-bash` and the two background-subagent
//! recordings): the `user` entry of its prompt has `turnOrigin: "task_notification"` (and
//! `promptSource: "system"`, `origin.kind: "task-notification"`); a typed prompt's has
//! `turnOrigin: "human"`. Its `promptId` is the hooks' `prompt_id`. Claude Code writes it
//! just before the `UserPromptSubmit` hook fires (`task_notification_turn`): it says whose
//! turn that is, never that one starts or ends.
//!
//! Sidechain (subagent) entries are never markers.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Event, OriginKind, ToolRef, TurnId};
use crate::transcript::sole_text;

/// What every marker line holds (the descriptor's `Transcript::needles`): the failure
/// flag, the rejection, the two interrupt texts (one prefix), the agent's own turn origin.
/// JSON.stringify writes these ASCII characters as they are, with no space after a colon.
pub(crate) const NEEDLES: &[&str] = &[
    "\"isApiErrorMessage\"",
    REJECTED,
    "[Request interrupted by user",
    "\"turnOrigin\":\"task_notification\"",
];

const INTERRUPTED: &str = "[Request interrupted by user]";
const INTERRUPTED_FOR_TOOL: &str = "[Request interrupted by user for tool use]";
const REJECTED: &str = "User rejected tool use";
/// `turnOrigin` of a prompt Claude Code sent itself to report finished background work.
const TASK_NOTIFICATION_ORIGIN: &str = "task_notification";

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
    if entry.get("turnOrigin").and_then(Value::as_str) == Some(TASK_NOTIFICATION_ORIGIN) {
        // Only the origin: the hook's prompt starts the turn; the correlator lets this
        // name the origin of the turn with the same id, and nothing else.
        return Some((
            "task_notification_turn",
            Event::TurnStarted {
                turn_id,
                origin: OriginKind::Task,
                origin_name: None,
            },
        ));
    }
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

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use crate::agent::Agent;
    use crate::event::{Event, OriginKind, TurnId};
    use crate::transcript::tests_support::marker;
    use crate::transcript::{Entry, classify as classify_line};

    /// Transcripts Claude Code really wrote (`corpus/claude-code/`): 2.1.197's Escape,
    /// rejection and API error, 2.1.332's rejection and Escape (with its ~43 KB lines) and
    /// its three task-notification turns.
    const RECORDED: [&str; 6] = [
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.197-interactive-escape-reject-transcript.transcripts/18559d3c-d569-4e36-9eb1-1c9e8c7b2124.jsonl"
        ),
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.197-api-error-transcript.transcripts/adc5ea24-d9ae-47e2-b462-4f7c1772ada3.jsonl"
        ),
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.332-reject-escape-transcript.transcripts/0fbbdf2f-a19a-4852-bf6c-1614a1d0e421.jsonl"
        ),
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.332-auto-dialog-background-subagent.transcripts/a1d85aa0-4647-4613-9cec-3ed262a3b73e.jsonl"
        ),
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.332-background-bash.transcripts/04631f27-6475-484e-bc9b-590dbe34160c.jsonl"
        ),
        include_str!(
            "../../../../../corpus/claude-code/claude-code-2.1.332-background-subagent-permission.transcripts/b5f026e2-6627-4dca-8e08-9c21cf3e1b0c.jsonl"
        ),
    ];

    #[test]
    fn the_byte_search_decides_as_the_parse_on_every_recorded_line() {
        let mut markers = 0;
        for text in RECORDED {
            for line in text.lines() {
                let parsed = serde_json::from_str::<Map<String, Value>>(line)
                    .ok()
                    .and_then(|e| super::classify(&e))
                    .map(|(name, _)| name);
                let fast = match classify_line(Agent::ClaudeCode, line.as_bytes()) {
                    Entry::Marker(m) => Some(m.name),
                    _ => None,
                };
                assert_eq!(parsed, fast, "{}", &line[..line.len().min(200)]);
                markers += usize::from(fast.is_some());
            }
        }
        // 2.1.197: an Escape during a tool and a rejection (two markers each), an Escape
        // during the answer, a failure; 2.1.332: a rejection and an Escape during a tool,
        // and one task-notification turn in each background recording.
        assert_eq!(markers, 4 + 1 + 1 + 4 + 3);
    }

    #[test]
    fn a_task_notification_prompt_entry_names_its_turn_and_a_typed_one_is_no_marker() {
        let mut found = Vec::new();
        for line in RECORDED[4].lines() {
            if let Entry::Marker(m) = classify_line(Agent::ClaudeCode, line.as_bytes()) {
                found.push((m.name, m.event));
            }
        }
        assert_eq!(
            found,
            [(
                "task_notification_turn",
                Event::TurnStarted {
                    turn_id: Some(TurnId::Text("e9fc3d66-5660-4b52-9e11-07f44a5eded2".into())),
                    origin: OriginKind::Task,
                    origin_name: None,
                }
            )],
            "background-bash: the typed prompt (turnOrigin human) is no marker"
        );
    }

    #[test]
    fn a_line_without_a_needle_is_ignored_and_a_broken_one_still_unreadable() {
        let big = format!(
            r#"{{"type":"api-request-shape","shape":"{}"}}"#,
            "x".repeat(43_000)
        );
        assert_eq!(
            classify_line(Agent::ClaudeCode, big.as_bytes()),
            Entry::Ignored
        );
        assert_eq!(
            classify_line(Agent::ClaudeCode, b"{not json"),
            Entry::Unreadable
        );
    }

    #[test]
    fn escape_during_tool_and_rejection_are_told_apart_by_interrupted_message_id() {
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
        let Entry::Marker(m) = classify_line(Agent::ClaudeCode, tool.as_bytes()) else {
            panic!("not a marker");
        };
        assert_eq!(
            m.event,
            Event::Interrupted {
                turn_id: Some(TurnId::Text("p1".into())),
                reason: Some("interrupted_by_user_during_tool".into())
            }
        );
        assert!(m.at.is_some());
    }

    #[test]
    fn user_text_that_merely_mentions_the_marker_is_ignored() {
        let prompt = r#"{"type":"user","message":{"role":"user","content":"why did it say [Request interrupted by user]?"}}"#;
        let sidechain = r#"{"type":"user","isSidechain":true,"message":{"role":"user","content":"[Request interrupted by user]"}}"#;
        assert_eq!(
            classify_line(Agent::ClaudeCode, prompt.as_bytes()),
            Entry::Ignored
        );
        assert_eq!(
            classify_line(Agent::ClaudeCode, sidechain.as_bytes()),
            Entry::Ignored
        );
    }

    #[test]
    fn rejected_tool_result_names_its_call() {
        let line = r#"{"type":"user","toolUseResult":"User rejected tool use","message":{"content":[{"type":"tool_result","is_error":true,"tool_use_id":"toolu_1","content":"The user doesn't want to proceed with this tool use."}]}}"#;
        let Entry::Marker(m) = classify_line(Agent::ClaudeCode, line.as_bytes()) else {
            panic!("not a marker");
        };
        assert!(
            matches!(m.event, Event::ToolFailed { ref tool, interrupt: false, .. } if tool.call_id.as_deref() == Some("toolu_1"))
        );
    }

    #[test]
    fn a_failed_model_call_is_an_api_error_marker() {
        let claude = r#"{"type":"assistant","timestamp":"2026-12-01T13:47:53.725Z","message":{"role":"assistant","content":[{"type":"text","text":"API Error: 400 mock model: scripted failure"}]},"error":"unknown","isApiErrorMessage":true,"apiErrorStatus":400}"#;
        assert_eq!(marker(Agent::ClaudeCode, claude), Some("api_error_message"));
        // A subagent's (sidechain) API error is not the main turn's.
        let sidechain = r#"{"type":"assistant","isSidechain":true,"isApiErrorMessage":true,"message":{"content":[{"type":"text","text":"API Error"}]}}"#;
        assert_eq!(
            classify_line(Agent::ClaudeCode, sidechain.as_bytes()),
            Entry::Ignored
        );
    }
}
