//! The `hooktrack` binary as a user runs it.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::corpus_dir;

fn hooktrack() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hooktrack"))
}

#[test]
fn missing_file_is_one_clear_line_and_nonzero_exit() {
    let out = hooktrack()
        .args(["replay", "no/such/campaign.ndjson"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no/such/campaign.ndjson"), "{stderr}");
    assert!(stderr.contains("No such file"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_directory_is_an_unreadable_file() {
    let out = hooktrack()
        .args(["replay", "corpus"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("hooktrack: error: cannot read corpus"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn json_format_is_one_document_with_turns_final_and_diagnostics() {
    let file = corpus_dir().join("kimi-code/escape-interrupt.ndjson");
    let out = hooktrack()
        .args(["replay", "--format", "json"])
        .arg(&file)
        .output()
        .expect("run");
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let results: Vec<&str> = doc["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| t["result"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(results, ["interrupted", "success"]);
    assert_eq!(doc["final"]["last_turn"]["result"], "success");
    assert_eq!(doc["diagnostics"]["counters"]["line_not_json"], 0);
    assert_eq!(doc["provider"]["provider"], "kimi-code");
}

#[test]
fn ndjson_from_stdin_has_a_line_per_input_line_and_an_end_line() {
    let file = corpus_dir().join("kimi-cli/kimi-cli-1.52.0-plain-two-turn.ndjson");
    let input = std::fs::read(&file).expect("read corpus");
    let mut child = hooktrack()
        .args(["replay", "--format", "ndjson", "--provider", "kimi", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(rows.len(), 6 + 1);
    assert_eq!(rows[2]["event"], "Stop");
    assert_eq!(rows[2]["posture"]["last_turn"]["result"], "success");
    assert_eq!(rows[2]["closed"][0]["result"], "success");
    assert_eq!(rows[6]["end"], true);
    assert_eq!(rows[6]["final"]["presence"], "absent");
}

#[test]
fn help_explains_replay() {
    let out = hooktrack()
        .args(["replay", "--help"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--format"), "{text}");
    assert!(text.contains("--provider"), "{text}");
    assert!(text.contains("standard input"), "{text}");
}

#[test]
fn unknown_provider_is_a_usage_error() {
    let out = hooktrack()
        .args(["replay", "--provider", "nope", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// A named pipe (`hooktrack replay <(zcat log.gz)`) can be read only once: it is held in
/// memory like standard input, so the search for transcripts does not leave nothing to
/// replay (it used to: "lines: 0").
#[test]
fn a_log_read_from_a_named_pipe_replays_like_the_file() {
    let campaign = "corpus/claude-code/claude-code-2.1.197-interactive-escape-reject-transcript";
    let root = env!("CARGO_MANIFEST_DIR");
    let log = std::fs::read(format!("{root}/{campaign}.ndjson")).expect("campaign");
    let transcripts = format!("{root}/{campaign}.transcripts");
    let tmp = tempfile::tempdir().expect("tempdir");
    for format in ["text", "json", "ndjson"] {
        let fifo = tmp.path().join(format!("log-{format}"));
        let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        let writer = {
            let (fifo, log) = (fifo.clone(), log.clone());
            std::thread::spawn(move || std::fs::write(fifo, log).expect("write the pipe"))
        };
        let replay = |input: &std::path::Path| {
            let out = hooktrack()
                .args(["replay", "--format", format, "--transcripts", &transcripts])
                .arg(input)
                .output()
                .expect("run");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        let piped = replay(&fifo);
        writer.join().expect("writer");
        let file = replay(std::path::Path::new(&format!("{root}/{campaign}.ndjson")));
        assert!(
            piped == file,
            "{format}: the pipe's replay differs from the file's"
        );
        assert!(
            String::from_utf8_lossy(&file).contains("interrupted"),
            "{format}"
        );
    }
}
