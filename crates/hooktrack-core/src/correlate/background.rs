//! Work that goes on without a running main turn (contract section 11): background shell
//! tasks, turns the agent starts itself, and continuations after a turn's `Stop`.
//! Background scopes themselves are in `scopes.rs`.

use std::collections::VecDeque;

use super::ctx::Ctx;
use super::{Correlator, Origin, Scope};
use crate::diagnostics::Diag;
use crate::event::TurnId;

/// Bound on tracked tasks: memory stays flat whatever the input.
const MAX_BACKGROUND: usize = 256;

/// Background shell tasks reported running, by id (an empty id where none was given),
/// oldest first.
#[derive(Debug, Default)]
pub(super) struct BackgroundTasks {
    running: VecDeque<String>,
}

impl BackgroundTasks {
    pub(super) fn len(&self) -> usize {
        self.running.len()
    }

    /// A task started (Kimi Code `TaskStarted(kind = process)`).
    pub(super) fn started(&mut self, ctx: &mut Ctx, id: Option<&str>) {
        if self.running.len() >= MAX_BACKGROUND {
            self.running.pop_front();
            ctx.note(Diag::StateLimitReached, Some("background tasks".into()));
        }
        self.running.push_back(id.unwrap_or_default().to_owned());
    }

    /// The agent says which tasks still run (Claude Code `Stop.background_tasks`): that
    /// list replaces what was known.
    pub(super) fn replace(&mut self, ids: &[String]) {
        self.running = ids.iter().take(MAX_BACKGROUND).cloned().collect();
    }

    /// A finished task, by the id its report names (a turn the agent started, a
    /// completion notification). An id no tracked task has is another kind of work (a
    /// subagent); a report that names none says nothing about which.
    pub(super) fn finished(&mut self, id: Option<&str>) {
        if let Some(id) = id {
            self.running.retain(|t| t != id);
        }
    }

    pub(super) fn clear(&mut self) {
        self.running.clear();
    }
}

impl Correlator {
    /// `TaskStarted`: a shell task runs in the background; a subagent's task means its
    /// scope does (its launching call returns at once).
    pub(super) fn task_started(&mut self, ctx: &mut Ctx, kind: Option<&str>, id: Option<&str>) {
        match kind {
            Some("process") => self.background_tasks.started(ctx, id),
            // Kimi Code's fire-and-forget hooks put it anywhere around the subagent's
            // TurnStarted and SubagentStart: the newest scope is the subagent's, or the next
            // one to open is.
            Some("agent") => match self.scopes.top() {
                Some(top) if !self.scopes.is_background(top) => {
                    self.scopes.send_to_background(top);
                }
                _ => self.scopes.launched_in_background(),
            },
            _ => {}
        }
        self.touch(ctx, None);
    }

    /// A turn the agent started itself (`TurnStarted(origin_kind = task)`, a task
    /// notification): a main turn of origin `agent` that reports a finished background
    /// task. Like every main turn it has an epoch of its own; its origin, not its epoch,
    /// says nobody typed it.
    pub(super) fn agent_turn(
        &mut self,
        ctx: &mut Ctx,
        turn_id: Option<TurnId>,
        task: Option<&str>,
    ) {
        self.background_tasks.finished(task);
        if self.main.armed().is_some() {
            // A prompt is waiting for its turn: evidence of a user turn wins.
            self.bind(ctx, turn_id);
            return;
        }
        if self.late_agent_turn(ctx, turn_id.clone()) {
            return;
        }
        self.owed.forget();
        if let Some(rec) = self.main.finish() {
            ctx.note(
                Diag::TurnSuperseded,
                Some(format!(
                    "epoch {} still open when the agent started a turn",
                    rec.epoch
                )),
            );
            self.finish_main(ctx, rec, crate::posture::TurnResult::TerminalGap);
        }
        self.end_continuation();
        let epoch = self.next_epoch();
        let rec = self.new_record(ctx, epoch, Scope::Main, Origin::Agent, turn_id);
        self.main.start(rec);
    }

    /// Tool activity with no turn open after a turn ended, and no prompt since: the agent
    /// goes on (a Stop hook that blocked, where the CLI fires no second Stop). Work, not a
    /// turn: the latched result stays. Whether the call is part of one.
    pub(super) fn continues(&mut self, ctx: &mut Ctx, tool: Option<&str>) -> bool {
        if self.main.continuing() {
            return true;
        }
        let after_a_turn = self.history.last_turn().result != crate::posture::TurnResult::None;
        if !after_a_turn || !self.main.go_on() {
            return false;
        }
        ctx.note(Diag::ContinuationAfterStop, tool.map(str::to_owned));
        true
    }

    /// The continuation (if any) ended: a terminal event, a prompt, a turn, or a
    /// transcript's end-of-turn marker.
    pub(super) fn end_continuation(&mut self) {
        self.main.end_continuation();
    }
}
