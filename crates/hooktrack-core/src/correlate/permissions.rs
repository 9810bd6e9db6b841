//! Pending permission windows. A request opens one, its answer closes it (or, where the
//! provider sends no answer, the call going on to finish); any pending window blocks the
//! turn. Each window keeps the turn that owned it when it opened ([`Owner`]), so a turn's
//! windows close with it.
//!
//! The windows are private to this module: they open through [`Permissions::request`],
//! close through [`Permissions::resolve`], [`Permissions::answered_by_call`] and the
//! `close_*` methods. Every guess is noted here or in [`window_key`].

use indexmap::IndexMap;

use super::Owner;
use super::ctx::Ctx;
use super::keys::{PermissionKey, ToolKeyRef};
use super::tools::Tools;
use crate::diagnostics::Diag;
use crate::event::ToolRef;
use crate::payload::text_hash;

/// Bound on pending windows: memory stays flat whatever the input.
const MAX_PENDING_PERMISSIONS: usize = 1024;

#[derive(Debug)]
struct Pending {
    owner: Owner,
    /// The tool the request names (clipped), for the posture's `blocked_tool`.
    tool: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Permissions {
    pending: IndexMap<PermissionKey, Pending>,
}

impl Permissions {
    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The tool of the most recent window that names one.
    pub(super) fn blocked_tool(&self) -> Option<String> {
        self.pending.values().rev().find_map(|p| p.tool.clone())
    }

    /// Opens a window owned by `owner`; `tool` is the name the request gives.
    pub(super) fn request(
        &mut self,
        ctx: &mut Ctx,
        key: PermissionKey,
        owner: Owner,
        tool: Option<&str>,
    ) {
        if self.pending.contains_key(&key) {
            ctx.note(Diag::PermissionDuplicate, Some(key.to_string()));
            return;
        }
        if self.pending.len() >= MAX_PENDING_PERMISSIONS {
            self.pending.shift_remove_index(0);
            ctx.note(Diag::StateLimitReached, Some("pending permissions".into()));
        }
        let tool = tool.map(|n| crate::envelope::clip_name(n).to_owned());
        self.pending.insert(key, Pending { owner, tool });
    }

    /// Closes the window an answer names: by its key, else by the approval id.
    pub(super) fn resolve(&mut self, ctx: &mut Ctx, key: PermissionKey, approval_id: Option<&str>) {
        if !self.close(&key, approval_id) {
            ctx.note(Diag::PermissionResultWithoutRequest, Some(key.to_string()));
        }
    }

    /// Closes the window of `key` (or of the answer's own id). True if one was open.
    pub(super) fn close(&mut self, key: &PermissionKey, approval_id: Option<&str>) -> bool {
        self.pending.shift_remove(key).is_some()
            || approval_id.is_some_and(|id| {
                self.pending
                    .shift_remove(&PermissionKey::Id(id.to_owned()))
                    .is_some()
            })
    }

    /// The call a window was about finished: where no answer event exists, that answers it.
    pub(super) fn answered_by_call(&mut self, key: ToolKeyRef<'_>) {
        self.pending.shift_remove(&key);
    }

    /// The pending windows of `from` are `to`'s.
    pub(super) fn reassign(&mut self, from: Owner, to: Owner) {
        for window in self.pending.values_mut().filter(|p| p.owner == from) {
            window.owner = to;
        }
    }

    /// A call of `name` started: a window opened by name alone (the request came before
    /// any call it could name, as Qwen Code's `PermissionRequest` precedes `PreToolUse`)
    /// is answered, since the agent starts a call only once it is allowed.
    pub(super) fn answered_by_start(&mut self, name: Option<&str>) {
        let key = PermissionKey::ByName(name.unwrap_or("permission").to_owned());
        self.pending.shift_remove(&key);
    }

    /// A nested turn ended: its windows close with it (its end is the note).
    pub(super) fn close_owned_by(&mut self, owner: Owner) {
        self.pending.retain(|_, p| p.owner != owner);
    }

    /// The main turn ended: every window of an owner `of` picks closes with it, each
    /// noted (the windows of scopes going on in the background stay pending).
    pub(super) fn close_where(&mut self, ctx: &mut Ctx, of: impl Fn(Owner) -> bool) {
        self.pending.retain(|key, p| {
            let closing = of(p.owner);
            if closing {
                ctx.note(Diag::PermissionOpenAtTurnEnd, Some(key.to_string()));
            }
            !closing
        });
    }

    /// The session ended: every window closes unseen (the session's end is the note).
    pub(super) fn drop_all(&mut self) {
        self.pending.clear();
    }
}

/// The key of a permission window: the call id, the approval id, else the open call it is
/// about, matched by tool name and input (most recent first; only `owner`'s calls where
/// the event names a subagent).
pub(super) fn window_key(
    ctx: &mut Ctx,
    tools: &Tools,
    tool: &ToolRef<'_>,
    approval_id: Option<&str>,
    owner: Owner,
) -> PermissionKey {
    if let Some(id) = tool.call_id.as_deref().or(approval_id) {
        return PermissionKey::Id(id.to_owned());
    }
    let name_hash = tool.name.as_deref().map(text_hash);
    let owner = tool.agent.is_some().then_some(owner);
    if let Some(key) = tools.latest_matching(name_hash, tool.input_hash, true, owner) {
        return key.into();
    }
    // Codex adds a `description` to the permission request's input: the inputs differ,
    // the tool is the same.
    if let Some(key) = tools.latest_matching(name_hash, tool.input_hash, false, owner) {
        ctx.note(Diag::PermissionMatchedByName, Some(key.to_string()));
        return key.into();
    }
    let key = PermissionKey::ByName(tool.name.as_deref().unwrap_or("permission").to_owned());
    ctx.note(Diag::PermissionUnmatched, Some(key.to_string()));
    key
}
