//! Many agent sessions in one store (contract section 12): each follows its own
//! transcript, live and in a replay, and both give the same ledger.
//!
//! The rows are Claude Code's, as its hooks deliver them to a default store (envelope
//! rows, every session its own `transcript_path`); the transcripts hold what Claude Code
//! 2.1.197 writes (`corpus/claude-code/…-interactive-escape-reject-transcript`): a prompt
//! entry, and on Escape during the answer a `user` entry `[Request interrupted by user]`
//! with the turn's `promptId`, which no hook reports.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use hooktrack::transcripts::{TranscriptLookup, replay_named};
use hooktrack::{Diag, Format, ProviderChoice, Report, StorePaths, Timestamp, TurnRecord};
use hooktrack::{Session, SessionConfig, TurnResult};

/// The tests' times are milliseconds after this (2026-01-01T00:00:00Z), or after the
/// store's creation where a real process's start is compared with the rows.
const BASE: i64 = 1_767_225_600_000;

fn append(path: &Path, lines: &[String]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    for l in lines {
        writeln!(f, "{l}").expect("append");
    }
}

/// One scratch store and the transcripts of its sessions.
struct Store {
    _dir: tempfile::TempDir,
    root: PathBuf,
    paths: StorePaths,
    /// What the times of its rows and polls count from.
    base: i64,
}

impl Store {
    fn new() -> Self {
        Self::from(BASE)
    }

    /// A store whose rows are stamped from now on: a pid they name is not taken for
    /// one reused since.
    fn from_now() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970");
        Self::from(i64::try_from(now.as_millis()).expect("a time"))
    }

    fn from(base: i64) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let paths = StorePaths::in_dir(root.join("store"));
        fs::create_dir_all(&paths.dir).expect("mkdir");
        Self {
            _dir: dir,
            root,
            paths,
            base,
        }
    }

    fn at(&self, ms: i64) -> Timestamp {
        Timestamp::from_millis(self.base + ms)
    }

    fn transcript(&self, session: usize) -> PathBuf {
        self.root.join(format!("session-{session}.jsonl"))
    }

    /// A Claude Code hook row of `session` received at `ms`.
    fn row(&self, session: usize, ms: i64, event: &str, fields: &str) -> String {
        let transcript = self.transcript(session);
        format!(
            r#"{{"v":1,"provider":"claude","received_at":"{}","event":"{event}","payload":{{"session_id":"s{session}","transcript_path":"{}","cwd":"/w","hook_event_name":"{event}"{fields}}}}}"#,
            self.at(ms),
            transcript.display(),
        )
    }

    fn rows(&self, rows: &[String]) {
        append(&self.paths.events, rows);
    }

    fn started(&self, session: usize, ms: i64) -> Vec<String> {
        vec![
            self.row(session, ms, "SessionStart", r#","source":"startup""#),
            self.row(
                session,
                ms + 10,
                "UserPromptSubmit",
                &format!(r#","prompt_id":"p{session}","prompt":"go""#),
            ),
        ]
    }

    fn stop(&self, session: usize, ms: i64) -> String {
        self.row(
            session,
            ms,
            "Stop",
            &format!(r#","prompt_id":"p{session}","stop_hook_active":false"#),
        )
    }

    /// The prompt entry Claude Code writes at a turn's start (no marker).
    fn prompt_entry(&self, session: usize, ms: i64) {
        let entry = format!(
            r#"{{"type":"user","promptId":"p{session}","message":{{"role":"user","content":"go"}},"timestamp":"{}","sessionId":"s{session}"}}"#,
            self.at(ms)
        );
        append(&self.transcript(session), &[entry]);
    }

    /// Escape during the answer: the transcript's marker, no hook.
    fn escape(&self, session: usize, ms: i64) {
        let entry = format!(
            r#"{{"type":"user","promptId":"p{session}","message":{{"role":"user","content":[{{"type":"text","text":"[Request interrupted by user]"}}]}},"timestamp":"{}","sessionId":"s{session}"}}"#,
            self.at(ms)
        );
        append(&self.transcript(session), &[entry]);
    }

    fn open(&self) -> Session {
        Session::open(
            self.paths.clone(),
            SessionConfig {
                keep_ledger: true,
                ..SessionConfig::default()
            },
        )
    }

    /// `hooktrack replay` of the store, the transcripts as the payloads name them.
    fn replay(&self) -> Report {
        let open = || fs::File::open(&self.paths.events).map(std::io::BufReader::new);
        let mut out = Vec::new();
        replay_named(
            open,
            &TranscriptLookup::AsNamed,
            "events.ndjson",
            ProviderChoice::Auto,
            Format::Json,
            (false, false, 1),
            &mut out,
        )
        .expect("replay")
    }
}

/// Every session's turns, in the order of their first rows (a live `Session::ledger`).
fn replayed_ledger(report: &Report) -> Vec<TurnRecord> {
    std::iter::once(report)
        .chain(&report.other_sessions)
        .flat_map(|r| r.turns.clone())
        .collect()
}

fn results(report: &Report) -> Vec<(Option<String>, Vec<TurnResult>)> {
    std::iter::once(report)
        .chain(&report.other_sessions)
        .map(|r| {
            let results = r.turns.iter().map(|t| t.result).collect();
            (r.session_id.clone(), results)
        })
        .collect()
}

/// Two Claude Code sessions in one default store: A's Escape, reported only in A's
/// transcript, arrives while B keeps writing (its rows after the marker's time), and A's
/// turn ends `interrupted`, live and in the replay. Before each session followed its own
/// file, the store followed the transcript of the session that wrote last, and A's marker
/// went to B.
#[test]
fn an_escape_in_one_of_two_sessions_is_that_sessions_live_and_in_replay() {
    let store = Store::new();
    let mut live = store.open();
    store.prompt_entry(0, 1_000);
    store.rows(&store.started(0, 1_000));
    store.rows(&store.started(1, 2_000));
    store.prompt_entry(1, 2_000);
    live.poll(store.at(2_100));
    // A's Escape, then B's tool call and answer.
    store.escape(0, 3_000);
    store.rows(&[
        store.row(
            1,
            4_000,
            "PreToolUse",
            r#","prompt_id":"p1","tool_name":"Bash","tool_use_id":"t1","tool_input":{}"#,
        ),
        store.row(
            1,
            5_000,
            "PostToolUse",
            r#","prompt_id":"p1","tool_name":"Bash","tool_use_id":"t1","tool_input":{},"tool_response":{}"#,
        ),
    ]);
    live.poll(store.at(5_100));
    store.rows(&[store.stop(1, 6_000)]);
    live.poll(store.at(6_100));

    let report = store.replay();
    assert_eq!(
        results(&report),
        [
            (Some("s0".to_owned()), vec![TurnResult::Interrupted]),
            (Some("s1".to_owned()), vec![TurnResult::Success]),
        ]
    );
    assert_eq!(live.ledger(), replayed_ledger(&report));
    let mut followed = live.transcript_paths();
    followed.sort();
    assert_eq!(followed, [store.transcript(0), store.transcript(1)]);
}

/// Twenty sessions in one store, each with its transcript; every other one is
/// interrupted by Escape (its transcript alone says so) while the others answer.
#[test]
fn twenty_sessions_in_one_store_each_read_their_own_transcript() {
    let store = Store::new();
    let mut live = store.open();
    for s in 0..20 {
        let at = s as i64 * 100;
        store.prompt_entry(s, at);
        store.rows(&store.started(s, at));
    }
    live.poll(store.at(2_000));
    for s in 0..20 {
        let at = 3_000 + s as i64 * 100;
        if s % 2 == 0 {
            store.escape(s, at);
        } else {
            store.rows(&[store.stop(s, at)]);
        }
        if s % 5 == 4 {
            live.poll(store.at(at + 50));
        }
    }
    // The last markers wait for a later row to be placed, or for the end of the poll.
    live.poll(store.at(6_000));

    let report = store.replay();
    let expected: Vec<_> = (0..20)
        .map(|s| {
            let result = if s % 2 == 0 {
                TurnResult::Interrupted
            } else {
                TurnResult::Success
            };
            (Some(format!("s{s}")), vec![result])
        })
        .collect();
    assert_eq!(results(&report), expected);
    assert_eq!(live.ledger(), replayed_ledger(&report));
    assert_eq!(live.transcript_paths().len(), 20);
}

/// Forty sessions: at most 32 files are held open. The 8 least recently active are let
/// go (counted in each, `transcript_let_go`), and one that writes again is read on from
/// where it stood: its first entry is not read twice, and its Escape, written after, is
/// seen.
#[test]
fn past_32_sessions_the_least_recent_file_is_let_go_and_read_on_by_offset() {
    let store = Store::new();
    let mut live = store.open();
    for s in 0..32 {
        let at = s as i64 * 100;
        store.prompt_entry(s, at);
        store.rows(&store.started(s, at));
    }
    live.poll(store.at(3_200));
    assert_eq!(live.transcript_paths().len(), 32);
    for s in 32..40 {
        let at = s as i64 * 100;
        store.prompt_entry(s, at);
        store.rows(&store.started(s, at));
    }
    live.poll(store.at(4_000));
    assert_eq!(live.transcript_paths().len(), 32);
    let let_go = |live: &Session, s: usize| {
        live.session_diagnostics(s)
            .map(|d| d.count(Diag::TranscriptLetGo))
    };
    assert_eq!(
        (0..40).map(|s| let_go(&live, s)).collect::<Vec<_>>(),
        (0..40).map(|s| Some(u64::from(s < 8))).collect::<Vec<_>>(),
        "sessions 0 to 7 wrote least recently"
    );
    // Session 0 writes again (its file is reopened by offset, session 8's let go), then
    // Escape; the others answer.
    store.rows(&[store.row(
        0,
        5_000,
        "PreToolUse",
        r#","prompt_id":"p0","tool_name":"Bash","tool_use_id":"t0","tool_input":{}"#,
    )]);
    live.poll(store.at(5_100));
    assert!(
        live.transcript_paths()
            .contains(&store.transcript(0).as_path())
    );
    assert!(
        !live
            .transcript_paths()
            .contains(&store.transcript(8).as_path())
    );
    store.escape(0, 6_000);
    live.poll(store.at(6_100));
    store.rows(
        &(1..40)
            .map(|s| store.stop(s, 7_000 + s as i64))
            .collect::<Vec<_>>(),
    );
    live.poll(store.at(8_000));

    let report = store.replay();
    let sessions: Vec<&Report> = std::iter::once(&report)
        .chain(&report.other_sessions)
        .collect();
    assert_eq!(sessions.len(), 40);
    assert_eq!(
        sessions[0]
            .turns
            .iter()
            .map(|t| t.result)
            .collect::<Vec<_>>(),
        [TurnResult::Interrupted]
    );
    assert!(
        sessions[1..]
            .iter()
            .all(|r| r.turns.iter().all(|t| t.result == TurnResult::Success))
    );
    assert_eq!(live.ledger(), replayed_ledger(&report));
    // Every transcript line was read once, live as in the replay (session 0's first
    // entry before it was let go, its marker after it was reopened).
    for (s, replayed) in sessions.iter().enumerate() {
        let live_diag = live.session_diagnostics(s).expect("a session");
        for diag in [
            Diag::TranscriptEntryIgnored,
            Diag::TranscriptLetGo,
            Diag::TranscriptMarkerStale,
        ] {
            assert_eq!(
                live_diag.count(diag),
                replayed.diagnostics.count(diag),
                "session {s}: {}",
                diag.name()
            );
        }
    }
    assert_eq!(
        sessions[0].diagnostics.count(Diag::TranscriptEntryIgnored),
        1
    );
    assert_eq!(sessions[8].diagnostics.count(Diag::TranscriptLetGo), 1);
}

/// An agent's end seen live from the pid its rows name: the session's open turn ends
/// `terminal_gap` at once, and the end is handed out once for the store
/// (`Update::process_ends`). Appended as the launcher's `process_ended` row naming
/// the session, it is read back as no news, and a replay of the store gives the ledger the
/// live session showed; the other session is untouched.
#[test]
fn a_process_end_seen_live_is_handed_out_for_the_store_and_replays_the_same() {
    use hooktrack_core::envelope::{ProcessEnd, process_ended_row_of};
    let store = Store::from_now();
    /// The agent, ended when the test ends whatever happens.
    struct Agent(std::process::Child);
    impl Drop for Agent {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut agent = Agent(
        std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = agent.0.id();
    let with_pid = |row: String| {
        row.replacen(
            r#""payload""#,
            &format!(r#""agent_pid":{pid},"payload""#),
            1,
        )
    };
    let mut live = store.open();
    store.rows(
        &store
            .started(0, 1_000)
            .into_iter()
            .map(with_pid)
            .collect::<Vec<_>>(),
    );
    store.rows(&store.started(1, 1_500));
    let ends =
        |update: Option<hooktrack::Update>| update.map(|u| u.process_ends).unwrap_or_default();
    assert!(ends(live.poll(store.at(2_000))).is_empty(), "running");
    agent.0.kill().expect("kill");
    agent.0.wait().expect("reap");
    let ends = ends(live.poll(store.at(3_000)));
    assert_eq!(ends.len(), 1, "{ends:?}");
    let end = &ends[0];
    assert_eq!(
        (end.session, end.session_id.as_deref(), end.pid),
        (0, Some("s0"), pid)
    );
    // Seen running at the last poll: it counts from when its end was seen.
    assert_eq!(end.at, store.at(3_000));
    let later = live.poll(store.at(3_100));
    assert!(
        later.is_none_or(|u| u.process_ends.is_empty()),
        "handed out once"
    );
    let ledger = live.ledger();
    assert_eq!(
        ledger.iter().map(|t| t.result).collect::<Vec<_>>(),
        [TurnResult::TerminalGap, TurnResult::Open]
    );

    let row = process_ended_row_of("claude", 0, end.at, pid, ProcessEnd::Unknown, Some("s0"));
    append(
        &store.paths.events,
        &[String::from_utf8(row).expect("utf-8").trim_end().to_owned()],
    );
    let read_back = live.poll(store.at(4_000));
    assert!(read_back.is_none_or(|u| u.process_ends.is_empty()));
    assert_eq!(live.ledger(), ledger);
    assert_eq!(replayed_ledger(&store.replay()), ledger);
}

/// Two Letta Code processes writing one default store at once: its payloads name no
/// session (`Stop` and `Notification` name only the folder, the tool events the main
/// agent), so each process is a session of its own (`pid:<agent_pid>`). The real rows of
/// a TUI session (`corpus/letta-code/…-tui-tools-escape-error`: five turns) interleaved, row by row,
/// with those of a headless `letta -p` (`…-headless-two-processes`, its first process:
/// three calls, no `Stop`): the TUI's turns end as its screen showed, and its `Stop`s
/// never end the headless process's turn, whose calls all pair in its own session.
#[test]
fn two_letta_processes_interleaved_in_one_default_store_keep_their_own_turns() {
    let read = |name: &str| {
        fs::read_to_string(crate::support::corpus_dir().join("letta-code").join(name))
            .expect("a Letta recording")
    };
    let tui = read("letta-code-0.25.9-tui-tools-escape-error.ndjson");
    let headless = read("letta-code-0.25.9-headless-two-processes.ndjson");
    let first_pid = |text: &str| {
        let row: serde_json::Value =
            serde_json::from_str(text.lines().next().expect("a row")).expect("json");
        row["agent_pid"].as_u64().expect("an agent_pid")
    };
    let headless_pid = first_pid(&headless);
    let headless: Vec<&str> = headless
        .lines()
        .filter(|l| l.contains(&format!("\"agent_pid\":{headless_pid}")))
        .collect();
    assert_eq!(headless.len(), 6);
    // The TUI's rows but the launcher's `process_ended` (which names no pid of its own
    // here: under `session` the store was the TUI's alone).
    let tui: Vec<&str> = tui
        .lines()
        .filter(|l| !l.contains("\"process_ended\""))
        .collect();
    let mut mixed: Vec<&str> = Vec::new();
    for i in 0..tui.len().max(headless.len()) {
        mixed.extend(tui.get(i).copied());
        mixed.extend(headless.get(i).copied());
    }
    let bytes = mixed.join("\n") + "\n";
    let (report, _) = crate::support::replay_bytes(bytes.as_bytes(), Format::Json);
    let tui_pid = first_pid(&tui.join("\n"));
    let sessions: Vec<_> = std::iter::once(&report)
        .chain(&report.other_sessions)
        .map(|r| {
            let turns: Vec<_> = r
                .turns
                .iter()
                .map(|t| format!("{} {}", t.result.name(), t.tool_calls))
                .collect();
            (r.session_id.clone().unwrap_or_default(), turns)
        })
        .collect();
    assert_eq!(
        sessions,
        [
            (
                format!("pid:{tui_pid}"),
                vec![
                    "success 0".to_owned(),
                    "success 3".to_owned(),
                    "success 1".to_owned(),
                    "interrupted 1".to_owned(),
                    "known_failure 0".to_owned(),
                ]
            ),
            (format!("pid:{headless_pid}"), vec!["open 3".to_owned()]),
        ]
    );
}
