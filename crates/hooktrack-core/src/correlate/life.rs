//! The agent process as the events show it: present, absent after its end, or unknown
//! before any sign of it; and which generation of the store's writer the rows come from (a
//! newer one is a new process, and what the old one left open ended unseen).
//!
//! The state is private to this module: it moves through [`Life::row_generation`],
//! [`Life::sign`], [`Life::started`] and [`Life::ended`], each noting its guesses.

use super::ctx::Ctx;
use crate::diagnostics::Diag;
use crate::event::Event;
use crate::posture::Presence;
use crate::source::Source;

#[derive(Debug)]
pub(super) struct Life {
    presence: Presence,
    generation: Option<u64>,
}

impl Life {
    pub(super) fn new() -> Self {
        Self {
            presence: Presence::Unknown,
            generation: None,
        }
    }

    pub(super) fn presence(&self) -> Presence {
        self.presence
    }

    pub(super) fn is_present(&self) -> bool {
        self.presence == Presence::Present
    }

    /// A row of `generation`: true if it is newer than the rows before, a new process
    /// whose presence is unknown again (the caller ends what the old one left open). The
    /// first generation seen is only recorded.
    pub(super) fn row_generation(&mut self, generation: u64) -> bool {
        match self.generation {
            Some(current) if generation > current => {
                self.presence = Presence::Unknown;
                self.generation = Some(generation);
                true
            }
            None => {
                self.generation = Some(generation);
                false
            }
            Some(_) => false,
        }
    }

    /// What an event says of the process: Unknown → Present on any hook event (noted);
    /// Absent → Present only on a new prompt or turn (noted), other late deliveries noted
    /// as such. Session events and the process's end are judged by the correlator
    /// ([`Life::started`], [`Life::ended`]); a transcript entry is no sign of life (it may
    /// be read long after the process ended), nor is a screen read (a pane outlives it).
    pub(super) fn sign(&mut self, ctx: &mut Ctx, event: &Event<'_>) {
        if matches!(
            event,
            Event::SessionStarted { .. } | Event::SessionEnded { .. } | Event::ProcessEnded { .. }
        ) || matches!(ctx.source, Source::Transcript | Source::Screen)
        {
            return;
        }
        match self.presence {
            Presence::Present => {}
            Presence::Unknown => {
                self.presence = Presence::Present;
                ctx.note(Diag::PresenceImplied, None);
            }
            Presence::Absent => {
                // Late fire-and-forget deliveries do not bring the process back; a new
                // prompt or turn does.
                if matches!(
                    event,
                    Event::PromptSubmitted { .. } | Event::TurnStarted { .. } | Event::Heartbeat
                ) {
                    self.presence = Presence::Present;
                    ctx.note(Diag::PresenceImplied, Some("after SessionEnd".into()));
                } else {
                    ctx.note(Diag::EventAfterSessionEnd, None);
                }
            }
        }
    }

    /// Any → Present: a session started. The presence it left.
    pub(super) fn started(&mut self) -> Presence {
        std::mem::replace(&mut self.presence, Presence::Present)
    }

    /// Any → Absent: the session or the process ended. The presence it left.
    pub(super) fn ended(&mut self) -> Presence {
        std::mem::replace(&mut self.presence, Presence::Absent)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::ctx::Ctx;
    use super::Life;
    use crate::diagnostics::Diag;
    use crate::event::Event;
    use crate::posture::Presence;
    use crate::source::Source;

    #[test]
    fn a_hook_event_implies_presence_and_after_the_end_only_a_new_prompt_brings_it_back() {
        let mut ctx = Ctx::new(1, None, Source::Hook);
        let mut life = Life::new();
        let activity = Event::Activity {
            name: Cow::Borrowed("BeforeModel"),
        };
        let prompt = Event::PromptSubmitted {
            text: Cow::Borrowed("go"),
            steer: false,
            turn_id: None,
            agent: None,
        };
        life.sign(&mut ctx, &activity);
        assert_eq!(life.presence(), Presence::Present);
        assert_eq!(life.ended(), Presence::Present);
        life.sign(&mut ctx, &activity);
        assert_eq!(life.presence(), Presence::Absent, "a late delivery");
        life.sign(&mut ctx, &prompt);
        assert!(life.is_present());
        let notes: Vec<_> = ctx.out.notes.iter().map(|n| n.diag).collect();
        assert_eq!(
            notes,
            [
                Diag::PresenceImplied,
                Diag::EventAfterSessionEnd,
                Diag::PresenceImplied
            ]
        );
        // A transcript entry is no sign of life.
        let mut ctx = Ctx::new(2, None, Source::Transcript);
        life.ended();
        life.sign(&mut ctx, &prompt);
        assert_eq!(
            (life.presence(), ctx.out.notes.len()),
            (Presence::Absent, 0)
        );
    }

    #[test]
    fn only_a_newer_generation_is_a_new_process() {
        let mut life = Life::new();
        life.started();
        assert!(!life.row_generation(2), "the first one seen");
        assert!(!life.row_generation(1));
        assert!(!life.row_generation(2));
        assert!(life.is_present());
        assert!(life.row_generation(3));
        assert_eq!(life.presence(), Presence::Unknown);
    }
}
