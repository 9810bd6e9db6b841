//! How turns are numbered (epochs, ledger record ids) and how the last main turn ended: the
//! part of the state that outlives every turn.

use crate::event::TurnId;
use crate::posture::LastTurn;

#[derive(Debug, Default)]
pub(super) struct History {
    epoch: u64,
    next_record: u64,
    last_turn: LastTurn,
}

impl History {
    /// The newest epoch handed out.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A new epoch: a main turn (or an armed prompt) of its own.
    pub(super) fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }

    /// A new ledger record id.
    pub(super) fn next_record(&mut self) -> u64 {
        self.next_record += 1;
        self.next_record
    }

    /// How the last main turn ended (latched once per turn).
    pub(super) fn last_turn(&self) -> &LastTurn {
        &self.last_turn
    }

    /// A main turn ended: its result is the latched one now.
    pub(super) fn latch(&mut self, last: LastTurn) {
        self.last_turn = last;
    }

    /// The last main turn, if it is `epoch`'s, learns its turn id from a `TurnStarted`
    /// delivered after its end (`order.rs`). Its result stays as latched.
    pub(super) fn name_last(&mut self, epoch: u64, turn_id: TurnId) {
        if self.last_turn.epoch == Some(epoch) {
            self.last_turn.turn_id = Some(turn_id);
        }
    }

    /// A new session (or generation) begins: no turn of it has ended yet.
    pub(super) fn forget_last(&mut self) {
        self.last_turn = LastTurn::default();
    }
}
