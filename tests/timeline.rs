//! Snapshots of the replay timeline of every campaign in `corpus/`.

use hooktrack::Format;

use crate::support::replay_file;

#[test]
fn corpus_timelines() {
    insta::glob!("../corpus", "*/*.ndjson", |path| {
        let (_, text) = replay_file(path, Format::Text);
        insta::assert_snapshot!(text);
    });
}
