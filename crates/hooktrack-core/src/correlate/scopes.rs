//! Nested scopes: subagents and system-triggered turns on top of a running main turn.
//!
//! Kimi subagents carry no id, so scopes stack and events belong to the innermost one.
//! Claude and Codex tag subagent events with `agent_id`, so scopes are looked up by id
//! and parallel subagents can interleave.

use super::{Correlator, MAX_SCOPE_DEPTH, NestedScope, Origin, Owner, Scope, TurnRecord, remember};
use crate::diagnostics::Diag;
use crate::event::TurnId;
use crate::posture::TurnResult;

impl Correlator {
    fn push_scope(&mut self, scope: NestedScope) {
        if self.scopes.len() >= MAX_SCOPE_DEPTH {
            self.note(Diag::StateLimitReached, Some("nested scopes".into()));
            let oldest = self.scopes.remove(0);
            if let Some(nested) = oldest.turn {
                self.close_nested(nested, TurnResult::TerminalGap);
            }
        }
        self.scopes.push(scope);
    }

    /// The scope of a subagent, by its id (providers with agent ids).
    pub(super) fn agent_scope(&self, agent: Option<&str>) -> Option<usize> {
        let agent = agent?;
        self.scopes
            .iter()
            .rposition(|s| s.agent_id.as_deref() == Some(agent))
    }

    /// The turn an event belongs to: the subagent's (by id, or the innermost open nested
    /// turn where scopes stack), else the running main turn.
    pub(super) fn owner(&self, agent: Option<&str>) -> Owner {
        let nested = if self.caps.agent_scopes {
            self.agent_scope(agent)
                .and_then(|i| self.scopes[i].turn.as_ref())
        } else {
            self.scopes.iter().rev().find_map(|s| s.turn.as_ref())
        };
        if let Some(rec) = nested {
            return Owner::Nested(rec.id);
        }
        match self.main.running() {
            Some(_) => Owner::Main,
            None => Owner::NoTurn,
        }
    }

    pub(super) fn turn_mut(&mut self, owner: Owner) -> Option<&mut TurnRecord> {
        match owner {
            Owner::Main => self.main.running_mut(),
            Owner::Nested(id) => self
                .scopes
                .iter_mut()
                .filter_map(|s| s.turn.as_mut())
                .find(|t| t.id == id),
            Owner::NoTurn => None,
        }
    }

    /// Attributes the event to its turn (by stream order, or by agent id).
    pub(super) fn touch(&mut self, agent: Option<&str>) {
        let line = self.line;
        let owner = self.owner(agent);
        if let Some(rec) = self.turn_mut(owner) {
            rec.last_row = line;
        }
    }

    /// Notes an agent id no open scope has (its SubagentStart was missed).
    pub(super) fn check_agent(&mut self, agent: Option<&str>) {
        if self.caps.agent_scopes
            && let Some(agent) = agent
            && self.agent_scope(Some(agent)).is_none()
        {
            self.note(Diag::AgentWithoutScope, Some(agent.to_owned()));
        }
    }

    pub(super) fn subagent_started(&mut self, name: Option<&str>, agent_id: Option<&str>) {
        self.start_implied();
        self.touch(None);
        let label = Scope::Subagent(name.filter(|n| !n.is_empty()).map(str::to_owned));
        let turn = if self.caps.subagent_scope_is_turn {
            let epoch = self.main_epoch();
            Some(self.new_record(epoch, label.clone(), Origin::Subagent, None))
        } else {
            None
        };
        self.push_scope(NestedScope {
            label,
            agent_id: agent_id.map(str::to_owned),
            opened_by_turn: false,
            turn,
        });
    }

    /// A prompt sent to a subagent (Codex child prompts): part of that subagent's turn.
    pub(super) fn agent_prompt(&mut self, agent: Option<&str>) {
        self.check_agent(agent);
        let Some(index) = self.agent_scope(agent) else {
            self.touch(None);
            return;
        };
        if self.scopes[index].turn.is_none() {
            let epoch = self.main_epoch();
            let label = self.scopes[index].label.clone();
            let rec = self.new_record(epoch, label, Origin::User, None);
            self.scopes[index].turn = Some(rec);
        }
        self.touch(agent);
    }

    /// A prompt inside an open scope where scopes stack (Kimi CLI subagents send their own
    /// prompts): it starts that scope's next nested turn.
    pub(super) fn nested_prompt(&mut self) {
        let epoch = self.main_epoch();
        let Some(top) = self.scopes.len().checked_sub(1) else {
            return;
        };
        if let Some(open) = self.scopes[top].turn.take() {
            self.note(
                Diag::NestedTurnUnended,
                Some(self.scopes[top].label.to_string()),
            );
            self.close_nested(open, TurnResult::TerminalGap);
        }
        let label = self.scopes[top].label.clone();
        let rec = self.new_record(epoch, label, Origin::User, None);
        self.scopes[top].turn = Some(rec);
    }

    /// TurnStarted(system_trigger): a nested turn under a running main turn, else a main
    /// turn of its own.
    pub(super) fn system_turn(&mut self, turn_id: Option<TurnId>, name: &str) {
        let origin = Origin::SystemTrigger(name.to_owned());
        if self.main.armed().is_some() {
            // The prompt's turn started under a system origin: bind it.
            self.bind(turn_id);
            return;
        }
        if self.main.is_idle() {
            self.epoch += 1;
            let rec = self.new_record(self.epoch, Scope::Main, origin, turn_id);
            self.main.start(rec);
            return;
        }
        let epoch = self.main_epoch();
        // A subagent scope waiting for its turn takes it.
        if let Some(top) = self.scopes.len().checked_sub(1)
            && !self.scopes[top].opened_by_turn
        {
            let label = self.scopes[top].label.clone();
            if let Some(open) = self.scopes[top].turn.take() {
                self.note(Diag::NestedTurnUnended, Some(label.to_string()));
                self.close_nested(open, TurnResult::TerminalGap);
            }
            let rec = self.new_record(epoch, label, origin, turn_id);
            self.scopes[top].turn = Some(rec);
            return;
        }
        let label = Scope::SystemTrigger(name.to_owned());
        let rec = self.new_record(epoch, label.clone(), origin, turn_id);
        self.push_scope(NestedScope {
            label,
            agent_id: None,
            opened_by_turn: true,
            turn: Some(rec),
        });
    }

    pub(super) fn close_nested(&mut self, mut rec: TurnRecord, result: TurnResult) {
        let owner = Owner::Nested(rec.id);
        let open: Vec<_> = self
            .tools
            .iter()
            .filter(|(_, t)| t.owner == owner)
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            self.tools.shift_remove(&id);
            self.note(Diag::ToolOpenAtTurnEnd, Some(id.to_string()));
            remember(&mut self.recently_closed_tools, id);
        }
        self.permissions.retain(|_, (o, _)| *o != owner);
        self.latch(&mut rec, result);
        self.out.closed.push(rec);
    }

    /// SubagentStop ends the subagent's scope; its open nested turn ends with it, in
    /// success: the subagent reported back (Kimi CLI fires SubagentStop only then).
    pub(super) fn subagent_stopped(&mut self, name: Option<&str>, agent_id: Option<&str>) {
        let index = if self.caps.agent_scopes {
            self.agent_scope(agent_id)
        } else {
            self.scopes.iter().rposition(|s| !s.opened_by_turn)
        };
        let Some(index) = index else {
            let late = agent_id.is_some_and(|a| self.recently_closed_agents.iter().any(|c| c == a));
            let detail = agent_id.or(name).map(str::to_owned);
            if late {
                self.note(Diag::SubagentStopLate, detail);
            } else {
                self.note(Diag::SubagentStopWithoutStart, detail);
            }
            return;
        };
        // Where scopes stack, system-triggered scopes above the subagent end unseen.
        while self.scopes.len() > index + 1 {
            let Some(scope) = self.scopes.pop() else {
                break;
            };
            if let Some(open) = scope.turn {
                self.note(Diag::NestedTurnUnended, Some(scope.label.to_string()));
                self.close_nested(open, TurnResult::TerminalGap);
            }
        }
        let scope = self.scopes.remove(index);
        if let Some(agent) = scope.agent_id {
            remember(&mut self.recently_closed_agents, agent);
        }
        if let Some(open) = scope.turn {
            if !self.caps.subagent_scope_is_turn {
                self.note(
                    Diag::NestedTurnEndedBySubagentStop,
                    Some(scope.label.to_string()),
                );
            }
            self.close_nested(open, TurnResult::Success);
        }
        self.touch(None);
    }
}
