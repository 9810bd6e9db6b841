//! Merging the hook posture with the supervisor's own terminal-derived facts.
//!
//! The hook channel and the terminal detector stay independent signal sources; they meet
//! only here, in a pure function. The rules (from the Kimi signal reference, "Interaction
//! With The 2.1.x Detector Profile"):
//!
//! 1. **Only hooks publish `blocked`.** An approval panel on screen is active evidence:
//!    the phase stays `active` unless a hook `PermissionRequest` is pending.
//! 2. **Interrupts follow the provider's capability** ([`Capabilities::interrupt_hook`]).
//!    For a provider with an interrupt hook (Kimi Code, Codex) the hook `Interrupt` is
//!    authoritative for its turn and the terminal's "Interrupted by user" notice is
//!    corroboration: while the channel is active the notice alone settles nothing. For one
//!    without it (Kimi CLI, Claude Code, Gemini CLI) nothing else would ever say so, so the
//!    notice settles `interrupted` for the open turn (phase and result from the terminal).
//!    Until the provider is identified the hook rule applies.
//! 3. **An open compaction window** (hook `PreCompact` without `PostCompact`) holds the
//!    phase at `active` and suppresses the terminal's idle heuristics.
//! 4. **A channel that is not active reverts every hook-owned fact** to the terminal's
//!    reduction: no `blocked`, no hook settlement, the idle heuristics resume. The one
//!    exception is `stale`, through which a result the hooks already latched persists.
//! 5. `work` stays `unknown`: hooks never prove the agent settled, and what the terminal
//!    shows of background work is the supervisor's own business.
//!
//! The channel state is read from the hook posture (`hook.channel.state`), so pass the
//! posture of an `Update` (hooktrack-live's `session`) as it is.

use serde::Serialize;

use crate::agent::Agent;
use crate::posture::{ChannelState, Phase, Posture, Presence, TurnResult, Work};
#[cfg(doc)]
use crate::provider::Capabilities;
pub use crate::source::Source;

/// What the supervisor's terminal detector concluded from the screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TerminalFacts {
    /// The detector's turn phase, idle heuristics included.
    pub phase: TerminalPhase,
    /// An approval panel (or another modal) is on screen.
    pub approval_panel: bool,
    /// The "Interrupted by user" / "Step interrupted" notice is on screen.
    pub interrupt_notice: bool,
    /// "Compacting context…" is on screen.
    pub compacting: bool,
    /// The editor footer shows queued input.
    pub queued_input: bool,
    /// The detector's own last-turn result (`None` when it has no opinion).
    pub last_result: TurnResult,
}

/// The detector never publishes `blocked`: approval panels are active evidence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalPhase {
    Ready,
    Active,
    #[default]
    Unknown,
}

impl TerminalPhase {
    fn phase(self) -> Phase {
        match self {
            TerminalPhase::Ready => Phase::Ready,
            TerminalPhase::Active => Phase::Active,
            TerminalPhase::Unknown => Phase::Unknown,
        }
    }
}

/// Where the two sources met or disagreed, for the supervisor's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeNote {
    /// An approval panel is on screen but no permission request is pending: `active`.
    ApprovalPanelNotBlocked,
    /// The hooks settled `interrupted` and the screen shows the notice.
    InterruptCorroborated,
    /// The screen shows an interrupt notice the hooks do not confirm: ignored (the
    /// provider has an interrupt hook).
    InterruptNoticeIgnored,
    /// The provider has no interrupt hook: the screen's notice settled `interrupted` for
    /// the open turn.
    InterruptSettledByTerminal,
    /// The screen looks idle inside a hook compaction window: the idle reading is ignored.
    IdleSuppressedByCompaction,
    /// The channel is not active: the hook facts were withdrawn.
    HookFactsWithdrawn,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Merged {
    pub phase: Phase,
    pub phase_from: Source,
    pub last_result: TurnResult,
    pub last_result_from: Source,
    pub compacting: bool,
    pub compacting_from: Source,
    pub queued: bool,
    pub queued_from: Source,
    /// The terminal's idle heuristics are in force.
    pub idle_heuristics: bool,
    pub work: Work,
    pub channel: ChannelState,
    pub notes: Vec<MergeNote>,
}

/// Merges the hook posture (channel state applied) with the terminal's facts. `agent` is
/// the provider the hooks came from (an `Update`'s `provider`; `None` before it is known):
/// its capabilities decide what the terminal's interrupt notice may settle.
pub fn merge(hook: &Posture, terminal: &TerminalFacts, agent: Option<Agent>) -> Merged {
    let interrupt_hook = agent.is_none_or(|a| a.capabilities().interrupt_hook);
    match hook.channel.state {
        ChannelState::Active => with_hook_authority(hook, terminal, interrupt_hook),
        state => terminal_only(hook, terminal, state),
    }
}

fn with_hook_authority(hook: &Posture, terminal: &TerminalFacts, interrupt_hook: bool) -> Merged {
    let mut notes = Vec::new();
    let compacting = hook.maintenance.compacting;
    let (phase, phase_from) = if hook.turn.phase == Phase::Blocked {
        (Phase::Blocked, Source::Hook)
    } else if compacting {
        (Phase::Active, Source::Hook)
    } else if hook.presence == Presence::Present {
        (hook.turn.phase, Source::Hook)
    } else {
        // No agent the hooks know of (before SessionStart evidence, after SessionEnd):
        // nothing of theirs to hold, and still nobody but the hooks says `blocked`.
        (terminal.phase.phase(), Source::Terminal)
    };
    if compacting && terminal.phase == TerminalPhase::Ready {
        notes.push(MergeNote::IdleSuppressedByCompaction);
    }
    if terminal.approval_panel && phase != Phase::Blocked {
        notes.push(MergeNote::ApprovalPanelNotBlocked);
    }
    let mut last_result = hook.last_turn.result;
    let mut last_result_from = Source::Hook;
    let (mut phase, mut phase_from) = (phase, phase_from);
    let turn_open = matches!(hook.turn.phase, Phase::Active | Phase::Blocked);
    if terminal.interrupt_notice {
        if last_result == TurnResult::Interrupted && !turn_open {
            notes.push(MergeNote::InterruptCorroborated);
        } else if !interrupt_hook && turn_open {
            // Nothing but the screen will ever say it (no Interrupt hook): the open turn
            // ended interrupted, and the terminal says what the agent does now.
            notes.push(MergeNote::InterruptSettledByTerminal);
            last_result = TurnResult::Interrupted;
            last_result_from = Source::Terminal;
            phase = terminal.phase.phase();
            phase_from = Source::Terminal;
        } else {
            notes.push(MergeNote::InterruptNoticeIgnored);
        }
    }
    Merged {
        phase,
        phase_from,
        last_result,
        last_result_from,
        compacting,
        compacting_from: Source::Hook,
        queued: hook.turn.queue_length > 0,
        queued_from: Source::Hook,
        idle_heuristics: !compacting,
        work: Work::Unknown,
        channel: ChannelState::Active,
        notes,
    }
}

fn terminal_only(hook: &Posture, terminal: &TerminalFacts, state: ChannelState) -> Merged {
    // `Posture::with_channel` already withdrew the hook facts; a stale channel kept the
    // latched result, which persists here too.
    let (last_result, last_result_from) =
        if state == ChannelState::Stale && hook.last_turn.result != TurnResult::None {
            (hook.last_turn.result, Source::Hook)
        } else {
            (terminal.last_result, Source::Terminal)
        };
    Merged {
        phase: terminal.phase.phase(),
        phase_from: Source::Terminal,
        last_result,
        last_result_from,
        compacting: terminal.compacting,
        compacting_from: Source::Terminal,
        queued: terminal.queued_input,
        queued_from: Source::Terminal,
        idle_heuristics: true,
        work: Work::Unknown,
        channel: state,
        notes: vec![MergeNote::HookFactsWithdrawn],
    }
}
