//! A typed, borrowed view of the hook payload fields hooktrack reads, across providers.
//!
//! One struct for every provider keeps parsing to a single pass over the line: fields a
//! provider does not send stay `None`, fields hooktrack does not read are skipped.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::event::TurnId;

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Payload<'a> {
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub hook_event_name: Option<Cow<'a, str>>,
    // GitHub Copilot CLI sends `PermissionRequest`, `Notification` and `SubagentStart` in
    // its native camelCase even to Claude-style hooks.
    // Cline names its session (one per CLI session, across its prompts) `taskId`, Auggie
    // its `conversation_id`.
    #[serde(
        borrow,
        default,
        deserialize_with = "opt_text",
        alias = "sessionId",
        alias = "taskId",
        alias = "conversation_id"
    )]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub client_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub transcript_path: Option<Cow<'a, str>>,
    /// Text, or milliseconds since the epoch as a number (GitHub Copilot CLI's camelCase
    /// payloads), kept as its decimal text.
    #[serde(borrow, default, deserialize_with = "opt_text_or_number")]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub source: Option<Cow<'a, str>>,
    /// The session that started this one as its subagent (Factory Droid's `SessionStart`
    /// in a `Task` subagent's own session: the only row of it that names the parent).
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub calling_session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub reason: Option<Cow<'a, str>>,
    /// The prompt's text (Auggie's `PromptSubmit` names it `user_prompt`).
    #[serde(borrow, alias = "user_prompt")]
    pub prompt: Option<PromptText<'a>>,
    pub is_steer: Option<bool>,
    pub is_interrupt: Option<bool>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub prompt_id: Option<Cow<'a, str>>,
    pub queue_length: Option<u64>,
    pub turn_id: Option<TurnIdField>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub origin_kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub origin_name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text", alias = "toolName")]
    pub tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "toolInput")]
    pub tool_input: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub agent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub agent_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub agent_name: Option<Cow<'a, str>>,
    pub permission_mode: Option<IgnoredAny>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub decision: Option<Cow<'a, str>>,
    pub stop_hook_active: Option<bool>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub error_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub error_message: Option<Cow<'a, str>>,
    /// What failed (GitHub Copilot CLI `ErrorOccurred`: `model_call`, ...).
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub error_context: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub trigger: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub notification_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub severity: Option<Cow<'a, str>>,
    /// What a Kimi Code `Notification` is about (`task.completed`: the task's id).
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub source_id: Option<Cow<'a, str>>,
    /// Claude Code's `Stop.background_tasks`: kept raw, read only on a `Stop`.
    #[serde(borrow)]
    pub background_tasks: Option<&'a RawValue>,
    /// Claude Code's `PreModelSwitch` / `PostModelSwitch`: the model before and after.
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub from_model: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub to_model: Option<Cow<'a, str>>,
    /// The agent process's id, in a launcher's `process_ended` row. Lenient: a provider's
    /// `pid` of another shape is ignored, never the row.
    #[serde(default, deserialize_with = "lenient_pid")]
    pub pid: Option<u32>,
    /// An OpenCode bus event's `properties`, as hooktrack's plugin forwards them: kept
    /// raw, read by OpenCode's adapter only.
    #[serde(borrow)]
    pub properties: Option<&'a RawValue>,
    /// A plugin's loss row ([`EVENTS_LOST`](crate::envelope::EVENTS_LOST)): how many
    /// events its queue dropped, and their payloads' bytes.
    pub lost: Option<u64>,
    pub lost_bytes: Option<u64>,
    /// Cline's own name of the event (`agent_start`, `tool_call`, ...), beside the hook
    /// file's name the event is delivered under: read by detection only.
    #[serde(borrow, default, deserialize_with = "opt_text", alias = "hookName")]
    pub hook_name: Option<Cow<'a, str>>,
    /// Cline's `tool_call` (`{id, name, input}`) and `tool_result` (`{id, name, output,
    /// error?}`), kept raw, read by Cline's adapter only.
    #[serde(borrow)]
    pub tool_call: Option<&'a RawValue>,
    #[serde(borrow)]
    pub tool_result: Option<&'a RawValue>,
    /// Cline's `agent_end` `turn` (`{status, outputText}`), kept raw, read by its adapter.
    #[serde(borrow)]
    pub turn: Option<&'a RawValue>,
    /// Why Auggie's agent loop stopped, on its `Stop`: `end_turn`, `interrupted`,
    /// `max_iterations`, `empty_completion`, `error`.
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub agent_stop_cause: Option<Cow<'a, str>>,
    /// Auggie's `PostToolUse`: the tool's error text (a failed command, a call the user
    /// denied), null when it did not fail.
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub tool_error: Option<Cow<'a, str>>,
    /// Auggie's workspace folders, in every payload: read by detection only.
    pub workspace_roots: Option<IgnoredAny>,
    /// Letta Code's name of the event (its payloads have no `hook_event_name`): read by
    /// detection, and as a bare payload's event name.
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub event_type: Option<Cow<'a, str>>,
    /// Letta Code's `Notification` level (`info`, `error`), read by its adapter.
    #[serde(borrow, default, deserialize_with = "opt_text")]
    pub level: Option<Cow<'a, str>>,
}

/// A process id, or anything else (then `None`).
fn lenient_pid<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Pid {
        Id(u32),
        Other(IgnoredAny),
    }
    Ok(match Option::<Pid>::deserialize(deserializer)? {
        Some(Pid::Id(pid)) => Some(pid),
        Some(Pid::Other(_)) | None => None,
    })
}

/// A string field that borrows from the line when it has no escapes. serde's own
/// `Option<Cow<str>>` always allocates (`borrow` does not reach through the `Option`), and
/// these fields are read on every event.
pub fn opt_text<'de: 'a, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    Ok(Option::<Text<'a>>::deserialize(deserializer)?.map(|t| t.0))
}

/// [`opt_text`], or a number kept as its decimal text.
pub fn opt_text_or_number<'de: 'a, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum TextOrNumber<'b> {
        #[serde(borrow)]
        Text(Text<'b>),
        Number(serde_json::Number),
    }
    Ok(
        Option::<TextOrNumber<'a>>::deserialize(deserializer)?.map(|v| match v {
            TextOrNumber::Text(t) => t.0,
            TextOrNumber::Number(n) => Cow::Owned(n.to_string()),
        }),
    )
}

/// A string that borrows from the input when it can.
///
/// On a line with an unpaired UTF-16 surrogate escape (`"\ud800"`, which Python's
/// `json.dumps` and JavaScript's `JSON.stringify` write), strings are read as bytes (see
/// `with_lone_surrogates`): serde_json then hands such a string over as WTF-8, where
/// reading it as `str` would fail the whole line, and each surrogate becomes U+FFFD
/// ([`from_wtf8`]).
pub struct Text<'a>(pub Cow<'a, str>);

thread_local! {
    static LONE_SURROGATES: Cell<bool> = const { Cell::new(false) };
}

/// Runs `parse` with strings read as bytes, so lone surrogates are replaced instead of
/// failing the line. Only for a line known to hold one and checked as JSON already: read
/// as bytes, serde_json does not refuse raw control characters in strings.
pub(crate) fn with_lone_surrogates<T>(parse: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            LONE_SURROGATES.with(|f| f.set(false));
        }
    }
    LONE_SURROGATES.with(|f| f.set(true));
    let _reset = Reset;
    parse()
}

fn lone_surrogates_ok() -> bool {
    LONE_SURROGATES.with(Cell::get)
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                borrowed_text(v).map(Text)
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(from_wtf8(v))))
            }
        }
        if lone_surrogates_ok() {
            deserializer.deserialize_bytes(V)
        } else {
            deserializer.deserialize_str(V)
        }
    }
}

/// `turn_id`: an integer (Kimi Code) or a string (Codex).
#[derive(Clone, Debug)]
pub struct TurnIdField(pub TurnId);

impl<'de> Deserialize<'de> for TurnIdField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TurnIdField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or string turn id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TurnIdField(TurnId::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                match i64::try_from(v) {
                    Ok(n) => Ok(TurnIdField(TurnId::Int(n))),
                    Err(_) => Ok(TurnIdField(TurnId::Text(v.to_string()))),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TurnIdField(TurnId::Text(v.to_owned())))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A prompt: a string, or a content-part array flattened to the text of its text parts
/// (joined with a newline).
#[derive(Clone, Debug)]
pub struct PromptText<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for PromptText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PromptText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a prompt string or an array of content parts")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(PromptText(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(PromptText(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(PromptText(Cow::Borrowed("")))
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                borrowed_text(v).map(PromptText)
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(PromptText(Cow::Owned(from_wtf8(v))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut text: Option<Cow<'de, str>> = None;
                while let Some(part) = seq.next_element::<ContentPart<'de>>()? {
                    let Some(piece) = part.text else { continue };
                    text = Some(match text {
                        None => piece,
                        Some(mut acc) => {
                            let s = acc.to_mut();
                            s.push('\n');
                            s.push_str(&piece);
                            acc
                        }
                    });
                }
                Ok(PromptText(text.unwrap_or(Cow::Borrowed(""))))
            }
        }
        if lone_surrogates_ok() {
            // See `Text`; serde_json hands an array to `visit_seq` from here too.
            deserializer.deserialize_bytes(V)
        } else {
            deserializer.deserialize_any(V)
        }
    }
}

/// A string without escapes, borrowed from the line (which was UTF-8 already).
fn borrowed_text<E: de::Error>(v: &[u8]) -> Result<Cow<'_, str>, E> {
    std::str::from_utf8(v)
        .map(Cow::Borrowed)
        .map_err(|_| E::custom("a string that is not UTF-8"))
}

/// WTF-8 (UTF-8 that may hold encoded surrogates, as serde_json writes an unpaired
/// `\uD800`-style escape) to a string, each surrogate replaced by U+FFFD.
pub fn from_wtf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.push_str(valid);
                return out;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                // Checked above: `valid` is the valid prefix.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push(char::REPLACEMENT_CHARACTER);
                // A surrogate is three bytes (ED A0..BF 80..BF); anything else invalid
                // is skipped as the decoder measured it.
                let skip = match after {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => e.error_len().unwrap_or(after.len()).max(1),
                };
                rest = &after[skip.min(after.len())..];
            }
        }
    }
}

/// How many unpaired UTF-16 surrogate escapes (`\ud800` without its low half, or a lone
/// `\udc00`) a JSON text holds. Backslashes occur only inside strings in JSON, so a walk
/// from one to the next sees every escape.
pub fn lone_surrogates(text: &[u8]) -> u32 {
    let mut count = 0;
    let mut i = 0;
    // A high surrogate whose escape ended at this offset, waiting for its low half.
    let mut high_until: Option<usize> = None;
    while let Some(off) = memchr::memchr(b'\\', &text[i..]) {
        let at = i + off;
        if high_until.is_some_and(|end| end != at) {
            count += 1;
            high_until = None;
        }
        let code = match text.get(at + 1) {
            Some(b'u') => text
                .get(at + 2..at + 6)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u16::from_str_radix(h, 16).ok()),
            Some(_) => None,
            None => break,
        };
        match code {
            Some(0xD800..=0xDBFF) => {
                if high_until.is_some() {
                    count += 1;
                }
                high_until = Some(at + 6);
            }
            Some(0xDC00..=0xDFFF) if high_until.take().is_none() => count += 1,
            Some(0xDC00..=0xDFFF) => {}
            _ => {
                if high_until.take().is_some() {
                    count += 1;
                }
            }
        }
        i = at + if code.is_some() { 6 } else { 2 };
        if i > text.len() {
            break;
        }
    }
    if high_until.is_some() {
        count += 1;
    }
    count
}

/// One element of a content-part prompt. Only `{"type": "text", "text": ...}` carries
/// text; other parts (images, files) are skipped.
struct ContentPart<'a> {
    text: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentPart<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ContentPart<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content part")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ContentPart {
                    text: Some(Cow::Borrowed(v)),
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ContentPart {
                    text: Some(Cow::Owned(v.to_owned())),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut is_text = true;
                let mut text = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "type" => {
                            let kind: Text<'de> = map.next_value()?;
                            is_text = kind.0 == "text";
                        }
                        "text" => text = Some(map.next_value::<Text<'de>>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ContentPart {
                    text: if is_text { text } else { None },
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ContentPart { text: None })
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ContentPart { text: None })
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ContentPart { text: None })
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ContentPart { text: None })
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ContentPart { text: None })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ContentPart { text: None })
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl Payload<'_> {
    /// A hash of the raw `tool_input` text: equal inputs from one CLI serialize equally.
    pub fn tool_input_hash(&self) -> Option<u64> {
        self.tool_input.map(|raw| text_hash(raw.get()))
    }

    /// A short text for a payload `error` (a string, or an object with `message`).
    pub fn error_summary(&self) -> Option<Cow<'_, str>> {
        let raw = self.error?;
        if let Ok(text) = serde_json::from_str::<Cow<'_, str>>(raw.get()) {
            return Some(text);
        }
        #[derive(Deserialize)]
        struct WithMessage<'b> {
            #[serde(borrow)]
            message: Option<Cow<'b, str>>,
        }
        match serde_json::from_str::<WithMessage<'_>>(raw.get()) {
            Ok(WithMessage { message: Some(m) }) => Some(m),
            _ => Some(Cow::Borrowed(raw.get())),
        }
    }
}

/// A payload read straight into its box: what rows hold.
///
/// The derived [`Deserialize`] of [`Payload`] builds the struct on the stack, and serde and
/// serde_json move the result three times before `Box::new` copies it to the heap: four
/// copies of its 1 KiB per row, with the assembly of the struct from its 44 fields about
/// 5% of a replay's instructions. This reads each field into a box allocated first,
/// exactly as the derived code does (the same names and aliases, the same reader per
/// field, the same duplicate-field errors, unknown fields skipped, an array given to the
/// derived code); `tests::in_place_reads_as_the_derived_code` holds the two to the same
/// payloads and errors.
pub struct BoxedPayload<'a>(pub Box<Payload<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for BoxedPayload<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut payload = Box::<Payload<'a>>::default();
        deserializer.deserialize_struct("Payload", Field::NAMES, InPlace(&mut payload))?;
        Ok(BoxedPayload(payload))
    }
}

/// Reads a payload into the `Payload` it holds (a default one).
struct InPlace<'p, 'a>(&'p mut Payload<'a>);

impl<'de: 'a, 'a> Visitor<'de> for InPlace<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // The derived code's, for the same type errors.
        f.write_str("struct Payload")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let payload = self.0;
        let mut seen = 0u64;
        while let Some(field) = map.next_key_seed(FieldSeed)? {
            let Some(field) = field else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let bit = 1u64 << (field as u32);
            if seen & bit != 0 {
                return Err(de::Error::duplicate_field(field.name()));
            }
            seen |= bit;
            read_field(payload, field, &mut map)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        // A payload that is an array (never a real one): the derived code reads it.
        *self.0 = Payload::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(())
    }
}

/// A key of a payload object: the field it names, `None` for one hooktrack does not read.
struct FieldSeed;

impl<'de> de::DeserializeSeed<'de> for FieldSeed {
    type Value = Option<Field>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed {
    type Value = Option<Field>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(usize::try_from(v)
            .ok()
            .and_then(|i| Field::ALL.get(i).copied()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Field::of(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(std::str::from_utf8(v).ok().and_then(Field::of))
    }
}

/// A field whose own reader is a function (`deserialize_with`), as a type.
macro_rules! read_with {
    ($name:ident, $ty:ty, $with:ident) => {
        struct $name<'a>($ty);
        impl<'de: 'a, 'a> Deserialize<'de> for $name<'a> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $with(deserializer).map($name)
            }
        }
    };
}
read_with!(OptText, Option<Cow<'a, str>>, opt_text);
read_with!(OptTextOrNumber, Option<Cow<'a, str>>, opt_text_or_number);
struct Pid(Option<u32>);
impl<'de> Deserialize<'de> for Pid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        lenient_pid(deserializer).map(Pid)
    }
}

fn text<'de: 'a, 'a, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'a, str>>, A::Error> {
    Ok(map.next_value::<OptText<'a>>()?.0)
}

fn text_or_number<'de: 'a, 'a, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<Option<Cow<'a, str>>, A::Error> {
    Ok(map.next_value::<OptTextOrNumber<'a>>()?.0)
}

fn pid<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<u32>, A::Error> {
    Ok(map.next_value::<Pid>()?.0)
}

fn value<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value()
}

/// The fields of [`Payload`] in its order, each with its aliases and its reader: `text`
/// for `deserialize_with = "opt_text"`, `value` for a plain `Option<T>`.
macro_rules! fields {
    ($($field:ident $(| $alias:literal)* => $read:ident,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(non_camel_case_types)]
        enum Field {
            $($field,)*
        }

        impl Field {
            const ALL: &'static [Field] = &[$(Field::$field,)*];
            const NAMES: &'static [&'static str] = &[$(stringify!($field),)*];

            fn of(name: &str) -> Option<Field> {
                match name {
                    $(stringify!($field) $(| $alias)* => Some(Field::$field),)*
                    _ => None,
                }
            }

            fn name(self) -> &'static str {
                Self::NAMES[self as usize]
            }
        }

        fn read_field<'de: 'a, 'a, A: MapAccess<'de>>(
            payload: &mut Payload<'a>,
            field: Field,
            map: &mut A,
        ) -> Result<(), A::Error> {
            match field {
                $(Field::$field => payload.$field = $read(map)?,)*
            }
            Ok(())
        }
    };
}

fields! {
    hook_event_name => text,
    session_id | "sessionId" | "taskId" | "conversation_id" => text,
    client_type => text,
    transcript_path => text,
    timestamp => text_or_number,
    source => text,
    calling_session_id => text,
    reason => text,
    prompt | "user_prompt" => value,
    is_steer => value,
    is_interrupt => value,
    prompt_id => text,
    queue_length => value,
    turn_id => value,
    origin_kind => text,
    origin_name => text,
    tool_name | "toolName" => text,
    tool_input | "toolInput" => value,
    tool_call_id => text,
    tool_use_id => text,
    error => value,
    id => text,
    agent_id => text,
    agent_type => text,
    agent_name => text,
    permission_mode => value,
    decision => text,
    stop_hook_active => value,
    error_type => text,
    error_message => text,
    error_context => text,
    task_id => text,
    kind => text,
    trigger => text,
    notification_type => text,
    severity => text,
    source_id => text,
    background_tasks => value,
    from_model => text,
    to_model => text,
    pid => pid,
    properties => value,
    lost => value,
    lost_bytes => value,
    hook_name | "hookName" => text,
    tool_call => value,
    tool_result => value,
    turn => value,
    agent_stop_cause => text,
    tool_error => text,
    workspace_roots => value,
    event_type => text,
    level => text,
}

// One bit per field in `InPlace::visit_map`'s duplicate check.
const _: () = assert!(Field::ALL.len() <= 64);

/// FNV-1a: stable across runs and platforms, so replays stay byte-for-byte deterministic.
pub fn text_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Payload<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn flattens_content_parts() {
        let p = parse(
            r#"{"prompt":[{"type":"text","text":"a"},{"type":"image","url":"x"},{"type":"text","text":"b"}]}"#,
        );
        assert_eq!(p.prompt.unwrap().0, "a\nb");
    }

    #[test]
    fn string_and_escaped_prompts() {
        assert_eq!(parse(r#"{"prompt":"hi"}"#).prompt.unwrap().0, "hi");
        assert_eq!(parse(r#"{"prompt":"caf\u00e9"}"#).prompt.unwrap().0, "café");
        assert_eq!(parse(r#"{"prompt":[]}"#).prompt.unwrap().0, "");
    }

    #[test]
    fn turn_ids_of_both_kinds() {
        assert_eq!(parse(r#"{"turn_id":3}"#).turn_id.unwrap().0, TurnId::Int(3));
        assert_eq!(
            parse(r#"{"turn_id":"t-1"}"#).turn_id.unwrap().0,
            TurnId::Text("t-1".into())
        );
    }

    /// The derived reader's result and the in-place reader's, as comparable text.
    fn both(json: &str) -> (String, String) {
        let derived = match serde_json::from_str::<Box<Payload<'_>>>(json) {
            Ok(p) => format!("{p:?}"),
            Err(e) => format!("error: {e}"),
        };
        let in_place = match serde_json::from_str::<BoxedPayload<'_>>(json) {
            Ok(p) => format!("{:?}", p.0),
            Err(e) => format!("error: {e}"),
        };
        (derived, in_place)
    }

    #[test]
    fn in_place_reads_as_the_derived_code() {
        let mut texts: Vec<String> = [
            // Every field, aliases, escapes, nulls, numbers as text.
            r#"{"hook_event_name":"PreToolUse","sessionId":"s\u00e9","client_type":"c","transcript_path":"/t","timestamp":1767225601000,"source":"startup","calling_session_id":"p","reason":"r","prompt":[{"type":"text","text":"a"}],"is_steer":true,"is_interrupt":false,"prompt_id":"q","queue_length":2,"turn_id":"t-1","origin_kind":"user","origin_name":"n","toolName":"Bash","toolInput":{"command":"ls"},"tool_call_id":"c1","tool_use_id":"u1","error":{"message":"m"},"id":"i","agent_id":"a","agent_type":"t","agent_name":"n","permission_mode":{"x":[1]},"decision":"allow","stop_hook_active":true,"error_type":"e","error_message":"m","error_context":"model_call","task_id":"k","kind":"bash","trigger":"auto","notification_type":"idle_prompt","severity":"warn","source_id":"s","background_tasks":[{"id":1}],"from_model":"a","to_model":"b","pid":42,"properties":{"k":"v"},"lost":3,"lost_bytes":4096,"event_type":"Stop","level":"error","unknown":[1,{"a":null}]}"#,
            r#"{"session_id":null,"prompt":null,"turn_id":null,"tool_input":null,"pid":"x","timestamp":"2026-01-01T00:00:00Z"}"#,
            // Auggie's names: `conversation_id`, `user_prompt`, its own fields.
            r#"{"hook_event_name":"Stop","conversation_id":"c","workspace_roots":["/w"],"agent_stop_cause":"end_turn","user_prompt":"hi","tool_error":null,"_exchange":{"a":[1]}}"#,
            // Duplicates, by name and by alias, a null one included.
            r#"{"session_id":"a","session_id":"b"}"#,
            r#"{"session_id":"a","sessionId":"b"}"#,
            r#"{"is_steer":null,"is_steer":true}"#,
            r#"{"unknown":1,"unknown":2}"#,
            // Type errors, not an object, an array.
            r#"{"session_id":3}"#,
            r#"{"is_steer":"yes"}"#,
            r#"{"turn_id":[1]}"#,
            r#""a payload""#,
            "7",
            "[]",
            r#"["Stop","s"]"#,
            r#"{"prompt":"\ud800 lone"}"#,
            r#"{"hook_event_name":"Stop""#,
        ]
        .map(str::to_owned)
        .to_vec();
        // Every payload of the corpus, and every line read as a bare payload.
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        for agent in std::fs::read_dir(&corpus).unwrap() {
            let dir = agent.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&dir).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "ndjson") {
                    let bytes = std::fs::read(&path).unwrap();
                    for line in String::from_utf8_lossy(&bytes).lines() {
                        if let Ok(serde_json::Value::Object(row)) = serde_json::from_str(line)
                            && let Some(payload) = row.get("payload")
                        {
                            texts.push(payload.to_string());
                        }
                        texts.push(line.to_owned());
                    }
                }
            }
        }
        assert!(texts.len() > 2_000, "{} texts", texts.len());
        for text in &texts {
            let (derived, in_place) = both(text);
            assert_eq!(derived, in_place, "{text}");
            let (derived, in_place) = with_lone_surrogates(|| both(text));
            assert_eq!(derived, in_place, "lone surrogates read: {text}");
        }
        assert!(
            both(r#"{"session_id":"a","sessionId":"b"}"#)
                .0
                .contains("duplicate field `session_id`")
        );
    }

    #[test]
    fn in_place_knows_every_field_of_the_derived_code() {
        use std::cell::Cell;
        /// A deserializer that only records the fields a struct asks for.
        struct Recorder(Cell<&'static [&'static str]>);
        impl<'de> Deserializer<'de> for &Recorder {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0.set(fields);
                Err(de::Error::custom("recorded"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
                enum identifier ignored_any
            }
        }
        let recorder = Recorder(Cell::new(&[]));
        assert!(Payload::deserialize(&recorder).is_err());
        let derived = recorder.0.get();
        assert!(derived.len() >= Field::ALL.len(), "{derived:?}");
        for name in derived {
            assert!(Field::of(name).is_some(), "{name} is not read in place");
        }
        for name in Field::NAMES {
            assert!(derived.contains(name), "{name} is no field of Payload");
        }
        for (i, field) in Field::ALL.iter().enumerate() {
            assert_eq!(*field as usize, i);
        }
    }

    #[test]
    fn error_summaries() {
        let p = parse(r#"{"error":{"code":"internal","message":"ENOENT","retryable":false}}"#);
        assert_eq!(p.error_summary().unwrap(), "ENOENT");
        let p = parse(r#"{"error":"boom"}"#);
        assert_eq!(p.error_summary().unwrap(), "boom");
    }
}
