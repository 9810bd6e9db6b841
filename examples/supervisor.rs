//! A minimal supervisor loop: copy from here.
//!
//! ```sh
//! cargo run --example supervisor -- SESSION_ROOT...   # follow real sessions until Ctrl-C
//! cargo run --example supervisor                       # a self-contained demo: one turn
//! ```
//!
//! One [`Hub`] follows every session with one file watcher and sends `(SessionId, Update)`
//! on a channel. The supervisor tells it two things only it knows: when it sent a prompt
//! (startup silence is judged from the first one) and when the terminal changed (a busy
//! terminal with quiet hooks makes the channel stale). Before acting, it merges the hook
//! posture with what its own terminal detector sees, so a degraded channel falls back to
//! the terminal on its own.

use std::collections::HashMap;
use std::error::Error;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use hooktrack::merge::{TerminalFacts, TerminalPhase, merge};
use hooktrack::{Hub, HubConfig, SessionId, wall_clock};
use hooktrack::{Session, SessionConfig, Update};

fn main() -> Result<(), Box<dyn Error>> {
    let roots: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let demo = roots.is_empty();
    let roots = if demo { vec![demo_root()?] } else { roots };

    let (mut hub, updates) = Hub::start(HubConfig::default())?;
    let mut names = HashMap::new();
    for root in &roots {
        // One store per session root; `StorePaths::for_provider` picks one explicitly.
        let paths = hooktrack::locate_store(root)?;
        let session = Session::open(paths, SessionConfig::default());
        let id = hub.add(session);
        names.insert(id, root.display().to_string());
        // The supervisor launched the agent and typed the first prompt into its pane.
        hub.prompt_sent(id, wall_clock());
    }
    if demo {
        // Stand-in for the agent: its hooks append a turn to the store.
        let events = hooktrack::locate_store(&roots[0])?.events;
        std::thread::spawn(move || play_a_turn(&events));
    }

    loop {
        let (id, update) =
            match updates.recv_timeout(Duration::from_secs(if demo { 10 } else { 3600 })) {
                Ok(next) => next,
                Err(_) if demo => return Err("the demo turn never finished".into()),
                Err(_) => continue,
            };
        // In a real supervisor: capture the tmux pane, run your detector, and call
        // `hub.terminal_changed(id, wall_clock())` when the screen changed.
        let screen = read_terminal(id);
        act(&names[&id], &update, &screen);
        if demo && update.closed().next().is_some() {
            drop(hub);
            fs::remove_dir_all(&roots[0])?;
            return Ok(());
        }
    }
}

fn act(name: &str, update: &Update, screen: &TerminalFacts) {
    let merged = merge(update.posture(), screen, update.agent());
    println!(
        "{name}: channel {:?} ({}), phase {:?} from {:?}, last {:?} from {:?}",
        merged.channel,
        update.channel.detail,
        merged.phase,
        merged.phase_from,
        merged.last_result,
        merged.last_result_from,
    );
    for turn in update.closed() {
        // Every ended turn is reported exactly once, even when updates coalesce.
        println!("{name}: turn {} ended: {}", turn.id, turn.result.name());
    }
    for notice in &update.notices {
        eprintln!("{name}: {notice}");
    }
}

/// Your terminal detector goes here.
fn read_terminal(_id: SessionId) -> TerminalFacts {
    TerminalFacts {
        phase: TerminalPhase::Unknown,
        ..TerminalFacts::default()
    }
}

fn demo_root() -> Result<PathBuf, Box<dyn Error>> {
    let root = std::env::temp_dir().join(format!("hooktrack-demo-{}", std::process::id()));
    fs::create_dir_all(root.join("hook-observation/kimi"))?;
    Ok(root)
}

fn play_a_turn(events: &std::path::Path) {
    let lines = [
        r#"{"hook_event_name":"SessionStart","session_id":"s","client_type":"kimi_code_cli","source":"startup"}"#,
        r#"{"hook_event_name":"UserPromptSubmit","session_id":"s","client_type":"kimi_code_cli","prompt":[{"type":"text","text":"hi"}],"is_steer":false}"#,
        r#"{"hook_event_name":"TurnStarted","session_id":"s","client_type":"kimi_code_cli","turn_id":1,"origin_kind":"user"}"#,
        r#"{"hook_event_name":"Stop","session_id":"s","client_type":"kimi_code_cli","stop_hook_active":false}"#,
    ];
    let Ok(mut file) = OpenOptions::new().create(true).append(true).open(events) else {
        return;
    };
    for line in lines {
        std::thread::sleep(Duration::from_millis(100));
        if writeln!(file, "{line}").is_err() {
            return;
        }
    }
}
