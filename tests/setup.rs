//! `hooktrack setup` / `setup --undo` in a scratch home, and the default store a routed
//! hook delivers to when the agent was started without hooktrack's environment.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    bin: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let state = dir.path().join("state");
        // An empty PATH directory: only the agents' config directories say what is there.
        let bin = dir.path().join("bin");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&bin).unwrap();
        Home {
            _dir: dir,
            home,
            state,
            bin,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_hooktrack"))
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env("PATH", &self.bin)
            .current_dir(&self.home)
            .output()
            .unwrap()
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

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

    let out = h.run(&["setup"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("claude: 28 hooktrack entries"), "{said}");
    assert!(said.contains("claude: check: ok"), "{said}");
    assert!(said.contains("gemini: 11 hooktrack entries"), "{said}");
    // Gemini's check names its auth and folder trust; the tmux lines follow.
    assert!(
        said.contains("gemini: check:") && said.contains("selectedType"),
        "{said}"
    );
    assert!(said.contains("set -g status-right"), "{said}");
    assert!(said.contains("set -g window-status-format"), "{said}");
    // Agents not found are not touched.
    assert!(!h.file(".codex").exists());
    let installed = fs::read_to_string(&claude).unwrap();
    assert!(installed.contains("emit --observer hooktrack --agent 'claude'"));
    assert!(!installed.contains("--dir"), "routed entries name no store");
    // A second setup changes nothing undo must know about.
    assert!(h.run(&["setup"]).status.success());
    assert_eq!(fs::read_to_string(&claude).unwrap(), installed);
    assert_eq!(mode(&h.state.join("hooktrack")), 0o700);

    let out = h.run(&["setup", "--undo"]);
    assert!(out.status.success(), "{}", text(&out));
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

    let out = h.run(&["setup", "--undo"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("changed since setup"), "{said}");
    let after = fs::read_to_string(&claude).unwrap();
    assert!(after.contains("\"light\""), "{after}");
    assert!(!after.contains("hooktrack"), "{after}");
}

#[test]
fn setup_finds_nothing_in_an_empty_home() {
    let h = Home::new();
    let out = h.run(&["setup"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("no supported agent found"));
    assert_eq!(fs::read_dir(&h.home).unwrap().count(), 0);
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}
