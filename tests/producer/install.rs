//! `hooktrack install|uninstall|check kimi` on real files.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use hooktrack::{Agent, ConfigFormat};

use super::util::*;

/// An operator's config: comments, their own hooks, odd whitespace, CRLF lines, tabs, a
/// multi-line string, non-ASCII text, and no final newline.
const OPERATOR: &str = "# my kimi config\r\n\
default_model = \"k2\"   # trailing comment\r\n\
\n\n\
[providers.main]\n\
\ttype = \"kimi\"\n\
\x20\x20base_url   =   \"https://example.invalid/v1\"\n\
api_key = \"\"\"\nmulti\nline \u{e9}\n\"\"\"\n\
\n\
# operator hooks below\n\
[[hooks]]\n\
event = \"Stop\"\n\
command = \"notify-send 'done'\"\n\
matcher = \"\"\n\
timeout = 30\n\
\n\
[[hooks]]\n\
event    = \"PreToolUse\"\n\
command  = \"/usr/local/bin/guard --strict\"\n\
timeout  = 600";

fn run(args: &[&str], config: &Path, extra: &[&str]) -> Output {
    run_with_config(args, config, extra)
}

/// The agent name of a Kimi generation: `kimi-code` or `kimi-cli`.
fn kimi(variant: &str) -> String {
    format!("kimi-{variant}")
}

fn install(variant: &str, config: &Path, store: &Path, generation: u64, url: &str) -> Output {
    install_with(&["install", &kimi(variant)], config, store, generation, url)
}

fn text(path: &Path) -> String {
    fs::read_to_string(path).expect("read config")
}

fn hooks(config_text: &str) -> Vec<toml::Table> {
    let table: toml::Table = toml::from_str(config_text).expect("strict TOML");
    table["hooks"]
        .as_array()
        .expect("hooks array")
        .iter()
        .map(|h| h.as_table().expect("table").clone())
        .collect()
}

#[test]
fn install_keeps_every_byte_outside_the_block_and_uninstall_restores_the_file() {
    for (variant, events) in [("code", 20), ("cli", 13)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let config = tmp.path().join("config.toml");
        let store = tmp.path().join("store");
        fs::write(&config, OPERATOR).expect("write");
        fs::set_permissions(&config, fs::Permissions::from_mode(0o640)).expect("chmod");
        let out = install(variant, &config, &store, 1, "http://127.0.0.1:4100/events");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let installed = text(&config);
        // Everything before the block is the operator's text, byte for byte, and the
        // block adds the one newline the last line lacked.
        assert!(installed.starts_with(OPERATOR), "{installed}");
        let block = &installed[OPERATOR.len()..];
        assert!(
            block
                .starts_with("\n# >>> hooktrack kimi observer (generation 1, newline added) >>>\n")
        );
        assert!(block.ends_with("# <<< hooktrack kimi observer <<<\n"));
        // Strictly valid TOML; the operator's two hooks, then one entry per event.
        let entries = hooks(&installed);
        assert_eq!(entries.len(), 2 + events, "{variant}");
        assert_eq!(entries[0]["command"].as_str(), Some("notify-send 'done'"));
        for entry in &entries[2..] {
            let mut keys: Vec<&str> = entry.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["command", "event", "timeout"]);
            assert_eq!(entry["timeout"].as_integer(), Some(5));
            let command = entry["command"].as_str().expect("command");
            // The hook-only binary beside `hooktrack` is what the hooks run.
            let binary = fs::canonicalize(env!("CARGO_BIN_EXE_hooktrack-hook")).expect("binary");
            assert!(
                command.starts_with(&format!("'{}' emit --url ", binary.display())),
                "{command}"
            );
            assert!(command.contains(&format!("--dir '{}'", store.display())));
            assert!(command.ends_with(&format!(
                "--event '{}'",
                entry["event"].as_str().expect("event")
            )));
            assert!(!command.contains("TOKEN") && !command.contains("token"));
        }
        assert_eq!(mode(&config), 0o640, "the file's mode is kept");
        let verdict = channel(&store);
        assert_eq!(verdict["install"]["ok"], true, "{verdict}");
        assert_eq!(verdict["generation"], 1);
        // A re-install replaces the block in place (its session's collector runs: a block
        // whose collector is gone is cleaned up by the `check` below).
        let _running = crate::support::collector_running(&store);
        let out = install(variant, &config, &store, 2, "http://127.0.0.1:4200/events");
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("replacing generation 1"));
        let reinstalled = text(&config);
        assert!(reinstalled.starts_with(OPERATOR));
        assert_eq!(reinstalled.matches("# >>> hooktrack").count(), 1);
        assert!(reinstalled.contains("(generation 2, newline added)"));
        assert!(reinstalled.contains(":4200/") && !reinstalled.contains(":4100/"));
        // Check agrees; uninstall gives the original bytes back.
        let out = run(&["check", &kimi(variant)], &config, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains(&format!("has {events}")), "{report}");
        let out = run(&["uninstall", &kimi(variant)], &config, &[]);
        assert!(out.status.success());
        assert_eq!(fs::read(&config).expect("read"), OPERATOR.as_bytes());
        assert_eq!(mode(&config), 0o640);
    }
}

#[test]
fn a_block_in_the_middle_is_replaced_where_it_is() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config.toml");
    let store = tmp.path().join("store");
    fs::write(&config, "a = 1\n").expect("write");
    assert!(
        install("cli", &config, &store, 1, "http://127.0.0.1:1/e")
            .status
            .success()
    );
    let mut with_more = text(&config);
    with_more.push_str(
        "\n# added later by the operator\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n",
    );
    fs::write(&config, &with_more).expect("write");
    assert!(
        install("cli", &config, &store, 2, "http://127.0.0.1:2/e")
            .status
            .success()
    );
    let after = text(&config);
    assert!(after.starts_with("a = 1\n# >>> hooktrack kimi observer (generation 2) >>>\n"));
    assert!(after.ends_with("# <<< hooktrack kimi observer <<<\n\n# added later by the operator\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n"));
    assert!(run(&["uninstall", "kimi"], &config, &[]).status.success());
    assert_eq!(
        text(&config),
        "a = 1\n\n# added later by the operator\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\n"
    );
}

#[test]
fn a_violation_restores_the_previous_text_and_says_why_in_channel_json() {
    let cases = [
        // Kimi Code voids all hooks on an unknown event or key or a bad timeout.
        (
            "code",
            "[[hooks]]\nevent = \"TurnStart\"\ncommand = \"x\"\n",
            "not one of Kimi Code 2.x's 20 events",
            true,
        ),
        (
            "code",
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\nonce = true\n",
            "unknown key `once`",
            true,
        ),
        (
            "code",
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 601\n",
            "outside 1..=600",
            true,
        ),
        // Kimi CLI refuses to start on an event it does not know (TurnStarted is Code's).
        (
            "cli",
            "[[hooks]]\nevent = \"TurnStarted\"\ncommand = \"x\"\n",
            "not one of Kimi CLI 1.x's 13 events",
            true,
        ),
        // A static hooks array cannot be extended by [[hooks]] (valid alone, broken merged).
        ("cli", "hooks = []\n", "not valid TOML", false),
    ];
    for (variant, original, reason, invalid_alone) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        let config = tmp.path().join("config.toml");
        let store = tmp.path().join("store");
        fs::write(&config, original).expect("write");
        let out = install(variant, &config, &store, 3, "http://127.0.0.1:4100/events");
        assert_eq!(out.status.code(), Some(1), "{variant} {original:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(reason), "{stderr}");
        assert!(stderr.contains("previous text restored"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1);
        assert_eq!(fs::read(&config).expect("read"), original.as_bytes());
        let verdict = channel(&store);
        assert_eq!(verdict["install"]["ok"], false);
        assert!(
            verdict["install"]["detail"]
                .as_str()
                .expect("detail")
                .contains(reason),
            "{verdict}"
        );
        assert_eq!(verdict["generation"], 3);
        // check names the same problem (a file valid alone holds no hooktrack block: not
        // installed, and it names the fix) and changes nothing.
        let out = run(&["check", &kimi(variant)], &config, &[]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !invalid_alone {
            assert!(
                stderr.contains("holds no hooktrack block; run `hooktrack install kimi`"),
                "{stderr}"
            );
        }
        assert_eq!(fs::read(&config).expect("read"), original.as_bytes());
    }
}

#[test]
fn a_missing_config_is_created_and_removed_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("kimi-home");
    let store = tmp.path().join("store");
    let out = hooktrack()
        .args(["install", "kimi-code", "--home"])
        .arg(&home)
        .args([
            "--url",
            "http://127.0.0.1:9/events",
            "--generation",
            "1",
            "--dir",
        ])
        .arg(&store)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = home.join("config.toml");
    assert_eq!(hooks(&text(&config)).len(), 20);
    assert_eq!(mode(&config), 0o600);
    let out = hooktrack()
        .args(["uninstall", "kimi-code", "--home"])
        .arg(&home)
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(text(&config), "");
}

#[test]
fn uninstall_with_a_generation_leaves_a_newer_block_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config.toml");
    let store = tmp.path().join("store");
    fs::write(&config, "x = 1\n").expect("write");
    assert!(
        install("cli", &config, &store, 5, "http://127.0.0.1:1/e")
            .status
            .success()
    );
    let before = text(&config);
    let out = run(&["uninstall", "kimi"], &config, &["--generation", "4"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("left the hooktrack block of generation 5")
    );
    assert_eq!(text(&config), before);
    assert!(
        run(&["uninstall", "kimi"], &config, &["--generation", "5"])
            .status
            .success()
    );
    assert_eq!(text(&config), "x = 1\n");
}

#[test]
fn broken_markers_are_left_for_a_human() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config.toml");
    let store = tmp.path().join("store");
    let original = "a = 1\n# >>> hooktrack kimi observer (generation 1) >>>\n[[hooks]]\n";
    fs::write(&config, original).expect("write");
    let out = install("cli", &config, &store, 2, "http://127.0.0.1:1/e");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no end marker"));
    assert_eq!(text(&config), original);
    assert_eq!(
        run(&["uninstall", "kimi"], &config, &[]).status.code(),
        Some(1)
    );
    assert_eq!(text(&config), original);
}

#[test]
fn a_symlinked_config_stays_a_symlink() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let real = tmp.path().join("dotfiles-config.toml");
    let link = tmp.path().join("config.toml");
    let store = tmp.path().join("store");
    fs::write(&real, "a = 1\n").expect("write");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    assert!(
        install("cli", &link, &store, 1, "http://127.0.0.1:1/e")
            .status
            .success()
    );
    assert!(
        fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert!(text(&real).contains("# >>> hooktrack"));
    assert!(run(&["uninstall", "kimi"], &link, &[]).status.success());
    assert_eq!(text(&real), "a = 1\n");
}

#[test]
fn auto_detection_asks_the_installed_kimi() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    let home = tmp.path().join("home");
    fs::create_dir_all(&bin).expect("mkdir");
    fs::create_dir_all(&home).expect("mkdir");
    for (version, events, config) in [
        ("kimi, version 1.52.0", 13, home.join(".kimi/config.toml")),
        ("2.2.0", 20, home.join(".kimi-code/config.toml")),
    ] {
        let kimi = bin.join("kimi");
        fs::write(&kimi, format!("#!/bin/sh\necho '{version}'\n")).expect("write");
        fs::set_permissions(&kimi, fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = hooktrack()
            .args([
                "install",
                "kimi",
                "--url",
                "http://127.0.0.1:9/e",
                "--generation",
                "1",
                "--dir",
            ])
            .arg(tmp.path().join("store"))
            .env("PATH", &bin)
            .env("HOME", &home)
            .env_remove("KIMI_CODE_HOME")
            .env_remove("KIMI_SHARE_DIR")
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(hooks(&text(&config)).len(), events, "{version}");
    }
}

/// `install|uninstall|check` take the agent names `session --agent` takes, through the one
/// parser: every agent's wire name (`claude-code`, `gemini-cli` name the same agents as
/// `claude` and `gemini`; `kimi-code` and `kimi-cli` name one Kimi each).
#[test]
fn every_subcommand_accepts_the_agent_names_session_takes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for agent in Agent::ALL {
        let name = agent.name();
        let label = agent.label();
        // A plugin is one entry; a hooks file has one per event.
        let entries = match agent.config().format {
            ConfigFormat::Plugin => 1,
            // One file per event, each an entry.
            ConfigFormat::TomlHooks | ConfigFormat::JsonHooks | ConfigFormat::HookFiles => {
                agent.descriptor().hook_events_for(None).len()
            }
        };
        let home = tmp.path().join(name);
        fs::create_dir_all(&home).expect("mkdir");
        let config = agent.config().file_in_home(&home);
        let step = |command: &str| {
            let mut cmd = hooktrack();
            cmd.args([command, name, "--home"])
                .arg(&home)
                .args(if command == "check" {
                    &["--file-only"][..]
                } else {
                    &[][..]
                })
                .env("HOME", tmp.path());
            for var in crate::support::agent_home_vars() {
                cmd.env_remove(var);
            }
            let out = cmd.output().expect("run");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{command} {name}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout
        };
        let installed = step("install");
        assert!(
            installed.contains(&format!(
                "installed {entries} hooktrack entries for {label}"
            )),
            "{installed}"
        );
        assert!(
            installed.contains(&config.display().to_string()),
            "{installed}"
        );
        let checked = step("check");
        assert!(checked.contains(&format!("for {label}")), "{checked}");
        assert!(
            fs::read_to_string(&config)
                .expect("config")
                .contains("hooktrack")
        );
        step("uninstall");
        // A hooks file keeps the rest; a plugin file, wholly hooktrack's, is gone.
        let left = fs::read_to_string(&config).ok();
        assert!(
            left.as_deref().is_none_or(|t| !t.contains("hooktrack")),
            "{name}: {left:?}"
        );
    }
    // One spelling per agent: no second way to pick a Kimi; `auto` names no agent; a
    // project file only where the agent reads one.
    let refused = |args: &[&str], says: &str| {
        let out = hooktrack()
            .args(args)
            .arg(tmp.path())
            .env("HOME", tmp.path())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(if says.is_empty() { 2 } else { 1 }));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
    };
    refused(&["check", "kimi", "--variant", "cli", "--home"], "");
    refused(&["check", "auto", "--home"], "name an agent, not `auto`");
    refused(&["check", "kimi", "--project"], "reads no project file");
    refused(
        &["install", "kimi-code", "--project"],
        "Kimi Code 2.x reads no project file",
    );
    refused(&["install", "no-such-agent", "--home"], "");
}

/// The plugin file each plugin agent gets, byte for byte (hooktrack's version shown as
/// `{VERSION}`): a change to a plugin's source, or to how it is filled in, shows here.
#[test]
fn each_plugin_file_is_written_as_recorded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plugins: Vec<Agent> = Agent::ALL
        .into_iter()
        .filter(|a| a.config().format == ConfigFormat::Plugin)
        .collect();
    assert!(!plugins.is_empty());
    for agent in plugins {
        let home = tmp.path().join(agent.name());
        let out = hooktrack()
            .args(["install", agent.name(), "--home"])
            .arg(&home)
            .args([
                "--emitter",
                "/opt/it's/hooktrack-hook",
                "--url",
                "http://127.0.0.1:4100/events",
                "--dir",
                "/s/\"q\"/store",
                "--generation",
                "7",
            ])
            .env("HOME", tmp.path())
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = fs::read_to_string(agent.config().file_in_home(&home)).expect("the plugin");
        let text = text.replacen(env!("CARGO_PKG_VERSION"), "{VERSION}", 1);
        insta::assert_snapshot!(format!("plugin-{}", agent.name()), text);
    }
}
