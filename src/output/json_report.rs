//! The json replay's document, `{"provider", "turns", "final", "diagnostics",
//! "provenance", "lines", "events"}`, in serde_json's pretty layout. The turns, nearly all
//! of the document, are written key by key: their keys and indentation are constants
//! written as they are (serde_json escapes every key and indents a level at a time), their
//! values are serde_json's; every other part goes through serde_json with [`Pretty`] at
//! its depth. The tests hold the bytes to `serde_json::to_writer_pretty` of the
//! [`Report`] for every corpus campaign.

use std::io::{self, Write};

use serde::Serialize;

use hooktrack_core::correlate::TurnRecord;

use super::Report;
use super::pretty::Pretty;

/// Writes `report` as `serde_json::to_writer_pretty` writes it (a field added to
/// [`Report`] or [`TurnRecord`] does not compile here until it is written).
pub(super) fn write<W: Write>(out: &mut W, report: &Report) -> io::Result<()> {
    let Report {
        provider,
        turns,
        final_posture,
        diagnostics,
        provenance,
        lines,
        events,
        session_id: _,
        other_sessions: _,
    } = report;
    out.write_all(b"{\n  \"provider\": ")?;
    nested(out, provider)?;
    out.write_all(b",\n  \"turns\": ")?;
    if turns.is_empty() {
        out.write_all(b"[]")?;
    } else {
        for (i, turn) in turns.iter().enumerate() {
            out.write_all(if i == 0 { b"[\n    {" } else { b",\n    {" })?;
            write_turn(out, turn)?;
            out.write_all(b"\n    }")?;
        }
        out.write_all(b"\n  ]")?;
    }
    out.write_all(b",\n  \"final\": ")?;
    nested(out, final_posture)?;
    out.write_all(b",\n  \"diagnostics\": ")?;
    nested(out, diagnostics)?;
    out.write_all(b",\n  \"provenance\": ")?;
    nested(out, provenance)?;
    out.write_all(b",\n  \"lines\": ")?;
    scalar(out, lines)?;
    out.write_all(b",\n  \"events\": ")?;
    scalar(out, events)?;
    out.write_all(b"\n}")
}

/// One turn's fields, each on its line at the depth of a turn in the document.
fn write_turn<W: Write>(out: &mut W, turn: &TurnRecord) -> io::Result<()> {
    let TurnRecord {
        id,
        epoch,
        turn_id,
        scope,
        origin,
        result,
        first_row,
        last_row,
        started_at,
        ended_at,
        tool_calls,
        ended_by,
    } = turn;
    out.write_all(b"\n      \"id\": ")?;
    scalar(out, id)?;
    out.write_all(b",\n      \"epoch\": ")?;
    scalar(out, epoch)?;
    out.write_all(b",\n      \"turn_id\": ")?;
    scalar(out, turn_id)?;
    out.write_all(b",\n      \"scope\": ")?;
    scalar(out, scope)?;
    out.write_all(b",\n      \"origin\": ")?;
    scalar(out, origin)?;
    out.write_all(b",\n      \"result\": ")?;
    scalar(out, result)?;
    out.write_all(b",\n      \"first_row\": ")?;
    scalar(out, first_row)?;
    out.write_all(b",\n      \"last_row\": ")?;
    scalar(out, last_row)?;
    out.write_all(b",\n      \"started_at\": ")?;
    scalar(out, started_at)?;
    out.write_all(b",\n      \"ended_at\": ")?;
    scalar(out, ended_at)?;
    out.write_all(b",\n      \"tool_calls\": ")?;
    scalar(out, tool_calls)?;
    out.write_all(b",\n      \"ended_by\": ")?;
    scalar(out, ended_by)
}

/// A value with no layout of its own (a number, a string, null): the bytes are the same
/// compact or pretty.
fn scalar<W: Write>(out: &mut W, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)
}

/// A value of the document's top level, laid out one level in.
fn nested<W: Write>(out: &mut W, value: &impl Serialize) -> io::Result<()> {
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            Pretty::at_depth(1),
        ))
        .map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use hooktrack_core::provider::ProviderChoice;

    use super::super::{Format, replay};
    use super::*;

    fn both(report: &Report) -> (String, String) {
        let mut ours = Vec::new();
        write(&mut ours, report).unwrap();
        let serde = serde_json::to_string_pretty(report).unwrap();
        (String::from_utf8(ours).unwrap(), serde)
    }

    #[test]
    fn the_document_is_serde_jsons_pretty_one_for_every_corpus_campaign() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let mut campaigns = 0;
        let mut turns = 0;
        for agent in std::fs::read_dir(&corpus).unwrap() {
            let agent = agent.unwrap().path();
            if !agent.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&agent).unwrap() {
                let file = file.unwrap().path();
                if file.extension().is_none_or(|e| e != "ndjson") {
                    continue;
                }
                let bytes = std::fs::read(&file).unwrap();
                let report = replay(
                    &bytes[..],
                    "campaign",
                    ProviderChoice::Auto,
                    Format::Json,
                    &mut io::sink(),
                )
                .unwrap();
                // Every session's report, as the document of several sessions holds them.
                for report in std::iter::once(&report).chain(&report.other_sessions) {
                    let (ours, serde) = both(report);
                    assert_eq!(ours, serde, "{}", file.display());
                    turns += report.turns.len();
                }
                campaigns += 1;
            }
        }
        assert!(
            campaigns > 50 && turns > 200,
            "{campaigns} campaigns, {turns} turns"
        );
    }

    #[test]
    fn a_report_without_turns_or_provider_is_serde_jsons_too() {
        let report = replay(
            &b"not a row\n"[..],
            "x",
            ProviderChoice::Auto,
            Format::Json,
            &mut io::sink(),
        )
        .unwrap();
        assert!(report.turns.is_empty() && report.provider.is_none());
        let (ours, serde) = both(&report);
        assert_eq!(ours, serde);
    }
}
