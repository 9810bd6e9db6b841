//! Every campaign's hand-written expectation (`X.expect.toml` next to `X.ndjson`),
//! checked against a replay.
//!
//! A campaign of one session states `turns`, `final_phase` and `last_result` at the top;
//! one whose log holds several `session_id`s (a `/clear`) states one `[[session]]` table
//! each, in the order of their first rows, as the replay splits them.
//!
//! `origins`, where stated, names who started each turn, in the order of `turns`.
//!
//! `[[checkpoint]]` tables state the posture in the middle of a campaign, after the hook
//! row on line `line` (what the screen showed then: `screen`): its `phase`, and any other
//! posture fields by their dotted JSON path in `fields` (`"turn.scope_depth" = 1`). With
//! `source = "transcript"` the line is the transcript's (a marker placed among the rows).
//!
//! `pending = "why"` marks a campaign hooktrack is known to read wrong today (a real
//! recording whose fix is an open issue): the test then requires that it still differs,
//! so the fix has to remove the mark.

use std::path::Path;

use hooktrack::{Format, Report};
use serde::Deserialize;

use crate::support::{campaigns, replay_file, turn_origins, turn_results};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expectation {
    #[serde(flatten)]
    one: Option<Ledger>,
    #[serde(default)]
    session: Vec<SessionLedger>,
    #[serde(default)]
    checkpoint: Vec<Checkpoint>,
    /// Known to be read wrong today, and why (see the module's doc).
    pending: Option<String>,
}

/// The posture after one hook row.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Checkpoint {
    line: u64,
    /// Whose line: `hook` (the default) or `transcript`.
    #[serde(default = "hook")]
    source: String,
    phase: String,
    #[serde(default)]
    fields: toml::Table,
    /// What the agent's screen showed at that moment (documentation).
    #[allow(dead_code)]
    screen: Option<String>,
}

fn hook() -> String {
    "hook".to_owned()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ledger {
    turns: Vec<String>,
    /// Who started each turn, in the order of `turns` (`user`, `agent`, `subagent`, ...),
    /// where the campaign is about that.
    origins: Option<Vec<String>>,
    final_phase: String,
    last_result: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionLedger {
    session_id: String,
    #[serde(flatten)]
    ledger: Ledger,
}

/// What `expected` says that `report` does not, each prefixed with `at`.
fn compare(at: &str, expected: &Ledger, report: &Report, problems: &mut Vec<String>) {
    let actual_turns = turn_results(report);
    let phase = match serde_json::to_value(&report.final_posture) {
        Ok(posture) => posture["turn"]["phase"].as_str().unwrap_or("?").to_owned(),
        Err(e) => e.to_string(),
    };
    let last = report.final_posture.last_turn.result.name().to_owned();
    if actual_turns != expected.turns {
        problems.push(format!(
            "{at}turns: expected {:?}, got {:?}",
            expected.turns, actual_turns
        ));
    }
    if let Some(origins) = &expected.origins {
        let actual = turn_origins(report);
        if &actual != origins {
            problems.push(format!("{at}origins: expected {origins:?}, got {actual:?}"));
        }
    }
    if phase != expected.final_phase {
        problems.push(format!(
            "{at}final_phase: expected {}, got {phase}",
            expected.final_phase
        ));
    }
    if last != expected.last_result {
        problems.push(format!(
            "{at}last_result: expected {}, got {last}",
            expected.last_result
        ));
    }
}

fn check(path: &Path) -> Result<(), String> {
    let expect_path = path.with_extension("expect.toml");
    let text = std::fs::read_to_string(&expect_path)
        .map_err(|e| format!("{}: {e}", expect_path.display()))?;
    let expected: Expectation =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", expect_path.display()))?;
    let (report, _) = replay_file(path, Format::Json);
    let reports: Vec<&Report> = std::iter::once(&report)
        .chain(&report.other_sessions)
        .collect();
    let mut problems = Vec::new();
    match (&expected.one, expected.session.as_slice()) {
        (Some(one), []) => {
            if reports.len() > 1 {
                problems.push(format!(
                    "the log holds {} sessions: state each in a [[session]] table",
                    reports.len()
                ));
            }
            compare("", one, &report, &mut problems);
        }
        (None, sessions) if !sessions.is_empty() => {
            if sessions.len() != reports.len() {
                problems.push(format!(
                    "sessions: expected {}, the replay split the log into {}",
                    sessions.len(),
                    reports.len()
                ));
            }
            for (i, (want, got)) in sessions.iter().zip(&reports).enumerate() {
                let at = format!("session {} ({}): ", i + 1, want.session_id);
                if got.session_id.as_deref() != Some(want.session_id.as_str()) {
                    problems.push(format!("{at}the replay's session is {:?}", got.session_id));
                }
                compare(&at, &want.ledger, got, &mut problems);
            }
        }
        _ => problems.push(format!(
            "{}: state either turns/final_phase/last_result or [[session]] tables",
            expect_path.display()
        )),
    }
    if !expected.checkpoint.is_empty() {
        check_points(path, &expected.checkpoint, &mut problems);
    }
    if let Some(why) = &expected.pending {
        return if problems.is_empty() {
            Err(format!(
                "{}: meets its expectation now: remove `pending = {why:?}` from {}",
                path.display(),
                expect_path.display()
            ))
        } else {
            Ok(())
        };
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}:\n    {}",
            path.display(),
            problems.join("\n    ")
        ))
    }
}

/// The ndjson replay's posture after each hook row (or transcript line), checked against
/// the checkpoints.
fn check_points(path: &Path, points: &[Checkpoint], problems: &mut Vec<String>) {
    let (_, out) = replay_file(path, Format::Ndjson);
    let postures: Vec<(String, u64, serde_json::Value)> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            Some((
                v["source"].as_str()?.to_owned(),
                v["line"].as_u64()?,
                v["posture"].clone(),
            ))
        })
        .collect();
    for point in points {
        let at = format!("checkpoint at {} line {}: ", point.source, point.line);
        let Some((_, _, posture)) = postures
            .iter()
            .find(|(source, line, _)| *source == point.source && *line == point.line)
        else {
            problems.push(format!("{at}no {} line there", point.source));
            continue;
        };
        let mut want = vec![(
            "turn.phase".to_owned(),
            toml::Value::String(point.phase.clone()),
        )];
        want.extend(point.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (field, value) in want {
            let got = field.split('.').fold(posture, |v, key| &v[key]);
            let matches = match &value {
                toml::Value::String(s) => got.as_str() == Some(s.as_str()),
                toml::Value::Integer(i) => got.as_i64() == Some(*i),
                toml::Value::Boolean(b) => got.as_bool() == Some(*b),
                other => {
                    problems.push(format!("{at}{field}: unsupported value {other}"));
                    continue;
                }
            };
            if !matches {
                problems.push(format!("{at}{field}: expected {value}, got {got}"));
            }
        }
    }
}

#[test]
fn every_campaign_meets_its_expectation() {
    let campaigns = campaigns();
    assert!(
        campaigns.len() >= 25,
        "corpus has {} campaigns",
        campaigns.len()
    );
    let failures: Vec<String> = campaigns.iter().filter_map(|p| check(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} campaigns differ:\n  {}",
        failures.len(),
        campaigns.len(),
        failures.join("\n  ")
    );
}
