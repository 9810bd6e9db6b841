use std::path::PathBuf;

use super::*;
use crate::install::{Destination, Route};

const JSON_AGENTS: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::GeminiCli];

fn observer() -> Observer {
    Observer {
        emitter: PathBuf::from("/opt/it's here/hooktrack"),
        route: Route::Argv(Destination {
            url: "http://127.0.0.1:4242/events".to_owned(),
            dir: PathBuf::from("/s/hook-observation/claude"),
            generation: 3,
        }),
        agent_version: None,
    }
}

fn installed(agent: Agent, text: &str) -> String {
    let mut s = Settings::parse(text).unwrap();
    s.strip(|_| true);
    s.add(agent, &observer()).unwrap();
    s.render().unwrap()
}

#[test]
fn every_agent_validates_its_own_render() {
    for agent in JSON_AGENTS {
        let text = installed(agent, "");
        let v = validate(&text, agent, Some(&observer()), None).unwrap();
        assert_eq!(v.ours, agent.descriptor().hook_events_for(None).len());
        assert_eq!(v.generation, Some(3));
        assert_eq!(validate(&text, agent, None, None).unwrap(), v);
    }
}

#[test]
fn a_changed_entry_is_a_violation() {
    let text = installed(Agent::GeminiCli, "");
    let worse = text.replacen("\"timeout\": 5000", "\"timeout\": 5", 1);
    assert!(
        validate(&worse, Agent::GeminiCli, None, None)
            .unwrap_err()
            .contains("not an integer in 1000..=600000 (milliseconds)")
    );
    let other = text.replacen(
        "--generation 3 --event 'BeforeTool'",
        "--generation 4 --event 'BeforeTool'",
        1,
    );
    assert!(
        validate(&other, Agent::GeminiCli, Some(&observer()), None)
            .unwrap_err()
            .contains("not the one rendered")
    );
    assert!(
        validate(&other, Agent::GeminiCli, None, None)
            .unwrap_err()
            .contains("more than one generation")
    );
    let moved = text.replacen("\"matcher\": \"\"", "\"matcher\": \"Bash\"", 1);
    assert!(
        validate(&moved, Agent::GeminiCli, None, None)
            .unwrap_err()
            .contains("empty matcher")
    );
    // An entry on an event the agent does not have.
    let claude = installed(Agent::ClaudeCode, "");
    assert!(
        validate(&claude, Agent::Codex, None, None)
            .unwrap_err()
            .contains("not one of Codex CLI's 12 events")
    );
}

#[test]
fn what_voids_the_file_for_each_agent() {
    let bad_entry = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#;
    assert!(
        validate(bad_entry, Agent::ClaudeCode, None, None)
            .unwrap_err()
            .contains("`command` is missing")
    );
    assert!(validate(bad_entry, Agent::Codex, None, None).is_err());
    assert!(validate(bad_entry, Agent::GeminiCli, None, None).is_ok());
    let no_hooks = r#"{"hooks": {"Stop": [{"matcher": "x"}]}}"#;
    assert!(
        validate(no_hooks, Agent::ClaudeCode, None, None)
            .unwrap_err()
            .contains("`hooks` is missing")
    );
    assert!(validate(no_hooks, Agent::Codex, None, None).is_ok());
    let float = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1.5}]}]}}"#;
    assert!(validate(float, Agent::ClaudeCode, None, None).is_ok());
    assert!(
        validate(float, Agent::Codex, None, None)
            .unwrap_err()
            .contains("whole number")
    );
    let extra = r#"{"hooks": {}, "version": 1}"#;
    assert!(
        validate(extra, Agent::Codex, None, None)
            .unwrap_err()
            .contains("`version`")
    );
    assert!(validate(extra, Agent::ClaudeCode, None, None).is_ok());
    // Codex does not read event names it does not know.
    let unknown = r#"{"hooks": {"Later": 3}}"#;
    assert!(validate(unknown, Agent::Codex, None, None).is_ok());
    assert!(validate(unknown, Agent::ClaudeCode, None, None).is_err());
    assert!(
        validate(
            r#"{"disableAllHooks": true}"#,
            Agent::ClaudeCode,
            None,
            None
        )
        .unwrap_err()
        .contains("runs no hook")
    );
    assert!(
        validate(
            r#"{"hooksConfig": {"enabled": false}}"#,
            Agent::GeminiCli,
            None,
            None
        )
        .is_err()
    );
}

#[test]
fn layouts_round_trip() {
    for text in [
        "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}\n",
        "{\n    \"a\": {\n        \"b\": true\n    }\n}",
        "{\r\n\t\"a\": 1\r\n}\r\n",
        "{\"a\":1,\"b\":{\"c\":[]}}",
        "{}\n",
    ] {
        assert_eq!(Settings::parse(text).unwrap().render().unwrap(), text);
    }
    assert_eq!(Settings::parse("").unwrap().render().unwrap(), "{}\n");
}

#[test]
fn strip_removes_only_what_it_emptied() {
    let user = r#"{"z": 1, "hooks": {"Stop": [], "PreToolUse": [{"matcher": "Bash", "hooks": []}]}, "a": 2}"#;
    let text = installed(Agent::ClaudeCode, user);
    let mut s = Settings::parse(&text).unwrap();
    assert_eq!(s.strip(|_| true), 28);
    // The user's empty matcher group stays; the `Stop` list hooktrack filled and
    // emptied again goes (the same meaning to Claude Code).
    assert_eq!(
        s.canonical(),
        r#"{"z":1,"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[]}]},"a":2}"#
    );
}

#[test]
fn refusals_name_the_cause() {
    assert!(
        Settings::parse("{")
            .unwrap_err()
            .to_string()
            .starts_with("is not valid JSON (EOF")
    );
    assert_eq!(
        Settings::parse("[]").unwrap_err().to_string(),
        "holds an array, not a JSON object"
    );
    assert_eq!(
        Settings::parse(r#"{"hooks": []}"#).unwrap_err().to_string(),
        "has a `hooks` that is an array, not an object"
    );
    let mut s = Settings::parse(r#"{"hooks": {"Stop": {}}}"#).unwrap();
    assert_eq!(
        s.add(Agent::ClaudeCode, &observer())
            .unwrap_err()
            .to_string(),
        "has a `hooks.Stop` that is an object, not a list of matcher groups"
    );
}
