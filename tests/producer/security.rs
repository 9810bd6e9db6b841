//! Tokens, limits, file modes, loopback only. (No secret in any argv: see `session`.)

use std::net::TcpStream;
use std::path::Path;

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

/// `hooktrack emit` of a Kimi CLI `Stop` with `args` after `emit`, `XDG_STATE_HOME` at
/// `state`, run in `cwd`; its exit must be 0.
fn emit_with(args: &[&std::ffi::OsStr], state: &Path, cwd: &Path) {
    use std::io::Write;
    let mut child = hooktrack()
        .arg("emit")
        .args(args)
        .args([
            "--provider",
            "kimi-cli",
            "--generation",
            "1",
            "--event",
            "Stop",
        ])
        .env("HOOKTRACK_TOKEN", TOKEN)
        .env("XDG_STATE_HOME", state)
        .env_remove("TMUX_PANE")
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn emit");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(kimi_cli("Stop", "").as_bytes())
        .expect("payload");
    assert!(child.wait().expect("wait").success());
}

fn user_log(state: &Path) -> String {
    std::fs::read_to_string(state.join("hooktrack/emit.log")).unwrap_or_default()
}

fn chown(path: &Path, uid: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: lchown(2) on a path this test created. CI runs as root; elsewhere the call
    // fails and the test says so rather than passing vacuously.
    let rc = unsafe { libc::lchown(c.as_ptr(), uid, uid) };
    assert_eq!(rc, 0, "this test needs root to give a file away");
}

#[test]
fn item_5_the_emitter_writes_nothing_into_a_store_directory_it_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&dir).expect("mkdir");
    chown(&dir, 65534);
    let dead = format!("http://127.0.0.1:{}/events", dead_port());
    emit_with(
        &[
            "--dir".as_ref(),
            dir.as_os_str(),
            "--url".as_ref(),
            dead.as_ref(),
        ],
        &state,
        tmp.path(),
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "written into the refused directory: {left:?}"
    );
    let log = user_log(&state);
    assert!(log.contains("owned by uid 65534"), "{log}");
    assert!(log.contains("delivered=LOST"), "{log}");
}

#[test]
fn item_5_an_empty_dir_is_refused_not_the_working_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (cwd, state) = (tmp.path().join("cwd"), tmp.path().join("state"));
    std::fs::create_dir(&cwd).expect("mkdir");
    emit_with(&["--dir".as_ref(), "".as_ref()], &state, &cwd);
    let left: Vec<_> = std::fs::read_dir(&cwd)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "written into the working directory: {left:?}"
    );
    assert!(
        user_log(&state).contains("empty --dir"),
        "{}",
        user_log(&state)
    );
}

/// A listener at `path` that records whatever a client sends, answering nothing.
fn eavesdropper(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let listener = std::os::unix::net::UnixListener::bind(path).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while std::time::Instant::now() < until {
            if let Ok((mut conn, _)) = listener.accept() {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(500)));
                let _ = std::io::Read::read_to_end(&mut conn, &mut got);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        got
    })
}

#[test]
fn item_5_the_token_goes_to_no_socket_of_another_user_or_behind_a_symlink() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let real = tmp.path().join("real");
    let collector = Collector::start(&real, 1);
    let url = collector.url();
    let name = format!("collector-{}.sock", collector.port);
    for planted in ["foreign", "symlink"] {
        let dir = tmp.path().join(planted);
        std::fs::create_dir(&dir).expect("mkdir");
        let socket = dir.join(&name);
        let heard = if planted == "foreign" {
            let heard = eavesdropper(&socket);
            chown(&socket, 65534);
            heard
        } else {
            let elsewhere = tmp.path().join("elsewhere.sock");
            let heard = eavesdropper(&elsewhere);
            std::os::unix::fs::symlink(&elsewhere, &socket).expect("symlink");
            heard
        };
        let state = tmp.path().join(format!("state-{planted}"));
        emit_with(
            &[
                "--dir".as_ref(),
                dir.as_os_str(),
                "--url".as_ref(),
                url.as_ref(),
            ],
            &state,
            tmp.path(),
        );
        let got = heard.join().expect("eavesdropper");
        assert!(
            got.is_empty(),
            "{planted}: the planted socket got {} bytes",
            got.len()
        );
        assert!(user_log(&state).is_empty(), "the store took the log");
        let log = std::fs::read_to_string(dir.join("emit.log")).unwrap_or_default();
        assert!(
            log.contains("refusing the collector socket"),
            "{planted}: {log}"
        );
    }
    assert!(collector.stop().success());
    // Delivered over TCP to the collector the URL names.
    assert_eq!(rows(&real.join("events.ndjson")).len(), 2);
}

#[test]
fn item_11_a_second_authorization_header_or_a_nul_in_a_header_value_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let body = delivery();
    let request = |extra: &str| {
        let mut r = format!(
            "POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(&body);
        r
    };
    // The request as the emitter sends it is taken: the refusals below are the extras'.
    let (status, reply) = raw_request(collector.addr(), &request(""));
    assert_eq!(status, 200, "{reply}");
    for extra in [
        "Authorization: Bearer other\r\n".to_owned(),
        format!("Authorization: Bearer {TOKEN}\r\n"),
        "X-Note: a\0b\r\n".to_owned(),
    ] {
        let (status, reply) = raw_request(collector.addr(), &request(&extra));
        assert_eq!(status, 400, "{extra:?}: {reply}");
    }
    assert!(collector.stop().success());
    assert_eq!(rows(&dir.join("events.ndjson")).len(), 1);
}
