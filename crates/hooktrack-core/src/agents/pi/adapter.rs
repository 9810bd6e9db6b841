//! Pi's extension events, as hooktrack's extension forwards them: `{hook_event_name,
//! session_id, properties}`, where `properties` holds the few fields of Pi's event
//! hooktrack reads (the extension drops the messages and tool outputs: they can be large
//! and say nothing about where the turn stands).
//!
//! `agent_start` … `agent_end` is one run of Pi's agent loop: a prompt's, or one Pi starts
//! itself to retry a failed call (`retry: true`, no prompt before it). A prompt typed
//! while the loop runs is taken up in the same run (`message_start`, after the running
//! prompt's `turn_end` when that prompt was answered). `agent_end` carries
//! the last assistant message's `stopReason` (`stop`, `length`, `toolUse`, `aborted`,
//! `error`) and `errorMessage`.

use std::borrow::Cow;

use serde::Deserialize;

use crate::event::{Event, OriginKind, ToolRef};
use crate::payload::Payload;

/// The parts of an event's `properties` hooktrack reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Properties {
    /// `session_start` (`startup`, `new`, `resume`, `fork`, `reload`) and
    /// `session_shutdown`.
    reason: Option<String>,
    /// `agent_end`: the last assistant message's.
    stop_reason: Option<String>,
    error_message: Option<String>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    is_error: Option<bool>,
    /// `agent_start`: no prompt started this run of the loop (the extension saw no
    /// `before_agent_start` since the last `agent_end`).
    retry: Option<bool>,
    /// `message_start` (a prompt typed while Pi worked, taken up in the running agent
    /// run): it came before the running prompt's answer (Pi's steer), so it joins it.
    steer: Option<bool>,
    /// `agent_end` with a retryable error Pi retries by itself after a wait: the attempt
    /// it waits to make (the extension counts them as Pi does).
    retry_attempt: Option<u64>,
}

/// One forwarded Pi event as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    // A `properties` that does not parse reads as empty: the event's name still counts.
    let props: Properties = p
        .properties
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let owned = |s: Option<String>| s.map(Cow::Owned);
    let tool = |props: Properties| ToolRef {
        call_id: owned(props.tool_call_id),
        name: owned(props.tool_name),
        input_hash: None,
        argument: None,
        agent: None,
    };
    match name.as_ref() {
        "session_start" => Event::SessionStarted {
            source: owned(props.reason),
        },
        "session_shutdown" => Event::SessionEnded {
            reason: owned(props.reason),
        },
        // Pi runs its loop again by itself to retry a failed model call (backing off
        // between tries): the waiting turn goes on (`correlate/retry.rs`); where no wait
        // was announced (a recording of an older extension), a turn nobody typed.
        "agent_start" if props.retry == Some(true) => Event::TurnStarted {
            turn_id: None,
            origin: OriginKind::SystemTrigger,
            origin_name: Some(Cow::Borrowed("retry")),
        },
        // The prompt's text stays in Pi (the extension forwards no `input`).
        "agent_start" => Event::PromptSubmitted {
            text: Cow::Borrowed(""),
            steer: false,
            turn_id: None,
            agent: None,
        },
        // Pi waits, then runs the loop again by itself ("Retrying (n/max) in Ns…"): the
        // turn goes on through the wait.
        "agent_end"
            if props.stop_reason.as_deref() == Some("error") && props.retry_attempt.is_some() =>
        {
            Event::Retrying {
                attempt: props.retry_attempt,
            }
        }
        // Forwarded only when a prompt comes while Pi waits to retry: the wait was
        // cancelled (Escape, "escape to cancel"), and the turn with it.
        "before_agent_start" => Event::Interrupted {
            turn_id: None,
            reason: Some(Cow::Borrowed("retry_cancelled")),
        },
        "agent_end" => match props.stop_reason.as_deref() {
            Some("aborted") => Event::Interrupted {
                turn_id: None,
                reason: Some(Cow::Borrowed("aborted")),
            },
            Some("error") => Event::StopFailed {
                error_type: Some(Cow::Borrowed("error")),
                message: owned(props.error_message),
                turn_id: None,
            },
            _ => Event::Stopped {
                stop_hook_active: false,
                turn_id: None,
                background_tasks: None,
            },
        },
        // Forwarded only before a prompt typed while Pi worked starts in the same run:
        // the running prompt's answer ended.
        "turn_end" => Event::Stopped {
            stop_hook_active: false,
            turn_id: None,
            background_tasks: None,
        },
        // A prompt typed while Pi worked, taken up in the running agent run: after the
        // running prompt's answer a turn of its own, before it (a steer) that turn's.
        "message_start" => Event::PromptSubmitted {
            text: Cow::Borrowed(""),
            steer: props.steer == Some(true),
            turn_id: None,
            agent: None,
        },
        "tool_execution_start" => Event::ToolStarted { tool: tool(props) },
        "tool_execution_end" if props.is_error == Some(true) => Event::ToolFailed {
            // Pi's result says only that it failed; Escape shows in `agent_end`.
            tool: tool(props),
            error: None,
            interrupt: false,
        },
        "tool_execution_end" => Event::ToolFinished { tool: tool(props) },
        "session_before_compact" => Event::CompactionStarted { trigger: None },
        "session_compact" => Event::CompactionFinished { trigger: None },
        _ => Event::Unknown { name: name.clone() },
    }
}
