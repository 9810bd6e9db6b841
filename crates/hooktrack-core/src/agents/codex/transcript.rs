//! Codex's rollout (`$CODEX_HOME/sessions/<y>/<m>/<d>/rollout-*.jsonl`).
//!
//! Marker, as Codex 0.171.0 writes it (recorded in
//! `corpus/codex/codex-0.171.0-interactive-escape-reject-transcript`): an `event_msg`
//! whose payload is `{"type": "turn_aborted", "reason": "interrupted", "turn_id": …}`,
//! written for Escape during a tool, Escape during the answer and a declined approval.
//! Codex also fires its `Interrupt` hook for all three, which stays authoritative: the
//! marker names the same turn and finds it already ended.
//!
//! A failed model call (recorded in `corpus/codex/codex-0.171.0-api-error-transcript`):
//! an `event_msg` `{"type": "task_complete", "turn_id": …, "error": {"message": …,
//! "codex_error_info": …}}` — a `task_complete` with a non-null `error`. No hook fires for
//! it (no `Stop`), so this marker is the only signal; it settles that turn
//! `known_failure`. A `task_complete` without `error` is not a marker (only a `Stop` says
//! `success`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Event, TurnId};

/// One transcript entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("type").and_then(Value::as_str) != Some("event_msg") {
        return None;
    }
    let payload = entry.get("payload")?;
    let turn_id = payload
        .get("turn_id")
        .and_then(Value::as_str)
        .map(|id| TurnId::Text(id.to_owned()));
    if payload.get("type").and_then(Value::as_str) == Some("task_complete") {
        let error = payload.get("error").filter(|e| e.is_object())?;
        return Some((
            "task_complete_error",
            Event::StopFailed {
                error_type: error
                    .get("codex_error_info")
                    .and_then(Value::as_str)
                    .map(|e| Cow::Owned(e.to_owned())),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|m| Cow::Owned(m.to_owned())),
                turn_id,
            },
        ));
    }
    if payload.get("type").and_then(Value::as_str) != Some("turn_aborted")
        || payload.get("reason").and_then(Value::as_str) != Some("interrupted")
    {
        return None;
    }
    Some((
        "turn_aborted",
        Event::Interrupted {
            turn_id,
            reason: Some(Cow::Borrowed("turn_aborted: interrupted")),
        },
    ))
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::event::{Event, TurnId};
    use crate::transcript::tests_support::marker;
    use crate::transcript::{Entry, classify};

    #[test]
    fn codex_turn_aborted_other_than_interrupted_is_ignored() {
        let line = r#"{"timestamp":"2026-12-01T13:16:25.089Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}"#;
        let other = r#"{"type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"replaced"}}"#;
        assert_eq!(marker(Agent::Codex, line), Some("turn_aborted"));
        assert_eq!(classify(Agent::Codex, other.as_bytes()), Entry::Ignored);
    }

    #[test]
    fn a_failed_model_call_is_a_failure_marker_and_a_completed_task_is_not() {
        let codex = r#"{"timestamp":"2026-12-01T13:49:16.857Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":null,"error":{"message":"scripted failure","codex_error_info":"other"}}}"#;
        assert_eq!(marker(Agent::Codex, codex), Some("task_complete_error"));
        let Entry::Marker(m) = classify(Agent::Codex, codex.as_bytes()) else {
            panic!("not a marker");
        };
        assert_eq!(
            m.event,
            Event::StopFailed {
                error_type: Some("other".into()),
                message: Some("scripted failure".into()),
                turn_id: Some(TurnId::Text("t2".into())),
            }
        );
        let done = r#"{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok","error":null}}"#;
        let done_without =
            r#"{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1"}}"#;
        assert_eq!(classify(Agent::Codex, done.as_bytes()), Entry::Ignored);
        assert_eq!(
            classify(Agent::Codex, done_without.as_bytes()),
            Entry::Ignored
        );
    }
}
