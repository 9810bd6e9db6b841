//! Where a [`Place`] the tracker asks for is on disk: the one lookup replay and live both
//! use, with the core's limits ([`MAX_LISTED`]), so they cannot find different files.
//!
//! [`Place`]: hooktrack_core::follow::Place

use std::fs;
use std::path::{Path, PathBuf};

use hooktrack_core::agents::{SessionFile, SessionLayout};
use hooktrack_core::follow::MAX_LISTED;

/// A session's file under `root`, which is the agent's home (live: its
/// `<home>/<dir>/[<workspace>/]<id>/<file>`), a directory holding the agent's `<dir>` tree
/// or that tree's contents (a recording moved from another machine, `--transcripts DIR`),
/// or holding the session's directory itself: `root/<id>/<file>`,
/// `root/<dir>/<id>/<file>` (no workspace level), or `root/<workspace>/<id>/<file>`,
/// `root/<dir>/<workspace>/<id>/<file>`. Bounded: at most [`MAX_LISTED`] entries of each
/// directory listed. `None` until it exists.
pub fn find_session_file(root: &Path, file: &SessionFile, id: &str) -> Option<PathBuf> {
    let direct = root.join(id).join(file.file);
    if direct.is_file() {
        return Some(direct);
    }
    if file.layout == SessionLayout::Flat {
        return Some(root.join(file.dir).join(id).join(file.file)).filter(|p| p.is_file());
    }
    [root.to_path_buf(), root.join(file.dir)]
        .iter()
        .find_map(|dir| {
            fs::read_dir(dir)
                .ok()?
                .take(MAX_LISTED)
                .filter_map(Result::ok)
                .map(|entry| entry.path().join(id).join(file.file))
                .find(|path| path.is_file())
        })
}
