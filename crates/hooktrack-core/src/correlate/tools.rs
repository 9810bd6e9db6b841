//! Tool calls (paired by id, or first-in-first-out by name and input where the provider
//! sends no id) and permission windows.

use std::fmt;
use std::hash::{Hash, Hasher};

use indexmap::Equivalent;

use super::{Correlator, MAX_OPEN_TOOLS, MAX_PENDING_PERMISSIONS, OpenTool, Owner};
use crate::diagnostics::Diag;
use crate::event::ToolRef;
use crate::payload::text_hash;

/// The key of an open tool call. Made-up keys are a variant of their own, so a provider's
/// id can never collide with one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ToolKey {
    /// The provider's `tool_call_id`.
    Id(String),
    /// The n-th call sent without an id (Gemini), paired first-in-first-out by name and
    /// input. Written `~n` in notes.
    Fifo(u64),
}

/// The key of a pending permission window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PermissionKey {
    /// An id the request or result carries: the `tool_call_id`, else the approval id. The
    /// two share one namespace: a result may name its window by either.
    Id(String),
    /// The id-less open call ([`ToolKey::Fifo`]) the request was matched to.
    Fifo(u64),
    /// No id and no open call to match: the tool's name stands in. Written `<name>?`.
    ByName(String),
}

/// A tool key borrowed from the event, to look a call (or the permission window it opened)
/// up without allocating: a finish is the hottest path of the correlator. It hashes like
/// the owned keys ([`KeyHash`]), so maps keyed by [`ToolKey`] or [`PermissionKey`] find it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ToolKeyRef<'a> {
    Id(&'a str),
    Fifo(u64),
}

/// The one hash of all three key types: variant tag, then the id or number.
enum KeyHash<'a> {
    Id(&'a str),
    Fifo(u64),
    ByName(&'a str),
}

impl Hash for KeyHash<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            KeyHash::Id(id) => {
                state.write_u8(0);
                id.hash(state);
            }
            KeyHash::Fifo(n) => {
                state.write_u8(1);
                n.hash(state);
            }
            KeyHash::ByName(name) => {
                state.write_u8(2);
                name.hash(state);
            }
        }
    }
}

impl Hash for ToolKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_ref().hash(state);
    }
}

impl Hash for ToolKeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            ToolKeyRef::Id(id) => KeyHash::Id(id),
            ToolKeyRef::Fifo(n) => KeyHash::Fifo(n),
        }
        .hash(state);
    }
}

impl Hash for PermissionKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            PermissionKey::Id(id) => KeyHash::Id(id),
            PermissionKey::Fifo(n) => KeyHash::Fifo(*n),
            PermissionKey::ByName(name) => KeyHash::ByName(name),
        }
        .hash(state);
    }
}

impl ToolKey {
    pub(super) fn as_ref(&self) -> ToolKeyRef<'_> {
        match self {
            ToolKey::Id(id) => ToolKeyRef::Id(id),
            ToolKey::Fifo(n) => ToolKeyRef::Fifo(*n),
        }
    }
}

impl Equivalent<ToolKey> for ToolKeyRef<'_> {
    fn equivalent(&self, key: &ToolKey) -> bool {
        *self == key.as_ref()
    }
}

impl Equivalent<PermissionKey> for ToolKeyRef<'_> {
    fn equivalent(&self, key: &PermissionKey) -> bool {
        match (*self, key) {
            (ToolKeyRef::Id(a), PermissionKey::Id(b)) => a == b,
            (ToolKeyRef::Fifo(a), PermissionKey::Fifo(b)) => a == *b,
            _ => false,
        }
    }
}

impl fmt::Display for ToolKeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolKeyRef::Id(id) => f.write_str(id),
            ToolKeyRef::Fifo(n) => write!(f, "~{n}"),
        }
    }
}

impl From<ToolKey> for PermissionKey {
    fn from(key: ToolKey) -> Self {
        match key {
            ToolKey::Id(id) => PermissionKey::Id(id),
            ToolKey::Fifo(n) => PermissionKey::Fifo(n),
        }
    }
}

impl fmt::Display for ToolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolKey::Id(id) => f.write_str(id),
            ToolKey::Fifo(n) => write!(f, "~{n}"),
        }
    }
}

impl fmt::Display for PermissionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermissionKey::Id(id) => f.write_str(id),
            PermissionKey::Fifo(n) => write!(f, "~{n}"),
            PermissionKey::ByName(name) => write!(f, "{name}?"),
        }
    }
}

impl Correlator {
    pub(super) fn tool_started(&mut self, tool: &ToolRef<'_>) {
        self.start_implied();
        let agent = tool.agent.as_deref();
        self.check_agent(agent);
        let owner = self.owner(agent);
        let line = self.line;
        if let Some(rec) = self.turn_mut(owner) {
            rec.tool_calls += 1;
            rec.last_row = line;
        }
        if owner == Owner::NoTurn {
            self.note(
                Diag::ToolWithoutTurn,
                tool.name.as_deref().map(str::to_owned),
            );
        }
        let key = match tool.call_id.as_deref() {
            Some(id) => ToolKey::Id(id.to_owned()),
            None if !self.caps.tool_ids => {
                self.next_fifo += 1;
                ToolKey::Fifo(self.next_fifo)
            }
            None => {
                self.note(
                    Diag::ToolCallIdMissing,
                    tool.name.as_deref().map(str::to_owned),
                );
                return;
            }
        };
        let open = OpenTool {
            owner,
            name_hash: tool.name.as_deref().map(text_hash),
            input_hash: tool.input_hash,
        };
        if let Some(previous) = self.tools.get_mut(&key) {
            *previous = open;
            self.note(Diag::ToolStartDuplicate, Some(key.to_string()));
            return;
        }
        if self.tools.len() >= MAX_OPEN_TOOLS {
            self.tools.shift_remove_index(0);
            self.note(Diag::StateLimitReached, Some("open tool calls".into()));
        }
        self.tools.insert(key, open);
    }

    /// PostToolUse / PostToolUseFailure. `interrupt`: the user interrupted the call, which
    /// ends the turn interrupted (Claude's only interrupt trace).
    pub(super) fn tool_finished(&mut self, tool: &ToolRef<'_>, interrupt: bool) {
        let key = match tool.call_id.as_deref() {
            Some(id) => Some(ToolKeyRef::Id(id)),
            None if !self.caps.tool_ids => self.pair_first_in_first_out(tool).map(ToolKeyRef::Fifo),
            None => {
                self.note(
                    Diag::ToolCallIdMissing,
                    tool.name.as_deref().map(str::to_owned),
                );
                None
            }
        };
        let open = key.and_then(|k| self.tools.shift_remove(&k));
        match (key, open) {
            (Some(key), Some(open)) => {
                let line = self.line;
                // A transcript line is not a row: the turn's rows stay the hooks'.
                if self.source == crate::source::Source::Hook
                    && let Some(rec) = self.turn_mut(open.owner)
                {
                    rec.last_row = line;
                }
                if self.caps.permission_ends_with_tool {
                    // No answer event: the call going on to finish answers the request.
                    self.permissions.shift_remove(&key);
                }
            }
            (Some(key), None) if self.recently_closed_tools.iter().any(|k| key.equivalent(k)) => {
                self.note(Diag::ToolFinishLate, Some(key.to_string()));
            }
            (Some(key), None) => {
                self.note(Diag::ToolFinishWithoutStart, Some(key.to_string()));
            }
            (None, _) => self.touch(tool.agent.as_deref()),
        }
        if interrupt {
            self.interrupt_main();
        }
    }

    /// The oldest open id-less call with the same name and input. More than one candidate
    /// is a guess, and is counted.
    fn pair_first_in_first_out(&mut self, tool: &ToolRef<'_>) -> Option<u64> {
        let name_hash = tool.name.as_deref().map(text_hash);
        let mut candidates = self
            .tools
            .iter()
            .filter(|(_, t)| t.name_hash == name_hash && t.input_hash == tool.input_hash)
            .filter_map(|(k, _)| match k {
                ToolKey::Fifo(n) => Some(*n),
                ToolKey::Id(_) => None,
            });
        let first = candidates.next();
        let more = candidates.next().is_some();
        match &first {
            None => self.note(
                Diag::ToolFinishWithoutStart,
                tool.name.as_deref().map(str::to_owned),
            ),
            Some(key) if more => self.note(
                Diag::ToolPairingAmbiguous,
                Some(format!(
                    "{} paired with ~{key}",
                    tool.name.as_deref().unwrap_or("?")
                )),
            ),
            Some(_) => {}
        }
        first
    }

    /// The key of a permission window: the call id, the approval id, else the open call it
    /// is about, matched by tool name and input (most recent first).
    fn permission_key(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) -> PermissionKey {
        if let Some(id) = tool.call_id.as_deref().or(approval_id) {
            return PermissionKey::Id(id.to_owned());
        }
        let name_hash = tool.name.as_deref().map(text_hash);
        let owner = self.owner(tool.agent.as_deref());
        let find = |exact_input: bool| {
            self.tools
                .iter()
                .rev()
                .find(|(_, t)| {
                    (name_hash.is_none() || t.name_hash == name_hash)
                        && (!exact_input
                            || tool.input_hash.is_none()
                            || t.input_hash == tool.input_hash)
                        && (tool.agent.is_none() || t.owner == owner)
                })
                .map(|(k, _)| k.clone())
        };
        if let Some(key) = find(true) {
            return key.into();
        }
        // Codex adds a `description` to the permission request's input: the inputs differ,
        // the tool is the same.
        if let Some(key) = find(false) {
            self.note(Diag::PermissionMatchedByName, Some(key.to_string()));
            return key.into();
        }
        let key = PermissionKey::ByName(tool.name.as_deref().unwrap_or("permission").to_owned());
        self.note(Diag::PermissionUnmatched, Some(key.to_string()));
        key
    }

    pub(super) fn permission_requested(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) {
        self.start_implied();
        let key = self.permission_key(tool, approval_id);
        let owner = self.owner(tool.agent.as_deref());
        self.touch(tool.agent.as_deref());
        if self.permissions.contains_key(&key) {
            self.note(Diag::PermissionDuplicate, Some(key.to_string()));
            return;
        }
        if self.permissions.len() >= MAX_PENDING_PERMISSIONS {
            self.permissions.shift_remove_index(0);
            self.note(Diag::StateLimitReached, Some("pending permissions".into()));
        }
        let name = tool
            .name
            .as_deref()
            .map(|n| crate::envelope::clip_name(n).to_owned());
        self.permissions.insert(key, (owner, name));
    }

    pub(super) fn permission_resolved(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) {
        self.touch(tool.agent.as_deref());
        let key = match tool.call_id.as_deref().or(approval_id) {
            Some(id) => PermissionKey::Id(id.to_owned()),
            None => self.permission_key(tool, None),
        };
        let removed = self.permissions.shift_remove(&key).is_some()
            || approval_id.is_some_and(|id| {
                self.permissions
                    .shift_remove(&PermissionKey::Id(id.to_owned()))
                    .is_some()
            });
        if !removed {
            self.note(Diag::PermissionResultWithoutRequest, Some(key.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use indexmap::IndexMap;

    use super::{PermissionKey, ToolKey, ToolKeyRef};

    #[test]
    fn a_borrowed_key_finds_the_owned_one_and_nothing_else() {
        let mut tools = IndexMap::new();
        tools.insert(ToolKey::Id("call_1".into()), 1);
        tools.insert(ToolKey::Fifo(1), 2);
        assert_eq!(tools.get(&ToolKeyRef::Id("call_1")), Some(&1));
        assert_eq!(tools.get(&ToolKeyRef::Fifo(1)), Some(&2));
        assert_eq!(tools.get(&ToolKeyRef::Id("~1")), None);
        let mut permissions = IndexMap::new();
        permissions.insert(PermissionKey::Id("call_1".into()), 1);
        permissions.insert(PermissionKey::ByName("call_2".into()), 2);
        permissions.insert(PermissionKey::Fifo(3), 3);
        assert_eq!(permissions.get(&ToolKeyRef::Id("call_1")), Some(&1));
        assert_eq!(permissions.get(&ToolKeyRef::Id("call_2")), None);
        assert_eq!(permissions.get(&ToolKeyRef::Fifo(3)), Some(&3));
    }

    use super::super::{Correlator, Observation};
    use crate::agent::Agent;
    use crate::diagnostics::{Diag, Note};
    use crate::event::{Decision, Event, ToolRef};

    fn feed(c: &mut Correlator, line: u64, event: Event<'_>) -> Vec<Note> {
        let obs = Observation {
            line,
            generation: None,
            event: &event,
            source: crate::source::Source::Hook,
        };
        c.observe(obs, None).notes
    }

    fn prompt() -> Event<'static> {
        Event::PromptSubmitted {
            text: Cow::Borrowed("go"),
            steer: false,
            turn_id: None,
            agent: None,
        }
    }

    fn tool(call_id: Option<&'static str>, name: &'static str) -> ToolRef<'static> {
        ToolRef {
            call_id: call_id.map(Cow::Borrowed),
            name: Some(Cow::Borrowed(name)),
            ..ToolRef::default()
        }
    }

    #[test]
    fn a_real_id_never_finishes_a_fifo_call() {
        let mut c = Correlator::new(Agent::GeminiCli.capabilities());
        feed(&mut c, 1, prompt());
        feed(
            &mut c,
            2,
            Event::ToolStarted {
                tool: tool(None, "read"),
            },
        );
        let tool = tool(Some("~1"), "read");
        let notes = feed(&mut c, 3, Event::ToolFinished { tool });
        assert_eq!(
            notes,
            [Note::new(Diag::ToolFinishWithoutStart, Some("~1".into()))]
        );
        assert_eq!(c.posture().turn.open_tool_calls, 1);
    }

    #[test]
    fn a_real_id_never_resolves_a_by_name_permission() {
        let mut c = Correlator::new(Agent::KimiCode.capabilities());
        feed(&mut c, 1, prompt());
        let tool_ref = tool(None, "Shell");
        let notes = feed(
            &mut c,
            2,
            Event::PermissionRequested {
                tool: tool_ref,
                approval_id: None,
                turn_id: None,
            },
        );
        assert!(notes.contains(&Note::new(Diag::PermissionUnmatched, Some("Shell?".into()))));
        let notes = feed(
            &mut c,
            3,
            Event::PermissionResolved {
                tool: tool(Some("Shell?"), "Shell"),
                approval_id: None,
                decision: Decision::Other,
            },
        );
        assert_eq!(
            notes,
            [Note::new(
                Diag::PermissionResultWithoutRequest,
                Some("Shell?".into())
            )]
        );
        assert_eq!(c.posture().turn.pending_permissions, 1);
    }
}
