//! The main scope: arming, binding, implied starts, terminal outcomes, session ends. The
//! state itself is in `main_state.rs`.

use super::ctx::Ctx;
use super::main_state::{Armed, Left};
use super::order::EarlyStop;
use super::transcript::PendingStop;
use super::{Correlator, Origin, Owner, Scope, TurnRecord};
use crate::diagnostics::Diag;
use crate::event::TurnId;
use crate::posture::{LastTurn, TurnResult};

impl Correlator {
    /// A prompt: a steer folded into the running turn, a subagent's prompt, a nested turn
    /// inside an open scope, or a new epoch.
    pub(super) fn prompt(
        &mut self,
        ctx: &mut Ctx,
        steer: bool,
        turn_id: Option<TurnId>,
        agent: Option<&str>,
    ) {
        if steer {
            ctx.note(Diag::SteerPrompt, None);
            self.queue_length = self.queue_length.saturating_sub(1);
            self.touch(ctx, None);
            return;
        }
        if self.names_running_turn(turn_id.as_ref(), agent) {
            ctx.note(
                Diag::SteerByTurnId,
                turn_id.as_ref().map(|t| format!("turn {t}")),
            );
            self.touch(ctx, None);
            return;
        }
        if self.caps.agent_scopes && agent.is_some() {
            self.agent_prompt(ctx, agent);
            return;
        }
        if !self.caps.agent_scopes && self.main.running().is_some() && !self.scopes.is_empty() {
            self.nested_prompt(ctx);
            return;
        }
        self.queue_length = self.queue_length.saturating_sub(1);
        self.arm(ctx, turn_id);
    }

    /// Whether a main-scope prompt names the running main turn's own id: text typed while
    /// it works, which the agent hands to that turn (Qwen Code's steer), not a turn of its
    /// own.
    pub(super) fn names_running_turn(&self, turn_id: Option<&TurnId>, agent: Option<&str>) -> bool {
        agent.is_none()
            && turn_id.is_some()
            && self
                .main
                .running()
                .is_some_and(|rec| rec.turn_id.as_ref() == turn_id)
    }

    /// Idle/Armed/Running → Armed (or Running where the prompt starts the turn).
    fn arm(&mut self, ctx: &mut Ctx, turn_id: Option<TurnId>) {
        self.end_continuation();
        self.ahead.turn_begins();
        self.clear_main(ctx, TurnResult::TerminalGap, Diag::TurnSuperseded);
        self.owed.forget();
        self.compaction.close_unended(ctx);
        let epoch = self.next_epoch();
        if self.caps.prompt_starts_turn {
            let rec = self.new_record(ctx, epoch, Scope::Main, Origin::User, turn_id);
            self.main.start(rec);
        } else {
            self.main.arm(Armed {
                epoch,
                line: ctx.line,
                at: ctx.now,
            });
        }
    }

    /// A hook blocked the armed prompt (a transcript says so): it will start no turn.
    pub(super) fn prompt_blocked(&mut self, ctx: &mut Ctx) {
        if let Left::Armed(Armed { epoch, line, .. }) = self.main.clear() {
            ctx.note(
                Diag::EpochAbandoned,
                Some(format!(
                    "epoch {epoch} armed at line {line}: blocked by a hook"
                )),
            );
        }
    }

    pub(super) fn next_epoch(&mut self) -> u64 {
        self.history.next_epoch()
    }

    /// The record of the armed prompt's turn: it starts at the prompt.
    fn armed_record(
        &mut self,
        ctx: &Ctx,
        armed: Armed,
        origin: Origin,
        turn_id: Option<TurnId>,
    ) -> TurnRecord {
        let mut rec = self.new_record(ctx, armed.epoch, Scope::Main, origin, turn_id);
        rec.first_row = armed.line;
        rec.started_at = armed.at;
        rec
    }

    /// TurnStarted(user): Armed → Running with its turn id. A TurnStarted with no armed
    /// prompt starts a turn of its own, unless it is the opener of the turn that just
    /// ended, delivered late (`order.rs`); one naming another id than the running turn's
    /// supersedes it.
    pub(super) fn bind(&mut self, ctx: &mut Ctx, turn_id: Option<TurnId>) {
        if self.late_opener(ctx, turn_id.as_ref()) {
            return;
        }
        self.owed.forget();
        self.end_continuation();
        if let Some(armed) = self.main.armed() {
            let rec = self.armed_record(ctx, armed, Origin::User, turn_id);
            self.main.bind(rec);
            return;
        }
        if let Some(rec) = self.main.running_mut()
            && (rec.turn_id.is_none() || rec.turn_id == turn_id)
        {
            rec.turn_id = turn_id;
            rec.last_row = ctx.line;
            return;
        }
        match self.main.finish() {
            None => {
                ctx.note(
                    Diag::TurnStartedWithoutPrompt,
                    turn_id.as_ref().map(|t| format!("turn {t}")),
                );
            }
            Some(rec) => {
                ctx.note(
                    Diag::TurnSuperseded,
                    Some(format!(
                        "turn {} still open when turn {} started",
                        show(rec.turn_id.as_ref()),
                        show(turn_id.as_ref())
                    )),
                );
                self.finish_main(ctx, rec, TurnResult::TerminalGap);
            }
        }
        let epoch = self.next_epoch();
        let rec = self.new_record(ctx, epoch, Scope::Main, Origin::User, turn_id);
        self.main.start(rec);
    }

    /// TurnStarted(system_trigger): it binds an armed prompt, starts a main turn of its own
    /// when none runs and no subagent scope waits for its turn, else is a nested turn
    /// (under the running turn, or of a subagent going on in the background).
    pub(super) fn system_turn(&mut self, ctx: &mut Ctx, turn_id: Option<TurnId>, name: &str) {
        if self.main.armed().is_some() {
            // The prompt's turn started under a system origin: bind it.
            self.bind(ctx, turn_id);
            return;
        }
        if self.late_nested_opener(ctx, turn_id.as_ref()) {
            return;
        }
        if self.main.is_idle() && self.scopes.top_subagent().is_none() {
            self.end_continuation();
            self.owed.forget();
            let epoch = self.next_epoch();
            let origin = Origin::SystemTrigger(name.to_owned());
            let rec = self.new_record(ctx, epoch, Scope::Main, origin, turn_id);
            self.main.start(rec);
            return;
        }
        self.nested_system_turn(ctx, turn_id, name);
    }

    /// A main-scope tool call with no turn armed or running, where that is how a headless
    /// turn with no prompt hook shows (`Capabilities::tool_starts_turn`): the turn starts,
    /// unannounced.
    pub(super) fn start_by_tool(&mut self, ctx: &mut Ctx, agent: Option<&str>) {
        if !self.caps.tool_starts_turn
            || agent.is_some()
            || !self.main.is_idle()
            || !self.life.is_present()
        {
            return;
        }
        self.end_continuation();
        self.owed.forget();
        self.ahead.turn_begins();
        ctx.note(Diag::UnannouncedTurn, None);
        let epoch = self.next_epoch();
        let origin = self.unannounced_origin(epoch);
        let rec = self.new_record(ctx, epoch, Scope::Main, origin, None);
        self.main.start(rec);
    }

    /// Who started a turn no prompt announced, in `epoch`. Where a headless turn has no
    /// prompt hook (`Capabilities::tool_starts_turn`, Factory Droid `exec`), the session's
    /// first turn is the prompt given on the command line: the user's; a later one is the
    /// agent's own (the report of a background task it launched). Elsewhere nobody says.
    fn unannounced_origin(&self, epoch: u64) -> Origin {
        match (self.caps.tool_starts_turn, epoch) {
            (true, 1) => Origin::User,
            (true, _) => Origin::Agent,
            (false, _) => Origin::Unannounced,
        }
    }

    /// Turn evidence while only armed: the TurnStarted was missed or never sent.
    pub(super) fn start_implied(&mut self, ctx: &mut Ctx) {
        if let Some(armed) = self.main.armed() {
            ctx.note(
                Diag::TurnStartImplied,
                Some(format!("epoch {}", armed.epoch)),
            );
            let rec = self.armed_record(ctx, armed, Origin::Implied, None);
            self.main.bind(rec);
        }
    }

    /// Clears the main scope for a new epoch or a session end: an armed epoch is
    /// abandoned, a running turn ends with `result` (`diag` says why).
    fn clear_main(&mut self, ctx: &mut Ctx, result: TurnResult, diag: Diag) {
        match self.main.clear() {
            Left::Idle => {}
            Left::Armed(Armed { epoch, line, .. }) => {
                ctx.note(
                    Diag::EpochAbandoned,
                    Some(format!("epoch {epoch} armed at line {line}")),
                );
            }
            Left::Running(rec) => {
                ctx.note(diag, Some(format!("epoch {}", rec.epoch)));
                self.finish_main(ctx, rec, result);
            }
        }
    }

    /// Ends a main turn that has left the main state (through `finish` or `clear`):
    /// latches the result, closes everything the turn owned. Where subagents can run in
    /// the background, a turn that ended by its own terminal event (a Stop, a StopFailure)
    /// leaves its open scopes running (contract section 11): they keep their calls and
    /// windows until their own end. An interrupt or an unseen end takes them with it.
    pub(super) fn finish_main(&mut self, ctx: &mut Ctx, mut rec: TurnRecord, result: TurnResult) {
        let keep_scopes = self.caps.subagents_outlive_turn
            && matches!(result, TurnResult::Success | TurnResult::KnownFailure);
        if keep_scopes {
            for label in self.scopes.send_all_to_background() {
                ctx.note(Diag::ScopeInBackground, Some(label.to_string()));
            }
            self.rehome_open_calls(ctx, &mut rec);
        } else {
            let nested_result = if result == TurnResult::Interrupted {
                TurnResult::Interrupted
            } else {
                TurnResult::TerminalGap
            };
            while let Some(scope) = self.scopes.pop_remembered() {
                ctx.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.to_string()));
                if let Some(nested) = scope.turn {
                    self.close_nested(ctx, nested, nested_result);
                }
            }
        }
        // Where scopes go on, only the main turn's own calls, windows and dialogs end.
        let ends_with_turn =
            move |owner: Owner| !keep_scopes || matches!(owner, Owner::Main | Owner::NoTurn);
        self.tools.close_where(ctx, ends_with_turn);
        self.blocking.turn_ended(ctx, ends_with_turn);
        self.end_continuation();
        if self.queue_length > 0 {
            // What was queued while the turn ran is behind it: a steered message (Kimi Code
            // 2.1.0: Ctrl-S fires only UserPromptQueued, and the same turn answers it), or
            // a queued prompt, which comes back as a UserPromptSubmit of its own.
            ctx.note(
                Diag::QueueEndedWithTurn,
                Some(format!("{} queued", self.queue_length)),
            );
            self.queue_length = 0;
        }
        if rec.origin == Origin::Implied
            && rec.turn_id.is_none()
            && result != TurnResult::TerminalGap
        {
            // Its TurnStarted may still come, delivered after this end.
            self.owed.implied_turn_ended(rec.epoch);
        }
        ctx.latch(&mut rec, result);
        self.history.latch(LastTurn {
            result,
            epoch: Some(rec.epoch),
            turn_id: rec.turn_id.clone(),
            at: ctx.now,
        });
        ctx.out.closed.push(rec);
    }

    /// A turn that ended by its own Stop has no call of its own open: where subagents carry
    /// no id (Kimi), a call still open then is the background subagent's, which ran it
    /// while the parent was still running (Kimi Code 2.1.0 sends a background subagent's
    /// first `PreToolUse` before the parent's `Stop`).
    fn rehome_open_calls(&mut self, ctx: &mut Ctx, rec: &mut TurnRecord) {
        if self.caps.agent_scopes {
            return;
        }
        let Some(background) = self.scopes.innermost_turn().map(|t| t.id) else {
            return;
        };
        let to = Owner::Nested(background);
        let moved = self.tools.reassign(Owner::Main, to);
        self.blocking.reassign(Owner::Main, to);
        if moved == 0 {
            return;
        }
        rec.tool_calls = rec.tool_calls.saturating_sub(moved);
        if let Some(nested) = self.scopes.turn_mut(background) {
            nested.tool_calls += moved;
        }
        ctx.note(Diag::CallsMovedToBackground, Some(format!("{moved}")));
    }

    /// SessionEnd, a new SessionStart or a new generation: whatever is open ended unseen.
    pub(super) fn end_session(&mut self, ctx: &mut Ctx, result: TurnResult, diag: Diag) {
        self.clear_main(ctx, result, diag);
        // Scopes, calls and permissions that outlived their turn (or never had one).
        while let Some(scope) = self.scopes.pop() {
            ctx.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.to_string()));
            if let Some(nested) = scope.turn {
                self.close_nested(ctx, nested, TurnResult::TerminalGap);
            }
        }
        self.tools.drop_all();
        self.blocking.session_ended();
        self.background_tasks.clear();
        self.scopes.forget_launch();
        self.end_continuation();
        self.compaction.close_unended(ctx);
        self.queue_length = 0;
        // What is owed stays: a hook the agent did not wait for can be delivered after its
        // session's end (a new session or generation forgets it).
    }

    /// Stop: success for the innermost turn, or the end of a stop-hook continuation.
    pub(super) fn stopped(
        &mut self,
        ctx: &mut Ctx,
        stop_hook_active: bool,
        turn_id: Option<TurnId>,
    ) {
        if !stop_hook_active {
            self.end_innermost(ctx, TurnResult::Success);
            return;
        }
        ctx.note(Diag::StopHookContinuation, None);
        if self.caps.stop_hook_active_continues {
            // Kimi: a stop hook blocked this Stop; the same turn goes on.
            self.touch(ctx, None);
            return;
        }
        // Claude, Codex, Gemini: this Stop ends the extra turn a stop hook caused. Gemini
        // announces it with a prompt (the hook's reason); Claude and Codex do not.
        self.start_implied(ctx);
        let rec = match self.main.finish() {
            Some(mut rec) => {
                rec.origin = Origin::Continuation;
                rec
            }
            None => {
                let epoch = self.next_epoch();
                self.new_record(ctx, epoch, Scope::Main, Origin::Continuation, turn_id)
            }
        };
        self.finish_main(ctx, rec, TurnResult::Success);
    }

    /// Stop / StopFailure: ends the innermost open turn (a nested scope's Stop never ends
    /// the parent). Where subagents have ids, a Stop without one is the main agent's.
    /// Where scopes stack, a Stop while the main turn runs is the innermost foreground
    /// scope's, else the main turn's (a background scope's turn cannot be told from it, and
    /// the parent's Stop is the one expected); with no main turn, the innermost background
    /// scope's.
    pub(super) fn end_innermost(&mut self, ctx: &mut Ctx, result: TurnResult) {
        let nested = if self.main.running().is_some() {
            self.scopes
                .top_foreground()
                .filter(|&top| !self.stop_after_subagents_turn(ctx, top))
        } else if self.main.is_idle() {
            self.scopes
                .top()
                .filter(|&top| !self.stop_after_subagents_turn(ctx, top))
        } else {
            None
        };
        if !self.caps.agent_scopes
            && let Some(top) = nested
        {
            let label = self.scopes.label(top).clone();
            // An interrupted subagent sends no SubagentStop (Kimi Code 2.1.0): its scope
            // ends with its turn, not in the background.
            let rec = match self.scopes.end_turn(top, result == TurnResult::Interrupted) {
                Some(rec) => rec,
                None => {
                    ctx.note(Diag::NestedTurnImplied, Some(label.to_string()));
                    let epoch = self.main_epoch();
                    // Its TurnStarted may still come, delivered after this end.
                    self.owed.implied_nested_turn_ended(epoch);
                    self.new_record(ctx, epoch, label, Origin::Implied, None)
                }
            };
            self.close_nested(ctx, rec, result);
            return;
        }
        // Armed: the turn ran unannounced between its prompt and this end.
        self.start_implied(ctx);
        let owed = self.ahead.take_stop();
        if let Some(rec) = self.main.finish() {
            self.finish_main(ctx, rec, result);
        } else if self.caps.unannounced_turns
            && self.life.is_present()
            && !matches!(owed, PendingStop::TurnEnded)
        {
            // A late Stop after SessionEnd is not a turn that ran: the process is gone.
            ctx.note(Diag::UnannouncedTurn, None);
            let epoch = self.next_epoch();
            let origin = self.unannounced_origin(epoch);
            let rec = self.new_record(ctx, epoch, Scope::Main, origin, None);
            let result = match owed {
                PendingStop::Unannounced(settled) => settled,
                PendingStop::Nothing | PendingStop::TurnEnded => result,
            };
            self.finish_main(ctx, rec, result);
        } else {
            self.end_continuation();
            ctx.note(Diag::StopWithoutTurn, Some(result.name().into()));
            if self.life.is_present() {
                // The turn it ended may be announced after it (`order.rs`).
                self.owed.stop_without_turn(EarlyStop {
                    result,
                    line: ctx.line,
                    at: ctx.now,
                });
            }
        }
    }

    /// A Stop inside a subagent scope whose turn already ended by its own Stop is not that
    /// subagent's: it is the parent's (or, with no main turn, an agent turn's announced
    /// late), delivered before the subagent's SubagentStop (Kimi Code runs SubagentStop
    /// without waiting for it, contract section 12). The scope goes on until its
    /// SubagentStop, as a scope still open when its parent ends does.
    fn stop_after_subagents_turn(&self, ctx: &mut Ctx, top: usize) -> bool {
        if self.caps.agent_scopes || !self.scopes.turn_ended(top) {
            return false;
        }
        ctx.note(
            Diag::StopBeforeSubagentStop,
            Some(self.scopes.label(top).to_string()),
        );
        true
    }

    /// Interrupt is authoritative for the turn it names. Turn ids collide across scopes,
    /// so the id decides only when it tells the main and the nested turn apart.
    pub(super) fn interrupt(&mut self, ctx: &mut Ctx, turn_id: Option<&TurnId>) {
        let main_id = self.main.running().map(|rec| rec.turn_id.clone());
        // While the main turn runs, a background scope's turn is not the one to tell apart.
        let nested = match main_id {
            Some(_) => self.scopes.innermost_foreground_turn(),
            None => self.scopes.top_turn(),
        }
        .map(|t| t.turn_id.clone());
        if !self.caps.agent_scopes
            && let (Some(main_id), Some(nested_id)) = (&main_id, &nested)
        {
            let names_main = turn_id.is_some() && main_id.as_ref() == turn_id;
            let names_nested = turn_id.is_some() && nested_id.as_ref() == turn_id;
            if names_main && !names_nested {
                self.interrupt_main(ctx);
                return;
            }
            if !names_nested || names_main {
                ctx.note(
                    Diag::InterruptScopeAmbiguous,
                    turn_id.map(|t| format!("turn {t}")),
                );
            }
            self.end_innermost(ctx, TurnResult::Interrupted);
            return;
        }
        if let (Some(Some(bound)), Some(named)) = (&main_id, turn_id)
            && bound != named
        {
            ctx.note(
                Diag::TurnIdMismatch,
                Some(format!(
                    "interrupt names turn {named}, open turn is {bound}"
                )),
            );
        }
        if self.main.is_idle() && (self.caps.agent_scopes || self.scopes.top_turn().is_none()) {
            self.end_continuation();
            ctx.note(Diag::StopWithoutTurn, Some("interrupted".into()));
        } else if self.main.is_idle() {
            // No main turn: the interrupt is the background scope's.
            self.end_innermost(ctx, TurnResult::Interrupted);
        } else if self.caps.agent_scopes || nested.is_none() {
            // Nested scopes with no turn of their own end with the parent.
            self.interrupt_main(ctx);
        } else {
            self.end_innermost(ctx, TurnResult::Interrupted);
        }
    }

    /// The main turn ends interrupted, and every nested turn with it.
    pub(super) fn interrupt_main(&mut self, ctx: &mut Ctx) {
        self.start_implied(ctx);
        if let Some(rec) = self.main.finish() {
            self.finish_main(ctx, rec, TurnResult::Interrupted);
        }
    }

    /// The agent waits for the next prompt (`Notification(idle_prompt)`): where that ends
    /// a turn the user stopped with no other hook (`Capabilities::idle_ends_turn`), the
    /// main turn still running, with nothing waiting on the user, was interrupted. A notice
    /// naming the running turn's own id does not end it: Qwen Code 0.24.4 sends that one
    /// just before the `StopFailure` of a failed model call (the notice after an Escape,
    /// or after a turn's `Stop`, names no running turn).
    pub(super) fn idle(&mut self, ctx: &mut Ctx, turn_id: Option<&TurnId>) {
        let Some(running) = self.main.running() else {
            return;
        };
        if !self.caps.idle_ends_turn
            || (turn_id.is_some() && running.turn_id.as_ref() == turn_id)
            || self.blocking.blocks(&self.tools)
        {
            return;
        }
        ctx.note(Diag::IdleEndedTurn, None);
        self.interrupt_main(ctx);
    }

    /// The epoch new nested turns belong to: the running or armed main turn's, else the
    /// last one.
    pub(super) fn main_epoch(&self) -> u64 {
        match (self.main.running(), self.main.armed()) {
            (Some(rec), _) => rec.epoch,
            (None, Some(armed)) => armed.epoch,
            (None, None) => self.history.epoch(),
        }
    }
}

fn show(id: Option<&TurnId>) -> String {
    id.map_or_else(|| "-".to_owned(), TurnId::to_string)
}
