//! What the installers must know about each agent beyond where its config lives and which
//! events it fires (`Agent::config()` and `Agent::hook_events()` in the core): the timeout
//! hooktrack writes, and how strictly the agent reads its hook table. These are facts of
//! the agents' pinned versions, found by reading their config loaders.

use std::ops::RangeInclusive;

use hooktrack_core::agent::Agent;
use serde_json::{Map, Value};

/// The unit of a `timeout` in the agent's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

impl TimeoutUnit {
    pub fn name(self) -> &'static str {
        match self {
            TimeoutUnit::Seconds => "seconds",
            TimeoutUnit::Milliseconds => "milliseconds",
        }
    }
}

pub fn timeout_unit(agent: Agent) -> TimeoutUnit {
    match agent {
        Agent::GeminiCli => TimeoutUnit::Milliseconds,
        Agent::KimiCode | Agent::KimiCli | Agent::ClaudeCode | Agent::Codex => TimeoutUnit::Seconds,
    }
}

/// The `timeout` of hooktrack's entry for `event`, in the file's unit: 5 s (the emitter
/// gives up after 3 s whatever happens), except where Codex clamps to 3 s.
pub fn timeout(agent: Agent, event: &str) -> u64 {
    match agent {
        Agent::GeminiCli => 5000,
        Agent::Codex if matches!(event, "SessionEnd" | "Interrupt") => 3,
        Agent::KimiCode | Agent::KimiCli | Agent::ClaudeCode | Agent::Codex => 5,
    }
}

/// The timeouts the read-back accepts: 1 s ..= 600 s, in the file's unit. Kimi voids its
/// hooks section on any entry outside it, so there the rule applies to every entry.
pub fn timeout_range(agent: Agent) -> RangeInclusive<u64> {
    match timeout_unit(agent) {
        TimeoutUnit::Seconds => 1..=600,
        TimeoutUnit::Milliseconds => 1000..=600_000,
    }
}

/// Kimi Code voids the whole hooks section on an unknown key in an entry; Kimi CLI
/// ignores the key.
pub fn unknown_keys_fatal(agent: Agent) -> bool {
    matches!(agent, Agent::KimiCode)
}

/// The top-level keys the agent accepts in its hooks file, when it rejects any other:
/// Codex reads `hooks.json` with serde's `deny_unknown_fields`, so one more key and no
/// hook runs.
pub fn top_level_keys(agent: Agent) -> Option<&'static [&'static str]> {
    match agent {
        Agent::Codex => Some(&["description", "hooks"]),
        Agent::KimiCode | Agent::KimiCli | Agent::ClaudeCode | Agent::GeminiCli => None,
    }
}

/// Whether the agent reads `hooks.<event>` so strictly that one malformed entry voids the
/// whole file (so the user's entries are checked too). Claude Code skips a settings file
/// with any schema error ("files with errors are skipped entirely"); Codex fails to
/// deserialize `hooks.json` (it ignores event names it does not know); Gemini CLI discards
/// just the malformed entry. Kimi reads every entry strictly.
pub fn strict_about(agent: Agent, event: &str) -> bool {
    match agent {
        Agent::KimiCode | Agent::KimiCli | Agent::ClaudeCode => true,
        Agent::Codex => agent.hook_events().contains(&event),
        Agent::GeminiCli => false,
    }
}

/// What happens to a file with a malformed entry, for the violation message.
pub fn strictness(agent: Agent) -> &'static str {
    match agent {
        Agent::KimiCode | Agent::KimiCli => "Kimi runs no hook from such a hooks section",
        Agent::ClaudeCode => "Claude Code skips a settings file with any invalid entry",
        Agent::Codex => "Codex ignores a hooks.json with any invalid entry",
        Agent::GeminiCli => "Gemini CLI skips it",
    }
}

/// Codex's schema is its own in three places: a matcher group may have a `null` matcher
/// and no `hooks`, an entry's `type` is one of four, and a `timeout` is a whole number.
pub fn codex_schema(agent: Agent) -> bool {
    agent == Agent::Codex
}

/// The entry types Codex knows (any other voids the file).
pub const CODEX_ENTRY_TYPES: [&str; 4] = ["command", "mcp_tool", "prompt", "agent"];

/// A switch in the agent's JSON file that turns every hook off, if it is on.
pub fn hooks_switched_off(agent: Agent, root: &Map<String, Value>) -> Option<&'static str> {
    let is_false = |v: Option<&Value>| v == Some(&Value::Bool(false));
    match agent {
        Agent::ClaudeCode if root.get("disableAllHooks") == Some(&Value::Bool(true)) => {
            Some("`disableAllHooks` is true")
        }
        Agent::GeminiCli if is_false(root.get("hooksConfig").and_then(|c| c.get("enabled"))) => {
            Some("`hooksConfig.enabled` is false")
        }
        Agent::GeminiCli if is_false(root.get("hooks").and_then(|h| h.get("enabled"))) => {
            Some("`hooks.enabled` is false")
        }
        _ => None,
    }
}
