//! Claude Code: `UserPromptSubmit` … `Stop` delimit a turn (no turn id); tool calls carry
//! `tool_use_id`; events inside a subagent carry `agent_id`; `PermissionRequest` names no
//! call; the only interrupt trace is `PostToolUseFailure.is_interrupt`.

use std::borrow::Cow;

use serde::Deserialize;

use crate::event::{Decision, Event, OriginKind, ToolRef, TurnId};
use crate::payload::Payload;

/// How a prompt Claude Code sends itself when background work finished begins (2.1.33x:
/// a `UserPromptSubmit` nobody typed).
const TASK_NOTIFICATION: &str = "<task-notification>";

/// Which field of a Claude-shaped payload names its tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallField {
    /// `tool_use_id` (Claude Code).
    ToolUseId,
    /// `tool_call_id` (Letta Code).
    ToolCallId,
    /// None: calls are paired by name and input (Auggie, Gemini CLI).
    Absent,
}

/// The tool call a Claude-shaped payload names, taken out of it: `tool_name`, the hash of
/// `tool_input`, the call id where `call_id` says; `agent` is the subagent it ran in.
pub fn tool<'a>(
    p: &mut Payload<'a>,
    call_id: CallField,
    agent: Option<Cow<'a, str>>,
) -> ToolRef<'a> {
    ToolRef {
        call_id: match call_id {
            CallField::ToolUseId => p.tool_use_id.take(),
            CallField::ToolCallId => p.tool_call_id.take(),
            CallField::Absent => None,
        },
        name: p.tool_name.take(),
        input_hash: p.tool_input_hash(),
        argument: None,
        agent,
    }
}

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let error = match name.as_ref() {
        "PostToolUseFailure" | "StopFailure" => {
            p.error_summary().map(|e| Cow::Owned(e.into_owned()))
        }
        _ => None,
    };
    let agent = p.agent_id.take();
    let call = |p: &mut Payload<'a>, agent| tool(p, CallField::ToolUseId, agent);
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted {
            source: p.source.take(),
        },
        "SessionEnd" => Event::SessionEnded {
            reason: p.reason.take(),
        },
        // Every event of a user turn carries the same `prompt_id`: the turn's identity.
        "UserPromptSubmit" => {
            let text = p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed(""));
            let turn_id = p.prompt_id.take().map(|id| TurnId::Text(id.into_owned()));
            if agent.is_none() && text.trim_start().starts_with(TASK_NOTIFICATION) {
                // The agent reports finished background work in a turn of its own.
                return Event::TurnStarted {
                    turn_id,
                    origin: OriginKind::Task,
                    origin_name: task_id(&text).map(|id| Cow::Owned(id.to_owned())),
                };
            }
            Event::PromptSubmitted {
                text,
                steer: false,
                turn_id,
                agent,
            }
        }
        "PreToolUse" => Event::ToolStarted {
            tool: call(p, agent),
        },
        "PostToolUse" => Event::ToolFinished {
            tool: call(p, agent),
        },
        "PostToolUseFailure" => Event::ToolFailed {
            interrupt: p.is_interrupt.unwrap_or(false),
            tool: call(p, agent),
            error,
        },
        "PermissionRequest" => Event::PermissionRequested {
            tool: call(p, agent),
            approval_id: None,
            turn_id: None,
        },
        // Documented but never observed (not even for denials): taken at its word.
        "PermissionDenied" => Event::PermissionResolved {
            tool: call(p, agent),
            approval_id: None,
            decision: Decision::Rejected,
        },
        "Stop" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
            turn_id: p.prompt_id.take().map(|id| TurnId::Text(id.into_owned())),
            background_tasks: p.background_tasks.and_then(running_shell_tasks),
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
        // A dialog that may fire no `PermissionRequest` (2.1.33x auto mode behind a custom
        // endpoint: only `agent_needs_input`). `permission_prompt` arrives seconds after a
        // `PermissionRequest`, or not at all: the correlator lets it block only where no
        // request did.
        "Notification"
            if matches!(
                p.notification_type.as_deref(),
                Some("agent_needs_input" | "elicitation_dialog" | "permission_prompt")
            ) =>
        {
            Event::InputRequested {
                kind: p.notification_type.take(),
                agent,
            }
        }
        "Notification" => Event::Notification {
            kind: p.notification_type.take(),
            severity: None,
            turn_id: p.prompt_id.take().map(|id| TurnId::Text(id.into_owned())),
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

/// The id a task notification names (`<task-id>ID</task-id>`), if it names one.
fn task_id(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("<task-id>")?;
    let (id, _) = rest.split_once("</task-id>")?;
    Some(id.trim()).filter(|id| !id.is_empty())
}

/// One entry of `Stop.background_tasks`.
#[derive(Deserialize)]
struct BackgroundTask {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    status: Option<String>,
}

/// The ids of the shell tasks a `Stop` lists as running. Subagents are listed too, but
/// they are tracked as scopes. A list of another shape says nothing (`None`).
fn running_shell_tasks(raw: &serde_json::value::RawValue) -> Option<Vec<String>> {
    let tasks: Vec<BackgroundTask> = serde_json::from_str(raw.get()).ok()?;
    Some(
        tasks
            .into_iter()
            .filter(|t| t.status.as_deref().is_none_or(|s| s == "running"))
            .filter(|t| !t.kind.as_deref().is_some_and(|k| k.contains("agent")))
            .map(|t| t.id.unwrap_or_default())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{running_shell_tasks, task_id};

    #[test]
    fn a_task_notification_names_its_task() {
        let text = "<task-notification>\n<task-id>b4ww8kk6c</task-id>\n<status>completed</status>";
        assert_eq!(task_id(text), Some("b4ww8kk6c"));
        assert_eq!(task_id("<task-notification>"), None);
    }

    #[test]
    fn stop_lists_running_shell_tasks_only() {
        let raw = serde_json::value::RawValue::from_string(
            r#"[{"id":"b1","type":"shell","status":"running"},{"id":"a1","type":"local_agent","status":"running"},{"id":"b2","type":"shell","status":"completed"}]"#.into(),
        );
        let raw = raw.ok();
        let tasks = raw.as_deref().and_then(running_shell_tasks);
        assert_eq!(tasks, Some(vec!["b1".to_owned()]));
    }
}
