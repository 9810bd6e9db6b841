//! `hooktrack setup` into a scratch home, then real agents typed into the panes of a
//! private tmux server (no `hooktrack session`), seen by one `watch --tmux` with no path;
//! then `setup --undo`. Its hermetic half is `tests/setup.rs`.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::kimi_cli::Mock;
use crate::scratch_home::{Home, TmuxServer, rows, text, wait_pane, write_script};
use crate::util::{
    claude_pane_script, claude_past_first_run, setup_in, source_setups_tmux_lines, watch_tmux_in,
};

/// Waits until the pane's `@hooktrack_<option>` reads `value` while its screen shows
/// `text`; panics naming `what`, the phases seen and the screen otherwise. Returns the
/// phases seen on the way.
fn wait_state(
    tmux: &TmuxServer,
    pane: &str,
    what: &str,
    (option, value): (&str, &str),
    text: &str,
) -> Vec<String> {
    let option = format!("@hooktrack_{option}");
    let (seen, ok) = wait_pane(tmux, pane, |t| {
        t.option(pane, &option) == value && t.screen(pane).contains(text)
    });
    assert!(ok, "{what} ({seen:?}):\n{}", tmux.screen(pane));
    seen
}

/// Issue 25's end to end: `setup` into a scratch home, a real Claude Code 2.1.197 typed
/// into a pane of a private tmux server (no `hooktrack session`), `watch --tmux` with no
/// path; then `setup --undo`.
///
/// What the screen showed at each checkpoint (recorded by hand with the same steps):
/// - started: the banner `Claude Code v2.1.197`, an empty `❯` prompt;
/// - after `Run a command, write a file, read it back. [[tools]]`: `● Bash(echo
///   hello-from-shell)` ran without a question, then `● Write(notes.txt)` and `Do you
///   want to create notes.txt?` with `❯ 1. Yes / 2. … / 3. No`, `Esc to cancel`;
/// - after Enter (Yes): `Wrote 2 lines to notes.txt`, `Read 1 file`, `● The file holds
///   two lines. Done.`, an empty prompt;
/// - after `/clear` and the same prompt: the same question; after Escape: `User rejected
///   write to notes.txt` and an empty prompt.
///
/// Then a real Qwen Code 0.24.4 typed into a second pane of the same server (`qwen` with
/// the mock's OpenAI URL and `--approval-mode default`, so a shell call asks), seen by the
/// same `watch --tmux`. What its screen showed (recorded by hand with the same steps):
/// - started: the banner `Qwen Code (v0.24.4)`, `>   Type your message or @path/to/file`,
///   `⏸ Ask permissions (shift + tab to cycle)`;
/// - after `Make a file. [[perm]]`: `? Shell touch approved.txt (Create a file)`, `Allow
///   execution of: 'touch'?` with `› 1. Yes, allow once` … `4. No, suggest changes (esc)`,
///   `Waiting for user confirmation...`;
/// - after Enter (Yes): `✓ Shell touch approved.txt`, `◆︎ The file holds two lines. Done.`
///   and the empty input box;
/// - after `Wait a while. [[slow]]`: `Allow execution of: 'sleep'?`; after Enter the
///   shell runs (`esc to cancel`); after Escape: `●︎ Request cancelled.` and the input box;
/// - after `/quit`: the pane closes.
fn setup_then_a_claude_typed_in_a_tmux_pane_shows_in_watch_tmux() {
    let bin = match crate::npm::npm_bin() {
        Ok(b) => b,
        Err(reason) => return crate::npm::skip("claude-code 2.1.197", &reason),
    };
    let qwen = match crate::more_agents::installed() {
        Ok(q) => q,
        Err(reason) => return crate::npm::skip("qwen-code 0.24.4", &reason),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        return crate::npm::skip("claude-code 2.1.197 in tmux", "no tmux");
    }
    let h = Home::new();
    let work = h.home.join("work");
    fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(bin.join("claude"), h.bin.join("claude")).unwrap();
    std::os::unix::fs::symlink(qwen.bin.join("qwen"), h.bin.join("qwen")).unwrap();
    // Qwen Code's settings as a person who ran it has them: only a byte-for-byte undo
    // gives them back.
    let qwen_settings = h.file(".qwen/settings.json");
    fs::create_dir_all(qwen_settings.parent().unwrap()).unwrap();
    fs::write(&qwen_settings, QWEN_SETTINGS).unwrap();
    // Node for the agent's shebang, and nothing else from this PATH.
    let node_dir = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|d| d.join("node").is_file())
        .expect("node on PATH");
    let path = format!("{}:{}:/usr/bin:/bin", h.bin.display(), node_dir.display());
    // Past the first-run dialogs (theme, API key, folder trust), as a user who used it.
    claude_past_first_run(&h.home, &work);

    let said = setup_in(&h, &work, &path);
    assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    assert!(
        said.contains("claude: check: Claude Code 2.1.197: within the tested window"),
        "{said}"
    );
    assert!(said.contains("qwen: 21 hooktrack entries"), "{said}");
    assert!(said.contains("qwen: check: ok"), "{said}");
    let settings = h.file(".claude/settings.json");
    assert!(settings.exists());

    let mock = Mock::start(Path::new("python3"));
    let script = claude_pane_script(&h, &work, &path, mock.port);
    let (tmux, pane) = TmuxServer::start("hooktrack-setup", &script, (160, 45));
    // Qwen Code in a second window of the same server, Node 22 first on its PATH.
    let qwen_script = h.home.join("qwen.sh");
    write_script(
        &qwen_script,
        &format!(
            "#!/bin/sh\ncd '{work}'\nexec env -i PATH='{node22}:{path}' HOME='{home}' XDG_STATE_HOME='{state}' \
             TERM=xterm-256color TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" \
             qwen --auth-type openai --openai-base-url http://127.0.0.1:{port}/v1 \
             --openai-api-key x -m qwen-mock --approval-mode default\n",
            work = work.display(),
            node22 = qwen.node_bin.display(),
            home = h.home.display(),
            state = h.state.display(),
            port = mock.port,
        ),
    );
    // Its pane waits for a line: it also keeps the server up once Claude Code's closes.
    let started = tmux
        .tmux()
        .args(["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .arg(format!("read go; exec '{}'", qwen_script.display()))
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", text(&started));
    let qpane = String::from_utf8_lossy(&started.stdout).trim().to_owned();
    // The tmux lines `setup` printed, as a person pastes them into ~/.tmux.conf.
    assert_eq!(source_setups_tmux_lines(&tmux, &h, &said), 2, "{said}");
    let status_line = |format: &str| {
        tmux.run(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            &format!("#{{T:{format}}}"),
        ])
        .trim_end()
        .to_owned()
    };

    let mut watch = watch_tmux_in(&tmux, &h)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SessionStart: the pane is known, the agent ready.
        wait_state(
            &tmux,
            &pane,
            "never ready",
            ("phase", "ready"),
            "Claude Code v2.1.197",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_agent"), "claude-code");

        // Enter only once the text is in the input box: keys typed while the TUI is still
        // starting are lost.
        let prompt = |text: &str| {
            tmux.run(&["send-keys", "-t", &pane, "-l", text]);
            let (_, typed) = wait_pane(&tmux, &pane, |t| {
                t.screen(&pane)
                    .lines()
                    .any(|l| l.starts_with('❯') && l.contains(text))
            });
            assert!(typed, "{text} not typed:\n{}", tmux.screen(&pane));
            tmux.run(&["send-keys", "-t", &pane, "Enter"]);
        };
        prompt("Run a command, write a file, read it back. [[tools]]");
        let seen = wait_state(
            &tmux,
            &pane,
            "never blocked",
            ("phase", "blocked"),
            "Do you want to create notes.txt?",
        );
        assert!(seen.contains(&"active".to_owned()), "{seen:?}");
        assert_eq!(tmux.option(&pane, "@hooktrack_blocked"), "Write");
        assert_eq!(tmux.option(&pane, "@hooktrack_attention"), "1");
        // What the status line and the window list read now (the README shows them).
        let right = status_line("status-right");
        assert!(
            right.starts_with("#[fg=white bg=red bold] claude-code blocked Write #[default]"),
            "{right}"
        );
        let window = status_line("window-status-format");
        assert!(
            window.ends_with("#[fg=white bg=red] ⏸ Write #[default]"),
            "{window}"
        );
        eprintln!("status-right: {right}\nwindow-status-format: {window}");

        tmux.run(&["send-keys", "-t", &pane, "Enter"]);
        wait_state(
            &tmux,
            &pane,
            "never success",
            ("last", "success"),
            "The file holds two lines. Done.",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_phase"), "ready");

        fs::remove_file(work.join("notes.txt")).unwrap();
        prompt("/clear");
        let (_, ok) = wait_pane(&tmux, &pane, |t| !t.screen(&pane).contains("Done."));
        assert!(ok, "/clear:\n{}", tmux.screen(&pane));
        prompt("Run a command, write a file, read it back. [[tools]]");
        wait_state(
            &tmux,
            &pane,
            "never blocked again",
            ("phase", "blocked"),
            "Do you want to create notes.txt?",
        );
        tmux.run(&["send-keys", "-t", &pane, "Escape"]);
        wait_state(
            &tmux,
            &pane,
            "never interrupted",
            ("last", "interrupted"),
            "User rejected write to notes.txt",
        );
        assert_eq!(tmux.option(&pane, "@hooktrack_phase"), "ready");

        prompt("/exit");
        let gone = |t: &TmuxServer, p: &str| {
            !t.run(&["list-panes", "-a", "-F", "#{pane_id}"])
                .lines()
                .any(|l| l == p)
        };
        let (_, ok) = wait_pane(&tmux, &pane, |t| gone(t, &pane));
        assert!(ok, "claude did not exit");

        // The second agent, in the second pane, started now (two TUIs starting at once on
        // a busy machine only slow each other), seen by the same watch.
        tmux.run(&["send-keys", "-t", &qpane, "go", "Enter"]);
        let qprompt = |text: &str| {
            tmux.run(&["send-keys", "-t", &qpane, "-l", text]);
            let (_, typed) = wait_pane(&tmux, &qpane, |t| t.screen(&qpane).contains(text));
            assert!(typed, "{text} not typed:\n{}", tmux.screen(&qpane));
            tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        };
        let (_, ok) = wait_pane(&tmux, &qpane, |t| {
            t.screen(&qpane).contains("Type your message")
        });
        assert!(ok, "qwen never started:\n{}", tmux.screen(&qpane));
        qprompt("Make a file. [[perm]]");
        let seen = wait_state(
            &tmux,
            &qpane,
            "qwen never blocked",
            ("phase", "blocked"),
            "Allow execution of: 'touch'?",
        );
        assert!(seen.contains(&"active".to_owned()), "{seen:?}");
        assert_eq!(tmux.option(&qpane, "@hooktrack_agent"), "qwen-code");
        assert_eq!(
            tmux.option(&qpane, "@hooktrack_blocked"),
            "run_shell_command"
        );
        tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        wait_state(
            &tmux,
            &qpane,
            "qwen never success",
            ("last", "success"),
            "The file holds two lines. Done.",
        );
        assert_eq!(tmux.option(&qpane, "@hooktrack_phase"), "ready");
        qprompt("Wait a while. [[slow]]");
        wait_state(
            &tmux,
            &qpane,
            "qwen never asked for sleep",
            ("phase", "blocked"),
            "Allow execution of: 'sleep'?",
        );
        tmux.run(&["send-keys", "-t", &qpane, "Enter"]);
        wait_state(
            &tmux,
            &qpane,
            "the shell never ran",
            ("phase", "active"),
            "esc to cancel",
        );
        tmux.run(&["send-keys", "-t", &qpane, "Escape"]);
        wait_state(
            &tmux,
            &qpane,
            "qwen never interrupted",
            ("last", "interrupted"),
            "Request cancelled.",
        );
        assert_eq!(tmux.option(&qpane, "@hooktrack_phase"), "ready");
        qprompt("/quit");
        let (_, ok) = wait_pane(&tmux, &qpane, |t| gone(t, &qpane));
        assert!(ok, "qwen did not exit:\n{}", tmux.screen(&qpane));
    }));
    let _ = watch.kill();
    let _ = watch.wait();
    drop(tmux);
    drop(mock);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    // Every row went to the default store, each naming the pane and the agent's pid.
    let rows = rows(&h.state.join("hooktrack/agents/claude/events.ndjson"));
    assert!(rows.len() > 10, "{rows:?}");
    assert!(rows.iter().all(|r| r["tmux_pane"] == pane.as_str()));
    assert!(rows.iter().all(|r| r["agent_pid"].as_u64().is_some()));

    let rows = crate::scratch_home::rows(&h.state.join("hooktrack/agents/qwen/events.ndjson"));
    assert!(rows.len() > 5, "{rows:?}");
    assert!(rows.iter().all(|r| r["tmux_pane"] == qpane.as_str()));
    assert!(rows.iter().all(|r| r["agent_pid"].as_u64().is_some()));

    let undo = h.run(&["setup", "--undo"]);
    assert!(undo.status.success(), "{}", text(&undo));
    assert!(!settings.exists(), "setup created it: {}", text(&undo));
    assert_eq!(
        fs::read_to_string(&qwen_settings).unwrap(),
        QWEN_SETTINGS,
        "{}",
        text(&undo)
    );
}

/// Qwen Code settings as Qwen Code 0.24.4 itself leaves them (tabs, `$version` last, no
/// final newline): it rewrites a file without `$version` when it starts (seen: `{"ui" :
/// …}` came back migrated and re-indented, which `--undo` then rightly keeps, removing
/// only hooktrack's entries), so a person who has run it has this shape.
const QWEN_SETTINGS: &str = "{\n\t\"ui\": {\n\t\t\"hideTips\": false\n\t},\n\t\"$version\": 4\n}";

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![e2e!(
        setup_then_a_claude_typed_in_a_tmux_pane_shows_in_watch_tmux,
        [NpmClis, QwenCode, Tmux]
    )]
}
