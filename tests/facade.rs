//! Every type a supervisor meets through the facade's API can be named through it: the
//! fields of what `Session`, `Hub`, `Launch`, `Pipeline`, `Tracker` and `replay` return,
//! what `Tracker::feed_hook` and `Pipeline::feed_row` take, the errors under theirs, and
//! what the binary's subcommands run. A re-export that goes missing fails this file's
//! build; `public_api` finds the reachable types this file should name (it fails when one
//! is nameable only through a member crate).

#![allow(dead_code)]

use hooktrack::collect::{CollectConfig, Collector, Stopper};
use hooktrack::error::{
    CollectError, Distrust, InstallError, LineError, MarkerError, Refusal, StoreError, TailError,
    TokenError, UrlError, Violation,
};
use hooktrack::event::{Decision, Event, OriginKind, ToolRef, TurnId};
use hooktrack::install::preflight::Probe;
use hooktrack::install::{
    CheckReport, Destination, InstallReport, Observer, Replaced, Route, Uninstalled, Validation,
};
use hooktrack::ledger::{Origin, Outcome, Scope, TurnRecord};
use hooktrack::posture::{FieldChange, LastTurn, Maintenance, TurnPosture};
use hooktrack::provenance::{Cause, Provenance};
use hooktrack::read::{
    LineReader, LineSplitter, Payload, PromptText, ReadLine, Row, RowMeta, Text, TurnIdField, Via,
};
use hooktrack::tail::{Checkpoint, CheckpointError, FileId, FirstLine, Mismatch, Notice, Prefix};
use hooktrack::tracker::{FedLine, SessionPipeline, Sessions, TranscriptClock, TranscriptLine};
use hooktrack::{
    AgentExit, AgentStatus, CollectSummary, Detection, Finding, Finished, Installed, LineReport,
    Posture, SessionNotice, SessionUpdate, Skip, Source, Step, Tracker, TrackerConfig, Update,
};
use hooktrack::{
    FinishError, HubError, LaunchError, LocateError, RecordError, ReplayError, SpawnError,
    UnknownAgent, WaitError,
};

/// One function naming each type, so the compiler checks the paths.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn named(
    _: Option<(Decision, OriginKind, ToolRef<'_>, TurnId, Event<'_>)>,
    _: Option<(Origin, Outcome, Scope, TurnRecord)>,
    _: Option<(FieldChange, LastTurn, Maintenance, TurnPosture, Posture)>,
    _: Option<(Cause, Provenance, Source)>,
    _: Option<(
        Checkpoint,
        CheckpointError,
        FileId,
        FirstLine,
        Mismatch,
        Notice,
        Prefix,
    )>,
    _: Option<(
        FedLine<'_, '_>,
        TranscriptClock,
        TranscriptLine,
        Tracker,
        TrackerConfig,
    )>,
    _: Option<(
        AgentExit,
        AgentStatus,
        CollectSummary,
        Finding,
        Finished,
        Installed,
    )>,
    _: Option<(
        LineReport,
        SessionNotice,
        SessionUpdate,
        Update,
        Detection,
        Skip,
    )>,
    _: Option<Step<'_>>,
    _: Option<(
        CollectError,
        InstallError,
        LineError,
        StoreError,
        TokenError,
    )>,
    _: Option<(
        Distrust,
        MarkerError,
        Refusal,
        TailError,
        UrlError,
        Violation,
    )>,
    _: Option<(
        FinishError,
        HubError,
        LaunchError,
        LocateError,
        RecordError,
        ReplayError,
        SpawnError,
        UnknownAgent,
        WaitError,
    )>,
    _: Option<(
        LineReader<&[u8]>,
        LineSplitter,
        Payload<'_>,
        PromptText<'_>,
        ReadLine<'_>,
        Row<'_>,
        RowMeta,
        Text<'_>,
        TurnIdField,
        Via,
    )>,
    _: Option<(SessionPipeline, Sessions)>,
    _: Option<(CollectConfig, Collector, Stopper)>,
    _: Option<(
        CheckReport,
        Destination,
        InstallReport,
        Observer,
        Probe<'_>,
        Replaced,
        Route,
        Uninstalled,
        Validation,
    )>,
) {
}

#[test]
fn a_session_update_reads_its_sessions_through_the_facade() {
    // The update's parts are the facade's: a store's current session and every one.
    fn current(update: &Update) -> (&SessionUpdate, Option<&TurnRecord>) {
        (update.current(), update.closed().next())
    }
    let _ = current;
    named(
        None, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
        None,
    );
}

/// A supervisor that reads the files itself drives the `Tracker` through the facade alone:
/// a line parsed into a `Row`, fed with `feed_hook`, its session found among the tracker's.
#[test]
fn a_tracker_is_fed_through_the_facade() {
    let line = br#"{"hook_event_name":"SessionStart","session_id":"s1","client_type":"kimi_code_cli","source":"startup"}"#;
    let mut tracker = Tracker::new(TrackerConfig::default());
    let mut row: Row<'_> = hooktrack::read::parse_line(line).expect("a row");
    let mut sessions = Vec::new();
    let fed: Result<(), std::convert::Infallible> =
        tracker.feed_hook(1, Ok(&mut row), false, &mut |fed: FedLine<'_, '_>| {
            sessions.push(fed.session);
            Ok(())
        });
    assert!(fed.is_ok());
    assert_eq!(sessions, [0]);
    let all: &[SessionPipeline] = tracker.sessions();
    assert_eq!(all[0].session_id.as_deref(), Some("s1"));
    let router: &Sessions = tracker.router();
    assert_eq!(router.len(), 1);
}
