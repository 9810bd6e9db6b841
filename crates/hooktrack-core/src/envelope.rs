//! The envelope row of `events.ndjson` (contract section 2): the one type both writers
//! (collector, emitter fallback) render and the store's own readers parse back. The
//! pipeline's reader ([`crate::row`]) reads the same keys into its typed view.
//!
//! ```text
//! {"v":1,"provider":"kimi","generation":2,"via":"http","sequence":41,"emitter_seq":57,
//!  "received_at":"2026-10-20T09:14:03.512Z","event":"PreToolUse","payload":{ ...stdin... }}
//! ```

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::row::MAX_LINE_BYTES;
use crate::time::Timestamp;

/// Longest request body the collector accepts by default, and the longest delivery an
/// emitter sends: a row adds at most a few hundred bytes, so every row stays under the
/// reader's [`MAX_LINE_BYTES`].
pub const MAX_BODY_BYTES: usize = MAX_LINE_BYTES - 1024;
/// Longest hook payload (stdin) that is embedded in a row.
pub const MAX_PAYLOAD_BYTES: usize = MAX_BODY_BYTES - 1024;
/// Longest provider or event name written into a row.
pub const MAX_NAME_BYTES: usize = 128;

/// How a row reached the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Via {
    /// Accepted by the collector.
    Http,
    /// Appended by the emitter itself when the collector was unreachable.
    CommandFallback,
    /// Appended by the launcher that runs the agent: the agent process's end
    /// ([`process_ended_row`]), so a replay of the store sees what the live run saw.
    Launcher,
}

impl Via {
    pub const fn name(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::CommandFallback => "command_fallback",
            Via::Launcher => "launcher",
        }
    }

    /// `None` for a name no writer uses.
    pub fn from_name(name: &str) -> Option<Via> {
        match name {
            "http" => Some(Via::Http),
            "command_fallback" => Some(Via::CommandFallback),
            "launcher" => Some(Via::Launcher),
            _ => None,
        }
    }
}

/// One envelope row.
#[derive(Debug)]
pub struct Envelope<'a> {
    pub provider: &'a str,
    pub generation: u64,
    pub via: Via,
    /// Assigned by the collector; `None` on fallback rows.
    pub sequence: Option<u64>,
    pub emitter_seq: Option<u64>,
    pub received_at: Timestamp,
    pub event: Option<&'a str>,
    /// The payload as it came; `None` writes `null`.
    pub payload: Option<&'a RawValue>,
    /// Why there is no payload (stdin was not JSON, too large, ...).
    pub payload_error: Option<&'a str>,
    /// The agent's tmux pane (`$TMUX_PANE`), written after the payload and only when known.
    pub tmux_pane: Option<&'a str>,
    /// The agent's process id, written last and only on rows of a store no launcher
    /// watches (the per-user default store): how a reader tells the agent is gone.
    pub agent_pid: Option<u32>,
    /// The process that ran the emitter, as the emitter read it (rows of older emitters
    /// and of the launcher have none).
    pub emitter_parent: Option<&'a EmitterParent>,
}

/// The emitter's parent process, as the emitter read it from `/proc` when it ran: what
/// lets a supervisor tell a hook the agent ran (its parent is the agent, or the shell
/// the CLI runs hooks in) from the hook command run by one of the agent's tools. Written
/// `"emitter_parent":{"pid":N,"comm":"...","exe":"..."}`. It is the emitter's word,
/// not the kernel's: see docs/producer.md, "Threat model", for what it proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmitterParent {
    pub pid: u32,
    /// `/proc/<pid>/comm`: the name the process goes by (15 bytes at most; a process can
    /// set its own).
    pub comm: Option<String>,
    /// The file name of `/proc/<pid>/exe`: the program it runs (a script's is its
    /// interpreter's).
    pub exe: Option<String>,
}

impl EmitterParent {
    /// `{"pid":N,"comm":"...","exe":"..."}`, the names cut to [`MAX_NAME_BYTES`].
    pub(crate) fn render(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"pid\":");
        out.extend_from_slice(self.pid.to_string().as_bytes());
        for (key, value) in [(&b",\"comm\":"[..], &self.comm), (b",\"exe\":", &self.exe)] {
            if let Some(v) = value {
                out.extend_from_slice(key);
                json_str(out, clip_name(v));
            }
        }
        out.push(b'}');
    }

    /// Reads one back from any JSON, leniently: a pid that is no process id drops it,
    /// a name that is no string is left out, names are cut to [`MAX_NAME_BYTES`].
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let pid = value
            .get("pid")?
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)?;
        let name = |key: &str| {
            value
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(|s| clip_name(s).to_owned())
        };
        Some(Self {
            pid,
            comm: name("comm"),
            exe: name("exe"),
        })
    }
}

/// Why a line is not an envelope row the store wrote.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    #[error("not an envelope row")]
    Json(#[from] serde_json::Error),
    #[error("unknown via `{0}`")]
    Via(String),
    #[error("received_at `{0}` is not an RFC 3339 time")]
    Time(String),
}

#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    provider: Cow<'a, str>,
    generation: u64,
    #[serde(borrow)]
    via: Cow<'a, str>,
    sequence: Option<u64>,
    emitter_seq: Option<u64>,
    #[serde(borrow)]
    received_at: Cow<'a, str>,
    #[serde(borrow)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow, default)]
    payload_error: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tmux_pane: Option<Cow<'a, str>>,
    #[serde(default)]
    agent_pid: Option<u32>,
    /// Any JSON: kept only when it reads as one ([`EmitterParent::from_json`]).
    #[serde(default)]
    emitter_parent: Option<serde_json::Value>,
}

/// An envelope parsed back from a line, owning the strings that had escapes.
#[derive(Debug)]
pub struct ParsedEnvelope<'a> {
    wire: Wire<'a>,
    via: Via,
    received_at: Timestamp,
    emitter_parent: Option<EmitterParent>,
}

impl<'a> ParsedEnvelope<'a> {
    pub fn envelope(&self) -> Envelope<'_> {
        Envelope {
            provider: &self.wire.provider,
            generation: self.wire.generation,
            via: self.via,
            sequence: self.wire.sequence,
            emitter_seq: self.wire.emitter_seq,
            received_at: self.received_at,
            event: self.wire.event.as_deref(),
            payload: self.wire.payload,
            payload_error: self.wire.payload_error.as_deref(),
            tmux_pane: self.wire.tmux_pane.as_deref(),
            agent_pid: self.wire.agent_pid,
            emitter_parent: self.emitter_parent.as_ref(),
        }
    }
}

impl<'a> Envelope<'a> {
    /// Renders the row, newline included, keys in the contract's order. The payload is
    /// spliced in byte for byte (made one line, see [`one_line`]).
    pub fn render(&self) -> Vec<u8> {
        let payload = self.payload.map(|p| one_line(p.get()));
        let mut out = Vec::with_capacity(payload.as_ref().map_or(0, |p| p.len()) + 256);
        out.extend_from_slice(b"{\"v\":1,\"provider\":");
        json_str(&mut out, self.provider);
        out.extend_from_slice(b",\"generation\":");
        out.extend_from_slice(self.generation.to_string().as_bytes());
        out.extend_from_slice(b",\"via\":\"");
        out.extend_from_slice(self.via.name().as_bytes());
        out.extend_from_slice(b"\",\"sequence\":");
        opt_num(&mut out, self.sequence);
        out.extend_from_slice(b",\"emitter_seq\":");
        opt_num(&mut out, self.emitter_seq);
        out.extend_from_slice(b",\"received_at\":\"");
        out.extend_from_slice(self.received_at.to_string().as_bytes());
        out.extend_from_slice(b"\",\"event\":");
        match self.event {
            Some(e) => json_str(&mut out, e),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"payload\":");
        match &payload {
            Some(p) => out.extend_from_slice(p.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(err) = self.payload_error {
            out.extend_from_slice(b",\"payload_error\":");
            json_str(&mut out, err);
        }
        if let Some(pane) = self.tmux_pane {
            out.extend_from_slice(b",\"tmux_pane\":");
            json_str(&mut out, pane);
        }
        if let Some(pid) = self.agent_pid {
            out.extend_from_slice(b",\"agent_pid\":");
            out.extend_from_slice(pid.to_string().as_bytes());
        }
        if let Some(parent) = self.emitter_parent {
            out.extend_from_slice(b",\"emitter_parent\":");
            parent.render(&mut out);
        }
        out.extend_from_slice(b"}\n");
        out
    }

    /// Parses a line (without its newline) that a writer rendered.
    pub fn parse(line: &'a str) -> Result<ParsedEnvelope<'a>, EnvelopeError> {
        let wire: Wire<'a> = serde_json::from_str(line)?;
        let via =
            Via::from_name(&wire.via).ok_or_else(|| EnvelopeError::Via(wire.via.to_string()))?;
        let received_at = Timestamp::parse_rfc3339(&wire.received_at)
            .ok_or_else(|| EnvelopeError::Time(wire.received_at.to_string()))?;
        let emitter_parent = wire
            .emitter_parent
            .as_ref()
            .and_then(EmitterParent::from_json);
        Ok(ParsedEnvelope {
            wire,
            via,
            received_at,
            emitter_parent,
        })
    }
}

/// The event name of the launcher's row for the agent process's end.
pub const PROCESS_ENDED: &str = "process_ended";

/// The event name of a plugin's loss row (the queue of `agents/plugin_queue.js`): its
/// queue was over its bound, or the agent exited with events still queued, and it dropped
/// `lost` events (`lost_bytes` of payload) of the session `session_id` without handing
/// them over. Readers count it (`plugin_events_lost`); what the events said is not known.
pub const EVENTS_LOST: &str = "hooktrack.events_lost";

/// How the agent process ended, as its launcher learned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessEnd {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Killed(i32),
    /// It ended; how is not known (a process the launcher did not start).
    Unknown,
}

/// The row a launcher appends when the agent process `pid` ended at `at`: an envelope with
/// `via: "launcher"`, event `process_ended` and the payload `{"pid", "exit_code" |
/// "signal"}`. Readers turn it into the process's end (contract section 9), the one way
/// live and replay learn it.
pub fn process_ended_row(
    provider: &str,
    generation: u64,
    at: Timestamp,
    pid: u32,
    end: ProcessEnd,
) -> Vec<u8> {
    process_ended_row_of(provider, generation, at, pid, end, None)
}

/// [`process_ended_row`] naming the agent session whose process ended (`session_id` in
/// the payload), for a store that holds several: a reader routes the end to that session
/// alone. What a reader that saw a session's `agent_pid` end appends
/// (`hooktrack_core::tracker::SeenEnd`).
pub fn process_ended_row_of(
    provider: &str,
    generation: u64,
    at: Timestamp,
    pid: u32,
    end: ProcessEnd,
    session_id: Option<&str>,
) -> Vec<u8> {
    let how = match end {
        ProcessEnd::Exited(code) => format!(",\"exit_code\":{code}"),
        ProcessEnd::Killed(signal) => format!(",\"signal\":{signal}"),
        ProcessEnd::Unknown => String::new(),
    };
    let payload = format!("{{\"pid\":{pid}{how}{}}}", session_field(session_id));
    process_ended_envelope(provider, generation, at, payload, None, None)
}

/// `,"session_id":…` for a payload naming its session (the id as a JSON string, so the
/// payload stays a valid JSON text), or nothing.
fn session_field(session_id: Option<&str>) -> String {
    session_id
        .and_then(|id| serde_json::to_string(id).ok())
        .map_or_else(String::new, |id| format!(",\"session_id\":{id}"))
}

/// Who appends a `process_ended` row the agent's launcher did not write.
pub const SEEN_BY_WATCH: &str = "watch";

/// The same row appended by a `watch` that saw the agent process `pid` of the session
/// `session_id` end (from the `agent_pid` its rows name; no launcher runs that agent):
/// the payload names the session, so the reader's session router hands the end to that
/// session of the store, and says `"seen_by":"watch"`. How it ended is not known. Like
/// every row of such a store (the per-user default store) it names the agent's pid and,
/// when known, its tmux pane.
pub fn process_ended_row_seen_by_watch(
    provider: &str,
    generation: u64,
    at: Timestamp,
    pid: u32,
    session_id: Option<&str>,
    tmux_pane: Option<&str>,
) -> Vec<u8> {
    let payload = format!(
        "{{\"pid\":{pid}{},\"seen_by\":\"{SEEN_BY_WATCH}\"}}",
        session_field(session_id)
    );
    process_ended_envelope(provider, generation, at, payload, tmux_pane, Some(pid))
}

/// The `process_ended` row around `payload` (a JSON text).
fn process_ended_envelope(
    provider: &str,
    generation: u64,
    at: Timestamp,
    payload: String,
    tmux_pane: Option<&str>,
    agent_pid: Option<u32>,
) -> Vec<u8> {
    let raw = serde_json::value::RawValue::from_string(payload).ok();
    Envelope {
        provider,
        generation,
        via: Via::Launcher,
        sequence: None,
        emitter_seq: None,
        received_at: at,
        event: Some(PROCESS_ENDED),
        payload: raw.as_deref(),
        payload_error: None,
        tmux_pane,
        agent_pid,
        emitter_parent: None,
    }
    .render()
}

/// A JSON text on one line: raw CR and LF can only be whitespace between tokens (inside
/// strings JSON requires them escaped), so they become spaces and nothing else changes.
pub fn one_line(json: &str) -> Cow<'_, str> {
    if json.bytes().any(|b| b == b'\n' || b == b'\r') {
        Cow::Owned(json.replace(['\n', '\r'], " "))
    } else {
        Cow::Borrowed(json)
    }
}

/// Cuts a name to [`MAX_NAME_BYTES`] on a character boundary.
pub fn clip_name(name: &str) -> &str {
    if name.len() <= MAX_NAME_BYTES {
        return name;
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn opt_num(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_row_is_read_back_as_the_agent_process_end() {
        use crate::event::Event;
        use crate::pipeline::{Fed, Pipeline};
        use crate::provider::ProviderChoice;
        use crate::source::Source;
        let at = Timestamp::from_millis(1_790_000_000_000);
        let row = process_ended_row("claude", 3, at, 4242, ProcessEnd::Killed(9));
        let text = std::str::from_utf8(&row).expect("utf-8");
        assert!(
            text.ends_with("\"payload\":{\"pid\":4242,\"signal\":9}}\n"),
            "{text}"
        );
        let parsed = Envelope::parse(text.trim_end()).expect("an envelope");
        assert_eq!(parsed.envelope().via, Via::Launcher);
        let mut pipeline = Pipeline::new(ProviderChoice::Auto);
        let Fed::Event(step) = pipeline.feed_line(1, text.trim_end().as_bytes()) else {
            panic!("not an event");
        };
        assert_eq!(step.source, Source::Process);
        assert_eq!(step.at, Some(at));
        assert_eq!(step.generation, Some(3));
        assert!(matches!(
            step.event,
            Event::ProcessEnded { pid: Some(4242) }
        ));
        // Not a hook: it tells nothing about whether the hooks fire.
        assert_eq!(pipeline.hook_events(), 0);
    }

    #[test]
    fn a_watchs_row_names_its_session_and_goes_to_it() {
        use crate::provider::ProviderChoice;
        use crate::read::ReadLine;
        use crate::sessions::Sessions;
        let at = Timestamp::from_millis(1_790_000_000_000);
        let quoted = process_ended_row_seen_by_watch("claude", 0, at, 77, Some("b\"1"), None);
        let value: serde_json::Value = serde_json::from_slice(&quoted).expect("JSON");
        assert_eq!(value["payload"]["session_id"], "b\"1");
        let row = process_ended_row_seen_by_watch("claude", 0, at, 77, Some("b1"), Some("%3"));
        let text = std::str::from_utf8(&row).expect("utf-8");
        assert!(
            text.ends_with(
                "\"payload\":{\"pid\":77,\"session_id\":\"b1\",\"seen_by\":\"watch\"},\"tmux_pane\":\"%3\",\"agent_pid\":77}\n"
            ),
            "{text}"
        );
        let mut sessions = Sessions::new(ProviderChoice::Auto);
        let hook = |id: &str| {
            format!(r#"{{"hook_event_name":"UserPromptSubmit","session_id":"{id}","prompt":"x"}}"#)
        };
        for (number, line) in [hook("a"), hook("b1"), hook("a")].iter().enumerate() {
            let _ = sessions.feed(ReadLine::Line {
                number: number as u64 + 1,
                bytes: line.as_bytes(),
            });
        }
        let _ = sessions.feed(ReadLine::Line {
            number: 4,
            bytes: text.trim_end().as_bytes(),
        });
        // The last session to write was `a`; the row went to the session it names.
        assert_eq!(
            sessions.get(sessions.routed()).session_id.as_deref(),
            Some("b1")
        );
    }

    /// A plugin's loss row is counted by the events it names and changes nothing else; the
    /// give-up row of its hook process (no payload) counts one, its number not known.
    #[test]
    fn a_plugins_loss_row_is_counted_by_its_events_and_changes_nothing() {
        use crate::diagnostics::Diag;
        use crate::pipeline::{Fed, Pipeline};
        use crate::provider::ProviderChoice;
        let mut pipeline = Pipeline::new(ProviderChoice::Auto);
        let busy = r#"{"hook_event_name":"session.status","session_id":"s","properties":{"sessionID":"s","status":{"type":"busy"}}}"#;
        assert!(matches!(
            pipeline.feed_line(1, busy.as_bytes()),
            Fed::Event(_)
        ));
        let before = serde_json::to_value(pipeline.posture()).unwrap();
        let loss = format!(
            r#"{{"hook_event_name":"{EVENTS_LOST}","session_id":"s","lost":37,"lost_bytes":9000}}"#
        );
        let Fed::Skipped(skip) = pipeline.feed_line(2, loss.as_bytes()) else {
            panic!("not a skip");
        };
        assert_eq!(skip.diag, Diag::PluginEventsLost);
        assert_eq!(skip.detail, "the plugin dropped 37 events (9000 bytes)");
        let give_up = format!(
            r#"{{"v":1,"provider":"opencode","generation":0,"via":"command_fallback","sequence":null,"emitter_seq":null,"received_at":"2026-10-20T09:14:03.512Z","event":"{EVENTS_LOST}","payload":null,"payload_error":"the emitter gave up"}}"#
        );
        let Fed::Skipped(skip) = pipeline.feed_line(3, give_up.as_bytes()) else {
            panic!("not a skip");
        };
        assert!(skip.detail.contains("not known"), "{}", skip.detail);
        assert_eq!(pipeline.diagnostics().count(Diag::PluginEventsLost), 38);
        assert_eq!(serde_json::to_value(pipeline.posture()).unwrap(), before);
    }

    fn sample(payload: &RawValue) -> Envelope<'_> {
        Envelope {
            provider: "kimi",
            generation: 2,
            via: Via::Http,
            sequence: Some(41),
            emitter_seq: Some(57),
            received_at: Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z").unwrap(),
            event: Some("Stop"),
            payload: Some(payload),
            payload_error: None,
            tmux_pane: None,
            agent_pid: None,
            emitter_parent: None,
        }
    }

    #[test]
    fn the_emitters_parent_comes_last_and_reads_back_leniently() {
        let payload: Box<RawValue> = serde_json::from_str("{}").unwrap();
        let parent = EmitterParent {
            pid: 42,
            comm: Some("sh".into()),
            exe: Some("da\"sh".into()),
        };
        let text = String::from_utf8(
            Envelope {
                emitter_parent: Some(&parent),
                ..sample(&payload)
            }
            .render(),
        )
        .unwrap();
        let value = r#"{"pid":42,"comm":"sh","exe":"da\"sh"}"#;
        assert!(
            text.ends_with(&format!(",\"payload\":{{}},\"emitter_parent\":{value}}}\n")),
            "{text}"
        );
        let parsed = Envelope::parse(text.trim_end()).unwrap();
        assert_eq!(parsed.envelope().emitter_parent, Some(&parent));
        // A value that is no parent is dropped, never the row; old rows have none.
        for odd in [r#""x""#, r#"{"pid":0}"#, r#"{"pid":-1,"comm":"sh"}"#, "[1]"] {
            let line = text.replace(value, odd);
            let parsed = Envelope::parse(line.trim_end()).unwrap();
            assert_eq!(parsed.envelope().emitter_parent, None, "{line}");
        }
        let named_only = EmitterParent::from_json(&serde_json::json!({"pid": 7, "comm": 3}));
        assert_eq!(
            named_only,
            Some(EmitterParent {
                pid: 7,
                comm: None,
                exe: None
            })
        );
    }

    #[test]
    fn rows_follow_the_contract_key_order_and_keep_the_payload_verbatim() {
        let payload: &RawValue =
            serde_json::from_str(r#"{"hook_event_name": "Stop", "x": [1, 2], "é": "\u00e9"}"#)
                .unwrap();
        assert_eq!(
            String::from_utf8(sample(payload).render()).unwrap(),
            "{\"v\":1,\"provider\":\"kimi\",\"generation\":2,\"via\":\"http\",\"sequence\":41,\"emitter_seq\":57,\"received_at\":\"2026-10-20T09:14:03.512Z\",\"event\":\"Stop\",\"payload\":{\"hook_event_name\": \"Stop\", \"x\": [1, 2], \"é\": \"\\u00e9\"}}\n"
        );
    }

    #[test]
    fn a_rendered_row_parses_back_to_the_same_envelope_and_row() {
        let payload: &RawValue =
            serde_json::from_str(r#"{"hook_event_name":"Stop","stop_hook_active":false}"#).unwrap();
        let mut original = sample(payload);
        original.via = Via::CommandFallback;
        original.sequence = None;
        original.payload_error = Some("a \"quoted\" cause");
        let line = original.render();
        let text = std::str::from_utf8(&line).unwrap().trim_end();
        let parsed = Envelope::parse(text).unwrap();
        let back = parsed.envelope();
        assert_eq!(back.render(), line);
        assert_eq!(back.via, Via::CommandFallback);
        assert_eq!(back.payload_error, Some("a \"quoted\" cause"));
        let row = crate::row::parse_line(text.as_bytes()).unwrap();
        assert_eq!(row.meta.via, Some(Via::CommandFallback));
        assert_eq!(row.meta.generation, Some(2));
        assert_eq!(row.meta.emitter_seq, Some(57));
        assert_eq!(row.meta.sequence, None);
        assert_eq!(row.event_name, "Stop");
    }

    #[test]
    fn a_known_tmux_pane_is_the_last_key() {
        let mut envelope = sample(serde_json::from_str("null").unwrap());
        envelope.payload = None;
        envelope.tmux_pane = Some("%3");
        let text = String::from_utf8(envelope.render()).unwrap();
        assert!(
            text.ends_with(",\"payload\":null,\"tmux_pane\":\"%3\"}\n"),
            "{text}"
        );
        let parsed = crate::row::parse_line(text.trim_end().as_bytes()).unwrap();
        assert_eq!(parsed.tmux_pane.as_deref(), Some("%3"));
        let back = Envelope::parse(text.trim_end()).unwrap();
        assert_eq!(back.envelope().tmux_pane, Some("%3"));
    }

    #[test]
    fn multi_line_json_becomes_one_line_with_the_same_value() {
        let text = "{\n  \"a\": \"x\\ny\",\r\n  \"b\": 1\n}";
        let flat = one_line(text);
        assert!(!flat.contains('\n'));
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        let b: serde_json::Value = serde_json::from_str(&flat).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        let long = "é".repeat(100);
        let clipped = clip_name(&long);
        assert!(clipped.len() <= MAX_NAME_BYTES);
        assert!(clipped.chars().all(|c| c == 'é'));
    }
}
