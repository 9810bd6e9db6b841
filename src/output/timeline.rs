//! The human-readable timeline of `hooktrack replay`.

use std::fmt::Write as _;
use std::io::{self, Write};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::event::{Event, OriginKind, ToolRef, TurnId};
use hooktrack_core::pipeline::Fed;
use hooktrack_core::posture::Posture;
use hooktrack_core::source::Source;

use super::Report;

const PROMPT_EXCERPT: usize = 40;

/// The timeline's line buffer, reused from line to line. A line is built in it with its
/// columns padded here and written with one call: `writeln!` with `{:<44}` padded a
/// character at a time through the formatting machinery, and every line allocated each
/// of its pieces, which together cost more than the rest of a text replay after the parse.
#[derive(Default)]
pub(super) struct Lines {
    buf: String,
}

impl Lines {
    /// Writes the timeline line of one fed line: `{:>5}  {:<12}  {:<44}  {}` of its line,
    /// time, event and posture changes, then its notes and the turns it ended.
    pub(super) fn write<W: Write>(
        &mut self,
        out: &mut W,
        fed: &Fed<'_>,
        before: &Posture,
        after: &Posture,
    ) -> io::Result<()> {
        let step = match fed {
            // A transcript is mostly entries that are not markers: counted, not listed.
            Fed::Skipped(skip) if skip.source != Source::Hook => return Ok(()),
            Fed::Skipped(skip) => {
                return writeln!(
                    out,
                    "{:>5}  {:<12}  skipped: {}: {}",
                    skip.line, "", skip.diag, skip.detail
                );
            }
            Fed::Event(step) => step,
        };
        let buf = &mut self.buf;
        buf.clear();
        // Lines of a transcript are marked `t<line>`; the process's end `proc`.
        match step.source {
            Source::Hook => push_number(buf, step.line),
            Source::Transcript => {
                buf.push('t');
                push_number(buf, step.line);
            }
            _ => buf.extend(step.source.name().chars().take(4)),
        }
        pad(buf, 0, 5, Align::Right);
        buf.push_str("  ");
        let at = buf.len();
        match step.at {
            None => buf.push('-'),
            Some(t) => match t.clock_digits().as_ref().map(|d| std::str::from_utf8(d)) {
                Some(Ok(clock)) => buf.push_str(clock),
                _ => buf.push_str(&t.clock()),
            },
        }
        pad(buf, at, 12, Align::Left);
        buf.push_str("  ");
        let what = buf.len();
        buf.push_str(&step.name);
        buf.push(' ');
        describe_into(buf, &step.event);
        let kept = buf[what..].trim_end().len();
        buf.truncate(what + kept);
        pad(buf, what, 44, Align::Left);
        buf.push_str("  ");
        changes_into(buf, before, after);
        buf.push('\n');
        let no_fmt = |_| io::Error::other("formatting a timeline line failed");
        for note in &step.outcome.notes {
            writeln!(buf, "{:>5}  {:<12}    note: {note}", "", "").map_err(no_fmt)?;
        }
        for turn in &step.outcome.closed {
            writeln!(
                buf,
                "{:>5}  {:<12}    turn ended: {}",
                "",
                "",
                turn_line(turn)
            )
            .map_err(no_fmt)?;
        }
        out.write_all(buf.as_bytes())
    }
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

/// Pads `buf[from..]` with spaces to `width` characters, as `{:<width}` or `{:>width}`
/// would (width counted in `char`s; a longer text is left whole).
fn pad(buf: &mut String, from: usize, width: usize, align: Align) {
    let len = buf[from..].chars().count();
    if len >= width {
        return;
    }
    const SPACES: &str = "                                            ";
    let fill = &SPACES[..(width - len).min(SPACES.len())];
    match align {
        Align::Left => buf.push_str(fill),
        Align::Right => buf.insert_str(from, fill),
    }
}

/// Appends `n` in decimal.
fn push_number(buf: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Appends the posture fields a line changed, `field before→after` joined by `, `, or
/// `·` when it changed none.
fn changes_into(buf: &mut String, before: &Posture, after: &Posture) {
    // Most lines change nothing a person reads: spare building both postures' fields.
    let changed = if before == after {
        Vec::new()
    } else {
        before.changes_to(after)
    };
    if changed.is_empty() {
        buf.push('·');
    }
    for (i, c) in changed.iter().enumerate() {
        if i > 0 {
            buf.push_str(", ");
        }
        buf.push_str(c.field);
        buf.push(' ');
        buf.push_str(&c.before);
        buf.push('→');
        buf.push_str(&c.after);
    }
}

pub(super) fn describe(event: &Event<'_>) -> String {
    let mut text = String::new();
    describe_into(&mut text, event);
    text
}

/// Appends what the timeline says of `event` after its name ([`describe`]).
fn describe_into(out: &mut String, event: &Event<'_>) {
    fn opt<'v>(v: &'v Option<std::borrow::Cow<'_, str>>) -> &'v str {
        v.as_deref().unwrap_or("?")
    }
    // `write!` into a `String` cannot fail.
    match event {
        Event::SessionStarted { source } => out.push_str(opt(source)),
        Event::SessionEnded { reason } => out.push_str(opt(reason)),
        Event::PromptSubmitted {
            text, steer, agent, ..
        } => {
            let mut excerpt: String = text.chars().take(PROMPT_EXCERPT).collect();
            if text.chars().count() > PROMPT_EXCERPT {
                excerpt.push('…');
            }
            let excerpt = excerpt.replace(['\n', '\r'], " ");
            let _ = match (steer, agent) {
                (true, _) => write!(out, "{excerpt:?} (steer)"),
                (false, Some(a)) => write!(out, "{excerpt:?} [agent {a}]"),
                (false, None) => write!(out, "{excerpt:?}"),
            };
        }
        Event::PromptQueued {
            queue_length: Some(n),
            ..
        } => {
            let _ = write!(out, "queue {n}");
        }
        Event::TurnStarted {
            turn_id,
            origin,
            origin_name,
        } => {
            match turn_id {
                Some(TurnId::Int(n)) => {
                    let _ = write!(out, "{n}");
                }
                Some(TurnId::Text(t)) => out.push_str(t),
                None => out.push('?'),
            }
            match origin {
                OriginKind::User => out.push_str(" user"),
                OriginKind::SystemTrigger => {
                    out.push_str(" system_trigger:");
                    out.push_str(opt(origin_name));
                }
                OriginKind::Task => match origin_name {
                    Some(task) => {
                        let _ = write!(out, " agent (task {task})");
                    }
                    None => out.push_str(" agent"),
                },
                OriginKind::Other => out.push_str(" other"),
            }
        }
        Event::ToolStarted { tool } | Event::ToolFinished { tool } => tool_text(out, tool),
        Event::ToolFailed {
            tool, interrupt, ..
        } => {
            tool_text(out, tool);
            if *interrupt {
                out.push_str(" (interrupt)");
            }
        }
        Event::PermissionRequested { tool, .. } => {
            let from = out.len();
            tool_text(out, tool);
            if out.len() == from {
                out.push_str("(permission request)");
            }
        }
        Event::PermissionResolved { tool, decision, .. } => {
            let decision = serde_json::to_value(decision)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = write!(out, "{} {decision}", opt(&tool.call_id));
        }
        Event::Stopped {
            stop_hook_active: true,
            ..
        } => out.push_str("stop_hook_active"),
        Event::StopFailed { error_type, .. } => out.push_str(opt(error_type)),
        Event::Interrupted {
            turn_id: Some(t), ..
        } => {
            let _ = write!(out, "turn {t}");
        }
        Event::SubagentStarted { name, agent_id } | Event::SubagentStopped { name, agent_id } => {
            out.push_str(name.as_deref().filter(|n| !n.is_empty()).unwrap_or("?"));
            if let Some(id) = agent_id {
                let _ = write!(out, " [agent {id}]");
            }
        }
        Event::Activity { .. } => {}
        Event::Retrying { attempt: Some(n) } => {
            let _ = write!(out, "attempt {n}");
        }
        Event::Retrying { attempt: None } => {}
        Event::ModelSwitched { from, to, .. } => {
            let _ = write!(
                out,
                "{} -> {}",
                from.as_deref().unwrap_or("?"),
                to.as_deref().unwrap_or("?")
            );
        }
        Event::TaskStarted { kind, .. } => out.push_str(opt(kind)),
        Event::TaskFinished { task_id } => out.push_str(opt(task_id)),
        Event::CompactionStarted { trigger } | Event::CompactionFinished { trigger } => {
            out.push_str(opt(trigger));
        }
        Event::Notification { kind, .. } => out.push_str(opt(kind)),
        Event::PromptBlocked { prompt_id } => out.push_str(opt(prompt_id)),
        Event::InputRequested { kind, agent } => {
            out.push_str(opt(kind));
            if let Some(a) = agent {
                let _ = write!(out, " [agent {a}]");
            }
        }
        Event::Heartbeat => {}
        Event::ProcessEnded { pid: Some(p) } => {
            let _ = write!(out, "pid {p}");
        }
        Event::Unknown { .. } => out.push_str("(unknown event)"),
        // Nothing to add: the events above without their value (a queue length, a
        // turn id, a pid, an active stop hook), and a canonical event newer than this
        // timeline (its name says what it is).
        _ => {}
    }
}

fn tool_text(out: &mut String, tool: &ToolRef<'_>) {
    match (&tool.name, &tool.call_id) {
        (Some(n), Some(id)) => {
            out.push_str(n);
            out.push(' ');
            out.push_str(id);
        }
        (Some(n), None) => out.push_str(n),
        (None, Some(id)) => out.push_str(id),
        (None, None) => {}
    }
    if let Some(agent) = &tool.agent {
        let _ = write!(out, " [agent {agent}]");
    }
}

fn turn_line(t: &TurnRecord) -> String {
    let id = t
        .turn_id
        .as_ref()
        .map_or_else(|| "-".to_owned(), |t| t.to_string());
    format!(
        "#{} {} epoch {} turn {} ({}) → {}, lines {}–{}, {} tool call{}",
        t.id,
        t.scope,
        t.epoch,
        id,
        t.origin,
        t.result.name(),
        t.first_row,
        t.last_row,
        t.tool_calls,
        if t.tool_calls == 1 { "" } else { "s" }
    ) + &match t.ended_by {
        // The hooks end nearly every turn; only another source is named.
        Some(source) if source != Source::Hook => format!(", ended by the {source}"),
        _ => String::new(),
    }
}

/// `--explain`: what set each fact of the final posture.
pub(super) fn write_explain<W: Write>(out: &mut W, report: &Report) -> io::Result<()> {
    let p = &report.final_posture;
    let value = |fact: &str| match fact {
        "blocked" => (p.turn.phase == hooktrack_core::posture::Phase::Blocked).to_string(),
        "last_result" => p.last_turn.result.name().to_owned(),
        "compacting" => p.maintenance.compacting.to_string(),
        other => field(p, other),
    };
    writeln!(out)?;
    writeln!(out, "provenance of the final posture:")?;
    for (fact, cause) in report.provenance.facts() {
        let why = match cause {
            None => "never set (the default)".to_owned(),
            Some(c) => {
                let line = match c.source {
                    Source::Hook => format!("line {}", c.line),
                    Source::Transcript => format!("transcript line {}", c.line),
                    _ => "-".to_owned(),
                };
                let at = c.at.map_or_else(|| "-".to_owned(), |t| t.clock());
                format!("{} {} ({line}, {at})", c.source, c.event)
            }
        };
        writeln!(out, "  {fact:<12} {:<14} ← {why}", value(fact))?;
    }
    if let Some(turn) = report
        .turns
        .iter()
        .rev()
        .find(|t| t.is_main() && t.result.name() == p.last_turn.result.name())
    {
        writeln!(out, "  last turn    {}", turn_line(turn))?;
    }
    Ok(())
}

pub(super) fn write_summary<W: Write>(out: &mut W, report: &Report) -> io::Result<()> {
    writeln!(out)?;
    match &report.provider {
        Some(d) => writeln!(
            out,
            "provider: {} ({}{})",
            d.provider,
            d.reason,
            d.line.map_or_else(String::new, |l| format!(", line {l}"))
        )?,
        None => writeln!(out, "provider: not identified")?,
    }
    writeln!(out, "lines: {}, events: {}", report.lines, report.events)?;
    writeln!(out)?;
    writeln!(out, "turns ({}):", report.turns.len())?;
    for t in &report.turns {
        writeln!(out, "  {}", turn_line(t))?;
    }
    let p = &report.final_posture;
    writeln!(out)?;
    writeln!(
        out,
        "final: presence {}, phase {}, last result {}",
        field(p, "presence"),
        field(p, "phase"),
        p.last_turn.result.name()
    )?;
    writeln!(out)?;
    let nonzero: Vec<_> = report.diagnostics.nonzero().collect();
    if nonzero.is_empty() {
        writeln!(out, "diagnostics: none")?;
    } else {
        writeln!(out, "diagnostics:")?;
        for (diag, n) in nonzero {
            writeln!(out, "  {:<34} {n}", diag.name())?;
        }
        for (name, n) in report.diagnostics.unknown_events() {
            writeln!(out, "  unknown event {name:<20} {n}")?;
        }
    }
    Ok(())
}

fn field(p: &Posture, name: &str) -> String {
    p.fields()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_default()
}
