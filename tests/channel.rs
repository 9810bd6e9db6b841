//! Channel health transitions (contract section 6), driven by a fake clock: time is
//! always an argument.

use hooktrack::ChannelConfig;
use hooktrack::ChannelState::{self, *};
use hooktrack::Timestamp;
use hooktrack::{ChannelRecord, CollectorRecord, InstallRecord};
use hooktrack_core::channel::Channel;

/// `s` seconds after an arbitrary start.
fn t(s: f64) -> Timestamp {
    Timestamp::from_millis(1_790_000_000_000 + (s * 1000.0).round() as i64)
}

fn channel() -> Channel {
    Channel::new(ChannelConfig::default())
}

fn state(c: &Channel, now: f64) -> ChannelState {
    c.status(t(now)).state
}

fn collector(generation: u64, status: &str) -> CollectorRecord {
    CollectorRecord {
        generation: Some(generation),
        status: serde_json::from_value(serde_json::Value::from(status)).ok(),
        ..CollectorRecord::default()
    }
}

fn record(generation: u64, ok: bool, state: Option<&str>) -> ChannelRecord {
    ChannelRecord {
        provider: Some("kimi".into()),
        generation: Some(generation),
        install: Some(InstallRecord {
            ok,
            detail: (!ok).then(|| "unknown key `matchers`".into()),
        }),
        state: state.and_then(|s| serde_json::from_value(serde_json::Value::from(s)).ok()),
        detail: None,
        rest: Default::default(),
    }
}

#[test]
fn silence_is_judged_after_the_first_prompt_never_at_launch() {
    let mut c = channel();
    assert_eq!(state(&c, 0.0), Unavailable);
    // An hour after launch without a prompt: still just "no event yet".
    assert_eq!(c.status(t(3600.0)).detail, "no event yet");
    c.on_prompt_sent(t(3600.0));
    let within = c.status(t(3619.0));
    assert_eq!(within.state, Unavailable);
    assert!(
        within.detail.contains("within the startup grace"),
        "{within:?}"
    );
    let after = c.status(t(3620.5));
    assert_eq!(after.state, Unavailable);
    assert!(after.detail.starts_with("startup silence"), "{after:?}");
    // The status does not change while the silence goes on (no update storm).
    assert_eq!(c.status(t(3700.0)), after);
    c.on_event(t(3701.0), Some(1));
    assert_eq!(state(&c, 3701.0), Active);
}

#[test]
fn only_the_first_prompt_starts_the_grace() {
    let mut c = channel();
    c.on_prompt_sent(t(0.0));
    c.on_prompt_sent(t(15.0));
    assert!(c.status(t(21.0)).detail.starts_with("startup silence"));
}

#[test]
fn an_event_before_any_prompt_is_active() {
    // A resumed session delivers SessionStart(resume) before the first prompt.
    let mut c = channel();
    c.on_event(t(1.0), Some(2));
    assert_eq!(state(&c, 1.0), Active);
    c.on_prompt_sent(t(2.0));
    assert_eq!(state(&c, 100.0), Active);
}

#[test]
fn stale_needs_silence_while_the_terminal_keeps_changing() {
    let mut c = channel();
    c.on_event(t(0.0), Some(1));
    // A repaint right after the event, then a quiet terminal: an idle agent, not stale.
    c.on_terminal_changed(t(0.5));
    assert_eq!(state(&c, 600.0), Active);
    c.on_event(t(600.0), Some(1));
    // The terminal keeps changing; hooks quiet: stale only once past 30 s.
    for s in [610.0, 620.0, 630.0] {
        c.on_terminal_changed(t(s));
        assert_eq!(state(&c, s), Active, "at {s}");
    }
    c.on_terminal_changed(t(630.1));
    assert_eq!(state(&c, 630.1), Stale);
    assert!(c.status(t(631.0)).detail.contains("30.1 s"));
    // Stays stale until an event arrives.
    assert_eq!(state(&c, 900.0), Stale);
    c.on_event(t(901.0), Some(1));
    assert_eq!(state(&c, 901.0), Active);
    assert_eq!(c.last_event(), Some(t(901.0)));
}

#[test]
fn every_threshold_is_configurable() {
    let mut c = Channel::new(ChannelConfig {
        startup_grace_ms: 1_000,
        stale_after_ms: 2_000,
    });
    c.on_prompt_sent(t(0.0));
    assert!(c.status(t(1.001)).detail.starts_with("startup silence"));
    c.on_event(t(2.0), None);
    c.on_terminal_changed(t(4.0));
    assert_eq!(state(&c, 4.0), Active);
    c.on_terminal_changed(t(4.001));
    assert_eq!(state(&c, 4.001), Stale);
}

#[test]
fn a_read_failure_is_an_error_until_the_next_healthy_read() {
    let mut c = channel();
    c.on_event(t(0.0), Some(1));
    c.on_read_failed(t(1.0), "cannot open events.ndjson: permission denied");
    let s = c.status(t(1.0));
    assert_eq!(s.state, Error);
    assert!(s.detail.contains("permission denied"));
    c.on_read_ok();
    assert_eq!(state(&c, 2.0), Active);
}

#[test]
fn a_stopped_collector_is_terminal_for_its_generation() {
    let mut c = channel();
    c.on_event(t(0.0), Some(1));
    c.on_collector(collector(1, "running"));
    assert_eq!(state(&c, 1.0), Active);
    c.on_collector(collector(1, "stopped"));
    assert_eq!(state(&c, 1.0), Stopped);
    // Late deliveries of the same generation do not revive it.
    c.on_event(t(2.0), Some(1));
    assert_eq!(state(&c, 2.0), Stopped);
    c.on_read_failed(t(3.0), "gone");
    assert_eq!(state(&c, 3.0), Stopped, "stopped outranks a read failure");
    c.on_read_ok();
    // A resumed session: a newer generation's event makes the old record outdated.
    c.on_event(t(10.0), Some(2));
    assert_eq!(state(&c, 10.0), Active);
    // A record of an older generation than the events never applies.
    let mut d = channel();
    d.on_event(t(0.0), Some(3));
    d.on_collector(collector(2, "stopped"));
    assert_eq!(state(&d, 0.0), Active);
}

#[test]
fn an_install_failure_in_channel_json_is_unavailable() {
    let mut c = channel();
    c.on_record(record(1, false, None));
    let s = c.status(t(0.0));
    assert_eq!(s.state, Unavailable);
    assert!(s.detail.contains("install failed: unknown key"), "{s:?}");
    c.on_record(record(1, true, None));
    assert_eq!(c.status(t(0.0)).detail, "no event yet");
}

#[test]
fn published_policy_states_win_over_events() {
    for (name, expected) in [
        ("disabled_by_policy", DisabledByPolicy),
        ("untrusted_workspace", UntrustedWorkspace),
    ] {
        let mut c = channel();
        c.on_event(t(0.0), Some(1));
        c.on_collector(collector(1, "stopped"));
        c.on_record(record(1, true, Some(name)));
        assert_eq!(state(&c, 1.0), expected, "{name}");
        c.on_event(t(2.0), Some(1));
        assert_eq!(state(&c, 2.0), expected, "{name} persists through events");
    }
}

#[test]
fn a_published_error_is_terminal_and_a_healthy_read_does_not_clear_it() {
    let mut c = channel();
    c.on_event(t(0.0), Some(1));
    c.on_record(record(1, true, Some("error")));
    c.on_read_ok();
    c.on_event(t(1.0), Some(1));
    assert_eq!(state(&c, 1.0), Error);
}

#[test]
fn a_remote_store_published_unavailable_is_unavailable() {
    let mut c = channel();
    let mut r = record(1, true, Some("unavailable"));
    r.detail = Some("remote observation".into());
    c.on_record(r);
    let s = c.status(t(0.0));
    assert_eq!(s.state, Unavailable);
    assert_eq!(s.detail, "channel.json: remote observation");
}

#[test]
fn the_status_is_a_function_of_inputs_and_time() {
    let build = || {
        let mut c = channel();
        c.on_prompt_sent(t(0.0));
        c.on_event(t(3.0), Some(1));
        c.on_terminal_changed(t(40.0));
        c
    };
    let (a, b) = (build(), build());
    for now in [0.0, 3.0, 40.0, 1e6] {
        assert_eq!(a.status(t(now)), b.status(t(now)));
        assert_eq!(a.status(t(now)), a.status(t(now)));
    }
    // A clock stepping back is no time, not negative time.
    let mut c = channel();
    c.on_event(t(100.0), None);
    c.on_terminal_changed(t(0.0));
    assert_eq!(state(&c, 0.0), Active);
}
