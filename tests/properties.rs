//! Perturbed streams (rows dropped, duplicated, swapped with a neighbour, the file cut at
//! a random byte) must keep the tracker's invariants.

use std::collections::{HashMap, HashSet};

use hooktrack::Event;
use hooktrack::Format;
use hooktrack::ProviderChoice;
use hooktrack::posture::{Phase, Presence, TurnResult};
use hooktrack::{Fed, Pipeline, Step};
use hooktrack_core::read::LineReader;
use hooktrack_core::source::Source;
use proptest::prelude::*;

use crate::support::{campaigns, replay_bytes};

#[derive(Clone, Debug)]
enum Perturbation {
    Drop(usize),
    Duplicate(usize),
    SwapWithNext(usize),
    CutAtByte(usize),
}

fn perturbation() -> impl Strategy<Value = Perturbation> {
    prop_oneof![
        any::<usize>().prop_map(Perturbation::Drop),
        any::<usize>().prop_map(Perturbation::Duplicate),
        any::<usize>().prop_map(Perturbation::SwapWithNext),
        any::<usize>().prop_map(Perturbation::CutAtByte),
    ]
}

fn perturb(original: &[u8], changes: &[Perturbation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = original
        .split(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let mut cut = None;
    for change in changes {
        let n = lines.len();
        match *change {
            Perturbation::Drop(i) if n > 1 => {
                lines.remove(i % n);
            }
            Perturbation::Duplicate(i) => {
                let line = lines[i % n].clone();
                lines.insert(i % n, line);
            }
            Perturbation::SwapWithNext(i) if n > 1 => {
                let i = i % (n - 1);
                lines.swap(i, i + 1);
            }
            Perturbation::CutAtByte(b) => cut = Some(b),
            _ => {}
        }
    }
    let mut bytes = lines.join(&b'\n');
    if let Some(b) = cut {
        bytes.truncate(b % (bytes.len() + 1));
    }
    bytes
}

/// The invariants, checked after every step of a stream of hook rows, transcript lines
/// and the process's end.
struct Checker {
    closed_ids: HashSet<u64>,
    main_results_by_epoch: HashMap<u64, TurnResult>,
    seen_permission_request: bool,
    last_result: TurnResult,
    generation: Option<u64>,
}

impl Checker {
    fn new(pipeline: &Pipeline) -> Self {
        Self {
            closed_ids: HashSet::new(),
            main_results_by_epoch: HashMap::new(),
            seen_permission_request: false,
            last_result: pipeline.posture().last_turn.result,
            generation: None,
        }
    }

    fn step(&mut self, step: &Step<'_>, pipeline: &Pipeline) -> Result<(), TestCaseError> {
        // What may block (contract section 11): a permission request, a dialog a
        // notification announced, an ask-the-user call.
        let asks = match &step.event {
            Event::PermissionRequested { .. } | Event::InputRequested { .. } => true,
            Event::ToolStarted { tool } => step
                .provider
                .capabilities()
                .dialogs
                .asks_user(tool)
                .is_some(),
            _ => false,
        };
        if asks {
            self.seen_permission_request = true;
        }
        let generation = self.generation;
        let new_generation = step
            .generation
            .is_some_and(|g| generation.is_some_and(|c| g > c));
        self.generation = step.generation.or(generation).max(generation);
        let new_session = new_generation || matches!(step.event, Event::SessionStarted { .. });
        let mut main_closed = false;
        for turn in &step.outcome.closed {
            prop_assert!(
                self.closed_ids.insert(turn.id),
                "turn #{} latched twice",
                turn.id
            );
            prop_assert!(turn.result != TurnResult::Open && turn.result != TurnResult::None);
            prop_assert_eq!(turn.ended_by, Some(step.source));
            if turn.result == TurnResult::Success {
                prop_assert!(
                    step.source == Source::Hook
                        && (matches!(step.event, Event::Stopped { .. })
                            || (!turn.is_main()
                                && matches!(step.event, Event::SubagentStopped { .. }))),
                    "success latched by {} {} at line {}",
                    step.source,
                    step.name,
                    step.line
                );
            }
            // A transcript marker says "interrupted" or, for a failed model call,
            // "known_failure" (or ends a call), never anything else; the process says only
            // that the turn ended unseen.
            match step.source {
                Source::Transcript => prop_assert!(
                    matches!(
                        turn.result,
                        TurnResult::Interrupted | TurnResult::KnownFailure
                    ),
                    "a transcript marker latched {:?}",
                    turn.result
                ),
                Source::Process => prop_assert_eq!(turn.result, TurnResult::TerminalGap),
                _ => {}
            }
            if turn.is_main() {
                main_closed = true;
                let previous = self.main_results_by_epoch.insert(turn.epoch, turn.result);
                prop_assert!(
                    previous.is_none(),
                    "epoch {} has two terminal outcomes",
                    turn.epoch
                );
            }
            prop_assert!(turn.first_row <= turn.last_row);
        }
        let posture = pipeline.posture();
        if posture.turn.phase == Phase::Blocked {
            prop_assert!(
                self.seen_permission_request,
                "blocked with nothing that asks the user, line {}",
                step.line
            );
        }
        if step.source == Source::Process {
            prop_assert_eq!(posture.presence, Presence::Absent);
            prop_assert!(pipeline.open_turns().is_empty());
        }
        // The latched result moves only when a main turn ends, or back to none when a
        // session (or a new generation) begins.
        if posture.last_turn.result != self.last_result {
            prop_assert!(
                main_closed || (new_session && posture.last_turn.result == TurnResult::None),
                "last result changed {:?} -> {:?} at line {} with no turn ending",
                self.last_result,
                posture.last_turn.result,
                step.line
            );
        }
        self.last_result = posture.last_turn.result;
        Ok(())
    }

    fn finish(&self, pipeline: &Pipeline) -> Result<(), TestCaseError> {
        for open in pipeline.open_turns() {
            prop_assert!(
                !self.closed_ids.contains(&open.id),
                "turn #{} is both closed and open",
                open.id
            );
            prop_assert_eq!(open.result, TurnResult::Open);
        }
        Ok(())
    }
}

/// Feeds the stream step by step and checks every invariant after every step.
fn check_invariants(bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut reader = LineReader::new(bytes);
    let mut pipeline = Pipeline::new(ProviderChoice::Auto);
    let mut checker = Checker::new(&pipeline);
    while let Some(line) = reader
        .next_line()
        .map_err(|e| TestCaseError::fail(e.to_string()))?
    {
        if let Fed::Event(step) = pipeline.feed(line) {
            checker.step(&step, &pipeline)?;
        }
    }
    checker.finish(&pipeline)
}

/// One input of a stream with second signals.
#[derive(Clone, Debug)]
enum Input {
    Hook(u64, Vec<u8>),
    Transcript(u64, Vec<u8>),
    ProcessEnded,
}

fn check_signal_invariants(inputs: &[Input]) -> Result<(), TestCaseError> {
    let mut pipeline = Pipeline::new(ProviderChoice::Auto);
    let mut checker = Checker::new(&pipeline);
    for input in inputs {
        let step = match input {
            Input::Hook(n, bytes) => match pipeline.feed_line(*n, bytes) {
                Fed::Event(step) => step,
                Fed::Skipped(_) => continue,
            },
            Input::Transcript(n, bytes) => match pipeline.feed_transcript(*n, bytes) {
                Fed::Event(step) => step,
                Fed::Skipped(_) => continue,
            },
            Input::ProcessEnded => pipeline.process_ended(Some(1), None),
        };
        checker.step(&step, &pipeline)?;
    }
    checker.finish(&pipeline)
}

/// The campaigns recorded with transcripts: (hook lines, transcript lines).
/// A file's lines.
type Lines = Vec<Vec<u8>>;

fn signal_campaigns() -> Vec<(Lines, Lines)> {
    campaigns()
        .iter()
        .filter(|p| p.with_extension("transcripts").is_dir())
        .map(|p| {
            let lines = |bytes: Vec<u8>| -> Vec<Vec<u8>> {
                bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec)
                    .collect()
            };
            let hooks = lines(std::fs::read(p).expect("read campaign"));
            let mut transcript = Vec::new();
            // Files at any depth: Kimi Code's keep their `sessions/<workspace>/<id>/...` tree.
            let mut dirs = vec![p.with_extension("transcripts")];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(dir).expect("transcripts dir") {
                    let path = entry.expect("transcript entry").path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else {
                        transcript.extend(lines(std::fs::read(path).expect("read transcript")));
                    }
                }
            }
            (hooks, transcript)
        })
        .collect()
}

fn corpus_files() -> Vec<Vec<u8>> {
    campaigns()
        .iter()
        .map(|p| std::fs::read(p).expect("read corpus file"))
        .collect()
}

proptest! {
    // 512 cases by default; PROPTEST_CASES=20000 for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn perturbed_campaigns_keep_the_invariants(
        file in any::<prop::sample::Index>(),
        changes in prop::collection::vec(perturbation(), 0..6),
    ) {
        let files = corpus_files();
        let original = &files[file.index(files.len())];
        let bytes = perturb(original, &changes);
        check_invariants(&bytes)?;
        // Deterministic: the same bytes give the same output, byte for byte.
        let (_, first) = replay_bytes(&bytes, Format::Ndjson);
        let (_, second) = replay_bytes(&bytes, Format::Ndjson);
        prop_assert_eq!(first, second);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_invariants(&bytes)?;
    }

    #[test]
    fn spliced_campaigns_keep_the_invariants(
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        at in any::<usize>(),
    ) {
        // Two campaigns (even of different providers) glued together at a line boundary.
        let files = corpus_files();
        let first = &files[a.index(files.len())];
        let second = &files[b.index(files.len())];
        let cut = first.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).nth(at % 8).unwrap_or(first.len());
        let mut bytes = first[..cut].to_vec();
        bytes.extend_from_slice(second);
        check_invariants(&bytes)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    /// Hook rows of a recorded campaign with its transcript lines and the process's end
    /// interleaved anywhere (a transcript read early, late or out of turn, the process
    /// dying at any point): the same invariants hold, and a transcript never says success.
    #[test]
    fn streams_with_transcript_and_process_events_keep_the_invariants(
        campaign in any::<prop::sample::Index>(),
        positions in prop::collection::vec(any::<prop::sample::Index>(), 0..80),
        process_at in prop::option::of(any::<prop::sample::Index>()),
        shift in 0usize..4,
    ) {
        let campaigns = signal_campaigns();
        prop_assume!(!campaigns.is_empty());
        let (hooks, transcript) = &campaigns[campaign.index(campaigns.len())];
        let mut inputs: Vec<Input> = hooks
            .iter()
            .enumerate()
            .map(|(i, l)| Input::Hook(i as u64 + 1, l.clone()))
            .collect();
        // Transcript lines keep their file order (the tailer reads in order) but land at
        // random places among the rows, shifted by up to a few rows.
        let mut places: Vec<usize> = transcript
            .iter()
            .enumerate()
            .map(|(i, _)| positions.get(i).map_or(i * hooks.len() / transcript.len().max(1) + shift, |p| p.index(hooks.len() + 1)))
            .collect();
        places.sort_unstable();
        for (k, (line, at)) in transcript.iter().zip(places).enumerate().rev() {
            let at = at.min(inputs.len());
            inputs.insert(at, Input::Transcript(k as u64 + 1, line.clone()));
        }
        if let Some(p) = process_at {
            let at = p.index(inputs.len() + 1);
            inputs.insert(at, Input::ProcessEnded);
        }
        check_signal_invariants(&inputs)?;
    }
}

#[test]
fn every_campaign_keeps_the_invariants_unperturbed() {
    for bytes in corpus_files() {
        check_invariants(&bytes).expect("invariants");
    }
}
