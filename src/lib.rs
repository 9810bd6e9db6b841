//! hooktrack: trustworthy turn state from AI coding agents' lifecycle hooks.
//!
//! This crate is the API a supervisor uses; everything here is re-exported from the
//! workspace's member crates, which are implementation detail:
//!
//! - **Replay a log**: [`Pipeline`] takes lines of `events.ndjson` and returns, per line,
//!   a [`Fed`] (a skipped line, or a [`Step`] with the event, its notes and the turns it
//!   ended); [`Pipeline::posture`] is what the agent is doing now. [`replay`] writes the
//!   text timeline, JSON or NDJSON of a whole log.
//! - **Follow a session live**: [`Session`] follows one store (tailer, pipeline and the
//!   channel state machine behind `poll(now)`); [`Hub`] follows many with one file
//!   watcher and one thread. Time is always an argument ([`wall_clock`] reads it).
//! - **Combine with the terminal**: [`merge::merge`] combines a hook posture with what the
//!   supervisor reads off the agent's pane.
//! - **The store's records**: [`StorePaths`] (where a session's files are),
//!   [`CollectorRecord`] and [`ChannelRecord`] (`collector.json`, `channel.json`).
//! - **Agents**: [`Agent`] names every agent CLI hooktrack understands; its
//!   [`descriptor`](Agent::descriptor) ([`agents::Descriptor`]) is everything hooktrack
//!   knows about it.
//! - **Follow many stores**: [`Watch`] is what `hooktrack watch` does (discovery of new
//!   stores and sessions, drop policy, agent ends written to the store, outputs: text,
//!   ndjson, tmux options, commands and notifications per transition).
//! - **Start an agent under observation**: [`Launch`] is what `hooktrack session` does
//!   (collector, observer, preflight, live tracking, cleanup); it runs the agent as its
//!   child ([`Launch::spawn`]: environment, signal forwarding, [`Launch::wait`], exit
//!   status), or follows one the supervisor starts elsewhere, e.g. in a tmux pane with
//!   [`Launch::env`] as `-e` options.
//!
//! ```
//! use hooktrack::{Fed, Pipeline, ProviderChoice, TurnResult};
//!
//! let mut pipeline = Pipeline::new(ProviderChoice::Auto);
//! let lines = [
//!     r#"{"hook_event_name":"SessionStart","session_id":"session_1","client_type":"kimi_code_cli","source":"startup"}"#,
//!     r#"{"hook_event_name":"UserPromptSubmit","session_id":"session_1","client_type":"kimi_code_cli","prompt":[{"type":"text","text":"hi"}],"is_steer":false}"#,
//!     r#"{"hook_event_name":"TurnStarted","session_id":"session_1","client_type":"kimi_code_cli","turn_id":1,"origin_kind":"user"}"#,
//!     r#"{"hook_event_name":"Stop","session_id":"session_1","client_type":"kimi_code_cli","stop_hook_active":false}"#,
//! ];
//! for (i, line) in lines.iter().enumerate() {
//!     if let Fed::Event(step) = pipeline.feed_line(i as u64 + 1, line.as_bytes()) {
//!         for turn in &step.outcome.closed {
//!             assert_eq!(turn.result, TurnResult::Success);
//!         }
//!     }
//! }
//! assert_eq!(pipeline.posture().last_turn.result, TurnResult::Success);
//! ```

#[cfg(feature = "fleet")]
pub mod fleet;
mod launch;
mod output;
pub mod safe_text;
pub mod transcripts;
pub mod watch;

pub use launch::{
    AgentExit, AgentStatus, FinishError, Finished, Installed, Launch, LaunchConfig, LaunchError,
    RunError, SignalForwarding, SpawnError, WaitError, default_session_root, find_program,
    prompt_at_launch,
};

// Following many stores, as `hooktrack watch` does.
pub use launch::default_sessions_folder;
pub use watch::{Watch, WatchConfig, WatchError, record_process_end};

pub use output::{
    Format, Options as ReplayOptions, ReplayError, Report, Transcripts, replay, replay_threaded,
    replay_with,
};

pub use hooktrack_core::agent::{Agent, ConfigFormat, ConfigLocation, UnknownAgent};
pub use hooktrack_core::channel::{ChannelConfig, ChannelStatus};
pub use hooktrack_core::correlate::{Outcome, TurnRecord};
pub use hooktrack_core::diagnostics::{Diag, Diagnostics, Note, error_chain};
pub use hooktrack_core::event::{Event, TurnId};
pub use hooktrack_core::pipeline::{Fed, Pipeline, Skip, Step};
pub use hooktrack_core::provider::{Detection, ProviderChoice};
pub use hooktrack_core::source::Source;
pub use hooktrack_core::store::{
    ChannelRecord, CollectorRecord, CollectorState, InstallRecord, PublishedState, RecordError,
    StorePaths,
};
pub use hooktrack_core::time::Timestamp;
pub use hooktrack_core::tracker::{Tracker, TrackerConfig};
pub use hooktrack_live::hub::{Hub, HubConfig, HubError, SessionId, wall_clock};
pub use hooktrack_live::locate::{LocateError, locate_store, resolve_store};
pub use hooktrack_live::session::{
    LineReport, Session, SessionConfig, SessionNotice, SessionUpdate, TmuxServer, Update,
};
pub use hooktrack_live::tail::Notice as TailNotice;
pub use hooktrack_producer::collect::CollectSummary;
pub use hooktrack_producer::install::preflight::Finding;
pub use posture::{ChannelState, Phase, Posture, Presence, TurnResult, Work};

/// Every part of a [`Posture`], what a supervisor reads after every event.
pub mod posture {
    pub use hooktrack_core::posture::*;
}

/// What hooktrack knows about each agent CLI: the parts of an [`Agent`]'s
/// [`Descriptor`](agents::Descriptor).
pub mod agents {
    pub use hooktrack_core::agents::*;
    pub use hooktrack_core::provider::{Capabilities, Dialogs, PermissionAnswer};
}

/// The canonical event vocabulary every agent's payloads are mapped into, and its parts.
pub mod event {
    pub use hooktrack_core::event::*;
}

/// The turn ledger: a [`TurnRecord`] per turn, its scope and origin,
/// and what one event ended ([`Outcome`]).
pub mod ledger {
    pub use hooktrack_core::correlate::{Origin, Outcome, Scope, TurnRecord};
}

/// What set each fact of a posture: source, event, line and time.
pub mod provenance {
    pub use hooktrack_core::provenance::*;
}

/// The one tracker replay and live both drive (session router, transcript merge, closed
/// turns and the ledger), for a supervisor that reads the files itself: its session
/// router ([`Sessions`](tracker::Sessions), one [`SessionPipeline`](tracker::SessionPipeline)
/// per agent session).
pub mod tracker {
    pub use hooktrack_core::sessions::{MAX_SESSIONS, SessionPipeline, Sessions};
    pub use hooktrack_core::tracker::*;
}

/// Reading a store's lines yourself, as [`Tracker::feed_hook`] and
/// [`Pipeline::feed_row`] take them: a byte stream into numbered lines
/// ([`LineReader`](read::LineReader), [`ReadLine`](read::ReadLine)), a line into a
/// [`Row`](read::Row) (its delivery facts and typed [`Payload`](read::Payload)).
pub mod read {
    pub use hooktrack_core::payload::{Payload, PromptText, Text, TurnIdField};
    pub use hooktrack_core::read::{LineReader, LineSplitter, ReadLine, SKIM_WINDOW};
    pub use hooktrack_core::row::{MAX_LINE_BYTES, Row, RowMeta, Via, parse_line, parse_read_line};
}

/// What the tracker asks its driver to read and watch, and the limits every driver reads
/// with (`Tracker::take_requests`), a pane's screen among them.
pub mod follow {
    pub use hooktrack_core::follow::*;
    pub use hooktrack_core::screen::SCREEN_READ_MS;
}

/// Following a file by offset: the tailer's notices and the checkpoint a follower resumes
/// from.
pub mod tail {
    pub use hooktrack_live::tail::{
        Checkpoint, CheckpointError, FileId, FirstLine, Mismatch, Notice, Prefix,
    };
}

/// The errors under the facade's own ([`LaunchError`], [`ReplayError`], ...) and the
/// reasons they carry, nameable for matching.
pub mod error {
    pub use hooktrack_core::row::LineError;
    pub use hooktrack_live::screen::ScreenError;
    pub use hooktrack_live::tail::TailError;
    pub use hooktrack_producer::collect::CollectError;
    pub use hooktrack_producer::http::UrlError;
    pub use hooktrack_producer::install::{InstallError, MarkerError, Refusal, Violation};
    pub use hooktrack_producer::store::StoreError;
    pub use hooktrack_producer::store::secure::Distrust;
    pub use hooktrack_producer::token::TokenError;
}

/// Combining the hook posture with facts the supervisor reads off the terminal.
pub mod merge {
    pub use hooktrack_core::merge::*;
}

// What the `hooktrack` binary's subcommands run (`collect`, `emit`, `install`, `setup`):
// the producer's edge, named here so that the binary uses only this facade.

/// The loopback collector a session's hooks deliver to (`hooktrack collect`).
pub mod collect {
    pub use hooktrack_producer::collect::{
        CollectConfig, CollectError, CollectSummary, Collector, Stopper,
    };
}

/// The hook command (`hooktrack emit`, `hooktrack-hook emit`) and the per-user default
/// store an agent started without hooktrack's environment delivers to.
pub mod emit {
    pub use hooktrack_core::delivery::{DEFAULT_PROVIDER, agent_named};
    pub use hooktrack_producer::emit::argv::{FLAGS, Flag, run};
    pub use hooktrack_producer::emit::default_store::{
        ROTATE_BYTES, STORES_DIR, default_store, state_dir, stores_root,
    };
}

/// Observer entries in the agents' configs: install, uninstall, check, and the preflight
/// (will the hooks fire).
pub mod install {
    pub use hooktrack_producer::install::detect::detect_member;
    pub use hooktrack_producer::install::plugin::VERSION as PLUGIN_VERSION;
    pub use hooktrack_producer::install::plugin::is_ours as is_our_plugin;
    pub use hooktrack_producer::install::{
        CheckReport, Destination, InstallError, InstallReport, Observer, ReadOnly, Replaced, Route,
        Uninstalled, Validation, check_for, holds_nothing, install, uninstall, uninstall_routed,
        version_of,
    };

    /// What a launch killed without its cleanup left in a config: its block, removed
    /// once its collector is gone.
    pub mod leftover {
        pub use hooktrack_producer::install::leftover::{DeadBlock, clean_dead_launch_block};
    }

    /// hooktrack's own side of a hook: the binary the entries run, the default store.
    pub mod own_side {
        pub use hooktrack_producer::install::own_side::{
            Entry, entries, install_command, own_side,
        };
    }

    /// Whether the hooks will fire: the descriptor's preflight facts asked of the disk
    /// and the agent.
    pub mod preflight {
        pub use hooktrack_producer::install::preflight::{
            Finding, Probe, doctor_disagreement, preflight,
        };
    }
}

/// The store on disk as its writers see it: private directories, atomic writes, the
/// environment variables that route a hook, and the clock rows are stamped with.
pub mod store {
    pub use hooktrack_core::store::DEFAULT_PROVIDER_DIR;
    pub use hooktrack_producer::store::secure::ensure_dir;
    pub use hooktrack_producer::store::{
        DIR_ENV, GENERATION_ENV, LAUNCH_BLOCK_ENV, MAX_BODY_BYTES, StoreError, TOKEN_ENV, URL_ENV,
        now, write_atomic, write_json_atomic,
    };

    /// What a collector killed without its cleanup left in its store.
    pub mod leftover {
        pub use hooktrack_producer::store::leftover::{
            DeadCollector, clean_dead_collector, collector_alive,
        };
    }
}
