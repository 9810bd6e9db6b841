//! Kimi Code 2.x and Kimi CLI 1.x: the same event names (the 1.x set is a subset of the
//! 2.x set), the same field names. They differ in how turns are delimited, which is a
//! [`Capabilities`](crate::provider::Capabilities) matter, not a mapping one.

use std::borrow::Cow;

use crate::event::{Decision, Event, OriginKind, ToolRef};
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let error = match name.as_ref() {
        "PostToolUseFailure" => p.error_summary().map(|e| Cow::Owned(e.into_owned())),
        _ => None,
    };
    // Kimi always names its calls; the input is hashed only for a call without an id.
    let input_hash = match p.tool_call_id {
        Some(_) => None,
        None => p.tool_input_hash(),
    };
    let mut tool = || ToolRef {
        call_id: p.tool_call_id.take(),
        name: p.tool_name.take(),
        input_hash,
        argument: None,
        // Kimi's `agent_id` (on permission events only) names the agent, not a scope:
        // Kimi subagents are told apart by scope order.
        agent: None,
    };
    let turn_id = p.turn_id.take().map(|t| t.0);
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted {
            source: p.source.take(),
        },
        "SessionEnd" => Event::SessionEnded {
            reason: p.reason.take(),
        },
        "SessionHeartbeat" => Event::Heartbeat,
        "UserPromptSubmit" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: p.is_steer.unwrap_or(false),
            turn_id: None,
            agent: None,
        },
        "UserPromptQueued" => Event::PromptQueued {
            prompt_id: p.prompt_id.take(),
            queue_length: p.queue_length,
        },
        "TurnStarted" => Event::TurnStarted {
            turn_id,
            origin: match p.origin_kind.as_deref() {
                Some("user") | None => OriginKind::User,
                Some("system_trigger") => OriginKind::SystemTrigger,
                // Kimi starts this turn itself when background work finished: no prompt.
                Some("task") => OriginKind::Task,
                Some(_) => OriginKind::Other,
            },
            origin_name: p.origin_name.take(),
        },
        "PreToolUse" => Event::ToolStarted { tool: tool() },
        "PostToolUse" => Event::ToolFinished { tool: tool() },
        "PostToolUseFailure" => Event::ToolFailed {
            tool: tool(),
            error,
            interrupt: false,
        },
        "PermissionRequest" => Event::PermissionRequested {
            tool: tool(),
            approval_id: p.id.take(),
            turn_id,
        },
        "PermissionResult" => Event::PermissionResolved {
            tool: tool(),
            approval_id: p.id.take(),
            decision: p
                .decision
                .as_deref()
                .map(Decision::parse)
                .unwrap_or(Decision::Other),
        },
        "Stop" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
            turn_id: None,
            background_tasks: None,
        },
        "StopFailure" => Event::StopFailed {
            error_type: p.error_type.take(),
            message: p.error_message.take(),
            turn_id: None,
        },
        "Interrupt" => Event::Interrupted {
            turn_id,
            reason: p.reason.take(),
        },
        "SubagentStart" => Event::SubagentStarted {
            name: p.agent_name.take(),
            agent_id: None,
        },
        "SubagentStop" => Event::SubagentStopped {
            name: p.agent_name.take(),
            agent_id: None,
        },
        "TaskStarted" => Event::TaskStarted {
            task_id: p.task_id.take(),
            kind: p.kind.take(),
        },
        "PreCompact" => Event::CompactionStarted {
            trigger: p.trigger.take(),
        },
        "PostCompact" => Event::CompactionFinished {
            trigger: p.trigger.take(),
        },
        // Kimi Code 2.1.0 reports a background task's end to the model as a notification
        // that names it (`source_id`), with the turn it starts to tell about it. Kimi CLI
        // 1.x sends the same type naming nothing: a plain notification.
        "Notification"
            if p.notification_type.as_deref() == Some("task.completed")
                && p.source_id.is_some() =>
        {
            Event::TaskFinished {
                task_id: p.source_id.take(),
            }
        }
        "Notification" => Event::Notification {
            kind: p.notification_type.take(),
            severity: p.severity.take(),
            turn_id: None,
        },
        _ => Event::Unknown { name: name.clone() },
    }
}
