//! What the installers must know about each agent beyond where its config lives and which
//! events it fires: the timeout hooktrack writes, and how strictly the agent reads its hook
//! table. The facts are the agent's descriptor's (`InstallFacts`, in the core's
//! `agents/<agent>/`); these read them the way the formats ask.

use std::ops::RangeInclusive;

use hooktrack_core::agent::Agent;
pub use hooktrack_core::agents::TimeoutUnit;
use hooktrack_core::agents::{EntrySchema, Strictness};
use serde_json::{Map, Value};

pub fn timeout_unit(agent: Agent) -> TimeoutUnit {
    agent.descriptor().install.timeout_unit
}

/// The `timeout` of hooktrack's entry for `event`, in the file's unit: 5 s (the emitter
/// gives up after 3 s whatever happens), less where the agent clamps it.
pub fn timeout(agent: Agent, event: &str) -> u64 {
    agent.descriptor().install.timeout_for(event)
}

/// The timeouts the read-back accepts: 1 s ..= 600 s, in the file's unit. Kimi voids its
/// hooks section on any entry outside it, so there the rule applies to every entry.
pub fn timeout_range(agent: Agent) -> RangeInclusive<u64> {
    let second = timeout_unit(agent).per_second();
    second..=600 * second
}

/// Whether an unknown key in an entry voids the whole hooks section (Kimi Code; Kimi CLI
/// ignores the key).
pub fn unknown_keys_fatal(agent: Agent) -> bool {
    agent.descriptor().install.unknown_entry_keys_fatal
}

/// The top-level keys the agent accepts in its hooks file, when it rejects any other.
pub fn top_level_keys(agent: Agent) -> Option<&'static [&'static str]> {
    agent.descriptor().install.top_level_keys
}

/// Whether the agent reads `hooks.<event>` so strictly that one malformed entry voids the
/// whole file (so the user's entries are checked too).
pub fn strict_about(agent: Agent, event: &str) -> bool {
    match agent.descriptor().install.strict {
        Strictness::EveryEvent => true,
        Strictness::KnownEvents => agent.hook_events().contains(&event),
        Strictness::Lenient => false,
    }
}

/// What happens to a file with a malformed entry, for the violation message.
pub fn strictness(agent: Agent) -> &'static str {
    agent.descriptor().install.strictness
}

/// How the agent reads matcher groups and entries.
pub fn schema(agent: Agent) -> EntrySchema {
    agent.descriptor().install.schema
}

/// A switch in the agent's JSON file that turns every hook off, if it is on.
pub fn hooks_switched_off(agent: Agent, root: &Map<String, Value>) -> Option<&'static str> {
    agent
        .descriptor()
        .install
        .off_switches
        .iter()
        .find_map(|switch| {
            let (first, rest) = switch.path.split_first()?;
            let value = rest
                .iter()
                .try_fold(root.get(*first)?, |v, key| v.get(key))?;
            (value == &Value::Bool(switch.off_when)).then_some(switch.why)
        })
}
