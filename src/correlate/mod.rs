//! The turn state machine (contract section 4). Pure: it takes `(event, now)` and never
//! reads a clock, a file or the environment.
//!
//! The main scope moves Idle → Armed (a prompt) → Running (bound by TurnStarted, or at
//! once where the provider has no TurnStarted) → Idle, through `arm`, `bind`, `start_implied`
//! and `finish_main`. Nested scopes (subagents, system-triggered turns) stack on top of a
//! running main turn and never end it. Every guess leaves a [`Note`].

mod ledger;

use std::collections::VecDeque;
use std::mem;

use indexmap::IndexMap;

pub use ledger::TurnRecord;

use crate::diagnostics::{Diag, Note};
use crate::event::{Event, OriginKind, ToolRef, TurnId};
use crate::posture::{LastTurn, Maintenance, Phase, Posture, Presence, TurnPosture, TurnResult};
use crate::provider::Capabilities;
use crate::time::Timestamp;

/// Bounds that keep memory flat whatever the input: open calls, pending permissions,
/// nested scopes and remembered closed call ids.
const MAX_OPEN_TOOLS: usize = 4096;
const MAX_PENDING_PERMISSIONS: usize = 1024;
const MAX_SCOPE_DEPTH: usize = 64;
const RECENT_CLOSED_TOOLS: usize = 256;

/// One event to correlate, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'e, 'a> {
    /// The line the event was read from (1-based); used as the row index in the ledger.
    pub line: u64,
    /// The envelope's generation, if the row had one.
    pub generation: Option<u64>,
    pub event: &'e Event<'a>,
}

/// What one event did besides moving the posture: the guesses it needed and the turns
/// it ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub notes: Vec<Note>,
    pub closed: Vec<TurnRecord>,
}

#[derive(Debug)]
enum Main {
    Idle,
    Armed {
        epoch: u64,
        line: u64,
        at: Option<Timestamp>,
    },
    Running(TurnRecord),
}

#[derive(Debug)]
struct Scope {
    label: String,
    /// Opened by a system-triggered TurnStarted (closes with its turn), not by SubagentStart.
    opened_by_turn: bool,
    turn: Option<TurnRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Main,
    Nested(u64),
    NoTurn,
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
    main: Main,
    scopes: Vec<Scope>,
    tools: IndexMap<String, Owner>,
    recently_closed: VecDeque<String>,
    permissions: IndexMap<String, Owner>,
    queue_length: u64,
    compaction: Option<Compaction>,
    last_turn: LastTurn,
    // The step being built: its line, time and output.
    line: u64,
    now: Option<Timestamp>,
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
            main: Main::Idle,
            scopes: Vec::new(),
            tools: IndexMap::new(),
            recently_closed: VecDeque::new(),
            permissions: IndexMap::new(),
            queue_length: 0,
            compaction: None,
            last_turn: LastTurn::default(),
            line: 0,
            now: None,
            out: Outcome::default(),
        }
    }

    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Feeds one event. `now` is the event's time (its row's `received_at`), if known.
    pub fn observe(&mut self, obs: Observation<'_, '_>, now: Option<Timestamp>) -> Outcome {
        self.line = obs.line;
        self.now = now;
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
        match &self.main {
            Main::Running(rec) => open.push(rec.clone()),
            Main::Armed { .. } | Main::Idle => {}
        }
        open.extend(self.scopes.iter().filter_map(|s| s.turn.clone()));
        open
    }

    /// The posture after the last event, as the hooks see it (channel left at its default;
    /// the caller applies the channel state with [`Posture::with_channel`]).
    pub fn posture(&self) -> Posture {
        let phase = if self.presence != Presence::Present {
            Phase::Unknown
        } else if !self.permissions.is_empty() {
            Phase::Blocked
        } else if matches!(self.main, Main::Idle) {
            Phase::Ready
        } else {
            Phase::Active
        };
        Posture {
            presence: self.presence,
            turn: TurnPosture {
                phase,
                epoch: self.epoch,
                turn_id: match &self.main {
                    Main::Running(rec) => rec.turn_id.clone(),
                    _ => None,
                },
                scope_depth: self.scopes.len(),
                open_tool_calls: self.tools.len(),
                pending_permissions: self.permissions.len(),
                queue_length: self.queue_length,
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
            Event::SessionStarted { .. } | Event::SessionEnded { .. }
        ) {
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
            Event::Heartbeat | Event::TaskStarted { .. } | Event::Notification { .. } => {}
            Event::Unknown { .. } => {}
            Event::PromptSubmitted { steer, .. } => self.prompt(*steer),
            Event::PromptQueued { queue_length, .. } => {
                self.queue_length = queue_length.unwrap_or(self.queue_length + 1);
                self.touch();
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
            Event::ToolFinished { tool } | Event::ToolFailed { tool, .. } => {
                self.tool_finished(tool)
            }
            Event::PermissionRequested {
                tool, approval_id, ..
            } => {
                self.start_implied();
                let key = permission_key(tool, approval_id.as_deref());
                let owner = self.owner();
                self.touch();
                if self.permissions.contains_key(&key) {
                    self.note(Diag::PermissionDuplicate, Some(key));
                } else {
                    if self.permissions.len() >= MAX_PENDING_PERMISSIONS {
                        self.permissions.shift_remove_index(0);
                        self.note(Diag::StateLimitReached, Some("pending permissions".into()));
                    }
                    self.permissions.insert(key, owner);
                }
            }
            Event::PermissionResolved {
                tool, approval_id, ..
            } => {
                self.touch();
                let key = permission_key(tool, approval_id.as_deref());
                let removed = self.permissions.swap_remove(&key).is_some()
                    || approval_id
                        .as_deref()
                        .is_some_and(|id| self.permissions.swap_remove(id).is_some());
                if !removed {
                    self.note(Diag::PermissionResultWithoutRequest, Some(key));
                }
            }
            Event::Stopped { stop_hook_active } => {
                if *stop_hook_active && self.caps.stop_hook_active_continues {
                    self.note(Diag::StopHookContinuation, None);
                    self.touch();
                } else {
                    self.end_innermost(TurnResult::Success);
                }
            }
            Event::StopFailed { .. } => self.end_innermost(TurnResult::KnownFailure),
            Event::Interrupted { turn_id, .. } => self.interrupt(turn_id.as_ref()),
            Event::SubagentStarted { name } => {
                self.start_implied();
                self.touch();
                let label = format!("subagent:{}", name.as_deref().unwrap_or("?"));
                self.push_scope(label, false, None);
            }
            Event::SubagentStopped { name } => self.subagent_stopped(name.as_deref()),
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

    // ----- the main scope -------------------------------------------------------------

    fn new_record(
        &mut self,
        epoch: u64,
        scope: String,
        origin: String,
        turn_id: Option<TurnId>,
    ) -> TurnRecord {
        self.new_record_from(epoch, scope, origin, turn_id, self.line, self.now)
    }

    fn new_record_from(
        &mut self,
        epoch: u64,
        scope: String,
        origin: String,
        turn_id: Option<TurnId>,
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
        }
    }

    /// A prompt: a nested turn inside an open subagent scope, a steer folded into the
    /// running turn, or a new epoch.
    fn prompt(&mut self, steer: bool) {
        if steer {
            self.note(Diag::SteerPrompt, None);
            self.queue_length = self.queue_length.saturating_sub(1);
            self.touch();
            return;
        }
        if matches!(self.main, Main::Running(_)) && !self.scopes.is_empty() {
            self.nested_prompt();
            return;
        }
        self.queue_length = self.queue_length.saturating_sub(1);
        self.arm();
    }

    /// Idle/Armed/Running → Armed (or Running where the prompt starts the turn).
    fn arm(&mut self) {
        match mem::replace(&mut self.main, Main::Idle) {
            Main::Idle => {}
            Main::Armed { epoch, line, .. } => {
                self.note(
                    Diag::EpochAbandoned,
                    Some(format!("epoch {epoch} armed at line {line}")),
                );
            }
            Main::Running(rec) => {
                self.note(Diag::TurnSuperseded, Some(format!("epoch {}", rec.epoch)));
                self.finish_main(rec, TurnResult::TerminalGap);
            }
        }
        self.epoch += 1;
        self.main = if self.caps.prompt_starts_turn {
            let rec = self.new_record(self.epoch, "main".into(), "user".into(), None);
            Main::Running(rec)
        } else {
            Main::Armed {
                epoch: self.epoch,
                line: self.line,
                at: self.now,
            }
        };
    }

    /// TurnStarted(user): Armed → Running with its turn id.
    fn bind(&mut self, turn_id: Option<TurnId>) {
        self.main = match mem::replace(&mut self.main, Main::Idle) {
            Main::Armed { epoch, line, at } => {
                let rec =
                    self.new_record_from(epoch, "main".into(), "user".into(), turn_id, line, at);
                Main::Running(rec)
            }
            Main::Idle => {
                self.note(
                    Diag::TurnStartedWithoutPrompt,
                    turn_id.as_ref().map(|t| format!("turn {t}")),
                );
                self.epoch += 1;
                Main::Running(self.new_record(self.epoch, "main".into(), "user".into(), turn_id))
            }
            Main::Running(mut rec) if rec.turn_id.is_none() || rec.turn_id == turn_id => {
                rec.turn_id = turn_id;
                rec.last_row = self.line;
                Main::Running(rec)
            }
            Main::Running(rec) => {
                self.note(
                    Diag::TurnSuperseded,
                    Some(format!(
                        "turn {:?} still open when turn {:?} started",
                        rec.turn_id, turn_id
                    )),
                );
                self.finish_main(rec, TurnResult::TerminalGap);
                self.epoch += 1;
                Main::Running(self.new_record(self.epoch, "main".into(), "user".into(), turn_id))
            }
        };
    }

    /// Turn evidence while only armed: the TurnStarted was missed or never sent.
    fn start_implied(&mut self) {
        if let Main::Armed { epoch, line, at } = self.main {
            self.note(Diag::TurnStartImplied, Some(format!("epoch {epoch}")));
            let rec = self.new_record_from(epoch, "main".into(), "implied".into(), None, line, at);
            self.main = Main::Running(rec);
        }
    }

    /// Running → Idle: latches the result, closes everything the turn owned.
    fn finish_main(&mut self, mut rec: TurnRecord, result: TurnResult) {
        let nested_result = if result == TurnResult::Interrupted {
            TurnResult::Interrupted
        } else {
            TurnResult::TerminalGap
        };
        while let Some(scope) = self.scopes.pop() {
            self.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.clone()));
            if let Some(nested) = scope.turn {
                self.close_nested(nested, nested_result);
            }
        }
        let open: Vec<String> = self.tools.drain(..).map(|(id, _)| id).collect();
        for id in open {
            self.note(Diag::ToolOpenAtTurnEnd, Some(id.clone()));
            self.remember_closed(id);
        }
        let pending: Vec<String> = self.permissions.drain(..).map(|(k, _)| k).collect();
        for key in pending {
            self.note(Diag::PermissionOpenAtTurnEnd, Some(key));
        }
        self.latch(&mut rec, result);
        self.last_turn = LastTurn {
            result,
            epoch: Some(rec.epoch),
            turn_id: rec.turn_id.clone(),
            at: self.now,
        };
        self.main = Main::Idle;
        self.out.closed.push(rec);
    }

    /// SessionEnd, a new SessionStart or a new generation: whatever is open ended unseen.
    fn end_session(&mut self, result: TurnResult, diag: Diag) {
        match mem::replace(&mut self.main, Main::Idle) {
            Main::Running(rec) => {
                self.note(diag, Some(format!("epoch {}", rec.epoch)));
                self.finish_main(rec, result);
            }
            Main::Armed { epoch, line, .. } => {
                self.note(
                    Diag::EpochAbandoned,
                    Some(format!("epoch {epoch} armed at line {line}")),
                );
            }
            Main::Idle => {}
        }
        // Scopes, calls and permissions that outlived their turn (or never had one).
        while let Some(scope) = self.scopes.pop() {
            self.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.clone()));
            if let Some(nested) = scope.turn {
                self.close_nested(nested, TurnResult::TerminalGap);
            }
        }
        let open: Vec<String> = self.tools.drain(..).map(|(id, _)| id).collect();
        for id in open {
            self.remember_closed(id);
        }
        self.permissions.clear();
        if matches!(diag, Diag::TerminalGapSessionEnd) && self.compaction.take().is_some() {
            self.note(Diag::CompactionOpenAtSessionEnd, None);
        }
        self.queue_length = 0;
    }

    // ----- nested scopes --------------------------------------------------------------

    fn push_scope(&mut self, label: String, opened_by_turn: bool, turn: Option<TurnRecord>) {
        if self.scopes.len() >= MAX_SCOPE_DEPTH {
            self.note(Diag::StateLimitReached, Some("nested scopes".into()));
            let scope = self.scopes.remove(0);
            if let Some(nested) = scope.turn {
                self.close_nested(nested, TurnResult::TerminalGap);
            }
        }
        self.scopes.push(Scope {
            label,
            opened_by_turn,
            turn,
        });
    }

    fn main_epoch(&self) -> u64 {
        match &self.main {
            Main::Running(rec) => rec.epoch,
            Main::Armed { epoch, .. } => *epoch,
            Main::Idle => self.epoch,
        }
    }

    /// A prompt inside an open scope starts that scope's next nested turn.
    fn nested_prompt(&mut self) {
        let epoch = self.main_epoch();
        let Some(top) = self.scopes.len().checked_sub(1) else {
            return;
        };
        if let Some(open) = self.scopes[top].turn.take() {
            self.note(
                Diag::NestedTurnUnended,
                Some(self.scopes[top].label.clone()),
            );
            self.close_nested(open, TurnResult::TerminalGap);
        }
        let label = self.scopes[top].label.clone();
        let rec = self.new_record(epoch, label, "user".into(), None);
        self.scopes[top].turn = Some(rec);
    }

    /// TurnStarted(system_trigger): a nested turn under a running main turn, else a main
    /// turn of its own.
    fn system_turn(&mut self, turn_id: Option<TurnId>, name: &str) {
        let origin = format!("system_trigger:{name}");
        if !matches!(self.main, Main::Running(_)) {
            if let Main::Armed { .. } = self.main {
                // The prompt's turn started under a system origin: bind it.
                self.bind(turn_id);
                return;
            }
            self.epoch += 1;
            let rec = self.new_record(self.epoch, "main".into(), origin, turn_id);
            self.main = Main::Running(rec);
            return;
        }
        let epoch = self.main_epoch();
        // A subagent scope waiting for its turn takes it.
        if let Some(top) = self.scopes.last_mut().filter(|s| !s.opened_by_turn) {
            let label = top.label.clone();
            if let Some(open) = top.turn.take() {
                self.note(Diag::NestedTurnUnended, Some(label.clone()));
                self.close_nested(open, TurnResult::TerminalGap);
            }
            let rec = self.new_record(epoch, label, origin, turn_id);
            if let Some(top) = self.scopes.last_mut() {
                top.turn = Some(rec);
            }
            return;
        }
        let label = format!("system_trigger:{name}");
        let rec = self.new_record(epoch, label.clone(), origin, turn_id);
        self.push_scope(label, true, Some(rec));
    }

    fn close_nested(&mut self, mut rec: TurnRecord, result: TurnResult) {
        let owner = Owner::Nested(rec.id);
        let open: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, o)| **o == owner)
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            self.tools.swap_remove(&id);
            self.note(Diag::ToolOpenAtTurnEnd, Some(id.clone()));
            self.remember_closed(id);
        }
        self.permissions.retain(|_, o| *o != owner);
        self.latch(&mut rec, result);
        self.out.closed.push(rec);
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
        if result != TurnResult::TerminalGap {
            rec.last_row = self.line;
        }
        rec.ended_at = self.now;
    }

    fn subagent_stopped(&mut self, name: Option<&str>) {
        let Some(index) = self.scopes.iter().rposition(|s| !s.opened_by_turn) else {
            self.note(Diag::SubagentStopWithoutStart, name.map(str::to_owned));
            return;
        };
        while self.scopes.len() > index {
            let Some(scope) = self.scopes.pop() else {
                break;
            };
            if let Some(open) = scope.turn {
                self.note(Diag::NestedTurnUnended, Some(scope.label.clone()));
                self.close_nested(open, TurnResult::TerminalGap);
            }
        }
        self.touch();
    }

    // ----- terminal events ------------------------------------------------------------

    /// Stop / StopFailure: ends the innermost open turn (a nested scope's Stop never ends
    /// the parent).
    fn end_innermost(&mut self, result: TurnResult) {
        if let Some(top) = self.scopes.len().checked_sub(1)
            && matches!(self.main, Main::Running(_))
        {
            let scope = &mut self.scopes[top];
            let label = scope.label.clone();
            let rec = match scope.turn.take() {
                Some(rec) => rec,
                None => {
                    self.note(Diag::NestedTurnImplied, Some(label.clone()));
                    let epoch = self.main_epoch();
                    self.new_record(epoch, label, "implied".into(), None)
                }
            };
            if self.scopes[top].opened_by_turn {
                self.scopes.pop();
            }
            self.close_nested(rec, result);
            return;
        }
        match mem::replace(&mut self.main, Main::Idle) {
            Main::Running(rec) => self.finish_main(rec, result),
            armed @ Main::Armed { .. } => {
                self.main = armed;
                self.start_implied();
                if let Main::Running(rec) = mem::replace(&mut self.main, Main::Idle) {
                    self.finish_main(rec, result);
                }
            }
            // A late Stop after SessionEnd is not a turn that ran: the process is gone.
            Main::Idle if self.caps.unannounced_turns && self.presence == Presence::Present => {
                self.note(Diag::UnannouncedTurn, None);
                self.epoch += 1;
                let rec = self.new_record(self.epoch, "main".into(), "unannounced".into(), None);
                self.finish_main(rec, result);
            }
            Main::Idle => self.note(Diag::StopWithoutTurn, Some(result.name().into())),
        }
    }

    /// Interrupt is authoritative for the turn it names. Turn ids collide across scopes,
    /// so the id decides only when it tells the main and the nested turn apart.
    fn interrupt(&mut self, turn_id: Option<&TurnId>) {
        let main_id = match &self.main {
            Main::Running(rec) => Some(rec.turn_id.clone()),
            _ => None,
        };
        let nested = self
            .scopes
            .last()
            .and_then(|s| s.turn.as_ref().map(|t| t.turn_id.clone()));
        if let (Some(main_id), Some(nested_id)) = (&main_id, &nested) {
            let names_main = turn_id.is_some() && main_id.as_ref() == turn_id;
            let names_nested = turn_id.is_some() && nested_id.as_ref() == turn_id;
            if names_main && !names_nested {
                if let Main::Running(rec) = mem::replace(&mut self.main, Main::Idle) {
                    self.finish_main(rec, TurnResult::Interrupted);
                }
                return;
            }
            if !names_nested {
                self.note(
                    Diag::InterruptScopeAmbiguous,
                    turn_id.map(|t| format!("turn {t}")),
                );
            } else if names_main {
                self.note(
                    Diag::InterruptScopeAmbiguous,
                    turn_id.map(|t| format!("turn {t} names both")),
                );
            }
            self.end_innermost(TurnResult::Interrupted);
            return;
        }
        if let (Some(Some(bound)), Some(named)) = (&main_id, turn_id)
            && bound != named
        {
            self.note(
                Diag::TurnIdMismatch,
                Some(format!(
                    "interrupt names turn {named}, open turn is {bound}"
                )),
            );
        }
        match &self.main {
            Main::Idle => self.note(Diag::StopWithoutTurn, Some("interrupted".into())),
            _ => {
                // Nested scopes with no turn of their own end with the parent.
                if self.scopes.last().is_some_and(|s| s.turn.is_none()) {
                    if let Main::Running(rec) = mem::replace(&mut self.main, Main::Idle) {
                        self.finish_main(rec, TurnResult::Interrupted);
                    }
                    return;
                }
                self.end_innermost(TurnResult::Interrupted);
            }
        }
    }

    // ----- tools ----------------------------------------------------------------------

    fn owner(&self) -> Owner {
        if let Some(rec) = self.scopes.iter().rev().find_map(|s| s.turn.as_ref()) {
            return Owner::Nested(rec.id);
        }
        match self.main {
            Main::Running(_) => Owner::Main,
            _ => Owner::NoTurn,
        }
    }

    fn current_turn_mut(&mut self) -> Option<&mut TurnRecord> {
        if let Some(rec) = self.scopes.iter_mut().rev().find_map(|s| s.turn.as_mut()) {
            return Some(rec);
        }
        match &mut self.main {
            Main::Running(rec) => Some(rec),
            _ => None,
        }
    }

    /// Attributes the event to the current turn (by stream order).
    fn touch(&mut self) {
        let line = self.line;
        if let Some(rec) = self.current_turn_mut() {
            rec.last_row = line;
        }
    }

    fn tool_started(&mut self, tool: &ToolRef<'_>) {
        self.start_implied();
        let owner = self.owner();
        let line = self.line;
        if let Some(rec) = self.current_turn_mut() {
            rec.tool_calls += 1;
            rec.last_row = line;
        }
        if owner == Owner::NoTurn {
            self.note(
                Diag::ToolWithoutTurn,
                tool.name.as_deref().map(str::to_owned),
            );
        }
        let Some(id) = tool.call_id.as_deref() else {
            self.note(
                Diag::ToolCallIdMissing,
                tool.name.as_deref().map(str::to_owned),
            );
            return;
        };
        if let Some(previous) = self.tools.get_mut(id) {
            *previous = owner;
            self.note(Diag::ToolStartDuplicate, Some(id.to_owned()));
            return;
        }
        if self.tools.len() >= MAX_OPEN_TOOLS {
            self.tools.shift_remove_index(0);
            self.note(Diag::StateLimitReached, Some("open tool calls".into()));
        }
        self.tools.insert(id.to_owned(), owner);
    }

    fn tool_finished(&mut self, tool: &ToolRef<'_>) {
        let Some(id) = tool.call_id.as_deref() else {
            self.touch();
            self.note(
                Diag::ToolCallIdMissing,
                tool.name.as_deref().map(str::to_owned),
            );
            return;
        };
        match self.tools.swap_remove(id) {
            Some(owner) => {
                let line = self.line;
                let rec = match owner {
                    Owner::Main => match &mut self.main {
                        Main::Running(rec) => Some(rec),
                        _ => None,
                    },
                    Owner::Nested(rid) => self
                        .scopes
                        .iter_mut()
                        .filter_map(|s| s.turn.as_mut())
                        .find(|t| t.id == rid),
                    Owner::NoTurn => None,
                };
                if let Some(rec) = rec {
                    rec.last_row = line;
                }
            }
            None if self.recently_closed.iter().any(|c| c == id) => {
                self.note(Diag::ToolFinishLate, Some(id.to_owned()));
            }
            None => self.note(Diag::ToolFinishWithoutStart, Some(id.to_owned())),
        }
    }

    fn remember_closed(&mut self, id: String) {
        if self.recently_closed.len() >= RECENT_CLOSED_TOOLS {
            self.recently_closed.pop_front();
        }
        self.recently_closed.push_back(id);
    }
}

fn permission_key(tool: &ToolRef<'_>, approval_id: Option<&str>) -> String {
    match (tool.call_id.as_deref(), approval_id) {
        (Some(id), _) => id.to_owned(),
        (None, Some(id)) => id.to_owned(),
        (None, None) => tool.name.as_deref().unwrap_or("(unnamed)").to_owned(),
    }
}
