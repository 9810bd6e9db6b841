//! Kimi Code's session file (`$KIMI_CODE_HOME/sessions/<workspace>/<session_id>/agents/main/
//! wire.jsonl`): every message, tool call and turn boundary of the main agent, one JSON
//! object per line with `type` and `time` (milliseconds since the epoch). The payloads name
//! no transcript: the session's directory is found from the payload's `session_id`.
//!
//! Markers, as Kimi Code 2.1.0 writes them (recorded in
//! `corpus/kimi-code/kimi-code-2.1.0-wire-*.transcripts/`):
//! - `{"type":"turn.ended","turnId":N,"reason":"cancelled"}`: Escape ended turn N (the
//!   `Interrupt` hook follows it by some milliseconds);
//! - `{"type":"turn.ended","turnId":N,"reason":"completed"}`: turn N's real end, also after
//!   a Stop hook that blocked and the continuation it caused (which fires no second `Stop`):
//!   it ends a continuation and nothing else (only a hook says `success`);
//! - `{"type":"prompt.completed","reason":"blocked"}`: a `UserPromptSubmit` hook blocked
//!   the prompt (no `turn.prompt` and no turn for it; the hooks fire nothing more).
//!
//! `agent.turn.started` / `agent.turn.ended` mark each step loop, a continuation's too
//! (an `agent.turn.ended` comes before the Stop hook that blocks): they are not a turn's
//! end and are ignored, like every other entry.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Event, TurnId};

/// What every marker line holds. JSON.stringify writes no space after a colon; the leading
/// quote keeps `"agent.turn.ended"` out.
pub(crate) const NEEDLES: &[&str] = &["\"turn.ended\"", "\"prompt.completed\""];

/// One wire entry as a known marker (its name and event), or `None`.
pub(crate) fn classify(entry: &Map<String, Value>) -> Option<(&'static str, Event<'static>)> {
    let kind = entry.get("type").and_then(Value::as_str)?;
    let reason = entry.get("reason").and_then(Value::as_str)?;
    let turn_id = entry.get("turnId").and_then(Value::as_i64).map(TurnId::Int);
    match (kind, reason) {
        ("turn.ended", "cancelled") => Some((
            "turn_cancelled",
            Event::Interrupted {
                turn_id,
                reason: Some(Cow::Borrowed("cancelled")),
            },
        )),
        ("turn.ended", "completed") => Some((
            "turn_completed",
            Event::Stopped {
                stop_hook_active: false,
                turn_id,
                background_tasks: None,
            },
        )),
        ("prompt.completed", "blocked") => Some((
            "prompt_blocked",
            Event::PromptBlocked {
                prompt_id: entry
                    .get("promptId")
                    .and_then(Value::as_str)
                    .map(|id| Cow::Owned(id.to_owned())),
            },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::event::{Event, TurnId};
    use crate::time::Timestamp;
    use crate::transcript::tests_support::marker;
    use crate::transcript::{Entry, classify, entry_time};

    #[test]
    fn kimi_code_wire_turn_ends_and_a_blocked_prompt_are_markers_timed_by_their_millis() {
        // Lines as Kimi Code 2.1.0 writes them (kimi-code-2.1.0-wire-* recordings).
        let cancelled = r#"{"type":"turn.ended","agentId":"main","turnId":1,"reason":"cancelled","durationMs":9264,"time":1796171745762}"#;
        let completed = r#"{"type":"turn.ended","agentId":"main","turnId":0,"reason":"completed","durationMs":3344,"time":1796171859466}"#;
        let blocked = r#"{"type":"prompt.completed","agentId":"main","promptId":"msg_1","finishedAt":"2026-12-02T00:35:53.822Z","reason":"blocked","time":1796171753822}"#;
        let step_end = r#"{"turnId":0,"outcome":"done","type":"agent.turn.ended","time":1796171857600,"kind":"event"}"#;
        let done = r#"{"type":"prompt.completed","agentId":"main","promptId":"msg_2","reason":"completed","time":1796171859552}"#;
        assert_eq!(marker(Agent::KimiCode, cancelled), Some("turn_cancelled"));
        assert_eq!(marker(Agent::KimiCode, completed), Some("turn_completed"));
        assert_eq!(marker(Agent::KimiCode, blocked), Some("prompt_blocked"));
        assert_eq!(
            classify(Agent::KimiCode, step_end.as_bytes()),
            Entry::Ignored
        );
        assert_eq!(classify(Agent::KimiCode, done.as_bytes()), Entry::Ignored);
        let Entry::Marker(m) = classify(Agent::KimiCode, cancelled.as_bytes()) else {
            panic!("not a marker");
        };
        assert_eq!(
            m.event,
            Event::Interrupted {
                turn_id: Some(TurnId::Int(1)),
                reason: Some("cancelled".into())
            }
        );
        assert_eq!(m.at, Some(Timestamp::from_millis(1_796_171_745_762)));
        assert_eq!(
            entry_time(step_end.as_bytes()),
            Some(Timestamp::from_millis(1_796_171_857_600))
        );
    }
}
