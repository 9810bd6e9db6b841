//! Rows that wait for their session's transcript (contract section 12: delivery order is
//! not event order).
//!
//! Some agents report an end only in their transcript (Claude Code's Escape, a dialog
//! answered "No") and write that line there tens to hundreds of milliseconds later. The
//! user's next prompt can reach the store first: fed at once, it would end the still-open
//! turn as a terminal gap, and the marker, read after it, would settle nothing. A replay
//! reads the transcripts before the rows and places each line by its time; a live reader
//! sees a line only once it is written.
//!
//! So a live reader ([`Tracker::feed_live`](crate::tracker::Tracker::feed_live)) lets a row
//! that would end the open main turn by beginning something else (a prompt, a session's
//! start or end) wait until its session's file has been read past the
//! row's time, so every line written before the row is placed before it, or until
//! [`HOLD_MS`] after the row's time, whichever comes first. The lines after it wait behind
//! it: the store's order is kept. Every wait is counted (`row_held_for_transcript`), and
//! every wait that ran out before the file reached the row (`row_hold_expired`).

use std::collections::VecDeque;

use crate::read::ReadLine;
use crate::row::{LineError, parse_read_line};
use crate::time::Timestamp;

/// The longest a row waits for its session's transcript, from the row's own time: Claude
/// Code writes its transcript 16–156 ms after the key on a loaded 2-core machine.
pub const HOLD_MS: i64 = 1_000;

/// A line of the store kept back, owned.
#[derive(Debug)]
pub(crate) enum HeldLine {
    Row {
        number: u64,
        bytes: Vec<u8>,
        /// Set while this row is the one waiting: its session and its time.
        waits: Option<(usize, Timestamp)>,
    },
    /// A line that is no row: it keeps its place.
    Other { number: u64, error: LineError },
}

impl HeldLine {
    pub(crate) fn own(line: ReadLine<'_>) -> Self {
        match line {
            ReadLine::Line { number, bytes } => HeldLine::Row {
                number,
                bytes: bytes.to_vec(),
                waits: None,
            },
            other => match parse_read_line(other) {
                (number, Err(error)) => HeldLine::Other { number, error },
                // Only a whole line parses; kept as one if that ever changes.
                (number, Ok(_)) => HeldLine::Other {
                    number,
                    error: LineError::Truncated,
                },
            },
        }
    }
}

/// The lines kept back, in store order; the first is the row that waits.
#[derive(Debug, Default)]
pub(crate) struct Held {
    pub(crate) lines: VecDeque<HeldLine>,
}

impl Held {
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The waiting row's session and time.
    pub(crate) fn waiting(&self) -> Option<(usize, Timestamp)> {
        match self.lines.front() {
            Some(HeldLine::Row { waits, .. }) => *waits,
            _ => None,
        }
    }

    /// When the waiting row goes whatever the file says.
    pub(crate) fn until(&self) -> Option<Timestamp> {
        self.waiting()
            .map(|(_, at)| Timestamp::from_millis(at.as_millis().saturating_add(HOLD_MS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Diag;
    use crate::follow::Offset;
    use crate::pipeline::Fed;
    use crate::posture::TurnResult;
    use crate::tracker::{FedLine, Tracker, TrackerConfig};

    /// 2026-01-01T00:00:00Z, in milliseconds.
    const T0: i64 = 1_767_225_600_000;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(T0 + ms)
    }

    fn stamp(ms: i64) -> String {
        format!("2026-01-01T00:00:{:02}.{:03}Z", ms / 1000, ms % 1000)
    }

    /// A Claude Code hook row received at `ms`.
    fn row(event: &str, ms: i64, extra: &str) -> String {
        format!(
            r#"{{"v":1,"provider":"claude","received_at":"{}","event":"{event}","payload":{{"hook_event_name":"{event}","session_id":"s","transcript_path":"/t/s.jsonl"{extra}}}}}"#,
            stamp(ms)
        )
    }

    fn prompt(id: &str, ms: i64) -> String {
        row("UserPromptSubmit", ms, &format!(r#","prompt_id":"{id}""#))
    }

    /// A transcript entry of turn `id` at `ms`; `text` is its user text.
    fn entry(id: &str, ms: i64, text: &str) -> Vec<u8> {
        format!(
            r#"{{"type":"user","promptId":"{id}","timestamp":"{}","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}]}}}}"#,
            stamp(ms)
        )
        .into_bytes()
    }

    /// A live reader's view: the store's lines in, what was fed out, in order.
    struct Live {
        tracker: Tracker,
        rows: u64,
        lines: u64,
        fed: Vec<String>,
    }

    impl Live {
        fn new() -> Self {
            let config = TrackerConfig {
                keep_ledger: true,
                ..TrackerConfig::default()
            };
            Self {
                tracker: Tracker::new(config),
                rows: 0,
                lines: 0,
                fed: Vec::new(),
            }
        }

        fn sink(fed: &mut Vec<String>) -> impl for<'x> FnMut(FedLine<'_, 'x>) -> Result<(), ()> {
            |l: FedLine<'_, '_>| {
                if let Fed::Event(step) = l.fed {
                    fed.push(format!("{} {}", step.source.name(), step.name));
                }
                Ok(())
            }
        }

        /// The store's next row, read at `now` (ms).
        fn row(&mut self, text: &str, now: i64) {
            self.rows += 1;
            let line = ReadLine::Line {
                number: self.rows,
                bytes: text.as_bytes(),
            };
            let mut sink = Self::sink(&mut self.fed);
            self.tracker
                .feed_live(line, false, at(now), &mut sink)
                .unwrap();
        }

        /// The transcript's next lines, read at `now` (ms), then the end of the poll.
        fn transcript(&mut self, entries: Vec<Vec<u8>>, now: i64) {
            let batch = entries
                .into_iter()
                .map(|e| {
                    self.lines += 1;
                    (self.lines, e)
                })
                .collect();
            self.tracker.transcript_read(0, batch, Offset::default());
            self.end_poll(now);
        }

        fn end_poll(&mut self, now: i64) {
            let mut sink = Self::sink(&mut self.fed);
            self.tracker.release(at(now), false, &mut sink).unwrap();
            self.tracker.flush_transcript(&mut sink).unwrap();
        }

        fn results(&self) -> Vec<TurnResult> {
            self.tracker.ledger(0).iter().map(|t| t.result).collect()
        }

        fn count(&self, diag: Diag) -> u64 {
            self.tracker.pipeline().diagnostics().count(diag)
        }
    }

    /// A turn whose dialog was answered "No": the next prompt reaches the store before
    /// Claude Code writes the rejection to its transcript. The prompt waits for the
    /// transcript; the rejection ends the first turn `interrupted`, not `terminal_gap`.
    #[test]
    fn a_prompt_read_before_the_rejection_reaches_the_transcript_waits_for_it() {
        let mut live = Live::new();
        live.row(&row("SessionStart", 1_000, ""), 1_000);
        live.row(&prompt("p1", 2_000), 2_000);
        live.transcript(vec![entry("p1", 1_990, "Make a file.")], 2_010);
        live.row(&prompt("p2", 4_000), 4_010);
        assert!(live.tracker.held_until().is_some(), "{:?}", live.fed);
        assert_eq!(
            live.fed.last().map(String::as_str),
            Some("hook UserPromptSubmit")
        );
        // A row behind it keeps its place; the next prompt's own entry, written before
        // its hook, does not yet show the file past the row.
        live.row(
            &row(
                "PreToolUse",
                4_100,
                r#","tool_name":"Bash","tool_use_id":"t2""#,
            ),
            4_110,
        );
        live.transcript(
            vec![
                entry("p1", 3_000, "[Request interrupted by user for tool use]"),
                entry("p2", 3_990, "Wait a while."),
            ],
            4_120,
        );
        assert_eq!(live.tracker.held_until(), Some(at(5_000)));
        // The file reaches the row's time: the marker goes first, then the rows in order.
        live.transcript(vec![entry("p2", 4_050, "next")], 4_130);
        assert_eq!(live.tracker.held_until(), None);
        assert_eq!(
            live.fed[2..],
            [
                "transcript interrupted_after_rejection",
                "hook UserPromptSubmit",
                "hook PreToolUse"
            ]
        );
        assert_eq!(live.results(), [TurnResult::Interrupted, TurnResult::Open]);
        assert_eq!(live.count(Diag::RowHeldForTranscript), 1);
        assert_eq!(live.count(Diag::RowHoldExpired), 0);
        assert_eq!(live.count(Diag::TranscriptMarkerStale), 0);
    }

    /// A row queued behind a waiting one is asked in its turn when that one goes on: a
    /// second prompt that would end the turn the first one opened waits for the file to
    /// reach its own time.
    #[test]
    fn a_row_behind_a_released_one_waits_in_its_turn() {
        let mut live = Live::new();
        live.row(&row("SessionStart", 1_000, ""), 1_000);
        live.row(&prompt("p1", 2_000), 2_000);
        live.transcript(vec![entry("p1", 1_990, "Make a file.")], 2_010);
        live.row(&prompt("p2", 4_000), 4_010);
        live.row(&prompt("p3", 4_500), 4_510);
        assert_eq!(live.tracker.held_until(), Some(at(4_000 + HOLD_MS)));
        live.transcript(vec![entry("p2", 4_050, "Wait a while.")], 4_520);
        assert_eq!(live.tracker.held_until(), Some(at(4_500 + HOLD_MS)));
        assert_eq!(
            live.fed.last().map(String::as_str),
            Some("hook UserPromptSubmit")
        );
        let prompts = |fed: &[String]| fed.iter().filter(|f| *f == "hook UserPromptSubmit").count();
        assert_eq!(prompts(&live.fed), 2, "{:?}", live.fed);
        live.transcript(vec![entry("p3", 4_550, "Then stop.")], 4_530);
        assert_eq!(live.tracker.held_until(), None);
        assert_eq!(prompts(&live.fed), 3, "{:?}", live.fed);
        assert_eq!(live.count(Diag::RowHeldForTranscript), 2);
        assert_eq!(live.count(Diag::RowHoldExpired), 0);
    }

    /// The transcript never reaches the row's time: the row goes on `HOLD_MS` after it,
    /// the open turn is superseded, and the wait is counted as run out.
    #[test]
    fn a_row_waits_for_the_transcript_at_most_hold_ms() {
        let mut live = Live::new();
        live.row(&row("SessionStart", 1_000, ""), 1_000);
        live.row(&prompt("p1", 2_000), 2_000);
        live.transcript(vec![entry("p1", 1_990, "Make a file.")], 2_010);
        live.row(&prompt("p2", 4_000), 4_010);
        live.end_poll(4_000 + HOLD_MS - 1);
        assert!(live.tracker.held_until().is_some());
        live.end_poll(4_000 + HOLD_MS);
        assert_eq!(live.tracker.held_until(), None);
        assert_eq!(live.results(), [TurnResult::TerminalGap, TurnResult::Open]);
        assert_eq!(live.count(Diag::RowHoldExpired), 1);
    }

    /// The agent's end is written after it died, its files whole: a killed agent's
    /// `process_ended` row ends the open turn at once (a `session` that lingers less than
    /// `HOLD_MS` after the end read it as still open).
    #[test]
    fn a_process_end_row_never_waits_for_the_transcript() {
        let mut live = Live::new();
        live.row(&row("SessionStart", 1_000, ""), 1_000);
        live.row(&prompt("p1", 2_000), 2_000);
        live.transcript(vec![entry("p1", 1_990, "Make a file.")], 2_010);
        let end = crate::envelope::process_ended_row_of(
            "claude",
            1,
            at(3_000),
            42,
            crate::envelope::ProcessEnd::Killed(9),
            Some("s"),
        );
        live.row(&String::from_utf8_lossy(&end), 3_000);
        assert_eq!(live.tracker.held_until(), None);
        assert_eq!(live.results(), [TurnResult::TerminalGap]);
    }

    /// Only a row that would end the open turn waits: a tool call inside it, or a prompt
    /// with no turn open, is fed at once.
    #[test]
    fn rows_that_end_no_open_turn_do_not_wait() {
        let mut live = Live::new();
        live.row(&row("SessionStart", 1_000, ""), 1_000);
        live.row(&prompt("p1", 2_000), 2_000);
        assert_eq!(live.tracker.held_until(), None);
        live.row(
            &row(
                "PreToolUse",
                2_100,
                r#","tool_name":"Bash","tool_use_id":"t1""#,
            ),
            2_100,
        );
        live.row(&row("Stop", 2_200, ""), 2_200);
        live.row(&prompt("p2", 3_000), 3_000);
        assert_eq!(live.tracker.held_until(), None);
        assert_eq!(live.count(Diag::RowHeldForTranscript), 0);
    }
}
