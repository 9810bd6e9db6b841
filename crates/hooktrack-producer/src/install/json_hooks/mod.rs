//! The Claude-style JSON hooks table shared by Claude Code, Codex CLI and Gemini CLI:
//!
//! ```json
//! {"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
//! ```
//!
//! JSON carries no comments, so there is no marker block: hooktrack's entries are the ones
//! whose command is `'<emitter>' emit --observer hooktrack ...` (see
//! [`super::command::is_hooktrack_command`]). The file is read as the agent reads it with
//! serde_json (`edit.rs`), but edited as text (`splice.rs` over the spans of `tree.rs`):
//! hooktrack's entries are cut out, one matcher group per event
//! (`{"matcher": "", "hooks": [entry]}`) is appended, laid out as the file around it
//! (`layout.rs`), and every other byte stays as the user wrote it. The read-back checks the
//! file as the agent reads it (`validate.rs`) and that, without hooktrack's entries, it is
//! byte for byte the text the install started from (less an empty `hooks` object or
//! event list the install filled: the removal takes that out with the last entry).

mod edit;
mod layout;
mod splice;
mod tree;
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
    let old = Settings::parse(before)
        .map_err(refused(config))?
        .our_generations();
    let (outside, _) = splice::strip(before, |_| true).map_err(refused(config))?;
    // A blank file is an empty object: what is left of it once the entries go again.
    let outside = if outside.trim().is_empty() {
        "{}\n".to_owned()
    } else {
        outside
    };
    let text = splice::add(&outside, agent, observer).map_err(refused(config))?;
    // What the read-back derives from the written file: the text without hooktrack's
    // entries and whatever they were the last of. That is `outside` itself, but for an
    // empty `hooks` object or event list the install filled (`{"hooks": {}}`): the
    // removal takes it out with hooktrack's last entry in it, as it cannot tell it from
    // one the install made, and `{ }` comes back as `{}`.
    let (kept, _) = splice::strip(&text, |_| true).map_err(refused(config))?;
    // The edit itself is checked here, before anything is written: what it keeps of the
    // user's text is that text, byte for byte, or (only where the user had empty
    // containers the install filled) the same settings less those containers.
    if kept != outside && !(has_empty_hooks(&outside) && same_but_empty_hooks(&kept, &outside)) {
        return Err(refused(config)(Refusal::Unplaced));
    }
    let outside = kept;
    let replaced = if old.is_empty() {
        Replaced::Nothing
    } else {
        Replaced::entries_of(old.into_iter().flatten().max())
    };
    Ok(Edit {
        text,
        replaced,
        outside,
    })
}

/// The settings without empty event lists in `hooks`, and without `hooks` if that leaves
/// it empty: what an install followed by a removal gives back of a user's empty ones.
fn without_empty_hooks(text: &str) -> Option<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_str(text).ok()?;
    let root = value.as_object_mut()?;
    if let Some(hooks) = root.get_mut("hooks").and_then(|h| h.as_object_mut()) {
        hooks.retain(|_, list| list.as_array().is_none_or(|l| !l.is_empty()));
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    Some(value)
}

/// Whether `text` holds an empty container the install fills: an empty `hooks` object or
/// event list, or an empty object (`{ }` comes back from a removal as `{}`).
fn has_empty_hooks(text: &str) -> bool {
    let plain: Option<serde_json::Value> = serde_json::from_str(text).ok();
    plain
        .as_ref()
        .and_then(|v| v.as_object())
        .is_some_and(|o| o.is_empty())
        || (plain.is_some() && plain != without_empty_hooks(text))
}

fn same_but_empty_hooks(a: &str, b: &str) -> bool {
    let a = without_empty_hooks(a);
    a.is_some() && a == without_empty_hooks(b)
}

/// The read-back: the file as the agent reads it, then, without hooktrack's entries, the
/// very text the install wrote without them ([`edit`]'s `outside`).
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
    let (back, _) = splice::strip(back, |_| true)?;
    if back != outside {
        return Err(Violation::new(
            "the settings outside hooktrack's entries changed",
        ));
    }
    Ok(v)
}

/// Removes hooktrack's entries (with `generation`, only those) and whatever matcher
/// group, event list or `hooks` object their removal left empty; a file left as `{}`
/// stays. Every other byte stays as it is.
pub(crate) fn remove(
    config: &Path,
    text: &str,
    generation: Option<u64>,
) -> Result<Removal, InstallError> {
    let found = Settings::parse(text)
        .map_err(refused(config))?
        .our_generations();
    if found.is_empty() {
        return Ok(Removal::Nothing);
    }
    let select = |g: Option<u64>| generation.is_none() || g == generation;
    if !found.iter().any(|g| select(*g)) {
        return Ok(Removal::KeptOther {
            generation: found.into_iter().flatten().max(),
        });
    }
    let (text, _) = splice::strip(text, select).map_err(refused(config))?;
    Ok(Removal::Removed {
        text,
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
