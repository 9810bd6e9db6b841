//! `hooktrack install|uninstall|check kimi|claude|codex|gemini`.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use thiserror::Error;

use hooktrack::Agent;
use hooktrack::ConfigFormat;
use hooktrack_producer::install::{
    self, CheckReport, Destination, InstallError, InstallReport, Observer, Replaced, Route,
    Uninstalled,
};

use hooktrack_producer::install::preflight::{self, Probe};

use super::fail;
use hooktrack_core::diagnostics::error_chain;

/// Why a command could not find its file or binary, or what the installer refused.
#[derive(Debug, Error)]
pub enum TargetError {
    #[error(
        "cannot find {}'s home: set {}$HOME, or pass --config",
        agent.label(),
        agent.config().home_env.map_or_else(String::new, |e| format!("${e} or "))
    )]
    NoHome { agent: Agent },
    #[error("cannot locate the hooktrack binary")]
    ThisBinary {
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Install(#[from] InstallError),
    #[error("`{command}` is {}; drop --variant or use `kimi`", implied.label())]
    VariantConflict {
        command: &'static str,
        implied: Agent,
    },
}

/// Which Kimi, and which `config.toml`.
#[derive(Args, Clone)]
pub struct KimiTarget {
    /// Kimi Code 2.x (20 events, $KIMI_CODE_HOME/config.toml) or Kimi CLI 1.x (13 events,
    /// ~/.kimi/config.toml); auto asks `kimi --version`, then looks for their homes.
    #[arg(long, value_enum, default_value_t = VariantArg::Auto)]
    pub variant: VariantArg,
    /// The config.toml to edit (default: from $KIMI_CODE_HOME / $KIMI_SHARE_DIR / $HOME).
    #[arg(long, conflicts_with = "home")]
    pub config: Option<PathBuf>,
    /// The Kimi home directory whose config.toml to edit.
    #[arg(long)]
    pub home: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VariantArg {
    Auto,
    /// Kimi Code 2.x.
    Code,
    /// Kimi CLI 1.x (the Python CLI).
    Cli,
}

impl KimiTarget {
    /// The Kimi (detected if asked) and the config file.
    pub fn resolve(&self) -> Result<(Agent, PathBuf), TargetError> {
        let env = |name: &str| std::env::var_os(name);
        let explicit = self
            .config
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(KIMI_FILE)));
        let agent = match self.variant {
            VariantArg::Code => Agent::KimiCode,
            VariantArg::Cli => Agent::KimiCli,
            VariantArg::Auto => install::detect_kimi(env, explicit.as_deref())?,
        };
        let config = match explicit {
            Some(c) => c,
            None => agent
                .config()
                .user_file(env)
                .ok_or(TargetError::NoHome { agent })?,
        };
        Ok((agent, absolute(&config)))
    }

    /// The target as `kimi-code` or `kimi-cli` names it: the variant the name implies,
    /// refused when `--variant` says the other one.
    fn implied(&self, agent: Agent) -> Result<Self, TargetError> {
        let (variant, command) = match agent {
            Agent::KimiCode => (VariantArg::Code, "kimi-code"),
            _ => (VariantArg::Cli, "kimi-cli"),
        };
        if self.variant != VariantArg::Auto && self.variant != variant {
            return Err(TargetError::VariantConflict {
                command,
                implied: agent,
            });
        }
        Ok(Self {
            variant,
            ..self.clone()
        })
    }

    /// The config file alone (uninstall needs no variant when the file is named).
    pub fn config_only(&self) -> Result<PathBuf, TargetError> {
        match (&self.config, &self.home) {
            (Some(c), _) => Ok(absolute(c)),
            (None, Some(h)) => Ok(absolute(&h.join(KIMI_FILE))),
            (None, None) => self.resolve().map(|(_, c)| c),
        }
    }
}

/// Both Kimis name their file `config.toml`.
const KIMI_FILE: &str = Agent::KimiCode.config().file;

/// Which settings file of Claude Code, Codex CLI or Gemini CLI.
#[derive(Args, Clone)]
pub struct JsonTarget {
    /// The file to edit (default: ~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json,
    /// $CODEX_HOME/hooks.json or ~/.codex/hooks.json, ~/.gemini/settings.json).
    #[arg(long, conflicts_with_all = ["home", "project"])]
    pub config: Option<PathBuf>,
    /// The CLI's home: the value of $CLAUDE_CONFIG_DIR (~/.claude), $CODEX_HOME
    /// (~/.codex) or $GEMINI_CLI_HOME (the directory holding .gemini/, ~ by default).
    #[arg(long, conflicts_with = "project")]
    pub home: Option<PathBuf>,
    /// A project directory: edit its .claude/settings.json, .codex/hooks.json or
    /// .gemini/settings.json.
    #[arg(long)]
    pub project: Option<PathBuf>,
}

impl JsonTarget {
    /// The file, absolute.
    pub fn resolve(&self, agent: Agent) -> Result<PathBuf, TargetError> {
        let location = agent.config();
        let config = match (&self.config, &self.home, &self.project) {
            (Some(c), _, _) => c.clone(),
            (None, Some(h), _) => location.file_in_home(h),
            (None, None, Some(p)) => location.project_file(p),
            (None, None, None) => location
                .user_file(|name| std::env::var_os(name))
                .ok_or(TargetError::NoHome { agent })?,
        };
        Ok(absolute(&config))
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Wire an agent CLI's hooks to `hooktrack emit`.
#[derive(Args)]
pub struct InstallArgs {
    #[command(subcommand)]
    target: InstallTarget,
}

#[derive(Subcommand)]
enum InstallTarget {
    /// Merge the observer block into Kimi's config.toml, then read it back strictly.
    ///
    /// One [[hooks]] entry per event (timeout 5, no matcher) running an absolute,
    /// shell-quoted `hooktrack emit` with the URL, store and generation; the token is not
    /// in the file. Bytes outside the block are kept as they are; a re-install replaces
    /// the block. If the read-back finds any invalid entry the previous text is restored
    /// and DIR/channel.json records install.ok = false with the reason.
    Kimi(KimiInstall),
    /// As `kimi --variant code`.
    KimiCode(KimiInstall),
    /// As `kimi --variant cli`.
    KimiCli(KimiInstall),
    /// Add hooktrack's entries to Claude Code's settings.json, then read it back.
    ///
    /// One matcher group per event (28 events, all but WorktreeCreate/WorktreeRemove;
    /// matcher "", timeout 5 s) running an absolute, shell-quoted `hooktrack emit
    /// --observer hooktrack ...`; the token is not in the file. Every other key and entry
    /// is kept in its place; a re-install replaces hooktrack's entries. If the read-back
    /// finds a violation the previous bytes are restored and DIR/channel.json records
    /// install.ok = false with the reason.
    #[command(visible_alias = "claude-code")]
    Claude(JsonInstall),
    /// Add hooktrack's entries to Codex's hooks.json, then read it back.
    ///
    /// As for claude, with Codex's 12 events and timeout 5 s (3 s for SessionEnd and
    /// Interrupt, which Codex clamps to 3 s). Codex runs a hooks.json entry only in a trusted project and once the
    /// entry itself is trusted (or with --dangerously-bypass-hook-trust).
    Codex(JsonInstall),
    /// Add hooktrack's entries to Gemini CLI's settings.json, then read it back.
    ///
    /// As for claude, with Gemini CLI's 11 events and timeout 5000 (Gemini CLI's timeouts
    /// are in milliseconds).
    #[command(visible_alias = "gemini-cli")]
    Gemini(JsonInstall),
}

/// Where hooks send what they get: one session's collector, store and generation, or
/// (all three left out) whatever session the agent process was started in, routed by its
/// environment ($HOOKTRACK_URL, $HOOKTRACK_DIR, $HOOKTRACK_GENERATION, $HOOKTRACK_TOKEN).
#[derive(Args)]
struct ObserverArgs {
    /// The store's artifact directory (channel.json is written there).
    #[arg(long, requires_all = ["url", "generation"])]
    dir: Option<PathBuf>,
    /// The collector URL, e.g. http://127.0.0.1:41234/events.
    #[arg(long, requires_all = ["dir", "generation"])]
    url: Option<String>,
    /// The channel generation.
    #[arg(long, requires_all = ["dir", "url"])]
    generation: Option<u64>,
    /// The binary the hooks run (default: `hooktrack-hook` beside this one if it is
    /// there, the hook command alone, which starts faster; else this one).
    #[arg(long)]
    emitter: Option<PathBuf>,
}

impl ObserverArgs {
    fn observer(&self) -> Result<Observer, TargetError> {
        let emitter = match &self.emitter {
            Some(e) => absolute(e),
            None => hook_binary()?,
        };
        let route = match (&self.dir, &self.url, self.generation) {
            (Some(dir), Some(url), Some(generation)) => Route::Argv(Destination {
                url: url.clone(),
                dir: absolute(dir),
                generation,
            }),
            _ => Route::Environment,
        };
        Ok(Observer { emitter, route })
    }
}

#[derive(Args)]
struct KimiInstall {
    #[command(flatten)]
    target: KimiTarget,
    #[command(flatten)]
    observer: ObserverArgs,
}

#[derive(Args)]
struct JsonInstall {
    #[command(flatten)]
    target: JsonTarget,
    #[command(flatten)]
    observer: ObserverArgs,
}

/// Remove hooktrack's observer block or entries from an agent CLI's config.
#[derive(Args)]
pub struct UninstallArgs {
    #[command(subcommand)]
    target: UninstallTarget,
}

#[derive(Subcommand)]
enum UninstallTarget {
    /// Remove the observer block from Kimi's config.toml, keeping every other byte.
    Kimi(KimiUninstall),
    /// As `kimi --variant code`.
    KimiCode(KimiUninstall),
    /// As `kimi --variant cli`.
    KimiCli(KimiUninstall),
    /// Remove hooktrack's entries from Claude Code's settings.json, and any matcher group,
    /// event list or `hooks` object that became empty; nothing else changes.
    #[command(visible_alias = "claude-code")]
    Claude(JsonUninstall),
    /// Remove hooktrack's entries from Codex's hooks.json (as for claude).
    Codex(JsonUninstall),
    /// Remove hooktrack's entries from Gemini CLI's settings.json (as for claude).
    #[command(visible_alias = "gemini-cli")]
    Gemini(JsonUninstall),
}

#[derive(Args)]
struct KimiUninstall {
    #[command(flatten)]
    target: KimiTarget,
    /// Only remove a block of this generation (a newer session's block is left alone).
    #[arg(long)]
    generation: Option<u64>,
}

#[derive(Args)]
struct JsonUninstall {
    #[command(flatten)]
    target: JsonTarget,
    /// Only remove entries of this generation (a newer session's entries are left alone).
    #[arg(long)]
    generation: Option<u64>,
}

/// Check an agent CLI's hook config the way the installer's read-back does.
#[derive(Args)]
pub struct CheckArgs {
    #[command(subcommand)]
    target: CheckTarget,
}

#[derive(Subcommand)]
enum CheckTarget {
    /// Strictly parse Kimi's config.toml and check every [[hooks]] entry.
    Kimi(KimiCheck),
    /// As `kimi --variant code`.
    KimiCode(KimiCheck),
    /// As `kimi --variant cli`.
    KimiCli(KimiCheck),
    /// Check Claude Code's settings.json as Claude Code reads it, and that hooktrack's
    /// entries are all there and well formed (exit 1 with the reason if not).
    #[command(visible_alias = "claude-code")]
    Claude(JsonCheck),
    /// Check Codex's hooks.json (as for claude).
    Codex(JsonCheck),
    /// Check Gemini CLI's settings.json (as for claude).
    #[command(visible_alias = "gemini-cli")]
    Gemini(JsonCheck),
}

#[derive(Args)]
struct KimiCheck {
    #[command(flatten)]
    target: KimiTarget,
    #[command(flatten)]
    probe: ProbeArgs,
}

#[derive(Args)]
struct JsonCheck {
    #[command(flatten)]
    target: JsonTarget,
    #[command(flatten)]
    probe: ProbeArgs,
}

/// Beyond the file: what else decides whether the hooks fire.
#[derive(Args)]
struct ProbeArgs {
    /// Only check the file (as the installer's read-back does), not the agent's switches,
    /// trust and auth.
    #[arg(long)]
    file_only: bool,
    /// The agent binary to ask (Codex's trust state; default: `codex` on PATH).
    #[arg(long)]
    agent_bin: Option<PathBuf>,
}

/// The running binary, as an absolute path.
pub fn this_binary() -> Result<PathBuf, TargetError> {
    std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|source| TargetError::ThisBinary { source })
}

/// The binary hooks run: `hooktrack-hook` (the hook command alone, which starts faster)
/// when it sits beside this one as an executable file, as `cargo install` and
/// `just hook-static` put it; else this binary, whose `emit` is the same command.
pub fn hook_binary() -> Result<PathBuf, TargetError> {
    use std::os::unix::fs::PermissionsExt;
    let this = this_binary()?;
    let hook = this.with_file_name(HOOK_BINARY);
    let runnable =
        std::fs::metadata(&hook).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    Ok(if runnable { hook } else { this })
}

/// The file name of the hook-only binary (`src/bin/hooktrack-hook.rs`).
const HOOK_BINARY: &str = "hooktrack-hook";

pub fn run_install(args: &InstallArgs) -> ExitCode {
    let done = match &args.target {
        InstallTarget::Kimi(args) => kimi_install(None, args),
        InstallTarget::KimiCode(args) => kimi_install(Some(Agent::KimiCode), args),
        InstallTarget::KimiCli(args) => kimi_install(Some(Agent::KimiCli), args),
        InstallTarget::Claude(args) => json_install(Agent::ClaudeCode, args),
        InstallTarget::Codex(args) => json_install(Agent::Codex, args),
        InstallTarget::Gemini(args) => json_install(Agent::GeminiCli, args),
    };
    let (agent, done) = match done {
        Ok(done) => done,
        Err(e) => return fail(&error_chain(&e)),
    };
    match done {
        Ok((report, generation)) => {
            println!(
                "installed {} hooktrack entries for {} in {} ({}{})",
                report.ours,
                agent.label(),
                report.config.display(),
                generation.map_or_else(
                    || "routed by environment".to_owned(),
                    |g| format!("generation {g}")
                ),
                match report.replaced {
                    Replaced::Generation(g) => format!(", replacing generation {g}"),
                    Replaced::Unreadable => ", replacing earlier entries".to_owned(),
                    Replaced::Nothing => String::new(),
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&error_chain(&e)),
    }
}

fn json_install(agent: Agent, args: &JsonInstall) -> Installing {
    let done = args
        .target
        .resolve(agent)
        .and_then(|config| install_to(agent, &config, &args.observer));
    Ok((agent, done))
}

/// `kimi` with the variant asked for, or as `kimi-code` / `kimi-cli` implies it.
fn kimi_target(target: &KimiTarget, implied: Option<Agent>) -> Result<KimiTarget, TargetError> {
    match implied {
        Some(agent) => target.implied(agent),
        None => Ok(target.clone()),
    }
}

type Installing = Result<(Agent, Result<(InstallReport, Option<u64>), TargetError>), TargetError>;

fn kimi_install(implied: Option<Agent>, args: &KimiInstall) -> Installing {
    let (agent, config) = kimi_target(&args.target, implied)?.resolve()?;
    Ok((agent, install_to(agent, &config, &args.observer)))
}

fn install_to(
    agent: Agent,
    config: &Path,
    args: &ObserverArgs,
) -> Result<(InstallReport, Option<u64>), TargetError> {
    let observer = args.observer()?;
    let report = install::install(config, agent, &observer)?;
    Ok((report, observer.generation()))
}

pub fn run_uninstall(args: &UninstallArgs) -> ExitCode {
    let json = |agent: Agent, args: &JsonUninstall| {
        (
            args.target.resolve(agent),
            args.generation,
            ConfigFormat::JsonHooks,
        )
    };
    let (config, generation, format) = match &args.target {
        UninstallTarget::Kimi(args) => kimi_uninstall(None, args),
        UninstallTarget::KimiCode(args) => kimi_uninstall(Some(Agent::KimiCode), args),
        UninstallTarget::KimiCli(args) => kimi_uninstall(Some(Agent::KimiCli), args),
        UninstallTarget::Claude(args) => json(Agent::ClaudeCode, args),
        UninstallTarget::Codex(args) => json(Agent::Codex, args),
        UninstallTarget::Gemini(args) => json(Agent::GeminiCli, args),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => return fail(&error_chain(&e)),
    };
    let what = match format {
        ConfigFormat::TomlHooks => "hooktrack block",
        ConfigFormat::JsonHooks => "hooktrack entries",
    };
    match install::uninstall(&config, format, generation) {
        Ok(Uninstalled::Removed { generation }) => println!(
            "removed the {what} (generation {}) from {}",
            show(generation),
            config.display()
        ),
        Ok(Uninstalled::NoBlock) => println!("no {what} in {}", config.display()),
        Ok(Uninstalled::NoFile) => println!("{} does not exist", config.display()),
        Ok(Uninstalled::KeptOther { generation: found }) => println!(
            "left the {what} of generation {} in {} (not generation {})",
            show(found),
            config.display(),
            show(generation)
        ),
        Err(e) => return fail(&error_chain(&e)),
    }
    ExitCode::SUCCESS
}

fn kimi_uninstall(
    implied: Option<Agent>,
    args: &KimiUninstall,
) -> (Result<PathBuf, TargetError>, Option<u64>, ConfigFormat) {
    (
        kimi_target(&args.target, implied).and_then(|t| t.config_only()),
        args.generation,
        ConfigFormat::TomlHooks,
    )
}

pub fn run_check(args: &CheckArgs) -> ExitCode {
    let (resolved, probe, named, project) = match &args.target {
        CheckTarget::Kimi(args) => kimi_check(None, args),
        CheckTarget::KimiCode(args) => kimi_check(Some(Agent::KimiCode), args),
        CheckTarget::KimiCli(args) => kimi_check(Some(Agent::KimiCli), args),
        CheckTarget::Claude(args) => json_check(Agent::ClaudeCode, args),
        CheckTarget::Codex(args) => json_check(Agent::Codex, args),
        CheckTarget::Gemini(args) => json_check(Agent::GeminiCli, args),
    };
    let (agent, config) = match resolved {
        Ok(r) => r,
        Err(e) => return fail(&error_chain(&e)),
    };
    let report = match install::check(&config, agent) {
        Ok(report) => report,
        Err(e) => return fail(&error_chain(&e)),
    };
    if !probe.file_only {
        let env = |name: &str| std::env::var_os(name);
        let cwd = project
            .map(absolute)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let findings = preflight::preflight(&Probe {
            agent,
            config: &config,
            env: &env,
            cwd: &cwd,
            args: &[],
            program: probe.agent_bin.as_deref(),
            file_named: named,
        });
        if !findings.is_empty() {
            for finding in &findings {
                eprintln!("hooktrack: error: {finding}");
            }
            return ExitCode::FAILURE;
        }
    }
    println!("ok: {}", check_line(agent, &report));
    ExitCode::SUCCESS
}

type Checked<'a> = (
    Result<(Agent, PathBuf), TargetError>,
    &'a ProbeArgs,
    bool,
    Option<&'a Path>,
);

fn kimi_check(implied: Option<Agent>, args: &KimiCheck) -> Checked<'_> {
    (
        kimi_target(&args.target, implied).and_then(|t| t.resolve()),
        &args.probe,
        args.target.config.is_some(),
        None,
    )
}

fn json_check(agent: Agent, args: &JsonCheck) -> Checked<'_> {
    (
        args.target.resolve(agent).map(|config| (agent, config)),
        &args.probe,
        args.target.config.is_some(),
        args.target.project.as_deref(),
    )
}

/// What `check` found, after "ok: ".
fn check_line(agent: Agent, report: &CheckReport) -> String {
    let v = &report.validation;
    match agent.config().format {
        ConfigFormat::TomlHooks => format!(
            "{} has {} valid [[hooks]] entries for {}; {}",
            report.config.display(),
            v.entries,
            agent.label(),
            if v.ours == 0 {
                "no hooktrack block".to_owned()
            } else {
                format!("the hooktrack block ({}) has {}", scope(v), v.ours)
            }
        ),
        ConfigFormat::JsonHooks => format!(
            "{} has {} hook entries; hooktrack's {} for {} ({}) are complete",
            report.config.display(),
            v.entries,
            v.ours,
            agent.label(),
            scope(v)
        ),
    }
}

/// Whose session the entries deliver to.
fn scope(v: &install::Validation) -> String {
    if v.routed {
        "routed by environment".to_owned()
    } else {
        format!("generation {}", show(v.generation))
    }
}

/// A generation, `?` when unreadable.
fn show(generation: Option<u64>) -> String {
    generation.map_or_else(|| "?".to_owned(), |g| g.to_string())
}
