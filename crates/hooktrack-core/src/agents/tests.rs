//! Every descriptor is complete and agrees with the others: what a new agent's folder must
//! get right before anything else runs.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::agent::ConfigFormat;
use crate::provider::ProviderChoice;

fn descriptors() -> impl Iterator<Item = &'static Descriptor> {
    Agent::ALL.into_iter().map(Agent::descriptor)
}

#[test]
fn each_descriptor_describes_its_own_agent() {
    for agent in Agent::ALL {
        assert_eq!(agent.descriptor().agent, agent, "{agent:?}");
    }
}

#[test]
fn names_are_set_and_no_two_agents_share_one() {
    let mut seen = BTreeMap::new();
    let mut stores = BTreeSet::new();
    for d in descriptors() {
        assert!(!d.name.is_empty() && !d.label.is_empty(), "{:?}", d.agent);
        assert!(stores.insert(d.store_name), "store name {}", d.store_name);
        for name in std::iter::once(d.name).chain(d.aliases.iter().copied()) {
            if let Some(other) = seen.insert(name, d.agent) {
                panic!("{name} names {other:?} and {:?}", d.agent);
            }
        }
    }
    // A family's name, `auto` and the store names stay clear of the other agents' names.
    for d in descriptors() {
        if let Some(member) = d.family {
            assert!(
                !seen.contains_key(member.family.name),
                "{}",
                member.family.name
            );
        }
        if let Some(owner) = seen.get(d.store_name) {
            assert_eq!(*owner, d.agent, "store name {}", d.store_name);
        }
    }
    assert!(!seen.contains_key("auto"));
}

#[test]
fn hook_events_are_unique_and_every_one_is_mapped_by_the_adapter() {
    for d in descriptors() {
        assert!(!d.hook_events.is_empty(), "{:?}", d.agent);
        let unique: BTreeSet<_> = d.hook_events.iter().collect();
        assert_eq!(unique.len(), d.hook_events.len(), "{:?}", d.agent);
        // The installers subscribe the agent to these: an `Unknown` would be counted as a
        // surprise on every delivery.
        for name in d.hook_events {
            let mut payload = Payload::default();
            let event = (d.normalize)(&Cow::Borrowed(*name), &mut payload);
            assert!(
                !matches!(event, Event::Unknown { .. }),
                "{:?} subscribes to {name} but its adapter does not map it",
                d.agent
            );
        }
    }
}

/// The merge trusts `interrupt_hook`: it must say exactly whether the agent's hook list
/// has an `Interrupt` event.
#[test]
fn interrupt_hook_capability_matches_the_hook_list() {
    for d in descriptors() {
        assert_eq!(
            d.capabilities.interrupt_hook,
            d.hook_events.contains(&"Interrupt"),
            "{:?}",
            d.agent
        );
    }
}

#[test]
fn config_location_and_install_facts_are_complete() {
    for d in descriptors() {
        let agent = d.agent;
        let c = &d.config;
        assert!(
            c.dot_dir.starts_with('.') && !c.file.is_empty(),
            "{agent:?}"
        );
        // Every agent names its home folder by a variable, but Auggie, which has none (its
        // `~/.augment` moves only by a flag, `--augment-cache-dir`).
        assert_eq!(
            c.home_var().is_some(),
            agent != Agent::Auggie,
            "{agent:?}: home variable"
        );
        let i = &d.install;
        let one_second = i.timeout_unit.per_second();
        for (event, timeout) in i.shorter_timeouts {
            assert!(d.hook_events.contains(event), "{agent:?}: {event}");
            assert!(*timeout < i.timeout, "{agent:?}: {event}");
        }
        for event in d.hook_events {
            let t = i.timeout_for(event);
            assert!((one_second..=600 * one_second).contains(&t), "{agent:?}");
        }
        assert!(!i.strictness.is_empty(), "{agent:?}");
        for switch in i.off_switches {
            assert!(
                !switch.path.is_empty() && !switch.why.is_empty(),
                "{agent:?}"
            );
        }
    }
}

/// A plugin agent has its plugin's source, whose placeholders each appear once, and a
/// way to stop plugins the preflight can see; a command-hook agent has none.
#[test]
fn an_agent_has_a_plugin_exactly_when_its_config_is_one() {
    for d in descriptors() {
        let agent = d.agent;
        let is_plugin = d.config.format == ConfigFormat::Plugin;
        assert_eq!(d.plugin.is_some(), is_plugin, "{agent:?}");
        let Some(plugin) = d.plugin else { continue };
        for placeholder in ["@QUEUE@", "@ARGV@", "@EVENTS@"] {
            assert_eq!(
                plugin.source.matches(placeholder).count(),
                1,
                "{agent:?}: {placeholder}"
            );
        }
        let filled = plugin.filled("\"a@EVENTS@\"", "\"e\"");
        assert!(filled.contains("[\"a@EVENTS@\"]"), "{agent:?}");
        assert!(!filled.contains("@ARGV@"), "{agent:?}");
        assert!(!filled.contains("@QUEUE@"), "{agent:?}");
        assert!(filled.contains("function enqueue("), "{agent:?}");
        let loading = plugin.loading;
        assert!(
            !loading.who.is_empty() && !loading.skipped.is_empty(),
            "{agent:?}"
        );
        assert!(
            !loading.env.is_empty() || !loading.flags.is_empty(),
            "{agent:?}: no switch"
        );
        assert_eq!(
            loading.list.is_empty(),
            loading.listed_off.is_empty(),
            "{agent:?}"
        );
        if let Some(exclusion) = plugin.exclusion {
            assert!(
                !exclusion.file.is_empty() && !exclusion.key.is_empty(),
                "{agent:?}"
            );
            assert!(!exclusion.prefixes.is_empty(), "{agent:?}");
        }
    }
}

#[test]
fn preflight_and_launch_facts_are_complete() {
    for d in descriptors() {
        let agent = d.agent;
        assert!(!d.programs.is_empty(), "{agent:?}: no program name");
        let h = &d.headless;
        assert!(
            !h.flags.is_empty() || !h.subcommands.is_empty(),
            "{agent:?}: no headless mode"
        );
        let p = &d.preflight;
        if let Some(trust) = p.hook_trust {
            assert!(d.programs.contains(&trust.program), "{agent:?}");
        }
        if let Some(s) = p.required_setting {
            assert!(s.pointer.starts_with('/'), "{agent:?}");
        }
        if let Some(f) = p.folder_trust {
            assert!(f.enabled_pointer.starts_with('/'), "{agent:?}");
        }
        if let Some(gate) = d.launch_gate {
            assert!(d.programs.contains(&gate.program), "{agent:?}");
        }
    }
}

#[test]
fn detection_rules_are_ranked_apart_and_every_agent_has_one() {
    let mut ranks = BTreeMap::new();
    for d in descriptors() {
        assert!(!d.detect.is_empty(), "{:?} cannot be recognised", d.agent);
        for rule in d.detect {
            if let Some(other) = ranks.insert(rule.rank, d.agent) {
                panic!("rank {} is {other:?}'s and {:?}'s", rule.rank, d.agent);
            }
        }
        assert_eq!(
            d.named_by_row,
            format!("the row names {}", d.agent.typed_name())
        );
    }
}

#[test]
fn transcripts_say_where_they_are() {
    for d in descriptors() {
        if let Some(t) = d.transcript {
            assert!(t.location.contains(".jsonl"), "{:?}", d.agent);
            assert_eq!(
                crate::transcript::classify(d.agent, b"{}"),
                crate::transcript::Entry::Ignored
            );
        }
    }
}

/// A family is one name for several agents told apart by version or by what is on
/// disk: its members share a program and a config format, and exactly one takes the
/// versions no other claims.
#[test]
fn family_members_can_be_told_apart() {
    let mut families: BTreeMap<&str, Vec<&Descriptor>> = BTreeMap::new();
    for d in descriptors() {
        if let Some(m) = d.family {
            families.entry(m.family.name).or_default().push(d);
        }
    }
    for (name, members) in families {
        assert!(members.len() > 1, "the family {name} has one member");
        let others = members
            .iter()
            .filter(|d| d.family.is_some_and(|m| m.majors == Majors::Others))
            .count();
        assert_eq!(others, 1, "{name}");
        for d in &members {
            let m = d.family.expect("a member");
            assert!(!m.installed.is_empty(), "{:?}", d.agent);
            assert!(d.programs.contains(&m.family.program), "{:?}", d.agent);
            assert_eq!(d.config.format, members[0].config.format, "{name}");
            assert_eq!(d.config.file, members[0].config.file, "{name}");
        }
        // Every program name a member answers to starts the family, not one member.
        for program in members[0].programs {
            assert_eq!(
                ProviderChoice::for_program(program),
                Some(ProviderChoice::Kimi),
                "{program}"
            );
        }
    }
}

#[test]
fn each_program_starts_its_agent() {
    for d in descriptors().filter(|d| d.family.is_none()) {
        for program in d.programs {
            assert_eq!(
                ProviderChoice::for_program(program),
                Some(ProviderChoice::Exactly(d.agent))
            );
        }
    }
    assert_eq!(ProviderChoice::for_program("true"), None);
}

#[test]
fn headless_flags_take_their_value_after_an_equals_sign() {
    let gemini = gemini_cli::DESCRIPTOR.headless;
    let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
    assert!(gemini.prompt_at_launch(&args(&["--prompt=hi"])));
    assert!(!gemini.prompt_at_launch(&args(&["--prompts"])));
    assert!(!gemini.prompt_at_launch(&args(&["-pq"])));
    let codex = codex::DESCRIPTOR.headless;
    assert_eq!(
        codex.subcommand(&args(&["-m", "exec", "resume"])),
        Some(&OsString::from("resume"))
    );
}

/// Each agent's headless invocations, as their CLIs take them, hand it its first prompt
/// at launch; the interactive ones wait for the caller's.
#[test]
fn headless_invocations_give_the_prompt_at_launch_and_interactive_ones_do_not() {
    let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
    let headless = [
        (Agent::ClaudeCode, &["-p", "hi"][..]),
        (
            Agent::ClaudeCode,
            &["--print", "--allowedTools", "Bash"][..],
        ),
        (Agent::Codex, &["exec", "--skip-git-repo-check", "hi"][..]),
        (Agent::Codex, &["--model", "m", "-c", "k=v", "e", "hi"][..]),
        (
            Agent::GeminiCli,
            &["-m", "gemini-2.5-flash", "-p", "hi"][..],
        ),
        (Agent::GeminiCli, &["--prompt=hi"][..]),
        (Agent::GeminiCli, &["-i", "hi"][..]),
        (Agent::KimiCli, &["-c", "import sys", "--print"][..]),
        (Agent::KimiCode, &["--prompt", "hi"][..]),
        (Agent::Cline, &["hi"][..]),
        (Agent::Cline, &["-m", "cline-mock", "--json", "hi"][..]),
    ];
    for (agent, a) in headless {
        let headless = agent.descriptor().headless;
        assert!(headless.prompt_at_launch(&args(a)), "{agent:?} {a:?}");
    }
    let interactive = [
        (Agent::ClaudeCode, &[][..]),
        (Agent::ClaudeCode, &["--resume", "x"][..]),
        (Agent::Codex, &[][..]),
        (Agent::Codex, &["resume", "--last"][..]),
        (Agent::Codex, &["-m", "exec"][..]),
        (Agent::GeminiCli, &["-m", "gemini-2.5-flash"][..]),
        (Agent::KimiCode, &["--yolo"][..]),
        (Agent::KimiCli, &[][..]),
        (Agent::Cline, &[][..]),
        (Agent::Cline, &["-i", "-m", "cline-mock"][..]),
    ];
    for (agent, a) in interactive {
        let headless = agent.descriptor().headless;
        assert!(!headless.prompt_at_launch(&args(a)), "{agent:?} {a:?}");
    }
}

#[test]
fn every_agent_has_a_version_window_and_its_newer_events_are_its_own() {
    for d in descriptors() {
        let v = d.versions;
        assert!(d.programs.contains(&v.program), "{:?}", d.agent);
        assert_eq!(
            compare_versions(v.oldest, v.newest).map(|o| o.is_le()),
            Some(true),
            "{:?}",
            d.agent
        );
        for (event, since) in v.events_since {
            assert!(d.hook_events.contains(event), "{:?}: {event}", d.agent);
            assert_eq!(v.standing(since), Standing::Within, "{:?}", d.agent);
        }
    }
}

#[test]
fn claude_code_2_1_197_gets_its_28_events_and_2_1_332_all_32() {
    let d = Agent::ClaudeCode.descriptor();
    let newer = [
        "PreModelSwitch",
        "PostModelSwitch",
        "DirectoryAdded",
        "PreSkillShellCommand",
    ];
    let old = d.hook_events_for(Some("2.1.197"));
    assert_eq!(old.len(), 28);
    assert!(newer.iter().all(|e| !old.contains(e)));
    assert_eq!(d.hook_events_for(Some("2.1.332")).len(), 32);
    assert_eq!(d.hook_events_for(Some("2.1.400 (Claude Code)")).len(), 32);
    // Unknown or unreadable: only what every tested version knows.
    assert_eq!(d.hook_events_for(None), old);
    assert_eq!(d.hook_events_for(Some("dev")), old);
}

#[test]
fn versions_compare_by_number_and_the_window_says_where_one_stands() {
    use std::cmp::Ordering;
    assert_eq!(compare_versions("2.1.33", "2.1.197"), Some(Ordering::Less));
    assert_eq!(
        compare_versions("2.1.332", "2.1.332"),
        Some(Ordering::Equal)
    );
    assert_eq!(compare_versions("v0.61.0", "0.61"), Some(Ordering::Greater));
    assert_eq!(compare_versions("", "1.0"), None);
    let v = Agent::ClaudeCode.descriptor().versions;
    assert_eq!(v.standing("2.1.250"), Standing::Within);
    assert_eq!(v.standing("2.1.100"), Standing::Older);
    assert_eq!(v.standing("2.2.0"), Standing::Newer);
    assert_eq!(v.standing("latest"), Standing::Unreadable);
    assert_eq!(
        v.verdict("Claude Code", "claude", Some("2.1.332")),
        "Claude Code 2.1.332: within the tested window 2.1.197–2.1.332"
    );
    let newer = v.verdict("Claude Code", "claude", Some("2.1.340"));
    assert!(
        newer.starts_with(
            "Claude Code 2.1.340: newer than the tested window 2.1.197–2.1.332; hooktrack goes on"
        ),
        "{newer}"
    );
    assert!(newer.contains("scripts/drift.sh claude 2.1.340"), "{newer}");
    assert!(
        v.verdict("Claude Code", "claude", None)
            .contains("`claude --version` gave no version")
    );
    assert_eq!(Agent::Codex.descriptor().versions.window(), "0.171.0");
}

#[test]
fn the_model_switch_is_a_session_fact_not_an_unknown_event() {
    let line = r#"{"session_id":"s","hook_event_name":"PostModelSwitch","from_model":"claude-opus-5-5","to_model":"claude-sonnet-5-5"}"#;
    let mut payload: Payload<'_> = serde_json::from_str(line).expect("payload");
    let event =
        (Agent::ClaudeCode.descriptor().normalize)(&Cow::Borrowed("PostModelSwitch"), &mut payload);
    assert_eq!(event.kind(), "model_switched");
    match event {
        Event::ModelSwitched { from, to, done } => {
            assert_eq!(from.as_deref(), Some("claude-opus-5-5"));
            assert_eq!(to.as_deref(), Some("claude-sonnet-5-5"));
            assert!(done);
        }
        other => panic!("{other:?}"),
    }
}

/// The queue's loss row is the one the readers count: its event name is the core's.
#[test]
fn the_plugin_queues_loss_row_is_named_as_the_readers_expect() {
    let quoted = format!("const LOST = \"{}\";", crate::envelope::EVENTS_LOST);
    assert_eq!(super::PLUGIN_QUEUE.matches(&quoted).count(), 1);
    for field in [
        "hook_event_name: LOST",
        "session_id:",
        "lost,",
        "lost_bytes:",
    ] {
        assert!(super::PLUGIN_QUEUE.contains(field), "{field}");
    }
}
