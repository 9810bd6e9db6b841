//! What set each posture fact a supervisor acts on: the source, the event and the line.
//!
//! The pipeline compares the posture before and after every event; a fact that changed
//! was set by that event. Facts: presence, phase, blocked, last result, compacting.

use serde::Serialize;

use crate::posture::{Phase, Posture};
use crate::source::Source;
use crate::time::Timestamp;

/// One event that set a fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    pub source: Source,
    /// The provider's event name (hook), the marker name (transcript) or `process_ended`.
    pub event: String,
    /// The line of the source it was read from: a row of `events.ndjson`, a line of the
    /// transcript; 0 for the process.
    pub line: u64,
    pub at: Option<Timestamp>,
}

/// The cause of each fact's current value (`None`: never set since the start).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Provenance {
    pub presence: Option<Cause>,
    pub phase: Option<Cause>,
    pub blocked: Option<Cause>,
    pub last_result: Option<Cause>,
    pub compacting: Option<Cause>,
}

impl Provenance {
    /// Records `cause` for every fact that differs from `before` to `after`.
    pub fn record(&mut self, before: &Posture, after: &Posture, cause: impl Fn() -> Cause) {
        let blocked = |p: &Posture| p.turn.phase == Phase::Blocked;
        let facts: [(&mut Option<Cause>, bool); 5] = [
            (&mut self.presence, before.presence != after.presence),
            (&mut self.phase, before.turn.phase != after.turn.phase),
            (&mut self.blocked, blocked(before) != blocked(after)),
            (&mut self.last_result, before.last_turn != after.last_turn),
            (
                &mut self.compacting,
                before.maintenance.compacting != after.maintenance.compacting,
            ),
        ];
        for (slot, changed) in facts {
            if changed {
                *slot = Some(cause());
            }
        }
    }

    /// `(fact, cause)` pairs in a fixed order, for `--explain`.
    pub fn facts(&self) -> [(&'static str, Option<&Cause>); 5] {
        [
            ("presence", self.presence.as_ref()),
            ("phase", self.phase.as_ref()),
            ("blocked", self.blocked.as_ref()),
            ("last_result", self.last_result.as_ref()),
            ("compacting", self.compacting.as_ref()),
        ]
    }
}
