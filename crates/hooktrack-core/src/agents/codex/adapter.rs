//! Codex CLI: Claude Code's hook shape (same event and field names, `tool_use_id`,
//! `agent_id` inside subagents, `PermissionRequest` without a call id), plus a string
//! `turn_id` on every turn event, a child `UserPromptSubmit` for each subagent, and an
//! `Interrupt` event that ends interrupted turns (also a declined approval).

use std::borrow::Cow;

use crate::agents::claude_code::adapter as claude;
use crate::event::Event;
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    let turn_id = p.turn_id.take().map(|t| t.0);
    if name == "Interrupt" {
        return Event::Interrupted {
            turn_id,
            reason: p.reason.take(),
        };
    }
    let mut event = claude::normalize(name, p);
    if let Event::PromptSubmitted { turn_id: t, .. }
    | Event::PermissionRequested { turn_id: t, .. }
    | Event::Stopped { turn_id: t, .. } = &mut event
    {
        *t = turn_id;
    }
    event
}
