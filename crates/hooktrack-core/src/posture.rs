//! The projection a supervisor reads after every event (contract section 5).

use serde::Serialize;

use crate::event::TurnId;
use crate::time::Timestamp;

/// Is the agent process there?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Present,
    Absent,
    /// No event yet.
    #[default]
    Unknown,
}

/// What the current turn is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Present, no turn open.
    Ready,
    /// A turn is armed or running.
    Active,
    /// A permission request is pending: the agent waits for an answer.
    Blocked,
    /// Not known: no agent present, or hook facts are withdrawn (channel not active).
    #[default]
    Unknown,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TurnResult {
    /// Still running (ledger only).
    Open,
    Success,
    Interrupted,
    KnownFailure,
    /// It ended and the hooks cannot tell how (session ended, process replaced, superseded).
    TerminalGap,
    /// No turn has ended since the session started (posture only).
    #[default]
    None,
}

impl TurnResult {
    pub fn name(self) -> &'static str {
        match self {
            TurnResult::Open => "open",
            TurnResult::Success => "success",
            TurnResult::Interrupted => "interrupted",
            TurnResult::KnownFailure => "known_failure",
            TurnResult::TerminalGap => "terminal_gap",
            TurnResult::None => "none",
        }
    }
}

/// Hooks alone never prove the agent has settled (background work is invisible).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    #[default]
    Unknown,
}

/// Health of the hook channel (contract section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChannelState {
    Active,
    #[default]
    Unavailable,
    Stale,
    Error,
    Stopped,
    DisabledByPolicy,
    UntrustedWorkspace,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct TurnPosture {
    pub phase: Phase,
    /// The last epoch armed (0 before the first prompt).
    pub epoch: u64,
    /// The bound turn id of the open main turn, if any.
    pub turn_id: Option<TurnId>,
    /// Open nested scopes (subagents, system-triggered turns).
    pub scope_depth: usize,
    pub open_tool_calls: usize,
    pub pending_permissions: usize,
    pub queue_length: u64,
    /// While blocked: the tool the newest pending permission request names, if it names
    /// one. Serialized only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_tool: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct Maintenance {
    pub compacting: bool,
    pub trigger: Option<String>,
    pub since: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct LastTurn {
    pub result: TurnResult,
    pub epoch: Option<u64>,
    pub turn_id: Option<TurnId>,
    pub at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct Channel {
    pub state: ChannelState,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct Posture {
    pub presence: Presence,
    pub turn: TurnPosture,
    pub maintenance: Maintenance,
    pub last_turn: LastTurn,
    pub work: Work,
    pub channel: Channel,
}

impl Posture {
    /// Applies the channel state: when the channel is not active, hook-owned facts are
    /// withdrawn (no `blocked`, no phase, no terminal settlement); a stale channel keeps a
    /// result the hooks already latched.
    pub fn with_channel(mut self, state: ChannelState) -> Self {
        self.channel.state = state;
        match state {
            ChannelState::Active => {}
            ChannelState::Stale => {
                self.turn.phase = Phase::Unknown;
                self.turn.blocked_tool = None;
            }
            _ => {
                self.turn.phase = Phase::Unknown;
                self.turn.blocked_tool = None;
                self.last_turn = LastTurn::default();
            }
        }
        self
    }

    /// The posture as flat `(field, value)` pairs, for the timeline's "what changed".
    pub fn fields(&self) -> [(&'static str, String); 11] {
        fn opt<T: ToString>(v: &Option<T>) -> String {
            v.as_ref().map_or_else(|| "-".to_owned(), T::to_string)
        }
        [
            ("presence", to_name(&self.presence)),
            ("phase", to_name(&self.turn.phase)),
            ("epoch", self.turn.epoch.to_string()),
            ("turn", opt(&self.turn.turn_id)),
            ("depth", self.turn.scope_depth.to_string()),
            ("tools", self.turn.open_tool_calls.to_string()),
            ("perms", self.turn.pending_permissions.to_string()),
            ("queue", self.turn.queue_length.to_string()),
            (
                "compacting",
                match (&self.maintenance.compacting, &self.maintenance.trigger) {
                    (false, _) => "no".to_owned(),
                    (true, t) => opt(t),
                },
            ),
            ("last", self.last_turn.result.name().to_owned()),
            ("channel", to_name(&self.channel.state)),
        ]
    }
}

/// One field that differs between two postures (named as in [`Posture::fields`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: &'static str,
    pub before: String,
    pub after: String,
}

impl Posture {
    /// The fields that differ from `self` to `after`, in [`Posture::fields`] order: the one
    /// posture diff of the timeline, `session` and `watch`.
    pub fn changes_to(&self, after: &Posture) -> Vec<FieldChange> {
        self.fields()
            .into_iter()
            .zip(after.fields())
            .filter(|((_, b), (_, a))| b != a)
            .map(|((field, before), (_, after))| FieldChange {
                field,
                before,
                after,
            })
            .collect()
    }
}

fn to_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}
