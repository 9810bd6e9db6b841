//! The projection a supervisor reads after every event (contract section 5).

use serde::{Deserialize, Serialize};

use crate::event::TurnId;
use crate::time::Timestamp;

/// Is the agent process there?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Present,
    Absent,
    /// No event yet.
    #[default]
    Unknown,
}

/// What the current turn is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Present, no turn open.
    Ready,
    /// A main-thread turn is armed or running (a user's, the agent's own, or a
    /// continuation after a Stop).
    Active,
    /// The agent (main or a background scope) waits on the user: a permission request, a
    /// dialog a notification announced, or an open ask-the-user call.
    Blocked,
    /// Not known: no agent present, or hook facts are withdrawn (channel not active).
    #[default]
    Unknown,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    #[default]
    Unknown,
}

/// Health of the hook channel (contract section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
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
    /// one, else the open ask-the-user call's tool. Serialized only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_tool: Option<String>,
    /// While blocked: what the call `blocked_tool` names acts on (its command, file,
    /// pattern), cut ([`crate::tool_argument`]). A tool input: never serialized.
    #[serde(skip)]
    pub blocked_argument: Option<String>,
    /// While active: the newest open call of the main turn, for a person's summary of what
    /// it does. Never serialized (its argument is a tool input).
    #[serde(skip)]
    pub running_call: Option<RunningCall>,
    /// Nested scopes (subagents) running in the background: their parent turn ended, or
    /// they were launched so. Counted in `scope_depth` too.
    pub background_scopes: usize,
    /// Background shell tasks the agent reported running and has not reported finished.
    pub background_tasks: usize,
    /// Open tool calls of background scopes. Counted in `open_tool_calls` too.
    pub background_tool_calls: usize,
}

/// A tool call the main turn runs: its tool and what it acts on.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunningCall {
    pub tool: String,
    /// Cut ([`crate::tool_argument`]); `None` where the agent's table names no field.
    pub argument: Option<String>,
}

impl TurnPosture {
    /// How much background work runs: scopes and tasks (what a status line shows as
    /// `· N background`).
    pub fn background(&self) -> usize {
        self.background_scopes + self.background_tasks
    }

    /// What the phase said the turn waits on or runs, gone with the phase.
    fn withdraw_calls(&mut self) {
        self.blocked_tool = None;
        self.blocked_argument = None;
        self.running_call = None;
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Maintenance {
    pub compacting: bool,
    pub trigger: Option<String>,
    pub since: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LastTurn {
    pub result: TurnResult,
    pub epoch: Option<u64>,
    pub turn_id: Option<TurnId>,
    pub at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Channel {
    pub state: ChannelState,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
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
                self.turn.withdraw_calls();
            }
            _ => {
                self.turn.phase = Phase::Unknown;
                self.turn.withdraw_calls();
                self.last_turn = LastTurn::default();
            }
        }
        self
    }

    /// The posture as flat `(field, value)` pairs, for the timeline's "what changed".
    pub fn fields(&self) -> [(&'static str, String); 12] {
        std::array::from_fn(|i| (FIELD_NAMES[i], self.field(i)))
    }

    /// Field `i` of [`Posture::fields`], as text.
    fn field(&self, i: usize) -> String {
        fn opt<T: ToString>(v: &Option<T>) -> String {
            v.as_ref().map_or_else(|| "-".to_owned(), T::to_string)
        }
        match i {
            0 => to_name(&self.presence),
            1 => to_name(&self.turn.phase),
            2 => self.turn.epoch.to_string(),
            3 => opt(&self.turn.turn_id),
            4 => self.turn.scope_depth.to_string(),
            5 => self.turn.open_tool_calls.to_string(),
            6 => self.turn.pending_permissions.to_string(),
            7 => self.turn.queue_length.to_string(),
            8 => match (&self.maintenance.compacting, &self.maintenance.trigger) {
                (false, _) => "no".to_owned(),
                (true, t) => opt(t),
            },
            9 => self.last_turn.result.name().to_owned(),
            10 => to_name(&self.channel.state),
            _ => self.turn.background().to_string(),
        }
    }

    /// True when what field `i` is made of is equal in both, so its texts are too (the
    /// converse need not hold: turn ids `3` and `"3"` read alike).
    fn same_field(&self, other: &Posture, i: usize) -> bool {
        match i {
            0 => self.presence == other.presence,
            1 => self.turn.phase == other.turn.phase,
            2 => self.turn.epoch == other.turn.epoch,
            3 => self.turn.turn_id == other.turn.turn_id,
            4 => self.turn.scope_depth == other.turn.scope_depth,
            5 => self.turn.open_tool_calls == other.turn.open_tool_calls,
            6 => self.turn.pending_permissions == other.turn.pending_permissions,
            7 => self.turn.queue_length == other.turn.queue_length,
            8 => {
                self.maintenance.compacting == other.maintenance.compacting
                    && self.maintenance.trigger == other.maintenance.trigger
            }
            9 => self.last_turn.result == other.last_turn.result,
            10 => self.channel.state == other.channel.state,
            _ => self.turn.background() == other.turn.background(),
        }
    }
}

/// The names of [`Posture::fields`], in order.
const FIELD_NAMES: [&str; 12] = [
    "presence",
    "phase",
    "epoch",
    "turn",
    "depth",
    "tools",
    "perms",
    "queue",
    "compacting",
    "last",
    "channel",
    "background",
];

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
        // Only fields whose parts differ are written out and compared as text: a replay's
        // timeline asks after every line, and most lines change one field or none.
        (0..FIELD_NAMES.len())
            .filter(|&i| !self.same_field(after, i))
            .filter_map(|i| {
                let (before, now) = (self.field(i), after.field(i));
                (before != now).then_some(FieldChange {
                    field: FIELD_NAMES[i],
                    before,
                    after: now,
                })
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
