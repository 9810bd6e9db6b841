//! A model call the agent retries by itself (OpenCode and Kilo retry an HTTP 500 after a
//! wait, showing `session.status` `retry`; Pi a retryable error, its `agent_end` marked by
//! the extension): the turn goes on through it. OpenCode's status then reads `busy` again,
//! the way a new prompt's does, so the `busy` that ends a retry wait is the same turn's,
//! not a prompt; Pi runs its loop again with no prompt, a turn it starts itself
//! (`TurnStarted`, system trigger `retry`), which is the waiting turn going on. An `idle`
//! while the wait is on is the wait cancelled (an Escape: OpenCode sends no `session.error`
//! for it), and so is the session's end, so the turn ends `interrupted`. A retry that gives
//! up ends with its failure (`session.error`, Pi's unmarked `agent_end`), as any failure
//! does.

use super::Correlator;
use super::ctx::Ctx;
use crate::diagnostics::Diag;

/// Whether the main turn waits to retry its model call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    #[default]
    None,
    /// The main turn of this epoch waits to retry.
    Waiting { epoch: u64 },
}

impl Correlator {
    /// The agent retries the main turn's model call after a wait.
    pub(super) fn retrying(&mut self, ctx: &mut Ctx) {
        match self.main.running().map(|t| t.epoch) {
            Some(epoch) => {
                self.retry = Retry::Waiting { epoch };
                self.touch(ctx, None);
            }
            None => ctx.note(Diag::RetryWithoutTurn, None),
        }
    }

    /// A prompt with nothing of its own (no text, no turn id: OpenCode's `busy`), or a
    /// turn the agent starts itself to retry (Pi's), while the main turn waits to retry:
    /// the retry started, the turn goes on. True if so.
    pub(super) fn retry_resumed(&mut self, ctx: &mut Ctx, retry_start: bool) -> bool {
        let waiting = self.waiting_retry();
        if waiting && retry_start {
            self.retry = Retry::None;
            ctx.note(Diag::RetryResumed, None);
            self.touch(ctx, None);
            return true;
        }
        false
    }

    /// A `Stop`, or the session's end, while the main turn waits to retry: the wait was
    /// cancelled, the turn is interrupted. True if so (the turn is ended here).
    pub(super) fn retry_cancelled(&mut self, ctx: &mut Ctx) -> bool {
        if !self.waiting_retry() {
            return false;
        }
        self.retry = Retry::None;
        ctx.note(Diag::RetryCancelled, None);
        self.interrupt(ctx, None);
        true
    }

    /// The wait is this running turn's (a wait left by an earlier turn is forgotten).
    fn waiting_retry(&mut self) -> bool {
        let current = self.main.running().map(|t| t.epoch);
        match self.retry {
            Retry::Waiting { epoch } if current == Some(epoch) => true,
            Retry::Waiting { .. } => {
                self.retry = Retry::None;
                false
            }
            Retry::None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Agent;
    use crate::diagnostics::Diag;
    use crate::pipeline::{Fed, Pipeline};
    use crate::posture::{Phase, TurnResult};
    use crate::provider::ProviderChoice;

    /// OpenCode's statuses through the whole pipeline: the turns ended, the notes.
    fn run(statuses: &[&str]) -> (Pipeline, Vec<TurnResult>, Vec<Diag>) {
        let mut pipeline = Pipeline::new(ProviderChoice::Exactly(Agent::OpenCode));
        let (mut ended, mut notes) = (Vec::new(), Vec::new());
        let lines = std::iter::once(
            r#"{"hook_event_name":"session.created","session_id":"ses","properties":{"info":{"id":"ses"}}}"#
                .to_owned(),
        )
        .chain(statuses.iter().map(|s| {
            let attempt = if *s == "retry" { r#","attempt":1"# } else { "" };
            format!(
                r#"{{"hook_event_name":"session.status","session_id":"ses","properties":{{"sessionID":"ses","status":{{"type":"{s}"{attempt}}}}}}}"#
            )
        }));
        for (i, line) in lines.enumerate() {
            if let Fed::Event(step) = pipeline.feed_line(i as u64 + 1, line.as_bytes()) {
                ended.extend(step.outcome.closed.iter().map(|t| t.result));
                notes.extend(step.outcome.notes.iter().map(|n| n.diag));
            }
        }
        (pipeline, ended, notes)
    }

    /// `corpus/opencode/opencode-1.18.33-retry-headless`: busy, retry, busy, idle.
    #[test]
    fn the_busy_after_a_retry_wait_is_the_same_turn() {
        let (pipeline, ended, notes) = run(&["busy", "retry", "busy", "idle"]);
        assert_eq!(ended, [TurnResult::Success]);
        assert!(notes.contains(&Diag::RetryResumed), "{notes:?}");
        assert!(!notes.contains(&Diag::TurnSuperseded), "{notes:?}");
        assert_eq!(pipeline.posture().turn.phase, Phase::Ready);
    }

    /// Escape during the retry wait: OpenCode and Kilo send no `session.error`, only
    /// `idle`. The one turn is interrupted.
    #[test]
    fn idle_during_a_retry_wait_is_the_turn_interrupted() {
        let (_, ended, notes) = run(&["busy", "retry", "idle"]);
        assert_eq!(ended, [TurnResult::Interrupted]);
        assert!(notes.contains(&Diag::RetryCancelled), "{notes:?}");
    }

    /// Pi's events (each its name and the inside of its `properties`) through the whole
    /// pipeline: the turns ended.
    fn run_pi(events: &[(&str, &str)]) -> Vec<TurnResult> {
        let mut pipeline = Pipeline::new(ProviderChoice::Exactly(Agent::Pi));
        let mut ended = Vec::new();
        for (i, (name, props)) in events.iter().enumerate() {
            let line = format!(
                r#"{{"hook_event_name":"{name}","session_id":"s","properties":{{{props}}}}}"#
            );
            if let Fed::Event(step) = pipeline.feed_line(i as u64 + 1, line.as_bytes()) {
                ended.extend(step.outcome.closed.iter().map(|t| t.result));
            }
        }
        ended
    }

    const PI_WAIT: (&str, &str) = (
        "agent_end",
        r#""stopReason":"error","errorMessage":"500 overloaded","retryAttempt":1"#,
    );

    /// Pi's run it starts itself after the wait is the waiting turn going on.
    #[test]
    fn pis_own_run_after_a_retry_wait_is_the_same_turn() {
        let ended = run_pi(&[
            ("session_start", ""),
            ("agent_start", r#""retry":false"#),
            PI_WAIT,
            ("agent_start", r#""retry":true"#),
            ("agent_end", r#""stopReason":"stop""#),
        ]);
        assert_eq!(ended, [TurnResult::Success]);
    }

    /// Quitting Pi while it waits to retry cancels the wait: the turn is interrupted, not
    /// a gap.
    #[test]
    fn the_session_ending_during_a_retry_wait_is_the_turn_interrupted() {
        let ended = run_pi(&[
            ("session_start", ""),
            ("agent_start", r#""retry":false"#),
            PI_WAIT,
            ("session_shutdown", r#""reason":"quit""#),
        ]);
        assert_eq!(ended, [TurnResult::Interrupted]);
    }

    /// The next prompt after a turn that ended normally is a new turn, retry or not
    /// before.
    #[test]
    fn a_retry_wait_does_not_outlive_its_turn() {
        let (_, ended, _) = run(&["busy", "retry", "busy", "idle", "busy", "idle"]);
        assert_eq!(ended, [TurnResult::Success, TurnResult::Success]);
    }
}
