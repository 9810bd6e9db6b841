//! hooktrack's entries cut out of and put into a JSON text in place: only the bytes of
//! hooktrack's own entries (and a separator, and a list or object it emptied or made)
//! change, so the user's numbers, escapes, duplicate keys and spacing stay as written,
//! and an install followed by a removal gives the text back byte for byte.
//!
//! Each step edits the text once and reads it again ([`tree::parse`]): settings files are
//! small, and no offset is ever carried across an edit.

use hooktrack_core::agent::Agent;
use serde::Serialize;
use serde_json::ser::{PrettyFormatter, Serializer};
use serde_json::{Value, json};

use super::edit::{MATCH_ALL, Owner, entry, kind, owner};
use super::layout::Layout;
use super::tree::{self, Node};
use crate::install::{Observer, Refusal, facts};

/// A text serde_json accepted but whose values this editor cannot place.
fn unplaced() -> Refusal {
    Refusal::Unplaced
}

/// Removes hooktrack's entries whose generation `select` accepts, then each matcher
/// group, event list and `hooks` object this removal emptied (empty ones it did not empty
/// stay). Returns the text and how many entries went.
pub(super) fn strip(
    text: &str,
    select: impl Fn(Option<u64>) -> bool,
) -> Result<(String, usize), Refusal> {
    let mut text = text.to_owned();
    if text.trim().is_empty() {
        return Ok((text, 0));
    }
    // Each pass takes one entry out; a text holds fewer entries than bytes.
    for removed in 0..=text.len() {
        let root = tree::parse(&text).ok_or_else(unplaced)?;
        let Some((container, index)) = next_cut(&text, &root, &select) else {
            return Ok((text, removed));
        };
        text = cut(&text, container, index);
    }
    Err(unplaced())
}

/// Appends one matcher group with hooktrack's entry to each of the agent's events (the
/// event lists, and `hooks`, created at the end of their object where missing). A blank
/// text is taken as `{}`.
pub(super) fn add(text: &str, agent: Agent, observer: &Observer) -> Result<String, Refusal> {
    let layout = Layout::of(text);
    let mut text = if text.trim().is_empty() {
        format!("{{}}{}", layout.newline())
    } else {
        text.to_owned()
    };
    let events = agent
        .descriptor()
        .hook_events_for(observer.agent_version.as_deref());
    for event in events {
        let root = tree::parse(&text).ok_or_else(unplaced)?;
        if root.get("hooks").is_none() {
            text = append(&text, &root, Child::Member("hooks", json!({})), &layout);
        }
        let root = tree::parse(&text).ok_or_else(unplaced)?;
        text = add_group(&text, &root, agent, observer, event, &layout)?;
    }
    Ok(text)
}

fn add_group(
    text: &str,
    root: &Node,
    agent: Agent,
    observer: &Observer,
    event: &str,
    layout: &Layout,
) -> Result<String, Refusal> {
    let hooks = root.get("hooks").ok_or_else(unplaced)?;
    if hooks.members().is_none() {
        return Err(Refusal::HooksNotObject {
            kind: node_kind(text, hooks),
        });
    }
    let group = if facts::schema(agent).matcher {
        json!({ "matcher": MATCH_ALL, "hooks": [entry(agent, observer, event)] })
    } else {
        json!({ "hooks": [entry(agent, observer, event)] })
    };
    Ok(match hooks.get(event) {
        Some(list) if list.items().is_some() => append(text, list, Child::Item(group), layout),
        Some(other) => {
            return Err(Refusal::EventNotList {
                event: event.to_owned(),
                kind: node_kind(text, other),
            });
        }
        None => append(text, hooks, Child::Member(event, json!([group])), layout),
    })
}

fn node_kind(text: &str, node: &Node) -> &'static str {
    text.get(node.start..node.end)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .map_or("a value", |v| kind(&v))
}

/// The next of hooktrack's selected entries, as the container and index to cut: the
/// entry itself, or the group, event list or `hooks` member it is the last one of.
fn next_cut<'n>(
    text: &str,
    root: &'n Node,
    select: &impl Fn(Option<u64>) -> bool,
) -> Option<(&'n Node, usize)> {
    let root_members = root.members()?;
    for (h, hooks) in root_members.iter().enumerate() {
        let Some(events) = hooks.value.members().filter(|_| hooks.key == "hooks") else {
            continue;
        };
        for (e, event) in events.iter().enumerate() {
            let Some(groups) = event.value.items() else {
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                for list in group.members().into_iter().flatten() {
                    let Some(entries) = list.value.items().filter(|_| list.key == "hooks") else {
                        continue;
                    };
                    for (k, item) in entries.iter().enumerate() {
                        let value: Value =
                            serde_json::from_str(text.get(item.start..item.end)?).ok()?;
                        let Owner::Hooktrack { generation } = owner(&value) else {
                            continue;
                        };
                        if !select(generation) {
                            continue;
                        }
                        // The widest thing this entry is the last of goes.
                        return Some(if entries.len() > 1 {
                            (&list.value, k)
                        } else if groups.len() > 1 {
                            (&event.value, g)
                        } else if events.len() > 1 {
                            (&hooks.value, e)
                        } else {
                            (root, h)
                        });
                    }
                }
            }
        }
    }
    None
}

/// `text` without child `index` of `container`, and the separator that led to it (or,
/// for the first child, the one after it); the last child leaves `[]` or `{}`.
fn cut(text: &str, container: &Node, index: usize) -> String {
    let spans = container.child_spans();
    let (from, to) = match (spans.len(), index) {
        (1, _) => (container.start + 1, container.end - 1),
        (_, 0) => (spans[0].0, spans[1].0),
        (_, i) => (spans[i - 1].1, spans[i].1),
    };
    format!("{}{}", &text[..from], &text[to..])
}

/// What [`append`] adds.
enum Child<'a> {
    Item(Value),
    Member(&'a str, Value),
}

/// `text` with `child` after the last child of `container`, laid out as its siblings are
/// (their separator, indent and `:` spacing), or, in an empty container, one indent step
/// in from the container's line.
fn append(text: &str, container: &Node, child: Child, layout: &Layout) -> String {
    let spans = container.child_spans();
    let step = layout.step();
    let nl = layout.newline();
    let colon = container
        .members()
        .and_then(|m| m.last())
        .and_then(|m| text.get(m.key_end..m.value.start))
        .unwrap_or(if step.is_some() { ": " } else { ":" })
        .to_owned();
    let render = |base: Option<&str>| {
        let (key, value) = match &child {
            Child::Item(v) => (String::new(), v),
            Child::Member(k, v) => (format!("{}{colon}", Value::from(*k)), v),
        };
        format!("{key}{}", render_value(value, step, base, nl))
    };
    let Some(&(_, last_end)) = spans.last() else {
        let inner = (container.start + 1, container.end - 1);
        let added = match step {
            None => render(None),
            Some(step) => {
                let line = line_indent(text, container.start);
                let base = format!("{line}{step}");
                format!("{nl}{base}{}{nl}{line}", render(Some(&base)))
            }
        };
        return format!("{}{added}{}", &text[..inner.0], &text[inner.1..]);
    };
    let sep = match spans.len() {
        1 => format!(",{}", &text[container.start + 1..spans[0].0]),
        n => text[spans[n - 2].1..spans[n - 1].0].to_owned(),
    };
    // Siblings on lines of their own: the child gets a line, at their indent.
    let base = sep.rfind('\n').map(|at| &sep[at + 1..]);
    format!(
        "{}{sep}{}{}",
        &text[..last_end],
        render(base),
        &text[last_end..]
    )
}

/// `value` compact, or pretty by `step` with every line after the first at `base`.
fn render_value(value: &Value, step: Option<&str>, base: Option<&str>, nl: &str) -> String {
    let (Some(step), Some(base)) = (step, base) else {
        return value.to_string();
    };
    let mut out = Vec::new();
    let formatter = PrettyFormatter::with_indent(step.as_bytes());
    if value
        .serialize(&mut Serializer::with_formatter(&mut out, formatter))
        .is_err()
    {
        return value.to_string();
    }
    String::from_utf8_lossy(&out).replace('\n', &format!("{nl}{base}"))
}

/// The spaces and tabs that open the line `at` is on.
fn line_indent(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let width = line
        .bytes()
        .take_while(|b| *b == b' ' || *b == b'\t')
        .count();
    &line[..width]
}
