//! Nested scopes: subagents and system-triggered turns on top of a running main turn, and
//! those that outlive it (background scopes: a subagent launched in the background, or one
//! still open when the parent turn ended, goes on until its own end).
//!
//! Kimi subagents carry no id, so scopes stack and events belong to the innermost one.
//! Claude and Codex tag subagent events with `agent_id`, so scopes are looked up by id
//! and parallel subagents can interleave.
//!
//! The stack is private to this module. A scope opens through [`Scopes::open`], its turn
//! is given and taken through [`Scopes::give_turn`], [`Scopes::take_turn`] and
//! [`Scopes::end_turn`], and it leaves through the `pop*`/`remove*` methods, which hand
//! back what was open ([`Left`]) for the caller to close and note, as `main_state.rs` does
//! for the main scope. Positions in the stack ([`usize`]) are valid until the next change.

use std::collections::VecDeque;

use super::ctx::Ctx;
use super::{Scope, TurnRecord, remember};
use crate::diagnostics::Diag;

/// Bound on nesting: memory stays flat whatever the input.
const MAX_SCOPE_DEPTH: usize = 64;

#[derive(Debug)]
pub(super) struct NestedScope {
    label: Scope,
    /// The subagent's id, where the provider sends one (Claude, Codex).
    agent_id: Option<String>,
    /// Opened by a system-triggered TurnStarted (closes with its turn), not by SubagentStart.
    opened_by_turn: bool,
    /// Runs in the background: its parent turn ended (or it was launched so) while it
    /// goes on.
    background: bool,
    turn: Option<TurnRecord>,
    /// Its last turn ended by its own end event and the scope stays, waiting for its
    /// SubagentStop (or its next turn): a further Stop is not that turn's.
    turn_ended: bool,
}

impl NestedScope {
    /// A subagent's scope (SubagentStart), with its turn where the scope is one.
    pub(super) fn subagent(
        label: Scope,
        agent_id: Option<String>,
        turn: Option<TurnRecord>,
    ) -> Self {
        Self {
            label,
            agent_id,
            opened_by_turn: false,
            background: false,
            turn,
            turn_ended: false,
        }
    }

    /// The scope a system-triggered turn opened: it closes with that turn.
    pub(super) fn system(label: Scope, turn: TurnRecord) -> Self {
        Self {
            label,
            agent_id: None,
            opened_by_turn: true,
            background: false,
            turn: Some(turn),
            turn_ended: false,
        }
    }
}

/// What a scope that left had open.
#[derive(Debug)]
pub(super) struct Left {
    pub label: Scope,
    pub turn: Option<TurnRecord>,
}

/// Where the next scope to open runs.
#[derive(Debug, Default, PartialEq, Eq)]
enum NextScope {
    #[default]
    Foreground,
    /// A subagent was launched in the background before its scope opened: the next scope
    /// to open is its.
    Background,
}

#[derive(Debug, Default)]
pub(super) struct Scopes {
    /// Outermost first.
    stack: Vec<NestedScope>,
    next: NextScope,
    /// Subagents whose scope ended, so that a late SubagentStop is told from one never
    /// started.
    recently_closed_agents: VecDeque<String>,
}

impl Scopes {
    pub(super) fn len(&self) -> usize {
        self.stack.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// The open nested turns, outermost first.
    pub(super) fn turns(&self) -> impl Iterator<Item = &TurnRecord> {
        self.stack.iter().filter_map(|s| s.turn.as_ref())
    }

    /// The innermost scope.
    pub(super) fn top(&self) -> Option<usize> {
        self.stack.len().checked_sub(1)
    }

    /// The innermost scope that runs in the foreground (inside the running main turn).
    pub(super) fn top_foreground(&self) -> Option<usize> {
        self.stack.iter().rposition(|s| !s.background)
    }

    /// Whether the scope at `index` runs in the background.
    pub(super) fn is_background(&self, index: usize) -> bool {
        self.stack[index].background
    }

    /// How many scopes run in the background.
    pub(super) fn background_len(&self) -> usize {
        self.stack.iter().filter(|s| s.background).count()
    }

    /// Whether the nested turn with this record id runs in a background scope.
    pub(super) fn is_background_turn(&self, id: u64) -> bool {
        self.stack
            .iter()
            .any(|s| s.background && s.turn.as_ref().is_some_and(|t| t.id == id))
    }

    /// The parent turn ended: every open scope goes on in the background. Hands back the
    /// labels of those that were not already.
    pub(super) fn send_all_to_background(&mut self) -> Vec<Scope> {
        self.stack
            .iter_mut()
            .filter_map(|s| (!std::mem::replace(&mut s.background, true)).then(|| s.label.clone()))
            .collect()
    }

    /// The scope at `index` was launched in the background (its launching call returned at
    /// once). Whether it was not already.
    pub(super) fn send_to_background(&mut self, index: usize) -> bool {
        !std::mem::replace(&mut self.stack[index].background, true)
    }

    /// The innermost scope, if a system-triggered TurnStarted opened it and no
    /// SubagentStart has claimed it: the subagent's turn announced before its start (Kimi
    /// Code 2.1.0 sends the two in that order).
    pub(super) fn top_unclaimed_system(&self) -> Option<usize> {
        self.top().filter(|&top| {
            let scope = &self.stack[top];
            // A turn that already ran tools is not one just announced.
            scope.opened_by_turn
                && matches!(scope.label, Scope::SystemTrigger(_))
                && scope.turn.as_ref().is_some_and(|t| t.tool_calls == 0)
        })
    }

    /// The scope at `index` becomes the subagent `label`'s: it stays open past its turn,
    /// until the subagent stops.
    pub(super) fn claim_for_subagent(&mut self, index: usize, label: Scope) {
        let scope = &mut self.stack[index];
        scope.opened_by_turn = false;
        if let Some(turn) = &mut scope.turn {
            turn.scope = label.clone();
        }
        scope.label = label;
    }

    /// The innermost scope, if a SubagentStart opened it (it waits for a turn).
    pub(super) fn top_subagent(&self) -> Option<usize> {
        self.top().filter(|&top| !self.stack[top].opened_by_turn)
    }

    /// The innermost scope a SubagentStart opened.
    pub(super) fn innermost_subagent(&self) -> Option<usize> {
        self.stack.iter().rposition(|s| !s.opened_by_turn)
    }

    /// The scope of a subagent, by its id (providers with agent ids).
    pub(super) fn by_agent(&self, agent: Option<&str>) -> Option<usize> {
        let agent = agent?;
        self.stack
            .iter()
            .rposition(|s| s.agent_id.as_deref() == Some(agent))
    }

    /// Whether this subagent's scope ended recently.
    pub(super) fn was_closed(&self, agent: &str) -> bool {
        self.recently_closed_agents.iter().any(|c| c == agent)
    }

    pub(super) fn label(&self, index: usize) -> &Scope {
        &self.stack[index].label
    }

    pub(super) fn turn(&self, index: usize) -> Option<&TurnRecord> {
        self.stack[index].turn.as_ref()
    }

    /// The innermost scope's turn.
    pub(super) fn top_turn(&self) -> Option<&TurnRecord> {
        self.stack.last().and_then(|s| s.turn.as_ref())
    }

    /// The innermost open nested turn, in whichever scope.
    pub(super) fn innermost_turn(&self) -> Option<&TurnRecord> {
        self.stack.iter().rev().find_map(|s| s.turn.as_ref())
    }

    /// The innermost open nested turn of a foreground scope.
    pub(super) fn innermost_foreground_turn(&self) -> Option<&TurnRecord> {
        self.stack
            .iter()
            .rev()
            .filter(|s| !s.background)
            .find_map(|s| s.turn.as_ref())
    }

    /// The open nested turn with this record id.
    pub(super) fn turn_mut(&mut self, id: u64) -> Option<&mut TurnRecord> {
        self.stack
            .iter_mut()
            .filter_map(|s| s.turn.as_mut())
            .find(|t| t.id == id)
    }

    /// Foreground → Background: a subagent was launched in the background and its scope
    /// has not opened yet (Kimi Code's fire-and-forget hooks may send its `TaskStarted`
    /// first): the next scope to open is its.
    pub(super) fn launched_in_background(&mut self) {
        self.next = NextScope::Background;
    }

    /// Background → Foreground: the session ended before the launched scope opened.
    pub(super) fn forget_launch(&mut self) {
        self.next = NextScope::Foreground;
    }

    /// Opens `scope` as the innermost, in the background if it was launched there. At the
    /// depth limit the outermost scope leaves (noted); its turn is handed back for the
    /// caller to end.
    #[must_use]
    pub(super) fn open(&mut self, ctx: &mut Ctx, mut scope: NestedScope) -> Option<TurnRecord> {
        let mut evicted = None;
        if self.stack.len() >= MAX_SCOPE_DEPTH {
            ctx.note(Diag::StateLimitReached, Some("nested scopes".into()));
            evicted = self.stack.remove(0).turn;
        }
        scope.background |= std::mem::take(&mut self.next) == NextScope::Background;
        self.stack.push(scope);
        evicted
    }

    /// A scope without a turn gets one.
    pub(super) fn give_turn(&mut self, index: usize, rec: TurnRecord) {
        let turn = &mut self.stack[index].turn;
        debug_assert!(turn.is_none(), "give a turn to a scope with one open");
        *turn = Some(rec);
        self.stack[index].turn_ended = false;
    }

    /// Whether the scope's last turn ended by its own end event, the scope staying.
    pub(super) fn turn_ended(&self, index: usize) -> bool {
        self.stack[index].turn_ended
    }

    /// The scope's open turn, taken from it (the scope stays, waiting for its next turn).
    pub(super) fn take_turn(&mut self, index: usize) -> Option<TurnRecord> {
        self.stack[index].turn.take()
    }

    /// The scope's turn ends: taken from it, and a scope that turn opened (or any scope,
    /// `with_scope`) leaves with it; a SubagentStop for it afterwards is late.
    pub(super) fn end_turn(&mut self, index: usize, with_scope: bool) -> Option<TurnRecord> {
        let turn = self.stack[index].turn.take();
        if with_scope || self.stack[index].opened_by_turn {
            let scope = self.stack.remove(index);
            self.leave(scope);
        } else {
            self.stack[index].turn_ended = true;
        }
        turn
    }

    /// The innermost scope leaves unseen, its agent forgotten.
    pub(super) fn pop(&mut self) -> Option<Left> {
        self.stack.pop().map(|scope| Left {
            label: scope.label,
            turn: scope.turn,
        })
    }

    /// The innermost scope leaves unseen if it is above `index` (inside that scope).
    pub(super) fn pop_above(&mut self, index: usize) -> Option<Left> {
        if self.stack.len() > index + 1 {
            self.pop()
        } else {
            None
        }
    }

    /// The innermost scope leaves with the turn under it; a SubagentStop for it
    /// afterwards is late.
    pub(super) fn pop_remembered(&mut self) -> Option<Left> {
        let scope = self.stack.pop()?;
        Some(self.leave(scope))
    }

    /// The scope at `index` leaves (its SubagentStop); another SubagentStop for it
    /// afterwards is late.
    pub(super) fn remove_remembered(&mut self, index: usize) -> Left {
        let scope = self.stack.remove(index);
        self.leave(scope)
    }

    fn leave(&mut self, scope: NestedScope) -> Left {
        if let Some(agent) = scope.agent_id {
            remember(&mut self.recently_closed_agents, agent);
        }
        Left {
            label: scope.label,
            turn: scope.turn,
        }
    }
}
