//! The settings as the agent reads them: the file as an order-preserving JSON object
//! (serde_json with `preserve_order`, the last of duplicate keys kept, as the agents'
//! readers keep it), and which entries are hooktrack's. The file itself is edited in place
//! (`splice.rs`), never re-rendered from this.

use hooktrack_core::agent::Agent;
use serde_json::{Map, Value, json};

use crate::install::command::{command, generation_of, is_hooktrack_command};
use crate::install::{Observer, Refusal, facts};

/// The matcher of hooktrack's groups. All three CLIs read an empty matcher as "every
/// occurrence"; `*` means the same for matching, but Claude Code also takes a non-empty
/// `FileChanged` matcher as a list of file names to watch.
pub const MATCH_ALL: &str = "";

/// hooktrack's entry for one event: `{"type": "command", "command": ..., "timeout": ...}`.
pub fn entry(agent: Agent, observer: &Observer, event: &str) -> Value {
    json!({
        "type": "command",
        "command": command(agent, observer, event),
        "timeout": facts::timeout(agent, event),
    })
}

/// Whose a hook entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    User,
    /// A command entry by the identification rule; `generation` is `None` if unreadable.
    Hooktrack {
        generation: Option<u64>,
    },
}

pub(super) fn owner(entry: &Value) -> Owner {
    let command = entry.get("command").and_then(Value::as_str);
    match command {
        Some(command)
            if entry.get("type").and_then(Value::as_str) == Some("command")
                && is_hooktrack_command(command) =>
        {
            Owner::Hooktrack {
                generation: generation_of(command),
            }
        }
        _ => Owner::User,
    }
}

/// "a string", "an object", ... for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A parsed settings file: a JSON object whose `hooks`, if any, is an object.
#[derive(Clone, Debug)]
pub struct Settings {
    pub(super) root: Map<String, Value>,
}

impl Settings {
    /// Parses a settings file's text (blank text is an empty object).
    pub fn parse(text: &str) -> Result<Self, Refusal> {
        if text.trim().is_empty() {
            return Ok(Self { root: Map::new() });
        }
        let value: Value =
            serde_json::from_str(text).map_err(|cause| Refusal::NotJson { cause })?;
        let Value::Object(root) = value else {
            return Err(Refusal::NotObject { kind: kind(&value) });
        };
        if let Some(hooks) = root.get("hooks").filter(|h| !h.is_object()) {
            return Err(Refusal::HooksNotObject { kind: kind(hooks) });
        }
        Ok(Self { root })
    }

    pub(super) fn hooks(&self) -> Option<&Map<String, Value>> {
        self.root.get("hooks").and_then(Value::as_object)
    }

    /// The generations of hooktrack's entries, one per entry (`None`: unreadable).
    pub fn our_generations(&self) -> Vec<Option<u64>> {
        let mut found = Vec::new();
        for groups in self.hooks().into_iter().flat_map(Map::values) {
            for group in groups.as_array().into_iter().flatten() {
                let entries = group.get("hooks").and_then(Value::as_array);
                for entry in entries.into_iter().flatten() {
                    if let Owner::Hooktrack { generation } = owner(entry) {
                        found.push(generation);
                    }
                }
            }
        }
        found
    }

    /// The command of each of hooktrack's entries.
    pub fn our_commands(&self) -> Vec<&str> {
        let mut found = Vec::new();
        for groups in self.hooks().into_iter().flat_map(Map::values) {
            for group in groups.as_array().into_iter().flatten() {
                let entries = group.get("hooks").and_then(Value::as_array);
                for entry in entries.into_iter().flatten() {
                    if let (Owner::Hooktrack { .. }, Some(command)) =
                        (owner(entry), entry.get("command").and_then(Value::as_str))
                    {
                        found.push(command);
                    }
                }
            }
        }
        found
    }

    /// No key at all: `{}`.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// Everything, compact and in order: two files hold the same settings iff these match.
    pub fn canonical(&self) -> String {
        Value::Object(self.root.clone()).to_string()
    }
}
