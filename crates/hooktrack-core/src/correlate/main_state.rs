//! The main scope's state: Idle → Armed (a prompt) → Running (bound by TurnStarted, or at
//! once where the provider has no TurnStarted) → Idle. Idle ⇄ Continuing: tool activity
//! after a turn ended, with no prompt since (contract section 11: a Stop hook that blocked,
//! where the CLI fires no second Stop), is work and not a turn.
//!
//! The state is private to this module so that every transition goes through a named
//! method that checks the state it leaves. Moving into a state (`arm`, `bind`, `start`)
//! expects the caller to have left the previous one first; leaving (`finish`, `clear`)
//! hands back what was open, so the caller can end it and leave its notes. No transition
//! writes a note or a ledger record itself: those belong to the [`Correlator`].
//!
//! [`Correlator`]: super::Correlator

use super::TurnRecord;
use crate::time::Timestamp;

/// A prompt's epoch, waiting for the TurnStarted that binds it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Armed {
    pub epoch: u64,
    /// The prompt's line and time: the turn's record starts there once bound.
    pub line: u64,
    pub at: Option<Timestamp>,
}

/// What was open when the main scope was cleared.
#[derive(Debug)]
pub(super) enum Left {
    Idle,
    Armed(Armed),
    Running(TurnRecord),
}

#[derive(Debug)]
enum State {
    Idle,
    /// Idle, and the agent goes on working after the last turn ended.
    Continuing,
    Armed(Armed),
    Running(TurnRecord),
}

#[derive(Debug)]
pub(super) struct MainState {
    state: State,
}

impl MainState {
    pub(super) fn new() -> Self {
        Self { state: State::Idle }
    }

    /// No turn armed or running (a continuation is no turn).
    pub(super) fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle | State::Continuing)
    }

    /// Whether the agent goes on working after the last turn ended.
    pub(super) fn continuing(&self) -> bool {
        matches!(self.state, State::Continuing)
    }

    /// Idle → Continuing: the agent goes on after its turn ended. True if that began now;
    /// from any other state nothing changes.
    pub(super) fn go_on(&mut self) -> bool {
        if matches!(self.state, State::Idle) {
            self.state = State::Continuing;
            return true;
        }
        false
    }

    /// Continuing → Idle: the continuation ended (a terminal event, a prompt, a turn, a
    /// transcript's end-of-turn marker). From any other state nothing changes.
    pub(super) fn end_continuation(&mut self) {
        if matches!(self.state, State::Continuing) {
            self.state = State::Idle;
        }
    }

    pub(super) fn armed(&self) -> Option<Armed> {
        match self.state {
            State::Armed(armed) => Some(armed),
            _ => None,
        }
    }

    pub(super) fn running(&self) -> Option<&TurnRecord> {
        match &self.state {
            State::Running(rec) => Some(rec),
            _ => None,
        }
    }

    pub(super) fn running_mut(&mut self) -> Option<&mut TurnRecord> {
        match &mut self.state {
            State::Running(rec) => Some(rec),
            _ => None,
        }
    }

    /// Idle → Armed: a prompt opened an epoch; a TurnStarted is to bind it.
    pub(super) fn arm(&mut self, armed: Armed) {
        debug_assert!(
            matches!(self.state, State::Idle),
            "arm from {:?}",
            self.state
        );
        self.state = State::Armed(armed);
    }

    /// Armed → Running: the armed epoch's turn started (seen, or implied by its evidence).
    /// `rec` is that turn's record, built from [`Self::armed`].
    pub(super) fn bind(&mut self, rec: TurnRecord) {
        debug_assert!(
            matches!(self.state, State::Armed(armed) if armed.epoch == rec.epoch),
            "bind epoch {} from {:?}",
            rec.epoch,
            self.state
        );
        self.state = State::Running(rec);
    }

    /// Idle → Running: a turn that no armed prompt announced (the prompt itself starts the
    /// turn, or a TurnStarted came without a prompt).
    pub(super) fn start(&mut self, rec: TurnRecord) {
        debug_assert!(
            matches!(self.state, State::Idle),
            "start from {:?}",
            self.state
        );
        self.state = State::Running(rec);
    }

    /// Running → Idle: the running turn's record, for the caller to latch. From any other
    /// state nothing changes and nothing is returned: there is no turn to end.
    pub(super) fn finish(&mut self) -> Option<TurnRecord> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Running(rec) => Some(rec),
            other => {
                self.state = other;
                None
            }
        }
    }

    /// Armed or Running → Idle: whatever was open (a new prompt supersedes it, a session
    /// end ends it). A continuation is no turn: it stays, for its own end.
    pub(super) fn clear(&mut self) -> Left {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => Left::Idle,
            State::Continuing => {
                self.state = State::Continuing;
                Left::Idle
            }
            State::Armed(armed) => Left::Armed(armed),
            State::Running(rec) => Left::Running(rec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Left, MainState};

    #[test]
    fn a_continuation_is_idle_work_that_only_an_idle_scope_begins_and_clear_keeps() {
        let mut main = MainState::new();
        assert!(main.go_on(), "Idle → Continuing");
        assert!(main.is_idle() && main.continuing());
        assert!(!main.go_on(), "already continuing");
        // A blocked prompt clears the main scope: the continuation is no turn, it stays.
        assert!(matches!(main.clear(), Left::Idle));
        assert!(main.continuing());
        assert!(main.finish().is_none(), "no turn to end");
        assert!(main.continuing());
        main.end_continuation();
        assert!(main.is_idle() && !main.continuing());
        main.end_continuation();
        assert!(main.is_idle(), "from Idle nothing changes");
    }
}
