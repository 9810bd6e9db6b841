//! Line → row → delivery filter → normalizer → correlator, one line at a time.
//!
//! The pipeline owns the diagnostics counters. It does no I/O: the caller reads lines
//! (from a file, a pipe, a tailer) and feeds them in.

use std::borrow::Cow;

use crate::agent::Agent;
use crate::correlate::{Correlator, Observation, Outcome, TurnRecord};
use crate::deliveries::{Admission, DeliveryFilter};
use crate::diagnostics::{Diag, Diagnostics, Note};
use crate::event::Event;
use crate::posture::{ChannelState, Posture};
use crate::provider::{Detection, Detector, ProviderChoice};
use crate::read::ReadLine;
use crate::row::{LineError, Row, parse_line};
use crate::time::Timestamp;

/// A line that did not become an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub line: u64,
    pub diag: Diag,
    pub detail: String,
}

/// An event and what it did.
#[derive(Debug)]
pub struct Step<'a> {
    pub line: u64,
    pub at: Option<Timestamp>,
    /// The envelope's generation, if the row had one.
    pub generation: Option<u64>,
    /// The provider's own event name.
    pub name: Cow<'a, str>,
    pub event: Event<'a>,
    pub provider: Agent,
    pub outcome: Outcome,
    /// The tmux pane the row names (envelope `tmux_pane`), if any.
    pub tmux_pane: Option<String>,
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
    diagnostics: Diagnostics,
    events: u64,
    assumed_noted: bool,
}

impl Pipeline {
    pub fn new(choice: ProviderChoice) -> Self {
        Self {
            detector: Detector::new(choice),
            filter: DeliveryFilter::new(),
            correlator: None,
            diagnostics: Diagnostics::new(),
            events: 0,
            assumed_noted: false,
        }
    }

    /// Feeds one line as read by [`LineReader`](crate::read::LineReader).
    pub fn feed<'a>(&mut self, line: ReadLine<'a>) -> Fed<'a> {
        match line {
            ReadLine::Line { number, bytes } => self.feed_line(number, bytes),
            ReadLine::Oversized { number, len } => self.skip(number, &LineError::Oversized { len }),
            ReadLine::Truncated { number, .. } => self.skip(number, &LineError::Truncated),
        }
    }

    /// Feeds one whole line (without its newline). `number` is its 1-based line number.
    pub fn feed_line<'a>(&mut self, number: u64, bytes: &'a [u8]) -> Fed<'a> {
        self.feed_parsed(number, parse_line(bytes))
    }

    /// Feeds one line already parsed with [`parse_line`]: the parse is the one step that
    /// does not depend on earlier lines, so a caller may run it ahead, on another thread.
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
            Admission::FreshOutOfOrder => notes.push(Note::new(
                Diag::OutOfOrderRow,
                row.meta.emitter_seq.map(|s| format!("emitter_seq {s}")),
            )),
            Admission::Fresh => {}
        }
        if row.name_mismatch {
            notes.push(Note::new(Diag::EventNameMismatch, None));
        }
        let (provider, assumed) = self.detector.provider_for(number, row);
        if assumed && !self.assumed_noted {
            self.assumed_noted = true;
            notes.push(Note::new(Diag::ProviderAssumed, None));
        }
        let event = provider.normalize(&row.event_name, &mut row.payload);
        let meta = row.meta;
        let event_name = std::mem::take(&mut row.event_name);
        let tmux_pane = row.tmux_pane.take();
        if let Event::Unknown { name } = &event {
            self.diagnostics.count_unknown_name(name);
            notes.push(Note::new(Diag::UnknownEvent, Some(name.to_string())));
        }
        let correlator = self
            .correlator
            .get_or_insert_with(|| Correlator::new(provider.capabilities()));
        // Rows before the first identifying one ran under an assumed provider: from here
        // on the identified provider's turn structure applies.
        if correlator.capabilities() != provider.capabilities() {
            correlator.set_capabilities(provider.capabilities());
        }
        let mut outcome = correlator.observe(
            Observation {
                line: number,
                generation: meta.generation,
                event: &event,
            },
            meta.at,
        );
        if !notes.is_empty() {
            notes.append(&mut outcome.notes);
            outcome.notes = notes;
        }
        for note in &outcome.notes {
            self.diagnostics.bump(note.diag);
        }
        self.events += 1;
        Fed::Event(Step {
            line: number,
            at: meta.at,
            generation: meta.generation,
            name: event_name,
            event,
            provider,
            outcome,
            tmux_pane,
        })
    }

    fn skip<'a>(&mut self, line: u64, error: &LineError) -> Fed<'a> {
        self.skip_diag(line, error.diag(), error.to_string())
    }

    fn skip_diag<'a>(&mut self, line: u64, diag: Diag, detail: String) -> Fed<'a> {
        self.diagnostics.bump(diag);
        Fed::Skipped(Skip { line, diag, detail })
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

    /// The turn ledger: `closed` (the turns the steps reported ended) with the turns
    /// still open now, in turn order.
    pub fn ledger(&self, mut closed: Vec<TurnRecord>) -> Vec<TurnRecord> {
        closed.extend(self.open_turns());
        closed.sort_by_key(|t| t.id);
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

    /// Events fed so far (lines that became events).
    pub fn events(&self) -> u64 {
        self.events
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}
