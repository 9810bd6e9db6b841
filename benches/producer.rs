//! Producer benchmark (`cargo bench --bench producer`).
//!
//! In one run, on this machine, against a real `hooktrack collect`:
//!
//! 1. **Emit latency**: wall time of one hook invocation, spawn to exit (what the agent
//!    waits for on every hook), p50 and p99 over `RUNS` invocations each of
//!    - `hooktrack emit` delivering over HTTP,
//!    - the equivalent minimal Python emitter (`benches/python_emitter.py`: read stdin,
//!      flock'd emitter_seq, POST with urllib, append on failure) over HTTP,
//!    - both again with the collector unreachable (connection refused: fallback append).
//!
//!    The four are interleaved round by round so machine noise hits them alike. Each
//!    round also times one connect + POST + 200 exchange from this process to the same
//!    collector, just before the http emit it is compared with: the loopback round trip
//!    inside emit's http time. The programs run from copies in the bench's directory
//!    (`HOOKTRACK_BENCH_IN_PLACE=1`: where they were built).
//!
//!    `HOOKTRACK_BENCH_STATIC_BIN` adds the statically linked build (`just hook-static`),
//!    and `HOOKTRACK_BENCH_BEFORE_BIN` an earlier build with its own collector, for an A/B
//!    of the two in the same run.
//! 2. **Collector throughput**: rows/s accepted from 8 concurrent clients, each posting
//!    one delivery per connection (as emitters do) with the crate's own HTTP client.
//!
//! Target: emit p50 at most 1/10 of the Python baseline's. Figures are ratios within the
//! run; nothing is compared with a number from another machine. See `docs/producer.md`.

use std::error::Error;
use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hooktrack_producer::emit::{DEFAULT_LIMITS, render_delivery};
use hooktrack_producer::http::{Limits, Url, post_json};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const RUNS: usize = 300;
const WARMUPS: usize = 10;
const CLIENTS: usize = 8;
const POSTS_PER_CLIENT: usize = 2_500;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef0123456789abcdef0123";
const TARGET_RATIO: f64 = 0.1;
/// Emit p50 at most this multiple of the static C program's exec.
const STATIC_TARGET: f64 = 1.5;
const STATIC_C: &str = "static C exec (floor)";
const STATIC_HTTP: &str = "static build emit, http";
const STATIC_FALLBACK: &str = "static build emit, fallback";
const ROUND_TRIP: &str = "round trip only (in-process)";
const BEFORE_HTTP: &str = "before build emit, http";
const BEFORE_FALLBACK: &str = "before build emit, fallback";
const PAYLOAD: &str = r#"{"hook_event_name": "PreToolUse", "session_id": "495571c6-adb5-491a-99ad-7e10e4e3d92e", "cwd": "/home/dev/project", "tool_name": "Shell", "tool_input": {"command": "cargo test --workspace 2>&1 | tail -n 40"}, "tool_call_id": "call_3_0"}"#;

fn main() -> Result<()> {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-producer");
    let _ = fs::remove_dir_all(&base);
    fs::create_dir_all(&base)?;
    // The programs are timed from copies, as an install puts them in place (`cargo
    // install`, `cp`): a binary run where the linker wrote it starts slower than a copy of
    // the same bytes (docs/benchmarks.md, "The hook command"), the C floor as well as
    // hooktrack, and by different amounts. HOOKTRACK_BENCH_IN_PLACE=1 times them where
    // they were built.
    let in_place = std::env::var_os("HOOKTRACK_BENCH_IN_PLACE").is_some_and(|v| v == "1");
    let placed = |built: PathBuf, name: &str| -> Result<PathBuf> {
        if in_place {
            return Ok(built);
        }
        let copy = base.join(name);
        fs::copy(&built, &copy)?;
        Ok(copy)
    };
    let bin = placed(PathBuf::from(env!("CARGO_BIN_EXE_hooktrack")), "hooktrack")?;
    println!("hooktrack producer benchmark");
    println!("  binary: {}", bin.display());
    println!(
        "  programs timed {}",
        if in_place {
            "where they were built (HOOKTRACK_BENCH_IN_PLACE=1)"
        } else {
            "from copies in the bench's directory (HOOKTRACK_BENCH_IN_PLACE=1: where built)"
        }
    );

    let python = find_python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/python_emitter.py");
    match &python {
        Some(p) => println!("  baseline: {} {}", p.display(), script.display()),
        None => println!("  baseline: SKIPPED (no python3 on PATH)"),
    }

    // --- emit latency -------------------------------------------------------------
    let store = base.join("emit");
    let collector = start_collector(&bin, &store.join("collector-side"))?;
    let url = format!("http://127.0.0.1:{}/events", collector.port);
    let dead = format!("http://127.0.0.1:{}/events", dead_port()?);
    let mut variants: Vec<Variant> = vec![
        // The floor: spawning any process at all on this machine.
        Variant {
            label: "spawn floor (/bin/true)",
            program: PathBuf::from("/bin/true"),
            args: Vec::new(),
            dir: store.join("floor"),
            samples: Vec::with_capacity(RUNS),
        },
        Variant::rust("hooktrack emit, http", &bin, &url, store.join("rust-http")),
        Variant::rust(
            "hooktrack emit, fallback",
            &bin,
            &dead,
            store.join("rust-fallback"),
        ),
    ];
    // A statically linked build of the same code (`just hook-static`), when given.
    let static_bin = std::env::var_os("HOOKTRACK_BENCH_STATIC_BIN")
        .map(|p| placed(PathBuf::from(p), "hooktrack-static"))
        .transpose()?;
    if let Some(sbin) = &static_bin {
        println!("  static build: {}", sbin.display());
        variants.push(Variant::rust(
            STATIC_HTTP,
            sbin,
            &url,
            store.join("static-http"),
        ));
        variants.push(Variant::rust(
            STATIC_FALLBACK,
            sbin,
            &dead,
            store.join("static-fallback"),
        ));
    }
    // An earlier build to compare with (A/B in the same run), with its own collector: the
    // emitter and the collector changed together.
    let before_bin = std::env::var_os("HOOKTRACK_BENCH_BEFORE_BIN")
        .map(|p| placed(PathBuf::from(p), "hooktrack-before"))
        .transpose()?;
    let before_collector = match &before_bin {
        Some(bbin) => {
            println!("  before build: {}", bbin.display());
            let running = start_collector(bbin, &store.join("collector-before"))?;
            let before_url = format!("http://127.0.0.1:{}/events", running.port);
            variants.push(Variant::rust(
                BEFORE_HTTP,
                bbin,
                &before_url,
                store.join("before-http"),
            ));
            variants.push(Variant::rust(
                BEFORE_FALLBACK,
                bbin,
                &dead,
                store.join("before-fallback"),
            ));
            Some(running)
        }
        None => None,
    };
    // The floor the emitter is held to: a static C program's exec (read stdin, exit 0).
    let static_c = build_static_c(&base).and_then(|built| placed(built, "static_exec"));
    match &static_c {
        Ok(program) => variants.insert(
            1,
            Variant {
                label: STATIC_C,
                program: program.clone(),
                args: Vec::new(),
                dir: store.join("static-c"),
                samples: Vec::with_capacity(RUNS),
            },
        ),
        Err(e) => println!("  static C floor: SKIPPED ({e})"),
    }
    if let Some(py) = &python {
        for (isolated, name) in [(false, "python"), (true, "python -I -S")] {
            for (path, target) in [("http", &url), ("fallback", &dead)] {
                variants.push(Variant::python(
                    leak(format!("{name} emitter, {path}")),
                    py,
                    isolated,
                    &script,
                    target,
                    store.join(format!("{name}-{path}").replace(' ', "")),
                ));
            }
        }
    }
    for v in &variants {
        fs::create_dir_all(&v.dir)?;
    }
    println!(
        "\nemit: wall time per invocation, spawn to exit; {WARMUPS} warm-up + {RUNS} runs each, interleaved"
    );
    // The loopback floor of the HTTP path: one exchange (connect, POST of the delivery an
    // emitter sends, 200) from this process to the same collector, once per round, so it
    // meets the same machine as the spawned hooks. What emit's http time has above it is
    // the process (start, stdin, the seq lock) and not the round trip.
    let round_trip_url = Url::parse(&url)?;
    let round_trip_payload: &serde_json::value::RawValue = serde_json::from_str(PAYLOAD)?;
    let round_trip_body = render_delivery(
        "kimi-cli",
        1,
        None,
        Some("PreToolUse"),
        Some(round_trip_payload),
        None,
        None,
    );
    let mut round_trips = Vec::with_capacity(RUNS);
    // Taken just before the http emit it is compared with, after the same variants.
    let round_trip_before = if static_bin.is_some() {
        STATIC_HTTP
    } else {
        "hooktrack emit, http"
    };
    for round in 0..WARMUPS + RUNS {
        for v in &mut variants {
            if v.label == round_trip_before {
                let started = Instant::now();
                post_json(&round_trip_url, TOKEN, &round_trip_body, DEFAULT_LIMITS)
                    .map_err(|e| format!("the in-process round trip failed: {e}"))?;
                if round >= WARMUPS {
                    round_trips.push(started.elapsed());
                }
            }
            let took = v.run_once()?;
            if round >= WARMUPS {
                v.samples.push(took);
            }
        }
    }
    println!("  {:<32} {:>10} {:>10}", "", "p50", "p99");
    for v in &mut variants {
        v.samples.sort();
        println!(
            "  {:<32} {:>10} {:>10}",
            v.label,
            ms(percentile(&v.samples, 0.50)),
            ms(percentile(&v.samples, 0.99))
        );
    }
    round_trips.sort();
    println!(
        "  {:<32} {:>10} {:>10}",
        ROUND_TRIP,
        ms(percentile(&round_trips, 0.50)),
        ms(percentile(&round_trips, 0.99))
    );
    // Every invocation landed exactly where it should (and every in-process exchange).
    let collected = count_lines(&store.join("collector-side/events.ndjson"));
    let http_runs = (variants
        .iter()
        .filter(|v| v.label.ends_with("http") && v.label != BEFORE_HTTP)
        .count()
        + 1)
        * (WARMUPS + RUNS);
    if collected != http_runs {
        return Err(format!("collector holds {collected} rows, expected {http_runs}").into());
    }
    if let Some(running) = before_collector {
        stop(running)?;
        let n = count_lines(&store.join("collector-before/events.ndjson"));
        if n != WARMUPS + RUNS {
            return Err(format!("the before build's collector holds {n} rows").into());
        }
    }
    for v in variants.iter().filter(|v| v.label.ends_with("fallback")) {
        let n = count_lines(&v.dir.join("events.ndjson"));
        if n != WARMUPS + RUNS {
            return Err(format!(
                "{}: {n} fallback rows, expected {}",
                v.label,
                WARMUPS + RUNS
            )
            .into());
        }
    }
    let p50_of = |label: &str| {
        variants
            .iter()
            .find(|v| v.label == label)
            .map(|v| percentile(&v.samples, 0.5).as_secs_f64())
            .unwrap_or(f64::NAN)
    };
    if static_c.is_ok() {
        let floor = p50_of(STATIC_C);
        let http = p50_of("hooktrack emit, http") / floor;
        let fallback = p50_of("hooktrack emit, fallback") / floor;
        let verdict = |http: f64, fallback: f64| {
            if http <= STATIC_TARGET && fallback <= STATIC_TARGET {
                "met"
            } else {
                "NOT MET"
            }
        };
        println!(
            "  p50 hooktrack / static C exec: http {http:.2}, fallback {fallback:.2}; target <= {STATIC_TARGET} -> {}",
            verdict(http, fallback)
        );
        if static_bin.is_some() {
            let http = p50_of(STATIC_HTTP) / floor;
            let fallback = p50_of(STATIC_FALLBACK) / floor;
            println!(
                "  p50 static build / static C exec: http {http:.2}, fallback {fallback:.2}; target <= {STATIC_TARGET} -> {}",
                verdict(http, fallback)
            );
        }
    }
    if before_bin.is_some() && static_bin.is_some() {
        let http = p50_of(STATIC_HTTP) / p50_of(BEFORE_HTTP);
        let fallback = p50_of(STATIC_FALLBACK) / p50_of(BEFORE_FALLBACK);
        println!("  p50 static build / before build: http {http:.2}, fallback {fallback:.2}");
    }
    let round_trip = percentile(&round_trips, 0.5).as_secs_f64();
    let over_round_trip = |label: &str| (p50_of(label) - round_trip) * 1e3;
    println!(
        "  p50 emit http minus the round trip: {:.2} ms{}",
        over_round_trip("hooktrack emit, http"),
        if static_bin.is_some() {
            format!(" (static build {:.2} ms)", over_round_trip(STATIC_HTTP))
        } else {
            String::new()
        }
    );
    if python.is_some() {
        let p50 = p50_of;
        // Against the faster of the two Python baselines (isolated mode skips site-packages).
        let baseline = |path: &str| {
            p50(&format!("python emitter, {path}"))
                .min(p50(&format!("python -I -S emitter, {path}")))
        };
        let http = p50("hooktrack emit, http") / baseline("http");
        let fallback = p50("hooktrack emit, fallback") / baseline("fallback");
        println!(
            "  p50 hooktrack / fastest python: http {http:.3}, fallback {fallback:.3}; target <= {TARGET_RATIO} -> {}",
            if http <= TARGET_RATIO && fallback <= TARGET_RATIO {
                "met"
            } else {
                "NOT MET"
            }
        );
    }
    stop(collector)?;

    // --- collector throughput --------------------------------------------------------
    let collector = start_collector(&bin, &base.join("throughput"))?;
    let target = Url::parse(&format!("http://127.0.0.1:{}/events", collector.port))?;
    let seq = Arc::new(AtomicU64::new(0));
    let payload: &serde_json::value::RawValue = serde_json::from_str(PAYLOAD)?;
    let body = |s: u64| {
        render_delivery(
            "kimi-cli",
            1,
            Some(s),
            Some("PreToolUse"),
            Some(payload),
            None,
            None,
        )
    };
    let limits = Limits {
        connect: Duration::from_secs(2),
        total: Duration::from_secs(10),
    };
    let started = Instant::now();
    let failures = Arc::new(AtomicU64::new(0));
    std::thread::scope(|scope| {
        for _ in 0..CLIENTS {
            let seq = Arc::clone(&seq);
            let failures = Arc::clone(&failures);
            let target = target.clone();
            scope.spawn(move || {
                for _ in 0..POSTS_PER_CLIENT {
                    let s = seq.fetch_add(1, Ordering::Relaxed) + 1;
                    if post_json(&target, TOKEN, &body(s), limits).is_err() {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();
    stop(collector)?;
    let total = CLIENTS * POSTS_PER_CLIENT;
    let rows = count_lines(&base.join("throughput/events.ndjson"));
    let failed = failures.load(Ordering::Relaxed);
    println!(
        "\ncollector: {CLIENTS} concurrent clients x {POSTS_PER_CLIENT} posts (one connection each)"
    );
    println!(
        "  {rows} rows in {:.2} s -> {:.0} rows/s ({failed} failed posts)",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64()
    );
    if rows != total || failed != 0 {
        return Err(format!("expected {total} rows and no failure").into());
    }
    Ok(())
}

struct Variant {
    label: &'static str,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    samples: Vec<Duration>,
}

impl Variant {
    fn rust(label: &'static str, bin: &Path, url: &str, dir: PathBuf) -> Self {
        let args = vec![
            "emit".into(),
            "--url".into(),
            url.into(),
            "--dir".into(),
            dir.display().to_string(),
            "--provider".into(),
            "kimi-cli".into(),
            "--generation".into(),
            "1".into(),
            "--event".into(),
            "PreToolUse".into(),
        ];
        Self {
            label,
            program: bin.to_owned(),
            args,
            dir,
            samples: Vec::with_capacity(RUNS),
        }
    }

    fn python(
        label: &'static str,
        python: &Path,
        isolated: bool,
        script: &Path,
        url: &str,
        dir: PathBuf,
    ) -> Self {
        let mut args: Vec<String> = if isolated {
            vec!["-I".into(), "-S".into()]
        } else {
            Vec::new()
        };
        args.extend([
            script.display().to_string(),
            url.into(),
            dir.display().to_string(),
            "kimi-cli".into(),
            "1".into(),
            "PreToolUse".into(),
        ]);
        Self {
            label,
            program: python.to_owned(),
            args,
            dir,
            samples: Vec::with_capacity(RUNS),
        }
    }

    fn run_once(&self) -> Result<Duration> {
        let started = Instant::now();
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .env("HOOKTRACK_TOKEN", TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // /bin/true does not read its stdin.
            match stdin.write_all(PAYLOAD.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                _ => {}
            }
        }
        let status = child.wait()?;
        let took = started.elapsed();
        if !status.success() {
            return Err(format!("{} exited with {status}", self.label).into());
        }
        Ok(took)
    }
}

struct Running {
    child: Child,
    port: u16,
}

fn start_collector(bin: &Path, dir: &Path) -> Result<Running> {
    let child = Command::new(bin)
        .args([
            "collect",
            "--provider",
            "kimi-cli",
            "--generation",
            "1",
            "--dir",
        ])
        .arg(dir)
        .env("HOOKTRACK_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .spawn()?;
    let pid = u64::from(child.id());
    let started = Instant::now();
    loop {
        if let Ok(bytes) = fs::read(dir.join("collector.json"))
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes)
            && v["pid"].as_u64() == Some(pid)
            && v["status"] == "running"
            && let Some(port) = v["port"].as_u64()
        {
            return Ok(Running {
                child,
                port: u16::try_from(port)?,
            });
        }
        if started.elapsed() > Duration::from_secs(20) {
            return Err("the collector did not come up".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stop(mut running: Running) -> Result<()> {
    let pid = i32::try_from(running.child.id())?;
    // SAFETY: kill(2) on a child we spawned.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let status = running.child.wait()?;
    if !status.success() {
        return Err(format!("collector exited with {status}").into());
    }
    Ok(())
}

/// Compiles `benches/static_exec.c` with the system `cc`, statically linked.
fn build_static_c(base: &Path) -> Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/static_exec.c");
    let program = base.join("static_exec.built");
    let output = Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cc failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    Ok(program)
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn dead_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The real interpreter behind `python3` (not a version manager's shim script, whose own
/// start-up would be charged to the baseline).
fn find_python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    path.is_file().then_some(path)
}

fn count_lines(path: &Path) -> usize {
    fs::read(path)
        .map(|b| b.iter().filter(|c| **c == b'\n').count())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
