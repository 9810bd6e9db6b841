//! Gemini CLI: `BeforeAgent` … `AfterAgent` delimit a turn; `BeforeTool`/`AfterTool` carry
//! no call id (paired first-in-first-out by tool name and input); permission prompts are a
//! `Notification` of type `ToolPermission` with no answer event; `PreCompress(auto)` fires
//! before every model call and is not a compaction.

use std::borrow::Cow;

use crate::agents::claude_code::adapter::{self as claude, CallField};
use crate::event::{Event, ToolRef};
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let tool = |p: &mut Payload<'a>| claude::tool(p, CallField::Absent, None);
    match name.as_ref() {
        "SessionStart" => Event::SessionStarted {
            source: p.source.take(),
        },
        "SessionEnd" => Event::SessionEnded {
            reason: p.reason.take(),
        },
        "BeforeAgent" => Event::PromptSubmitted {
            text: p.prompt.take().map(|t| t.0).unwrap_or(Cow::Borrowed("")),
            steer: false,
            turn_id: None,
            agent: None,
        },
        "AfterAgent" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
            turn_id: None,
            background_tasks: None,
        },
        "BeforeTool" => Event::ToolStarted { tool: tool(p) },
        // Failures are ordinary AfterTool events (the error is text inside the response).
        "AfterTool" => Event::ToolFinished { tool: tool(p) },
        "Notification" if p.notification_type.as_deref() == Some("ToolPermission") => {
            Event::PermissionRequested {
                tool: ToolRef::default(),
                approval_id: None,
                turn_id: None,
            }
        }
        "Notification" => Event::Notification {
            kind: p.notification_type.take(),
            severity: None,
            turn_id: None,
        },
        "PreCompress" if p.trigger.as_deref() == Some("auto") => {
            Event::Activity { name: name.clone() }
        }
        "PreCompress" => Event::CompactionStarted {
            trigger: p.trigger.take(),
        },
        "BeforeModel" | "AfterModel" | "BeforeToolSelection" => {
            Event::Activity { name: name.clone() }
        }
        _ => Event::Unknown { name: name.clone() },
    }
}
