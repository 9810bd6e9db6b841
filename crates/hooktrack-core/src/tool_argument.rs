//! What a tool call acts on, in a few words, for a person's one-line summary (`waits on
//! Bash: cargo build --rel…`): the one field of the call's input its agent's table names
//! (a command, a file path, a pattern, a url), on one line, cut to
//! [`MAX_ARGUMENT_CHARS`].
//!
//! Each agent keeps its table in its folder ([`Descriptor::tool_arguments`]); a tool the
//! table does not name has no argument, and a row the agent's payloads never match only
//! shows none. The text is a tool input: it is kept for the
//! summary and never serialized with the posture, so `--ndjson` and what a fleet publishes
//! carry none. It is cut here, not made safe: every output makes it safe where it writes
//! it, as any other payload text.
//!
//! [`Descriptor::tool_arguments`]: crate::agents::Descriptor::tool_arguments

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Longest argument kept, in characters, the cut marked by a trailing `…`.
pub const MAX_ARGUMENT_CHARS: usize = 60;

/// One row of an agent's table: calls of `tool` act on the input's `field`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgumentField {
    /// The tool's name as the agent's payloads spell it.
    pub tool: &'static str,
    /// The input's field that names what the call acts on; only a string is taken.
    pub field: &'static str,
}

impl ArgumentField {
    /// Calls of `tool` act on the input's `field`.
    pub const fn new(tool: &'static str, field: &'static str) -> Self {
        Self { tool, field }
    }
}

/// The argument of a call of `tool` whose input is `input`, by `table`: the field's
/// string on one line (whitespace runs made one space), cut to [`MAX_ARGUMENT_CHARS`]
/// on a character boundary. `None` when the table names no field for the tool, or the
/// input has no such string, or it is blank.
pub fn argument(table: &[ArgumentField], tool: &str, input: &RawValue) -> Option<String> {
    let field = table.iter().find(|row| row.tool == tool)?.field;
    let mut de = serde_json::Deserializer::from_str(input.get());
    let raw = FindField(field).deserialize(&mut de).ok()??;
    let text: String = serde_json::from_str(raw.get()).ok()?;
    one_line_cut(&text)
}

/// `text` on one line and at most [`MAX_ARGUMENT_CHARS`] characters; `None` if blank.
fn one_line_cut(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        for c in (chars > 0).then_some(' ').into_iter().chain(word.chars()) {
            if chars == MAX_ARGUMENT_CHARS {
                // One character too many: the last one kept makes room for the mark.
                out.pop();
                out.push('…');
                return Some(out);
            }
            out.push(c);
            chars += 1;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Reads a JSON object for the raw value of one field, skipping the others unparsed.
struct FindField<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for FindField<'_> {
    type Value = Option<&'de RawValue>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FindField<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool input object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Key>()? {
            if found.is_none() && key.0 == self.0 {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A key, borrowed or unescaped.
struct Key(String);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[ArgumentField] = &[
        ArgumentField::new("Bash", "command"),
        ArgumentField::new("Read", "file_path"),
    ];

    fn arg(tool: &str, input: &str) -> Option<String> {
        let raw: Box<RawValue> = serde_json::from_str(input).unwrap();
        argument(TABLE, tool, &raw)
    }

    #[test]
    fn the_tables_field_names_what_the_call_acts_on() {
        assert_eq!(
            arg("Bash", r#"{"description":"Build","command":"cargo build"}"#).as_deref(),
            Some("cargo build")
        );
        assert_eq!(
            arg("Read", r#"{"file_path":"/src/\u00e9t\u00e9.rs"}"#).as_deref(),
            Some("/src/été.rs")
        );
    }

    #[test]
    fn a_tool_or_field_the_table_does_not_name_has_no_argument() {
        assert_eq!(arg("Write", r#"{"file_path":"a.rs"}"#), None);
        assert_eq!(arg("Bash", r#"{"cmd":"ls"}"#), None);
        assert_eq!(
            arg("Bash", r#"{"command":["ls","-l"]}"#),
            None,
            "not a string"
        );
        assert_eq!(arg("Bash", r#"{"command":"  \n "}"#), None, "blank");
        assert_eq!(arg("Bash", r#""ls""#), None, "not an object");
    }

    #[test]
    fn a_long_command_is_cut_on_a_character_boundary_and_marked() {
        let long = format!(
            r#"{{"command":"cargo build --release {}"}}"#,
            "é".repeat(80)
        );
        let cut = arg("Bash", &long).unwrap();
        assert_eq!(cut.chars().count(), MAX_ARGUMENT_CHARS);
        assert!(cut.starts_with("cargo build --release éé"));
        assert!(cut.ends_with("é…"));
        let exact = "x".repeat(MAX_ARGUMENT_CHARS);
        assert_eq!(
            arg("Bash", &format!(r#"{{"command":"{exact}"}}"#)),
            Some(exact),
            "a text of the limit's length is whole"
        );
    }

    #[test]
    fn a_multi_line_command_reads_on_one_line() {
        assert_eq!(
            arg("Bash", r#"{"command":"cd /w &&\n\tcargo test\r\n"}"#).as_deref(),
            Some("cd /w && cargo test")
        );
    }

    #[test]
    fn control_characters_are_kept_for_the_output_to_show() {
        assert_eq!(
            arg("Bash", r#"{"command":"echo \u001b[31mred"}"#).as_deref(),
            Some("echo \u{1b}[31mred")
        );
    }

    /// The posture after feeding `lines` (`(event, payload fields)`) to `agent`'s pipeline.
    fn after(
        agent: crate::agent::Agent,
        base: &str,
        lines: &[(&str, &str)],
    ) -> crate::posture::Posture {
        use crate::pipeline::{Fed, Pipeline};
        let mut pipeline = Pipeline::new(crate::provider::ProviderChoice::Exactly(agent))
            .with_tool_arguments(true);
        for (n, (event, fields)) in (1..).zip(lines) {
            let line = format!(r#"{{"hook_event_name":"{event}",{base},{fields}}}"#);
            if let Fed::Skipped(skip) = pipeline.feed_line(n, line.as_bytes()) {
                panic!("line {n} skipped: {}", skip.detail);
            }
        }
        pipeline.posture()
    }

    const CLAUDE: &str =
        r#""session_id":"s1","transcript_path":"/t.jsonl","cwd":"/p","permission_mode":"default""#;
    const BUILD: &str = r#""tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"cargo build --release --workspace --all-targets --locked && cargo test","description":"Build"}"#;

    #[test]
    fn a_claude_permission_dialog_says_what_the_blocked_call_runs() {
        use crate::agent::Agent;
        use crate::posture::Phase;
        let prompt = ("UserPromptSubmit", r#""prompt":"build","prompt_id":"p1""#);
        let p = after(
            Agent::ClaudeCode,
            CLAUDE,
            &[prompt, ("PreToolUse", BUILD), ("PermissionRequest", BUILD)],
        );
        assert_eq!(p.turn.phase, Phase::Blocked);
        assert_eq!(p.turn.blocked_tool.as_deref(), Some("Bash"));
        assert_eq!(
            p.turn.blocked_argument.as_deref(),
            Some("cargo build --release --workspace --all-targets --locked &&…")
        );
        assert_eq!(p.turn.running_call, None, "blocked, not running");
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""blocked_tool":"Bash""#), "{json}");
        assert!(
            !json.contains("cargo"),
            "a tool input is never serialized: {json}"
        );
    }

    #[test]
    fn a_running_call_is_the_main_turns_newest_until_it_ends() {
        use crate::agent::Agent;
        use crate::posture::{Phase, RunningCall};
        let prompt = ("UserPromptSubmit", r#""prompt":"build","prompt_id":"p1""#);
        let read =
            r#""tool_name":"Read","tool_use_id":"t2","tool_input":{"file_path":"/p/src/main.rs"}"#;
        let p = after(
            Agent::ClaudeCode,
            CLAUDE,
            &[prompt, ("PreToolUse", BUILD), ("PreToolUse", read)],
        );
        assert_eq!(p.turn.phase, Phase::Active);
        assert_eq!(
            p.turn.running_call,
            Some(RunningCall {
                tool: "Read".into(),
                argument: Some("/p/src/main.rs".into())
            })
        );
        let p = after(
            Agent::ClaudeCode,
            CLAUDE,
            &[
                prompt,
                ("PreToolUse", BUILD),
                ("PreToolUse", read),
                ("PostToolUse", read),
                ("PostToolUse", BUILD),
            ],
        );
        assert_eq!(p.turn.phase, Phase::Active);
        assert_eq!(p.turn.running_call, None, "no call open");
    }

    #[test]
    fn a_kimi_code_permission_request_says_what_the_blocked_call_runs() {
        use crate::agent::Agent;
        let base = r#""session_id":"session_1","cwd":"/p","client_type":"kimi_code_cli""#;
        let call = r#""tool_call_id":"call_1","tool_name":"Bash","tool_input":{"command":"touch approved.txt"}"#;
        let request = format!(r#""id":"approval_1","turn_id":0,{call}"#);
        let p = after(
            Agent::KimiCode,
            base,
            &[
                ("UserPromptSubmit", r#""prompt":"touch""#),
                ("TurnStarted", r#""turn_id":0"#),
                ("PreToolUse", call),
                ("PermissionRequest", &request),
            ],
        );
        assert_eq!(p.turn.blocked_tool.as_deref(), Some("Bash"));
        assert_eq!(
            p.turn.blocked_argument.as_deref(),
            Some("touch approved.txt")
        );
    }

    /// Kimi Code's `PermissionRequest` may name its call by id alone (no `tool_input`):
    /// the dialog says what that call runs.
    #[test]
    fn a_permission_request_without_input_says_what_its_call_runs() {
        use crate::agent::Agent;
        let base = r#""session_id":"session_1","cwd":"/p","client_type":"kimi_code_cli""#;
        let call = r#""tool_call_id":"call_1","tool_name":"Bash""#;
        let started = format!(r#"{call},"tool_input":{{"command":"cargo build --release"}}"#);
        let request = format!(r#""id":"approval_1","turn_id":0,{call}"#);
        let p = after(
            Agent::KimiCode,
            base,
            &[
                ("UserPromptSubmit", r#""prompt":"build""#),
                ("TurnStarted", r#""turn_id":0"#),
                ("PreToolUse", &started),
                ("PermissionRequest", &request),
            ],
        );
        assert_eq!(p.turn.blocked_tool.as_deref(), Some("Bash"));
        assert_eq!(
            p.turn.blocked_argument.as_deref(),
            Some("cargo build --release")
        );
    }

    /// Cline's call input is nested in its `tool_call`: read as every agent's, where a live
    /// reader asks for it, and not at all in a replay.
    #[test]
    fn a_cline_call_s_nested_input_is_read_only_where_arguments_are_asked_for() {
        use crate::agent::Agent;
        use crate::pipeline::Pipeline;
        use crate::posture::RunningCall;
        let lines = [
            r#"{"event":"TaskStart","payload":{"hookName":"agent_start","taskId":"t1"}}"#,
            r#"{"event":"PreToolUse","payload":{"hookName":"tool_call","taskId":"t1","tool_call":{"id":"c1","name":"editor","input":{"path":"./notes.txt","new_text":"x"}}}}"#,
        ];
        for arguments in [true, false] {
            let mut pipeline =
                Pipeline::new(crate::provider::ProviderChoice::Exactly(Agent::Cline))
                    .with_tool_arguments(arguments);
            for (n, line) in (1..).zip(lines) {
                pipeline.feed_line(n, line.as_bytes());
            }
            assert_eq!(
                pipeline.posture().turn.running_call,
                Some(RunningCall {
                    tool: "editor".into(),
                    argument: arguments.then(|| "./notes.txt".into()),
                }),
                "arguments {arguments}"
            );
        }
    }
}
