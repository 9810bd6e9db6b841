//! The keys of open tool calls and permission windows. Made-up keys are variants of their
//! own, so they can never collide with a provider's ids, and a borrowed key finds an owned
//! one without allocating.

use std::fmt;
use std::hash::{Hash, Hasher};

use indexmap::Equivalent;

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

#[cfg(test)]
mod tests {
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
}
