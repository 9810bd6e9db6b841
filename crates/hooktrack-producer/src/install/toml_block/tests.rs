use std::path::PathBuf;

use super::*;
use crate::install::{Destination, Route};

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
fn the_block_parses_and_validates_for_both_variants() {
    for variant in [Agent::KimiCode, Agent::KimiCli] {
        let text = merge_block(variant, &observer(), "", None);
        let v = validate(&text, variant, Some(&observer())).unwrap();
        assert_eq!(v.ours, variant.hook_events().len());
        let block = find_block(&text).unwrap().unwrap();
        assert_eq!(block.generation, Some(3));
        assert_eq!((block.start, block.end), (0, text.len()));
    }
}

#[test]
fn the_command_survives_toml_and_shell_quoting() {
    let text = merge_block(Agent::KimiCli, &observer(), "", None);
    let table: toml::Table = toml::from_str(&text).unwrap();
    let first = &table["hooks"].as_array().unwrap()[0];
    assert_eq!(
        first["command"].as_str().unwrap(),
        "'/opt/it'\\''s here/hooktrack' emit --url 'http://127.0.0.1:4242/events' --dir '/s/hook-observation/kimi' --provider 'kimi-cli' --generation 3 --event 'PreToolUse'"
    );
}

#[test]
fn a_text_without_final_newline_gets_it_back_on_strip() {
    let base = "a = 1";
    let merged = merge_block(Agent::KimiCode, &observer(), base, None);
    assert!(
        merged.starts_with(
            "a = 1\n# >>> hooktrack kimi observer (generation 3, newline added) >>>\n"
        )
    );
    let (stripped, block) = strip_block(&merged).unwrap();
    assert_eq!(stripped, base);
    assert_eq!(block.unwrap().generation, Some(3));
}

#[test]
fn replacing_keeps_the_place() {
    let base = "a = 1\n\n[x]\ny = 2\n";
    let merged = merge_block(Agent::KimiCode, &observer(), base, Some(6));
    let (stripped, block) = strip_block(&merged).unwrap();
    assert_eq!(stripped, base);
    assert_eq!(block.unwrap().start, 6);
}

#[test]
fn broken_markers_are_named() {
    assert!(
        find_block("# >>> hooktrack kimi observer (generation 1) >>>\n")
            .unwrap_err()
            .to_string()
            .contains("no end marker")
    );
    assert!(
        find_block("# <<< hooktrack kimi observer <<<\n")
            .unwrap_err()
            .to_string()
            .contains("without a begin marker")
    );
}

#[test]
fn violations() {
    let bad_event = "[[hooks]]\nevent = \"TurnStarted\"\ncommand = \"x\"\n";
    assert!(
        validate(bad_event, Agent::KimiCli, None)
            .unwrap_err()
            .contains("not one of Kimi CLI 1.x's 13 events")
    );
    assert!(validate(bad_event, Agent::KimiCode, None).is_ok());
    let bad_key = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\nwhen = 1\n";
    assert!(
        validate(bad_key, Agent::KimiCode, None)
            .unwrap_err()
            .contains("unknown key `when`")
    );
    assert!(validate(bad_key, Agent::KimiCli, None).is_ok());
    let bad_timeout = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 0\n";
    assert!(
        validate(bad_timeout, Agent::KimiCode, None)
            .unwrap_err()
            .contains("outside 1..=600")
    );
    let float_timeout = "[[hooks]]\nevent = \"Stop\"\ncommand = \"x\"\ntimeout = 5.0\n";
    // Kimi Code 2.1.0 runs it (`kimi doctor` agrees); for Kimi CLI hooktrack keeps
    // asking for an integer.
    assert!(validate(float_timeout, Agent::KimiCode, None).is_ok());
    assert!(validate(float_timeout, Agent::KimiCli, None).is_err());
    assert!(validate("hooks = 3\n", Agent::KimiCode, None).is_err());
    assert!(validate("[[hooks]\n", Agent::KimiCode, None).is_err());
}

/// Kimi Code 2.1.0's own schema (`kimi doctor`, and whether a hook then runs): an empty
/// command voids the section, a float timeout with no fraction is accepted.
#[test]
fn kimi_code_entries_are_read_as_kimi_code_reads_them() {
    let entry = |rest: &str| format!("[[hooks]]\nevent = \"Stop\"\n{rest}\n");
    let code = |rest: &str| validate(&entry(rest), Agent::KimiCode, None);
    let err = code("command = \"\"").unwrap_err().to_string();
    assert!(err.contains("`command` is empty"), "{err}");
    assert!(code("command = \"   \"").is_ok());
    assert!(code("command = \"true\"\ntimeout = 5.0").is_ok());
    assert!(code("command = \"true\"\ntimeout = 600.0").is_ok());
    for bad in [
        "timeout = 5.5",
        "timeout = 0.0",
        "timeout = 601.0",
        "timeout = 0",
    ] {
        assert!(
            code(&format!("command = \"true\"\n{bad}")).is_err(),
            "{bad}"
        );
    }
    // For Kimi CLI 1.x hooktrack keeps asking for an integer.
    let cli = validate(
        &entry("command = \"true\"\ntimeout = 5.0"),
        Agent::KimiCli,
        None,
    );
    assert!(cli.is_err());
}
