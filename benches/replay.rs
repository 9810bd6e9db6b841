//! Replay throughput and memory benchmark (`cargo bench --bench replay`).
//!
//! What it does, in one run:
//!
//! 1. writes two synthetic Kimi Code 2.x campaigns (100k and 1M envelope rows, deterministic)
//!    to `target/bench-data/`;
//! 2. for each, loads the whole file into memory and measures, on the same bytes:
//!    - a **parse-only baseline**: memchr line split + `serde_json` into a borrowed typed
//!      struct (the least any tracker must do per line);
//!    - the **replay**: `LineReader` → `Pipeline::feed` → `Pipeline::posture()` after every
//!      event (what a supervisor does);
//!    - a stage breakdown of the replay (smallest file only);
//!
//!    each timed pass runs in turn with the others (one round = one pass of each), and the
//!    figures are medians of the bench thread's on-CPU time, so another process competing for
//!    the cores slows neither side of a ratio;
//! 3. measures peak RSS (`VmHWM`) of a streaming replay from disk for both files, each in a
//!    child process (this binary re-executed with `--measure-memory FILE`).
//!
//! Every figure is reported as a ratio against a baseline measured in the same run; there
//! are no wall-clock thresholds. See `docs/benchmarks.md`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::hint::black_box;
use std::io::{BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;

use hooktrack::{Agent, ProviderChoice};
use hooktrack::{Fed, Pipeline};
use hooktrack_core::read::{LineReader, ReadLine};
use hooktrack_core::row::parse_line;
use hooktrack_core::sessions::Sessions;

#[path = "shared/peak_memory.rs"]
mod peak_memory;
#[path = "replay/whole_process.rs"]
mod whole_process;

use peak_memory::vm_hwm_kib;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The system allocator (Rust's default), counting allocations: allocations per event are
/// reported beside the times, and unlike times they do not depend on the machine's load.
struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`; the counter has no effect on memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` and `layout` come from this allocator, which got them from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `realloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Heap allocations (including reallocations) per event made by `f`.
fn allocations_per_event<T>(n: usize, f: impl FnOnce() -> Result<T>) -> Result<(f64, T)> {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let out = f()?;
    let count = ALLOCATIONS.load(Ordering::Relaxed) - before;
    Ok((count as f64 / n as f64, out))
}

/// Campaign sizes, smallest first. The smallest also gets the stage breakdown.
const SIZES: [usize; 2] = [100_000, 1_000_000];
const WARMUPS: usize = 1;
const RUNS: usize = 5;
/// Rounds for the smallest file, whose race includes the stage breakdown: stage costs are
/// differences of two timings, so they need more rounds to settle.
const RUNS_WITH_STAGES: usize = 9;
/// Target for replay throughput relative to the parse-only baseline.
const TARGET_RATIO: f64 = 0.6;
/// Peak RSS of the largest file over that of the smallest: at most this counts as flat.
const FLAT_RSS_RATIO: f64 = 1.10;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench` (and possibly a filter); anything unknown is ignored.
    if let Some(i) = args.iter().position(|a| a == "--measure-memory") {
        let file = args
            .get(i + 1)
            .ok_or("--measure-memory needs a file argument")?;
        return measure_memory_child(Path::new(file));
    }
    // The whole-process baseline program (a child of the whole-process comparison).
    if let Some(i) = args.iter().position(|a| a == "--parse-only-process") {
        let file = args
            .get(i + 1)
            .ok_or("--parse-only-process needs a file argument")?;
        return whole_process::parse_only_process(Path::new(file));
    }
    // The floor: reading and splitting alone.
    if let Some(i) = args.iter().position(|a| a == "--split-only-process") {
        let file = args
            .get(i + 1)
            .ok_or("--split-only-process needs a file argument")?;
        return whole_process::split_only_process(Path::new(file));
    }
    // Only the campaign: `--write-campaign N FILE` writes the N-event campaign to FILE
    // (for a whole-process comparison or a profile at a size the bench does not write).
    if let Some(i) = args.iter().position(|a| a == "--write-campaign") {
        let (Some(n), Some(file)) = (args.get(i + 1), args.get(i + 2)) else {
            return Err("--write-campaign needs an event count and a file".into());
        };
        let n: usize = n.parse().map_err(|e| format!("event count {n}: {e}"))?;
        let summary = write_campaign(Path::new(file), n)?;
        println!(
            "{n} events, {} turns, {:.1} MiB",
            summary.turns,
            summary.bytes as f64 / MIB
        );
        return Ok(());
    }
    // Only the whole-process comparison, on FILE.
    if let Some(i) = args.iter().position(|a| a == "--whole-process") {
        let file = args
            .get(i + 1)
            .ok_or("--whole-process needs a file argument")?;
        return whole_process::run(Path::new(file));
    }
    // For profilers (`perf record ... --replay-only FILE`): load FILE, replay it 3 times
    // (each followed by a parse-only pass, for a quick ratio).
    if let Some(i) = args.iter().position(|a| a == "--replay-only") {
        let file = args
            .get(i + 1)
            .ok_or("--replay-only needs a file argument")?;
        let bytes = fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
        let n = lines(&bytes).count();
        for _ in 0..3 {
            let t = Instant::now();
            let out = replay_full(&bytes, n)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            parse_only(&bytes, n)?;
            let base = t.elapsed().as_secs_f64() * 1e3;
            println!(
                "{} events, {} diagnostics: replay {ms:.0} ms, parse-only {base:.0} ms, ratio {:.2}",
                out.events,
                out.diagnostics,
                base / ms
            );
        }
        return Ok(());
    }
    run_bench()
}

// ===== the benchmark ===================================================================

struct SizeResult {
    events: usize,
    bytes: usize,
    parse: Stat,
    replay: Stat,
    parse_allocs: f64,
    replay_allocs: f64,
}

fn run_bench() -> Result<()> {
    let started = Instant::now();
    let dir = bench_dir();
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let clock = if thread_cpu().is_some() {
        "on-CPU time of the bench thread (/proc/thread-self/schedstat)"
    } else {
        "wall-clock time (no /proc/thread-self/schedstat)"
    };
    println!("hooktrack replay benchmark");
    println!(
        "  {WARMUPS} warm-up + {RUNS} measured rounds ({RUNS_WITH_STAGES} with the stage breakdown); in each round every contender runs once, in turn"
    );
    println!("  figures: median over the rounds, of the {clock}");
    println!("  data: {}", dir.display());

    let mut results = Vec::new();
    let mut files = Vec::new();
    for (index, &n) in SIZES.iter().enumerate() {
        let path = dir.join(format!("kimi-code-{n}.ndjson"));
        let t = Instant::now();
        let summary = write_campaign(&path, n)?;
        println!(
            "\n== {n} events: generated {} ({:.1} MiB, {} turns, avg {} B/line) in {:.1}s",
            path.display(),
            summary.bytes as f64 / MIB,
            summary.turns,
            summary.bytes / n,
            t.elapsed().as_secs_f64()
        );
        // The measurements run on the file's bytes, loaded whole into memory.
        let bytes = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let (replay_allocs, check) = allocations_per_event(n, || replay_full(&bytes, n))?;
        print_replay_check(&check, &summary);
        let (parse_allocs, ()) = allocations_per_event(n, || parse_only(&bytes, n))?;
        println!(
            "  heap allocations per event: parse-only {parse_allocs:.2}, replay {replay_allocs:.2}"
        );

        let bytes = &bytes[..];
        let mut contenders = vec![
            Contender::new("parse-only", move || parse_only(bytes, n)),
            Contender::new("replay", move || replay_full(bytes, n).map(|_| ())),
            Contender::new("replay via Sessions", move || replay_sessions(bytes, n)),
        ];
        // The stage breakdown runs on the smallest file: per-event costs do not depend on
        // the file's length (memory is flat), and it keeps the whole bench short.
        let stages = index == 0;
        if stages {
            contenders.extend(stage_contenders(bytes, n));
        }
        let stats = race(
            n,
            if stages { RUNS_WITH_STAGES } else { RUNS },
            &mut contenders,
        )?;
        if stages {
            print_stage_table(n, &stats);
        }
        let mut stats = stats.into_iter();
        let (Some(parse), Some(replay), Some(sessions)) =
            (stats.next(), stats.next(), stats.next())
        else {
            return Err("missing measurements".into());
        };
        println!(
            "  time of a replay via Sessions (split by session_id, as `hooktrack replay` reads) / via one Pipeline: ratio {:.3} (1.00 = routing costs nothing)",
            paired_ratio(&sessions, &replay)
        );
        results.push(SizeResult {
            events: n,
            bytes: bytes.len(),
            parse,
            replay,
            parse_allocs,
            replay_allocs,
        });
        files.push((n, path));
    }

    println!("\n== peak memory of a streaming replay from disk (child process per file)");
    let mut peaks = Vec::new();
    for (n, path) in &files {
        let m = spawn_memory_child(path)?;
        if m.events != *n as u64 {
            return Err(format!(
                "memory child replayed {} events of {}, expected {n}",
                m.events,
                path.display()
            )
            .into());
        }
        println!(
            "  {n:>8} events: VmHWM {:.1} MiB (at start {:.1} MiB), {} diagnostics",
            m.peak_kib as f64 / 1024.0,
            m.start_kib as f64 / 1024.0,
            m.diagnostics
        );
        peaks.push((*n, m.peak_kib));
    }

    if let Some((_, largest)) = files.last() {
        whole_process::run(largest)?;
    }

    // ----- the table --------------------------------------------------------------------
    println!("\n== results");
    println!(
        "{:<11} {:>7} {:>17} {:>13} {:>7} {:>20}",
        "events", "MiB", "parse-only ev/s", "replay ev/s", "ratio", "allocs/ev parse/rep"
    );
    for r in &results {
        println!(
            "{:<11} {:>7.1} {:>17.0} {:>13.0} {:>7.2} {:>13.2} / {:<5.2}",
            r.events,
            r.bytes as f64 / MIB,
            rate(r.events, r.parse.median()),
            rate(r.events, r.replay.median()),
            paired_ratio(&r.parse, &r.replay),
            r.parse_allocs,
            r.replay_allocs
        );
    }
    println!("(ratio = replay ev/s / parse-only ev/s: median over the rounds of the paired ratio)");
    if let [(n_small, small), .., (n_large, large)] = peaks.as_slice() {
        println!(
            "peak RSS: {} = {:.1} MiB, {} = {:.1} MiB, ratio {}/{} = {:.2}",
            short(*n_small),
            *small as f64 / 1024.0,
            short(*n_large),
            *large as f64 / 1024.0,
            short(*n_large),
            short(*n_small),
            *large as f64 / *small as f64
        );
    }
    let worst = results
        .iter()
        .map(|r| paired_ratio(&r.parse, &r.replay))
        .fold(f64::INFINITY, f64::min);
    let flat = match peaks.as_slice() {
        [(_, small), .., (_, large)] => (*large as f64 / *small as f64) <= FLAT_RSS_RATIO,
        _ => true,
    };
    println!(
        "targets: replay >= {TARGET_RATIO:.1}x parse-only: {} (worst ratio {worst:.2}); peak RSS flat (ratio <= {FLAT_RSS_RATIO:.2}): {}",
        if worst >= TARGET_RATIO {
            "met"
        } else {
            "NOT MET"
        },
        if flat { "met" } else { "NOT MET" }
    );
    println!("total bench time {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

const MIB: f64 = 1024.0 * 1024.0;

fn rate(events: usize, time: Duration) -> f64 {
    events as f64 / time.as_secs_f64()
}

fn short(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("bench-data")
}

// ----- timing ----------------------------------------------------------------------------

/// Something timed: one full pass over the file.
struct Contender<'f> {
    label: &'static str,
    run: Box<dyn FnMut() -> Result<()> + 'f>,
}

impl<'f> Contender<'f> {
    fn new(label: &'static str, run: impl FnMut() -> Result<()> + 'f) -> Self {
        Self {
            label,
            run: Box::new(run),
        }
    }
}

/// A contender's medians over the measured rounds.
struct Stat {
    label: &'static str,
    /// On-CPU time of each measured round, in round order (wall time where the kernel does
    /// not report CPU time).
    runs: Vec<Duration>,
    walls: Vec<Duration>,
}

impl Stat {
    fn median(&self) -> Duration {
        median(&self.runs)
    }

    fn best(&self) -> Duration {
        self.runs.iter().copied().min().unwrap_or_default()
    }
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The median over the rounds of `num`'s time / `den`'s time in the same round: a paired
/// ratio, so a slow spell of the machine that spans a round cancels out.
fn paired_ratio(num: &Stat, den: &Stat) -> f64 {
    let mut ratios: Vec<f64> = num
        .runs
        .iter()
        .zip(&den.runs)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs `warmups` + `rounds` rounds; in each round every contender runs once, in turn, so
/// a slow spell of the machine (another process on the 2 cores) hits all contenders alike.
fn race(n: usize, rounds: usize, contenders: &mut [Contender<'_>]) -> Result<Vec<Stat>> {
    let mut stats: Vec<Stat> = contenders
        .iter()
        .map(|c| Stat {
            label: c.label,
            runs: Vec::with_capacity(rounds),
            walls: Vec::with_capacity(rounds),
        })
        .collect();
    for round in 0..WARMUPS + rounds {
        for (c, stat) in contenders.iter_mut().zip(&mut stats) {
            let cpu0 = thread_cpu();
            let t = Instant::now();
            (c.run)().map_err(|e| format!("{}: {e}", c.label))?;
            let wall = t.elapsed();
            let cpu = match (cpu0, thread_cpu()) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => wall,
            };
            if round >= WARMUPS {
                stat.runs.push(cpu);
                stat.walls.push(wall);
            }
        }
    }
    for stat in &stats {
        println!(
            "  {:<32} median {:>7.1} ms {:>9.0} ev/s  best {:>7.1} ms  wall median {:>7.1} ms  runs: {}",
            stat.label,
            ms(stat.median()),
            rate(n, stat.median()),
            ms(stat.best()),
            ms(median(&stat.walls)),
            stat.runs
                .iter()
                .map(|d| format!("{:.0}", ms(*d)))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(stats)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// This thread's on-CPU time: `/proc/thread-self/schedstat`, first field, in ns.
fn thread_cpu() -> Option<Duration> {
    let text = fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(ns))
}

// ===== parse-only baseline =============================================================

/// The envelope row, every field borrowed.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Envelope<'a> {
    v: u32,
    provider: &'a str,
    generation: u64,
    via: &'a str,
    sequence: Option<u64>,
    emitter_seq: u64,
    received_at: &'a str,
    event: &'a str,
    #[serde(borrow)]
    payload: BasePayload<'a>,
}

/// The payload fields a turn tracker reads. Strings that may carry escapes are [`Str`].
#[derive(Deserialize)]
#[allow(dead_code)]
struct BasePayload<'a> {
    #[serde(borrow)]
    hook_event_name: Cow<'a, str>,
    #[serde(borrow)]
    session_id: Option<Str<'a>>,
    #[serde(borrow)]
    cwd: Option<Str<'a>>,
    #[serde(borrow)]
    client_type: Option<Str<'a>>,
    #[serde(borrow)]
    source: Option<Str<'a>>,
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    is_steer: Option<bool>,
    turn_id: Option<i64>,
    #[serde(borrow)]
    origin_kind: Option<Str<'a>>,
    #[serde(borrow)]
    origin_name: Option<Str<'a>>,
    #[serde(borrow)]
    tool_name: Option<Str<'a>>,
    #[serde(borrow)]
    tool_call_id: Option<Str<'a>>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    agent_name: Option<Str<'a>>,
    #[serde(borrow)]
    decision: Option<Str<'a>>,
    stop_hook_active: Option<bool>,
    #[serde(borrow)]
    trigger: Option<Str<'a>>,
}

/// A string borrowed from the line unless it has escapes.
///
/// `#[serde(borrow)]` makes a bare `Cow<'a, str>` field borrow, but not an
/// `Option<Cow<'a, str>>` one (serde-rs/serde#2016): serde's blanket `Cow` impl always
/// allocates. The newtype carries the borrow through the `Option`.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

fn parse_only(bytes: &[u8], expected: usize) -> Result<()> {
    let mut count = 0usize;
    for line in lines(bytes) {
        let row: Envelope<'_> = serde_json::from_slice(line)
            .map_err(|e| format!("baseline parse, line {}: {e}", count + 1))?;
        black_box(&row);
        count += 1;
    }
    if count != expected {
        return Err(format!("parse-only counted {count} lines, expected {expected}").into());
    }
    Ok(())
}

/// Lines of a buffer (without their newline), split with memchr.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        Some(line)
    })
}

// ===== replay ==========================================================================

struct ReplayOutcome {
    events: u64,
    skipped: u64,
    diagnostics: u64,
    nonzero: Vec<(&'static str, u64)>,
}

fn replay_full(bytes: &[u8], expected: usize) -> Result<ReplayOutcome> {
    let mut reader = LineReader::new(bytes);
    let mut pipeline = Pipeline::new(ProviderChoice::Auto);
    let mut events = 0u64;
    let mut skipped = 0u64;
    while let Some(line) = reader.next_line()? {
        match pipeline.feed(line) {
            Fed::Event(step) => {
                events += 1;
                black_box(&step);
            }
            Fed::Skipped(skip) => {
                skipped += 1;
                black_box(&skip);
            }
        }
        // A supervisor reads the posture after every event.
        black_box(pipeline.posture());
    }
    if events != expected as u64 || pipeline.events() != events {
        return Err(format!(
            "replay fed {events} events (pipeline says {}), {skipped} skipped; expected {expected}",
            pipeline.events()
        )
        .into());
    }
    let d = pipeline.diagnostics();
    Ok(ReplayOutcome {
        events,
        skipped,
        diagnostics: d.total(),
        nonzero: d.nonzero().map(|(diag, n)| (diag.name(), n)).collect(),
    })
}

/// As [`replay_full`], through the router `hooktrack replay` uses: the campaign has one
/// `session_id`, so this measures what routing adds to a one-session store.
fn replay_sessions(bytes: &[u8], expected: usize) -> Result<()> {
    let mut reader = LineReader::new(bytes);
    let mut sessions = Sessions::new(ProviderChoice::Auto);
    while let Some(line) = reader.next_line()? {
        let fed = sessions.feed(line);
        let index = sessions.current();
        black_box(&fed);
        black_box(sessions.get(index).pipeline.posture());
    }
    if sessions.len() != 1 {
        return Err(format!("{} sessions, expected one", sessions.len()).into());
    }
    check_count(sessions.get(0).pipeline.events() as usize, expected)
}

fn print_replay_check(out: &ReplayOutcome, summary: &CampaignSummary) {
    let detail = out
        .nonzero
        .iter()
        .map(|(name, n)| format!("{name}={n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "  replay check: {} events, {} skipped, diagnostics total {} [{}]",
        out.events,
        out.skipped,
        out.diagnostics,
        if detail.is_empty() { "none" } else { &detail }
    );
    let expected = summary.interrupts_during_tool;
    let matches = out.nonzero.as_slice() == [("tool_open_at_turn_end", expected)]
        || (expected == 0 && out.nonzero.is_empty());
    println!(
        "    expected from the generator: tool_open_at_turn_end={expected} (one per Interrupt during a running tool) -> {}",
        if matches {
            "as expected"
        } else {
            "UNEXPECTED diagnostics, see above"
        }
    );
}

// ----- stage breakdown ------------------------------------------------------------------

/// The replay's stages, cumulatively: the cost of each is the difference to the previous.
fn stage_contenders(bytes: &[u8], n: usize) -> Vec<Contender<'_>> {
    vec![
        Contender::new("a LineReader only", move || {
            let mut reader = LineReader::new(bytes);
            let mut count = 0usize;
            while let Some(line) = reader.next_line()? {
                black_box(&line);
                count += 1;
            }
            check_count(count, n)
        }),
        Contender::new("b  + row::parse_line", move || {
            let mut reader = LineReader::new(bytes);
            let mut count = 0usize;
            while let Some(line) = reader.next_line()? {
                if let ReadLine::Line { bytes, .. } = line
                    && let Ok(row) = parse_line(bytes)
                {
                    black_box(&row);
                    count += 1;
                }
            }
            check_count(count, n)
        }),
        Contender::new("c  + Agent::normalize", move || {
            let mut reader = LineReader::new(bytes);
            let mut count = 0usize;
            while let Some(line) = reader.next_line()? {
                if let ReadLine::Line { bytes, .. } = line
                    && let Ok(mut row) = parse_line(bytes)
                {
                    let event = Agent::KimiCode.normalize(&row.event_name, &mut row.payload);
                    black_box(&event);
                    count += 1;
                }
            }
            check_count(count, n)
        }),
        Contender::new("d  + Pipeline::feed, no posture", move || {
            let mut reader = LineReader::new(bytes);
            let mut pipeline = Pipeline::new(ProviderChoice::Auto);
            while let Some(line) = reader.next_line()? {
                black_box(pipeline.feed(line));
            }
            check_count(pipeline.events() as usize, n)
        }),
    ]
}

/// `stats`: parse-only, replay, replay via Sessions, then the stages a-d of [`stage_contenders`]. Stage costs
/// are differences of best-of-rounds times: the least disturbed run of each is the closest
/// to its own cost, and differences of noisy medians can come out negative.
fn print_stage_table(n: usize, stats: &[Stat]) {
    let [parse, replay, _sessions, a, b, c, d] = stats else {
        return;
    };
    let per = |t: Duration| t.as_secs_f64() * 1e9 / n as f64;
    let stage = |hi: &Stat, lo: Option<&Stat>| per(hi.best()) - lo.map_or(0.0, |l| per(l.best()));
    println!(
        "  stage breakdown (best of the rounds; each stage = difference to the previous line):"
    );
    println!(
        "    {:<36} {:>10} {:>10} {:>7}",
        "stage", "cum ns/ev", "ns/ev", "share"
    );
    println!(
        "    {:<36} {:>10.0} {:>10} {:>7}",
        "parse-only baseline (reference)",
        per(parse.best()),
        "",
        ""
    );
    let rows = [
        ("a LineReader (split)", a, None),
        ("b row::parse_line", b, Some(a)),
        ("c Agent::normalize", c, Some(b)),
        ("d deliveries, detect, correlate", d, Some(c)),
        ("e posture() after every event", replay, Some(d)),
    ];
    for (name, stat, prev) in rows {
        let ns = stage(stat, prev);
        println!(
            "    {:<36} {:>10.0} {:>10.0} {:>6.0}%",
            name,
            per(stat.best()),
            ns,
            100.0 * ns / per(replay.best())
        );
    }
}

fn check_count(count: usize, n: usize) -> Result<()> {
    if count == n {
        Ok(())
    } else {
        Err(format!("{count} lines, expected {n}").into())
    }
}

// ===== peak memory (child process) =====================================================

struct MemoryReport {
    events: u64,
    diagnostics: u64,
    start_kib: u64,
    peak_kib: u64,
}

fn spawn_memory_child(path: &Path) -> Result<MemoryReport> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let output = Command::new(&exe)
        .arg("--measure-memory")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !output.status.success() {
        return Err(format!(
            "memory child for {} failed ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let field = |key: &str| -> Result<u64> {
        stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| format!("memory child printed no {key}: {stdout:?}"))?
            .parse::<u64>()
            .map_err(|e| format!("memory child {key}: {e}").into())
    };
    Ok(MemoryReport {
        events: field("events")?,
        diagnostics: field("diagnostics")?,
        start_kib: field("start_kib")?,
        peak_kib: field("peak_kib")?,
    })
}

/// Child mode: stream FILE from disk through the pipeline, reading the posture after every
/// event and keeping nothing, then print the process's peak RSS.
fn measure_memory_child(path: &Path) -> Result<()> {
    let start_kib = vm_hwm_kib()?;
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, file));
    let mut pipeline = Pipeline::new(ProviderChoice::Auto);
    while let Some(line) = reader
        .next_line()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
    {
        black_box(pipeline.feed(line));
        black_box(pipeline.posture());
    }
    let peak_kib = vm_hwm_kib()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "events={} diagnostics={} start_kib={start_kib} peak_kib={peak_kib}",
        pipeline.events(),
        pipeline.diagnostics().total()
    )?;
    Ok(())
}

// ===== synthetic campaign ==============================================================

struct CampaignSummary {
    bytes: usize,
    turns: u64,
    /// Interrupts that land while a tool call is open: each leaves one
    /// `tool_open_at_turn_end` diagnostic, the only diagnostic the campaign should cause.
    interrupts_during_tool: u64,
}

fn write_campaign(path: &Path, n: usize) -> Result<CampaignSummary> {
    let mut g = Generator::new(n);
    g.run();
    let mut file =
        File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(g.out.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if g.count != n {
        return Err(format!("generator wrote {} events, wanted {n}", g.count).into());
    }
    Ok(CampaignSummary {
        bytes: g.out.len(),
        turns: g.turns,
        interrupts_during_tool: g.interrupts_during_tool,
    })
}

/// A 64-bit LCG (Knuth's MMIX constants); the high bits are used.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'p>(&mut self, pool: &[&'p str]) -> &'p str {
        pool[self.below(pool.len() as u64) as usize]
    }
}

const SESSION: &str = "session_3f9a1c2e-7b44-4d0e-9a51-2c8e6f0b1d73";
const CWD: &str = "/home/dev/projects/billing-api";
/// `session_title` appears from the first TurnStarted on.
const TITLE_FIELD: &str = r#","session_title":"Add pagination to invoices""#;
/// 2026-10-20T09:14:03.512Z, the first row of corpus/kimi-code/multi-turn-success.ndjson.
const START_MS: i64 = 1_792_487_643_512;

// Pools are JSON-escaped already (they are spliced into the rows as is).
const PROMPTS: &[&str] = &[
    "Add cursor pagination to the GET /invoices endpoint",
    "Document the new cursor and limit query params in README.md",
    "Commit it",
    "Why does `npm test` fail on CI but not locally?",
    "Rename the \\\"amount_cents\\\" column to \\\"amount_minor\\\" everywhere",
    "Fix the flaky retry test in test/http.test.ts",
    "Run the linter and fix what it reports",
    "Add a fixture for the caf\\u00e9 customer (name with an accent: Zo\u{eb})",
    "Make the limit default to 50 and cap it at 200",
    "Explain what cursorOf does, line by line",
    "Add an index on invoices(created_at, id) and a migration for it",
    "Write a test for an invalid cursor\\nIt should return 400, not 500",
];
const PATHS: &[&str] = &[
    "src/routes/invoices.ts",
    "src/db/schema.ts",
    "src/lib/cursor.ts",
    "test/invoices.test.ts",
    "test/http.test.ts",
    "README.md",
    "package.json",
    "migrations/0042_invoices_created_at.sql",
];
const CODE: &[&str] = &[
    "import { Router } from 'express';",
    "import { cursorOf, parseCursor } from '../lib/cursor';",
    "const router = Router();",
    "router.get('/invoices', async (req, res) => {",
    "  const limit = Math.min(Number(req.query.limit ?? 50), 200);",
    "  const after = req.query.cursor ? parseCursor(String(req.query.cursor)) : undefined;",
    "  const rows = await db.invoices.findMany({ take: limit + 1, where: after });",
    "  res.json({ items: rows.slice(0, limit), next: cursorOf(rows[limit]) });",
    "});",
    "export default router;",
    "\\t// TODO: \\\"cursor\\\" must stay opaque to clients",
    "  if (!isValid(cursor)) throw new HttpError(400, \\\"bad cursor\\\");",
];
const COMMANDS: &[&str] = &[
    "npm test -- invoices",
    "npx tsc --noEmit",
    "git status --short",
    "npm run lint -- --fix",
    "rg -n \\\"cursorOf\\\" src test",
    "git add -A && git commit -m 'invoices: cursor pagination'",
    "npm run migrate -- --dry-run",
];
const BASH_OUT: &[&str] = &[
    "PASS test/invoices.test.ts",
    "  \u{2713} returns the first page (12 ms)",
    "  \u{2713} follows the cursor to the second page (9 ms)",
    "  \u{2713} rejects an invalid cursor with 400 (4 ms)",
    "Tests:       12 passed, 12 total",
    "Time:        2.315 s, estimated 3 s",
    " M src/routes/invoices.ts",
    "?? src/lib/cursor.ts",
    "src/lib/cursor.ts:14:export function cursorOf(row: Invoice | undefined): string | null {",
    "[main 4e1b2c9] invoices: cursor pagination",
    " 3 files changed, 88 insertions(+), 9 deletions(-)",
];
const GREP_PATTERNS: &[&str] = &[
    "cursorOf",
    "TODO",
    "findMany\\\\(",
    "amount_cents",
    "HttpError",
];

struct Tool {
    name: &'static str,
    input: String,
    output: String,
    /// The command or path shown in a permission request's `display`.
    display: String,
    display_kind: &'static str,
}

struct Generator {
    rng: Lcg,
    out: String,
    target: usize,
    count: usize,
    clock_ms: i64,
    turn_id: i64,
    next_call: u64,
    next_approval: u64,
    titled: bool,
    turns: u64,
    interrupts_during_tool: u64,
    // Reused scratch buffers.
    payload: String,
    text: String,
}

impl Generator {
    fn new(target: usize) -> Self {
        Self {
            rng: Lcg(0x5eed_0fb0_0c4b_1d00),
            out: String::with_capacity(target * 720),
            target,
            count: 0,
            clock_ms: START_MS,
            turn_id: 0,
            next_call: 0,
            next_approval: 0,
            titled: false,
            turns: 0,
            interrupts_during_tool: 0,
            payload: String::new(),
            text: String::new(),
        }
    }

    fn full(&self) -> bool {
        self.count >= self.target
    }

    fn run(&mut self) {
        self.event(
            "SessionStart",
            5,
            r#","source":"startup","model":"kimi-code/k3","profile":"default""#,
        );
        while !self.full() {
            self.between_turns();
            self.turn();
        }
    }

    /// Writes one envelope row. `extra` is the payload's fields after the common ones,
    /// starting with a comma. `gap_ms` is the time since the previous row (jittered).
    fn event(&mut self, name: &str, gap_ms: u64, extra: &str) {
        if self.full() {
            return;
        }
        self.count += 1;
        let s = self.count;
        self.clock_ms += (gap_ms + self.rng.below(gap_ms / 2 + 1)) as i64;
        let title = if self.titled { TITLE_FIELD } else { "" };
        let _ = write!(
            self.out,
            r#"{{"v":1,"provider":"kimi","generation":1,"via":"http","sequence":{s},"emitter_seq":{s},"received_at":""#
        );
        push_rfc3339_ms(&mut self.out, self.clock_ms);
        let _ = writeln!(
            self.out,
            r#"","event":"{name}","payload":{{"hook_event_name":"{name}","session_id":"{SESSION}","cwd":"{CWD}","client_type":"kimi_code_cli"{title}{extra}}}}}"#
        );
    }

    fn between_turns(&mut self) {
        if self.turns > 0 && self.rng.chance(3) {
            for _ in 0..self.rng.range(1, 3) {
                let uptime = (self.clock_ms - START_MS) / 1000;
                let extra = format!(r#","uptime":{uptime}"#);
                self.event("SessionHeartbeat", 60_000, &extra);
            }
        }
        if self.turns > 0 && self.rng.chance(2) {
            self.compaction("manual");
        }
    }

    fn compaction(&mut self, trigger: &str) {
        let tokens = self.rng.range(40_000, 190_000);
        let extra = format!(r#","trigger":"{trigger}","token_count":{tokens}"#);
        self.event("PreCompact", 2_000, &extra);
        let estimated = self.rng.range(2_000, 6_000);
        let extra = format!(r#","trigger":"{trigger}","estimated_token_count":{estimated}"#);
        self.event("PostCompact", 7_000, &extra);
    }

    fn turn(&mut self) {
        self.turns += 1;
        self.turn_id += 1;
        let turn_id = self.turn_id;
        let prompt = self.rng.pick(PROMPTS);
        let extra = format!(r#","prompt":[{{"type":"text","text":"{prompt}"}}],"is_steer":false"#);
        self.event("UserPromptSubmit", 30_000, &extra);
        self.titled = true;
        let extra = format!(r#","turn_id":{turn_id},"origin_kind":"user","prompt":"{prompt}""#);
        self.event("TurnStarted", 60, &extra);

        let tools = self.rng.range(1, 6);
        let interrupt_at = self.rng.chance(3).then(|| self.rng.below(tools));
        let subagent_at = self.rng.chance(5).then(|| self.rng.below(tools));
        let compact_at = self.rng.chance(1).then(|| self.rng.below(tools));
        for i in 0..tools {
            if subagent_at == Some(i) {
                self.subagent();
            }
            if compact_at == Some(i) {
                self.compaction("auto");
            }
            if interrupt_at == Some(i) {
                // Escape during a long tool call: no PostToolUse, no Stop.
                let tool = self.tool();
                let call = self.call_id();
                self.pre_tool(&tool, &call);
                if !self.full() {
                    self.interrupts_during_tool += 1;
                }
                let extra = format!(r#","turn_id":{turn_id},"reason":"cancelled""#);
                self.event("Interrupt", 9_000, &extra);
                return;
            }
            self.tool_pair(turn_id);
        }
        self.event("Stop", 2_500, r#","stop_hook_active":false"#);
        if self.rng.below(1000) == 0 {
            // Rarely: the user quits and comes back (same process generation kept simple).
            self.event("SessionEnd", 5_000, r#","reason":"exit""#);
            self.event(
                "SessionStart",
                60_000,
                r#","source":"startup","model":"kimi-code/k3","profile":"default""#,
            );
        }
    }

    fn call_id(&mut self) -> String {
        self.next_call += 1;
        format!("call_{}", self.next_call)
    }

    fn tool(&mut self) -> Tool {
        let path = self.rng.pick(PATHS);
        match self.rng.below(6) {
            0 | 1 => {
                self.fill_text(CODE, 200, 600);
                Tool {
                    name: "Read",
                    input: format!(r#"{{"path":"{path}"}}"#),
                    output: self.text.clone(),
                    display: path.to_owned(),
                    display_kind: "file",
                }
            }
            2 => {
                self.fill_text(CODE, 150, 450);
                Tool {
                    name: "Write",
                    input: format!(r#"{{"path":"{path}","content":"{}"}}"#, self.text),
                    output: format!("Wrote {} bytes to {path}", self.text.len() + 1_200),
                    display: path.to_owned(),
                    display_kind: "file",
                }
            }
            3 => {
                let old = self.rng.pick(CODE);
                let new = self.rng.pick(CODE);
                Tool {
                    name: "Edit",
                    input: format!(
                        r#"{{"path":"{path}","old_string":"{old}","new_string":"{new}\n{old}"}}"#
                    ),
                    output: format!("Edited {path}: 1 replacement"),
                    display: path.to_owned(),
                    display_kind: "file",
                }
            }
            4 => {
                let command = self.rng.pick(COMMANDS);
                self.fill_text(BASH_OUT, 100, 500);
                Tool {
                    name: "Bash",
                    input: format!(r#"{{"command":"{command}","timeout":120000}}"#),
                    output: self.text.clone(),
                    display: command.to_owned(),
                    display_kind: "command",
                }
            }
            _ => {
                let pattern = self.rng.pick(GREP_PATTERNS);
                self.text.clear();
                let hits = self.rng.range(2, 8);
                for i in 0..hits {
                    let p = self.rng.pick(PATHS);
                    let l = self.rng.range(1, 400);
                    let c = self.rng.pick(CODE);
                    let _ = write!(self.text, "{}{p}:{l}:{c}", if i > 0 { "\\n" } else { "" });
                }
                Tool {
                    name: "Grep",
                    input: format!(
                        r#"{{"pattern":"{pattern}","path":"src/","output_mode":"content"}}"#
                    ),
                    output: self.text.clone(),
                    display: pattern.to_owned(),
                    display_kind: "search",
                }
            }
        }
    }

    /// Joins random lines of `pool` (with escaped newlines) to a length in `lo..=hi` bytes.
    fn fill_text(&mut self, pool: &[&str], lo: u64, hi: u64) {
        let want = self.rng.range(lo, hi) as usize;
        self.text.clear();
        while self.text.len() < want {
            if !self.text.is_empty() {
                self.text.push_str("\\n");
            }
            let line = self.rng.pick(pool);
            self.text.push_str(line);
        }
    }

    fn pre_tool(&mut self, tool: &Tool, call: &str) {
        self.payload.clear();
        let _ = write!(
            self.payload,
            r#","tool_name":"{}","tool_input":{},"tool_call_id":"{call}""#,
            tool.name, tool.input
        );
        let extra = std::mem::take(&mut self.payload);
        self.event("PreToolUse", 2_000, &extra);
        self.payload = extra;
    }

    fn post_tool(&mut self, tool: &Tool, call: &str) {
        self.payload.clear();
        let _ = write!(
            self.payload,
            r#","tool_name":"{}","tool_input":{},"tool_call_id":"{call}","tool_output":"{}""#,
            tool.name, tool.input, tool.output
        );
        let extra = std::mem::take(&mut self.payload);
        self.event("PostToolUse", 1_500, &extra);
        self.payload = extra;
    }

    /// PreToolUse → (PermissionRequest) → PostToolUse → (PermissionResult); sometimes the
    /// deny path: PermissionRequest → PermissionResult(rejected) → PostToolUseFailure.
    fn tool_pair(&mut self, turn_id: i64) {
        let tool = self.tool();
        let call = self.call_id();
        self.pre_tool(&tool, &call);
        let gated = matches!(tool.name, "Bash" | "Write" | "Edit") && self.rng.chance(15);
        if !gated {
            self.post_tool(&tool, &call);
            return;
        }
        self.next_approval += 1;
        let approval = format!("approval_{:06x}", self.next_approval);
        let common = format!(
            r#","id":"{approval}","agent_id":"main","turn_id":{turn_id},"tool_call_id":"{call}","tool_name":"{}""#,
            tool.name
        );
        let extra = format!(
            r#"{common},"action":"Approve {}","display":{{"kind":"{}","{}":"{}"}},"tool_input":{}"#,
            tool.name,
            tool.display_kind,
            if tool.display_kind == "command" {
                "command"
            } else {
                "path"
            },
            tool.display,
            tool.input
        );
        self.event("PermissionRequest", 80, &extra);
        if self.rng.chance(85) {
            self.post_tool(&tool, &call);
            let extra = format!(r#"{common},"decision":"approved""#);
            self.event("PermissionResult", 20, &extra);
        } else {
            let extra = format!(r#"{common},"decision":"rejected""#);
            self.event("PermissionResult", 5_000, &extra);
            let extra = format!(
                r#","tool_name":"{}","tool_input":{},"tool_call_id":"{call}","error":{{"code":"rejected","message":"The user rejected this tool call","retryable":false}}"#,
                tool.name, tool.input
            );
            self.event("PostToolUseFailure", 15, &extra);
        }
    }

    /// Agent tool: PreToolUse(Agent) → SubagentStart → TurnStarted(system_trigger, subagent,
    /// colliding turn_id) → tools → Stop → SubagentStop → PostToolUse(Agent).
    fn subagent(&mut self) {
        self.next_call += 1;
        let call = format!("call_agent_{}", self.next_call);
        let task = "List CSS classes in src/styles that no template references.";
        let agent = Tool {
            name: "Agent",
            input: format!(
                r#"{{"description":"Find unused CSS classes","prompt":"{task}","subagent_type":"coder"}}"#
            ),
            output: "Unused: .hero-old, .promo-banner, .legacy-grid".to_owned(),
            display: String::new(),
            display_kind: "agent",
        };
        self.pre_tool(&agent, &call);
        let extra = format!(r#","agent_name":"coder","prompt":"{task}""#);
        self.event("SubagentStart", 20, &extra);
        let extra = format!(
            r#","turn_id":1,"origin_kind":"system_trigger","origin_name":"subagent","prompt":"{task}""#
        );
        self.event("TurnStarted", 30, &extra);
        for _ in 0..self.rng.range(1, 3) {
            // Subagent tools are never gated here, so the nested turn id is not needed.
            let tool = self.tool();
            let call = self.call_id();
            self.pre_tool(&tool, &call);
            self.post_tool(&tool, &call);
        }
        self.event("Stop", 3_000, r#","stop_hook_active":false"#);
        let extra = format!(r#","agent_name":"coder","response":"{}""#, agent.output);
        self.event("SubagentStop", 20, &extra);
        self.post_tool(&agent, &call);
    }
}

/// Appends `ms` (Unix milliseconds, UTC) as `YYYY-MM-DDTHH:MM:SS.mmmZ`, as the collector
/// writes it.
fn push_rfc3339_ms(out: &mut String, ms: i64) {
    let _ = write!(out, "{}", hooktrack::Timestamp::from_millis(ms));
}
