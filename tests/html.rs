//! `hooktrack replay --format html`: the page's marks are counted against the JSON
//! report and the ndjson stream. A store of two sessions draws a group of lanes per
//! session, each with the turns `--format json` gives that session. The same pages loaded
//! in a real headless Chromium are an end-to-end test (`tests/e2e/browser.rs`), which
//! shares these helpers.

use std::path::{Path, PathBuf};
use std::process::Command;

use hooktrack_core::time::Timestamp;

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

/// The two sessions of [`two_session_store`]: Claude Code 2.1.332's Escape during a
/// permission dialog (reported only in its transcript) in pane `%1`, and its background
/// Bash in a second pane. The first id and the second pane look like markup.
const SESSION_A: &str = "<b>A</b>-0fbbdf2f-a19a-4852-bf6c-1614a1d0e421";
const SESSION_B: &str = "bbbbbbbb-2222-4bbb-8bbb-000000000002";
const PANE_A: &str = "%1";
const PANE_B: &str = "%2\"><svg onload=alert(4)>";

/// The rows of `campaign`, re-stamped with `session_id` and `pane`, their times moved by
/// `shift_ms`.
fn restamped(
    campaign: &str,
    session_id: &str,
    pane: &str,
    shift_ms: i64,
) -> Vec<(i64, serde_json::Value)> {
    let text = std::fs::read_to_string(corpus_dir().join(campaign)).expect("a corpus file");
    text.lines()
        .map(|line| {
            let mut row: serde_json::Value = serde_json::from_str(line).expect("a corpus row");
            let at = row["received_at"]
                .as_str()
                .and_then(Timestamp::parse_rfc3339)
                .expect("a timed row")
                .as_millis()
                + shift_ms;
            row["received_at"] = Timestamp::from_millis(at).to_string().into();
            row["payload"]["session_id"] = session_id.into();
            row["tmux_pane"] = pane.into();
            (at, row)
        })
        .collect()
}

/// One store of two Claude Code sessions writing at the same time: two recorded
/// campaigns' rows, re-stamped with their own session id and pane, the second moved to
/// start 3 s after the first, interleaved by time and numbered again. Returns the store
/// and the directory of the first session's transcript (the second's stays unread: its
/// times were not moved with its rows).
pub(crate) fn two_session_store(dir: &Path) -> (PathBuf, PathBuf) {
    const ESCAPE: &str = "claude-code/claude-code-2.1.332-reject-escape-transcript";
    const BASH: &str = "claude-code/claude-code-2.1.332-background-bash";
    let first = restamped(&format!("{ESCAPE}.ndjson"), SESSION_A, PANE_A, 0);
    let a0 = first.first().expect("rows").0;
    let b0 = restamped(&format!("{BASH}.ndjson"), SESSION_B, PANE_B, 0)
        .first()
        .expect("rows")
        .0;
    let second = restamped(
        &format!("{BASH}.ndjson"),
        SESSION_B,
        PANE_B,
        a0 + 3_000 - b0,
    );
    let mut rows: Vec<(i64, serde_json::Value)> = first.into_iter().chain(second).collect();
    rows.sort_by_key(|&(at, _)| at);
    let mut store = String::new();
    for (i, (_, mut row)) in rows.into_iter().enumerate() {
        row["sequence"] = (i as u64 + 1).into();
        store.push_str(&row.to_string());
        store.push('\n');
    }
    let path = dir.join("events.ndjson");
    std::fs::write(&path, store).expect("write the store");
    let transcripts = dir.join("transcripts");
    std::fs::create_dir_all(&transcripts).expect("the transcript directory");
    let source = corpus_dir().join(format!("{ESCAPE}.transcripts"));
    for entry in std::fs::read_dir(&source).expect("the campaign's transcripts") {
        let entry = entry.expect("a transcript");
        std::fs::copy(entry.path(), transcripts.join(entry.file_name())).expect("copy");
    }
    (path, transcripts)
}

/// Replays the two-session store by session (the default), with its transcripts.
pub(crate) fn replay_store(store: &Path, transcripts: &Path, format: &str) -> Vec<u8> {
    let out = hooktrack()
        .args(["replay", "--format", format, "--transcripts"])
        .arg(transcripts)
        .arg(store)
        .output()
        .expect("run hooktrack replay");
    assert!(
        out.status.success(),
        "replay --format {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The page's session groups, in order: each `<g class="session">`'s `data-session` (as
/// written, escaped) and its markup.
fn session_groups(page: &str) -> Vec<(&str, &str)> {
    const OPEN: &str = "<g class=\"session\" data-session=\"";
    let mut groups = Vec::new();
    let mut rest = page;
    while let Some(at) = rest.find(OPEN) {
        let body = &rest[at + OPEN.len()..];
        let id_end = body.find('"').expect("the attribute ends");
        let end = body.find("</g>").expect("the group ends");
        groups.push((&body[..id_end], &body[id_end..end]));
        rest = &body[end..];
    }
    groups
}

/// The first line of every turn bar's tooltip: `turn #ID · SCOPE · RESULT`, sorted.
fn turn_titles(markup: &str) -> Vec<String> {
    let mut titles: Vec<String> = markup
        .match_indices("data-kind=\"turn\"")
        .map(|(at, _)| {
            let title = &markup[at..][markup[at..].find("<title>").expect("a tooltip") + 7..];
            title[..title.find('\n').expect("a tooltip of lines")].to_owned()
        })
        .collect();
    titles.sort();
    titles
}

#[test]
fn a_store_of_two_sessions_draws_a_group_of_lanes_per_session_with_its_own_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, transcripts) = two_session_store(dir.path());
    let json: serde_json::Value =
        serde_json::from_slice(&replay_store(&store, &transcripts, "json")).expect("JSON");
    let sessions = json["sessions"].as_array().expect("one ledger per session");
    let ids: Vec<&str> = sessions
        .iter()
        .map(|s| s["session_id"].as_str().expect("a session id"))
        .collect();
    assert_eq!(ids, [SESSION_A, SESSION_B]);
    // The Escape that only the first session's transcript reports stays that session's,
    // however the other one writes in between.
    let results = |s: &serde_json::Value| -> Vec<String> {
        s["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| t["result"].as_str().expect("a result").to_owned())
            .collect()
    };
    assert!(results(&sessions[0]).contains(&"interrupted".to_owned()));
    assert!(!results(&sessions[1]).is_empty());

    // Notes per session, from the ndjson stream (a line of session N > 0 says so).
    let stream = String::from_utf8(replay_store(&store, &transcripts, "ndjson")).expect("UTF-8");
    let mut notes = [0_usize; 2];
    for line in stream.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("an ndjson line");
        let session = v
            .get("session")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        notes[session as usize] += v["notes"].as_array().map_or(0, Vec::len);
    }

    let page = String::from_utf8(replay_store(&store, &transcripts, "html")).expect("UTF-8");
    let groups = session_groups(&page);
    let shown: Vec<&str> = groups.iter().map(|&(id, _)| id).collect();
    assert_eq!(
        shown,
        [
            "&lt;b&gt;A&lt;/b&gt;-0fbbdf2f-a19a-4852-bf6c-1614a1d0e421",
            SESSION_B
        ]
    );
    let mut turns = 0;
    for (((_, group), session), notes) in groups.iter().zip(sessions).zip(notes) {
        let want: Vec<String> = {
            let mut want: Vec<String> = session["turns"]
                .as_array()
                .expect("turns")
                .iter()
                .map(|t| {
                    format!(
                        "turn #{} · {} · {}",
                        t["id"],
                        t["scope"].as_str().expect("a scope"),
                        t["result"].as_str().expect("a result")
                    )
                })
                .collect();
            want.sort();
            want
        };
        assert_eq!(
            turn_titles(group),
            want,
            "the turns of {}",
            session["session_id"]
        );
        turns += want.len();
        let tools: u64 = session["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| t["tool_calls"].as_u64().expect("tool_calls"))
            .sum();
        assert_eq!(count_kind(group, "tool") as u64, tools);
        assert_eq!(count_kind(group, "note"), notes);
    }
    assert_eq!(
        count_kind(&page, "turn"),
        turns,
        "every turn is in its group"
    );
    // The first session's permission dialogs are shaded in its group alone.
    assert!(count_kind(groups[0].1, "blocked") > 0);
    assert_eq!(
        count_kind(&page, "blocked"),
        count_kind(groups[0].1, "blocked")
    );

    // Each group is named by agent, pane and shortened id; the whole id in its tooltip.
    assert!(page.contains(
        "<tspan>claude-code · %1</tspan><tspan class=\"session-id\" x=\"8\" dy=\"15\">session &lt;b&gt;A&lt;/b&gt;…</tspan><title>session &lt;b&gt;A&lt;/b&gt;-0fbbdf2f-a19a-4852-bf6c-1614a1d0e421\n"
    ));
    assert!(page.contains(
        "<tspan class=\"session-id\" x=\"8\" dy=\"15\">session bbbbbbbb…</tspan><title>session bbbbbbbb-2222-4bbb-8bbb-000000000002\n"
    ));
    assert!(page.contains("tmux pane %2&quot;&gt;&lt;svg onload=alert(4)&gt;\n"));
    for needle in ["<b>A</b>", "<svg onload", "alert(4)>"] {
        assert!(!page.contains(needle), "{needle:?} in the page");
    }
    assert_eq!(
        page.into_bytes(),
        replay_store(&store, &transcripts, "html"),
        "same input, same bytes"
    );
}

#[test]
fn a_store_of_one_session_draws_the_page_it_draws_as_one_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut single = 0;
    for path in all_campaigns(dir.path()) {
        let by_session = |format: &str| {
            let out = hooktrack()
                .args(["replay", "--format", format])
                .arg(&path)
                .output()
                .expect("run hooktrack replay");
            assert!(out.status.success(), "{}", path.display());
            out.stdout
        };
        let json: serde_json::Value =
            serde_json::from_slice(&by_session("json")).expect("the JSON report");
        let page = by_session("html");
        if json.get("sessions").is_some() {
            let page = String::from_utf8(page).expect("UTF-8");
            assert_eq!(
                session_groups(&page).len(),
                json["sessions"].as_array().map_or(0, Vec::len),
                "a group per session in {}",
                path.display()
            );
            let turns: usize = json["sessions"]
                .as_array()
                .expect("sessions")
                .iter()
                .map(|s| s["turns"].as_array().map_or(0, Vec::len))
                .sum();
            assert_eq!(count_kind(&page, "turn"), turns, "{}", path.display());
            continue;
        }
        single += 1;
        assert!(
            page == replay(&path, "html"),
            "the page of one session is its one-stream page: {}",
            path.display()
        );
    }
    assert!(single >= 4, "{single} campaigns of one session");
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
