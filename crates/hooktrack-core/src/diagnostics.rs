//! Named counters: every line skipped and every guess the tracker makes leaves one.
//!
//! The list below is the single source of the names, descriptions and order used by
//! the JSON output and by `docs/posture.md`.

use std::fmt;

use indexmap::IndexMap;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

macro_rules! diagnostics {
    ($($variant:ident => $name:literal, $about:literal;)*) => {
        /// One kind of skipped line or guess. `name()` is the stable counter name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Diag {
            $(#[doc = $about] $variant,)*
        }

        impl Diag {
            /// Every diagnostic, in the order counters are reported.
            pub const ALL: &'static [Diag] = &[$(Diag::$variant,)*];

            pub const fn name(self) -> &'static str {
                match self { $(Diag::$variant => $name,)* }
            }

            pub const fn about(self) -> &'static str {
                match self { $(Diag::$variant => $about,)* }
            }
        }
    };
}

diagnostics! {
    // Lines the reader skips.
    LineNotUtf8 => "line_not_utf8", "a line that is not valid UTF-8 (skipped)";
    LineNotJson => "line_not_json", "a line that is not JSON (skipped)";
    LineNotObject => "line_not_object", "a line that is JSON but not an object (skipped)";
    LineBadField => "line_bad_field", "a JSON object whose envelope or payload field has the wrong type (skipped)";
    LineNoEventName => "line_no_event_name", "an object with neither `payload.hook_event_name`, `hook_event_name` nor `event` (skipped)";
    LineOversized => "line_oversized", "a line over the 1 MiB limit (skipped without being held in memory)";
    LineTruncated => "line_truncated", "a last line with no newline: cut off or still being written (skipped)";
    LoneSurrogate => "lone_surrogate", "a line with an unpaired UTF-16 surrogate escape (`\\ud800`): decoded as U+FFFD, the row kept";
    // Deliveries.
    DuplicateDelivery => "duplicate_delivery", "a row whose (generation, emitter_seq) was already seen: delivered twice (skipped)";
    StaleGeneration => "stale_generation", "a row of a generation older than the current one (ignored)";
    GenerationJump => "generation_jump", "a row whose generation is more than 1024 past the current one (refused: one row cannot make every later row stale)";
    UnannouncedGeneration => "unannounced_generation", "an emitter's fallback row of a newer generation that no collector's or launcher's row or record announced (refused: a tool of the agent inherits the generation and could make every later row stale)";
    RowNotFromAgent => "row_not_from_agent", "a hook row whose `agent_pid` is not the process the session's rows came from while that process was not seen to end: the hook command run by something else (a tool step of the agent), ignored";
    OutOfOrderRow => "out_of_order_row", "a row whose emitter_seq is below one already seen in its generation (processed in file order)";
    EventNameMismatch => "event_name_mismatch", "the envelope's `event` differs from the payload's `hook_event_name` (the payload wins)";
    ProviderAssumed => "provider_assumed", "no row identified the provider; the Kimi Code mapping was assumed";
    PluginEventsLost => "plugin_events_lost", "a plugin's loss row (OpenCode, Kilo CLI, Pi): its queue was over its bound (128 events or 2 MiB) or the agent exited with events still queued, and that many were dropped (counted here one by one); what they said is not known, the row changes nothing";
    // Normalization.
    UnknownEvent => "unknown_event", "an event name the provider mapping does not know (kept as Unknown, counted by name)";
    // Sessions and generations.
    PresenceImplied => "presence_implied", "events arrived with no SessionStart before them: presence inferred";
    SessionRestartWithoutEnd => "session_restart_without_end", "a SessionStart while the previous session had not ended";
    SessionEndWhileAbsent => "session_end_while_absent", "a SessionEnd when no session was present (duplicate or late)";
    EventAfterSessionEnd => "event_after_session_end", "an event after SessionEnd that is not a new session (late fire-and-forget delivery)";
    TerminalGapSessionEnd => "terminal_gap_session_end", "a turn was open at SessionEnd: it ended and nobody knows how";
    TerminalGapNewSession => "terminal_gap_new_session", "a turn was open when a new session or generation began";
    TerminalGapProcessEnded => "terminal_gap_process_ended", "a turn was open when the agent process ended: it ended and nobody knows how";
    // Transcripts (a second signal where the hooks are silent).
    TranscriptEntryIgnored => "transcript_entry_ignored", "a transcript entry that is not one of the known markers of a blind moment (ignored)";
    TranscriptEntryUnreadable => "transcript_entry_unreadable", "a transcript line that is not a JSON object (ignored)";
    TranscriptMarkerStale => "transcript_marker_stale", "a transcript marker for a turn that is not the open one (older, another turn id, or none open): it settles nothing";
    TurnOriginFromTranscript => "turn_origin_from_transcript", "the transcript says the open main turn is one the agent started itself (Claude Code `turnOrigin: task_notification`) where its hook prompt did not (cut or missing): its origin is `agent`";
    TranscriptNotFollowed => "transcript_not_followed", "the provider writes no transcript hooktrack reads (Kimi CLI), or none was identified yet, so its lines are ignored";
    RowHeldForTranscript => "row_held_for_transcript", "read live, a row that would end the open turn (a prompt, a session's start or end) waited for its session's transcript to be read past its time, so a line written before it (an Escape, a dialog answered No) is placed before it";
    RowHoldExpired => "row_hold_expired", "a row that waited for its session's transcript went on after 1 s without the file reaching its time: a marker written later settles nothing";
    TranscriptLetGo => "transcript_let_go", "the session's transcript or session file was closed for a more recently active session's (at most 32 followed at once); it is read on from where it stood when the session writes again";
    // The pane (a third signal, read only while the agent waits on the user).
    DialogAnsweredOnScreen => "dialog_answered_on_screen", "the agent's tmux pane, read while it waited on the user, no longer drew the dialog it was seen drawing: the oldest permission window or dialog was taken as answered (no hook says so)";
    ScreenUnread => "screen_unread", "the agent's tmux pane could not be read (gone, no tmux server): it is not read again until a row names a pane";
    // Epochs and turns.
    EpochAbandoned => "epoch_abandoned", "an armed prompt never started a turn (blocked by a hook) and was superseded or ended with its session; the phase stayed as it was";
    TurnSuperseded => "turn_superseded", "a new prompt arrived while a turn was still open: the open turn is a terminal gap";
    TurnStartedWithoutPrompt => "turn_started_without_prompt", "TurnStarted(user) with no armed prompt: an epoch was opened for it";
    TurnStartImplied => "turn_start_implied", "turn evidence (a tool call, Stop, ...) after a prompt with no TurnStarted: the turn was taken as started";
    TurnIdMismatch => "turn_id_mismatch", "an event's turn_id differs from the bound turn it was attributed to";
    UnannouncedTurn => "unannounced_turn", "a Stop with no open turn, from a provider that runs follow-up turns without a prompt, or a main-scope tool call with none, from one whose headless turn has no prompt hook (Factory Droid `exec`): recorded as a turn (Factory Droid's first one as the prompt of its command line, origin user; a later one as the agent's)";
    TurnStartedAfterItsStop => "turn_started_after_its_stop", "a TurnStarted with no prompt armed (or a TurnStarted(system_trigger) with no subagent turn open), delivered after the end of a main (or nested) turn whose start was implied, before anything else began (the agent does not wait for its hooks: Kimi Code): that turn's own start, late; it names that turn and starts none";
    StopBeforeItsTurnStarted => "stop_before_its_turn_started", "a Stop with no open turn followed by a TurnStarted(task) before any prompt (the agent does not wait for its hooks: Kimi Code): the agent turn it ended, announced late; recorded as started and ended at once with the Stop's result";
    StopBeforeSubagentStop => "stop_before_subagent_stop", "a Stop inside a subagent scope whose turn already ended by its own Stop (the agent does not wait for its SubagentStop hook: Kimi Code): not that subagent's but the parent's (or, with no main turn, that of an agent turn announced late), delivered before the subagent's SubagentStop; the scope goes on in the background until it";
    RetryResumed => "retry_resumed", "the agent's `busy` after it waited to retry a failed model call (OpenCode, Kilo), or the run Pi starts itself after its marked failure: the retry, not a new prompt; the turn goes on";
    RetryCancelled => "retry_cancelled", "the agent went idle, or its session ended, while it waited to retry a failed model call, with no error (OpenCode, Kilo: Escape during the wait; Pi: quit during the wait): the turn is interrupted";
    RetryWithoutTurn => "retry_without_turn", "the agent retries a model call while no main turn runs (ignored)";
    StopWithoutTurn => "stop_without_turn", "a Stop, StopFailure or Interrupt with no open turn (ignored)";
    StopHookContinuation => "stop_hook_continuation", "a Stop with stop_hook_active = true: not terminal, the agent continues";
    ContinuationAfterStop => "continuation_after_stop", "tool activity after the turn ended with no new prompt (a Stop hook that blocked; Kimi Code fires no second Stop): active until the next terminal event, prompt or transcript end marker; the latched result stays";
    QueueEndedWithTurn => "queue_ended_with_turn", "prompts were queued when the main turn ended: taken as consumed (a steer the turn answered, or a prompt that comes back as its own UserPromptSubmit), so the queue is empty";
    SteerPrompt => "steer_prompt", "a UserPromptSubmit with is_steer = true: folded into the running turn as queue evidence";
    IdleEndedTurn => "idle_ended_turn", "a Notification(idle_prompt) while the main turn ran, from an agent that sends it only once it waits for the next prompt and ends a stopped turn with no other hook (Qwen Code's Escape while it streams): the turn was interrupted";
    SteerByTurnId => "steer_by_turn_id", "a UserPromptSubmit naming the running main turn's own id (Qwen Code's Enter while it works): a steer of that turn, not a new one";
    // Tools and permissions.
    ToolCallIdMissing => "tool_call_id_missing", "a tool event without a call id: it cannot be paired";
    ToolStartDuplicate => "tool_start_duplicate", "a second start for a call id that is still open";
    ToolFinishWithoutStart => "tool_finish_without_start", "a tool finish whose call id was never started (orphan)";
    ToolFinishLate => "tool_finish_late", "a tool finish that arrived after its turn had ended";
    ToolWithoutTurn => "tool_without_turn", "a tool call started while no turn was open";
    ToolOpenAtTurnEnd => "tool_open_at_turn_end", "a tool call still open when its turn ended";
    ToolPairingAmbiguous => "tool_pairing_ambiguous", "a tool finish without a call id matched more than one open call with the same name and input: the oldest was taken";
    PermissionMatchedByName => "permission_matched_by_name", "a permission request naming no call matched an open call by tool name only (its input differed): the most recent such call was taken";
    PermissionUnmatched => "permission_unmatched", "a permission request naming no call matched no open tool call by name and input";
    PermissionDuplicate => "permission_duplicate", "a second PermissionRequest for a call already waiting";
    PermissionResultWithoutRequest => "permission_result_without_request", "a PermissionResult with no matching request";
    PermissionOpenAtTurnEnd => "permission_open_at_turn_end", "a permission request still pending when its turn ended";
    BlockedByNotification => "blocked_by_notification", "a notification says a dialog waits on the user with no permission request (Claude Code `agent_needs_input`, `elicitation_dialog`, an unrequested `permission_prompt`): blocked until that agent's next tool, permission or stop evidence";
    // Scopes, compaction.
    SubagentStopWithoutStart => "subagent_stop_without_start", "a SubagentStop with no open subagent scope (Claude's compaction summarizer sends one)";
    SubagentStopLate => "subagent_stop_late", "a SubagentStop for a subagent whose scope already ended with the main turn";
    NestedTurnEndedBySubagentStop => "nested_turn_ended_by_subagent_stop", "a nested turn with no Stop of its own, ended in success by its SubagentStop";
    AgentWithoutScope => "agent_without_scope", "an event tagged with an agent_id no open subagent scope has (its SubagentStart was missed): attributed to the main turn";
    NestedTurnImplied => "nested_turn_implied", "a Stop inside a nested scope with no nested turn started: a nested turn was recorded for it";
    NestedTurnUnended => "nested_turn_unended", "a nested turn still open when its scope closed (a terminal gap)";
    ScopeOpenAtTurnEnd => "scope_open_at_turn_end", "a nested scope still open when the parent turn ended interrupted or unseen: it ended with it";
    CallsMovedToBackground => "calls_moved_to_background", "tool calls still open when the parent's Stop ended its turn, where subagents carry no id (Kimi): a turn ends with none of its own open, so they were the background subagent's";
    ScopeInBackground => "scope_in_background", "a nested scope still open when the parent turn ended: it goes on in the background until its own end";
    InterruptScopeAmbiguous => "interrupt_scope_ambiguous", "an Interrupt while a nested turn was open and turn ids could not tell which: the innermost turn was taken";
    CompactionStartWhileOpen => "compaction_start_while_open", "a PreCompact while a compaction window was already open";
    CompactionEndWithoutStart => "compaction_end_without_start", "a PostCompact with no open compaction window";
    CompactionUnclosed => "compaction_unclosed", "a compaction window with no end event, closed at the next prompt or session boundary (Gemini sends none; a failed Claude compaction neither)";
    StateLimitReached => "state_limit_reached", "more open tool calls or permissions than the tracker keeps: the oldest was dropped";
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// At most this many distinct unknown event names are counted by name; the rest are
/// counted under `UNKNOWN_OTHER` so a hostile file cannot grow the map without bound.
pub const UNKNOWN_NAME_LIMIT: usize = 64;
pub const UNKNOWN_OTHER: &str = "(other names)";

/// The counters. Serializes as `{"counters": {name: n, ...}, "unknown_events": {name: n}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    counts: Vec<u64>,
    unknown_events: IndexMap<String, u64>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self {
            counts: vec![0; Diag::ALL.len()],
            unknown_events: IndexMap::new(),
        }
    }

    pub fn bump(&mut self, diag: Diag) {
        if self.counts.is_empty() {
            self.counts = vec![0; Diag::ALL.len()];
        }
        self.counts[diag as usize] += 1;
    }

    /// Counts `n` at once (a loss row's events).
    pub fn add(&mut self, diag: Diag, n: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; Diag::ALL.len()];
        }
        let count = &mut self.counts[diag as usize];
        *count = count.saturating_add(n);
    }

    pub fn count(&self, diag: Diag) -> u64 {
        self.counts.get(diag as usize).copied().unwrap_or(0)
    }

    /// Counts an unknown event by name (the `unknown_event` counter itself is bumped by
    /// its note, like every other diagnostic).
    pub fn count_unknown_name(&mut self, name: &str) {
        if let Some(n) = self.unknown_events.get_mut(name) {
            *n += 1;
        } else if self.unknown_events.len() < UNKNOWN_NAME_LIMIT {
            self.unknown_events.insert(name.to_owned(), 1);
        } else {
            *self
                .unknown_events
                .entry(UNKNOWN_OTHER.to_owned())
                .or_insert(0) += 1;
        }
    }

    pub fn unknown_events(&self) -> &IndexMap<String, u64> {
        &self.unknown_events
    }

    /// The counters that are not zero, in declaration order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Diag, u64)> + '_ {
        Diag::ALL
            .iter()
            .map(|d| (*d, self.count(*d)))
            .filter(|(_, n)| *n > 0)
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

struct Counters<'a>(&'a Diagnostics);

impl Serialize for Counters<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Diag::ALL.len()))?;
        for diag in Diag::ALL {
            map.serialize_entry(diag.name(), &self.0.count(*diag))?;
        }
        map.end()
    }
}

impl Serialize for Diagnostics {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("counters", &Counters(self))?;
        map.serialize_entry("unknown_events", &self.unknown_events)?;
        map.end()
    }
}

/// An error and its causes on one line (`cannot read x: permission denied`), as the
/// binary and the logs report them.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// A diagnostic attached to one line or event, for the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    pub diag: Diag,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Note {
    pub fn new(diag: Diag, detail: Option<String>) -> Self {
        Self { diag, detail }
    }
}

impl Serialize for Diag {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{} ({d})", self.diag),
            None => f.write_str(self.diag.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Diag::ALL.iter().map(|d| d.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Diag::ALL.len());
    }

    #[test]
    fn unknown_names_are_bounded() {
        let mut d = Diagnostics::new();
        for i in 0..(UNKNOWN_NAME_LIMIT + 10) {
            d.bump(Diag::UnknownEvent);
            d.count_unknown_name(&format!("E{i}"));
        }
        assert_eq!(d.unknown_events().len(), UNKNOWN_NAME_LIMIT + 1);
        assert_eq!(d.unknown_events()[UNKNOWN_OTHER], 10);
        assert_eq!(
            d.count(Diag::UnknownEvent),
            (UNKNOWN_NAME_LIMIT + 10) as u64
        );
    }
}
