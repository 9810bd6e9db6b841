//! Factory Droid's hooks: Claude Code's payload shape, read by Claude Code's adapter.
//! Its `Stop` ends every turn, also one the user interrupted or whose model call failed:
//! the session file tells those (`transcript.rs`).
//!
//! A `Task` subagent is a session of its own; the router names its rows as the caller's
//! subagent's (`agent_id`, see `sessions.rs`): its `SessionStart` opens the subagent's
//! scope, which is its nested turn, and the caller's `SubagentStop` (given that id by the
//! router) closes it. Its own prompt, `Stop` and `SessionEnd` are the subagent's, not the
//! caller's: activity.

use std::borrow::Cow;

use crate::agents::claude_code::adapter as claude;
use crate::event::Event;
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    match name.as_ref() {
        "SessionStart" if p.agent_id.is_some() => Event::SubagentStarted {
            name: None,
            agent_id: p.agent_id.take(),
        },
        "UserPromptSubmit" | "Stop" | "SessionEnd" if p.agent_id.is_some() => {
            Event::Activity { name: name.clone() }
        }
        _ => claude::normalize(name, p),
    }
}
