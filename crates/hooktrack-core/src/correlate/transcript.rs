//! Whether a transcript marker may settle anything. A transcript is read on its own
//! schedule (by offset, from its start, maybe long after the hooks), so a marker counts
//! only for the turn that is open now: not for an older turn (its timestamp is before the
//! open turn started), not for another turn id, not when nothing is open. A transcript
//! never ends a turn with `success` and never reopens one a hook settled.
//!
//! Kimi Code's turn end (`turn.ended`, read as a `Stop`) only ends a continuation; its
//! blocked prompt (`prompt.completed`, `blocked`) only drops the armed prompt. GitHub
//! Copilot CLI's permission answer (`permission.completed`) only ends the open turn's
//! dialog, and its rejected call's end (`tool.execution_complete`, `denied`) only that
//! call.
//!
//! A turn-origin marker (Claude Code's `turnOrigin: "task_notification"`) settles no turn:
//! it names, by turn id only, a main turn the agent started itself. Claude Code writes it
//! just before the hook that starts that turn, so it waits for that hook (one slot) when
//! the named turn is not the open one yet.

use super::ctx::Ctx;
use super::{Correlator, Origin, TurnRecord};
use crate::diagnostics::Diag;
use crate::event::{Event, TurnId};
use crate::posture::TurnResult;

/// What transcript markers told before the hooks did, kept until the hook that settles it:
/// what the next `Stop` owes, and a turn named as the agent's own before it started.
#[derive(Debug, Default)]
pub(super) struct Ahead {
    stop: PendingStop,
    named: NamedTurn,
}

/// What a transcript marker already settled of the turn the next `Stop` ends.
#[derive(Debug, Default)]
pub(super) enum PendingStop {
    #[default]
    Nothing,
    /// A marker ended the main turn before the hook that ends it (Factory Droid's `Stop`
    /// follows its session file's error or cancellation): that `Stop`, with no turn open,
    /// is not a turn that ran unannounced.
    TurnEnded,
    /// A marker ended a turn no hook announced (Factory Droid `exec`: no prompt hook, no
    /// call yet): the `Stop` that follows ends that turn with this result.
    Unannounced(TurnResult),
}

/// A turn a transcript named as one the agent started itself.
#[derive(Debug, Default)]
enum NamedTurn {
    #[default]
    None,
    /// Named before the hook that starts it (Claude Code writes the entry first), in this
    /// epoch: a main turn of a later epoch with another id means it will not start.
    Awaited { turn: TurnId, epoch: u64 },
}

/// What became of an awaited turn name once a main turn runs.
enum Named {
    /// The running turn is the named one.
    Started,
    /// A later turn runs, with another id: the named one will not start.
    Superseded(TurnId),
}

impl Ahead {
    /// Any → `TurnEnded`: a marker ended the running main turn.
    pub(super) fn turn_ended(&mut self) {
        self.stop = PendingStop::TurnEnded;
    }

    /// Nothing (or an earlier unannounced end) → `Unannounced(result)`: a marker ended the
    /// turn that runs unannounced. After `TurnEnded` the `Stop` owed ends nothing: false,
    /// nothing changes.
    fn unannounced_ended(&mut self, result: TurnResult) -> bool {
        if matches!(self.stop, PendingStop::TurnEnded) {
            return false;
        }
        self.stop = PendingStop::Unannounced(result);
        true
    }

    /// Any → Nothing: a new turn begins (a prompt, an unannounced turn's first call); what
    /// a marker said of the last one is spent.
    pub(super) fn turn_begins(&mut self) {
        self.stop = PendingStop::Nothing;
    }

    /// Any → Nothing, at a `Stop`: what it owes.
    pub(super) fn take_stop(&mut self) -> PendingStop {
        std::mem::take(&mut self.stop)
    }

    /// Any → Awaited: turn `turn` named in `epoch`. The turn awaited before, if another
    /// was (it never started).
    fn await_turn(&mut self, turn: TurnId, epoch: u64) -> Option<TurnId> {
        match std::mem::replace(&mut self.named, NamedTurn::Awaited { turn, epoch }) {
            NamedTurn::Awaited { turn, .. } => Some(turn),
            NamedTurn::None => None,
        }
    }

    /// Awaited → None once `open` is the named turn or a later one; else nothing changes.
    fn settle_named(&mut self, open: &TurnRecord) -> Option<Named> {
        let NamedTurn::Awaited { turn, epoch } = &self.named else {
            return None;
        };
        let named = if open.turn_id.as_ref() == Some(turn) {
            Named::Started
        } else if open.epoch > *epoch {
            Named::Superseded(turn.clone())
        } else {
            return None;
        };
        self.named = NamedTurn::None;
        Some(named)
    }
}

impl Correlator {
    pub(super) fn transcript_settles(&mut self, ctx: &mut Ctx, event: &Event<'_>) -> bool {
        // A compaction's end, which only GitHub Copilot CLI's session log tells, settles
        // the open compaction window and nothing else; it may come outside any turn.
        if let Event::CompactionFinished { .. } = event {
            let Some(since) = self.compaction.open_since() else {
                ctx.note(
                    Diag::TranscriptMarkerStale,
                    Some("no compaction open".into()),
                );
                return false;
            };
            if let (Some(since), Some(at)) = (since, ctx.now)
                && at < since
            {
                ctx.note(
                    Diag::TranscriptMarkerStale,
                    Some("written before the open compaction started".into()),
                );
                return false;
            }
            return true;
        }
        let Some(open) = self.main.running() else {
            let armed = self.main.armed().is_some();
            if !armed {
                if matches!(event, Event::Stopped { .. }) {
                    // Kimi Code's `turn.ended`: the turn's real end, after the Stop hook that
                    // ended it and after the continuation a blocking Stop hook caused (no
                    // second Stop). It ends that continuation, or says again what the hook
                    // said: nothing to settle, no guess to count.
                    self.end_continuation();
                    return false;
                }
                if matches!(event, Event::Interrupted { .. } | Event::StopFailed { .. }) {
                    // An end-of-turn marker ends a continuation; the latched result stays.
                    self.end_continuation();
                    let result = match event {
                        Event::Interrupted { .. } => TurnResult::Interrupted,
                        _ => TurnResult::KnownFailure,
                    };
                    // Where turns run unannounced (Factory Droid `exec`), it ends the one
                    // running now, which its `Stop` will record.
                    if self.caps.unannounced_turns && self.ahead.unannounced_ended(result) {
                        return false;
                    }
                }
                ctx.note(Diag::TranscriptMarkerStale, Some("no turn open".into()));
                return false;
            }
            return matches!(
                event,
                Event::Interrupted { .. } | Event::PromptBlocked { .. }
            );
        };
        if let (Some(started), Some(at)) = (open.started_at, ctx.now)
            && at < started
        {
            ctx.note(
                Diag::TranscriptMarkerStale,
                Some(format!("written before turn {} started", open.id)),
            );
            return false;
        }
        match event {
            Event::Interrupted { turn_id, .. } | Event::StopFailed { turn_id, .. } => {
                match (&open.turn_id, turn_id) {
                    (Some(bound), Some(named)) if bound != named => {
                        ctx.note(
                            Diag::TranscriptMarkerStale,
                            Some(format!("names turn {named}, open turn is {bound}")),
                        );
                        false
                    }
                    _ => true,
                }
            }
            Event::ToolFailed { tool, .. } if !self.caps.tool_ids => {
                // The hooks carry no call id (GitHub Copilot CLI): the call the marker names
                // by the model's id is the open turn's, if it is the only call open.
                let sole = self.tools.len() == 1;
                if !sole {
                    ctx.note(
                        Diag::TranscriptMarkerStale,
                        Some(format!(
                            "call {} named by id only, {} calls open",
                            tool.call_id.as_deref().unwrap_or("?"),
                            self.tools.len()
                        )),
                    );
                }
                sole
            }
            Event::ToolFailed { tool, .. } => {
                let open_call = tool
                    .call_id
                    .as_deref()
                    .is_some_and(|id| self.tools.is_open(id));
                if !open_call {
                    ctx.note(
                        Diag::TranscriptMarkerStale,
                        tool.call_id
                            .as_deref()
                            .map(|id| format!("call {id} is not open")),
                    );
                }
                open_call
            }
            // GitHub Copilot CLI's `permission.completed`: the open turn's dialog was
            // answered (it ends the blocked window, nothing else).
            Event::PermissionResolved { .. } => true,
            // The classifiers produce nothing else; anything else would be a guess.
            _ => {
                ctx.note(Diag::TranscriptMarkerStale, Some(event.kind().into()));
                false
            }
        }
    }

    /// A transcript says turn `named` is one the agent started itself: the open main turn
    /// with that id takes origin `agent` now, a turn not open yet when its hook starts it.
    /// A turn id is the only link: the entry's time is before its own turn's start.
    pub(super) fn transcript_agent_turn(&mut self, ctx: &mut Ctx, named: Option<&TurnId>) {
        let Some(named) = named else {
            ctx.note(Diag::TranscriptMarkerStale, Some("names no turn".into()));
            return;
        };
        let open = self
            .main
            .running()
            .is_some_and(|rec| rec.turn_id.as_ref() == Some(named));
        if open {
            self.make_agent_turn(ctx);
            return;
        }
        if let Some(unused) = self.ahead.await_turn(named.clone(), self.history.epoch()) {
            ctx.note(
                Diag::TranscriptMarkerStale,
                Some(format!("turn {unused} never started")),
            );
        }
    }

    /// After a hook event, while a transcript named a turn not yet open: that turn is the
    /// open one now, or a main turn that started since is another (then the named one will
    /// not start as a main turn, and the name settles nothing).
    pub(super) fn settle_named_agent_turn(&mut self, ctx: &mut Ctx) {
        let Some(open) = self.main.running() else {
            return;
        };
        match self.ahead.settle_named(open) {
            Some(Named::Started) => self.make_agent_turn(ctx),
            Some(Named::Superseded(named)) => ctx.note(
                Diag::TranscriptMarkerStale,
                Some(format!("names turn {named}, open turn is {}", open.id)),
            ),
            None => {}
        }
    }

    /// The open main turn is the agent's own: the hooks took it for a user's when its
    /// prompt did not say so (cut, missing, or a shape the adapter does not know).
    fn make_agent_turn(&mut self, ctx: &mut Ctx) {
        let Some(rec) = self.main.running_mut() else {
            return;
        };
        if rec.origin == Origin::Agent {
            return;
        }
        let was = rec.origin.to_string();
        rec.origin = Origin::Agent;
        ctx.note(
            Diag::TurnOriginFromTranscript,
            Some(format!("turn {} was {was}", rec.id)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Ahead, PendingStop};
    use crate::posture::TurnResult;

    #[test]
    fn a_stop_owed_for_an_ended_turn_is_not_replaced_by_an_unannounced_end() {
        let mut ahead = Ahead::default();
        assert!(ahead.unannounced_ended(TurnResult::Interrupted));
        assert!(
            ahead.unannounced_ended(TurnResult::KnownFailure),
            "the newer end"
        );
        ahead.turn_ended();
        assert!(!ahead.unannounced_ended(TurnResult::Interrupted));
        assert!(matches!(ahead.take_stop(), PendingStop::TurnEnded));
        assert!(
            matches!(ahead.take_stop(), PendingStop::Nothing),
            "taken once"
        );
        assert!(ahead.unannounced_ended(TurnResult::KnownFailure));
        ahead.turn_begins();
        assert!(matches!(ahead.take_stop(), PendingStop::Nothing));
    }
}
