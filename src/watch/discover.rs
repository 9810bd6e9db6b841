//! Stores that appear while a [`Watch`](super::Watch) runs: the default stores (every
//! agent's per-user store under `$XDG_STATE_HOME/hooktrack/agents/`), the stores of
//! `hooktrack session` (under `$XDG_STATE_HOME/hooktrack/sessions/<root>/`), and the
//! paths a glob pattern names. Each look lists the folders again; a folder missing now
//! is looked for again at the next look, never an error. The sessions inside a store
//! (one per `session_id`) are the tracker's to find.

use std::collections::HashSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use hooktrack_core::store::{OBSERVATION_DIR, StorePaths};

/// At most this many stores are followed at once (one per agent is what the hooks make;
/// a `hooktrack session` makes one per run, and is let go once its sessions are dropped:
/// [`Discover::release`]).
pub const MAX_STORES: usize = 64;

/// Where stores appear, and the ones already handed out.
#[derive(Default)]
pub struct Discover {
    /// Folders whose every subfolder is a store (the default stores).
    store_folders: Vec<PathBuf>,
    /// Folders whose every subfolder is a session root (`hooktrack session`'s).
    root_folders: Vec<PathBuf>,
    /// Glob patterns, each path it matches named as the user would.
    patterns: Vec<PathBuf>,
    /// Everything handed out (never again, even once released).
    known: HashSet<PathBuf>,
    /// What the first look saw, handed out then or later: history, not news.
    at_start: HashSet<PathBuf>,
    looked: bool,
    /// Handed out and not released: what [`MAX_STORES`] bounds.
    live: usize,
}

/// A store found, and whether it was there at the first look.
#[derive(Debug, PartialEq, Eq)]
pub struct Discovered {
    pub found: Found,
    pub at_start: bool,
    /// A `hooktrack session` store: one run's, let go once its sessions are dropped.
    pub one_run: bool,
}

/// A store found: how it is shown, where it is, and (for a pattern's match) the path
/// to resolve as if the user had named it.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Store { name: String, paths: StorePaths },
    Path(PathBuf),
}

impl Discover {
    pub fn stores_in(&mut self, folder: PathBuf) {
        self.store_folders.push(folder);
    }

    pub fn session_roots_in(&mut self, folder: PathBuf) {
        self.root_folders.push(folder);
    }

    pub fn pattern(&mut self, pattern: PathBuf) {
        self.patterns.push(pattern);
    }

    /// A store handed out is no longer followed: room for another.
    pub fn release(&mut self) {
        self.live = self.live.saturating_sub(1);
    }

    /// The stores not handed out before, at most [`MAX_STORES`] followed in all.
    pub fn look(&mut self) -> Vec<Discovered> {
        let mut found = Vec::new();
        for folder in &self.store_folders {
            for (name, dir) in subfolders(folder) {
                if !self.known.contains(&dir) {
                    found.push((
                        dir.clone(),
                        Found::Store {
                            name,
                            paths: StorePaths::in_dir(&dir),
                        },
                        false,
                    ));
                }
            }
        }
        for folder in &self.root_folders {
            // Newest first: a session root's name starts with its start time.
            let mut roots = subfolders(folder);
            roots.reverse();
            for (root_name, root) in roots {
                // A root whose store is not made yet is looked at again next time.
                for (provider, dir) in subfolders(&root.join(OBSERVATION_DIR)) {
                    if !self.known.contains(&dir) {
                        found.push((
                            dir,
                            Found::Store {
                                name: format!("session {root_name} {provider}"),
                                paths: StorePaths::for_provider(&root, &provider),
                            },
                            true,
                        ));
                    }
                }
            }
        }
        for pattern in &self.patterns {
            for path in glob(pattern) {
                if !self.known.contains(&path) {
                    found.push((path.clone(), Found::Path(path), false));
                }
            }
        }
        if !self.looked {
            self.looked = true;
            self.at_start = found.iter().map(|(key, _, _)| key.clone()).collect();
        }
        found.truncate(MAX_STORES.saturating_sub(self.live));
        self.live += found.len();
        found
            .into_iter()
            .map(|(key, found, one_run)| {
                let at_start = self.at_start.contains(&key);
                self.known.insert(key);
                Discovered {
                    found,
                    at_start,
                    one_run,
                }
            })
            .collect()
    }
}

/// The subfolders of `folder`, sorted by name; none when it cannot be listed (not made
/// yet). Directories only, never a symlink: stores are the user's own folders.
fn subfolders(folder: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    found.sort();
    found
}

/// True for a path `watch` takes as a pattern: one with `*`, `?` or `[` in it.
pub fn is_pattern(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '['])
}

/// The paths matching `pattern` now, sorted: each component with `*` (any run of
/// characters) or `?` (one character) matched against a folder's entries, `[` taken
/// literally; the other components as they are.
pub fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut current = vec![PathBuf::new()];
    for component in pattern.components() {
        let part = component.as_os_str().to_string_lossy();
        let wild = matches!(component, Component::Normal(_)) && part.contains(['*', '?']);
        let mut next = Vec::new();
        for base in &current {
            if !wild {
                next.push(base.join(component));
                continue;
            }
            let dir = if base.as_os_str().is_empty() {
                Path::new(".")
            } else {
                base.as_path()
            };
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                // As a shell does: `*` does not match a hidden name.
                .filter(|n| !n.starts_with('.') || part.starts_with('.'))
                .filter(|n| wildcard(&part, n))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| base.join(n)));
        }
        current = next;
        if current.len() > MAX_STORES * 4 {
            current.truncate(MAX_STORES * 4);
        }
    }
    current.retain(|p| p.exists());
    current
}

/// `*` matches any run of characters, `?` one; everything else itself.
fn wildcard(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // The classic two-pointer match with one backtrack point for the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_handed_out_once_and_new_ones_later() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("agents");
        let mut d = Discover::default();
        d.stores_in(root.clone());
        assert!(d.look().is_empty(), "no folder yet");
        fs::create_dir_all(root.join("claude")).unwrap();
        fs::write(root.join("stray-file"), "").unwrap();
        let store = |name: &str| Discovered {
            found: Found::Store {
                name: name.to_owned(),
                paths: StorePaths::in_dir(root.join(name)),
            },
            at_start: false,
            one_run: false,
        };
        assert_eq!(d.look(), vec![store("claude")]);
        fs::create_dir_all(root.join("codex")).unwrap();
        assert_eq!(d.look(), vec![store("codex")]);
        assert!(d.look().is_empty());
    }

    #[test]
    fn what_the_first_look_saw_stays_history_and_released_stores_make_room() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("sessions");
        for n in 0..MAX_STORES + 2 {
            fs::create_dir_all(
                sessions
                    .join(format!("r{n:03}"))
                    .join(OBSERVATION_DIR)
                    .join("kimi"),
            )
            .unwrap();
        }
        let mut d = Discover::default();
        d.session_roots_in(sessions.clone());
        let first = d.look();
        assert_eq!(first.len(), MAX_STORES);
        assert!(first.iter().all(|f| f.at_start && f.one_run));
        // Newest (last by name) first.
        assert!(matches!(&first[0].found, Found::Store { name, .. } if name.contains("r065")));
        assert!(d.look().is_empty(), "full");
        d.release();
        let later = d.look();
        assert_eq!(later.len(), 1);
        assert!(later[0].at_start, "there at the start: history");
        fs::create_dir_all(sessions.join("r999").join(OBSERVATION_DIR).join("kimi")).unwrap();
        d.release();
        let new = d.look();
        assert_eq!(new.len(), 1);
        assert!(!new[0].at_start, "made later: news");
    }

    #[test]
    fn a_session_root_is_handed_out_once_its_store_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("sessions");
        let mut d = Discover::default();
        d.session_roots_in(sessions.clone());
        let root = sessions.join("20261205T080000000Z-42");
        fs::create_dir_all(&root).unwrap();
        assert!(d.look().is_empty(), "no store in the root yet");
        fs::create_dir_all(root.join(OBSERVATION_DIR).join("kimi")).unwrap();
        assert_eq!(
            d.look(),
            vec![Discovered {
                found: Found::Store {
                    name: "session 20261205T080000000Z-42 kimi".to_owned(),
                    paths: StorePaths::for_provider(&root, "kimi"),
                },
                at_start: false,
                one_run: true,
            }]
        );
        assert!(d.look().is_empty());
    }

    #[test]
    fn a_pattern_finds_its_matches_now_and_later() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        fs::create_dir_all(base.join("run-1")).unwrap();
        fs::create_dir_all(base.join("other")).unwrap();
        let mut d = Discover::default();
        let pattern = base.join("run-*");
        assert!(is_pattern(&pattern));
        d.pattern(pattern);
        let path = |p: PathBuf, at_start| Discovered {
            found: Found::Path(p),
            at_start,
            one_run: false,
        };
        assert_eq!(d.look(), vec![path(base.join("run-1"), true)]);
        fs::create_dir_all(base.join("run-2")).unwrap();
        assert_eq!(d.look(), vec![path(base.join("run-2"), false)]);
        assert!(d.look().is_empty());
    }

    #[test]
    fn wildcards_match_like_a_shells() {
        assert!(wildcard("*", "abc"));
        assert!(wildcard("a*c", "abbbc"));
        assert!(wildcard("a?c", "abc"));
        assert!(!wildcard("a?c", "abbc"));
        assert!(wildcard("*.ndjson", "events.ndjson"));
        assert!(!wildcard("*.ndjson", "events.ndjson.1"));
        assert!(wildcard("s*-*", "s1-2"));
    }
}
