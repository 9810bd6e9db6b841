//! The collector's Unix socket in its store (`collector-<port>.sock`): made 0600 on bind,
//! removed on stop, served like TCP (token included), preferred by the emitter, and
//! costing nothing when it is dead or cannot exist.

use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hooktrack_producer::collect::{self, CollectConfig, CollectSummary, Stopper};
use hooktrack_producer::emit::DEFAULT_LIMITS;
use hooktrack_producer::http::{self, Endpoint, PostError, Url};
use hooktrack_producer::stream::socket_path;

use super::util::*;

/// A collector bound in this process on the store `dir` (not yet serving).
fn bind(dir: &Path) -> collect::Collector {
    collect::Collector::bind(CollectConfig::new(
        dir.to_owned(),
        hooktrack_core::agent::Agent::KimiCli,
        1,
        TOKEN.to_owned(),
    ))
    .expect("bind the collector")
}

/// A collector of this process serving on a thread of its own.
struct Serving {
    url: String,
    socket: Option<PathBuf>,
    stopper: Stopper,
    run: JoinHandle<Result<CollectSummary, collect::CollectError>>,
}

impl Serving {
    fn new(collector: collect::Collector) -> Self {
        Self {
            url: collector.url(),
            socket: collector.socket().map(Path::to_owned),
            stopper: collector.stopper(),
            run: std::thread::spawn(move || collector.run()),
        }
    }

    /// `Stopper::stop`, then `run`'s result (waited for at most 30 s).
    fn stop(self) -> CollectSummary {
        self.stopper.stop();
        wait_for(Duration::from_secs(30), "the collector to stop", || {
            self.run.is_finished().then_some(())
        });
        self.run
            .join()
            .expect("the collector's thread")
            .expect("run")
    }
}

fn sock_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the store")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sock"))
        .collect()
}

/// Runs the real emitter once for a Kimi CLI `Stop` against `url`: it must exit 0 and
/// leave the store's one row, delivered by the collector (`via: "http"`, sequence 1), with
/// nothing logged.
fn emit_one_stop_over_http(dir: &Path, url: &str) {
    let payload = kimi_cli("Stop", r#""stop_hook_active": false"#);
    let out = emit(dir, Some(url), Some(TOKEN), "Stop", payload.as_bytes());
    assert!(out.status.success(), "{out:?}");
    let got = rows(&dir.join("events.ndjson"));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["via"], "http");
    assert_eq!(got[0]["sequence"], 1);
    assert!(!dir.join("emit.log").exists(), "nothing to log");
}

/// A socket file at `path` that nobody listens on (a collector killed without cleaning
/// up).
fn dead_socket(path: &Path) {
    drop(UnixListener::bind(path).expect("bind a socket to drop"));
    assert!(
        std::fs::symlink_metadata(path)
            .expect("dead socket")
            .file_type()
            .is_socket()
    );
}

#[test]
fn the_collector_listens_on_a_0600_socket_named_after_its_port_and_removes_it_on_stop() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = bind(&dir);
    let expected = dir.join(format!("collector-{}.sock", collector.port()));
    assert_eq!(collector.socket(), Some(expected.as_path()));
    assert_eq!(socket_path(&dir, collector.port()), Some(expected.clone()));
    let meta = std::fs::symlink_metadata(&expected).expect("the socket exists on bind");
    assert!(meta.file_type().is_socket(), "{meta:?}");
    assert_eq!(mode(&expected), 0o600);
    let serving = Serving::new(collector);
    // A listening socket, not just a file: a connection is accepted.
    drop(std::os::unix::net::UnixStream::connect(&expected).expect("connect while running"));
    serving.stop();
    assert!(
        std::fs::symlink_metadata(&expected).is_err(),
        "{} is still there after stop",
        expected.display()
    );
    assert_eq!(sock_files(&dir), Vec::<String>::new());
}

#[test]
fn a_delivery_over_the_socket_is_a_row_like_one_over_tcp() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Serving::new(bind(&dir));
    let socket = collector.socket.clone().expect("a socket");
    let tcp = Url::parse(&collector.url).expect("url");
    // Over the socket, with a URL whose port nobody listens on: only the socket can take
    // this delivery.
    let nowhere =
        Url::parse(&format!("http://127.0.0.1:{}/events", dead_port())).expect("dead url");
    let first = kimi_cli("UserPromptSubmit", r#""prompt": "over the socket""#);
    let (status, body) = http::post_json(
        &nowhere,
        Some(&socket),
        TOKEN,
        first.as_bytes(),
        DEFAULT_LIMITS,
    )
    .expect("a delivery over the socket");
    assert_eq!(status, 200);
    assert_eq!(String::from_utf8_lossy(&body), r#"{"sequence":1}"#);
    let second = kimi_cli("Stop", r#""stop_hook_active": false"#);
    let (status, body) = http::post_json(&tcp, None, TOKEN, second.as_bytes(), DEFAULT_LIMITS)
        .expect("a delivery over TCP");
    assert_eq!(status, 200);
    assert_eq!(String::from_utf8_lossy(&body), r#"{"sequence":2}"#);

    // The token is checked on the socket too, and a refusal there is final: the real URL
    // is not tried over TCP after it.
    let third = kimi_cli("Stop", r#""stop_hook_active": true"#);
    match http::post_json(
        &tcp,
        Some(&socket),
        "wrong-token",
        third.as_bytes(),
        DEFAULT_LIMITS,
    ) {
        Err(PostError::Status { to, status }) => {
            assert_eq!(status, 401);
            assert_eq!(to, Endpoint::Unix(socket.clone()));
        }
        other => panic!("a wrong token over the socket: {other:?}"),
    }

    let summary = collector.stop();
    assert_eq!((summary.accepted, summary.rejected), (2, 1));
    let rows = rows(&dir.join("events.ndjson"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, (sequence, event, payload)) in rows
        .iter()
        .zip([(1, "UserPromptSubmit", &first), (2, "Stop", &second)])
    {
        assert_eq!(row["via"], "http", "{row}");
        assert_eq!(row["sequence"], sequence, "{row}");
        assert_eq!(row["provider"], "kimi-cli", "{row}");
        assert_eq!(row["generation"], 1, "{row}");
        assert_eq!(row["event"], event, "{row}");
        let posted: serde_json::Value = serde_json::from_str(payload).expect("payload");
        assert_eq!(row["payload"], posted, "{row}");
    }
}

/// What a hand-made listener at the emitter's socket saw, and answered.
fn serve_one(listener: UnixListener) -> String {
    listener.set_nonblocking(true).expect("nonblocking");
    let start = Instant::now();
    let mut conn = loop {
        match listener.accept() {
            Ok((conn, _)) => break conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "the emitter never connected to the socket"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    conn.set_nonblocking(false).expect("blocking");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    // The head, then the body its Content-Length declares (bounded by the timeout and
    // the size).
    loop {
        let text = String::from_utf8_lossy(&request).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                })
                .expect("a Content-Length");
            if request.len() >= end + 4 + length {
                break;
            }
        }
        assert!(request.len() < 1024 * 1024, "request too large");
        let n = conn.read(&mut chunk).expect("read the request");
        assert!(
            n > 0,
            "closed mid-request: {:?}",
            String::from_utf8_lossy(&request)
        );
        request.extend_from_slice(&chunk[..n]);
    }
    let body = r#"{"sequence":1}"#;
    write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("answer");
    String::from_utf8(request).expect("a UTF-8 request")
}

#[test]
fn the_emitter_uses_the_socket_named_after_its_url_port() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    std::fs::create_dir(&dir).expect("mkdir");
    // Nothing listens on the URL's port: a delivery can only go by the socket.
    let port = dead_port();
    let path = socket_path(&dir, port).expect("a short enough store");
    let listener = UnixListener::bind(&path).expect("bind the socket");
    let server = std::thread::spawn(move || serve_one(listener));
    let url = format!("http://127.0.0.1:{port}/events");
    let payload = kimi_cli("Stop", r#""stop_hook_active": false"#);
    let out = emit(&dir, Some(&url), Some(TOKEN), "Stop", payload.as_bytes());
    let request = server.join().expect("the socket's server");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());

    let (head, body) = request.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("POST /events HTTP/1.1\r\n"), "{head}");
    assert!(
        head.lines()
            .any(|l| l == format!("Authorization: Bearer {TOKEN}")),
        "{head}"
    );
    let delivery: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
    let posted: serde_json::Value = serde_json::from_str(&payload).expect("payload");
    assert_eq!(delivery["payload"], posted, "{body}");
    assert_eq!(delivery["event"], "Stop", "{body}");
    assert_eq!(delivery["provider"], "kimi-cli", "{body}");
    assert_eq!(delivery["emitter_seq"], 1, "{body}");

    // Delivered: no fallback row, nothing logged.
    assert_eq!(
        rows(&dir.join("events.ndjson")),
        Vec::<serde_json::Value>::new()
    );
    assert!(
        !dir.join("emit.log").exists(),
        "a clean delivery logs nothing"
    );
}

#[test]
fn a_stale_socket_costs_nothing_but_a_connect() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = Collector::start(&dir, 1);
    let path = socket_path(&dir, collector.port).expect("a short enough store");
    assert!(
        std::fs::symlink_metadata(&path)
            .expect("the collector's socket")
            .file_type()
            .is_socket()
    );
    // The collector's socket replaced by a dead one at the same path.
    std::fs::remove_file(&path).expect("remove the collector's socket");
    dead_socket(&path);
    // A dead socket is not a problem to log either.
    emit_one_stop_over_http(&dir, &collector.url());
    assert!(collector.stop().success());

    // The next collector of the store removes the sockets earlier ones left, whatever
    // their port, and nothing else.
    let other = dir.join("collector-1.sock");
    dead_socket(&other);
    let not_a_socket = dir.join("collector-2.sock");
    std::fs::write(&not_a_socket, b"").expect("a plain file");
    let next = bind(&dir);
    assert!(
        std::fs::symlink_metadata(&other).is_err(),
        "{} survived the next collector's bind",
        other.display()
    );
    assert!(not_a_socket.exists(), "a plain file is not a stale socket");
    let own = format!("collector-{}.sock", next.port());
    let mut left = sock_files(&dir);
    left.sort();
    let mut expected = vec!["collector-2.sock".to_owned(), own];
    expected.sort();
    assert_eq!(left, expected);
    Serving::new(next).stop();
    assert_eq!(sock_files(&dir), ["collector-2.sock"]);
}

#[test]
fn a_store_path_too_long_for_a_socket_still_collects_over_tcp() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp
        .path()
        .join("d".repeat(40))
        .join("e".repeat(40))
        .join("f".repeat(40))
        .join("store");
    assert!(dir.as_os_str().len() > 107, "{}", dir.display());
    let collector = Serving::new(bind(&dir));
    assert_eq!(collector.socket, None);
    let port = Url::parse(&collector.url).expect("url").addr.port();
    assert_eq!(socket_path(&dir, port), None);
    assert_eq!(sock_files(&dir), Vec::<String>::new());
    emit_one_stop_over_http(&dir, &collector.url);
    assert_eq!(collector.stop().accepted, 1);
    assert_eq!(sock_files(&dir), Vec::<String>::new());
}

/// A collector bound and dropped without serving (a launch that fails after the bind)
/// takes its socket file with it.
#[test]
fn a_collector_dropped_without_running_leaves_no_socket() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let collector = bind(&dir);
    let socket = collector.socket().expect("a socket").to_owned();
    assert!(socket.exists());
    drop(collector);
    assert!(!socket.exists(), "{} left behind", socket.display());
    assert!(sock_files(&dir).is_empty());
}
