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
