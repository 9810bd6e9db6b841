use std::path::{Path, PathBuf};

use hooktrack_core::agent::ConfigFormat;

use super::*;
use crate::install::{Destination, Route, facts};

/// Every agent whose hooks are a JSON hooks table.
fn json_agents() -> Vec<Agent> {
    let agents: Vec<Agent> = Agent::ALL
        .into_iter()
        .filter(|a| a.config().format == ConfigFormat::JsonHooks)
        .collect();
    assert!(!agents.is_empty());
    agents
}

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
    edit(agent, Path::new("settings.json"), text, &observer())
        .unwrap()
        .text
}

#[test]
fn every_agent_validates_its_own_render() {
    for agent in json_agents() {
        let text = installed(agent, "");
        let v = validate(&text, agent, Some(&observer()), None).unwrap();
        assert_eq!(v.ours, agent.descriptor().hook_events_for(None).len());
        assert_eq!(v.generation, Some(3));
        assert_eq!(validate(&text, agent, None, None).unwrap(), v);
    }
}

#[test]
fn a_changed_entry_is_a_violation() {
    for agent in json_agents() {
        let text = installed(agent, "");
        let install = agent.descriptor().install;
        let second = install.timeout_unit.per_second();
        let worse = text.replace(
            &format!("\"timeout\": {}", install.timeout),
            &format!("\"timeout\": {}", second - 1),
        );
        let expect = format!(
            "not an integer in {}..={} ({})",
            second,
            600 * second,
            install.timeout_unit.name()
        );
        let err = validate(&worse, agent, None, None).unwrap_err();
        assert!(err.contains(&expect), "{agent}: {err:?}");
        let other = text.replacen("--generation 3 ", "--generation 4 ", 1);
        let err = validate(&other, agent, Some(&observer()), None).unwrap_err();
        assert!(err.contains("not the one rendered"), "{agent}: {err:?}");
        let err = validate(&other, agent, None, None).unwrap_err();
        assert!(err.contains("more than one generation"), "{agent}: {err:?}");
        // Out from under the every-occurrence matcher (or the missing one).
        let mut settings: serde_json::Value = serde_json::from_str(&text).unwrap();
        settings["hooks"][agent.hook_events()[0]][0]["matcher"] = "Bash".into();
        let moved = settings.to_string();
        let err = validate(&moved, agent, None, None).unwrap_err();
        assert!(err.contains("empty matcher"), "{agent}: {err:?}");
    }
}

/// hooktrack's entry on an event the agent does not fire is a violation, whichever way
/// the agent reads the events it does not know.
#[test]
fn an_entry_on_an_event_the_agent_lacks_is_a_violation() {
    let mut pairs = 0;
    for agent in json_agents() {
        for other in json_agents() {
            let Some(extra) = other
                .hook_events()
                .iter()
                .find(|e| !agent.hook_events().contains(e))
            else {
                continue;
            };
            // hooktrack's own group, copied to the event the agent lacks.
            let mut settings: serde_json::Value =
                serde_json::from_str(&installed(agent, "")).unwrap();
            let first = agent.hook_events()[0];
            let group = settings["hooks"][first].clone();
            settings["hooks"][*extra] = group;
            let text = settings.to_string();
            let err = validate(&text, agent, None, None).unwrap_err();
            let expect = format!(
                "a hooktrack entry on `{extra}`, which is not one of {}'s {} events",
                agent.label(),
                agent.hook_events().len()
            );
            assert!(
                err.contains(&expect),
                "{agent} with {other}'s {extra}: {err:?}"
            );
            pairs += 1;
        }
    }
    assert!(pairs > 0);
}

/// What makes each agent ignore the whole file, as its install facts say.
#[test]
fn what_voids_the_file_for_each_agent() {
    let bad_entry = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#;
    let no_hooks = r#"{"hooks": {"Stop": [{"matcher": "x"}]}}"#;
    let float = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1.5}]}]}}"#;
    let script = r#"{"hooks": {"Stop": [{"hooks": [{"type": "script"}]}]}}"#;
    let extra = r#"{"hooks": {}, "version": 1}"#;
    let unknown = r#"{"hooks": {"Later": 3}}"#;
    for agent in json_agents() {
        let install = agent.descriptor().install;
        let schema = install.schema;
        let strict = facts::strict_about(agent, "Stop");
        let voids = |text: &str| validate(text, agent, None, None).err();
        let err = voids(bad_entry);
        assert_eq!(err.is_some(), strict, "{agent}: {err:?}");
        if let Some(err) = err {
            assert!(err.contains("`command` is missing"), "{agent}: {err:?}");
            assert!(err.contains(install.strictness), "{agent}: {err:?}");
        }
        let err = voids(no_hooks);
        assert_eq!(err.is_some(), strict && !schema.hooks_optional, "{agent}");
        if let Some(err) = err {
            assert!(err.contains("`hooks` is missing"), "{agent}: {err:?}");
        }
        let err = voids(float);
        assert_eq!(err.is_some(), strict && schema.whole_timeouts, "{agent}");
        if let Some(err) = err {
            assert!(err.contains("whole number"), "{agent}: {err:?}");
        }
        let err = voids(script);
        let known = schema.entry_types.is_none_or(|t| t.contains(&"script"));
        assert_eq!(err.is_some(), strict && !known, "{agent}");
        let err = voids(extra);
        let refused = install
            .top_level_keys
            .is_some_and(|keys| !keys.contains(&"version"));
        assert_eq!(err.is_some(), refused, "{agent}");
        if let Some(err) = err {
            assert!(err.contains("`version`"), "{agent}: {err:?}");
        }
        // An event name the agent does not know: only an agent strict about every event
        // reads it.
        let err = voids(unknown);
        assert_eq!(
            err.is_some(),
            facts::strict_about(agent, "Later"),
            "{agent}"
        );
        for switch in install.off_switches {
            let mut doc = serde_json::json!(switch.off_when);
            for key in switch.path.iter().rev() {
                doc = serde_json::json!({ *key: doc });
            }
            let err = voids(&doc.to_string());
            let err = err.unwrap_or_else(|| panic!("{agent}: {doc}"));
            assert!(err.contains("runs no hook"), "{agent}: {err:?}");
            assert!(err.contains(switch.why), "{agent}: {err:?}");
        }
    }
}

/// Files no serializer writes: numbers past f64, duplicate keys, `\u` escapes, odd
/// spacing, tabs, CRLF, one line, no final newline, the user's own hooks. Installed, every
/// byte of them is still there in order; removed again, the file is what it was. `@EVENT@`
/// is the agent's first event. (A list or `hooks` object hooktrack filled and emptied
/// again goes, as `strip_removes_only_what_it_emptied` shows, and the blank inside an
/// empty object it filled is not kept: `{ }` comes back as `{}`.)
const ODD_FILES: &[&str] = &[
    "{\n  \"big\": 123456789012345678901234567890,\n  \"f\": 1.0e+2,\n  \"neg\": -0\n}\n",
    "{\"a\": 1, \"a\": 2,\n \"hooks\": {\"@EVENT@\": []}, \"hooks\": {\"@EVENT@\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}]}}",
    "{ \"k\\u00e9y\" : \"\\u00e9\\ud83d\\ude00\\/\" ,\n\n\n   \"x\"  :[ 1 ,2 ] }\n\n",
    "{\t\"theme\":\"dark\",\n\t\"model\" : \"x\"}",
    "{\r\n\t\"a\": 1\r\n}\r\n",
    "{\"a\":1,\"b\":{\"c\":[]}}",
    "{}\n",
    "{}",
    "  {}  ",
    "{\n    \"hooks\": {\n        \"@EVENT@\": [\n            {\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}\n        ]\n    }\n}\n",
];

#[test]
fn install_and_removal_keep_every_byte_outside_hooktracks_entries() {
    for agent in json_agents() {
        for text in ODD_FILES {
            let text = &text.replace("@EVENT@", agent.hook_events()[0]);
            let with = installed(agent, text);
            // An agent that reads no top-level key of these has no business with them.
            if facts::top_level_keys(agent).is_none() {
                validate(&with, agent, Some(&observer()), None)
                    .unwrap_or_else(|e| panic!("{agent} {text:?}: {e}\n{with}"));
            }
            // Every byte of the user's, in order, in the installed text.
            let mut rest = with.as_str();
            for c in text.chars() {
                let at = rest
                    .find(c)
                    .unwrap_or_else(|| panic!("{agent} {text:?}: {c:?} gone\n{with}"));
                rest = &rest[at + c.len_utf8()..];
            }
            for kept in ["123456789012345678901234567890", "\\u00e9", "1.0e+2"] {
                assert_eq!(with.contains(kept), text.contains(kept), "{agent}: {with}");
            }
            let Removal::Removed { text: back, .. } =
                remove(Path::new("settings.json"), &with, None).unwrap()
            else {
                panic!("{agent} {text:?}: nothing removed");
            };
            assert_eq!(&back, text, "{agent}");
            // Only the last of duplicate keys counts, to the agent and to the install.
            if text.contains("\"a\": 2") {
                assert!(
                    with.contains(
                        "{\"@EVENT@\": []}"
                            .replace("@EVENT@", agent.hook_events()[0])
                            .as_str()
                    ),
                    "{with}"
                );
            }
            // Installed twice, the same text.
            assert_eq!(installed(agent, &with), with, "{agent} {text:?}");
        }
    }
}

/// An indented file gets hooktrack's groups laid out as its own lines are.
#[test]
fn added_entries_follow_the_files_indent() {
    let agent = json_agents()[0];
    let text = "{\n\t\"a\": 1\n}\n";
    let with = installed(agent, text);
    assert!(
        with.starts_with("{\n\t\"a\": 1,\n\t\"hooks\": {\n\t\t\""),
        "{with}"
    );
    assert!(with.ends_with("\n\t}\n}\n"), "{with}");
    let compact = installed(agent, "{\"a\":1}");
    assert_eq!(compact.lines().count(), 1, "{compact}");
    let crlf = installed(agent, "{\r\n  \"a\": 1\r\n}\r\n");
    assert!(!crlf.replace("\r\n", "").contains('\n'), "{crlf:?}");
    assert_eq!(installed(agent, ""), installed(agent, "{}\n"));
}

/// Empty containers an install fills (`{"hooks": {}}`, an empty event list, `{ }`): the written text passes the read-back, and what the
/// read-back compares against is the user's file less those containers, which the
/// removal takes out with hooktrack's last entry.
#[test]
fn settings_holding_an_empty_hooks_object_pass_the_read_back() {
    // (file, what it is once the install is removed again)
    const EMPTIES: &[(&str, &str)] = &[
        ("{\"hooks\": {}}", "{}"),
        (
            "{\"hooks\": {}, \"description\": 1}",
            "{\"description\": 1}",
        ),
        (
            "{\n  \"description\": 1,\n  \"hooks\": {}\n}\n",
            "{\n  \"description\": 1\n}\n",
        ),
        ("{\n  \"hooks\": {\n  }\n}\n", "{}\n"),
        ("{ }", "{}"),
        ("{\"hooks\": {\"@EVENT@\": []}}", "{}"),
        (
            "{\"hooks\": {\"@EVENT@\": [], \"Mine\": []}}",
            "{\"hooks\": {\"Mine\": []}}",
        ),
    ];
    for agent in json_agents() {
        for (text, removed) in EMPTIES {
            let text = &text.replace("@EVENT@", agent.hook_events()[0]);
            let edit = edit(agent, Path::new("settings.json"), text, &observer())
                .unwrap_or_else(|e| panic!("{agent} {text:?}: {e}"));
            assert_eq!(&edit.outside, removed, "{agent} {text:?}");
            read_back(agent, &edit.text, &observer(), &edit.outside)
                .unwrap_or_else(|e| panic!("{agent} {text:?}: {e}\n{}", edit.text));
            let Removal::Removed { text: back, .. } =
                remove(Path::new("settings.json"), &edit.text, None).unwrap()
            else {
                panic!("{agent} {text:?}: nothing removed");
            };
            assert_eq!(&back, removed, "{agent} {text:?}");
        }
    }
}

/// The edit's own check, before anything is written: what it keeps of the user's text
/// may lose an empty container it filled, never a setting.
#[test]
fn an_edit_that_loses_more_than_an_empty_hooks_container_is_refused() {
    // (the user's text, what an edit kept of it, accepted)
    const CASES: &[(&str, &str, bool)] = &[
        ("{\"hooks\": {}, \"a\": 1}", "{\"a\": 1}", true),
        ("{\"hooks\": {\"Stop\": []}}", "{}", true),
        ("{ }", "{}", true),
        // A setting lost or changed beside the empty container.
        ("{\"hooks\": {}, \"a\": 1}", "{\"a\": 2}", false),
        ("{\"hooks\": {}, \"a\": 1}", "{}", false),
        ("{\"hooks\": {\"Mine\": [{\"hooks\": []}]}}", "{}", false),
        // No empty container: nothing but the very bytes will do.
        ("{\"a\": 1}", "{\"a\":1}", false),
    ];
    for (user, kept, accepted) in CASES {
        let ok = has_empty_hooks(user) && same_but_empty_hooks(kept, user);
        assert_eq!(ok, *accepted, "{user:?} kept as {kept:?}");
    }
}

#[test]
fn strip_removes_only_what_it_emptied() {
    let user = r#"{"z": 1, "hooks": {"Stop": [], "PreToolUse": [{"matcher": "Bash", "hooks": []}]}, "a": 2}"#;
    let Some(agent) = json_agents()
        .into_iter()
        .find(|a| a.descriptor().install.schema.matcher && a.hook_events().contains(&"Stop"))
    else {
        panic!("no agent with a `Stop` event and matcher groups");
    };
    let text = installed(agent, user);
    let (stripped, removed) = splice::strip(&text, |_| true).unwrap();
    assert_eq!(removed, agent.descriptor().hook_events_for(None).len());
    // The user's empty matcher group stays; the `Stop` list hooktrack filled and
    // emptied again goes (the same meaning to Claude Code).
    assert_eq!(
        stripped,
        r#"{"z": 1, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": []}]}, "a": 2}"#
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
    for agent in json_agents() {
        let event = agent.hook_events()[0];
        let text = format!(r#"{{"hooks": {{"{event}": {{}}}}}}"#);
        assert_eq!(
            splice::add(&text, agent, &observer())
                .unwrap_err()
                .to_string(),
            format!("has a `hooks.{event}` that is an object, not a list of matcher groups")
        );
    }
}
