//! "No other crate matches on agents" (docs/ARCHITECTURE.md): what an agent is lives in
//! `crates/hooktrack-core/src/agents/` (and its registration in `agent.rs`). Everywhere
//! else, the code (unit tests included) reads the descriptor: no `Agent::<Variant>`, no
//! `match` or comparison on an agent's name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hooktrack::Agent;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where the agents are allowed to be named one by one.
const AGENTS_HOME: [&str; 2] = [
    "crates/hooktrack-core/src/agents/",
    "crates/hooktrack-core/src/agent.rs",
];

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The agents' folders under `crates/hooktrack-core/src/agents/` (`kimi_code`, `pi`, ...).
fn agent_folders() -> BTreeSet<String> {
    std::fs::read_dir(root().join(AGENTS_HOME[0]))
        .expect("the agents' folder")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// What picks out one agent: its names and its folder.
struct Known {
    names: BTreeSet<&'static str>,
    folders: BTreeSet<String>,
}

fn known() -> Known {
    let known = Known {
        names: agent_names(),
        folders: agent_folders(),
    };
    // One folder per agent.
    assert_eq!(known.folders.len(), Agent::ALL.len(), "{:?}", known.folders);
    known
}

/// Every name an agent answers to or is stored under, and every program that starts one.
fn agent_names() -> BTreeSet<&'static str> {
    Agent::ALL
        .into_iter()
        .flat_map(|a| {
            [a.name(), a.store_name()]
                .into_iter()
                .chain(a.aliases().iter().copied())
                .chain(a.descriptor().programs.iter().copied())
        })
        .collect()
}

/// What on `line` picks out one agent: an `Agent::<Variant>` (a variant is spelled in
/// CamelCase; `Agent::ALL` and `Agent::ASSUMED` are not one agent), an import of the
/// variants, a path into one agent's folder (`agents::kimi_code::FAMILY`), or a
/// comparison or match arm on a name of an agent.
fn picks_an_agent(line: &str, known: &Known) -> Option<String> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return None;
    }
    for (at, _) in code.match_indices("Agent::") {
        let after = &code[at + "Agent::".len()..];
        let mut chars = after.chars();
        match (chars.next(), chars.next()) {
            (Some('{' | '*'), _) => return Some(format!("imports {}", after)),
            (Some(first), Some(second)) if first.is_ascii_uppercase() && second.is_lowercase() => {
                let variant: String = after
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                return Some(format!("Agent::{variant}"));
            }
            _ => {}
        }
    }
    for (at, _) in code.match_indices("agents::") {
        let after = &code[at + "agents::".len()..];
        let folder: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if known.folders.contains(&folder) {
            return Some(format!("agents::{folder}"));
        }
    }
    for name in &known.names {
        let quoted = format!("\"{name}\"");
        let compared = [
            format!("== {quoted}"),
            format!("!= {quoted}"),
            format!("{quoted} =="),
            format!("{quoted} !="),
            format!("{quoted} =>"),
            format!("{quoted} |"),
        ];
        if compared.iter().any(|c| code.contains(c.as_str())) {
            return Some(format!("compares with the agent name {quoted}"));
        }
    }
    None
}

/// Which lines of a file are scanned.
#[derive(Clone, Copy, PartialEq)]
enum Scope {
    /// Every line, unit tests included.
    Everything,
    /// The code before a file's unit tests (`#[cfg(test)]`), in files other than
    /// `tests.rs`.
    Code,
}

/// The lines of the files under `dirs` (relative to the repository) that pick out one
/// agent, outside the agents' own folder: `file:line: what`.
fn agent_picks(dirs: &[&str], scope: Scope) -> Vec<String> {
    let known = known();
    let mut found = Vec::new();
    for dir in dirs {
        for path in rust_files(&root().join(dir)) {
            let relative = path
                .strip_prefix(root())
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            if AGENTS_HOME.iter().any(|home| relative.starts_with(home)) {
                continue;
            }
            if scope == Scope::Code && path.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            let lines = text
                .lines()
                .take_while(|l| scope == Scope::Everything || l.trim() != "#[cfg(test)]");
            for (number, line) in lines.enumerate() {
                if let Some(what) = picks_an_agent(line, &known) {
                    found.push(format!("{relative}:{}: {what}", number + 1));
                }
            }
        }
    }
    found
}

#[test]
fn the_scan_sees_an_agent_picked_out_and_lets_the_list_pass() {
    let known = known();
    for line in [
        "    if agent == Agent::Pi {",
        "        Agent::OpenCode => Some(&PLUGIN),",
        "use hooktrack_core::agent::Agent::{self, Pi};",
        "    if name == \"claude\" {",
        "        \"opencode\" => 3,",
        "use hooktrack_core::agents::kimi_code::FAMILY as KIMI;",
        "    let x = crate::agents::pi::PLUGIN_LOADING;",
    ] {
        assert!(picks_an_agent(line, &known).is_some(), "{line}");
    }
    for line in [
        "    for agent in Agent::ALL {",
        "    provider: Agent::ASSUMED,",
        "    // Agent::Pi in a comment",
        "    let agent: Agent = choice;",
        "    assert_eq!(v[7], \"claude-code active 10s\");",
        "use hooktrack_core::agents::{Family, InstalledSign, Majors};",
    ] {
        assert_eq!(picks_an_agent(line, &known), None, "{line}");
    }
}

/// The edges and the facade (the producer, the live crate, `src/`, their unit tests too)
/// and the rest of the core's code read what an agent is from its descriptor. (The core's
/// own unit tests feed recorded lines of named agents to its correlator and classifiers.)
#[test]
fn no_code_outside_the_agents_folder_picks_out_an_agent() {
    let mut found = agent_picks(
        &[
            "crates/hooktrack-producer/src",
            "crates/hooktrack-live/src",
            "src",
        ],
        Scope::Everything,
    );
    found.extend(agent_picks(&["crates/hooktrack-core/src"], Scope::Code));
    assert!(
        found.is_empty(),
        "agent knowledge outside crates/hooktrack-core/src/agents/ (use the descriptor, or \
         select from Agent::ALL by a descriptor property):\n{}",
        found.join("\n")
    );
}
