//! No delivery is lost or torn while the collector is killed and restarted mid-stream.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::util::*;

const EMITTERS: usize = 8;
const DELIVERIES: usize = 500;
const TOTAL: usize = EMITTERS * DELIVERIES;

#[test]
fn eight_emitters_lose_nothing_while_the_collector_is_killed_and_restarted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let port = collector.port;
    let url = collector.url();
    let done = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (0..EMITTERS)
        .map(|w| {
            let dir = dir.clone();
            let url = url.clone();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                for i in 0..DELIVERIES {
                    let payload = kimi_cli(
                        "PreToolUse",
                        &format!(
                            r#""tool_name": "Shell", "tool_input": {{"command": "echo {w}-{i}"}}, "tool_call_id": "w{w}_{i}""#
                        ),
                    );
                    let out = emit(&dir, Some(&url), Some(TOKEN), "PreToolUse", payload.as_bytes());
                    assert!(out.status.success());
                    assert!(out.stdout.is_empty());
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // Kill the collector a quarter of the way in, leave it down for a while (every
    // delivery then falls back), and restart it on the same port.
    let reached = |n: usize| {
        let done = Arc::clone(&done);
        move || (done.load(Ordering::SeqCst) >= n).then_some(())
    };
    wait_for(
        Duration::from_secs(600),
        "a quarter of the deliveries",
        reached(TOTAL / 4),
    );
    let mut killed = collector;
    send_signal(&killed.child, libc::SIGKILL);
    let _ = wait_child(&mut killed.child, Duration::from_secs(30));
    let down_at = done.load(Ordering::SeqCst);
    wait_for(
        Duration::from_secs(600),
        "deliveries while down",
        reached(down_at + TOTAL / 8),
    );
    let port_arg = port.to_string();
    let restarted = Collector::start_with(&dir, 1, &["--port", &port_arg]);
    assert_eq!(restarted.port, port);
    for w in workers {
        w.join().expect("emitter thread");
    }
    assert!(restarted.stop().success());

    // Every line is a whole row (no torn line), and after de-duplication by
    // (generation, emitter_seq) every delivery is there exactly once.
    let rows = rows(&dir.join("events.ndjson"));
    let mut by_key: HashMap<(u64, u64), String> = HashMap::new();
    let mut deliveries = HashSet::new();
    let (mut http, mut fallback) = (0, 0);
    let mut last_sequence = 0;
    for row in &rows {
        let key = (
            row["generation"].as_u64().expect("generation"),
            row["emitter_seq"].as_u64().expect("emitter_seq"),
        );
        let id = row["payload"]["tool_call_id"]
            .as_str()
            .expect("tool_call_id")
            .to_owned();
        match row["via"].as_str() {
            Some("http") => {
                http += 1;
                let s = row["sequence"].as_u64().expect("sequence");
                assert!(s > last_sequence, "sequence {s} after {last_sequence}");
                last_sequence = s;
            }
            Some("command_fallback") => {
                fallback += 1;
                assert!(row["sequence"].is_null());
            }
            other => panic!("via {other:?}"),
        }
        match by_key.get(&key) {
            // A duplicate delivery must be the same delivery.
            Some(seen) => assert_eq!(seen, &id, "key {key:?} names two deliveries"),
            None => {
                by_key.insert(key, id.clone());
                assert!(deliveries.insert(id.clone()), "{id} under two keys");
            }
        }
    }
    eprintln!(
        "no-loss: {} rows ({http} http, {fallback} fallback), {} duplicates",
        rows.len(),
        rows.len() - by_key.len()
    );
    assert_eq!(deliveries.len(), TOTAL, "deliveries after de-duplication");
    assert!(http > 0 && fallback > 0, "http {http}, fallback {fallback}");
    let seqs: HashSet<u64> = by_key.keys().map(|k| k.1).collect();
    assert_eq!(
        seqs,
        (1..=TOTAL as u64).collect(),
        "emitter_seq is 1..=N, no gap"
    );

    // The reader agrees: duplicates dropped and counted, nothing else skipped.
    let report = replay_json(&dir.join("events.ndjson"));
    assert_eq!(report["events"], TOTAL);
    assert_eq!(
        report["diagnostics"]["counters"]["duplicate_delivery"],
        rows.len() - TOTAL
    );
}
