//! Attention that reaches the person, against a real tmux server on a private socket
//! with a client attached on a pty of its own (`script`), its terminal output captured:
//! a notification from a `watch` in a background window reaches the client and rings the
//! agent's window; the server counts what waits; `hooktrack jump`'s menu takes the client
//! to the pane that waits; a finished turn waits until the person has seen its pane.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use crate::support::{Wake, append, approved_and_stopped, kimi, prompt};
use crate::tmux::{Server, row};
use crate::watch::hooktrack;

/// Waits (bounded) until `ready` gives a value.
fn wait_until<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Wake::PATIENCE;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A tmux client attached through `script` on a pty of its own: what the server (or
/// anyone) writes to its terminal lands in `out`; what is written to `keys` is typed.
struct Client {
    script: Child,
    keys: Option<ChildStdin>,
    out: PathBuf,
    name: String,
}

impl Client {
    fn attach(server: &Server, dir: &Path) -> Self {
        let out = dir.join("client.out");
        let mut script = Command::new("script")
            .args(["-q", "-f", "-c"])
            .arg(format!("tmux -L {} attach -t t", server.socket))
            .arg(&out)
            .env("TERM", "xterm-256color")
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run script");
        let keys = script.stdin.take();
        let name = wait_until("the client to attach", || {
            let names = server.run(&["list-clients", "-F", "#{client_name}"]);
            names.lines().next().map(str::to_owned)
        });
        Client {
            script,
            keys,
            out,
            name,
        }
    }

    fn output(&self) -> Vec<u8> {
        fs::read(&self.out).unwrap_or_default()
    }

    /// Waits until the terminal got `needle` after its first `from` bytes.
    fn wait_output(&self, from: usize, needle: &[u8], what: &str) {
        wait_until(what, || {
            let out = self.output();
            out.get(from..)?
                .windows(needle.len())
                .any(|w| w == needle)
                .then_some(())
        });
    }

    fn press(&mut self, key: &str) {
        use std::io::Write;
        let keys = self.keys.as_mut().expect("the client's keyboard");
        keys.write_all(key.as_bytes()).expect("type");
        keys.flush().expect("type");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.keys = None;
        let _ = self.script.kill();
        let _ = self.script.wait();
    }
}

/// A format read on the server (`display-message -p`), for `target` if given.
fn read(server: &Server, target: &[&str], format: &str) -> String {
    let mut args = vec!["display-message", "-p"];
    args.extend(target);
    args.push(format);
    server.run(&args).trim_end().to_owned()
}

#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn a_waiting_agent_reaches_every_client_and_the_menu_takes_you_to_it() {
    let root = tempfile::tempdir().expect("tempdir");
    let server = Server::start("attention", &[]);
    let agent = server
        .run(&[
            "new-window",
            "-d",
            "-a",
            "-t",
            "t:0",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 600",
        ])
        .trim()
        .to_owned();
    let mut client = Client::attach(&server, root.path());
    let store = root.path().join("a").join("events.ndjson");
    fs::create_dir_all(store.parent().expect("a parent")).expect("mkdir");
    let rows = |first: u64, payloads: &[String]| -> Vec<String> {
        payloads
            .iter()
            .zip(first..)
            .map(|(p, seq)| row(seq, p, Some(&agent)))
            .collect()
    };
    append(
        &store,
        &rows(1, &[kimi("SessionStart", r#""source":"startup""#)]),
    );

    // `watch` in a window of its own, never shown: tmux would forward its passthrough
    // to nobody.
    let watch_window = server
        .run(&[
            "new-window",
            "-d",
            "-a",
            "-t",
            "t:1",
            "-P",
            "-F",
            "#{pane_id}",
            &format!(
                "exec '{}' watch --ndjson --notify --tmux --recheck-ms 50 '{}' > '{}' 2>&1",
                env!("CARGO_BIN_EXE_hooktrack"),
                store.display(),
                root.path().join("watch.out").display(),
            ),
        ])
        .trim()
        .to_owned();
    wait_until("the watch to publish", || {
        (server
            .options(&agent)
            .get("@hooktrack_agent")
            .map(String::as_str)
            == Some("kimi-code")
            && !read(&server, &[], "#{@hooktrack_watch}").is_empty())
        .then_some(())
    });
    assert_eq!(read(&server, &["-c", &client.name], "#{window_index}"), "0");
    assert_eq!(
        read(&server, &["-t", &watch_window], "#{window_active}"),
        "0"
    );

    let [submit, started] = prompt(1);
    append(
        &store,
        &rows(
            2,
            &[
                submit,
                started,
                kimi(
                    "PreToolUse",
                    r#""tool_call_id":"c1","tool_name":"Bash","tool_input":{"command":"cargo build --release;\u001b]2;x\u0007 #{pane_id}"}"#,
                ),
                kimi(
                    "PermissionRequest",
                    r#""tool_call_id":"c1","turn_id":1,"id":"a1","tool_name":"Bash","tool_input":{"command":"cargo build --release;\u001b]2;x\u0007 #{pane_id}"}"#,
                ),
            ],
        ),
    );
    // The call and what it acts on, made safe: its ESC and BEL shown, no `;` to end the
    // sequence's field, no tmux format.
    let call = "Bash: cargo build --release_\\u{1b}]2_x\\u{7} __pane_id_";
    let said = format!("\x1b]777;notify;kimi-code waits for you;{call} · {agent}");
    client.wait_output(0, said.as_bytes(), "OSC 777 on the client's terminal");
    let said = format!("\x1b]9;kimi-code waits for you: {call} · {agent}");
    client.wait_output(0, said.as_bytes(), "OSC 9");
    wait_until("the bell flag on the agent's window", || {
        (read(&server, &["-t", &agent], "#{window_bell_flag}") == "1").then_some(())
    });
    wait_until("one waiting", || {
        (read(&server, &[], "#{@hooktrack_waiting} #{@hooktrack_done}") == "1 0").then_some(())
    });
    let options = server.options(&agent);
    assert_eq!(options["@hooktrack_waits"], "blocked");
    // The command it waits on, cut and made safe: no tmux format, no terminal escape.
    // Read as a format reads it (show-options quotes backslashes).
    assert_eq!(
        read(&server, &["-t", &agent], "#{@hooktrack_summary}"),
        "waits on Bash: cargo build --release_\\u{1b}]2_x\\u{7} __pane_id_"
    );
    assert!(
        options["@hooktrack_waits_since"].parse::<i64>().is_ok(),
        "{options:?}"
    );

    // `hooktrack jump` for the client, which must succeed.
    let run_jump = |client: &Client| {
        let out = hooktrack()
            .args([
                "jump",
                "--tmux-socket",
                &server.socket,
                "--client",
                &client.name,
            ])
            .env_remove("TMUX")
            .output()
            .expect("run jump");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The menu, on the client; its first line is the agent.
    let jump = |client: &Client| {
        let from = client.output().len();
        run_jump(client);
        client.wait_output(from, b"1 waiting", "the menu drawn");
    };
    jump(&client);
    client.press("1");
    wait_until("the client on the agent's pane", || {
        (read(&server, &["-c", &client.name], "#{pane_id}") == agent).then_some(())
    });

    // The person goes elsewhere; the turn ends: it waits, as done, until they look.
    server.run(&["select-window", "-t", "t:0"]);
    wait_until("the client back on window 0", || {
        (read(&server, &["-c", &client.name], "#{window_index}") == "0").then_some(())
    });
    append(&store, &rows(6, &approved_and_stopped()));
    wait_until("one done", || {
        (read(&server, &[], "#{@hooktrack_waiting} #{@hooktrack_done}") == "0 1").then_some(())
    });
    assert_eq!(server.options(&agent)["@hooktrack_waits"], "done");
    assert_eq!(
        server.options(&agent)["@hooktrack_summary"],
        "turn ended: success"
    );
    jump(&client);
    client.press("1");
    wait_until("looked at: nothing done", || {
        (read(&server, &[], "#{@hooktrack_waiting} #{@hooktrack_done}") == "0 0"
            && server.options(&agent)["@hooktrack_waits"].is_empty())
        .then_some(())
    });
    assert_eq!(read(&server, &["-c", &client.name], "#{pane_id}"), agent);

    // Nothing waits: the jump says so, and shows no menu.
    run_jump(&client);

    // The watch's window closed: its options and its mark on the server go with it.
    server.run(&["kill-window", "-t", &watch_window]);
    wait_until("the watch's options removed", || {
        (read(&server, &[], "#{@hooktrack_watch}").is_empty() && server.options(&agent).is_empty())
            .then_some(())
    });
}

/// The processes whose command line holds `needle` (the test's own socket path: only
/// what this test's server started), with their pids; zombies left out.
fn processes_with(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        if args.contains(needle) && !zombie {
            found.push((pid, args));
        }
    }
    found
}

fn watches(socket_path: &str) -> Vec<u32> {
    processes_with(socket_path)
        .into_iter()
        .filter(|(_, args)| args.contains("watch --tmux"))
        .map(|(pid, _)| pid)
        .collect()
}

/// Issue 33 item 4: a fresh server whose config is the plugin's `run-shell` line starts
/// one watch; a second start is a no-op; a watch killed outright is started again (the
/// status line says `hooktrack down` meanwhile); the server's end ends it.
#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn the_plugin_keeps_one_watch_per_server_for_as_long_as_the_server_runs() {
    let root = tempfile::tempdir().expect("tempdir");
    let plugin = concat!(env!("CARGO_MANIFEST_DIR"), "/hooktrack.tmux");
    let conf = root.path().join("tmux.conf");
    fs::write(&conf, format!("run-shell '{plugin}'\n")).expect("write the config");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hooktrack"))
        .parent()
        .expect("the binary's folder")
        .to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("a PATH");
    let state = root.path().join("state");
    let server = Server::start_with_config(
        "plugin",
        &conf,
        &[
            ("PATH", path.to_str().expect("a UTF-8 PATH")),
            ("HOME", root.path().to_str().expect("a UTF-8 path")),
            ("XDG_STATE_HOME", state.to_str().expect("a UTF-8 path")),
        ],
    );
    let socket_path = read(&server, &[], "#{socket_path}");
    let first = wait_until("the plugin's watch", || {
        let pid = read(&server, &[], "#{@hooktrack_watch}");
        (!pid.is_empty()).then_some(pid)
    });
    assert_eq!(
        watches(&socket_path),
        [first.parse::<u32>().expect("a pid")]
    );
    assert!(!read(&server, &[], "#{E:status-right}").contains("hooktrack down"));

    // The plugin line again (a config sourced twice): the lock is held, nothing starts.
    server.run(&["run-shell", plugin]);
    let keepers = processes_with(&socket_path)
        .into_iter()
        .filter(|(_, args)| args.contains("hooktrack.tmux keep"))
        .count();
    // The keeper and its sentinel (a subshell of it, the same command line).
    assert_eq!(keepers, 2, "{:?}", processes_with(&socket_path));
    assert_eq!(watches(&socket_path).len(), 1);

    // Killed outright, the watch cannot say it stopped; the keeper says it and starts
    // another.
    let first: u32 = first.parse().expect("a pid");
    assert!(
        Command::new("kill")
            .args(["-KILL", &first.to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let second = wait_until("a second watch", || {
        let pid = read(&server, &[], "#{@hooktrack_watch}");
        (!pid.is_empty() && pid != first.to_string()).then_some(pid)
    });
    assert_eq!(
        watches(&socket_path),
        [second.parse::<u32>().expect("a pid")]
    );
    assert!(
        server
            .run(&["show-options", "-gv", "status-right"])
            .contains("hooktrack down")
    );

    // The server ends: so do the keeper and the watch.
    server.run(&["kill-server"]);
    wait_until("the keeper and the watch gone", || {
        processes_with(&socket_path).is_empty().then_some(())
    });
}

/// With no `hooktrack` on the server's PATH, no watch runs: the status line says so.
#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn the_status_line_says_hooktrack_down_when_no_watch_runs() {
    let root = tempfile::tempdir().expect("tempdir");
    let plugin = concat!(env!("CARGO_MANIFEST_DIR"), "/hooktrack.tmux");
    let conf = root.path().join("tmux.conf");
    fs::write(&conf, format!("run-shell '{plugin}'\n")).expect("write the config");
    let server = Server::start_with_config("down", &conf, &[("PATH", "/usr/bin:/bin")]);
    let right = read(&server, &[], "#{E:status-right}");
    assert!(right.contains("hooktrack down"), "{right}");
    assert_eq!(read(&server, &[], "#{@hooktrack_watch}"), "");
}

/// A Claude Code row of generation 1 from the pane `@PANE@` (the fake agent puts its own).
fn claude_row(seq: u64, event: &str, fields: &str) -> String {
    format!(
        r#"{{"v":1,"provider":"claude","generation":1,"via":"http","sequence":{seq},"emitter_seq":{seq},"event":"{event}","payload":{{"hook_event_name":"{event}","session_id":"s1","prompt_id":"p1"{fields}}},"tmux_pane":"@PANE@"}}"#
    )
}

/// Issue 33 item 1 under `hooktrack session`: run inside a tmux pane, the launch reads the
/// pane its rows name while the agent waits on the user, as `watch --tmux` does: the
/// dialog drawn and then gone ends the blocked window (source `screen`) long before the
/// call's end. The agent is a script that writes the rows its hooks would, draws the
/// dialog's line and waits for the key.
#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn a_session_in_a_tmux_pane_ends_a_dialog_once_its_pane_no_longer_draws_it() {
    dialog_ended_by_its_pane(false);
}

/// A read of the pane that `tmux` answers too late (a loaded machine: the first
/// `capture-pane` takes a second, past the reader's wait) is only a read not taken: the
/// pane is read again and the dialog still ends on screen. Before, a late read lost the
/// pane until a row named it again, and Codex's and Gemini CLI's dialogs, whose hook is the
/// last row before the call's end, stayed `blocked` for the whole call.
#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn a_pane_read_answered_late_is_read_again_and_still_ends_the_dialog() {
    dialog_ended_by_its_pane(true);
}

/// The case above; with `first_read_late`, the first `capture-pane` waits a second before
/// it runs.
fn dialog_ended_by_its_pane(first_read_late: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    fs::create_dir_all(&home).expect("mkdir home");
    let root = dir.path().join("root");
    let events = root.join("hook-observation/claude/events.ndjson");
    let call = r#","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"make"}"#;
    let asked = [
        claude_row(1, "SessionStart", r#","source":"startup""#),
        claude_row(2, "UserPromptSubmit", r#","prompt":"go""#),
        claude_row(3, "PreToolUse", call),
        claude_row(4, "PermissionRequest", call),
    ];
    let ended = [
        claude_row(5, "PostToolUse", call),
        claude_row(6, "Stop", r#","stop_hook_active":false"#),
    ];
    fs::write(dir.path().join("asked.rows"), asked.join("\n") + "\n").expect("rows");
    fs::write(dir.path().join("ended.rows"), ended.join("\n") + "\n").expect("rows");
    let done = dir.path().join("done");
    let agent = dir.path().join("agent.sh");
    fs::write(
        &agent,
        format!(
            "#!/bin/sh\n\
             d='{dir}'\n\
             sed \"s/@PANE@/$TMUX_PANE/\" \"$d/asked.rows\" >> '{events}'\n\
             printf 'Do you want to proceed?\\n 1. Yes\\n'\n\
             read answer\n\
             clear\n\
             printf 'running\\n'\n\
             n=0\n\
             while [ ! -e '{done}' ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done\n\
             sed \"s/@PANE@/$TMUX_PANE/\" \"$d/ended.rows\" >> '{events}'\n",
            dir = dir.path().display(),
            events = events.display(),
            done = done.display(),
        ),
    )
    .expect("agent script");
    // The session's `tmux`: the real one, logging each `capture-pane` that shows the
    // dialog (the session has seen it drawn: an answer from then on can be seen gone).
    let wrap = dir.path().join("wrap");
    let reads = dir.path().join("reads");
    let late = dir.path().join("late");
    let delay = if first_read_late {
        format!(
            "case \"$*\" in *capture-pane*) [ -e '{0}' ] || {{ : > '{0}'; sleep 1; }};; esac\n",
            late.display()
        )
    } else {
        String::new()
    };
    crate::scratch_home::tmux_logging_dialogs(&wrap, &["Do you want to proceed?"], &reads, &delay);
    let out = dir.path().join("session.ndjson");
    let server = Server::start("session-screen", &[("HOME", &home.display().to_string())]);
    let pane = server
        .run(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!(
                "PATH='{}':\"$PATH\" exec '{}' session --agent claude-code --format ndjson --output '{}' --root '{}' -- sh '{}' 2> '{}'",
                wrap.display(),
                env!("CARGO_BIN_EXE_hooktrack"),
                out.display(),
                root.display(),
                agent.display(),
                dir.path().join("session.err").display(),
            ),
        ])
        .trim()
        .to_owned();
    let lines = || -> Vec<serde_json::Value> {
        fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let phase = |l: &serde_json::Value| l["posture"]["turn"]["phase"].clone();
    wait_until("the session showing the dialog", || {
        lines().iter().any(|l| phase(l) == "blocked").then_some(())
    });
    wait_until("the dialog drawn", || {
        server
            .run(&["capture-pane", "-p", "-t", &pane])
            .contains("Do you want to proceed?")
            .then_some(())
    });
    wait_until("the session reading the dialog drawn", || {
        fs::read_to_string(&reads)
            .is_ok_and(|r| r.contains("drawn"))
            .then_some(())
    });
    assert_eq!(late.exists(), first_read_late, "the late read was made");
    server.run(&["send-keys", "-t", &pane, "Enter"]);
    let deadline = Instant::now() + Wake::PATIENCE;
    let answered = loop {
        let now = lines();
        if let Some(l) = now
            .iter()
            .find(|l| phase(l) == "active" && l["source"] == "screen")
        {
            break l.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no screen line showing the agent running: {now:#?}\npane:\n{}",
            server.run(&["capture-pane", "-p", "-t", &pane])
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        !lines().iter().any(|l| l["event"] == "PostToolUse"),
        "the call's end came first: {answered}"
    );
    fs::write(&done, "").expect("done");
    let end = wait_until("the session's end line", || {
        lines().into_iter().find(|l| l.get("turns").is_some())
    });
    assert_eq!(end["turns"][0]["result"], "success", "{end}");
}
