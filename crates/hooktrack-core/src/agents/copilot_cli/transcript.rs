//! GitHub Copilot CLI's session log (`~/.copilot/session-state/<sessionId>/events.jsonl`,
//! the `transcript_path` of `Stop`, `PreCompact` and `SubagentStart`).
//!
//! Markers, as Copilot 1.0.102 writes them (`{"type": ..., "data": {...}}` per line):
//! - `abort` with `data.reason` `user_abort` (Esc Esc while a tool runs) or
//!   `user_initiated` (Esc on a permission dialog): the turn was interrupted. No hook fires
//!   for either, and no `Stop` follows.
//! - `session.compaction_complete`: the compaction `PreCompact` announced is over, applied
//!   (`success` true) or failed (a failed model call: `success` false); no hook says so.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::Event;

/// One session-log entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    let data = entry.get("data");
    match entry.get("type").and_then(Value::as_str)? {
        "abort" => Some((
            "abort",
            Event::Interrupted {
                turn_id: None,
                reason: data
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .map(|r| Cow::Owned(r.to_owned())),
            },
        )),
        "session.compaction_complete" => Some((
            "compaction_complete",
            Event::CompactionFinished {
                trigger: data
                    .and_then(|d| d.get("trigger"))
                    .and_then(Value::as_str)
                    .map(|t| Cow::Owned(t.to_owned())),
            },
        )),
        _ => None,
    }
}
