use std::path::PathBuf;

use hooktrack_core::agent::ConfigFormat;

use super::*;
use crate::install::{Destination, Route};

/// Every agent whose hooks are Kimi's TOML block.
fn toml_agents() -> Vec<Agent> {
    let agents: Vec<Agent> = Agent::ALL
        .into_iter()
        .filter(|a| a.config().format == ConfigFormat::TomlHooks)
        .collect();
    assert!(!agents.is_empty());
    agents
}

/// Whether the agent reads its entries with Kimi Code's one strict schema.
fn strict(agent: Agent) -> bool {
    agent.descriptor().install.unknown_entry_keys_fatal
}

fn observer() -> Observer {
    Observer {
        emitter: PathBuf::from("/opt/it's here/hooktrack"),
        route: Route::Argv(Destination {
            url: "http://127.0.0.1:4242/events".to_owned(),
            dir: PathBuf::from("/s/hook-observation/kimi"),
            generation: 3,
        }),
        agent_version: None,
    }
}

#[test]
fn the_block_parses_and_validates_for_every_agent() {
    for variant in toml_agents() {
        let text = merge_block(variant, &observer(), "", None);
        let v = validate(&text, variant, Some(&observer())).unwrap();
        assert_eq!(v.ours, variant.hook_events().len());
        let block = find_blocks(&text).unwrap().scoped.unwrap();
        assert_eq!(block.generation, Some(3));
        assert_eq!((block.start, block.end), (0, text.len()));
    }
}

#[test]
fn the_command_survives_toml_and_shell_quoting() {
    for agent in toml_agents() {
        let text = merge_block(agent, &observer(), "", None);
        let table: toml::Table = toml::from_str(&text).unwrap();
        let first = &table["hooks"].as_array().unwrap()[0];
        assert_eq!(
            first["command"].as_str().unwrap(),
            format!(
                "'/opt/it'\\''s here/hooktrack' emit --url 'http://127.0.0.1:4242/events' --dir '/s/hook-observation/kimi' --provider '{}' --generation 3 --event '{}'",
                agent.store_name(),
                first["event"].as_str().unwrap()
            )
        );
    }
}

#[test]
fn a_text_without_final_newline_gets_it_back_on_strip() {
    let base = "a = 1";
    for agent in toml_agents() {
        let merged = merge_block(agent, &observer(), base, None);
        assert!(merged.starts_with(
            "a = 1\n# >>> hooktrack kimi observer (generation 3, newline added) >>>\n"
        ));
        let (stripped, block) = strip_block(&merged, false).unwrap();
        assert_eq!(stripped, base);
        assert_eq!(block.unwrap().generation, Some(3));
    }
}

#[test]
fn replacing_keeps_the_place() {
    let base = "a = 1\n\n[x]\ny = 2\n";
    for agent in toml_agents() {
        let merged = merge_block(agent, &observer(), base, Some(6));
        let (stripped, block) = strip_block(&merged, false).unwrap();
        assert_eq!(stripped, base);
        assert_eq!(block.unwrap().start, 6);
    }
}

#[test]
fn broken_markers_are_named() {
    assert!(
        find_blocks("# >>> hooktrack kimi observer (generation 1) >>>\n")
            .unwrap_err()
            .to_string()
            .contains("no end marker")
    );
    assert!(
        find_blocks("# <<< hooktrack kimi observer <<<\n")
            .unwrap_err()
            .to_string()
            .contains("without a begin marker")
    );
}

fn routed() -> Observer {
    Observer {
        route: Route::Environment,
        ..observer()
    }
}

/// Setup's routed block, then a launch's block after it, on a text without a final newline.
fn both(agent: Agent, base: &str) -> String {
    let with_routed = edit(agent, Path::new("c.toml"), base, &routed())
        .unwrap()
        .text;
    edit(agent, Path::new("c.toml"), &with_routed, &observer())
        .unwrap()
        .text
}

#[test]
fn a_routed_block_and_a_launchs_block_live_side_by_side() {
    let base = "a = 1";
    for agent in toml_agents() {
        let text = both(agent, base);
        let blocks = find_blocks(&text).unwrap();
        let (r, s) = (blocks.routed.unwrap(), blocks.scoped.unwrap());
        assert_eq!((r.generation, s.generation), (None, Some(3)));
        assert!(r.end <= s.start, "the launch's block goes after setup's");
        // Each install replaces only its own kind.
        assert_eq!(
            edit(agent, Path::new("c.toml"), &text, &observer())
                .unwrap()
                .text,
            text
        );
        assert_eq!(
            edit(agent, Path::new("c.toml"), &text, &routed())
                .unwrap()
                .text,
            text
        );
        // Both are checked: every entry of each block.
        let v = check(agent, Path::new("c.toml"), Some(&text)).unwrap();
        assert_eq!(v.ours, 2 * agent.hook_events().len());
        assert_eq!((v.routed, v.generation), (true, Some(3)));
    }
}

#[test]
fn a_second_block_of_one_kind_is_refused() {
    for agent in toml_agents() {
        let routed_twice = format!(
            "{}{}",
            render_block(agent, &routed(), false),
            render_block(agent, &routed(), false)
        );
        assert!(matches!(
            find_blocks(&routed_twice),
            Err(MarkerError::SecondBegin { .. })
        ));
    }
}

#[test]
fn each_removal_takes_its_own_block_and_both_give_the_bytes_back() {
    let base = "a = 1";
    let text_of = |r: Removal| match r {
        Removal::Removed { text, .. } => text,
        other => panic!("{other:?}"),
    };
    let path = Path::new("c.toml");
    for agent in toml_agents() {
        let text = both(agent, base);
        // A launch's cleanup: its generation only; another generation's is kept.
        assert_eq!(
            remove(path, &text, Which::Generation(4)).unwrap(),
            Removal::KeptOther {
                generation: Some(3)
            }
        );
        let launch_gone = text_of(remove(path, &text, Which::Generation(3)).unwrap());
        assert!(text.starts_with(&launch_gone) && launch_gone.len() < text.len());
        assert_eq!(
            text_of(remove(path, &launch_gone, Which::Routed).unwrap()),
            base
        );
        // Setup's undo first: the launch's block keeps its place at the start of a line.
        let setup_gone = text_of(remove(path, &text, Which::Routed).unwrap());
        let blocks = find_blocks(&setup_gone).unwrap();
        assert!(
            blocks.routed.is_none() && blocks.scoped.is_some(),
            "{setup_gone}"
        );
        assert!(validate(&setup_gone, agent, Some(&observer())).is_ok());
        assert_eq!(
            text_of(remove(path, &setup_gone, Which::Generation(3)).unwrap()),
            base
        );
        // `uninstall` without a generation: every block.
        assert_eq!(text_of(remove(path, &text, Which::Any).unwrap()), base);
    }
}

#[test]
fn violations() {
    let entry = |rest: &str| format!("[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\n{rest}");
    for agent in toml_agents() {
        // An event the agent does not fire.
        let event = "NoSuchEvent";
        assert!(!agent.hook_events().contains(&event));
        let bad_event = format!("[[hooks]]\nevent = \"{event}\"\ncommand = \"x\"\n");
        let err = validate(&bad_event, agent, None).unwrap_err();
        let named = format!(
            "not one of {}'s {} events",
            agent.label(),
            agent.hook_events().len()
        );
        assert!(err.contains(&named), "{agent}: {err:?}");
        // An unknown key voids the section only where the descriptor says so.
        let bad_key = validate(&entry("when = 1\n"), agent, None);
        if strict(agent) {
            assert!(
                bad_key.unwrap_err().contains("unknown key `when`"),
                "{agent}"
            );
        } else {
            assert!(bad_key.is_ok(), "{agent}");
        }
        let bad_timeout = validate(&entry("timeout = 0\n"), agent, None);
        assert!(
            bad_timeout.unwrap_err().contains("outside 1..=600"),
            "{agent}"
        );
        // The strict schema takes a float with no fraction (Kimi Code 2.1.0 runs it,
        // `kimi doctor` agrees); otherwise hooktrack keeps asking for an integer.
        let float_timeout = validate(&entry("timeout = 5.0\n"), agent, None);
        assert_eq!(float_timeout.is_ok(), strict(agent), "{agent}");
        assert!(validate("hooks = 3\n", agent, None).is_err(), "{agent}");
        assert!(validate("[[hooks]\n", agent, None).is_err(), "{agent}");
    }
}

/// The strict schema, as Kimi Code 2.1.0 reads its entries (`kimi doctor`, and whether a
/// hook then runs): an empty command voids the section, a float timeout with no fraction
/// is accepted. A lenient agent is asked for an integer.
#[test]
fn strict_entries_are_read_as_the_agent_reads_them() {
    let entry = |rest: &str| format!("[[hooks]]\nevent = \"Stop\"\n{rest}\n");
    for agent in toml_agents() {
        let read = |rest: &str| validate(&entry(rest), agent, None);
        if !strict(agent) {
            assert!(
                read("command = \"true\"\ntimeout = 5.0").is_err(),
                "{agent}"
            );
            continue;
        }
        let err = read("command = \"\"").unwrap_err().to_string();
        assert!(err.contains("`command` is empty"), "{err}");
        assert!(read("command = \"   \"").is_ok());
        assert!(read("command = \"true\"\ntimeout = 5.0").is_ok());
        assert!(read("command = \"true\"\ntimeout = 600.0").is_ok());
        for bad in [
            "timeout = 5.5",
            "timeout = 0.0",
            "timeout = 601.0",
            "timeout = 0",
        ] {
            assert!(
                read(&format!("command = \"true\"\n{bad}")).is_err(),
                "{bad}"
            );
        }
    }
}
