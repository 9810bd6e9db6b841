//! The text and ndjson outputs of a [`Watch`](super::Watch): what is shown for each
//! update, each dropped session and each notice, written to the writers it is handed.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;

use hooktrack_core::agent::Agent;
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::posture::{ChannelState, Phase, Posture};
use hooktrack_core::time::Timestamp;
use hooktrack_live::session::Update;

use super::facts::{Facts, UNKNOWN_AGENT, age_text, background_text, display_text, shown_phase};
use crate::safe_text::visible;

/// How a [`Watch`](super::Watch) shows its sessions on the writer it is handed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// One JSON line per update of each session (`{"session", "at", "posture", ...}`),
    /// a `"dropped"` line when one is dropped; notices go to the notices writer.
    Ndjson,
    /// A terminal: one status line per session redrawn in place, notices scrolling above.
    Live,
    /// Not a terminal: a status line whenever it changes (ages aside), notices as lines.
    Lines,
}

impl Output {
    pub(super) fn view(self, notices: Box<dyn Write>) -> Box<dyn View> {
        match self {
            Output::Ndjson => Box::new(Ndjson { notices }),
            Output::Live => Box::new(Text::<InPlace>::default()),
            Output::Lines => Box::new(Text::<Changes>::default()),
        }
    }
}

/// The three ways to show updates.
pub(super) trait View {
    /// One update arrived for `name`; `dropped` says which of its sessions were dropped.
    fn update(
        &mut self,
        out: &mut dyn Write,
        name: &str,
        update: &Update,
        dropped: &dyn Fn(Option<&str>) -> bool,
    ) -> io::Result<()>;
    /// A session of `name` was dropped: its agent has been gone since `gone_since` for
    /// the grace period.
    fn dropped(
        &mut self,
        out: &mut dyn Write,
        name: &str,
        session_id: Option<&str>,
        gone_since: Option<Timestamp>,
        now: Timestamp,
    ) -> io::Result<()> {
        let _ = out;
        let who = session_id.map_or_else(
            || name.to_owned(),
            |sid| format!("{name} {}", short_id(sid)),
        );
        let since = gone_since.map_or_else(String::new, |at| {
            format!(
                " for {}",
                age_text(now.as_millis().saturating_sub(at.as_millis()))
            )
        });
        self.notice(out, &format!("{who}: dropped (its agent is gone{since})"))
    }
    /// A remote session's update (a fleet's): its record as its host published it, and
    /// the lines its notices and ended turns make ([`events`]).
    #[cfg(feature = "fleet")]
    fn remote(
        &mut self,
        out: &mut dyn Write,
        record: &serde_json::Value,
        events: Vec<String>,
    ) -> io::Result<()>;
    /// A remote session left the fleet's bucket: its host dropped it (its agent gone), or
    /// stopped publishing and it aged out. Said as a notice; `--ndjson` writes its
    /// `"dropped"` line.
    #[cfg(feature = "fleet")]
    fn left(&mut self, out: &mut dyn Write, name: &str, now: Timestamp) -> io::Result<()> {
        let _ = now;
        self.notice(
            out,
            &format!("{name}: left the fleet (its host dropped it, or stopped publishing)"),
        )
    }
    /// The status lines, in the order the sessions were named.
    fn redraw(&mut self, out: &mut dyn Write, lines: &[StatusLine]) -> io::Result<()>;
    /// A problem of a helper (tmux, the --on-change command): never one of tracking.
    fn notice(&mut self, out: &mut dyn Write, text: &str) -> io::Result<()>;
    fn redraws_on_update(&self) -> bool;
    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()>;
}

/// One JSON line per update.
struct Ndjson {
    /// Where notices go: the output is for JSON lines only.
    notices: Box<dyn Write>,
}

#[derive(Serialize)]
struct NdjsonLine<'a> {
    session: &'a str,
    /// Set for a store of several `session_id`s: one line per session.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    /// The word the text view and tmux's `@hooktrack_phase` show: the turn phase, or
    /// `absent` when the agent is gone.
    phase: &'static str,
    #[serde(flatten)]
    update: &'a Update,
}

/// One session's `--ndjson` line: also what the fleet publishes.
pub(super) fn ndjson_line<'a>(
    name: &'a str,
    session_id: Option<&'a str>,
    update: &'a Update,
) -> impl Serialize + 'a {
    NdjsonLine {
        session: name,
        session_id,
        phase: shown_phase(update.posture().presence, update.posture().turn.phase),
        update,
    }
}

/// The line that says a session was dropped.
#[derive(Serialize)]
struct DroppedLine<'a> {
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    at: Timestamp,
    dropped: Dropped,
}

#[derive(Serialize)]
struct Dropped {
    #[serde(skip_serializing_if = "Option::is_none")]
    gone_since: Option<Timestamp>,
}

impl View for Ndjson {
    fn dropped(
        &mut self,
        out: &mut dyn Write,
        name: &str,
        session_id: Option<&str>,
        gone_since: Option<Timestamp>,
        now: Timestamp,
    ) -> io::Result<()> {
        serde_json::to_writer(
            &mut *out,
            &DroppedLine {
                session: name,
                session_id,
                at: now,
                dropped: Dropped { gone_since },
            },
        )?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn update(
        &mut self,
        out: &mut dyn Write,
        name: &str,
        update: &Update,
        dropped: &dyn Fn(Option<&str>) -> bool,
    ) -> io::Result<()> {
        for (session_id, update) in update.per_session() {
            if dropped(update.current().session_id.as_deref()) {
                continue;
            }
            serde_json::to_writer(&mut *out, &ndjson_line(name, session_id, &update))?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    #[cfg(feature = "fleet")]
    fn left(&mut self, out: &mut dyn Write, name: &str, now: Timestamp) -> io::Result<()> {
        self.dropped(out, name, None, None, now)
    }

    #[cfg(feature = "fleet")]
    fn remote(
        &mut self,
        out: &mut dyn Write,
        record: &serde_json::Value,
        _events: Vec<String>,
    ) -> io::Result<()> {
        // The host's own line, as its `watch --ndjson` wrote it (`v` and `host` added).
        serde_json::to_writer(&mut *out, record)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn redraw(&mut self, _out: &mut dyn Write, _lines: &[StatusLine]) -> io::Result<()> {
        Ok(())
    }

    fn notice(&mut self, _out: &mut dyn Write, text: &str) -> io::Result<()> {
        writeln!(self.notices, "hooktrack: watch: {text}")?;
        self.notices.flush()
    }

    fn redraws_on_update(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

/// A text view: notices and ended turns wait for the next redraw, which writes them above
/// the status lines as its [`Draw`] lays them out.
#[derive(Default)]
struct Text<D> {
    pending: Vec<String>,
    draw: D,
}

/// How a [`Text`] view writes the waiting notices and the status lines.
trait Draw {
    fn draw(
        &mut self,
        out: &mut dyn Write,
        notices: std::vec::Drain<'_, String>,
        lines: &[StatusLine],
    ) -> io::Result<()>;
}

impl<D: Draw> View for Text<D> {
    fn update(
        &mut self,
        _out: &mut dyn Write,
        name: &str,
        update: &Update,
        _dropped: &dyn Fn(Option<&str>) -> bool,
    ) -> io::Result<()> {
        self.pending.extend(events_of(name, update));
        Ok(())
    }

    #[cfg(feature = "fleet")]
    fn remote(
        &mut self,
        _out: &mut dyn Write,
        _record: &serde_json::Value,
        events: Vec<String>,
    ) -> io::Result<()> {
        self.pending.extend(events);
        Ok(())
    }

    fn notice(&mut self, _out: &mut dyn Write, text: &str) -> io::Result<()> {
        self.pending.push(text.to_owned());
        Ok(())
    }

    fn redraw(&mut self, out: &mut dyn Write, lines: &[StatusLine]) -> io::Result<()> {
        self.draw.draw(out, self.pending.drain(..), lines)?;
        out.flush()
    }

    fn redraws_on_update(&self) -> bool {
        true
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

/// A terminal: the status block is redrawn in place; notices scroll above it.
#[derive(Default)]
struct InPlace {
    drawn: usize,
}

impl Draw for InPlace {
    fn draw(
        &mut self,
        out: &mut dyn Write,
        notices: std::vec::Drain<'_, String>,
        lines: &[StatusLine],
    ) -> io::Result<()> {
        if self.drawn > 0 {
            // Back to the first status line.
            write!(out, "\x1b[{}F", self.drawn)?;
        }
        // This view writes its own escapes, so what it shows is made safe line by line.
        for notice in notices {
            writeln!(out, "\x1b[2K{}", visible(&notice))?;
        }
        for line in lines {
            writeln!(out, "\x1b[2K{}", visible(&line.text))?;
        }
        self.drawn = lines.len();
        Ok(())
    }
}

/// Not a terminal: a status line whenever it changes (ages aside), notices as lines.
#[derive(Default)]
struct Changes {
    last: Vec<String>,
}

impl Draw for Changes {
    fn draw(
        &mut self,
        out: &mut dyn Write,
        notices: std::vec::Drain<'_, String>,
        lines: &[StatusLine],
    ) -> io::Result<()> {
        for notice in notices {
            writeln!(out, "{notice}")?;
        }
        self.last.resize(lines.len(), String::new());
        for (line, last) in lines.iter().zip(&mut self.last) {
            // The ages change every second; compare the line without them.
            if *last != line.key {
                writeln!(out, "{}", line.text)?;
                last.clone_from(&line.key);
            }
        }
        Ok(())
    }
}

/// The lines that scroll above the status: notices, then the turns that ended.
fn events_of<'a>(name: &'a str, update: &'a Update) -> impl Iterator<Item = String> + 'a {
    events(
        name,
        update.notices.iter().map(ToString::to_string),
        update.closed(),
    )
}

/// A session's notices and ended turns as the lines that scroll above the status (a local
/// store's or a remote session's).
pub(super) fn events<'a>(
    name: &'a str,
    notices: impl Iterator<Item = String> + 'a,
    closed: impl Iterator<Item = &'a TurnRecord> + 'a,
) -> impl Iterator<Item = String> + 'a {
    let notices = notices.map(move |n| format!("{name}: {n}"));
    let turns = closed.map(move |t| {
        format!(
            "{name}: turn {} ended: {}",
            turn_name(t.turn_id.as_ref()),
            t.result.name()
        )
    });
    notices.chain(turns)
}

/// A session's status line, and the same line without its ages (what the piped view
/// compares, so that it prints a line when the state changes, not every second).
pub(super) struct StatusLine {
    text: String,
    key: String,
}

#[cfg(test)]
impl StatusLine {
    pub(super) fn text(&self) -> &str {
        &self.text
    }
}

/// What a status line shows of a session: a local session's [`Update`], or a remote
/// one's record ([`Shown::of`] and the fleet's record reader fill it alike).
pub(super) struct Shown<'a> {
    pub posture: &'a Posture,
    pub agent: Option<Agent>,
    pub turn_started_at: Option<Timestamp>,
    pub last_event_at: Option<Timestamp>,
    pub channel: ChannelState,
    /// A remote session whose host stopped publishing: its phase is shown `stale`, the
    /// rest as last known, so no old state reads as current.
    pub stale: bool,
}

impl<'a> Shown<'a> {
    pub fn of(update: &'a Update) -> Self {
        Shown {
            posture: update.posture(),
            agent: update.agent(),
            turn_started_at: update.turn_started_at(),
            last_event_at: update.last_event_at,
            channel: update.channel.state,
            stale: false,
        }
    }
}

/// `NAME  AGENT  PHASE  turn ID  for AGE  tools N  waits TOOL  last RESULT  CHANNEL
/// event AGE`: which agent, what it does, since when, and what it waits for. The phase
/// says how much background work runs, if any (`ready · 1 background`).
pub(super) fn status_line(name: &str, shown: &Shown<'_>, now: Timestamp) -> StatusLine {
    let p = shown.posture;
    let agent = shown.agent.map_or(UNKNOWN_AGENT, |a| a.name());
    let waits = if p.turn.phase == Phase::Blocked {
        let tool = p
            .turn
            .blocked_tool
            .as_deref()
            .map_or_else(|| "?".to_owned(), |t| display_text(t, 24).replace(' ', "_"));
        match p.turn.pending_permissions {
            0 | 1 => tool,
            n => format!("{tool}+{}", n - 1),
        }
    } else {
        "-".to_owned()
    };
    let turn_age = shown.turn_started_at.map_or_else(
        || "-".to_owned(),
        |at| age_text(now.as_millis() - at.as_millis()),
    );
    let event_age = match shown.last_event_at {
        Some(at) => format!(
            "{:.1}s ago",
            (now.as_millis() - at.as_millis()).max(0) as f64 / 1000.0
        ),
        None => "never".to_owned(),
    };
    // One word in every output: tmux's `@hooktrack_phase` and --ndjson's `phase` say the same.
    let phase = if shown.stale {
        "stale".to_owned()
    } else {
        shown_phase(p.presence, p.turn.phase).to_owned()
    };
    let line = |turn_age: &str, event_age: &str| {
        format!(
            "{name}  {agent:<11}  {:<7}  turn {:<4}  for {turn_age:<6}  tools {:<3}  waits {waits:<10}  last {:<13}  {:<19}  event {event_age}",
            phase.clone() + &background_text(p.turn.background()),
            turn_name(p.turn.turn_id.as_ref()),
            p.turn.open_tool_calls,
            p.last_turn.result.name(),
            name_of(&shown.channel),
        )
    };
    StatusLine {
        text: line(&turn_age, &event_age),
        key: line("", ""),
    }
}

/// How a session of the store `name` is named in a status line and to tmux: the store's
/// name, and for a store of several sessions the session's short id.
pub(super) fn session_name(name: &str, update: &Update, session_id: Option<&str>) -> String {
    match session_id {
        Some(sid) if update.sessions.len() > 1 => format!("{name} {}", short_id(sid)),
        _ => name.to_owned(),
    }
}

/// What `--tmux` publishes for an update: one `Facts` per pane its sessions name (a pane
/// shows the session whose rows came last), dropped sessions left out. `given` is the
/// pane `--tmux-pane` named for the store.
pub(super) fn pane_facts(
    name: &str,
    update: &Update,
    given: Option<&str>,
    dropped: impl Fn(Option<&str>) -> bool,
) -> Vec<Facts> {
    let mut by_pane: HashMap<String, (Option<Timestamp>, Facts)> = HashMap::new();
    for (sid, one) in update.per_session() {
        if dropped(one.current().session_id.as_deref()) {
            continue;
        }
        let facts = Facts::of(&session_name(name, update, sid), &one, given);
        let Some(pane) = facts.pane.clone() else {
            continue;
        };
        let at = one.current().last_row_at;
        if by_pane.get(&pane).is_none_or(|(seen, _)| *seen <= at) {
            by_pane.insert(pane, (at, facts));
        }
    }
    by_pane.into_values().map(|(_, f)| f).collect()
}

/// A session id short enough for a status line (its first 8 characters, as uuids read).
pub(super) fn short_id(id: &str) -> String {
    let short: String = id.chars().take(8).collect();
    display_text(&short, 8).replace(' ', "_")
}

fn turn_name(id: Option<&hooktrack_core::event::TurnId>) -> String {
    id.map_or_else(|| "-".to_owned(), ToString::to_string)
}

fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_view_writes_its_own_escapes_and_shows_a_rows_controls() {
        let mut view = Text::<InPlace>::default();
        let mut out = Vec::new();
        view.notice(&mut out, "store: turn p\x1b]52;c;eA==\x07 ended")
            .unwrap();
        let hostile = "store  claude-code  active  turn p\x1b[6n\u{9b}2J\u{202e}";
        let line = StatusLine {
            text: hostile.to_owned(),
            key: hostile.to_owned(),
        };
        view.redraw(&mut out, std::slice::from_ref(&line)).unwrap();
        view.redraw(&mut out, std::slice::from_ref(&line)).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Only the view's own sequences: erase the line, back to the first status line.
        let own = text.replace("\x1b[2K", "").replace("\x1b[1F", "");
        assert!(
            !own.chars()
                .any(|c| crate::safe_text::is_unsafe(c) && c != '\n'),
            "{own:?}"
        );
        assert!(
            own.contains(r"turn p\u{1b}]52;c;eA==\u{7} ended"),
            "{own:?}"
        );
        assert!(own.contains(r"turn p\u{1b}[6n\u{9b}2J\u{202e}"), "{own:?}");
    }
}
