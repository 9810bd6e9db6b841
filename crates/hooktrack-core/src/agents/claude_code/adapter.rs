//! Claude Code: `UserPromptSubmit` … `Stop` delimit a turn (no turn id); tool calls carry
//! `tool_use_id`; events inside a subagent carry `agent_id`; `PermissionRequest` names no
//! call; the only interrupt trace is `PostToolUseFailure.is_interrupt`.

use std::borrow::Cow;

use crate::event::{Decision, Event, ToolRef, TurnId};
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let input_hash = p.tool_input_hash();
    let error = match name.as_ref() {
        "PostToolUseFailure" | "StopFailure" => {
            p.error_summary().map(|e| Cow::Owned(e.into_owned()))
        }
        _ => None,
    };
    let agent = p.agent_id.take();
    let tool = |p: &mut Payload<'a>, agent: Option<Cow<'a, str>>| ToolRef {
        call_id: p.tool_use_id.take(),
        name: p.tool_name.take(),
        input_hash,
        agent,
    };
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted {
            source: p.source.take(),
        },
        "SessionEnd" => Event::SessionEnded {
            reason: p.reason.take(),
        },
        // Every event of a user turn carries the same `prompt_id`: the turn's identity.
        "UserPromptSubmit" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: false,
            turn_id: p.prompt_id.take().map(|id| TurnId::Text(id.into_owned())),
            agent,
        },
        "PreToolUse" => Event::ToolStarted {
            tool: tool(p, agent),
        },
        "PostToolUse" => Event::ToolFinished {
            tool: tool(p, agent),
        },
        "PostToolUseFailure" => Event::ToolFailed {
            interrupt: p.is_interrupt.unwrap_or(false),
            tool: tool(p, agent),
            error,
        },
        "PermissionRequest" => Event::PermissionRequested {
            tool: tool(p, agent),
            approval_id: None,
            turn_id: None,
        },
        // Documented but never observed (not even for denials): taken at its word.
        "PermissionDenied" => Event::PermissionResolved {
            tool: tool(p, agent),
            approval_id: None,
            decision: Decision::Rejected,
        },
        "Stop" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
            turn_id: p.prompt_id.take().map(|id| TurnId::Text(id.into_owned())),
        },
        "StopFailure" => Event::StopFailed {
            error_type: None,
            message: error,
            turn_id: None,
        },
        "SubagentStart" => Event::SubagentStarted {
            name: p.agent_type.take(),
            agent_id: agent,
        },
        "SubagentStop" => Event::SubagentStopped {
            name: p.agent_type.take(),
            agent_id: agent,
        },
        "PreCompact" => Event::CompactionStarted {
            trigger: p.trigger.take(),
        },
        "PostCompact" => Event::CompactionFinished {
            trigger: p.trigger.take(),
        },
        // `permission_prompt` arrives seconds after `PermissionRequest`, or not at all:
        // the request, not the notification, opens the blocked window.
        "Notification" => Event::Notification {
            kind: p.notification_type.take(),
            severity: None,
        },
        // A session fact: the turn's state does not change with the model.
        "PreModelSwitch" | "PostModelSwitch" => Event::ModelSwitched {
            from: p.from_model.take(),
            to: p.to_model.take(),
            done: name == "PostModelSwitch",
        },
        "PostToolBatch"
        | "DirectoryAdded"
        | "PreSkillShellCommand"
        | "MessageDisplay"
        | "TaskCreated"
        | "TaskCompleted"
        | "UserPromptExpansion"
        | "Setup"
        | "TeammateIdle"
        | "Elicitation"
        | "ElicitationResult"
        | "ConfigChange"
        | "InstructionsLoaded"
        | "CwdChanged"
        | "FileChanged"
        | "WorktreeCreate"
        | "WorktreeRemove" => Event::Activity { name: name.clone() },
        _ => Event::Unknown { name: name.clone() },
    }
}
