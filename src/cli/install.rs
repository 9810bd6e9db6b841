//! `hooktrack install|uninstall|check AGENT`: the agent named through the one parser of
//! agent names (`kimi` for whichever Kimi is installed, or one agent by any of its names),
//! its file found from its descriptor's config location.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use thiserror::Error;

use hooktrack::ConfigFormat;
use hooktrack::install::{
    self, CheckReport, Destination, InstallError, InstallReport, Observer, ReadOnly, Replaced,
    Route, Uninstalled,
};
use hooktrack::{Agent, ProviderChoice};

use hooktrack::install::own_side;
use hooktrack::install::preflight::{self, Probe};

use super::{fail, parse_agent_choice};
use hooktrack::error_chain;
use hooktrack::safe_text::visible_lines;

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
    #[error("name an agent, not `auto` (expected {})", Agent::names_for_help())]
    NoAgent,
    #[error("{who} reads no project file; pass --config or --home")]
    NoProjectFile { who: &'static str },
}

/// The agent a command names: one agent, or a family's member as detected (its config
/// file, when named, can tell). `session --agent` and the subcommands here share it.
pub fn choose(
    choice: ProviderChoice,
    config: Option<&Path>,
    home: Option<&Path>,
) -> Result<Agent, TargetError> {
    if let ProviderChoice::Exactly(agent) = choice {
        return Ok(agent);
    }
    let family = choice.family().ok_or(TargetError::NoAgent)?;
    // Members of a family read files of one name: a home names it for all of them.
    let explicit = config.map(Path::to_owned).or_else(|| {
        let member = family.members().next()?;
        home.map(|h| member.config().file_in_home(h))
    });
    let env = |name: &str| std::env::var_os(name);
    Ok(install::detect_member(family, env, explicit.as_deref())?)
}

/// Which agent, and which of its files.
#[derive(Args, Clone)]
pub struct Target {
    #[arg(value_name = "AGENT", value_parser = parse_agent_choice, help = agent_help())]
    agent: ProviderChoice,
    /// The file to edit (default: where the agent reads it, from its home variable or
    /// $HOME).
    #[arg(long, conflicts_with_all = ["home", "project"])]
    config: Option<PathBuf>,
    #[arg(long, conflicts_with = "project", help = super::home_help())]
    home: Option<PathBuf>,
    /// A project directory: edit its own file (.claude/settings.json, .codex/hooks.json,
    /// .gemini/settings.json: `<DIR>/<the agent's dot directory>/<its file>`).
    #[arg(long)]
    project: Option<PathBuf>,
}

/// What AGENT takes, from the agents' descriptors.
fn agent_help() -> String {
    let other_names: Vec<&str> = Agent::ALL
        .iter()
        .filter(|a| a.typed_name() != a.name())
        .map(|a| a.name())
        .collect();
    let mut families: Vec<String> = Vec::new();
    for family in Agent::ALL.iter().filter_map(|a| a.family()) {
        let text = format!(
            "{} is whichever {} is installed (`{} --version`, then their homes)",
            family.name, family.label, family.program
        );
        if !families.contains(&text) {
            families.push(text);
        }
    }
    format!(
        "The agent: {} (also: {}); {}",
        super::agents_by(Agent::typed_name),
        other_names.join(", "),
        families.join("; ")
    )
}

/// Each agent's file, events and timeout, from the descriptors.
pub(super) fn agents_table() -> String {
    let mut table = String::from("Agents:");
    let width = Agent::ALL
        .iter()
        .map(|a| a.label().len())
        .max()
        .unwrap_or(0);
    for agent in Agent::ALL {
        let location = agent.config();
        let install = agent.descriptor().install;
        let home = location
            .home_env
            .map_or_else(|| format!("~/{}", location.dot_dir), |v| format!("${v}"));
        table.push_str(&format!(
            "\n  {:<10} {:<width$} {}/{} ({} events, timeout {} {})",
            agent.typed_name(),
            agent.label(),
            home,
            location.file,
            agent.hook_events().len(),
            install.timeout,
            install.timeout_unit.name(),
        ));
    }
    table
}

impl Target {
    /// The agent (a family's member detected) and its file, absolute.
    pub fn resolve(&self) -> Result<(Agent, PathBuf), TargetError> {
        // Refused before a family's detection runs when none of its members reads one.
        if let Some(family) = self.agent.family()
            && self.project.is_some()
            && family.members().all(|a| !a.config().project_install)
        {
            return Err(TargetError::NoProjectFile { who: family.label });
        }
        let agent = choose(self.agent, self.config.as_deref(), self.home.as_deref())?;
        Ok((agent, self.file(agent)?))
    }

    /// The agent's file, absolute.
    fn file(&self, agent: Agent) -> Result<PathBuf, TargetError> {
        let location = agent.config();
        let config = match (&self.config, &self.home, &self.project) {
            (Some(c), _, _) => c.clone(),
            (None, Some(h), _) => location.file_in_home(h),
            (None, None, Some(p)) if location.project_install => location.project_file(p),
            (None, None, Some(_)) => {
                return Err(TargetError::NoProjectFile { who: agent.label() });
            }
            (None, None, None) => location
                .user_file(|name| std::env::var_os(name))
                .ok_or(TargetError::NoHome { agent })?,
        };
        Ok(absolute(&config))
    }

    /// The file and its format alone: an uninstall needs no detection when the file is
    /// named (a family's members share their format and file name).
    fn file_and_format(&self) -> Result<(PathBuf, ConfigFormat), TargetError> {
        let named = self.config.is_some() || self.home.is_some();
        let member = self.agent.family().and_then(|f| f.members().next());
        let agent = match (self.agent, member) {
            (ProviderChoice::Exactly(agent), _) => agent,
            (_, Some(member)) if named => member,
            _ => self.resolve()?.0,
        };
        Ok((self.file(agent)?, agent.config().format))
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Wire an agent CLI's hooks to `hooktrack emit`.
///
/// One entry per event the agent fires, running an absolute, shell-quoted `hooktrack emit`
/// (no token in the file): in a TOML config, a marker-delimited block of [[hooks]] entries
/// (bytes outside the block are kept as they are); in a JSON hooks table, one matcher group
/// per event under the empty matcher (every other key and entry is kept in its place). A
/// re-install replaces hooktrack's entries. If the read-back finds a violation the previous
/// bytes are restored and DIR/channel.json records install.ok = false with the reason.
/// `hooktrack check AGENT` then says whether the hooks will fire (trust, auth, switches).
#[derive(Args)]
#[command(after_long_help = agents_table())]
pub struct InstallArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    observer: ObserverArgs,
    /// Rewrite the config even if it is read-only (its mode is kept); without it a
    /// read-only config is refused, naming the file.
    #[arg(long)]
    force: bool,
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
        // The version is the caller's to ask (it knows the agent).
        Ok(Observer {
            emitter,
            route,
            agent_version: None,
        })
    }
}

/// Remove hooktrack's observer block or entries from an agent CLI's config, and any
/// matcher group, event list or `hooks` object that became empty; nothing else changes.
#[derive(Args)]
pub struct UninstallArgs {
    #[command(flatten)]
    target: Target,
    /// Only remove entries of this generation (a newer session's entries are left alone).
    #[arg(long)]
    generation: Option<u64>,
    /// Rewrite the config even if it is read-only (its mode is kept).
    #[arg(long)]
    force: bool,
}

/// Check an agent CLI's hook config the way the installer's read-back does, hooktrack's
/// own side (the hook binary its entries run exists, is executable and is this hooktrack's;
/// the per-user default store routed hooks deliver to is writable), and (unless
/// --file-only) what else decides whether the hooks fire; exit 1 with the file, the cause
/// and the fix if they will not.
#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    probe: ProbeArgs,
    /// The hook binary the entries must run (default: the one `install` writes,
    /// `hooktrack-hook` beside this binary if it is there, else this one; this one is
    /// accepted too).
    #[arg(long)]
    emitter: Option<PathBuf>,
}

impl CheckArgs {
    /// The binaries entries may run and still be this hooktrack's.
    fn current_emitters(&self) -> Vec<PathBuf> {
        if let Some(e) = &self.emitter {
            return vec![absolute(e)];
        }
        let mut current: Vec<PathBuf> = hook_binary().into_iter().collect();
        current.extend(this_binary().ok().filter(|t| !current.contains(t)));
        current
    }
}

/// Beyond the file: what else decides whether the hooks fire.
#[derive(Args)]
struct ProbeArgs {
    /// Only check the file (as the installer's read-back does) and hooktrack's own side,
    /// not the agent's switches, trust and auth.
    #[arg(long)]
    file_only: bool,
    /// The agent binary to ask (its `--version`, Codex's trust state; default: the
    /// agent's program on PATH).
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
    let (agent, config) = match args.target.resolve() {
        Ok(resolved) => resolved,
        Err(e) => return fail(&error_chain(&e)),
    };
    match install_to(agent, &config, &args.observer, read_only(args.force)) {
        Ok((report, generation)) => {
            say!(
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

fn install_to(
    agent: Agent,
    config: &Path,
    args: &ObserverArgs,
    read_only: ReadOnly,
) -> Result<(InstallReport, Option<u64>), TargetError> {
    let mut observer = args.observer()?;
    observer.agent_version = agent_version(agent, None);
    let report = install::install(config, agent, &observer, read_only)?;
    Ok((report, observer.generation()))
}

/// `--force`'s word on a read-only config.
pub fn read_only(force: bool) -> ReadOnly {
    if force {
        ReadOnly::Rewrite
    } else {
        ReadOnly::Refuse
    }
}

pub fn run_uninstall(args: &UninstallArgs) -> ExitCode {
    let (config, format) = match args.target.file_and_format() {
        Ok(found) => found,
        Err(e) => return fail(&error_chain(&e)),
    };
    let generation = args.generation;
    let what = match format {
        ConfigFormat::TomlHooks => "hooktrack block",
        ConfigFormat::JsonHooks => "hooktrack entries",
        ConfigFormat::Plugin => "hooktrack plugin",
        ConfigFormat::HookFiles => "hooktrack hook files",
    };
    match install::uninstall(&config, format, generation, read_only(args.force)) {
        Ok(Uninstalled::Removed { generation }) => say!(
            "removed the {what} (generation {}) from {}",
            show(generation),
            config.display()
        ),
        Ok(Uninstalled::NoBlock) => say!("no {what} in {}", config.display()),
        Ok(Uninstalled::NoFile) => say!("{} does not exist", config.display()),
        Ok(Uninstalled::KeptOther { generation: found }) => say!(
            "left the {what} of generation {} in {} (not generation {})",
            show(found),
            config.display(),
            show(generation)
        ),
        Err(e) => return fail(&error_chain(&e)),
    }
    ExitCode::SUCCESS
}

pub fn run_check(args: &CheckArgs) -> ExitCode {
    let (agent, config) = match args.target.resolve() {
        Ok(r) => r,
        Err(e) => return fail(&error_chain(&e)),
    };
    let probe = &args.probe;
    let version = agent_version(agent, probe.agent_bin.as_deref());
    let versions = agent.descriptor().versions;
    let window = versions.verdict(agent.label(), agent.typed_name(), version.as_deref());
    let env = |name: &str| std::env::var_os(name);
    let cwd = args
        .target
        .project
        .as_deref()
        .map(absolute)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let agent_probe = Probe {
        agent,
        config: &config,
        env: &env,
        cwd: &cwd,
        args: &[],
        program: probe.agent_bin.as_deref(),
        file_named: args.target.config.is_some(),
        ask_doctor: true,
    };
    // A block left by a session killed without its cleanup (`kill -9`) would be checked
    // as if it still served: it goes first, saying so.
    match install::leftover::clean_dead_launch_block(&config, agent) {
        Ok(Some(dead)) => eprintln!(
            "hooktrack: cleaned up: {}",
            visible_lines(&dead.to_string())
        ),
        Ok(None) => {}
        Err(e) => eprintln!(
            "hooktrack: a block left by a dead session could not be removed: {}",
            visible_lines(&error_chain(&e))
        ),
    }
    let report = match install::check_for(&config, agent, version.as_deref()) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("hooktrack: {}", visible_lines(&window));
            // The agent's own validator is asked all the same: where it accepts what
            // hooktrack rejects, the user learns which of the two to believe.
            if !probe.file_only {
                for finding in preflight::doctor_disagreement(&agent_probe, false) {
                    eprintln!("hooktrack: error: {}", visible_lines(&finding.to_string()));
                }
            }
            return fail(&error_chain(&e));
        }
    };
    // A TOML file without hooktrack's block is valid, and nothing in it will report.
    if report.validation.ours == 0 {
        return fail(&error_chain(&InstallError::NotInstalled {
            path: report.config.clone(),
            reason: "it holds no hooktrack block",
            install: own_side::install_command(agent),
        }));
    }
    let mut findings = own_side::own_side(agent, &report.config, &args.current_emitters(), &env);
    if !probe.file_only {
        findings.extend(preflight::preflight(&agent_probe));
    }
    if !findings.is_empty() {
        eprintln!("hooktrack: {}", visible_lines(&window));
        for finding in &findings {
            eprintln!("hooktrack: error: {}", visible_lines(&finding.to_string()));
        }
        return ExitCode::FAILURE;
    }
    // The agent's version and config text are shown, never interpreted.
    say!("ok: {}", visible_lines(&check_line(agent, &report)));
    say!("{}", visible_lines(&window));
    ExitCode::SUCCESS
}

/// The agent's version, asked of `bin` (default: its program on PATH); `None` when it
/// does not run or prints none. Decides which events are installed and checked.
pub(super) fn agent_version(agent: Agent, bin: Option<&Path>) -> Option<String> {
    let program = agent.descriptor().versions.program;
    let asked = match bin {
        Some(bin) => install::version_of(bin),
        None => install::version_of(program),
    };
    asked.ok().flatten()
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
                format!(
                    "the hooktrack {} ({}) {} {}",
                    if v.routed && v.generation.is_some() {
                        "blocks"
                    } else {
                        "block"
                    },
                    scope(v),
                    if v.routed && v.generation.is_some() {
                        "have"
                    } else {
                        "has"
                    },
                    v.ours
                )
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
        ConfigFormat::HookFiles => format!(
            "{} holds hooktrack's {} hook files for {} ({}), one per event hooktrack reads",
            report.config.parent().unwrap_or(&report.config).display(),
            v.ours,
            agent.label(),
            scope(v)
        ),
        ConfigFormat::Plugin => format!(
            "{} is hooktrack {}'s plugin for {} ({}), forwarding every event hooktrack reads",
            report.config.display(),
            install::PLUGIN_VERSION,
            agent.label(),
            scope(v)
        ),
    }
}

/// Whose session the entries deliver to.
fn scope(v: &install::Validation) -> String {
    match (v.routed, v.generation) {
        // Kimi Code's `config.toml` while a session runs: setup's block and the launch's.
        (true, Some(g)) => format!("routed by environment, and generation {g}'s"),
        (true, None) => "routed by environment".to_owned(),
        (false, g) => format!("generation {}", show(g)),
    }
}

/// A generation, `?` when unreadable.
fn show(generation: Option<u64>) -> String {
    generation.map_or_else(|| "?".to_owned(), |g| g.to_string())
}
