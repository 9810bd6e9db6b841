//! Qwen Code speaks Claude Code's hook dialect; two differences matter for turns.

use std::borrow::Cow;

use crate::agents::claude_code::adapter as claude;
use crate::event::Event;
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    match name.as_ref() {
        // After every tool batch Qwen Code fires `UserPromptSubmit` again with an empty
        // prompt and the turn's `prompt_id`: the same turn going on, not a new one (a user
        // cannot submit an empty prompt).
        "UserPromptSubmit" if p.prompt.as_ref().is_some_and(|t| t.0.is_empty()) => {
            Event::Activity { name: name.clone() }
        }
        // The turn that a finished background agent starts ends with a `Stop` carrying the
        // *next* prompt's `prompt_id`: the id names no turn hooktrack has seen.
        "Stop" => Event::Stopped {
            stop_hook_active: p.stop_hook_active.unwrap_or(false),
            turn_id: None,
            background_tasks: None,
        },
        "SessionDelete" | "TodoCreated" | "TodoCompleted" => Event::Activity { name: name.clone() },
        _ => claude::normalize(name, p),
    }
}
