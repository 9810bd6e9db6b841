//! The turn ledger: one record per turn.

use serde::Serialize;

use crate::event::TurnId;
use crate::posture::TurnResult;
use crate::time::Timestamp;

/// One turn, main or nested. Emitted once, when it ends; open turns are reported with
/// `result = open` at the end of a replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TurnRecord {
    /// Ledger ordinal, unique within a stream (order of first evidence).
    pub id: u64,
    /// The main-scope epoch this turn belongs to (nested turns share their parent's).
    pub epoch: u64,
    pub turn_id: Option<TurnId>,
    /// `main`, or the nested scope (`subagent:<name>`, `system_trigger:<name>`).
    pub scope: String,
    /// What started it: `user` (a prompt), `system_trigger:<name>`, `unannounced` (a Stop
    /// with no prompt), `implied` (evidence after the start event was missed).
    pub origin: String,
    pub result: TurnResult,
    pub first_row: u64,
    pub last_row: u64,
    pub started_at: Option<crate::time::Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub tool_calls: u64,
}

impl TurnRecord {
    pub fn is_main(&self) -> bool {
        self.scope == "main"
    }
}
