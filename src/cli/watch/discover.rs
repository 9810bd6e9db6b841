//! `watch` with no path: every default store under
//! `$XDG_STATE_HOME/hooktrack/agents/` (where agents started without hooktrack deliver),
//! looked for again while watching so a store that appears later is followed too. The
//! sessions inside a store (one per `session_id`) are the tracker's to find.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the folder is listed again.
pub const EVERY: Duration = Duration::from_secs(1);

/// At most this many stores are followed (one per agent is what the hooks make).
const MAX_STORES: usize = 64;

/// The default stores' folder and the stores already handed out.
pub struct Discover {
    root: PathBuf,
    known: HashSet<PathBuf>,
    next: Instant,
}

impl Discover {
    pub fn new(root: PathBuf) -> Self {
        Discover {
            root,
            known: HashSet::new(),
            next: Instant::now(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The stores not seen before, when the folder is due for another look; each as its
    /// name (the agent's store name) and directory.
    pub fn new_stores(&mut self) -> Vec<(String, PathBuf)> {
        if Instant::now() < self.next {
            return Vec::new();
        }
        self.next = Instant::now() + EVERY;
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut found: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            // Directories only, never a symlink: stores are the user's own folders.
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .filter(|(_, dir)| !self.known.contains(dir))
            .collect();
        found.sort();
        found.truncate(MAX_STORES.saturating_sub(self.known.len()));
        for (_, dir) in &found {
            self.known.insert(dir.clone());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_handed_out_once_and_new_ones_later() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("agents");
        let mut d = Discover::new(root.clone());
        assert!(d.new_stores().is_empty(), "no folder yet");
        fs::create_dir_all(root.join("claude")).unwrap();
        fs::write(root.join("stray-file"), "").unwrap();
        d.next = Instant::now();
        let found = d.new_stores();
        assert_eq!(found, vec![("claude".to_owned(), root.join("claude"))]);
        fs::create_dir_all(root.join("codex")).unwrap();
        d.next = Instant::now();
        assert_eq!(
            d.new_stores(),
            vec![("codex".to_owned(), root.join("codex"))]
        );
        d.next = Instant::now();
        assert!(d.new_stores().is_empty());
    }
}
