//! OpenCode's bus events, as hooktrack's plugin forwards them: `{hook_event_name,
//! session_id, agent_id?, properties}`, where `properties` holds the fields of the bus
//! event's that [`Properties`] reads (and `info.version`, Kilo's detection's), `session_id` the root of the session's tree and `agent_id` the child session's own id
//! when the event is a subagent's (the plugin keeps the `parentID` of every session it saw
//! created: a stateless adapter could not tell a child's events from the root's).
//!
//! The plugin forwards a `session.status` only when it changes and a tool part only when
//! its state changes (OpenCode repeats both many times a turn), so `busy` is a turn's
//! start and `idle` its end; `session.error` before the `idle` says how it ended.

use std::borrow::Cow;

use serde::Deserialize;

use crate::event::{Decision, Event, ToolRef};
use crate::payload::Payload;

/// The parts of an event's `properties` hooktrack reads.
#[derive(Debug, Default, Deserialize)]
struct Properties {
    status: Option<Status>,
    part: Option<Part>,
    error: Option<Failure>,
    /// `permission.asked` / `question.asked`: the request's id.
    id: Option<String>,
    /// `permission.replied` / `question.replied`: the request answered.
    #[serde(rename = "requestID")]
    request_id: Option<String>,
    /// `permission.replied`: `once`, `always` or `reject`.
    reply: Option<String>,
    /// `permission.asked`: what is asked for (`bash`, `edit`, `external_directory`).
    permission: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Status {
    #[serde(rename = "type")]
    kind: Option<String>,
    /// `retry`: which attempt comes next.
    attempt: Option<u64>,
    /// The plugin's, on the root session's `idle`: the run, created with no one to ask,
    /// rejected a permission by itself since its last `idle`.
    #[serde(rename = "autoRejected", default)]
    auto_rejected: bool,
}

#[derive(Debug, Default, Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(rename = "callID")]
    call_id: Option<String>,
    tool: Option<String>,
    state: Option<ToolState>,
    /// The plugin's: the part's root session was created with no one to ask (its rules
    /// deny the `question` tool, as `opencode run` and `kilo run` create it without
    /// `--interactive`), so the agent answers every permission itself.
    #[serde(default)]
    unattended: bool,
}

#[derive(Debug, Default, Deserialize)]
struct ToolState {
    status: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Failure {
    name: Option<String>,
    data: Option<FailureData>,
}

#[derive(Debug, Default, Deserialize)]
struct FailureData {
    message: Option<String>,
}

/// The error texts of a tool part that ends the turn by the user's hand: cut off by
/// Escape, refused a permission, or a `question` dismissed (OpenCode 1.18 stops the turn
/// after a rejection or a dismissal, the model is not asked again; `opencode run` prints
/// the text as an error).
const ENDED_BY_USER: [&str; 3] = [
    "Tool execution aborted",
    PERMISSION_REJECTED,
    "The user dismissed this question",
];

/// The error text of a tool part whose permission was rejected (by the user, or by a
/// headless run itself).
const PERMISSION_REJECTED: &str = "The user rejected permission to use this specific tool call.";

/// One forwarded bus event as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    // A `properties` that does not parse reads as empty: the event's name still counts.
    let props: Properties = p
        .properties
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let agent = p.agent_id.take();
    let owned = |s: Option<String>| s.map(Cow::Owned);
    match name.as_ref() {
        "session.created" if agent.is_none() => Event::SessionStarted { source: None },
        "session.deleted" if agent.is_none() => Event::SessionEnded { reason: None },
        "session.status" => {
            let attempt = props.status.as_ref().and_then(|s| s.attempt);
            let auto_rejected = props.status.as_ref().is_some_and(|s| s.auto_rejected);
            let kind = props.status.and_then(|s| s.kind);
            match (kind.as_deref(), agent) {
                // A headless run rejects every permission asked with no one to ask, and
                // stops its turn after one (Kilo 7.7.7 prints "Error: run ended with an
                // auto-rejected permission" and exits 1, OpenCode 1.18.33 prints the
                // rejection as an error): the run failed, nobody interrupted it.
                (Some("idle"), None) if auto_rejected => Event::StopFailed {
                    error_type: Some(Cow::Borrowed("permission_auto_rejected")),
                    message: Some(Cow::Borrowed(
                        "the run rejected a permission by itself, with no one to ask",
                    )),
                    turn_id: None,
                },
                // The first `busy` after `idle`: a prompt was taken up (OpenCode's plugin
                // sees no prompt event of its own; the text is in `message.updated`).
                (Some("busy"), None) => Event::PromptSubmitted {
                    text: Cow::Borrowed(""),
                    steer: false,
                    turn_id: None,
                    agent: None,
                },
                (Some("idle"), None) => Event::Stopped {
                    stop_hook_active: false,
                    turn_id: None,
                    background_tasks: None,
                },
                // A child session (a `task` subagent) runs from its `busy` to its `idle`.
                (Some("busy"), Some(id)) => Event::SubagentStarted {
                    name: None,
                    agent_id: Some(id),
                },
                (Some("idle"), Some(id)) => Event::SubagentStopped {
                    name: None,
                    agent_id: Some(id),
                },
                // `retry`: the model call failed and is tried again after a wait; the
                // turn goes on (its next `busy` is no new prompt, an `idle` first is the
                // wait cancelled).
                (Some("retry"), None) => Event::Retrying { attempt },
                _ => Event::Activity { name: name.clone() },
            }
        }
        "session.error" if agent.is_none() => {
            let failure = props.error.unwrap_or_default();
            let message = owned(failure.data.and_then(|d| d.message));
            match failure.name.as_deref() {
                Some("MessageAbortedError") => Event::Interrupted {
                    turn_id: None,
                    reason: Some(Cow::Borrowed("aborted")),
                },
                _ => Event::StopFailed {
                    error_type: owned(failure.name),
                    message,
                    turn_id: None,
                },
            }
        }
        "message.part.updated" => {
            let part = props.part.unwrap_or_default();
            if part.kind.as_deref() != Some("tool") {
                return Event::Activity { name: name.clone() };
            }
            let state = part.state.unwrap_or_default();
            let tool = ToolRef {
                call_id: owned(part.call_id),
                name: owned(part.tool),
                input_hash: None,
                argument: None,
                agent,
            };
            match state.status.as_deref() {
                Some("running") => Event::ToolStarted { tool },
                Some("completed") => Event::ToolFinished { tool },
                // A call a headless run rejected by itself failed; nobody interrupted
                // it (the root's `idle` says how the run ended).
                Some("error") => {
                    let interrupt = state.error.as_deref().is_some_and(|e| {
                        ENDED_BY_USER.contains(&e) && !(part.unattended && e == PERMISSION_REJECTED)
                    });
                    Event::ToolFailed {
                        tool,
                        error: owned(state.error),
                        interrupt,
                    }
                }
                // `pending`: the call is being streamed, nothing runs yet.
                _ => Event::Activity { name: name.clone() },
            }
        }
        // The request names its call; the answer names only the request, so both are
        // keyed by the request's id.
        "permission.asked" => Event::PermissionRequested {
            tool: ToolRef {
                call_id: None,
                name: owned(props.permission),
                input_hash: None,
                argument: None,
                agent,
            },
            approval_id: owned(props.id),
            turn_id: None,
        },
        "permission.replied" => Event::PermissionResolved {
            tool: ToolRef {
                call_id: None,
                name: None,
                input_hash: None,
                argument: None,
                agent,
            },
            approval_id: owned(props.request_id),
            decision: match props.reply.as_deref() {
                Some("once" | "always") => Decision::Approved,
                Some("reject") => Decision::Rejected,
                _ => Decision::Other,
            },
        },
        // The `question` tool waits on the user's answer. OpenCode 1.18.33 asks just before
        // the call shows running, and the open call (an ask-the-user tool) keeps the turn
        // blocked from there until the answer or the dismissal ends it; the answer itself
        // says nothing the call's end does not.
        "question.asked" => Event::InputRequested {
            kind: Some(Cow::Borrowed("question")),
            agent,
        },
        "session.compacted" => Event::CompactionFinished { trigger: None },
        "session.created" | "session.deleted" | "session.error" | "question.replied"
        | "question.rejected" => Event::Activity { name: name.clone() },
        _ => Event::Unknown { name: name.clone() },
    }
}
