//! Live tracking: the session handle over real files, and the hub over a real watcher.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use hooktrack::StorePaths;
use hooktrack::{ChannelState, Phase, Presence, Timestamp, TurnResult};
use hooktrack::{Hub, HubConfig, SessionId};
use hooktrack::{Session, SessionConfig, SessionNotice, Update};
use hooktrack_live::tail::Notice;

use crate::support::{Wake, corpus_dir, corpus_row, kimi, turn_running};

fn t(s: i64) -> Timestamp {
    Timestamp::from_millis(1_790_000_000_000 + s * 1000)
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

fn start() -> Vec<String> {
    vec![kimi("SessionStart", r#""source":"startup""#)]
}

fn turn_done(n: i64) -> Vec<String> {
    vec![
        kimi(
            "PostToolUse",
            &format!(r#""tool_call_id":"call_{n}","tool_output":"ok""#),
        ),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]
}

fn permission(n: i64) -> String {
    kimi(
        "PermissionRequest",
        &format!(
            r#""tool_call_id":"call_{n}","turn_id":{n},"id":"approval_{n}","agent_id":"main""#
        ),
    )
}

fn session_in(dir: &Path, config: SessionConfig) -> (Session, StorePaths) {
    let paths = StorePaths::for_provider(dir, "kimi");
    (Session::open(paths.clone(), config), paths)
}

#[test]
fn a_session_follows_a_turn_and_reports_only_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    let first = session.poll(t(0)).expect("the first poll always reports");
    assert_eq!(first.channel.state, ChannelState::Unavailable);
    assert_eq!(first.posture().presence, Presence::Unknown);
    assert!(session.poll(t(1)).is_none(), "nothing changed");

    let mut lines = start();
    lines.extend(turn_running(1));
    append(&paths.events, &lines);
    let running = session.poll(t(2)).expect("events arrived");
    assert_eq!(running.channel.state, ChannelState::Active);
    assert_eq!(running.posture().turn.phase, Phase::Active);
    assert_eq!(running.posture().turn.open_tool_calls, 1);
    assert_eq!(running.events, 4);
    assert_eq!(running.last_event_at, Some(t(2)));
    assert!(running.current().closed.is_empty());
    assert!(session.poll(t(3)).is_none());

    append(&paths.events, &turn_done(1));
    let done = session.poll(t(4)).expect("the turn ended");
    assert_eq!(done.posture().turn.phase, Phase::Ready);
    assert_eq!(done.posture().last_turn.result, TurnResult::Success);
    let results: Vec<_> = done.current().closed.iter().map(|r| r.result).collect();
    assert_eq!(results, [TurnResult::Success]);
}

#[test]
fn a_stale_channel_keeps_the_latched_result_and_withdraws_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    let mut lines = start();
    lines.extend(turn_running(1));
    lines.extend(turn_done(1));
    lines.extend(turn_running(2));
    lines.push(permission(2));
    append(&paths.events, &lines);
    let blocked = session.poll(t(0)).expect("update");
    assert_eq!(blocked.posture().turn.phase, Phase::Blocked);

    // The terminal keeps changing while the hooks are quiet.
    session.terminal_changed(t(10));
    assert!(
        session.poll(t(10)).is_none(),
        "10 s of silence is not stale"
    );
    session.terminal_changed(t(31));
    let stale = session.poll(t(31)).expect("stale");
    assert_eq!(stale.channel.state, ChannelState::Stale);
    assert_eq!(stale.posture().turn.phase, Phase::Unknown, "no blocked");
    assert_eq!(stale.posture().last_turn.result, TurnResult::Success);

    append(
        &paths.events,
        &[kimi(
            "PermissionResult",
            r#""tool_call_id":"call_2","turn_id":2,"decision":"approved""#,
        )],
    );
    let back = session.poll(t(32)).expect("active again");
    assert_eq!(back.channel.state, ChannelState::Active);
    assert_eq!(back.posture().turn.phase, Phase::Active);
}

#[test]
fn a_stopped_collector_withdraws_hook_facts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    let mut lines = start();
    lines.extend(turn_running(1));
    lines.push(permission(1));
    append(&paths.events, &lines);
    // A running record names a live process (readers check: a gone pid reads as stopped).
    fs::write(
        &paths.collector,
        format!(
            r#"{{"pid":{},"port":40111,"generation":1,"status":"running","started_at":"2026-10-20T09:00:00Z"}}"#,
            std::process::id()
        ),
    )
    .expect("collector.json");
    let blocked = session.poll(t(0)).expect("update");
    assert_eq!(blocked.posture().turn.phase, Phase::Blocked);

    fs::write(
        &paths.collector,
        r#"{"pid":4242,"port":40111,"generation":1,"status":"stopped","started_at":"2026-10-20T09:00:00Z","stopped_at":"2026-10-20T09:05:00Z"}"#,
    )
    .expect("collector.json");
    let stopped = session.poll(t(1)).expect("stopped");
    assert_eq!(stopped.channel.state, ChannelState::Stopped);
    assert_eq!(stopped.posture().turn.phase, Phase::Unknown);
    assert_eq!(stopped.posture().last_turn.result, TurnResult::None);
    // Cleanup deleting the record does not undo it.
    fs::remove_file(&paths.collector).expect("remove");
    assert!(session.poll(t(2)).is_none());
    assert_eq!(session.channel(t(2)).state, ChannelState::Stopped);
}

#[test]
fn channel_json_install_failure_and_a_bad_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    fs::create_dir_all(&paths.dir).expect("mkdir");
    fs::write(
        &paths.channel,
        r#"{"provider":"kimi","generation":1,"install":{"ok":false,"detail":"timeout 0 out of 1..=600"}}"#,
    )
    .expect("channel.json");
    let u = session.poll(t(0)).expect("update");
    assert_eq!(u.channel.state, ChannelState::Unavailable);
    assert_eq!(u.channel.detail, "install failed: timeout 0 out of 1..=600");

    fs::write(&paths.channel, "{\"generation\": ").expect("half-written channel.json");
    let bad = session.poll(t(1)).expect("a notice");
    assert!(
        bad.notices
            .iter()
            .any(|n| matches!(n, SessionNotice::BadRecord { .. })),
        "{:?}",
        bad.notices
    );
    assert_eq!(
        bad.channel.state,
        ChannelState::Unavailable,
        "last record holds"
    );
}

#[test]
fn an_unreadable_store_is_the_error_state_until_it_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    let mut lines = start();
    lines.extend(turn_running(1));
    append(&paths.events, &lines);
    assert_eq!(
        session.poll(t(0)).expect("update").channel.state,
        ChannelState::Active
    );
    // A directory where the file was: unreadable whatever the privileges.
    fs::remove_file(&paths.events).expect("remove");
    fs::create_dir(&paths.events).expect("directory in its place");
    let err = session.poll(t(1)).expect("error");
    assert_eq!(err.channel.state, ChannelState::Error);
    assert!(err.channel.detail.contains("not a regular file"), "{err:?}");
    assert_eq!(err.posture().turn.phase, Phase::Unknown);
    fs::remove_dir(&paths.events).expect("remove directory");
    append(&paths.events, &turn_done(1));
    let ok = session.poll(t(2)).expect("recovered");
    assert_eq!(ok.channel.state, ChannelState::Active);
    assert_eq!(ok.posture().last_turn.result, TurnResult::Success);
}

#[test]
fn a_restarted_session_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("state dir");
    let config = SessionConfig {
        checkpoint: Some(state.path().join("session.checkpoint")),
        ..SessionConfig::default()
    };
    let (mut before, paths) = session_in(dir.path(), config.clone());
    let mut lines = start();
    lines.extend(turn_running(1));
    lines.extend(turn_done(1));
    lines.extend(turn_running(2));
    lines.extend(turn_done(2));
    lines.extend(turn_running(3));
    // Up to the middle of the second Stop.
    let cut = 9;
    append(&paths.events, &lines[..cut]);
    let half = lines[cut].len() / 2;
    let mut f = OpenOptions::new()
        .append(true)
        .open(&paths.events)
        .expect("open");
    f.write_all(&lines[cut].as_bytes()[..half])
        .expect("half a line");
    let mut closed = before.poll(t(0)).expect("update").current().closed.clone();
    drop(before);

    f.write_all(&lines[cut].as_bytes()[half..]).expect("rest");
    f.write_all(b"\n").expect("newline");
    drop(f);
    append(&paths.events, &lines[cut + 1..]);
    let (mut after, _) = session_in(dir.path(), config);
    let update = after.poll(t(1)).expect("update");
    assert!(
        update
            .notices
            .iter()
            .any(|n| matches!(n, SessionNotice::Tail(Notice::Resumed { .. }))),
        "{:?}",
        update.notices
    );
    closed.extend(update.current().closed.clone());

    // The same file read in one go by a session that never restarted.
    let (mut whole, _) = session_in(dir.path(), SessionConfig::default());
    let reference = whole.poll(t(1)).expect("update");
    assert_eq!(
        closed,
        reference.current().closed,
        "every turn reported exactly once"
    );
    assert_eq!(closed.len(), 2);
    assert_eq!(update.posture(), reference.posture());
    assert_eq!(update.posture().turn.open_tool_calls, 1);
}

#[test]
fn a_cheap_recheck_still_sees_appends_replacements_and_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = SessionConfig {
        channel: hooktrack::ChannelConfig {
            startup_grace_ms: 5_000,
            ..Default::default()
        },
        ..SessionConfig::default()
    };
    let (mut session, paths) = session_in(dir.path(), config);
    append(&paths.events, &[]);
    assert!(session.poll(t(0)).is_some());
    session.prompt_sent(t(0));
    let waiting = session
        .recheck(t(1))
        .expect("the prompt changes the detail");
    assert!(waiting.channel.detail.contains("within the startup grace"));
    assert!(session.recheck(t(2)).is_none());
    // Time alone: the grace runs out.
    let silent = session.recheck(t(6)).expect("startup silence");
    assert!(silent.channel.detail.starts_with("startup silence"));
    // An append: the open file grew.
    append(&paths.events, &start());
    let appended = session.recheck(t(7)).expect("the append");
    assert_eq!(appended.channel.state, ChannelState::Active);
    assert!(session.recheck(t(8)).is_none());
    // A replacement: the directory changed.
    let next = paths.dir.join("events.ndjson.new");
    fs::write(&next, format!("{}\n", turn_running(1).join("\n"))).expect("write");
    fs::rename(&next, &paths.events).expect("rename over");
    let replaced = session.recheck(t(9)).expect("the replacement");
    assert!(
        replaced
            .notices
            .iter()
            .any(|n| matches!(n, SessionNotice::Tail(Notice::Replaced { .. }))),
        "{:?}",
        replaced.notices
    );
    assert_eq!(replaced.posture().turn.phase, Phase::Active);
}

/// A session file a row asks for before the agent has made it (Copilot CLI's session log
/// at its first prompt) is found at the next re-check, not at the next full poll.
#[test]
fn a_session_file_made_after_its_row_is_followed_at_the_next_recheck() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("copilot-home");
    fs::create_dir_all(&home).expect("home");
    let campaign = "copilot-cli/copilot-cli-1.0.102-interactive-first-escape-transcript";
    let paths = StorePaths::for_provider(&dir.path().join("store"), "copilot");
    append(
        &paths.events,
        &[corpus_row(&format!("{campaign}.ndjson"), 1)],
    );
    let mut session = Session::open(
        paths.clone(),
        SessionConfig {
            agent_home: Some(home.clone()),
            ..SessionConfig::default()
        },
    );
    assert!(session.poll(t(0)).is_some());
    assert!(session.transcript_paths().is_empty(), "no log made yet");
    assert!(session.recheck(t(1)).is_none(), "nothing new");
    // The agent makes its log: the very next re-check follows it.
    let id = "57c00bbf-7f6d-4e29-90e7-a6dc5888363d";
    let log = home.join("session-state").join(id);
    fs::create_dir_all(&log).expect("log dir");
    fs::copy(
        corpus_dir().join(format!("{campaign}.transcripts/{id}/events.jsonl")),
        log.join("events.jsonl"),
    )
    .expect("the log");
    let _ = session.recheck(t(2));
    assert_eq!(
        session.transcript_paths(),
        [log.join("events.jsonl").as_path()]
    );
}

// ===== the hub ========================================================================

/// Waits for the next update of `id`, skipping other sessions' updates.
fn next_of(rx: &Receiver<(SessionId, Update)>, id: SessionId) -> Update {
    let deadline = Wake::deadline();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((got, update)) if got == id => return update,
            Ok(_) => {}
            Err(e) => panic!("no update for {id}: {e}"),
        }
    }
}

/// Waits until `id` reports an update satisfying `done`.
fn until(
    rx: &Receiver<(SessionId, Update)>,
    id: SessionId,
    done: impl Fn(&Update) -> bool,
) -> Update {
    loop {
        let u = next_of(rx, id);
        if done(&u) {
            return u;
        }
    }
}

/// A hub whose periodic re-check never comes during a test: only the watcher wakes it.
fn notify_only_hub() -> (Hub, Receiver<(SessionId, Update)>) {
    Hub::start(HubConfig {
        recheck: Duration::from_secs(3600),
    })
    .expect("hub")
}

fn open(root: &Path) -> Session {
    Session::open(
        hooktrack::locate_store(root).expect("locate"),
        SessionConfig::default(),
    )
}

fn events_of(root: &Path) -> PathBuf {
    StorePaths::for_provider(root, "kimi").events
}

#[test]
fn a_hub_follows_sessions_added_and_removed_at_run_time() {
    let base = tempfile::tempdir().expect("tempdir");
    let (a_root, b_root) = (base.path().join("a"), base.path().join("b"));
    append(&events_of(&a_root), &start());
    fs::create_dir_all(&b_root).expect("b root, no store yet");
    let (mut hub, rx) = notify_only_hub();

    let a = hub.add(open(&a_root));
    let first = next_of(&rx, a);
    assert_eq!(first.posture().presence, Presence::Present);
    append(&events_of(&a_root), &turn_running(1));
    // The rows may arrive over several polls: wait for the last one's effect.
    let u = until(&rx, a, |u| u.posture().turn.open_tool_calls == 1);
    assert_eq!(u.posture().turn.phase, Phase::Active);

    // Added while running, before its store exists: the watch follows it into being.
    let b = hub.add(open(&b_root));
    assert_eq!(next_of(&rx, b).channel.detail, "no event yet");
    let mut lines = start();
    lines.extend(turn_running(7));
    append(&events_of(&b_root), &lines);
    until(&rx, b, |u| u.posture().turn.turn_id.is_some());

    // The supervisor's signals reach the session.
    hub.prompt_sent(b, hooktrack::wall_clock());
    hub.terminal_changed(b, hooktrack::wall_clock());

    // Removed: later writes to its store report nothing. Sessions added afterwards are
    // barriers: the hub handles messages in order.
    hub.remove(a);
    let c_root = base.path().join("c");
    append(&events_of(&c_root), &start());
    let c = hub.add(open(&c_root));
    while let Ok((id, _)) = rx.recv_timeout(Wake::PATIENCE) {
        if id == c {
            break;
        }
    }
    append(&events_of(&a_root), &turn_done(1));
    append(&events_of(&c_root), &turn_running(1));
    until(&rx, c, |u| u.posture().turn.phase == Phase::Active);
    let d_root = base.path().join("d");
    let d = hub.add(open(&d_root));
    loop {
        let (id, _) = rx.recv_timeout(Wake::PATIENCE).expect("d's first update");
        assert_ne!(id, a, "a removed session reported");
        if id == d {
            break;
        }
    }
}

#[test]
fn a_hub_rechecks_periodically_without_notifications() {
    let base = tempfile::tempdir().expect("tempdir");
    let (mut hub, rx) = Hub::start(HubConfig {
        recheck: Duration::from_millis(20),
    })
    .expect("hub");
    let config = SessionConfig {
        channel: hooktrack::ChannelConfig {
            startup_grace_ms: 50,
            ..Default::default()
        },
        ..SessionConfig::default()
    };
    let root = base.path().join("s");
    let paths = StorePaths::for_provider(&root, "kimi");
    append(&paths.events, &[]);
    let id = hub.add(Session::open(paths.clone(), config));
    assert_eq!(next_of(&rx, id).channel.detail, "no event yet");
    // Time alone changes the state: only a periodic poll can notice.
    hub.prompt_sent(id, hooktrack::wall_clock());
    until(&rx, id, |u| u.channel.detail.starts_with("startup silence"));

    // A write the watcher cannot see: through a hard link in an unwatched directory.
    let elsewhere = base.path().join("elsewhere");
    fs::create_dir(&elsewhere).expect("mkdir");
    let link = elsewhere.join("events.ndjson");
    fs::hard_link(&paths.events, &link).expect("hard link");
    append(&link, &start());
    let seen = until(&rx, id, |u| u.channel.state == ChannelState::Active);
    assert_eq!(seen.posture().presence, Presence::Present);
}

/// Kimi Code 2.1.0's `/new` (kimi-code-2.1.0-new-session): the new session's `SessionStart`
/// comes before the old one's `SessionEnd`. The live posture follows the new session at
/// once, present and ready, not the old one's absence.
#[test]
fn after_new_the_live_posture_follows_the_new_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut session, paths) = session_in(dir.path(), SessionConfig::default());
    let rows: Vec<String> =
        fs::read_to_string("corpus/kimi-code/kimi-code-2.1.0-new-session.ndjson")
            .expect("recording")
            .lines()
            .map(str::to_owned)
            .collect();
    // Up to and with the old session's SessionEnd (line 6).
    append(&paths.events, &rows[..6]);
    let update = session.poll(t(0)).expect("update");
    assert_eq!(update.sessions.len(), 2);
    assert_eq!(
        update.current().session_id.as_deref(),
        Some("session_89952f77-afa2-48be-8663-ee74817531ed")
    );
    assert_eq!(update.posture().presence, Presence::Present);
    assert_eq!(update.posture().turn.phase, Phase::Ready);
    assert_eq!(update.sessions[0].posture.presence, Presence::Absent);
}

/// A Claude Code capture line (`recv_ts` at second `s`) naming `transcript`.
fn claude(s: i64, event: &str, transcript: &Path, fields: &str) -> String {
    format!(
        r#"{{"recv_ts":"{}","cli":"claude-code","event":"{event}","payload":{{"session_id":"s1","transcript_path":"{}","cwd":"/p","prompt_id":"p1","hook_event_name":"{event}"{fields}}}}}"#,
        t(s),
        transcript.display()
    )
}

/// Copilot CLI's session log made after the rows that name it (its folder, then the
/// file): a hub wakes the session at its making, with no re-check and no new row.
#[test]
fn a_session_log_made_after_its_rows_wakes_the_hub_without_a_recheck() {
    let base = tempfile::tempdir().expect("tempdir");
    let home = base.path().join("copilot-home");
    fs::create_dir_all(home.join("session-state")).expect("home");
    let campaign = "copilot-cli/copilot-cli-1.0.102-interactive-first-escape-transcript";
    let paths = StorePaths::for_provider(&base.path().join("store"), "copilot");
    let rows: Vec<String> = (1..=2)
        .map(|n| corpus_row(&format!("{campaign}.ndjson"), n))
        .collect();
    append(&paths.events, &rows);
    let (mut hub, rx) = notify_only_hub();
    let id = hub.add(Session::open(
        paths,
        SessionConfig {
            agent_home: Some(home.clone()),
            ..SessionConfig::default()
        },
    ));
    let first = next_of(&rx, id);
    assert_eq!(first.posture().last_turn.result, TurnResult::None);
    let barrier = hub.add(open(&base.path().join("barrier")));
    next_of(&rx, barrier);
    let sid = "57c00bbf-7f6d-4e29-90e7-a6dc5888363d";
    let log = home.join("session-state").join(sid);
    fs::create_dir(&log).expect("the log's folder");
    let text =
        fs::read_to_string(corpus_dir().join(format!("{campaign}.transcripts/{sid}/events.jsonl")))
            .expect("the recorded log");
    fs::write(log.join("events.jsonl"), text).expect("the log");
    let ended = until(&rx, id, |u| {
        u.posture().last_turn.result == TurnResult::Interrupted
    });
    assert_eq!(ended.posture().turn.phase, Phase::Ready);
}

#[test]
fn a_transcript_whose_folder_is_not_made_yet_is_watched_for_it_without_an_error() {
    let base = tempfile::tempdir().expect("tempdir");
    let root = base.path().join("root");
    // The folder the payloads name appears only later (a new project's folder).
    let transcript = base.path().join("later").join("deeper").join("s1.jsonl");
    let events = hooktrack::locate_store(&root).expect("store").events;
    append(
        &events,
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
    let (mut hub, rx) = notify_only_hub();
    let id = hub.add(open(&root));
    let running = until(&rx, id, |u| u.posture().turn.phase == Phase::Active);
    let watch_failed = |u: &Update| {
        u.notices
            .iter()
            .any(|n| matches!(n, SessionNotice::WatchFailed { .. }))
    };
    assert!(!watch_failed(&running), "{:?}", running.notices);
    // A barrier: once a session added now has reported, the hub has placed the
    // transcript's watch (it handles messages in order, between its polls).
    let barrier = hub.add(open(&base.path().join("barrier")));
    next_of(&rx, barrier);
    // Escape: Claude Code makes the folder and writes the entries, and fires no hook. Only
    // the watcher can say so (the re-check never comes during the test), one level at a
    // time: the watch moves down whichever level the hub sees made first.
    fs::create_dir(base.path().join("later")).expect("mkdir");
    fs::create_dir(base.path().join("later").join("deeper")).expect("mkdir");
    append(
        &transcript,
        &[format!(
            r#"{{"type":"user","promptId":"p1","timestamp":"{}","interruptedMessageId":"m1","message":{{"content":[{{"type":"text","text":"[Request interrupted by user for tool use]"}}]}}}}"#,
            t(4)
        )],
    );
    let ended = until(&rx, id, |u| {
        assert!(!watch_failed(u), "{:?}", u.notices);
        u.posture().last_turn.result == TurnResult::Interrupted
    });
    assert_eq!(ended.posture().turn.phase, Phase::Ready);
}
