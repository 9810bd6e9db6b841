//! `hooktrack watch`'s fleet flags: `--publish nats://…` and `watch nats://…`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;

use hooktrack::error_chain;
use hooktrack::fleet::{NatsAuth, NatsServer, NatsTls, PublishConfig, Seen, ViewConfig, Viewer};
use hooktrack::safe_text::visible;

use super::fail;

/// How to reach the NATS server (for `--publish` and for `watch nats://…`). Secrets come
/// from files or the environment, never from the command line.
#[derive(Args, Clone, Debug, Default)]
pub struct NatsArgs {
    /// Publish every session's updates to this NATS JetStream server
    /// (nats://HOST:PORT): the `--ndjson` fields and this host's name, no prompts or tool
    /// inputs, on `hooktrack.v1.<host>.<agent>.<session>`, and each session's latest
    /// state in the key-value bucket `hooktrack` (docs/fleet.md).
    #[arg(long, value_name = "URL")]
    pub publish: Option<String>,
    /// This host's name in the fleet (default: the machine's host name).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Seconds a session's state stays in the bucket when its host stops publishing.
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(3..))]
    pub fleet_ttl: u64,
    /// A NATS creds file (user JWT and nkey seed, as `nsc` writes it).
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// A file holding an nkey seed.
    #[arg(long, value_name = "FILE")]
    pub nats_nkey: Option<PathBuf>,
    /// A NATS user; the password is read from $HOOKTRACK_NATS_PASSWORD.
    #[arg(long, value_name = "USER")]
    pub nats_user: Option<String>,
    /// A file holding the server's token.
    #[arg(long, value_name = "FILE")]
    pub nats_token_file: Option<PathBuf>,
    /// A CA certificate (PEM) to trust for the server (TLS required).
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
    /// A client certificate (PEM), with --nats-key (TLS required).
    #[arg(long, value_name = "FILE", requires = "nats_key")]
    pub nats_cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, value_name = "FILE", requires = "nats_cert")]
    pub nats_key: Option<PathBuf>,
}

impl NatsArgs {
    /// The server at `url` with these credentials.
    pub fn server(&self, url: &str) -> Result<NatsServer, String> {
        let given = [
            self.nats_creds.is_some(),
            self.nats_nkey.is_some(),
            self.nats_user.is_some(),
            self.nats_token_file.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(
                "give one of --nats-creds, --nats-nkey, --nats-user and --nats-token-file".into(),
            );
        }
        let auth = if let Some(path) = &self.nats_creds {
            NatsAuth::Creds(path.clone())
        } else if let Some(path) = &self.nats_nkey {
            NatsAuth::Nkey(path.clone())
        } else if let Some(user) = &self.nats_user {
            let password = std::env::var("HOOKTRACK_NATS_PASSWORD")
                .map_err(|_| "--nats-user needs $HOOKTRACK_NATS_PASSWORD".to_owned())?;
            NatsAuth::UserPassword {
                user: user.clone(),
                password,
            }
        } else if let Some(path) = &self.nats_token_file {
            NatsAuth::Token(path.clone())
        } else {
            NatsAuth::None
        };
        Ok(NatsServer {
            url: url.to_owned(),
            auth,
            tls: NatsTls {
                ca: self.nats_ca.clone(),
                client: self.nats_cert.clone().zip(self.nats_key.clone()),
            },
        })
    }

    /// What `--publish` asks for, if it does.
    pub fn publish(&self) -> Result<Option<PublishConfig>, String> {
        let Some(url) = &self.publish else {
            return Ok(None);
        };
        let host = match &self.host {
            Some(h) => h.clone(),
            None => host_name(),
        };
        let mut config = PublishConfig::new(self.server(url)?, host);
        config.ttl = Duration::from_secs(self.fleet_ttl);
        Ok(Some(config))
    }
}

/// The machine's name, as `uname -n` says (Linux keeps it in /proc).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}

/// True for a `watch` path that names a NATS server rather than a store.
pub fn is_server(path: &std::path::Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.starts_with("nats://") || p.starts_with("tls://"))
}

/// A host silent for this many heartbeats is shown stale.
const STALE_AFTER_BEATS: u32 = 3;

/// `hooktrack watch nats://…`: every host's sessions, as text lines or `--ndjson`.
pub fn view(url: &str, nats: &NatsArgs, ndjson: bool, stop: &Arc<AtomicBool>) -> ExitCode {
    let server = match nats.server(url) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let viewer = match Viewer::start(ViewConfig { server }) {
        Ok(v) => v,
        Err(e) => return fail(&error_chain(&e)),
    };
    let mut out = io::stdout().lock();
    let mut hosts: std::collections::HashMap<String, (hooktrack::Timestamp, Duration, bool)> =
        std::collections::HashMap::new();
    let mut malformed = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let seen = match viewer.recv(Duration::from_millis(200)) {
            Ok(seen) => Some(seen),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let now = hooktrack::wall_clock();
        let written = match seen {
            Some(Seen::State { record, .. }) => {
                if ndjson {
                    writeln!(out, "{record}")
                } else {
                    writeln!(out, "{}", text_line(&record))
                }
            }
            Some(Seen::Gone { key }) => {
                if ndjson {
                    writeln!(out, "{}", serde_json::json!({"gone": key, "at": now}))
                } else {
                    writeln!(out, "{}  gone", visible(&key))
                }
            }
            Some(Seen::Heartbeat { host, at, every }) => {
                let was_stale = hosts.get(&host).is_some_and(|h| h.2);
                hosts.insert(host.clone(), (at, every, false));
                if was_stale {
                    say(&mut out, ndjson, &host, false, now)
                } else {
                    Ok(())
                }
            }
            Some(Seen::Connection { up }) => {
                if ndjson {
                    writeln!(
                        out,
                        "{}",
                        serde_json::json!({"server": url, "connected": up, "at": now})
                    )
                } else {
                    writeln!(
                        out,
                        "server {}: {}",
                        visible(url),
                        if up {
                            "connected"
                        } else {
                            "lost: every state below may be old"
                        }
                    )
                }
            }
            Some(Seen::Malformed { key }) => {
                malformed += 1;
                eprintln!(
                    "hooktrack: watch: skipped a message that is no hooktrack record under {} ({malformed} so far)",
                    visible(&key)
                );
                Ok(())
            }
            Some(_) | None => Ok(()),
        };
        // A host whose heartbeat stopped: its sessions are not current any more.
        let mut stale_now = Vec::new();
        for (host, (at, every, stale)) in &mut hosts {
            let silent = now.as_millis().saturating_sub(at.as_millis());
            let limit = i64::try_from((*every * STALE_AFTER_BEATS).as_millis()).unwrap_or(i64::MAX);
            if !*stale && silent > limit {
                *stale = true;
                stale_now.push(host.clone());
            }
        }
        let written = written.and_then(|()| {
            stale_now
                .iter()
                .try_for_each(|host| say(&mut out, ndjson, host, true, now))
        });
        if let Err(e) = written.and_then(|()| out.flush()) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            return fail(&format!("cannot write the output: {e}"));
        }
    }
    ExitCode::SUCCESS
}

fn say(
    out: &mut impl Write,
    ndjson: bool,
    host: &str,
    stale: bool,
    now: hooktrack::Timestamp,
) -> io::Result<()> {
    if ndjson {
        writeln!(
            out,
            "{}",
            serde_json::json!({"host": host, "stale": stale, "at": now})
        )
    } else if stale {
        writeln!(
            out,
            "{}  stale: no heartbeat, its sessions may have changed",
            visible(host)
        )
    } else {
        writeln!(out, "{}  publishing again", visible(host))
    }
}

/// One session's record as a text line: host, agent, session, phase, what it waits on.
fn text_line(record: &serde_json::Value) -> String {
    let s = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let host = s(&record["host"]).unwrap_or_default();
    let agent = s(&record["agent"]).unwrap_or_else(|| "?".into());
    let session = s(&record["session_id"])
        .or_else(|| s(&record["session"]))
        .unwrap_or_default();
    let phase = s(&record["phase"]).unwrap_or_default();
    let tool = s(&record["posture"]["turn"]["blocked_tool"])
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let result = s(&record["posture"]["last_turn"]["result"])
        .filter(|r| r != "none")
        .map(|r| format!("  last {r}"))
        .unwrap_or_default();
    visible(&format!(
        "{host}  {agent}  {session}  {phase}{tool}{result}"
    ))
    .into_owned()
}
