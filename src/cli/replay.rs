//! `hooktrack replay`: a recorded log, start to end, in one of three formats.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use hooktrack::Format;
use hooktrack::ProviderChoice;

use super::fail;
use hooktrack_core::diagnostics::error_chain;

/// Replay a hook-event log and show, after every event, what the agent was doing.
///
/// Reads `events.ndjson` rows (the collector's envelope), bare hook payload lines, or
/// capture lines (`{"recv_ts", "cli", "payload"}`). Bad lines are skipped and named;
/// duplicate deliveries and rows of an older generation are dropped and counted.
#[derive(Args)]
pub struct ReplayArgs {
    /// The log to replay; `-` reads standard input.
    file: PathBuf,
    /// Output: a readable timeline, one JSON document, one JSON line per event, or one
    /// self-contained HTML page picturing the campaign (`--format html > timeline.html`).
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    /// Which agent CLI wrote the log: auto (detected from the rows), kimi (either Kimi),
    /// kimi-code, kimi-cli, claude, codex or gemini.
    #[arg(long, visible_alias = "agent", default_value = "auto", value_parser = super::parse_agent_choice)]
    provider: ProviderChoice,
    /// Threads to read and parse on: 1 keeps the whole replay on one thread; with 2 (the
    /// default where two cores are available) a second thread reads and parses ahead.
    /// The output is the same either way.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Timeline, then the turn ledger and the diagnostics.
    Text,
    /// `{"provider", "turns", "final", "diagnostics", "lines", "events"}`.
    Json,
    /// One JSON object per line with the posture after it, then an `"end"` line.
    Ndjson,
    /// One self-contained page (inline SVG, CSS and script, no network): a time axis, a
    /// lane per scope, every turn a bar coloured by its result with its tool calls, blocked
    /// and compaction windows shaded, a mark on every guess and skipped line.
    Html,
}

pub fn run(args: &ReplayArgs) -> ExitCode {
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
        usize::from,
    );
    replay(&args.file, args.format, args.provider, threads)
}

fn replay(file: &Path, format: FormatArg, choice: ProviderChoice, threads: usize) -> ExitCode {
    let format = match format {
        FormatArg::Text => Format::Text,
        FormatArg::Json => Format::Json,
        FormatArg::Ndjson => Format::Ndjson,
        FormatArg::Html => Format::Html,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = if file.as_os_str() == "-" {
        // `Stdin` (not its lock) can be handed to the reading thread.
        let stdin = BufReader::with_capacity(1 << 16, io::stdin());
        hooktrack::replay_threaded(stdin, "standard input", choice, format, threads, &mut out)
    } else {
        let name = file.display().to_string();
        match File::open(file) {
            Ok(f) => hooktrack::replay_threaded(
                BufReader::with_capacity(1 << 16, f),
                &name,
                choice,
                format,
                threads,
                &mut out,
            ),
            Err(e) => return fail(&format!("cannot open {name}: {e}")),
        }
    };
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            fail(&error_chain(&e))
        }
    }
}
