//! A file hooktrack writes whole and owns by a marker it wrote (an OpenCode / Kilo plugin,
//! a Pi extension, a Cline hook file): the rules every such file follows, whatever its
//! marker looks like. `marked` is what the file's marker says, `None` when it has none
//! (the file is the user's), else the generation it names (`None` for a routed one).

use std::path::Path;

use super::format::{Edit, Removal};
use super::{InstallError, Replaced};

/// The install edit: `text` in place of what is there, which is replaced only when it is
/// hooktrack's (or empty): a file the user wrote at hooktrack's path is theirs.
pub(crate) fn edit(
    config: &Path,
    before: &str,
    marked: Option<Option<u64>>,
    text: String,
) -> Result<Edit, InstallError> {
    let replaced = match marked {
        Some(generation) => Replaced::entries_of(generation),
        None if before.is_empty() => Replaced::Nothing,
        None => {
            return Err(InstallError::NotOurs {
                path: config.to_owned(),
            });
        }
    };
    Ok(Edit {
        text,
        replaced,
        outside: String::new(),
    })
}

/// Removes the file (with `generation`, only one of that generation); one without
/// hooktrack's marker is never touched.
pub(crate) fn remove(marked: Option<Option<u64>>, generation: Option<u64>) -> Removal {
    let Some(marked) = marked else {
        return Removal::Nothing;
    };
    if generation.is_some() && marked != generation {
        return Removal::KeptOther { generation: marked };
    }
    Removal::Delete { generation: marked }
}
