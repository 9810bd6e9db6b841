//! Line → row → delivery filter → normalizer → correlator, one line at a time.
//!
//! The pipeline owns the diagnostics counters. It does no I/O: the caller reads lines
//! (from a file, a pipe, a tailer) and feeds them in.

use std::borrow::Cow;

use crate::agent::Agent;
use crate::agents::SessionFile;
use crate::correlate::{Correlator, Observation, Outcome, TurnRecord};
use crate::deliveries::{Admission, DeliveryFilter, MAX_GENERATION_JUMP};
use crate::diagnostics::{Diag, Diagnostics, Note};
use crate::envelope::{EVENTS_LOST, PROCESS_ENDED, Via};
use crate::event::Event;
use crate::payload::Payload;
use crate::posture::{ChannelState, Posture};
use crate::provenance::{Cause, Facts, Provenance};
use crate::provider::{Detection, Detector, ProviderChoice};
use crate::read::ReadLine;
use crate::row::{LineError, Row, parse_line, parse_read_line};
use crate::source::Source;
use crate::time::Timestamp;
use crate::transcript::{self, Entry};

/// A line that did not become an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub line: u64,
    /// Where the line was read: `events.ndjson` (hook) or a transcript.
    pub source: Source,
    pub diag: Diag,
    pub detail: String,
}

/// An event and what it did.
#[derive(Debug)]
pub struct Step<'a> {
    /// The line of its source (`events.ndjson` or the transcript); 0 for the process.
    pub line: u64,
    pub source: Source,
    pub at: Option<Timestamp>,
    /// The envelope's generation, if the row had one.
    pub generation: Option<u64>,
    /// The provider's own event name, a transcript marker's name, or `process_ended`.
    pub name: Cow<'a, str>,
    pub event: Event<'a>,
    pub provider: Agent,
    pub outcome: Outcome,
    /// The tmux pane the row names (envelope `tmux_pane`), if any.
    pub tmux_pane: Option<String>,
    /// The agent process the row names (envelope `agent_pid`), if any.
    pub agent_pid: Option<u32>,
}

// A step is returned for nearly every line; boxing it would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Fed<'a> {
    Skipped(Skip),
    Event(Step<'a>),
}

#[derive(Debug)]
pub struct Pipeline {
    detector: Detector,
    filter: DeliveryFilter,
    correlator: Option<Correlator>,
    /// The agent whose capabilities the correlator has, once a hook row checked them
    /// (`None`: not checked yet): comparing the capabilities costs more than the agent.
    capabilities_of: Option<Agent>,
    diagnostics: Diagnostics,
    events: u64,
    hook_events: u64,
    assumed_noted: bool,
    /// The provenance facts after the last event, to see which ones the next one sets.
    last_facts: Facts,
    provenance: Provenance,
    /// The main agent's transcript, as the last payload that named one said.
    transcript: Option<String>,
    /// Where the payloads name none: the session file of the agent's descriptor and the
    /// last `session_id` (Kimi Code).
    session_file: Option<(SessionFile, String)>,
    /// The agent process this session's hooks come from: the `agent_pid` of its first
    /// row that names one, until that process is seen to end (a resumed session's new
    /// process then takes over). A row naming another pid meanwhile was run by something
    /// else (a tool step of the agent running the hook command): counted, never tracked.
    agent: Option<u32>,
    /// Read what each tool call acts on ([`crate::tool_argument`]): off, a call's
    /// `argument` is `None` and its input is not read again.
    tool_arguments: bool,
}

impl Pipeline {
    pub fn new(choice: ProviderChoice) -> Self {
        Self {
            detector: Detector::new(choice),
            filter: DeliveryFilter::new(),
            correlator: None,
            capabilities_of: None,
            diagnostics: Diagnostics::new(),
            events: 0,
            hook_events: 0,
            assumed_noted: false,
            last_facts: Facts::default(),
            provenance: Provenance::default(),
            transcript: None,
            session_file: None,
            agent: None,
            tool_arguments: false,
        }
    }

    /// Reads what each tool call acts on, for the posture's one-line summary
    /// ([`crate::posture::TurnPosture::blocked_argument`]): a live reader's summary needs
    /// it; a replay, which shows none, reads faster without (the call's input is parsed
    /// again for it).
    pub fn with_tool_arguments(mut self, on: bool) -> Self {
        self.tool_arguments = on;
        self
    }

    pub(crate) fn set_tool_arguments(&mut self, on: bool) {
        self.tool_arguments = on;
    }

    /// Forgets what the lines read so far built (delivery keys, provider detection, turn
    /// state), keeping the counters: the stream starts over, as when a file is rewritten
    /// in place and its lines are fed again.
    pub fn restart(&mut self) {
        let choice = self.detector.choice();
        let diagnostics = std::mem::take(&mut self.diagnostics);
        let announced = self.filter.announced();
        *self = Self::new(choice).with_tool_arguments(self.tool_arguments);
        self.diagnostics = diagnostics;
        // What the store's records announced is not a line of the stream.
        if let Some(generation) = announced {
            self.filter.announce(generation);
        }
    }

    /// The store announced `generation` (its collector's or launcher's record): a row of
    /// it may now move this session to it. See `deliveries.rs`.
    pub fn announce_generation(&mut self, generation: u64) {
        self.filter.announce(generation);
    }

    /// Feeds one line as read by [`LineReader`](crate::read::LineReader).
    pub fn feed<'a>(&mut self, line: ReadLine<'a>) -> Fed<'a> {
        let (number, parsed) = parse_read_line(line);
        self.feed_parsed(number, parsed)
    }

    /// Feeds one whole line (without its newline). `number` is its 1-based line number.
    pub fn feed_line<'a>(&mut self, number: u64, bytes: &'a [u8]) -> Fed<'a> {
        self.feed_parsed(number, parse_line(bytes))
    }

    /// Feeds one line already parsed with [`parse_line`]: the parse is the one step that
    /// does not depend on earlier lines, so a caller may run it ahead, on another thread,
    /// or a router that looked at the row first
    /// ([`Sessions`](crate::sessions::Sessions)) hands it on instead of parsing again.
    pub fn feed_parsed<'a>(&mut self, number: u64, parsed: Result<Row<'a>, LineError>) -> Fed<'a> {
        match parsed {
            Ok(mut row) => self.feed_row(number, &mut row),
            Err(e) => self.skip(number, &e),
        }
    }

    /// [`Pipeline::feed_parsed`] for a row the caller keeps: what the step needs is taken
    /// out of it, and the row (its boxed payload) is the caller's to drop, for example on
    /// the thread that parsed and allocated it.
    pub fn feed_row<'a>(&mut self, number: u64, row: &mut Row<'a>) -> Fed<'a> {
        let mut notes = Vec::new();
        match self.filter.admit(&row.meta) {
            Admission::Duplicate => {
                return self.skip_diag(
                    number,
                    Diag::DuplicateDelivery,
                    format!(
                        "{} delivery of generation {}, emitter_seq {} already seen",
                        row.event_name,
                        opt(row.meta.generation),
                        opt(row.meta.emitter_seq)
                    ),
                );
            }
            Admission::StaleGeneration { current } => {
                return self.skip_diag(
                    number,
                    Diag::StaleGeneration,
                    format!(
                        "{} of generation {} after generation {current}",
                        row.event_name,
                        opt(row.meta.generation)
                    ),
                );
            }
            Admission::GenerationJump { current } => {
                return self.skip_diag(
                    number,
                    Diag::GenerationJump,
                    format!(
                        "{} of generation {} refused: more than {MAX_GENERATION_JUMP} past generation {current}",
                        row.event_name,
                        opt(row.meta.generation)
                    ),
                );
            }
            Admission::Unannounced { current } => {
                return self.skip_diag(
                    number,
                    Diag::UnannouncedGeneration,
                    format!(
                        "{} of generation {} refused: the store announced no generation past {current}",
                        row.event_name,
                        opt(row.meta.generation)
                    ),
                );
            }
            Admission::FreshOutOfOrder => notes.push(Note::new(
                Diag::OutOfOrderRow,
                row.meta.emitter_seq.map(|s| format!("emitter_seq {s}")),
            )),
            Admission::Fresh => {}
        }
        if row.event_name == EVENTS_LOST {
            return self.events_lost(number, row);
        }
        if row.lone_surrogates > 0 {
            notes.push(Note::new(
                Diag::LoneSurrogate,
                Some(format!("{} replaced by U+FFFD", row.lone_surrogates)),
            ));
        }
        if row.name_mismatch {
            notes.push(Note::new(Diag::EventNameMismatch, None));
        }
        let (provider, assumed) = self.detector.provider_for(number, row);
        if assumed && !self.assumed_noted {
            self.assumed_noted = true;
            notes.push(Note::new(Diag::ProviderAssumed, None));
        }
        if row.meta.via == Some(Via::Launcher) {
            return Fed::Event(self.launcher_row(number, row, provider, notes));
        }
        if let Some(pid) = row.agent_pid {
            match self.agent {
                Some(agent) if agent != pid => {
                    return self.skip_diag(
                        number,
                        Diag::RowNotFromAgent,
                        format!(
                            "{} ran by process {pid}, not by the session's agent {agent} (still running as far as the store says)",
                            row.event_name
                        ),
                    );
                }
                Some(_) => {}
                None => self.agent = Some(pid),
            }
        }
        let named = crate::follow::Named::by(row, provider);
        if let Some(path) = named.transcript
            && self.transcript.as_deref() != Some(path)
        {
            self.transcript = Some(path.to_owned());
        }
        if let Some((file, id)) = named.session_file
            && self
                .session_file
                .as_ref()
                .is_none_or(|(_, known)| known != id)
        {
            self.session_file = Some((file, id.to_owned()));
        }
        let mut payload = Payload::clone(&row.payload);
        let event = provider.normalize_with(&row.event_name, &mut payload, self.tool_arguments);
        let meta = row.meta;
        let event_name = std::mem::take(&mut row.event_name);
        let tmux_pane = row.tmux_pane.take();
        let agent_pid = row.agent_pid;
        if let Event::Unknown { name } = &event {
            self.diagnostics.count_unknown_name(name);
            notes.push(Note::new(Diag::UnknownEvent, Some(name.to_string())));
        }
        // Rows before the first identifying one ran under an assumed provider: from here
        // on the identified provider's turn structure applies.
        if self.capabilities_of != Some(provider) {
            let caps = provider.capabilities();
            let correlator = self.correlator.get_or_insert_with(|| Correlator::new(caps));
            if correlator.capabilities() != caps {
                correlator.set_capabilities(caps);
            }
            self.capabilities_of = Some(provider);
        }
        let step = Step {
            line: number,
            source: Source::Hook,
            at: meta.at,
            generation: meta.generation,
            name: event_name,
            event,
            provider,
            outcome: Outcome::default(),
            tmux_pane,
            agent_pid,
        };
        self.hook_events += 1;
        Fed::Event(self.observe(step, notes))
    }

    /// Whether `row` would end this session's open main turn by beginning something else
    /// ([`Correlator::would_supersede`]). The adapter maps a copy of its payload (it takes
    /// what it maps out of it): `row` stays as parsed, to be fed or held.
    pub fn would_supersede(&self, row: &Row<'_>) -> bool {
        let Some(correlator) = &self.correlator else {
            return false;
        };
        if row.meta.via == Some(Via::Launcher) {
            return false;
        }
        let Some(provider) = self.detection().map(|d| d.provider) else {
            return false;
        };
        let mut payload = Payload::clone(&row.payload);
        let event = provider.normalize_with(&row.event_name, &mut payload, self.tool_arguments);
        correlator.would_supersede(&event)
    }

    /// Feeds one line of the transcript the payloads name ([`Pipeline::transcript_path`]).
    /// `number` is its 1-based line number in the transcript. Only a known marker becomes
    /// an event (timed by the entry's own timestamp); any other entry is a counted skip.
    pub fn feed_transcript<'a>(&mut self, number: u64, bytes: &[u8]) -> Fed<'a> {
        let skip = |diag, detail: &str| Skip {
            line: number,
            source: Source::Transcript,
            diag,
            detail: detail.to_owned(),
        };
        let Some(provider) = self.detection().map(|d| d.provider) else {
            self.diagnostics.bump(Diag::TranscriptNotFollowed);
            return Fed::Skipped(skip(
                Diag::TranscriptNotFollowed,
                "no provider identified yet",
            ));
        };
        let marker = match transcript::classify(provider, bytes) {
            Entry::Marker(marker) => marker,
            Entry::Ignored => {
                self.diagnostics.bump(Diag::TranscriptEntryIgnored);
                return Fed::Skipped(skip(Diag::TranscriptEntryIgnored, "not a marker"));
            }
            Entry::Unreadable => {
                self.diagnostics.bump(Diag::TranscriptEntryUnreadable);
                return Fed::Skipped(skip(Diag::TranscriptEntryUnreadable, "not a JSON object"));
            }
            Entry::NotFollowed => {
                self.diagnostics.bump(Diag::TranscriptNotFollowed);
                return Fed::Skipped(skip(Diag::TranscriptNotFollowed, provider.label()));
            }
        };
        let step = Step {
            line: number,
            source: Source::Transcript,
            at: marker.at,
            generation: None,
            name: Cow::Borrowed(marker.name),
            event: marker.event,
            provider,
            outcome: Outcome::default(),
            tmux_pane: None,
            agent_pid: None,
        };
        Fed::Event(self.observe(step, Vec::new()))
    }

    /// The agent process ended at `at`: an open turn ends `terminal_gap`, presence becomes
    /// absent. `pid` names it in the ledger's notes.
    pub fn process_ended<'a>(&mut self, pid: Option<u32>, at: Option<Timestamp>) -> Step<'a> {
        self.agent = None;
        let provider = self
            .detection()
            .map_or(crate::agent::Agent::ASSUMED, |d| d.provider);
        let step = Step {
            line: 0,
            source: Source::Process,
            at,
            generation: None,
            name: Cow::Borrowed(PROCESS_ENDED),
            event: Event::ProcessEnded { pid },
            provider,
            outcome: Outcome::default(),
            tmux_pane: None,
            agent_pid: None,
        };
        // The correlator notes a terminal gap when a turn was open; otherwise nothing was
        // guessed and nothing is counted (the step itself says which process ended).
        self.observe(step, Vec::new())
    }

    /// The agent's screen no longer draws the dialog of the oldest window that waits on
    /// the user (read at `at`): that window ends (source `screen`). Never starts or ends a
    /// turn.
    pub fn screen_answered<'a>(&mut self, at: Timestamp) -> Step<'a> {
        let provider = self
            .detection()
            .map_or(crate::agent::Agent::ASSUMED, |d| d.provider);
        let event = Event::DialogAnswered;
        let step = Step {
            line: 0,
            source: Source::Screen,
            at: Some(at),
            generation: None,
            name: Cow::Borrowed(event.kind()),
            event,
            provider,
            outcome: Outcome::default(),
            tmux_pane: None,
            agent_pid: None,
        };
        self.observe(step, Vec::new())
    }

    /// What a screen read may end now (see [`Correlator::screen_target`]).
    pub fn screen_target(&self) -> Option<u64> {
        self.correlator.as_ref().and_then(Correlator::screen_target)
    }

    /// A launcher's row in the store: the agent process's end, as
    /// [`Pipeline::process_ended`] at the row's line and time (so a replay of the store
    /// ends what the live run ended). Any other event from a launcher is unknown.
    fn launcher_row<'a>(
        &mut self,
        number: u64,
        row: &mut Row<'a>,
        provider: Agent,
        mut notes: Vec<Note>,
    ) -> Step<'a> {
        let name = std::mem::take(&mut row.event_name);
        let event = if name == PROCESS_ENDED {
            self.agent = None;
            Event::ProcessEnded {
                pid: row.payload.pid,
            }
        } else {
            self.diagnostics.count_unknown_name(&name);
            notes.push(Note::new(Diag::UnknownEvent, Some(name.to_string())));
            Event::Unknown { name: name.clone() }
        };
        let step = Step {
            line: number,
            source: Source::Process,
            at: row.meta.at,
            generation: row.meta.generation,
            name,
            event,
            provider,
            outcome: Outcome::default(),
            tmux_pane: None,
            agent_pid: None,
        };
        self.observe(step, notes)
    }

    /// Runs one event through the correlator; counts its notes, records which facts it set.
    fn observe<'a>(&mut self, mut step: Step<'a>, mut notes: Vec<Note>) -> Step<'a> {
        let caps = step.provider.capabilities();
        let correlator = self.correlator.get_or_insert_with(|| Correlator::new(caps));
        let mut outcome = correlator.observe(
            Observation {
                line: step.line,
                generation: step.generation,
                event: &step.event,
                source: step.source,
            },
            step.at,
        );
        if !notes.is_empty() {
            notes.append(&mut outcome.notes);
            outcome.notes = notes;
        }
        for note in &outcome.notes {
            self.diagnostics.bump(note.diag);
        }
        self.events += 1;
        let changed = correlator.update_facts(&mut self.last_facts);
        let cause = || Cause {
            source: step.source,
            event: step.name.to_string(),
            line: step.line,
            at: step.at,
        };
        self.provenance.record(changed, cause);
        step.outcome = outcome;
        step
    }

    fn skip<'a>(&mut self, line: u64, error: &LineError) -> Fed<'a> {
        self.skip_diag(line, error.diag(), error.to_string())
    }

    /// A plugin's loss row: counted by the events it names (one when it names no number,
    /// as the give-up row of a hook process the agent ended), shown as a skip; it says
    /// nothing of where a turn stands.
    fn events_lost<'a>(&mut self, line: u64, row: &Row<'_>) -> Fed<'a> {
        let lost = row.payload.lost.filter(|n| *n > 0);
        self.diagnostics
            .add(Diag::PluginEventsLost, lost.unwrap_or(1).saturating_sub(1));
        let detail = match (lost, row.payload.lost_bytes) {
            (Some(n), Some(bytes)) => format!("the plugin dropped {n} events ({bytes} bytes)"),
            (Some(n), None) => format!("the plugin dropped {n} events"),
            (None, _) => "the plugin dropped events (how many is not known)".to_owned(),
        };
        self.skip_diag(line, Diag::PluginEventsLost, detail)
    }

    fn skip_diag<'a>(&mut self, line: u64, diag: Diag, detail: String) -> Fed<'a> {
        self.diagnostics.bump(diag);
        Fed::Skipped(Skip {
            line,
            source: Source::Hook,
            diag,
            detail,
        })
    }

    /// The posture after the last line. In a replay the channel is `active` once an event
    /// arrived and `unavailable` before.
    pub fn posture(&self) -> Posture {
        let state = if self.events > 0 {
            ChannelState::Active
        } else {
            ChannelState::Unavailable
        };
        self.hook_posture().with_channel(state)
    }

    /// The posture as the hooks alone see it, before any channel state is applied.
    pub fn hook_posture(&self) -> Posture {
        self.correlator
            .as_ref()
            .map(Correlator::posture)
            .unwrap_or_default()
    }

    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Counts a guess the tracker made about this session (not one of its lines).
    pub(crate) fn count(&mut self, diag: Diag) {
        self.diagnostics.bump(diag);
    }

    /// The turn ledger: `closed` (the turns the steps reported ended) with the turns
    /// still open now, in turn order.
    pub fn ledger(&self, mut closed: Vec<TurnRecord>) -> Vec<TurnRecord> {
        closed.extend(self.open_turns());
        // Nearly always in order already (a nested turn ends before its parent): a sort
        // that is not needed copies every record once.
        if !closed.is_sorted_by_key(|t| t.id) {
            closed.sort_by_key(|t| t.id);
        }
        closed
    }

    /// Turns still open now.
    pub fn open_turns(&self) -> Vec<TurnRecord> {
        self.correlator
            .as_ref()
            .map(Correlator::open_turns)
            .unwrap_or_default()
    }

    /// Which provider the stream was decided to be, and why.
    pub fn detection(&self) -> Option<&Detection> {
        self.detector.decided()
    }

    /// What set each posture fact, as of the last event.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// The main agent's transcript, as the last payload that named one said.
    pub fn transcript_path(&self) -> Option<&str> {
        self.transcript.as_deref()
    }

    /// Where the agent keeps the session file the payloads do not name: its location under
    /// the agent's home and the session's id (see [`SessionFile`]).
    pub fn session_file(&self) -> Option<(SessionFile, &str)> {
        self.session_file
            .as_ref()
            .map(|(file, id)| (*file, id.as_str()))
    }

    /// Events fed so far (lines that became events).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events from `events.ndjson` alone (not the transcript or the process): what tells
    /// whether the hooks fire at all.
    pub fn hook_events(&self) -> u64 {
        self.hook_events
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}
