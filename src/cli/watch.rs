//! `hooktrack watch`: follow sessions live; optionally publish them to tmux (`--tmux`,
//! `watch/tmux.rs`) and run a command on transitions (`--on-change`, `watch/notify.rs`).

mod bounded;
mod discover;
mod facts;
mod notify;
mod tmux;

use std::collections::{HashMap, HashSet};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use hooktrack::{Hub, HubConfig, SessionId, wall_clock};
use hooktrack::{Phase, ProviderChoice, Timestamp};
use hooktrack::{Session, SessionConfig, Update};

use super::fail;
use facts::{Facts, age_text, background_text, display_text};
use hooktrack_core::diagnostics::error_chain;

/// Follow sessions live: one status line per session, redrawn as they change.
///
/// Each PATH is a session root (its `hook-observation/<provider>/` store is found), a
/// store directory, or an events file. With no PATH: every agent's default store under
/// $XDG_STATE_HOME/hooktrack/agents/ (agents started without `hooktrack session`, after
/// `hooktrack setup`), and stores that appear there later. The line shows the agent, the turn phase, the turn
/// id and how long it has been running, open tool calls, the tool a blocked turn waits on,
/// the last turn's result, the channel state and the age of the last event. Stop with
/// Ctrl-C.
#[derive(Args)]
pub struct WatchArgs {
    /// Session roots, store directories or events files (none: every default store).
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
    /// Publish each session's posture as tmux user options on the agent's pane
    /// (@hooktrack_phase, @hooktrack_blocked, @hooktrack_last, @hooktrack_agent,
    /// @hooktrack_turn, @hooktrack_turn_age, @hooktrack_attention, @hooktrack_status), for
    /// status-right and window-status-format (docs/tmux.md). The pane is the one the
    /// rows name (the emitter records $TMUX_PANE), or --tmux-pane. Removed at exit.
    #[arg(long)]
    tmux: bool,
    /// The tmux server: a socket name (tmux -L) or, with a `/`, a socket path (tmux -S).
    /// Default: tmux's own ($TMUX inside tmux, else the default socket).
    #[arg(long, value_name = "NAME|PATH", requires = "tmux")]
    tmux_socket: Option<String>,
    /// The pane a session's agent runs in, when its rows do not say: PATH as given on the
    /// command line, PANE a tmux target (%3, work:2.1). Repeatable.
    #[arg(long, value_name = "PATH=PANE", requires = "tmux", value_parser = parse_pane_flag)]
    tmux_pane: Vec<(String, String)>,
    /// Milliseconds after which a tmux command is killed (tracking never waits for it).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    tmux_timeout_ms: u64,
    /// Run this shell command (sh -c) when a session enters `blocked`, ends a turn, or
    /// loses its agent. Its environment says what happened: HOOKTRACK_EVENT
    /// (blocked|turn_ended|absent), HOOKTRACK_SESSION, HOOKTRACK_AGENT, HOOKTRACK_RESULT,
    /// HOOKTRACK_TURN, HOOKTRACK_TOOL, HOOKTRACK_PANE, HOOKTRACK_PHASE, HOOKTRACK_AT.
    /// One run per transition, one at a time, off the tracking thread; what the logs held
    /// at start is not notified. Example:
    /// --on-change 'notify-send "$HOOKTRACK_AGENT: $HOOKTRACK_EVENT" "$HOOKTRACK_TOOL$HOOKTRACK_RESULT"'
    #[arg(long, value_name = "CMD")]
    on_change: Option<String>,
    /// Tell the person when a session enters `blocked`, ends a turn, or loses its agent
    /// (the --on-change transitions): a desktop notification through `notify-send` when
    /// it is on PATH in a desktop session, else the terminal's notification escapes (OSC
    /// 777 and OSC 9, through tmux's passthrough inside tmux: `set -g allow-passthrough
    /// on`). One per transition, at most one per session and event every 5 s, off the
    /// tracking thread (docs/notifications.md).
    #[arg(long)]
    notify: bool,
    /// Seconds after which an --on-change command is killed (with its process group).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    on_change_timeout: u64,
    /// Seconds a session stays shown after its agent process is gone (presence `absent`),
    /// then it is dropped: its status line goes, its pane's tmux options are removed, and
    /// --ndjson says `"dropped"` once. A session whose agent was already gone longer than
    /// this when watch started (its last row older) is dropped at once. The agent is the
    /// pid its rows name (agents started after `hooktrack setup`) or a launcher's
    /// `process_ended` row. A row from it later shows it again.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    drop_after: u64,
    /// Keep the read position in FILE and resume from it: after a restart, turns already
    /// reported are not reported again (their lines are re-read to rebuild the state).
    /// One session only; keep FILE outside the store.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
}

fn parse_pane_flag(text: &str) -> Result<(String, String), String> {
    let (path, pane) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("expected PATH=PANE, got `{text}`"))?;
    if path.is_empty() {
        return Err(format!("no PATH in `{text}`"));
    }
    if !tmux::is_pane_target(pane) {
        return Err(format!(
            "`{pane}` is not a tmux pane target (a pane id like %3, or session:window.pane)"
        ));
    }
    Ok((path.to_owned(), pane.to_owned()))
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
        match hooktrack::resolve_store(path) {
            Ok(paths) => stores.push((path.display().to_string(), paths)),
            Err(e) => return fail(&error_chain(&e)),
        }
    }
    if args.checkpoint.is_some() && stores.len() != 1 {
        return fail("--checkpoint follows one session: give one PATH");
    }
    let mut discover = if args.paths.is_empty() {
        let env = |name: &str| std::env::var_os(name);
        match hooktrack_producer::emit::default_store::stores_root(env) {
            Some(root) => Some(discover::Discover::new(root)),
            None => {
                return fail(
                    "no PATH given, and no $XDG_STATE_HOME or $HOME to find the default stores in",
                );
            }
        }
    } else {
        None
    };
    let mut given_panes: HashMap<String, String> = HashMap::new();
    for (path, pane) in &args.tmux_pane {
        if !stores.iter().any(|(name, _)| name == path) {
            eprintln!(
                "hooktrack: error: --tmux-pane {path}={pane}: {path} is not one of the watched paths"
            );
            return ExitCode::from(2);
        }
        given_panes.insert(path.clone(), pane.clone());
    }
    let (warn_tx, warnings) = mpsc::channel::<String>();
    let mut tmux = if args.tmux {
        let target = tmux::TmuxTarget {
            socket: args.tmux_socket.clone(),
            timeout: Duration::from_millis(args.tmux_timeout_ms),
        };
        match tmux::Tmux::start(target, warn_tx.clone()) {
            Ok(t) => Some(t),
            Err(e) => return fail(&format!("cannot start the tmux publisher: {e}")),
        }
    } else {
        None
    };
    let mut notifier = match &args.on_change {
        Some(command) => match notify::Notifier::start(
            notify::Action::Shell(command.clone()),
            Duration::from_secs(args.on_change_timeout),
            warn_tx.clone(),
        ) {
            Ok(n) => Some(n),
            Err(e) => return fail(&format!("cannot start the --on-change runner: {e}")),
        },
        None => None,
    };
    let mut desktop = if args.notify {
        match notify::Notifier::start(
            notify::Action::Desktop(desktop_notifier()),
            Duration::from_secs(args.on_change_timeout),
            warn_tx.clone(),
        ) {
            Ok(n) => Some(n),
            Err(e) => return fail(&format!("cannot start the --notify worker: {e}")),
        }
    } else {
        None
    };
    drop(warn_tx);
    // Ctrl-C, `kill` and a closed terminal all end the watch the same way: the loop sees
    // the flag, the view finishes its last frame.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            return fail(&format!("cannot handle Ctrl-C: {}", error_chain(&e)));
        }
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
    let mut panes: HashMap<SessionId, String> = HashMap::new();
    let mut order = Vec::new();
    for (name, paths) in stores {
        let id = hub.add(Session::open(paths, config.clone()));
        if let Some(pane) = given_panes.remove(&name) {
            panes.insert(id, pane);
        }
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
    let mut dropped: HashSet<(SessionId, Option<String>)> = HashSet::new();
    // The stores whose first update was seen (the notifiers' baseline).
    let mut looked: HashSet<SessionId> = HashSet::new();
    let grace_ms = i64::try_from(args.drop_after.saturating_mul(1000)).unwrap_or(i64::MAX);
    let mut next_redraw = Instant::now() + REDRAW;
    if let Some(d) = &discover
        && let Err(e) = view.notice(
            &mut out,
            &format!("watching every default store in {}", d.root().display()),
        )
    {
        return fail(&format!("cannot write the output: {e}"));
    }
    let result = loop {
        if stop.load(Ordering::SeqCst) {
            break view.finish(&mut out);
        }
        // Stores that appeared since the last look (the first look finds those there).
        for (name, dir) in discover
            .as_mut()
            .map(|d| d.new_stores())
            .unwrap_or_default()
        {
            match hooktrack::resolve_store(&dir) {
                Ok(paths) => {
                    let id = hub.add(Session::open(paths, config.clone()));
                    names.insert(id, name);
                    order.push(id);
                }
                Err(e) => {
                    let _ =
                        view.notice(&mut out, &format!("{}: {}", dir.display(), error_chain(&e)));
                }
            }
        }
        let wait = STOP_CHECK.min(next_redraw.saturating_duration_since(Instant::now()));
        let step = match updates.recv_timeout(wait) {
            Ok((id, update)) => {
                let name = names.get(&id).map_or("?", |n| n.trim_end());
                let given = panes.get(&id).map(String::as_str);
                if let Some(t) = &mut tmux {
                    for facts in pane_facts(name, &update, given, |sid| {
                        dropped.contains(&(id, sid.map(str::to_owned)))
                    }) {
                        t.update(&facts, wall_clock());
                    }
                }
                // Per session of the store: a session that blocks or ends while another's
                // rows came last is told too. Sessions of a store's first update are what
                // the logs held; one that appears later is news from its first update.
                let first_look = looked.insert(id);
                if notifier.is_some() || desktop.is_some() {
                    for (sid, one) in update.per_session() {
                        let key = format!(
                            "{id:?} {}",
                            one.current().session_id.as_deref().unwrap_or("")
                        );
                        if dropped.contains(&(id, one.current().session_id.clone())) {
                            continue;
                        }
                        let facts = Facts::of(&session_name(name, &update, sid), &one, given);
                        for n in [&mut notifier, &mut desktop].into_iter().flatten() {
                            n.update(&key, !first_look, &facts, &one);
                        }
                    }
                }
                let shown = view.update(&mut out, name, &update, &|sid| {
                    dropped.contains(&(id, sid.map(str::to_owned)))
                });
                latest.insert(id, update);
                shown
            }
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => break view.finish(&mut out),
        };
        let step = step.and_then(|()| {
            // Sessions whose agent has been gone for the grace period leave the view.
            let now = wall_clock();
            for id in &order {
                let Some(update) = latest.get(id) else {
                    continue;
                };
                let name = names.get(id).map_or("?", |n| n.trim_end());
                for s in &update.sessions {
                    let key = (*id, s.session_id.clone());
                    let gone = s
                        .gone_since
                        .is_some_and(|g| now.as_millis().saturating_sub(g.as_millis()) >= grace_ms);
                    if !gone {
                        dropped.remove(&key);
                        continue;
                    }
                    if !dropped.insert(key) {
                        continue;
                    }
                    view.dropped(&mut out, name, s.session_id.as_deref(), s.gone_since, now)?;
                    if let Some(t) = &mut tmux
                        && let Some(pane) =
                            s.tmux_pane.as_deref().or(panes.get(id).map(String::as_str))
                    {
                        t.forget(pane, &session_name(name, update, s.session_id.as_deref()));
                    }
                }
            }
            for warning in warnings.try_iter() {
                view.notice(&mut out, &warning)?;
            }
            if Instant::now() < next_redraw && !view.redraws_on_update() {
                return Ok(());
            }
            if Instant::now() >= next_redraw
                && let Some(t) = &mut tmux
            {
                t.tick(now);
            }
            next_redraw = Instant::now() + REDRAW;
            // A store of several session_ids: one status line per session.
            let lines: Vec<StatusLine> = order
                .iter()
                .filter_map(|id| Some((id, names.get(id)?, latest.get(id)?)))
                .flat_map(|(id, name, update)| {
                    update
                        .per_session()
                        .into_iter()
                        .filter(|(_, one)| {
                            !dropped.contains(&(*id, one.current().session_id.clone()))
                        })
                        .map(|(session, update)| match session {
                            Some(sid) => {
                                status_line(&format!("{name} {}", short_id(sid)), &update, now)
                            }
                            None => status_line(name, &update, now),
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            view.redraw(&mut out, &lines)
        });
        if let Err(e) = step {
            break Err(e);
        }
    };
    drop(hub);
    if let Some(t) = tmux {
        t.finish();
    }
    if let Some(n) = notifier {
        n.finish();
    }
    if let Some(n) = desktop {
        n.finish();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("cannot write the output: {e}")),
    }
}

/// How `--notify` reaches the person: `notify-send` when it is on PATH and a desktop
/// session is there to show it, else the terminal's escapes (wrapped inside tmux).
fn desktop_notifier() -> notify::Desktop {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let desktop = set("DISPLAY") || set("WAYLAND_DISPLAY") || set("DBUS_SESSION_BUS_ADDRESS");
    let notify_send = std::env::var_os("PATH").and_then(|dirs| {
        std::env::split_paths(&dirs)
            .map(|d| d.join("notify-send"))
            .find(|p| p.is_file())
    });
    match notify_send {
        Some(program) if desktop => notify::Desktop::NotifySend(program),
        _ => notify::Desktop::Osc { tmux: set("TMUX") },
    }
}

/// The three ways to show updates.
trait View {
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
    /// The status lines, in the order the sessions were named.
    fn redraw(&mut self, out: &mut dyn Write, lines: &[StatusLine]) -> io::Result<()>;
    /// A problem of a helper (tmux, the --on-change command): never one of tracking.
    fn notice(&mut self, out: &mut dyn Write, text: &str) -> io::Result<()>;
    fn redraws_on_update(&self) -> bool;
    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()>;
}

/// One JSON line per update.
struct Ndjson;

#[derive(Serialize)]
struct NdjsonLine<'a> {
    session: &'a str,
    /// Set for a store of several `session_id`s: one line per session.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(flatten)]
    update: &'a Update,
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
            serde_json::to_writer(
                &mut *out,
                &NdjsonLine {
                    session: name,
                    session_id,
                    update: &update,
                },
            )?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    fn redraw(&mut self, _out: &mut dyn Write, _lines: &[StatusLine]) -> io::Result<()> {
        Ok(())
    }

    fn notice(&mut self, _out: &mut dyn Write, text: &str) -> io::Result<()> {
        // Standard output is for JSON lines only.
        eprintln!("hooktrack: watch: {text}");
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
    fn update(
        &mut self,
        _out: &mut dyn Write,
        name: &str,
        update: &Update,
        _dropped: &dyn Fn(Option<&str>) -> bool,
    ) -> io::Result<()> {
        self.notices.extend(events_of(name, update));
        Ok(())
    }

    fn notice(&mut self, _out: &mut dyn Write, text: &str) -> io::Result<()> {
        self.notices.push(text.to_owned());
        Ok(())
    }

    fn redraw(&mut self, out: &mut dyn Write, lines: &[StatusLine]) -> io::Result<()> {
        if self.drawn > 0 {
            // Back to the first status line.
            write!(out, "\x1b[{}F", self.drawn)?;
        }
        for notice in self.notices.drain(..) {
            writeln!(out, "\x1b[2K{notice}")?;
        }
        for line in lines {
            writeln!(out, "\x1b[2K{}", line.text)?;
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

    fn notice(&mut self, _out: &mut dyn Write, text: &str) -> io::Result<()> {
        self.pending.push(text.to_owned());
        Ok(())
    }

    fn redraw(&mut self, out: &mut dyn Write, lines: &[StatusLine]) -> io::Result<()> {
        for notice in self.pending.drain(..) {
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
    let turns = update.closed().map(move |t| {
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
struct StatusLine {
    text: String,
    key: String,
}

/// `NAME  AGENT  PHASE  turn ID  for AGE  tools N  waits TOOL  last RESULT  CHANNEL
/// event AGE`: which agent, what it does, since when, and what it waits for. The phase
/// says how much background work runs, if any (`ready · 1 background`).
fn status_line(name: &str, update: &Update, now: Timestamp) -> StatusLine {
    let p = update.posture();
    let agent = update.agent().map_or("?", |a| a.name());
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
    let turn_age = update.turn_started_at().map_or_else(
        || "-".to_owned(),
        |at| age_text(now.as_millis() - at.as_millis()),
    );
    let event_age = match update.last_event_at {
        Some(at) => format!(
            "{:.1}s ago",
            (now.as_millis() - at.as_millis()).max(0) as f64 / 1000.0
        ),
        None => "never".to_owned(),
    };
    let line = |turn_age: &str, event_age: &str| {
        format!(
            "{name}  {agent:<11}  {:<7}  turn {:<4}  for {turn_age:<6}  tools {:<3}  waits {waits:<10}  last {:<13}  {:<19}  event {event_age}",
            name_of(&p.turn.phase) + &background_text(p.turn.background()),
            turn_name(p.turn.turn_id.as_ref()),
            p.turn.open_tool_calls,
            p.last_turn.result.name(),
            name_of(&update.channel.state),
        )
    };
    StatusLine {
        text: line(&turn_age, &event_age),
        key: line("", ""),
    }
}

/// How a session of the store `name` is named in a status line and to tmux: the store's
/// name, and for a store of several sessions the session's short id.
fn session_name(name: &str, update: &Update, session_id: Option<&str>) -> String {
    match session_id {
        Some(sid) if update.sessions.len() > 1 => format!("{name} {}", short_id(sid)),
        _ => name.to_owned(),
    }
}

/// What `--tmux` publishes for an update: one `Facts` per pane its sessions name (a pane
/// shows the session whose rows came last), dropped sessions left out. `given` is the
/// pane `--tmux-pane` named for the store.
fn pane_facts(
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
fn short_id(id: &str) -> String {
    let short: String = id.chars().take(8).collect();
    display_text(&short, 8).replace(' ', "_")
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
