//! Which provider wrote a stream: what the user chose ([`ProviderChoice`]), and detection
//! from the rows ([`detect`], [`Detector`]), by the rules each agent's descriptor declares.
//!
//! The adapters (payload → canonical event, one plain function of one row, no state
//! across events) live with their agents in `agents/`. What differs between providers in
//! how turns are delimited is declared in [`Capabilities`], which the correlator consults.

use std::str::FromStr;

use serde::Serialize;

use crate::agent::{Agent, UnknownAgent};
use crate::agents::Family;
use crate::event::ToolRef;
use crate::row::Row;

/// The family [`ProviderChoice::Kimi`] names: that of the contract's reference agent
/// ([`Agent::ASSUMED`], Kimi Code), whose store name `kimi` the family's name shares.
const KIMI: &Family = match Agent::ASSUMED.descriptor().family {
    Some(member) => member.family,
    None => panic!("the assumed agent belongs to the family `--provider kimi` names"),
};

/// How a provider delimits turns: the facts the correlator needs that payloads do not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// No `TurnStarted`: a main-scope `UserPromptSubmit` both arms and starts the turn.
    pub prompt_starts_turn: bool,
    /// The provider runs follow-up turns with no prompt (Kimi CLI after a background task):
    /// a `Stop` with no open turn is a turn that ran unannounced.
    pub unannounced_turns: bool,
    /// `Stop` with `stop_hook_active = true` means "a stop hook blocked, the agent goes on"
    /// (Kimi); otherwise it ends the continuation a stop hook caused (Claude, Codex, Gemini).
    pub stop_hook_active_continues: bool,
    /// Subagent events carry `agent_id`: scopes are found by id, not by nesting order, so
    /// parallel subagents can interleave.
    pub agent_scopes: bool,
    /// A subagent has no turn events of its own: `SubagentStart` … `SubagentStop` is its
    /// nested turn.
    pub subagent_scope_is_turn: bool,
    /// Tool calls carry an id; without one they are paired first-in-first-out by tool name
    /// and input.
    pub tool_ids: bool,
    /// How the agent's waits on the user show: what opens and ends a blocked window.
    pub dialogs: Dialogs,
    /// Subagents can run in the background (Claude Code 2.1.33x by default, Kimi Code 2.1.0
    /// on request): a scope still open when its parent turn ends by its own `Stop` goes on
    /// until its own end. Elsewhere it ended unseen with the parent (Kimi CLI fires no
    /// `SubagentStop` for a subagent that failed).
    pub subagents_outlive_turn: bool,
    /// The provider fires a hook when the user interrupts a turn (Kimi Code `Interrupt`,
    /// Codex `Interrupt`). Without one (Kimi CLI 1.x, Claude Code, Gemini CLI) the
    /// terminal's interrupt notice settles the open turn in [`merge`](crate::merge::merge).
    pub interrupt_hook: bool,
    /// The provider runs a headless turn with no prompt hook (Factory Droid `exec`): a
    /// main-scope tool call while no turn is armed or running starts that turn,
    /// unannounced, so its calls are its own.
    pub tool_starts_turn: bool,
    /// The provider fires `Notification(idle_prompt)` only once it waits for the next
    /// prompt, and ends a turn the user stopped with nothing else (Qwen Code's Escape while
    /// the answer streams: no `Stop`, no `StopFailure`): a main turn still running then,
    /// with nothing waiting on the user, was interrupted, unless the notice names that
    /// turn (a `StopFailure` follows it).
    pub idle_ends_turn: bool,
}

/// How an agent's waits on the user (permission requests, dialogs, ask-the-user calls) show
/// in its events, where the payloads do not say: the one description of its dialogs that
/// the correlator's `blocking.rs` consults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Dialogs {
    /// What ends a permission window, besides the end of the turn that owns it.
    pub permission_answer: PermissionAnswer,
    /// The notification kind that repeats a permission request's dialog (Claude Code's
    /// `permission_prompt`): it comes seconds after the request, or late after the answer,
    /// so it blocks only while a call of its agent is open and no window is.
    pub request_echo: Option<&'static str>,
    /// The tools that ask the user a question and wait for the answer while they are open:
    /// their start is the only hook the dialog fires.
    pub ask_user_tools: &'static [&'static str],
}

impl Dialogs {
    /// The tool's name if a call of it asks the user and waits for the answer.
    pub fn asks_user(&self, tool: &ToolRef<'_>) -> Option<&'static str> {
        let name = tool.name.as_deref()?;
        self.ask_user_tools.iter().copied().find(|&t| t == name)
    }
}

/// What answers a permission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PermissionAnswer {
    /// An answer event (Kimi Code's `PermissionResult`, OpenCode's `permission.replied`).
    Event,
    /// No answer event: the call going on answers it (its start, where the request named no
    /// call, as Qwen Code's precedes `PreToolUse`; else its finish).
    CallGoesOn,
}

/// What the user asked for with `--provider`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProviderChoice {
    /// Detect from the envelope and the payload.
    #[default]
    Auto,
    /// Kimi, either generation: told apart by the payload.
    Kimi,
    Exactly(Agent),
}

impl ProviderChoice {
    /// The names `--provider` / `--agent` take, for help texts.
    pub fn names_for_help() -> String {
        format!(
            "auto, {} (either {}), {}",
            KIMI.name,
            KIMI.label,
            Agent::names_for_help()
        )
    }

    /// The family this choice names (`kimi`), if it names one.
    pub fn family(self) -> Option<&'static Family> {
        match self {
            ProviderChoice::Kimi => Some(KIMI),
            ProviderChoice::Auto | ProviderChoice::Exactly(_) => None,
        }
    }

    /// Whether `agent` is one this choice allows.
    pub fn allows(self, agent: Agent) -> bool {
        match self {
            ProviderChoice::Auto => true,
            ProviderChoice::Kimi => agent.family() == self.family(),
            ProviderChoice::Exactly(chosen) => chosen == agent,
        }
    }

    /// The agent a command line starts, from its program's file name (`claude`, `kimi`):
    /// one agent, or a family when every agent started that way is one of its members.
    pub fn for_program(program: &str) -> Option<ProviderChoice> {
        let mut started = Agent::ALL
            .into_iter()
            .filter(|a| a.descriptor().programs.contains(&program));
        let first = started.next()?;
        let mut rest = started.peekable();
        if rest.peek().is_none() {
            return Some(ProviderChoice::Exactly(first));
        }
        let family = first.family()?;
        (family == KIMI && rest.all(|a| a.family() == Some(family))).then_some(ProviderChoice::Kimi)
    }
}

impl FromStr for ProviderChoice {
    type Err = UnknownAgent;
    /// `auto`, `kimi` (either generation), or any name of an [`Agent`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ProviderChoice::Auto),
            family if family == KIMI.name => Ok(ProviderChoice::Kimi),
            other => Agent::from_name(other).map(ProviderChoice::Exactly),
        }
    }
}

/// How a provider was decided, for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Detection {
    pub provider: Agent,
    /// The line whose row decided it (`None` when chosen on the command line or assumed).
    pub line: Option<u64>,
    pub reason: &'static str,
}

/// Recognises the provider from one row, if the row says enough.
///
/// The envelope's `provider` (or a capture line's `cli`) decides when it names one CLI;
/// otherwise the payload's shape does, by the agents' [`DetectRule`](crate::agents::DetectRule)s: of the rules that
/// match, the one of the lowest rank (fields only one CLI sends come first).
pub fn detect(row: &Row<'_>) -> Option<(Agent, &'static str)> {
    if let Some(agent) = row
        .provider_hint
        .as_deref()
        .and_then(|h| Agent::from_name(h).ok())
    {
        return Some((agent, agent.descriptor().named_by_row));
    }
    let mut best: Option<(u8, Agent, &'static str)> = None;
    for agent in Agent::ALL {
        for rule in agent.descriptor().detect {
            if best.is_some_and(|(rank, _, _)| rank <= rule.rank) {
                continue;
            }
            if let Some(reason) = (rule.test)(row) {
                best = Some((rule.rank, agent, reason));
            }
        }
    }
    best.map(|(_, agent, reason)| (agent, reason))
}

/// The stream-level decision: the first row that identifies the provider fixes it.
#[derive(Debug)]
pub struct Detector {
    choice: ProviderChoice,
    decided: Option<Detection>,
}

impl Detector {
    /// What the caller chose (`auto`, `kimi` or one agent).
    pub fn choice(&self) -> ProviderChoice {
        self.choice
    }

    pub fn new(choice: ProviderChoice) -> Self {
        let decided = match choice {
            ProviderChoice::Exactly(provider) => Some(Detection {
                provider,
                line: None,
                reason: "chosen with --provider",
            }),
            _ => None,
        };
        Self { choice, decided }
    }

    pub fn decided(&self) -> Option<&Detection> {
        self.decided.as_ref()
    }

    /// The provider for this row. The bool is true when it had to be assumed (nothing
    /// identified the provider yet).
    pub fn provider_for(&mut self, line: u64, row: &Row<'_>) -> (Agent, bool) {
        if let Some(d) = &self.decided {
            return (d.provider, false);
        }
        if let Some((provider, reason)) = detect(row)
            && self.choice.allows(provider)
        {
            self.decided = Some(Detection {
                provider,
                line: Some(line),
                reason,
            });
            return (provider, false);
        }
        (Agent::ASSUMED, true)
    }
}
