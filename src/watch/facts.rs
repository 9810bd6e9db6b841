//! What `watch --tmux` and `watch --on-change` publish about a session, from its update.

use hooktrack_core::agent::Agent;
use hooktrack_core::posture::{Phase, Posture, Presence, RunningCall, TurnResult};
use hooktrack_core::store::is_tmux_pane_id;
use hooktrack_core::time::Timestamp;
use hooktrack_live::session::Update;

use crate::safe_text::visible;

/// One session's state, as a person asks for it: which agent, doing what, since when,
/// waiting on which tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The session as `watch` names it (the path it was given).
    pub session: String,
    pub agent: Option<&'static str>,
    pub presence: Presence,
    pub phase: Phase,
    /// The open main turn's id, if it has one.
    pub turn: Option<String>,
    pub turn_started_at: Option<Timestamp>,
    /// While blocked: the tool the permission request names.
    pub blocked_tool: Option<String>,
    /// While blocked: what that call acts on (its command, file), already cut; a tool
    /// input, for the pane's summary only.
    pub blocked_argument: Option<String>,
    /// While active: the newest call the main turn runs, and what it acts on.
    pub running_call: Option<RunningCall>,
    /// How much background work runs (subagents and shell tasks that outlived their
    /// turn): the phase can be `ready` while it does.
    pub background: usize,
    pub last_result: TurnResult,
    /// When the last turn ended, as its line says (`None` for a line without a time).
    pub last_turn_at: Option<Timestamp>,
    /// Which turn that was (its epoch): a new value is a turn ended since.
    pub last_turn_epoch: Option<u64>,
    /// The tmux pane to publish on: the supervisor's `--tmux-pane`, else the rows'.
    pub pane: Option<String>,
}

impl Facts {
    pub fn of(session: &str, update: &Update, given_pane: Option<&str>) -> Self {
        let pane = given_pane.map(str::to_owned).or_else(|| {
            update
                .tmux_pane
                .clone()
                .filter(|pane| is_tmux_pane_id(pane))
        });
        Self::of_posture(
            session,
            update.posture(),
            update.agent(),
            update.turn_started_at(),
            pane,
        )
    }

    /// The facts of a session known by its posture alone (a fleet's remote session, whose
    /// record is what its host's update said): no pane, for no local pane is its.
    pub fn of_posture(
        session: &str,
        p: &Posture,
        agent: Option<Agent>,
        turn_started_at: Option<Timestamp>,
        pane: Option<String>,
    ) -> Self {
        Self {
            session: session.to_owned(),
            agent: agent.map(|a| a.name()),
            presence: p.presence,
            phase: p.turn.phase,
            turn: p.turn.turn_id.as_ref().map(ToString::to_string),
            turn_started_at,
            blocked_tool: p.turn.blocked_tool.clone(),
            blocked_argument: p.turn.blocked_argument.clone(),
            running_call: p.turn.running_call.clone(),
            background: p.turn.background(),
            last_result: p.last_turn.result,
            last_turn_at: p.last_turn.at,
            last_turn_epoch: p.last_turn.epoch,
            pane,
        }
    }

    /// `absent` when the agent is gone, else the turn phase: [`shown_phase`].
    pub fn phase_name(&self) -> &'static str {
        shown_phase(self.presence, self.phase)
    }

    /// How long the open main turn has been running at `now`.
    pub fn turn_age_ms(&self, now: Timestamp) -> Option<i64> {
        self.turn_started_at
            .map(|at| (now.as_millis() - at.as_millis()).max(0))
    }
}

/// The one word for what a session does, in the text view's phase column, `--ndjson`'s
/// `phase` and tmux's `@hooktrack_phase`: `absent` when the agent is gone (its posture's
/// presence), else the turn phase, each spelt as the posture's JSON spells it.
pub fn shown_phase(presence: Presence, phase: Phase) -> &'static str {
    if presence == Presence::Absent {
        return "absent";
    }
    match phase {
        Phase::Ready => "ready",
        Phase::Active => "active",
        Phase::Blocked => "blocked",
        Phase::Unknown => "unknown",
    }
}

/// The word for an agent not identified yet (no row named it), in every output.
pub const UNKNOWN_AGENT: &str = "unknown";

/// ` · 2 background` when background work runs, else empty: what follows the phase in a
/// status line (`ready · 1 background`).
pub fn background_text(background: usize) -> String {
    if background == 0 {
        String::new()
    } else {
        format!(" · {background} background")
    }
}

/// `7s`, `4m05s`, `2h03m`.
pub fn age_text(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Like [`age_text`], but changing at most every 5 s under a minute and every minute
/// after, so a status bar is not rewritten every second: `0s`, `5s`, …, `4m`, `2h03m`.
pub fn coarse_age_text(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{}s", s / 5 * 5),
        60..3600 => format!("{}m", s / 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Payload text made safe for a one-line display, a tmux option value or an environment
/// variable: at most `max` characters; the characters tmux formats and command lines give
/// meaning to (`#`, `;`, `{`, `}`) become `_`, control and bidi characters are shown as
/// `\u{1b}` ([`visible`]).
pub fn display_text(text: &str, max: usize) -> String {
    let steers_tmux: String = text
        .chars()
        .take(max)
        .map(|c| {
            if matches!(c, '#' | ';' | '{' | '}') {
                '_'
            } else {
                c
            }
        })
        .collect();
    // Controls are shown in the one notation (`\u{1b}`), after the braces went: its own
    // braces follow no `#`, so tmux reads them as text.
    visible(&steers_tmux).into_owned()
}

/// `Bash: cargo build`, or the tool alone (its name cut to `max_tool` characters): payload
/// text made safe for a tmux option, a notification or an environment variable.
pub fn call_text(tool: &str, argument: Option<&str>, max_tool: usize) -> String {
    let tool = display_text(tool, max_tool);
    match argument {
        Some(argument) => format!(
            "{tool}: {}",
            display_text(argument, hooktrack_core::tool_argument::MAX_ARGUMENT_CHARS)
        ),
        None => tool,
    }
}

/// Text hooktrack already showed once ([`display_text`]: a tmux option it wrote, a value it
/// made safe), cut to `max` characters for a place where `special` means something (`#` in a
/// tmux menu line, `;` in an OSC field): `special` becomes `_` and controls are shown
/// ([`visible`]: anyone may set an option). Braces stay, so a `\u{1b}` shown once reads the
/// same, not mangled a second time into `\u_1b_`.
pub fn shown_again(text: &str, max: usize, special: char) -> String {
    let cut: String = text
        .chars()
        .take(max)
        .map(|c| if c == special { '_' } else { c })
        .collect();
    visible(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_a_clock() {
        assert_eq!(age_text(7_400), "7s");
        assert_eq!(age_text(245_000), "4m05s");
        assert_eq!(age_text(7_380_000), "2h03m");
        assert_eq!(coarse_age_text(7_400), "5s");
        assert_eq!(coarse_age_text(245_000), "4m");
    }

    /// Text, tmux and `--ndjson` show [`shown_phase`]; it must use the words the posture's
    /// JSON uses, so that no output says `unknown` where another says `absent`.
    #[test]
    fn the_shown_phase_speaks_the_postures_json_words() {
        let word = |v: serde_json::Value| v.as_str().map(str::to_owned);
        for presence in [Presence::Present, Presence::Absent, Presence::Unknown] {
            for phase in [Phase::Ready, Phase::Active, Phase::Blocked, Phase::Unknown] {
                let want = if presence == Presence::Absent {
                    word(serde_json::json!(presence))
                } else {
                    word(serde_json::json!(phase))
                };
                assert_eq!(
                    Some(shown_phase(presence, phase)),
                    want.as_deref(),
                    "{presence:?} {phase:?}"
                );
            }
        }
    }

    #[test]
    fn payload_text_cannot_steer_tmux() {
        assert_eq!(display_text("#[bg=red]x;y\n", 64), "_[bg=red]x_y\\u{a}");
        assert_eq!(
            display_text("a\x1b]52;c;eA==\x07\u{9b}\u{202e}", 64),
            "a\\u{1b}]52_c_eA==\\u{7}\\u{9b}\\u{202e}"
        );
        assert_eq!(display_text("abcdef", 3), "abc");
    }
}
