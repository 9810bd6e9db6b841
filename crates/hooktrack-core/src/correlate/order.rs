//! Deliveries out of the agent's order (contract section 12). An agent that does not wait
//! for its hooks (Kimi Code 2.1.0 runs `TurnStarted` fire-and-forget) can have a turn's
//! `Stop` appended before that turn's `TurnStarted`. The rows carry nothing that gives the
//! agent's own order back (no payload timestamp or counter; the emitter takes
//! `emitter_seq` after it started, so racing hooks take it out of spawn order), so the
//! correlator recognises the late row by what it left open: a turn that ended with its
//! start only implied is owed its `TurnStarted`; a `Stop` that found no turn is owed the
//! agent turn it ended. The late row then binds to that turn instead of starting one.
//!
//! What is owed lasts until something that begins another turn or session (a prompt, a
//! turn start, a session end): a later opener is the next turn's, not a late one. An
//! early `Stop` is owed its turn for [`LATE_CLOSER_WITHIN_MS`] at most.

use super::ctx::Ctx;
use super::{Correlator, Origin, Scope};
use crate::diagnostics::Diag;
use crate::event::TurnId;
use crate::posture::TurnResult;
use crate::time::Timestamp;

/// How long after a `Stop` that found no turn its agent turn's `TurnStarted` may still be
/// taken as that turn's, late: racing hook processes are apart by milliseconds (hundreds
/// on a loaded machine), so a `TurnStarted(task)` seconds later is a turn of its own.
/// Rows without a time (bare payload lines) are judged by order alone.
pub(super) const LATE_CLOSER_WITHIN_MS: i64 = 5_000;

/// A `Stop` (or `StopFailure`) that found no turn open: where it was read and what it said.
#[derive(Debug, Clone, Copy)]
pub(super) struct EarlyStop {
    pub result: TurnResult,
    pub line: u64,
    pub at: Option<Timestamp>,
}

/// What a late delivery may still bind to.
#[derive(Debug, Default)]
pub(super) enum Owed {
    #[default]
    Nothing,
    /// The last main turn (this epoch) ended with its start implied: its own
    /// `TurnStarted` may come after its end.
    Opener { epoch: u64 },
    /// A `Stop` came with no turn open: the agent turn it ended may be announced after it.
    Closer(EarlyStop),
    /// A nested turn (this epoch's) ended with its start implied: its own
    /// `TurnStarted(system_trigger)` may come after its end.
    NestedOpener { epoch: u64 },
}

impl Owed {
    /// A main turn whose start was implied ended: its opener may still come.
    pub(super) fn implied_turn_ended(&mut self, epoch: u64) {
        *self = Owed::Opener { epoch };
    }

    /// A nested turn whose start was implied ended: its opener may still come.
    pub(super) fn implied_nested_turn_ended(&mut self, epoch: u64) {
        *self = Owed::NestedOpener { epoch };
    }

    /// A `Stop` with no turn open: its turn's opener may still come.
    pub(super) fn stop_without_turn(&mut self, stop: EarlyStop) {
        *self = Owed::Closer(stop);
    }

    /// Another turn or session begins: nothing late can bind past it.
    pub(super) fn forget(&mut self) {
        *self = Owed::Nothing;
    }

    /// The epoch whose `TurnStarted` is owed, taken once.
    fn take_opener(&mut self) -> Option<u64> {
        match std::mem::take(self) {
            Owed::Opener { epoch } => Some(epoch),
            other => {
                *self = other;
                None
            }
        }
    }

    /// The epoch whose nested `TurnStarted(system_trigger)` is owed, taken once.
    fn take_nested_opener(&mut self) -> Option<u64> {
        match std::mem::take(self) {
            Owed::NestedOpener { epoch } => Some(epoch),
            other => {
                *self = other;
                None
            }
        }
    }

    /// The early `Stop` an agent turn's `TurnStarted` is owed to, taken once.
    fn take_closer(&mut self) -> Option<EarlyStop> {
        match std::mem::take(self) {
            Owed::Closer(stop) => Some(stop),
            other => {
                *self = other;
                None
            }
        }
    }
}

impl Correlator {
    /// A `TurnStarted(user)` with no turn armed or running, right after a turn whose start
    /// was implied ended: that turn's own opener, delivered after its end. It names that
    /// turn and starts nothing. Whether it was taken so.
    pub(super) fn late_opener(&mut self, ctx: &mut Ctx, turn_id: Option<&TurnId>) -> bool {
        if !self.main.is_idle() {
            return false;
        }
        let Some(epoch) = self.owed.take_opener() else {
            return false;
        };
        ctx.note(
            Diag::TurnStartedAfterItsStop,
            Some(match turn_id {
                Some(id) => format!("turn {id} of epoch {epoch}"),
                None => format!("epoch {epoch}"),
            }),
        );
        if let Some(id) = turn_id {
            self.history.name_last(epoch, id.clone());
        }
        true
    }

    /// A `TurnStarted(system_trigger)` right after a nested turn whose start was implied
    /// ended, with no subagent turn open: that nested turn's own opener, delivered after
    /// its end (past its `Stop`, its `SubagentStop` or the parent's `Stop`). It starts
    /// nothing. Whether it was taken so.
    pub(super) fn late_nested_opener(&mut self, ctx: &mut Ctx, turn_id: Option<&TurnId>) -> bool {
        let subagent_turn_open = self
            .scopes
            .top_subagent()
            .is_some_and(|index| self.scopes.turn(index).is_some());
        if subagent_turn_open {
            return false;
        }
        let Some(epoch) = self.owed.take_nested_opener() else {
            return false;
        };
        ctx.note(
            Diag::TurnStartedAfterItsStop,
            Some(match turn_id {
                Some(id) => format!("nested turn {id} of epoch {epoch}"),
                None => format!("nested turn of epoch {epoch}"),
            }),
        );
        true
    }

    /// A `TurnStarted(task)` with no turn armed or running, right after a `Stop` that found
    /// none: the agent turn that `Stop` ended, announced after it. It is recorded as
    /// started and ended at once, with the `Stop`'s result. Whether it was taken so.
    pub(super) fn late_agent_turn(&mut self, ctx: &mut Ctx, turn_id: Option<TurnId>) -> bool {
        if !self.main.is_idle() {
            return false;
        }
        let Some(stop) = self.owed.take_closer() else {
            return false;
        };
        if let (Some(stopped), Some(now)) = (stop.at, ctx.now)
            && now.as_millis() - stopped.as_millis() > LATE_CLOSER_WITHIN_MS
        {
            return false;
        }
        ctx.note(
            Diag::StopBeforeItsTurnStarted,
            Some(format!(
                "{} at line {}{}",
                stop.result.name(),
                stop.line,
                turn_id
                    .as_ref()
                    .map_or_else(String::new, |id| format!(", turn {id}"))
            )),
        );
        self.end_continuation();
        let epoch = self.next_epoch();
        let mut rec = self.new_record(ctx, epoch, Scope::Main, Origin::Agent, turn_id);
        // The turn ran before both rows reached the store: it spans the two deliveries.
        rec.first_row = stop.line.min(ctx.line);
        rec.started_at = stop.at.or(ctx.now);
        self.finish_main(ctx, rec, stop.result);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{EarlyStop, Owed};
    use crate::posture::TurnResult;

    #[test]
    fn what_is_owed_is_taken_once_and_only_as_what_it_is() {
        let mut owed = Owed::default();
        assert!(owed.take_opener().is_none() && owed.take_closer().is_none());
        owed.implied_turn_ended(3);
        assert!(owed.take_closer().is_none(), "an opener is no closer");
        assert_eq!(owed.take_opener(), Some(3));
        assert!(owed.take_opener().is_none(), "taken once");
        owed.stop_without_turn(EarlyStop {
            result: TurnResult::Success,
            line: 7,
            at: None,
        });
        assert!(owed.take_opener().is_none(), "a closer is no opener");
        let stop = owed.take_closer().map(|s| (s.result, s.line));
        assert_eq!(stop, Some((TurnResult::Success, 7)));
        owed.implied_nested_turn_ended(5);
        assert!(
            owed.take_opener().is_none(),
            "a nested opener is no main one"
        );
        assert_eq!(owed.take_nested_opener(), Some(5));
        owed.implied_turn_ended(4);
        owed.forget();
        assert!(
            owed.take_opener().is_none(),
            "forgotten when another turn begins"
        );
    }
}
