//! Tokens, limits, file modes, loopback only. (No secret in any argv: see `session`.)

use std::net::TcpStream;

use super::util::*;

fn delivery() -> Vec<u8> {
    format!(
        r#"{{"v":1,"provider":"kimi-cli","generation":1,"emitter_seq":1,"event":"Stop","payload":{}}}"#,
        kimi_cli("Stop", "")
    )
    .into_bytes()
}

#[test]
fn a_wrong_or_missing_token_is_rejected_and_nothing_is_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let body = delivery();
    for token in [
        None,
        Some("wrong"),
        Some(""),
        Some(&TOKEN[..TOKEN.len() - 1]),
        Some(&*format!("{TOKEN}x")),
    ] {
        let (status, reply) = post(collector.addr(), token, &body);
        assert_eq!(status, 401, "token {token:?}: {reply}");
        assert!(!reply.contains(TOKEN));
    }
    // Not a bearer scheme.
    let (status, _) = raw_request(
        collector.addr(),
        format!(
            "POST /events HTTP/1.1\r\nAuthorization: Basic {TOKEN}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(status, 401);
    assert_eq!(
        std::fs::read(dir.join("events.ndjson")).expect("events"),
        b""
    );
    // The emitter falls back on a 401 rather than losing the delivery.
    let out = emit(
        &dir,
        Some(&collector.url()),
        Some("wrong"),
        "Stop",
        kimi_cli("Stop", "").as_bytes(),
    );
    assert!(out.status.success());
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["via"], "command_fallback");
    let log = std::fs::read_to_string(dir.join("emit.log")).expect("log");
    assert!(log.contains("answered 401"), "{log}");
    assert!(
        !log.contains("wrong"),
        "the log must not echo a token: {log}"
    );
    assert!(collector.stop().success());
}

#[test]
fn oversized_and_non_json_bodies_are_rejected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start_with(&dir, 1, &["--max-body", "1000"]);
    let big = format!(
        r#"{{"v":1,"generation":1,"emitter_seq":1,"event":"Stop","payload":{{"pad":"{}"}}}}"#,
        "x".repeat(2000)
    );
    let (status, reply) = post(collector.addr(), Some(TOKEN), big.as_bytes());
    assert_eq!(status, 413, "{reply}");
    // A declared length over the limit is refused before any body is read.
    let (status, _) = raw_request(
        collector.addr(),
        format!("POST /events HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 999999999\r\n\r\n{{")
            .as_bytes(),
    );
    assert_eq!(status, 413);
    for body in [
        &b"not json"[..],
        b"[1,2,3]",
        b"\"a string\"",
        b"{\"no\":\"payload\"}",
        b"{\"payload\":",
    ] {
        let (status, reply) = post(collector.addr(), Some(TOKEN), body);
        assert_eq!(status, 400, "{}: {reply}", String::from_utf8_lossy(body));
    }
    // No length at all.
    let (status, _) = raw_request(
        collector.addr(),
        format!("POST /events HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes(),
    );
    assert_eq!(status, 411);
    assert_eq!(
        std::fs::read(dir.join("events.ndjson")).expect("events"),
        b""
    );
    // The limit may not exceed what a row can carry.
    let out = hooktrack()
        .args([
            "collect",
            "--generation",
            "1",
            "--max-body",
            "99999999",
            "--dir",
        ])
        .arg(tmp.path().join("other"))
        .env("HOOKTRACK_TOKEN", TOKEN)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(collector.stop().success());
}

#[test]
fn store_files_are_owner_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let out = emit(
        &dir,
        Some(&collector.url()),
        Some(TOKEN),
        "Stop",
        kimi_cli("Stop", "").as_bytes(),
    );
    assert!(out.status.success());
    // A failing delivery creates emit.log too.
    let out = emit(
        &dir,
        Some(&collector.url()),
        None,
        "Stop",
        kimi_cli("Stop", "").as_bytes(),
    );
    assert!(out.status.success());
    assert!(collector.stop().success());
    assert_eq!(mode(&dir), 0o700);
    for file in ["events.ndjson", "collector.json", "emitter.seq", "emit.log"] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    for file in ["events.ndjson", "collector.json", "emitter.seq", "emit.log"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("read");
        assert!(!text.contains(TOKEN), "{file} holds the token");
    }
}

#[test]
fn a_collector_refuses_any_address_but_127_0_0_1() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for addr in [
        "0.0.0.0",
        "192.168.1.10",
        "::",
        "::1",
        "127.0.0.2",
        "localhost",
        "example.com",
    ] {
        let dir = tmp.path().join(addr.replace([':', '.'], "_"));
        let out = hooktrack()
            .args(["collect", "--generation", "1", "--bind", addr, "--dir"])
            .arg(&dir)
            .env("HOOKTRACK_TOKEN", TOKEN)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{addr}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("127.0.0.1 only"), "{addr}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!dir.join("collector.json").exists(), "{addr}");
    }
}

#[test]
fn a_collector_without_a_token_does_not_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = hooktrack()
        .args(["collect", "--generation", "1", "--dir"])
        .arg(tmp.path().join("store"))
        .env_remove("HOOKTRACK_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOOKTRACK_TOKEN"));
}

#[test]
fn the_collector_listens_on_loopback_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let collector = Collector::start(&tmp.path().join("store"), 1);
    let listening = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let port_hex = format!(":{:04X}", collector.port);
    let local: Vec<&str> = listening
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|a| a.ends_with(&port_hex))
        .collect();
    assert!(!local.is_empty(), "port not found in /proc/net/tcp");
    // 0100007F is 127.0.0.1 in /proc/net/tcp's byte order.
    assert!(local.iter().all(|a| a.starts_with("0100007F")), "{local:?}");
    assert!(TcpStream::connect(collector.addr()).is_ok());
    assert!(collector.stop().success());
}
