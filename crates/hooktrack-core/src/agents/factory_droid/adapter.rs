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
use crate::event::{Event, OriginKind};
use crate::payload::Payload;

/// How the prompt Droid sends itself when a background task finished begins (its
/// session file: a message of `visibility` `llm_only`, id `task-completion:…`).
const TASK_COMPLETED: &str = "Background task completed.";

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    match name.as_ref() {
        // A background subagent in the TUI starts its session twice, `startup` then
        // `resume` (0.225.2): the second is the same subagent going on.
        "SessionStart" if p.agent_id.is_some() && p.source.as_deref() == Some("resume") => {
            Event::Activity { name: name.clone() }
        }
        "SessionStart" if p.agent_id.is_some() => Event::SubagentStarted {
            name: None,
            agent_id: p.agent_id.take(),
        },
        "UserPromptSubmit" | "Stop" | "SessionEnd" if p.agent_id.is_some() => {
            Event::Activity { name: name.clone() }
        }
        "UserPromptSubmit" => {
            let report = p.prompt.as_ref().and_then(|t| {
                let text = t.0.trim_start();
                text.starts_with(TASK_COMPLETED).then(|| task_id(text))
            });
            match report {
                // The agent reports finished background work in a turn of its own.
                Some(task) => Event::TurnStarted {
                    turn_id: None,
                    origin: OriginKind::Task,
                    origin_name: task.map(|id| Cow::Owned(id.to_owned())),
                },
                None => claude::normalize(name, p),
            }
        }
        _ => claude::normalize(name, p),
    }
}

/// The task a completion report names (its `task_id: ID` line), if it names one.
fn task_id(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("task_id:"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::task_id;

    #[test]
    fn a_task_completion_report_names_its_task() {
        let text = "Background task completed.\ntask_id: f0e5573d\ntype: helper";
        assert_eq!(task_id(text), Some("f0e5573d"));
        assert_eq!(task_id("Background task completed."), None);
    }
}
