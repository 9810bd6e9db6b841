//! `hooktrack watch`: follow sessions live.

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use hooktrack::StorePaths;
use hooktrack::{Hub, HubConfig, SessionId, wall_clock};
use hooktrack::{Phase, ProviderChoice, Timestamp};
use hooktrack::{Session, SessionConfig, Update};

use super::fail;
use hooktrack_core::diagnostics::error_chain;

/// Follow sessions live: one status line per session, redrawn as they change.
///
/// Each PATH is a session root (its `hook-observation/<provider>/` store is found), a
/// store directory, or an events file. The line shows the turn phase, the turn id, open
/// tool calls, pending permissions, the last turn's result, the channel state and the age
/// of the last event. Stop with Ctrl-C.
#[derive(Args)]
pub struct WatchArgs {
    /// Session roots, store directories or events files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print one JSON line per posture change instead (for supervisors in other
    /// languages): `{"session", "at", "posture", "channel", "closed", "notices", ...}`.
    #[arg(long)]
    ndjson: bool,
    /// Which agent CLI wrote the logs: auto (detected from the rows), kimi (either Kimi),
    /// kimi-code, kimi-cli, claude, codex or gemini.
    #[arg(long, visible_alias = "agent", default_value = "auto", value_parser = super::parse_agent_choice)]
    provider: ProviderChoice,
    /// Milliseconds between re-checks of every session, whatever the file watcher says.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    recheck_ms: u64,
    /// Keep the read position in FILE and resume from it: after a restart, turns already
    /// reported are not reported again (their lines are re-read to rebuild the state).
    /// One session only; keep FILE outside the store.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
}

/// How often the live view redraws the ages when nothing else happens.
const REDRAW: Duration = Duration::from_secs(1);
/// How often the loop looks at the Ctrl-C flag while waiting.
const STOP_CHECK: Duration = Duration::from_millis(200);

pub fn run(args: &WatchArgs) -> ExitCode {
    let mut stores = Vec::new();
    for path in &args.paths {
        // A store not created yet is fine (no events yet), a path to nowhere is a typo.
        let parent_exists = path
            .parent()
            .is_none_or(|p| p.as_os_str().is_empty() || p.exists());
        if !path.exists() && !parent_exists {
            return fail(&format!("{}: no such file or directory", path.display()));
        }
        match StorePaths::resolve(path) {
            Ok(paths) => stores.push((path.display().to_string(), paths)),
            Err(e) => return fail(&error_chain(&e)),
        }
    }
    if args.checkpoint.is_some() && stores.len() > 1 {
        return fail("--checkpoint follows one session: give one PATH");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
        return fail(&format!("cannot handle Ctrl-C: {}", error_chain(&e)));
    }
    let (mut hub, updates) = match Hub::start(HubConfig {
        recheck: Duration::from_millis(args.recheck_ms),
    }) {
        Ok(started) => started,
        Err(e) => return fail(&error_chain(&e)),
    };
    let config = SessionConfig {
        provider: args.provider,
        checkpoint: args.checkpoint.clone(),
        ..SessionConfig::default()
    };
    let width = stores
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let mut names = HashMap::new();
    let mut order = Vec::new();
    for (name, paths) in stores {
        let id = hub.add(Session::open(paths, config.clone()));
        names.insert(id, format!("{name:<width$}"));
        order.push(id);
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut view: Box<dyn View> = if args.ndjson {
        Box::new(Ndjson)
    } else if io::stdout().is_terminal() {
        Box::new(LiveView::default())
    } else {
        Box::new(Lines::default())
    };
    let mut latest: HashMap<SessionId, Update> = HashMap::new();
    let mut next_redraw = Instant::now() + REDRAW;
    let result = loop {
        if stop.load(Ordering::SeqCst) {
            break view.finish(&mut out);
        }
        let wait = STOP_CHECK.min(next_redraw.saturating_duration_since(Instant::now()));
        let step = match updates.recv_timeout(wait) {
            Ok((id, update)) => {
                let name = names.get(&id).map_or("?", |n| n.trim_end());
                let shown = view.update(&mut out, name, &update);
                latest.insert(id, update);
                shown
            }
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => break view.finish(&mut out),
        };
        let step = step.and_then(|()| {
            if Instant::now() < next_redraw && !view.redraws_on_update() {
                return Ok(());
            }
            next_redraw = Instant::now() + REDRAW;
            let now = wall_clock();
            let lines: Vec<String> = order
                .iter()
                .filter_map(|id| Some(status_line(names.get(id)?, latest.get(id)?, now)))
                .collect();
            view.redraw(&mut out, &lines)
        });
        if let Err(e) = step {
            break Err(e);
        }
    };
    drop(hub);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("cannot write the output: {e}")),
    }
}

/// The three ways to show updates.
trait View {
    /// One update arrived for `name`.
    fn update(&mut self, out: &mut dyn Write, name: &str, update: &Update) -> io::Result<()>;
    /// The status lines, in the order the sessions were named.
    fn redraw(&mut self, out: &mut dyn Write, lines: &[String]) -> io::Result<()>;
    fn redraws_on_update(&self) -> bool;
    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()>;
}

/// One JSON line per update.
struct Ndjson;

#[derive(Serialize)]
struct NdjsonLine<'a> {
    session: &'a str,
    #[serde(flatten)]
    update: &'a Update,
}

impl View for Ndjson {
    fn update(&mut self, out: &mut dyn Write, name: &str, update: &Update) -> io::Result<()> {
        serde_json::to_writer(
            &mut *out,
            &NdjsonLine {
                session: name,
                update,
            },
        )?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn redraw(&mut self, _out: &mut dyn Write, _lines: &[String]) -> io::Result<()> {
        Ok(())
    }

    fn redraws_on_update(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

/// A terminal: the status block is redrawn in place; notices scroll above it.
#[derive(Default)]
struct LiveView {
    drawn: usize,
    notices: Vec<String>,
}

impl View for LiveView {
    fn update(&mut self, _out: &mut dyn Write, name: &str, update: &Update) -> io::Result<()> {
        self.notices.extend(events_of(name, update));
        Ok(())
    }

    fn redraw(&mut self, out: &mut dyn Write, lines: &[String]) -> io::Result<()> {
        if self.drawn > 0 {
            // Back to the first status line.
            write!(out, "\x1b[{}F", self.drawn)?;
        }
        for notice in self.notices.drain(..) {
            writeln!(out, "\x1b[2K{notice}")?;
        }
        for line in lines {
            writeln!(out, "\x1b[2K{line}")?;
        }
        self.drawn = lines.len();
        out.flush()
    }

    fn redraws_on_update(&self) -> bool {
        true
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

/// Not a terminal: a status line whenever it changes (ages aside), notices as lines.
#[derive(Default)]
struct Lines {
    last: Vec<String>,
    pending: Vec<String>,
}

impl View for Lines {
    fn update(&mut self, _out: &mut dyn Write, name: &str, update: &Update) -> io::Result<()> {
        self.pending.extend(events_of(name, update));
        Ok(())
    }

    fn redraw(&mut self, out: &mut dyn Write, lines: &[String]) -> io::Result<()> {
        for notice in self.pending.drain(..) {
            writeln!(out, "{notice}")?;
        }
        self.last.resize(lines.len(), String::new());
        for (line, last) in lines.iter().zip(&mut self.last) {
            // The age changes every second; compare what is before it.
            let (key, _) = line.rsplit_once("  event ").unwrap_or((line, ""));
            if last != key {
                writeln!(out, "{line}")?;
                *last = key.to_owned();
            }
        }
        out.flush()
    }

    fn redraws_on_update(&self) -> bool {
        true
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        out.flush()
    }
}

/// The lines that scroll above the status: notices, then the turns that ended.
fn events_of<'a>(name: &'a str, update: &'a Update) -> impl Iterator<Item = String> + 'a {
    let notices = update.notices.iter().map(move |n| format!("{name}: {n}"));
    let turns = update.closed.iter().map(move |t| {
        format!(
            "{name}: turn {} ended: {}",
            turn_name(t.turn_id.as_ref()),
            t.result.name()
        )
    });
    notices.chain(turns)
}

fn status_line(name: &str, update: &Update, now: Timestamp) -> String {
    let p = &update.posture;
    let blocked = if p.turn.phase == Phase::Blocked {
        format!("blocked({})", p.turn.pending_permissions)
    } else {
        "-".to_owned()
    };
    let age = match update.last_event_at {
        Some(at) => format!(
            "{:.1}s ago",
            (now.as_millis() - at.as_millis()).max(0) as f64 / 1000.0
        ),
        None => "never".to_owned(),
    };
    format!(
        "{name}  {:<7}  turn {:<4}  tools {:<3}  {:<10}  last {:<13}  {:<19}  event {age}",
        name_of(&p.turn.phase),
        turn_name(p.turn.turn_id.as_ref()),
        p.turn.open_tool_calls,
        blocked,
        p.last_turn.result.name(),
        name_of(&update.channel.state),
    )
}

fn turn_name(id: Option<&hooktrack::TurnId>) -> String {
    id.map_or_else(|| "-".to_owned(), ToString::to_string)
}

fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}
