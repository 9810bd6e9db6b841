//! Whole-process replay against a whole-process parse-only program, on a file on disk.
//!
//! Each contender is a child process with its standard output on `/dev/null`:
//! `hooktrack replay --format F FILE` (this package's release binary) or this bench binary
//! re-run as `--parse-only-process FILE`, which streams FILE through a 64 KiB buffer, splits
//! it with memchr and parses every line into the borrowed baseline struct (the least any
//! tracker must do, start-up, reading and all). Rounds alternate the contenders; the
//! figures are medians over the rounds of the paired ratio `baseline / contender`, for the
//! wall clock and for the child's CPU time (user + system, from `wait4`).

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Envelope, Result};

/// Warm-up and measured rounds of the whole-process comparison (`HOOKTRACK_BENCH_ROUNDS`
/// sets the measured rounds: 7 for a before / after of record).
const WARMUPS: usize = 1;
const ROUNDS: usize = 5;

fn rounds() -> Result<usize> {
    match std::env::var("HOOKTRACK_BENCH_ROUNDS") {
        Ok(n) => Ok(n
            .parse()
            .map_err(|e| format!("HOOKTRACK_BENCH_ROUNDS {n}: {e}"))?),
        Err(_) => Ok(ROUNDS),
    }
}

/// Child mode: the parse-only program. Prints the line count.
pub fn parse_only_process(path: &Path) -> Result<()> {
    stream_lines(path, |line, count| {
        let row: Envelope<'_> = serde_json::from_slice(line)
            .map_err(|e| format!("baseline parse, line {count}: {e}"))?;
        black_box(&row);
        Ok(())
    })
}

/// Child mode: the floor under any replay, reading and splitting lines without parsing.
pub fn split_only_process(path: &Path) -> Result<()> {
    stream_lines(path, |line, _| {
        black_box(line);
        Ok(())
    })
}

/// Streams FILE's lines (64 KiB reads, memchr split) through `each`; prints the count.
fn stream_lines(path: &Path, mut each: impl FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
    let mut file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut buf = vec![0u8; 64 * 1024];
    // Bytes of `buf` holding a line not yet ended.
    let mut held = 0usize;
    let mut count = 0u64;
    loop {
        if held == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = file
            .read(&mut buf[held..])
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        let filled = held + n;
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &buf[start..filled]) {
            count += 1;
            each(&buf[start..start + i], count)?;
            start += i + 1;
        }
        buf.copy_within(start..filled, 0);
        held = filled - start;
    }
    writeln!(std::io::stdout(), "{count}")?;
    Ok(())
}

struct Contender {
    label: String,
    program: PathBuf,
    args: Vec<String>,
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Contender {
    fn new(label: &str, program: &Path, args: &[&str]) -> Self {
        Self {
            label: label.to_owned(),
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            wall: Vec::new(),
            cpu: Vec::new(),
        }
    }

    /// Runs the program once; returns its wall time and CPU time.
    fn run(&self) -> Result<(Duration, Duration)> {
        let started = Instant::now();
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(File::create("/dev/null")?)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let pid = libc::pid_t::try_from(child.id()).map_err(|e| format!("pid: {e}"))?;
        let mut status = 0;
        // SAFETY: plain out-parameters of the right types; `wait4` fills them.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let wall = started.elapsed();
        if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err(format!("{} {:?} failed (status {status})", self.label, self.args).into());
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Ok((wall, tv(usage.ru_utime) + tv(usage.ru_stime)))
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median over the rounds of `base[i] / other[i]`.
fn paired(base: &[Duration], other: &[Duration]) -> f64 {
    let ratios: Vec<f64> = base
        .iter()
        .zip(other)
        .map(|(b, o)| b.as_secs_f64() / o.as_secs_f64())
        .collect();
    median(&ratios)
}

/// Runs the comparison on `path`. `HOOKTRACK_BENCH_BEFORE=/path/to/hooktrack` adds an
/// older build's json, ndjson and text replays to the same rounds, for before / after;
/// `HOOKTRACK_BENCH_AFTER` runs another build than this package's in their place (a copy
/// kept aside: a target directory shared with other builds may replace its binary
/// between the build and the run).
pub fn run(path: &Path) -> Result<()> {
    let hooktrack = std::env::var_os("HOOKTRACK_BENCH_AFTER").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_hooktrack")),
        PathBuf::from,
    );
    let me = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let file = path.to_str().ok_or("bench data path is not UTF-8")?;
    let mut contenders = vec![
        Contender::new("parse-only", &me, &["--parse-only-process", file]),
        Contender::new("read + split only", &me, &["--split-only-process", file]),
        Contender::new("json", &hooktrack, &["replay", "--format", "json", file]),
        Contender::new(
            "json --threads 1",
            &hooktrack,
            &["replay", "--format", "json", "--threads", "1", file],
        ),
        Contender::new(
            "ndjson",
            &hooktrack,
            &["replay", "--format", "ndjson", file],
        ),
        Contender::new(
            "ndjson --threads 1",
            &hooktrack,
            &["replay", "--format", "ndjson", "--threads", "1", file],
        ),
        Contender::new("text", &hooktrack, &["replay", file]),
        Contender::new(
            "text --threads 1",
            &hooktrack,
            &["replay", "--threads", "1", file],
        ),
    ];
    // The before build runs the same arguments as the contender of the same label.
    let now = contenders.len();
    if let Some(before) = std::env::var_os("HOOKTRACK_BENCH_BEFORE") {
        let before = PathBuf::from(before);
        let same: Vec<Contender> = contenders[2..now]
            .iter()
            .map(|c| {
                let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
                Contender::new(&format!("before: {}", c.label), &before, &args)
            })
            .collect();
        contenders.extend(same);
    }
    let rounds = rounds()?;
    println!(
        "\n== whole process on {} ({WARMUPS} warm-up + {rounds} rounds, stdout to /dev/null)",
        path.display()
    );
    for round in 0..WARMUPS + rounds {
        for c in &mut contenders {
            let (wall, cpu) = c.run()?;
            if round >= WARMUPS {
                c.wall.push(wall);
                c.cpu.push(cpu);
            }
        }
    }
    println!(
        "  {:<20} {:>10} {:>10} {:>12} {:>11}",
        "", "wall ms", "cpu ms", "ratio wall", "ratio cpu"
    );
    let base_wall = contenders[0].wall.clone();
    let base_cpu = contenders[0].cpu.clone();
    let ms = |v: &[Duration]| median(&v.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>());
    for c in &contenders {
        println!(
            "  {:<20} {:>10.0} {:>10.0} {:>12.2} {:>11.2}",
            c.label,
            ms(&c.wall),
            ms(&c.cpu),
            paired(&base_wall, &c.wall),
            paired(&base_cpu, &c.cpu)
        );
    }
    println!("  (ratio = parse-only time / contender time, median of the paired ratios per round)");
    if contenders.len() > now {
        println!(
            "  before / after: the before build's time / this build's, paired per round (< 1: this build is slower)"
        );
        println!("  {:<20} {:>12} {:>11}", "", "wall", "cpu");
        for (after, before) in contenders[2..now].iter().zip(&contenders[now..]) {
            println!(
                "  {:<20} {:>12.3} {:>11.3}",
                after.label,
                paired(&before.wall, &after.wall),
                paired(&before.cpu, &after.cpu)
            );
        }
    }
    Ok(())
}
