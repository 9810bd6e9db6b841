//! Codex's rollout (`$CODEX_HOME/sessions/<y>/<m>/<d>/rollout-*.jsonl`).
//!
//! Marker, as Codex 0.171.0 writes it (recorded in
//! `corpus/codex/codex-0.171.0-interactive-escape-reject-transcript`): an `event_msg`
//! whose payload is `{"type": "turn_aborted", "reason": "interrupted", "turn_id": …}`,
//! written for Escape during a tool, Escape during the answer and a declined approval.
//! Codex also fires its `Interrupt` hook for all three, which stays authoritative: the
//! marker names the same turn and finds it already ended.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Event, TurnId};

pub(super) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    if entry.get("type").and_then(Value::as_str) != Some("event_msg") {
        return None;
    }
    let payload = entry.get("payload")?;
    if payload.get("type").and_then(Value::as_str) != Some("turn_aborted")
        || payload.get("reason").and_then(Value::as_str) != Some("interrupted")
    {
        return None;
    }
    let turn_id = payload
        .get("turn_id")
        .and_then(Value::as_str)
        .map(|id| TurnId::Text(id.to_owned()));
    Some((
        "turn_aborted",
        Event::Interrupted {
            turn_id,
            reason: Some(Cow::Borrowed("turn_aborted: interrupted")),
        },
    ))
}
