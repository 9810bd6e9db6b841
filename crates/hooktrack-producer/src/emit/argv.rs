//! The hook command's argv, read by hand: `hooktrack emit` and `hooktrack-hook emit` (the
//! binary with only this in it) both start here.
//!
//! A malformed argv must not make the hook print usage and exit 2 (clap's way), and a
//! hook's start-up time is the agent's latency. Every problem is logged with the delivery
//! ([`super::log_report`]); the hook always exits 0.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::PathBuf;

use super::{DEFAULT_LIMITS, EmitConfig, EmitError, log_report, watchdog};
use crate::http::Url;
use crate::store::{DIR_ENV, GENERATION_ENV, LAUNCH_BLOCK_ENV, TOKEN_ENV, URL_ENV};
use hooktrack_core::agent::Agent;
use hooktrack_core::delivery::{DEFAULT_PROVIDER, agent_named};
use hooktrack_core::store::TMUX_PANE_ENV;

/// The flags the hook understands, each followed by its value (`--flag VALUE` or
/// `--flag=VALUE`). This table is the parser's whole vocabulary; `hooktrack emit --help`
/// documents exactly these (a test in the binary checks both ways).
pub const FLAGS: [(&str, Flag); 7] = [
    ("--url", Flag::Url),
    ("--dir", Flag::Dir),
    ("--provider", Flag::Provider),
    // What environment-routed entries write; the same thing.
    ("--agent", Flag::Provider),
    ("--generation", Flag::Generation),
    ("--event", Flag::Event),
    // The installers' label for their own entries: nothing to do with it.
    ("--observer", Flag::Observer),
];

/// What a flag of [`FLAGS`] sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    Url,
    Dir,
    Provider,
    Generation,
    Event,
    Observer,
}

/// Runs one hook delivery from its argv (what follows `emit`).
pub fn run(args: &[OsString]) {
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
        match FLAGS
            .iter()
            .find(|(name, _)| *name == flag)
            .map(|(_, f)| *f)
        {
            Some(Flag::Url) => url = value(),
            Some(Flag::Dir) => dir = value(),
            Some(Flag::Provider) => provider = value(),
            Some(Flag::Generation) => generation = value(),
            Some(Flag::Event) => event = value(),
            Some(Flag::Observer) => {
                let _ = value();
            }
            None => problems.push(EmitError::Args {
                detail: format!("unknown argument {flag:?}"),
            }),
        }
    }
    // An environment-routed entry names no session: the agent's environment does.
    let routed = dir.is_none();
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if routed && launch_block_serves(provider.as_deref(), from_env(LAUNCH_BLOCK_ENV).as_deref()) {
        // The launch that started the agent wrote its own block for it, which delivers
        // this hook: delivering it here too would count it twice.
        drain_stdin();
        return;
    }
    let dir = dir.or_else(|| from_env(DIR_ENV));
    // An agent started outside hooktrack (no session's environment): its rows go to the
    // agent's per-user default store, which no collector serves and no launcher watches.
    let default_store = match (&dir, routed) {
        (None, true) => {
            let agent = provider_named(provider.as_deref(), &mut Vec::new());
            super::default_store::default_store(from_env, agent)
        }
        _ => None,
    };
    let unrouted = default_store.is_some();
    if let (Some(store), Some(state)) = (&default_store, super::default_store::state_dir(from_env))
    {
        for moved in super::default_store::secure_parents(&state, store) {
            problems.push(EmitError::MovedAside {
                path: moved.path,
                to: moved.to,
                uid: moved.uid,
            });
        }
    }
    let Some(dir) = dir.map(PathBuf::from).or(default_store) else {
        if routed {
            // No session and no home to keep a default store in: nowhere to deliver.
            // Exit at once, after taking the payload so the agent's write to our stdin
            // cannot fail.
            drain_stdin();
            return;
        }
        // Nowhere to log or to append: say so on stderr (never stdout), still exit 0.
        let _ = writeln!(
            io::stderr(),
            "hooktrack emit: no --dir given; delivery lost"
        );
        return;
    };
    let url = url.or_else(|| (routed && !unrouted).then(|| from_env(URL_ENV)).flatten());
    let generation = generation.or_else(|| routed.then(|| from_env(GENERATION_ENV)).flatten());
    let generation = match generation.map(|g| g.to_string_lossy().parse::<u64>()) {
        Some(Ok(g)) => g,
        // A default store has no generations: every row is generation 0.
        None if unrouted => 0,
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
                problems.push(EmitError::BadUrl { source: e });
                None
            }
        },
        None => None,
    };
    let config = EmitConfig {
        url,
        dir,
        provider: provider_named(provider.as_deref(), &mut problems),
        generation,
        event: event.map(|e| e.to_string_lossy().into_owned()),
        token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        limits: DEFAULT_LIMITS,
        tmux_pane: std::env::var(TMUX_PANE_ENV).ok(),
        // Routed or not: the reader keeps each session to the process its first row
        // named, so a row a tool step delivers (a descendant, not the agent) never steers.
        agent_pid: super::default_store::agent_pid(),
        emitter_parent: super::parent::emitter_parent(),
        rotate_at: unrouted.then_some(super::default_store::ROTATE_BYTES),
    };
    run_config(config, problems)
}

/// Whether the launch's own block (`$HOOKTRACK_LAUNCH_BLOCK`, an agent's store name)
/// serves the agent a routed hook names.
pub fn launch_block_serves(provider: Option<&OsStr>, launch_block: Option<&OsStr>) -> bool {
    launch_block.is_some_and(|block| {
        provider_named(provider, &mut Vec::new()).store_name() == block.to_string_lossy()
    })
}

/// The agent `--provider` / `--agent` names, else [`DEFAULT_PROVIDER`]; a name of no
/// agent is a problem to log, and the delivery still goes out under the default.
pub fn provider_named(name: Option<&OsStr>, problems: &mut Vec<EmitError>) -> Agent {
    let Some(name) = name else {
        return DEFAULT_PROVIDER;
    };
    let name = name.to_string_lossy();
    agent_named(&name).unwrap_or_else(|| {
        problems.push(EmitError::Args {
            detail: format!(
                "unknown provider {name:?} ({} used)",
                DEFAULT_PROVIDER.store_name()
            ),
        });
        DEFAULT_PROVIDER
    })
}

/// Reads what the agent wrote to the hook's stdin and throws it away, bounded (the hook
/// must not make the agent's write fail, nor wait on a stdin that never closes).
pub fn drain_stdin() {
    let _ = std::thread::Builder::new()
        .name("emit-drain".into())
        .spawn(|| {
            let _ = io::copy(
                &mut io::Read::take(io::stdin().lock(), DRAIN_LIMIT),
                &mut io::sink(),
            );
        })
        .map(|reader| {
            let started = std::time::Instant::now();
            while !reader.is_finished() && started.elapsed() < DRAIN_WAIT {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
}

/// An unrouted hook reads at most this much stdin...
const DRAIN_LIMIT: u64 = 4 * 1024 * 1024;
/// ...for at most this long, then exits whatever the agent does with the pipe.
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Arms the watchdog, delivers, logs what went wrong.
pub fn run_config(config: EmitConfig, mut problems: Vec<EmitError>) {
    // The watchdog: whatever blocks (a lock held by a stopped process, a stdin that never
    // closes), the hook ends well inside the agent's hook timeout, and the delivery is
    // recorded as given up. A signal timer costs two system calls; a thread (its stack,
    // the clone, a malloc arena) stands in only when the timer cannot be armed.
    if let Err(source) = watchdog::arm(&config) {
        problems.push(EmitError::Watchdog { source });
        watchdog::stand_in(&config);
    }
    let report = super::emit(&config, io::stdin().lock(), super::report_with(problems));
    // The delivery is recorded (or logged as lost): a timer firing while the report is
    // logged must not add a give-up row for it.
    watchdog::settled();
    log_report(&config.dir, &report);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_block_stands_down_only_the_routed_entries_of_its_own_agent() {
        let kimi = Some(OsStr::new("kimi"));
        assert!(launch_block_serves(kimi, kimi));
        assert!(!launch_block_serves(kimi, None));
        assert!(!launch_block_serves(Some(OsStr::new("claude")), kimi));
        assert!(!launch_block_serves(kimi, Some(OsStr::new("claude"))));
    }
}
