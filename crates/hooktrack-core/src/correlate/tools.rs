//! Tool calls (paired by id, or first-in-first-out by name and input where the provider
//! sends no id) and permission windows.

use super::{Correlator, MAX_OPEN_TOOLS, MAX_PENDING_PERMISSIONS, OpenTool, Owner};
use crate::diagnostics::Diag;
use crate::event::ToolRef;
use crate::payload::text_hash;

/// The longest tool name kept for the posture's `blocked_tool` (in bytes).
const MAX_TOOL_NAME: usize = 128;

/// `text` cut to at most `max` bytes, on a character boundary.
fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
        let (key, synthetic) = match tool.call_id.as_deref() {
            Some(id) => (id.to_owned(), false),
            None if !self.caps.tool_ids => {
                self.next_synthetic += 1;
                (format!("~{}", self.next_synthetic), true)
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
            synthetic,
        };
        if let Some(previous) = self.tools.get_mut(&key) {
            *previous = open;
            self.note(Diag::ToolStartDuplicate, Some(key));
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
        let key: Option<std::borrow::Cow<'_, str>> = match tool.call_id.as_deref() {
            Some(id) => Some(id.into()),
            None if !self.caps.tool_ids => self.pair_first_in_first_out(tool).map(Into::into),
            None => {
                self.note(
                    Diag::ToolCallIdMissing,
                    tool.name.as_deref().map(str::to_owned),
                );
                None
            }
        };
        match key.as_deref().map(|k| (k, self.tools.shift_remove(k))) {
            Some((key, Some(open))) => {
                let line = self.line;
                if let Some(rec) = self.turn_mut(open.owner) {
                    rec.last_row = line;
                }
                if self.caps.permission_ends_with_tool {
                    // No answer event: the call going on to finish answers the request.
                    self.permissions.shift_remove(key);
                }
            }
            Some((key, None)) if self.recently_closed_tools.iter().any(|c| c == key) => {
                self.note(Diag::ToolFinishLate, Some(key.to_owned()));
            }
            Some((key, None)) => {
                self.note(Diag::ToolFinishWithoutStart, Some(key.to_owned()));
            }
            None => self.touch(tool.agent.as_deref()),
        }
        if interrupt {
            self.interrupt_main();
        }
    }

    /// The oldest open id-less call with the same name and input. More than one candidate
    /// is a guess, and is counted.
    fn pair_first_in_first_out(&mut self, tool: &ToolRef<'_>) -> Option<String> {
        let name_hash = tool.name.as_deref().map(text_hash);
        let mut candidates = self
            .tools
            .iter()
            .filter(|(_, t)| {
                t.synthetic && t.name_hash == name_hash && t.input_hash == tool.input_hash
            })
            .map(|(k, _)| k.clone());
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
                    "{} paired with {key}",
                    tool.name.as_deref().unwrap_or("?")
                )),
            ),
            Some(_) => {}
        }
        first
    }

    /// The key of a permission window: the call id, the approval id, else the open call it
    /// is about, matched by tool name and input (most recent first).
    fn permission_key(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) -> String {
        if let Some(id) = tool.call_id.as_deref().or(approval_id) {
            return id.to_owned();
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
            return key;
        }
        // Codex adds a `description` to the permission request's input: the inputs differ,
        // the tool is the same.
        if let Some(key) = find(false) {
            self.note(Diag::PermissionMatchedByName, Some(key.clone()));
            return key;
        }
        let key = format!("{}?", tool.name.as_deref().unwrap_or("permission"));
        self.note(Diag::PermissionUnmatched, Some(key.clone()));
        key
    }

    pub(super) fn permission_requested(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) {
        self.start_implied();
        let key = self.permission_key(tool, approval_id);
        let owner = self.owner(tool.agent.as_deref());
        self.touch(tool.agent.as_deref());
        if self.permissions.contains_key(&key) {
            self.note(Diag::PermissionDuplicate, Some(key));
            return;
        }
        if self.permissions.len() >= MAX_PENDING_PERMISSIONS {
            self.permissions.shift_remove_index(0);
            self.note(Diag::StateLimitReached, Some("pending permissions".into()));
        }
        let name = tool
            .name
            .as_deref()
            .map(|n| clip(n, MAX_TOOL_NAME).to_owned());
        self.permissions.insert(key, (owner, name));
    }

    pub(super) fn permission_resolved(&mut self, tool: &ToolRef<'_>, approval_id: Option<&str>) {
        self.touch(tool.agent.as_deref());
        let key = match tool.call_id.as_deref().or(approval_id) {
            Some(id) => id.to_owned(),
            None => self.permission_key(tool, None),
        };
        let removed = self.permissions.shift_remove(&key).is_some()
            || approval_id.is_some_and(|id| self.permissions.shift_remove(id).is_some());
        if !removed {
            self.note(Diag::PermissionResultWithoutRequest, Some(key));
        }
    }
}
