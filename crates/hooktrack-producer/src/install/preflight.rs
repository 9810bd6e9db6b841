//! Will the hooks run? `check` reads the file; this asks everything else an agent consults
//! before it runs a hook: is the file the one the agent reads, does a switch of its own
//! turn hooks off, has it trusted hooktrack's entries (Codex), will it get past its auth
//! and folder-trust gates (Gemini CLI). What to ask is the agent's descriptor's
//! `PreflightFacts`; this does the asking (reads the files, runs the agent's app server).
//! Each [`Finding`] names the file, the cause and the fix.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hooktrack_core::agent::Agent;
use hooktrack_core::agents::{
    ConfigDoctor, FeatureSwitches, FolderTrust, HookTrust, PluginLoading, RequiredSetting, Runtime,
    switch_on,
};
use hooktrack_core::diagnostics::error_chain;
use serde_json::{Value, json};

use super::command::is_hooktrack_command;

/// One reason the hooks will not fire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub file: PathBuf,
    pub cause: String,
    pub fix: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}; fix: {}",
            self.file.display(),
            self.cause,
            self.fix
        )
    }
}

/// What the probe needs to know about the run it judges.
pub struct Probe<'a> {
    pub agent: Agent,
    /// The hooks file hooktrack installed into (or was asked to check).
    pub config: &'a Path,
    /// The environment the agent will run with.
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    /// The directory the agent will run in.
    pub cwd: &'a Path,
    /// The agent's own arguments (after its program), when known.
    pub args: &'a [OsString],
    /// The agent's binary, to ask Codex for its trust state.
    pub program: Option<&'a Path>,
    /// The caller named the file outright: take it that the agent reads it.
    pub file_named: bool,
    /// Also ask the agent's own config validator, when it has one (`check`: it takes
    /// seconds, too long for every `session` start).
    pub ask_doctor: bool,
}

/// Everything that stops the hooks; empty when they will fire.
pub fn preflight(probe: &Probe<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    let checked = super::check(probe.config, probe.agent);
    if let Err(e) = &checked {
        // The error's own "run ..." is the finding's fix: said once.
        let cause = match e {
            super::InstallError::NotInstalled { reason, .. } => {
                format!("hooktrack is not installed: {reason}")
            }
            e => error_chain(e),
        };
        found.push(Finding {
            file: probe.config.to_owned(),
            cause,
            fix: format!("run {}", super::own_side::install_command(probe.agent)),
        });
    }
    if let Some(runtime) = probe.agent.descriptor().preflight.runtime {
        interpreter(probe, &runtime, &mut found);
    }
    // No file is no hook, not a schema question (the validator calls it an error).
    if let Some(doctor) = probe.agent.descriptor().preflight.config_doctor
        && probe.ask_doctor
        && probe.config.is_file()
    {
        config_doctor(probe, &doctor, checked.is_ok(), &mut found);
    }
    if !probe.file_named {
        the_file_read(probe, &mut found);
    }
    if let Some(plugin) = &probe.agent.descriptor().plugin {
        let before = found.len();
        plugin_switches(probe, &plugin.loading, &mut found);
        // Only a plugin hooktrack accepts, that no switch stops, is worth asking about.
        if probe.ask_doctor && checked.is_ok() && found.len() == before {
            plugin_listed(probe, &plugin.loading, &mut found);
        }
    }
    let facts = probe.agent.descriptor().preflight;
    if let Some(switches) = facts.feature_switches {
        feature_switches(probe, &switches, &mut found);
    }
    if let Some(trust) = facts.hook_trust {
        hook_trust(probe, &trust, &mut found);
    }
    if facts.required_setting.is_some() || facts.folder_trust.is_some() {
        let settings: Value = fs::read_to_string(probe.config)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        if let Some(setting) = facts.required_setting {
            required_setting(probe, &settings, &setting, &mut found);
        }
        if let Some(trust) = facts.folder_trust {
            folder_trust(probe, &settings, &trust, &mut found);
        }
    }
    found
}

/// The word `hooktrack install` takes for an agent: its family's (which finds the member
/// installed), else its own.
pub fn agent_word(agent: Agent) -> &'static str {
    agent.family().map_or(agent.typed_name(), |f| f.name)
}

/// The agent reads its user file (from its environment) and the project's; hooktrack's
/// must be one of them.
fn the_file_read(probe: &Probe<'_>, found: &mut Vec<Finding>) {
    let location = probe.agent.config();
    let user = location.user_file(probe.env);
    let project = location.project_file(probe.cwd);
    let same = |a: &Path, b: &Path| a == b || fs::canonicalize(a).ok() == fs::canonicalize(b).ok();
    if user.as_deref().is_some_and(|u| same(u, probe.config)) || same(&project, probe.config) {
        return;
    }
    let var = location.home_var();
    found.push(Finding {
        file: probe.config.to_owned(),
        cause: format!(
            "{} reads {} (and the project's {}), not this file",
            probe.agent.label(),
            user.as_deref()
                .map_or_else(|| "no user file".to_owned(), |u| u.display().to_string()),
            project.display()
        ),
        fix: match var {
            Some(var) => format!(
                "install with `--home DIR` where DIR is the value of ${var} the agent runs with, or start the agent with ${var} set to it"
            ),
            None => "install into the file the agent reads".to_owned(),
        },
    });
}

fn has_arg(probe: &Probe<'_>, flag: &str) -> bool {
    probe.args.iter().any(|a| a == flag)
}

/// An environment variable or an argument that makes the agent skip every external
/// plugin, hooktrack's among them.
fn plugin_switches(probe: &Probe<'_>, loading: &PluginLoading, found: &mut Vec<Finding>) {
    for var in loading.env {
        if let Some(value) = (probe.env)(var)
            && switch_on(&value.to_string_lossy())
        {
            found.push(Finding {
                file: probe.config.to_owned(),
                cause: format!(
                    "{var}={} in the environment makes {} skip {}, hooktrack's among them",
                    value.to_string_lossy(),
                    loading.who,
                    loading.skipped
                ),
                fix: format!("unset {var}"),
            });
        }
    }
    for flag in loading.flags {
        if has_arg(probe, flag) {
            found.push(Finding {
                file: probe.config.to_owned(),
                cause: format!(
                    "`{flag}` makes {} skip {}, hooktrack's among them",
                    loading.who, loading.skipped
                ),
                fix: format!("start it without {flag}"),
            });
        }
    }
}

/// How long the agent may take to list its plugins (OpenCode 1.18.33: about 6 s).
const PLUGIN_LIST_LIMIT: Duration = Duration::from_secs(30);

/// Asks the agent which plugins it will load: hooktrack's file must be among them. No
/// answer (not installed, no answer in time) says nothing: the version line says whether
/// the agent ran at all.
fn plugin_listed(probe: &Probe<'_>, loading: &PluginLoading, found: &mut Vec<Finding>) {
    if loading.list.is_empty() {
        return;
    }
    let Some(program) = probe
        .program
        .map(Path::to_owned)
        .or_else(|| on_path(probe.agent.descriptor().versions.program, probe.env))
    else {
        return;
    };
    let mut command = Command::new(&program);
    command.args(loading.list).current_dir(probe.cwd);
    // The environment the agent will run with decides which config folders it reads.
    for var in ["HOME", "PATH", "XDG_CONFIG_HOME"]
        .into_iter()
        .chain(probe.agent.config().home_var())
    {
        match (probe.env)(var) {
            Some(v) => command.env(var, v),
            None => command.env_remove(var),
        };
    }
    let Some((true, output)) = run_bounded(&mut command, PLUGIN_LIST_LIMIT) else {
        return;
    };
    let asked = format!(
        "`{} {}`",
        probe.agent.descriptor().versions.program,
        loading.list.join(" ")
    );
    if output.contains(loading.listed_off) {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!("{asked} says {}", loading.listed_off),
            fix: format!(
                "find what turns {}'s external plugins off (its environment, its arguments)",
                loading.who
            ),
        });
        return;
    }
    let listed = listed_plugins(&output);
    let same = |p: &Path| {
        p == probe.config || fs::canonicalize(p).ok() == fs::canonicalize(probe.config).ok()
    };
    if !listed.iter().any(|p| same(p)) {
        let named: Vec<String> = listed.iter().map(|p| p.display().to_string()).collect();
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!(
                "{asked} does not list this file among the plugins {} loads (it lists {})",
                loading.who,
                if named.is_empty() {
                    "none".to_owned()
                } else {
                    named.join(", ")
                }
            ),
            fix: "install into the plugin folder the agent reads (its config folder's `plugin/`)"
                .to_owned(),
        });
    }
}

/// The local files in a plugin listing: lines `- file:///path`, percent-decoded.
fn listed_plugins(output: &str) -> Vec<PathBuf> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- file://"))
        .map(|p| PathBuf::from(percent_decoded(p)))
        .collect()
}

/// `%XX` escapes decoded; anything malformed is kept as written.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The TOML file beside the hooks file whose `[<table>] <key> = false` turns every hook
/// off (Codex's `config.toml`).
fn feature_switches(probe: &Probe<'_>, switches: &FeatureSwitches, found: &mut Vec<Finding>) {
    let file = beside_config(probe, switches.file);
    let Some(table) = fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
    else {
        return;
    };
    let features = table.get(switches.table).and_then(toml::Value::as_table);
    for key in switches.keys {
        if features
            .and_then(|f| f.get(*key))
            .and_then(toml::Value::as_bool)
            == Some(false)
        {
            found.push(Finding {
                file: file.clone(),
                cause: format!("`[{}] {key} = false` turns every hook off", switches.table),
                fix: format!("remove `{key} = false` from [{}]", switches.table),
            });
        }
    }
}

/// A file in the directory of the hooks file.
fn beside_config(probe: &Probe<'_>, name: &str) -> PathBuf {
    probe
        .config
        .parent()
        .map_or_else(PathBuf::new, Path::to_owned)
        .join(name)
}

/// Entries the agent has not trusted are skipped without a word: ask its app server.
fn hook_trust(probe: &Probe<'_>, trust: &HookTrust, found: &mut Vec<Finding>) {
    if has_arg(probe, trust.bypass_flag) {
        return;
    }
    match app_server_trust(probe, trust) {
        Ok(untrusted) if untrusted.is_empty() => {}
        Ok(untrusted) => found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!(
                "{} has not trusted {} of hooktrack's entries ({}), so it skips them without a word",
                trust.who,
                untrusted.len(),
                untrusted.join(", ")
            ),
            fix: format!(
                "start `{}` in {}, type {} and trust the hooktrack entries (once: their text never changes), or pass {}",
                trust.program,
                probe.cwd.display(),
                trust.trust_command,
                trust.bypass_flag
            ),
        }),
        Err(why) => found.push(Finding {
            // Where the agent keeps its settings (Codex's `config.toml`), else its hooks file.
            file: probe
                .agent
                .descriptor()
                .preflight
                .feature_switches
                .map_or_else(|| probe.config.to_owned(), |s| beside_config(probe, s.file)),
            cause: format!(
                "cannot ask {} whether it trusts hooktrack's entries: {why}",
                trust.who
            ),
            fix: format!(
                "put `{}` on PATH (or run it through `hooktrack session`), then check again",
                trust.program
            ),
        }),
    }
}

/// How long `<interpreter> --version` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(10);

/// A script agent under an interpreter older than it needs stops before any hook: say so
/// up front. Only a program found, with a `#!` line naming the interpreter, whose
/// `--version` answers `vMAJOR.MINOR...`, is judged; anything else says nothing.
fn interpreter(probe: &Probe<'_>, runtime: &Runtime, found: &mut Vec<Finding>) {
    let Some(program) = probe
        .program
        .and_then(|p| {
            if p.components().count() > 1 {
                Some(p.to_owned())
            } else {
                on_path(&p.to_string_lossy(), probe.env)
            }
        })
        .or_else(|| on_path(probe.agent.family().map_or("", |f| f.program), probe.env))
    else {
        return;
    };
    let mut head = [0u8; 256];
    let read = fs::File::open(&program)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let Some(line) = head[..read]
        .split(|b| *b == b'\n')
        .next()
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|l| l.strip_prefix("#!"))
    else {
        return;
    };
    // `#!/usr/bin/env node` finds it on the agent's PATH; `#!/path/to/node` names it.
    let mut words = line.split_whitespace();
    let interpreter = match words.next() {
        Some(env) if env.ends_with("/env") => words
            .find(|w| !w.starts_with('-'))
            .filter(|w| *w == runtime.interpreter)
            .and_then(|w| on_path(w, probe.env)),
        Some(path) if Path::new(path).file_name() == Some(runtime.interpreter.as_ref()) => {
            Some(PathBuf::from(path))
        }
        _ => None,
    };
    let Some(interpreter) = interpreter else {
        return;
    };
    let mut command = Command::new(&interpreter);
    command.arg("--version");
    let Some((true, output)) = run_bounded(&mut command, VERSION_LIMIT) else {
        return;
    };
    let version = output.trim();
    let mut parts = version.trim_start_matches('v').split('.');
    let (Some(Ok(major)), Some(Ok(minor))) = (
        parts.next().map(str::parse::<u32>),
        parts.next().map(str::parse::<u32>),
    ) else {
        return;
    };
    if (major, minor) < runtime.min {
        found.push(Finding {
            file: program,
            cause: format!(
                "{} needs {} >= {}.{}, and its `#!` line runs {} {version}, under which it stops before any hook",
                probe.agent.label(),
                runtime.label,
                runtime.min.0,
                runtime.min.1,
                interpreter.display()
            ),
            fix: runtime.fix.to_owned(),
        });
    }
}

/// Only the agent's own config validator, for a file hooktrack's check already judged
/// (`ours_ok`): where the two disagree, in either direction. Asked whenever the agent has
/// one and it is installed, also when hooktrack's check stopped at an error of its own.
pub fn doctor_disagreement(probe: &Probe<'_>, ours_ok: bool) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(doctor) = probe.agent.descriptor().preflight.config_doctor
        && probe.config.is_file()
    {
        config_doctor(probe, &doctor, ours_ok, &mut found);
    }
    found
}

/// How long the agent's config validator may take.
const DOCTOR_LIMIT: Duration = Duration::from_secs(30);

/// Asks the agent's own validator about the file, and reports where it and hooktrack's
/// check disagree. No validator (not installed, not this agent, a Node too old for it, no
/// answer in time) says nothing.
fn config_doctor(
    probe: &Probe<'_>,
    doctor: &ConfigDoctor,
    ours_ok: bool,
    found: &mut Vec<Finding>,
) {
    let Some(program) = probe
        .program
        .map(Path::to_owned)
        .or_else(|| on_path(doctor.program, probe.env))
    else {
        return;
    };
    let mut command = Command::new(&program);
    command.args(doctor.args).arg(probe.config).env_clear();
    for var in ["HOME", "PATH", "USER", "TMPDIR"]
        .into_iter()
        .chain(probe.agent.config().home_var())
    {
        if let Some(v) = (probe.env)(var) {
            command.env(var, v);
        }
    }
    let Some((accepted, output)) = run_bounded(&mut command, DOCTOR_LIMIT) else {
        return;
    };
    let rejected = !accepted && output.contains(doctor.rejects);
    let asked = format!(
        "{}'s `{} {}`",
        doctor.who,
        doctor.program,
        doctor.args.join(" ")
    );
    if ours_ok && rejected {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!(
                "{asked} rejects this file, which hooktrack's check accepts: {}",
                doctor_issues(&output, doctor.rejects)
            ),
            fix: format!(
                "fix what it names ({} runs no hook from a file it rejects)",
                doctor.who
            ),
        });
    } else if !ours_ok && accepted {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!("{asked} accepts this file, which hooktrack's check rejects"),
            fix: "trust the agent's own validator for its schema, and report the difference to hooktrack".to_owned(),
        });
    }
}

/// The issue lines the validator printed under the file it rejects, on one line.
fn doctor_issues(output: &str, rejects: &str) -> String {
    let issues: Vec<&str> = output
        .lines()
        .skip_while(|l| !l.contains(rejects))
        .skip(1)
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(str::trim)
        .filter(|l| !l.starts_with("Invalid configuration") && *l != "Validation issues:")
        .take(8)
        .collect();
    if issues.is_empty() {
        "(no issue named)".to_owned()
    } else {
        issues.join("; ")
    }
}

/// Runs `command` with no input, its output collected, killed past `limit`: whether it
/// succeeded and what it printed (stdout then stderr), or `None` when it could not run or
/// did not finish.
fn run_bounded(command: &mut Command, limit: Duration) -> Option<(bool, String)> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
    Some((status?.success(), text))
}

/// How long the agent's app server may take to list its hooks.
const APP_SERVER_LIST_LIMIT: Duration = Duration::from_secs(20);

/// The hooktrack entries the agent does not trust, by key, as its own app server reports
/// them (`<program> app-server`, `hooks/list`, Codex's protocol): the trust state the agent
/// recorded, compared by the agent, never computed here.
fn app_server_trust(probe: &Probe<'_>, trust: &HookTrust) -> Result<Vec<String>, String> {
    let program = probe
        .program
        .map(Path::to_owned)
        .or_else(|| on_path(trust.program, probe.env))
        .ok_or_else(|| format!("no `{}` on PATH", trust.program))?;
    let home_var = probe.agent.config().home_var();
    let mut command = Command::new(&program);
    command
        .arg("app-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_clear();
    for var in ["HOME", "PATH", "USER", "TMPDIR"]
        .into_iter()
        .chain(home_var)
    {
        if let Some(v) = (probe.env)(var) {
            command.env(var, v);
        }
    }
    if let (Some(var), Some(home)) = (home_var, probe.config.parent()) {
        command.env(var, home);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {} app-server: {e}", program.display()))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("no pipes to the app server".to_owned());
    };
    let (tx, rx) = mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let cwd = probe.cwd.to_string_lossy().into_owned();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "hooktrack", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}}),
    ];
    let deadline = std::time::Instant::now() + APP_SERVER_LIST_LIMIT;
    let mut answer = Err("the app server did not answer hooks/list".to_owned());
    'talk: for (i, request) in requests.iter().enumerate() {
        if writeln!(stdin, "{request}").is_err() {
            answer = Err("the app server closed its input".to_owned());
            break;
        }
        let wanted = match i {
            0 => 1,
            2 => 2,
            _ => continue,
        };
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(v) if v.get("id").and_then(Value::as_u64) == Some(wanted) => {
                    if wanted == 2 {
                        answer = untrusted_of(&v, trust.who);
                    }
                    break;
                }
                Ok(_) => {}
                Err(_) => break 'talk,
            }
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    answer
}

/// From a `hooks/list` answer of `who`: the keys of hooktrack's entries not trusted or not
/// enabled.
fn untrusted_of(answer: &Value, who: &str) -> Result<Vec<String>, String> {
    let data = answer
        .pointer("/result/data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("unexpected hooks/list answer: {answer}"))?;
    let mut ours = 0;
    let mut untrusted = Vec::new();
    for hook in data
        .iter()
        .filter_map(|d| d.get("hooks").and_then(Value::as_array))
        .flatten()
    {
        let command = hook.get("command").and_then(Value::as_str).unwrap_or("");
        if !is_hooktrack_command(command) {
            continue;
        }
        ours += 1;
        let status = hook.get("trustStatus").and_then(Value::as_str);
        let enabled = hook.get("enabled").and_then(Value::as_bool) != Some(false);
        if !matches!(status, Some("trusted" | "managed")) || !enabled {
            let key = hook.get("eventName").and_then(Value::as_str).unwrap_or("?");
            untrusted.push(format!("{key}: {}", status.unwrap_or("unknown")));
        }
    }
    if ours == 0 {
        return Err(format!("{who} lists no hooktrack entry"));
    }
    Ok(untrusted)
}

fn on_path(name: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let path = env("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A setting the agent stops without, before any hook runs (Gemini CLI's auth type).
fn required_setting(
    probe: &Probe<'_>,
    settings: &Value,
    setting: &RequiredSetting,
    found: &mut Vec<Finding>,
) {
    if settings.pointer(setting.pointer).is_none() {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: setting.cause.to_owned(),
            fix: setting.fix.to_owned(),
        });
    }
}

/// Run headless outside a trusted folder, the agent exits before any hook runs (Gemini
/// CLI's `trustedFolders.json`: a folder, or with `TRUST_PARENT` its parent's subtree).
fn folder_trust(
    probe: &Probe<'_>,
    settings: &Value,
    trust: &FolderTrust,
    found: &mut Vec<Finding>,
) {
    let trust_off = settings.pointer(trust.enabled_pointer) == Some(&Value::Bool(false));
    let (skip_var, skip_value) = trust.skip_env;
    let skip =
        has_arg(probe, trust.skip_flag) || (probe.env)(skip_var).is_some_and(|v| v == skip_value);
    if trust_off || skip {
        return;
    }
    let trusted_file = probe
        .config
        .parent()
        .map_or_else(PathBuf::new, |d| d.join(trust.file));
    let trusted: Value = fs::read_to_string(&trusted_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let is_trusted = trusted.as_object().is_some_and(|folders| {
        folders.iter().any(|(dir, level)| {
            let dir = Path::new(dir);
            match level.as_str() {
                Some("TRUST_FOLDER") => probe.cwd == dir,
                Some("TRUST_PARENT") => dir.parent().is_some_and(|p| probe.cwd.starts_with(p)),
                _ => probe.cwd.starts_with(dir),
            }
        })
    });
    if !is_trusted {
        found.push(Finding {
            file: trusted_file,
            cause: format!(
                "{} is not a trusted folder: {}",
                probe.cwd.display(),
                trust.consequence
            ),
            fix: trust.fix.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_with<'a>(
        agent: Agent,
        env: &'a dyn Fn(&str) -> Option<OsString>,
        args: &'a [OsString],
        config: &'a Path,
    ) -> Probe<'a> {
        Probe {
            agent,
            config,
            env,
            cwd: Path::new("/"),
            args,
            program: None,
            file_named: true,
            ask_doctor: false,
        }
    }

    /// A file without hooktrack's entries is one finding: the cause says so once, the fix
    /// names the command that installs (not both the same "run ...").
    #[test]
    fn nothing_installed_is_one_finding_whose_fix_installs() {
        let config = Path::new("/nonexistent/hooktrack-preflight/settings.json");
        let env = |_: &str| None;
        let quiet = Agent::ALL.into_iter().filter(|a| {
            let facts = a.descriptor().preflight;
            a.config().format == hooktrack_core::agent::ConfigFormat::JsonHooks
                && facts.hook_trust.is_none()
                && facts.runtime.is_none()
        });
        let mut asked = 0;
        for agent in quiet {
            asked += 1;
            let found = preflight(&probe_with(agent, &env, &[], config));
            let first = found.first().map(ToString::to_string).unwrap_or_default();
            assert_eq!(
                first,
                format!(
                    "{}: hooktrack is not installed: the file does not exist; fix: run {}",
                    config.display(),
                    super::super::own_side::install_command(agent)
                ),
                "{agent}"
            );
        }
        assert!(asked > 0);
    }

    /// Every agent that loads hooktrack as a plugin: each of its switches, in the
    /// environment (`1`, `TRUE`) or the arguments, is one finding naming it; a switch's
    /// variable set to anything else, or other arguments, none.
    #[test]
    fn each_switch_that_stops_plugins_is_a_finding() {
        let plugins: Vec<_> = Agent::ALL
            .into_iter()
            .filter_map(|a| a.descriptor().plugin.map(|p| (a, p.loading)))
            .collect();
        assert!(!plugins.is_empty());
        let config = Path::new("/h/plugin/hooktrack.js");
        for (agent, loading) in plugins {
            assert!(
                !loading.env.is_empty() || !loading.flags.is_empty(),
                "{agent}"
            );
            for var in loading.env {
                for (value, findings) in [("1", 1), ("TRUE", 1), ("0", 0), ("yes", 0)] {
                    let env = |name: &str| (name == *var).then(|| OsString::from(value));
                    let mut found = Vec::new();
                    plugin_switches(&probe_with(agent, &env, &[], config), &loading, &mut found);
                    assert_eq!(found.len(), findings, "{agent} {var}={value}: {found:?}");
                    if findings == 1 {
                        assert_eq!(
                            found[0].cause,
                            format!(
                                "{var}={value} in the environment makes {} skip {}, hooktrack's among them",
                                loading.who, loading.skipped
                            )
                        );
                        assert_eq!(found[0].fix, format!("unset {var}"));
                    }
                }
            }
            let none = |_: &str| None;
            for flag in loading.flags {
                let args = [OsString::from("-p"), OsString::from(flag)];
                let mut found = Vec::new();
                plugin_switches(
                    &probe_with(agent, &none, &args, config),
                    &loading,
                    &mut found,
                );
                assert_eq!(found.len(), 1, "{agent} {flag}: {found:?}");
                assert_eq!(
                    found[0].cause,
                    format!(
                        "`{flag}` makes {} skip {}, hooktrack's among them",
                        loading.who, loading.skipped
                    )
                );
            }
            // `--no-skills` and the like leave plugins alone.
            let args = [OsString::from("--no-skills"), OsString::from("-ns")];
            let mut found = Vec::new();
            plugin_switches(
                &probe_with(agent, &none, &args, config),
                &loading,
                &mut found,
            );
            assert!(found.is_empty(), "{agent}: {found:?}");
        }
    }

    #[test]
    fn the_plugin_listing_names_local_files_decoded() {
        let output = "opencode version: 1.18.33\nplugins:\n- file:///tmp/a%20b/plugin/hooktrack.js\n- npm:other@1\n";
        assert_eq!(
            listed_plugins(output),
            vec![PathBuf::from("/tmp/a b/plugin/hooktrack.js")]
        );
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%41"), "%zzA");
    }
}
