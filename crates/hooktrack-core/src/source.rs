//! Which signal a fact came from: the hooks, the transcript the hooks name, the agent
//! process, the supervisor's terminal reading (contract section 9), or the agent's pane
//! (section 12).

use serde::Serialize;

/// The one source type: events, turn records, posture provenance and the terminal merge
/// all name their origin with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Source {
    /// A hook payload (a row of `events.ndjson`).
    #[default]
    Hook,
    /// An entry of the transcript a hook payload names (`transcript_path`).
    Transcript,
    /// The agent process: it ended.
    Process,
    /// The supervisor's reading of the agent's terminal.
    Terminal,
    /// The agent's tmux pane, read while it waits on the user: the dialog it drew is gone
    /// (contract section 12). Only ever ends a blocked window.
    Screen,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Hook => "hook",
            Source::Transcript => "transcript",
            Source::Process => "process",
            Source::Terminal => "terminal",
            Source::Screen => "screen",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
