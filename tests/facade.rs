//! Every type a supervisor meets through the facade's API can be named through it: the
//! fields of what `Session`, `Hub`, `Launch`, `Pipeline`, `Tracker` and `replay` return,
//! and the errors under theirs. A re-export that goes missing fails this file's build.

#![allow(dead_code)]

use hooktrack::error::{CollectError, InstallError, LineError, StoreError, TokenError};
use hooktrack::event::{Decision, Event, OriginKind, ToolRef, TurnId};
use hooktrack::ledger::{Origin, Outcome, Scope, TurnRecord};
use hooktrack::posture::{FieldChange, LastTurn, Maintenance, TurnPosture};
use hooktrack::provenance::{Cause, Provenance};
use hooktrack::tail::{Checkpoint, CheckpointError, FileId, FirstLine, Mismatch, Notice, Prefix};
use hooktrack::tracker::{FedLine, TranscriptClock, TranscriptLine};
use hooktrack::{
    AgentExit, AgentStatus, CollectSummary, Detection, Finding, Finished, Installed, LineReport,
    Posture, SessionNotice, SessionUpdate, Skip, Source, Step, Tracker, TrackerConfig, Update,
};

/// One function naming each type, so the compiler checks the paths.
#[allow(clippy::too_many_arguments)]
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
) {
}

#[test]
fn a_session_update_reads_its_sessions_through_the_facade() {
    // The update's parts are the facade's: a store's current session and every one.
    fn current(update: &Update) -> (&SessionUpdate, Option<&TurnRecord>) {
        (update.current(), update.closed().next())
    }
    let _ = current;
    named(None, None, None, None, None, None, None, None, None, None);
}
