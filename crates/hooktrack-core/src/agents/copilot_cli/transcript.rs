//! GitHub Copilot CLI's session log (`~/.copilot/session-state/<sessionId>/events.jsonl`,
//! the `transcript_path` of `Stop`, `PreCompact` and `SubagentStart`).
//!
//! Markers, as Copilot 1.0.102 writes them (`{"type": ..., "data": {...}}` per line):
//! - `abort` with `data.reason` `user_abort` (Esc Esc while a tool runs) or
//!   `user_initiated` (Esc on a permission dialog): the turn was interrupted. No hook fires
//!   for either, and no `Stop` follows.
//! - `session.compaction_complete`: the compaction `PreCompact` announced is over, applied
//!   (`success` true) or failed (a failed model call: `success` false); no hook says so.
//! - `permission.completed` with `data.result.kind` `approved` ("Yes"),
//!   `denied-interactively-by-user` ("No" and the feedback typed after it, in
//!   `result.feedback`) or `cancelled` (Esc, after the `abort`), `data.requestId` and
//!   `data.toolCallId`: the dialog was answered. The only hook of the dialog is
//!   `Notification(permission_prompt)` when it opens; after "Yes" the next hook is the
//!   call's `PostToolUse` (as long as the call runs), after "No" the turn's `Stop` (no
//!   `PostToolUse` or `PostToolUseFailure` for the rejected call).
//! - `tool.execution_complete` with `success` false and `error.code` `denied`, named by
//!   `toolCallId` only (no tool name, no arguments): the call the user rejected ended,
//!   right after its `permission.completed`; the model goes on. No hook ends that call;
//!   the hooks carry no call id, so it is matched as the turn's only open call. Other
//!   completions are left to the hooks (`PostToolUse` / `PostToolUseFailure` end them
//!   before the log line).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{Decision, Event, ToolRef};

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
        "permission.completed" => {
            let data = data?;
            let kind = data
                .get("result")
                .and_then(|r| r.get("kind"))
                .and_then(Value::as_str);
            Some((
                "permission_completed",
                Event::PermissionResolved {
                    // Named by neither its call id (no hook carries one) nor its tool: the
                    // answer ends the dialog, which no hook opened a window for.
                    tool: ToolRef::default(),
                    approval_id: data
                        .get("requestId")
                        .and_then(Value::as_str)
                        .map(|id| Cow::Owned(id.to_owned())),
                    decision: match kind {
                        Some(k) if k.starts_with("denied") => Decision::Rejected,
                        Some(k) => Decision::parse(k),
                        None => Decision::Other,
                    },
                },
            ))
        }
        "tool.execution_complete" => {
            let data = data?;
            let error = data.get("error");
            let denied = data.get("success").and_then(Value::as_bool) == Some(false)
                && error.and_then(|e| e.get("code")).and_then(Value::as_str) == Some("denied");
            denied.then(|| {
                (
                    "tool_denied",
                    Event::ToolFailed {
                        tool: ToolRef {
                            call_id: data
                                .get("toolCallId")
                                .and_then(Value::as_str)
                                .map(|id| Cow::Owned(id.to_owned())),
                            ..ToolRef::default()
                        },
                        error: error
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .map(|m| Cow::Owned(m.to_owned())),
                        // The turn goes on: the model is told of the rejection and answers.
                        interrupt: false,
                    },
                )
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::event::Event;
    use crate::transcript::{Entry, classify};

    #[test]
    fn copilot_rejected_call_end_is_a_marker_and_other_call_ends_are_not() {
        let denied = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_r","turnId":"0","success":false,"error":{"message":"The user rejected this tool call.","code":"denied"}},"timestamp":"2026-12-02T01:45:18.806Z"}"#;
        let done = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_t","turnId":"0","success":true,"result":{"content":"ok"}},"timestamp":"2026-12-02T01:45:06.503Z"}"#;
        let failed = r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_c_v","success":false,"error":{"message":"no such file","code":"failure"}}}"#;
        let Entry::Marker(m) = classify(Agent::CopilotCli, denied.as_bytes()) else {
            panic!("not a marker");
        };
        assert_eq!(m.name, "tool_denied");
        assert!(
            matches!(m.event, Event::ToolFailed { ref tool, interrupt: false, .. }
                if tool.call_id.as_deref() == Some("call_c_r") && tool.name.is_none())
        );
        assert_eq!(classify(Agent::CopilotCli, done.as_bytes()), Entry::Ignored);
        assert_eq!(
            classify(Agent::CopilotCli, failed.as_bytes()),
            Entry::Ignored
        );
    }
}
