//! Transcript entries → canonical events, by the classifier of the agent that wrote them
//! (`agents/<agent>/transcript.rs`, named by its descriptor's [`Transcript`]).
//!
//! Claude Code, Codex and Gemini CLI name a transcript in every hook payload
//! (`transcript_path`): one JSON object per line, appended as the session goes. Kimi
//! Code names none, GitHub Copilot CLI only in some hooks; their session file is found
//! from the payload's `session_id` ([`SessionFile`](crate::agents::SessionFile)). Where the
//! hooks are silent (an Escape, a permission answered "No"), the transcript still records
//! the moment. A classifier maps one line to an event only when the line is one of the
//! exact markers recorded from the real CLIs (`docs/providers.md` lists them per version);
//! every other entry is [`Entry::Ignored`] and counted. A classifier never produces a
//! `Stop`: only a hook says `success`. Pure: bytes in, an entry out, no state.

use serde_json::Value;

use crate::agent::Agent;
#[cfg(doc)]
use crate::agents::Transcript;
use crate::event::Event;
use crate::time::Timestamp;

/// One transcript line, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A known marker of a blind moment.
    Marker(Marker),
    /// Any other entry (the bulk of a transcript): ignored, counted.
    Ignored,
    /// Not a JSON object: ignored, counted separately.
    Unreadable,
    /// The agent writes no transcript hooktrack reads.
    NotFollowed,
}

/// A marker and the canonical event it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The marker's stable name (`docs/providers.md`), shown as the event name.
    pub name: &'static str,
    pub event: Event<'static>,
    /// The entry's own timestamp: its place among the hook rows and its age against the
    /// open turn.
    pub at: Option<Timestamp>,
}

/// Classifies one transcript line written by `agent`.
pub fn classify(agent: Agent, bytes: &[u8]) -> Entry {
    if agent
        .descriptor()
        .transcript
        .is_some_and(|t| cannot_be_a_marker(t.needles, bytes))
    {
        return Entry::Ignored;
    }
    let Ok(Value::Object(entry)) = serde_json::from_slice::<Value>(bytes) else {
        return Entry::Unreadable;
    };
    let at = entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(Timestamp::parse_rfc3339)
        .or_else(|| {
            entry
                .get("time")
                .and_then(Value::as_i64)
                .map(Timestamp::from_millis)
        });
    let Some(transcript) = agent.descriptor().transcript else {
        return Entry::NotFollowed;
    };
    match (transcript.classify)(&entry) {
        Some((name, event)) => Entry::Marker(Marker { name, event, at }),
        None => Entry::Ignored,
    }
}

/// An object line (so not `Unreadable`) that holds none of `needles`: no marker, decided
/// by a byte search instead of a parse. False when there are no needles.
fn cannot_be_a_marker(needles: &[&str], bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    !needles.is_empty()
        && trimmed.first() == Some(&b'{')
        && trimmed.last() == Some(&b'}')
        && !needles
            .iter()
            .any(|n| memchr::memmem::find(bytes, n.as_bytes()).is_some())
}

/// The entry's timestamp (`timestamp`, RFC 3339; else Kimi Code's `time`, milliseconds
/// since the epoch), whatever the CLI: where a replay places the line among the hook rows.
pub fn entry_time(bytes: &[u8]) -> Option<Timestamp> {
    #[derive(serde::Deserialize)]
    struct Stamped<'a> {
        #[serde(borrow)]
        timestamp: Option<std::borrow::Cow<'a, str>>,
        // Any JSON value: a `time` of another shape must not lose a `timestamp`.
        time: Option<Value>,
    }
    let stamped: Stamped<'_> = serde_json::from_slice(bytes).ok()?;
    match stamped.timestamp.as_deref() {
        Some(text) => Timestamp::parse_rfc3339(text),
        None => stamped
            .time
            .as_ref()
            .and_then(Value::as_i64)
            .map(Timestamp::from_millis),
    }
}

/// The text of a message content that is one text part (or a plain string).
pub(crate) fn sole_text(content: &Value) -> Option<&str> {
    match content {
        Value::String(s) => Some(s),
        Value::Array(parts) if parts.len() == 1 => parts[0]
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| *t == "text")
            .and_then(|_| parts[0].get("text"))
            .and_then(Value::as_str),
        _ => None,
    }
}

/// For the classifiers' tests in the agents' folders.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::{Entry, classify};
    use crate::agent::Agent;

    /// The name of the marker `line` is for `agent`, if it is one.
    pub(crate) fn marker(agent: Agent, line: &str) -> Option<&'static str> {
        match classify(agent, line.as_bytes()) {
            Entry::Marker(m) => Some(m.name),
            _ => None,
        }
    }
}
