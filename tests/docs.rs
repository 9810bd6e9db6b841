//! The documentation names every counter the code can bump, and the README's first
//! command runs as written.

use hooktrack::Diag;

#[test]
fn posture_doc_lists_every_diagnostic_counter() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/posture.md"))
        .expect("docs/posture.md");
    let missing: Vec<&str> = Diag::ALL
        .iter()
        .map(|d| d.name())
        .filter(|name| !doc.contains(&format!("| `{name}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/posture.md lacks rows for {missing:?}"
    );
}

/// The README's first command, `cargo run --release -- replay CAMPAIGN`, needs cargo to
/// know which of the package's two binaries to run (`hooktrack`, not `hooktrack-hook`),
/// and the campaign to be bundled.
#[test]
fn the_readme_first_command_names_a_bundled_campaign_and_cargo_knows_what_to_run() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run "))
        .expect("a `cargo run` line in the README");
    let campaign = first
        .strip_prefix("cargo run --release -- replay ")
        .and_then(|rest| rest.split_whitespace().next())
        .expect("`cargo run --release -- replay CAMPAIGN`");
    assert!(
        std::path::Path::new(root).join(campaign).is_file(),
        "{campaign} is not in the repository"
    );
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest
            .lines()
            .any(|l| l.trim() == r#"default-run = "hooktrack""#),
        "with two binaries, `cargo run` needs `default-run = \"hooktrack\"` in [package]"
    );
}

/// What `docs/ARCHITECTURE.md` says must stay true: every path it names exists, the files
/// it lists as reading the clock, the environment or writing to stderr are exactly the ones
/// that do, every "Architecture invariant" names the tests that check it, and those tests
/// exist.
mod architecture {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    fn doc() -> String {
        std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md")
    }

    /// The backquoted spans of `text`.
    fn code_spans(text: &str) -> Vec<&str> {
        text.split('`').skip(1).step_by(2).collect()
    }

    /// A span that names a file or folder of the repository: it has a slash or a file
    /// extension we keep, and no spaces, globs or placeholders.
    fn is_path(span: &str) -> bool {
        let plain = !span.contains([' ', '*', '<', '>', '(', ':', '{', '$', '=', ','])
            && !span.starts_with('-')
            && !span.starts_with('~');
        let extension = [".rs", ".md", ".toml", ".js", ".c", ".sh", ".css"]
            .iter()
            .any(|e| span.ends_with(e));
        plain && (extension || span.ends_with('/') || span.contains('/'))
    }

    /// Where a path of a section of the code map is looked for: the repository, the folder
    /// the section's heading names (and its `src/`), and anywhere under the folder the
    /// bullet starts with (`correlate/` — `tools.rs`, `scopes.rs`, ...).
    fn resolve(span: &str, base: Option<&Path>, item: Option<&Path>) -> Option<PathBuf> {
        let span = span.trim_end_matches('/');
        let mut candidates = vec![root().join(span)];
        if let Some(base) = base {
            candidates.push(base.join(span));
            candidates.push(base.join("src").join(span));
        }
        if let Some(found) = candidates.into_iter().find(|p| p.exists()) {
            return Some(found);
        }
        let mut dirs: Vec<PathBuf> = item.into_iter().map(Path::to_path_buf).collect();
        while let Some(dir) = dirs.pop() {
            if dir.join(span).exists() {
                return Some(dir.join(span));
            }
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.path().is_dir() {
                    dirs.push(entry.path());
                }
            }
        }
        None
    }

    #[test]
    fn every_path_the_architecture_doc_names_exists() {
        let doc = doc();
        let mut base: Option<PathBuf> = None;
        let mut missing = Vec::new();
        let mut checked = 0;
        let mut item: Option<PathBuf> = None;
        for (number, line) in doc.lines().enumerate() {
            if let Some(heading) = line.strip_prefix("### ") {
                base = code_spans(heading)
                    .first()
                    .map(|s| root().join(s.trim_end_matches('/')));
                item = None;
                continue;
            }
            if line.starts_with("## ") {
                base = None;
                item = None;
            }
            if line.starts_with("- ") || line.trim().is_empty() {
                // A bullet that starts with a folder: its file names are in that folder.
                item = line
                    .strip_prefix("- `")
                    .and_then(|rest| rest.split('`').next())
                    .and_then(|first| resolve(first, base.as_deref(), None))
                    .filter(|p| p.is_dir());
            }
            for span in code_spans(line).into_iter().filter(|s| is_path(s)) {
                checked += 1;
                if resolve(span, base.as_deref(), item.as_deref()).is_none() {
                    missing.push(format!("line {}: `{span}`", number + 1));
                }
            }
        }
        assert!(
            checked > 50,
            "only {checked} paths found: is the doc's code map there?"
        );
        assert!(
            missing.is_empty(),
            "ARCHITECTURE.md names paths that do not exist: {missing:#?}"
        );
    }

    /// The files under `src/` and `crates/*/src/` whose code contains one of `needles`.
    fn files_containing(needles: &[&str]) -> BTreeSet<String> {
        files_matching(|line| needles.iter().any(|n| line.contains(n)))
    }

    /// The files under `src/` and `crates/*/src/` with a line of code (not a comment, not
    /// the unit tests at the end of a file) that `matches`.
    fn files_matching(matches: impl Fn(&str) -> bool) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        let mut dirs = vec![root().join("src")];
        for entry in std::fs::read_dir(root().join("crates"))
            .expect("crates/")
            .flatten()
        {
            dirs.push(entry.path().join("src"));
        }
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("a source folder").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("a source file");
                    // The code: not its comments, not its unit tests (at the end of a file).
                    let code: Vec<&str> = text
                        .lines()
                        .take_while(|l| l.trim() != "#[cfg(test)]")
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .collect();
                    if code.iter().any(|l| matches(l)) {
                        let relative = path.strip_prefix(root()).expect("under the root");
                        found.insert(relative.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
        found
    }

    /// The paths listed on the doc's line that starts with `- {label}:`.
    fn listed(label: &str) -> BTreeSet<String> {
        let doc = doc();
        let prefix = format!("- {label}:");
        let start = doc
            .find(&prefix)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{prefix}` line"));
        // The item runs to the next item or the end of the list.
        let item = &doc[start + prefix.len()..];
        let end = item
            .find("\n- ")
            .or_else(|| item.find("\n\n"))
            .unwrap_or(item.len());
        code_spans(&item[..end])
            .into_iter()
            .filter(|s| s.ends_with(".rs"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_clock_is_read_only_where_the_architecture_doc_says() {
        let reads = files_containing(&[
            "SystemTime::now",
            "Instant::now",
            "clock_gettime",
            "wall_clock()",
        ]);
        assert_eq!(
            reads,
            listed("Clock"),
            "the files that read the clock (left) differ from ARCHITECTURE.md's list (right)"
        );
        assert!(
            reads
                .iter()
                .all(|f| !f.starts_with("crates/hooktrack-core/"))
        );
    }

    #[test]
    fn the_environment_is_read_only_where_the_architecture_doc_says() {
        let reads = files_containing(&[
            "env::var",
            "env::vars",
            "env::args",
            "env::current_dir",
            "env::home_dir",
            "env::temp_dir",
        ]);
        assert_eq!(
            reads,
            listed("Environment"),
            "the files that read the environment (left) differ from ARCHITECTURE.md's list (right)"
        );
        assert!(
            reads
                .iter()
                .all(|f| !f.starts_with("crates/hooktrack-core/"))
        );
    }

    /// The core is sans-IO: no file, no environment, no process or thread, no clock (the
    /// clock and the environment are also checked against the doc's lists above).
    #[test]
    fn the_core_reads_no_clock_file_or_environment_and_spawns_nothing() {
        let io = files_containing(&[
            "std::fs",
            "fs::",
            "File::",
            "OpenOptions",
            "std::env",
            "env::",
            "Command::new",
            "process::",
            "thread::spawn",
            "SystemTime",
            "Instant",
            "std::net",
            "std::io::stdin",
        ]);
        let core: Vec<&String> = io
            .iter()
            .filter(|f| f.starts_with("crates/hooktrack-core/"))
            .collect();
        assert!(core.is_empty(), "the core does I/O in {core:#?}");
    }

    /// Whether a line of code writes to standard output (or debug-prints to stderr).
    fn prints_to_stdout(line: &str) -> bool {
        let printing = ["print!(", "println!("]
            .iter()
            .any(|m| line.contains(m) && !line.contains(&format!("e{m}")));
        printing || line.contains("dbg!(") || line.contains("stdout()")
    }

    /// Whether a line of code writes to standard error.
    fn prints_to_stderr(line: &str) -> bool {
        line.contains("eprint!(") || line.contains("eprintln!(") || line.contains("stderr()")
    }

    /// The binaries' own code: the CLI, `main.rs` and `entry.rs` it starts from, and the
    /// hook binary.
    fn is_binary(file: &str) -> bool {
        file.starts_with("src/cli/")
            || file.starts_with("src/bin/")
            || file == "src/main.rs"
            || file == "src/entry.rs"
    }

    /// Only the binaries print; in the libraries, only the hook command's last resorts write
    /// to stderr, and they are the doc's list.
    #[test]
    fn nothing_outside_the_binaries_prints() {
        let library = |files: BTreeSet<String>| -> BTreeSet<String> {
            files.into_iter().filter(|f| !is_binary(f)).collect()
        };
        let stdout = library(files_matching(prints_to_stdout));
        assert!(
            stdout.is_empty(),
            "library code writes to stdout (or debug-prints) in {stdout:#?}"
        );
        assert_eq!(
            library(files_matching(prints_to_stderr)),
            listed("Stderr"),
            "the library files that write to stderr (left) differ from ARCHITECTURE.md's list (right)"
        );
    }

    /// The member crates, as a path names them.
    const MEMBER_CRATES: [&str; 3] = ["hooktrack_core", "hooktrack_live", "hooktrack_producer"];

    /// The CLI parses and prints; what it runs is the library's, reached through the facade
    /// only (its unit tests included): no file of `src/cli/` or `src/main.rs` names a member
    /// crate.
    #[test]
    fn the_cli_uses_only_the_facade() {
        let mut naming = BTreeSet::new();
        let mut dirs = vec![root().join("src/cli")];
        let mut files = vec![root().join("src/main.rs")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("src/cli").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 5, "src/cli has {} files?", files.len());
        for path in files {
            let text = std::fs::read_to_string(&path).expect("a source file");
            let code = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| MEMBER_CRATES.iter().any(|c| l.contains(c)));
            if code {
                let relative = path.strip_prefix(root()).expect("under the root");
                naming.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
        assert!(
            naming.is_empty(),
            "the CLI names a member crate in {naming:#?}: use (or add) the facade's re-export"
        );
    }

    /// The async runtime the NATS client needs stays in `src/fleet/`: no other production
    /// source names tokio, the client or an `async fn`.
    #[test]
    fn the_async_runtime_lives_in_the_fleet_alone() {
        let mut dirs = vec![root().join("src")];
        for entry in std::fs::read_dir(root().join("crates"))
            .expect("crates/")
            .flatten()
        {
            dirs.push(entry.path().join("src"));
        }
        let mut naming = BTreeSet::new();
        let mut fleet_files = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("a source file");
                let uses = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .any(|l| {
                        l.contains("tokio") || l.contains("async_nats") || l.contains("async fn")
                    });
                let relative = path.strip_prefix(root()).expect("under the root");
                let relative = relative.to_string_lossy().replace('\\', "/");
                if relative.starts_with("src/fleet/") {
                    fleet_files += usize::from(uses);
                } else if uses {
                    naming.insert(relative);
                }
            }
        }
        assert!(
            fleet_files > 0,
            "src/fleet/ uses no async runtime? the test looks wrong"
        );
        assert!(
            naming.is_empty(),
            "async code outside src/fleet/: {naming:#?}"
        );
    }

    /// `tests/x.rs::name`, `tests/x.rs::module::name` or `crates/c/src/x.rs::name`: the file
    /// and the test function it names.
    fn test_reference(span: &str) -> Option<(&str, &str)> {
        let end = span.find(".rs::")? + 3;
        let name = span.rsplit("::").next()?;
        Some((&span[..end], name))
    }

    /// Whether `file` has a `#[test]` function called `name`.
    fn has_test(file: &Path, name: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(file) else {
            return false;
        };
        let lines: Vec<&str> = text.lines().collect();
        lines.iter().enumerate().any(|(i, line)| {
            line.trim_start().starts_with(&format!("fn {name}("))
                && lines[..i]
                    .iter()
                    .rev()
                    .map(|l| l.trim())
                    .take_while(|l| l.starts_with("#[") || l.starts_with("///"))
                    .any(|l| l == "#[test]")
        })
    }

    /// Every "Architecture invariant" paragraph names at least one test that checks it
    /// ("checked by `tests/….rs::name`"), and every test the doc names that way exists.
    #[test]
    fn every_architecture_invariant_names_an_existing_test() {
        let doc = doc();
        let paragraphs: Vec<&str> = doc.split("\n\n").collect();
        let mut unchecked = Vec::new();
        let mut missing = Vec::new();
        let mut invariants = 0;
        for paragraph in &paragraphs {
            let tests: Vec<(&str, &str)> = paragraph
                .split("checked by")
                .skip(1)
                .flat_map(|after| {
                    // The spans up to the closing parenthesis of "(checked by …)".
                    let until = after.find(')').unwrap_or(after.len());
                    code_spans(&after[..until])
                })
                .filter_map(test_reference)
                .collect();
            if paragraph
                .trim_start()
                .starts_with("**Architecture invariant:**")
            {
                invariants += 1;
                if tests.is_empty() {
                    unchecked.push(paragraph.lines().next().unwrap_or_default().to_owned());
                }
            }
            for (file, name) in tests {
                if !has_test(&root().join(file), name) {
                    missing.push(format!("{file}::{name}"));
                }
            }
        }
        assert!(
            invariants >= 4,
            "only {invariants} architecture invariants found"
        );
        assert!(
            unchecked.is_empty(),
            "architecture invariants that name no test (\"(checked by `tests/….rs::name`)\"): {unchecked:#?}"
        );
        assert!(
            missing.is_empty(),
            "ARCHITECTURE.md names tests that do not exist: {missing:#?}"
        );
    }
}
