//! The compaction window: from the agent's `PreCompact` (or the like) to its end. It never
//! spans a new prompt or a session boundary; an agent waiting at its input prompt
//! (`idle_prompt`) is compacting nothing.
//!
//! The state is private to this module and moves through [`Compaction::start`],
//! [`Compaction::finish`], [`Compaction::close_unended`] and [`Compaction::agent_idle`],
//! each checking the state it leaves and noting its guesses.

use super::ctx::Ctx;
use crate::diagnostics::Diag;
use crate::posture::Maintenance;
use crate::time::Timestamp;

#[derive(Debug)]
struct Window {
    trigger: Option<String>,
    since: Option<Timestamp>,
}

#[derive(Debug, Default)]
pub(super) struct Compaction {
    open: Option<Window>,
}

impl Compaction {
    pub(super) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// When the open window started, if one is open.
    pub(super) fn open_since(&self) -> Option<Option<Timestamp>> {
        self.open.as_ref().map(|w| w.since)
    }

    /// The posture's view of it.
    pub(super) fn maintenance(&self) -> Maintenance {
        match &self.open {
            Some(w) => Maintenance {
                compacting: true,
                trigger: w.trigger.clone(),
                since: w.since,
            },
            None => Maintenance::default(),
        }
    }

    /// Any → open, with this trigger, since `ctx.now`. One already open had no end event
    /// (noted).
    pub(super) fn start(&mut self, ctx: &mut Ctx, trigger: Option<&str>) {
        if self.open.is_some() {
            ctx.note(Diag::CompactionStartWhileOpen, None);
        }
        self.open = Some(Window {
            trigger: trigger.map(str::to_owned),
            since: ctx.now,
        });
    }

    /// Open → closed: its end. With none open, the end is noted.
    pub(super) fn finish(&mut self, ctx: &mut Ctx) {
        if self.open.take().is_none() {
            ctx.note(Diag::CompactionEndWithoutStart, None);
        }
    }

    /// Open → closed at a new prompt or a session boundary: it had no end event (Gemini
    /// sends none; a failed Claude compaction neither), noted.
    pub(super) fn close_unended(&mut self, ctx: &mut Ctx) {
        if self.open.take().is_some() {
            ctx.note(Diag::CompactionUnclosed, None);
        }
    }

    /// Open → closed: the agent waits at its input prompt, so nothing runs, a compaction
    /// neither. Qwen Code's `/compress` that keeps the history ("not beneficial", "Could
    /// not compress") fires no `PostCompact`, only this; closing it here keeps the window
    /// to what the screen shows, not until the next prompt.
    pub(super) fn agent_idle(&mut self) {
        self.open = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::ctx::Ctx;
    use super::Compaction;
    use crate::diagnostics::Diag;
    use crate::source::Source;
    use crate::time::Timestamp;

    fn diags(ctx: &Ctx) -> Vec<Diag> {
        ctx.out.notes.iter().map(|n| n.diag).collect()
    }

    #[test]
    fn a_window_opens_with_its_trigger_and_time_and_its_end_closes_it() {
        let mut ctx = Ctx::new(1, Some(Timestamp::from_millis(5)), Source::Hook);
        let mut c = Compaction::default();
        c.start(&mut ctx, Some("manual"));
        let m = c.maintenance();
        assert!(m.compacting);
        assert_eq!(m.trigger.as_deref(), Some("manual"));
        assert_eq!(m.since, Some(Timestamp::from_millis(5)));
        c.finish(&mut ctx);
        assert!(!c.is_open());
        assert_eq!(diags(&ctx), []);
    }

    #[test]
    fn each_end_from_the_wrong_state_is_noted() {
        let mut ctx = Ctx::new(1, None, Source::Hook);
        let mut c = Compaction::default();
        c.finish(&mut ctx);
        c.close_unended(&mut ctx);
        c.start(&mut ctx, None);
        c.start(&mut ctx, Some("auto"));
        c.close_unended(&mut ctx);
        c.start(&mut ctx, None);
        c.agent_idle();
        assert!(!c.is_open());
        assert_eq!(
            diags(&ctx),
            [
                Diag::CompactionEndWithoutStart,
                Diag::CompactionStartWhileOpen,
                Diag::CompactionUnclosed,
            ]
        );
    }
}
