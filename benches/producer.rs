//! Producer benchmark (`cargo bench --bench producer`).
//!
//! In one run, on this machine, against a real `hooktrack collect`:
//!
//! 1. **Emit latency**: wall time of one hook invocation, spawn to exit (what the agent
//!    waits for on every hook), p50 and p99, in two phases:
//!    - *alternating*: the hook over HTTP and by fallback (collector unreachable:
//!      connection refused) — `hooktrack-hook emit`, what installs run — the static C
//!      program's exec (the floor the hook is held to: at most 1.5× its p50) and
//!      `/bin/true`, `RUNS` each, every round in a new shuffled order (fixed seed), so
//!      machine noise and the neighbour before each run hit them alike. Each round also
//!      times one connect + POST + 200 exchange from this process to the same collector,
//!      by the same way as the emitter (its Unix socket when it has one): the round trip
//!      inside emit's http time.
//!    - *after a heavy neighbour*: the C program and the hook again, each run right after
//!      a run of the equivalent minimal Python emitter (`benches/python_emitter.py`: read
//!      stdin, flock'd emitter_seq, POST with urllib, append on failure; over HTTP and by
//!      fallback, plain and `-I -S`), every cache cold; the Python runs are the baseline
//!      of the 1/10 target.
//!
//!    The http emitters run with the collector's store as `--dir`, as installed hooks do.
//!    The programs run from copies in the bench's directory (`HOOKTRACK_BENCH_IN_PLACE=1`:
//!    where they were built).
//!
//!    `HOOKTRACK_BENCH_STATIC_BIN` adds the statically linked build (`just hook-static`),
//!    and `HOOKTRACK_BENCH_BEFORE_BIN` an earlier build with its own collector, for an A/B
//!    of the two in the same run.
//! 2. **Collector throughput**: rows/s accepted from 8 concurrent clients, each posting
//!    one delivery per connection (as emitters do) with the crate's own HTTP client.
//!
//! Targets: emit p50 at most 1.5× the static C exec's (alternating), and at most 1/10 of
//! the Python baseline's. Figures are ratios within the run; nothing is compared with a number from another machine. See `docs/producer.md`.

use std::error::Error;
use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hooktrack_core::agent::Agent;
use hooktrack_core::delivery::Delivery;
use hooktrack_producer::emit::DEFAULT_LIMITS;
use hooktrack_producer::http::{Limits, Url, post_json};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The delivery the bench's emitters send: a Kimi CLI `PreToolUse`.
fn delivery(emitter_seq: Option<u64>, payload: &serde_json::value::RawValue) -> Delivery<'_> {
    Delivery {
        provider: Agent::KimiCli,
        generation: 1,
        emitter_seq,
        event: Some("PreToolUse".into()),
        payload: Some(payload),
        payload_error: None,
        tmux_pane: None,
        agent_pid: None,
        emitter_parent: None,
    }
}

const RUNS: usize = 300;
/// Runs of each program after a Python emitter's (each costs a Python run too).
const COLD_RUNS: usize = 100;
const WARMUPS: usize = 10;
const CLIENTS: usize = 8;
const POSTS_PER_CLIENT: usize = 2_500;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef0123456789abcdef0123";
const TARGET_RATIO: f64 = 0.1;
/// Emit p50 at most this multiple of the static C program's exec.
const STATIC_TARGET: f64 = 1.5;
const STATIC_C: &str = "static C exec (floor)";
/// The default build's hook binary, `hooktrack-hook` (what installs run).
const DEFAULT_HTTP: &str = "hooktrack-hook emit, http";
const DEFAULT_FALLBACK: &str = "hooktrack-hook emit, fallback";
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
    // What installs run (`hooktrack-hook` beside `hooktrack`): the emit rows time it; the
    // collectors are `hooktrack collect`.
    let hook = placed(
        PathBuf::from(env!("CARGO_BIN_EXE_hooktrack-hook")),
        "hooktrack-hook",
    )?;
    println!("hooktrack producer benchmark");
    println!("  binary: {}", bin.display());
    println!("  hook binary: {}", hook.display());
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
    // The http variants run with the collector's own store as `--dir`, as installed hooks
    // do: there they find its Unix socket, and a fallback would land in the same file
    // (the count of `via: "http"` rows below tells).
    let collector_dir = store.join("collector-side");
    let collector = start_collector(&bin, &collector_dir)?;
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
            runs: 0,
        },
        Variant::rust(DEFAULT_HTTP, &hook, &url, collector_dir.clone()),
        Variant::rust(DEFAULT_FALLBACK, &hook, &dead, store.join("rust-fallback")),
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
            collector_dir.clone(),
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
            let before_dir = store.join("collector-before");
            let running = start_collector(bbin, &before_dir)?;
            let before_url = format!("http://127.0.0.1:{}/events", running.port);
            variants.push(Variant::rust(BEFORE_HTTP, bbin, &before_url, before_dir));
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
                runs: 0,
            },
        ),
        Err(e) => println!("  static C floor: SKIPPED ({e})"),
    }
    let mut pythons: Vec<Variant> = Vec::new();
    if let Some(py) = &python {
        for (isolated, name) in [(false, "python"), (true, "python -I -S")] {
            for (path, target) in [("http", &url), ("fallback", &dead)] {
                let dir = if path == "http" {
                    collector_dir.clone()
                } else {
                    store.join(format!("{name}-{path}").replace(' ', ""))
                };
                pythons.push(Variant::python(
                    leak(format!("{name} emitter, {path}")),
                    py,
                    isolated,
                    &script,
                    target,
                    dir,
                ));
            }
        }
    }
    for v in variants.iter().chain(&pythons) {
        fs::create_dir_all(&v.dir)?;
    }
    let socket = hooktrack_producer::stream::socket_path(&collector_dir, collector.port)
        .filter(|path| path.exists());
    match &socket {
        Some(path) => println!("  http: the collector's Unix socket {}", path.display()),
        None => println!("  http: loopback TCP (the collector made no Unix socket)"),
    }

    // Phase 1, alternating: the hook's variants, the C floor and the in-process round
    // trip (the last slot), each round in a new order. A fixed order biases: a POST right
    // after another POST is 0.05-0.1 ms slower than one after the C exec, and whatever
    // follows a Python run starts with cold caches (docs/benchmarks.md). Shuffled, every
    // variant meets every neighbour alike; the seed is fixed, so a rerun meets the same
    // orders. The targets are judged here.
    println!(
        "\nemit, alternating: wall time per invocation, spawn to exit; {WARMUPS} warm-up + {RUNS} runs each, every round in a shuffled order"
    );
    // The floor of the HTTP path: one exchange (connect, POST of the delivery an emitter
    // sends, 200) from this process to the same collector by the same way, once per
    // round, so it meets the same machine as the spawned hooks. What emit's http time has
    // above it is the process (start, stdin, the seq lock) and not the round trip.
    let round_trip_url = Url::parse(&url)?;
    let round_trip_payload: &serde_json::value::RawValue = serde_json::from_str(PAYLOAD)?;
    let round_trip_body = delivery(None, round_trip_payload).render();
    let mut round_trips = Vec::with_capacity(RUNS);
    let round_trip_slot = variants.len();
    let mut order: Vec<usize> = (0..=round_trip_slot).collect();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..WARMUPS + RUNS {
        rng.shuffle(&mut order);
        for &slot in &order {
            if slot == round_trip_slot {
                let started = Instant::now();
                post_json(
                    &round_trip_url,
                    socket.as_deref(),
                    TOKEN,
                    &round_trip_body,
                    DEFAULT_LIMITS,
                )
                .map_err(|e| format!("the in-process round trip failed: {e}"))?;
                if round >= WARMUPS {
                    round_trips.push(started.elapsed());
                }
                continue;
            }
            let v = &mut variants[slot];
            let took = v.run_once()?;
            if round >= WARMUPS {
                v.samples.push(took);
            }
        }
    }
    print_table(variants.iter_mut());
    round_trips.sort();
    println!(
        "  {:<32} {:>10} {:>10}",
        ROUND_TRIP,
        ms(percentile(&round_trips, 0.50)),
        ms(percentile(&round_trips, 0.99))
    );
    let p50_in = |set: &[Variant], label: &str| {
        set.iter()
            .find(|v| v.label == label)
            .map(|v| percentile(&v.samples, 0.5).as_secs_f64())
            .unwrap_or(f64::NAN)
    };
    let p50_of = |label: &str| p50_in(&variants, label);
    let verdict = |http: f64, fallback: f64| {
        if http <= STATIC_TARGET && fallback <= STATIC_TARGET {
            "met"
        } else {
            "NOT MET"
        }
    };
    if static_c.is_ok() {
        let floor = p50_of(STATIC_C);
        let http = p50_of(DEFAULT_HTTP) / floor;
        let fallback = p50_of(DEFAULT_FALLBACK) / floor;
        println!(
            "  p50 default build / static C exec: http {http:.2}, fallback {fallback:.2}; target <= {STATIC_TARGET} -> {}",
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
        over_round_trip(DEFAULT_HTTP),
        if static_bin.is_some() {
            format!(" (static build {:.2} ms)", over_round_trip(STATIC_HTTP))
        } else {
            String::new()
        }
    );

    // Phase 2, after a heavy neighbour: each run of the C floor and of the hook (the
    // static build when given) follows a run of a Python emitter, as a hook may follow
    // the agent's own work, with every cache cold. The Python runs are the baseline of
    // the Python target.
    if !pythons.is_empty() {
        let (http_label, fallback_label) = if static_bin.is_some() {
            (STATIC_HTTP, STATIC_FALLBACK)
        } else {
            (DEFAULT_HTTP, DEFAULT_FALLBACK)
        };
        let mut cold: Vec<Variant> = variants
            .iter()
            .filter(|v| [STATIC_C, http_label, fallback_label].contains(&v.label))
            .map(Variant::fresh)
            .collect();
        println!(
            "\nemit, each run after a Python emitter's: {WARMUPS} warm-up + {COLD_RUNS} runs each, every round in a shuffled order"
        );
        let mut order: Vec<usize> = (0..cold.len()).collect();
        let mut next_python = 0;
        for round in 0..WARMUPS + COLD_RUNS {
            rng.shuffle(&mut order);
            for &slot in &order {
                let python_slot = next_python % pythons.len();
                let py = &mut pythons[python_slot];
                next_python += 1;
                let took = py.run_once()?;
                if round >= WARMUPS {
                    py.samples.push(took);
                }
                let v = &mut cold[slot];
                let took = v.run_once()?;
                if round >= WARMUPS {
                    v.samples.push(took);
                }
            }
        }
        print_table(cold.iter_mut().chain(pythons.iter_mut()));
        if static_c.is_ok() {
            let floor = p50_in(&cold, STATIC_C);
            println!(
                "  p50 {} / static C exec, both after Python: http {:.2}, fallback {:.2}",
                if static_bin.is_some() {
                    "static build"
                } else {
                    "hooktrack"
                },
                p50_in(&cold, http_label) / floor,
                p50_in(&cold, fallback_label) / floor
            );
        }
        // Against the faster of the two Python baselines (isolated mode skips
        // site-packages), with hooktrack's alternating p50.
        let baseline = |path: &str| {
            p50_in(&pythons, &format!("python emitter, {path}"))
                .min(p50_in(&pythons, &format!("python -I -S emitter, {path}")))
        };
        let http = p50_of(DEFAULT_HTTP) / baseline("http");
        let fallback = p50_of(DEFAULT_FALLBACK) / baseline("fallback");
        println!(
            "  p50 default build / fastest python: http {http:.3}, fallback {fallback:.3}; target <= {TARGET_RATIO} -> {}",
            if http <= TARGET_RATIO && fallback <= TARGET_RATIO {
                "met"
            } else {
                "NOT MET"
            }
        );
        variants.append(&mut cold);
    }
    variants.append(&mut pythons);

    // Every invocation landed exactly where it should (and every in-process exchange).
    let runs_of = |pick: &dyn Fn(&Variant) -> bool| -> usize {
        variants.iter().filter(|v| pick(v)).map(|v| v.runs).sum()
    };
    let collected = count_http_rows(&collector_dir.join("events.ndjson"));
    let http_runs =
        runs_of(&|v| v.label.ends_with("http") && v.label != BEFORE_HTTP) + WARMUPS + RUNS;
    if collected != http_runs {
        return Err(format!("collector holds {collected} rows, expected {http_runs}").into());
    }
    if let Some(running) = before_collector {
        stop(running)?;
        let n = count_http_rows(&store.join("collector-before/events.ndjson"));
        let want = runs_of(&|v| v.label == BEFORE_HTTP);
        if n != want {
            return Err(
                format!("the before build's collector holds {n} rows, expected {want}").into(),
            );
        }
    }
    for v in variants.iter().filter(|v| v.label.ends_with("fallback")) {
        let n = count_lines(&v.dir.join("events.ndjson"));
        let want = runs_of(&|w| w.dir == v.dir);
        if n != want {
            return Err(format!("{}: {n} fallback rows, expected {want}", v.label).into());
        }
    }
    stop(collector)?;

    // --- collector throughput --------------------------------------------------------
    let collector = start_collector(&bin, &base.join("throughput"))?;
    let target = Url::parse(&format!("http://127.0.0.1:{}/events", collector.port))?;
    let seq = Arc::new(AtomicU64::new(0));
    let payload: &serde_json::value::RawValue = serde_json::from_str(PAYLOAD)?;
    let body = |s: u64| delivery(Some(s), payload).render();
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
                    if post_json(&target, None, TOKEN, &body(s), limits).is_err() {
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
    /// Every run, warm-ups included: the rows it must have left.
    runs: usize,
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
            runs: 0,
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
            runs: 0,
        }
    }

    /// The same program, arguments and store, with no samples yet.
    fn fresh(&self) -> Self {
        Self {
            label: self.label,
            program: self.program.clone(),
            args: self.args.clone(),
            dir: self.dir.clone(),
            samples: Vec::with_capacity(RUNS),
            runs: 0,
        }
    }

    fn run_once(&mut self) -> Result<Duration> {
        self.runs += 1;
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

/// Sorts each variant's samples and prints its p50 and p99, under a header.
fn print_table<'a>(variants: impl Iterator<Item = &'a mut Variant>) {
    println!("  {:<32} {:>10} {:>10}", "", "p50", "p99");
    for v in variants {
        v.samples.sort();
        println!(
            "  {:<32} {:>10} {:>10}",
            v.label,
            ms(percentile(&v.samples, 0.50)),
            ms(percentile(&v.samples, 0.99))
        );
    }
}

/// A small fixed-seed generator for the rounds' order (xorshift64).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Fisher-Yates.
    fn shuffle(&mut self, items: &mut [usize]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// Rows the collector accepted (a fallback into the same file is not one).
fn count_http_rows(path: &Path) -> usize {
    fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter(|line| line.contains("\"via\":\"http\""))
                .count()
        })
        .unwrap_or(0)
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
