//! Tool events: which turn they belong to, and what they do to it. The calls themselves
//! are in `tools.rs`; what a call does to a permission window is `blocking.rs`'s.

use super::ctx::Ctx;
use super::tools::Finished;
use super::{Correlator, Owner};
use crate::diagnostics::Diag;
use crate::event::ToolRef;
use crate::source::Source;

impl Correlator {
    pub(super) fn tool_started(&mut self, ctx: &mut Ctx, tool: &ToolRef<'_>) {
        self.start_implied(ctx);
        self.start_by_tool(ctx, tool.agent.as_deref());
        let agent = tool.agent.as_deref();
        self.check_agent(ctx, agent);
        let owner = self.owner(agent);
        if let Some(rec) = self.turn_mut(owner) {
            rec.tool_calls += 1;
            rec.last_row = ctx.line;
        }
        if owner == Owner::NoTurn && !self.continues(ctx, tool.name.as_deref()) {
            ctx.note(
                Diag::ToolWithoutTurn,
                tool.name.as_deref().map(str::to_owned),
            );
        }
        ctx.attribute(owner);
        let dialogs = self.caps.dialogs;
        self.blocking
            .call_started(dialogs.permission_answer, tool.name.as_deref());
        self.tools.start(
            ctx,
            tool,
            owner,
            self.caps.tool_ids,
            dialogs.asks_user(tool),
        );
    }

    /// PostToolUse / PostToolUseFailure. `interrupt`: the user interrupted the call, which
    /// ends the turn interrupted (Claude's only interrupt trace).
    pub(super) fn tool_finished(&mut self, ctx: &mut Ctx, tool: &ToolRef<'_>, interrupt: bool) {
        if ctx.source == Source::Transcript
            && !self.caps.tool_ids
            && tool.call_id.is_some()
            && tool.name.is_none()
        {
            // A transcript's end of a call named only by the model's id, which none of the
            // provider's hooks carries (GitHub Copilot CLI's rejected call): the only open
            // call is it. A transcript line is not a row: no `last_row`.
            if let Some(owner) = self.tools.finish_sole() {
                ctx.attribute(owner);
            }
            if interrupt {
                self.interrupt_main(ctx);
            }
            return;
        }
        match self.tools.finish(ctx, tool, self.caps.tool_ids) {
            Finished::Closed { key, owner } => {
                ctx.attribute(owner);
                // A transcript line is not a row: the turn's rows stay the hooks'.
                if ctx.source == Source::Hook
                    && let Some(rec) = self.turn_mut(owner)
                {
                    rec.last_row = ctx.line;
                }
                self.blocking
                    .call_finished(self.caps.dialogs.permission_answer, key);
            }
            Finished::NotOpen => ctx.attribute(self.owner(tool.agent.as_deref())),
            Finished::Unpaired => {
                ctx.attribute(self.owner(tool.agent.as_deref()));
                self.touch(ctx, tool.agent.as_deref());
            }
        }
        if interrupt {
            self.interrupt_main(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::{Correlator, Observation};
    use crate::agent::Agent;
    use crate::diagnostics::{Diag, Note};
    use crate::event::{Decision, Event, ToolRef};

    fn feed(c: &mut Correlator, line: u64, event: Event<'_>) -> Vec<Note> {
        let obs = Observation {
            line,
            generation: None,
            event: &event,
            source: crate::source::Source::Hook,
        };
        c.observe(obs, None).notes
    }

    fn prompt() -> Event<'static> {
        Event::PromptSubmitted {
            text: Cow::Borrowed("go"),
            steer: false,
            turn_id: None,
            agent: None,
        }
    }

    fn tool(call_id: Option<&'static str>, name: &'static str) -> ToolRef<'static> {
        ToolRef {
            call_id: call_id.map(Cow::Borrowed),
            name: Some(Cow::Borrowed(name)),
            ..ToolRef::default()
        }
    }

    /// GitHub Copilot CLI's session log ends a rejected call by the model's id, which no
    /// hook carries: it closes the only open call, and none while two are open.
    #[test]
    fn a_transcript_end_by_id_alone_closes_only_a_sole_open_call() {
        let mut c = Correlator::new(Agent::CopilotCli.capabilities());
        let denied = || Event::ToolFailed {
            tool: ToolRef {
                call_id: Some(Cow::Borrowed("call_1")),
                ..ToolRef::default()
            },
            error: None,
            interrupt: false,
        };
        let from_transcript = |c: &mut Correlator, line: u64, event: Event<'_>| {
            let obs = Observation {
                line,
                generation: None,
                event: &event,
                source: crate::source::Source::Transcript,
            };
            c.observe(obs, None).notes
        };
        feed(&mut c, 1, prompt());
        for line in [2, 3] {
            feed(
                &mut c,
                line,
                Event::ToolStarted {
                    tool: tool(None, "Bash"),
                },
            );
        }
        let notes = from_transcript(&mut c, 1, denied());
        assert!(
            notes.iter().any(|n| n.diag == Diag::TranscriptMarkerStale),
            "{notes:?}"
        );
        assert_eq!(c.posture().turn.open_tool_calls, 2);
        feed(
            &mut c,
            4,
            Event::ToolFinished {
                tool: tool(None, "Bash"),
            },
        );
        let notes = from_transcript(&mut c, 2, denied());
        assert_eq!(notes, []);
        assert_eq!(c.posture().turn.open_tool_calls, 0);
        assert_eq!(c.posture().turn.phase, crate::posture::Phase::Active);
    }

    #[test]
    fn a_real_id_never_finishes_a_fifo_call() {
        let mut c = Correlator::new(Agent::GeminiCli.capabilities());
        feed(&mut c, 1, prompt());
        feed(
            &mut c,
            2,
            Event::ToolStarted {
                tool: tool(None, "read"),
            },
        );
        let tool = tool(Some("~1"), "read");
        let notes = feed(&mut c, 3, Event::ToolFinished { tool });
        assert_eq!(
            notes,
            [Note::new(Diag::ToolFinishWithoutStart, Some("~1".into()))]
        );
        assert_eq!(c.posture().turn.open_tool_calls, 1);
    }

    #[test]
    fn a_real_id_never_resolves_a_by_name_permission() {
        let mut c = Correlator::new(Agent::KimiCode.capabilities());
        feed(&mut c, 1, prompt());
        let tool_ref = tool(None, "Shell");
        let notes = feed(
            &mut c,
            2,
            Event::PermissionRequested {
                tool: tool_ref,
                approval_id: None,
                turn_id: None,
            },
        );
        assert!(notes.contains(&Note::new(Diag::PermissionUnmatched, Some("Shell?".into()))));
        let notes = feed(
            &mut c,
            3,
            Event::PermissionResolved {
                tool: tool(Some("Shell?"), "Shell"),
                approval_id: None,
                decision: Decision::Other,
            },
        );
        assert_eq!(
            notes,
            [Note::new(
                Diag::PermissionResultWithoutRequest,
                Some("Shell?".into())
            )]
        );
        assert_eq!(c.posture().turn.pending_permissions, 1);
    }
}
