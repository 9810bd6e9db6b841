//! `hooktrack emit`: the hook command. Always exits 0, never writes to stdout.
//!
//! Real invocations are parsed by hand (`hooktrack_producer::emit::argv`) before clap
//! sees them: a malformed argv must not make the hook print usage and exit 2, and a
//! hook's start-up time is the agent's latency. The clap definition documents the flags
//! for `--help`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use hooktrack_core::store::TMUX_PANE_ENV;
use hooktrack_producer::emit::argv::{drain_stdin, provider_named, run_config};
use hooktrack_producer::emit::{DEFAULT_LIMITS, EmitConfig, EmitError};
use hooktrack_producer::http::Url;
use hooktrack_producer::store::{DIR_ENV, GENERATION_ENV, TOKEN_ENV, URL_ENV};

/// The hook command an agent CLI runs on every event (reads the payload on stdin).
///
/// Takes the next emitter_seq under a lock in DIR, POSTs the delivery to the collector
/// with the bearer token from $HOOKTRACK_TOKEN, and when that fails for any reason appends
/// a command_fallback row to DIR/events.ndjson itself (DIR is created 0700 if missing).
/// Always exits 0 and prints nothing on stdout; problems go to DIR/emit.log, else to
/// ~/.local/state/hooktrack/emit.log, else stderr. Gives up after 3 s whatever happens,
/// recording a row with the event name and the cause. The URL must be a loopback one.
/// When the agent runs in tmux, its pane ($TMUX_PANE, e.g. %3) is recorded in the row as
/// `tmux_pane`.
///
/// Without --url/--dir/--generation it is routed by the environment the agent inherited
/// ($HOOKTRACK_URL, $HOOKTRACK_DIR, $HOOKTRACK_GENERATION): the entries hooktrack writes in
/// user-global configs. With no $HOOKTRACK_DIR either (an agent started outside hooktrack)
/// it exits at once.
#[derive(Args)]
pub struct EmitArgs {
    /// The collector, e.g. http://127.0.0.1:41234/events (default: $HOOKTRACK_URL).
    #[arg(long)]
    url: Option<String>,
    /// The store's artifact directory (default: $HOOKTRACK_DIR).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The provider written into the row (kimi, kimi-cli, claude, codex, gemini).
    #[arg(long, visible_alias = "agent", default_value = "kimi")]
    provider: String,
    /// The channel generation (default: $HOOKTRACK_GENERATION, else 0).
    #[arg(long)]
    generation: Option<u64>,
    /// The event this hook is configured for (default: the payload's hook_event_name).
    #[arg(long)]
    event: Option<String>,
    /// A label only: the JSON installers write `--observer hooktrack` so that they can tell
    /// their own entries from the user's. Ignored.
    #[arg(long)]
    observer: Option<String>,
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
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let Some(dir) = args.dir.clone().or_else(|| env(DIR_ENV).map(PathBuf::from)) else {
        drain_stdin();
        return ExitCode::SUCCESS;
    };
    let url = url.or_else(|| env(URL_ENV).and_then(|u| Url::parse(&u).ok()));
    let config = EmitConfig {
        url,
        dir,
        provider: provider_named(Some(args.provider.as_ref()), &mut problems),
        generation: args
            .generation
            .or_else(|| env(GENERATION_ENV).and_then(|g| g.parse().ok()))
            .unwrap_or(0),
        event: args.event.clone(),
        token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        limits: DEFAULT_LIMITS,
        tmux_pane: std::env::var(TMUX_PANE_ENV).ok(),
    };
    run_config(config, problems);
    ExitCode::SUCCESS
}
