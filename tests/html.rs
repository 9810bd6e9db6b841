//! `hooktrack replay --format html`: the page's marks are counted against the JSON
//! report and the ndjson stream, and the page is loaded in a real headless Chromium (no
//! console error, the script drew what the file holds, a screenshot).
//!
//! Without Chromium the browser half prints `SKIPPED html browser test: <reason>` and
//! passes, unless `HOOKTRACK_E2E_REQUIRE=1`. `HOOKTRACK_CHROMIUM` names another binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{corpus_dir, kimi, lines};

fn hooktrack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hooktrack"))
}

/// The campaigns pictured: a Claude subagent, a permission, a compaction (with
/// permissions and interrupts), skipped lines, a Kimi CLI compaction.
const CAMPAIGNS: [&str; 5] = [
    "claude-code/claude-code-2.1.197-subagent.ndjson",
    "kimi-code/permission-deny.ndjson",
    "claude-code/claude-code-2.1.197-interactive-interrupt-permission-compact.ndjson",
    "kimi-code/garbage-unknown-truncated.ndjson",
    "kimi-cli/kimi-cli-1.52.0-compaction-manual.ndjson",
];

/// The page pictures a log as one stream (a log of several sessions too): what it is
/// checked against is read as one stream as well.
fn replay(path: &Path, format: &str) -> Vec<u8> {
    let out = hooktrack()
        .args(["replay", "--one-stream", "--format", format])
        .arg(path)
        .output()
        .expect("run hooktrack replay");
    assert!(
        out.status.success(),
        "replay --format {format} {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What the page must show, counted from the machine-readable outputs.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Counts {
    turn: usize,
    tool: usize,
    blocked: usize,
    compaction: usize,
    note: usize,
    skip: usize,
}

const KINDS: [&str; 6] = ["turn", "tool", "blocked", "compaction", "note", "skip"];

impl Counts {
    fn get(&self, kind: &str) -> usize {
        match kind {
            "turn" => self.turn,
            "tool" => self.tool,
            "blocked" => self.blocked,
            "compaction" => self.compaction,
            "note" => self.note,
            "skip" => self.skip,
            _ => unreachable!("{kind}"),
        }
    }
}

/// Turns and tool calls from the JSON report; windows (runs of events whose posture is
/// blocked, or compacting), notes and skipped lines from the ndjson stream.
fn expected(path: &Path) -> Counts {
    let report: serde_json::Value =
        serde_json::from_slice(&replay(path, "json")).expect("the JSON report");
    let turns = report["turns"].as_array().expect("turns");
    let mut counts = Counts {
        turn: turns.len(),
        tool: turns
            .iter()
            .map(|t| t["tool_calls"].as_u64().expect("tool_calls") as usize)
            .sum(),
        ..Counts::default()
    };
    let stream = String::from_utf8(replay(path, "ndjson")).expect("UTF-8");
    let (mut blocked, mut compacting) = (false, false);
    for line in stream.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("an ndjson line");
        if v.get("skipped").is_some() {
            counts.skip += 1;
            continue;
        }
        let Some(posture) = v.get("posture") else {
            continue;
        };
        counts.note += v["notes"].as_array().map_or(0, Vec::len);
        let now_blocked = posture["turn"]["phase"] == "blocked";
        let now_compacting = posture["maintenance"]["compacting"] == true;
        counts.blocked += usize::from(now_blocked && !blocked);
        counts.compaction += usize::from(now_compacting && !compacting);
        (blocked, compacting) = (now_blocked, now_compacting);
    }
    counts
}

fn count_kind(page: &str, kind: &str) -> usize {
    page.matches(&format!("data-kind=\"{kind}\"")).count()
}

/// A campaign of bare payload lines: no timestamps anywhere, so the axis is line order.
/// Payload text that looks like markup must come out as text.
fn untimed_campaign(dir: &Path) -> PathBuf {
    let path = dir.join("bare-untimed.ndjson");
    let rows = lines(&[
        kimi("SessionStart", r#""source":"startup""#),
        kimi(
            "UserPromptSubmit",
            r#""prompt":[{"type":"text","text":"</script><img src=x onerror=alert(1)>"}],"is_steer":false"#,
        ),
        kimi("TurnStarted", r#""turn_id":1,"origin_kind":"user""#),
        kimi(
            "PreToolUse",
            r#""tool_call_id":"c1","tool_name":"<b>Bash</b>","tool_input":{"command":"ls"}"#,
        ),
        kimi(
            "PermissionRequest",
            r#""tool_call_id":"c1","turn_id":1,"id":"a1","tool_name":"<b>Bash</b>""#,
        ),
        kimi(
            "PermissionResult",
            r#""tool_call_id":"c1","id":"a1","decision":"approved""#,
        ),
        kimi(
            "PostToolUse",
            r#""tool_call_id":"c1","tool_name":"<b>Bash</b>""#,
        ),
        kimi(
            "SubagentStart",
            r#""agent_name":"x\"><svg onload=alert(3)>""#,
        ),
        kimi(
            "TurnStarted",
            r#""turn_id":1,"origin_kind":"system_trigger","origin_name":"subagent""#,
        ),
        kimi("Stop", r#""stop_hook_active":false"#),
        kimi(
            "SubagentStop",
            r#""agent_name":"x\"><svg onload=alert(3)>""#,
        ),
        "not json <script>alert(2)</script>".to_owned(),
        kimi("Stop", r#""stop_hook_active":false"#),
        kimi("PreCompact", r#""trigger":"manual""#),
        kimi("PostCompact", r#""trigger":"manual""#),
    ]);
    std::fs::write(&path, rows).expect("write the campaign");
    path
}

fn all_campaigns(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = CAMPAIGNS.iter().map(|c| corpus_dir().join(c)).collect();
    all.push(untimed_campaign(dir));
    all
}

#[test]
fn the_page_draws_every_turn_tool_window_note_and_skip_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    for path in all_campaigns(dir.path()) {
        let want = expected(&path);
        let page = String::from_utf8(replay(&path, "html")).expect("UTF-8");
        for kind in KINDS {
            assert_eq!(
                count_kind(&page, kind),
                want.get(kind),
                "{kind} marks in the page of {}",
                path.display()
            );
        }
        assert_eq!(
            page.into_bytes(),
            replay(&path, "html"),
            "same input, same bytes: {}",
            path.display()
        );
    }
}

#[test]
fn the_page_is_self_contained_and_payload_text_stays_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = untimed_campaign(dir.path());
    let page = String::from_utf8(replay(&path, "html")).expect("UTF-8");
    for needle in [
        "<img",
        "<b>",
        "<svg onload",
        "alert(2)</script>",
        "<script src",
        "<link",
    ] {
        assert!(!page.contains(needle), "{needle:?} in the page");
    }
    assert!(page.contains("&lt;b&gt;Bash&lt;/b&gt;"));
    assert!(
        page.contains("default-src 'none'"),
        "a policy forbids loading anything"
    );
    let without_namespaces = page.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_namespaces.contains("http://") && !without_namespaces.contains("https://"));
    assert!(
        page.contains("Axis: line order"),
        "the page says the axis is not time"
    );
    let timed = String::from_utf8(replay(
        &corpus_dir().join("kimi-code/permission-deny.ndjson"),
        "html",
    ))
    .expect("UTF-8");
    assert!(timed.contains("Axis: time (UTC)"));
}

/// Where Chromium is, or why the browser half is skipped.
fn chromium() -> Result<PathBuf, String> {
    let candidate = std::env::var_os("HOOKTRACK_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if candidate.is_file() {
        Ok(candidate)
    } else {
        Err(format!(
            "no Chromium at {} (apt-get install chromium)",
            candidate.display()
        ))
    }
}

/// Runs headless Chromium on `page` with `args`, killed (its whole process group) if it
/// takes longer than a minute. Returns stdout.
fn run_chromium(chromium: &Path, page: &Path, args: &[String]) -> Vec<u8> {
    use std::os::unix::process::CommandExt;
    let profile = tempfile::tempdir().expect("a profile directory");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let pid = child.id();
    // Read the pipes on threads, so a full pipe cannot stall the browser.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut buf);
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut buf);
        buf
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: signals the process group of the browser this test started.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium did not finish within a minute on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    assert!(
        status.success(),
        "chromium failed ({status}) on {}: {}",
        page.display(),
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

/// The value of `name="..."` in the first tag that starts with `tag`.
fn attribute(dom: &str, tag: &str, name: &str) -> Option<String> {
    let start = dom.find(tag)?;
    let end = start + dom[start..].find('>')?;
    let element = &dom[start..end];
    let key = format!(" {name}=\"");
    let at = element.find(&key)? + key.len();
    let len = element[at..].find('"')?;
    Some(element[at..at + len].to_owned())
}

#[test]
fn chromium_loads_every_page_without_errors_and_sees_every_mark() {
    let chromium = match chromium() {
        Ok(path) => path,
        Err(reason) => {
            assert!(
                std::env::var_os("HOOKTRACK_E2E_REQUIRE").is_none_or(|v| v != "1"),
                "HOOKTRACK_E2E_REQUIRE=1 but {reason}"
            );
            println!("SKIPPED html browser test: {reason}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshot directory");
    for path in all_campaigns(dir.path()) {
        let want = expected(&path);
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a file name")
            .to_owned();
        let page = dir.path().join(format!("{stem}.html"));
        std::fs::write(&page, replay(&path, "html")).expect("write the page");

        let dom = String::from_utf8(run_chromium(&chromium, &page, &["--dump-dom".to_owned()]))
            .expect("the DOM is UTF-8");
        let check = "<output id=\"hooktrack-check\"";
        assert_eq!(
            attribute(&dom, check, "data-script").as_deref(),
            Some("ok"),
            "the page's script did not finish on {stem}"
        );
        let errors_at = dom
            .find("<pre id=\"hooktrack-errors\">")
            .expect("the error list");
        let errors = &dom[errors_at
            ..dom[errors_at..]
                .find("</pre>")
                .map_or(dom.len(), |e| errors_at + e)];
        assert_eq!(
            attribute(&dom, check, "data-errors").as_deref(),
            Some("0"),
            "errors in the page of {stem}: {errors}"
        );
        for kind in KINDS {
            let drawn: usize = attribute(&dom, check, &format!("data-{kind}"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {kind} count on {stem}"));
            assert_eq!(
                drawn,
                want.get(kind),
                "{kind} marks the browser found on {stem}"
            );
            assert_eq!(
                count_kind(&dom, kind),
                want.get(kind),
                "{kind} in the DOM of {stem}"
            );
        }
        // The markup-looking payload text stayed text in the live DOM too.
        assert!(
            !dom.contains("<img") && !dom.contains("<b>"),
            "markup from a payload on {stem}"
        );

        let shot = shots.join(format!("{stem}.png"));
        let _ = std::fs::remove_file(&shot);
        run_chromium(
            &chromium,
            &page,
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1400,900".to_owned(),
                "--hide-scrollbars".to_owned(),
            ],
        );
        let png = std::fs::read(&shot).expect("the screenshot was written");
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is a PNG",
            shot.display()
        );
    }
    println!("html screenshots in {}", shots.display());
}

/// Transcript entries hooktrack does not read by design (no marker) are counted in the
/// page's summary, not drawn as red skipped lines: a recorded Claude Code transcript has
/// dozens of them.
#[test]
fn ignored_transcript_entries_are_counted_not_drawn() {
    let log = corpus_dir()
        .join("claude-code/claude-code-2.1.197-interactive-escape-reject-transcript.ndjson");
    let transcripts = log.with_extension("transcripts");
    let run = |format: &str| {
        let out = hooktrack()
            .args([
                "replay",
                "--one-stream",
                "--format",
                format,
                "--transcripts",
            ])
            .arg(&transcripts)
            .arg(&log)
            .output()
            .expect("run hooktrack replay");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let report: serde_json::Value = serde_json::from_str(&run("json")).expect("the JSON report");
    let counters = &report["diagnostics"]["counters"];
    let ignored = counters["transcript_entry_ignored"]
        .as_u64()
        .expect("counter")
        + counters["transcript_not_followed"]
            .as_u64()
            .expect("counter");
    assert!(ignored > 0, "the campaign must have ignored entries");
    let unreadable = counters["transcript_entry_unreadable"]
        .as_u64()
        .expect("counter");
    let page = run("html");
    assert!(
        page.contains(&format!("· {ignored} transcript entries ignored</p>")),
        "the summary counts them"
    );
    let hook_skips = run("ndjson")
        .lines()
        .filter(|l| l.contains("\"skipped\""))
        .count();
    assert_eq!(
        count_kind(&page, "skip") as u64,
        hook_skips as u64 + unreadable,
        "only lines that could not be read are drawn as skipped"
    );
}
