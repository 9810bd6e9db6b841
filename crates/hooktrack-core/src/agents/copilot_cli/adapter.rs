//! GitHub Copilot CLI's Claude-style hooks: most payloads in Claude Code's snake_case
//! shape, so Claude Code's adapter reads them; the differences below were seen in 1.0.102.

use std::borrow::Cow;

use crate::agents::claude_code::adapter as claude;
use crate::event::{Event, OriginKind};
use crate::payload::Payload;

/// How a prompt Copilot sends itself begins when background work (an agent, a shell)
/// finished: a `UserPromptSubmit` nobody typed (its session log: `system.notification`).
const SYSTEM_NOTIFICATION: &str = "<system_notification>";

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    match name.as_ref() {
        // A subagent runs a turn of its own inside the `task` call: its `UserPromptSubmit`
        // and `Stop` carry its `agent_id`. Its `Stop` ends the subagent, not the user's
        // turn (`SubagentStop` follows it for the scope).
        "Stop" if p.agent_id.is_some() => Event::Activity { name: name.clone() },
        // That prompt opens the subagent's scope: `SubagentStart` comes in the native
        // camelCase without `hook_event_name`, so a log of bare payloads cannot name it.
        "UserPromptSubmit" if p.agent_id.is_some() => Event::SubagentStarted {
            name: p.agent_type.take(),
            agent_id: p.agent_id.take(),
        },
        "SubagentStart" => Event::Activity { name: name.clone() },
        // The agent reports finished background work in a turn of its own.
        "UserPromptSubmit"
            if p.prompt
                .as_ref()
                .is_some_and(|t| t.0.trim_start().starts_with(SYSTEM_NOTIFICATION)) =>
        {
            Event::TurnStarted {
                turn_id: None,
                origin: OriginKind::Task,
                origin_name: None,
            }
        }
        // The only failure hook: a model call that failed (`error_context: model_call`);
        // the TUI then waits for the next prompt, `-p` ends the session. No `Stop`
        // follows in either.
        "ErrorOccurred" if p.error_context.as_deref() == Some("model_call") => Event::StopFailed {
            error_type: None,
            message: p.error_summary().map(|e| Cow::Owned(e.into_owned())),
            turn_id: None,
        },
        // Fires for every call, also one the user is never asked about (`-p
        // --allow-all-tools`, an allowed command), and in the native camelCase: a dialog
        // is `Notification(permission_prompt)`, which follows it only when one opens.
        "PermissionRequest" => Event::Activity { name: name.clone() },
        "ErrorOccurred" => Event::Notification {
            kind: p.error_context.take(),
            severity: None,
            turn_id: None,
        },
        _ => claude::normalize(name, p),
    }
}
