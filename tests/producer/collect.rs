//! `hooktrack collect`: lifecycle, sequence, clean stop.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::util::*;

fn delivery(seq: u64, event: &str) -> Vec<u8> {
    format!(
        r#"{{"v":1,"provider":"kimi-cli","generation":1,"emitter_seq":{seq},"event":"{event}","payload":{}}}"#,
        kimi_cli(event, "")
    )
    .into_bytes()
}

#[test]
fn collector_json_says_running_then_stopped_and_holds_no_secret() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 7);
    let pid = collector.child.id();
    let port = collector.port;
    let running: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("collector.json")).expect("read"))
            .expect("json");
    assert_eq!(running["pid"], pid);
    assert_eq!(running["port"], port);
    assert_eq!(running["generation"], 7);
    assert_eq!(running["status"], "running");
    assert!(running["started_at"].is_string());
    assert!(running.get("stopped_at").is_none());
    let status = collector.stop();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(dir.join("collector.json")).expect("read");
    assert!(!text.contains(TOKEN));
    let stopped: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(stopped["status"], "stopped");
    assert!(stopped["stopped_at"].is_string());
    let mut keys: Vec<&str> = stopped
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "generation",
            "pid",
            "port",
            "started_at",
            "status",
            "stopped_at"
        ]
    );
}

#[test]
fn sigint_stops_cleanly_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let mut collector = Collector::start(&dir, 1);
    send_signal(&collector.child, libc::SIGINT);
    let status = wait_child(&mut collector.child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(dir.join("collector.json")).expect("read");
    assert!(text.contains("\"stopped\""), "{text}");
}

#[test]
fn sequence_strictly_increases_and_goes_on_after_a_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    for seq in 1..=3 {
        let (status, body) = post(collector.addr(), Some(TOKEN), &delivery(seq, "Stop"));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, format!("{{\"sequence\":{seq}}}"));
    }
    assert!(collector.stop().success());
    let collector = Collector::start(&dir, 1);
    for seq in 4..=5 {
        let (status, _) = post(collector.addr(), Some(TOKEN), &delivery(seq, "Stop"));
        assert_eq!(status, 200);
    }
    assert!(collector.stop().success());
    let sequences: Vec<u64> = rows(&dir.join("events.ndjson"))
        .iter()
        .map(|r| r["sequence"].as_u64().expect("sequence"))
        .collect();
    assert_eq!(sequences, [1, 2, 3, 4, 5]);
}

/// How many connections wait to be accepted by the listener on 127.0.0.1:`port`: a
/// listening socket's accept queue is its `rx_queue` in `/proc/net/tcp`.
fn accept_queue(port: u16) -> Option<u64> {
    let table = fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, state, queues) = (fields.get(1)?, fields.get(3)?, fields.get(4)?);
        let local_port = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
        if local_port != port || *state != "0A" {
            return None;
        }
        u64::from_str_radix(queues.split(':').nth(1)?, 16).ok()
    })
}

#[test]
fn an_in_flight_request_finishes_after_sigterm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let mut collector = Collector::start(&dir, 1);
    let body = delivery(1, "Stop");
    let (first, rest) = body.split_at(10);
    let mut conn = TcpStream::connect(collector.addr()).expect("connect");
    write!(
        conn,
        "POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("head");
    conn.write_all(first).expect("first part");
    // SIGTERM only once the collector has accepted this connection (a loaded machine may
    // leave it in the listener's queue for long): then it is in flight.
    wait_for(
        Duration::from_secs(20),
        "the collector to accept the connection",
        || (accept_queue(collector.port) == Some(0)).then_some(()),
    );
    send_signal(&collector.child, libc::SIGTERM);
    // Once the listener is closed, new connections are refused...
    wait_for(Duration::from_secs(20), "the listener to close", || {
        TcpStream::connect(collector.addr()).err()
    });
    // ...but the request in flight completes.
    conn.write_all(rest).expect("rest");
    let mut response = Vec::new();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let _ = conn.read_to_end(&mut response);
    let (status, _) = parse_response(&response);
    assert_eq!(status, 200);
    let exit = wait_child(&mut collector.child, Duration::from_secs(30));
    assert_eq!(exit.code(), Some(0));
    assert_eq!(rows(&dir.join("events.ndjson")).len(), 1);
    let text = std::fs::read_to_string(dir.join("collector.json")).expect("read");
    assert!(text.contains("\"stopped\""), "{text}");
}

#[test]
fn a_bare_hook_payload_is_accepted_as_posted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 4);
    let payload = kimi_cli("SessionStart", r#""source": "startup""#);
    let (status, _) = post(collector.addr(), Some(TOKEN), payload.as_bytes());
    assert_eq!(status, 200);
    assert!(collector.stop().success());
    let text = std::fs::read_to_string(dir.join("events.ndjson")).expect("events");
    assert!(text.contains(&format!("\"payload\":{payload}}}")), "{text}");
    let row = &rows(&dir.join("events.ndjson"))[0];
    assert_eq!(row["generation"], 4);
    assert_eq!(row["provider"], "kimi-cli");
    assert_eq!(row["emitter_seq"], serde_json::Value::Null);
    assert_eq!(row["event"], "SessionStart");
}

#[test]
fn health_answers_without_a_token_and_says_nothing_secret() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 2);
    let (status, body) = raw_request(
        collector.addr(),
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(!body.contains(TOKEN));
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["status"], "running");
    assert_eq!(v["generation"], 2);
    let (status, _) = raw_request(
        collector.addr(),
        b"GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 404);
    let (status, _) = raw_request(
        collector.addr(),
        b"GET /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 405);
    assert!(collector.stop().success());
}

#[test]
fn expect_100_continue_is_answered() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let body = delivery(1, "Stop");
    let mut conn = TcpStream::connect(collector.addr()).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        conn,
        "POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("head");
    let mut interim = [0u8; 25];
    conn.read_exact(&mut interim).expect("100 Continue");
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    conn.write_all(&body).expect("body");
    let mut response = Vec::new();
    let _ = conn.read_to_end(&mut response);
    assert_eq!(parse_response(&response).0, 200);
    assert!(collector.stop().success());
}

#[test]
fn a_request_that_arrives_in_pieces_is_served_from_its_first_bytes_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let body = delivery(1, "Stop");
    let mut request = format!(
        "POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    // Cut in the head, in the body, and right after the head: the bytes the accept thread
    // read before handing the connection over must not be lost.
    let cuts = [20, request.len() - body.len(), request.len() - 7];
    for (n, cut) in cuts.into_iter().enumerate() {
        let mut conn = TcpStream::connect(collector.addr()).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        conn.set_nodelay(true).expect("nodelay");
        conn.write_all(&request[..cut]).expect("first piece");
        std::thread::sleep(Duration::from_millis(50));
        conn.write_all(&request[cut..]).expect("the rest");
        let mut response = Vec::new();
        let _ = conn.read_to_end(&mut response);
        let (status, reply) = parse_response(&response);
        assert_eq!(status, 200, "cut at {cut}: {reply}");
        assert_eq!(reply, format!("{{\"sequence\":{}}}", n + 1));
    }
    assert!(collector.stop().success());
    assert_eq!(rows(&dir.join("events.ndjson")).len(), cuts.len());
}

#[test]
fn collect_prints_its_url_on_one_line_of_stdout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = hooktrack()
        .args([
            "collect",
            "--provider",
            "claude",
            "--generation",
            "1",
            "--dir",
        ])
        .arg(tmp.path())
        .env("HOOKTRACK_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn collect");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("a line");
    let record = wait_for(Duration::from_secs(20), "collector.json", || {
        serde_json::from_slice::<serde_json::Value>(
            &std::fs::read(tmp.path().join("collector.json")).ok()?,
        )
        .ok()
    });
    assert_eq!(
        line.trim_end(),
        format!("http://127.0.0.1:{}/events", record["port"])
    );
    send_signal(&child, libc::SIGTERM);
    assert!(wait_child(&mut child, Duration::from_secs(30)).success());
}
