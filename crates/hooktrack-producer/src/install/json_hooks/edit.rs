//! The settings editor: the file as an order-preserving JSON object (serde_json with
//! `preserve_order`), hooktrack's entries found, taken out and put in.

use hooktrack_core::agent::Agent;
use serde_json::{Map, Value, json};

use super::layout::Layout;
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
    layout: Layout,
}

impl Settings {
    /// Parses a settings file's text (blank text is an empty object).
    pub fn parse(text: &str) -> Result<Self, Refusal> {
        let layout = Layout::of(text);
        if text.trim().is_empty() {
            return Ok(Self {
                root: Map::new(),
                layout,
            });
        }
        let value: Value =
            serde_json::from_str(text).map_err(|cause| Refusal::NotJson { cause })?;
        let Value::Object(root) = value else {
            return Err(Refusal::NotObject { kind: kind(&value) });
        };
        if let Some(hooks) = root.get("hooks").filter(|h| !h.is_object()) {
            return Err(Refusal::HooksNotObject { kind: kind(hooks) });
        }
        Ok(Self { root, layout })
    }

    /// The text, laid out as the file was.
    pub fn render(&self) -> Result<String, Refusal> {
        self.layout.render(&self.root)
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

    /// Removes hooktrack's entries whose generation `select` accepts, then every matcher
    /// group, event list and `hooks` object that this removal left empty (empty ones it
    /// did not empty stay). Returns how many entries went.
    pub fn strip(&mut self, select: impl Fn(Option<u64>) -> bool) -> usize {
        let Some(Value::Object(hooks)) = self.root.get_mut("hooks") else {
            return 0;
        };
        let selected = |e: &Value| match owner(e) {
            Owner::Hooktrack { generation } => select(generation),
            Owner::User => false,
        };
        let mut removed = 0;
        let mut emptied = Vec::new();
        for (event, groups) in hooks.iter_mut() {
            let Value::Array(groups) = groups else {
                continue;
            };
            let before = removed;
            groups.retain_mut(|group| {
                let Some(Value::Array(entries)) = group.get_mut("hooks") else {
                    return true;
                };
                let had = entries.len();
                entries.retain(|e| !selected(e));
                removed += had - entries.len();
                !(entries.is_empty() && had > 0)
            });
            if removed > before && groups.is_empty() {
                emptied.push(event.clone());
            }
        }
        for event in &emptied {
            hooks.shift_remove(event);
        }
        if removed > 0 && hooks.is_empty() {
            self.root.shift_remove("hooks");
        }
        removed
    }

    /// Appends one matcher group with hooktrack's entry to each of the agent's events
    /// (creating `hooks` and the event lists at the end where missing).
    pub fn add(&mut self, agent: Agent, observer: &Observer) -> Result<(), Refusal> {
        let hooks = self
            .root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(hooks) = hooks else {
            return Err(Refusal::HooksNotObject { kind: kind(hooks) });
        };
        let events = agent
            .descriptor()
            .hook_events_for(observer.agent_version.as_deref());
        if let Some((event, value)) = events
            .iter()
            .find_map(|e| hooks.get(*e).filter(|v| !v.is_array()).map(|v| (e, v)))
        {
            return Err(Refusal::EventNotList {
                event: (*event).to_owned(),
                kind: kind(value),
            });
        }
        for event in &events {
            let groups = hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(groups) = groups {
                let group = if facts::schema(agent).matcher {
                    json!({
                        "matcher": MATCH_ALL,
                        "hooks": [entry(agent, observer, event)],
                    })
                } else {
                    json!({ "hooks": [entry(agent, observer, event)] })
                };
                groups.push(group);
            }
        }
        Ok(())
    }

    /// Everything, compact and in order: two files hold the same settings iff these match.
    pub fn canonical(&self) -> String {
        Value::Object(self.root.clone()).to_string()
    }
}
