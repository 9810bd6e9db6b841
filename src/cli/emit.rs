//! `hooktrack emit`: the hook command. Always exits 0, never writes to stdout.
//!
//! Real invocations are parsed by hand ([`run_raw`]) before clap sees them: a malformed
//! argv must not make the hook print usage and exit 2, and a hook's start-up time is
//! the agent's latency. The clap definition documents the flags for `--help`.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

mod watchdog;

use hooktrack_core::store::{StorePaths, TMUX_PANE_ENV};
use hooktrack_core::time::Timestamp;
use hooktrack_producer::emit::{
    self, DEFAULT_LIMITS, EmitConfig, EmitError, HARD_DEADLINE, log_report, log_text,
};
use hooktrack_producer::http::Url;
use hooktrack_producer::store::{self, TOKEN_ENV};

/// The hook command an agent CLI runs on every event (reads the payload on stdin).
///
/// Takes the next emitter_seq under a lock in DIR, POSTs the delivery to the collector
/// with the bearer token from $HOOKTRACK_TOKEN, and when that fails for any reason appends
/// a command_fallback row to DIR/events.ndjson itself. Always exits 0 and prints nothing;
/// problems go to DIR/emit.log. Gives up after 3 s whatever happens. When the agent runs
/// in tmux, its pane ($TMUX_PANE, e.g. %3) is recorded in the row as `tmux_pane`.
#[derive(Args)]
pub struct EmitArgs {
    /// The collector, e.g. http://127.0.0.1:41234/events.
    #[arg(long)]
    url: Option<String>,
    /// The store's artifact directory.
    #[arg(long)]
    dir: PathBuf,
    /// The provider written into the row (kimi, kimi-cli, claude, codex, gemini).
    #[arg(long, default_value = "kimi")]
    provider: String,
    /// The channel generation.
    #[arg(long, default_value_t = 0)]
    generation: u64,
    /// The event this hook is configured for (default: the payload's hook_event_name).
    #[arg(long)]
    event: Option<String>,
    /// A label only: the JSON installers write `--observer hooktrack` so that they can tell
    /// their own entries from the user's. Ignored.
    #[arg(long)]
    observer: Option<String>,
}

/// Runs an emit whose argv (after `emit`) was not parsed by clap.
pub fn run_raw(args: &[OsString]) -> ExitCode {
    let mut problems = Vec::new();
    let mut url = None;
    let mut dir = None;
    let mut provider = None;
    let mut generation = None;
    let mut event = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let arg = arg.to_string_lossy();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.into_owned(), None),
        };
        let mut value = || -> Option<OsString> {
            match &inline {
                Some(v) => Some(OsString::from(v)),
                None => iter.next().cloned(),
            }
        };
        match flag.as_str() {
            "--url" => url = value(),
            "--dir" => dir = value(),
            "--provider" => provider = value(),
            "--generation" => generation = value(),
            "--event" => event = value(),
            // The installers' label for their own entries: nothing to do with it.
            "--observer" => {
                let _ = value();
            }
            other => problems.push(EmitError::Args {
                detail: format!("unknown argument {other:?}"),
            }),
        }
    }
    let Some(dir) = dir.map(PathBuf::from) else {
        // Nowhere to log or to append: say so on stderr (never stdout), still exit 0.
        let _ = writeln!(
            io::stderr(),
            "hooktrack emit: no --dir given; delivery lost"
        );
        return ExitCode::SUCCESS;
    };
    let generation = match generation.map(|g| g.to_string_lossy().parse::<u64>()) {
        Some(Ok(g)) => g,
        Some(Err(_)) | None => {
            problems.push(EmitError::Args {
                detail: "missing or bad --generation (0 used)".to_owned(),
            });
            0
        }
    };
    let url = match url.map(|u| u.to_string_lossy().into_owned()) {
        Some(u) => match Url::parse(&u) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                problems.push(EmitError::BadUrl {
                    url: u,
                    reason: e.to_string(),
                });
                None
            }
        },
        None => None,
    };
    let config = EmitConfig {
        url,
        dir,
        provider: provider.map_or_else(|| "kimi".to_owned(), |p| p.to_string_lossy().into()),
        generation,
        event: event.map(|e| e.to_string_lossy().into_owned()),
        token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        limits: DEFAULT_LIMITS,
        tmux_pane: std::env::var(TMUX_PANE_ENV).ok(),
    };
    run_config(config, problems)
}

/// `hooktrack emit` as parsed by clap (only reached in unusual argv shapes).
pub fn run(args: &EmitArgs) -> ExitCode {
    let mut problems = Vec::new();
    let url = args.url.as_deref().and_then(|u| match Url::parse(u) {
        Ok(p) => Some(p),
        Err(e) => {
            problems.push(EmitError::BadUrl {
                url: u.to_owned(),
                reason: e.to_string(),
            });
            None
        }
    });
    let config = EmitConfig {
        url,
        dir: args.dir.clone(),
        provider: args.provider.clone(),
        generation: args.generation,
        event: args.event.clone(),
        token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        limits: DEFAULT_LIMITS,
        tmux_pane: std::env::var(TMUX_PANE_ENV).ok(),
    };
    run_config(config, problems)
}

fn run_config(config: EmitConfig, problems: Vec<EmitError>) -> ExitCode {
    // The watchdog: whatever blocks (a lock held by a stopped process, a stdin that never
    // closes), the hook ends well inside the agent's hook timeout.
    arm_watchdog(&config.dir);
    let report = emit::emit(&config, io::stdin().lock(), emit::report_with(problems));
    log_report(&config.dir, &report);
    ExitCode::SUCCESS
}

/// A timer with a signal handler where one can be armed (no thread to start on every
/// hook run); a sleeping thread otherwise.
fn arm_watchdog(dir: &Path) {
    let gave_up = |at| {
        format!(
            "{at} pid={} gave up after {} ms (delivery may be lost)\n",
            std::process::id(),
            HARD_DEADLINE.as_millis()
        )
    };
    let deadline_ms = i64::try_from(HARD_DEADLINE.as_millis()).unwrap_or(i64::MAX);
    let fires_at = Timestamp::from_millis(store::now().as_millis().saturating_add(deadline_ms));
    let log = StorePaths::in_dir(dir).emit_log;
    if watchdog::arm(&log, gave_up(fires_at), HARD_DEADLINE) {
        return;
    }
    let log_dir = dir.to_owned();
    let _ = std::thread::Builder::new()
        .name("emit-watchdog".into())
        .spawn(move || {
            std::thread::sleep(HARD_DEADLINE);
            log_text(&log_dir, &gave_up(store::now()));
            std::process::exit(0);
        });
}
