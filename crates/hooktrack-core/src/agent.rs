//! The one agent type: every agent CLI hooktrack observes. What hooktrack knows about
//! each is its [`Descriptor`] in `agents/<agent>/`, and [`Agent::descriptor`] is the one
//! `match` on agents. Detection, the adapters, the installers and every command-line flag
//! go through this type; no other list of agents exists.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

use crate::agents::{self, Descriptor, Family};
use crate::event::Event;
use crate::payload::Payload;
use crate::provider::Capabilities;

/// The one registration list: each agent's variant and its folder under `agents/`, which
/// holds its `DESCRIPTOR`. The enum, [`Agent::ALL`] (in this order) and
/// [`Agent::descriptor`], the one `match` on agents, are made from it, so an agent cannot
/// be in one and missing from another.
macro_rules! agents {
    ($($(#[$doc:meta])* $variant:ident => $folder:ident,)*) => {
        /// An agent CLI whose hook payloads hooktrack understands. Serialized as its wire
        /// name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Agent {
            $($(#[$doc])* $variant,)*
        }

        impl Agent {
            /// Every agent, in the registration list's order.
            pub const ALL: [Agent; [$(Agent::$variant),*].len()] = [$(Agent::$variant),*];

            /// Everything hooktrack knows about the agent: the one `match` on agents.
            pub const fn descriptor(self) -> &'static Descriptor {
                match self {
                    $(Agent::$variant => &agents::$folder::DESCRIPTOR,)*
                }
            }
        }
    };
}

agents! {
    /// Kimi Code 2.x, the TypeScript CLI with 20 hook events (the reference mapping).
    KimiCode => kimi_code,
    /// Kimi CLI 1.x, the legacy Python CLI with 13 hook events.
    KimiCli => kimi_cli,
    ClaudeCode => claude_code,
    Codex => codex,
    GeminiCli => gemini_cli,
    QwenCode => qwen_code,
    CopilotCli => copilot_cli,
    /// OpenCode 1.18, observed through hooktrack's plugin (it has no command hooks).
    OpenCode => opencode,
    FactoryDroid => factory_droid,
    /// Pi 0.73, observed through hooktrack's extension (it has no command hooks).
    Pi => pi,
    /// Kilo CLI 7.7, a fork of OpenCode, observed through the same plugin.
    Kilo => kilo,
    /// Cline CLI 3.0, one executable hook file per event, run by its hub daemon.
    Cline => cline,
    /// Auggie 0.36 (Augment), Claude-format hooks of its own names, on a tenant flag.
    Auggie => auggie,
    /// Letta Code 0.25, Claude-style hooks with a payload of its own; sessions by process.
    LettaCode => letta_code,
}

/// How an agent's hook config file is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFormat {
    /// TOML `[[hooks]]` entries (Kimi); hooktrack's are a marker-delimited block.
    TomlHooks,
    /// `{"hooks": {Event: [{matcher, hooks: [{type, command, timeout}]}]}}` (Claude Code,
    /// Codex, Gemini CLI).
    JsonHooks,
    /// A plugin file the agent loads in-process, wholly hooktrack's (OpenCode's
    /// `plugin/hooktrack.js`, Pi's `extensions/hooktrack.ts`): it forwards the agent's
    /// events to the emitter. Its source is the descriptor's
    /// [`plugin`](crate::agents::Descriptor::plugin).
    Plugin,
    /// One executable file per hook event in a folder, named by the event (Cline's
    /// `~/.cline/hooks/TaskStart`, ...), each wholly hooktrack's: the config location's
    /// `file` is the first event's, its siblings the others'.
    HookFiles,
}

/// Where an agent reads its hook config: `$<home_env>/<file>` when the variable is set,
/// else, for a `dot_dir` under `.config/`, `$XDG_CONFIG_HOME/<the rest>/<file>` when that
/// is set, else `$<user_home_env>/<dot_dir>/<file>` when that one is (Gemini CLI's
/// `$GEMINI_CLI_HOME` stands in for `$HOME`), else `~/<dot_dir>/<file>` (a project's own is
/// `<project>/<dot_dir>/<file>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigLocation {
    /// The environment variable naming the directory that holds the file, if any.
    pub home_env: Option<&'static str>,
    /// The environment variable the agent reads in place of `$HOME`, if any.
    pub user_home_env: Option<&'static str>,
    /// The directory under `$HOME` (or a project) holding the file.
    pub dot_dir: &'static str,
    pub file: &'static str,
    pub format: ConfigFormat,
    /// The agent also reads a project's own `<project>/<dot_dir>/<file>`, so
    /// `install --project DIR` may write it.
    pub project_install: bool,
}

/// The XDG config home's default place under `$HOME`.
const XDG_CONFIG_DIR: &str = ".config/";

impl ConfigLocation {
    /// The directory that holds the file: `$<home_env>` when set and not empty, else
    /// `$HOME/<dot_dir>`. `env` looks a variable up (the caller decides which environment).
    pub fn home(&self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        if let Some(dir) = self.home_env.and_then(&env).filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        // A folder under `~/.config/` is the XDG config home's: the agents that keep theirs
        // there (OpenCode, Kilo) read `$XDG_CONFIG_HOME/<name>` when it is set.
        if let Some(name) = self.dot_dir.strip_prefix(XDG_CONFIG_DIR)
            && let Some(xdg) = env("XDG_CONFIG_HOME").filter(|d| !d.is_empty())
        {
            return Some(PathBuf::from(xdg).join(name));
        }
        self.user_home_env
            .and_then(&env)
            .filter(|h| !h.is_empty())
            .or_else(|| env("HOME"))
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(self.dot_dir))
    }

    /// The variable that names the agent's home, and what a directory given for it holds:
    /// `$CLAUDE_CONFIG_DIR`, `$CODEX_HOME`, `$KIMI_CODE_HOME`, `$KIMI_SHARE_DIR` hold the
    /// file itself; `$GEMINI_CLI_HOME` holds `.gemini/`. One meaning for `--home DIR`:
    /// the value of this variable.
    pub fn home_var(&self) -> Option<&'static str> {
        self.home_env.or(self.user_home_env)
    }

    /// The file under `dir` when `dir` is the value of [`Self::home_var`].
    pub fn file_in_home(&self, dir: &Path) -> PathBuf {
        if self.home_env.is_some() {
            dir.join(self.file)
        } else {
            dir.join(self.dot_dir).join(self.file)
        }
    }

    /// The user-level file: `<home>/<file>`.
    pub fn user_file(&self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        self.home(env).map(|h| h.join(self.file))
    }

    /// The file of the project in `dir`: `<dir>/<dot_dir>/<file>`.
    pub fn project_file(&self, dir: &Path) -> PathBuf {
        dir.join(self.dot_dir).join(self.file)
    }
}

/// A name no agent answers to.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown agent `{name}` (expected {})", Agent::names_for_help())]
#[non_exhaustive]
pub struct UnknownAgent {
    pub name: String,
}

impl Agent {
    /// The provider assumed until a row identifies one: the contract's default, Kimi Code.
    pub const ASSUMED: Agent = Agent::KimiCode;

    /// The wire name: in JSON output, `--provider`, `--agent`.
    pub const fn name(self) -> &'static str {
        self.descriptor().name
    }

    /// The `provider` written into rows and the store directory's name
    /// (`hook-observation/<store_name>/`); Kimi Code's is the contract's `kimi`.
    pub const fn store_name(self) -> &'static str {
        self.descriptor().store_name
    }

    /// For people.
    pub const fn label(self) -> &'static str {
        self.descriptor().label
    }

    /// The other names the agent answers to besides its wire name (its store name is one,
    /// except Kimi Code's `kimi`, which names the Kimi family: see `ProviderChoice`).
    pub const fn aliases(self) -> &'static [&'static str] {
        self.descriptor().aliases
    }

    /// The one name a user types for it (`claude`, `kimi-code`): its first alias, else
    /// its wire name.
    pub const fn typed_name(self) -> &'static str {
        match self.aliases().first() {
            Some(alias) => alias,
            None => self.name(),
        }
    }

    /// The agent a name means (wire name or alias).
    pub fn from_name(name: &str) -> Result<Agent, UnknownAgent> {
        Agent::ALL
            .into_iter()
            .find(|a| a.name() == name || a.aliases().contains(&name))
            .ok_or_else(|| UnknownAgent {
                name: name.to_owned(),
            })
    }

    /// The names a user types, for help and error texts: `kimi-code, kimi-cli, claude, ...`.
    pub fn names_for_help() -> String {
        Agent::ALL
            .iter()
            .map(|a| a.typed_name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Where its hook config lives, and in which format.
    pub const fn config(self) -> ConfigLocation {
        self.descriptor().config
    }

    /// Every hook event of this agent's pinned version that hooktrack subscribes to. The
    /// adapter maps each of them (a test checks it).
    pub const fn hook_events(self) -> &'static [&'static str] {
        self.descriptor().hook_events
    }

    /// How the agent delimits turns.
    pub fn capabilities(self) -> Capabilities {
        self.descriptor().capabilities
    }

    /// Maps one payload, delivered under the event `name`, into the canonical vocabulary.
    /// A call's start and a permission request get what the call acts on, by the
    /// agent's table ([`Descriptor::tool_arguments`](crate::agents::Descriptor::tool_arguments)).
    pub fn normalize<'a>(self, name: &Cow<'a, str>, payload: &mut Payload<'a>) -> Event<'a> {
        self.normalize_with(name, payload, true)
    }

    /// [`Agent::normalize`], reading what a call acts on only with `arguments`.
    pub(crate) fn normalize_with<'a>(
        self,
        name: &Cow<'a, str>,
        payload: &mut Payload<'a>,
        arguments: bool,
    ) -> Event<'a> {
        let descriptor = self.descriptor();
        let mut event = (descriptor.normalize)(name, payload);
        if arguments
            && let Event::ToolStarted { tool } | Event::PermissionRequested { tool, .. } =
                &mut event
            && let (Some(tool_name), Some(input)) = (tool.name.as_deref(), payload.tool_input)
        {
            tool.argument =
                crate::tool_argument::argument(descriptor.tool_arguments, tool_name, input);
        }
        event
    }

    /// The family the agent belongs to (`kimi`), if any.
    pub fn family(self) -> Option<&'static Family> {
        self.descriptor().family.map(|m| m.family)
    }
}

impl Serialize for Agent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Agent {
    type Err = UnknownAgent;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Agent::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_reads_gemini_cli_home_in_place_of_home() {
        let env = |name: &str| match name {
            "HOME" => Some(OsString::from("/h")),
            "GEMINI_CLI_HOME" => Some(OsString::from("/g")),
            _ => None,
        };
        let gemini = Agent::GeminiCli.config();
        assert_eq!(
            gemini.user_file(env),
            Some(PathBuf::from("/g/.gemini/settings.json"))
        );
        assert_eq!(
            gemini.file_in_home(Path::new("/g")),
            PathBuf::from("/g/.gemini/settings.json")
        );
        let claude = Agent::ClaudeCode.config();
        assert_eq!(
            claude.user_file(env),
            Some(PathBuf::from("/h/.claude/settings.json"))
        );
        assert_eq!(
            claude.file_in_home(Path::new("/c")),
            PathBuf::from("/c/settings.json")
        );
    }

    /// OpenCode and Kilo read plugins from `$XDG_CONFIG_HOME/<agent>/` when it is set: a
    /// plugin under `~/.config/` was never loaded there.
    #[test]
    fn opencode_and_kilo_read_their_plugin_from_xdg_config_home_when_set() {
        let env = |xdg: Option<&'static str>, own: Option<&'static str>| {
            move |name: &str| match name {
                "HOME" => Some(OsString::from("/h")),
                "XDG_CONFIG_HOME" => xdg.map(OsString::from),
                "OPENCODE_CONFIG_DIR" | "KILO_CONFIG_DIR" => own.map(OsString::from),
                _ => None,
            }
        };
        for (agent, name) in [(Agent::OpenCode, "opencode"), (Agent::Kilo, "kilo")] {
            let c = agent.config();
            assert_eq!(
                c.user_file(env(Some("/x"), None)),
                Some(PathBuf::from(format!("/x/{name}/plugin/hooktrack.js")))
            );
            assert_eq!(
                c.user_file(env(None, None)),
                Some(PathBuf::from(format!(
                    "/h/.config/{name}/plugin/hooktrack.js"
                )))
            );
            assert_eq!(
                c.user_file(env(Some(""), None)),
                Some(PathBuf::from(format!(
                    "/h/.config/{name}/plugin/hooktrack.js"
                )))
            );
            // The agent's own variable wins.
            assert_eq!(
                c.user_file(env(Some("/x"), Some("/o"))),
                Some(PathBuf::from("/o/plugin/hooktrack.js"))
            );
        }
        // An agent whose folder is not under `.config/` does not move.
        assert_eq!(
            Agent::ClaudeCode.config().user_file(env(Some("/x"), None)),
            Some(PathBuf::from("/h/.claude/settings.json"))
        );
    }

    #[test]
    fn every_name_finds_its_agent_and_no_two_agents_share_one() {
        let mut seen = std::collections::BTreeMap::new();
        for agent in Agent::ALL {
            for name in std::iter::once(agent.name()).chain(agent.aliases().iter().copied()) {
                assert_eq!(Agent::from_name(name), Ok(agent), "{name}");
                if let Some(other) = seen.insert(name, agent) {
                    assert_eq!(other, agent, "{name} names two agents");
                }
            }
        }
        for agent in Agent::ALL.into_iter().filter(|a| *a != Agent::KimiCode) {
            assert_eq!(Agent::from_name(agent.store_name()), Ok(agent));
        }
        let err = Agent::from_name("kimi").unwrap_err().to_string();
        assert!(
            err.contains("kimi-code, kimi-cli, claude, codex, gemini"),
            "{err}"
        );
    }
}
