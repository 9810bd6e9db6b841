//! `hooktrack setup` / `setup --undo` in a scratch home, and the default store a routed
//! hook delivers to when the agent was started without hooktrack's environment. The
//! same with real agents typed into tmux panes is an end-to-end test
//! (`tests/e2e/setup.rs`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::scratch_home::{Home, TmuxServer, rows, text, wait_pane, write_script};

/// Settings in a shape no serializer writes (tabs, key order, no final newline): only a
/// byte-for-byte restore gives them back.
const CLAUDE_SETTINGS: &str = "{\t\"theme\":\"dark\",\n\t\"model\" : \"x\"}";

#[test]
fn setup_installs_for_the_agents_found_and_undo_restores_every_byte() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    // Gemini CLI's directory without its file: setup creates the file, undo removes it.
    fs::create_dir_all(h.file(".gemini")).unwrap();
    let gemini = h.file(".gemini/settings.json");

    let said = h.run_ok(&["setup"]);
    assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    assert!(said.contains("claude: check: ok"), "{said}");
    // No agent on PATH to ask: the window is said anyway, as `check` says it.
    assert!(
        said.contains(
            "claude: check: Claude Code: `claude --version` gave no version; the tested window is"
        ),
        "{said}"
    );
    assert!(said.contains("gemini: 11 hooktrack entries"), "{said}");
    // Gemini's check names its auth and folder trust; the tmux lines follow.
    assert!(
        said.contains("gemini: check:") && said.contains("selectedType"),
        "{said}"
    );
    assert!(said.contains("set -g status-right"), "{said}");
    assert!(said.contains("set -g window-status-format"), "{said}");
    assert!(
        said.contains("bind-key W run-shell 'hooktrack jump --client \"#{client_name}\"'"),
        "{said}"
    );
    // Agents not found are not touched.
    assert!(!h.file(".codex").exists());
    let installed = fs::read_to_string(&claude).unwrap();
    assert!(installed.contains("emit --observer hooktrack --agent 'claude'"));
    assert!(!installed.contains("--dir"), "routed entries name no store");
    // A second setup changes nothing undo must know about.
    assert!(h.run(&["setup"]).status.success());
    assert_eq!(fs::read_to_string(&claude).unwrap(), installed);
    assert_eq!(mode(&h.state.join("hooktrack")), 0o700);

    h.run_ok(&["setup", "--undo"]);
    assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
    assert!(!gemini.exists(), "setup created it: undo removes it");
    assert!(h.file(".gemini").is_dir(), "the directory was there before");
    assert!(!h.state.join("hooktrack/setup.json").exists());
    // Nothing left to undo.
    let out = h.run(&["setup", "--undo"]);
    assert!(text(&out).contains("nothing to undo"), "{}", text(&out));
}

#[test]
fn undo_keeps_an_edit_made_since_and_removes_only_the_entries() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let edited = fs::read_to_string(&claude)
        .unwrap()
        .replace("\"dark\"", "\"light\"");
    fs::write(&claude, &edited).unwrap();

    let said = h.run_ok(&["setup", "--undo"]);
    assert!(said.contains("hooktrack's entries removed"), "{said}");
    let after = fs::read_to_string(&claude).unwrap();
    assert!(after.contains("\"light\""), "{after}");
    assert!(!after.contains("hooktrack"), "{after}");
}

/// `sudo -E hooktrack setup`: root, with the user's $HOME and sudo's $SUDO_UID. Setup
/// refuses in one line and writes nothing, rather than leave the user's files root's.
/// Being root is what triggers it: run as another user, the same environment is set up.
#[test]
fn sudo_e_setup_is_refused_and_leaves_nothing_owned_by_root() {
    use std::os::unix::fs::MetadataExt;
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    let user = 4242;
    let as_root = rustix::process::geteuid().is_root();
    if as_root {
        // The home is the user's, as `sudo -E` finds it.
        for path in [&h.home, &h.file(".claude"), &claude] {
            std::os::unix::fs::chown(path, Some(user), Some(user)).unwrap();
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .arg("setup")
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", &h.bin)
        .env("SUDO_UID", user.to_string())
        .current_dir(&h.home)
        .output()
        .unwrap();
    let said = text(&out);
    if as_root {
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.contains(&format!(
                "refusing to set up as root for uid {user} ($HOME {} belongs to uid {user}, started through sudo)",
                h.home.display()
            )),
            "{said}"
        );
        assert!(said.contains("without sudo"), "{said}");
        assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
        assert_eq!(fs::metadata(&claude).unwrap().uid(), user);
        assert!(!h.state.exists(), "setup wrote its record");
    } else {
        assert!(out.status.success(), "{said}");
        assert!(!said.contains("refusing"), "{said}");
        assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    }
}

#[test]
fn setup_finds_nothing_in_an_empty_home() {
    let h = Home::new();
    let said = h.run_ok(&["setup"]);
    assert!(said.contains("no supported agent found"));
    assert_eq!(fs::read_dir(&h.home).unwrap().count(), 0);
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A routed hook run the way an agent runs it, without any `HOOKTRACK_*` variable.
fn unrouted_hook(h: &Home, event: &str, payload: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooktrack-hook"))
        .args(["emit", "--observer", "hooktrack", "--agent", "claude"])
        .args(["--event", event])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("TMUX_PANE", "%5")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn an_agent_started_without_hooktrack_delivers_to_its_default_store() {
    let h = Home::new();
    let payload = r#"{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    let out = unrouted_hook(&h, "UserPromptSubmit", payload);
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
    let store = h.state.join("hooktrack/agents/claude");
    assert_eq!(mode(&store), 0o700);
    let rows = rows(&store.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["provider"], "claude");
    assert_eq!(row["via"], "command_fallback");
    assert_eq!(row["generation"], 0);
    assert_eq!(row["emitter_seq"], 1);
    assert_eq!(row["payload"]["session_id"], "s1");
    assert_eq!(row["tmux_pane"], "%5");
    // The process that ran the hook: this test, standing in for the agent.
    assert_eq!(row["agent_pid"], std::process::id());
    // No collector is expected there: nothing to complain about in the store's log.
    assert!(!store.join("emit.log").exists());
    // Replay reads the default store like any other.
    h.run_ok(&["replay", store.join("events.ndjson").to_str().unwrap()]);
}

/// Root plants for another user (`nobody`); as another user the test plants nothing.
fn plant_as_nobody(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if rustix::process::geteuid().as_raw() != 0 {
        return false;
    }
    fs::set_permissions(path, fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    true
}

/// Issue 34 item 4: a loose `agents/` let another uid plant `agents/claude` before the
/// first hook, and the user's deliveries then went to the log only. The hook makes its
/// own folders private (`hooktrack/` and `agents/` 0700), moves the planted folder aside
/// (saying where, in the store's log) and delivers to a store of the user's own.
#[test]
fn a_planted_agents_folder_never_costs_the_user_a_delivery() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let h = Home::new();
    let agents = h.state.join("hooktrack/agents");
    fs::create_dir_all(&agents).unwrap();
    fs::set_permissions(h.state.join("hooktrack"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&agents, fs::Permissions::from_mode(0o777)).unwrap();
    let planted = agents.join("claude");
    fs::create_dir(&planted).unwrap();
    let foreign = plant_as_nobody(&planted);
    if !foreign {
        // Not root: a symbolic link stands in for the plant (also never followed).
        fs::remove_dir(&planted).unwrap();
        std::os::unix::fs::symlink(&h.home, &planted).unwrap();
    }
    let payload = r#"{"session_id":"s1","hook_event_name":"Stop"}"#;
    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    assert_eq!(mode(&h.state.join("hooktrack")), 0o700);
    assert_eq!(mode(&agents), 0o700);
    let store = agents.join("claude");
    let meta = fs::symlink_metadata(&store).unwrap();
    assert!(meta.is_dir() && meta.uid() == rustix::process::geteuid().as_raw());
    let rows = rows(&store.join("events.ndjson"));
    assert_eq!(rows.len(), 1, "the delivery reached the user's own store");
    assert_eq!(rows[0]["payload"]["session_id"], "s1");
    let aside: Vec<String> = fs::read_dir(&agents)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("claude.foreign-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    let log = fs::read_to_string(store.join("emit.log")).unwrap();
    assert!(
        log.contains("moved ") && log.contains(&aside[0]) && log.contains("aside"),
        "{log}"
    );
    if foreign {
        assert!(aside[0].starts_with("claude.foreign-65534-"), "{aside:?}");
    }
}

/// Issue 34 item 4: `watch` follows only stores of the user's own, in modes no one else
/// can write: a store another uid planted in the default stores' folder is named in a
/// notice and not shown; the user's own store beside it is.
#[test]
fn watch_follows_only_the_users_own_stores() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    let payload = r#"{"session_id":"mine","hook_event_name":"Stop"}"#;
    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    let planted = h.state.join("hooktrack/agents/codex");
    fs::create_dir_all(&planted).unwrap();
    fs::write(
        planted.join("events.ndjson"),
        r#"{"v":1,"provider":"codex","generation":0,"via":"command_fallback","emitter_seq":1,"received_at":"2026-01-01T00:00:00.000Z","event":"PermissionRequest","payload":{"session_id":"theirs","hook_event_name":"PermissionRequest","tool_name":"rm"}}"#.to_owned() + "\n",
    )
    .unwrap();
    if !plant_as_nobody(&planted) {
        // Not root: a store writable by others stands in for the plant.
        fs::set_permissions(&planted, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(["watch", "--ndjson"])
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for out in [
        Box::new(watch.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(watch.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
    }
    let mut seen = Vec::new();
    let patience = std::time::Duration::from_secs(60);
    // The refusal, and the user's store's line.
    while !(seen.iter().any(|l: &String| l.contains("not followed"))
        && seen
            .iter()
            .any(|l: &String| l.contains("\"session\":\"claude\"")))
    {
        match rx.recv_timeout(patience) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let refused = seen.iter().find(|l| l.contains("not followed")).cloned();
    let refused = refused.unwrap_or_else(|| panic!("no refusal in {seen:#?}"));
    assert!(
        refused.contains(&planted.display().to_string()),
        "{refused}"
    );
    assert!(
        refused.contains("owned by uid 65534") || refused.contains("writable by others"),
        "{refused}"
    );
    assert!(
        seen.iter().any(|l| l.contains("\"session\":\"claude\"")),
        "{seen:#?}"
    );
    assert!(
        !seen.iter().any(|l| l.contains("\"session\":\"codex\"")),
        "{seen:#?}"
    );
}

/// A stand-in agent that runs its hooks through `sh -c` as the CLIs do (`SessionStart`,
/// `UserPromptSubmit`), then a tool (`forge-tool`, a script) that runs the hook command
/// itself with a forged `Stop` (`"forged":true`), then its own `Stop`.
fn stand_in_with_a_forging_tool(h: &Home) -> PathBuf {
    let hook = env!("CARGO_BIN_EXE_hooktrack-hook");
    let command =
        |event: &str| format!("'{hook}' emit --observer hooktrack --agent claude --event {event}");
    let payload = |event: &str, extra: &str| {
        format!(
            r#"{{"session_id":"s1","hook_event_name":"{event}","transcript_path":"/nonexistent/t.jsonl"{extra}}}"#
        )
    };
    let tool = h.home.join("forge-tool");
    write_script(
        &tool,
        &format!(
            "#!/bin/sh\nprintf '%s' '{}' | {}\n",
            payload("Stop", r#","stop_hook_active":false,"forged":true"#),
            command("Stop")
        ),
    );
    let mut agent = String::from("#!/bin/sh\nset -eu\n");
    for (event, extra) in [
        ("SessionStart", r#","source":"startup""#),
        ("UserPromptSubmit", r#","prompt":"list files""#),
    ] {
        agent += &format!(
            "printf '%s' '{}' | sh -c \"{}\"\n",
            payload(event, extra),
            command(event).replace('"', "\\\"")
        );
    }
    agent += &format!("'{}'\n", tool.display());
    agent += &format!(
        "printf '%s' '{}' | sh -c \"{}\"\n",
        payload("Stop", r#","stop_hook_active":false"#),
        command("Stop")
    );
    let stand_in = h.home.join("stand-in-agent");
    write_script(&stand_in, &agent);
    stand_in
}

/// Issue 34 item 7: an agent started without hooktrack runs its hooks through `sh -c`;
/// mid-turn one of its tools (`forge-tool`, a script) runs the hook command itself with a
/// `Stop`. The tool's row names the tool as the process that ran it (`agent_pid`), not the
/// session's agent: it is counted (`row_not_from_agent`), shown by `--explain`, and the
/// turn goes on until the agent's own `Stop` ends it.
#[test]
fn a_stop_forged_by_a_tool_step_never_ends_the_turn() {
    let h = Home::new();
    let stand_in = stand_in_with_a_forging_tool(&h);
    let ran = Command::new(&stand_in)
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let events = h.state.join("hooktrack/agents/claude/events.ndjson");
    let stored = rows(&events);
    assert_eq!(stored.len(), 4, "{stored:#?}");
    let said = h.run_ok(&["replay", "--explain", events.to_str().unwrap()]);
    assert!(said.contains("row_not_from_agent"), "{said}");
    the_forged_stop_ended_nothing(&h, &events);
}

/// The store of [`stand_in_with_a_forging_tool`]'s run: the forged row names another
/// process than the agent's own rows and was run by the tool; a replay counts it
/// (`row_not_from_agent`) and has one turn, ended by the agent's own `Stop` after it.
fn the_forged_stop_ended_nothing(h: &Home, events: &Path) {
    let stored = rows(events);
    let forged_line = stored
        .iter()
        .position(|r| r["payload"]["forged"] == true)
        .unwrap_or_else(|| panic!("no forged row in {stored:#?}"));
    let forged = &stored[forged_line];
    let own = stored
        .iter()
        .find(|r| r["event"] == "SessionStart")
        .unwrap_or_else(|| panic!("no SessionStart in {stored:#?}"));
    assert_ne!(forged["agent_pid"], own["agent_pid"], "{forged} {own}");
    assert!(forged["agent_pid"].is_u64(), "{forged}");
    assert_eq!(forged["emitter_parent"]["comm"], "forge-tool", "{forged}");
    let out = h.run(&["replay", "--format", "json", events.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let turns = doc["turns"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(turns.len(), 1, "{doc}");
    assert_eq!(
        doc["diagnostics"]["counters"]["row_not_from_agent"], 1,
        "{doc}"
    );
    // The agent's own Stop is the next hook row after the forged one (line numbers are
    // 1-based; a launcher's rows may stand between).
    let own_stop = stored[forged_line + 1..]
        .iter()
        .position(|r| r["event"] == "Stop")
        .map(|i| forged_line + 1 + i + 1)
        .unwrap_or_else(|| panic!("no Stop after the forged one in {stored:#?}"));
    assert_eq!(turns[0]["result"], "success", "{doc}");
    assert_eq!(turns[0]["ended_by"], "hook", "{doc}");
    assert_eq!(turns[0]["last_row"], own_stop as u64, "{doc}");
}

/// Issue 34 item 7, under `hooktrack session`: the launch routes the agent's hooks to its
/// own store (`$HOOKTRACK_DIR`), and a tool the agent runs inherits that routing. The
/// tool's forged `Stop` names the tool as the process that ran it, not the agent: it is
/// counted (`row_not_from_agent`) and the turn goes on until the agent's own `Stop`, in
/// what `session` said at its end and in a replay of its store.
#[test]
fn a_stop_forged_by_a_tool_step_under_session_never_ends_the_turn() {
    let h = Home::new();
    let stand_in = stand_in_with_a_forging_tool(&h);
    let root = h.home.join("session-root");
    let out = h.session("claude", &root, &stand_in);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    // What session said at its end counts the forged row.
    assert!(said.contains("row_not_from_agent"), "{said}");
    the_forged_stop_ended_nothing(&h, &root.join("hook-observation/claude/events.ndjson"));
}

#[test]
fn the_default_store_is_rotated_past_its_size() {
    let h = Home::new();
    let store = h.state.join("hooktrack/agents/claude");
    let payload = r#"{"session_id":"s1","hook_event_name":"Stop"}"#;
    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    let events = store.join("events.ndjson");
    // Over the rotation size with whole rows, as the hooks would have made it.
    let row = fs::read_to_string(&events).unwrap();
    let limit = hooktrack_producer::emit::default_store::ROTATE_BYTES as usize;
    let big = row.repeat(limit / row.len() + 2);
    fs::write(&events, &big).unwrap();

    assert!(unrouted_hook(&h, "Stop", payload).status.success());
    let rotated = store.join("events.ndjson.1");
    assert_eq!(fs::read_to_string(&rotated).unwrap(), big);
    let now = rows(&events);
    assert_eq!(now.len(), 1, "the new file holds only the new row");
    assert_eq!(
        now[0]["emitter_seq"], 2,
        "the counter goes on across the rotation"
    );
}

#[test]
fn a_session_keeps_its_own_store() {
    let h = Home::new();
    let session = h.home.join("session-store");
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooktrack-hook"))
        .args([
            "emit",
            "--observer",
            "hooktrack",
            "--agent",
            "claude",
            "--event",
            "Stop",
        ])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("HOOKTRACK_DIR", &session)
        .env("HOOKTRACK_GENERATION", "4")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"session_id":"s1","hook_event_name":"Stop"}"#)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let rows = rows(&session.join("events.ndjson"));
    assert_eq!(rows[0]["generation"], 4);
    // A session's rows name the agent process too: a tool step's row is told apart.
    assert_eq!(rows[0]["agent_pid"], std::process::id(), "{}", rows[0]);
    assert!(!h.state.join("hooktrack/agents").exists());
}

#[test]
fn watch_without_a_path_follows_a_default_store_that_appears_later() {
    use std::io::BufRead;
    let h = Home::new();
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(["watch", "--ndjson", "--recheck-ms", "50"])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    let (etx, errs) = std::sync::mpsc::channel::<String>();
    let stderr = watch.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = etx.send(line);
        }
    });
    // The watch has looked at the (missing) folder once it says so.
    let said = errs
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap();
    assert!(said.contains("watching every default store"), "{said}");
    let payload = r#"{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    assert!(
        unrouted_hook(&h, "UserPromptSubmit", payload)
            .status
            .success()
    );
    // Bounded: the watch re-lists the folder every second.
    let line = lines.recv_timeout(std::time::Duration::from_secs(30));
    let _ = watch.kill();
    let _ = watch.wait();
    let line: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
    assert_eq!(line["session"], "claude");
    assert_eq!(line["agent"], "claude-code");
    assert_eq!(line["tmux_pane"], "%5");
    assert_eq!(line["posture"]["turn"]["phase"], "active");
}

#[test]
fn watch_notify_sends_one_desktop_notification_per_transition() {
    let h = Home::new();
    let log = h.home.join("notified");
    let stub = h.bin.join("notify-send");
    fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let session = |event: &str, extra: &str| {
        let payload = format!(r#"{{"session_id":"s1","hook_event_name":"{event}"{extra}}}"#);
        assert!(unrouted_hook(&h, event, &payload).status.success());
    };
    // The store exists before the watch starts: what it holds then is the baseline.
    session("SessionStart", r#","source":"startup""#);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(["watch", "--notify", "--ndjson", "--recheck-ms", "50"])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", format!("{}:/usr/bin:/bin", h.bin.display()))
        .env("DISPLAY", ":0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    let bound = std::time::Duration::from_secs(30);
    assert!(lines.recv_timeout(bound).is_ok(), "the baseline update");
    session("UserPromptSubmit", r#","prompt":"hi""#);
    session(
        "PreToolUse",
        r#","tool_name":"Bash","tool_input":{"command":"ls"}"#,
    );
    session(
        "PermissionRequest",
        r#","tool_name":"Bash","tool_input":{"command":"ls"}"#,
    );
    // The answer comes once `watch` has shown the wait, as a person's would: rows that
    // reach it together are read as one change (on a loaded machine the wait was then
    // never shown, so never notified).
    let shown = std::time::Instant::now() + bound;
    loop {
        let left = shown.saturating_duration_since(std::time::Instant::now());
        let line = lines.recv_timeout(left).expect("watch shows the wait");
        let line: serde_json::Value = serde_json::from_str(&line).expect("an ndjson line");
        if line["posture"]["turn"]["phase"] == "blocked" {
            break;
        }
    }
    session(
        "PostToolUse",
        r#","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{}"#,
    );
    session("Stop", "");
    // Bounded wait for the worker's two runs.
    let mut got = String::new();
    for _ in 0..600 {
        got = fs::read_to_string(&log).unwrap_or_default();
        if got.lines().count() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(
        got,
        "--app-name|hooktrack|claude-code waits for you|Bash: ls · %5 · claude|\n\
         --app-name|hooktrack|claude-code turn ended|success · %5 · claude|\n",
        "nothing for the baseline, one per transition"
    );
}

/// Issue 25 item 3: `watch` drops a session whose agent process is gone, after the grace
/// period. A stand-in agent (python, so the hook's parent is the agent, as with a real
/// CLI) runs the routed hook in a tmux pane and waits for a line; a row of an agent long
/// gone is in the store already. The watch (no path, `--tmux`, `--ndjson`, `--drop-after
/// 1`) drops the old session at once, shows the live one active, sees it `absent` when the
/// line ends it, then drops it: one `dropped` line, the pane's options removed.
#[test]
#[cfg_attr(
    not(hooktrack_tmux),
    ignore = "needs tmux on PATH (none when the tests were built)"
)]
fn watch_drops_a_session_whose_agent_is_gone() {
    let h = Home::new();
    // An agent that ran long ago, in a store of its own (each store holds one session: its
    // lines carry no session_id, the dropped line does): a process that has ended, its row
    // from 2020.
    let store = h.state.join("hooktrack/agents/old");
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    fs::create_dir_all(&store).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&store, fs::Permissions::from_mode(0o700)).unwrap();
    }
    fs::write(
        store.join("events.ndjson"),
        format!(
            "{{\"v\":1,\"provider\":\"claude\",\"generation\":0,\"via\":\"command_fallback\",\"emitter_seq\":1,\"received_at\":\"2020-01-01T00:00:00.000Z\",\"event\":\"UserPromptSubmit\",\"payload\":{{\"session_id\":\"s-old\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"x\"}},\"tmux_pane\":\"%99\",\"agent_pid\":{gone_pid}}}\n"
        ),
    )
    .unwrap();
    let agent = h.home.join("agent.py");
    fs::write(
        &agent,
        r#"import subprocess, sys
payload = b'{"session_id":"s-live","hook_event_name":"UserPromptSubmit","prompt":"hi"}'
subprocess.run([sys.argv[1], "emit", "--observer", "hooktrack", "--agent", "claude",
                "--event", "UserPromptSubmit"], input=payload, check=True)
print("agent-waiting", flush=True)
sys.stdin.readline()
"#,
    )
    .unwrap();
    let script = h.home.join("agent.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\nexport HOME='{home}' XDG_STATE_HOME='{state}'\npython3 '{agent}' '{hook}'\necho agent-ended\nexec cat\n",
            home = h.home.display(),
            state = h.state.display(),
            agent = agent.display(),
            hook = env!("CARGO_BIN_EXE_hooktrack-hook"),
        ),
    );
    let (tmux, pane) = TmuxServer::start("hooktrack-drop", &script, (100, 20));

    let mut watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args([
            "watch",
            "--ndjson",
            "--recheck-ms",
            "50",
            "--drop-after",
            "1",
        ])
        .args(["--tmux", "--tmux-socket", &tmux.socket])
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = crate::watch::lines_of(&mut watch);
    // Bounded waits: every step is a poll away (50 ms) or the grace (1 s) away.
    let mut seen: Vec<serde_json::Value> = Vec::new();
    /// Reads lines until one satisfies `done` (kept in `seen`, like every line read).
    fn until(
        lines: &std::sync::mpsc::Receiver<String>,
        seen: &mut Vec<serde_json::Value>,
        done: &dyn Fn(&serde_json::Value) -> bool,
    ) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(line) = lines.recv_timeout(left) else {
                return false;
            };
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            seen.push(v.clone());
            if done(&v) {
                return true;
            }
        }
        false
    }
    let dropped = |sid: &'static str| {
        move |v: &serde_json::Value| v["session_id"] == sid && v.get("dropped").is_some()
    };
    let phase = |v: &serde_json::Value| v["posture"]["turn"]["phase"].clone();
    let presence = |v: &serde_json::Value| v["posture"]["presence"].clone();

    // The old session: its agent was gone long before the grace period: dropped at once.
    assert!(until(&lines, &mut seen, &dropped("s-old")), "{seen:#?}");
    let old = seen.last().unwrap().clone();
    assert_eq!(old["session"], "old");
    assert_eq!(old["dropped"]["gone_since"], "2020-01-01T00:00:00.000Z");
    // The live one: active, its pid the stand-in agent's, on the pane.
    assert!(
        until(&lines, &mut seen, &|v| v["session"] == "claude"
            && phase(v) == "active"),
        "{seen:#?}"
    );
    let live = seen.last().unwrap().clone();
    let agent_pid = live["agent_pid"].as_u64().unwrap();
    assert_eq!(live["tmux_pane"], pane.as_str());
    let (_, published) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase") == "active"
    });
    assert!(published, "{}", tmux.screen(&pane));
    assert!(tmux.screen(&pane).contains("agent-waiting"));
    assert!(
        !seen.iter().any(|v| v["session"] == "old"
            && v.get("dropped").is_none()
            && v["at"].as_str() > old["at"].as_str()),
        "a dropped session is not reported again: {seen:#?}"
    );

    // The agent ends: absent, then dropped after the grace period.
    tmux.run(&["send-keys", "-t", &pane, "bye", "Enter"]);
    assert!(
        until(&lines, &mut seen, &|v| v["session"] == "claude"
            && presence(v) == "absent"),
        "{seen:#?}"
    );
    let absent = seen.last().unwrap().clone();
    assert!(absent["gone_since"].is_string(), "{absent:#}");
    assert!(
        absent["notices"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains(&format!("agent process {agent_pid} ended"))),
        "{absent:#}"
    );
    let (_, absent_published) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase") == "absent"
    });
    assert!(absent_published);
    assert!(until(&lines, &mut seen, &dropped("s-live")), "{seen:#?}");
    let (_, cleared) = wait_pane(&tmux, &pane, |t| {
        t.option(&pane, "@hooktrack_phase").is_empty()
    });
    let screen = tmux.screen(&pane);
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(cleared, "the dropped session's pane options are removed");
    assert!(screen.contains("agent-ended"), "{screen}");
    assert_eq!(
        seen.iter().filter(|v| v.get("dropped").is_some()).count(),
        2,
        "one dropped line per session: {seen:#?}"
    );
}

/// The plugin format (OpenCode): setup writes hooktrack's plugin beside a user's own,
/// `--undo` removes exactly hooktrack's file, and the `plugin/` folder only when setup
/// created it.
#[test]
fn setup_writes_the_opencode_plugin_and_undo_removes_exactly_it() {
    let h = Home::new();
    // A user's plugin already in OpenCode's plugin folder.
    let mine = h.file(".config/opencode/plugin/mine.js");
    fs::create_dir_all(mine.parent().unwrap()).unwrap();
    fs::write(&mine, "export const Mine = async () => ({});\n").unwrap();
    let plugin = h.file(".config/opencode/plugin/hooktrack.js");

    let said = h.run_ok(&["setup"]);
    assert!(said.contains("opencode: check: ok"), "{said}");
    let written = fs::read_to_string(&plugin).unwrap();
    assert!(
        written.starts_with("// hooktrack observer plugin "),
        "{written}"
    );
    assert!(written.contains("\"--agent\", \"opencode\""), "{written}");

    h.run_ok(&["setup", "--undo"]);
    assert!(!plugin.exists(), "setup created it: undo removes it");
    assert_eq!(
        fs::read_to_string(&mine).unwrap(),
        "export const Mine = async () => ({});\n"
    );

    // Only the config folder: setup creates `plugin/`, undo takes it away again.
    let h = Home::new();
    fs::create_dir_all(h.file(".config/opencode")).unwrap();
    assert!(h.run(&["setup"]).status.success());
    assert!(h.file(".config/opencode/plugin/hooktrack.js").is_file());
    let said = h.run_ok(&["setup", "--undo"]);
    assert!(!h.file(".config/opencode/plugin").exists(), "{said}");
    assert!(h.file(".config/opencode").is_dir());
}

/// Kilo CLI (OpenCode's plugin, rendered for Kilo): setup finds it by a `kilo` on `PATH`
/// alone, writes the plugin into `~/.config/kilo/plugin/` beside a user's own, and
/// `--undo` removes exactly that file.
#[test]
fn setup_finds_kilo_on_path_writes_its_plugin_and_undo_removes_exactly_it() {
    use std::os::unix::fs::PermissionsExt;

    let stub = |h: &Home| {
        let kilo = h.bin.join("kilo");
        fs::write(&kilo, "#!/bin/sh\necho 7.7.7\n").unwrap();
        fs::set_permissions(&kilo, fs::Permissions::from_mode(0o755)).unwrap();
    };
    // Nothing of Kilo's in HOME: the program on PATH is what setup finds.
    let h = Home::new();
    stub(&h);
    let plugin = h.file(".config/kilo/plugin/hooktrack.js");
    let said = h.run_ok(&["setup"]);
    assert!(said.contains("kilo: check: ok"), "{said}");
    let written = fs::read_to_string(&plugin).unwrap();
    assert!(written.contains("\"--agent\", \"kilo\""), "{written}");
    assert!(!h.file(".config/opencode").exists(), "{said}");
    let said = h.run_ok(&["setup", "--undo"]);
    assert!(!plugin.exists(), "{said}");
    assert!(!h.file(".config/kilo/plugin").exists(), "{said}");

    // A user's plugin beside it stays.
    let h = Home::new();
    stub(&h);
    let mine = h.file(".config/kilo/plugin/mine.js");
    fs::create_dir_all(mine.parent().unwrap()).unwrap();
    fs::write(&mine, "export const Mine = async () => ({});\n").unwrap();
    assert!(h.run(&["setup"]).status.success());
    assert!(h.file(".config/kilo/plugin/hooktrack.js").is_file());
    h.run_ok(&["setup", "--undo"]);
    assert!(!h.file(".config/kilo/plugin/hooktrack.js").exists());
    assert_eq!(
        fs::read_to_string(&mine).unwrap(),
        "export const Mine = async () => ({});\n"
    );
}

/// Kimi Code's own settings, in a shape no serializer writes (a comment, no final
/// newline): only a byte-for-byte restore gives them back.
const KIMI_CODE_CONFIG: &str =
    "# mine\ndefault_model = \"mock\"\n\n[models.mock]\nprovider = \"p\"";

/// A stand-in Kimi Code: runs every `[[hooks]]` entry of `~/.kimi-code/config.toml` (where
/// Kimi Code 2.1.0 reads it without `$KIMI_CODE_HOME`) for `SessionStart`, then for
/// `Stop`, each with its payload on stdin, the way Kimi Code runs its hooks: every entry
/// for the event, none told apart.
const KIMI_STAND_IN: &str = r#"#!/bin/sh
cfg="$HOME/.kimi-code/config.toml"
for event in SessionStart Stop; do
  sed -n "/^event = \"$event\"\$/{n;s/^command = \"\(.*\)\"\$/\1/p;}" "$cfg" | while IFS= read -r cmd; do
    printf '{"session_id":"session_stand_in","hook_event_name":"%s","client_type":"kimi_code_cli"}' "$event" | sh -c "$cmd"
  done
done
"#;

impl Home {
    /// `~/.kimi-code/config.toml` holding [`KIMI_CODE_CONFIG`], and the stand-in agent
    /// (outside `PATH`: setup finds Kimi Code by its directory).
    fn with_kimi_code(&self) -> (PathBuf, PathBuf) {
        let config = self.file(".kimi-code/config.toml");
        fs::create_dir_all(config.parent().unwrap()).unwrap();
        fs::write(&config, KIMI_CODE_CONFIG).unwrap();
        let agent = self.home.join("kimi-stand-in");
        write_script(&agent, KIMI_STAND_IN);
        (config, agent)
    }

    /// `program ARGS` with this home and a PATH that has a shell and sed.
    fn agent(&self, program: &Path, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .current_dir(&self.home)
            .output()
            .unwrap()
    }

    /// `hooktrack ARGS` as [`Home::run`] runs it, which must succeed (its output in the
    /// failure); its output.
    fn run_ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let said = text(&out);
        assert!(out.status.success(), "{said}");
        said
    }

    /// `hooktrack session --agent AGENT --root ROOT -- STAND_IN` as [`Home::agent`] runs it.
    fn session(&self, agent: &str, root: &Path, stand_in: &Path) -> Output {
        self.agent(
            Path::new(env!("CARGO_BIN_EXE_hooktrack")),
            &[
                "session",
                "--agent",
                agent,
                "--root",
                root.to_str().unwrap(),
                "--",
                stand_in.to_str().unwrap(),
            ],
        )
    }

    fn kimi_default_store(&self) -> PathBuf {
        self.state.join("hooktrack/agents/kimi/events.ndjson")
    }
}

/// The events of a store's hook rows, in order.
fn hook_events(path: &Path) -> Vec<String> {
    rows(path)
        .iter()
        .filter(|r| r["via"] != "launcher")
        .map(|r| r["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn setup_installs_kimi_codes_routed_block_a_plain_start_delivers_to_its_default_store_and_undo_restores_every_byte()
 {
    let h = Home::new();
    let (config, agent) = h.with_kimi_code();

    let said = h.run_ok(&["setup"]);
    assert!(said.contains("kimi-code: 20 hooktrack entries"), "{said}");
    assert!(said.contains("(routed by environment)"), "{said}");
    assert!(!said.contains("skipped"), "{said}");
    let installed = fs::read_to_string(&config).unwrap();
    assert!(installed.starts_with(KIMI_CODE_CONFIG), "{installed}");
    assert!(
        installed
            .contains("# >>> hooktrack kimi observer (routed by environment, newline added) >>>"),
        "{installed}"
    );
    assert!(
        installed.contains("emit --agent 'kimi' --event 'Stop'"),
        "{installed}"
    );
    assert!(!installed.contains("--dir"), "routed entries name no store");
    // `check` reads it back as setup's.
    let said = h.run_ok(&["check", "kimi-code", "--file-only"]);
    assert!(
        said.contains("has 20 valid [[hooks]] entries for Kimi Code 2.x; the hooktrack block (routed by environment) has 20"),
        "{said}"
    );
    // A second setup changes nothing.
    assert!(h.run(&["setup"]).status.success());
    assert_eq!(fs::read_to_string(&config).unwrap(), installed);

    // Started without hooktrack: each hook once, in the default store.
    let out = h.agent(&agent, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let store = h.kimi_default_store();
    assert_eq!(hook_events(&store), ["SessionStart", "Stop"]);
    assert!(rows(&store).iter().all(|r| r["provider"] == "kimi"));

    h.run_ok(&["setup", "--undo"]);
    assert_eq!(fs::read_to_string(&config).unwrap(), KIMI_CODE_CONFIG);
}

#[test]
fn a_kimi_code_session_after_setup_delivers_each_hook_once_and_leaves_setups_block() {
    let h = Home::new();
    let (config, agent) = h.with_kimi_code();
    assert!(h.run(&["setup"]).status.success());
    let after_setup = fs::read_to_string(&config).unwrap();

    let root = h.home.join("session-root");
    let out = h.session("kimi-code", &root, &agent);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    // Both blocks ran for each event: the session's delivered, setup's stood down.
    let store = root.join("hook-observation/kimi/events.ndjson");
    assert_eq!(hook_events(&store), ["SessionStart", "Stop"], "{said}");
    assert!(
        !h.kimi_default_store().exists(),
        "a hook of the session went to the default store too"
    );
    // The session took its own block away, and only it.
    assert_eq!(fs::read_to_string(&config).unwrap(), after_setup);

    h.run_ok(&["setup", "--undo"]);
    assert_eq!(fs::read_to_string(&config).unwrap(), KIMI_CODE_CONFIG);
}

#[test]
fn undo_while_a_kimi_code_session_runs_takes_only_setups_block() {
    let h = Home::new();
    let (config, _agent) = h.with_kimi_code();
    assert!(h.run(&["setup"]).status.success());
    // A running session's block, as its launch writes it (its collector runs).
    let session_dir = h.home.join("session-store");
    let _running = crate::support::collector_running(&session_dir);
    h.run_ok(&[
        "install",
        "kimi-code",
        "--dir",
        session_dir.to_str().unwrap(),
        "--url",
        "http://127.0.0.1:9/events",
        "--generation",
        "7",
    ]);
    let both = fs::read_to_string(&config).unwrap();
    assert!(both.contains("(routed by environment"), "{both}");
    assert!(both.contains("(generation 7)"), "{both}");
    let said = h.run_ok(&["check", "kimi-code", "--file-only"]);
    assert!(
        said.contains("has 40 valid [[hooks]] entries for Kimi Code 2.x; the hooktrack blocks (routed by environment, and generation 7's) have 40"),
        "{said}"
    );

    let said = h.run_ok(&["setup", "--undo"]);
    assert!(said.contains("hooktrack's entries removed"), "{said}");
    let now = fs::read_to_string(&config).unwrap();
    assert!(!now.contains("routed by environment"), "{now}");
    assert!(
        now.contains("# >>> hooktrack kimi observer (generation 7"),
        "the session's block stays: {now}"
    );

    // The session's cleanup then leaves the file as it was before setup.
    h.run_ok(&["uninstall", "kimi-code", "--generation", "7"]);
    assert_eq!(fs::read_to_string(&config).unwrap(), KIMI_CODE_CONFIG);
}

/// hooktrack's entries in a file: any naming the hook binary they run.
fn holds_entries(path: &Path) -> bool {
    fs::read_to_string(path).is_ok_and(|t| t.contains("hooktrack-hook"))
}

/// setup, then the user edits the file (keeping hooktrack's entries), then setup again,
/// then undo: the edit stays, and only hooktrack's entries go; nothing is "restored".
#[test]
fn setup_an_edit_setup_again_then_undo_keeps_the_edit() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let installed = fs::read_to_string(&claude).unwrap();
    let edited =
        installed
            .replace("\"dark\"", "\"light\"")
            .replacen("{", "{\"editor\": \"vim\",\n", 1);
    fs::write(&claude, &edited).unwrap();
    h.run_ok(&["setup"]);
    assert_eq!(
        fs::read_to_string(&claude).unwrap(),
        edited,
        "nothing to redo"
    );

    let said = h.run_ok(&["setup", "--undo"]);
    assert!(!said.contains("restored"), "{said}");
    assert!(said.contains("hooktrack's entries removed"), "{said}");
    let expected = CLAUDE_SETTINGS.replace("\"dark\"", "\"light\"").replacen(
        "{",
        "{\"editor\": \"vim\",\n",
        1,
    );
    assert_eq!(fs::read_to_string(&claude).unwrap(), expected);
}

/// Four setups at once (two terminals, a dotfiles script) take turns on setup's lock:
/// afterwards one undo leaves no file holding hooktrack's entries, says what it did to
/// each, and the files are back as they were (the one setup created, gone).
#[test]
fn four_setups_at_once_then_undo_leave_no_file_with_hooktracks_entries() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    let codex = h.file(".codex/hooks.json");
    fs::create_dir_all(codex.parent().unwrap()).unwrap();
    fs::write(&codex, "{\n  \"description\": \"mine\"\n}\n").unwrap();
    for dir in [".gemini", ".config/opencode", ".pi/agent"] {
        fs::create_dir_all(h.file(dir)).unwrap();
    }
    let (kimi_code, _) = h.with_kimi_code();
    let created = [
        h.file(".gemini/settings.json"),
        h.file(".config/opencode/plugin/hooktrack.js"),
        h.file(".pi/agent/extensions/hooktrack.ts"),
    ];

    let runs: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_hooktrack"))
                .arg("setup")
                .env_clear()
                .env("HOME", &h.home)
                .env("XDG_STATE_HOME", &h.state)
                .env("PATH", &h.bin)
                .current_dir(&h.home)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    for file in [&claude, &codex, &kimi_code].into_iter().chain(&created) {
        assert!(holds_entries(file), "{}", file.display());
    }

    let said = h.run_ok(&["setup", "--undo"]);
    for file in [&claude, &codex, &kimi_code].into_iter().chain(&created) {
        assert!(!holds_entries(file), "{}: {said}", file.display());
        assert!(said.contains(&file.display().to_string()), "{said}");
    }
    assert!(!said.contains("still holds"), "{said}");
    assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
    assert_eq!(
        fs::read_to_string(&codex).unwrap(),
        "{\n  \"description\": \"mine\"\n}\n"
    );
    assert_eq!(fs::read_to_string(&kimi_code).unwrap(), KIMI_CODE_CONFIG);
    for file in &created {
        assert!(!file.exists(), "{}: {said}", file.display());
    }
    assert!(!h.state.join("hooktrack/setup.json").exists());
}

/// A config that became a symlink after setup (stow, chezmoi, home-manager adopting it):
/// undo edits the link's target and the link stays a link.
#[test]
fn a_config_that_became_a_symlink_after_setup_is_undone_through_the_link() {
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let adopted = h.file("dotfiles/claude/settings.json");
    fs::create_dir_all(adopted.parent().unwrap()).unwrap();
    fs::rename(&claude, &adopted).unwrap();
    std::os::unix::fs::symlink(&adopted, &claude).unwrap();
    assert!(holds_entries(&adopted));

    h.run_ok(&["setup", "--undo"]);
    assert!(
        fs::symlink_metadata(&claude)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&adopted).unwrap(), CLAUDE_SETTINGS);
}

/// A user's own file at hooktrack's plugin path (OpenCode's and Kilo's
/// `plugin/hooktrack.js`, Pi's `extensions/hooktrack.ts`): setup and `install` refuse,
/// naming the path and the way out; undo and `uninstall` never delete it.
#[test]
fn a_users_own_plugin_at_hooktracks_path_is_refused_and_never_deleted() {
    let h = Home::new();
    let mine = "// my own plugin\nexport const Mine = async () => ({});\n";
    let paths = [
        ("opencode", h.file(".config/opencode/plugin/hooktrack.js")),
        ("pi", h.file(".pi/agent/extensions/hooktrack.ts")),
        ("kilo", h.file(".config/kilo/plugin/hooktrack.js")),
    ];
    for (_, path) in &paths {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, mine).unwrap();
    }
    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    for (name, path) in &paths {
        let refusal = format!(
            "{name}: not installed: {} is not hooktrack's (no hooktrack marker at its start); nothing was changed: rename it or move it out of that folder",
            path.display()
        );
        assert!(said.contains(&refusal), "{said}");
        assert_eq!(fs::read_to_string(path).unwrap(), mine);
        let out = h.run(&["install", name]);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("is not hooktrack's"), "{}", text(&out));
        h.run_ok(&["uninstall", name]);
        assert_eq!(fs::read_to_string(path).unwrap(), mine);
    }
    h.run_ok(&["setup", "--undo"]);
    for (_, path) in &paths {
        assert_eq!(fs::read_to_string(path).unwrap(), mine);
    }
}

/// A version 1 setup replaced a user's own plugin and recorded its bytes: undo gives the
/// user's file back instead of deleting hooktrack's plugin from under it.
#[test]
fn an_older_setups_record_gives_back_a_users_plugin_it_replaced() {
    let h = Home::new();
    fs::create_dir_all(h.file(".config/opencode")).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let plugin = h.file(".config/opencode/plugin/hooktrack.js");
    let ours = fs::read_to_string(&plugin).unwrap();
    let mine = "// my own plugin\n";
    let ledger = serde_json::json!({"v": 1, "files": [{
        "agent": "opencode",
        "file": plugin,
        "before": mine,
        "mode": 0o644,
        "after": ours,
        "created_dirs": [],
    }]});
    fs::write(h.state.join("hooktrack/setup.json"), ledger.to_string()).unwrap();
    let said = h.run_ok(&["setup", "--undo"]);
    assert!(said.contains("is back"), "{said}");
    assert_eq!(fs::read_to_string(&plugin).unwrap(), mine);
}

/// JSON no serializer writes: a number past f64, duplicate keys, `\u` escapes, odd
/// spacing. Installed, every byte of it is still there in order; after undo, and after
/// undo of a file edited meanwhile, every byte outside hooktrack's entries is as written.
#[test]
fn json_bytes_outside_hooktracks_entries_survive_setup_and_undo() {
    let odd = "{ \"big\" :123456789012345678901234567890,\n\"model\":\"a\",  \"model\" : \"b\",\n   \"caf\\u00e9\": \"\\u00e9\\ud83d\\ude00\"\n\n}\n";
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, odd).unwrap();
    assert!(h.run(&["setup"]).status.success());
    let installed = fs::read_to_string(&claude).unwrap();
    let mut rest = installed.as_str();
    for c in odd.chars() {
        let at = rest
            .find(c)
            .unwrap_or_else(|| panic!("{c:?} gone: {installed}"));
        rest = &rest[at + c.len_utf8()..];
    }
    assert!(installed.starts_with("{ \"big\" :123456789012345678901234567890,\n\"model\":\"a\",  \"model\" : \"b\",\n   \"caf\\u00e9\""), "{installed}");
    h.run_ok(&["setup", "--undo"]);
    assert_eq!(fs::read_to_string(&claude).unwrap(), odd);

    // Edited while installed: the edit and the odd bytes both stay.
    assert!(h.run(&["setup"]).status.success());
    let edited = fs::read_to_string(&claude)
        .unwrap()
        .replace("\"b\"", "\"c\"");
    fs::write(&claude, edited).unwrap();
    assert!(h.run(&["setup", "--undo"]).status.success());
    assert_eq!(
        fs::read_to_string(&claude).unwrap(),
        odd.replace("\"b\"", "\"c\"")
    );
}

/// A config the user made read-only (0444) is refused, naming the file, by setup and by
/// undo; with `--force` both rewrite it and keep its mode.
#[test]
fn a_read_only_config_is_refused_unless_forced() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    let claude = h.file(".claude/settings.json");
    fs::create_dir_all(claude.parent().unwrap()).unwrap();
    fs::write(&claude, CLAUDE_SETTINGS).unwrap();
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o444)).unwrap();
    let refusal = format!(
        "{} is read-only (mode 444); nothing was changed: make it writable (chmod u+w) or pass --force",
        claude.display()
    );
    let out = h.run(&["setup"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&refusal), "{}", text(&out));
    assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);

    h.run_ok(&["setup", "--force"]);
    assert!(holds_entries(&claude));
    assert_eq!(mode(&claude), 0o444);

    let out = h.run(&["setup", "--undo"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&refusal), "{}", text(&out));
    assert!(holds_entries(&claude));
    assert!(
        h.state.join("hooktrack/setup.json").exists(),
        "kept for the next undo"
    );

    h.run_ok(&["setup", "--undo", "--force"]);
    assert_eq!(fs::read_to_string(&claude).unwrap(), CLAUDE_SETTINGS);
    assert_eq!(mode(&claude), 0o444);
}

/// `hooktrack setup | head -1`: the reader goes away after one line. Setup does all its
/// work and exits 0, no panic ("failed printing to stdout: Broken pipe" before).
#[test]
fn setup_into_a_pipe_closed_early_still_installs_and_does_not_panic() {
    let h = Home::new();
    let (config, _agent) = h.with_kimi_code();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .arg("setup")
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", &h.bin)
        .current_dir(&h.home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader closes its end before setup writes a line.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        fs::read_to_string(&config)
            .unwrap()
            .contains("routed by environment"),
        "setup did not install"
    );
}

/// Cline's hook files, one per event in `~/.cline/hooks/`: setup writes hooktrack's
/// (executable, each its own), leaves a user's file of another name there alone, and undo
/// removes exactly hooktrack's. A hook file run with a session's variables (the hub
/// daemon's environment, set by whichever launch started it) still delivers to Cline's
/// default store: the session those variables name may be long gone.
#[test]
fn cline_setup_writes_a_hook_file_per_event_that_delivers_to_the_default_store_and_undo_takes_them_out()
 {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    let hooks = h.file(".cline/hooks");
    fs::create_dir_all(&hooks).unwrap();
    let mine = "#!/bin/sh\necho started >> \"$HOME/started.log\"\n";
    fs::write(hooks.join("TaskStart.sh"), mine).unwrap();

    let said = h.run_ok(&["setup"]);
    assert!(said.contains("cline: 8 hooktrack hook files in"), "{said}");
    let events = [
        "TaskStart",
        "TaskResume",
        "TaskComplete",
        "TaskError",
        "TaskCancel",
        "PreToolUse",
        "PostToolUse",
        "SessionShutdown",
    ];
    for event in events {
        let file = hooks.join(event);
        let written = fs::read_to_string(&file).unwrap();
        assert!(
            written.starts_with("#!/bin/sh\n# hooktrack observer hook "),
            "{written}"
        );
        assert!(written.contains(&format!("--event '{event}'")), "{written}");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
    assert!(!hooks.join("UserPromptSubmit").exists());
    let said = h.run_ok(&["check", "cline", "--file-only"]);
    assert!(said.contains("8 hook files for Cline"), "{said}");

    // The daemon's environment names a session that is gone: the row goes to the default
    // store all the same, and nothing is written where the variables point.
    let gone = h.file("gone-session");
    let mut hook = Command::new(hooks.join("TaskStart"))
        .env_clear()
        .env("HOME", &h.home)
        .env("XDG_STATE_HOME", &h.state)
        .env("PATH", "/usr/bin:/bin")
        .env("HOOKTRACK_DIR", &gone)
        .env("HOOKTRACK_URL", "http://127.0.0.1:9/e")
        .env("HOOKTRACK_GENERATION", "3")
        .env("TMUX_PANE", "%9")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(br#"{"hookName":"agent_start","taskId":"conv_1","agent_id":"agent_1"}"#)
        .unwrap();
    assert!(hook.wait().unwrap().success());
    let store = h.state.join("hooktrack/agents/cline/events.ndjson");
    let rows = rows(&store);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["event"], "TaskStart");
    assert_eq!(rows[0]["generation"], 0);
    assert_eq!(rows[0]["payload"]["taskId"], "conv_1");
    assert!(
        rows[0].get("tmux_pane").is_none_or(|p| p.is_null()),
        "{}",
        rows[0]
    );
    assert!(!gone.exists());

    h.run_ok(&["setup", "--undo"]);
    for event in events {
        assert!(!hooks.join(event).exists(), "{event}");
    }
    assert_eq!(
        fs::read_to_string(hooks.join("TaskStart.sh")).unwrap(),
        mine
    );
}

/// A user's own hook file at the path of one of hooktrack's (Cline's `~/.cline/hooks/
/// PreToolUse`): setup refuses Cline, naming it, writes none of the other files, and
/// neither undo nor `uninstall` deletes it.
#[test]
fn a_users_own_cline_hook_file_at_hooktracks_path_is_refused_and_never_deleted() {
    let h = Home::new();
    let hooks = h.file(".cline/hooks");
    fs::create_dir_all(&hooks).unwrap();
    let mine = "#!/bin/sh\ncat > /dev/null\n";
    let theirs = hooks.join("PreToolUse");
    fs::write(&theirs, mine).unwrap();
    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "cline: not installed: {} is not hooktrack's (no hooktrack marker at its start)",
            theirs.display()
        )),
        "{said}"
    );
    assert!(!hooks.join("TaskStart").exists(), "none is written");
    let out = h.run(&["install", "cline"]);
    assert!(!out.status.success(), "{}", text(&out));
    h.run_ok(&["uninstall", "cline"]);
    h.run_ok(&["setup", "--undo"]);
    assert_eq!(fs::read_to_string(&theirs).unwrap(), mine);
}
