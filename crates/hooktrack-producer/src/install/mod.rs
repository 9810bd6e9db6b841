//! Observer injection: wiring an agent CLI's hooks to `hooktrack emit`.
//!
//! One driver ([`install`], [`uninstall`], [`check`]) over the config formats (see
//! [`format`]): Kimi's `config.toml`, edited as text around a marker-delimited block
//! ([`toml_block`]), the JSON hooks table that Claude Code, Codex CLI, Gemini CLI and
//! others share ([`json_hooks`]), a plugin file ([`plugin`]) and one hook file per event
//! ([`hook_files`], Cline's: the driver runs the one-file steps on each). An install is always: read the file, let the format edit it,
//! write it atomically, read it back from disk and let the format check it, put the
//! previous bytes back on any violation, and record the verdict in `channel.json`.
//!
//! Which file and which events come from the core's `Agent`; what else the formats must
//! know about an agent (timeouts, strictness) is in [`facts`]; the hook command and its
//! shell quoting in [`command`].

pub mod command;
pub mod detect;
mod error;
pub mod facts;
mod file;
mod format;
pub mod hook_files;
pub mod json_hooks;
pub mod leftover;
pub mod own_side;
pub mod plugin;
pub mod preflight;
pub mod toml_block;
mod whole_file;

use std::fs;
use std::path::{Path, PathBuf};

use hooktrack_core::agent::{Agent, ConfigFormat};
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::store::{InstallRecord, parse_channel};

use crate::http::Url;
use crate::store::{self, StoreError, StorePaths};
pub use detect::version_of;
pub use error::{InstallError, MarkerError, Refusal, Violation};
use file::Replace;
use format::{Removal, Which};

/// What the hook command runs and where its deliveries go.
#[derive(Clone, Debug)]
pub struct Observer {
    /// The `hooktrack` binary (absolute).
    pub emitter: PathBuf,
    pub route: Route,
    /// The agent's version (its `--version`), which decides the events written
    /// ([`hooktrack_core::agents::Descriptor::hook_events_for`]); `None`: not known.
    pub agent_version: Option<String>,
}

/// How a hook finds its session (contract sections 7 and 10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Collector URL, store and generation in the command: for a launch-owned config
    /// (Kimi Code's `$KIMI_CODE_HOME`), rewritten at every start, removed at cleanup.
    Argv(Destination),
    /// Nothing session-specific in the command: each delivery is routed by the
    /// environment the agent inherits (`$HOOKTRACK_URL`, `$HOOKTRACK_DIR`,
    /// `$HOOKTRACK_GENERATION`, `$HOOKTRACK_TOKEN`). For user-global configs shared by
    /// every session: written once, its text never changes (so a trust granted in Codex
    /// stays valid), and a hook without that environment delivers to the agent's per-user
    /// default store ([`crate::emit::default_store`]).
    Environment,
}

/// One session's collector, store and generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// The collector URL.
    pub url: String,
    /// The store's artifact directory (absolute).
    pub dir: PathBuf,
    pub generation: u64,
}

impl Observer {
    /// The entries' generation; `None` for environment-routed entries.
    pub fn generation(&self) -> Option<u64> {
        match &self.route {
            Route::Argv(d) => Some(d.generation),
            Route::Environment => None,
        }
    }
}

/// What a validation found in a hooks file: the report of the read-back and of `check`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// Every hook entry in the file (the user's and hooktrack's).
    pub entries: usize,
    /// hooktrack's entries (0: none).
    pub ours: usize,
    /// Their generation, when there are some and it is readable (`None` for
    /// environment-routed entries). In Kimi's `config.toml`, the generation-scoped
    /// block's, which may sit beside setup's routed block.
    pub generation: Option<u64>,
    /// hooktrack's entries route by the environment (no generation in their command);
    /// in Kimi's `config.toml`: setup's routed block is there.
    pub routed: bool,
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub config: PathBuf,
    pub validation: Validation,
}

/// The hooktrack entries an install replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replaced {
    /// There were none.
    Nothing,
    /// Entries of this generation (the newest, if there were several).
    Generation(u64),
    /// Entries whose generation could not be read.
    Unreadable,
}

impl Replaced {
    /// Entries were there, of `generation` if it could be read.
    pub(crate) fn entries_of(generation: Option<u64>) -> Self {
        generation.map_or(Replaced::Unreadable, Replaced::Generation)
    }
}

/// What an install did.
#[derive(Clone, Debug)]
pub struct InstallReport {
    pub config: PathBuf,
    /// Every hook entry in the file after the install (the user's and hooktrack's).
    pub entries: usize,
    pub ours: usize,
    pub replaced: Replaced,
    pub created: bool,
}

/// Whether a config the user made read-only (no owner write bit) may be rewritten: a
/// read-only file is a choice, so it is refused, naming the file, unless asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadOnly {
    #[default]
    Refuse,
    /// Rewrite it anyway (`--force`), keeping its mode.
    Rewrite,
}

/// What an uninstall did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uninstalled {
    Removed {
        generation: Option<u64>,
    },
    /// The file holds no hooktrack block / entries: it was not rewritten.
    NoBlock,
    NoFile,
    /// The hooktrack entries belong to another generation (a newer session): left in place.
    KeptOther {
        generation: Option<u64>,
    },
}

/// Installs (or replaces) hooktrack's entries for `agent` in `config`. With an
/// [`Route::Argv`] observer the verdict is recorded in `<dir>/channel.json`: `ok` with "N
/// hooktrack entries for LABEL in FILE (generation G)", or not ok with the error chain
/// (the install's own error wins over a failure to record). An environment-routed install
/// belongs to no session, so it records nothing.
pub fn install(
    config: &Path,
    agent: Agent,
    observer: &Observer,
    read_only: ReadOnly,
) -> Result<InstallReport, InstallError> {
    let result = install_unrecorded(config, agent, observer, read_only);
    let Route::Argv(destination) = &observer.route else {
        return result;
    };
    let verdict = match &result {
        Ok(r) => InstallRecord {
            ok: true,
            detail: Some(format!(
                "{} hooktrack entries for {} in {} (generation {})",
                r.ours,
                agent.label(),
                r.config.display(),
                destination.generation
            )),
        },
        Err(e) => InstallRecord {
            ok: false,
            detail: Some(error_chain(e)),
        },
    };
    let recorded = write_channel(
        &destination.dir,
        agent.store_name(),
        destination.generation,
        verdict,
    );
    let report = result?;
    recorded.map_err(|source| InstallError::Channel { source })?;
    Ok(report)
}

fn install_unrecorded(
    config: &Path,
    agent: Agent,
    observer: &Observer,
    read_only: ReadOnly,
) -> Result<InstallReport, InstallError> {
    check_observer(observer)?;
    if agent.config().format != ConfigFormat::HookFiles {
        return install_file(config, agent, observer, read_only);
    }
    // One file per event: none is written while any of them is the user's.
    let files = hook_files::files(config, agent, Some(observer.agent_version.as_deref()));
    for (file, _) in &files {
        let file = file::resolve(file);
        if let Some(text) = file::read_text(&file)?
            && !hook_files::is_ours(&text)
        {
            return Err(InstallError::NotOurs { path: file });
        }
    }
    let mut first: Option<InstallReport> = None;
    let mut ours = 0;
    for (file, _) in &files {
        let report = install_file(file, agent, observer, read_only)?;
        ours += report.ours;
        first.get_or_insert(report);
    }
    let mut report = first.ok_or_else(|| InstallError::NotInstalled {
        path: config.to_owned(),
        reason: "the agent has no hook event to write a file for",
        install: own_side::install_command(agent),
    })?;
    report.entries = ours;
    report.ours = ours;
    Ok(report)
}

/// Installs into one file: the whole config, or one hook file of an agent that has one per
/// event.
fn install_file(
    config: &Path,
    agent: Agent,
    observer: &Observer,
    read_only: ReadOnly,
) -> Result<InstallReport, InstallError> {
    let config = file::resolve(config);
    file::check_writable(&config, read_only)?;
    // Edited from a read, written only while the file still holds what was read: a save
    // by the user meanwhile is never overwritten, the edit is redone on it (`replace_if`).
    let mut original = file::read_text(&config)?;
    for _ in 0..file::MAX_EDIT_ATTEMPTS {
        let edit = format::edit(
            agent,
            &config,
            original.as_deref().unwrap_or_default(),
            observer,
        )?;
        let mode = match agent.config().format {
            ConfigFormat::HookFiles => hook_files::MODE,
            _ => file::mode(&config),
        };
        if let Replace::Changed(now) =
            file::replace_if(&config, original.as_deref(), &edit.text, mode)?
        {
            original = now;
            continue;
        }
        let validation = check_written(&config, original.as_deref(), &edit.text, mode, |back| {
            format::read_back(agent, &config, back, observer, &edit.outside)
        })?;
        return Ok(InstallReport {
            config,
            entries: validation.entries,
            ours: validation.ours,
            replaced: edit.replaced,
            created: original.is_none(),
        });
    }
    Err(InstallError::Contended {
        path: config,
        attempts: file::MAX_EDIT_ATTEMPTS,
    })
}

/// Removes hooktrack's entries from `config`, keeping the rest. With `generation`, only
/// entries of that generation go (a newer session's are left in place). A file without
/// hooktrack entries is not rewritten, and a file not hooktrack's is never deleted.
pub fn uninstall(
    config: &Path,
    format: ConfigFormat,
    generation: Option<u64>,
    read_only: ReadOnly,
) -> Result<Uninstalled, InstallError> {
    uninstall_which(
        config,
        format,
        generation.map_or(Which::Any, Which::Generation),
        read_only,
    )
}

/// Removes hooktrack's environment-routed entries from `config` (what `setup` wrote),
/// keeping the rest: a running launch's generation-scoped block in Kimi Code's
/// `config.toml` stays for that launch's own cleanup.
pub fn uninstall_routed(
    config: &Path,
    format: ConfigFormat,
    read_only: ReadOnly,
) -> Result<Uninstalled, InstallError> {
    uninstall_which(config, format, Which::Routed, read_only)
}

fn uninstall_which(
    config: &Path,
    format: ConfigFormat,
    which: Which,
    read_only: ReadOnly,
) -> Result<Uninstalled, InstallError> {
    if format != ConfigFormat::HookFiles {
        return uninstall_file(config, format, which, read_only);
    }
    // Every event's file hooktrack may have written, whichever version it wrote them for.
    let dir = config.parent().unwrap_or(Path::new(""));
    let mut outcome = Uninstalled::NoFile;
    for agent in Agent::ALL
        .into_iter()
        .filter(|a| a.config().format == ConfigFormat::HookFiles)
    {
        for event in agent.descriptor().hook_events {
            let one = uninstall_file(&dir.join(event), format, which, read_only)?;
            outcome = match (outcome, one) {
                (removed @ Uninstalled::Removed { .. }, _)
                | (_, removed @ Uninstalled::Removed { .. }) => removed,
                (kept @ Uninstalled::KeptOther { .. }, _)
                | (_, kept @ Uninstalled::KeptOther { .. }) => kept,
                (Uninstalled::NoBlock, _) | (_, Uninstalled::NoBlock) => Uninstalled::NoBlock,
                (Uninstalled::NoFile, Uninstalled::NoFile) => Uninstalled::NoFile,
            };
        }
    }
    Ok(outcome)
}

/// Removes hooktrack's entries from one file.
fn uninstall_file(
    config: &Path,
    format: ConfigFormat,
    which: Which,
    read_only: ReadOnly,
) -> Result<Uninstalled, InstallError> {
    let config = file::resolve(config);
    let mut read = file::read_text(&config)?;
    for _ in 0..file::MAX_EDIT_ATTEMPTS {
        let Some(text) = &read else {
            return Ok(Uninstalled::NoFile);
        };
        let removal = format::remove(format, &config, text, which)?;
        if matches!(removal, Removal::Removed { .. } | Removal::Delete { .. }) {
            file::check_writable(&config, read_only)?;
        }
        match removal {
            Removal::Nothing => return Ok(Uninstalled::NoBlock),
            Removal::KeptOther { generation } => {
                return Ok(Uninstalled::KeptOther { generation });
            }
            Removal::Delete { generation } => {
                // Only the text judged hooktrack's goes: a file saved there meanwhile is
                // judged again.
                let now = file::read_text(&config)?;
                if now.as_deref() != Some(text.as_str()) {
                    read = now;
                    continue;
                }
                std::fs::remove_file(&config).map_err(|source| InstallError::Write {
                    path: config.clone(),
                    source: StoreError::Write {
                        path: config.clone(),
                        source,
                    },
                })?;
                return Ok(Uninstalled::Removed { generation });
            }
            Removal::Removed {
                text: edited,
                generation,
            } => match file::replace_if(&config, Some(text), &edited, file::mode(&config))? {
                Replace::Done => return Ok(Uninstalled::Removed { generation }),
                // Saved meanwhile: the removal is redone on what is there now.
                Replace::Changed(now) => read = now,
            },
        }
    }
    Err(InstallError::Contended {
        path: config,
        attempts: file::MAX_EDIT_ATTEMPTS,
    })
}

/// Checks `config` without changing it, as the agent reads it and as the read-back does.
pub fn check(config: &Path, agent: Agent) -> Result<CheckReport, InstallError> {
    check_for(config, agent, None)
}

/// [`check`] for the agent at `version`: hooktrack's entries must cover the events that
/// version fires (`None`: those every tested version fires) and name none it does not
/// know.
pub fn check_for(
    config: &Path,
    agent: Agent,
    version: Option<&str>,
) -> Result<CheckReport, InstallError> {
    if agent.config().format == ConfigFormat::HookFiles {
        let mut total: Option<Validation> = None;
        for (file, _) in hook_files::files(config, agent, Some(version)) {
            let file = file::resolve(&file);
            let text = file::read_text(&file)?;
            let one = format::check(agent, &file, text.as_deref(), version)?;
            total = Some(match total {
                Some(t) => Validation {
                    entries: t.entries + one.entries,
                    ours: t.ours + one.ours,
                    ..t
                },
                None => one,
            });
        }
        let validation = total.ok_or_else(|| InstallError::NotInstalled {
            path: config.to_owned(),
            reason: "the agent has no hook event to check a file for",
            install: own_side::install_command(agent),
        })?;
        return Ok(CheckReport {
            config: file::resolve(config),
            validation,
        });
    }
    let config = file::resolve(config);
    let text = file::read_text(&config)?;
    let validation = format::check(agent, &config, text.as_deref(), version)?;
    Ok(CheckReport { config, validation })
}

/// Whether `config` holds exactly the entries `observer` renders for `agent` (so an
/// install would rewrite nothing): what lets a session leave a shared config untouched.
pub fn installed_by(config: &Path, agent: Agent, observer: &Observer) -> bool {
    if agent.config().format == ConfigFormat::HookFiles {
        let files = hook_files::files(config, agent, Some(observer.agent_version.as_deref()));
        return !files.is_empty()
            && files.iter().all(|(file, event)| {
                matches!(
                    file::read_text(&file::resolve(file)),
                    Ok(Some(text)) if text == hook_files::render(agent, observer, event)
                )
            });
    }
    let config = file::resolve(config);
    let Ok(Some(text)) = file::read_text(&config) else {
        return false;
    };
    match agent.config().format {
        ConfigFormat::TomlHooks => toml_block::validate(&text, agent, Some(observer)),
        ConfigFormat::JsonHooks => json_hooks::validate(
            &text,
            agent,
            Some(observer),
            observer.agent_version.as_deref(),
        ),
        ConfigFormat::HookFiles => Err(Violation::new("hook files are judged one by one")),
        ConfigFormat::Plugin => {
            if text == plugin::render(agent, observer) {
                plugin::validate(&text, agent)
            } else {
                Err(Violation::new("another plugin text"))
            }
        }
    }
    .is_ok_and(|v| v.ours > 0)
}

/// Whether a config's `text` holds nothing at all, as a file an install created does once
/// hooktrack's entries are out again: an empty JSON object, blank TOML, an empty plugin.
pub fn holds_nothing(text: &str, format: ConfigFormat) -> bool {
    match format {
        ConfigFormat::JsonHooks => json_hooks::Settings::parse(text).is_ok_and(|s| s.is_empty()),
        ConfigFormat::TomlHooks => text.trim().is_empty(),
        ConfigFormat::Plugin | ConfigFormat::HookFiles => text.is_empty(),
    }
}

/// Records the installer's verdict in `<dir>/channel.json` (0600, atomic).
pub fn write_channel(
    dir: &Path,
    provider: &str,
    generation: u64,
    install: InstallRecord,
) -> Result<(), StoreError> {
    let store = StorePaths::in_dir(dir);
    store::create_dir(&store)?;
    // What others published (a policy `state`, ...) is kept; an unreadable file is replaced.
    let mut channel = fs::read(&store.channel)
        .ok()
        .and_then(|bytes| parse_channel(&bytes).ok())
        .unwrap_or_default();
    channel.provider = Some(provider.to_owned());
    channel.generation = Some(generation);
    channel.install = Some(install);
    store::write_json_atomic(&store.channel, &channel)
}

/// The emitter and the store must be absolute, the URL one the emitter accepts.
fn check_observer(observer: &Observer) -> Result<(), InstallError> {
    let mut paths = vec![("the emitter", &observer.emitter)];
    if let Route::Argv(destination) = &observer.route {
        paths.push(("the store", &destination.dir));
        Url::parse(&destination.url).map_err(|source| InstallError::Url { source })?;
    }
    for (what, path) in paths {
        if !path.is_absolute() {
            return Err(InstallError::NotAbsolute {
                what,
                path: path.clone(),
            });
        }
    }
    Ok(())
}

/// Reads the file `text` was just written to back from disk and runs `verdict` on what is
/// there; on any violation puts `original` back byte for byte (or removes the file it
/// created), but only while the file still holds `text`: another writer's save since wins.
fn check_written<T>(
    config: &Path,
    original: Option<&str>,
    text: &str,
    mode: u32,
    verdict: impl FnOnce(&str) -> Result<T, Violation>,
) -> Result<T, InstallError> {
    let verdict = match file::read_text(config) {
        Ok(back) => verdict(back.as_deref().unwrap_or_default()),
        Err(e) => Err(Violation::new(format!(
            "cannot read it back: {}",
            error_chain(&e)
        ))),
    };
    verdict.or_else(|violation| {
        let restored = match original {
            Some(original) => file::replace_if(config, Some(text), original, mode)
                .map(|_| ())
                .map_err(|e| std::io::Error::other(error_chain(&e))),
            None => match file::read_text(config) {
                Ok(Some(now)) if now == text => fs::remove_file(config),
                _ => Ok(()),
            },
        };
        restored.map_err(|source| InstallError::Restore {
            path: config.to_owned(),
            violation: violation.clone(),
            source,
        })?;
        Err(InstallError::Rejected {
            path: config.to_owned(),
            violation,
        })
    })
}
