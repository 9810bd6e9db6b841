//! Perturbed streams (rows dropped, duplicated, swapped with a neighbour, the file cut at
//! a random byte) must keep the tracker's invariants.

use std::collections::{HashMap, HashSet};

use hooktrack::Event;
use hooktrack::Format;
use hooktrack::ProviderChoice;
use hooktrack::posture::{Phase, TurnResult};
use hooktrack::{Fed, Pipeline};
use hooktrack_core::read::LineReader;
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

/// Feeds the stream step by step and checks every invariant after every step.
fn check_invariants(bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut reader = LineReader::new(bytes);
    let mut pipeline = Pipeline::new(ProviderChoice::Auto);
    let mut closed_ids = HashSet::new();
    let mut main_results_by_epoch: HashMap<u64, TurnResult> = HashMap::new();
    let mut seen_permission_request = false;
    let mut last_result = pipeline.posture().last_turn.result;
    let mut generation = None;
    while let Some(line) = reader
        .next_line()
        .map_err(|e| TestCaseError::fail(e.to_string()))?
    {
        let fed = pipeline.feed(line);
        let Fed::Event(step) = fed else { continue };
        if matches!(step.event, Event::PermissionRequested { .. }) {
            seen_permission_request = true;
        }
        let new_generation = step
            .generation
            .is_some_and(|g| generation.is_some_and(|c| g > c));
        generation = step.generation.or(generation).max(generation);
        let new_session = new_generation || matches!(step.event, Event::SessionStarted { .. });
        let mut main_closed = false;
        for turn in &step.outcome.closed {
            prop_assert!(
                closed_ids.insert(turn.id),
                "turn #{} latched twice",
                turn.id
            );
            prop_assert!(turn.result != TurnResult::Open && turn.result != TurnResult::None);
            if turn.result == TurnResult::Success {
                prop_assert!(
                    matches!(step.event, Event::Stopped { .. })
                        || (!turn.is_main() && matches!(step.event, Event::SubagentStopped { .. })),
                    "success latched by {} at line {}",
                    step.name,
                    step.line
                );
            }
            if turn.is_main() {
                main_closed = true;
                let previous = main_results_by_epoch.insert(turn.epoch, turn.result);
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
                seen_permission_request,
                "blocked with no PermissionRequest, line {}",
                step.line
            );
        }
        // The latched result moves only when a main turn ends, or back to none when a
        // session (or a new generation) begins.
        if posture.last_turn.result != last_result {
            prop_assert!(
                main_closed || (new_session && posture.last_turn.result == TurnResult::None),
                "last result changed {:?} -> {:?} at line {} with no turn ending",
                last_result,
                posture.last_turn.result,
                step.line
            );
        }
        last_result = posture.last_turn.result;
    }
    for open in pipeline.open_turns() {
        prop_assert!(
            !closed_ids.contains(&open.id),
            "turn #{} is both closed and open",
            open.id
        );
        prop_assert_eq!(open.result, TurnResult::Open);
    }
    Ok(())
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

#[test]
fn every_campaign_keeps_the_invariants_unperturbed() {
    for bytes in corpus_files() {
        check_invariants(&bytes).expect("invariants");
    }
}
