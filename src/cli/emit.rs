//! `hooktrack emit`: the hook command. Always exits 0, never writes to stdout (but for
//! `--help`, asked by a person).
//!
//! One parser reads its argv: `hooktrack::emit::run`, the hand parser that
//! `hooktrack-hook emit` runs too. A malformed argv must not make the hook print usage and
//! exit 2 (clap's way), and a hook's start-up time is the agent's latency, so clap never
//! parses an `emit` argv: [`EmitArgs`] only gives `hooktrack emit --help` and
//! `hooktrack --help` their text, and a test checks that it names exactly the hand
//! parser's flags ([`hooktrack::emit::FLAGS`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};

use hooktrack::emit;

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
/// ($HOOKTRACK_URL, $HOOKTRACK_DIR, $HOOKTRACK_GENERATION): the entries `hooktrack setup`
/// (and `hooktrack install` without --dir) write in user-global configs. An agent started
/// through `hooktrack session` delivers to that session. With no $HOOKTRACK_DIR (an agent
/// started outside hooktrack) the row still goes somewhere: to the agent's per-user default
/// store, $XDG_STATE_HOME/hooktrack/agents/AGENT/ (else
/// ~/.local/state/hooktrack/agents/AGENT/, AGENT the --agent name), created 0700. No
/// collector is asked there ($HOOKTRACK_URL is ignored): the hook appends the row itself
/// with generation 0 and the agent's process id, and moves events.ndjson to
/// events.ndjson.1 once it is over 8 MiB. `hooktrack watch` shows these stores. Only when
/// neither $XDG_STATE_HOME nor $HOME is set does it read the payload, drop it and exit at
/// once.
#[derive(Args)]
pub struct EmitArgs {
    /// The collector, e.g. http://127.0.0.1:41234/events (default: $HOOKTRACK_URL).
    #[arg(long)]
    url: Option<String>,
    /// The store's artifact directory (default: $HOOKTRACK_DIR).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(
        long,
        visible_alias = "agent",
        default_value = hooktrack::store::DEFAULT_PROVIDER_DIR,
        help = provider_help()
    )]
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

/// What --provider takes: every agent's store name, from the descriptors.
fn provider_help() -> String {
    format!(
        "The agent the row is from, and the default store's name ({})",
        super::agents_by(hooktrack::Agent::store_name)
    )
}

/// `hooktrack emit ARGS`: the help when asked for, else one delivery read by the hand
/// parser.
pub fn run(args: &[OsString]) -> ExitCode {
    match args.iter().find(|a| *a == "--help" || *a == "-h") {
        Some(flag) => print_help(flag == "--help"),
        None => emit::run(args),
    }
    ExitCode::SUCCESS
}

/// Prints what clap would for `hooktrack emit --help` (`long`) or `-h`.
fn print_help(long: bool) {
    let mut cli = super::Cli::command();
    // Built, the subcommand knows its full name (`Usage: hooktrack emit ...`).
    cli.build();
    if let Some(emit) = cli.find_subcommand_mut("emit") {
        let _ = if long {
            emit.print_long_help()
        } else {
            emit.print_help()
        };
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The help's account of a hook outside any session follows the code it describes:
    /// the default store's folder and rotation size, and every agent's name.
    #[test]
    fn the_help_says_where_a_hook_without_hooktrack_dir_delivers() {
        let mut cli = crate::cli::Cli::command();
        cli.build();
        let help = cli
            .find_subcommand_mut("emit")
            .map(|e| e.render_long_help().to_string())
            .unwrap_or_default();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let folder = format!("hooktrack/{}/AGENT/", hooktrack::emit::STORES_DIR);
        assert!(
            flat.contains(&format!("$XDG_STATE_HOME/{folder}")),
            "{flat}"
        );
        assert!(flat.contains(&format!("~/.local/state/{folder}")), "{flat}");
        let mib = hooktrack::emit::ROTATE_BYTES / (1024 * 1024);
        assert!(flat.contains(&format!("over {mib} MiB")), "{flat}");
        assert!(!flat.contains("it exits at once"), "{flat}");
        for agent in hooktrack::Agent::ALL {
            assert!(
                flat.contains(agent.store_name()),
                "{}: {flat}",
                agent.store_name()
            );
        }
    }

    #[test]
    fn the_help_names_exactly_the_flags_the_hand_parser_reads() {
        let documented: BTreeSet<String> = EmitArgs::augment_args(clap::Command::new("emit"))
            .get_arguments()
            .filter(|a| a.get_id() != "help")
            .inspect(|a| {
                assert!(
                    a.get_action().takes_values(),
                    "{} takes a value",
                    a.get_id()
                )
            })
            .flat_map(|a| {
                let names = a
                    .get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().into_iter().flatten());
                names.map(|n| format!("--{n}")).collect::<Vec<_>>()
            })
            .collect();
        let parsed: BTreeSet<String> = hooktrack::emit::FLAGS
            .iter()
            .map(|(f, _)| (*f).to_owned())
            .collect();
        assert_eq!(documented, parsed);
    }
}
