//! `hooktrack install|uninstall|check` of the JSON hooks agents (Claude Code, Codex, Gemini
//! CLI, Qwen Code, GitHub Copilot CLI, Factory Droid) on real files.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hooktrack::{Agent, ConfigFormat};
use serde_json::Value;

use super::util::*;

/// Every agent whose hooks are a JSON hooks table, by the name a user types.
fn json_agents() -> Vec<&'static str> {
    let agents: Vec<&str> = Agent::ALL
        .into_iter()
        .filter(|a| a.config().format == ConfigFormat::JsonHooks)
        .map(Agent::typed_name)
        .collect();
    assert!(!agents.is_empty());
    agents
}

/// The agent a typed name means.
fn agent(name: &str) -> Agent {
    Agent::from_name(name).expect("an agent's name")
}

/// (subcommand, events hooked, a user file with hooks on one of those events and on
/// others, odd key order and unrelated settings), each laid out the way the CLI writes
/// it (two-space indent, final newline), so that uninstall gives back the same bytes.
const AGENTS: [(&str, usize, &str); 3] = [
    (
        "claude",
        28,
        r#"{
  "zeta": true,
  "permissions": {
    "deny": [
      "Bash(rm:*)"
    ],
    "allow": [
      "Bash(ls)"
    ]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "command": "notify-send 'done'",
            "type": "command"
          },
          {
            "type": "command",
            "command": "say done",
            "timeout": 30
          }
        ],
        "matcher": ""
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/guard --strict"
          }
        ]
      }
    ],
    "WorktreeCreate": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "make-worktree"
          }
        ]
      }
    ]
  },
  "alpha": {
    "z": 1,
    "a": [
      2,
      1.5
    ]
  },
  "model": "opus"
}
"#,
    ),
    (
        "codex",
        12,
        r#"{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'done'",
            "timeout": 10,
            "statusMessage": "notifying"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "^Bash$",
        "hooks": [
          {
            "timeout": 600,
            "command": "/usr/local/bin/guard --strict",
            "type": "command"
          }
        ]
      }
    ]
  },
  "description": "my hooks"
}
"#,
    ),
    (
        "gemini",
        11,
        r#"{
  "ui": {
    "theme": "GitHub"
  },
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file|replace",
        "sequential": true,
        "hooks": [
          {
            "name": "guard",
            "type": "command",
            "command": "$GEMINI_PROJECT_DIR/guard.sh",
            "timeout": 60000
          }
        ]
      }
    ],
    "AfterAgent": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'done'"
          }
        ]
      }
    ]
  },
  "general": {
    "vimMode": true
  }
}
"#,
    ),
];

fn run(args: &[&str], config: &Path, extra: &[&str]) -> Output {
    run_with_config(args, config, extra)
}

fn install(agent: &str, config: &Path, store: &Path, generation: u64, url: &str) -> Output {
    install_with(&["install", agent], config, store, generation, url)
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read")).expect("JSON")
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn is_ours(entry: &Value) -> bool {
    entry["command"]
        .as_str()
        .is_some_and(|c| c.contains("' emit --observer hooktrack --url "))
}

/// hooktrack's entries: (event, entry).
fn ours(doc: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for (event, groups) in doc["hooks"].as_object().into_iter().flatten() {
        for group in groups.as_array().into_iter().flatten() {
            for entry in group["hooks"].as_array().into_iter().flatten() {
                if is_ours(entry) {
                    found.push((event.clone(), entry.clone()));
                }
            }
        }
    }
    found
}

/// The document without hooktrack's entries, compact and in order.
fn users_part(doc: &Value) -> String {
    let mut doc = doc.clone();
    if let Some(hooks) = doc["hooks"].as_object_mut() {
        for groups in hooks.values_mut() {
            if let Some(groups) = groups.as_array_mut() {
                groups.retain(|g| !g["hooks"].as_array().is_some_and(|h| h.iter().all(is_ours)));
            }
        }
        hooks.retain(|_, g| !g.as_array().is_some_and(Vec::is_empty));
    }
    doc.to_string()
}

/// A user's file for `agent` as its CLI writes it (two-space indent, final newline): a
/// top-level key of its own (one the agent accepts), a user hook on an event hooktrack
/// hooks and one on an event it does not, in the agent's group shape.
fn user_file(agent: Agent) -> String {
    let facts = agent.descriptor().install;
    let group = |command: &str| {
        let mut group = serde_json::Map::new();
        if facts.schema.matcher {
            group.insert("matcher".into(), "".into());
        }
        group.insert(
            "hooks".into(),
            serde_json::json!([{"type": "command", "command": command}]),
        );
        Value::Object(group)
    };
    let own_key = match facts.top_level_keys {
        Some(keys) => keys
            .iter()
            .copied()
            .find(|k| *k != "hooks")
            .unwrap_or("hooks"),
        None => "zeta",
    };
    let mut doc = serde_json::Map::new();
    if own_key != "hooks" {
        doc.insert(own_key.into(), "the user's".into());
    }
    let mut hooks = serde_json::Map::new();
    hooks.insert(
        "UserOnlyEvent".into(),
        serde_json::json!([group("say other")]),
    );
    hooks.insert(
        agent.hook_events()[0].into(),
        serde_json::json!([group("say done")]),
    );
    doc.insert("hooks".into(), Value::Object(hooks));
    serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON") + "\n"
}

#[test]
fn install_keeps_every_user_key_and_entry_in_order_and_uninstall_restores_the_bytes() {
    // Three files laid out by hand, then one of each JSON hooks agent's own.
    let mut cases: Vec<(Agent, usize, String)> = AGENTS
        .iter()
        .map(|(name, events, original)| (agent(name), *events, (*original).to_owned()))
        .collect();
    cases.extend(json_agents().into_iter().map(|name| {
        let which = agent(name);
        (
            which,
            which.descriptor().hook_events_for(None).len(),
            user_file(which),
        )
    }));
    for (which, events, original) in &cases {
        let (agent, events, original) = (which.typed_name(), *events, original.as_str());
        let matcher = which.descriptor().install.schema.matcher;
        let tmp = tempfile::tempdir().expect("tempdir");
        let config = tmp.path().join("settings.json");
        let store = tmp.path().join("store");
        fs::write(&config, original).expect("write");
        fs::set_permissions(&config, fs::Permissions::from_mode(0o640)).expect("chmod");
        let before: Value = serde_json::from_str(original).expect("JSON");

        ok(&install(
            agent,
            &config,
            &store,
            1,
            "http://127.0.0.1:4100/events",
        ));
        let after = json(&config);
        // The user's top-level keys, and their hooks' event keys, keep their order; the
        // events hooktrack adds come after them.
        assert_eq!(keys(&after), keys(&before), "{agent}");
        let user_events = keys(&before["hooks"]);
        assert_eq!(keys(&after["hooks"])[..user_events.len()], user_events[..]);
        assert_eq!(
            keys(&after["hooks"]).len(),
            user_events.len() + events
                - user_events
                    .iter()
                    .filter(|e| ours(&after).iter().any(|(o, _)| o == *e))
                    .count()
        );
        // Every user group is still there, first, untouched; hooktrack's group comes last.
        for event in &user_events {
            let old = before["hooks"][event].as_array().expect("groups");
            let new = after["hooks"][event].as_array().expect("groups");
            assert_eq!(new[..old.len()], old[..], "{agent} {event}");
        }
        assert_eq!(users_part(&after), before.to_string(), "{agent}");
        // One entry per event, under the empty matcher, exactly these keys.
        let entries = ours(&after);
        assert_eq!(entries.len(), events, "{agent}");
        for (event, groups) in after["hooks"].as_object().expect("hooks") {
            let Some(last) = groups.as_array().and_then(|g| g.last()) else {
                continue;
            };
            if last["hooks"].as_array().expect("hooks").iter().any(is_ours) {
                if matcher {
                    assert_eq!(keys(last), ["matcher", "hooks"]);
                    assert_eq!(last["matcher"], "");
                } else {
                    assert_eq!(keys(last), ["hooks"]);
                }
                assert_eq!(last["hooks"].as_array().map(Vec::len), Some(1), "{event}");
            }
        }
        // The hook-only binary beside `hooktrack` is what the hooks run.
        let binary = fs::canonicalize(env!("CARGO_BIN_EXE_hooktrack-hook")).expect("binary");
        for (event, entry) in &entries {
            assert_eq!(keys(entry), ["type", "command", "timeout"]);
            let command = entry["command"].as_str().expect("command");
            assert_eq!(
                command,
                format!(
                    "'{}' emit --observer hooktrack --url 'http://127.0.0.1:4100/events' --dir '{}' --provider '{}' --generation 1 --event '{event}'",
                    binary.display(),
                    store.display(),
                    which.store_name()
                )
            );
        }
        assert_eq!(mode(&config), 0o640, "the file's mode is kept");
        let verdict = channel(&store);
        assert_eq!(verdict["install"]["ok"], true, "{verdict}");
        assert_eq!(verdict["provider"], which.store_name());
        assert_eq!(verdict["generation"], 1);

        // Installing again changes nothing, byte for byte.
        let once = fs::read(&config).expect("read");
        ok(&install(
            agent,
            &config,
            &store,
            1,
            "http://127.0.0.1:4100/events",
        ));
        assert_eq!(fs::read(&config).expect("read"), once, "{agent}");
        // A new generation replaces hooktrack's entries.
        let out = install(agent, &config, &store, 2, "http://127.0.0.1:4200/events");
        ok(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("replacing generation 1"));
        let again = json(&config);
        assert_eq!(ours(&again).len(), events);
        let text = fs::read_to_string(&config).expect("read");
        assert!(text.contains(":4200/") && !text.contains(":4100/"));
        assert!(!text.contains("--generation 1 "));
        assert_eq!(users_part(&again), before.to_string());

        let out = run(&["check", agent, "--file-only"], &config, &[]);
        ok(&out);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("hooktrack's {events} for")),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let out = run(&["uninstall", agent], &config, &[]);
        ok(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("removed the hooktrack entries"));
        assert_eq!(
            fs::read_to_string(&config).expect("read"),
            original,
            "{agent}: uninstall gives back the original bytes"
        );
        assert_eq!(mode(&config), 0o640);
    }
}

#[test]
fn a_hand_laid_out_file_comes_back_byte_for_byte() {
    // Inline arrays, escapes, CRLF, four-space indent, no final newline: hooktrack's
    // entries go in beside the user's, laid out as their siblings are (here on the line
    // of the inline `hooks` object, CRLF elsewhere), and uninstall cuts out exactly them.
    let original = "{\r\n    \"b\": [1, 2,3],\r\n    \"caf\\u00e9\": \"\\u00e9\\n\",\r\n    \"hooks\": {\"Notification\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}]},\r\n    \"a\": {}\r\n}";
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    let store = tmp.path().join("store");
    fs::write(&config, original).expect("write");
    ok(&install(
        "gemini",
        &config,
        &store,
        1,
        "http://127.0.0.1:1/e",
    ));
    let text = fs::read_to_string(&config).expect("read");
    // A key laid out as its sibling's (`"Notification": [`, a space after the colon).
    assert!(text.contains("\"BeforeTool\": [{"), "{text}");
    assert!(
        text.starts_with("{\r\n    \"b\": [1, 2,3],\r\n    \"caf\\u00e9\": \"\\u00e9\\n\",\r\n"),
        "{text}"
    );
    assert!(!text.replace("\r\n", "").contains('\n'));
    assert!(text.ends_with("},\r\n    \"a\": {}\r\n}"), "{text}");
    ok(&run(&["uninstall", "gemini"], &config, &[]));
    assert_eq!(fs::read_to_string(&config).expect("read"), original);
}

/// Settings holding an empty `hooks` object (`{"hooks": {}}`, found in Letta Code's and
/// Claude Code's settings; Letta Code 0.25.9 runs the hooks installed into one): the
/// install fills it, passes its read-back and `check`, and keeps the other key and
/// the layout; uninstall takes out the `hooks` object hooktrack filled and emptied (as it
/// cannot tell it from one it made), the rest byte for byte.
#[test]
fn settings_holding_an_empty_hooks_object_install_and_pass_the_read_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("store");
    for name in json_agents() {
        // Codex reads no top-level key but `description` and `hooks`.
        let (key, other) = match agent(name).descriptor().install.top_level_keys {
            Some(_) => ("description", r#""description": "mine""#),
            None => ("other", r#""other": 1"#),
        };
        let cases = [
            ("{\"hooks\": {}}".to_owned(), "{}".to_owned()),
            (
                format!("{{\"hooks\": {{}}, {other}}}"),
                format!("{{{other}}}"),
            ),
            (
                format!("{{{other}, \"hooks\": {{}}}}\n"),
                format!("{{{other}}}\n"),
            ),
        ];
        for (original, uninstalled) in cases {
            let config = tmp.path().join(format!("{name}.json"));
            fs::write(&config, &original).expect("write");
            ok(&install(name, &config, &store, 1, "http://127.0.0.1:1/e"));
            let text = fs::read_to_string(&config).expect("read");
            let doc = json(&config);
            assert_eq!(
                ours(&doc).len(),
                agent(name).descriptor().hook_events_for(None).len(),
                "{name} {original}: {text}"
            );
            // The other key, as written, where it was; the file still one line.
            let mut order = vec!["hooks"];
            if original.contains(other) {
                order.insert(
                    usize::from(!original.starts_with(&format!("{{{other}"))),
                    key,
                );
                assert!(text.contains(other), "{name}: {text}");
            }
            assert_eq!(keys(&doc), order, "{name}: {text}");
            assert_eq!(text.trim_end().lines().count(), 1, "{name}: {text}");
            ok(&run(&["check", name, "--file-only"], &config, &[]));
            ok(&run(&["uninstall", name], &config, &[]));
            assert_eq!(
                fs::read_to_string(&config).expect("read"),
                uninstalled,
                "{name} {original}"
            );
        }
    }
}

#[test]
fn uninstall_leaves_a_file_without_hooktrack_entries_untouched() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    // Laid out as no serializer would: a rewrite would show.
    let original = "{ \"hooks\" : { \"Stop\" : [ ] } , \"x\":[1,2] }";
    fs::write(&config, original).expect("write");
    let modified = fs::metadata(&config)
        .expect("meta")
        .modified()
        .expect("mtime");
    for agent in json_agents() {
        let out = run(&["uninstall", agent], &config, &[]);
        ok(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("no hooktrack entries in"));
    }
    assert_eq!(fs::read_to_string(&config).expect("read"), original);
    assert_eq!(
        fs::metadata(&config)
            .expect("meta")
            .modified()
            .expect("mtime"),
        modified
    );
    let out = run(&["uninstall", "codex"], &tmp.path().join("none.json"), &[]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not exist"));
}

#[test]
fn a_file_that_is_not_json_or_has_no_hooks_table_is_refused_unchanged() {
    let cases = [
        (
            "{\n  \"model\": \"opus\",\n}\n",
            "is not valid JSON (trailing comma",
        ),
        (
            "// a comment\n{}\n",
            "is not valid JSON (expected value at line 1 column 1)",
        ),
        ("[1, 2]", "holds an array, not a JSON object"),
        (
            "{\"hooks\": [1]}",
            "has a `hooks` that is an array, not an object",
        ),
        (
            "{\"hooks\": \"none\"}",
            "has a `hooks` that is a string, not an object",
        ),
    ];
    for agent in json_agents() {
        for (original, reason) in cases {
            let tmp = tempfile::tempdir().expect("tempdir");
            let config = tmp.path().join("settings.json");
            let store = tmp.path().join("store");
            fs::write(&config, original).expect("write");
            let out = install(agent, &config, &store, 7, "http://127.0.0.1:1/e");
            assert_eq!(out.status.code(), Some(1), "{agent} {original:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(&config.display().to_string()), "{stderr}");
            assert!(stderr.contains(reason), "{stderr}");
            assert!(stderr.contains("nothing was changed"), "{stderr}");
            assert_eq!(fs::read_to_string(&config).expect("read"), original);
            let verdict = channel(&store);
            assert_eq!(verdict["install"]["ok"], false);
            assert_eq!(verdict["generation"], 7);
            assert!(
                verdict["install"]["detail"]
                    .as_str()
                    .expect("detail")
                    .contains(reason)
            );
            for command in [&["uninstall", agent][..], &["check", agent][..]] {
                let out = run(command, &config, &[]);
                assert_eq!(out.status.code(), Some(1), "{command:?} {original:?}");
                assert_eq!(fs::read_to_string(&config).expect("read"), original);
            }
        }
    }
    // An event hooktrack hooks whose value is not a list.
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    let original = "{\"hooks\": {\"AfterTool\": {\"matcher\": \"\"}}}";
    fs::write(&config, original).expect("write");
    let out = install(
        "gemini",
        &config,
        &tmp.path().join("s"),
        1,
        "http://127.0.0.1:1/e",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("has a `hooks.AfterTool` that is an object, not a list of matcher groups")
    );
    assert_eq!(fs::read_to_string(&config).expect("read"), original);
}

#[test]
fn a_read_back_violation_restores_the_previous_bytes_and_says_why() {
    let cases = [
        // Claude Code skips a settings file with one invalid entry: nothing would run.
        (
            "claude",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\"}]}]}}",
            "hooks.Stop[0].hooks[0]: `command` is missing or not a string",
        ),
        (
            "claude",
            "{\"hooks\": {\"Stop\": [{\"matcher\": {\"type\": \"always\"}, \"hooks\": []}]}}",
            "hooks.Stop[0]: `matcher` is an object, not a string",
        ),
        (
            "claude",
            "{\"disableAllHooks\": true}",
            "Claude Code runs no hook: `disableAllHooks` is true",
        ),
        // Codex reads hooks.json with deny_unknown_fields and u64 timeouts.
        (
            "codex",
            "{\"version\": 1, \"hooks\": {}}",
            "top-level key other than description and hooks: `version`",
        ),
        (
            "codex",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\", \"timeout\": 2.5}]}]}}",
            "`timeout` 2.5 is not a whole number of seconds",
        ),
        (
            "codex",
            "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"script\"}]}]}}",
            "unknown `type` \"script\"",
        ),
        (
            "gemini",
            "{\"hooksConfig\": {\"enabled\": false}}",
            "Gemini CLI runs no hook: `hooksConfig.enabled` is false",
        ),
    ];
    for (agent, original, reason) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        let config = tmp.path().join("settings.json");
        let store = tmp.path().join("store");
        fs::write(&config, original).expect("write");
        fs::set_permissions(&config, fs::Permissions::from_mode(0o604)).expect("chmod");
        let out = install(agent, &config, &store, 3, "http://127.0.0.1:4100/events");
        assert_eq!(out.status.code(), Some(1), "{agent} {original}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(reason), "{stderr}");
        assert!(stderr.contains("previous text restored"), "{stderr}");
        assert_eq!(fs::read_to_string(&config).expect("read"), original);
        assert_eq!(mode(&config), 0o604);
        let verdict = channel(&store);
        assert_eq!(verdict["install"]["ok"], false, "{verdict}");
        assert_eq!(verdict["provider"], agent);
        assert_eq!(verdict["generation"], 3);
        assert!(
            verdict["install"]["detail"]
                .as_str()
                .expect("detail")
                .contains(reason),
            "{verdict}"
        );
        // check names the same problem.
        let out = run(&["check", agent], &config, &[]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains(reason));
    }
}

#[test]
fn timeouts_are_in_each_clis_unit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in json_agents() {
        let config = tmp.path().join(format!("{name}.json"));
        ok(&install(
            name,
            &config,
            &tmp.path().join(name),
            1,
            "http://127.0.0.1:1/e",
        ));
        let facts = agent(name).descriptor().install;
        let entries = ours(&json(&config));
        assert!(!entries.is_empty(), "{name}");
        for (event, entry) in entries {
            // Seconds or milliseconds, as the agent reads them (Gemini CLI: 5000).
            assert_eq!(
                entry["timeout"],
                facts.timeout_for(&event),
                "{name} {event}"
            );
        }
    }
}

#[test]
fn a_missing_file_is_created_and_uninstall_leaves_an_empty_object() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    for agent in json_agents() {
        let out = hooktrack()
            .args([
                "install",
                agent,
                "--url",
                "http://127.0.0.1:9/e",
                "--generation",
                "1",
            ])
            .arg("--dir")
            .arg(tmp.path().join("store"))
            .arg("--home")
            .arg(home.join(agent))
            .output()
            .expect("run");
        ok(&out);
        // --home is the agent's home variable: $CLAUDE_CONFIG_DIR holds the file,
        // $GEMINI_CLI_HOME holds .gemini/.
        let config = self::agent(agent).config().file_in_home(&home.join(agent));
        assert_eq!(mode(&config), 0o600);
        assert_eq!(keys(&json(&config)), ["hooks"]);
        let out = hooktrack()
            .args(["uninstall", agent, "--home"])
            .arg(home.join(agent))
            .output()
            .expect("run");
        ok(&out);
        assert_eq!(fs::read_to_string(&config).expect("read"), "{}\n");
    }
}

#[test]
fn default_files_follow_the_environment() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    // (agent, the home variable set to `other`, --project, the file expected): the user
    // file under $HOME, the one the home variable names, and the project's.
    let other = tmp.path().join("other-home");
    let mut cases = Vec::new();
    for name in json_agents() {
        let location = agent(name).config();
        let home_only = |var: &str| (var == "HOME").then(|| home.clone().into_os_string());
        let user = location.user_file(home_only).expect("a user file");
        cases.push((name, None, false, user));
        if let Some(var) = location.home_var() {
            cases.push((name, Some(var), false, location.file_in_home(&other)));
        }
        if location.project_install {
            cases.push((name, None, true, location.project_file(&project)));
        }
    }
    for (agent, env, in_project, expected) in cases {
        let mut cmd = hooktrack();
        cmd.args([
            "install",
            agent,
            "--url",
            "http://127.0.0.1:9/e",
            "--generation",
            "1",
        ])
        .arg("--dir")
        .arg(tmp.path().join("store"))
        .env("HOME", &home);
        for var in crate::support::agent_home_vars() {
            cmd.env_remove(var);
        }
        if let Some(name) = env {
            cmd.env(name, &other);
        }
        if in_project {
            cmd.arg("--project").arg(&project);
        }
        let out = cmd.output().expect("run");
        ok(&out);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&expected.display().to_string()),
            "{agent} {env:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(expected.is_file());
        fs::remove_file(&expected).expect("rm");
    }
}

#[test]
fn uninstall_with_a_generation_leaves_a_newer_install_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("hooks.json");
    // A one-line file stays one line.
    fs::write(&config, "{\"description\":\"x\"}\n").expect("write");
    ok(&install(
        "codex",
        &config,
        &tmp.path().join("s"),
        5,
        "http://127.0.0.1:1/e",
    ));
    let before = fs::read(&config).expect("read");
    let out = run(&["uninstall", "codex"], &config, &["--generation", "4"]);
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("left the hooktrack entries of generation 5")
    );
    assert_eq!(fs::read(&config).expect("read"), before);
    ok(&run(
        &["uninstall", "codex"],
        &config,
        &["--generation", "5"],
    ));
    assert_eq!(
        fs::read_to_string(&config).expect("read"),
        "{\"description\":\"x\"}\n"
    );
}

#[test]
fn check_says_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    let out = run(&["check", "claude"], &config, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the file does not exist"));
    fs::write(&config, "{}").expect("write");
    let out = run(&["check", "claude"], &config, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it holds no hooktrack entry"));
    ok(&install(
        "claude",
        &config,
        &tmp.path().join("s"),
        2,
        "http://127.0.0.1:1/e",
    ));
    let mut doc = json(&config);
    doc["hooks"]
        .as_object_mut()
        .expect("hooks")
        .shift_remove("Stop");
    fs::write(&config, doc.to_string()).expect("write");
    let out = run(&["check", "claude"], &config, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("hooktrack hooks 27 of Claude Code's 28 events; missing: Stop"),
        "{stderr}"
    );
}

/// The installed commands, run by a shell as the CLIs run them, with the payloads of a
/// real recording: every row names the agent, `hooktrack replay` detects it from the row
/// and gives the recording's own ledger. The emitter and store paths hold a space and a
/// quote; the token is in the environment only.
#[test]
fn installed_commands_deliver_recorded_payloads_that_replay_as_that_agent() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    // Each JSON agent's recorded tool turn (`*-tools*.ndjson`, hooks only).
    let cases: Vec<(&str, Agent, PathBuf)> = json_agents()
        .into_iter()
        .map(|name| {
            let dir = corpus.join(agent(name).name());
            let mut tools: Vec<PathBuf> = fs::read_dir(&dir)
                .expect("the agent's corpus folder")
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let file = p.file_name().unwrap_or_default().to_string_lossy();
                    file.contains("-tools") && file.ends_with(".ndjson")
                })
                .collect();
            tools.sort();
            let recording = tools
                .into_iter()
                .next()
                .unwrap_or_else(|| panic!("no tools recording in {}", dir.display()));
            (name, agent(name), recording)
        })
        .collect();
    for (agent, which, recording) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bin = tmp.path().join("bin dir/it's");
        fs::create_dir_all(&bin).expect("mkdir");
        let emitter = bin.join("hooktrack");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_hooktrack"), &emitter).expect("symlink");
        let store = tmp.path().join("store dir/it's").join(which.store_name());
        let config = tmp.path().join("settings.json");
        let url = format!("http://127.0.0.1:{}/events", dead_port());
        let out = run(
            &["install", agent],
            &config,
            &[
                "--dir",
                store.to_str().expect("utf-8"),
                "--url",
                &url,
                "--generation",
                "1",
                "--emitter",
                emitter.to_str().expect("utf-8"),
            ],
        );
        ok(&out);
        let text = fs::read_to_string(&config).expect("read");
        assert!(!text.contains(TOKEN) && !text.to_lowercase().contains("token"));
        assert!(text.contains("bin dir/it'\\\\''s/hooktrack' emit --observer hooktrack"));
        let doc = json(&config);
        let commands: Vec<(String, String)> = ours(&doc)
            .into_iter()
            .map(|(e, entry)| (e, entry["command"].as_str().expect("command").to_owned()))
            .collect();
        let recorded = fs::read_to_string(&recording).expect("recording");
        // The hooks' rows: a launcher's row (the agent process's end) is no hook's.
        let hooks: Vec<&str> = recorded
            .lines()
            .filter(|l| !l.contains(r#""via":"launcher""#))
            .collect();
        let hooks_only = tmp.path().join("recorded.ndjson");
        fs::write(&hooks_only, hooks.join("\n") + "\n").expect("write");
        let mut sent = 0;
        for line in hooks {
            let line: Value = serde_json::from_str(line).expect("line");
            let event = line["event"].as_str().expect("event");
            let (_, command) = commands
                .iter()
                .find(|(e, _)| e == event)
                .unwrap_or_else(|| panic!("{agent}: no hooktrack entry for {event}"));
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(command)
                .env("HOOKTRACK_TOKEN", TOKEN)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(line["payload"].to_string().as_bytes())
                .expect("payload");
            let out = child.wait_with_output().expect("wait");
            assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
            sent += 1;
        }
        let rows = rows(&store.join("events.ndjson"));
        assert_eq!(rows.len(), sent, "{agent}");
        assert!(
            rows.iter().all(|r| r["provider"] == which.store_name()),
            "{agent}"
        );
        let log = fs::read_to_string(store.join("emit.log")).unwrap_or_default();
        assert!(!log.contains("unknown argument"), "{log}");
        let replayed = replay_json(&store.join("events.ndjson"));
        assert_eq!(replayed["provider"]["provider"], which.name(), "{agent}");
        assert_eq!(
            replayed["provider"]["reason"],
            which.descriptor().named_by_row,
            "{agent}"
        );
        let original = replay_json(&hooks_only);
        assert_eq!(
            ledger(&replayed["turns"]),
            ledger(&original["turns"]),
            "{agent}"
        );
    }
}

/// The hooks run `hooktrack-hook` when it sits beside the installing `hooktrack` (as
/// `cargo install` and `just hook-static` put them), else `hooktrack` itself.
#[test]
fn hooks_run_the_hook_binary_beside_hooktrack_else_hooktrack_itself() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    // Hard links (a copy where they cannot be made): the kernel names a process's binary
    // by the path it was started from, so this `hooktrack` looks beside itself in `bin`.
    let place = |from: &str, name: &str| {
        let to = bin.join(name);
        if fs::hard_link(from, &to).is_err() {
            fs::copy(from, &to).expect("copy binary");
        }
        to
    };
    let hooktrack = place(env!("CARGO_BIN_EXE_hooktrack"), "hooktrack");
    let store = tmp.path().join("store");
    let url = format!("http://127.0.0.1:{}/events", dead_port());
    let emitter_of = |config: &Path| -> String {
        let out = Command::new(&hooktrack)
            .args(["install", "claude", "--config"])
            .arg(config)
            .arg("--dir")
            .arg(&store)
            .args(["--url", &url, "--generation", "1"])
            .output()
            .expect("run hooktrack install");
        ok(&out);
        let doc: Value = serde_json::from_slice(&fs::read(config).expect("config")).expect("json");
        let (_, entry) = ours(&doc).into_iter().next().expect("an entry");
        let command = entry["command"].as_str().expect("command");
        command[..command.find("' emit ").expect("emit")]
            .trim_start_matches('\'')
            .to_owned()
    };
    let alone = emitter_of(&tmp.path().join("alone.json"));
    assert_eq!(alone, bin.join("hooktrack").display().to_string());
    place(env!("CARGO_BIN_EXE_hooktrack-hook"), "hooktrack-hook");
    let beside = emitter_of(&tmp.path().join("beside.json"));
    assert_eq!(beside, bin.join("hooktrack-hook").display().to_string());
}

/// GitHub Copilot CLI 1.0.102 ignores its whole settings file when a group has an empty
/// `matcher` ("matcher cannot be empty"): hooktrack's groups have none, and `check` names
/// an empty one.
#[test]
fn copilot_groups_have_no_matcher_and_check_refuses_an_empty_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    ok(&install(
        "copilot",
        &config,
        &tmp.path().join("store"),
        1,
        "http://127.0.0.1:1/e",
    ));
    let doc = json(&config);
    let hooks = doc["hooks"].as_object().expect("hooks");
    assert_eq!(hooks.len(), 13);
    for (event, groups) in hooks {
        for group in groups.as_array().expect("groups") {
            assert_eq!(keys(group), ["hooks"], "{event}");
        }
    }
    ok(&run(&["check", "copilot"], &config, &[]));
    let text = fs::read_to_string(&config).expect("read");
    let broken = text.replacen("\"hooks\": [", "\"matcher\": \"\", \"hooks\": [", 1);
    assert_ne!(broken, text);
    fs::write(&config, broken).expect("write");
    let out = run(&["check", "copilot"], &config, &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("empty `matcher`")
            || String::from_utf8_lossy(&out.stdout).contains("empty `matcher`"),
        "{out:?}"
    );
}

/// Factory Droid 0.225.2 keeps its models and trusted folders in the same
/// `~/.factory/settings.json` as its hooks: install and uninstall leave them, and `check`
/// accepts the file with them.
#[test]
fn droid_install_keeps_its_models_and_trusted_folders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("settings.json");
    let own = serde_json::json!({
        "customModels": [{"model": "m", "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "x",
                          "provider": "generic-chat-completion-api"}],
        "trustedFolders": {"/work": {"trustedAt": "2026-12-02T01:41:42.729Z"}},
    });
    fs::write(&config, own.to_string()).expect("write");
    ok(&install(
        "droid",
        &config,
        &tmp.path().join("store"),
        1,
        "http://127.0.0.1:1/e",
    ));
    let doc = json(&config);
    assert_eq!(doc["customModels"], own["customModels"]);
    assert_eq!(doc["trustedFolders"], own["trustedFolders"]);
    assert_eq!(doc["hooks"].as_object().expect("hooks").len(), 9);
    ok(&run(&["check", "droid"], &config, &[]));
    ok(&run(&["uninstall", "droid"], &config, &[]));
    let doc = json(&config);
    assert_eq!(keys(&doc), ["customModels", "trustedFolders"]);
}
