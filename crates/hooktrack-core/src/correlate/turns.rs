//! The main scope: arming, binding, implied starts, terminal outcomes, session ends.

use super::main_state::{Armed, Left};
use super::{Correlator, Origin, Scope, remember};
use crate::diagnostics::Diag;
use crate::event::TurnId;
use crate::posture::{LastTurn, TurnResult};

impl Correlator {
    /// A prompt: a steer folded into the running turn, a subagent's prompt, a nested turn
    /// inside an open scope, or a new epoch.
    pub(super) fn prompt(&mut self, steer: bool, turn_id: Option<TurnId>, agent: Option<&str>) {
        if steer {
            self.note(Diag::SteerPrompt, None);
            self.queue_length = self.queue_length.saturating_sub(1);
            self.touch(None);
            return;
        }
        if self.caps.agent_scopes && agent.is_some() {
            self.agent_prompt(agent);
            return;
        }
        if !self.caps.agent_scopes && self.main.running().is_some() && !self.scopes.is_empty() {
            self.nested_prompt();
            return;
        }
        self.queue_length = self.queue_length.saturating_sub(1);
        self.arm(turn_id);
    }

    /// Idle/Armed/Running → Armed (or Running where the prompt starts the turn).
    fn arm(&mut self, turn_id: Option<TurnId>) {
        self.clear_main(TurnResult::TerminalGap, Diag::TurnSuperseded);
        self.close_unended_compaction();
        self.epoch += 1;
        if self.caps.prompt_starts_turn {
            let rec = self.new_record(self.epoch, Scope::Main, Origin::User, turn_id);
            self.main.start(rec);
        } else {
            self.main.arm(Armed {
                epoch: self.epoch,
                line: self.line,
                at: self.now,
            });
        }
    }

    /// TurnStarted(user): Armed → Running with its turn id. A TurnStarted with no armed
    /// prompt starts a turn of its own; one naming another id than the running turn's
    /// supersedes it.
    pub(super) fn bind(&mut self, turn_id: Option<TurnId>) {
        if let Some(Armed { epoch, line, at }) = self.main.armed() {
            let rec = self.new_record_from(epoch, Scope::Main, Origin::User, turn_id, line, at);
            self.main.bind(rec);
            return;
        }
        let line = self.line;
        if let Some(rec) = self.main.running_mut()
            && (rec.turn_id.is_none() || rec.turn_id == turn_id)
        {
            rec.turn_id = turn_id;
            rec.last_row = line;
            return;
        }
        match self.main.finish() {
            None => {
                self.note(
                    Diag::TurnStartedWithoutPrompt,
                    turn_id.as_ref().map(|t| format!("turn {t}")),
                );
            }
            Some(rec) => {
                self.note(
                    Diag::TurnSuperseded,
                    Some(format!(
                        "turn {} still open when turn {} started",
                        show(rec.turn_id.as_ref()),
                        show(turn_id.as_ref())
                    )),
                );
                self.finish_main(rec, TurnResult::TerminalGap);
            }
        }
        self.epoch += 1;
        let rec = self.new_record(self.epoch, Scope::Main, Origin::User, turn_id);
        self.main.start(rec);
    }

    /// Turn evidence while only armed: the TurnStarted was missed or never sent.
    pub(super) fn start_implied(&mut self) {
        if let Some(Armed { epoch, line, at }) = self.main.armed() {
            self.note(Diag::TurnStartImplied, Some(format!("epoch {epoch}")));
            let rec = self.new_record_from(epoch, Scope::Main, Origin::Implied, None, line, at);
            self.main.bind(rec);
        }
    }

    /// Clears the main scope for a new epoch or a session end: an armed epoch is
    /// abandoned, a running turn ends with `result` (`diag` says why).
    fn clear_main(&mut self, result: TurnResult, diag: Diag) {
        match self.main.clear() {
            Left::Idle => {}
            Left::Armed(Armed { epoch, line, .. }) => {
                self.note(
                    Diag::EpochAbandoned,
                    Some(format!("epoch {epoch} armed at line {line}")),
                );
            }
            Left::Running(rec) => {
                self.note(diag, Some(format!("epoch {}", rec.epoch)));
                self.finish_main(rec, result);
            }
        }
    }

    /// Ends a main turn that has left the main state (through `finish` or `clear`):
    /// latches the result, closes everything the turn owned.
    pub(super) fn finish_main(&mut self, mut rec: super::TurnRecord, result: TurnResult) {
        let nested_result = if result == TurnResult::Interrupted {
            TurnResult::Interrupted
        } else {
            TurnResult::TerminalGap
        };
        while let Some(scope) = self.scopes.pop() {
            self.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.to_string()));
            if let Some(agent) = scope.agent_id {
                remember(&mut self.recently_closed_agents, agent);
            }
            if let Some(nested) = scope.turn {
                self.close_nested(nested, nested_result);
            }
        }
        let open: Vec<_> = self.tools.drain(..).map(|(id, _)| id).collect();
        for id in open {
            self.note(Diag::ToolOpenAtTurnEnd, Some(id.to_string()));
            remember(&mut self.recently_closed_tools, id);
        }
        let pending: Vec<_> = self.permissions.drain(..).map(|(k, _)| k).collect();
        for key in pending {
            self.note(Diag::PermissionOpenAtTurnEnd, Some(key.to_string()));
        }
        self.latch(&mut rec, result);
        self.last_turn = LastTurn {
            result,
            epoch: Some(rec.epoch),
            turn_id: rec.turn_id.clone(),
            at: self.now,
        };
        self.out.closed.push(rec);
    }

    /// SessionEnd, a new SessionStart or a new generation: whatever is open ended unseen.
    pub(super) fn end_session(&mut self, result: TurnResult, diag: Diag) {
        self.clear_main(result, diag);
        // Scopes, calls and permissions that outlived their turn (or never had one).
        while let Some(scope) = self.scopes.pop() {
            self.note(Diag::ScopeOpenAtTurnEnd, Some(scope.label.to_string()));
            if let Some(nested) = scope.turn {
                self.close_nested(nested, TurnResult::TerminalGap);
            }
        }
        let open: Vec<_> = self.tools.drain(..).map(|(id, _)| id).collect();
        for id in open {
            remember(&mut self.recently_closed_tools, id);
        }
        self.permissions.clear();
        self.close_unended_compaction();
        self.queue_length = 0;
    }

    /// Stop: success for the innermost turn, or the end of a stop-hook continuation.
    pub(super) fn stopped(&mut self, stop_hook_active: bool, turn_id: Option<TurnId>) {
        if !stop_hook_active {
            self.end_innermost(TurnResult::Success);
            return;
        }
        self.note(Diag::StopHookContinuation, None);
        if self.caps.stop_hook_active_continues {
            // Kimi: a stop hook blocked this Stop; the same turn goes on.
            self.touch(None);
            return;
        }
        // Claude, Codex, Gemini: this Stop ends the extra turn a stop hook caused. Gemini
        // announces it with a prompt (the hook's reason); Claude and Codex do not.
        self.start_implied();
        let rec = match self.main.finish() {
            Some(mut rec) => {
                rec.origin = Origin::Continuation;
                rec
            }
            None => {
                self.epoch += 1;
                self.new_record(self.epoch, Scope::Main, Origin::Continuation, turn_id)
            }
        };
        self.finish_main(rec, TurnResult::Success);
    }

    /// Stop / StopFailure: ends the innermost open turn (a nested scope's Stop never ends
    /// the parent). Where subagents have ids, a Stop without one is the main agent's.
    pub(super) fn end_innermost(&mut self, result: TurnResult) {
        if !self.caps.agent_scopes
            && let Some(top) = self.scopes.len().checked_sub(1)
            && self.main.running().is_some()
        {
            let scope = &mut self.scopes[top];
            let label = scope.label.clone();
            let rec = match scope.turn.take() {
                Some(rec) => rec,
                None => {
                    self.note(Diag::NestedTurnImplied, Some(label.to_string()));
                    let epoch = self.main_epoch();
                    self.new_record(epoch, label, Origin::Implied, None)
                }
            };
            if self.scopes[top].opened_by_turn {
                self.scopes.pop();
            }
            self.close_nested(rec, result);
            return;
        }
        // Armed: the turn ran unannounced between its prompt and this end.
        self.start_implied();
        if let Some(rec) = self.main.finish() {
            self.finish_main(rec, result);
        } else if self.caps.unannounced_turns && self.presence == crate::posture::Presence::Present
        {
            // A late Stop after SessionEnd is not a turn that ran: the process is gone.
            self.note(Diag::UnannouncedTurn, None);
            self.epoch += 1;
            let rec = self.new_record(self.epoch, Scope::Main, Origin::Unannounced, None);
            self.finish_main(rec, result);
        } else {
            self.note(Diag::StopWithoutTurn, Some(result.name().into()));
        }
    }

    /// Interrupt is authoritative for the turn it names. Turn ids collide across scopes,
    /// so the id decides only when it tells the main and the nested turn apart.
    pub(super) fn interrupt(&mut self, turn_id: Option<&TurnId>) {
        let main_id = self.main.running().map(|rec| rec.turn_id.clone());
        let nested = self
            .scopes
            .last()
            .and_then(|s| s.turn.as_ref().map(|t| t.turn_id.clone()));
        if !self.caps.agent_scopes
            && let (Some(main_id), Some(nested_id)) = (&main_id, &nested)
        {
            let names_main = turn_id.is_some() && main_id.as_ref() == turn_id;
            let names_nested = turn_id.is_some() && nested_id.as_ref() == turn_id;
            if names_main && !names_nested {
                self.interrupt_main();
                return;
            }
            if !names_nested || names_main {
                self.note(
                    Diag::InterruptScopeAmbiguous,
                    turn_id.map(|t| format!("turn {t}")),
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
        if self.main.is_idle() {
            self.note(Diag::StopWithoutTurn, Some("interrupted".into()));
        } else if self.caps.agent_scopes || self.scopes.last().is_none_or(|s| s.turn.is_none()) {
            // Nested scopes with no turn of their own end with the parent.
            self.interrupt_main();
        } else {
            self.end_innermost(TurnResult::Interrupted);
        }
    }

    /// The main turn ends interrupted, and every nested turn with it.
    pub(super) fn interrupt_main(&mut self) {
        self.start_implied();
        if let Some(rec) = self.main.finish() {
            self.finish_main(rec, TurnResult::Interrupted);
        }
    }

    pub(super) fn main_epoch(&self) -> u64 {
        match (self.main.running(), self.main.armed()) {
            (Some(rec), _) => rec.epoch,
            (None, Some(armed)) => armed.epoch,
            (None, None) => self.epoch,
        }
    }
}

fn show(id: Option<&TurnId>) -> String {
    id.map_or_else(|| "-".to_owned(), TurnId::to_string)
}
