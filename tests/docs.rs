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

/// What `docs/ARCHITECTURE.md` says must stay true: every path it names exists, and the
/// files it lists as reading the clock or the environment are exactly the ones that do.
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

    /// The files under `src/` and `crates/*/src/` whose text contains one of `needles`.
    fn files_containing(needles: &[&str]) -> BTreeSet<String> {
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
                    if code.iter().any(|l| needles.iter().any(|n| l.contains(n))) {
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
}
