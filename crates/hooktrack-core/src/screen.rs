//! The pane, a third signal and only an ender (contract section 12): when to read an
//! agent's tmux pane, and what a read may end.
//!
//! The tracker decides, the driver reads: while a session's agent waits on the user in a
//! permission window or a dialog, its agent's descriptor says what its dialogs look like
//! ([`Screen`]), and a row named its tmux pane, the tracker asks its driver to read that
//! pane ([`Request::ReadScreen`]) at most every [`SCREEN_READ_MS`], and takes the text
//! back with its time ([`Tracker::screen_read`]). Rules:
//!
//! - a read ends only the window it was watching (the oldest, the one the agent draws),
//!   and only after an earlier read of that same window saw its dialog drawn: a hook
//!   that opens a window runs before the agent draws the dialog, so a screen without it
//!   says nothing until one with it was seen;
//! - it never starts a turn or a dialog and never ends a turn;
//! - a pane that could not be read is not read again until a row names a pane
//!   ([`Diag::ScreenUnread`]); a read the driver gave up waiting for is no such failure,
//!   only a read not taken (the next is due as usual).
//!
//! A replay reads no screen (see `docs/ARCHITECTURE.md` on why a screen read is no row).
//!
//! [`Tracker::screen_read`]: crate::tracker::Tracker::screen_read
//! [`Diag::ScreenUnread`]: crate::diagnostics::Diag::ScreenUnread
//! [`Screen`]: crate::agents::Screen

use crate::follow::Request;
use crate::time::Timestamp;

/// The least time between two reads of one pane: a few reads a second at most (under 7).
/// A dialog's going is seen up to this long after the agent redrew its screen, and the
/// agents' redraws after a key took up to 150 ms (Gemini CLI's first dialog): 200 ms left
/// such a key's worst case over the 300 ms the answer's line has (docs/benchmarks.md).
pub const SCREEN_READ_MS: i64 = 150;

/// What the tracker watches of one session's screen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Watch {
    /// Nothing the screen may end waits (or no pane, or no look of the agent's dialogs).
    #[default]
    Off,
    /// The window of serial `target` waits; `drawn` once a read saw its dialog; the next
    /// read is due at `next` (`None`: at once).
    On {
        target: u64,
        drawn: bool,
        next: Option<Timestamp>,
    },
}

#[derive(Clone, Debug, Default)]
struct PerSession {
    /// The pane the session's rows name last, until it could not be read.
    pane: Option<String>,
    watch: Watch,
}

/// What a read says of the watched window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Its dialog is drawn, or not yet seen drawn, or nothing is watched: nothing ends.
    Nothing,
    /// Its dialog, seen drawn before, is gone: the window was answered.
    Answered,
}

/// The screen rules' state, per session: private, changed by the tracker through the
/// methods below.
#[derive(Clone, Debug, Default)]
pub(crate) struct Screens {
    sessions: Vec<PerSession>,
}

impl Screens {
    fn at(&mut self, session: usize) -> &mut PerSession {
        if self.sessions.len() <= session {
            self.sessions.resize_with(session + 1, PerSession::default);
        }
        &mut self.sessions[session]
    }

    /// A line went to `session`: the pane its row named (a hook row's), and what a read
    /// may end after it (`None` when nothing, or the agent's screen is not read). A new
    /// target is watched from scratch: its dialog must be seen drawn again.
    pub(crate) fn on_line(&mut self, session: usize, pane: Option<&str>, target: Option<u64>) {
        let s = self.at(session);
        if let Some(pane) = pane.filter(|p| crate::store::is_tmux_pane_id(p)) {
            s.pane = Some(pane.to_owned());
        }
        s.watch = match (target, &s.watch) {
            (Some(t), Watch::On { target, .. }) if *target == t => return,
            (Some(target), _) if s.pane.is_some() => Watch::On {
                target,
                drawn: false,
                next: None,
            },
            _ => Watch::Off,
        };
    }

    /// When the next read is due (the earliest of every session's), if one is.
    pub(crate) fn due(&self) -> Option<Timestamp> {
        self.sessions
            .iter()
            .filter_map(|s| match s.watch {
                Watch::On { next, .. } => Some(next.unwrap_or(Timestamp::from_millis(0))),
                Watch::Off => None,
            })
            .min()
    }

    /// The reads due at `now`, each pane at most every [`SCREEN_READ_MS`].
    pub(crate) fn ask(&mut self, now: Timestamp, requests: &mut Vec<Request>) {
        for (session, s) in self.sessions.iter_mut().enumerate() {
            if let (Watch::On { next, .. }, Some(pane)) = (&mut s.watch, &s.pane)
                && next.is_none_or(|at| at <= now)
            {
                *next = Some(Timestamp::from_millis(now.as_millis() + SCREEN_READ_MS));
                requests.push(Request::ReadScreen {
                    session,
                    pane: pane.clone(),
                });
            }
        }
    }

    /// A read of `session`'s pane: whether it drew the agent's dialog, and the target a
    /// read may end now (the session's pipeline's, which a line since the request may
    /// have changed: then this read says nothing).
    pub(crate) fn read(&mut self, session: usize, drawn: bool, target: Option<u64>) -> Seen {
        let Some(s) = self.sessions.get_mut(session) else {
            return Seen::Nothing;
        };
        match &mut s.watch {
            Watch::On {
                target: watched,
                drawn: seen,
                ..
            } if Some(*watched) == target => {
                if drawn {
                    *seen = true;
                    Seen::Nothing
                } else if *seen {
                    s.watch = Watch::Off;
                    Seen::Answered
                } else {
                    Seen::Nothing
                }
            }
            _ => Seen::Nothing,
        }
    }

    /// `session`'s pane could not be read: forgotten until a row names one.
    pub(crate) fn failed(&mut self, session: usize) {
        if let Some(s) = self.sessions.get_mut(session) {
            s.pane = None;
            s.watch = Watch::Off;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn asked(screens: &mut Screens, now: i64) -> Vec<Request> {
        let mut requests = Vec::new();
        screens.ask(at(now), &mut requests);
        requests
    }

    #[test]
    fn a_window_is_read_at_once_then_at_most_every_interval_and_only_with_a_pane() {
        let mut s = Screens::default();
        s.on_line(0, None, Some(1));
        assert_eq!(s.due(), None, "no pane named: nothing to read");
        s.on_line(0, Some("not a pane"), Some(1));
        assert_eq!(s.due(), None);
        s.on_line(0, Some("%3"), Some(1));
        assert_eq!(s.due(), Some(at(0)));
        let read = Request::ReadScreen {
            session: 0,
            pane: "%3".into(),
        };
        assert_eq!(asked(&mut s, 1_000), std::slice::from_ref(&read));
        assert_eq!(asked(&mut s, 1_000 + SCREEN_READ_MS - 1), []);
        assert_eq!(s.due(), Some(at(1_000 + SCREEN_READ_MS)));
        assert_eq!(asked(&mut s, 1_000 + SCREEN_READ_MS), [read]);
        // The window ended by a hook: nothing more is read.
        s.on_line(0, None, None);
        assert_eq!(s.due(), None);
        assert_eq!(asked(&mut s, 5_000), []);
    }

    #[test]
    fn only_a_dialog_seen_drawn_and_then_gone_is_an_answer() {
        let mut s = Screens::default();
        s.on_line(0, Some("%3"), Some(7));
        // The hook came before the dialog was drawn.
        assert_eq!(s.read(0, false, Some(7)), Seen::Nothing);
        assert_eq!(s.read(0, true, Some(7)), Seen::Nothing);
        assert_eq!(s.read(0, true, Some(7)), Seen::Nothing);
        assert_eq!(s.read(0, false, Some(7)), Seen::Answered);
        assert_eq!(s.due(), None, "answered: off until a line says what waits");
    }

    #[test]
    fn a_new_window_must_be_seen_drawn_again() {
        let mut s = Screens::default();
        s.on_line(0, Some("%3"), Some(7));
        assert_eq!(s.read(0, true, Some(7)), Seen::Nothing);
        // A hook ended window 7 and window 8 opened: 8's dialog is not drawn yet.
        s.on_line(0, None, Some(8));
        assert_eq!(s.read(0, false, Some(8)), Seen::Nothing);
        // A read answered for a target the pipeline no longer has says nothing.
        assert_eq!(s.read(0, true, Some(8)), Seen::Nothing);
        assert_eq!(s.read(0, false, Some(9)), Seen::Nothing);
        assert_eq!(s.read(0, false, Some(8)), Seen::Answered);
    }

    #[test]
    fn a_pane_that_cannot_be_read_is_forgotten_until_a_row_names_one() {
        let mut s = Screens::default();
        s.on_line(1, Some("%3"), Some(2));
        s.failed(1);
        assert_eq!(s.due(), None);
        s.on_line(1, None, Some(2));
        assert_eq!(
            s.due(),
            None,
            "a line naming no pane does not bring it back"
        );
        s.on_line(1, Some("%3"), Some(2));
        assert_eq!(s.due(), Some(at(0)));
    }
}

/// The rule through the tracker and the agents' looks, with the screens their TUIs drew in
/// tmux (`agents/*/screens/`): Claude Code 2.1.332's, Factory Droid 0.225.2's, and
/// Codex's and Gemini CLI's against the tests' mock (`*-exec-*` and `*-shell-*` the TUI
/// alone, `*-session-*` under `hooktrack session` with its hooks running, as the
/// end-to-end tests keep them).
#[cfg(test)]
mod tracker_tests {
    use crate::agent::Agent;
    use crate::agents::Screen;
    use crate::diagnostics::Diag;
    use crate::follow::Request;
    use crate::posture::{Phase, TurnResult};
    use crate::source::Source;
    use crate::time::Timestamp;
    use crate::tracker::{FedLine, Tracker, TrackerConfig};

    const CLAUDE_DIALOG: &str = include_str!("agents/claude_code/screens/2.1.332-bash-dialog.txt");
    const CLAUDE_ANSWERED: &str =
        include_str!("agents/claude_code/screens/2.1.332-bash-answered.txt");
    const DROID_DIALOG: &str =
        include_str!("agents/factory_droid/screens/0.225.2-execute-dialog.txt");
    const DROID_ANSWERED: &str =
        include_str!("agents/factory_droid/screens/0.225.2-execute-answered.txt");
    const DROID_REJECTED: &str =
        include_str!("agents/factory_droid/screens/0.225.2-execute-rejected.txt");
    const DROID_IDLE: &str = include_str!("agents/factory_droid/screens/0.225.2-idle.txt");
    const CODEX_DIALOG: &str = include_str!("agents/codex/screens/0.171.0-exec-dialog.txt");
    const CODEX_REJECT_DIALOG: &str =
        include_str!("agents/codex/screens/0.171.0-exec-reject-dialog.txt");
    const CODEX_ANSWERED: &str = include_str!("agents/codex/screens/0.171.0-exec-answered.txt");
    const CODEX_REJECTED: &str = include_str!("agents/codex/screens/0.171.0-exec-rejected.txt");
    const CODEX_IDLE: &str = include_str!("agents/codex/screens/0.171.0-exec-idle.txt");
    const CODEX_SESSION_DIALOG: &str =
        include_str!("agents/codex/screens/0.171.0-session-dialog.txt");
    const CODEX_SESSION_ANSWERED: &str =
        include_str!("agents/codex/screens/0.171.0-session-answered.txt");
    const GEMINI_DIALOG: &str = include_str!("agents/gemini_cli/screens/0.61.0-shell-dialog.txt");
    const GEMINI_REJECT_DIALOG: &str =
        include_str!("agents/gemini_cli/screens/0.61.0-shell-reject-dialog.txt");
    const GEMINI_ANSWERED: &str =
        include_str!("agents/gemini_cli/screens/0.61.0-shell-answered.txt");
    const GEMINI_REJECTED: &str =
        include_str!("agents/gemini_cli/screens/0.61.0-shell-rejected.txt");
    const GEMINI_IDLE: &str = include_str!("agents/gemini_cli/screens/0.61.0-shell-idle.txt");
    const GEMINI_SESSION_DIALOG: &str =
        include_str!("agents/gemini_cli/screens/0.61.0-session-dialog.txt");
    const GEMINI_SESSION_ANSWERED: &str =
        include_str!("agents/gemini_cli/screens/0.61.0-session-answered.txt");

    const QWEN_DIALOG: &str = include_str!("agents/qwen_code/screens/0.24.4-shell-dialog.txt");
    const QWEN_REJECT_DIALOG: &str =
        include_str!("agents/qwen_code/screens/0.24.4-shell-reject-dialog.txt");
    const QWEN_ANSWERED: &str = include_str!("agents/qwen_code/screens/0.24.4-shell-answered.txt");
    const QWEN_REJECTED: &str = include_str!("agents/qwen_code/screens/0.24.4-shell-rejected.txt");
    const QWEN_IDLE: &str = include_str!("agents/qwen_code/screens/0.24.4-shell-idle.txt");
    const QWEN_SESSION_DIALOG: &str =
        include_str!("agents/qwen_code/screens/0.24.4-session-dialog.txt");
    const QWEN_SESSION_ANSWERED: &str =
        include_str!("agents/qwen_code/screens/0.24.4-session-answered.txt");

    fn screen(agent: Agent) -> Screen {
        agent
            .descriptor()
            .screen
            .unwrap_or_else(|| panic!("{agent:?}'s screen is read"))
    }

    /// Each agent's look finds its dialog on every screen that draws it, and on none of the
    /// screens after the answer ("Yes": the call running; its end at the prompt; a
    /// rejection) or before it.
    #[test]
    fn each_agents_look_sees_its_dialog_and_not_the_screens_after_the_answer() {
        let cases: [(Agent, &[&str], &[&str]); 5] = [
            (Agent::ClaudeCode, &[CLAUDE_DIALOG], &[CLAUDE_ANSWERED]),
            (
                Agent::FactoryDroid,
                &[DROID_DIALOG],
                &[DROID_ANSWERED, DROID_REJECTED, DROID_IDLE],
            ),
            (
                Agent::Codex,
                &[CODEX_DIALOG, CODEX_REJECT_DIALOG, CODEX_SESSION_DIALOG],
                &[
                    CODEX_ANSWERED,
                    CODEX_SESSION_ANSWERED,
                    CODEX_IDLE,
                    CODEX_REJECTED,
                ],
            ),
            (
                Agent::GeminiCli,
                &[GEMINI_DIALOG, GEMINI_REJECT_DIALOG, GEMINI_SESSION_DIALOG],
                &[
                    GEMINI_ANSWERED,
                    GEMINI_SESSION_ANSWERED,
                    GEMINI_IDLE,
                    GEMINI_REJECTED,
                ],
            ),
            (
                Agent::QwenCode,
                &[QWEN_DIALOG, QWEN_REJECT_DIALOG, QWEN_SESSION_DIALOG],
                &[
                    QWEN_ANSWERED,
                    QWEN_SESSION_ANSWERED,
                    QWEN_IDLE,
                    QWEN_REJECTED,
                ],
            ),
        ];
        for (agent, dialogs, others) in cases {
            for dialog in dialogs {
                assert!(screen(agent).draws_dialog(dialog), "{agent:?}:\n{dialog}");
            }
            for other in others {
                assert!(!screen(agent).draws_dialog(other), "{agent:?}:\n{other}");
            }
        }
    }

    /// A screen whose prompt echo (behind the TUI's own prompt mark) or reply (behind its
    /// bullet) holds the dialog's words draws no dialog: the screens above with the line
    /// typed or answered in place of the dialog.
    #[test]
    fn a_dialogs_words_in_a_prompt_echo_or_a_reply_are_no_dialog() {
        let cases = [
            (Agent::Codex, CODEX_IDLE, "› Wait. [[wait20]]", "› "),
            (
                Agent::Codex,
                CODEX_IDLE,
                "• The file holds two lines. Done.",
                "• ",
            ),
            (Agent::GeminiCli, GEMINI_IDLE, " > Wait. [[wait20]]", " > "),
            (
                Agent::GeminiCli,
                GEMINI_IDLE,
                "✦ The file holds two lines. Done.",
                "✦ ",
            ),
            (Agent::QwenCode, QWEN_IDLE, "> Wait. [[wait20]]", "> "),
            (
                Agent::QwenCode,
                QWEN_IDLE,
                "◆\u{fe0e} The file holds two lines. Done.",
                "◆\u{fe0e} ",
            ),
        ];
        for (agent, idle, line, mark) in cases {
            assert!(idle.contains(line), "{agent:?}: {line:?} is on the screen");
            let look = screen(agent).dialog[0].text;
            let typed = idle.replace(line, &format!("{mark}{look}"));
            assert!(typed.contains(look));
            assert!(!screen(agent).draws_dialog(&typed), "{agent:?}:\n{typed}");
        }
    }

    /// A Claude Code row at second `at` from pane `%3`.
    fn claude(event: &str, at: u32, extra: &str) -> String {
        format!(
            r#"{{"v":1,"provider":"claude","received_at":"2026-01-01T00:00:{at:02}.000Z","event":"{event}","tmux_pane":"%3","payload":{{"hook_event_name":"{event}","session_id":"s","transcript_path":"/t/s.jsonl","prompt_id":"p1"{extra}}}}}"#
        )
    }

    const CLAUDE_CALL: &str =
        r#","tool_name":"Bash","tool_input":{"command":"timeout 20 tail -f /dev/null"}"#;

    /// A Factory Droid row at second `at` from pane `%4`.
    fn droid(event: &str, at: u32, extra: &str) -> String {
        format!(
            r#"{{"v":1,"provider":"droid","received_at":"2026-01-01T00:00:{at:02}.000Z","event":"{event}","tmux_pane":"%4","payload":{{"hook_event_name":"{event}","session_id":"d","transcript_path":"/h/.factory/sessions/-w/d.jsonl","permission_mode":"off"{extra}}}}}"#
        )
    }

    const DROID_CALL: &str =
        r#","tool_name":"Execute","tool_input":{"command":"sleep 20","riskLevel":"medium"}"#;

    /// A Gemini CLI 0.61.0 row at second `at` from pane `%5`.
    fn gemini(event: &str, at: u32, extra: &str) -> String {
        format!(
            r#"{{"v":1,"provider":"gemini","received_at":"2026-01-01T00:00:{at:02}.000Z","event":"{event}","tmux_pane":"%5","payload":{{"hook_event_name":"{event}","session_id":"s","transcript_path":"/t/session-s.jsonl","cwd":"/w","timestamp":"2026-01-01T00:00:{at:02}.000Z"{extra}}}}}"#
        )
    }

    const GEMINI_CALL: &str = r#","tool_name":"run_shell_command","tool_input":{"command":"sleep 20","description":"Wait twenty seconds"}"#;

    /// Feeds `lines`, the first as line `first` of the store.
    fn feed(tracker: &mut Tracker, first: u64, lines: &[String]) {
        let mut sink = |_: FedLine<'_, '_>| Ok::<(), ()>(());
        for (i, line) in lines.iter().enumerate() {
            let mut row = crate::row::parse_line(line.as_bytes()).expect("a row");
            tracker
                .feed_hook(first + i as u64, Ok(&mut row), false, &mut sink)
                .expect("fed");
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_millis(1_767_225_600_000 + second * 1_000)
    }

    /// The screen reads asked for at `now`.
    fn asked(tracker: &mut Tracker, now: Timestamp) -> Vec<Request> {
        tracker.ask_screens(now);
        tracker
            .take_requests()
            .into_iter()
            .filter(|r| matches!(r, Request::ReadScreen { .. }))
            .collect()
    }

    fn read(tracker: &mut Tracker, text: &str, now: Timestamp) {
        let mut sink = |_: FedLine<'_, '_>| Ok::<(), ()>(());
        tracker.screen_read(0, text, now, &mut sink).expect("read");
    }

    fn blocked_tracker(read_screens: bool) -> Tracker {
        let mut tracker = Tracker::new(TrackerConfig {
            read_screens,
            ..TrackerConfig::default()
        });
        feed(&mut tracker, 1, &claude_blocked());
        assert_eq!(tracker.pipeline().posture().turn.phase, Phase::Blocked);
        tracker
    }

    /// Claude Code's rows up to its `PermissionRequest`.
    fn claude_blocked() -> Vec<String> {
        let call = format!(r#"{CLAUDE_CALL},"tool_use_id":"toolu_1""#);
        vec![
            claude("SessionStart", 1, ""),
            claude("UserPromptSubmit", 2, r#","prompt":"Wait.""#),
            claude("PreToolUse", 3, &call),
            claude("PermissionRequest", 3, CLAUDE_CALL),
        ]
    }

    /// One agent's dialog through the tracker: the rows that open its window, its pane,
    /// a screen without the dialog, the dialog, the screen after "Yes", and the rows of
    /// the call's end and the turn's.
    struct DrawnThenGone {
        agent: Agent,
        opened: Vec<String>,
        pane: &'static str,
        without: &'static str,
        dialog: &'static str,
        answered: &'static str,
        ended: Vec<String>,
    }

    /// Claude Code 2.1.332 (`PermissionRequest`); Factory Droid 0.225.2, whose
    /// `Notification(permission_prompt)` after the call's `PreToolUse` opens the window and
    /// whose "Yes, allow" fires no hook until the call's `PostToolUse`; Gemini CLI 0.61.0,
    /// whose only sign of its dialog is `Notification(ToolPermission)`. The dialog seen
    /// drawn then gone ends each window (a screen without it before it was ever seen drawn
    /// says nothing: the hook ran before the TUI drew it), and the call and the turn then
    /// end as before, in success.
    #[test]
    fn a_dialog_seen_drawn_then_gone_ends_the_window_and_the_turn_goes_on_to_success() {
        let claude_call = format!(r#"{CLAUDE_CALL},"tool_use_id":"toolu_1""#);
        let cases = [
            DrawnThenGone {
                agent: Agent::ClaudeCode,
                opened: claude_blocked(),
                pane: "%3",
                without: CLAUDE_ANSWERED,
                dialog: CLAUDE_DIALOG,
                answered: CLAUDE_ANSWERED,
                ended: vec![
                    claude("PostToolUse", 26, &claude_call),
                    claude("Stop", 27, ""),
                ],
            },
            DrawnThenGone {
                agent: Agent::FactoryDroid,
                opened: vec![
                    droid("SessionStart", 1, r#","source":"startup""#),
                    droid(
                        "UserPromptSubmit",
                        2,
                        r#","prompt":"Wait a bit.","message_id":"m1""#,
                    ),
                    droid("PreToolUse", 3, DROID_CALL),
                    droid(
                        "Notification",
                        3,
                        r#","notification_type":"permission_prompt","message":"Factory CLI needs permission to execute 1 tool(s)""#,
                    ),
                ],
                pane: "%4",
                without: DROID_IDLE,
                dialog: DROID_DIALOG,
                answered: DROID_ANSWERED,
                ended: vec![
                    droid("PostToolUse", 24, DROID_CALL),
                    droid("Stop", 25, r#","message_id":"m2","stop_hook_active":false"#),
                ],
            },
            DrawnThenGone {
                agent: Agent::GeminiCli,
                opened: vec![
                    gemini("SessionStart", 1, r#","source":"startup""#),
                    gemini("BeforeAgent", 2, r#","prompt":"Wait. [[wait20]]""#),
                    gemini("BeforeTool", 3, GEMINI_CALL),
                    gemini(
                        "Notification",
                        3,
                        r#","notification_type":"ToolPermission","message":"Tool Confirm Shell Command requires execution","details":{"type":"exec","title":"Confirm Shell Command","command":"sleep 20","rootCommand":"sleep"}"#,
                    ),
                ],
                pane: "%5",
                without: GEMINI_IDLE,
                dialog: GEMINI_DIALOG,
                answered: GEMINI_ANSWERED,
                ended: vec![
                    gemini(
                        "AfterTool",
                        25,
                        &format!(r#"{GEMINI_CALL},"tool_response":{{"llmContent":"ok"}}"#),
                    ),
                    gemini(
                        "AfterAgent",
                        26,
                        r#","prompt":"Wait. [[wait20]]","prompt_response":"Done.","stop_hook_active":false"#,
                    ),
                ],
            },
        ];
        for case in cases {
            let agent = case.agent;
            let mut tracker = Tracker::new(TrackerConfig {
                read_screens: true,
                ..TrackerConfig::default()
            });
            feed(&mut tracker, 1, &case.opened);
            let phase = |t: &Tracker| t.pipeline().posture().turn.phase;
            assert_eq!(phase(&tracker), Phase::Blocked, "{agent:?}");
            let pane = Request::ReadScreen {
                session: 0,
                pane: case.pane.into(),
            };
            assert_eq!(asked(&mut tracker, at(4)), [pane], "{agent:?}");
            read(&mut tracker, case.without, at(4));
            assert_eq!(phase(&tracker), Phase::Blocked, "{agent:?}");
            read(&mut tracker, case.dialog, at(5));
            assert_eq!(phase(&tracker), Phase::Blocked, "{agent:?}");
            read(&mut tracker, case.answered, at(6));
            let pipeline = tracker.pipeline();
            assert_eq!(pipeline.posture().turn.phase, Phase::Active, "{agent:?}");
            let cause = pipeline.provenance().phase.as_ref().expect("a cause");
            assert_eq!(
                (cause.source, cause.event.as_str(), cause.at),
                (Source::Screen, "dialog_answered", Some(at(6))),
                "{agent:?}"
            );
            let count = |t: &Tracker, diag| t.pipeline().diagnostics().count(diag);
            assert_eq!(
                count(&tracker, Diag::DialogAnsweredOnScreen),
                1,
                "{agent:?}"
            );
            assert_eq!(tracker.screen_due(), None, "{agent:?}: nothing waits");
            feed(&mut tracker, case.opened.len() as u64 + 1, &case.ended);
            let posture = tracker.pipeline().posture();
            assert_eq!(posture.turn.phase, Phase::Ready, "{agent:?}");
            assert_eq!(posture.last_turn.result, TurnResult::Success, "{agent:?}");
            // No answer missing its window.
            assert_eq!(
                count(&tracker, Diag::PermissionResultWithoutRequest),
                0,
                "{agent:?}"
            );
        }
    }

    #[test]
    fn a_replay_reads_no_screen_and_a_pane_that_cannot_be_read_is_counted() {
        let mut replay = blocked_tracker(false);
        assert_eq!(replay.screen_due(), None);
        assert_eq!(asked(&mut replay, at(4)), []);
        let mut live = blocked_tracker(true);
        assert_eq!(asked(&mut live, at(4)).len(), 1);
        live.screen_failed(0);
        assert_eq!(asked(&mut live, at(5)), []);
        assert_eq!(live.pipeline().diagnostics().count(Diag::ScreenUnread), 1);
        assert_eq!(live.pipeline().posture().turn.phase, Phase::Blocked);
    }

    /// A Qwen Code 0.24.4 row at second `at` from pane `%3`.
    fn qwen_row(event: &str, at: u32, extra: &str) -> String {
        format!(
            r#"{{"v":1,"provider":"qwen","received_at":"2026-01-01T00:00:{at:02}.000Z","event":"{event}","tmux_pane":"%3","payload":{{"hook_event_name":"{event}","session_id":"s","transcript_path":"/h/.qwen/projects/-w/chats/s.jsonl","cwd":"/w","timestamp":"2026-01-01T00:00:{at:02}.000Z","permission_mode":"default"{extra}}}}}"#
        )
    }

    const QWEN_CALL: &str = r#","tool_name":"run_shell_command","tool_input":{"command":"sleep 20","description":"Wait twenty seconds"}"#;

    /// Qwen Code 0.24.4 blocked on its shell confirmation: `PermissionRequest` (before the
    /// call has a `PreToolUse`), then `Notification(permission_prompt)`.
    fn qwen_blocked() -> Tracker {
        let mut tracker = Tracker::new(TrackerConfig {
            read_screens: true,
            ..TrackerConfig::default()
        });
        feed(
            &mut tracker,
            1,
            &[
                qwen_row("SessionStart", 1, r#","source":"startup""#),
                qwen_row(
                    "UserPromptSubmit",
                    2,
                    r#","prompt_id":"s########0","prompt":"Wait. [[wait20]]""#,
                ),
                qwen_row(
                    "PermissionRequest",
                    3,
                    &format!(r#"{QWEN_CALL},"prompt_id":"s########0""#),
                ),
                qwen_row(
                    "Notification",
                    3,
                    r#","prompt_id":"s########0","message":"Qwen Code needs your permission to use run_shell_command","notification_type":"permission_prompt","title":"Permission needed""#,
                ),
            ],
        );
        assert_eq!(tracker.pipeline().posture().turn.phase, Phase::Blocked);
        tracker
    }

    /// The call's start, its end and the turn's `Stop`, from row `first` at second `at`.
    fn qwen_call_and_stop(tracker: &mut Tracker, first: u64, at: u32) {
        let call = format!(r#"{QWEN_CALL},"tool_use_id":"toolu_1","tool_call_id":"call_q_t""#);
        feed(
            tracker,
            first,
            &[
                qwen_row("PreToolUse", at, &call),
                qwen_row(
                    "PostToolUse",
                    at + 20,
                    &format!(r#"{call},"tool_response":"ok""#),
                ),
                qwen_row(
                    "Stop",
                    at + 21,
                    r#","prompt_id":"s########0","stop_hook_active":false,"last_assistant_message":"Done.""#,
                ),
            ],
        );
        let pipeline = tracker.pipeline();
        assert_eq!(pipeline.posture().turn.phase, Phase::Ready);
        assert_eq!(pipeline.posture().last_turn.result, TurnResult::Success);
        assert_eq!(
            pipeline
                .diagnostics()
                .count(Diag::PermissionResultWithoutRequest),
            0
        );
    }

    /// The pane first: the confirmation seen drawn, then gone, ends the window before the
    /// call's `PreToolUse`, which then ends nothing more; the turn ends a success.
    #[test]
    fn qwen_code_confirmation_gone_from_the_pane_ends_the_window_before_its_pretooluse() {
        let mut tracker = qwen_blocked();
        tracker.ask_screens(at(4));
        let reads = tracker
            .take_requests()
            .into_iter()
            .filter(|r| matches!(r, crate::follow::Request::ReadScreen { .. }))
            .count();
        assert_eq!(reads, 1, "the pane is read");
        read(&mut tracker, QWEN_DIALOG, at(4));
        assert_eq!(tracker.pipeline().posture().turn.phase, Phase::Blocked);
        read(&mut tracker, QWEN_ANSWERED, at(5));
        let pipeline = tracker.pipeline();
        assert_eq!(pipeline.posture().turn.phase, Phase::Active);
        assert_eq!(
            pipeline.diagnostics().count(Diag::DialogAnsweredOnScreen),
            1
        );
        qwen_call_and_stop(&mut tracker, 5, 5);
    }

    /// The hook first: the call's `PreToolUse` ends the window, and a read of the pane
    /// after it (the dialog already gone) ends nothing and is not even asked for.
    #[test]
    fn qwen_code_pretooluse_before_the_pane_ends_the_window_and_the_pane_is_left_alone() {
        let mut tracker = qwen_blocked();
        tracker.ask_screens(at(4));
        read(&mut tracker, QWEN_DIALOG, at(4));
        let call = format!(r#"{QWEN_CALL},"tool_use_id":"toolu_1","tool_call_id":"call_q_t""#);
        feed(&mut tracker, 5, &[qwen_row("PreToolUse", 5, &call)]);
        let pipeline = tracker.pipeline();
        assert_eq!(pipeline.posture().turn.phase, Phase::Active);
        assert_eq!(tracker.screen_due(), None, "nothing waits: nothing is read");
        read(&mut tracker, QWEN_ANSWERED, at(5));
        assert_eq!(
            tracker
                .pipeline()
                .diagnostics()
                .count(Diag::DialogAnsweredOnScreen),
            0
        );
    }
}
