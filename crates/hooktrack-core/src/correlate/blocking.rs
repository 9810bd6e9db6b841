//! Waits on the user: everything that makes a turn `blocked` (contract section 11), and
//! everything that ends it. Three kinds of window, each kept with the turn that owned it
//! when it opened ([`Owner`]), so a turn's windows close with it:
//!
//! - a **permission window**: a `PermissionRequested` opens it. Its answer closes it (by
//!   its key, else the approval id), or, where the agent sends no answer
//!   ([`PermissionAnswer::CallGoesOn`]), the call going on: its start where the request
//!   named no call, its finish. A transcript's answer closes it by its request id alone.
//! - a **dialog** a notification announced (`InputRequested`), with no permission event: the
//!   next sign of life of its agent answers it ([`Correlator::sign_of_life`], the one place
//!   that rule is applied). The agent's request echo (Claude Code's `permission_prompt`)
//!   opens one only while a call of its agent is open and no window is.
//! - an **open ask-the-user call** (the agent's [`Dialogs::ask_user_tools`]): the call is
//!   the window; it ends when the call does. The call itself is an open call of `tools.rs`,
//!   marked at its start by [`Dialogs::asks_user`].
//!
//! A permission window or a dialog also ends when its agent's pane no longer draws the
//! dialog it was seen drawing ([`Blocking::answered_on_screen`], contract section 12): the
//! screen answers the oldest one (the one drawn), and never an ask-the-user call, whose
//! answer is the call's own end.
//!
//! All of them end with their turn ([`Blocking::turn_ended`] noting the main turn's open
//! permission windows, [`Blocking::nested_turn_ended`]) and with the session
//! ([`Blocking::session_ended`]). The windows and dialogs are private to this file; every
//! transition checks the state it leaves and notes its guesses here or in [`window_key`].
//!
//! [`Dialogs::ask_user_tools`]: crate::provider::Dialogs::ask_user_tools
//! [`Dialogs::asks_user`]: crate::provider::Dialogs::asks_user

use indexmap::IndexMap;

use super::ctx::Ctx;
use super::keys::{PermissionKey, ToolKeyRef};
use super::tools::Tools;
use super::{Correlator, Owner};
use crate::diagnostics::Diag;
use crate::event::{Event, ToolRef};
use crate::payload::text_hash;
use crate::provider::PermissionAnswer;
use crate::source::Source;

/// Bound on pending permission windows: memory stays flat whatever the input.
const MAX_PENDING_PERMISSIONS: usize = 1024;

/// Bound on open dialogs: memory stays flat whatever the input.
const MAX_DIALOGS: usize = 256;

#[derive(Debug)]
struct Window {
    owner: Owner,
    /// The tool the request names (clipped), for the posture's `blocked_tool`.
    tool: Option<String>,
    /// What the request's call acts on, already cut ([`crate::tool_argument`]).
    argument: Option<String>,
    /// Its number in opening order, with the dialogs' ([`Blocking::screen_target`]).
    serial: u64,
}

/// A dialog a notification announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dialog {
    owner: Owner,
    serial: u64,
}

/// The permission windows and dialogs waiting on the user.
#[derive(Debug, Default)]
pub(super) struct Blocking {
    windows: IndexMap<PermissionKey, Window>,
    /// The dialogs shown, one per owner at most.
    dialogs: Vec<Dialog>,
    /// The serial the next window or dialog takes.
    opened: u64,
}

impl Blocking {
    /// How many permission windows are pending.
    pub(super) fn pending_permissions(&self) -> usize {
        self.windows.len()
    }

    /// Whether anything waits on the user: a permission window, a dialog, or an open call
    /// that asks the user (of `tools`).
    pub(super) fn blocks(&self, tools: &Tools) -> bool {
        !self.windows.is_empty() || !self.dialogs.is_empty() || tools.asking_user().is_some()
    }

    /// What the turn waits on: the tool of the newest permission window that names one,
    /// else the newest open ask-the-user call's, and what that call acts on, if known.
    pub(super) fn waits_on<'s>(&'s self, tools: &'s Tools) -> Option<(&'s str, Option<&'s str>)> {
        self.windows
            .values()
            .rev()
            .find_map(|w| Some((w.tool.as_deref()?, w.argument.as_deref())))
            .or_else(|| tools.asking_user_call())
    }

    /// No window → a window owned by `owner`; `tool` is the name the request gives and
    /// `argument` what its call acts on. A request for a window already open is a
    /// duplicate (noted), and changes nothing.
    fn request(
        &mut self,
        ctx: &mut Ctx,
        key: PermissionKey,
        owner: Owner,
        tool: Option<&str>,
        argument: Option<&str>,
    ) {
        if self.windows.contains_key(&key) {
            ctx.note(Diag::PermissionDuplicate, Some(key.to_string()));
            return;
        }
        if self.windows.len() >= MAX_PENDING_PERMISSIONS {
            self.windows.shift_remove_index(0);
            ctx.note(Diag::StateLimitReached, Some("pending permissions".into()));
        }
        let tool = tool.map(|n| crate::envelope::clip_name(n).to_owned());
        let serial = self.next_serial();
        self.windows.insert(
            key,
            Window {
                owner,
                tool,
                argument: argument.map(str::to_owned),
                serial,
            },
        );
    }

    /// A window → none: the answer names it by its key, else by the approval id. An answer
    /// with no window open is noted.
    fn resolve(&mut self, ctx: &mut Ctx, key: PermissionKey, approval_id: Option<&str>) {
        if !self.close(&key, approval_id) {
            ctx.note(Diag::PermissionResultWithoutRequest, Some(key.to_string()));
        }
    }

    /// Closes the window of `key` (or of the answer's own id). True if one was open.
    fn close(&mut self, key: &PermissionKey, approval_id: Option<&str>) -> bool {
        self.windows.shift_remove(key).is_some()
            || approval_id.is_some_and(|id| {
                self.windows
                    .shift_remove(&PermissionKey::Id(id.to_owned()))
                    .is_some()
            })
    }

    /// A call of `name` started. Where no answer event exists, a window opened by name
    /// alone (the request came before any call it could name, as Qwen Code's
    /// `PermissionRequest` precedes `PreToolUse`) is answered: the agent starts a call only
    /// once it is allowed.
    pub(super) fn call_started(&mut self, answer: PermissionAnswer, name: Option<&str>) {
        if answer == PermissionAnswer::CallGoesOn {
            let key = PermissionKey::ByName(name.unwrap_or("permission").to_owned());
            self.windows.shift_remove(&key);
        }
    }

    /// The call of `key` finished. Where no answer event exists, the call going on to
    /// finish answers the window it opened.
    pub(super) fn call_finished(&mut self, answer: PermissionAnswer, key: ToolKeyRef<'_>) {
        if answer == PermissionAnswer::CallGoesOn {
            self.windows.shift_remove(&key);
        }
    }

    fn next_serial(&mut self) -> u64 {
        self.opened += 1;
        self.opened
    }

    /// No dialog of `owner` → one. Already open, it stays one.
    fn open_dialog(&mut self, owner: Owner) {
        if !self.dialogs.iter().any(|d| d.owner == owner) && self.dialogs.len() < MAX_DIALOGS {
            let serial = self.next_serial();
            self.dialogs.push(Dialog { owner, serial });
        }
    }

    /// The agent of `owner` went on: its dialog (if one is open) was answered.
    fn went_on(&mut self, owner: Owner) {
        self.dialogs.retain(|d| d.owner != owner);
    }

    /// What a screen read may end: the serial of the oldest permission window or dialog
    /// (the agent draws one dialog at a time, the oldest first). `None` when only an
    /// ask-the-user call waits, or nothing does.
    pub(super) fn screen_target(&self) -> Option<u64> {
        let window = self.windows.values().map(|w| w.serial).min();
        let dialog = self.dialogs.iter().map(|d| d.serial).min();
        window.into_iter().chain(dialog).min()
    }

    /// The oldest window or dialog → none: its dialog, seen drawn, is no longer on the
    /// agent's screen (noted, with its key). Nothing open to end is no answer.
    pub(super) fn answered_on_screen(&mut self, ctx: &mut Ctx) {
        let Some(serial) = self.screen_target() else {
            return;
        };
        if let Some(at) = self.windows.values().position(|w| w.serial == serial) {
            let detail = self.windows.get_index(at).map(|(key, _)| key.to_string());
            self.windows.shift_remove_index(at);
            ctx.note(Diag::DialogAnsweredOnScreen, detail);
        } else {
            self.dialogs.retain(|d| d.serial != serial);
            ctx.note(Diag::DialogAnsweredOnScreen, Some("dialog".into()));
        }
    }

    /// The pending windows of `from` are `to`'s (the calls they are about moved there).
    pub(super) fn reassign(&mut self, from: Owner, to: Owner) {
        for window in self.windows.values_mut().filter(|w| w.owner == from) {
            window.owner = to;
        }
    }

    /// A nested turn ended: its windows and its dialog end with it (its end is the note).
    pub(super) fn nested_turn_ended(&mut self, owner: Owner) {
        self.windows.retain(|_, w| w.owner != owner);
        self.went_on(owner);
    }

    /// The main turn ended: the windows and dialogs of every owner `of` picks end with it,
    /// each window noted (those of scopes going on in the background stay).
    pub(super) fn turn_ended(&mut self, ctx: &mut Ctx, of: impl Fn(Owner) -> bool) {
        self.windows.retain(|key, w| {
            let closing = of(w.owner);
            if closing {
                ctx.note(Diag::PermissionOpenAtTurnEnd, Some(key.to_string()));
            }
            !closing
        });
        self.dialogs.retain(|d| !of(d.owner));
    }

    /// The session ended: every window and dialog ends unseen (the session's end is the
    /// note).
    pub(super) fn session_ended(&mut self) {
        self.windows.clear();
        self.dialogs.clear();
    }
}

impl Correlator {
    /// A sign of life answers the dialog: an event that shows the agent of a turn going on
    /// (a call started or ended, a permission asked or answered, a subagent launched) ends
    /// the dialog that agent showed. `attributed` is the turn the event was found to belong
    /// to (the launching turn for a subagent's start, the call's own turn for its end).
    pub(super) fn sign_of_life(&mut self, event: &Event<'_>, attributed: Option<Owner>) {
        let goes_on = matches!(
            event,
            Event::ToolStarted { .. }
                | Event::ToolFinished { .. }
                | Event::ToolFailed { .. }
                | Event::PermissionRequested { .. }
                | Event::PermissionResolved { .. }
                | Event::SubagentStarted { .. }
        );
        if let (true, Some(owner)) = (goes_on, attributed) {
            self.blocking.went_on(owner);
        }
    }

    pub(super) fn permission_requested(
        &mut self,
        ctx: &mut Ctx,
        tool: &ToolRef<'_>,
        approval_id: Option<&str>,
    ) {
        self.start_implied(ctx);
        let agent = tool.agent.as_deref();
        let owner = self.owner(agent);
        let key = window_key(ctx, &self.tools, tool, approval_id, owner);
        self.touch(ctx, agent);
        // The request's window says what the dialog's did.
        ctx.attribute(owner);
        // What the call acts on: the request's own input, else the call's it names.
        let argument = tool
            .argument
            .as_deref()
            .or_else(|| self.tools.argument_for(&key))
            .map(str::to_owned);
        self.blocking
            .request(ctx, key, owner, tool.name.as_deref(), argument.as_deref());
    }

    pub(super) fn permission_resolved(
        &mut self,
        ctx: &mut Ctx,
        tool: &ToolRef<'_>,
        approval_id: Option<&str>,
    ) {
        let agent = tool.agent.as_deref();
        let owner = self.owner(agent);
        ctx.attribute(owner);
        if ctx.source == Source::Transcript {
            // A transcript's answer (GitHub Copilot CLI's `permission.completed`, by its
            // request id alone) ends the dialog a `permission_prompt` opened: no hook opened
            // a window for it, so none missing is worth a note. A transcript line is not a
            // row either.
            if let Some(id) = approval_id {
                self.blocking.close(&PermissionKey::Id(id.to_owned()), None);
            }
            return;
        }
        let key = window_key(ctx, &self.tools, tool, approval_id, owner);
        self.touch(ctx, agent);
        self.blocking.resolve(ctx, key, approval_id);
    }

    /// A dialog waits on the user with no permission event. The agent's request echo
    /// blocks only where no request did: it comes seconds after the request, or late after
    /// the answer, so it counts only while a call of its agent is open and no window is.
    pub(super) fn input_requested(
        &mut self,
        ctx: &mut Ctx,
        kind: Option<&str>,
        agent: Option<&str>,
    ) {
        self.check_agent(ctx, agent);
        let owner = self.owner(agent);
        let echo = self.caps.dialogs.request_echo;
        if echo.is_some()
            && kind == echo
            && (!self.blocking.windows.is_empty() || self.tools.count_owned(|o| o == owner) == 0)
        {
            return;
        }
        ctx.note(Diag::BlockedByNotification, kind.map(str::to_owned));
        self.touch(ctx, agent);
        self.blocking.open_dialog(owner);
    }
}

/// The key of a permission window: the call id, the approval id, else the open call it is
/// about, matched by tool name and input (most recent first; only `owner`'s calls where
/// the event names a subagent).
fn window_key(
    ctx: &mut Ctx,
    tools: &Tools,
    tool: &ToolRef<'_>,
    approval_id: Option<&str>,
    owner: Owner,
) -> PermissionKey {
    if let Some(id) = tool.call_id.as_deref().or(approval_id) {
        return PermissionKey::Id(id.to_owned());
    }
    let name_hash = tool.name.as_deref().map(text_hash);
    let owner = tool.agent.is_some().then_some(owner);
    if let Some(key) = tools.latest_matching(name_hash, tool.input_hash, true, owner) {
        return key.into();
    }
    // Codex adds a `description` to the permission request's input: the inputs differ,
    // the tool is the same.
    if let Some(key) = tools.latest_matching(name_hash, tool.input_hash, false, owner) {
        ctx.note(Diag::PermissionMatchedByName, Some(key.to_string()));
        return key.into();
    }
    let key = PermissionKey::ByName(tool.name.as_deref().unwrap_or("permission").to_owned());
    ctx.note(Diag::PermissionUnmatched, Some(key.to_string()));
    key
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::ctx::Ctx;
    use super::super::keys::{PermissionKey, ToolKeyRef};
    use super::super::tools::Tools;
    use super::super::{Correlator, Observation, Owner};
    use super::Blocking;
    use crate::agent::Agent;
    use crate::diagnostics::Diag;
    use crate::event::{Event, ToolRef};
    use crate::posture::Phase;
    use crate::provider::PermissionAnswer;
    use crate::source::Source;

    fn ctx() -> Ctx {
        Ctx::new(1, None, Source::Hook)
    }

    fn diags(ctx: &Ctx) -> Vec<Diag> {
        ctx.out.notes.iter().map(|n| n.diag).collect()
    }

    fn id(id: &str) -> PermissionKey {
        PermissionKey::Id(id.to_owned())
    }

    #[test]
    fn a_request_opens_a_window_and_its_answer_closes_it() {
        let (mut b, mut ctx, tools) = (Blocking::default(), ctx(), Tools::default());
        b.request(&mut ctx, id("call_1"), Owner::Main, Some("Bash"), None);
        assert!(b.blocks(&tools));
        assert_eq!(b.pending_permissions(), 1);
        assert_eq!(b.waits_on(&tools).map(|(t, _)| t), Some("Bash"));
        b.resolve(&mut ctx, id("call_1"), None);
        assert!(!b.blocks(&tools));
        assert_eq!(diags(&ctx), []);
    }

    #[test]
    fn an_answer_naming_the_approval_id_closes_the_window_of_that_id() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        b.request(&mut ctx, id("approval_1"), Owner::Main, None, None);
        b.resolve(
            &mut ctx,
            PermissionKey::ByName("Shell".into()),
            Some("approval_1"),
        );
        assert_eq!(b.pending_permissions(), 0);
        assert_eq!(diags(&ctx), []);
    }

    #[test]
    fn a_request_for_an_open_window_is_a_noted_duplicate_and_changes_nothing() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        b.request(&mut ctx, id("call_1"), Owner::Main, Some("Bash"), None);
        b.request(&mut ctx, id("call_1"), Owner::Nested(3), Some("Edit"), None);
        assert_eq!(diags(&ctx), [Diag::PermissionDuplicate]);
        assert_eq!(b.pending_permissions(), 1);
        assert_eq!(b.waits_on(&Tools::default()).map(|(t, _)| t), Some("Bash"));
    }

    #[test]
    fn an_answer_with_no_window_open_is_noted() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        b.request(&mut ctx, id("call_1"), Owner::Main, None, None);
        b.resolve(&mut ctx, id("call_2"), Some("approval_2"));
        assert_eq!(diags(&ctx), [Diag::PermissionResultWithoutRequest]);
        assert_eq!(b.pending_permissions(), 1);
    }

    #[test]
    fn at_the_bound_the_oldest_window_leaves_noted() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        for n in 0..=super::MAX_PENDING_PERMISSIONS {
            b.request(&mut ctx, id(&n.to_string()), Owner::Main, None, None);
        }
        assert_eq!(diags(&ctx), [Diag::StateLimitReached]);
        assert_eq!(b.pending_permissions(), super::MAX_PENDING_PERMISSIONS);
        b.resolve(&mut ctx, id("0"), None);
        assert_eq!(
            diags(&ctx),
            [
                Diag::StateLimitReached,
                Diag::PermissionResultWithoutRequest
            ]
        );
    }

    #[test]
    fn the_call_going_on_answers_only_where_the_agent_sends_no_answer() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        for answer in [PermissionAnswer::Event, PermissionAnswer::CallGoesOn] {
            b.request(
                &mut ctx,
                PermissionKey::ByName("Bash".into()),
                Owner::Main,
                None,
                None,
            );
            b.request(&mut ctx, id("call_1"), Owner::Main, None, None);
            // A call of that name starts: the window opened by name alone was allowed.
            b.call_started(answer, Some("Bash"));
            // The call a window was about finishes: it was allowed.
            b.call_finished(answer, ToolKeyRef::Id("call_1"));
            let left = match answer {
                PermissionAnswer::Event => 2,
                PermissionAnswer::CallGoesOn => 0,
            };
            assert_eq!(b.pending_permissions(), left, "{answer:?}");
            b.session_ended();
        }
        assert_eq!(diags(&ctx), []);
    }

    #[test]
    fn the_screen_answers_the_oldest_window_or_dialog_one_at_a_time_never_an_ask_call() {
        let (mut b, mut ctx, mut tools) = (Blocking::default(), ctx(), Tools::default());
        b.open_dialog(Owner::Nested(2));
        b.request(&mut ctx, id("call_1"), Owner::Main, Some("Bash"), None);
        b.request(&mut ctx, id("call_2"), Owner::Main, Some("Edit"), None);
        // The dialog came first: the agent draws it first.
        let first = b.screen_target();
        b.answered_on_screen(&mut ctx);
        assert!(b.dialogs.is_empty());
        assert_eq!(b.pending_permissions(), 2);
        assert_ne!(b.screen_target(), first, "the next one is watched anew");
        b.answered_on_screen(&mut ctx);
        assert_eq!(b.waits_on(&tools).map(|(t, _)| t), Some("Edit"));
        b.answered_on_screen(&mut ctx);
        assert_eq!(b.screen_target(), None);
        assert_eq!(ctx.out.notes.len(), 3);
        assert!(
            diags(&ctx)
                .iter()
                .all(|d| *d == Diag::DialogAnsweredOnScreen)
        );
        assert_eq!(ctx.out.notes[1].detail.as_deref(), Some("call_1"));
        // An open ask-the-user call is no target: its answer is the call's end.
        let ask = ToolRef {
            call_id: Some(Cow::Borrowed("call_q")),
            name: Some(Cow::Borrowed("AskUserQuestion")),
            ..ToolRef::default()
        };
        let asks = Agent::ClaudeCode.capabilities().dialogs.asks_user(&ask);
        tools.start(&mut ctx, &ask, Owner::Main, true, asks);
        assert!(b.blocks(&tools));
        assert_eq!(b.screen_target(), None);
        b.answered_on_screen(&mut ctx);
        assert!(b.blocks(&tools));
        assert_eq!(ctx.out.notes.len(), 3, "nothing to answer is no note");
    }

    #[test]
    fn a_dialog_opens_once_per_turn_and_a_sign_of_life_of_that_turn_answers_it() {
        let (mut b, tools) = (Blocking::default(), Tools::default());
        b.open_dialog(Owner::Main);
        b.open_dialog(Owner::Main);
        b.open_dialog(Owner::Nested(2));
        assert!(b.blocks(&tools));
        assert_eq!(
            b.waits_on(&tools).map(|(t, _)| t),
            None,
            "a dialog names no tool"
        );
        b.went_on(Owner::Main);
        assert!(b.blocks(&tools), "the subagent's dialog still waits");
        b.went_on(Owner::Nested(2));
        assert!(!b.blocks(&tools));
    }

    #[test]
    fn the_main_turn_end_closes_its_own_windows_noted_and_its_dialogs() {
        let (mut b, mut ctx, tools) = (Blocking::default(), ctx(), Tools::default());
        b.request(&mut ctx, id("call_1"), Owner::Main, None, None);
        b.request(&mut ctx, id("call_2"), Owner::Nested(2), Some("Edit"), None);
        b.open_dialog(Owner::Main);
        b.turn_ended(&mut ctx, |o| o == Owner::Main);
        assert_eq!(diags(&ctx), [Diag::PermissionOpenAtTurnEnd]);
        assert_eq!(ctx.out.notes[0].detail.as_deref(), Some("call_1"));
        // The background scope's window stays, and still blocks.
        assert_eq!(b.pending_permissions(), 1);
        assert_eq!(b.waits_on(&tools).map(|(t, _)| t), Some("Edit"));
    }

    #[test]
    fn a_nested_turn_end_and_the_session_end_close_their_windows_unseen() {
        let (mut b, mut ctx, tools) = (Blocking::default(), ctx(), Tools::default());
        b.request(&mut ctx, id("call_1"), Owner::Nested(2), None, None);
        b.open_dialog(Owner::Nested(2));
        b.request(&mut ctx, id("call_2"), Owner::Main, None, None);
        b.open_dialog(Owner::Main);
        b.nested_turn_ended(Owner::Nested(2));
        assert_eq!(b.pending_permissions(), 1);
        b.session_ended();
        assert!(!b.blocks(&tools));
        assert_eq!(diags(&ctx), [], "their turn's or session's end is the note");
    }

    #[test]
    fn windows_moved_to_another_turn_close_with_that_turn() {
        let (mut b, mut ctx) = (Blocking::default(), ctx());
        b.request(&mut ctx, id("call_1"), Owner::Main, None, None);
        b.reassign(Owner::Main, Owner::Nested(4));
        b.turn_ended(&mut ctx, |o| o == Owner::Main);
        assert_eq!(b.pending_permissions(), 1);
        b.nested_turn_ended(Owner::Nested(4));
        assert_eq!(b.pending_permissions(), 0);
        assert_eq!(diags(&ctx), []);
    }

    #[test]
    fn an_open_ask_the_user_call_blocks_until_it_ends() {
        let (b, mut ctx, mut tools) = (Blocking::default(), ctx(), Tools::default());
        let ask = ToolRef {
            call_id: Some(Cow::Borrowed("call_q")),
            name: Some(Cow::Borrowed("AskUserQuestion")),
            ..ToolRef::default()
        };
        let asks = Agent::ClaudeCode.capabilities().dialogs.asks_user(&ask);
        assert_eq!(asks, Some("AskUserQuestion"));
        tools.start(&mut ctx, &ask, Owner::Main, true, asks);
        assert!(b.blocks(&tools));
        assert_eq!(b.waits_on(&tools).map(|(t, _)| t), Some("AskUserQuestion"));
        let _ = tools.finish(&mut ctx, &ask, true);
        assert!(!b.blocks(&tools));
        assert_eq!(diags(&ctx), []);
    }

    /// Feeds events to a correlator of `agent`: the correlator, and the notes of the last
    /// event.
    fn feed(agent: Agent, events: &[Event<'_>]) -> (Correlator, Vec<Diag>) {
        let mut c = Correlator::new(agent.capabilities());
        let mut notes = Vec::new();
        for (line, event) in (1..).zip(events) {
            let obs = Observation {
                line,
                generation: None,
                event,
                source: Source::Hook,
            };
            notes = c.observe(obs, None).notes.iter().map(|n| n.diag).collect();
        }
        (c, notes)
    }

    /// The notes of the last event, and the phase after all.
    fn run(agent: Agent, events: &[Event<'_>]) -> (Vec<Diag>, Phase) {
        let (c, notes) = feed(agent, events);
        (notes, c.posture().turn.phase)
    }

    fn prompt() -> Event<'static> {
        Event::PromptSubmitted {
            text: Cow::Borrowed("go"),
            steer: false,
            turn_id: None,
            agent: None,
        }
    }

    fn call(name: &'static str, agent: Option<&'static str>) -> ToolRef<'static> {
        ToolRef {
            call_id: Some(Cow::Borrowed("call_1")),
            name: Some(Cow::Borrowed(name)),
            agent: agent.map(Cow::Borrowed),
            ..ToolRef::default()
        }
    }

    fn dialog(kind: &'static str, agent: Option<&'static str>) -> Event<'static> {
        Event::InputRequested {
            kind: Some(Cow::Borrowed(kind)),
            agent: agent.map(Cow::Borrowed),
        }
    }

    #[test]
    fn a_sign_of_life_answers_only_the_dialog_of_the_turn_it_belongs_to() {
        let subagent = Event::SubagentStarted {
            name: Some(Cow::Borrowed("explore")),
            agent_id: Some(Cow::Borrowed("a1")),
        };
        let its_dialog = dialog("agent_needs_input", Some("a1"));
        let events = [prompt(), subagent.clone(), its_dialog.clone()];
        let (notes, phase) = run(Agent::ClaudeCode, &events);
        assert_eq!(
            (notes, phase),
            (vec![Diag::BlockedByNotification], Phase::Blocked)
        );
        let read = |agent| Event::ToolStarted {
            tool: call("Read", agent),
        };
        let request = |agent| Event::PermissionRequested {
            tool: call("Bash", agent),
            approval_id: None,
            turn_id: None,
        };
        let queued = Event::PromptQueued {
            prompt_id: None,
            queue_length: Some(1),
        };
        for (sign, answers) in [
            // The main agent's call is no sign of the subagent going on.
            (read(None), false),
            (request(None), false),
            // Nor is a prompt queued.
            (queued, false),
            // Its own call or permission request is.
            (read(Some("a1")), true),
            (request(Some("a1")), true),
        ] {
            let events = [prompt(), subagent.clone(), its_dialog.clone(), sign.clone()];
            let (c, _) = feed(Agent::ClaudeCode, &events);
            assert_eq!(c.blocking.dialogs.is_empty(), answers, "{sign:?}");
        }
        // The main agent launching a subagent goes on: its dialog was answered.
        let events = [prompt(), dialog("agent_needs_input", None), subagent];
        assert_eq!(run(Agent::ClaudeCode, &events).1, Phase::Active);
    }

    #[test]
    fn a_request_echo_blocks_only_while_a_call_is_open_and_no_window_is() {
        let echo = dialog("permission_prompt", None);
        let start = Event::ToolStarted {
            tool: call("Bash", None),
        };
        let request = Event::PermissionRequested {
            tool: call("Bash", None),
            approval_id: None,
            turn_id: None,
        };
        // No call open: Claude Code's echo of an answered request, late.
        let (notes, phase) = run(Agent::ClaudeCode, &[prompt(), echo.clone()]);
        assert_eq!((notes, phase), (vec![], Phase::Active));
        // A window already says so.
        let events = [prompt(), start.clone(), request, echo.clone()];
        assert_eq!(run(Agent::ClaudeCode, &events).0, []);
        // A call open and no window: the echo is the only sign of the dialog.
        let (notes, phase) = run(Agent::ClaudeCode, &[prompt(), start, echo.clone()]);
        assert_eq!(
            (notes, phase),
            (vec![Diag::BlockedByNotification], Phase::Blocked)
        );
        // An agent whose dialogs have no echo takes the notification at its word.
        let (notes, phase) = run(Agent::OpenCode, &[prompt(), echo]);
        assert_eq!(
            (notes, phase),
            (vec![Diag::BlockedByNotification], Phase::Blocked)
        );
    }

    #[test]
    fn which_calls_ask_the_user_is_the_agents_own_list() {
        for (agent, name, phase) in [
            (Agent::ClaudeCode, "AskUserQuestion", Phase::Blocked),
            (Agent::KimiCode, "AskUserQuestion", Phase::Blocked),
            (Agent::OpenCode, "question", Phase::Blocked),
            (Agent::ClaudeCode, "question", Phase::Active),
            (Agent::OpenCode, "AskUserQuestion", Phase::Active),
        ] {
            let events = [
                prompt(),
                Event::TurnStarted {
                    turn_id: None,
                    origin: crate::event::OriginKind::User,
                    origin_name: None,
                },
                Event::ToolStarted {
                    tool: call(name, None),
                },
            ];
            assert_eq!(run(agent, &events).1, phase, "{agent:?} {name}");
        }
    }
}
