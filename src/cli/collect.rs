//! `hooktrack collect`: run one session's collector until SIGTERM or SIGINT.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use hooktrack::Agent;
use hooktrack::collect::{CollectConfig, Collector};
use hooktrack::emit::{DEFAULT_PROVIDER, agent_named};
use hooktrack::store::{MAX_BODY_BYTES, TOKEN_ENV};

use super::fail;
use hooktrack::error_chain;

/// Run a session's collector: 127.0.0.1 only, bearer token from $HOOKTRACK_TOKEN.
///
/// Binds an ephemeral port, prints its URL on one line of stdout, writes DIR/collector.json (pid, port, generation, status)
/// once it listens, and appends every authenticated delivery to DIR/events.ndjson (0600)
/// with a strictly increasing sequence. On SIGTERM or SIGINT it finishes in-flight
/// requests, records status "stopped" and exits 0.
#[derive(Args)]
pub struct CollectArgs {
    /// The store's artifact directory (created 0700 if missing).
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, default_value = DEFAULT_PROVIDER.store_name(), value_parser = provider,
          help = format!("The provider written into rows posted without one, by store name: {}",
                         super::agents_by(Agent::store_name)))]
    provider: Agent,
    /// The channel generation.
    #[arg(long)]
    generation: u64,
    /// The address to listen on; anything but 127.0.0.1 is refused.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// The port; 0 (the default) picks an ephemeral one. A restarted collector may ask
    /// for its old port so that installed hooks reach it again.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The largest request body accepted, in bytes (larger: 413).
    #[arg(long, default_value_t = MAX_BODY_BYTES)]
    max_body: usize,
}

/// `--provider`: a store name (what installed hooks write) or any name of an agent.
fn provider(name: &str) -> Result<Agent, String> {
    agent_named(name).ok_or_else(|| format!("no agent is called {name:?}"))
}

pub fn run(args: &CollectArgs) -> ExitCode {
    let bind: IpAddr = match args.bind.parse() {
        Ok(ip) => ip,
        Err(_) => {
            return fail(&format!(
                "refusing to listen on {:?}: a collector binds 127.0.0.1 only",
                args.bind
            ));
        }
    };
    let token = std::env::var(TOKEN_ENV).unwrap_or_default();
    // Register the signals before the collector is announced, so that a SIGTERM sent as
    // soon as collector.json appears is a clean stop.
    let mut signals = match Signals::new([SIGTERM, SIGINT]) {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot handle signals: {e}")),
    };
    let mut config = CollectConfig::new(
        std::path::absolute(&args.dir).unwrap_or_else(|_| args.dir.clone()),
        args.provider,
        args.generation,
        token,
    );
    config.bind = bind;
    config.port = args.port;
    config.max_body = args.max_body;
    let collector = match Collector::bind(config) {
        Ok(c) => c,
        Err(e) => return fail(&error_chain(&e)),
    };
    // The URL on one line of stdout, for the caller to hand to the hooks.
    say!("{}", collector.url());
    let stopper = collector.stopper();
    let handle = signals.handle();
    let watcher = std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            stopper.stop();
        }
    });
    let result = collector.run();
    handle.close();
    let _ = watcher.join();
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => fail(&error_chain(&e)),
    }
}
