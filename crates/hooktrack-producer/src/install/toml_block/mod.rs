//! The Kimi observer block in `config.toml` (contract section 7).
//!
//! Both Kimi generations read `[[hooks]]` entries `{event, command, matcher?, timeout?}`
//! from a `config.toml` (where, and which events: `Agent::config()`,
//! `Agent::hook_events()`; how strictly: [`super::facts`]). The installer keeps its
//! entries in marker-delimited blocks and edits the file as text, so every byte outside
//! them stays as it was: at most one environment-routed block (`setup`'s, for every start
//! of the agent) and one generation-scoped block (a launch's, contract section 7), each
//! written and removed on its own ([`Blocks`]). The read-back parses the file with a
//! strict TOML parser and checks every entry, ours and the operator's ([`validate`]).

mod validate;

use std::path::Path;

use hooktrack_core::agent::Agent;

pub use self::validate::validate;
use super::command::command;
use super::facts;
use super::format::{Edit, Removal, Which};
use super::{InstallError, MarkerError, Observer, Replaced, Validation, Violation};

const BEGIN: &str = "# >>> hooktrack kimi observer";
const END: &str = "# <<< hooktrack kimi observer <<<";
/// The begin marker's scope for an environment-routed block (no generation).
const ROUTED: &str = "routed by environment";

/// The block, from its begin marker to its end marker's newline.
pub fn render_block(agent: Agent, observer: &Observer, newline_added: bool) -> String {
    let mut out = String::new();
    if newline_added {
        out.push('\n');
    }
    let scope = match observer.generation() {
        Some(g) => format!("generation {g}"),
        None => ROUTED.to_owned(),
    };
    out.push_str(&format!(
        "{BEGIN} ({scope}{}) >>>\n",
        if newline_added { ", newline added" } else { "" }
    ));
    out.push_str(&format!(
        "# Written by `hooktrack install kimi` for {}; `hooktrack uninstall kimi` removes it.\n\
         # Edits inside this block are lost at the next install.\n",
        agent.label()
    ));
    for event in agent.hook_events() {
        out.push_str("[[hooks]]\n");
        out.push_str(&format!("event = {}\n", toml_string(event)));
        out.push_str(&format!(
            "command = {}\n",
            toml_string(&command(agent, observer, event))
        ));
        out.push_str(&format!("timeout = {}\n", facts::timeout(agent, event)));
    }
    out.push_str(END);
    out.push('\n');
    out
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Where a block sits in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Byte range, including the newline the installer added before it, if any.
    pub start: usize,
    pub end: usize,
    pub generation: Option<u64>,
    /// The block routes by the environment.
    pub routed: bool,
    /// 1-based line of the begin marker.
    pub line: usize,
}

/// hooktrack's blocks in one text: at most one environment-routed block (`setup`'s, for
/// every start of the agent) and at most one generation-scoped block (the running
/// launch's). The two live side by side: a launch writes and removes its own and never
/// the other, and the routed entries stand down for an agent the launch started
/// (`HOOKTRACK_LAUNCH_BLOCK` in its environment), so each hook delivers once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blocks {
    pub routed: Option<Block>,
    /// The generation-scoped block (or one whose begin marker names no scope).
    pub scoped: Option<Block>,
}

impl Blocks {
    /// The block of the routed or of the generation-scoped kind.
    pub fn of(&self, routed: bool) -> Option<&Block> {
        if routed {
            self.routed.as_ref()
        } else {
            self.scoped.as_ref()
        }
    }

    /// Both blocks, in the order they sit in the text.
    fn in_order(&self) -> Vec<&Block> {
        let mut all: Vec<&Block> = self.routed.iter().chain(self.scoped.iter()).collect();
        all.sort_by_key(|b| b.start);
        all
    }
}

/// A begin marker seen, its end not yet.
struct Open {
    offset: usize,
    line: usize,
    marker: BeginMarker,
}

/// What a begin marker says: `(generation N[, newline added])` or `(routed by
/// environment[, newline added])`.
struct BeginMarker {
    generation: Option<u64>,
    routed: bool,
    newline_added: bool,
}

/// Finds hooktrack's blocks; `Err` names what is wrong with the markers (a begin inside a
/// block, a second block of one kind, an end without a begin, a begin without an end).
pub fn find_blocks(text: &str) -> Result<Blocks, MarkerError> {
    let mut open: Option<Open> = None;
    let mut found = Blocks::default();
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let number = i + 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with(BEGIN) {
            let marker = parse_begin(bare);
            if open.is_some() || found.of(marker.routed).is_some() {
                return Err(MarkerError::SecondBegin { line: number });
            }
            open = Some(Open {
                offset,
                line: number,
                marker,
            });
        } else if bare.starts_with(END) {
            let Some(begin) = open.take() else {
                return Err(MarkerError::EndWithoutBegin { line: number });
            };
            // The newline the installer added before its block belongs to the block.
            let start = begin.offset;
            let start =
                if begin.marker.newline_added && start > 0 && text.as_bytes()[start - 1] == b'\n' {
                    start - 1
                } else {
                    start
                };
            let block = Block {
                start,
                end: offset + line.len(),
                generation: begin.marker.generation,
                routed: begin.marker.routed,
                line: begin.line,
            };
            if block.routed {
                found.routed = Some(block);
            } else {
                found.scoped = Some(block);
            }
        }
        offset += line.len();
    }
    if let Some(begin) = open {
        return Err(MarkerError::NoEnd { line: begin.line });
    }
    Ok(found)
}

fn parse_begin(line: &str) -> BeginMarker {
    let mut marker = BeginMarker {
        generation: None,
        routed: false,
        newline_added: false,
    };
    let Some(inside) = line
        .strip_prefix(BEGIN)
        .and_then(|r| r.trim().strip_prefix('('))
        .and_then(|r| r.split_once(')'))
        .map(|(inside, _)| inside)
    else {
        return marker;
    };
    for part in inside.split(',') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("generation ") {
            marker.generation = n.trim().parse().ok();
        } else if part == ROUTED {
            marker.routed = true;
        } else if part == "newline added" {
            marker.newline_added = true;
        }
    }
    marker
}

/// The text without the block of one kind (routed or generation-scoped), and where that
/// block was; the other kind's block stays.
pub fn strip_block(text: &str, routed: bool) -> Result<(String, Option<Block>), MarkerError> {
    match find_blocks(text)?.of(routed) {
        None => Ok((text.to_owned(), None)),
        Some(block) => {
            let mut out = String::with_capacity(text.len());
            out.push_str(&text[..block.start]);
            out.push_str(&text[block.end..]);
            Ok((out, Some(block.clone())))
        }
    }
}

/// The text without `block`. When that block took the newline it added before itself and
/// the other block follows it, the newline goes to the other block (its begin marker then
/// says so), so its marker stays at the start of a line and its own removal later gives
/// the bytes from before both.
fn cut(text: &str, block: &Block) -> String {
    let (head, rest) = (&text[..block.start], &text[block.end..]);
    if head.is_empty() || head.ends_with('\n') || !rest.starts_with(BEGIN) {
        return format!("{head}{rest}");
    }
    let (marker, after) = rest.split_at(rest.find('\n').map_or(rest.len(), |i| i + 1));
    let parsed = parse_begin(marker.trim_end_matches(['\n', '\r']));
    let scope = match (parsed.routed, parsed.generation) {
        (true, _) => ROUTED.to_owned(),
        (false, Some(g)) => format!("generation {g}"),
        // Not one of ours as written: left as it is, on a line of its own.
        (false, None) => return format!("{head}\n{rest}"),
    };
    format!("{head}\n{BEGIN} ({scope}, newline added) >>>\n{after}")
}

/// The text without any hooktrack block.
fn strip_all(text: &str, blocks: &Blocks) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for block in blocks.in_order() {
        out.push_str(&text[from..block.start]);
        from = block.end;
    }
    out.push_str(&text[from..]);
    out
}

/// Inserts a freshly rendered block into `base` (a text without a block) at `at` (the old
/// block's place) or at the end.
pub fn merge_block(agent: Agent, observer: &Observer, base: &str, at: Option<usize>) -> String {
    let at = at.filter(|a| *a <= base.len()).unwrap_or(base.len());
    let newline_added = at > 0 && base.as_bytes()[at - 1] != b'\n';
    let block = render_block(agent, observer, newline_added);
    let mut out = String::with_capacity(base.len() + block.len());
    out.push_str(&base[..at]);
    out.push_str(&block);
    out.push_str(&base[at..]);
    out
}

/// The install edit: the old block out, a new one in its place (or at the end).
pub(crate) fn edit(
    agent: Agent,
    config: &Path,
    before: &str,
    observer: &Observer,
) -> Result<Edit, InstallError> {
    let routed = observer.generation().is_none();
    let (base, old) = strip_block(before, routed).map_err(|problem| InstallError::Markers {
        path: config.to_owned(),
        problem,
    })?;
    Ok(Edit {
        text: merge_block(agent, observer, &base, old.as_ref().map(|b| b.start)),
        replaced: old.map_or(Replaced::Nothing, |b| Replaced::entries_of(b.generation)),
        outside: base,
    })
}

/// The read-back: strict validation, then the text outside the block unchanged.
pub(crate) fn read_back(
    agent: Agent,
    back: &str,
    observer: &Observer,
    outside: &str,
) -> Result<Validation, Violation> {
    let v = validate(back, agent, Some(observer))?;
    match strip_block(back, observer.generation().is_none())? {
        (text, Some(_)) if text == outside => Ok(v),
        (_, Some(_)) => Err(Violation::new("bytes outside the block changed")),
        (_, None) => Err(Violation::new("the block is missing")),
    }
}

/// Removes the blocks `which` names: a launch's own generation (never setup's block nor
/// another launch's), setup's routed block, or every block.
pub(crate) fn remove(config: &Path, text: &str, which: Which) -> Result<Removal, InstallError> {
    let blocks = find_blocks(text).map_err(|problem| InstallError::Markers {
        path: config.to_owned(),
        problem,
    })?;
    let removed = |block: &Block| Removal::Removed {
        text: cut(text, block),
        generation: block.generation,
    };
    Ok(match which {
        Which::Any => {
            let Some(newest) = blocks.scoped.as_ref().or(blocks.routed.as_ref()) else {
                return Ok(Removal::Nothing);
            };
            Removal::Removed {
                text: strip_all(text, &blocks),
                generation: newest.generation,
            }
        }
        Which::Routed => blocks.routed.as_ref().map_or(Removal::Nothing, removed),
        // A launch's cleanup takes its own block, never setup's nor a newer launch's.
        Which::Generation(g) => match (&blocks.scoped, &blocks.routed) {
            (Some(block), _) if block.generation == Some(g) => removed(block),
            (Some(block), _) => Removal::KeptOther {
                generation: block.generation,
            },
            (None, Some(_)) => Removal::KeptOther { generation: None },
            (None, None) => Removal::Nothing,
        },
    })
}

/// Markers well formed, strict TOML, every entry valid, and the block (if any) complete
/// for its own generation. A missing file is an empty one; no block is not an error.
pub(crate) fn check(
    agent: Agent,
    config: &Path,
    text: Option<&str>,
) -> Result<Validation, InstallError> {
    let text = text.unwrap_or_default();
    let invalid = |violation: Violation| InstallError::Invalid {
        path: config.to_owned(),
        violation,
    };
    let blocks = find_blocks(text).map_err(|problem| InstallError::Markers {
        path: config.to_owned(),
        problem,
    })?;
    let all = validate(text, agent, None).map_err(invalid)?;
    let events = agent.hook_events().len();
    let mut ours = 0;
    for block in blocks.in_order() {
        let inside = &text[block.start..block.end];
        let entries = inside.lines().filter(|l| l.trim() == "[[hooks]]").count();
        if entries != events {
            return Err(invalid(Violation::new(format!(
                "the hooktrack block at line {} has {entries} entries; {} has {events} events",
                block.line,
                agent.label(),
            ))));
        }
        ours += entries;
    }
    Ok(Validation {
        entries: all.entries,
        ours,
        generation: blocks.scoped.as_ref().and_then(|b| b.generation),
        routed: blocks.routed.is_some(),
    })
}

#[cfg(test)]
mod tests;
