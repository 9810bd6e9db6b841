//! The turn state machine (contract section 4). Pure: it takes `(event, now)` and never
//! reads a clock, a file or the environment.
//!
//! The main scope moves Idle → Armed (a prompt) → Running (bound by TurnStarted, or at
//! once where the provider has no TurnStarted) → Idle. Its state is private to
//! `main_state.rs`, whose named transitions are the only way to change it; `turns.rs`
//! decides when to take them (arm, bind, implied start, terminal outcomes). Nested scopes (subagents,
//! system-triggered turns) sit on top of a running main turn and never end it
//! (`scopes.rs`). Tool calls and permission windows are in `tools.rs`. Agent
//! differences come in as [`Capabilities`]. Every guess leaves a [`Note`].

mod ledger;
mod main_state;
mod scopes;
mod tools;
mod transcript;
mod turns;

use std::collections::VecDeque;
use std::mem;

use indexmap::IndexMap;

pub use ledger::{Origin, Scope, TurnRecord};

use main_state::MainState;
use tools::{PermissionKey, ToolKey};

use crate::diagnostics::{Diag, Note};
use crate::event::{Event, OriginKind};
use crate::posture::{LastTurn, Maintenance, Phase, Posture, Presence, TurnPosture, TurnResult};
use crate::provenance::{Changed, Facts};
use crate::provider::Capabilities;
use crate::source::Source;
use crate::time::Timestamp;

/// Bounds that keep memory flat whatever the input: open calls, pending permissions,
/// nested scopes and remembered closed ids.
const MAX_OPEN_TOOLS: usize = 4096;
const MAX_PENDING_PERMISSIONS: usize = 1024;
const MAX_SCOPE_DEPTH: usize = 64;
const RECENTLY_CLOSED: usize = 256;

/// One event to correlate, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'e, 'a> {
    /// The line the event was read from (1-based); used as the row index in the ledger.
    pub line: u64,
    /// The envelope's generation, if the row had one.
    pub generation: Option<u64>,
    pub event: &'e Event<'a>,
    /// Which signal the event came from.
    pub source: Source,
}

/// What one event did besides moving the posture: the guesses it needed and the turns
/// it ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub notes: Vec<Note>,
    pub closed: Vec<TurnRecord>,
}

#[derive(Debug)]
struct NestedScope {
    label: Scope,
    /// The subagent's id, where the provider sends one (Claude, Codex).
    agent_id: Option<String>,
    /// Opened by a system-triggered TurnStarted (closes with its turn), not by SubagentStart.
    opened_by_turn: bool,
    turn: Option<TurnRecord>,
}

/// Which turn a tool call or permission belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Main,
    Nested(u64),
    NoTurn,
}

#[derive(Debug)]
struct OpenTool {
    owner: Owner,
    name_hash: Option<u64>,
    input_hash: Option<u64>,
}

#[derive(Debug)]
struct Compaction {
    trigger: Option<String>,
    since: Option<Timestamp>,
}

#[derive(Debug)]
pub struct Correlator {
    caps: Capabilities,
    presence: Presence,
    generation: Option<u64>,
    epoch: u64,
    next_record: u64,
    /// The last [`ToolKey::Fifo`] number handed out.
    next_fifo: u64,
    main: MainState,
    scopes: Vec<NestedScope>,
    tools: IndexMap<ToolKey, OpenTool>,
    recently_closed_tools: VecDeque<ToolKey>,
    recently_closed_agents: VecDeque<String>,
    /// Pending permission requests: their owner and the tool they name.
    permissions: IndexMap<PermissionKey, (Owner, Option<String>)>,
    queue_length: u64,
    compaction: Option<Compaction>,
    last_turn: LastTurn,
    // The step being built: its line, time and output.
    line: u64,
    now: Option<Timestamp>,
    source: Source,
    out: Outcome,
}

impl Correlator {
    pub fn new(caps: Capabilities) -> Self {
        Self {
            caps,
            presence: Presence::Unknown,
            generation: None,
            epoch: 0,
            next_record: 0,
            next_fifo: 0,
            main: MainState::new(),
            scopes: Vec::new(),
            tools: IndexMap::new(),
            recently_closed_tools: VecDeque::new(),
            recently_closed_agents: VecDeque::new(),
            permissions: IndexMap::new(),
            queue_length: 0,
            compaction: None,
            last_turn: LastTurn::default(),
            line: 0,
            now: None,
            source: Source::Hook,
            out: Outcome::default(),
        }
    }

    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Switches to another provider's turn structure, keeping the state built so far
    /// (used when the provider is identified only after some rows).
    pub fn set_capabilities(&mut self, caps: Capabilities) {
        self.caps = caps;
    }

    /// Feeds one event. `now` is the event's time (its row's `received_at`), if known.
    pub fn observe(&mut self, obs: Observation<'_, '_>, now: Option<Timestamp>) -> Outcome {
        self.line = obs.line;
        self.now = now;
        self.source = obs.source;
        if obs.source == Source::Transcript && !self.transcript_settles(obs.event) {
            return mem::take(&mut self.out);
        }
        if let Some(generation) = obs.generation {
            match self.generation {
                Some(current) if generation > current => {
                    self.end_session(TurnResult::TerminalGap, Diag::TerminalGapNewSession);
                    self.last_turn = LastTurn::default();
                    self.presence = Presence::Unknown;
                    self.generation = Some(generation);
                }
                None => self.generation = Some(generation),
                _ => {}
            }
        }
        self.check_presence(obs.event);
        self.apply(obs.event);
        mem::take(&mut self.out)
    }

    /// Turns still open (main first, then nested from the outermost), for the ledger at
    /// the end of a replay.
    pub fn open_turns(&self) -> Vec<TurnRecord> {
        let mut open = Vec::new();
        open.extend(self.main.running().cloned());
        open.extend(self.scopes.iter().filter_map(|s| s.turn.clone()));
        open
    }

    fn phase(&self) -> Phase {
        if self.presence != Presence::Present {
            Phase::Unknown
        } else if !self.permissions.is_empty() {
            Phase::Blocked
        } else if self.main.is_idle() {
            Phase::Ready
        } else {
            Phase::Active
        }
    }

    /// Brings `seen` up to date with the posture's provenance facts, saying which changed:
    /// what [`Correlator::posture`] would show of them, without building a posture.
    pub fn update_facts(&self, seen: &mut Facts) -> Changed {
        seen.update(
            self.presence,
            self.phase(),
            self.compaction.is_some(),
            &self.last_turn,
        )
    }

    /// The posture after the last event, as the hooks see it (channel left at its default;
    /// the caller applies the channel state with [`Posture::with_channel`]).
    pub fn posture(&self) -> Posture {
        let phase = self.phase();
        Posture {
            presence: self.presence,
            turn: TurnPosture {
                phase,
                epoch: self.epoch,
                turn_id: self.main.running().and_then(|rec| rec.turn_id.clone()),
                scope_depth: self.scopes.len(),
                open_tool_calls: self.tools.len(),
                pending_permissions: self.permissions.len(),
                queue_length: self.queue_length,
                blocked_tool: if phase == Phase::Blocked {
                    self.permissions
                        .values()
                        .rev()
                        .find_map(|(_, tool)| tool.clone())
                } else {
                    None
                },
            },
            maintenance: match &self.compaction {
                Some(c) => Maintenance {
                    compacting: true,
                    trigger: c.trigger.clone(),
                    since: c.since,
                },
                None => Maintenance::default(),
            },
            last_turn: self.last_turn.clone(),
            ..Posture::default()
        }
    }

    fn note(&mut self, diag: Diag, detail: Option<String>) {
        self.out.notes.push(Note::new(diag, detail));
    }

    fn check_presence(&mut self, event: &Event<'_>) {
        if matches!(
            event,
            Event::SessionStarted { .. } | Event::SessionEnded { .. } | Event::ProcessEnded { .. }
        ) || self.source == Source::Transcript
        {
            // A transcript entry is no sign of life (it may be read long after the process
            // ended); the process ending is judged in `apply`.
            return;
        }
        match self.presence {
            Presence::Present => {}
            Presence::Unknown => {
                self.presence = Presence::Present;
                self.note(Diag::PresenceImplied, None);
            }
            Presence::Absent => {
                // Late fire-and-forget deliveries do not bring the process back; a new
                // prompt or turn does.
                if matches!(
                    event,
                    Event::PromptSubmitted { .. } | Event::TurnStarted { .. } | Event::Heartbeat
                ) {
                    self.presence = Presence::Present;
                    self.note(Diag::PresenceImplied, Some("after SessionEnd".into()));
                } else {
                    self.note(Diag::EventAfterSessionEnd, None);
                }
            }
        }
    }

    fn apply(&mut self, event: &Event<'_>) {
        match event {
            // Claude and Codex announce a compacted context as a session start: it is the
            // same process and the same conversation, so nothing resets.
            Event::SessionStarted { source } if source.as_deref() == Some("compact") => {
                if self.presence != Presence::Present {
                    self.presence = Presence::Present;
                    self.note(Diag::PresenceImplied, Some("SessionStart(compact)".into()));
                }
            }
            Event::SessionStarted { source } => {
                if self.presence == Presence::Present {
                    self.note(
                        Diag::SessionRestartWithoutEnd,
                        source.as_deref().map(|s| format!("source {s}")),
                    );
                }
                self.end_session(TurnResult::TerminalGap, Diag::TerminalGapNewSession);
                self.presence = Presence::Present;
                self.last_turn = LastTurn::default();
            }
            Event::SessionEnded { .. } => {
                if self.presence != Presence::Present {
                    self.note(Diag::SessionEndWhileAbsent, None);
                }
                self.end_session(TurnResult::TerminalGap, Diag::TerminalGapSessionEnd);
                self.presence = Presence::Absent;
            }
            Event::Heartbeat
            | Event::TaskStarted { .. }
            | Event::Notification { .. }
            | Event::Activity { .. }
            | Event::Unknown { .. } => {}
            Event::ProcessEnded { .. } => {
                // After a SessionEnd this is how every agent exits: nothing to settle, no
                // guess to count.
                self.end_session(TurnResult::TerminalGap, Diag::TerminalGapProcessEnded);
                self.presence = Presence::Absent;
            }
            Event::PromptSubmitted {
                steer,
                turn_id,
                agent,
                ..
            } => self.prompt(*steer, turn_id.clone(), agent.as_deref()),
            Event::PromptQueued { queue_length, .. } => {
                self.queue_length = queue_length.unwrap_or(self.queue_length + 1);
                self.touch(None);
            }
            Event::TurnStarted {
                turn_id,
                origin,
                origin_name,
            } => match origin {
                OriginKind::SystemTrigger => {
                    self.system_turn(turn_id.clone(), origin_name.as_deref().unwrap_or("system"))
                }
                OriginKind::User | OriginKind::Other => self.bind(turn_id.clone()),
            },
            Event::ToolStarted { tool } => self.tool_started(tool),
            Event::ToolFinished { tool } => self.tool_finished(tool, false),
            Event::ToolFailed {
                tool, interrupt, ..
            } => self.tool_finished(tool, *interrupt),
            Event::PermissionRequested {
                tool, approval_id, ..
            } => self.permission_requested(tool, approval_id.as_deref()),
            Event::PermissionResolved {
                tool, approval_id, ..
            } => self.permission_resolved(tool, approval_id.as_deref()),
            Event::Stopped {
                stop_hook_active,
                turn_id,
            } => self.stopped(*stop_hook_active, turn_id.clone()),
            Event::StopFailed { .. } => self.end_innermost(TurnResult::KnownFailure),
            Event::Interrupted { turn_id, .. } => self.interrupt(turn_id.as_ref()),
            Event::SubagentStarted { name, agent_id } => {
                self.subagent_started(name.as_deref(), agent_id.as_deref())
            }
            Event::SubagentStopped { name, agent_id } => {
                self.subagent_stopped(name.as_deref(), agent_id.as_deref())
            }
            Event::CompactionStarted { trigger } => {
                if self.compaction.is_some() {
                    self.note(Diag::CompactionStartWhileOpen, None);
                }
                self.compaction = Some(Compaction {
                    trigger: trigger.as_deref().map(str::to_owned),
                    since: self.now,
                });
            }
            Event::CompactionFinished { .. } => {
                if self.compaction.take().is_none() {
                    self.note(Diag::CompactionEndWithoutStart, None);
                }
            }
        }
    }

    /// A compaction window never spans a new prompt or a session boundary: one still open
    /// then had no end event (Gemini sends none; a failed Claude compaction neither).
    fn close_unended_compaction(&mut self) {
        if self.compaction.take().is_some() {
            self.note(Diag::CompactionUnclosed, None);
        }
    }

    fn new_record(
        &mut self,
        epoch: u64,
        scope: Scope,
        origin: Origin,
        turn_id: Option<crate::event::TurnId>,
    ) -> TurnRecord {
        self.new_record_from(epoch, scope, origin, turn_id, self.line, self.now)
    }

    fn new_record_from(
        &mut self,
        epoch: u64,
        scope: Scope,
        origin: Origin,
        turn_id: Option<crate::event::TurnId>,
        line: u64,
        at: Option<Timestamp>,
    ) -> TurnRecord {
        self.next_record += 1;
        TurnRecord {
            id: self.next_record,
            epoch,
            turn_id,
            scope,
            origin,
            result: TurnResult::Open,
            first_row: line,
            last_row: self.line,
            started_at: at,
            ended_at: None,
            tool_calls: 0,
            ended_by: None,
        }
    }

    /// Sets a turn's one result. The ending event is part of the turn unless the turn
    /// ended unseen: a terminal gap keeps its last evidence row, and its end time is when
    /// the gap was detected.
    fn latch(&self, rec: &mut TurnRecord, result: TurnResult) {
        debug_assert_eq!(
            rec.result,
            TurnResult::Open,
            "a turn result is latched once"
        );
        rec.result = result;
        rec.ended_by = Some(self.source);
        if result != TurnResult::TerminalGap && self.source == Source::Hook {
            rec.last_row = self.line;
        }
        rec.ended_at = self.now;
    }
}

fn remember<T>(ring: &mut VecDeque<T>, id: T) {
    if ring.len() >= RECENTLY_CLOSED {
        ring.pop_front();
    }
    ring.push_back(id);
}
