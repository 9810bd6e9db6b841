//! The JSON hooks file as the agent CLI reads it, and hooktrack's entries in it.

use std::collections::BTreeSet;

use hooktrack_core::agent::Agent;
use serde_json::Value;

use super::edit::{MATCH_ALL, Owner, Settings, entry, kind, owner};
use crate::install::command::{generation_of, is_routed_command};
use crate::install::{Observer, Validation, Violation, facts};

/// One of hooktrack's entries where the file holds it.
struct Found<'a> {
    event: &'a str,
    item: &'a Value,
    matcher: Option<&'a Value>,
}

/// Parses `text` and checks it as the agent CLI will read it:
///
/// - a JSON object, `hooks` (if any) an object, Codex: no top-level key but `description`
///   and `hooks`; no switch in the file turns every hook off;
/// - where one malformed entry voids the whole file (Claude, Codex), every matcher group
///   is an object with a string `matcher` (if any) and a `hooks` array, and every entry an
///   object with a string `type`; a command entry has a string `command` and a positive
///   (Codex: integer) `timeout` if any;
/// - hooktrack's entries: only on the agent's events, one per event, every event hooked,
///   each in a group under the empty matcher, with exactly the keys `type`, `command`,
///   `timeout`, an integer timeout within 1 s ..= 600 s in the file's unit, all of one
///   generation.
///
/// With an `expected` observer, each of hooktrack's entries must be exactly the one it
/// renders.
pub fn validate(
    text: &str,
    agent: Agent,
    expected: Option<&Observer>,
    version: Option<&str>,
) -> Result<Validation, Violation> {
    let settings = Settings::parse(text)?;
    let root = &settings.root;
    if let Some(allowed) = facts::top_level_keys(agent)
        && let Some(key) = root.keys().find(|k| !allowed.contains(&k.as_str()))
    {
        return Err(Violation::new(format!(
            "{} ignores every hook in a hooks.json with a top-level key other than {}: `{key}`",
            agent.label(),
            allowed.join(" and ")
        )));
    }
    if let Some(switch) = facts::hooks_switched_off(agent, root) {
        return Err(Violation::new(format!(
            "{} runs no hook: {switch}",
            agent.label()
        )));
    }
    let strictness = facts::strictness(agent);
    let mut entries = 0;
    let mut found: Vec<Found> = Vec::new();
    for (event, groups) in settings.hooks().into_iter().flatten() {
        let strict = facts::strict_about(agent, event);
        let Some(groups) = groups.as_array() else {
            if strict {
                return Err(Violation::new(format!(
                    "`hooks.{event}` is {}, not a list of matcher groups ({strictness})",
                    kind(groups),
                )));
            }
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event}[{g}]");
            if strict {
                check_group(agent, group)
                    .map_err(|e| Violation::new(format!("{at}: {e} ({strictness})")))?;
            }
            let list = group.get("hooks").and_then(Value::as_array);
            for (h, item) in list.into_iter().flatten().enumerate() {
                entries += 1;
                if owner(item) != Owner::User {
                    found.push(Found {
                        event,
                        item,
                        matcher: group.get("matcher"),
                    });
                } else if strict {
                    check_entry(agent, item).map_err(|e| {
                        Violation::new(format!("{at}.hooks[{h}]: {e} ({strictness})"))
                    })?;
                }
            }
        }
    }
    let scope = check_ours(agent, &found, expected, version)?;
    Ok(Validation {
        entries,
        ours: found.len(),
        generation: match scope {
            Scope::Generation(g) => Some(g),
            Scope::None | Scope::Routed => None,
        },
        routed: scope == Scope::Routed,
    })
}

/// Whose session hooktrack's entries deliver to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// There are none.
    None,
    Generation(u64),
    /// The environment the agent inherits decides.
    Routed,
}

/// A matcher group of a strictly read event; `Err` is the rule it breaks.
fn check_group(agent: Agent, group: &Value) -> Result<(), Violation> {
    let Some(group) = group.as_object() else {
        return Err(Violation::new(format!(
            "a matcher group is {}, not an object",
            kind(group)
        )));
    };
    let schema = facts::schema(agent);
    match group.get("matcher") {
        // GitHub Copilot CLI ignores its whole settings file for an empty matcher.
        Some(Value::String(m)) if m.is_empty() && !schema.matcher => {
            return Err(Violation::new("a matcher group has an empty `matcher`"));
        }
        None | Some(Value::String(_)) => {}
        Some(Value::Null) if schema.null_matcher => {}
        Some(other) => {
            return Err(Violation::new(format!(
                "`matcher` is {}, not a string",
                kind(other)
            )));
        }
    }
    match group.get("hooks") {
        Some(Value::Array(_)) => Ok(()),
        None if schema.hooks_optional => Ok(()),
        None => Err(Violation::new("`hooks` is missing")),
        Some(other) => Err(Violation::new(format!(
            "`hooks` is {}, not an array",
            kind(other)
        ))),
    }
}

/// A user's entry of a strictly read event; `Err` is the rule it breaks.
fn check_entry(agent: Agent, entry: &Value) -> Result<(), Violation> {
    let Some(entry) = entry.as_object() else {
        return Err(Violation::new(format!(
            "an entry is {}, not an object",
            kind(entry)
        )));
    };
    let Some(kind_of) = entry.get("type").and_then(Value::as_str) else {
        return Err(Violation::new("`type` is missing or not a string"));
    };
    let schema = facts::schema(agent);
    if schema
        .entry_types
        .is_some_and(|known| !known.contains(&kind_of))
    {
        return Err(Violation::new(format!("unknown `type` {kind_of:?}")));
    }
    if kind_of != "command" {
        return Ok(());
    }
    if !entry.get("command").is_some_and(Value::is_string) {
        return Err(Violation::new("`command` is missing or not a string"));
    }
    match entry.get("timeout") {
        None => Ok(()),
        Some(t) if schema.whole_timeouts && t.is_u64() => Ok(()),
        Some(t) if !schema.whole_timeouts && t.as_f64().is_some_and(|t| t > 0.0) => Ok(()),
        Some(t) if schema.whole_timeouts => Err(Violation::new(format!(
            "`timeout` {t} is not a whole number of seconds"
        ))),
        Some(t) => Err(Violation::new(format!(
            "`timeout` {t} is not a positive number"
        ))),
    }
}

/// Checks hooktrack's entries; returns whose session they deliver to.
fn check_ours(
    agent: Agent,
    found: &[Found],
    expected: Option<&Observer>,
    version: Option<&str>,
) -> Result<Scope, Violation> {
    // The events `version` fires must all be hooked. An entry on an event it does not
    // know is wrong when the version is known (an older CLI warns about it); with no
    // version, any event of the newest tested version may be hooked.
    let events = agent.descriptor().hook_events_for(version);
    let known: &[&str] = if version.is_some() {
        &events
    } else {
        agent.hook_events()
    };
    let mut generations = BTreeSet::new();
    let mut hooked = BTreeSet::new();
    for Found {
        event,
        item,
        matcher,
    } in found
    {
        let bad = |what: String| Violation::new(format!("hooktrack's `{event}` entry {what}"));
        if !known.contains(event) {
            return Err(Violation::new(format!(
                "a hooktrack entry on `{event}`, which is not one of {}{}'s {} events",
                agent.label(),
                version.map(|v| format!(" {v}")).unwrap_or_default(),
                known.len()
            )));
        }
        if !hooked.insert(*event) {
            return Err(Violation::new(format!(
                "more than one hooktrack entry on `{event}`"
            )));
        }
        let every = if facts::schema(agent).matcher {
            matcher.and_then(|m| m.as_str()) == Some(MATCH_ALL)
        } else {
            matcher.is_none()
        };
        if !every {
            return Err(bad(
                "is not under the empty matcher, so it misses occurrences".to_owned(),
            ));
        }
        let keys: Vec<&str> = item
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if keys != ["type", "command", "timeout"] {
            return Err(bad(format!(
                "has the keys {keys:?}, not type, command, timeout"
            )));
        }
        let range = facts::timeout_range(agent);
        if !item
            .get("timeout")
            .and_then(Value::as_u64)
            .is_some_and(|t| range.contains(&t))
        {
            return Err(bad(format!(
                "has the timeout {}, not an integer in {range:?} ({})",
                item.get("timeout").unwrap_or(&Value::Null),
                facts::timeout_unit(agent).name()
            )));
        }
        let command = item.get("command").and_then(Value::as_str).unwrap_or("");
        generations.insert(if is_routed_command(command) {
            Some(Scope::Routed)
        } else {
            generation_of(command).map(Scope::Generation)
        });
        if let Some(observer) = expected
            && **item != entry(agent, observer, event)
        {
            return Err(bad(match observer.generation() {
                Some(g) => format!("is not the one rendered for generation {g}"),
                None => "is not the one rendered for routing by environment".to_owned(),
            }));
        }
    }
    if found.is_empty() {
        return match expected {
            Some(_) => Err(Violation::new("no hooktrack entry")),
            None => Ok(Scope::None),
        };
    }
    let missing: Vec<&str> = events
        .iter()
        .copied()
        .filter(|e| !hooked.contains(e))
        .collect();
    if !missing.is_empty() {
        return Err(Violation::new(format!(
            "hooktrack hooks {} of {}{}'s {} events; missing: {}",
            hooked.len(),
            agent.label(),
            version.map(|v| format!(" {v}")).unwrap_or_default(),
            events.len(),
            missing.join(", ")
        )));
    }
    let mut generations = generations.into_iter();
    match (generations.next(), generations.next()) {
        (Some(Some(scope)), None) => Ok(scope),
        (Some(None), None) => Err(Violation::new(
            "a hooktrack entry without a readable generation",
        )),
        _ => Err(Violation::new(
            "hooktrack entries of more than one generation",
        )),
    }
}
