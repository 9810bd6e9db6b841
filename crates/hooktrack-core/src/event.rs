//! The canonical event vocabulary every provider maps into (contract section 3).
//!
//! Events borrow from the line they were parsed from; the correlator copies only what it
//! must keep (open call ids, bound turn ids).

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

/// A turn identifier: an integer in Kimi Code, a string in Codex.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum TurnId {
    Int(i64),
    Text(String),
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnId::Int(n) => write!(f, "{n}"),
            TurnId::Text(s) => f.write_str(s),
        }
    }
}

/// Who started a turn (`TurnStarted.origin_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginKind {
    User,
    SystemTrigger,
    /// A turn the agent starts by itself to report background work that finished (Kimi
    /// Code `origin_kind = task`, Claude Code's `<task-notification>` prompt): nobody typed
    /// it.
    Task,
    Other,
}

/// How a permission request was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Rejected,
    Cancelled,
    Error,
    Other,
}

impl Decision {
    pub fn parse(text: &str) -> Self {
        match text {
            "approved" | "approve" | "allow" => Decision::Approved,
            "rejected" | "reject" | "deny" | "denied" => Decision::Rejected,
            "cancelled" | "canceled" => Decision::Cancelled,
            "error" => Decision::Error,
            _ => Decision::Other,
        }
    }
}

/// A tool call as the payload names it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ToolRef<'a> {
    pub call_id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    /// A hash of the raw `tool_input` JSON text, to pair calls that carry no id (Gemini)
    /// and to match a permission request that names no call (Claude, Codex).
    pub input_hash: Option<u64>,
    /// What the call acts on, cut for a person's summary ([`crate::tool_argument`]): set
    /// on a call's start and a permission request, from the agent's table.
    pub argument: Option<String>,
    /// The subagent the call runs in (Claude and Codex `agent_id`); `None` in the main agent.
    pub agent: Option<Cow<'a, str>>,
}

/// One canonical event. Variants follow the Kimi Code event set, the reference mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'a> {
    SessionStarted {
        source: Option<Cow<'a, str>>,
    },
    SessionEnded {
        reason: Option<Cow<'a, str>>,
    },
    /// Presence only; never work evidence.
    Heartbeat,
    PromptSubmitted {
        text: Cow<'a, str>,
        steer: bool,
        /// The turn id the prompt already carries (Codex).
        turn_id: Option<TurnId>,
        /// The subagent the prompt was sent to (Codex child prompts); `None` for the main agent.
        agent: Option<Cow<'a, str>>,
    },
    /// Queue evidence only.
    /// A hook blocked the prompt: it starts no turn (a transcript marker: Kimi Code's
    /// hooks fire nothing more after a blocked prompt).
    PromptBlocked {
        prompt_id: Option<Cow<'a, str>>,
    },
    PromptQueued {
        prompt_id: Option<Cow<'a, str>>,
        queue_length: Option<u64>,
    },
    TurnStarted {
        turn_id: Option<TurnId>,
        origin: OriginKind,
        origin_name: Option<Cow<'a, str>>,
    },
    ToolStarted {
        tool: ToolRef<'a>,
    },
    ToolFinished {
        tool: ToolRef<'a>,
    },
    ToolFailed {
        tool: ToolRef<'a>,
        error: Option<Cow<'a, str>>,
        /// The user interrupted the call (Claude `is_interrupt`): the turn ends interrupted.
        interrupt: bool,
    },
    PermissionRequested {
        tool: ToolRef<'a>,
        approval_id: Option<Cow<'a, str>>,
        turn_id: Option<TurnId>,
    },
    PermissionResolved {
        tool: ToolRef<'a>,
        approval_id: Option<Cow<'a, str>>,
        decision: Decision,
    },
    Stopped {
        stop_hook_active: bool,
        /// The turn the Stop names (Codex `turn_id`, Claude `prompt_id`), where it says.
        turn_id: Option<TurnId>,
        /// The background shell tasks the Stop says are still running, by id (Claude Code
        /// `background_tasks`, subagents left out: they are scopes); `None` where it says
        /// nothing.
        background_tasks: Option<Vec<String>>,
    },
    StopFailed {
        error_type: Option<Cow<'a, str>>,
        message: Option<Cow<'a, str>>,
        /// The turn that failed, where the source names it (a Codex rollout's `turn_id`).
        turn_id: Option<TurnId>,
    },
    Interrupted {
        turn_id: Option<TurnId>,
        reason: Option<Cow<'a, str>>,
    },
    SubagentStarted {
        name: Option<Cow<'a, str>>,
        agent_id: Option<Cow<'a, str>>,
    },
    SubagentStopped {
        name: Option<Cow<'a, str>>,
        agent_id: Option<Cow<'a, str>>,
    },
    TaskStarted {
        task_id: Option<Cow<'a, str>>,
        kind: Option<Cow<'a, str>>,
    },
    /// A background task finished (Kimi Code `Notification(task.completed)`, naming the
    /// task `TaskStarted` announced).
    TaskFinished {
        task_id: Option<Cow<'a, str>>,
    },
    CompactionStarted {
        trigger: Option<Cow<'a, str>>,
    },
    CompactionFinished {
        trigger: Option<Cow<'a, str>>,
    },
    Notification {
        kind: Option<Cow<'a, str>>,
        severity: Option<Cow<'a, str>>,
        /// The turn it names, where the payload names one (Qwen Code's `prompt_id`).
        turn_id: Option<TurnId>,
    },
    /// A dialog waits on the user and no permission event says so (Claude Code's
    /// `Notification` of type `agent_needs_input`, `elicitation_dialog`, or a
    /// `permission_prompt` with no `PermissionRequest`): blocked until the next evidence of
    /// the agent it names going on.
    InputRequested {
        kind: Option<Cow<'a, str>>,
        /// The subagent whose dialog it is (`agent_id`); `None` for the main agent.
        agent: Option<Cow<'a, str>>,
    },
    /// A known event that says nothing about turn state (model calls, message display,
    /// tool batches, ...). Not counted as unknown.
    Activity {
        name: Cow<'a, str>,
    },
    /// The agent retries a failed model call by itself and waits before the next try
    /// (OpenCode's and Kilo's `session.status` `retry`, with its attempt; Pi's `agent_end`
    /// the extension marks with the attempt Pi will make): the turn goes on.
    Retrying {
        attempt: Option<u64>,
    },
    /// The session's model changes (Claude Code's `/model`): a fact about the session,
    /// not about a turn; `done` once the switch took effect (`PostModelSwitch`).
    ModelSwitched {
        from: Option<Cow<'a, str>>,
        to: Option<Cow<'a, str>>,
        done: bool,
    },
    /// The dialog the agent drew for the oldest window that waits on the user is no longer
    /// on its screen (source: screen): that window was answered. Never starts or ends a
    /// turn.
    DialogAnswered,
    /// The agent process ended (source: process). Nothing more can happen in its turn.
    ProcessEnded {
        pid: Option<u32>,
    },
    /// An event name the provider mapping does not know. Counted, never an error.
    Unknown {
        name: Cow<'a, str>,
    },
}

impl Event<'_> {
    /// The canonical name, used in outputs and docs.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::SessionEnded { .. } => "session_ended",
            Event::Heartbeat => "heartbeat",
            Event::PromptSubmitted { .. } => "prompt_submitted",
            Event::PromptBlocked { .. } => "prompt_blocked",
            Event::PromptQueued { .. } => "prompt_queued",
            Event::TurnStarted { .. } => "turn_started",
            Event::ToolStarted { .. } => "tool_started",
            Event::ToolFinished { .. } => "tool_finished",
            Event::ToolFailed { .. } => "tool_failed",
            Event::PermissionRequested { .. } => "permission_requested",
            Event::PermissionResolved { .. } => "permission_resolved",
            Event::Stopped { .. } => "stopped",
            Event::StopFailed { .. } => "stop_failed",
            Event::Interrupted { .. } => "interrupted",
            Event::SubagentStarted { .. } => "subagent_started",
            Event::SubagentStopped { .. } => "subagent_stopped",
            Event::TaskStarted { .. } => "task_started",
            Event::TaskFinished { .. } => "task_finished",
            Event::CompactionStarted { .. } => "compaction_started",
            Event::CompactionFinished { .. } => "compaction_finished",
            Event::Notification { .. } => "notification",
            Event::InputRequested { .. } => "input_requested",
            Event::Activity { .. } => "activity",
            Event::Retrying { .. } => "retrying",
            Event::ModelSwitched { .. } => "model_switched",
            Event::DialogAnswered => "dialog_answered",
            Event::ProcessEnded { .. } => "process_ended",
            Event::Unknown { .. } => "unknown",
        }
    }
}
