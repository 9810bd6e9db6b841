//! The turn state machine (contract section 4). Pure: it takes `(event, now)` and never
//! reads a clock, a file or the environment.
//!
//! The main scope moves Idle → Armed (a prompt) → Running (bound by TurnStarted, or at
//! once where the provider has no TurnStarted) → Idle, and Idle ⇄ Continuing while the
//! agent works on after a turn with no prompt. Nested scopes (subagents, system-triggered
//! turns) sit on top of a running main turn and never end it. Tool calls and permission
//! windows belong to the turn that was open when they started.
//!
//! The state is grouped by concern, each part a struct private to its file, changed only
//! through named methods that check the state they leave: `life.rs` (the process),
//! `history.rs` (turn numbering, the last turn's result), `main_state.rs` (the main
//! scope), `scopes.rs` (nested scopes), `tools.rs` (open calls), `blocking.rs` (what waits
//! on the user: permission windows, dialogs, ask-the-user calls, and every event that
//! opens or ends them), `transcript.rs`'s `Ahead` (what a transcript marker told before
//! the hooks did), `order.rs`'s `Owed` (what a delivery out of the agent's order may still
//! bind to), `compaction.rs` (the compaction window). The `Correlator` decides which to take: `turns.rs` for the main scope,
//! `nested.rs` for nested scopes, `calls.rs` for tool events, `blocking.rs` for permission
//! and dialog events, `transcript.rs` for what a transcript marker may settle. The event
//! being correlated travels as a `Ctx` (its line, time, source, the turn it was
//! attributed to, and the notes and turns it produced), not as state. Agent differences
//! come in as [`Capabilities`]. Every guess leaves a [`Note`].
//!
//! [`Note`]: crate::diagnostics::Note

mod background;
mod blocking;
mod calls;
mod compaction;
mod ctx;
mod history;
mod keys;
mod ledger;
mod life;
mod main_state;
mod nested;
mod order;
mod retry;
mod scopes;
#[cfg(test)]
mod tests;
mod tools;
mod transcript;
mod turns;

use std::collections::VecDeque;

pub use ledger::{Origin, Scope, TurnRecord};

use background::BackgroundTasks;
use blocking::Blocking;
use compaction::Compaction;
use ctx::Ctx;
use history::History;
use life::Life;
use main_state::MainState;
use order::Owed;
use retry::Retry;
use scopes::Scopes;
use tools::Tools;
use transcript::Ahead;

use crate::diagnostics::{Diag, Note};
use crate::event::{Event, OriginKind};
use crate::posture::{Phase, Posture, Presence, RunningCall, TurnPosture, TurnResult};
use crate::provenance::{Changed, Facts};
use crate::provider::Capabilities;
use crate::source::Source;
use crate::time::Timestamp;

/// How many closed ids are remembered (to tell a late end from one never started): memory
/// stays flat whatever the input.
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

/// Which turn a tool call or permission belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Main,
    /// The nested turn with this record id.
    Nested(u64),
    NoTurn,
}

/// The turn state machine of one session: events in (with their time), postures, notes
/// and closed turns out.
#[derive(Debug)]
pub struct Correlator {
    /// How the agent delimits turns and shows its dialogs.
    caps: Capabilities,
    /// The agent process: present or not, which generation.
    life: Life,
    /// Turn numbering and how the last main turn ended.
    history: History,
    /// The turns: the main scope (idle, continuing, armed, running) and the nested scopes.
    main: MainState,
    scopes: Scopes,
    /// Open tool calls, and what waits on the user.
    tools: Tools,
    blocking: Blocking,
    /// What transcript markers told before the hooks did.
    ahead: Ahead,
    /// What a late delivery may still bind to (a turn's opener after its end).
    owed: Owed,
    /// Besides the turns: the compaction window, prompts queued, background shell tasks.
    compaction: Compaction,
    queue_length: u64,
    background_tasks: BackgroundTasks,
    /// A model call the agent retries by itself (`retry.rs`).
    retry: Retry,
}

impl Correlator {
    /// A correlator for an agent with these turn structures, before any event.
    pub fn new(caps: Capabilities) -> Self {
        Self {
            caps,
            life: Life::new(),
            history: History::default(),
            main: MainState::new(),
            scopes: Scopes::default(),
            tools: Tools::default(),
            blocking: Blocking::default(),
            ahead: Ahead::default(),
            owed: Owed::default(),
            compaction: Compaction::default(),
            queue_length: 0,
            background_tasks: BackgroundTasks::default(),
            retry: Retry::None,
        }
    }

    /// The turn structure it correlates with.
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
        let mut ctx = Ctx::new(obs.line, now, obs.source);
        if obs.source == Source::Transcript {
            if let Event::TurnStarted {
                origin: OriginKind::Task,
                turn_id,
                ..
            } = obs.event
            {
                // Names an origin only: never starts, ends or settles a turn.
                self.transcript_agent_turn(&mut ctx, turn_id.as_ref());
                return ctx.out;
            }
            if !self.transcript_settles(&mut ctx, obs.event) {
                return ctx.out;
            }
        }
        if let Some(generation) = obs.generation
            && self.life.row_generation(generation)
        {
            self.end_session(
                &mut ctx,
                TurnResult::TerminalGap,
                Diag::TerminalGapNewSession,
            );
            self.history.forget_last();
            self.owed.forget();
        }
        self.life.sign(&mut ctx, obs.event);
        let was_running = self.main.running().is_some();
        self.apply(&mut ctx, obs.event);
        self.sign_of_life(obs.event, ctx.attributed);
        if obs.source == Source::Transcript && was_running && self.main.is_idle() {
            self.ahead.turn_ended();
        }
        self.settle_named_agent_turn(&mut ctx);
        ctx.out
    }

    /// Whether `event` would end the open main turn by beginning something else: a new
    /// prompt (not a steer, not a subagent's), a session's start or end.
    /// A live reader lets such a row wait for its session's transcript (`crate::hold`),
    /// which may still hold how that turn ended.
    pub fn would_supersede(&self, event: &Event<'_>) -> bool {
        if self.main.running().is_none() {
            return false;
        }
        match event {
            Event::PromptSubmitted {
                steer: false,
                agent,
                turn_id,
                ..
            } => {
                if self.names_running_turn(turn_id.as_ref(), agent.as_deref()) {
                    false
                } else if self.caps.agent_scopes {
                    agent.is_none()
                } else {
                    self.scopes.is_empty()
                }
            }
            Event::SessionStarted { source } => source.as_deref() != Some("compact"),
            Event::SessionEnded { .. } => true,
            // A process end is written after the agent died, its files complete: by the
            // time its row is read, so is every line the agent wrote.
            _ => false,
        }
    }

    /// What a read of the agent's screen may end: the oldest permission window or dialog
    /// waiting on the user, by its serial (see `blocking.rs`); `None` when none waits.
    pub fn screen_target(&self) -> Option<u64> {
        self.blocking.screen_target()
    }

    /// Turns still open (main first, then nested from the outermost), for the ledger at
    /// the end of a replay.
    pub fn open_turns(&self) -> Vec<TurnRecord> {
        let mut open = Vec::new();
        open.extend(self.main.running().cloned());
        open.extend(self.scopes.turns().cloned());
        open
    }

    /// Blocked while any scope, main or background, waits on the user; else active while
    /// a main-thread turn (or a continuation) runs; else ready (contract section 11). An
    /// armed prompt is not a running turn; one left without its turn is counted when it is
    /// superseded (`epoch_abandoned`).
    fn phase(&self) -> Phase {
        if !self.life.is_present() {
            Phase::Unknown
        } else if self.blocking.blocks(&self.tools) {
            Phase::Blocked
        } else if self.main.running().is_none() && !self.main.continuing() {
            // An armed prompt is no turn yet: the agent accepts it by its TurnStarted, and a
            // prompt a UserPromptSubmit hook blocked gets none and nothing after it (Kimi
            // Code 2.1.0), so until then the phase stays as it was.
            Phase::Ready
        } else {
            Phase::Active
        }
    }

    /// Brings `seen` up to date with the posture's provenance facts, saying which changed:
    /// what [`Correlator::posture`] would show of them, without building a posture.
    pub fn update_facts(&self, seen: &mut Facts) -> Changed {
        seen.update(
            self.life.presence(),
            self.phase(),
            self.compaction.is_open(),
            self.history.last_turn(),
        )
    }

    /// The posture after the last event, as the hooks see it (channel left at its default;
    /// the caller applies the channel state with [`Posture::with_channel`]).
    pub fn posture(&self) -> Posture {
        let phase = self.phase();
        let blocked = (phase == Phase::Blocked)
            .then(|| self.blocking.waits_on(&self.tools))
            .flatten();
        Posture {
            presence: self.life.presence(),
            turn: TurnPosture {
                phase,
                epoch: self.history.epoch(),
                turn_id: self.main.running().and_then(|rec| rec.turn_id.clone()),
                scope_depth: self.scopes.len(),
                open_tool_calls: self.tools.len(),
                pending_permissions: self.blocking.pending_permissions(),
                queue_length: self.queue_length,
                blocked_tool: blocked.map(|(tool, _)| tool.to_owned()),
                blocked_argument: blocked.and_then(|(_, argument)| argument.map(str::to_owned)),
                running_call: (phase == Phase::Active)
                    .then(|| self.tools.newest_of(Owner::Main))
                    .flatten()
                    .map(|(tool, argument)| RunningCall {
                        tool: tool.to_owned(),
                        argument: argument.map(str::to_owned),
                    }),
                background_scopes: self.scopes.background_len(),
                background_tasks: self.background_tasks.len(),
                background_tool_calls: self.tools.count_owned(|owner| match owner {
                    Owner::Nested(id) => self.scopes.is_background_turn(id),
                    Owner::Main | Owner::NoTurn => false,
                }),
            },
            maintenance: self.compaction.maintenance(),
            last_turn: self.history.last_turn().clone(),
            ..Posture::default()
        }
    }

    fn apply(&mut self, ctx: &mut Ctx, event: &Event<'_>) {
        match event {
            // Claude and Codex announce a compacted context as a session start: it is the
            // same process and the same conversation, so nothing resets.
            Event::SessionStarted { source } if source.as_deref() == Some("compact") => {
                if self.life.started() != Presence::Present {
                    ctx.note(Diag::PresenceImplied, Some("SessionStart(compact)".into()));
                }
            }
            Event::SessionStarted { source } => {
                if self.life.is_present() {
                    ctx.note(
                        Diag::SessionRestartWithoutEnd,
                        source.as_deref().map(|s| format!("source {s}")),
                    );
                }
                self.end_session(ctx, TurnResult::TerminalGap, Diag::TerminalGapNewSession);
                self.life.started();
                self.history.forget_last();
                self.owed.forget();
            }
            Event::SessionEnded { .. } => {
                if !self.life.is_present() {
                    ctx.note(Diag::SessionEndWhileAbsent, None);
                }
                self.retry_cancelled(ctx);
                self.end_session(ctx, TurnResult::TerminalGap, Diag::TerminalGapSessionEnd);
                self.life.ended();
            }
            Event::TaskStarted { task_id, kind } => {
                self.task_started(ctx, kind.as_deref(), task_id.as_deref())
            }
            Event::TaskFinished { task_id } => {
                self.background_tasks.finished(task_id.as_deref());
            }
            Event::InputRequested { kind, agent } => {
                self.input_requested(ctx, kind.as_deref(), agent.as_deref())
            }
            // `idle_prompt`: the agent waits at its input prompt.
            Event::Notification { kind, turn_id, .. } => {
                if kind.as_deref() == Some("idle_prompt") {
                    self.compaction.agent_idle();
                    self.idle(ctx, turn_id.as_ref());
                }
            }
            Event::Heartbeat
            | Event::Activity { .. }
            | Event::ModelSwitched { .. }
            | Event::Unknown { .. } => {}
            Event::DialogAnswered => self.blocking.answered_on_screen(ctx),
            Event::ProcessEnded { .. } => {
                // After a SessionEnd this is how every agent exits: nothing to settle, no
                // guess to count.
                self.end_session(ctx, TurnResult::TerminalGap, Diag::TerminalGapProcessEnded);
                self.life.ended();
            }
            Event::Retrying { .. } => self.retrying(ctx),
            Event::PromptSubmitted {
                text,
                steer,
                turn_id,
                agent,
            } => {
                let empty = text.is_empty() && turn_id.is_none() && agent.is_none() && !steer;
                if !self.retry_resumed(ctx, empty) {
                    self.prompt(ctx, *steer, turn_id.clone(), agent.as_deref());
                }
            }
            Event::PromptBlocked { .. } => self.prompt_blocked(ctx),
            Event::PromptQueued { queue_length, .. } => {
                self.queue_length = queue_length.unwrap_or(self.queue_length + 1);
                self.touch(ctx, None);
            }
            Event::TurnStarted {
                turn_id,
                origin,
                origin_name,
            } => match origin {
                OriginKind::SystemTrigger => {
                    let retry = origin_name.as_deref() == Some("retry");
                    if !self.retry_resumed(ctx, retry) {
                        self.system_turn(
                            ctx,
                            turn_id.clone(),
                            origin_name.as_deref().unwrap_or("system"),
                        )
                    }
                }
                OriginKind::Task => self.agent_turn(ctx, turn_id.clone(), origin_name.as_deref()),
                OriginKind::User | OriginKind::Other => self.bind(ctx, turn_id.clone()),
            },
            Event::ToolStarted { tool } => self.tool_started(ctx, tool),
            Event::ToolFinished { tool } => self.tool_finished(ctx, tool, false),
            Event::ToolFailed {
                tool, interrupt, ..
            } => self.tool_finished(ctx, tool, *interrupt),
            Event::PermissionRequested {
                tool, approval_id, ..
            } => self.permission_requested(ctx, tool, approval_id.as_deref()),
            Event::PermissionResolved {
                tool, approval_id, ..
            } => self.permission_resolved(ctx, tool, approval_id.as_deref()),
            Event::Stopped {
                stop_hook_active,
                turn_id,
                background_tasks,
            } => {
                if let Some(running) = background_tasks {
                    self.background_tasks.replace(running);
                }
                if !self.retry_cancelled(ctx) {
                    self.stopped(ctx, *stop_hook_active, turn_id.clone())
                }
            }
            Event::StopFailed { .. } => self.end_innermost(ctx, TurnResult::KnownFailure),
            Event::Interrupted { turn_id, .. } => self.interrupt(ctx, turn_id.as_ref()),
            Event::SubagentStarted { name, agent_id } => {
                self.subagent_started(ctx, name.as_deref(), agent_id.as_deref())
            }
            Event::SubagentStopped { name, agent_id } => {
                self.subagent_stopped(ctx, name.as_deref(), agent_id.as_deref())
            }
            Event::CompactionStarted { trigger } => {
                self.compaction.start(ctx, trigger.as_deref());
            }
            Event::CompactionFinished { .. } => self.compaction.finish(ctx),
        }
    }

    /// A new open record for a turn that starts with this event.
    fn new_record(
        &mut self,
        ctx: &Ctx,
        epoch: u64,
        scope: Scope,
        origin: Origin,
        turn_id: Option<crate::event::TurnId>,
    ) -> TurnRecord {
        TurnRecord {
            id: self.history.next_record(),
            epoch,
            turn_id,
            scope,
            origin,
            result: TurnResult::Open,
            first_row: ctx.line,
            last_row: ctx.line,
            started_at: ctx.now,
            ended_at: None,
            tool_calls: 0,
            ended_by: None,
        }
    }

    /// The turn an event belongs to: the subagent's (by id, or where scopes stack the
    /// innermost open nested turn: of a foreground scope while the main turn runs, of any
    /// scope once it ended), else the running main turn.
    fn owner(&self, agent: Option<&str>) -> Owner {
        let nested = if self.caps.agent_scopes {
            self.scopes
                .by_agent(agent)
                .and_then(|index| self.scopes.turn(index))
        } else if self.main.running().is_some() {
            self.scopes.innermost_foreground_turn()
        } else {
            self.scopes.innermost_turn()
        };
        if let Some(rec) = nested {
            return Owner::Nested(rec.id);
        }
        match self.main.running() {
            Some(_) => Owner::Main,
            None => Owner::NoTurn,
        }
    }

    fn turn_mut(&mut self, owner: Owner) -> Option<&mut TurnRecord> {
        match owner {
            Owner::Main => self.main.running_mut(),
            Owner::Nested(id) => self.scopes.turn_mut(id),
            Owner::NoTurn => None,
        }
    }

    /// Attributes the event to its turn (by stream order, or by agent id).
    fn touch(&mut self, ctx: &Ctx, agent: Option<&str>) {
        let owner = self.owner(agent);
        if let Some(rec) = self.turn_mut(owner) {
            rec.last_row = ctx.line;
        }
    }
}

fn remember<T>(ring: &mut VecDeque<T>, id: T) {
    if ring.len() >= RECENTLY_CLOSED {
        ring.pop_front();
    }
    ring.push_back(id);
}
