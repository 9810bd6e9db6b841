//! The message an emitter posts to its collector (contract section 7): the one type the
//! emitter renders and the collector parses. What the collector then writes, and what an
//! emitter appends itself when the collector is out of reach, is the same delivery as an
//! [`Envelope`] row ([`Delivery::envelope`]).
//!
//! ```text
//! {"v":1,"provider":"kimi","generation":2,"emitter_seq":57,"event":"PreToolUse","payload":{ ...stdin... }}
//! ```

use std::borrow::Cow;
use std::io::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::agent::Agent;
use crate::envelope::{EmitterParent, Envelope, Via, clip_name, one_line};
use crate::store::is_tmux_pane_id;
use crate::time::Timestamp;

/// The provider of a writer that was not told one: Kimi Code, the contract's reference
/// agent (hooks installed before `--provider` existed name none).
pub const DEFAULT_PROVIDER: Agent = Agent::ASSUMED;

/// One hook delivery.
#[derive(Clone, Debug)]
pub struct Delivery<'a> {
    /// Written as its store name ([`Agent::store_name`]).
    pub provider: Agent,
    pub generation: u64,
    /// The emitter's key, taken from the store's counter; `None` when it could not be.
    pub emitter_seq: Option<u64>,
    /// The event the hook was configured for, else the payload's `hook_event_name`.
    pub event: Option<Cow<'a, str>>,
    /// The hook payload as it came; `None` when there is none (see `payload_error`).
    pub payload: Option<&'a RawValue>,
    /// Why there is no payload (stdin was not JSON, too large, ...).
    pub payload_error: Option<Cow<'a, str>>,
    /// The agent's tmux pane, only ever a pane id (`%3`).
    pub tmux_pane: Option<Cow<'a, str>>,
    /// The agent's process id, where no launcher knows it (see [`Envelope::agent_pid`]).
    pub agent_pid: Option<u32>,
    /// The process that ran the emitter (see [`EmitterParent`]).
    pub emitter_parent: Option<EmitterParent>,
}

/// Why a collector cannot take a body as a delivery (it answers 400).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DeliveryError {
    #[error("body is not a JSON object")]
    NotAnObject(#[source] serde_json::Error),
    #[error("body is not JSON")]
    NotJson(#[source] serde_json::Error),
    #[error(
        "body is neither a delivery envelope (with payload) nor a hook payload (with hook_event_name)"
    )]
    Neither,
}

/// The keys a collector reads from a body: a delivery, or a bare hook payload.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    // No `generation`: the row's generation is the collector's, whatever a body says.
    emitter_seq: Option<u64>,
    #[serde(borrow)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    payload_error: Option<Cow<'a, str>>,
    /// Any JSON: kept only when it is a pane id, else dropped, never the delivery.
    #[serde(default)]
    tmux_pane: Option<serde_json::Value>,
    /// Any JSON: kept only when it is a process id.
    #[serde(default)]
    agent_pid: Option<serde_json::Value>,
    /// Any JSON: kept only when it reads as one ([`EmitterParent::from_json`]).
    #[serde(default)]
    emitter_parent: Option<serde_json::Value>,
}

/// The one key read from a hook payload here.
#[derive(Deserialize)]
struct EventName<'a> {
    #[serde(borrow)]
    hook_event_name: Option<Cow<'a, str>>,
}

/// A payload's `hook_event_name`, if it is an object that has one.
pub fn hook_event_name(payload: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<EventName<'_>>(payload.get())
        .ok()
        .and_then(|n| n.hook_event_name)
}

/// The agent a `provider` names: its store name (what installed hooks write, `kimi` for
/// Kimi Code) or any name [`Agent::from_name`] takes. `None` for a name of no agent.
pub fn agent_named(name: &str) -> Option<Agent> {
    Agent::ALL
        .into_iter()
        .find(|a| a.store_name() == name)
        .or_else(|| Agent::from_name(name).ok())
}

impl<'a> Delivery<'a> {
    /// The POST body: the row without what the collector adds (`via`, `sequence`,
    /// `received_at`), keys in the contract's order, the payload spliced in byte for byte
    /// (made one line, see [`one_line`]).
    pub fn render(&self) -> Vec<u8> {
        let payload = self.payload.map(|p| one_line(p.get()));
        let mut out = Vec::with_capacity(payload.as_ref().map_or(0, |p| p.len()) + 200);
        out.extend_from_slice(b"{\"v\":1,\"provider\":");
        json_str(&mut out, self.provider.store_name());
        // Writing into a Vec cannot fail.
        let _ = write!(out, ",\"generation\":{},\"emitter_seq\":", self.generation);
        match self.emitter_seq {
            Some(s) => {
                let _ = write!(out, "{s}");
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"event\":");
        match self.event.as_deref() {
            Some(e) => json_str(&mut out, clip_name(e)),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"payload\":");
        match &payload {
            Some(p) => out.extend_from_slice(p.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(e) = &self.payload_error {
            out.extend_from_slice(b",\"payload_error\":");
            json_str(&mut out, e);
        }
        if let Some(pane) = &self.tmux_pane {
            out.extend_from_slice(b",\"tmux_pane\":");
            json_str(&mut out, pane);
        }
        if let Some(pid) = self.agent_pid {
            let _ = write!(out, ",\"agent_pid\":{pid}");
        }
        if let Some(parent) = &self.emitter_parent {
            out.extend_from_slice(b",\"emitter_parent\":");
            parent.render(&mut out);
        }
        out.push(b'}');
        out
    }

    /// Reads a POST body as a collector does: a delivery envelope (it has a `payload` or a
    /// `payload_error`), or a bare hook payload posted as is (`curl --data-binary @-`; it
    /// has a `hook_event_name`), which becomes the payload. The collector's own
    /// `generation` is the delivery's (a body cannot move it), as is its `provider` when
    /// the body names none, or no agent. An event name missing from an envelope is taken
    /// from the payload; a `tmux_pane` that is not a pane id is dropped.
    pub fn parse(
        body: &'a [u8],
        provider: Agent,
        generation: u64,
    ) -> Result<Delivery<'a>, DeliveryError> {
        let wire: Wire<'a> = serde_json::from_slice(body).map_err(DeliveryError::NotAnObject)?;
        let (payload, event) = if wire.payload.is_some() || wire.payload_error.is_some() {
            let event = wire
                .event
                .or_else(|| wire.payload.and_then(hook_event_name));
            (wire.payload, event)
        } else if wire.hook_event_name.is_some() {
            let text = std::str::from_utf8(body).unwrap_or_default();
            let whole = serde_json::from_str::<&RawValue>(text).map_err(DeliveryError::NotJson)?;
            (Some(whole), wire.hook_event_name)
        } else {
            return Err(DeliveryError::Neither);
        };
        Ok(Delivery {
            provider: wire
                .provider
                .as_deref()
                .and_then(agent_named)
                .unwrap_or(provider),
            generation,
            emitter_seq: wire.emitter_seq,
            event,
            payload,
            payload_error: wire.payload_error,
            tmux_pane: wire
                .tmux_pane
                .as_ref()
                .and_then(serde_json::Value::as_str)
                .filter(|p| is_tmux_pane_id(p))
                .map(|p| Cow::Owned(p.to_owned())),
            agent_pid: wire
                .agent_pid
                .as_ref()
                .and_then(serde_json::Value::as_u64)
                .and_then(|p| u32::try_from(p).ok())
                .filter(|p| *p > 0),
            emitter_parent: wire
                .emitter_parent
                .as_ref()
                .and_then(EmitterParent::from_json),
        })
    }

    /// The delivery as a store row: reached the store `via`, with the collector's
    /// `sequence` (none on an emitter's own row), stamped `received_at`.
    pub fn envelope(
        &self,
        via: Via,
        sequence: Option<u64>,
        received_at: Timestamp,
    ) -> Envelope<'_> {
        Envelope {
            provider: self.provider.store_name(),
            generation: self.generation,
            via,
            sequence,
            emitter_seq: self.emitter_seq,
            received_at,
            event: self.event.as_deref().map(clip_name),
            payload: self.payload,
            payload_error: self.payload_error.as_deref(),
            tmux_pane: self.tmux_pane.as_deref(),
            agent_pid: self.agent_pid,
            emitter_parent: self.emitter_parent.as_ref(),
        }
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_body_embeds_the_payload_verbatim_and_parses_back() {
        let payload = raw("{\"a\": 1,\n \"b\": \"x\"}");
        let delivery = Delivery {
            provider: Agent::KimiCode,
            generation: 3,
            emitter_seq: Some(7),
            event: Some("Stop".into()),
            payload: Some(payload),
            payload_error: None,
            tmux_pane: None,
            agent_pid: None,
            emitter_parent: None,
        };
        let body = delivery.render();
        assert_eq!(
            String::from_utf8(body.clone()).unwrap(),
            "{\"v\":1,\"provider\":\"kimi\",\"generation\":3,\"emitter_seq\":7,\"event\":\"Stop\",\"payload\":{\"a\": 1,  \"b\": \"x\"}}"
        );
        let back = Delivery::parse(&body, Agent::Codex, 3).unwrap();
        assert_eq!(back.provider, Agent::KimiCode);
        assert_eq!(back.emitter_seq, Some(7));
        assert_eq!(back.event.as_deref(), Some("Stop"));
        assert_eq!(
            back.payload.map(RawValue::get),
            Some("{\"a\": 1,  \"b\": \"x\"}")
        );
    }

    #[test]
    fn the_tmux_pane_rides_along_when_known() {
        let delivery = Delivery {
            provider: Agent::ClaudeCode,
            generation: 1,
            emitter_seq: Some(2),
            event: Some("Stop".into()),
            payload: None,
            payload_error: None,
            tmux_pane: Some("%12".into()),
            agent_pid: None,
            emitter_parent: None,
        };
        let body = String::from_utf8(delivery.render()).unwrap();
        assert!(
            body.starts_with("{\"v\":1,\"provider\":\"claude\",")
                && body.ends_with(",\"payload\":null,\"tmux_pane\":\"%12\"}"),
            "{body}"
        );
        let odd = br#"{"payload":{},"tmux_pane":["%1"]}"#;
        assert_eq!(
            Delivery::parse(odd, Agent::Codex, 1).unwrap().tmux_pane,
            None
        );
    }

    #[test]
    fn a_bare_payload_is_the_payload_and_the_collector_fills_the_rest() {
        let body = br#"{"hook_event_name":"Stop","session_id":"s","generation":"x"}"#;
        let delivery = Delivery::parse(body, Agent::KimiCli, 9).unwrap();
        assert_eq!(delivery.provider, Agent::KimiCli);
        assert_eq!(delivery.generation, 9);
        assert_eq!(delivery.event.as_deref(), Some("Stop"));
        assert_eq!(
            delivery.payload.map(RawValue::get),
            Some(std::str::from_utf8(body).unwrap())
        );
    }

    #[test]
    fn an_envelope_without_an_event_takes_the_payloads_and_an_unknown_provider_the_collectors() {
        let body = br#"{"provider":"someone","payload":{"hook_event_name":"PreToolUse"}}"#;
        let delivery = Delivery::parse(body, Agent::GeminiCli, 1).unwrap();
        assert_eq!(delivery.provider, Agent::GeminiCli);
        assert_eq!(delivery.event.as_deref(), Some("PreToolUse"));
        let row = delivery.envelope(Via::Http, Some(4), Timestamp::from_millis(0));
        assert_eq!(row.provider, "gemini");
        assert_eq!(row.sequence, Some(4));
    }

    #[test]
    fn bodies_that_are_no_delivery_are_refused() {
        for body in [
            &b"not json"[..],
            b"[1,2,3]",
            b"\"a string\"",
            b"{\"no\":\"payload\"}",
            b"{\"payload\":",
        ] {
            assert!(
                Delivery::parse(body, Agent::KimiCode, 1).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn every_agent_is_named_by_its_store_name_and_its_names() {
        for agent in Agent::ALL {
            assert_eq!(agent_named(agent.store_name()), Some(agent));
            assert_eq!(agent_named(agent.name()), Some(agent));
        }
        assert_eq!(agent_named("kimi"), Some(Agent::KimiCode));
        assert_eq!(agent_named("nobody"), None);
    }
}
