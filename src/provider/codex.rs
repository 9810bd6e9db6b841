//! Codex CLI: a string `turn_id` on every event but the session ones; tool calls carry
//! `tool_use_id` (not `PermissionRequest`); subagent events carry `agent_id`, and a child's
//! `UserPromptSubmit` has one too; an `Interrupt` event ends interrupted turns (also a
//! declined approval).

use std::borrow::Cow;

use crate::event::{Event, ToolRef};
use crate::payload::Payload;

pub fn normalize<'a>(name: &Cow<'a, str>, mut p: Payload<'a>) -> Event<'a> {
    let input_hash = p.tool_input_hash();
    let agent = p.agent_id.take();
    let turn_id = p.turn_id.take().map(|t| t.0);
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
        "UserPromptSubmit" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: false,
            turn_id,
            agent,
        },
        "PreToolUse" => Event::ToolStarted {
            tool: tool(&mut p, agent),
        },
        "PostToolUse" => Event::ToolFinished {
            tool: tool(&mut p, agent),
        },
        "PermissionRequest" => Event::PermissionRequested {
            tool: tool(&mut p, agent),
            approval_id: None,
            turn_id,
        },
        "Stop" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
        },
        "Interrupt" => Event::Interrupted {
            turn_id,
            reason: p.reason.take(),
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
        _ => Event::Unknown { name: name.clone() },
    }
}
