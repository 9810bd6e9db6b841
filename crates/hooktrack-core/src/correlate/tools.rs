//! Open tool calls, paired by id, or first-in-first-out by name and input where the
//! provider sends no id. Each call keeps the turn that owned it when it started
//! ([`Owner`]), so a turn's calls are found, and closed, with it.
//!
//! The calls are private to this module: they open through [`Tools::start`], pair through
//! [`Tools::finish`], and end with their turn through the `close_*` methods. Every guess
//! (a missing id, an ambiguous pairing, a duplicate, a finish without a start) is noted
//! here.

use std::collections::VecDeque;

use indexmap::{Equivalent, IndexMap};

use super::ctx::Ctx;
use super::keys::{PermissionKey, ToolKey, ToolKeyRef};
use super::{Owner, remember};
use crate::diagnostics::Diag;
use crate::event::ToolRef;
use crate::payload::text_hash;

/// Bound on open calls: memory stays flat whatever the input.
const MAX_OPEN_TOOLS: usize = 4096;

#[derive(Debug)]
struct OpenTool {
    owner: Owner,
    /// The tool's name (clipped) and what the call acts on (already cut), for a person's
    /// summary of what the turn does.
    name: Option<String>,
    argument: Option<String>,
    name_hash: Option<u64>,
    input_hash: Option<u64>,
    /// The call asks the user and waits for the answer (the agent's
    /// [`Dialogs::asks_user`](crate::provider::Dialogs::asks_user)): the tool's name.
    asks_user: Option<&'static str>,
}

/// What a finish paired with.
#[derive(Debug)]
pub(super) enum Finished<'t> {
    /// The open call it names, now closed, and the turn that owned it.
    Closed { key: ToolKeyRef<'t>, owner: Owner },
    /// A key no open call has (noted).
    NotOpen,
    /// Nothing to pair by (noted).
    Unpaired,
}

#[derive(Debug, Default)]
pub(super) struct Tools {
    open: IndexMap<ToolKey, OpenTool>,
    /// Calls closed with their turn, so that a late finish is told from one never started.
    recently_closed: VecDeque<ToolKey>,
    /// The last [`ToolKey::Fifo`] number handed out.
    next_fifo: u64,
}

impl Tools {
    pub(super) fn len(&self) -> usize {
        self.open.len()
    }

    /// The newest open call that asks the user and waits for the answer: its tool.
    pub(super) fn asking_user(&self) -> Option<&'static str> {
        self.open.values().rev().find_map(|t| t.asks_user)
    }

    /// The newest open call that asks the user: its tool and what it acts on.
    pub(super) fn asking_user_call(&self) -> Option<(&'static str, Option<&str>)> {
        self.open
            .values()
            .rev()
            .find_map(|t| Some((t.asks_user?, t.argument.as_deref())))
    }

    /// The newest open call `owner` owns that names its tool: the tool and what the
    /// call acts on.
    pub(super) fn newest_of(&self, owner: Owner) -> Option<(&str, Option<&str>)> {
        self.open
            .values()
            .rev()
            .filter(|t| t.owner == owner)
            .find_map(|t| Some((t.name.as_deref()?, t.argument.as_deref())))
    }

    /// How many open calls belong to an owner `of` picks.
    pub(super) fn count_owned(&self, of: impl Fn(Owner) -> bool) -> usize {
        self.open.values().filter(|t| of(t.owner)).count()
    }

    /// What the open call a permission window names acts on (the request may carry no
    /// input: Kimi Code's names the call by its id alone).
    pub(super) fn argument_for(&self, key: &PermissionKey) -> Option<&str> {
        let key = match key {
            PermissionKey::Id(id) => ToolKeyRef::Id(id),
            PermissionKey::Fifo(n) => ToolKeyRef::Fifo(*n),
            PermissionKey::ByName(_) => return None,
        };
        self.open.get(&key)?.argument.as_deref()
    }

    /// Whether the call with this provider id is open.
    pub(super) fn is_open(&self, call_id: &str) -> bool {
        self.open.contains_key(&ToolKeyRef::Id(call_id))
    }

    /// Opens a call owned by `owner`. `tool_ids`: the provider sends call ids, so a call
    /// without one cannot be paired and is not kept. `asks_user`: the call asks the user
    /// (its tool's name), which blocks the turn while it is open (`blocking.rs`).
    pub(super) fn start(
        &mut self,
        ctx: &mut Ctx,
        tool: &ToolRef<'_>,
        owner: Owner,
        tool_ids: bool,
        asks_user: Option<&'static str>,
    ) {
        let key = match tool.call_id.as_deref() {
            Some(id) => ToolKey::Id(id.to_owned()),
            None if !tool_ids => {
                self.next_fifo += 1;
                ToolKey::Fifo(self.next_fifo)
            }
            None => {
                ctx.note(
                    Diag::ToolCallIdMissing,
                    tool.name.as_deref().map(str::to_owned),
                );
                return;
            }
        };
        let open = OpenTool {
            owner,
            name: tool
                .name
                .as_deref()
                .map(|n| crate::envelope::clip_name(n).to_owned()),
            argument: tool.argument.clone(),
            name_hash: tool.name.as_deref().map(text_hash),
            input_hash: tool.input_hash,
            asks_user,
        };
        if let Some(previous) = self.open.get_mut(&key) {
            *previous = open;
            ctx.note(Diag::ToolStartDuplicate, Some(key.to_string()));
            return;
        }
        if self.open.len() >= MAX_OPEN_TOOLS {
            self.open.shift_remove_index(0);
            ctx.note(Diag::StateLimitReached, Some("open tool calls".into()));
        }
        self.open.insert(key, open);
    }

    /// Closes the open call a finish names (by id, or first-in-first-out where the
    /// provider sends none).
    pub(super) fn finish<'t>(
        &mut self,
        ctx: &mut Ctx,
        tool: &'t ToolRef<'_>,
        tool_ids: bool,
    ) -> Finished<'t> {
        let key = match tool.call_id.as_deref() {
            Some(id) => ToolKeyRef::Id(id),
            None if !tool_ids => match self.pair_first_in_first_out(ctx, tool) {
                Some(n) => ToolKeyRef::Fifo(n),
                None => return Finished::Unpaired,
            },
            None => {
                ctx.note(
                    Diag::ToolCallIdMissing,
                    tool.name.as_deref().map(str::to_owned),
                );
                return Finished::Unpaired;
            }
        };
        if let Some(open) = self.open.shift_remove(&key) {
            return Finished::Closed {
                key,
                owner: open.owner,
            };
        }
        if self.recently_closed.iter().any(|k| key.equivalent(k)) {
            ctx.note(Diag::ToolFinishLate, Some(key.to_string()));
        } else {
            ctx.note(Diag::ToolFinishWithoutStart, Some(key.to_string()));
        }
        Finished::NotOpen
    }

    /// Closes the one open call, if exactly one is open: where a second signal names a
    /// call only by an id no hook carries (GitHub Copilot CLI's session log ends a call the
    /// user rejected, which no hook reports), that call is the only open one. With more
    /// open (parallel calls, a subagent's call beside its `task` call) there is nothing to
    /// tell them apart by: they stay open and end with their turn (noted then). The closed
    /// call's owner.
    pub(super) fn finish_sole(&mut self) -> Option<Owner> {
        if self.open.len() != 1 {
            return None;
        }
        self.open.pop().map(|(_, call)| call.owner)
    }

    /// The oldest open id-less call with the same name and input. More than one candidate
    /// is a guess, and is counted.
    fn pair_first_in_first_out(&self, ctx: &mut Ctx, tool: &ToolRef<'_>) -> Option<u64> {
        let name_hash = tool.name.as_deref().map(text_hash);
        let mut candidates = self
            .open
            .iter()
            .filter(|(_, t)| t.name_hash == name_hash && t.input_hash == tool.input_hash)
            .filter_map(|(k, _)| match k {
                ToolKey::Fifo(n) => Some(*n),
                ToolKey::Id(_) => None,
            });
        let first = candidates.next();
        let more = candidates.next().is_some();
        match &first {
            None => ctx.note(
                Diag::ToolFinishWithoutStart,
                tool.name.as_deref().map(str::to_owned),
            ),
            Some(key) if more => ctx.note(
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

    /// The most recent open call with this name (any, where none is given), with this
    /// input too if `exact_input` (and one is given), owned by `owner` if one is given.
    pub(super) fn latest_matching(
        &self,
        name_hash: Option<u64>,
        input_hash: Option<u64>,
        exact_input: bool,
        owner: Option<Owner>,
    ) -> Option<ToolKey> {
        self.open
            .iter()
            .rev()
            .find(|(_, t)| {
                (name_hash.is_none() || t.name_hash == name_hash)
                    && (!exact_input || input_hash.is_none() || t.input_hash == input_hash)
                    && owner.is_none_or(|owner| t.owner == owner)
            })
            .map(|(k, _)| k.clone())
    }

    /// The open calls of `from` are `to`'s: how many.
    pub(super) fn reassign(&mut self, from: Owner, to: Owner) -> u64 {
        let mut moved = 0;
        for call in self.open.values_mut().filter(|t| t.owner == from) {
            call.owner = to;
            moved += 1;
        }
        moved
    }

    /// A nested turn ended: its calls end with it, each noted.
    pub(super) fn close_owned_by(&mut self, ctx: &mut Ctx, owner: Owner) {
        self.close_where(ctx, |o| o == owner);
    }

    /// The main turn ended: every open call of an owner `of` picks ends with it, each
    /// noted (the calls of scopes going on in the background stay open).
    pub(super) fn close_where(&mut self, ctx: &mut Ctx, of: impl Fn(Owner) -> bool) {
        let closing: Vec<_> = self
            .open
            .iter()
            .filter(|(_, t)| of(t.owner))
            .map(|(id, _)| id.clone())
            .collect();
        for id in closing {
            self.open.shift_remove(&id);
            ctx.note(Diag::ToolOpenAtTurnEnd, Some(id.to_string()));
            remember(&mut self.recently_closed, id);
        }
    }

    /// The session ended: every open call ends unseen (the session's end is the note).
    pub(super) fn drop_all(&mut self) {
        for (id, _) in self.open.drain(..) {
            remember(&mut self.recently_closed, id);
        }
    }
}
