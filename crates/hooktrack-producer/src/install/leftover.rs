//! A launch's generation-scoped block (Kimi Code's `config.toml`, which belongs to each
//! launch) that outlived its launch: `kill -9` of `hooktrack session` runs no cleanup, so
//! the block stays and its hooks post to a collector that is gone. Its commands name the
//! launch's store (`--dir`); a store whose collector is not alive
//! ([`collector_alive`]) had its launch end, and
//! the block is removed, with the store's own leftovers.

use std::fmt;
use std::path::{Path, PathBuf};

use hooktrack_core::agent::{Agent, ConfigFormat};

use super::{InstallError, ReadOnly, Uninstalled, file, toml_block, uninstall};
use crate::store::StorePaths;
use crate::store::leftover::{DeadCollector, clean_dead_collector, collector_alive};

/// A dead launch's block, removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadBlock {
    pub config: PathBuf,
    pub generation: Option<u64>,
    /// The store its commands named.
    pub store: PathBuf,
    /// That store's collector leftovers, when there were any.
    pub collector: Option<DeadCollector>,
}

impl fmt::Display for DeadBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "removed the hooktrack block")?;
        if let Some(g) = self.generation {
            write!(f, " (generation {g})")?;
        }
        write!(
            f,
            " of a session that is gone (its collector for {} no longer runs) from {}",
            self.store.display(),
            self.config.display()
        )?;
        if let Some(collector) = &self.collector {
            write!(f, "; {collector}")?;
        }
        Ok(())
    }
}

/// Removes the generation-scoped block of `agent`'s `config` when the launch that wrote
/// it is gone. `None` for an agent whose config holds no such block (a JSON hooks file:
/// its launch entries carry the URL, and the next launch replaces them), a block whose
/// launch lives, or one that names no store.
pub fn clean_dead_launch_block(
    config: &Path,
    agent: Agent,
) -> Result<Option<DeadBlock>, InstallError> {
    let format = agent.config().format;
    if format != ConfigFormat::TomlHooks {
        return Ok(None);
    }
    let config = file::resolve(config);
    let Some(text) = file::read_text(&config)? else {
        return Ok(None);
    };
    let Ok(blocks) = toml_block::find_blocks(&text) else {
        // Broken markers are check's to report; nothing is removed by a guess.
        return Ok(None);
    };
    let Some(block) = blocks.scoped else {
        return Ok(None);
    };
    let Some(dir) = store_named(&text[block.start..block.end]) else {
        return Ok(None);
    };
    let store = StorePaths::in_dir(&dir);
    if collector_alive(&store) {
        return Ok(None);
    }
    let collector = clean_dead_collector(&store).ok().flatten();
    match uninstall(&config, format, block.generation, ReadOnly::Refuse)? {
        Uninstalled::Removed { generation } => Ok(Some(DeadBlock {
            config,
            generation,
            store: dir,
            collector,
        })),
        Uninstalled::NoBlock | Uninstalled::NoFile | Uninstalled::KeptOther { .. } => Ok(None),
    }
}

/// The store directory the block's first command names (`--dir '...'`, single-quoted as
/// the installer writes it, inside a TOML string).
fn store_named(block: &str) -> Option<PathBuf> {
    let table: toml::Table = toml::from_str(block).ok()?;
    let command = table
        .get("hooks")?
        .as_array()?
        .first()?
        .get("command")?
        .as_str()?;
    let (_, mut rest) = command.split_once(" --dir '")?;
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(more) => {
                word.push('\'');
                rest = more;
            }
            None => break,
        }
    }
    let dir = PathBuf::from(word);
    dir.is_absolute().then_some(dir)
}

#[cfg(test)]
mod tests {

    /// An agent whose hooks are a TOML block (the block's shape is what these tests read).
    fn toml_agent() -> Agent {
        Agent::ALL
            .into_iter()
            .find(|a| a.config().format == ConfigFormat::TomlHooks)
            .expect("an agent with TOML hooks")
    }

    use super::*;
    use crate::install::{Destination, Observer, Route};

    #[test]
    fn the_store_is_read_back_from_the_block_as_written() {
        let dir = PathBuf::from("/tmp/it's a store/hook-observation/kimi");
        let observer = Observer {
            emitter: PathBuf::from("/bin/hooktrack"),
            route: Route::Argv(Destination {
                url: "http://127.0.0.1:1/e".to_owned(),
                dir: dir.clone(),
                generation: 2,
            }),
            agent_version: None,
        };
        let block = toml_block::render_block(toml_agent(), &observer, false);
        assert_eq!(store_named(&block), Some(dir));
        assert_eq!(
            store_named("[[hooks]]\ncommand = \"x --dir 'relative'\"\n"),
            None
        );
    }

    #[test]
    fn a_block_whose_collector_is_gone_is_removed_and_the_users_bytes_kept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("store");
        let store = StorePaths::in_dir(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let observer = Observer {
            emitter: PathBuf::from("/bin/hooktrack"),
            route: Route::Argv(Destination {
                url: "http://127.0.0.1:1/e".to_owned(),
                dir: dir.clone(),
                generation: 5,
            }),
            agent_version: None,
        };
        let user = "default_model = \"mock\"\n";
        let config = tmp.path().join("config.toml");
        let with_block = toml_block::merge_block(toml_agent(), &observer, user, None);
        std::fs::write(&config, &with_block).expect("config");
        // Alive: its lock is held.
        let held = crate::store::lock_collector(&store).expect("lock");
        assert_eq!(
            clean_dead_launch_block(&config, toml_agent()).expect("clean"),
            None
        );
        assert_eq!(std::fs::read_to_string(&config).expect("read"), with_block);
        drop(held);
        let dead = clean_dead_launch_block(&config, toml_agent())
            .expect("clean")
            .expect("removed");
        assert_eq!((dead.generation, &dead.store), (Some(5), &dir));
        assert_eq!(std::fs::read_to_string(&config).expect("read"), user);
        assert!(dead.to_string().contains("(generation 5)"), "{dead}");
    }
}
