//! The multi-agent day: `hooktrack setup` once in a scratch HOME, then two real Claude Code
//! 2.1.332 TUIs typed into two panes of one private tmux server (no `hooktrack session`),
//! both delivering to the one default store, seen by one `hooktrack watch --ndjson --tmux`
//! with no path. Escape in one pane while the other streams: each pane, each `watch` line
//! and the replay of the store say what happened to that pane's session alone.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kimi_cli::Mock;
use crate::npm::Claude;
use crate::scratch_home::{Home, TmuxServer, rows, text, wait_pane};
use crate::util::{
    PATIENCE, claude_pane_script, claude_past_first_run, setup_in, source_setups_tmux_lines,
    wait_for, watch_tmux_in,
};

/// The session id of the rows that came from `pane` (its first `SessionStart`'s).
fn session_of(store: &Path, pane: &str) -> Option<String> {
    let events = fs::read_to_string(store.join("events.ndjson")).ok()?;
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["tmux_pane"] == pane && r["payload"]["session_id"].is_string())
        .and_then(|r| r["payload"]["session_id"].as_str().map(str::to_owned))
}

/// The `watch --ndjson` lines written so far (a line still being written is left out).
fn watch_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The results of the turns `watch` reported closed for `session`, in order.
fn closed_results(lines: &[Value], session: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["session_id"] == session)
        .flat_map(|l| l["closed"].as_array().into_iter().flatten())
        .filter_map(|t| t["result"].as_str().map(str::to_owned))
        .collect()
}

/// What a pane shows: its screen and its hooktrack options, for a failure's message and
/// for `HOOKTRACK_E2E_CAPTURE`.
fn pane_state(tmux: &TmuxServer, pane: &str) -> String {
    let options = tmux.run(&["show-options", "-p", "-t", pane]);
    let ours: Vec<&str> = options
        .lines()
        .filter(|l| l.starts_with("@hooktrack_"))
        .collect();
    format!("{}\n{}", tmux.screen(pane).trim_end(), ours.join("\n"))
}

/// With `HOOKTRACK_E2E_CAPTURE=DIR`, the panes' screens, their options and what the status
/// line reads for each go to `DIR/NAME.txt` (the pictures in the README and docs/tmux.md).
fn capture(tmux: &TmuxServer, panes: &[(&str, &str)], name: &str) {
    let Some(dir) = std::env::var_os("HOOKTRACK_E2E_CAPTURE") else {
        return;
    };
    let mut out = String::new();
    for (label, pane) in panes {
        let right = tmux.run(&["display-message", "-p", "-t", pane, "#{T:status-right}"]);
        out += &format!(
            "=== {label} ({pane}) ===\n{}\nstatus-right: {}\n\n",
            pane_state(tmux, pane),
            right.trim_end()
        );
    }
    let dir = PathBuf::from(dir);
    fs::create_dir_all(&dir).expect("capture dir");
    fs::write(dir.join(format!("{name}.txt")), out).expect("capture");
}

fn two_claude_code_tuis_in_one_default_store_an_escape_in_one_pane_is_that_panes_alone() {
    let claude = match Claude::Newest.bin() {
        Ok(c) => c,
        Err(reason) => return crate::npm::skip("claude-code 2.1.332", &reason),
    };
    let h = Home::new();
    let work = h.home.join("work");
    fs::create_dir_all(&work).expect("mkdir work");
    std::os::unix::fs::symlink(&claude, h.bin.join("claude")).expect("symlink claude");
    let path = format!("{}:/usr/bin:/bin", h.bin.display());
    // Past the first-run dialogs (theme, API key, folder trust), as a user who used it.
    claude_past_first_run(&h.home, &work);
    let said = setup_in(&h, &work, &path);
    assert!(said.contains("claude: "), "{said}");

    let mock = Mock::start(Path::new("python3"));
    let script = claude_pane_script(&h, &work, &path, mock.port);
    // One window, two panes side by side, as a person splits a window for two agents.
    let (tmux, a) = TmuxServer::start("hooktrack-panes", &script, (161, 40));
    let split = tmux
        .tmux()
        .args([
            "split-window",
            "-h",
            "-d",
            "-t",
            &a,
            "-P",
            "-F",
            "#{pane_id}",
        ])
        .arg(&script)
        .output()
        .expect("split-window");
    assert!(split.status.success(), "{}", text(&split));
    let b = String::from_utf8_lossy(&split.stdout).trim().to_owned();
    // The status line `setup` printed, so the capture shows what a person's reads.
    source_setups_tmux_lines(&tmux, &h, &said);

    let watched = h.home.join("watch.ndjson");
    let mut watch = watch_tmux_in(&tmux, &h)
        .arg("--ndjson")
        .stdout(fs::File::create(&watched).expect("watch output"))
        .spawn()
        .expect("watch");
    let store = h.state.join("hooktrack/agents/claude");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let option = |pane: &str, name: &str| tmux.option(pane, &format!("@hooktrack_{name}"));
        let wait = |pane: &str, what: &str, ok: &dyn Fn(&TmuxServer) -> bool| {
            let (seen, done) = wait_pane(&tmux, pane, ok);
            assert!(done, "{what} ({seen:?}):\n{}", pane_state(&tmux, pane));
        };
        for pane in [&a, &b] {
            wait(pane, "never ready", &|t| {
                t.option(pane, "@hooktrack_phase") == "ready" && t.screen(pane).contains('❯')
            });
            assert_eq!(option(pane, "agent"), "claude-code");
        }
        // Enter only once the text is in the input box: keys typed while the TUI is still
        // starting are lost.
        let prompt = |pane: &str, line: &str| {
            tmux.run(&["send-keys", "-t", pane, "-l", line]);
            wait(pane, &format!("{line} never typed"), &|t| {
                t.screen(pane)
                    .lines()
                    .any(|l| l.starts_with('❯') && l.contains(line))
            });
            tmux.run(&["send-keys", "-t", pane, "Enter"]);
        };
        // B streams a slow answer (a word a second for a minute), then A starts one. Claude
        // Code draws the answer once it is whole; meanwhile its spinner says how to stop it.
        prompt(&b, "Tell me a long story. [[slowtext]]");
        wait(&b, "B never streamed", &|t| {
            t.option(&b, "@hooktrack_phase") == "active"
                && t.screen(&b).contains("esc to interrupt")
        });
        prompt(&a, "Tell me another one. [[slowtext]]");
        // The answer has started coming (the spinner counts its tokens, `↓ 2 tokens`): an
        // Escape before that puts the prompt back in the input box instead (seen under
        // load), which fires nothing and writes no interrupt.
        wait(&a, "A never streamed", &|t| {
            t.option(&a, "@hooktrack_phase") == "active"
                && t.screen(&a).contains("esc to interrupt")
                && t.screen(&a).contains("↓ ")
        });
        capture(&tmux, &[("A", &a), ("B", &b)], "both-streaming");
        let session_a = session_of(&store, &a).expect("A's rows name its session");
        let session_b = session_of(&store, &b).expect("B's rows name its session");
        assert_ne!(session_a, session_b);

        // Claude Code reports an Escape only in its transcript: A's own, while B writes.
        tmux.run(&["send-keys", "-t", &a, "Escape"]);
        wait(&a, "A never interrupted", &|t| {
            t.option(&a, "@hooktrack_last") == "interrupted"
                && t.option(&a, "@hooktrack_phase") == "ready"
                && t.screen(&a).contains("Interrupted")
        });
        // B is still streaming, and still active.
        let b_now = pane_state(&tmux, &b);
        assert!(
            !b_now.contains("Slow answer done."),
            "B ended too soon:\n{b_now}"
        );
        assert_eq!(option(&b, "phase"), "active", "{b_now}");
        assert_ne!(option(&b, "last"), "interrupted", "{b_now}");
        capture(&tmux, &[("A", &a), ("B", &b)], "a-interrupted-b-streaming");
        let lines = wait_for(PATIENCE, "watch's line of A's interrupted turn", || {
            let lines = watch_lines(&watched);
            closed_results(&lines, &session_a)
                .iter()
                .any(|r| r == "interrupted")
                .then_some(lines)
        });
        assert_eq!(
            closed_results(&lines, &session_a),
            ["interrupted"],
            "{lines:#?}"
        );
        assert!(closed_results(&lines, &session_b).is_empty(), "{lines:#?}");

        // B's answer ends as it should.
        wait(&b, "B never done", &|t| {
            t.option(&b, "@hooktrack_last") == "success"
                && t.option(&b, "@hooktrack_phase") == "ready"
                && t.screen(&b).contains("Slow answer done.")
        });
        assert_eq!(option(&a, "last"), "interrupted");
        capture(&tmux, &[("A", &a), ("B", &b)], "b-done");
        let lines = wait_for(PATIENCE, "watch's line of B's turn", || {
            let lines = watch_lines(&watched);
            (!closed_results(&lines, &session_b).is_empty()).then_some(lines)
        });
        assert_eq!(
            closed_results(&lines, &session_b),
            ["success"],
            "{lines:#?}"
        );
        assert_eq!(
            closed_results(&lines, &session_a),
            ["interrupted"],
            "{lines:#?}"
        );
        (session_a, session_b)
    }));
    let _ = watch.kill();
    let _ = watch.wait();
    drop(tmux);
    drop(mock);
    let (session_a, session_b) = match result {
        Ok(ids) => ids,
        Err(panic) => std::panic::resume_unwind(panic),
    };

    // The replay of the one store: a ledger per session, the same results.
    let all = rows(&store.join("events.ndjson"));
    let sessions: std::collections::BTreeSet<&str> = all
        .iter()
        .filter_map(|r| r["payload"]["session_id"].as_str())
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let replay = crate::util::replay_json(&store.join("events.ndjson"));
    let of = |id: &str| {
        replay["sessions"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["session_id"] == id))
            .map(|s| crate::util::ledger(&s["turns"]))
            .unwrap_or_else(|| panic!("no session {id} in the replay: {replay:#}"))
    };
    assert_eq!(of(&session_a), ["main interrupted 0"], "{replay:#}");
    assert_eq!(of(&session_b), ["main success 0"], "{replay:#}");
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![e2e!(
        two_claude_code_tuis_in_one_default_store_an_escape_in_one_pane_is_that_panes_alone,
        [ClaudeNewest, Tmux]
    )]
}
