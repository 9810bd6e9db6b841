//! `hooktrack install kimi`, `hooktrack uninstall kimi`, `hooktrack check kimi`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use hooktrack::producer::install::kimi::{self, Observer, Uninstalled, Variant};

use super::fail;
use hooktrack::diagnostics::error_chain;

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

#[derive(Clone, Copy, ValueEnum)]
pub enum VariantArg {
    Auto,
    /// Kimi Code 2.x.
    Code,
    /// Kimi CLI 1.x (the Python CLI).
    Cli,
}

impl KimiTarget {
    /// The variant (detected if asked) and the config file.
    pub fn resolve(&self) -> Result<(Variant, PathBuf), String> {
        let env = |name: &str| std::env::var_os(name);
        let explicit = self
            .config
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join("config.toml")));
        let variant = match self.variant {
            VariantArg::Code => Variant::Code,
            VariantArg::Cli => Variant::Cli,
            VariantArg::Auto => kimi::detect_variant(env, explicit.as_deref())
                .map(|(v, _)| v)
                .map_err(|e| error_chain(&e))?,
        };
        let config = match (&self.config, &self.home) {
            (Some(c), _) => c.clone(),
            (None, Some(h)) => h.join("config.toml"),
            (None, None) => variant
                .home(env)
                .ok_or_else(|| {
                    format!(
                        "cannot find {}'s home: set ${} or $HOME, or pass --config",
                        variant.label(),
                        variant.home_env()
                    )
                })?
                .join("config.toml"),
        };
        Ok((variant, absolute(&config)))
    }

    /// The config file alone (uninstall needs no variant when the file is named).
    pub fn config_only(&self) -> Result<PathBuf, String> {
        match (&self.config, &self.home) {
            (Some(c), _) => Ok(absolute(c)),
            (None, Some(h)) => Ok(absolute(&h.join("config.toml"))),
            (None, None) => self.resolve().map(|(_, c)| c),
        }
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
}

#[derive(Args)]
struct KimiInstall {
    #[command(flatten)]
    target: KimiTarget,
    /// The store's artifact directory (channel.json is written there).
    #[arg(long)]
    dir: PathBuf,
    /// The collector URL, e.g. http://127.0.0.1:41234/events.
    #[arg(long)]
    url: String,
    /// The channel generation.
    #[arg(long)]
    generation: u64,
    /// The hooktrack binary the hooks run (default: this one).
    #[arg(long)]
    emitter: Option<PathBuf>,
}

/// Remove hooktrack's observer block from an agent CLI's config.
#[derive(Args)]
pub struct UninstallArgs {
    #[command(subcommand)]
    target: UninstallTarget,
}

#[derive(Subcommand)]
enum UninstallTarget {
    /// Remove the observer block from Kimi's config.toml, keeping every other byte.
    Kimi(KimiUninstall),
}

#[derive(Args)]
struct KimiUninstall {
    #[command(flatten)]
    target: KimiTarget,
    /// Only remove a block of this generation (a newer session's block is left alone).
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
}

#[derive(Args)]
struct KimiCheck {
    #[command(flatten)]
    target: KimiTarget,
}

/// The running binary, as the absolute path hooks should run.
pub fn this_binary() -> Result<PathBuf, String> {
    std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot locate the hooktrack binary: {e}"))
}

pub fn run_install(args: &InstallArgs) -> ExitCode {
    let InstallTarget::Kimi(args) = &args.target;
    let (variant, config) = match args.target.resolve() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let emitter = match &args.emitter {
        Some(e) => absolute(e),
        None => match this_binary() {
            Ok(b) => b,
            Err(e) => return fail(&e),
        },
    };
    let observer = Observer {
        emitter,
        url: args.url.clone(),
        dir: absolute(&args.dir),
        generation: args.generation,
    };
    match kimi::install(&config, variant, &observer) {
        Ok(report) => {
            println!(
                "installed {} hooktrack entries for {} in {} (generation {}{})",
                report.ours,
                variant.label(),
                report.config.display(),
                args.generation,
                match report.replaced {
                    Some(Some(g)) => format!(", replacing generation {g}"),
                    Some(None) => ", replacing an earlier block".to_owned(),
                    None => String::new(),
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&error_chain(&e)),
    }
}

pub fn run_uninstall(args: &UninstallArgs) -> ExitCode {
    let UninstallTarget::Kimi(args) = &args.target;
    let config = match args.target.config_only() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match kimi::uninstall(&config, args.generation) {
        Ok(done) => {
            let show = |g: Option<u64>| g.map_or_else(|| "?".to_owned(), |g| g.to_string());
            match done {
                Uninstalled::Removed { generation } => println!(
                    "removed the hooktrack block (generation {}) from {}",
                    show(generation),
                    config.display()
                ),
                Uninstalled::NoBlock => {
                    println!("no hooktrack block in {}", config.display());
                }
                Uninstalled::NoFile => println!("{} does not exist", config.display()),
                Uninstalled::KeptOther { generation } => println!(
                    "left the hooktrack block of generation {} in {} (not generation {})",
                    show(generation),
                    config.display(),
                    show(args.generation)
                ),
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&error_chain(&e)),
    }
}

pub fn run_check(args: &CheckArgs) -> ExitCode {
    let CheckTarget::Kimi(args) = &args.target;
    let (variant, config) = match args.target.resolve() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match kimi::check(&config, variant) {
        Ok(report) => {
            let block = match report.block {
                Some((generation, n)) => format!(
                    "the hooktrack block (generation {}) has {n}",
                    generation.map_or_else(|| "?".to_owned(), |g| g.to_string())
                ),
                None => "no hooktrack block".to_owned(),
            };
            println!(
                "ok: {} has {} valid [[hooks]] entries for {}; {block}",
                report.config.display(),
                report.entries,
                variant.label()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&error_chain(&e)),
    }
}
