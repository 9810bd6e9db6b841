//! Helpers shared by the test modules.

use hooktrack::transcripts::{TranscriptLookup, replay_named};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use hooktrack::ProviderChoice;
use hooktrack::{Format, Report};

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every campaign in the corpus, sorted.
pub fn campaigns() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(corpus_dir()).expect("corpus/ is readable") {
        let dir = dir.expect("corpus entry").path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).expect("corpus subdir is readable") {
            let file = file.expect("corpus file").path();
            if file.extension().is_some_and(|e| e == "ndjson") {
                found.push(file);
            }
        }
    }
    found.sort();
    found
}

pub fn replay_bytes(bytes: &[u8], format: Format) -> (Report, String) {
    let mut out = Vec::new();
    let report = hooktrack::replay(bytes, "test input", ProviderChoice::Auto, format, &mut out)
        .expect("replaying from memory cannot fail");
    (report, String::from_utf8(out).expect("output is UTF-8"))
}

/// Replays a campaign as `hooktrack replay` does; a campaign recorded with its
/// transcripts keeps them in `X.transcripts/` beside `X.ndjson` (`--transcripts DIR`).
pub fn replay_file(path: &Path, format: Format) -> (Report, String) {
    let dir = path.with_extension("transcripts");
    let lookup = if dir.is_dir() {
        TranscriptLookup::InDir(&dir)
    } else {
        TranscriptLookup::Off
    };
    replay_file_with(path, format, lookup, false)
}

pub fn replay_file_with(
    path: &Path,
    format: Format,
    lookup: TranscriptLookup<'_>,
    explain: bool,
) -> (Report, String) {
    let open = || File::open(path).map(BufReader::new);
    let mut out = Vec::new();
    let report = replay_named(
        open,
        &lookup,
        &path.display().to_string(),
        ProviderChoice::Auto,
        format,
        (explain, false, 1),
        &mut out,
    )
    .unwrap_or_else(|e| panic!("replay {}: {e}", path.display()));
    (report, String::from_utf8(out).expect("output is UTF-8"))
}

/// Builds a Kimi Code bare-payload line.
pub fn kimi(event: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(
        r#"{{"hook_event_name":"{event}","session_id":"session_t","cwd":"/p","client_type":"kimi_code_cli"{sep}{fields}}}"#
    )
}

/// Builds a Kimi CLI 1.x bare-payload line.
pub fn kimi_cli(event: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { ", " };
    format!(
        r#"{{"hook_event_name": "{event}", "session_id": "495571c6-adb5-491a-99ad-7e10e4e3d92e", "cwd": "/p"{sep}{fields}}}"#
    )
}

pub fn lines(lines: &[String]) -> Vec<u8> {
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

/// The ledger as "<scope> <result>" in order of first row.
pub fn turn_results(report: &Report) -> Vec<String> {
    let mut turns = report.turns.clone();
    turns.sort_by_key(|t| (t.first_row, t.id));
    turns
        .iter()
        .map(|t| {
            let scope = if t.is_main() { "main" } else { "nested" };
            format!("{scope} {}", t.result.name())
        })
        .collect()
}

/// Who started each turn (`user`, `agent`, `subagent`, ...), in the order of
/// [`turn_results`].
pub fn turn_origins(report: &Report) -> Vec<String> {
    let mut turns = report.turns.clone();
    turns.sort_by_key(|t| (t.first_row, t.id));
    turns.iter().map(|t| t.origin.to_string()).collect()
}

/// An envelope row (contract section 2) of a heartbeat, distinct per `seq`.
pub fn envelope_row(seq: u64) -> String {
    format!(
        r#"{{"v":1,"provider":"kimi","generation":1,"via":"http","sequence":{seq},"emitter_seq":{seq},"received_at":"2026-10-20T09:14:03.512Z","event":"SessionHeartbeat","payload":{{"hook_event_name":"SessionHeartbeat","session_id":"session_t","client_type":"kimi_code_cli","uptime_seconds":{seq}}}}}"#
    )
}

/// Wake-ups from a real `notify` watcher on one directory.
pub struct Wake {
    _watcher: notify::RecommendedWatcher,
    rx: std::sync::mpsc::Receiver<()>,
}

impl Wake {
    /// Tests wait at most this long for a condition: a deadline for slow machines, never a
    /// measure of speed (a whole suite run with every core busy saw waits past 10 s).
    pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);
    /// Without a notification, look again after this long anyway, as every user of the
    /// tailer does (notifications can be coalesced or lost).
    const RECHECK: std::time::Duration = std::time::Duration::from_millis(200);

    pub fn watching(dir: &Path) -> Self {
        use notify::Watcher;
        let (tx, rx) = std::sync::mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |_| {
            let _ = tx.send(());
        })
        .expect("start a watcher");
        watcher
            .watch(dir, notify::RecursiveMode::NonRecursive)
            .expect("watch the directory");
        Self {
            _watcher: watcher,
            rx,
        }
    }

    pub fn deadline() -> std::time::Instant {
        std::time::Instant::now() + Self::PATIENCE
    }

    /// Waits for a notification (or the re-check); `false` once `deadline` has passed.
    pub fn wait(&self, deadline: std::time::Instant) -> bool {
        let now = std::time::Instant::now();
        if now >= deadline {
            return false;
        }
        let _ = self.rx.recv_timeout(Self::RECHECK.min(deadline - now));
        while self.rx.try_recv().is_ok() {}
        true
    }
}

/// The user's prompt (`go`) and the turn `n` it starts.
pub fn prompt(n: i64) -> [String; 2] {
    [
        kimi(
            "UserPromptSubmit",
            r#""prompt":[{"type":"text","text":"go"}],"is_steer":false"#,
        ),
        kimi(
            "TurnStarted",
            &format!(r#""turn_id":{n},"origin_kind":"user""#),
        ),
    ]
}

/// A prompt and its turn, started, with one tool call open.
pub fn turn_running(n: i64) -> Vec<String> {
    let mut rows = prompt(n).to_vec();
    rows.push(kimi(
        "PreToolUse",
        &format!(r#""tool_call_id":"call_{n}","tool_name":"Bash","tool_input":{{}}"#),
    ));
    rows
}

/// A turn of `session_t` that waits for a permission (the `blocked` transition): the
/// session's start, the prompt of turn 1, and its call `c1` of `Bash` asking permission
/// `a1`.
pub fn blocked_turn() -> Vec<String> {
    let mut rows = vec![kimi("SessionStart", r#""source":"startup""#)];
    rows.extend(prompt(1));
    rows.extend([
        kimi(
            "PreToolUse",
            r#""tool_call_id":"c1","tool_name":"Bash","tool_input":{}"#,
        ),
        kimi(
            "PermissionRequest",
            r#""tool_call_id":"c1","turn_id":1,"id":"a1","tool_name":"Bash""#,
        ),
    ]);
    rows
}

/// The end of a [`blocked_turn`]: permission `a1` approved, call `c1` done, and the
/// turn's `Stop`.
pub fn approved_and_stopped() -> [String; 3] {
    [
        kimi(
            "PermissionResult",
            r#""tool_call_id":"c1","id":"a1","decision":"approved""#,
        ),
        kimi("PostToolUse", r#""tool_call_id":"c1","tool_name":"Bash""#),
        kimi("Stop", r#""stop_hook_active":false"#),
    ]
}

/// Appends `lines` to `path`, a line each, making its folder first when it has none.
pub fn append(path: &Path, lines: &[String]) {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    for line in lines {
        writeln!(f, "{line}").expect("append");
    }
}

/// Holds `store`'s collector lock as a running collector does, for as long as the returned
/// file lives: a session's block whose collector is gone is cleaned up by the next
/// `session`, `check` or `watch`; one whose collector runs is left alone.
pub fn collector_running(store: &Path) -> std::fs::File {
    std::fs::create_dir_all(store).expect("mkdir store");
    let lock = std::fs::File::create(store.join("collector.lock")).expect("collector.lock");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .expect("lock as a running collector does");
    lock
}

/// A corpus campaign (`corpus/<agent>/<file>`) replayed as `hooktrack replay --format json`.
pub fn corpus_replay(campaign: &str) -> Report {
    replay_file(&corpus_dir().join(campaign), Format::Json).0
}

/// How many times the report's diagnostics counted `name` (0 when not at all).
pub fn corpus_counter(report: &Report, name: &str) -> u64 {
    report
        .diagnostics
        .nonzero()
        .find(|(d, _)| d.name() == name)
        .map_or(0, |(_, n)| n)
}

/// The store row `n` (1-based) of a corpus campaign.
pub fn corpus_row(campaign: &str, n: usize) -> String {
    let text = std::fs::read_to_string(corpus_dir().join(campaign)).expect("corpus campaign");
    text.lines().nth(n - 1).expect("the row").to_owned()
}

/// The agents' home variables a test clears so the agent's file is found under the `HOME`
/// it sets: all but `HOME` itself (Letta Code's only home).
pub fn agent_home_vars() -> impl Iterator<Item = &'static str> {
    hooktrack::Agent::ALL
        .into_iter()
        .filter_map(|a| a.config().home_var())
        .filter(|var| *var != "HOME")
}
