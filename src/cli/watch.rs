//! `hooktrack watch`: the flags, a [`Watch`] built from them, and its output on stdout.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use hooktrack::ProviderChoice;
use hooktrack::error_chain;
use hooktrack::watch::{
    Desktop, Output, TmuxTarget, Watch, WatchConfig, WatchError, default_folders, is_pane_target,
};

use super::fail;

/// Follow sessions live: one status line per session, redrawn as they change.
///
/// Each PATH is a session root (its `hook-observation/<provider>/` store is found), a
/// store directory, an events file, or a quoted glob pattern of them ('runs/*'); a store
/// that appears there later is followed from its first row. With no PATH: every agent's
/// default store under $XDG_STATE_HOME/hooktrack/agents/ (agents started without
/// `hooktrack session`, after `hooktrack setup`) and every store `hooktrack session`
/// makes under $XDG_STATE_HOME/hooktrack/sessions/, including those that appear later. The line shows the agent, the turn phase, the turn
/// id and how long it has been running, open tool calls, the tool a blocked turn waits on,
/// the last turn's result, the channel state and the age of the last event. Stop with
/// Ctrl-C.
#[derive(Args)]
pub struct WatchArgs {
    /// Session roots, store directories, events files or glob patterns (none: every
    /// default store and every `hooktrack session` store).
    paths: Vec<PathBuf>,
    /// Print one JSON line per posture change instead (for supervisors in other
    /// languages): `{"session", "phase", "at", "posture", "channel", "closed", "notices",
    /// ...}` (`phase`: the word the status line and `@hooktrack_phase` show).
    #[arg(long)]
    ndjson: bool,
    #[arg(long, visible_alias = "agent", default_value = "auto", value_parser = super::parse_agent_choice,
          help = super::agent_choice_help("Which agent CLI wrote the logs"))]
    provider: ProviderChoice,
    /// Milliseconds between re-checks of every session, whatever the file watcher says.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    recheck_ms: u64,
    /// Publish each session's posture as tmux user options on the agent's pane
    /// (@hooktrack_phase, @hooktrack_status and the others docs/tmux.md lists), for
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
    /// HOOKTRACK_TURN, HOOKTRACK_TOOL, HOOKTRACK_ARGUMENT (what the waiting call acts on: its
    /// command or file, cut), HOOKTRACK_PANE, HOOKTRACK_PHASE, HOOKTRACK_AT.
    /// One run per transition, one at a time, off the tracking thread; what the logs held
    /// at start is not notified. Example:
    /// --on-change 'notify-send "$HOOKTRACK_AGENT: $HOOKTRACK_EVENT" "$HOOKTRACK_TOOL$HOOKTRACK_RESULT"'
    #[arg(long, value_name = "CMD")]
    on_change: Option<String>,
    /// Tell the person when a session enters `blocked`, ends a turn, or loses its agent
    /// (the --on-change transitions): inside tmux or with --tmux, the terminal's
    /// notification escapes (OSC 777 and OSC 9) written to every client attached to the
    /// server, whatever window it shows, and a bell in the agent's pane (its window's
    /// bell flag), plus `notify-send` in a desktop session; else `notify-send` when it is
    /// on PATH in a desktop session, else the escapes on this terminal. One per
    /// transition, at most one per session and event every 5 s, off the tracking thread
    /// (docs/notifications.md).
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
    /// `process_ended` row. A row from it later shows it again. An end seen from the pid
    /// is written to the store as a `process_ended` row (`"seen_by":"watch"`, once
    /// whatever the number of watchers), so a replay of the store ends the agent too.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    drop_after: u64,
    /// Keep the read position in FILE and resume from it: after a restart, turns already
    /// reported are not reported again (their lines are re-read to rebuild the state).
    /// One session only; keep FILE outside the store.
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    #[cfg(feature = "fleet")]
    #[command(flatten)]
    nats: super::fleet::NatsArgs,
}

fn parse_pane_flag(text: &str) -> Result<(String, String), String> {
    let (path, pane) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("expected PATH=PANE, got `{text}`"))?;
    if path.is_empty() {
        return Err(format!("no PATH in `{text}`"));
    }
    if !is_pane_target(pane) {
        return Err(format!(
            "`{pane}` is not a tmux pane target (a pane id like %3, or session:window.pane)"
        ));
    }
    Ok((path.to_owned(), pane.to_owned()))
}

/// How often the loop looks at the Ctrl-C flag while waiting.
const STOP_CHECK: Duration = Duration::from_millis(200);

pub fn run(args: &WatchArgs) -> ExitCode {
    // Ctrl-C, `kill` and a closed terminal all end the watch the same way: the loop sees
    // the flag, the view finishes its last frame.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            return fail(&format!("cannot handle Ctrl-C: {}", error_chain(&e)));
        }
    }
    // `watch nats://…`: every host's sessions, through the same outputs as stores'.
    #[cfg(feature = "fleet")]
    let fleet = match args.paths.iter().find(|p| super::fleet::is_server(p)) {
        Some(_) if args.paths.len() > 1 => {
            return fail("watch one NATS server, or stores: not both");
        }
        Some(server) => match super::fleet::view(&server.to_string_lossy(), &args.nats) {
            Ok(view) => Some(view),
            Err(e) => return fail(&e),
        },
        None => None,
    };
    #[cfg(feature = "fleet")]
    let paths = if fleet.is_some() {
        Vec::new()
    } else {
        args.paths.clone()
    };
    #[cfg(not(feature = "fleet"))]
    let paths = args.paths.clone();
    #[cfg(feature = "fleet")]
    let publish = match args.nats.publish() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    #[cfg(feature = "fleet")]
    let from_server = fleet.is_some();
    #[cfg(not(feature = "fleet"))]
    let from_server = false;
    let (default_stores, session_roots) = if args.paths.is_empty() && !from_server {
        default_folders(|name| std::env::var_os(name))
    } else {
        (None, None)
    };
    let output = if args.ndjson {
        Output::Ndjson
    } else if io::stdout().is_terminal() {
        Output::Live
    } else {
        Output::Lines
    };
    let tmux_target = TmuxTarget {
        socket: args.tmux_socket.clone(),
        timeout: Duration::from_millis(args.tmux_timeout_ms),
    };
    let config = WatchConfig {
        paths,
        default_stores,
        session_roots,
        provider: args.provider,
        recheck: Duration::from_millis(args.recheck_ms),
        drop_after: Duration::from_secs(args.drop_after),
        checkpoint: args.checkpoint.clone(),
        panes: args.tmux_pane.clone(),
        output: Some(output),
        tmux: args.tmux.then(|| tmux_target.clone()),
        on_change: args.on_change.clone(),
        notify: args
            .notify
            .then(|| desktop_notifier(args.tmux, tmux_target)),
        command_timeout: Duration::from_secs(args.on_change_timeout),
        record_process_ends: true,
        // Where each agent keeps the session file its payloads do not name (Copilot's log
        // of a permission answered): its home as this environment says.
        agent_homes: hooktrack::Agent::ALL
            .iter()
            .filter_map(|agent| {
                let home = agent.config().home(|name: &str| std::env::var_os(name))?;
                Some((*agent, home))
            })
            .collect(),
        #[cfg(feature = "fleet")]
        publish,
        #[cfg(feature = "fleet")]
        fleet,
    };
    let mut watch = match Watch::start(
        config,
        Box::new(io::stdout().lock()),
        Box::new(io::stderr()),
    ) {
        Ok(watch) => watch,
        Err(e @ WatchError::PaneNotWatched { .. }) => {
            eprintln!("hooktrack: error: --tmux-pane: {}", error_chain(&e));
            return ExitCode::from(2);
        }
        Err(WatchError::NothingToWatch) => {
            return fail(
                "no PATH given, and no $XDG_STATE_HOME or $HOME to find the default stores in",
            );
        }
        Err(e) => return fail(&error_chain(&e)),
    };
    let mut result = Ok(());
    while !stop.load(Ordering::SeqCst) {
        match watch.step(STOP_CHECK) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let finished = watch.finish();
    match result.and(finished) {
        Ok(()) => ExitCode::SUCCESS,
        Err(WatchError::Write { source }) if source.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => fail(&error_chain(&e)),
    }
}

/// How `--notify` reaches the person: with `--tmux`, or inside tmux, every client of
/// the server (and `notify-send` too in a desktop session); else `notify-send` when it is
/// on PATH and a desktop session is there to show it, else the terminal's escapes.
fn desktop_notifier(tmux: bool, target: TmuxTarget) -> Desktop {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let desktop = set("DISPLAY") || set("WAYLAND_DISPLAY") || set("DBUS_SESSION_BUS_ADDRESS");
    let notify_send = std::env::var_os("PATH")
        .and_then(|dirs| {
            std::env::split_paths(&dirs)
                .map(|d| d.join("notify-send"))
                .find(|p| p.is_file())
        })
        .filter(|_| desktop);
    // Inside tmux without --tmux: the server $TMUX names (the target's socket is unset).
    let tmux = (tmux || set("TMUX")).then_some(target);
    match (tmux, notify_send) {
        (Some(target), notify_send) => Desktop::Tmux {
            target,
            notify_send,
        },
        (None, Some(program)) => Desktop::NotifySend(program),
        (None, None) => Desktop::Osc { tmux: false },
    }
}
