//! The turn ledger: one record per turn.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::event::TurnId;
use crate::posture::TurnResult;
use crate::time::Timestamp;

/// One turn, main or nested. Emitted once, when it ends; open turns are reported with
/// `result = open` at the end of a replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Ledger ordinal, unique within a stream (order of first evidence).
    pub id: u64,
    /// The main-scope epoch this turn belongs to (nested turns share their parent's).
    pub epoch: u64,
    pub turn_id: Option<TurnId>,
    pub scope: Scope,
    pub origin: Origin,
    pub result: TurnResult,
    pub first_row: u64,
    pub last_row: u64,
    pub started_at: Option<crate::time::Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub tool_calls: u64,
    /// Which signal ended the turn (`None` while open): a hook, a transcript marker, the
    /// agent process ending.
    pub ended_by: Option<crate::source::Source>,
}

impl TurnRecord {
    pub fn is_main(&self) -> bool {
        self.scope == Scope::Main
    }
}

/// Which scope a turn ran in. Written (in JSON and in text) as `main`,
/// `subagent:<name>` or `system_trigger:<name>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Main,
    /// A subagent's scope, by the name its SubagentStart gave (`None`: no name or an
    /// empty one, written `?`).
    Subagent(Option<String>),
    /// A scope opened by a system-triggered TurnStarted, by its origin name.
    SystemTrigger(String),
}

/// What started a turn. Written (in JSON and in text) as its name below, or
/// `system_trigger:<name>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `user`: a prompt.
    User,
    /// `system_trigger:<name>`: a TurnStarted with a system origin.
    SystemTrigger(String),
    /// `subagent`: a SubagentStart, where the provider gives the subagent a turn of its own.
    Subagent,
    /// `implied`: evidence after the start event was missed.
    Implied,
    /// `unannounced`: a Stop with no prompt.
    Unannounced,
    /// `continuation`: the extra turn a stop hook caused.
    Continuation,
    /// `agent`: a turn the agent started itself to report finished background work (Kimi
    /// Code `TurnStarted(origin_kind = task)`, Claude Code's task notification). Never a
    /// user turn.
    Agent,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Main => f.write_str("main"),
            Scope::Subagent(name) => write!(f, "subagent:{}", name.as_deref().unwrap_or("?")),
            Scope::SystemTrigger(name) => write!(f, "system_trigger:{name}"),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::User => f.write_str("user"),
            Origin::SystemTrigger(name) => write!(f, "system_trigger:{name}"),
            Origin::Subagent => f.write_str("subagent"),
            Origin::Implied => f.write_str("implied"),
            Origin::Unannounced => f.write_str("unannounced"),
            Origin::Continuation => f.write_str("continuation"),
            Origin::Agent => f.write_str("agent"),
        }
    }
}

// Serialized as the strings they display as, so the ledger JSON keeps the plain strings
// its readers already parse.
impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Serialize for Origin {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

// Read back from their strings (a ledger streamed to a file and read at the end). A
// subagent named `?` reads back as an unnamed one: the string cannot tell them apart.
impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        if text == "main" {
            return Ok(Scope::Main);
        }
        if let Some(name) = text.strip_prefix("subagent:") {
            return Ok(Scope::Subagent((name != "?").then(|| name.to_owned())));
        }
        if let Some(name) = text.strip_prefix("system_trigger:") {
            return Ok(Scope::SystemTrigger(name.to_owned()));
        }
        Err(serde::de::Error::custom(format!("not a scope: `{text}`")))
    }
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(match text.as_ref() {
            "user" => Origin::User,
            "subagent" => Origin::Subagent,
            "implied" => Origin::Implied,
            "unannounced" => Origin::Unannounced,
            "continuation" => Origin::Continuation,
            "agent" => Origin::Agent,
            other => match other.strip_prefix("system_trigger:") {
                Some(name) => Origin::SystemTrigger(name.to_owned()),
                None => return Err(serde::de::Error::custom(format!("not an origin: `{text}`"))),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Origin, Scope};

    fn json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_default()
    }

    #[test]
    fn scopes_and_origins_serialize_as_their_ledger_strings() {
        let scopes = [
            (Scope::Main, "main"),
            (Scope::Subagent(Some("coder".into())), "subagent:coder"),
            (Scope::Subagent(None), "subagent:?"),
            (
                Scope::SystemTrigger("subagent".into()),
                "system_trigger:subagent",
            ),
        ];
        for (scope, text) in scopes {
            assert_eq!(scope.to_string(), text);
            assert_eq!(json(&scope), format!("\"{text}\""));
            let back: Option<Scope> = serde_json::from_str(&json(&scope)).ok();
            assert_eq!(back, Some(scope));
        }
        let origins = [
            (Origin::User, "user"),
            (
                Origin::SystemTrigger("system".into()),
                "system_trigger:system",
            ),
            (Origin::Subagent, "subagent"),
            (Origin::Implied, "implied"),
            (Origin::Unannounced, "unannounced"),
            (Origin::Continuation, "continuation"),
            (Origin::Agent, "agent"),
        ];
        for (origin, text) in origins {
            assert_eq!(origin.to_string(), text);
            assert_eq!(json(&origin), format!("\"{text}\""));
            let back: Option<Origin> = serde_json::from_str(&json(&origin)).ok();
            assert_eq!(back, Some(origin));
        }
    }
}
