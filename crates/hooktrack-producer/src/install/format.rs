//! What the driver asks of a config format, named by the core's [`ConfigFormat`]: Kimi's
//! marker-delimited TOML block ([`super::toml_block`]), the JSON hooks table of Claude
//! Code, Codex, Gemini CLI and others ([`super::json_hooks`]), a plugin file
//! ([`super::plugin`]) and one hook file per event ([`super::hook_files`], one file at a
//! time: the driver runs them on each). Each
//! operation is a plain function per format; these dispatch on the format, so the driver
//! in `mod.rs` is written once.

use std::path::Path;

use hooktrack_core::agent::{Agent, ConfigFormat};

use super::{
    InstallError, Observer, Replaced, Validation, Violation, hook_files, json_hooks, plugin,
    toml_block,
};

/// A file's new text for an install, and what the read-back compares against.
#[derive(Clone, Debug)]
pub(crate) struct Edit {
    /// The whole new file.
    pub text: String,
    /// The hooktrack entries the new ones replace.
    pub replaced: Replaced,
    /// The file's own part (everything but hooktrack's), in the form the format's
    /// read-back derives from the written file: the read-back fails unless they match.
    pub outside: String,
}

/// What an uninstall would do to a file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// No hooktrack entries: the file is not rewritten.
    Nothing,
    /// The entries belong to another generation: left in place.
    KeptOther { generation: Option<u64> },
    /// Write `text`; the entries removed were of `generation`.
    Removed {
        text: String,
        generation: Option<u64>,
    },
    /// The file is wholly hooktrack's (a plugin): delete it.
    Delete { generation: Option<u64> },
}

/// The new text of `config` (whose text is `before`, empty if it does not exist), with
/// hooktrack's entries for `observer` in place of any earlier ones.
pub(crate) fn edit(
    agent: Agent,
    config: &Path,
    before: &str,
    observer: &Observer,
) -> Result<Edit, InstallError> {
    match agent.config().format {
        ConfigFormat::TomlHooks => toml_block::edit(agent, config, before, observer),
        ConfigFormat::JsonHooks => json_hooks::edit(agent, config, before, observer),
        ConfigFormat::Plugin => plugin::edit(agent, config, before, observer),
        ConfigFormat::HookFiles => hook_files::edit(agent, config, before, observer),
    }
}

/// Checks the text read back after an install: the agent reads it as intended, the
/// entries are exactly `observer`'s, and the rest is `outside`.
pub(crate) fn read_back(
    agent: Agent,
    config: &Path,
    back: &str,
    observer: &Observer,
    outside: &str,
) -> Result<Validation, Violation> {
    match agent.config().format {
        ConfigFormat::TomlHooks => toml_block::read_back(agent, back, observer, outside),
        ConfigFormat::JsonHooks => json_hooks::read_back(agent, back, observer, outside),
        ConfigFormat::Plugin => plugin::read_back(agent, back, observer, outside),
        ConfigFormat::HookFiles => hook_files::read_back(agent, config, back, observer),
    }
}

/// Which of hooktrack's entries an uninstall takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    /// All of them.
    Any,
    /// The environment-routed ones (`setup`'s). Only Kimi's TOML file can hold a launch's
    /// generation-scoped block beside them; in the other formats these are all of them.
    Routed,
    /// Those of one generation (a launch's cleanup).
    Generation(u64),
}

impl Which {
    /// The generation filter of the formats that hold one kind of entries at a time.
    fn generation(self) -> Option<u64> {
        match self {
            Which::Any | Which::Routed => None,
            Which::Generation(g) => Some(g),
        }
    }
}

/// Removes hooktrack's entries (those `which` names). Needs no agent: removal only
/// depends on how the format marks hooktrack's entries.
pub(crate) fn remove(
    format: ConfigFormat,
    config: &Path,
    text: &str,
    which: Which,
) -> Result<Removal, InstallError> {
    match format {
        ConfigFormat::TomlHooks => toml_block::remove(config, text, which),
        ConfigFormat::JsonHooks => json_hooks::remove(config, text, which.generation()),
        ConfigFormat::Plugin => Ok(plugin::remove(text, which.generation())),
        ConfigFormat::HookFiles => Ok(hook_files::remove(text, which.generation())),
    }
}

/// Checks `config` (`text` is `None` when it does not exist) as the agent reads it.
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
    version: Option<&str>,
) -> Result<Validation, InstallError> {
    match agent.config().format {
        ConfigFormat::TomlHooks => toml_block::check(agent, config, text),
        ConfigFormat::JsonHooks => json_hooks::check(agent, config, text, version),
        ConfigFormat::Plugin => plugin::check(agent, config, text),
        ConfigFormat::HookFiles => {
            hook_files::check(agent, config, text, text.map(|_| super::file::mode(config)))
        }
    }
}
