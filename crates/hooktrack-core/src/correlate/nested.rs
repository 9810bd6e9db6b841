//! When nested scopes open and close: SubagentStart / SubagentStop, a subagent's prompt, a
//! prompt inside a stacked scope, a system-triggered turn under a running main turn. The
//! scopes themselves are in `scopes.rs`.

use super::ctx::Ctx;
use super::scopes::NestedScope;
use super::{Correlator, Origin, Owner, Scope, TurnRecord};
use crate::diagnostics::Diag;
use crate::event::TurnId;
use crate::posture::TurnResult;

impl Correlator {
    /// Opens a scope; one that left at the depth limit ends unseen.
    fn open_scope(&mut self, ctx: &mut Ctx, scope: NestedScope) {
        if let Some(evicted) = self.scopes.open(ctx, scope) {
            self.close_nested(ctx, evicted, TurnResult::TerminalGap);
        }
    }

    /// Ends a nested turn that has left its scope, with everything it owned.
    pub(super) fn close_nested(&mut self, ctx: &mut Ctx, rec: TurnRecord, result: TurnResult) {
        let owner = Owner::Nested(rec.id);
        self.tools.close_owned_by(ctx, owner);
        self.blocking.nested_turn_ended(owner);
        ctx.close(rec, result);
    }

    /// Notes an agent id no open scope has (its SubagentStart was missed).
    pub(super) fn check_agent(&self, ctx: &mut Ctx, agent: Option<&str>) {
        if self.caps.agent_scopes
            && let Some(agent) = agent
            && self.scopes.by_agent(Some(agent)).is_none()
        {
            ctx.note(Diag::AgentWithoutScope, Some(agent.to_owned()));
        }
    }

    pub(super) fn subagent_started(
        &mut self,
        ctx: &mut Ctx,
        name: Option<&str>,
        agent_id: Option<&str>,
    ) {
        self.start_implied(ctx);
        self.touch(ctx, None);
        // The event is the launching turn's: its agent went on.
        ctx.attribute(self.owner(None));
        let label = Scope::Subagent(name.filter(|n| !n.is_empty()).map(str::to_owned));
        if !self.caps.agent_scopes
            && !self.caps.subagent_scope_is_turn
            && let Some(index) = self.scopes.top_unclaimed_system()
        {
            // The subagent's turn came first (Kimi Code 2.1.0 sends TurnStarted before
            // SubagentStart): the scope it opened is the subagent's, one scope, not two.
            self.scopes.claim_for_subagent(index, label);
            return;
        }
        let turn = if self.caps.subagent_scope_is_turn {
            let epoch = self.main_epoch();
            Some(self.new_record(ctx, epoch, label.clone(), Origin::Subagent, None))
        } else {
            None
        };
        let scope = NestedScope::subagent(label, agent_id.map(str::to_owned), turn);
        self.open_scope(ctx, scope);
    }

    /// A prompt sent to a subagent (Codex child prompts): part of that subagent's turn.
    pub(super) fn agent_prompt(&mut self, ctx: &mut Ctx, agent: Option<&str>) {
        self.check_agent(ctx, agent);
        let Some(index) = self.scopes.by_agent(agent) else {
            self.touch(ctx, None);
            return;
        };
        if self.scopes.turn(index).is_none() {
            let epoch = self.main_epoch();
            let label = self.scopes.label(index).clone();
            let rec = self.new_record(ctx, epoch, label, Origin::User, None);
            self.scopes.give_turn(index, rec);
        }
        self.touch(ctx, agent);
    }

    /// A prompt inside an open scope where scopes stack (Kimi CLI subagents send their own
    /// prompts): it starts that scope's next nested turn.
    pub(super) fn nested_prompt(&mut self, ctx: &mut Ctx) {
        let epoch = self.main_epoch();
        let Some(top) = self.scopes.top() else {
            return;
        };
        self.replace_nested_turn(ctx, top, epoch, Origin::User, None);
    }

    /// TurnStarted(system_trigger) under a running main turn: a subagent scope waiting for
    /// its turn takes it, else the turn opens a scope of its own.
    pub(super) fn nested_system_turn(
        &mut self,
        ctx: &mut Ctx,
        turn_id: Option<TurnId>,
        name: &str,
    ) {
        let epoch = self.main_epoch();
        let origin = Origin::SystemTrigger(name.to_owned());
        if let Some(top) = self.scopes.top_subagent() {
            self.replace_nested_turn(ctx, top, epoch, origin, turn_id);
            return;
        }
        let label = Scope::SystemTrigger(name.to_owned());
        let rec = self.new_record(ctx, epoch, label.clone(), origin, turn_id);
        self.open_scope(ctx, NestedScope::system(label, rec));
    }

    /// The scope at `index` starts its next turn; one still open there ended unseen.
    fn replace_nested_turn(
        &mut self,
        ctx: &mut Ctx,
        index: usize,
        epoch: u64,
        origin: Origin,
        turn_id: Option<TurnId>,
    ) {
        let label = self.scopes.label(index).clone();
        if let Some(open) = self.scopes.take_turn(index) {
            ctx.note(Diag::NestedTurnUnended, Some(label.to_string()));
            self.close_nested(ctx, open, TurnResult::TerminalGap);
        }
        let rec = self.new_record(ctx, epoch, label, origin, turn_id);
        self.scopes.give_turn(index, rec);
    }

    /// SubagentStop ends the subagent's scope; its open nested turn ends with it, in
    /// success: the subagent reported back (Kimi CLI fires SubagentStop only then).
    pub(super) fn subagent_stopped(
        &mut self,
        ctx: &mut Ctx,
        name: Option<&str>,
        agent_id: Option<&str>,
    ) {
        let index = if self.caps.agent_scopes {
            self.scopes.by_agent(agent_id)
        } else {
            self.scopes.innermost_subagent()
        };
        let Some(index) = index else {
            let late = agent_id.is_some_and(|a| self.scopes.was_closed(a));
            let detail = agent_id.or(name).map(str::to_owned);
            if late {
                ctx.note(Diag::SubagentStopLate, detail);
            } else {
                ctx.note(Diag::SubagentStopWithoutStart, detail);
            }
            return;
        };
        // Where scopes stack, system-triggered scopes above the subagent end unseen.
        while let Some(above) = self.scopes.pop_above(index) {
            if let Some(open) = above.turn {
                ctx.note(Diag::NestedTurnUnended, Some(above.label.to_string()));
                self.close_nested(ctx, open, TurnResult::TerminalGap);
            }
        }
        let scope = self.scopes.remove_remembered(index);
        if let Some(open) = scope.turn {
            if !self.caps.subagent_scope_is_turn {
                ctx.note(
                    Diag::NestedTurnEndedBySubagentStop,
                    Some(scope.label.to_string()),
                );
            }
            self.close_nested(ctx, open, TurnResult::Success);
        }
        self.touch(ctx, None);
    }
}
