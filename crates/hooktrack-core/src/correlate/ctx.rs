//! The event being correlated: its line, time and source, and what it produced so far.
//! Passed to every step by `&mut`, so that the state kept between events is only state.

use super::{Outcome, Owner, TurnRecord};
use crate::diagnostics::{Diag, Note};
use crate::posture::TurnResult;
use crate::source::Source;
use crate::time::Timestamp;

#[derive(Debug)]
pub(super) struct Ctx {
    /// The event's line (1-based): the row index in the ledger.
    pub line: u64,
    /// The event's time, if known.
    pub now: Option<Timestamp>,
    pub source: Source,
    /// The notes and closed turns collected for this event.
    pub out: Outcome,
    /// The turn the event was found to belong to, where its step decides one (a call's,
    /// a permission's, a subagent launcher's): whose agent it shows going on.
    pub attributed: Option<Owner>,
}

impl Ctx {
    pub(super) fn new(line: u64, now: Option<Timestamp>, source: Source) -> Self {
        Self {
            line,
            now,
            source,
            out: Outcome::default(),
            attributed: None,
        }
    }

    /// The event belongs to `owner`'s turn.
    pub(super) fn attribute(&mut self, owner: Owner) {
        self.attributed = Some(owner);
    }

    pub(super) fn note(&mut self, diag: Diag, detail: Option<String>) {
        self.out.notes.push(Note::new(diag, detail));
    }

    /// Sets a turn's one result. The ending event is part of the turn unless the turn
    /// ended unseen: a terminal gap keeps its last evidence row, and its end time is when
    /// the gap was detected.
    pub(super) fn latch(&self, rec: &mut TurnRecord, result: TurnResult) {
        debug_assert_eq!(
            rec.result,
            TurnResult::Open,
            "a turn result is latched once"
        );
        rec.result = result;
        rec.ended_by = Some(self.source);
        if result != TurnResult::TerminalGap && self.source == Source::Hook {
            rec.last_row = self.line;
        }
        rec.ended_at = self.now;
    }

    /// Latches `rec` with `result` and hands it to the ledger.
    pub(super) fn close(&mut self, mut rec: TurnRecord, result: TurnResult) {
        self.latch(&mut rec, result);
        self.out.closed.push(rec);
    }
}
