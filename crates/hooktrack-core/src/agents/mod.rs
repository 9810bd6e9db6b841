//! One folder per agent CLI: everything hooktrack knows about an agent is its
//! [`Descriptor`], a `const` of plain data and function pointers in `agents/<agent>/`.
//!
//! A descriptor holds the agent's names (wire, store, aliases, program names, family), its
//! hook events and the adapter that maps them to the canonical vocabulary, the rules that
//! recognise its payloads, its [`Capabilities`], its transcript's classifier, where its
//! config lives and how strictly it reads it, what else decides whether its hooks run
//! (trust, auth, switches), which arguments hand it its first prompt, and what stops its
//! launcher from starting it at all, and, for an agent without command hooks, the plugin
//! file it loads. [`Agent::descriptor`](crate::agent::Agent::descriptor) is the one `match`
//! on agents; the edges (installers, preflight, the binary) read these facts and keep only
//! the I/O.
//!
//! Adding an agent: a folder here with its `Descriptor` (and its adapter and classifier, or
//! the plugin file it loads), its `pub mod` below, its line in `agent.rs`'s registration
//! list, campaigns in `corpus/<name>/`; the tests below check that the descriptor is
//! complete (`docs/ARCHITECTURE.md`, "Adding an agent").

pub mod auggie;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod copilot_cli;
pub mod factory_droid;
pub mod gemini_cli;
pub mod kilo;
pub mod kimi_cli;
pub mod kimi_code;
pub mod letta_code;
pub mod opencode;
pub mod pi;
pub mod qwen_code;

use std::borrow::Cow;
use std::ffi::OsString;

use serde_json::{Map, Value};

use crate::agent::{Agent, ConfigLocation};
use crate::event::Event;
use crate::payload::Payload;
use crate::provider::Capabilities;
use crate::row::Row;
pub use crate::tool_argument::ArgumentField;

/// Everything hooktrack knows about one agent CLI.
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    /// The agent this describes (`Agent::descriptor` gives it back).
    pub agent: Agent,
    /// The wire name: in JSON output, `--provider`, `--agent`, `install`; the corpus
    /// folder's name.
    pub name: &'static str,
    /// The `provider` written into rows and the store directory's name
    /// (`hook-observation/<store_name>/`).
    pub store_name: &'static str,
    /// For people.
    pub label: &'static str,
    /// The other names the agent answers to besides its wire name; the first is the one a
    /// user types (`claude` for `claude-code`).
    pub aliases: &'static [&'static str],
    /// The family the agent belongs to, whose name picks a member by detection.
    pub family: Option<Member>,
    /// The program names a command line starts it with (`hooktrack session -- claude`).
    pub programs: &'static [&'static str],
    /// Where its hook config lives, and in which format.
    pub config: ConfigLocation,
    /// Every hook event of the newest tested version that hooktrack subscribes to (an
    /// older version gets those it knows: [`Descriptor::hook_events_for`]).
    pub hook_events: &'static [&'static str],
    /// The adapter: one payload, delivered under an event name, into the canonical
    /// vocabulary. Keeps no state across events.
    pub normalize: for<'a> fn(&Cow<'a, str>, &mut Payload<'a>) -> Event<'a>,
    /// How it delimits turns, for the correlator.
    pub capabilities: Capabilities,
    /// The rules that recognise its rows from fields only it sends.
    pub detect: &'static [DetectRule],
    /// The detection reason when a row names the agent outright.
    pub named_by_row: &'static str,
    /// The transcript hooktrack follows, if it writes one.
    pub transcript: Option<Transcript>,
    /// What the installers must know beyond the file and the events.
    pub install: InstallFacts,
    /// What else the agent consults before it runs a hook.
    pub preflight: PreflightFacts,
    /// Which arguments hand it its first prompt at launch.
    pub headless: Headless,
    /// A program name under which the agent never starts (so no hook can fire).
    pub launch_gate: Option<LaunchGate>,
    /// The process of its own program it runs its agent loop in, which can outlive it
    /// (`None`: none seen).
    pub worker: Option<Worker>,
    /// The launcher its package manager puts on `PATH` when that only relays to a native
    /// binary (`None`: the program on `PATH` is the agent itself).
    pub relay: Option<Relay>,
    /// The versions hooktrack is tested against, and the events older versions lack.
    pub versions: Versions,
    /// The plugin file it loads, when it has no command hooks (its config format is
    /// [`ConfigFormat::Plugin`](crate::agent::ConfigFormat::Plugin) exactly then).
    pub plugin: Option<Plugin>,
    /// What its dialogs look like on its terminal, where hooktrack may read the agent's
    /// tmux pane to see one answered (`crate::screen`); `None`: its screen is not read.
    pub screen: Option<Screen>,
    /// Which field of each tool's input names what a call acts on (its command, file,
    /// pattern, url), for a person's summary ([`crate::tool_argument`]); a tool not in
    /// the table shows no argument.
    pub tool_arguments: &'static [ArgumentField],
    /// What tells one of its sessions from another in a store: the payload's own id (every
    /// agent whose payloads name their session) or the agent process that ran the hook.
    pub session_key: SessionKey,
}

/// How the rows of one agent session are told from another's in a store
/// ([`crate::sessions::Sessions`] routes by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKey {
    /// The payload's `session_id` (or its alias) names the session; a row naming none
    /// goes to the current session.
    Payload,
    /// No payload names a session on every event (Letta Code's tool events, `Stop` and
    /// `Notification` name only the folder): a session is the agent process that ran the
    /// hook, the envelope's `agent_pid`, which hooktrack's hook command writes on every
    /// row. A row without one (a bare payload) goes by the payload, as [`Self::Payload`].
    AgentProcess,
}

impl Descriptor {
    /// The hook events to install for the agent at `version` (its `--version`): every
    /// event but those newer than it. An unknown version gets the events every tested
    /// version knows: an older CLI may warn about an event name it does not know (Claude
    /// Code 2.1.197 stops its TUI at launch with a "Settings Warning" dialog), while a
    /// newer one only misses the events left out, which `check` then names.
    pub fn hook_events_for(&self, version: Option<&str>) -> Vec<&'static str> {
        self.hook_events
            .iter()
            .copied()
            .filter(|event| {
                self.versions
                    .since(event)
                    .is_none_or(|since| version.is_some_and(|v| at_least(v, since)))
            })
            .collect()
    }
}

/// An agent's worker: a child of the agent's process, running the same program with these
/// arguments among its own, that runs the agent loop and goes on after the agent's process
/// is killed, firing the hooks of the turn's and the session's end itself. A launch takes
/// the agent's end to be its last worker's (`src/launch/workers.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    pub args: &'static [&'static str],
    /// The versions whose process tree showed it.
    pub seen_in: &'static str,
}

/// A launcher that only relays to the agent's native binary: it runs it with its own
/// arguments and environment and passes its exit code on, but reports an end by a signal
/// as a failure of its own (GitHub Copilot CLI's `npm-loader.js` exits 1 after a
/// `kill -9` of the native binary). A launch runs the native binary itself, so the status
/// it reports is the agent's own (`src/launch/child.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relay {
    /// The end of the launcher's path, once the program found on `PATH` is resolved
    /// (symbolic links followed): the folder before it holds the native packages.
    pub launcher: &'static str,
    /// The native binaries the launcher picks from, under that folder: the first that is
    /// there runs.
    pub natives: &'static [&'static str],
    /// The versions whose launcher was read.
    pub seen_in: &'static str,
}

/// How a dialog that waits on the user looks on the agent's screen, taken from real
/// screens (`tmux capture-pane -p`) of the versions named. A screen read only ends a
/// window whose dialog it saw drawn first, so a look missing here costs the early end,
/// never a wrong one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Screen {
    /// A dialog is drawn while a line of the screen begins with one of these texts, past
    /// its indent and a box's border (`│`).
    pub dialog: &'static [DialogLook],
}

/// One text a drawn dialog shows, and where it was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DialogLook {
    pub text: &'static str,
    /// The versions (and dialog) whose screens showed it.
    pub seen_in: &'static str,
}

impl Screen {
    /// Whether `screen` (a pane's text) draws one of the agent's dialogs: a line that,
    /// past its indent and a box's border, begins with one of the looks. The same words in
    /// a prompt echoed (behind the prompt's mark) or in a reply (behind the agent's bullet)
    /// are no dialog.
    pub fn draws_dialog(&self, screen: &str) -> bool {
        screen.lines().any(|line| {
            let line = line.trim_start_matches(|c: char| c.is_whitespace() || c == '│');
            self.dialog.iter().any(|look| line.starts_with(look.text))
        })
    }
}

/// The supported version window of an agent: the oldest and the newest version the
/// repository's tests run (end-to-end through `hooktrack session`, or replaying its real
/// recordings in `corpus/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    /// The program asked for its `--version`.
    pub program: &'static str,
    pub oldest: &'static str,
    pub newest: &'static str,
    /// Events of [`Descriptor::hook_events`] that versions before the given one do not
    /// know (the oldest version observed to fire them).
    pub events_since: &'static [(&'static str, &'static str)],
}

/// Where a version stands against a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    Within,
    Older,
    Newer,
    /// Not a dotted version number.
    Unreadable,
}

impl Versions {
    /// The version that first knows `event`, when older tested versions do not.
    pub fn since(&self, event: &str) -> Option<&'static str> {
        self.events_since
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, v)| *v)
    }

    /// Where `version` stands against the window.
    pub fn standing(&self, version: &str) -> Standing {
        match (
            compare_versions(version, self.oldest),
            compare_versions(version, self.newest),
        ) {
            (Some(std::cmp::Ordering::Less), _) => Standing::Older,
            (_, Some(std::cmp::Ordering::Greater)) => Standing::Newer,
            (Some(_), Some(_)) => Standing::Within,
            _ => Standing::Unreadable,
        }
    }

    /// Where the agent at `version` (its `--version`, `None` when it gave none) stands,
    /// for people: "Claude Code 2.1.332: within the tested window 2.1.197–2.1.332".
    /// Outside the window hooktrack goes on; the sentence says what to run to judge it.
    pub fn verdict(&self, label: &str, name: &str, version: Option<&str>) -> String {
        let window = self.window();
        let drift = |v: &str| format!("`scripts/drift.sh {name} {v}` shows what changed");
        match version.map(|v| (v, self.standing(v))) {
            Some((v, Standing::Within)) => {
                format!("{label} {v}: within the tested window {window}")
            }
            Some((v, Standing::Newer)) => format!(
                "{label} {v}: newer than the tested window {window}; hooktrack goes on, {}",
                drift(v)
            ),
            Some((v, Standing::Older)) => format!(
                "{label} {v}: older than the tested window {window}; hooktrack goes on, {}",
                drift(v)
            ),
            Some((v, Standing::Unreadable)) => format!(
                "{label} {v:?}: not a version hooktrack can place in the tested window {window}; hooktrack goes on"
            ),
            None => format!(
                "{label}: `{} --version` gave no version; the tested window is {window}",
                self.program
            ),
        }
    }

    /// "2.1.197–2.1.332" (one version when both ends are the same).
    pub fn window(&self) -> String {
        if self.oldest == self.newest {
            self.oldest.to_owned()
        } else {
            format!("{}–{}", self.oldest, self.newest)
        }
    }
}

/// Dotted numeric versions compared part by part (`2.1.33` < `2.1.197`); a suffix after
/// the numbers (`-beta`, ` (Claude Code)`) is ignored. `None`: not a version.
pub fn compare_versions(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    Some(parse_version(a)?.cmp(&parse_version(b)?))
}

fn at_least(version: &str, since: &str) -> bool {
    compare_versions(version, since).is_some_and(|o| o != std::cmp::Ordering::Less)
}

fn parse_version(text: &str) -> Option<Vec<u64>> {
    let numeric = text
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?;
    let parts: Option<Vec<u64>> = numeric.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Agents that answer to one shared name (`kimi`), told apart by detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The shared name (`install kimi`, `--provider kimi`).
    pub name: &'static str,
    /// For people: "which {label} is installed".
    pub label: &'static str,
    /// The program asked for its `--version`.
    pub program: &'static str,
}

impl Family {
    /// The agents of this family, in `Agent::ALL`'s order.
    pub fn members(&'static self) -> impl Iterator<Item = Agent> {
        Agent::ALL
            .into_iter()
            .filter(move |a| a.family() == Some(self))
    }
}

/// An agent's place in its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub family: &'static Family,
    /// The major versions of the family's program that are this member.
    pub majors: Majors,
    /// What on disk says this member is installed, tried in order (after the version).
    pub installed: &'static [InstalledSign],
}

/// Which major versions of a family's program are a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Majors {
    /// Exactly this one.
    Only(u64),
    /// Every one that no other member claims.
    Others,
}

/// A sign on disk that a family member is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstalledSign {
    /// Its home variable (`ConfigLocation::home_env`) is set and not empty.
    HomeEnvSet,
    /// `~/<dot_dir>` is a directory.
    DotDir,
    /// `~/<dot_dir>/<file>` is a file.
    UserFile,
}

/// One way to recognise an agent from a row. Across all agents, the matching rule of
/// the lowest rank decides (a field one CLI alone sends before a shape several could
/// share).
#[derive(Clone, Copy, Debug)]
pub struct DetectRule {
    /// Unique across agents (a test checks it).
    pub rank: u8,
    /// The reason, when the row matches.
    pub test: fn(&Row<'_>) -> Option<&'static str>,
}

/// The transcript an agent names in its payloads (`transcript_path`).
#[derive(Clone, Copy, Debug)]
pub struct Transcript {
    /// Where the agent writes it, for people.
    pub location: &'static str,
    pub classify: Classify,
    /// Every marker line holds one of these byte strings: a line holding none is ignored
    /// without being parsed (Claude Code 2.1.33x writes a ~43 KB `api-request-shape` line
    /// per request, none of them a marker). Empty: every line is parsed.
    pub needles: &'static [&'static str],
    /// Where the payloads name no transcript, or only some of them do: the session's file
    /// under the agent's home, found from the payload's `session_id` (Kimi Code's
    /// `wire.jsonl`; GitHub Copilot CLI's `events.jsonl`, which only `Stop`, `PreCompact`
    /// and `SubagentStart` name, none of them in a first turn ended by Escape).
    pub session_file: Option<SessionFile>,
}

/// A transcript the payloads do not name (or name only late), at `<home>/<dir>/<session_id>/
/// <file>` or, with a workspace level, `<home>/<dir>/<one directory>/<session_id>/<file>`:
/// that directory between is the agent's own (Kimi Code's workspace id, a hash of the
/// working directory), so a reader lists `<home>/<dir>` to find the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionFile {
    /// Under the agent's home (its config home variable's directory).
    pub dir: &'static str,
    pub layout: SessionLayout,
    /// Under the session's own directory.
    pub file: &'static str,
}

/// Where a session's directory sits under [`SessionFile::dir`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionLayout {
    /// `<dir>/<session_id>/` (GitHub Copilot CLI's `session-state/<sessionId>/`).
    Flat,
    /// `<dir>/<workspace>/<session_id>/`, the workspace directory unknown to the payloads
    /// (Kimi Code's `sessions/<workspace>/<session_id>/`).
    Workspace,
}

/// One transcript entry → a known marker's name and canonical event, or `None`.
pub type Classify = fn(&Map<String, Value>) -> Option<(&'static str, Event<'static>)>;

/// What the installers must know about an agent beyond where its config lives and which
/// events it fires: facts of the pinned version, found by reading its config loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstallFacts {
    /// The `timeout` hooktrack writes, in [`Self::timeout_unit`]: 5 s (the emitter gives up
    /// after 3 s whatever happens).
    pub timeout: u64,
    pub timeout_unit: TimeoutUnit,
    /// Events whose timeout the agent clamps lower, with the timeout written for them.
    pub shorter_timeouts: &'static [(&'static str, u64)],
    /// An unknown key in an entry voids the whole hooks section.
    pub unknown_entry_keys_fatal: bool,
    /// The only top-level keys the agent accepts in its hooks file, when one more key
    /// makes it run no hook.
    pub top_level_keys: Option<&'static [&'static str]>,
    /// Whose entries must be well formed for the file to count.
    pub strict: Strictness,
    /// What happens to a file with a malformed entry, for the violation message.
    pub strictness: &'static str,
    /// How the agent reads a JSON hooks table's groups and entries.
    pub schema: EntrySchema,
    /// Switches in the JSON file that turn every hook off.
    pub off_switches: &'static [OffSwitch],
    /// A session writes generation-scoped entries into a config of its own (and removes
    /// them at the end) rather than environment-routed ones into the shared config;
    /// `setup`'s routed entries may sit beside them and stand down for that session.
    pub per_session_entries: bool,
    /// The daemon the agent runs its hooks in, which the first CLI starts and later ones
    /// share (Cline's hub). A session gives its agent a daemon of its own: the hook files
    /// keep the session's routing in that daemon only (any other may hold a session long
    /// gone).
    pub daemon: Option<HookDaemon>,
}

/// How a CLI finds the daemon it runs its hooks in, so that a session can give it one of
/// its own: the variables it reads for the daemon's port and for the file that records
/// the running daemon (without its own record a CLI reuses the daemon another recorded,
/// whatever the port says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookDaemon {
    pub port_var: &'static str,
    pub record_var: &'static str,
}

impl InstallFacts {
    /// An agent that loads hooktrack as a plugin file (OpenCode, Kilo, Pi) and reports a
    /// file that fails to load as `strictness` says. Its timeout is not a hook's: the
    /// plugin never waits for the emitter (which gives up after 3 s); it is kept for the
    /// descriptor's completeness.
    pub const fn plugin(strictness: &'static str) -> Self {
        Self {
            timeout: 5,
            timeout_unit: TimeoutUnit::Seconds,
            shorter_timeouts: &[],
            unknown_entry_keys_fatal: false,
            top_level_keys: None,
            strict: Strictness::Lenient,
            strictness,
            schema: COMMON_SCHEMA,
            off_switches: &[],
            per_session_entries: false,
            daemon: None,
        }
    }

    /// An agent that runs one executable file per event (Cline's hook files) inside the
    /// `daemon` its CLIs share; otherwise as [`Self::plugin`].
    pub const fn hook_files(strictness: &'static str, daemon: HookDaemon) -> Self {
        let mut facts = Self::plugin(strictness);
        facts.daemon = Some(daemon);
        facts
    }
}

impl InstallFacts {
    /// The `timeout` of hooktrack's entry for `event`, in the file's unit.
    pub fn timeout_for(&self, event: &str) -> u64 {
        self.shorter_timeouts
            .iter()
            .find(|(e, _)| *e == event)
            .map_or(self.timeout, |(_, t)| *t)
    }
}

/// The unit of a `timeout` in the agent's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

impl TimeoutUnit {
    pub fn name(self) -> &'static str {
        match self {
            TimeoutUnit::Seconds => "seconds",
            TimeoutUnit::Milliseconds => "milliseconds",
        }
    }

    /// One second in this unit.
    pub fn per_second(self) -> u64 {
        match self {
            TimeoutUnit::Seconds => 1,
            TimeoutUnit::Milliseconds => 1000,
        }
    }
}

/// Which of the file's entries the agent reads so strictly that one malformed entry voids
/// the whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strictness {
    /// Every event's.
    EveryEvent,
    /// The events it knows (it ignores the others).
    KnownEvents,
    /// None: it discards just the malformed entry.
    Lenient,
}

/// How an agent reads a JSON hooks table beyond the common shape (matcher groups of a
/// string `matcher` and a `hooks` list of typed entries with a positive `timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntrySchema {
    /// A group may have a `null` matcher.
    pub null_matcher: bool,
    /// A group may lack `hooks`.
    pub hooks_optional: bool,
    /// The entry types it knows (any other voids the file); `None`: any type.
    pub entry_types: Option<&'static [&'static str]>,
    /// A command entry's `timeout` must be a whole number (of seconds).
    pub whole_timeouts: bool,
    /// hooktrack's groups carry the empty `matcher` (every occurrence); without it they
    /// have no `matcher` key, for an agent that refuses an empty one (GitHub Copilot CLI
    /// ignores the whole file then) and reads a group without one as every occurrence.
    pub matcher: bool,
}

/// The common JSON hooks schema (Claude Code's).
pub const COMMON_SCHEMA: EntrySchema = EntrySchema {
    null_matcher: false,
    hooks_optional: false,
    entry_types: None,
    whole_timeouts: false,
    matcher: true,
};

/// A value in the JSON hooks file that turns every hook off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffSwitch {
    /// The keys leading to it from the top.
    pub path: &'static [&'static str],
    /// Every hook is off when it holds this boolean.
    pub off_when: bool,
    /// What the violation says.
    pub why: &'static str,
}

/// What else an agent consults before it runs a hook, beyond its hooks file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PreflightFacts {
    /// A TOML file beside the hooks file whose switches can turn every hook off.
    pub feature_switches: Option<FeatureSwitches>,
    /// The agent runs only the entries it has trusted, and says which through its app
    /// server.
    pub hook_trust: Option<HookTrust>,
    /// A setting the agent stops without, before any hook runs.
    pub required_setting: Option<RequiredSetting>,
    /// The agent runs headless only in a trusted folder.
    pub folder_trust: Option<FolderTrust>,
    /// The agent validates its config file itself; `check` asks it too.
    pub config_doctor: Option<ConfigDoctor>,
    /// The agent is a script whose interpreter must be at least this new.
    pub runtime: Option<Runtime>,
}

impl PreflightFacts {
    /// An agent that consults nothing beyond its hooks file.
    pub const NONE: Self = Self {
        feature_switches: None,
        hook_trust: None,
        required_setting: None,
        folder_trust: None,
        config_doctor: None,
        runtime: None,
    };
}

/// A script agent's interpreter (named in its `#!` line) and the oldest version it runs
/// under: an older one stops the agent before any hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runtime {
    /// The interpreter's program name in the `#!` line (`node`).
    pub interpreter: &'static str,
    /// For the finding (`Node`).
    pub label: &'static str,
    /// The oldest version it runs under: (major, minor).
    pub min: (u32, u32),
    /// Where to get one.
    pub fix: &'static str,
}

/// The plugin file an agent without command hooks loads in-process
/// ([`ConfigFormat::Plugin`](crate::agent::ConfigFormat::Plugin)), wholly hooktrack's: it
/// hands each event of [`Descriptor::hook_events`] to the same `hooktrack-hook emit` every
/// hook runs. The installer writes hooktrack's header line and comment, then
/// [`Self::source`] with the emit command and the events filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plugin {
    /// The file's source, kept beside the descriptor (`plugin.js`, `extension.ts`) and
    /// embedded: `@ARGV@` stands for the emit command's arguments and `@EVENTS@` for the
    /// events it forwards, each a comma-separated list of JSON strings, and `@QUEUE@` for
    /// [`PLUGIN_QUEUE`], which it hands its payloads to (`enqueue`).
    pub source: &'static str,
    /// What stops the agent loading it, and how to ask which plugins it loads.
    pub loading: PluginLoading,
    /// A list in the agent's settings that can exclude the file, if the agent has one.
    pub exclusion: Option<PluginExclusion>,
}

/// The queue every plugin hands its events to (`plugin_queue.js`, in place of a plugin
/// source's `@QUEUE@`): one hook process at a time in the agent's order, never awaited,
/// its payload a file in `/dev/shm` unlinked at once (a pipe's end would wait for the
/// agent's event loop; a pipe where there is no `/dev/shm`); at most 128 events and 2 MiB of payload, the oldest dropped past either and counted in
/// a row of [`EVENTS_LOST`](crate::envelope::EVENTS_LOST) sent before the next; at the
/// agent's exit what is queued handed over within 400 ms in all, the rest counted in a
/// last loss row the agent does not wait for.
pub const PLUGIN_QUEUE: &str = include_str!("plugin_queue.js");

impl Plugin {
    /// [`Self::source`] with `argv` for `@ARGV@`, `events` for `@EVENTS@` and
    /// [`PLUGIN_QUEUE`] for `@QUEUE@`, in one pass (a path holding a placeholder's text
    /// stays as it is).
    pub fn filled(&self, argv: &str, events: &str) -> String {
        let mut out = String::with_capacity(
            self.source.len() + PLUGIN_QUEUE.len() + argv.len() + events.len(),
        );
        let mut rest = self.source;
        while let Some(at) = rest.find('@') {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            if let Some(after) = tail.strip_prefix("@QUEUE@") {
                out.push_str(PLUGIN_QUEUE);
                rest = after;
            } else if let Some(after) = tail.strip_prefix("@ARGV@") {
                out.push_str(argv);
                rest = after;
            } else if let Some(after) = tail.strip_prefix("@EVENTS@") {
                out.push_str(events);
                rest = after;
            } else {
                out.push('@');
                rest = &tail[1..];
            }
        }
        out.push_str(rest);
        out
    }
}

/// A list in a JSON settings file in the agent's home (the folder
/// [`ConfigLocation::file`](crate::agent::ConfigLocation::file) is under) whose entries,
/// led by one of [`Self::prefixes`], keep the agent from loading the files they match
/// (Pi's `settings.json` `extensions`: `-path` or `!pattern`, as `pi config` writes them).
/// A missing or unreadable settings file excludes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginExclusion {
    /// The settings file, in the agent's home.
    pub file: &'static str,
    /// The top-level key holding the list.
    pub key: &'static str,
    /// What leads an excluding entry; the rest is a path or a glob (`*`, `?`).
    pub prefixes: &'static [char],
}

/// What stops a plugin agent loading hooktrack's plugin, and how to ask it which plugins
/// it loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginLoading {
    /// Who, in the finding ("OpenCode").
    pub who: &'static str,
    /// Environment variables that, set to `1` or `true` (any case), skip every external
    /// plugin (OpenCode's `OPENCODE_PURE`).
    pub env: &'static [&'static str],
    /// Arguments that do the same (`--pure`).
    pub flags: &'static [&'static str],
    /// What a switch skips, in the finding ("every external plugin").
    pub skipped: &'static str,
    /// `<program> <list...>` prints the plugins the agent will load, one `file://` URL
    /// each (`opencode debug info`); empty when the agent has no such command.
    pub list: &'static [&'static str],
    /// What `list` prints instead when plugins are off.
    pub listed_off: &'static str,
}

/// Whether an environment value turns a [`PluginLoading`] switch on: the agent reads
/// `1` and `true` in any case, nothing else.
pub fn switch_on(value: &str) -> bool {
    let value = value.to_ascii_lowercase();
    value == "1" || value == "true"
}

/// The agent's own validator of its config file: `<program> <args...> <file>` exits 0
/// when the agent accepts the file, and non-zero with `rejects` in its output when it
/// does not (any other answer, such as another program of the same name, says nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigDoctor {
    /// Who, in the finding ("Kimi Code's `kimi doctor config` rejects ...").
    pub who: &'static str,
    /// The program asked, when the caller names none.
    pub program: &'static str,
    pub args: &'static [&'static str],
    /// What the validator prints before each file it rejects.
    pub rejects: &'static str,
}

/// `[<table>] <key> = false` in `<file>` (beside the hooks file) turns every hook off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureSwitches {
    pub file: &'static str,
    pub table: &'static str,
    pub keys: &'static [&'static str],
}

/// Hook trust as the agent's own app server reports it (`<program> app-server`,
/// `hooks/list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookTrust {
    /// Who, in the finding ("Codex has not trusted ...").
    pub who: &'static str,
    /// The program asked, when the caller names none.
    pub program: &'static str,
    /// The command in the agent's TUI that trusts entries.
    pub trust_command: &'static str,
    /// The flag that runs untrusted entries anyway.
    pub bypass_flag: &'static str,
}

/// A setting in the hooks file (a JSON pointer) the agent cannot start without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequiredSetting {
    pub pointer: &'static str,
    pub cause: &'static str,
    pub fix: &'static str,
}

/// The agent's trusted-folders file beside the hooks file, and the ways around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FolderTrust {
    pub file: &'static str,
    /// Folder trust is off when this pointer in the hooks file holds `false`.
    pub enabled_pointer: &'static str,
    /// The flag that skips the check.
    pub skip_flag: &'static str,
    /// The variable and value that skip the check.
    pub skip_env: (&'static str, &'static str),
    /// What happens in an untrusted folder, after "DIR is not a trusted folder: ".
    pub consequence: &'static str,
    pub fix: &'static str,
}

/// Which arguments hand the agent its first prompt at launch (a headless run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headless {
    /// Any of these options (`--flag` also as `--flag=value`).
    pub flags: &'static [&'static str],
    /// Or the subcommand is one of these ([`Headless::ANY_WORD`]: any first word, for an
    /// agent whose prompt is its first argument, as `cline PROMPT`).
    pub subcommands: &'static [&'static str],
    /// The global options that take a value (skipped when looking for the subcommand).
    pub value_options: &'static [&'static str],
}

impl Headless {
    /// In [`Self::subcommands`]: any first word that is not an option hands the agent its
    /// prompt (its own commands, `cline auth`, start no task and fire no hook, so taking
    /// them for a prompt costs nothing).
    pub const ANY_WORD: &'static str = "*";

    /// True when `args` (the agent's, after its program) hand it its first prompt.
    pub fn prompt_at_launch(&self, args: &[OsString]) -> bool {
        let flagged = args.iter().any(|a| {
            let a = a.to_string_lossy();
            self.flags.iter().any(|f| {
                a == *f
                    || (f.starts_with("--")
                        && a.strip_prefix(f).is_some_and(|rest| rest.starts_with('=')))
            })
        });
        flagged
            || self.subcommand(args).is_some_and(|s| {
                self.subcommands
                    .iter()
                    .any(|c| *c == Self::ANY_WORD || s == *c)
            })
    }

    /// The subcommand: the first argument that is neither an option nor the value of one
    /// of [`Self::value_options`].
    pub fn subcommand<'a>(&self, args: &'a [OsString]) -> Option<&'a OsString> {
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy();
            if self.value_options.contains(&text.as_ref()) {
                args.next();
            } else if !text.starts_with('-') {
                return Some(arg);
            }
        }
        None
    }
}

/// A program name under which the agent never starts, and what to run instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGate {
    pub program: &'static str,
    pub text: &'static str,
}

#[cfg(test)]
mod tests;

/// An adapter's event for hook `name` with payload `json`, as its `Debug` text: what the
/// adapters' own tests read.
#[cfg(test)]
pub(crate) fn normalized(
    normalize: for<'a> fn(&Cow<'a, str>, &mut Payload<'a>) -> Event<'a>,
    name: &str,
    json: &str,
) -> String {
    let mut payload: Payload<'_> = serde_json::from_str(json).expect("a payload");
    format!("{:?}", normalize(&Cow::Borrowed(name), &mut payload))
}
