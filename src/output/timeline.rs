//! The human-readable timeline of `hooktrack replay`.

use std::io::{self, Write};

use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::event::{Event, OriginKind, ToolRef};
use hooktrack_core::pipeline::Fed;
use hooktrack_core::posture::Posture;
use hooktrack_core::source::Source;

use super::Report;

const PROMPT_EXCERPT: usize = 40;

pub(super) fn write_line<W: Write>(
    out: &mut W,
    fed: &Fed<'_>,
    before: &Posture,
    after: &Posture,
) -> io::Result<()> {
    match fed {
        // A transcript is mostly entries that are not markers: counted, not listed.
        Fed::Skipped(skip) if skip.source != Source::Hook => Ok(()),
        Fed::Skipped(skip) => writeln!(
            out,
            "{:>5}  {:<12}  skipped: {}: {}",
            skip.line, "", skip.diag, skip.detail
        ),
        Fed::Event(step) => {
            let time = step.at.map_or_else(|| "-".to_owned(), |t| t.clock());
            let what = format!("{} {}", step.name, describe(&step.event));
            // Lines of a transcript are marked `t<line>`; the process's end `proc`.
            let line = match step.source {
                Source::Hook => step.line.to_string(),
                Source::Transcript => format!("t{}", step.line),
                _ => step.source.name().chars().take(4).collect(),
            };
            writeln!(
                out,
                "{:>5}  {:<12}  {:<44}  {}",
                line,
                time,
                what.trim_end(),
                changes(before, after)
            )?;
            for note in &step.outcome.notes {
                writeln!(out, "{:>5}  {:<12}    note: {note}", "", "")?;
            }
            for turn in &step.outcome.closed {
                writeln!(
                    out,
                    "{:>5}  {:<12}    turn ended: {}",
                    "",
                    "",
                    turn_line(turn)
                )?;
            }
            Ok(())
        }
    }
}

fn changes(before: &Posture, after: &Posture) -> String {
    // Most lines change nothing a person reads: spare building both postures' fields.
    if before == after {
        return "·".to_owned();
    }
    let changed: Vec<String> = before
        .changes_to(after)
        .into_iter()
        .map(|c| format!("{} {}→{}", c.field, c.before, c.after))
        .collect();
    if changed.is_empty() {
        "·".to_owned()
    } else {
        changed.join(", ")
    }
}

pub(super) fn describe(event: &Event<'_>) -> String {
    let opt = |v: &Option<std::borrow::Cow<'_, str>>| v.as_deref().unwrap_or("?").to_owned();
    match event {
        Event::SessionStarted { source } => opt(source),
        Event::SessionEnded { reason } => opt(reason),
        Event::PromptSubmitted {
            text, steer, agent, ..
        } => {
            let mut excerpt: String = text.chars().take(PROMPT_EXCERPT).collect();
            if text.chars().count() > PROMPT_EXCERPT {
                excerpt.push('…');
            }
            let excerpt = excerpt.replace(['\n', '\r'], " ");
            match (steer, agent) {
                (true, _) => format!("{excerpt:?} (steer)"),
                (false, Some(a)) => format!("{excerpt:?} [agent {a}]"),
                (false, None) => format!("{excerpt:?}"),
            }
        }
        Event::PromptQueued { queue_length, .. } => {
            queue_length.map_or_else(String::new, |n| format!("queue {n}"))
        }
        Event::TurnStarted {
            turn_id,
            origin,
            origin_name,
        } => {
            let id = turn_id
                .as_ref()
                .map_or_else(|| "?".to_owned(), |t| t.to_string());
            match origin {
                OriginKind::User => format!("{id} user"),
                OriginKind::SystemTrigger => format!("{id} system_trigger:{}", opt(origin_name)),
                OriginKind::Task => match origin_name {
                    Some(task) => format!("{id} agent (task {task})"),
                    None => format!("{id} agent"),
                },
                OriginKind::Other => format!("{id} other"),
            }
        }
        Event::ToolStarted { tool } | Event::ToolFinished { tool } => tool_text(tool),
        Event::ToolFailed {
            tool, interrupt, ..
        } => {
            if *interrupt {
                format!("{} (interrupt)", tool_text(tool))
            } else {
                tool_text(tool)
            }
        }
        Event::PermissionRequested { tool, .. } => match tool_text(tool) {
            t if t.is_empty() => "(permission request)".to_owned(),
            t => t,
        },
        Event::PermissionResolved { tool, decision, .. } => {
            let decision = serde_json::to_value(decision)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{} {decision}", opt(&tool.call_id))
        }
        Event::Stopped {
            stop_hook_active, ..
        } => {
            if *stop_hook_active {
                "stop_hook_active".to_owned()
            } else {
                String::new()
            }
        }
        Event::StopFailed { error_type, .. } => opt(error_type),
        Event::Interrupted { turn_id, .. } => turn_id
            .as_ref()
            .map_or_else(String::new, |t| format!("turn {t}")),
        Event::SubagentStarted { name, agent_id } | Event::SubagentStopped { name, agent_id } => {
            let name = name.as_deref().filter(|n| !n.is_empty()).unwrap_or("?");
            match agent_id {
                Some(id) => format!("{name} [agent {id}]"),
                None => name.to_owned(),
            }
        }
        Event::Activity { .. } => String::new(),
        Event::ModelSwitched { from, to, .. } => format!(
            "{} -> {}",
            from.as_deref().unwrap_or("?"),
            to.as_deref().unwrap_or("?")
        ),
        Event::TaskStarted { kind, .. } => opt(kind),
        Event::TaskFinished { task_id } => opt(task_id),
        Event::CompactionStarted { trigger } | Event::CompactionFinished { trigger } => {
            opt(trigger)
        }
        Event::Notification { kind, .. } => opt(kind),
        Event::PromptBlocked { prompt_id } => opt(prompt_id),
        Event::InputRequested { kind, agent } => match agent {
            Some(a) => format!("{} [agent {a}]", opt(kind)),
            None => opt(kind),
        },
        Event::Heartbeat => String::new(),
        Event::ProcessEnded { pid } => pid.map_or_else(String::new, |p| format!("pid {p}")),
        Event::Unknown { .. } => "(unknown event)".to_owned(),
        // A canonical event newer than this timeline: its name says what it is.
        _ => String::new(),
    }
}

fn tool_text(tool: &ToolRef<'_>) -> String {
    let mut text = match (&tool.name, &tool.call_id) {
        (Some(n), Some(id)) => format!("{n} {id}"),
        (Some(n), None) => n.to_string(),
        (None, Some(id)) => id.to_string(),
        (None, None) => String::new(),
    };
    if let Some(agent) = &tool.agent {
        text.push_str(&format!(" [agent {agent}]"));
    }
    text
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
