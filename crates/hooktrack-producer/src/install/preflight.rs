//! Will the hooks run? `check` reads the file; this asks everything else an agent consults
//! before it runs a hook: is the file the one the agent reads, does a switch of its own
//! turn hooks off, has Codex trusted hooktrack's entries, will Gemini CLI get past its
//! auth and folder-trust gates. Each [`Finding`] names the file, the cause and the fix.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hooktrack_core::agent::Agent;
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
}

/// Everything that stops the hooks; empty when they will fire.
pub fn preflight(probe: &Probe<'_>) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Err(e) = super::check(probe.config, probe.agent) {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: error_chain(&e),
            fix: format!("run `hooktrack install {}`", agent_word(probe.agent)),
        });
    }
    if !probe.file_named {
        the_file_read(probe, &mut found);
    }
    match probe.agent {
        Agent::Codex => codex(probe, &mut found),
        Agent::GeminiCli => gemini(probe, &mut found),
        Agent::KimiCode | Agent::KimiCli | Agent::ClaudeCode => {}
    }
    found
}

/// The word `hooktrack install` takes for an agent.
pub fn agent_word(agent: Agent) -> &'static str {
    match agent {
        Agent::KimiCode | Agent::KimiCli => "kimi",
        Agent::ClaudeCode => "claude",
        Agent::Codex => "codex",
        Agent::GeminiCli => "gemini",
    }
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

fn codex(probe: &Probe<'_>, found: &mut Vec<Finding>) {
    let home = probe
        .config
        .parent()
        .map_or_else(PathBuf::new, Path::to_owned);
    let config_toml = home.join("config.toml");
    if let Some(table) = fs::read_to_string(&config_toml)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
    {
        let features = table.get("features").and_then(toml::Value::as_table);
        for key in ["hooks", "codex_hooks"] {
            if features
                .and_then(|f| f.get(key))
                .and_then(toml::Value::as_bool)
                == Some(false)
            {
                found.push(Finding {
                    file: config_toml.clone(),
                    cause: format!("`[features] {key} = false` turns every hook off"),
                    fix: format!("remove `{key} = false` from [features]"),
                });
            }
        }
    }
    if has_arg(probe, "--dangerously-bypass-hook-trust") {
        return;
    }
    match codex_trust(probe) {
        Ok(untrusted) if untrusted.is_empty() => {}
        Ok(untrusted) => found.push(Finding {
            file: probe.config.to_owned(),
            cause: format!(
                "Codex has not trusted {} of hooktrack's entries ({}), so it skips them without a word",
                untrusted.len(),
                untrusted.join(", ")
            ),
            fix: format!(
                "start `codex` in {}, type /hooks and trust the hooktrack entries (once: their text never changes), or pass --dangerously-bypass-hook-trust",
                probe.cwd.display()
            ),
        }),
        Err(why) => found.push(Finding {
            file: config_toml,
            cause: format!("cannot ask Codex whether it trusts hooktrack's entries: {why}"),
            fix: "put `codex` on PATH (or run it through `hooktrack session`), then check again"
                .to_owned(),
        }),
    }
}

/// How long Codex's app server may take to list its hooks.
const CODEX_LIST_LIMIT: Duration = Duration::from_secs(20);

/// The hooktrack entries Codex does not trust, by key, as its own app server reports them
/// (`hooks/list`): the trust state Codex recorded, compared by Codex, never computed here.
fn codex_trust(probe: &Probe<'_>) -> Result<Vec<String>, String> {
    let program = probe
        .program
        .map(Path::to_owned)
        .or_else(|| on_path("codex", probe.env))
        .ok_or("no `codex` on PATH")?;
    let mut command = Command::new(&program);
    command
        .arg("app-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_clear();
    for var in ["HOME", "CODEX_HOME", "PATH", "USER", "TMPDIR"] {
        if let Some(v) = (probe.env)(var) {
            command.env(var, v);
        }
    }
    if let Some(home) = probe.config.parent() {
        command.env("CODEX_HOME", home);
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
    let deadline = std::time::Instant::now() + CODEX_LIST_LIMIT;
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
                        answer = untrusted_of(&v);
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

/// From a `hooks/list` answer: the keys of hooktrack's entries not trusted or not enabled.
fn untrusted_of(answer: &Value) -> Result<Vec<String>, String> {
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
        return Err("Codex lists no hooktrack entry".to_owned());
    }
    Ok(untrusted)
}

fn on_path(name: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let path = env("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn gemini(probe: &Probe<'_>, found: &mut Vec<Finding>) {
    let settings: Value = fs::read_to_string(probe.config)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    if settings.pointer("/security/auth/selectedType").is_none() {
        found.push(Finding {
            file: probe.config.to_owned(),
            cause: "no `security.auth.selectedType`: Gemini CLI stops with \"Invalid auth method selected\" before any hook runs".to_owned(),
            fix: "set `security.auth.selectedType` (e.g. \"gemini-api-key\"), or sign in once interactively".to_owned(),
        });
    }
    let trust_off = settings.pointer("/security/folderTrust/enabled") == Some(&Value::Bool(false));
    let skip = has_arg(probe, "--skip-trust")
        || (probe.env)("GEMINI_CLI_TRUST_WORKSPACE").is_some_and(|v| v == "true");
    if trust_off || skip {
        return;
    }
    let trusted_file = probe
        .config
        .parent()
        .map_or_else(PathBuf::new, |d| d.join("trustedFolders.json"));
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
                "{} is not a trusted folder: headless Gemini CLI exits (status 55) before any hook runs",
                probe.cwd.display()
            ),
            fix: "pass --skip-trust, set GEMINI_CLI_TRUST_WORKSPACE=true, or trust the folder in Gemini CLI's interactive mode".to_owned(),
        });
    }
}
