//! Whether a transcript marker may settle anything. A transcript is read on its own
//! schedule (by offset, from its start, maybe long after the hooks), so a marker counts
//! only for the turn that is open now: not for an older turn (its timestamp is before the
//! open turn started), not for another turn id, not when nothing is open. A transcript
//! never ends a turn with `success` and never reopens one a hook settled.

use super::Correlator;
use super::ctx::Ctx;
use crate::diagnostics::Diag;
use crate::event::Event;

impl Correlator {
    pub(super) fn transcript_settles(&mut self, ctx: &mut Ctx, event: &Event<'_>) -> bool {
        let Some(open) = self.main.running() else {
            let armed = self.main.armed().is_some();
            if !armed {
                if matches!(event, Event::Interrupted { .. } | Event::StopFailed { .. }) {
                    // An end-of-turn marker ends a continuation; the latched result stays.
                    self.end_continuation();
                }
                ctx.note(Diag::TranscriptMarkerStale, Some("no turn open".into()));
                return false;
            }
            return matches!(event, Event::Interrupted { .. });
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
            // The classifiers produce nothing else; anything else would be a guess.
            _ => {
                ctx.note(Diag::TranscriptMarkerStale, Some(event.kind().into()));
                false
            }
        }
    }
}
