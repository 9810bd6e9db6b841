//! Payload → canonical event, one file per agent CLI, plus detection.
//!
//! An adapter is a plain function of one row: it keeps no state across events. What
//! differs between providers in how turns are delimited is declared in
//! [`Capabilities`], which the correlator consults.

mod claude;
mod codex;
mod gemini;
mod kimi;

use std::borrow::Cow;
use std::str::FromStr;

use serde::Serialize;

use crate::agent::{Agent, UnknownAgent};
use crate::event::Event;
use crate::event::TurnId;
use crate::payload::{Payload, TurnIdField};
use crate::row::Row;

impl Agent {
    pub fn capabilities(self) -> Capabilities {
        let kimi = Capabilities {
            prompt_starts_turn: false,
            unannounced_turns: false,
            stop_hook_active_continues: true,
            agent_scopes: false,
            subagent_scope_is_turn: false,
            tool_ids: true,
            permission_ends_with_tool: false,
            interrupt_hook: true,
        };
        // Claude, Codex and Gemini share the prompt-to-stop shape.
        let prompt_to_stop = Capabilities {
            prompt_starts_turn: true,
            stop_hook_active_continues: false,
            permission_ends_with_tool: true,
            interrupt_hook: false,
            ..kimi
        };
        match self {
            Agent::KimiCode => kimi,
            Agent::KimiCli => Capabilities {
                prompt_starts_turn: true,
                unannounced_turns: true,
                interrupt_hook: false,
                ..kimi
            },
            Agent::ClaudeCode => Capabilities {
                agent_scopes: true,
                subagent_scope_is_turn: true,
                ..prompt_to_stop
            },
            Agent::Codex => Capabilities {
                agent_scopes: true,
                subagent_scope_is_turn: true,
                interrupt_hook: true,
                ..prompt_to_stop
            },
            Agent::GeminiCli => Capabilities {
                tool_ids: false,
                ..prompt_to_stop
            },
        }
    }

    /// Maps one payload, delivered under the event `name`, into the canonical vocabulary.
    pub fn normalize<'a>(self, name: &Cow<'a, str>, payload: &mut Payload<'a>) -> Event<'a> {
        match self {
            Agent::KimiCode | Agent::KimiCli => kimi::normalize(name, payload),
            Agent::ClaudeCode => claude::normalize(name, payload),
            Agent::Codex => codex::normalize(name, payload),
            Agent::GeminiCli => gemini::normalize(name, payload),
        }
    }
}

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
    /// No permission answer event: a pending request ends when its tool call finishes.
    pub permission_ends_with_tool: bool,
    /// The provider fires a hook when the user interrupts a turn (Kimi Code `Interrupt`,
    /// Codex `Interrupt`). Without one (Kimi CLI 1.x, Claude Code, Gemini CLI) the
    /// terminal's interrupt notice settles the open turn in [`merge`](crate::merge::merge).
    pub interrupt_hook: bool,
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
        format!("auto, kimi (either Kimi), {}", Agent::names_for_help())
    }
}

impl FromStr for ProviderChoice {
    type Err = UnknownAgent;
    /// `auto`, `kimi` (either generation), or any name of an [`Agent`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ProviderChoice::Auto),
            "kimi" => Ok(ProviderChoice::Kimi),
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
/// otherwise the payload's shape does, using fields only one CLI sends.
pub fn detect(row: &Row<'_>) -> Option<(Agent, &'static str)> {
    let p = &row.payload;
    if let Some(agent) = row
        .provider_hint
        .as_deref()
        .and_then(|h| Agent::from_name(h).ok())
    {
        return Some((agent, named_by_row(agent)));
    }
    if p.client_type.as_deref() == Some("kimi_code_cli") {
        return Some((Agent::KimiCode, "payload client_type is kimi_code_cli"));
    }
    let gemini_event = matches!(
        row.event_name.as_ref(),
        "BeforeAgent"
            | "AfterAgent"
            | "BeforeTool"
            | "AfterTool"
            | "BeforeModel"
            | "AfterModel"
            | "BeforeToolSelection"
            | "PreCompress"
    );
    if gemini_event || (p.timestamp.is_some() && p.transcript_path.is_some()) {
        return Some((Agent::GeminiCli, "Gemini event name or payload timestamp"));
    }
    if matches!(p.turn_id, Some(TurnIdField(TurnId::Text(_)))) {
        return Some((Agent::Codex, "string turn_id (Codex)"));
    }
    if p.prompt_id.is_some() && p.transcript_path.is_some() {
        return Some((
            Agent::ClaudeCode,
            "prompt_id with transcript_path (Claude Code)",
        ));
    }
    if row.event_name == "SessionStart" && p.transcript_path.is_some() {
        return Some(if p.permission_mode.is_some() {
            (Agent::Codex, "SessionStart with permission_mode (Codex)")
        } else {
            (
                Agent::ClaudeCode,
                "SessionStart with transcript_path, no permission_mode (Claude Code)",
            )
        });
    }
    let kimi_family = matches!(row.provider_hint.as_deref(), Some("kimi"));
    let session = p.session_id.as_deref()?;
    if session.starts_with("session_") {
        return Some((
            Agent::KimiCode,
            "session_id has the session_ prefix of Kimi Code",
        ));
    }
    let plain_uuid = session.len() == 36 && session.bytes().filter(|b| *b == b'-').count() == 4;
    if plain_uuid && p.transcript_path.is_none() && p.client_type.is_none() {
        return Some((
            Agent::KimiCli,
            if kimi_family {
                "kimi row with a plain-uuid session_id and no client_type"
            } else {
                "plain-uuid session_id, no client_type, no transcript_path (Kimi CLI 1.x)"
            },
        ));
    }
    None
}

fn named_by_row(agent: Agent) -> &'static str {
    match agent {
        Agent::KimiCode => "the row names kimi-code",
        Agent::KimiCli => "the row names kimi-cli",
        Agent::ClaudeCode => "the row names claude",
        Agent::Codex => "the row names codex",
        Agent::GeminiCli => "the row names gemini",
    }
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
            && (self.choice != ProviderChoice::Kimi || provider.is_kimi())
        {
            self.decided = Some(Detection {
                provider,
                line: Some(line),
                reason,
            });
            return (provider, false);
        }
        (Agent::KimiCode, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge trusts `interrupt_hook`: it must say exactly whether the agent's hook
    /// list has an `Interrupt` event.
    #[test]
    fn interrupt_hook_capability_matches_the_hook_list() {
        for agent in Agent::ALL {
            assert_eq!(
                agent.capabilities().interrupt_hook,
                agent.hook_events().contains(&"Interrupt"),
                "{agent}"
            );
        }
    }

    /// The installers subscribe each agent to `Agent::hook_events()`: its adapter must map
    /// every one of them (an `Unknown` would be counted as a surprise on every delivery).
    #[test]
    fn every_adapter_maps_every_event_its_installer_subscribes() {
        for agent in Agent::ALL {
            for name in agent.hook_events() {
                let mut payload = Payload::default();
                let event = agent.normalize(&Cow::Borrowed(*name), &mut payload);
                assert!(
                    !matches!(event, Event::Unknown { .. }),
                    "{agent} subscribes to {name} but its adapter does not map it"
                );
            }
        }
    }
}
