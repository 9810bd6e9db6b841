//! The Claude-style JSON hooks table shared by Claude Code, Codex CLI and Gemini CLI:
//!
//! ```json
//! {"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
//! ```
//!
//! JSON carries no comments, so there is no marker block: hooktrack's entries are the ones
//! whose command is `'<emitter>' emit --observer hooktrack ...` (see
//! [`super::command::is_hooktrack_command`]). The file is parsed with serde_json
//! (`preserve_order`), so every key keeps its place; hooktrack's entries are removed, one
//! matcher group per event (`{"matcher": "", "hooks": [entry]}`) is appended
//! (`edit.rs`), and the file is written back in its own layout (`layout.rs`).
//! The read-back checks the file as the agent reads it (`validate.rs`).

mod edit;
mod layout;
mod validate;

use std::path::Path;

use hooktrack_core::agent::Agent;

pub use self::edit::{MATCH_ALL, Settings, entry};
pub use self::validate::validate;
use super::format::{Edit, Removal};
use super::{InstallError, Observer, Refusal, Replaced, Validation, Violation};

fn refused(config: &Path) -> impl Fn(Refusal) -> InstallError + '_ {
    move |refusal| InstallError::Refused {
        path: config.to_owned(),
        refusal,
    }
}

/// The install edit: every hooktrack entry out, one group per event in.
pub(crate) fn edit(
    agent: Agent,
    config: &Path,
    before: &str,
    observer: &Observer,
) -> Result<Edit, InstallError> {
    let mut settings = Settings::parse(before).map_err(refused(config))?;
    let old = settings.our_generations();
    settings.strip(|_| true);
    settings.add(agent, observer).map_err(refused(config))?;
    let text = settings.render().map_err(refused(config))?;
    // What the user's part must look like once hooktrack's entries are taken out again.
    settings.strip(|_| true);
    let replaced = if old.is_empty() {
        Replaced::Nothing
    } else {
        Replaced::entries_of(old.into_iter().flatten().max())
    };
    Ok(Edit {
        text,
        replaced,
        outside: settings.canonical(),
    })
}

/// The read-back: the file as the agent reads it, then the user's part unchanged.
pub(crate) fn read_back(
    agent: Agent,
    back: &str,
    observer: &Observer,
    outside: &str,
) -> Result<Validation, Violation> {
    let v = validate(
        back,
        agent,
        Some(observer),
        observer.agent_version.as_deref(),
    )?;
    let mut back = Settings::parse(back)?;
    back.strip(|_| true);
    if back.canonical() != outside {
        return Err(Violation::new(
            "the settings outside hooktrack's entries changed",
        ));
    }
    Ok(v)
}

/// Removes hooktrack's entries (with `generation`, only those) and whatever matcher
/// group, event list or `hooks` object their removal left empty; a file left as `{}`
/// stays.
pub(crate) fn remove(
    config: &Path,
    text: &str,
    generation: Option<u64>,
) -> Result<Removal, InstallError> {
    let mut settings = Settings::parse(text).map_err(refused(config))?;
    let found = settings.our_generations();
    if found.is_empty() {
        return Ok(Removal::Nothing);
    }
    let select = |g: Option<u64>| generation.is_none() || g == generation;
    if !found.iter().any(|g| select(*g)) {
        return Ok(Removal::KeptOther {
            generation: found.into_iter().flatten().max(),
        });
    }
    settings.strip(select);
    Ok(Removal::Removed {
        text: settings.render().map_err(refused(config))?,
        generation: generation.or_else(|| found.into_iter().flatten().max()),
    })
}

/// The file as the agent CLI reads it, and a complete, well-formed set of hooktrack
/// entries. No file or no entry is an error.
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
    version: Option<&str>,
) -> Result<Validation, InstallError> {
    let not_installed = |reason| InstallError::NotInstalled {
        path: config.to_owned(),
        reason,
        install: crate::install::own_side::install_command(agent),
    };
    let Some(text) = text else {
        return Err(not_installed("the file does not exist"));
    };
    let validation =
        validate(text, agent, None, version).map_err(|violation| InstallError::Invalid {
            path: config.to_owned(),
            violation,
        })?;
    if validation.ours == 0 {
        return Err(not_installed("it holds no hooktrack entry"));
    }
    Ok(validation)
}

#[cfg(test)]
mod tests;
