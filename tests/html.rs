//! `hooktrack replay --format html`: the page's marks are counted against the JSON
//! report and the ndjson stream. The same pages loaded in a real headless Chromium are an
//! end-to-end test (`tests/e2e/browser.rs`), which shares these helpers.

use std::path::{Path, PathBuf};
use std::process::Command;

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
pub(crate) fn replay(path: &Path, format: &str) -> Vec<u8> {
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
pub(crate) struct Counts {
    turn: usize,
    tool: usize,
    blocked: usize,
    compaction: usize,
    note: usize,
    skip: usize,
}

pub(crate) const KINDS: [&str; 6] = ["turn", "tool", "blocked", "compaction", "note", "skip"];

impl Counts {
    pub(crate) fn get(&self, kind: &str) -> usize {
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
pub(crate) fn expected(path: &Path) -> Counts {
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

pub(crate) fn count_kind(page: &str, kind: &str) -> usize {
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

pub(crate) fn all_campaigns(dir: &Path) -> Vec<PathBuf> {
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
