//! Fleet benchmark (`cargo bench --bench fleet`): many publishing processes through one
//! local nats-server, read back by one viewer.
//!
//! P publisher processes (this binary re-executed with `--publisher`), each a
//! `hooktrack::fleet::Publisher` of host `h<i>` publishing S sessions at R updates per
//! second per session for T seconds, records shaped and sized like `watch --ndjson` lines
//! with their send time; one `Viewer` in this process. Reported: the viewer's lag (its
//! receipt − the record's send time) p50 / p99 / max, updates/s sent and seen, what the
//! publishers dropped, CPU seconds and peak RSS of a publisher (mean and max), of the
//! viewer process and of nats-server.
//!
//! Defaults P=100, S=20, R=10, T=20; `HOOKTRACK_FLEET_BENCH=P,S,R,T` for others. The server
//! is `$HOOKTRACK_NATS_SERVER`, else `nats-server` on PATH, else the e2e tests' install
//! (`target/tmp/e2e-nats/venv/bin/nats-server`). Nothing is asserted.

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hooktrack::fleet::{NatsServer, PublishConfig, Publisher, Seen, ViewConfig, Viewer};

fn now_ms() -> i64 {
    hooktrack::wall_clock().as_millis()
}

/// utime + stime (seconds) and peak RSS (KiB) of a process, from /proc.
fn usage(pid: &str) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after the name: state is 0, utime 11, stime 12.
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    (cpu, hwm)
}

/// One publisher process: `--publisher URL HOST S R T`; prints `published dropped cpu hwm`.
fn publisher(args: &[String]) {
    let [url, host, s, r, t] = args else {
        eprintln!("--publisher URL HOST S R T");
        std::process::exit(2);
    };
    let (sessions, rate, secs): (u32, u32, u64) = (
        s.parse().unwrap_or(20),
        r.parse().unwrap_or(10),
        t.parse().unwrap_or(20),
    );
    let server = NatsServer {
        url: url.clone(),
        ..NatsServer::default()
    };
    let Ok(publisher) = Publisher::start(PublishConfig::new(server, host.clone())) else {
        std::process::exit(1);
    };
    let filler = "x".repeat(420);
    let start = Instant::now();
    let tick = Duration::from_secs(1) / rate.max(1);
    let mut next = start;
    let mut seq = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        for j in 0..sessions {
            let line = format!(
                r#"{{"session":"s{j}","session_id":"s{j}","phase":"active","sent_ms":{},"seq":{seq},"posture":{{"pad":"{filler}"}}}}"#,
                now_ms()
            );
            publisher.publish("claude-code", &format!("s{j}"), line.as_bytes());
        }
        seq += 1;
        next += tick;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let stats = publisher.finish(Duration::from_secs(30));
    let (cpu, hwm) = usage("self");
    println!("{} {} {cpu} {hwm}", stats.published, stats.dropped);
}

fn nats_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HOOKTRACK_NATS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|dirs| {
        std::env::split_paths(&dirs)
            .map(|d| d.join("nats-server"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/tmp/e2e-nats/venv/bin/nats-server");
        p.is_file().then_some(p)
    })
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--publisher") {
        publisher(&args[i + 1..]);
        return;
    }
    let Some(bin) = nats_server() else {
        println!(
            "fleet: no nats-server (set HOOKTRACK_NATS_SERVER, or run the e2e fleet test once)"
        );
        return;
    };
    let knobs: Vec<u64> = std::env::var("HOOKTRACK_FLEET_BENCH")
        .unwrap_or_default()
        .split(',')
        .filter_map(|k| k.trim().parse().ok())
        .collect();
    let knob = |i: usize, d: u64| knobs.get(i).copied().unwrap_or(d);
    let (p, s, r, t) = (knob(0, 100), knob(1, 20), knob(2, 10), knob(3, 20));
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(24222);
    let data = tempfile::tempdir().expect("tempdir");
    let mut server = Command::new(&bin)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nats-server");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("nats://127.0.0.1:{port}");
    let nats = NatsServer {
        url: url.clone(),
        ..NatsServer::default()
    };
    // The bucket exists and the viewer has read it before any host publishes: every
    // update is one the viewer reads or counts as skipped, none was put before its watch.
    let setup = Publisher::start(PublishConfig::new(nats.clone(), "bench-setup".into()))
        .expect("the setup publisher");
    setup.publish("claude-code", "setup", br#"{"session":"setup"}"#);
    let made = setup.finish(Duration::from_secs(60));
    if made.published != 1 {
        println!("fleet: the bucket could not be made ({made:?})");
        let _ = server.kill();
        let _ = server.wait();
        return;
    }
    let viewer = Viewer::start(ViewConfig { server: nats }).expect("viewer");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !matches!(viewer.recv(Duration::from_millis(100)), Ok(Seen::Loaded)) {
        if Instant::now() > deadline {
            println!("fleet: the viewer never read the bucket");
            let _ = server.kill();
            let _ = server.wait();
            return;
        }
    }
    let before = usage("self");
    let exe = std::env::current_exe().expect("this benchmark");
    let started = Instant::now();
    let children: Vec<_> = (0..p)
        .map(|i| {
            Command::new(&exe)
                .args(["--publisher", &url, &format!("h{i}")])
                .args([s, r, t].map(|v| v.to_string()))
                .stdout(Stdio::piped())
                .spawn()
                .expect("a publisher")
        })
        .collect();
    let mut lags = Vec::new();
    let sent_total = p * s * r * t;
    let quiet_for = Duration::from_secs(5);
    let mut last_seen = Instant::now();
    // Per session, the last `seq` read: a gap is updates the viewer did not read.
    let mut last_seq: HashMap<String, i64> = HashMap::new();
    let (mut gaps, mut skipped, mut reloads) = (0i64, 0u64, 0u64);
    while started.elapsed() < Duration::from_secs(t) || last_seen.elapsed() < quiet_for {
        if started.elapsed() > Duration::from_secs(t * 4 + 60) {
            break;
        }
        match viewer.recv(Duration::from_millis(100)) {
            Ok(Seen::State { key, record }) => {
                if let (Some(sent), Some(seq)) =
                    (record["sent_ms"].as_i64(), record["seq"].as_i64())
                {
                    lags.push(now_ms() - sent);
                    let before = last_seq.insert(key, seq).unwrap_or(-1);
                    gaps += (seq - before - 1).max(0);
                    last_seen = Instant::now();
                }
            }
            Ok(Seen::Skipped { count }) => skipped += count,
            Ok(Seen::Loaded) => reloads += 1,
            _ => {}
        }
    }
    let per_session = i64::try_from(r * t).unwrap_or(i64::MAX);
    let never: i64 = last_seq.values().map(|l| per_session - 1 - l).sum::<i64>()
        + (i64::try_from(p * s).unwrap_or(0) - last_seq.len() as i64) * per_session;
    let viewing = started.elapsed().as_secs_f64();
    let (mut published, mut dropped, mut cpus, mut hwms) = (0u64, 0u64, Vec::new(), Vec::new());
    for child in children {
        let Ok(out) = child.wait_with_output() else {
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = text.split_whitespace().collect();
        if let [a, b, c, d] = f[..] {
            published += a.parse::<u64>().unwrap_or(0);
            dropped += b.parse::<u64>().unwrap_or(0);
            cpus.push(c.parse::<f64>().unwrap_or(0.0));
            hwms.push(d.parse::<u64>().unwrap_or(0));
        }
    }
    let server_usage = usage(&server.id().to_string());
    let after = usage("self");
    let _ = server.kill();
    let _ = server.wait();
    lags.sort_unstable();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "fleet: {p} publishers x {s} sessions x {r} updates/s for {t} s ({} updates sent)",
        sent_total
    );
    println!(
        "  viewer lag ms: p50 {} p99 {} max {} ({} updates seen, {:.0}/s over {viewing:.1} s)",
        percentile(&lags, 0.5),
        percentile(&lags, 0.99),
        lags.last().copied().unwrap_or(0),
        lags.len(),
        lags.len() as f64 / viewing
    );
    println!(
        "  published {published}, dropped {dropped} ({:.0}/s sent)",
        published as f64 / t as f64
    );
    println!(
        "  not read: {gaps} by the sessions' own sequence gaps, {never} after the last read; the viewer counted {skipped} skipped; {reloads} reload(s) after the first"
    );
    println!(
        "  publisher CPU s: mean {:.2} max {:.2}; peak RSS KiB: mean {:.0} max {}",
        mean(&cpus),
        cpus.iter().cloned().fold(0.0, f64::max),
        mean(&hwms.iter().map(|h| *h as f64).collect::<Vec<_>>()),
        hwms.iter().max().copied().unwrap_or(0)
    );
    println!(
        "  viewer process CPU s {:.2}, peak RSS KiB {}; nats-server CPU s {:.2}, peak RSS KiB {}",
        after.0 - before.0,
        after.1,
        server_usage.0,
        server_usage.1
    );
}
