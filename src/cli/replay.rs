//! `hooktrack replay`: a recorded log, start to end, in one of three formats.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Cursor, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use hooktrack::Format;
use hooktrack::ProviderChoice;
use hooktrack::transcripts::{TranscriptLookup, replay_named};

use super::fail;
use hooktrack::error_chain;

/// Replay a hook-event log and show, after every event, what the agent was doing.
///
/// Reads `events.ndjson` rows (the collector's envelope), bare hook payload lines, or
/// capture lines (`{"recv_ts", "cli", "payload"}`). Bad lines are skipped and named;
/// duplicate deliveries and rows of an older generation are dropped and counted.
#[derive(Args)]
pub struct ReplayArgs {
    /// The log to replay; `-` reads standard input. Standard input and a pipe
    /// (`<(zcat log.gz)`) are held in memory when transcripts are looked for.
    file: PathBuf,
    /// Output: a readable timeline, one JSON document, one JSON line per event, or one
    /// self-contained HTML page picturing the campaign (`--format html > timeline.html`).
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    #[arg(long, visible_alias = "agent", default_value = "auto", value_parser = super::parse_agent_choice,
          help = super::agent_choice_help("Which agent CLI wrote the log"))]
    provider: ProviderChoice,
    /// Find the transcripts the payloads name (`transcript_path`) by file name in DIR
    /// (a recording moved from another machine) instead of at the named path.
    #[arg(long, value_name = "DIR", conflicts_with = "no_transcripts")]
    transcripts: Option<PathBuf>,
    /// Do not read transcripts: the hooks alone.
    #[arg(long)]
    no_transcripts: bool,
    /// After the text summary, print what set each fact of the final posture.
    #[arg(long)]
    explain: bool,
    /// Read every row into one ledger, as the log was read before it was split by
    /// session. By default a log of several `session_id`s (an agent started by hand into
    /// the store, a `/clear`) gives one ledger per session: text a summary per session,
    /// json `{"sessions": [...]}`, ndjson `"session": N` on the lines of every session but
    /// the first and the finals of each in the end line, html a group of lanes each. A log
    /// of one session reads the same either way.
    #[arg(long)]
    one_stream: bool,
    /// Accepted and ignored: one ledger per session is the default (see `--one-stream`).
    #[arg(long, conflicts_with = "one_stream")]
    by_session: bool,
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
    let lookup = match (&args.transcripts, args.no_transcripts) {
        (_, true) => TranscriptLookup::Off,
        (Some(dir), false) => TranscriptLookup::InDir(dir),
        (None, false) => TranscriptLookup::AsNamed,
    };
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
        usize::from,
    );
    replay(
        &args.file,
        args.format,
        args.provider,
        &lookup,
        (args.explain, args.one_stream, threads),
    )
}

fn replay(
    file: &Path,
    format: FormatArg,
    choice: ProviderChoice,
    lookup: &TranscriptLookup<'_>,
    (explain, one_stream, threads): (bool, bool, usize),
) -> ExitCode {
    let format = match format {
        FormatArg::Text => Format::Text,
        FormatArg::Json => Format::Json,
        FormatArg::Ndjson => Format::Ndjson,
        FormatArg::Html => Format::Html,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let stdin = file.as_os_str() == "-";
    let name = if stdin {
        "standard input".to_owned()
    } else {
        file.display().to_string()
    };
    let settings = (explain, one_stream, threads);
    // A pipe (`<(zcat log.gz)`), a terminal or a socket can be read only once, as
    // standard input: when the transcripts are looked for, finding them could take a pass
    // of its own and leave nothing to replay, so such an input is held in memory.
    let read_once = stdin
        || fs::metadata(file).is_ok_and(|m| {
            let kind = m.file_type();
            kind.is_fifo() || kind.is_char_device() || kind.is_socket()
        });
    let result = if read_once && !matches!(lookup, TranscriptLookup::Off) {
        let mut held = Vec::new();
        let read = if stdin {
            io::stdin().lock().read_to_end(&mut held)
        } else {
            match File::open(file) {
                Ok(mut f) => f.read_to_end(&mut held),
                Err(e) => return fail(&format!("cannot open {name}: {e}")),
            }
        };
        if let Err(e) = read {
            return fail(&format!("cannot read {name}: {e}"));
        }
        let open = || Ok(Cursor::new(&held[..]));
        replay_named(open, lookup, &name, choice, format, settings, &mut out)
    } else if stdin {
        // Without transcripts the input is opened once: standard input streams (`Stdin`,
        // not its lock, can be handed to the reading thread).
        let mut stdin = Some(BufReader::with_capacity(1 << 16, io::stdin()));
        let open = || {
            stdin
                .take()
                .ok_or_else(|| io::Error::other("read once already"))
        };
        replay_named(open, lookup, &name, choice, format, settings, &mut out)
    } else {
        let open = || File::open(file).map(|f| BufReader::with_capacity(1 << 16, f));
        replay_named(open, lookup, &name, choice, format, settings, &mut out)
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
