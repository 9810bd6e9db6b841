//! The Claude-style JSON hooks table shared by Claude Code, Codex CLI and Gemini CLI:
//!
//! ```json
//! {"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
//! ```
//!
//! | | Claude Code | Codex CLI | Gemini CLI |
//! |---|---|---|---|
//! | file | `$CLAUDE_CONFIG_DIR/settings.json` (`~/.claude/`) | `$CODEX_HOME/hooks.json` (`~/.codex/`) | `~/.gemini/settings.json` |
//! | project file | `<dir>/.claude/settings.json` | `<dir>/.codex/hooks.json` | `<dir>/.gemini/settings.json` |
//! | events | its 28 (not `WorktreeCreate`/`WorktreeRemove`) | its 12 | its 11 |
//! | `timeout` | 5 (seconds) | 5 s; 3 s for `SessionEnd`/`Interrupt` (Codex clamps them) | 5000 (milliseconds) |
//! | one malformed entry | the whole file is skipped | the whole file is skipped | that entry is skipped |
//!
//! JSON carries no comments, so there is no marker block: hooktrack's entries are the ones
//! whose command is `'<emitter>' emit --observer hooktrack ...` (see
//! [`is_hooktrack_command`]). The file is parsed with serde_json (`preserve_order`), so
//! every key keeps its place; hooktrack's entries are removed, one matcher group per event
//! (`{"matcher": "", "hooks": [entry]}`) is appended, and the file is written back in its
//! own layout (indent, line ending, final newline). After writing, the file is read back
//! and checked; on any violation the previous bytes are put back and `channel.json` says
//! why.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::ser::{PrettyFormatter, Serializer};
use serde_json::{Map, Value, json};

use super::{
    InstallError, InstallReport, Observer, Uninstalled, check_observer, emit_command, file_mode,
    install_recorded, read_text, resolve, write_checked, write_config,
};

/// Claude Code 2.1.197's events, all hooked but `WorktreeCreate` and `WorktreeRemove` (a
/// command hook there replaces the worktree creation itself).
pub const CLAUDE_EVENTS: [&str; 28] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "MessageDisplay",
];

/// Codex CLI 0.171.0's events.
pub const CODEX_EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
    "Interrupt",
];

/// Gemini CLI 0.61.0's events.
pub const GEMINI_EVENTS: [&str; 11] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "Notification",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

/// The label every hooktrack command carries: `'<emitter>' emit --observer hooktrack ...`.
pub const OBSERVER_LABEL: &str = "hooktrack";

/// What follows the quoted emitter in every hooktrack command.
const COMMAND_MARK: &str = " emit --observer hooktrack ";

/// The matcher of hooktrack's groups. All three CLIs read an empty matcher as "every
/// occurrence"; `*` means the same for matching, but Claude Code also takes a non-empty
/// `FileChanged` matcher as a list of file names to watch.
pub const MATCH_ALL: &str = "";

/// An agent CLI whose hooks live in a Claude-style JSON table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
}

/// The unit of a `timeout` in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Gemini];

    /// The `provider` written into rows (what `hooktrack replay` detects) and the store
    /// directory's name; also the `install` subcommand.
    pub fn provider(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// Every event hooktrack hooks.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &CLAUDE_EVENTS,
            Agent::Codex => &CODEX_EVENTS,
            Agent::Gemini => &GEMINI_EVENTS,
        }
    }

    pub fn timeout_unit(self) -> TimeoutUnit {
        match self {
            Agent::Gemini => TimeoutUnit::Milliseconds,
            Agent::Claude | Agent::Codex => TimeoutUnit::Seconds,
        }
    }

    /// The `timeout` of hooktrack's entry for `event`, in the file's unit: 5 s (the
    /// emitter gives up after 3 s whatever happens), except where Codex clamps to 3 s.
    pub fn timeout(self, event: &str) -> u64 {
        match self {
            Agent::Gemini => 5000,
            Agent::Codex if matches!(event, "SessionEnd" | "Interrupt") => 3,
            Agent::Claude | Agent::Codex => 5,
        }
    }

    /// The timeouts the read-back accepts for hooktrack's entries: 1 s ..= 600 s.
    fn timeout_range(self) -> RangeInclusive<u64> {
        match self.timeout_unit() {
            TimeoutUnit::Seconds => 1..=600,
            TimeoutUnit::Milliseconds => 1000..=600_000,
        }
    }

    /// The environment variable naming the CLI's home directory, if it has one.
    pub fn home_env(self) -> Option<&'static str> {
        match self {
            Agent::Claude => Some("CLAUDE_CONFIG_DIR"),
            Agent::Codex => Some("CODEX_HOME"),
            Agent::Gemini => None,
        }
    }

    /// The directory under `$HOME` (or a project) that holds the file.
    pub fn dot_dir(self) -> &'static str {
        match self {
            Agent::Claude => ".claude",
            Agent::Codex => ".codex",
            Agent::Gemini => ".gemini",
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Gemini => "settings.json",
            Agent::Codex => "hooks.json",
        }
    }

    /// The CLI's home: `$CLAUDE_CONFIG_DIR` / `$CODEX_HOME` if set, else `~/.claude`,
    /// `~/.codex`, `~/.gemini`.
    pub fn home(self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        if let Some(dir) = self.home_env().and_then(&env).filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        env("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(self.dot_dir()))
    }

    /// The user-level file.
    pub fn default_config(self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        self.home(env).map(|h| h.join(self.file_name()))
    }

    /// The project-level file of the project in `dir`.
    pub fn project_config(self, dir: &Path) -> PathBuf {
        dir.join(self.dot_dir()).join(self.file_name())
    }

    /// The top-level keys the CLI accepts, when it rejects any other: Codex reads
    /// `hooks.json` with serde's `deny_unknown_fields`, so one more key and no hook runs.
    fn top_level_keys(self) -> Option<&'static [&'static str]> {
        match self {
            Agent::Codex => Some(&["description", "hooks"]),
            Agent::Claude | Agent::Gemini => None,
        }
    }

    /// Whether the CLI reads `hooks.<event>` so strictly that one malformed entry voids
    /// the whole file (so the user's entries are checked too). Claude Code skips a settings
    /// file with any schema error ("files with errors are skipped entirely"); Codex fails
    /// to deserialize `hooks.json` (it ignores event names it does not know); Gemini CLI
    /// discards just the malformed entry.
    fn strict_about(self, event: &str) -> bool {
        match self {
            Agent::Claude => true,
            Agent::Codex => CODEX_EVENTS.contains(&event),
            Agent::Gemini => false,
        }
    }

    /// What happens to a file with a malformed entry, for the violation message.
    fn strictness(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code skips a settings file with any invalid entry",
            Agent::Codex => "Codex ignores a hooks.json with any invalid entry",
            Agent::Gemini => "Gemini CLI skips it",
        }
    }

    /// A switch in this file that turns every hook off, if it is on.
    fn hooks_switched_off(self, root: &Map<String, Value>) -> Option<&'static str> {
        let is_false = |v: Option<&Value>| v == Some(&Value::Bool(false));
        match self {
            Agent::Claude if root.get("disableAllHooks") == Some(&Value::Bool(true)) => {
                Some("`disableAllHooks` is true")
            }
            Agent::Gemini if is_false(root.get("hooksConfig").and_then(|c| c.get("enabled"))) => {
                Some("`hooksConfig.enabled` is false")
            }
            Agent::Gemini if is_false(root.get("hooks").and_then(|h| h.get("enabled"))) => {
                Some("`hooks.enabled` is false")
            }
            _ => None,
        }
    }
}

/// The hook command for one event (see [`emit_command`]), labelled `--observer hooktrack`.
pub fn command(agent: Agent, observer: &Observer, event: &str) -> String {
    emit_command(observer, agent.provider(), event, Some(OBSERVER_LABEL))
}

/// hooktrack's entry for one event: `{"type": "command", "command": ..., "timeout": ...}`.
pub fn entry(agent: Agent, observer: &Observer, event: &str) -> Value {
    json!({
        "type": "command",
        "command": command(agent, observer, event),
        "timeout": agent.timeout(event),
    })
}

/// The identification rule: a command is hooktrack's when it is one POSIX single-quoted
/// word (as [`super::shell_quote`] writes it: `'...'`, a `'` inside as `'\''`) followed
/// by ` emit --observer hooktrack `.
pub fn is_hooktrack_command(command: &str) -> bool {
    after_quoted_word(command).is_some_and(|rest| rest.starts_with(COMMAND_MARK))
}

/// The text after a leading single-quoted word, `None` if there is none.
fn after_quoted_word(text: &str) -> Option<&str> {
    let mut rest = text.strip_prefix('\'')?;
    loop {
        let end = rest.find('\'')?;
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(more) => rest = more,
            None => return Some(rest),
        }
    }
}

/// `Some(generation)` when `entry` is hooktrack's (the generation `None` if unreadable).
fn ours(entry: &Value) -> Option<Option<u64>> {
    if entry.get("type").and_then(Value::as_str) != Some("command") {
        return None;
    }
    let command = entry.get("command").and_then(Value::as_str)?;
    is_hooktrack_command(command).then(|| generation_of(command))
}

fn generation_of(command: &str) -> Option<u64> {
    let (_, rest) = command.split_once(" --generation ")?;
    rest.split(' ').next()?.parse().ok()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How the file was laid out, so it is written back the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    /// One indentation step; `None` for a one-line (compact) file.
    indent: Option<String>,
    crlf: bool,
    final_newline: bool,
}

impl Layout {
    fn of(text: &str) -> Self {
        let body = text.trim();
        let indent = if body.is_empty() || body == "{}" {
            Some("  ".to_owned())
        } else if !body.contains('\n') {
            None
        } else {
            let step = body.lines().skip(1).find_map(|line| {
                let ws: String = line
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                (!ws.is_empty() && ws.len() < line.trim_end().len()).then_some(ws)
            });
            Some(step.unwrap_or_else(|| "  ".to_owned()))
        };
        Self {
            indent,
            crlf: text.contains("\r\n"),
            final_newline: body.is_empty() || text.ends_with('\n'),
        }
    }
}

/// A parsed settings file: a JSON object whose `hooks`, if any, is an object.
#[derive(Clone, Debug)]
pub struct Settings {
    root: Map<String, Value>,
    layout: Layout,
}

impl Settings {
    /// Parses a settings file's text (blank text is an empty object). `Err` says what is
    /// wrong, in words that follow the file's name.
    pub fn parse(text: &str) -> Result<Self, String> {
        let layout = Layout::of(text);
        if text.trim().is_empty() {
            return Ok(Self {
                root: Map::new(),
                layout,
            });
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("is not valid JSON ({e})"))?;
        let Value::Object(root) = value else {
            return Err(format!("holds {}, not a JSON object", kind(&value)));
        };
        if let Some(hooks) = root.get("hooks").filter(|h| !h.is_object()) {
            return Err(format!(
                "has a `hooks` that is {}, not an object",
                kind(hooks)
            ));
        }
        Ok(Self { root, layout })
    }

    /// The text, laid out as the file was.
    pub fn render(&self) -> Result<String, String> {
        let mut out = Vec::new();
        let written = match &self.layout.indent {
            None => serde_json::to_writer(&mut out, &self.root),
            Some(step) => {
                let formatter = PrettyFormatter::with_indent(step.as_bytes());
                self.root
                    .serialize(&mut Serializer::with_formatter(&mut out, formatter))
            }
        };
        written.map_err(|e| format!("cannot be rendered as JSON ({e})"))?;
        let mut text =
            String::from_utf8(out).map_err(|_| "cannot be rendered as UTF-8".to_owned())?;
        if self.layout.final_newline {
            text.push('\n');
        }
        if self.layout.crlf {
            // JSON strings cannot hold a raw newline: every one is layout.
            text = text.replace('\n', "\r\n");
        }
        Ok(text)
    }

    fn hooks(&self) -> Option<&Map<String, Value>> {
        self.root.get("hooks").and_then(Value::as_object)
    }

    /// hooktrack's entries: (event, generation).
    pub fn ours(&self) -> Vec<(String, Option<u64>)> {
        let mut found = Vec::new();
        for (event, groups) in self.hooks().into_iter().flatten() {
            for group in groups.as_array().into_iter().flatten() {
                let entries = group.get("hooks").and_then(Value::as_array);
                for generation in entries.into_iter().flatten().filter_map(ours) {
                    found.push((event.clone(), generation));
                }
            }
        }
        found
    }

    /// Removes hooktrack's entries whose generation `select` accepts, then every matcher
    /// group, event list and `hooks` object that this removal left empty (empty ones it
    /// did not empty stay). Returns how many entries went.
    pub fn strip(&mut self, select: impl Fn(Option<u64>) -> bool) -> usize {
        let Some(Value::Object(hooks)) = self.root.get_mut("hooks") else {
            return 0;
        };
        let mut removed = 0;
        let mut emptied = Vec::new();
        for (event, groups) in hooks.iter_mut() {
            let Value::Array(groups) = groups else {
                continue;
            };
            let before = removed;
            groups.retain_mut(|group| {
                let Some(Value::Array(entries)) = group.get_mut("hooks") else {
                    return true;
                };
                let had = entries.len();
                entries.retain(|e| !ours(e).is_some_and(&select));
                removed += had - entries.len();
                !(entries.is_empty() && had > 0)
            });
            if removed > before && groups.is_empty() {
                emptied.push(event.clone());
            }
        }
        for event in &emptied {
            hooks.shift_remove(event);
        }
        if removed > 0 && hooks.is_empty() {
            self.root.shift_remove("hooks");
        }
        removed
    }

    /// Appends one matcher group with hooktrack's entry to each of the agent's events
    /// (creating `hooks` and the event lists at the end where missing).
    pub fn add(&mut self, agent: Agent, observer: &Observer) -> Result<(), String> {
        let hooks = self
            .root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(hooks) = hooks else {
            return Err(format!(
                "has a `hooks` that is {}, not an object",
                kind(hooks)
            ));
        };
        if let Some((event, value)) = agent
            .events()
            .iter()
            .find_map(|e| hooks.get(*e).filter(|v| !v.is_array()).map(|v| (e, v)))
        {
            return Err(format!(
                "has a `hooks.{event}` that is {}, not a list of matcher groups",
                kind(value)
            ));
        }
        for event in agent.events() {
            let groups = hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(groups) = groups {
                groups.push(json!({
                    "matcher": MATCH_ALL,
                    "hooks": [entry(agent, observer, event)],
                }));
            }
        }
        Ok(())
    }

    /// Everything, compact and in order: two files hold the same settings iff these match.
    fn canonical(&self) -> String {
        Value::Object(self.root.clone()).to_string()
    }
}

/// What a read-back found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// Every hook entry (the user's and hooktrack's).
    pub entries: usize,
    /// hooktrack's entries.
    pub ours: usize,
    /// Their generation, when there are some.
    pub generation: Option<u64>,
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
) -> Result<Validation, String> {
    let settings = Settings::parse(text)?;
    let root = &settings.root;
    if let Some(allowed) = agent.top_level_keys()
        && let Some(key) = root.keys().find(|k| !allowed.contains(&k.as_str()))
    {
        return Err(format!(
            "{} ignores every hook in a hooks.json with a top-level key other than {}: `{key}`",
            agent.label(),
            allowed.join(" and ")
        ));
    }
    if let Some(switch) = agent.hooks_switched_off(root) {
        return Err(format!("{} runs no hook: {switch}", agent.label()));
    }
    let mut entries = 0;
    let mut found: Vec<(&str, &Value, Option<&Value>)> = Vec::new();
    for (event, groups) in settings.hooks().into_iter().flatten() {
        let strict = agent.strict_about(event);
        let Some(groups) = groups.as_array() else {
            if strict {
                return Err(format!(
                    "`hooks.{event}` is {}, not a list of matcher groups ({})",
                    kind(groups),
                    agent.strictness()
                ));
            }
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event}[{g}]");
            if strict {
                check_group(agent, group)
                    .map_err(|e| format!("{at}: {e} ({})", agent.strictness()))?;
            }
            let list = group.get("hooks").and_then(Value::as_array);
            for (h, item) in list.into_iter().flatten().enumerate() {
                entries += 1;
                if ours(item).is_some() {
                    found.push((event, item, group.get("matcher")));
                } else if strict {
                    check_entry(agent, item)
                        .map_err(|e| format!("{at}.hooks[{h}]: {e} ({})", agent.strictness()))?;
                }
            }
        }
    }
    let generation = check_ours(agent, &found, expected)?;
    Ok(Validation {
        entries,
        ours: found.len(),
        generation,
    })
}

fn check_group(agent: Agent, group: &Value) -> Result<(), String> {
    let Some(group) = group.as_object() else {
        return Err(format!("a matcher group is {}, not an object", kind(group)));
    };
    match group.get("matcher") {
        None | Some(Value::String(_)) => {}
        Some(Value::Null) if agent == Agent::Codex => {}
        Some(other) => return Err(format!("`matcher` is {}, not a string", kind(other))),
    }
    match group.get("hooks") {
        Some(Value::Array(_)) => Ok(()),
        None if agent == Agent::Codex => Ok(()),
        None => Err("`hooks` is missing".to_owned()),
        Some(other) => Err(format!("`hooks` is {}, not an array", kind(other))),
    }
}

fn check_entry(agent: Agent, entry: &Value) -> Result<(), String> {
    let Some(entry) = entry.as_object() else {
        return Err(format!("an entry is {}, not an object", kind(entry)));
    };
    let kind_of = entry.get("type").and_then(Value::as_str);
    let Some(kind_of) = kind_of else {
        return Err("`type` is missing or not a string".to_owned());
    };
    if agent == Agent::Codex && !["command", "mcp_tool", "prompt", "agent"].contains(&kind_of) {
        return Err(format!("unknown `type` {kind_of:?}"));
    }
    if kind_of != "command" {
        return Ok(());
    }
    if !entry.get("command").is_some_and(Value::is_string) {
        return Err("`command` is missing or not a string".to_owned());
    }
    match (agent, entry.get("timeout")) {
        (_, None) => Ok(()),
        (Agent::Codex, Some(t)) if t.is_u64() => Ok(()),
        (Agent::Claude | Agent::Gemini, Some(t)) if t.as_f64().is_some_and(|t| t > 0.0) => Ok(()),
        (Agent::Codex, Some(t)) => Err(format!("`timeout` {t} is not a whole number of seconds")),
        (_, Some(t)) => Err(format!("`timeout` {t} is not a positive number")),
    }
}

/// Checks hooktrack's entries; returns their generation.
fn check_ours(
    agent: Agent,
    found: &[(&str, &Value, Option<&Value>)],
    expected: Option<&Observer>,
) -> Result<Option<u64>, String> {
    let mut generations = BTreeSet::new();
    let mut hooked = BTreeSet::new();
    for (event, item, matcher) in found {
        if !agent.events().contains(event) {
            return Err(format!(
                "a hooktrack entry on `{event}`, which is not one of {}'s {} events",
                agent.label(),
                agent.events().len()
            ));
        }
        if !hooked.insert(*event) {
            return Err(format!("more than one hooktrack entry on `{event}`"));
        }
        if matcher.and_then(|m| m.as_str()) != Some(MATCH_ALL) {
            return Err(format!(
                "hooktrack's `{event}` entry is not under the empty matcher, so it misses occurrences"
            ));
        }
        let timeout = item.get("timeout").and_then(Value::as_u64);
        let keys: Vec<&str> = item
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if keys != ["type", "command", "timeout"] {
            return Err(format!(
                "hooktrack's `{event}` entry has the keys {keys:?}, not type, command, timeout"
            ));
        }
        match timeout {
            Some(t) if agent.timeout_range().contains(&t) => {}
            _ => {
                return Err(format!(
                    "hooktrack's `{event}` entry has the timeout {}, not an integer in {:?} ({})",
                    item.get("timeout").unwrap_or(&Value::Null),
                    agent.timeout_range(),
                    match agent.timeout_unit() {
                        TimeoutUnit::Seconds => "seconds",
                        TimeoutUnit::Milliseconds => "milliseconds",
                    }
                ));
            }
        }
        let command = item.get("command").and_then(Value::as_str).unwrap_or("");
        generations.insert(generation_of(command));
        if let Some(observer) = expected
            && **item != entry(agent, observer, event)
        {
            return Err(format!(
                "hooktrack's `{event}` entry is not the one rendered for generation {}",
                observer.generation
            ));
        }
    }
    if found.is_empty() {
        return match expected {
            Some(_) => Err("no hooktrack entry".to_owned()),
            None => Ok(None),
        };
    }
    let missing: Vec<&str> = agent
        .events()
        .iter()
        .copied()
        .filter(|e| !hooked.contains(e))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "hooktrack hooks {} of {}'s {} events; missing: {}",
            hooked.len(),
            agent.label(),
            agent.events().len(),
            missing.join(", ")
        ));
    }
    let mut generations = generations.into_iter();
    match (generations.next(), generations.next()) {
        (Some(Some(g)), None) => Ok(Some(g)),
        (Some(None), None) => Err("a hooktrack entry without a readable generation".to_owned()),
        _ => Err("hooktrack entries of more than one generation".to_owned()),
    }
}

/// Installs (or replaces) hooktrack's entries in `config` and records the verdict in
/// `<observer.dir>/channel.json`.
pub fn install(
    config: &Path,
    agent: Agent,
    observer: &Observer,
) -> Result<InstallReport, InstallError> {
    let result = install_inner(config, agent, observer);
    install_recorded(observer, agent.provider(), agent.label(), result)
}

fn install_inner(
    config: &Path,
    agent: Agent,
    observer: &Observer,
) -> Result<InstallReport, InstallError> {
    check_observer(observer)?;
    let config = resolve(config);
    let original = read_text(&config)?;
    let refused = |detail: String| InstallError::Refused {
        path: config.clone(),
        detail,
    };
    let mut settings = Settings::parse(original.as_deref().unwrap_or_default()).map_err(refused)?;
    let old: Vec<Option<u64>> = settings.ours().into_iter().map(|(_, g)| g).collect();
    settings.strip(|_| true);
    settings.add(agent, observer).map_err(refused)?;
    let text = settings.render().map_err(refused)?;
    // What the user's part must look like once hooktrack's entries are taken out again.
    settings.strip(|_| true);
    let user = settings.canonical();
    let v = write_checked(&config, original.as_deref(), &text, |back| {
        let v = validate(back, agent, Some(observer))?;
        let mut back = Settings::parse(back)?;
        back.strip(|_| true);
        if back.canonical() != user {
            return Err("the settings outside hooktrack's entries changed".to_owned());
        }
        Ok(v)
    })?;
    Ok(InstallReport {
        config,
        entries: v.entries,
        ours: v.ours,
        replaced: (!old.is_empty()).then(|| old.into_iter().flatten().max()),
        created: original.is_none(),
    })
}

/// Removes hooktrack's entries (with `generation`, only those of that generation) and
/// whatever matcher group, event list or `hooks` object their removal left empty. A file
/// without hooktrack entries is not rewritten; a file left as `{}` stays.
pub fn uninstall(config: &Path, generation: Option<u64>) -> Result<Uninstalled, InstallError> {
    let config = resolve(config);
    let Some(text) = read_text(&config)? else {
        return Ok(Uninstalled::NoFile);
    };
    let refused = |detail: String| InstallError::Refused {
        path: config.clone(),
        detail,
    };
    let mut settings = Settings::parse(&text).map_err(refused)?;
    let found: Vec<Option<u64>> = settings.ours().into_iter().map(|(_, g)| g).collect();
    if found.is_empty() {
        return Ok(Uninstalled::NoBlock);
    }
    let select = |g: Option<u64>| generation.is_none() || g == generation;
    if !found.iter().any(|g| select(*g)) {
        return Ok(Uninstalled::KeptOther {
            generation: found.into_iter().flatten().max(),
        });
    }
    settings.strip(select);
    let text = settings.render().map_err(refused)?;
    write_config(&config, &text, file_mode(&config))?;
    Ok(Uninstalled::Removed {
        generation: generation.or_else(|| found.into_iter().flatten().max()),
    })
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub config: PathBuf,
    pub validation: Validation,
}

/// Checks `config` without changing it: the file as the agent CLI reads it, and a complete,
/// well-formed set of hooktrack entries. No file or no entry is an error.
pub fn check(config: &Path, agent: Agent) -> Result<CheckReport, InstallError> {
    let config = resolve(config);
    let not_installed = |detail: &str| InstallError::NotInstalled {
        path: config.clone(),
        detail: detail.to_owned(),
    };
    let Some(text) = read_text(&config)? else {
        return Err(not_installed("the file does not exist"));
    };
    let validation = validate(&text, agent, None).map_err(|detail| InstallError::Invalid {
        path: config.clone(),
        detail,
    })?;
    if validation.ours == 0 {
        return Err(not_installed("it holds no hooktrack entry"));
    }
    Ok(CheckReport { config, validation })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observer() -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's here/hooktrack"),
            url: "http://127.0.0.1:4242/events".to_owned(),
            dir: PathBuf::from("/s/hook-observation/claude"),
            generation: 3,
        }
    }

    fn installed(agent: Agent, text: &str) -> String {
        let mut s = Settings::parse(text).unwrap();
        s.strip(|_| true);
        s.add(agent, &observer()).unwrap();
        s.render().unwrap()
    }

    #[test]
    fn the_rule_finds_rendered_commands_only() {
        for agent in Agent::ALL {
            let c = command(agent, &observer(), "Stop");
            assert!(is_hooktrack_command(&c), "{c}");
            assert_eq!(generation_of(&c), Some(3));
        }
        assert!(!is_hooktrack_command(
            "'/usr/bin/hooktrack' emit --url 'http://x' --dir '/d'"
        ));
        assert!(!is_hooktrack_command(
            "hooktrack emit --observer hooktrack --dir /d"
        ));
        assert!(!is_hooktrack_command(
            "'/x' 'y' emit --observer hooktrack --dir /d"
        ));
        assert!(!is_hooktrack_command(
            "'unterminated emit --observer hooktrack "
        ));
        assert!(is_hooktrack_command(
            "'/a'\\''b' emit --observer hooktrack --x"
        ));
    }

    #[test]
    fn every_agent_validates_its_own_render() {
        for agent in Agent::ALL {
            let text = installed(agent, "");
            let v = validate(&text, agent, Some(&observer())).unwrap();
            assert_eq!(v.ours, agent.events().len());
            assert_eq!(v.generation, Some(3));
            assert_eq!(validate(&text, agent, None).unwrap(), v);
        }
    }

    #[test]
    fn a_changed_entry_is_a_violation() {
        let text = installed(Agent::Gemini, "");
        let worse = text.replacen("\"timeout\": 5000", "\"timeout\": 5", 1);
        assert!(
            validate(&worse, Agent::Gemini, None)
                .unwrap_err()
                .contains("not an integer in 1000..=600000 (milliseconds)")
        );
        let other = text.replacen(
            "--generation 3 --event 'BeforeTool'",
            "--generation 4 --event 'BeforeTool'",
            1,
        );
        assert!(
            validate(&other, Agent::Gemini, Some(&observer()))
                .unwrap_err()
                .contains("not the one rendered")
        );
        assert!(
            validate(&other, Agent::Gemini, None)
                .unwrap_err()
                .contains("more than one generation")
        );
        let moved = text.replacen("\"matcher\": \"\"", "\"matcher\": \"Bash\"", 1);
        assert!(
            validate(&moved, Agent::Gemini, None)
                .unwrap_err()
                .contains("empty matcher")
        );
        // An entry on an event the agent does not have.
        let claude = installed(Agent::Claude, "");
        assert!(
            validate(&claude, Agent::Codex, None)
                .unwrap_err()
                .contains("not one of Codex CLI's 12 events")
        );
    }

    #[test]
    fn what_voids_the_file_for_each_agent() {
        let bad_entry = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#;
        assert!(
            validate(bad_entry, Agent::Claude, None)
                .unwrap_err()
                .contains("`command` is missing")
        );
        assert!(validate(bad_entry, Agent::Codex, None).is_err());
        assert!(validate(bad_entry, Agent::Gemini, None).is_ok());
        let no_hooks = r#"{"hooks": {"Stop": [{"matcher": "x"}]}}"#;
        assert!(
            validate(no_hooks, Agent::Claude, None)
                .unwrap_err()
                .contains("`hooks` is missing")
        );
        assert!(validate(no_hooks, Agent::Codex, None).is_ok());
        let float = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1.5}]}]}}"#;
        assert!(validate(float, Agent::Claude, None).is_ok());
        assert!(
            validate(float, Agent::Codex, None)
                .unwrap_err()
                .contains("whole number")
        );
        let extra = r#"{"hooks": {}, "version": 1}"#;
        assert!(
            validate(extra, Agent::Codex, None)
                .unwrap_err()
                .contains("`version`")
        );
        assert!(validate(extra, Agent::Claude, None).is_ok());
        // Codex does not read event names it does not know.
        let unknown = r#"{"hooks": {"Later": 3}}"#;
        assert!(validate(unknown, Agent::Codex, None).is_ok());
        assert!(validate(unknown, Agent::Claude, None).is_err());
        assert!(
            validate(r#"{"disableAllHooks": true}"#, Agent::Claude, None)
                .unwrap_err()
                .contains("runs no hook")
        );
        assert!(
            validate(
                r#"{"hooksConfig": {"enabled": false}}"#,
                Agent::Gemini,
                None
            )
            .is_err()
        );
    }

    #[test]
    fn layouts_round_trip() {
        for text in [
            "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}\n",
            "{\n    \"a\": {\n        \"b\": true\n    }\n}",
            "{\r\n\t\"a\": 1\r\n}\r\n",
            "{\"a\":1,\"b\":{\"c\":[]}}",
            "{}\n",
        ] {
            assert_eq!(Settings::parse(text).unwrap().render().unwrap(), text);
        }
        assert_eq!(Settings::parse("").unwrap().render().unwrap(), "{}\n");
    }

    #[test]
    fn strip_removes_only_what_it_emptied() {
        let user = r#"{"z": 1, "hooks": {"Stop": [], "PreToolUse": [{"matcher": "Bash", "hooks": []}]}, "a": 2}"#;
        let text = installed(Agent::Claude, user);
        let mut s = Settings::parse(&text).unwrap();
        assert_eq!(s.strip(|_| true), 28);
        // The user's empty matcher group stays; the `Stop` list hooktrack filled and
        // emptied again goes (the same meaning to Claude Code).
        assert_eq!(
            s.canonical(),
            r#"{"z":1,"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[]}]},"a":2}"#
        );
    }

    #[test]
    fn refusals_name_the_cause() {
        assert!(
            Settings::parse("{")
                .unwrap_err()
                .starts_with("is not valid JSON (EOF")
        );
        assert_eq!(
            Settings::parse("[]").unwrap_err(),
            "holds an array, not a JSON object"
        );
        assert_eq!(
            Settings::parse(r#"{"hooks": []}"#).unwrap_err(),
            "has a `hooks` that is an array, not an object"
        );
        let mut s = Settings::parse(r#"{"hooks": {"Stop": {}}}"#).unwrap();
        assert_eq!(
            s.add(Agent::Claude, &observer()).unwrap_err(),
            "has a `hooks.Stop` that is an object, not a list of matcher groups"
        );
    }
}
