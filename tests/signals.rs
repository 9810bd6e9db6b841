//! The second signals where the hooks are silent: a transcript followed live and in a
//! replay, the agent process ending, and the terminal merge by capability.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Command;

use hooktrack::merge::{MergeNote, Source, TerminalFacts, TerminalPhase, merge};
use hooktrack::transcripts::TranscriptLookup;
use hooktrack::{Agent, ChannelState, Format, Phase, Pipeline, Presence, ProviderChoice};
use hooktrack::{Session, SessionConfig, SessionNotice, StorePaths, Timestamp, TurnResult};

use crate::support::{corpus_dir, replay_file_with};

fn t(s: i64) -> Timestamp {
    Timestamp::from_millis(1_796_130_000_000 + s * 1000)
}

/// A Claude Code capture line (`recv_ts` at second `s`) naming `transcript`.
fn claude(s: i64, event: &str, transcript: &Path, fields: &str) -> String {
    format!(
        r#"{{"recv_ts":"{}","cli":"claude-code","event":"{event}","payload":{{"session_id":"s1","transcript_path":"{}","cwd":"/p","prompt_id":"p1","hook_event_name":"{event}"{fields}}}}}"#,
        t(s),
        transcript.display()
    )
}

fn append(path: &Path, lines: &[String]) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).expect("mkdir");
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    for l in lines {
        writeln!(f, "{l}").expect("append");
    }
}

fn open_session(dir: &Path) -> (Session, StorePaths) {
    let paths = hooktrack::locate_store(dir).expect("store paths");
    (
        Session::open(
            paths.clone(),
            SessionConfig {
                keep_ledger: true,
                ..SessionConfig::default()
            },
        ),
        paths,
    )
}

#[test]
fn escape_during_a_claude_tool_ends_the_turn_interrupted_from_the_transcript_live() {
    let dir = tempfile::tempdir().expect("tempdir");
    let transcript = dir.path().join("s1.jsonl");
    let (mut session, paths) = open_session(dir.path());
    append(&transcript, &[r#"{"type":"user","promptId":"p1","timestamp":"2026-12-01T00:00:00Z","message":{"content":"go"}}"#.to_owned()]);
    append(
        &paths.events,
        &[
            claude(0, "SessionStart", &transcript, r#","source":"startup""#),
            claude(1, "UserPromptSubmit", &transcript, r#","prompt":"go""#),
            claude(
                2,
                "PreToolUse",
                &transcript,
                r#","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{}"#,
            ),
        ],
    );
    let running = session.poll(t(3)).expect("rows arrived");
    assert_eq!(running.posture().turn.phase, Phase::Active);
    assert!(
        running
            .notices
            .iter()
            .any(|n| matches!(n, SessionNotice::TranscriptFollowed { .. }))
    );
    // The user presses Escape: Claude writes two entries and fires no hook.
    append(
        &transcript,
        &[
            format!(
                r#"{{"type":"user","promptId":"p1","timestamp":"{}","toolUseResult":"User rejected tool use","message":{{"content":[{{"type":"tool_result","is_error":true,"tool_use_id":"toolu_1"}}]}}}}"#,
                t(4)
            ),
            format!(
                r#"{{"type":"user","promptId":"p1","timestamp":"{}","interruptedMessageId":"m1","message":{{"content":[{{"type":"text","text":"[Request interrupted by user for tool use]"}}]}}}}"#,
                t(4)
            ),
        ],
    );
    let ended = session.poll(t(5)).expect("the transcript settled the turn");
    assert_eq!(ended.posture().turn.phase, Phase::Ready);
    assert_eq!(ended.posture().last_turn.result, TurnResult::Interrupted);
    assert_eq!(ended.current().closed.len(), 1);
    assert_eq!(ended.current().closed[0].ended_by, Some(Source::Transcript));
    let cause = session.provenance().last_result.clone().expect("a cause");
    assert_eq!(
        (cause.source, cause.event.as_str(), cause.line),
        (Source::Transcript, "interrupted_by_user_during_tool", 3)
    );
}

#[test]
fn a_transcript_marker_of_an_older_turn_settles_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let transcript = dir.path().join("s1.jsonl");
    // An interrupt written at second 1, before the turn that is open now started (second 5).
    append(
        &transcript,
        &[format!(
            r#"{{"type":"user","promptId":"p1","timestamp":"{}","message":{{"content":"[Request interrupted by user]"}}}}"#,
            t(1)
        )],
    );
    let (mut session, paths) = open_session(dir.path());
    append(
        &paths.events,
        &[
            claude(0, "SessionStart", &transcript, r#","source":"resume""#),
            claude(5, "UserPromptSubmit", &transcript, r#","prompt":"go""#),
        ],
    );
    let update = session.poll(t(6)).expect("rows arrived");
    assert_eq!(update.posture().turn.phase, Phase::Active);
    assert_eq!(update.posture().last_turn.result, TurnResult::None);
    assert_eq!(
        session
            .diagnostics()
            .count(hooktrack::Diag::TranscriptMarkerStale),
        1
    );
}

#[test]
fn the_agent_process_ending_ends_the_open_turn_as_a_terminal_gap_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let transcript = dir.path().join("none.jsonl");
    let (mut session, paths) = open_session(dir.path());
    let mut child = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    session.watch_process(child.id());
    append(
        &paths.events,
        &[
            claude(0, "SessionStart", &transcript, r#","source":"startup""#),
            claude(1, "UserPromptSubmit", &transcript, r#","prompt":"go""#),
        ],
    );
    let running = session.poll(t(2)).expect("rows arrived");
    assert_eq!(running.posture().turn.phase, Phase::Active);
    // kill -9: no hook fires.
    child.kill().expect("kill");
    child.wait().expect("reap");
    let ended = session.poll(t(3)).expect("the process ended");
    assert_eq!(ended.posture().presence, Presence::Absent);
    assert_eq!(ended.posture().last_turn.result, TurnResult::TerminalGap);
    assert_eq!(ended.current().closed.len(), 1);
    assert_eq!(ended.current().closed[0].ended_by, Some(Source::Process));
    assert!(
        ended
            .notices
            .iter()
            .any(|n| matches!(n, SessionNotice::ProcessEnded { pid, .. } if *pid == child.id()))
    );
    assert_eq!(
        session
            .diagnostics()
            .count(hooktrack::Diag::TerminalGapProcessEnded),
        1
    );
    assert!(session.poll(t(4)).is_none(), "the end is reported once");
}

fn claude_turn_open() -> hooktrack::Posture {
    let mut p = Pipeline::new(ProviderChoice::Auto);
    let tp = Path::new("/t/s1.jsonl");
    p.feed_line(
        1,
        claude(0, "SessionStart", tp, r#","source":"startup""#).as_bytes(),
    );
    p.feed_line(
        2,
        claude(1, "UserPromptSubmit", tp, r#","prompt":"go""#).as_bytes(),
    );
    p.posture()
}

#[test]
fn the_interrupt_notice_settles_the_open_turn_only_for_a_provider_without_an_interrupt_hook() {
    let notice = TerminalFacts {
        phase: TerminalPhase::Ready,
        interrupt_notice: true,
        ..TerminalFacts::default()
    };
    let open = claude_turn_open();
    assert_eq!(open.channel.state, ChannelState::Active);
    let (hooked, unhooked): (Vec<Agent>, Vec<Agent>) = Agent::ALL
        .into_iter()
        .partition(|a| a.capabilities().interrupt_hook);
    assert!(!hooked.is_empty() && !unhooked.is_empty());
    // Without an interrupt hook (Claude Code, Gemini CLI, ...) the screen says it.
    for agent in unhooked {
        let m = merge(&open, &notice, Some(agent));
        assert_eq!(
            (m.last_result, m.last_result_from),
            (TurnResult::Interrupted, Source::Terminal),
            "{agent}"
        );
        assert_eq!((m.phase, m.phase_from), (Phase::Ready, Source::Terminal));
        assert_eq!(m.notes, [MergeNote::InterruptSettledByTerminal]);
    }
    // With an interrupt hook (Codex, Kimi Code), or no agent known, the notice alone
    // settles nothing.
    for agent in hooked.into_iter().map(Some).chain([None]) {
        let m = merge(&open, &notice, agent);
        assert_eq!(
            (m.last_result, m.phase),
            (TurnResult::None, Phase::Active),
            "{agent:?}"
        );
        assert_eq!(m.notes, [MergeNote::InterruptNoticeIgnored]);
    }
}

#[test]
fn replay_without_transcripts_leaves_the_claude_blind_spots_open() {
    let path = corpus_dir()
        .join("claude-code/claude-code-2.1.197-interactive-escape-reject-transcript.ndjson");
    let dir = path.with_extension("transcripts");
    let (with, _) = replay_file_with(&path, Format::Json, TranscriptLookup::InDir(&dir), false);
    let (without, _) = replay_file_with(&path, Format::Json, TranscriptLookup::Off, false);
    let results = |r: &hooktrack::Report| r.turns.iter().map(|t| t.result).collect::<Vec<_>>();
    use TurnResult::{Interrupted, Success, TerminalGap};
    assert_eq!(
        results(&with),
        [
            Success,
            Interrupted,
            Success,
            Interrupted,
            Interrupted,
            Success
        ]
    );
    // The hooks alone: each Escape / "No" is only seen as superseded by the next prompt.
    assert_eq!(
        results(&without),
        [
            Success,
            TerminalGap,
            Success,
            TerminalGap,
            TerminalGap,
            Success
        ]
    );
    // The paths the payloads name do not exist here: as named, nothing is read.
    let (as_named, _) = replay_file_with(&path, Format::Json, TranscriptLookup::AsNamed, false);
    assert_eq!(results(&as_named), results(&without));
    let ended_by: Vec<_> = with.turns.iter().map(|t| t.ended_by).collect();
    assert_eq!(ended_by[1], Some(Source::Transcript));
    assert_eq!(ended_by[0], Some(Source::Hook));
}

#[test]
fn replay_explain_names_the_source_event_and_line_of_each_final_fact() {
    let path = corpus_dir()
        .join("gemini-cli/gemini-cli-0.61.0-interactive-escape-reject-transcript.ndjson");
    let dir = path.with_extension("transcripts");
    let (_, text) = replay_file_with(&path, Format::Text, TranscriptLookup::InDir(&dir), true);
    let explain = text
        .split("provenance of the final posture:")
        .nth(1)
        .expect("an explain section");
    assert!(
        explain.contains("presence     absent         ← hook SessionEnd (line 20,"),
        "{explain}"
    );
    assert!(
        explain.contains(
            "blocked      false          ← transcript request_cancelled (transcript line 23,"
        ),
        "{explain}"
    );
    assert!(
        explain.contains("last_result  success        ← hook AfterAgent (line 19,"),
        "{explain}"
    );
    // The timeline marks the transcript's lines.
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("t30 ")),
        "{text}"
    );
    let _ = fs::metadata(&dir).expect("transcripts dir");
}

/// A hub whose periodic re-check never comes during a test: only the watcher and the
/// pidfd waiter wake it.
fn wake_only_hub() -> (
    hooktrack::Hub,
    std::sync::mpsc::Receiver<(hooktrack::SessionId, hooktrack::Update)>,
) {
    hooktrack::Hub::start(hooktrack::HubConfig {
        recheck: std::time::Duration::from_secs(3600),
    })
    .expect("hub")
}

/// Waits (bounded) for an update of `id` satisfying `done`.
fn until(
    rx: &std::sync::mpsc::Receiver<(hooktrack::SessionId, hooktrack::Update)>,
    id: hooktrack::SessionId,
    done: impl Fn(&hooktrack::Update) -> bool,
) -> hooktrack::Update {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((got, u)) if got == id && done(&u) => return u,
            Ok(_) => {}
            Err(e) => panic!("no such update for {id}: {e}"),
        }
    }
}

#[test]
fn a_hub_sees_a_transcript_marker_outside_the_store_without_a_hook_row_or_a_recheck() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let projects = dir.path().join("projects");
    fs::create_dir_all(&projects).expect("mkdir");
    let transcript = projects.join("s1.jsonl");
    fs::write(&transcript, "").expect("transcript");
    append(
        &StorePaths::for_provider(&store, "claude").events,
        &[
            claude(0, "SessionStart", &transcript, r#","source":"startup""#),
            claude(1, "UserPromptSubmit", &transcript, r#","prompt":"go""#),
        ],
    );
    let (mut hub, rx) = wake_only_hub();
    let id = hub.add(Session::open(
        hooktrack::locate_store(&store).expect("locate"),
        SessionConfig::default(),
    ));
    until(&rx, id, |u| u.posture().turn.phase == Phase::Active);
    // Escape during the answer: Claude writes the marker and fires no hook.
    append(
        &transcript,
        &[format!(
            r#"{{"type":"user","promptId":"p1","timestamp":"{}","message":{{"content":[{{"type":"text","text":"[Request interrupted by user]"}}]}}}}"#,
            t(2)
        )],
    );
    let settled = until(&rx, id, |u| !u.current().closed.is_empty());
    assert_eq!(settled.current().closed[0].result, TurnResult::Interrupted);
    assert_eq!(
        settled.current().closed[0].ended_by,
        Some(Source::Transcript)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_hub_sees_the_watched_process_end_from_its_pidfd_without_a_recheck() {
    let dir = tempfile::tempdir().expect("tempdir");
    let transcript = dir.path().join("s1.jsonl");
    let (_, paths) = open_session(dir.path());
    append(
        &paths.events,
        &[
            claude(0, "SessionStart", &transcript, r#","source":"startup""#),
            claude(1, "UserPromptSubmit", &transcript, r#","prompt":"go""#),
        ],
    );
    let mut child = Command::new("sleep").arg("60").spawn().expect("sleep");
    let (mut hub, rx) = wake_only_hub();
    let id = hub.add(Session::open(paths, SessionConfig::default()));
    hub.watch_process(id, child.id());
    until(&rx, id, |u| u.posture().presence == Presence::Present);
    child.kill().expect("kill");
    let gone = until(&rx, id, |u| u.posture().presence == Presence::Absent);
    assert_eq!(gone.current().closed[0].result, TurnResult::TerminalGap);
    assert!(gone.notices.iter().any(|n| matches!(
        n,
        SessionNotice::ProcessEnded {
            mechanism: "pidfd",
            ..
        }
    )));
    let _ = child.wait();
}

/// The recorded Gemini campaign with its chat file, the payloads' path pointed at `to`.
fn gemini_campaign_at(to: &Path) -> (Vec<String>, String) {
    let base = corpus_dir().join("gemini-cli");
    let campaign = "gemini-cli-0.61.0-interactive-escape-reject-transcript";
    let named = "/home/dev/.gemini/tmp/work/chats/session-2026-12-01T13-18-c36c861a.jsonl";
    let rows = fs::read_to_string(base.join(format!("{campaign}.ndjson"))).expect("campaign");
    assert!(rows.contains(named), "the campaign names its chat file");
    let rows = rows.replace(named, &to.display().to_string());
    let chat = base
        .join(format!("{campaign}.transcripts"))
        .join("session-2026-12-01T13-18-c36c861a.jsonl");
    (
        rows.lines().map(str::to_owned).collect(),
        fs::read_to_string(chat).expect("chat file"),
    )
}

#[test]
fn gemini_escape_during_the_answer_is_interrupted_live_as_in_the_replay_when_one_poll_reads_the_late_after_agent()
 {
    let path = corpus_dir()
        .join("gemini-cli/gemini-cli-0.61.0-interactive-escape-reject-transcript.ndjson");
    let (replayed, _) = replay_file_with(
        &path,
        Format::Json,
        TranscriptLookup::InDir(&path.with_extension("transcripts")),
        false,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let chat = dir.path().join("chat.jsonl");
    let (rows, transcript) = gemini_campaign_at(&chat);
    let (mut session, paths) = open_session(&dir.path().join("store"));
    // The first poll learns the transcript from SessionStart; the second reads the rest
    // of the session, rows and chat file, at once: the transcript's lines must go between
    // the rows by time, as a replay places them, not after them.
    append(&paths.events, &rows[..1]);
    let mut closed = Vec::new();
    closed.extend(
        session
            .poll(t(0))
            .map(|u| u.current().closed.clone())
            .unwrap_or_default(),
    );
    fs::write(&chat, transcript).expect("chat file");
    append(&paths.events, &rows[1..]);
    for s in 1..50 {
        let Some(u) = session.poll(t(s)) else { break };
        closed.extend(u.current().closed.clone());
    }
    let live: Vec<_> = session.ledger().iter().map(|t| t.result).collect();
    let replay: Vec<_> = replayed.turns.iter().map(|t| t.result).collect();
    use TurnResult::{Interrupted, Success};
    assert_eq!(
        replay,
        [Success, Interrupted, Interrupted, Interrupted, Success]
    );
    assert_eq!(live, replay);
}
