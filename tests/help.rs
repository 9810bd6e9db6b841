//! Help and README name every agent and every flag: each list is made from `Agent::ALL`
//! or compared with what the binary prints, so that an agent or a flag added later cannot
//! be missing from them.

use std::collections::BTreeSet;
use std::process::Command;

use hooktrack::Agent;

const COMMANDS: [&[&str]; 10] = [
    &[],
    &["replay"],
    &["watch"],
    &["session"],
    &["setup"],
    &["install"],
    &["uninstall"],
    &["check"],
    &["collect"],
    &["emit"],
];

fn help(command: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hooktrack"))
        .args(command)
        .arg("--help")
        .output()
        .expect("run hooktrack");
    assert!(
        out.status.success(),
        "{command:?} --help: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The paragraph of one option in a long help: from its line to the next option's.
fn option_paragraph<'a>(help: &'a str, flag: &str) -> &'a str {
    let start = help
        .find(&format!("      {flag} <"))
        .unwrap_or_else(|| panic!("{flag} is not in the help:\n{help}"));
    let rest = &help[start + flag.len() + 6..];
    let end = rest.find("\n      --").unwrap_or(rest.len());
    &rest[..end]
}

/// The flags a help prints, `--help` and `--version` aside.
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter_map(|line| line.strip_prefix("-h, ").or(Some(line)))
        .filter_map(|line| line.strip_prefix("--"))
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            format!("--{name}")
        })
        .filter(|flag| flag != "--help" && flag != "--version")
        .collect()
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README")
}

/// The README's `## Usage` block (the first fenced block under that heading).
fn readme_usage(readme: &str) -> String {
    let section = &readme[readme.find("\n## Usage\n").expect("a Usage section")..];
    let open = section.find("```\n").expect("a fenced block") + 4;
    let close = section[open..].find("```").expect("a closed block");
    section[open..open + close].to_owned()
}

#[test]
fn every_commands_help_names_every_agent() {
    for command in COMMANDS {
        let text = help(command);
        for agent in Agent::ALL {
            assert!(
                text.contains(agent.label()),
                "`hooktrack {} --help` does not name {}:\n{text}",
                command.join(" "),
                agent.label()
            );
        }
    }
}

#[test]
fn the_flags_taking_an_agent_name_every_name_a_user_types() {
    for (command, flag) in [
        (&["replay"][..], "--provider"),
        (&["watch"][..], "--provider"),
        (&["session"][..], "--agent"),
    ] {
        let text = help(command);
        let paragraph = option_paragraph(&text, flag);
        for agent in Agent::ALL {
            assert!(
                paragraph.contains(agent.typed_name()),
                "{command:?} {flag} does not take {}:\n{paragraph}",
                agent.typed_name()
            );
        }
    }
    for command in ["collect", "emit"] {
        let text = help(&[command]);
        let paragraph = option_paragraph(&text, "--provider");
        for agent in Agent::ALL {
            assert!(
                paragraph.contains(&format!("{} (", agent.store_name())),
                "{command} --provider does not name the store {}:\n{paragraph}",
                agent.store_name()
            );
        }
    }
}

#[test]
fn home_names_each_agents_home_variable() {
    for command in ["session", "install", "uninstall", "check"] {
        let text = help(&[command]);
        let paragraph = option_paragraph(&text, "--home");
        for agent in Agent::ALL {
            let var = agent
                .config()
                .home_var()
                .map(|v| format!("{} ${v}", agent.typed_name()));
            if let Some(var) = var {
                assert!(
                    paragraph.contains(&var),
                    "{command} --home does not say `{var}`:\n{paragraph}"
                );
            }
        }
    }
}

#[test]
fn the_readme_usage_names_every_watch_flag_and_no_other() {
    let usage = readme_usage(&readme());
    let watch_block: String = usage
        .lines()
        .skip_while(|l| !l.starts_with("hooktrack watch"))
        .skip(1)
        .take_while(|l| !l.starts_with("hooktrack "))
        .map(|l| l.split('#').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let in_readme = flags_in_help(&watch_block);
    let in_help = flags_in_help(&help(&["watch"]));
    assert!(
        in_help.len() >= 10,
        "too few flags read from watch --help: {in_help:?}"
    );
    assert_eq!(
        in_readme, in_help,
        "the README's Usage and `watch --help` name different flags"
    );
}

#[test]
fn the_readme_usage_names_every_agent() {
    let usage = readme_usage(&readme());
    let agents_line = usage
        .lines()
        .find(|l| l.starts_with("AGENT:"))
        .expect("an AGENT: line in Usage");
    for agent in Agent::ALL {
        assert!(
            agents_line
                .split([':', ',', ' '])
                .any(|w| w == agent.typed_name()),
            "the README's Usage does not name {}",
            agent.typed_name()
        );
    }
}

#[test]
fn the_readme_feature_table_has_a_row_per_agent() {
    let readme = readme();
    let header = "| agent | hooks alone | session file | pane |";
    let start = readme.find(header).expect("the feature table");
    let rows: Vec<&str> = readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    for agent in Agent::ALL {
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("| {} |", agent.label())));
        assert!(row.is_some(), "no feature-table row for {}", agent.label());
    }
    assert_eq!(rows.len(), Agent::ALL.len(), "one row per agent: {rows:?}");
}

/// Every `@hooktrack_…` name in the sources under `dir`.
fn tmux_options_in(dir: &std::path::Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            tmux_options_in(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            for (at, _) in text.match_indices("@hooktrack_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                // `@hooktrack_*` in a comment names them all, not one.
                if !name.ends_with('_') {
                    found.insert(format!("@{name}"));
                }
            }
        }
    }
}

#[test]
fn docs_tmux_lists_every_option_hooktrack_sets_and_every_value_of_the_agent() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tmux.md"))
        .expect("docs/tmux.md");
    let mut in_code = BTreeSet::new();
    tmux_options_in(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut in_code,
    );
    assert!(in_code.len() >= 9, "too few options found: {in_code:?}");
    let rows: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("| `@hooktrack_"))
        .collect();
    let in_doc: BTreeSet<String> = rows
        .iter()
        .filter_map(|r| r.split('`').nth(1))
        .map(str::to_owned)
        .collect();
    assert_eq!(in_doc, in_code, "docs/tmux.md's table and the code");
    let agent_row = rows
        .iter()
        .find(|r| r.starts_with("| `@hooktrack_agent` |"))
        .expect("the agent's row");
    for agent in Agent::ALL {
        assert!(
            agent_row.contains(&format!("`{}`", agent.name())),
            "@hooktrack_agent's values lack {}",
            agent.name()
        );
    }
    assert!(
        doc.contains("| `allow-passthrough` | `on`"),
        "docs/tmux.md names allow-passthrough for --notify"
    );
}

#[test]
fn startup_grace_names_every_agents_headless_command() {
    let text = help(&["session"]);
    let paragraph = option_paragraph(&text, "--startup-grace-ms");
    for agent in Agent::ALL {
        let d = agent.descriptor();
        let how = d.headless.flags.first().or(d.headless.subcommands.first());
        if let (Some(program), Some(how)) = (d.programs.first(), how) {
            assert!(
                paragraph.contains(&format!("`{program} {how}`")),
                "--startup-grace-ms lacks {}'s `{program} {how}`:\n{paragraph}",
                agent.label()
            );
        }
    }
}
