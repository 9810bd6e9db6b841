//! What a [`Watch`](super::Watch) follows and says, and why it cannot.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use hooktrack_core::provider::ProviderChoice;
use hooktrack_live::hub::HubError;
use hooktrack_live::locate::LocateError;

use super::notify::Desktop;
use super::tmux::TmuxTarget;
use super::view::Output;

/// Where stores appear when a watch is given no path: the folder of the per-user default
/// stores and the folder of `hooktrack session`'s roots, both under `$XDG_STATE_HOME`
/// (else `~/.local/state`). `env` looks a variable up (`|name| std::env::var_os(name)`).
pub fn default_folders(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> (Option<PathBuf>, Option<PathBuf>) {
    (
        hooktrack_producer::emit::default_store::stores_root(&env),
        crate::launch::default_sessions_folder(&env),
    )
}

/// What to follow and where to say it.
#[derive(Clone, Debug)]
pub struct WatchConfig {
    /// Session roots, store directories, events files, or glob patterns of them (`*`,
    /// `?`), each shown under the name it is given as. A path whose store is not there
    /// yet is looked for again until it is.
    pub paths: Vec<PathBuf>,
    /// A folder whose every subfolder is a store (`$XDG_STATE_HOME/hooktrack/agents`:
    /// the default stores of agents started after `hooktrack setup`).
    pub default_stores: Option<PathBuf>,
    /// A folder whose every subfolder is a session root
    /// (`$XDG_STATE_HOME/hooktrack/sessions`: where `hooktrack session` keeps them).
    pub session_roots: Option<PathBuf>,
    /// Which agent wrote the logs.
    pub provider: ProviderChoice,
    /// How often every session is polled whatever the file watcher says.
    pub recheck: Duration,
    /// How long a session stays after its agent is gone before it is dropped.
    pub drop_after: Duration,
    /// Where the read position of the one session followed is kept.
    pub checkpoint: Option<PathBuf>,
    /// The tmux pane of a given path's sessions, when their rows do not say:
    /// `(path as given, pane)`.
    pub panes: Vec<(String, String)>,
    /// The view written to the output writer; `None`: nothing is written there.
    pub output: Option<Output>,
    /// Publish each session's posture as tmux user options on its pane.
    pub tmux: Option<TmuxTarget>,
    /// Run this shell command (`sh -c`) on each transition, the facts in its environment.
    pub on_change: Option<String>,
    /// Tell the person on each transition.
    pub notify: Option<Desktop>,
    /// How long an `on_change` command or a notification may run.
    pub command_timeout: Duration,
    /// Write an agent end seen from its pid to its store ([`record_process_end`](super::record_process_end)).
    pub record_process_ends: bool,
    /// Each agent's home, where the session file its payloads do not name is found (GitHub
    /// Copilot CLI's session log, which says a permission was answered; Kimi Code's): a
    /// store's sessions follow the home of the agent the store is named for.
    pub agent_homes: Vec<(hooktrack_core::agent::Agent, PathBuf)>,
    /// Publish every session's updates to a NATS JetStream fleet ([`crate::fleet`]).
    #[cfg(feature = "fleet")]
    pub publish: Option<crate::fleet::PublishConfig>,
    /// Show every host's sessions read from a NATS JetStream fleet ([`crate::fleet`])
    /// instead of stores (no path then): the same outputs, each session named
    /// `host:session`; a remote session sets no tmux option.
    #[cfg(feature = "fleet")]
    pub fleet: Option<crate::fleet::ViewConfig>,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self {
            paths: Vec::new(),
            default_stores: None,
            session_roots: None,
            provider: ProviderChoice::Auto,
            recheck: Duration::from_millis(500),
            drop_after: Duration::from_secs(60),
            checkpoint: None,
            panes: Vec::new(),
            output: None,
            tmux: None,
            on_change: None,
            notify: None,
            command_timeout: Duration::from_secs(10),
            record_process_ends: true,
            agent_homes: Vec::new(),
            #[cfg(feature = "fleet")]
            publish: None,
            #[cfg(feature = "fleet")]
            fleet: None,
        }
    }
}

/// Why a [`Watch`](super::Watch) cannot start or go on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WatchError {
    #[error("{}: no such file or directory", path.display())]
    NoSuchPath { path: PathBuf },
    #[error("cannot find the store of {}", path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: LocateError,
    },
    #[error("a checkpoint follows one session: give one path")]
    CheckpointNeedsOnePath,
    #[error("the pane {pane} is given for {path}, which is not one of the watched paths")]
    PaneNotWatched { path: String, pane: String },
    #[error("nothing to watch: no path, and no folder of default stores or sessions")]
    NothingToWatch,
    #[error("cannot start the {what}")]
    Worker {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot start following the stores")]
    Hub {
        #[source]
        source: HubError,
    },
    #[error("cannot write the output")]
    Write {
        #[source]
        source: io::Error,
    },
    #[error("watch one NATS server, or stores: not both")]
    ServerAndStores,
    #[cfg(feature = "fleet")]
    #[error("cannot publish to the fleet")]
    Publish {
        #[source]
        source: crate::fleet::FleetError,
    },
    #[cfg(feature = "fleet")]
    #[error("cannot read the fleet")]
    View {
        #[source]
        source: crate::fleet::FleetError,
    },
}
