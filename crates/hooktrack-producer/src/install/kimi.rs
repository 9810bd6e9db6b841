//! The Kimi observer block in `config.toml` (contract section 7).
//!
//! Both Kimi generations read `[[hooks]]` entries `{event, command, matcher?, timeout?}`
//! from a `config.toml`:
//!
//! | | Kimi Code 2.x | Kimi CLI 1.x |
//! |---|---|---|
//! | file | `$KIMI_CODE_HOME/config.toml` (`~/.kimi-code/`) | `$KIMI_SHARE_DIR/config.toml` (`~/.kimi/`) |
//! | events | the pinned 20 | its own 13 |
//! | unknown key | the whole hooks section is voided, silently | ignored |
//! | unknown event | the whole hooks section is voided, silently | the CLI refuses to start |
//!
//! The installer keeps its entries in one marker-delimited block and edits the file as
//! text, so every byte outside the block stays as it was. After writing, it reads the
//! file back with a strict TOML parser and checks every entry (ours and the operator's);
//! on any violation it puts the previous text back byte for byte and reports why in
//! `channel.json`.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use super::{InstallError, InstallReport, Observer, Uninstalled};
use super::{
    check_observer, emit_command, file_mode, install_recorded, read_text, resolve, write_checked,
    write_config,
};

/// The pinned Kimi Code 2.x event enum (contract section 3).
pub const KIMI_CODE_EVENTS: [&str; 20] = [
    "SessionStart",
    "SessionEnd",
    "SessionHeartbeat",
    "UserPromptSubmit",
    "UserPromptQueued",
    "TurnStarted",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionResult",
    "Stop",
    "StopFailure",
    "Interrupt",
    "SubagentStart",
    "SubagentStop",
    "TaskStarted",
    "PreCompact",
    "PostCompact",
    "Notification",
];

/// Kimi CLI 1.x's own event enum (`kimi_cli.hooks.config.HookEventType`).
pub const KIMI_CLI_EVENTS: [&str; 13] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
];

/// The hook timeout of every observer entry, in seconds.
pub const HOOK_TIMEOUT: i64 = 5;

const BEGIN: &str = "# >>> hooktrack kimi observer";
const END: &str = "# <<< hooktrack kimi observer <<<";
const ALLOWED_KEYS: [&str; 4] = ["event", "matcher", "command", "timeout"];

/// Which Kimi.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Kimi Code 2.x (TypeScript).
    Code,
    /// Kimi CLI 1.x (the legacy Python CLI on PyPI).
    Cli,
}

impl Variant {
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Variant::Code => &KIMI_CODE_EVENTS,
            Variant::Cli => &KIMI_CLI_EVENTS,
        }
    }

    /// The `provider` written into rows and used as the store directory's name.
    pub fn provider(self) -> &'static str {
        match self {
            Variant::Code => "kimi",
            Variant::Cli => "kimi-cli",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Variant::Code => "Kimi Code 2.x",
            Variant::Cli => "Kimi CLI 1.x",
        }
    }

    /// The environment variable naming the directory that holds `config.toml`.
    pub fn home_env(self) -> &'static str {
        match self {
            Variant::Code => "KIMI_CODE_HOME",
            Variant::Cli => "KIMI_SHARE_DIR",
        }
    }

    fn default_home_dir(self) -> &'static str {
        match self {
            Variant::Code => ".kimi-code",
            Variant::Cli => ".kimi",
        }
    }

    /// Kimi Code voids the whole hooks section on an unknown key; Kimi CLI ignores it.
    fn unknown_keys_fatal(self) -> bool {
        matches!(self, Variant::Code)
    }

    /// The Kimi home directory from the environment: `$KIMI_CODE_HOME` /
    /// `$KIMI_SHARE_DIR`, else `~/.kimi-code` / `~/.kimi`.
    pub fn home(self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        if let Some(dir) = env(self.home_env()).filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        env("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(self.default_home_dir()))
    }
}

/// The hook command for one event: absolute, every value POSIX shell-quoted, no secret.
pub fn command(variant: Variant, observer: &Observer, event: &str) -> String {
    emit_command(observer, variant.provider(), event, None)
}

/// The block, from its begin marker to its end marker's newline.
pub fn render_block(variant: Variant, observer: &Observer, newline_added: bool) -> String {
    let mut out = String::new();
    if newline_added {
        out.push('\n');
    }
    out.push_str(&format!(
        "{BEGIN} (generation {}{}) >>>\n",
        observer.generation,
        if newline_added { ", newline added" } else { "" }
    ));
    out.push_str(&format!(
        "# Written by `hooktrack install kimi` for {}; `hooktrack uninstall kimi` removes it.\n\
         # Edits inside this block are lost at the next install.\n",
        variant.label()
    ));
    for event in variant.events() {
        out.push_str("[[hooks]]\n");
        out.push_str(&format!("event = {}\n", toml_string(event)));
        out.push_str(&format!(
            "command = {}\n",
            toml_string(&command(variant, observer, event))
        ));
        out.push_str(&format!("timeout = {HOOK_TIMEOUT}\n"));
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

/// Where the block sits in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Byte range, including the newline the installer added before it, if any.
    pub start: usize,
    pub end: usize,
    pub generation: Option<u64>,
    /// 1-based line of the begin marker.
    pub line: usize,
}

/// Finds the block. `Err` names what is wrong with the markers.
pub fn find_block(text: &str) -> Result<Option<Block>, String> {
    let mut begin: Option<(usize, usize, Option<u64>, bool)> = None;
    let mut found: Option<Block> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let number = i + 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with(BEGIN) {
            if found.is_some() || begin.is_some() {
                return Err(format!("a second hooktrack begin marker at line {number}"));
            }
            let (generation, newline_added) = parse_begin(bare);
            begin = Some((offset, number, generation, newline_added));
        } else if bare.starts_with(END) {
            let Some((start, begin_line, generation, newline_added)) = begin.take() else {
                return Err(format!(
                    "a hooktrack end marker at line {number} without a begin marker"
                ));
            };
            let start = if newline_added && start > 0 && text.as_bytes()[start - 1] == b'\n' {
                start - 1
            } else {
                start
            };
            found = Some(Block {
                start,
                end: offset + line.len(),
                generation,
                line: begin_line,
            });
        }
        offset += line.len();
    }
    if let Some((_, line, _, _)) = begin {
        return Err(format!(
            "the hooktrack begin marker at line {line} has no end marker"
        ));
    }
    Ok(found)
}

fn parse_begin(line: &str) -> (Option<u64>, bool) {
    let Some(inside) = line
        .strip_prefix(BEGIN)
        .and_then(|r| r.trim().strip_prefix('('))
        .and_then(|r| r.split_once(')'))
        .map(|(inside, _)| inside)
    else {
        return (None, false);
    };
    let mut generation = None;
    let mut newline_added = false;
    for part in inside.split(',') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("generation ") {
            generation = n.trim().parse().ok();
        } else if part == "newline added" {
            newline_added = true;
        }
    }
    (generation, newline_added)
}

/// The text without the block, and where the block was.
pub fn strip_block(text: &str) -> Result<(String, Option<Block>), String> {
    match find_block(text)? {
        None => Ok((text.to_owned(), None)),
        Some(block) => {
            let mut out = String::with_capacity(text.len());
            out.push_str(&text[..block.start]);
            out.push_str(&text[block.end..]);
            Ok((out, Some(block)))
        }
    }
}

/// Inserts a freshly rendered block into `base` (a text without a block) at `at` (the old
/// block's place) or at the end.
pub fn merge_block(variant: Variant, observer: &Observer, base: &str, at: Option<usize>) -> String {
    let at = at.filter(|a| *a <= base.len()).unwrap_or(base.len());
    let newline_added = at > 0 && base.as_bytes()[at - 1] != b'\n';
    let block = render_block(variant, observer, newline_added);
    let mut out = String::with_capacity(base.len() + block.len());
    out.push_str(&base[..at]);
    out.push_str(&block);
    out.push_str(&base[at..]);
    out
}

/// What a read-back found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// All `[[hooks]]` entries.
    pub entries: usize,
    /// Entries whose command runs `hooktrack emit` for this observer (when one is given).
    pub ours: usize,
}

/// Strictly parses `text` and checks every `[[hooks]]` entry: keys within {event,
/// matcher, command, timeout} (Kimi Code; Kimi CLI ignores unknown keys), event within the
/// variant's enum, `command` a string, `matcher` a string, timeout an integer in 1..=600.
/// With an `expected` observer, also checks that each of its events has exactly one entry
/// with the exact command, `timeout = 5` and no matcher.
pub fn validate(
    text: &str,
    variant: Variant,
    expected: Option<&Observer>,
) -> Result<Validation, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let e = e.to_string();
        format!("not valid TOML: {}", e.trim().replace('\n', " "))
    })?;
    let entries: &[toml::Value] = match table.get("hooks") {
        None => &[],
        Some(toml::Value::Array(items)) => items,
        Some(_) => return Err("`hooks` is not an array of tables".to_owned()),
    };
    let events = variant.events();
    let mut ours_seen = vec![0usize; events.len()];
    let mut ours = 0;
    for (i, entry) in entries.iter().enumerate() {
        let n = i + 1;
        let toml::Value::Table(entry) = entry else {
            return Err(format!("hooks entry {n} is not a table"));
        };
        if variant.unknown_keys_fatal()
            && let Some(key) = entry.keys().find(|k| !ALLOWED_KEYS.contains(&k.as_str()))
        {
            return Err(format!(
                "hooks entry {n} has the unknown key `{key}` ({} voids the whole hooks section)",
                variant.label()
            ));
        }
        let event = match entry.get("event") {
            Some(toml::Value::String(e)) => e,
            Some(_) => return Err(format!("hooks entry {n}: `event` is not a string")),
            None => return Err(format!("hooks entry {n} has no `event`")),
        };
        let Some(index) = events.iter().position(|e| e == event) else {
            return Err(format!(
                "hooks entry {n}: `{event}` is not one of {}'s {} events",
                variant.label(),
                events.len()
            ));
        };
        let command = match entry.get("command") {
            Some(toml::Value::String(c)) => c,
            Some(_) => return Err(format!("hooks entry {n}: `command` is not a string")),
            None => return Err(format!("hooks entry {n} has no `command`")),
        };
        match entry.get("matcher") {
            None | Some(toml::Value::String(_)) => {}
            Some(_) => return Err(format!("hooks entry {n}: `matcher` is not a string")),
        }
        match entry.get("timeout") {
            None => {}
            Some(toml::Value::Integer(t)) if (1..=600).contains(t) => {}
            Some(toml::Value::Integer(t)) => {
                return Err(format!("hooks entry {n}: timeout {t} is outside 1..=600"));
            }
            Some(_) => return Err(format!("hooks entry {n}: `timeout` is not an integer")),
        }
        if let Some(observer) = expected
            && *command == self::command(variant, observer, event)
        {
            if entry.get("matcher").is_some()
                || entry.get("timeout") != Some(&toml::Value::Integer(HOOK_TIMEOUT))
            {
                return Err(format!(
                    "hooks entry {n} (hooktrack, {event}) lost its timeout or gained a matcher"
                ));
            }
            ours += 1;
            ours_seen[index] += 1;
        }
    }
    if expected.is_some()
        && let Some((i, count)) = ours_seen.iter().enumerate().find(|(_, c)| **c != 1)
    {
        return Err(format!(
            "{} hooktrack entries for {} (expected exactly 1)",
            count, events[i]
        ));
    }
    Ok(Validation {
        entries: entries.len(),
        ours,
    })
}

/// Installs (or replaces) the observer block in `config` and records the verdict in
/// `<observer.dir>/channel.json`.
pub fn install(
    config: &Path,
    variant: Variant,
    observer: &Observer,
) -> Result<InstallReport, InstallError> {
    let result = install_inner(config, variant, observer);
    install_recorded(observer, variant.provider(), variant.label(), result)
}

fn install_inner(
    config: &Path,
    variant: Variant,
    observer: &Observer,
) -> Result<InstallReport, InstallError> {
    check_observer(observer)?;
    let config = resolve(config);
    let original = read_text(&config)?;
    let before = original.as_deref().unwrap_or("");
    let (base, old) = strip_block(before).map_err(|detail| InstallError::Markers {
        path: config.clone(),
        detail,
    })?;
    let merged = merge_block(variant, observer, &base, old.as_ref().map(|b| b.start));
    // Read back from disk, strictly.
    let v = write_checked(&config, original.as_deref(), &merged, |back| {
        validate(back, variant, Some(observer)).and_then(|v| match strip_block(back) {
            Ok((outside, Some(_))) if outside == base => Ok(v),
            Ok((_, Some(_))) => Err("bytes outside the block changed".to_owned()),
            Ok((_, None)) => Err("the block is missing".to_owned()),
            Err(e) => Err(e),
        })
    })?;
    Ok(InstallReport {
        config,
        entries: v.entries,
        ours: v.ours,
        replaced: old.map(|b| b.generation),
        created: original.is_none(),
    })
}

/// Removes the block, restoring the text outside it. With `generation`, only a block of
/// that generation is removed.
pub fn uninstall(config: &Path, generation: Option<u64>) -> Result<Uninstalled, InstallError> {
    let config = resolve(config);
    let Some(text) = read_text(&config)? else {
        return Ok(Uninstalled::NoFile);
    };
    let (base, block) = strip_block(&text).map_err(|detail| InstallError::Markers {
        path: config.clone(),
        detail,
    })?;
    let Some(block) = block else {
        return Ok(Uninstalled::NoBlock);
    };
    if generation.is_some() && block.generation != generation {
        return Ok(Uninstalled::KeptOther {
            generation: block.generation,
        });
    }
    write_config(&config, &base, file_mode(&config))?;
    Ok(Uninstalled::Removed {
        generation: block.generation,
    })
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub config: PathBuf,
    pub entries: usize,
    /// The hooktrack block, if any: its generation and entry count.
    pub block: Option<(Option<u64>, usize)>,
}

/// Checks `config` without changing it: markers well formed, strict TOML, every entry
/// valid, and the block (if any) complete for its own generation.
pub fn check(config: &Path, variant: Variant) -> Result<CheckReport, InstallError> {
    let config = resolve(config);
    let text = read_text(&config)?.unwrap_or_default();
    let invalid = |detail: String| InstallError::Invalid {
        path: config.clone(),
        detail,
    };
    let block = find_block(&text).map_err(|detail| InstallError::Markers {
        path: config.clone(),
        detail,
    })?;
    let all = validate(&text, variant, None).map_err(invalid)?;
    let block = match block {
        None => None,
        Some(b) => {
            let inside = &text[b.start..b.end];
            let entries = inside.lines().filter(|l| l.trim() == "[[hooks]]").count();
            if entries != variant.events().len() {
                return Err(invalid(format!(
                    "the hooktrack block has {entries} entries; {} has {} events",
                    variant.label(),
                    variant.events().len()
                )));
            }
            Some((b.generation, entries))
        }
    };
    Ok(CheckReport {
        config,
        entries: all.entries,
        block,
    })
}

/// Tells Kimi Code from Kimi CLI: `kimi --version` on PATH (1.x is the CLI), else the
/// directory of the given config file (`.kimi-code` or `.kimi`), else `$KIMI_CODE_HOME` or
/// `~/.kimi-code` (Code), else `~/.kimi/config.toml` (CLI).
pub fn detect_variant(
    env: impl Fn(&str) -> Option<OsString>,
    config: Option<&Path>,
) -> Result<(Variant, String), InstallError> {
    if let Ok(Some(version)) = kimi_version() {
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u64>().ok());
        return match major {
            Some(1) => Ok((Variant::Cli, format!("`kimi --version` says {version}"))),
            Some(_) => Ok((Variant::Code, format!("`kimi --version` says {version}"))),
            None => Err(InstallError::Detect {
                detail: format!("unreadable version {version:?}"),
            }),
        };
    }
    let parent = config
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    match parent {
        Some(".kimi-code") => return Ok((Variant::Code, "the config is in .kimi-code".to_owned())),
        Some(".kimi") => return Ok((Variant::Cli, "the config is in .kimi".to_owned())),
        _ => {}
    }
    if config.is_some() {
        return Err(InstallError::Detect {
            detail: "no `kimi` on PATH and the config's directory does not tell".to_owned(),
        });
    }
    if env("KIMI_CODE_HOME").is_some_and(|v| !v.is_empty()) {
        return Ok((Variant::Code, "$KIMI_CODE_HOME is set".to_owned()));
    }
    if let Some(home) = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) {
        if home.join(".kimi-code").is_dir() {
            return Ok((Variant::Code, "~/.kimi-code exists".to_owned()));
        }
        if home.join(".kimi").join("config.toml").is_file() {
            return Ok((Variant::Cli, "~/.kimi/config.toml exists".to_owned()));
        }
    }
    Err(InstallError::Detect {
        detail: "no `kimi` on PATH, no ~/.kimi-code, no ~/.kimi/config.toml".to_owned(),
    })
}

/// The first `x.y.z` that `kimi --version` prints, within 5 s.
fn kimi_version() -> io::Result<Option<String>> {
    let mut child = Command::new("kimi")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    Ok(first_version(&out))
}

fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty())
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observer() -> Observer {
        Observer {
            emitter: PathBuf::from("/opt/it's here/hooktrack"),
            url: "http://127.0.0.1:4242/events".to_owned(),
            dir: PathBuf::from("/s/hook-observation/kimi"),
            generation: 3,
        }
    }

    #[test]
    fn the_block_parses_and_validates_for_both_variants() {
        for variant in [Variant::Code, Variant::Cli] {
            let text = merge_block(variant, &observer(), "", None);
            let v = validate(&text, variant, Some(&observer())).unwrap();
            assert_eq!(v.ours, variant.events().len());
            let block = find_block(&text).unwrap().unwrap();
            assert_eq!(block.generation, Some(3));
            assert_eq!((block.start, block.end), (0, text.len()));
        }
    }

    #[test]
    fn the_command_survives_toml_and_shell_quoting() {
        let text = merge_block(Variant::Cli, &observer(), "", None);
        let table: toml::Table = toml::from_str(&text).unwrap();
        let first = &table["hooks"].as_array().unwrap()[0];
        assert_eq!(
            first["command"].as_str().unwrap(),
            "'/opt/it'\\''s here/hooktrack' emit --url 'http://127.0.0.1:4242/events' --dir '/s/hook-observation/kimi' --provider 'kimi-cli' --generation 3 --event 'PreToolUse'"
        );
    }

    #[test]
    fn a_text_without_final_newline_gets_it_back_on_strip() {
        let base = "a = 1";
        let merged = merge_block(Variant::Code, &observer(), base, None);
        assert!(merged.starts_with(
            "a = 1\n# >>> hooktrack kimi observer (generation 3, newline added) >>>\n"
        ));
        let (stripped, block) = strip_block(&merged).unwrap();
        assert_eq!(stripped, base);
        assert_eq!(block.unwrap().generation, Some(3));
    }

    #[test]
    fn replacing_keeps_the_place() {
        let base = "a = 1\n\n[x]\ny = 2\n";
        let merged = merge_block(Variant::Code, &observer(), base, Some(6));
        let (stripped, block) = strip_block(&merged).unwrap();
        assert_eq!(stripped, base);
        assert_eq!(block.unwrap().start, 6);
    }

    #[test]
    fn broken_markers_are_named() {
        assert!(
            find_block("# >>> hooktrack kimi observer (generation 1) >>>\n")
                .unwrap_err()
                .contains("no end marker")
        );
        assert!(
            find_block("# <<< hooktrack kimi observer <<<\n")
                .unwrap_err()
                .contains("without a begin marker")
        );
    }

    #[test]
    fn violations() {
        let bad_event = "[[hooks]]\nevent = \"TurnStarted\"\ncommand = \"x\"\n";
        assert!(
            validate(bad_event, Variant::Cli, None)
                .unwrap_err()
                .contains("not one of Kimi CLI 1.x's 13 events")
        );
        assert!(validate(bad_event, Variant::Code, None).is_ok());
        let bad_key = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\nwhen = 1\n";
        assert!(
            validate(bad_key, Variant::Code, None)
                .unwrap_err()
                .contains("unknown key `when`")
        );
        assert!(validate(bad_key, Variant::Cli, None).is_ok());
        let bad_timeout = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 0\n";
        assert!(
            validate(bad_timeout, Variant::Code, None)
                .unwrap_err()
                .contains("outside 1..=600")
        );
        let float_timeout = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 5.0\n";
        assert!(validate(float_timeout, Variant::Code, None).is_err());
        assert!(validate("hooks = 3\n", Variant::Code, None).is_err());
        assert!(validate("[[hooks]\n", Variant::Code, None).is_err());
    }

    #[test]
    fn versions() {
        assert_eq!(
            first_version("kimi, version 1.52.0\nkimi-cli is deprecated"),
            Some("1.52.0".to_owned())
        );
        assert_eq!(first_version("2.2.0"), Some("2.2.0".to_owned()));
        assert_eq!(first_version("no version"), None);
    }
}
