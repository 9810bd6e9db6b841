//! The merge of hook posture and terminal facts, rule by rule.

use hooktrack::Agent;
use hooktrack::Pipeline;
use hooktrack::merge::{MergeNote, Merged, Source, TerminalFacts, TerminalPhase};
use hooktrack::posture::Work;
use hooktrack::{ChannelState, Phase, Posture, ProviderChoice, TurnResult};

use crate::support::{kimi, turn_running};

/// The rules for a provider with an interrupt hook (Kimi Code, the reference).
fn merge(hook: &Posture, terminal: &TerminalFacts) -> Merged {
    hooktrack::merge::merge(hook, terminal, Some(Agent::KimiCode))
}

/// The hook posture after `lines`, with the channel in `state`.
fn hooks(lines: &[String], state: ChannelState) -> Posture {
    let mut p = Pipeline::new(ProviderChoice::Auto);
    for (i, l) in lines.iter().enumerate() {
        p.feed_line(i as u64 + 1, l.as_bytes());
    }
    p.hook_posture().with_channel(state)
}

fn session(rest: &[Vec<String>]) -> Vec<String> {
    let mut lines = vec![kimi("SessionStart", r#""source":"startup""#)];
    for part in rest {
        lines.extend(part.iter().cloned());
    }
    lines
}

fn stop() -> Vec<String> {
    vec![kimi("Stop", r#""stop_hook_active":false"#)]
}

fn permission_request(n: i64) -> Vec<String> {
    vec![kimi(
        "PermissionRequest",
        &format!(r#""tool_call_id":"call_{n}","turn_id":{n},"id":"a{n}","agent_id":"main""#),
    )]
}

fn interrupt(n: i64) -> Vec<String> {
    vec![kimi(
        "Interrupt",
        &format!(r#""turn_id":{n},"reason":"cancelled""#),
    )]
}

fn screen(phase: TerminalPhase) -> TerminalFacts {
    TerminalFacts {
        phase,
        ..TerminalFacts::default()
    }
}

#[test]
fn only_hooks_publish_blocked() {
    let panel = TerminalFacts {
        approval_panel: true,
        ..screen(TerminalPhase::Active)
    };
    // An approval panel without a hook PermissionRequest: active, not blocked.
    let running = hooks(&session(&[turn_running(1)]), ChannelState::Active);
    let m = merge(&running, &panel);
    assert_eq!((m.phase, m.phase_from), (Phase::Active, Source::Hook));
    assert_eq!(m.notes, [MergeNote::ApprovalPanelNotBlocked]);
    // With it: blocked, whatever the screen shows.
    let waiting = hooks(
        &session(&[turn_running(1), permission_request(1)]),
        ChannelState::Active,
    );
    assert_eq!(merge(&waiting, &panel).phase, Phase::Blocked);
    assert_eq!(
        merge(&waiting, &screen(TerminalPhase::Ready)).phase,
        Phase::Blocked
    );
    // A degraded channel never yields blocked, even with the hooks' request pending.
    for state in [
        ChannelState::Stale,
        ChannelState::Error,
        ChannelState::Stopped,
    ] {
        let m = merge(
            &hooks(&session(&[turn_running(1), permission_request(1)]), state),
            &panel,
        );
        assert_eq!(
            (m.phase, m.phase_from),
            (Phase::Active, Source::Terminal),
            "{state:?}"
        );
    }
}

#[test]
fn a_hook_interrupt_is_authoritative() {
    let notice_idle = TerminalFacts {
        interrupt_notice: true,
        last_result: TurnResult::Interrupted,
        ..screen(TerminalPhase::Ready)
    };
    let interrupted = hooks(
        &session(&[turn_running(1), interrupt(1)]),
        ChannelState::Active,
    );
    let m = merge(&interrupted, &screen(TerminalPhase::Active));
    assert_eq!(
        (m.last_result, m.last_result_from),
        (TurnResult::Interrupted, Source::Hook),
        "settled without the screen's notice"
    );
    assert_eq!(
        merge(&interrupted, &notice_idle).notes,
        [MergeNote::InterruptCorroborated]
    );
    // The notice alone settles nothing while the hooks have authority.
    let running = hooks(&session(&[turn_running(2)]), ChannelState::Active);
    let m = merge(&running, &notice_idle);
    assert_eq!(m.phase, Phase::Active);
    assert_eq!(m.last_result, TurnResult::None);
    assert_eq!(m.notes, [MergeNote::InterruptNoticeIgnored]);
    let succeeded = hooks(&session(&[turn_running(1), stop()]), ChannelState::Active);
    assert_eq!(
        merge(&succeeded, &notice_idle).last_result,
        TurnResult::Success
    );
}

#[test]
fn an_open_compaction_window_suppresses_idle_heuristics() {
    let pre = vec![kimi("PreCompact", r#""trigger":"manual""#)];
    let compacting = hooks(&session(std::slice::from_ref(&pre)), ChannelState::Active);
    let m = merge(&compacting, &screen(TerminalPhase::Ready));
    assert_eq!((m.phase, m.phase_from), (Phase::Active, Source::Hook));
    assert!(!m.idle_heuristics);
    assert!(m.compacting);
    assert_eq!(m.notes, [MergeNote::IdleSuppressedByCompaction]);
    let post = vec![kimi("PostCompact", r#""trigger":"manual""#)];
    let after = hooks(&session(&[pre, post]), ChannelState::Active);
    let m = merge(&after, &screen(TerminalPhase::Ready));
    assert_eq!(m.phase, Phase::Ready);
    assert!(m.idle_heuristics);
    assert!(!m.compacting);
}

#[test]
fn a_degraded_channel_reverts_every_hook_owned_fact() {
    let lines = session(&[
        turn_running(1),
        interrupt(1),
        vec![kimi("PreCompact", r#""trigger":"auto""#)],
        vec![kimi(
            "UserPromptQueued",
            r#""prompt_id":"p1","prompt":[{"type":"text","text":"x"}],"queue_length":1"#,
        )],
    ]);
    let tui = TerminalFacts {
        phase: TerminalPhase::Ready,
        compacting: false,
        queued_input: false,
        last_result: TurnResult::Success,
        ..TerminalFacts::default()
    };
    let active = merge(&hooks(&lines, ChannelState::Active), &tui);
    assert_eq!(active.phase, Phase::Active);
    assert!(active.compacting && active.queued && !active.idle_heuristics);
    assert_eq!(active.last_result, TurnResult::Interrupted);
    for state in [
        ChannelState::Unavailable,
        ChannelState::Error,
        ChannelState::Stopped,
        ChannelState::DisabledByPolicy,
        ChannelState::UntrustedWorkspace,
    ] {
        let m = merge(&hooks(&lines, state), &tui);
        assert_eq!(m.channel, state);
        assert_eq!(
            (m.phase, m.phase_from),
            (Phase::Ready, Source::Terminal),
            "{state:?}"
        );
        assert_eq!(
            (m.last_result, m.last_result_from),
            (TurnResult::Success, Source::Terminal),
            "no hook settlement when {state:?}"
        );
        assert!(!m.compacting && !m.queued && m.idle_heuristics, "{state:?}");
        assert_eq!(m.work, Work::Unknown);
        assert_eq!(m.notes, [MergeNote::HookFactsWithdrawn]);
    }
}

#[test]
fn a_stale_channel_keeps_the_latched_result_only() {
    let lines = session(&[turn_running(1), interrupt(1), turn_running(2)]);
    let tui = TerminalFacts {
        last_result: TurnResult::Success,
        ..screen(TerminalPhase::Ready)
    };
    let m = merge(&hooks(&lines, ChannelState::Stale), &tui);
    assert_eq!((m.phase, m.phase_from), (Phase::Ready, Source::Terminal));
    assert_eq!(
        (m.last_result, m.last_result_from),
        (TurnResult::Interrupted, Source::Hook)
    );
    assert!(m.idle_heuristics);
    // Nothing latched yet: the terminal's reading.
    let fresh = merge(
        &hooks(&session(&[turn_running(1)]), ChannelState::Stale),
        &tui,
    );
    assert_eq!(
        (fresh.last_result, fresh.last_result_from),
        (TurnResult::Success, Source::Terminal)
    );
}

#[test]
fn without_an_agent_the_hooks_know_of_the_terminal_decides_the_phase() {
    let ended = hooks(
        &session(&[vec![kimi("SessionEnd", r#""reason":"exit""#)]]),
        ChannelState::Active,
    );
    let m = merge(&ended, &screen(TerminalPhase::Unknown));
    assert_eq!((m.phase, m.phase_from), (Phase::Unknown, Source::Terminal));
    assert_eq!(m.last_result_from, Source::Hook);
}
