//! What set each posture fact a supervisor acts on: the source, the event and the line.
//!
//! The pipeline compares the facts before and after every event; a fact that changed was
//! set by that event. Facts: presence, phase, blocked, last result, compacting. Only these
//! are compared, not a whole posture: building one per event (its strings cloned) was a
//! tenth of a replay's instructions.

use serde::Serialize;

use crate::posture::{LastTurn, Phase, Presence};
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

/// The facts' values after the last event, to see which ones the next event sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub presence: Presence,
    pub phase: Phase,
    pub compacting: bool,
    pub last_turn: LastTurn,
}

/// Which facts an event changed, in the order of [`Provenance::facts`].
pub type Changed = [bool; 5];

impl Facts {
    /// Takes the values after an event and says which facts changed. The last result is
    /// cloned only when it changed.
    pub fn update(
        &mut self,
        presence: Presence,
        phase: Phase,
        compacting: bool,
        last_turn: &LastTurn,
    ) -> Changed {
        let blocked = |p: Phase| p == Phase::Blocked;
        let changed = [
            self.presence != presence,
            self.phase != phase,
            blocked(self.phase) != blocked(phase),
            self.last_turn != *last_turn,
            self.compacting != compacting,
        ];
        self.presence = presence;
        self.phase = phase;
        self.compacting = compacting;
        if changed[3] {
            self.last_turn = last_turn.clone();
        }
        changed
    }
}

impl Provenance {
    /// Records `cause` for every fact that `changed` marks.
    pub fn record(&mut self, changed: Changed, cause: impl Fn() -> Cause) {
        let slots = [
            &mut self.presence,
            &mut self.phase,
            &mut self.blocked,
            &mut self.last_result,
            &mut self.compacting,
        ];
        for (slot, changed) in slots.into_iter().zip(changed) {
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
