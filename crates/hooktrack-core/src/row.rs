//! One line of `events.ndjson` → a [`Row`]. No I/O: the caller hands in the bytes.
//!
//! Three line shapes are accepted:
//! - an envelope row (contract section 2): `{"v":1,"provider":..,"generation":..,"payload":{..}}`;
//! - a capture line: `{"recv_ts":..,"cli":..,"payload":{..}}`;
//! - a bare payload line: the hook's stdin JSON itself.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use thiserror::Error;

use crate::diagnostics::Diag;
pub use crate::envelope::Via;
use crate::payload::{BoxedPayload, Payload};
use crate::read::ReadLine;
use crate::time::Timestamp;

/// The longest line hooktrack reads: longer lines are skipped.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Why a line was skipped.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineError {
    #[error("not valid UTF-8 (first bad byte at column {column})")]
    NotUtf8 { column: usize },
    #[error("not JSON: {reason}")]
    NotJson { reason: String },
    #[error("JSON but not an object")]
    NotObject,
    #[error("a field has the wrong type: {reason}")]
    BadField { reason: String },
    #[error("no event name (neither payload.hook_event_name, hook_event_name nor event)")]
    NoEventName,
    #[error("line of {len} bytes is over the {MAX_LINE_BYTES}-byte limit")]
    Oversized { len: u64 },
    #[error("last line has no newline (cut off or still being written)")]
    Truncated,
}

impl LineError {
    pub fn diag(&self) -> Diag {
        match self {
            LineError::NotUtf8 { .. } => Diag::LineNotUtf8,
            LineError::NotJson { .. } => Diag::LineNotJson,
            LineError::NotObject => Diag::LineNotObject,
            LineError::BadField { .. } => Diag::LineBadField,
            LineError::NoEventName => Diag::LineNoEventName,
            LineError::Oversized { .. } => Diag::LineOversized,
            LineError::Truncated => Diag::LineTruncated,
        }
    }
}

/// Delivery facts of a row, from its envelope. All optional: a bare payload line has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowMeta {
    pub generation: Option<u64>,
    pub emitter_seq: Option<u64>,
    pub sequence: Option<u64>,
    /// `None` for a bare payload or capture line, or an envelope with an unknown `via`.
    pub via: Option<Via>,
    /// When the row was received (envelope `received_at`, capture `recv_ts`, or the
    /// payload's own `timestamp`).
    pub at: Option<Timestamp>,
}

/// A parsed row, borrowing from its line.
#[derive(Debug)]
pub struct Row<'a> {
    pub meta: RowMeta,
    /// The envelope's `provider` (`kimi`, `claude`, ...) or a capture line's `cli`.
    pub provider_hint: Option<Cow<'a, str>>,
    /// The provider's event name (`payload.hook_event_name`, else the envelope's `event`).
    pub event_name: Cow<'a, str>,
    /// True when the envelope's `event` and the payload's `hook_event_name` disagree.
    pub name_mismatch: bool,
    /// Unpaired UTF-16 surrogate escapes in the line, where a field that is read held
    /// one: their strings were decoded with U+FFFD in their place, and the row kept. A
    /// line whose lone surrogates are all in values nothing reads counts 0.
    pub lone_surrogates: u32,
    /// Boxed: the row moves through the parse, the pipeline and (with a read-ahead thread)
    /// a queue, and copying 680 bytes at each step was 15% of a replay's instructions.
    pub payload: Box<Payload<'a>>,
    /// The tmux pane the agent ran in (`$TMUX_PANE` as the emitter saw it, e.g. `%3`):
    /// the envelope's optional `tmux_pane`. Rows without it (older emitters, capture lines,
    /// bare payloads) are unchanged.
    pub tmux_pane: Option<String>,
    /// The agent process that ran the hook (the envelope's optional `agent_pid`, written
    /// for an agent started without hooktrack's environment): what a live reader watches
    /// to see the agent gone. Envelopes only, like `tmux_pane`.
    pub agent_pid: Option<u32>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    cli: Option<Cow<'a, str>>,
    generation: Option<u64>,
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    via: Option<Cow<'a, str>>,
    sequence: Option<u64>,
    emitter_seq: Option<u64>,
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    received_at: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    recv_ts: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "crate::payload::opt_text")]
    event: Option<Cow<'a, str>>,
    /// A bare payload line's own event name (Cline names it `hookName`, Letta Code
    /// `event_type`).
    #[serde(
        borrow,
        default,
        deserialize_with = "crate::payload::opt_text",
        alias = "hookName",
        alias = "event_type"
    )]
    hook_event_name: Option<Cow<'a, str>>,
    /// Read into its box (see [`BoxedPayload`]).
    #[serde(borrow)]
    payload: Option<BoxedPayload<'a>>,
    /// Lenient: a pane of the wrong type is dropped, never the row.
    #[serde(default)]
    tmux_pane: Option<Lenient>,
    /// Lenient: a pid that is not a positive u32 is dropped, never the row.
    #[serde(default)]
    agent_pid: Option<LenientPid>,
}

/// A string, or anything else (then ignored).
#[derive(Deserialize)]
#[serde(untagged)]
enum Lenient {
    Text(String),
    Other(IgnoredAny),
}

/// A process id, or anything else (then ignored).
#[derive(Deserialize)]
#[serde(untagged)]
enum LenientPid {
    Pid(u32),
    Other(IgnoredAny),
}

/// A line as the reader handed it out → its row, or why it is skipped (a line over the
/// limit or cut off is never parsed). The one place this mapping is written: the pipeline,
/// the session router, the replay loop and the live session all go through it.
pub fn parse_read_line<'a>(line: ReadLine<'a>) -> (u64, Result<Row<'a>, LineError>) {
    match line {
        ReadLine::Line { number, bytes } => (number, parse_line(bytes)),
        // `Long` comes from a skimming splitter only (transcripts), never from a store's:
        // a line not held is not parsed.
        ReadLine::Oversized { number, len } | ReadLine::Long { number, len, .. } => {
            (number, Err(LineError::Oversized { len }))
        }
        ReadLine::Truncated { number, .. } => (number, Err(LineError::Truncated)),
    }
}

/// Parses one line (without its newline). Never panics.
pub fn parse_line(bytes: &[u8]) -> Result<Row<'_>, LineError> {
    if bytes.len() > MAX_LINE_BYTES {
        return Err(LineError::Oversized {
            len: bytes.len() as u64,
        });
    }
    // The whole line is checked, as the contract says (a line that is not UTF-8 is
    // skipped), before a parse that only checks the strings it reads. simdutf8's check
    // is the same one, with vector instructions: 3.7% of a one-thread replay with std's.
    let text = simdutf8::compat::from_utf8(bytes).map_err(|e| LineError::NotUtf8 {
        column: e.valid_up_to() + 1,
    })?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    let first = text.trim_start().as_bytes().first().copied();
    if first != Some(b'{') {
        return Err(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => LineError::NotObject,
            Err(e) => LineError::NotJson {
                reason: e.to_string(),
            },
        });
    }
    let (line, lone_line): (Line<'_>, u32) = forgiving(text)?;
    let bare = line.payload.is_none() && line.hook_event_name.is_some();
    let (payload, lone_surrogates) = match line.payload {
        Some(BoxedPayload(p)) => (p, lone_line),
        // A bare payload line: the whole line is the payload, and its fields are read
        // again (one the envelope's shape skipped may hold a lone surrogate).
        None if bare => {
            let (BoxedPayload(p), lone) = forgiving(text)?;
            (p, lone)
        }
        None => (Box::default(), lone_line),
    };
    let (event_name, name_mismatch) = match (&payload.hook_event_name, line.event) {
        (Some(p), Some(e)) => {
            let mismatch = *p != e;
            (p.clone(), mismatch)
        }
        (Some(p), None) => (p.clone(), false),
        (None, Some(e)) => (e, false),
        // A bare Cline payload: no envelope, its own name in `hookName` (Letta Code's in
        // `event_type`).
        (None, None) => match payload.hook_name.as_ref().or(payload.event_type.as_ref()) {
            Some(own) => (own.clone(), false),
            None => return Err(LineError::NoEventName),
        },
    };
    if event_name.is_empty() {
        return Err(LineError::NoEventName);
    }
    let stamp = line
        .received_at
        .as_deref()
        .or(line.recv_ts.as_deref())
        .or(payload.timestamp.as_deref());
    let via = line.via.as_deref().and_then(Via::from_name);
    Ok(Row {
        meta: RowMeta {
            generation: line.generation,
            emitter_seq: line.emitter_seq,
            sequence: line.sequence,
            via,
            at: stamp.and_then(Timestamp::parse_rfc3339),
        },
        provider_hint: line.provider.or(line.cli),
        event_name,
        name_mismatch,
        lone_surrogates,
        payload,
        // Only an envelope carries it: in a bare payload line the field would be the
        // agent's, not the emitter's.
        tmux_pane: match line.tmux_pane {
            Some(Lenient::Text(pane)) if !bare => Some(pane),
            _ => None,
        },
        agent_pid: match line.agent_pid {
            Some(LenientPid::Pid(pid)) if !bare && pid > 0 => Some(pid),
            _ => None,
        },
    })
}

/// Deserializes the line strictly and, only where that fails and the line holds unpaired
/// surrogate escapes, again with their strings read leniently (U+FFFD in their place).
/// The count is taken only on that path: a strict parse that succeeded read no lone
/// surrogate (serde_json refuses one in any string it decodes), and counting them on every
/// line cost a walk over every escape of every line.
fn forgiving<'a, T: Deserialize<'a>>(text: &'a str) -> Result<(T, u32), LineError> {
    let strict = match serde_json::from_str(text) {
        Ok(value) => return Ok((value, 0)),
        Err(e) => e,
    };
    let lone = crate::payload::lone_surrogates(text.as_bytes());
    if lone == 0 {
        return Err(classify(strict));
    }
    // Checked as JSON first (skipping values checks syntax, not surrogates): the lenient
    // string reading must only forgive the surrogates.
    serde_json::from_str::<IgnoredAny>(text).map_err(classify)?;
    let value =
        crate::payload::with_lone_surrogates(|| serde_json::from_str(text)).map_err(classify)?;
    Ok((value, lone))
}

fn classify(e: serde_json::Error) -> LineError {
    match e.classify() {
        serde_json::error::Category::Data => LineError::BadField {
            reason: e.to_string(),
        },
        _ => LineError::NotJson {
            reason: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_is_refused_with_the_column_of_the_first_bad_byte() {
        // Short and long lines (the vector check works in blocks of 64 bytes): a bad byte
        // in a short value, a lone continuation byte deep in a value nothing reads, and
        // a two-byte character cut off at the end of the line.
        let mut deep = br#"{"hook_event_name":"Stop","ignored":""#.to_vec();
        deep.extend_from_slice(&[b'x'; 300]);
        let bad_at = deep.len();
        deep.extend_from_slice(b"\x80\"}");
        let mut cut = br#"{"hook_event_name":"Stop","x":""#.to_vec();
        cut.extend_from_slice(&[b'x'; 300]);
        let cut_at = cut.len();
        cut.push(0xc3);
        for (line, column) in [
            (b"{\"a\":\"\xff\"}".to_vec(), 7),
            (deep, bad_at + 1),
            (cut, cut_at + 1),
        ] {
            match parse_line(&line) {
                Err(LineError::NotUtf8 { column: got }) => assert_eq!(got, column),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn envelope_row() {
        let row = parse_line(br#"{"v":1,"provider":"kimi","generation":2,"via":"http","sequence":41,"emitter_seq":57,"received_at":"2026-10-20T09:14:03.512Z","event":"PreToolUse","payload":{"hook_event_name":"PreToolUse","tool_call_id":"call_1","extra":{"x":[1,2]}}}"#).unwrap();
        assert_eq!(row.event_name, "PreToolUse");
        assert_eq!(row.meta.generation, Some(2));
        assert_eq!(row.meta.emitter_seq, Some(57));
        assert_eq!(row.meta.via, Some(Via::Http));
        assert_eq!(row.meta.at.unwrap().to_string(), "2026-10-20T09:14:03.512Z");
        assert_eq!(row.payload.tool_call_id.as_deref(), Some("call_1"));
        assert!(!row.name_mismatch);
    }

    #[test]
    fn an_envelope_may_name_its_tmux_pane() {
        let row = parse_line(br#"{"v":1,"provider":"claude","generation":1,"via":"http","sequence":1,"emitter_seq":1,"received_at":"2026-10-20T09:14:03.512Z","event":"Stop","payload":{"hook_event_name":"Stop"},"tmux_pane":"%3"}"#).unwrap();
        assert_eq!(row.tmux_pane.as_deref(), Some("%3"));
        let row = parse_line(br#"{"event":"Stop","payload":{"hook_event_name":"Stop"}}"#).unwrap();
        assert_eq!(row.tmux_pane, None);
        let row = parse_line(br#"{"event":"Stop","payload":{},"tmux_pane":3}"#).unwrap();
        assert_eq!(row.tmux_pane, None);
        let row = parse_line(br#"{"event":"Stop","payload":{},"agent_pid":4242}"#).unwrap();
        assert_eq!(row.agent_pid, Some(4242));
        for odd in [r#""4242""#, "-1", "0", "1.5"] {
            let line = format!(r#"{{"event":"Stop","payload":{{}},"agent_pid":{odd}}}"#);
            assert_eq!(
                parse_line(line.as_bytes()).unwrap().agent_pid,
                None,
                "{odd}"
            );
        }
    }

    #[test]
    fn bare_payload_line() {
        let row = parse_line(
            br#"{"hook_event_name": "Stop", "session_id": "u", "stop_hook_active": false}"#,
        )
        .unwrap();
        assert_eq!(row.event_name, "Stop");
        assert_eq!(row.payload.stop_hook_active, Some(false));
        assert_eq!(row.meta.at, None);
    }

    #[test]
    fn capture_line() {
        let row = parse_line(br#"{"recv_ts": "2026-11-29T22:33:36.728Z", "cli": "kimi-cli", "event": "SessionStart", "hook_env": {}, "payload": {"hook_event_name": "SessionStart", "source": "startup"}}"#).unwrap();
        assert_eq!(row.provider_hint.as_deref(), Some("kimi-cli"));
        assert_eq!(row.payload.source.as_deref(), Some("startup"));
        assert!(row.meta.at.is_some());
    }

    #[test]
    fn bad_lines_name_their_cause() {
        assert!(matches!(
            parse_line(b"hello"),
            Err(LineError::NotJson { .. })
        ));
        assert!(matches!(parse_line(b"[1,2]"), Err(LineError::NotObject)));
        assert!(matches!(
            parse_line(b"{\"a\":\xff}"),
            Err(LineError::NotUtf8 { column: 6 })
        ));
        assert!(matches!(
            parse_line(b"{\"a\":1}"),
            Err(LineError::NoEventName)
        ));
        assert!(matches!(
            parse_line(b"{\"event\":\"Stop\",\"generation\":\"x\"}"),
            Err(LineError::BadField { .. })
        ));
        assert!(matches!(
            parse_line(b"{\"event\":\"Stop\""),
            Err(LineError::NotJson { .. })
        ));
        assert!(matches!(
            parse_line(b"{\"event\":\"\"}"),
            Err(LineError::NoEventName)
        ));
    }

    #[test]
    fn lone_surrogates_are_replaced_and_counted() {
        let row = parse_line(
            br#"{"hook_event_name":"UserPromptSubmit","prompt":"a\ud800b","session_id":"\udc00","tool_name":"\ud83d\ude00"}"#,
        )
        .unwrap();
        assert_eq!(row.payload.prompt.unwrap().0, "a\u{fffd}b");
        assert_eq!(row.payload.session_id.as_deref(), Some("\u{fffd}"));
        assert_eq!(row.payload.tool_name.as_deref(), Some("\u{1f600}"));
        assert_eq!(row.lone_surrogates, 2);
        let row = parse_line(br#"{"hook_event_name":"Stop","x":"\\ud800 \u00e9"}"#).unwrap();
        assert_eq!(
            row.lone_surrogates, 0,
            "an escaped backslash is not an escape"
        );
        // Only strings that are read count: a lone surrogate in a value nothing reads is
        // not replaced by anything, and the strict parse took the line.
        let row = parse_line(
            br#"{"event":"Stop","payload":{"hook_event_name":"Stop","extra":["\ud800"]}}"#,
        )
        .unwrap();
        assert_eq!(row.lone_surrogates, 0);
        // A bare payload line's fields are read from the whole line: counted there.
        let row = parse_line(br#"{"hook_event_name":"Stop","session_id":"s\udc00"}"#).unwrap();
        assert_eq!(row.lone_surrogates, 1);
        assert_eq!(row.payload.session_id.as_deref(), Some("s\u{fffd}"));
        // Forgiving the surrogate forgives nothing else: a raw control character in a
        // string still makes the line not JSON.
        assert!(matches!(
            parse_line(b"{\"hook_event_name\":\"Stop\\ud800\0\"}"),
            Err(LineError::NotJson { .. })
        ));
        for (text, lone) in [
            (&br#""\ud800\ud800""#[..], 2),
            (br#""\ud800x\udc00""#, 2),
            (br#""\ud800\n""#, 1),
            (br#""\ud800""#, 1),
            (br#""\udbff\udfff""#, 0),
        ] {
            assert_eq!(crate::payload::lone_surrogates(text), lone, "{text:?}");
        }
    }

    #[test]
    fn mismatched_names_prefer_the_payload() {
        let row =
            parse_line(br#"{"event":"Stop","payload":{"hook_event_name":"StopFailure"}}"#).unwrap();
        assert_eq!(row.event_name, "StopFailure");
        assert!(row.name_mismatch);
    }
}
