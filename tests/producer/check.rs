//! `hooktrack check AGENT` as a doctor, for every agent: it fails, naming the file and the
//! fix, when the hook binary hooktrack's entries run is missing, not executable or an old
//! path, when the default store routed hooks deliver to cannot be written, and when nothing
//! is installed (naming the command that installs).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use hooktrack::Agent;

use super::util::hooktrack;

/// A scratch HOME and state directory; every agent gets a home of its own (`--home`).
struct Scratch {
    tmp: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(tmp.path().join("home")).expect("mkdir home");
        Self { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Where `agent`'s file goes.
    fn agent_home(&self, agent: Agent) -> PathBuf {
        self.path("agents").join(agent.name())
    }

    fn config(&self, agent: Agent) -> PathBuf {
        agent.config().file_in_home(&self.agent_home(agent))
    }

    /// `hooktrack COMMAND AGENT --home ITS_HOME EXTRA...` with this HOME and state
    /// directory, no agent home variable and no session's environment.
    fn run(&self, command: &str, agent: Agent, extra: &[&str]) -> Output {
        let home = self.agent_home(agent);
        fs::create_dir_all(&home).expect("mkdir agent home");
        let mut cmd = hooktrack();
        cmd.args([command, agent.name(), "--home"])
            .arg(&home)
            .args(extra)
            .env("HOME", self.path("home"))
            .env("XDG_STATE_HOME", self.path("state"));
        for var in crate::support::agent_home_vars() {
            cmd.env_remove(var);
        }
        for var in [
            "HOOKTRACK_DIR",
            "HOOKTRACK_URL",
            "HOOKTRACK_GENERATION",
            "HOOKTRACK_TOKEN",
        ] {
            cmd.env_remove(var);
        }
        cmd.output().expect("run hooktrack")
    }

    fn install(&self, agent: Agent, emitter: Option<&Path>) -> Output {
        let out = match emitter {
            Some(e) => self.run("install", agent, &["--emitter", e.to_str().expect("utf-8")]),
            None => self.run("install", agent, &[]),
        };
        assert!(out.status.success(), "{}: {out:?}", agent.name());
        out
    }

    /// `check --file-only` (the agent itself is not asked): its stderr when it fails.
    fn check_fails(&self, agent: Agent, extra: &[&str]) -> String {
        let mut args = vec!["--file-only"];
        args.extend(extra);
        let out = self.run("check", agent, &args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{}: {out:?}", agent.name());
        stderr
    }

    fn check_passes(&self, agent: Agent, extra: &[&str]) {
        let mut args = vec!["--file-only"];
        args.extend(extra);
        let out = self.run("check", agent, &args);
        assert!(out.status.success(), "{}: {out:?}", agent.name());
    }
}

/// What every finding about `agent`'s file must say: the file, and a fix that reinstalls.
fn names_file_and_reinstall(stderr: &str, scratch: &Scratch, agent: Agent) {
    let config = scratch.config(agent);
    assert!(
        stderr.contains(&config.display().to_string()),
        "{}: {stderr}",
        agent.name()
    );
    let fix = stderr.split_once("; fix: ").map_or("", |(_, fix)| fix);
    assert!(
        fix.contains("run `hooktrack install "),
        "{}: {stderr}",
        agent.name()
    );
}

fn write_mode(path: &Path, mode: u32) {
    fs::write(path, "#!/bin/sh\nexit 0\n").expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn check_names_the_command_that_installs_when_nothing_is_installed() {
    let scratch = Scratch::new();
    for agent in Agent::ALL {
        let stderr = scratch.check_fails(agent, &[]);
        assert!(
            stderr.contains("is not installed in"),
            "{}: {stderr}",
            agent.name()
        );
        assert!(
            stderr.contains(&scratch.config(agent).display().to_string()),
            "{}: {stderr}",
            agent.name()
        );
        assert!(
            stderr.contains("run `hooktrack install "),
            "{}: {stderr}",
            agent.name()
        );
        // Setup installs every agent (Kimi Code's routed block too); one whose config
        // also belongs to each launch is named with `hooktrack session` besides.
        assert!(
            stderr.contains("`hooktrack setup`"),
            "{}: {stderr}",
            agent.name()
        );
        assert_eq!(
            stderr.contains("`hooktrack session -- "),
            agent.descriptor().install.per_session_entries,
            "{}: {stderr}",
            agent.name()
        );
    }
}

#[test]
fn check_fails_when_the_hook_binary_the_entries_run_is_missing() {
    let scratch = Scratch::new();
    let gone = scratch.path("gone/hooktrack-hook");
    for agent in Agent::ALL {
        scratch.install(agent, Some(&gone));
        let stderr = scratch.check_fails(agent, &[]);
        names_file_and_reinstall(&stderr, &scratch, agent);
        assert!(
            stderr.contains(&format!("{}, does not exist", gone.display())),
            "{}: {stderr}",
            agent.name()
        );
        // Not even naming it helps: it is not there.
        scratch.check_fails(agent, &["--emitter", gone.to_str().expect("utf-8")]);
        // The fix it names works.
        scratch.install(agent, None);
        scratch.check_passes(agent, &[]);
    }
}

#[test]
fn check_fails_when_the_hook_binary_the_entries_run_is_not_executable() {
    let scratch = Scratch::new();
    let plain = scratch.path("hooktrack-hook");
    write_mode(&plain, 0o644);
    let named = ["--emitter", plain.to_str().expect("utf-8")];
    for agent in Agent::ALL {
        scratch.install(agent, Some(&plain));
        let stderr = scratch.check_fails(agent, &named);
        names_file_and_reinstall(&stderr, &scratch, agent);
        assert!(
            stderr.contains(&format!("{}, is not an executable file", plain.display())),
            "{}: {stderr}",
            agent.name()
        );
        assert!(stderr.contains("`chmod +x`"), "{}: {stderr}", agent.name());
    }
    // The first fix it names works.
    fs::set_permissions(&plain, fs::Permissions::from_mode(0o755)).expect("chmod");
    for agent in Agent::ALL {
        scratch.check_passes(agent, &named);
    }
}

#[test]
fn check_fails_when_the_entries_run_an_old_hooktrack() {
    let scratch = Scratch::new();
    let old = scratch.path("old/bin/hooktrack-hook");
    fs::create_dir_all(old.parent().expect("parent")).expect("mkdir");
    write_mode(&old, 0o755);
    for agent in Agent::ALL {
        scratch.install(agent, Some(&old));
        let stderr = scratch.check_fails(agent, &[]);
        names_file_and_reinstall(&stderr, &scratch, agent);
        assert!(
            stderr.contains(&format!("run {}, an old path", old.display())),
            "{}: {stderr}",
            agent.name()
        );
        // It names the hooktrack running the check, and how to accept the other one.
        assert!(
            stderr.contains("hooktrack-hook"),
            "{}: {stderr}",
            agent.name()
        );
        assert!(
            stderr.contains(&format!("--emitter {}", old.display())),
            "{}: {stderr}",
            agent.name()
        );
        scratch.check_passes(agent, &["--emitter", old.to_str().expect("utf-8")]);
        scratch.install(agent, None);
        scratch.check_passes(agent, &[]);
    }
}

#[test]
fn check_fails_when_the_default_store_cannot_be_written() {
    let scratch = Scratch::new();
    // A file where hooktrack's state folder must be: no routed hook can create its store.
    let state = scratch.path("state");
    fs::create_dir_all(&state).expect("mkdir");
    let blocker = state.join("hooktrack");
    fs::write(&blocker, "not a folder").expect("write");
    for agent in Agent::ALL {
        scratch.install(agent, None);
        let stderr = scratch.check_fails(agent, &[]);
        assert!(
            stderr.contains(&format!(
                "{}: a file stands where a folder must be",
                blocker.display()
            )),
            "{}: {stderr}",
            agent.name()
        );
        assert!(
            stderr.contains(&format!("agents/{}", agent.store_name())),
            "{}: {stderr}",
            agent.name()
        );
        assert!(
            stderr.contains("fix: give it back"),
            "{}: {stderr}",
            agent.name()
        );
    }
    // Entries that name their session's store do not deliver to the default one (the
    // routed entries go first: Kimi Code's file can hold both blocks side by side). Its
    // collector runs (its lock held here): a session that is gone would have its block
    // cleaned up by `check`.
    let store = scratch.path("session-store");
    let _running = crate::support::collector_running(&store);
    for agent in Agent::ALL {
        let out = scratch.run("uninstall", agent, &[]);
        assert!(out.status.success(), "{}: {out:?}", agent.name());
        let out = scratch.run(
            "install",
            agent,
            &[
                "--dir",
                store.to_str().expect("utf-8"),
                "--url",
                "http://127.0.0.1:9/events",
                "--generation",
                "1",
            ],
        );
        assert!(out.status.success(), "{}: {out:?}", agent.name());
        scratch.check_passes(agent, &[]);
    }
    // The fix: the folder back.
    fs::remove_file(&blocker).expect("rm");
    for agent in Agent::ALL {
        scratch.install(agent, None);
        scratch.check_passes(agent, &[]);
    }
}

/// A folder its user cannot write (what a `sudo` run leaves behind): check asks the system
/// whether this user may write it, so a user other than root is stopped by its mode and
/// root, whom no mode stops, is not told otherwise.
#[test]
fn check_fails_when_the_state_folder_is_not_the_users_to_write() {
    let scratch = Scratch::new();
    let state = scratch.path("state");
    let folder = state.join("hooktrack");
    fs::create_dir_all(&folder).expect("mkdir");
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o555)).expect("chmod");
    let agent = Agent::ALL[0];
    scratch.install(agent, None);
    if rustix::process::geteuid().is_root() {
        // Root writes anywhere: the mode holds no one back, and check says so.
        scratch.check_passes(agent, &[]);
    } else {
        let stderr = scratch.check_fails(agent, &[]);
        assert!(
            stderr.contains(&format!("{}: it is not writable", folder.display())),
            "{stderr}"
        );
    }
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).expect("chmod");
    scratch.check_passes(agent, &[]);
}
