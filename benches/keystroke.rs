//! Keystroke → tmux option, with the real CLIs (`cargo bench --bench keystroke`, part of
//! `just bench`).
//!
//! Real Claude Code 2.1.332, Kimi Code 2.1.0 and Factory Droid 0.225.2 (the end-to-end
//! tests' npm installs under `target/tmp/`: run `cargo test --test e2e -- many_panes::`,
//! `kimi_code::` and `factory_droid_exec_tool_turn` once first; an agent not installed is
//! skipped, saying so) are typed into the panes of a private tmux
//! server against `tests/e2e/mock_model.py`, in a scratch HOME, two ways: after `hooktrack
//! setup` (a plain `claude`, `kimi` or `droid` in the pane) and under `hooktrack session -- AGENT`;
//! one `hooktrack watch --tmux` with no path publishes every pane's options. Per agent and
//! way, `HOOKTRACK_BENCH_TRIES` (default 20) of each:
//!
//! - **Escape** while the answer streams (`[[slowtext]]`): the key, the CLI's own record of
//!   it (Claude Code: its transcript's `[Request interrupted by user]` entry's `timestamp`;
//!   Kimi Code: the `Interrupt` hook row's `received_at`), and the pane's
//!   `@hooktrack_phase` turning `ready`; for Claude Code also when that transcript line
//!   landed in the file (its entry's `timestamp` is when it was made, which can be earlier),
//!   seen by polling the file's length every millisecond;
//! - **a permission dialog** (`[[askeach]]` / `[[perm]]`: a `touch`, each prompt its own
//!   call): the `PermissionRequest` hook row's `received_at` and the option turning
//!   `blocked` (what the agent wrote → the option); then the answer (Kimi Code: `1`;
//!   Claude Code: Enter on its preselected "Yes", once `watch` has read the pane showing
//!   the dialog, which the wrapper below logs, and again while the dialog stays drawn for
//!   a second: seen once, an Enter right after the dialog appeared was not taken) and the
//!   option turning `active` (or `ready`, when the tool's and the turn's end are read
//!   together) again (the answering key → option);
//! - Claude Code and Factory Droid (only this for Droid), **a 3 s call's dialog**
//!   (`[[wait3each]]`; Droid: its preselected "Yes, allow") answered the same way:
//!   for 3 s only the pane can say it was answered (no hook fires on the answer), so Enter
//!   → option is the screen's own figure; how many came before the call's `PostToolUse`
//!   row; under `session` also when the session's own output (`--format ndjson`, its
//!   line's `at`) showed the agent out of `blocked`: the launch reads the pane too (for
//!   Droid the Enter then also waits for the session's own read of the dialog, logged by a
//!   wrapper in front of its `tmux` as well).
//!
//! The time of an option change is when `watch`'s `tmux set-option` command returned: the
//! `tmux` `watch` runs is a wrapper in front of the real one that logs `$EPOCHREALTIME`
//! after it (so the figures include tmux's own work), and logs a `capture-pane` whose
//! text holds Claude Code's or Factory Droid's dialog (their descriptors' looks) as
//! `drawn`. A key's time is taken just before
//! `tmux send-keys` is started. Printed: p50 / p99 / max per agent, way and measure (with
//! 20 samples p99 is the largest). Nothing is asserted; a step that does not come
//! within 180 s stops the run, naming it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[allow(dead_code)]
#[path = "../tests/e2e/mock.rs"]
mod mock;
#[allow(dead_code)]
#[path = "../tests/scratch_home.rs"]
mod scratch_home;

use mock::Mock;
use scratch_home::{Home, TmuxServer, text, write_script};
use serde_json::Value;

/// How long one step (a TUI's start, an answer, an option) may take before the run stops.
const PATIENCE: Duration = Duration::from_secs(180);

#[derive(Clone, Copy, PartialEq)]
enum Agent {
    Claude,
    Kimi,
    Droid,
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Setup,
    Session,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code 2.1.332",
            Agent::Kimi => "Kimi Code 2.1.0",
            Agent::Droid => "Factory Droid 0.225.2",
        }
    }

    /// Whether `screen` draws the agent's permission dialog, by its descriptor's looks
    /// (Claude Code's and Factory Droid's: the agents whose answer only the pane shows).
    fn draws_dialog(self, screen: &str) -> bool {
        let agent = match self {
            Agent::Claude => hooktrack::Agent::ClaudeCode,
            Agent::Kimi => return false,
            Agent::Droid => hooktrack::Agent::FactoryDroid,
        };
        agent
            .descriptor()
            .screen
            .is_some_and(|looks| looks.draws_dialog(screen))
    }
}

/// Every dialog look of the agents whose answer the pane shows (their descriptors').
fn dialog_looks() -> Vec<&'static str> {
    [hooktrack::Agent::ClaudeCode, hooktrack::Agent::FactoryDroid]
        .iter()
        .filter_map(|a| a.descriptor().screen)
        .flat_map(|screen| screen.dialog.iter().map(|look| look.text))
        .collect()
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Setup => "after setup",
            Way::Session => "under session",
        }
    }
}

/// Microseconds since the epoch.
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// An RFC 3339 time (`received_at`, a transcript's `timestamp`: milliseconds) in
/// microseconds.
fn rfc3339_us(text: &str) -> Option<i64> {
    hooktrack::Timestamp::parse_rfc3339(text).map(|t| t.as_millis() * 1000)
}

/// Polls `f` every 10 ms until it gives a value; stops the run after [`PATIENCE`].
fn wait<T>(what: &str, context: impl Fn() -> String, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > PATIENCE {
            panic!("gave up waiting for {what}\n{}", context());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Where each agent's program is (`None`: not in this world).
#[derive(Clone, Copy, Default)]
struct Bins<'a> {
    /// Claude Code's `claude`.
    claude: Option<&'a Path>,
    /// The folder of `kimi` and its Node.
    kimi: Option<&'a Path>,
    /// The folder of `droid`.
    droid: Option<&'a Path>,
}

/// One scratch world: a HOME where both agents are installed and set up (or not), a tmux
/// server whose `tmux` logs each command's return, one `watch --tmux`.
struct World {
    h: Home,
    work: PathBuf,
    tmux: TmuxServer,
    log: PathBuf,
    /// The logging `tmux` `hooktrack session` runs, and its log.
    session_wrap: PathBuf,
    session_log: PathBuf,
    watch: std::process::Child,
    path: String,
}

impl World {
    fn new(way: Way, tag: &str, bins: Bins<'_>, mock: &Mock) -> Self {
        let Bins {
            claude,
            kimi,
            droid,
        } = bins;
        let h = Home::new();
        let work = h.home.join("work");
        fs::create_dir_all(&work).expect("mkdir work");
        if let Some(claude) = claude {
            std::os::unix::fs::symlink(claude, h.bin.join("claude")).expect("symlink claude");
        }
        let mut path = h.bin.display().to_string();
        if let Some(kimi) = kimi {
            // `kimi` and the Node 22 it runs on, from one folder.
            path = format!("{path}:{}", kimi.display());
        }
        if let Some(droid) = droid {
            // `droid`, a native binary.
            path = format!("{path}:{}", droid.display());
        }
        path += ":/usr/bin:/bin";
        // Claude Code past its first-run dialogs, in manual mode (where Bash asks).
        scratch_home::claude_past_first_run(&h.home, &work, "dummy");
        fs::create_dir_all(h.home.join(".claude")).expect("mkdir .claude");
        fs::write(
            h.home.join(".claude/settings.json"),
            r#"{"permissions": {"defaultMode": "manual"}}"#,
        )
        .expect("settings.json");
        // Kimi Code's provider: the mock.
        fs::create_dir_all(h.home.join(".kimi-code")).expect("mkdir .kimi-code");
        fs::write(
            h.home.join(".kimi-code/config.toml"),
            format!(
                "default_model = \"mock\"\n\n[providers.mockprov]\ntype = \"kimi\"\n\
                 base_url = \"http://127.0.0.1:{}/v1\"\napi_key = \"dummy\"\n\n\
                 [models.mock]\nprovider = \"mockprov\"\nmodel = \"kimi-mock\"\n\
                 max_context_size = 131072\n",
                mock.port
            ),
        )
        .expect("config.toml");
        // Factory Droid's model: the mock (its TUI takes it by itself with
        // `FACTORY_AIRGAP_ENABLED=true`), the work folder trusted.
        fs::create_dir_all(h.home.join(".factory")).expect("mkdir .factory");
        fs::write(
            h.home.join(".factory/settings.json"),
            serde_json::json!({
                "customModels": [{
                    "model": "droid-mock",
                    "displayName": "Mock",
                    "baseUrl": format!("http://127.0.0.1:{}/v1", mock.port),
                    "apiKey": "x",
                    "provider": "generic-chat-completion-api",
                    "maxOutputTokens": 4096,
                }],
                "trustedFolders": { work.to_string_lossy(): {} },
            })
            .to_string(),
        )
        .expect(".factory/settings.json");
        if way == Way::Setup {
            let out = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
                .arg("setup")
                .env_clear()
                .env("HOME", &h.home)
                .env("XDG_STATE_HOME", &h.state)
                .env("PATH", &path)
                .current_dir(&work)
                .output()
                .expect("setup");
            assert!(out.status.success(), "setup: {}", text(&out));
        }
        // The `tmux` watch runs: the real one, then the time it returned.
        let real = String::from_utf8_lossy(
            &Command::new("sh")
                .args(["-c", "command -v tmux"])
                .output()
                .expect("command -v tmux")
                .stdout,
        )
        .trim()
        .to_owned();
        let wrap = h.home.join("wrap");
        let log = h.home.join("tmux.log");
        // The same in front of `hooktrack session`'s own `tmux` (it reads the pane too),
        // logging to a file of its own.
        let session_wrap = h.home.join("session-wrap");
        let session_log = h.home.join("session-tmux.log");
        // A `capture-pane` that showed Claude Code's or Factory Droid's dialog is logged as
        // `drawn`: the reader has seen it, so an answer from then on can be seen on the
        // screen.
        let drawn = dialog_looks()
            .iter()
            .map(|look| format!("$out == *'{look}'*"))
            .collect::<Vec<_>>()
            .join(" || ");
        for (dir, log) in [(&wrap, &log), (&session_wrap, &session_log)] {
            fs::create_dir_all(dir).expect("mkdir wrap");
            write_script(
                &dir.join("tmux"),
                &format!(
                    "#!/bin/bash\n\
                     if [[ \" $* \" == *' capture-pane '* ]]; then\n\
                     out=$('{real}' \"$@\"); rc=$?\nprintf '%s\\n' \"$out\"\n\
                     if [[ {drawn} ]]; then printf '%s drawn %s\\n' \"$EPOCHREALTIME\" \"$*\" >> '{log}'; fi\n\
                     exit $rc\nfi\n\
                     '{real}' \"$@\"\nrc=$?\nprintf '%s %s\\n' \"$EPOCHREALTIME\" \"$*\" >> '{log}'\nexit $rc\n",
                    log = log.display()
                ),
            );
        }
        let idle = h.home.join("idle.sh");
        write_script(&idle, "#!/bin/sh\nexec sleep 3600\n");
        let (tmux, _) = TmuxServer::start(&format!("hooktrack-keys-{tag}"), &idle, (160, 45));
        let watch = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
            .args(["watch", "--tmux", "--tmux-socket", &tmux.socket])
            .env_clear()
            .env("HOME", &h.home)
            .env("XDG_STATE_HOME", &h.state)
            .env("PATH", format!("{}:/usr/bin:/bin", wrap.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("watch");
        World {
            h,
            work,
            tmux,
            log,
            session_wrap,
            session_log,
            watch,
            path,
        }
    }

    /// A new window running `program` (through `hooktrack session` under [`Way::Session`]):
    /// its pane id.
    fn start(&self, way: Way, program: &str, env: &str) -> String {
        let run = match way {
            Way::Setup => program.to_owned(),
            // Its posture lines to a file, so the TUI's screen stays the agent's.
            Way::Session => format!(
                "'{}' session --format ndjson --output '{}' -- {program}",
                env!("CARGO_BIN_EXE_hooktrack"),
                self.session_output(program).display()
            ),
        };
        let path = match way {
            Way::Setup => self.path.clone(),
            Way::Session => format!("{}:{}", self.session_wrap.display(), self.path),
        };
        let script = self.h.home.join(format!("{program}.sh"));
        write_script(
            &script,
            &format!(
                "#!/bin/sh\ncd '{work}'\nexec env -i PATH='{path}' HOME='{home}' XDG_STATE_HOME='{state}' \
                 TERM=xterm-256color TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" {env} {run}\n",
                work = self.work.display(),
                home = self.h.home.display(),
                state = self.h.state.display(),
            ),
        );
        let out = self
            .tmux
            .tmux()
            .args(["new-window", "-a", "-d", "-P", "-F", "#{pane_id}"])
            .arg(&script)
            .output()
            .expect("new-window");
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn screen(&self, pane: &str) -> String {
        self.tmux.screen(pane)
    }

    /// Where `hooktrack session -- program` writes its lines (`--format ndjson`).
    fn session_output(&self, program: &str) -> PathBuf {
        self.h.home.join(format!("{program}.session"))
    }

    /// When `hooktrack session -- program`'s own output first showed the agent out of
    /// `blocked` after `after` (microseconds; its line's `at`, milliseconds): the session
    /// reads the pane too, inside tmux.
    fn session_unblocked(&self, program: &str, after: i64) -> Option<i64> {
        fs::read_to_string(self.session_output(program))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["kind"] == "event")
            .filter_map(|l| {
                let at = rfc3339_us(l["at"].as_str()?)?;
                let phase = &l["posture"]["turn"]["phase"];
                (at > after && (phase == "active" || phase == "ready")).then_some(at)
            })
            .next()
    }

    /// Presses Enter on the agent's dialog (its first option, "Yes"), again while it stays
    /// drawn for a second (seen once with Claude Code while writing this bench: an Enter
    /// pressed right after the dialog appeared left it drawn for minutes): the time of the
    /// Enter that answered.
    fn answer_dialog(&self, agent: Agent, pane: &str) -> i64 {
        for _ in 0..5 {
            let at = self.keys(pane, &["Enter"]);
            let pressed = Instant::now();
            while pressed.elapsed() < Duration::from_secs(1) {
                if !agent.draws_dialog(&self.screen(pane)) {
                    return at;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        panic!("the dialog took no Enter:\n{}", self.screen(pane));
    }

    /// When `watch` first read `pane` showing the dialog after `after`, from the wrapper's
    /// log.
    fn dialog_read(&self, pane: &str, after: i64) -> Option<i64> {
        read_drawn(&self.log, pane, after)
    }

    /// The same for `hooktrack session`'s own reads.
    fn session_dialog_read(&self, pane: &str, after: i64) -> Option<i64> {
        read_drawn(&self.session_log, pane, after)
    }
}

/// When a reader whose `tmux` logs to `log` first read `pane` showing the dialog after
/// `after`.
fn read_drawn(log: &Path, pane: &str, after: i64) -> Option<i64> {
    let target = format!("-t {pane}");
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (at, rest) = l.split_once(' ')?;
            let args = rest.strip_prefix("drawn ")?;
            let at = (at.parse::<f64>().ok()? * 1e6) as i64;
            (at > after && args.ends_with(&target)).then_some(at)
        })
        .next()
}

impl World {
    fn keys(&self, pane: &str, keys: &[&str]) -> i64 {
        let at = now_us();
        let mut args = vec!["send-keys", "-t", pane];
        args.extend_from_slice(keys);
        self.tmux.run(&args);
        at
    }

    /// Waits for the agent's dialog on the screen (by its descriptor's looks).
    fn wait_dialog(&self, agent: Agent, pane: &str) {
        wait(
            "the dialog drawn",
            || self.screen(pane),
            || agent.draws_dialog(&self.screen(pane)).then_some(()),
        );
    }

    fn wait_screen(&self, pane: &str, what: &str) {
        wait(
            what,
            || self.screen(pane),
            || self.screen(pane).contains(what).then_some(()),
        );
    }

    /// The hook rows from `pane` in every store under the state folder.
    fn rows(&self, pane: &str) -> Vec<Value> {
        let mut found = Vec::new();
        let mut dirs = vec![self.h.state.clone()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.file_name().is_some_and(|n| n == "events.ndjson") {
                    found.extend(
                        fs::read_to_string(&p)
                            .unwrap_or_default()
                            .lines()
                            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                            .filter(|r| r["tmux_pane"] == pane),
                    );
                }
            }
        }
        found
    }

    fn count(&self, pane: &str, event: &str) -> usize {
        self.rows(pane)
            .iter()
            .filter(|r| r["event"] == event)
            .count()
    }

    /// The first time after `after` that `watch` set `@hooktrack_phase` of `pane` to one
    /// of `phases` (microseconds), from the wrapper's log.
    fn option_set(&self, pane: &str, phases: &[&str], after: i64) -> Option<i64> {
        let wanted: Vec<String> = phases
            .iter()
            .map(|p| format!("-t {pane} @hooktrack_phase {p}"))
            .collect();
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (at, args) = l.split_once(' ')?;
                let at = (at.parse::<f64>().ok()? * 1e6) as i64;
                let set = args.split(" ; ").any(|cmd| {
                    wanted
                        .iter()
                        .any(|w| cmd.ends_with(w.as_str()) || cmd.contains(&format!("{w} ")))
                });
                (at > after && set).then_some(at)
            })
            .next()
    }

    fn wait_option(&self, pane: &str, phases: &[&str], after: i64) -> i64 {
        wait(
            &format!("@hooktrack_phase {phases:?} on {pane}"),
            || self.screen(pane),
            || self.option_set(pane, phases, after),
        )
    }

    /// Types `text` and presses Enter once it is drawn, again while no new
    /// `UserPromptSubmit` row came (a TUI may take a burst of keys as a paste, where Enter
    /// is a newline); the time of the Enter that submitted it.
    fn prompt(&self, pane: &str, text: &str) -> i64 {
        let before = self.count(pane, "UserPromptSubmit");
        let drawn = self.screen(pane).matches(text).count();
        self.keys(pane, &["-l", text]);
        wait(
            &format!("{text:?} drawn"),
            || self.screen(pane),
            || (self.screen(pane).matches(text).count() > drawn).then_some(()),
        );
        for _ in 0..4 {
            let at = self.keys(pane, &["Enter"]);
            let pressed = Instant::now();
            while pressed.elapsed() < Duration::from_secs(15) {
                if self.count(pane, "UserPromptSubmit") > before {
                    return at;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        panic!("{text:?} was not submitted:\n{}", self.screen(pane));
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.watch.kill();
        let _ = self.watch.wait();
    }
}

/// One measure's samples, in microseconds.
#[derive(Default)]
struct Samples(Vec<i64>);

impl Samples {
    fn report(&self, label: &str) {
        let mut v = self.0.clone();
        v.sort_unstable();
        if v.is_empty() {
            println!("  {label:<58} no samples");
            return;
        }
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        let ms = |us: i64| us as f64 / 1000.0;
        println!(
            "  {label:<58} n {:>3}  p50 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms",
            v.len(),
            ms(at(0.5)),
            ms(at(0.99)),
            ms(v[v.len() - 1])
        );
    }
}

#[derive(Default)]
struct Figures {
    escape_after_write: Samples,
    escape_after_landed: Samples,
    escape_after_key: Samples,
    dialog_after_write: Samples,
    answer_after_key: Samples,
    /// Claude Code: a 3 s call's dialog answered, the watch's option (and, under
    /// `session`, the session's own line) out of `blocked`; how many came before the
    /// call's `PostToolUse` row.
    long_answer_after_key: Samples,
    session_answer_after_key: Samples,
    long_before_its_end: usize,
}

/// The transcripts `rows` name.
fn transcript_paths(rows: &[Value]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = rows
        .iter()
        .filter_map(|r| r["payload"]["transcript_path"].as_str().map(PathBuf::from))
        .collect();
    paths.dedup();
    paths
}

/// When a line holding `needle` first lands in one of `paths` (from now on): a 1 ms poll of
/// their lengths, for at most [`PATIENCE`].
fn line_landed(paths: &[PathBuf], needle: &str) -> Option<i64> {
    let len = |p: &PathBuf| fs::metadata(p).map_or(0, |m| m.len());
    let mut seen: Vec<u64> = paths.iter().map(len).collect();
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        for (p, was) in paths.iter().zip(seen.iter_mut()) {
            let now = len(p);
            if now == *was {
                continue;
            }
            let at = now_us();
            let text = fs::read(p).unwrap_or_default();
            let from = usize::try_from(*was).unwrap_or(0).min(text.len());
            *was = now;
            if String::from_utf8_lossy(&text[from..]).contains(needle) {
                return Some(at);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

/// The `timestamp` of the first entry after `after` that `wanted` picks out in the
/// transcripts `rows` name.
fn transcript_entry(rows: &[Value], after: i64, wanted: impl Fn(&str) -> bool) -> Option<i64> {
    let paths = transcript_paths(rows);
    paths.iter().find_map(|p| {
        fs::read_to_string(p).ok()?.lines().find_map(|l| {
            if !wanted(l) {
                return None;
            }
            let entry: Value = serde_json::from_str(l).ok()?;
            let at = rfc3339_us(entry["timestamp"].as_str()?)?;
            (at > after).then_some(at)
        })
    })
}

/// The `received_at` of the first `event` row from `pane` after `after`.
fn row_written(world: &World, pane: &str, event: &str, after: i64) -> Option<i64> {
    world
        .rows(pane)
        .iter()
        .filter(|r| r["event"] == event)
        .filter_map(|r| rfc3339_us(r["received_at"].as_str()?))
        .find(|at| *at > after)
}

fn measure(agent: Agent, way: Way, world: &World, pane: &str, tries: usize) -> Figures {
    let mut figures = Figures::default();
    match agent {
        Agent::Claude => {
            world.wait_screen(pane, "No, keep manual mode");
            world.keys(pane, &["Down"]);
            // The selection moves before the Enter is read (as the e2e tests do it).
            std::thread::sleep(Duration::from_millis(300));
            world.keys(pane, &["Enter"]);
        }
        Agent::Kimi => {
            world.wait_screen(pane, "Trust this folder?");
            world.keys(pane, &["Enter"]);
            world.wait_screen(pane, "No session yet");
        }
        // The folder trusted beforehand: its input box at once.
        Agent::Droid => world.wait_screen(pane, "Auto (Off)"),
    }
    for n in 0..tries {
        if agent != Agent::Droid {
            escape_and_dialog(agent, world, pane, &mut figures, n);
        }
        if agent != Agent::Kimi {
            answer_to_a_3_s_call(agent, way, world, pane, &mut figures, n);
        }
        eprintln!("{} {}: {} of {tries}", agent.name(), way.name(), n + 1);
    }
    figures
}

/// Escape while the answer streams, then a permission dialog and its answer (Claude Code,
/// Kimi Code).
fn escape_and_dialog(agent: Agent, world: &World, pane: &str, figures: &mut Figures, n: usize) {
    let ready_for = |after: i64| world.wait_option(pane, &["ready"], after);
    {
        // Escape while the answer streams.
        let sent = world.prompt(pane, &format!("Tell me a long story, {n}. [[slowtext]]"));
        let active = world.wait_option(pane, &["active"], sent);
        // Claude Code draws the answer once whole; meanwhile its spinner counts the tokens
        // come (`↓ 2 tokens`). An Escape before the answer starts puts the prompt back in
        // the input box instead, a case of its own. Kimi Code draws the words as they come.
        let streaming = match agent {
            Agent::Claude => "↓ ",
            _ => "word1 ",
        };
        wait(
            "the answer streaming",
            || world.screen(pane),
            || world.screen(pane).contains(streaming).then_some(()),
        );
        if agent == Agent::Claude {
            // Its request is out (the transcript's `api-request` entry): an Escape now
            // interrupts the answer. (One pressed earlier, seen twice under load, put the
            // prompt back in the input box, and the pane's phase stayed `active`: a case of
            // its own, docs/benchmarks.md.)
            wait(
                "Claude Code's request",
                || world.screen(pane),
                || {
                    transcript_entry(&world.rows(pane), sent, |l| {
                        l.contains("\"type\":\"api-request\"")
                    })
                },
            );
        }
        // Claude Code's entry carries the time it was made, not the time it reached the
        // file: a watcher that polls the transcript every millisecond sees the latter.
        let landed = (agent == Agent::Claude).then(|| {
            let paths = transcript_paths(&world.rows(pane));
            std::thread::spawn(move || line_landed(&paths, "[Request interrupted by user"))
        });
        let key = world.keys(pane, &["Escape"]);
        let changed = ready_for(key);
        if let Some(Ok(Some(at))) = landed.map(std::thread::JoinHandle::join) {
            figures.escape_after_landed.0.push(changed - at);
        }
        let written = wait(
            "the CLI's record of the Escape",
            || world.screen(pane),
            || match agent {
                Agent::Claude => transcript_entry(&world.rows(pane), active, |l| {
                    l.contains("[Request interrupted by user")
                }),
                _ => row_written(world, pane, "Interrupt", active),
            },
        );
        figures.escape_after_write.0.push(changed - written);
        figures.escape_after_key.0.push(changed - key);

        // A permission dialog, then its answer.
        let (script, answer) = match agent {
            // A new call id for each prompt: one dialog per prompt, no `/clear` between.
            Agent::Claude => ("[[askeach]]", ""),
            _ => ("[[perm]]", "1"),
        };
        let sent = world.prompt(pane, &format!("Touch a file, {n}. {script}"));
        let blocked = world.wait_option(pane, &["blocked"], sent);
        let written = wait(
            "the PermissionRequest row",
            || world.screen(pane),
            || row_written(world, pane, "PermissionRequest", sent),
        );
        figures.dialog_after_write.0.push(blocked - written);
        match agent {
            Agent::Claude => {
                world.wait_dialog(agent, pane);
                // Answered once `watch` has read the dialog drawn (an answer before that
                // leaves the screen nothing to end: the call's end does).
                wait(
                    "watch reading the dialog drawn",
                    || world.screen(pane),
                    || world.dialog_read(pane, sent),
                );
            }
            _ => world.wait_screen(pane, "Run this command?"),
        }
        let key = match agent {
            Agent::Claude => world.answer_dialog(agent, pane),
            _ => world.keys(pane, &[answer]),
        };
        // Claude Code has no hook for the answer: the screen (the dialog gone) or its
        // tool's end (or the turn's, in the same read), whichever comes first.
        let changed = world.wait_option(pane, &["active", "ready"], key);
        figures.answer_after_key.0.push(changed - key);
        if world.option_set(pane, &["ready"], key).is_none() {
            ready_for(changed);
        }
    }
}

/// A 3 s call's dialog answered "Yes" (Claude Code, Factory Droid): for 3 s only the screen
/// can say it was answered.
fn answer_to_a_3_s_call(
    agent: Agent,
    way: Way,
    world: &World,
    pane: &str,
    figures: &mut Figures,
    n: usize,
) {
    let sent = world.prompt(pane, &format!("Wait a little, {n}. [[wait3each]]"));
    world.wait_option(pane, &["blocked"], sent);
    world.wait_dialog(agent, pane);
    wait(
        "watch reading the dialog drawn",
        || world.screen(pane),
        || world.dialog_read(pane, sent),
    );
    if way == Way::Session && agent == Agent::Droid {
        // The session reads the pane too: answered once it has seen the dialog as well
        // (an answer before leaves its window to the call's end).
        wait(
            "the session reading the dialog drawn",
            || world.screen(pane),
            || world.session_dialog_read(pane, sent),
        );
    }
    let key = world.answer_dialog(agent, pane);
    let changed = world.wait_option(pane, &["active", "ready"], key);
    figures.long_answer_after_key.0.push(changed - key);
    let ended = wait(
        "the 3 s call's PostToolUse",
        || world.screen(pane),
        || row_written(world, pane, "PostToolUse", key),
    );
    if changed < ended {
        figures.long_before_its_end += 1;
    }
    if way == Way::Session {
        let program = match agent {
            Agent::Droid => "droid",
            _ => "claude",
        };
        let shown = wait(
            "the session's own line out of blocked",
            || world.screen(pane),
            || world.session_unblocked(program, key),
        );
        figures.session_answer_after_key.0.push(shown - key);
    }
    world.wait_option(pane, &["ready"], changed);
}

fn main() {
    // `cargo bench` passes `--bench`; a filter names the agent (`claude`, `kimi`).
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tries: usize = std::env::var("HOOKTRACK_BENCH_TRIES")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(20);
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let claude = tmp.join("e2e-claude-2.1.332/node_modules/.bin/claude");
    let kimi = tmp.join("e2e-kimi-code/node_modules/.bin");
    let droid = tmp.join("e2e-droid/node_modules/.bin");
    let mut agents = Vec::new();
    for (agent, there, install) in [
        (Agent::Claude, claude.exists(), "many_panes::"),
        (Agent::Kimi, kimi.join("kimi").exists(), "kimi_code::"),
        (
            Agent::Droid,
            droid.join("droid").exists(),
            "factory_droid_exec_tool_turn",
        ),
    ] {
        let name = match agent {
            Agent::Claude => "claude",
            Agent::Kimi => "kimi",
            Agent::Droid => "droid",
        };
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        if there {
            agents.push(agent);
        } else {
            println!(
                "{}: not installed under {}, skipped (`cargo test --test e2e -- {install}` installs it)",
                agent.name(),
                tmp.display()
            );
        }
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("no tmux: nothing measured");
        return;
    }
    let mock = Mock::start(Path::new("python3"));
    println!(
        "keystroke → tmux option, {tries} of each per agent and way (microsecond clocks, shown in ms)"
    );
    for agent in agents {
        for way in [Way::Setup, Way::Session] {
            let tag = format!("{}-{}", std::process::id(), agent as u8 * 2 + way as u8);
            let bins = match agent {
                Agent::Claude => Bins {
                    claude: Some(claude.as_path()),
                    ..Bins::default()
                },
                Agent::Kimi => Bins {
                    kimi: Some(kimi.as_path()),
                    ..Bins::default()
                },
                Agent::Droid => Bins {
                    droid: Some(droid.as_path()),
                    ..Bins::default()
                },
            };
            let world = World::new(way, &tag, bins, &mock);
            let pane = match agent {
                Agent::Claude => world.start(
                    way,
                    "claude",
                    &format!(
                        "ANTHROPIC_BASE_URL=http://127.0.0.1:{} ANTHROPIC_API_KEY=dummy \
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1",
                        mock.port
                    ),
                ),
                Agent::Kimi => world.start(way, "kimi", ""),
                Agent::Droid => world.start(way, "droid", "FACTORY_AIRGAP_ENABLED=true"),
            };
            let started = Instant::now();
            let figures = measure(agent, way, &world, &pane, tries);
            println!(
                "{} {} ({:.0} s):",
                agent.name(),
                way.name(),
                started.elapsed().as_secs_f64()
            );
            if agent != Agent::Droid {
                figures
                    .escape_after_write
                    .report("Escape: option ready − the CLI's record of it");
                figures
                    .escape_after_landed
                    .report("Escape: option ready − its transcript line landing");
                figures
                    .escape_after_key
                    .report("Escape: option ready − key");
                figures
                    .dialog_after_write
                    .report("dialog: option blocked − PermissionRequest row");
                figures
                    .answer_after_key
                    .report("answer: option active − key");
            }
            if agent != Agent::Kimi {
                figures
                    .long_answer_after_key
                    .report("answer, 3 s call: option active − Enter");
                println!(
                    "  {:<58} {} of {}",
                    "answer, 3 s call: option active before its PostToolUse",
                    figures.long_before_its_end,
                    figures.long_answer_after_key.0.len()
                );
                if way == Way::Session {
                    figures
                        .session_answer_after_key
                        .report("answer, 3 s call: session's line active − Enter");
                }
            }
        }
    }
}
