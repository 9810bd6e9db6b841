//! The documentation names every counter the code can bump.

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
