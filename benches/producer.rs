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
//!    The four are interleaved round by round so machine noise hits them alike.
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

use hooktrack_producer::emit::render_delivery;
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
const PAYLOAD: &str = r#"{"hook_event_name": "PreToolUse", "session_id": "495571c6-adb5-491a-99ad-7e10e4e3d92e", "cwd": "/home/dev/project", "tool_name": "Shell", "tool_input": {"command": "cargo test --workspace 2>&1 | tail -n 40"}, "tool_call_id": "call_3_0"}"#;

fn main() -> Result<()> {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_hooktrack"));
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-producer");
    let _ = fs::remove_dir_all(&base);
    fs::create_dir_all(&base)?;
    println!("hooktrack producer benchmark");
    println!("  binary: {}", bin.display());

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
    let static_bin = std::env::var_os("HOOKTRACK_BENCH_STATIC_BIN").map(PathBuf::from);
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
    // The floor the emitter is held to: a static C program's exec (read stdin, exit 0).
    let static_c = build_static_c(&base);
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
    for round in 0..WARMUPS + RUNS {
        for v in &mut variants {
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
    // Every invocation landed exactly where it should.
    let collected = count_lines(&store.join("collector-side/events.ndjson"));
    let http_runs = variants
        .iter()
        .filter(|v| v.label.ends_with("http"))
        .count()
        * (WARMUPS + RUNS);
    if collected != http_runs {
        return Err(format!("collector holds {collected} rows, expected {http_runs}").into());
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
    let program = base.join("static_exec");
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
