//! The strict read of Kimi's `[[hooks]]`: what Kimi itself rejects, silently or not.

use hooktrack_core::agent::Agent;

use crate::install::command::command;
use crate::install::{Observer, Validation, Violation, facts};

/// The keys Kimi Code accepts in an entry (any other voids the whole hooks section).
const ALLOWED_KEYS: [&str; 4] = ["event", "matcher", "command", "timeout"];

/// Strictly parses `text` and checks every `[[hooks]]` entry: keys within {event,
/// matcher, command, timeout} (Kimi Code; Kimi CLI ignores unknown keys), event within the
/// agent's enum, `command` a string, `matcher` a string, timeout an integer in 1..=600.
///
/// Kimi Code (the agent whose unknown keys are fatal) reads the entries with one strict
/// schema, checked against Kimi Code 2.1.0's own `kimi doctor` and its runtime: `command`
/// must be non-empty (`""` voids every hook; blanks pass), and a TOML float with no
/// fraction is an integer to it (`timeout = 5.0` runs, `5.5` voids every hook).
/// With an `expected` observer, also checks that each of its events has exactly one entry
/// with the exact command, its timeout and no matcher, and counts them as `ours`.
pub fn validate(
    text: &str,
    agent: Agent,
    expected: Option<&Observer>,
) -> Result<Validation, Violation> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let e = e.to_string();
        Violation::new(format!("not valid TOML: {}", e.trim().replace('\n', " ")))
    })?;
    let entries: &[toml::Value] = match table.get("hooks") {
        None => &[],
        Some(toml::Value::Array(items)) => items,
        Some(_) => return Err(Violation::new("`hooks` is not an array of tables")),
    };
    let events = agent.hook_events();
    let strict_schema = facts::unknown_keys_fatal(agent);
    let mut ours_seen = vec![0usize; events.len()];
    let mut ours = 0;
    for (i, entry) in entries.iter().enumerate() {
        let n = i + 1;
        let bad = |what: &str| Violation::new(format!("hooks entry {n}{what}"));
        let toml::Value::Table(entry) = entry else {
            return Err(bad(" is not a table"));
        };
        if facts::unknown_keys_fatal(agent)
            && let Some(key) = entry.keys().find(|k| !ALLOWED_KEYS.contains(&k.as_str()))
        {
            return Err(bad(&format!(
                " has the unknown key `{key}` ({} voids the whole hooks section)",
                agent.label()
            )));
        }
        let event = match entry.get("event") {
            Some(toml::Value::String(e)) => e,
            Some(_) => return Err(bad(": `event` is not a string")),
            None => return Err(bad(" has no `event`")),
        };
        let Some(index) = events.iter().position(|e| e == event) else {
            return Err(bad(&format!(
                ": `{event}` is not one of {}'s {} events",
                agent.label(),
                events.len()
            )));
        };
        let command = match entry.get("command") {
            Some(toml::Value::String(c)) if c.is_empty() && strict_schema => {
                return Err(bad(&format!(
                    ": `command` is empty ({} voids the whole hooks section)",
                    agent.label()
                )));
            }
            Some(toml::Value::String(c)) => c,
            Some(_) => return Err(bad(": `command` is not a string")),
            None => return Err(bad(" has no `command`")),
        };
        match entry.get("matcher") {
            None | Some(toml::Value::String(_)) => {}
            Some(_) => return Err(bad(": `matcher` is not a string")),
        }
        let range = facts::timeout_range(agent);
        let timeout = match entry.get("timeout") {
            Some(toml::Value::Float(f)) if strict_schema && f.fract() == 0.0 => {
                // Exact: a float with no fraction in 1..=600 converts without loss.
                #[allow(clippy::cast_possible_truncation)]
                Some(toml::Value::Integer(*f as i64))
            }
            other => other.cloned(),
        };
        match timeout {
            None => {}
            Some(toml::Value::Integer(t)) if u64::try_from(t).is_ok_and(|t| range.contains(&t)) => {
            }
            Some(toml::Value::Integer(t)) => {
                return Err(bad(&format!(
                    ": timeout {t} is outside {}..={}",
                    range.start(),
                    range.end()
                )));
            }
            Some(_) => return Err(bad(": `timeout` is not an integer")),
        }
        if let Some(observer) = expected
            && *command == self::command(agent, observer, event)
        {
            let timeout = i64::try_from(facts::timeout(agent, event)).ok();
            if entry.get("matcher").is_some()
                || entry.get("timeout").and_then(toml::Value::as_integer) != timeout
            {
                return Err(bad(&format!(
                    " (hooktrack, {event}) lost its timeout or gained a matcher"
                )));
            }
            ours += 1;
            ours_seen[index] += 1;
        }
    }
    if expected.is_some()
        && let Some((i, count)) = ours_seen.iter().enumerate().find(|(_, c)| **c != 1)
    {
        return Err(Violation::new(format!(
            "{count} hooktrack entries for {} (expected exactly 1)",
            events[i]
        )));
    }
    Ok(Validation {
        entries: entries.len(),
        ours,
        generation: expected.filter(|_| ours > 0).and_then(Observer::generation),
        routed: expected.is_some_and(|o| ours > 0 && o.generation().is_none()),
    })
}
