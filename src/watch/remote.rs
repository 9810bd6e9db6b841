//! A fleet's sessions in a [`Watch`]: `watch nats://…` shows every host's sessions
//! through the same outputs as local stores. Each remote session's record (its host's
//! `watch --ndjson` line) is read back into what a local update gives the outputs: the
//! status line's facts ([`Shown`]), the notifiers' [`Facts`] and ended turns, the lines
//! that scroll above. Its pane is its host's: a remote session never sets a tmux option,
//! and its notifications name no pane.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use hooktrack_core::agent::Agent;
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::posture::{ChannelState, Posture};
use hooktrack_core::time::Timestamp;
use hooktrack_live::hub::wall_clock;

use super::facts::{Facts, age_text};
use super::view::{Shown, StatusLine, events, short_id, status_line};
use super::{Watch, WatchError};
use crate::fleet::{Seen, ViewConfig, Viewer};

/// A host silent for this many heartbeats is said stale.
const STALE_AFTER_BEATS: u32 = 3;

/// One remote session, as its host's last record says.
struct Remote {
    /// `host:session short-id`: how the outputs name it.
    name: String,
    /// Its host's name, as its heartbeat names it.
    host: String,
    /// The record as published: what `--ndjson` writes again, `"stale"` added, when its
    /// host goes quiet.
    record: serde_json::Value,
    posture: Posture,
    agent: Option<Agent>,
    turn_started_at: Option<Timestamp>,
    last_event_at: Option<Timestamp>,
    channel: ChannelState,
    /// The host's time of the update.
    at: Timestamp,
}

/// A record read: the session, and what its update said once (turns ended, notices).
struct Read {
    remote: Remote,
    closed: Vec<TurnRecord>,
    notices: Vec<String>,
}

/// A record as a remote session; `None` for one that is no `watch --ndjson` line.
fn read(record: &serde_json::Value) -> Option<Read> {
    let text = |field: &str| record.get(field).and_then(|v| v.as_str());
    let time = |field: &str| {
        record
            .get(field)
            .and_then(|v| serde_json::from_value::<Timestamp>(v.clone()).ok())
    };
    let host = text("host")?;
    let session = text("session")?;
    let at = time("at")?;
    let posture: Posture = serde_json::from_value(record.get("posture")?.clone()).ok()?;
    let channel = record
        .get("channel")
        .and_then(|c| c.get("state"))
        .and_then(|s| serde_json::from_value::<ChannelState>(s.clone()).ok())
        .unwrap_or(posture.channel.state);
    let closed = match record.get("closed") {
        Some(c) => serde_json::from_value::<Vec<TurnRecord>>(c.clone()).ok()?,
        None => Vec::new(),
    };
    let notices = record
        .get("notices")
        .and_then(|n| n.as_array())
        .map(|n| {
            n.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let name = match text("session_id") {
        Some(sid) => format!("{host}:{session} {}", short_id(sid)),
        None => format!("{host}:{session}"),
    };
    Some(Read {
        remote: Remote {
            name,
            host: host.to_owned(),
            record: record.clone(),
            agent: text("agent").and_then(|a| Agent::from_name(a).ok()),
            turn_started_at: time("turn_started_at"),
            last_event_at: time("last_event_at"),
            posture,
            channel,
            at,
        },
        closed,
        notices,
    })
}

/// A host's heartbeat, last seen.
struct Beat {
    at: Timestamp,
    every: Duration,
    stale: bool,
}

/// What a watch of a NATS server keeps.
pub(super) struct Fleet {
    viewer: Viewer,
    url: String,
    /// By bucket key (`<host>.<agent>.<session>`): shown grouped by host.
    sessions: BTreeMap<String, Remote>,
    hosts: HashMap<String, Beat>,
    /// The bucket's state at the start was read: a session seen from now on is news.
    loaded: bool,
    /// The server was lost: the state read again replaces what was shown.
    reloading: bool,
    /// The keys read since the (re)start of the bucket's state.
    since_load: HashSet<String>,
    malformed: u64,
    /// Updates the bucket replaced before the viewer read them ([`Seen::Skipped`]), and
    /// the count last said (said again at each doubling).
    skipped: u64,
    skipped_said: u64,
}

impl Fleet {
    pub(super) fn start(config: ViewConfig) -> Result<Fleet, crate::fleet::FleetError> {
        let url = config.server.url.clone();
        Ok(Fleet {
            viewer: Viewer::start(config)?,
            url,
            sessions: BTreeMap::new(),
            hosts: HashMap::new(),
            loaded: false,
            reloading: false,
            since_load: HashSet::new(),
            malformed: 0,
            skipped: 0,
            skipped_said: 0,
        })
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    pub(super) fn recv(&self, wait: Duration) -> Result<Seen, std::sync::mpsc::RecvTimeoutError> {
        self.viewer.recv(wait)
    }

    /// The remote sessions' status lines, names aligned.
    pub(super) fn lines(&self, now: Timestamp) -> Vec<StatusLine> {
        let width = self
            .sessions
            .values()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0);
        self.sessions
            .values()
            .map(|r| {
                let shown = Shown {
                    posture: &r.posture,
                    agent: r.agent,
                    turn_started_at: r.turn_started_at,
                    last_event_at: r.last_event_at,
                    channel: r.channel,
                    stale: self.is_stale(&r.host),
                };
                status_line(&format!("{:<width$}", r.name), &shown, now)
            })
            .collect()
    }

    fn is_stale(&self, host: &str) -> bool {
        self.hosts.get(host).is_some_and(|b| b.stale)
    }

    /// Hosts whose heartbeat stopped since the last look, each said once: their names.
    fn gone_quiet(&mut self, now: Timestamp) -> Vec<(String, i64)> {
        let mut said = Vec::new();
        for (host, beat) in &mut self.hosts {
            let silent = now.as_millis().saturating_sub(beat.at.as_millis());
            let limit =
                i64::try_from((beat.every * STALE_AFTER_BEATS).as_millis()).unwrap_or(i64::MAX);
            if !beat.stale && silent > limit {
                beat.stale = true;
                said.push((host.clone(), silent));
            }
        }
        said.sort();
        said
    }

    /// The records of `host`'s sessions, `"stale": true` added when it is.
    fn records_of(&self, host: &str, stale: bool) -> Vec<serde_json::Value> {
        self.sessions
            .values()
            .filter(|r| r.host == host)
            .map(|r| {
                let mut record = r.record.clone();
                if stale && let Some(fields) = record.as_object_mut() {
                    fields.insert("stale".into(), serde_json::Value::Bool(true));
                }
                record
            })
            .collect()
    }
}

impl Watch {
    /// Hosts gone quiet: said once each, and their sessions shown stale (the status
    /// lines' phase; `--ndjson` writes each session's record again with `"stale": true`).
    pub(super) fn fleet_housekeeping(&mut self, now: Timestamp) -> Result<(), WatchError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        let mut notices = Vec::new();
        for (host, silent) in fleet.gone_quiet(now) {
            notices.push(format!(
                "{host}: stale: no heartbeat for {}, its sessions may have changed",
                age_text(silent)
            ));
            if let Some(view) = &mut self.view {
                for record in fleet.records_of(&host, true) {
                    view.remote(&mut self.out, &record, Vec::new())
                        .map_err(|source| WatchError::Write { source })?;
                }
            }
        }
        for notice in notices {
            self.notice(&notice)?;
        }
        Ok(())
    }

    /// What the viewer saw, through the outputs local updates go through.
    pub(super) fn on_seen(&mut self, seen: Seen) -> Result<(), WatchError> {
        let now = wall_clock();
        let write = |source| WatchError::Write { source };
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        let mut notices = Vec::new();
        match seen {
            Seen::State { key, record } => {
                let Some(Read {
                    remote,
                    closed,
                    notices: said,
                }) = read(&record)
                else {
                    return self.on_seen(Seen::Malformed { key });
                };
                let news = fleet.loaded;
                fleet.since_load.insert(key.clone());
                // A state put again (a publisher's reconnect, the viewer's own): what its
                // update ended or said was told already.
                let again = fleet
                    .sessions
                    .get(&key)
                    .is_some_and(|before| remote.at <= before.at);
                let (closed, said) = if again {
                    (Vec::new(), Vec::new())
                } else {
                    (closed, said)
                };
                let facts = Facts::of_posture(
                    &remote.name,
                    &remote.posture,
                    remote.agent,
                    remote.turn_started_at,
                    None,
                );
                for n in [&mut self.on_change, &mut self.notify]
                    .into_iter()
                    .flatten()
                {
                    n.update(&format!("fleet {key}"), news, &facts, remote.at, &closed);
                }
                if let Some(view) = &mut self.view {
                    let lines = events(&remote.name, said.into_iter(), closed.iter()).collect();
                    view.remote(&mut self.out, &record, lines).map_err(write)?;
                }
                fleet.sessions.insert(key, remote);
            }
            Seen::Gone { key } => {
                fleet.since_load.remove(&key);
                if let Some(gone) = fleet.sessions.remove(&key)
                    && let Some(view) = &mut self.view
                {
                    view.left(&mut self.out, &gone.name, now).map_err(write)?;
                }
            }
            Seen::Heartbeat { host, at, every } => {
                let beat = Beat {
                    at,
                    every,
                    stale: false,
                };
                if fleet
                    .hosts
                    .insert(host.clone(), beat)
                    .is_some_and(|b| b.stale)
                {
                    notices.push(format!("{host}: publishing again"));
                    // `--ndjson` had its sessions stale: their records, current again.
                    if let Some(view) = &mut self.view {
                        for record in fleet.records_of(&host, false) {
                            view.remote(&mut self.out, &record, Vec::new())
                                .map_err(write)?;
                        }
                    }
                }
            }
            Seen::Connection { up } => {
                if up {
                    notices.push(format!("server {}: connected", fleet.url));
                } else {
                    notices.push(format!(
                        "server {}: lost: every state below may be old",
                        fleet.url
                    ));
                    fleet.loaded = false;
                    fleet.reloading = true;
                    fleet.since_load.clear();
                }
            }
            Seen::Loaded => {
                if fleet.reloading {
                    // Read again after a loss: a session not in the bucket any more went
                    // while the view was away.
                    let gone: Vec<String> = fleet
                        .sessions
                        .keys()
                        .filter(|k| !fleet.since_load.contains(*k))
                        .cloned()
                        .collect();
                    for key in gone {
                        if let Some(gone) = fleet.sessions.remove(&key)
                            && let Some(view) = &mut self.view
                        {
                            view.left(&mut self.out, &gone.name, now).map_err(write)?;
                        }
                    }
                }
                fleet.reloading = false;
                fleet.loaded = true;
                fleet.since_load.clear();
            }
            Seen::Skipped { count } => {
                fleet.skipped += count;
                if fleet.skipped >= fleet.skipped_said.saturating_mul(2).max(1) {
                    fleet.skipped_said = fleet.skipped;
                    notices.push(format!(
                        "{} update(s) so far replaced in the bucket by a later one of the same session before this view read them (a turn that ended in one is not notified)",
                        fleet.skipped
                    ));
                }
            }
            Seen::Malformed { key } => {
                fleet.malformed += 1;
                notices.push(format!(
                    "skipped a message that is no hooktrack record under {key} ({} so far)",
                    fleet.malformed
                ));
            }
        }
        for notice in notices {
            self.notice(&notice)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's `watch --ndjson` line reads back into the facts its own outputs used.
    #[test]
    fn a_record_reads_back_into_what_a_local_update_gives_the_outputs() {
        let record = serde_json::json!({
            "v": 1, "host": "dev-box", "session": "/w/claude", "session_id": "0123456789ab",
            "phase": "blocked", "at": "2026-12-05T10:00:02.000Z",
            "posture": {"presence": "present", "turn": {"phase": "blocked", "epoch": 2,
                "turn_id": "p2", "pending_permissions": 1, "blocked_tool": "Bash"},
                "last_turn": {"result": "success", "epoch": 1, "at": "2026-12-05T10:00:00.000Z"},
                "channel": {"state": "active"}},
            "channel": {"state": "active", "detail": "events flowing"},
            "closed": [], "notices": ["the agent process 7 ended (seen by pidfd)"],
            "agent": "claude-code", "turn_started_at": "2026-12-05T10:00:01.000Z",
            "last_event_at": "2026-12-05T10:00:02.000Z"
        });
        let got = read(&record).expect("a record");
        assert_eq!(got.remote.name, "dev-box:/w/claude 01234567");
        assert_eq!(
            got.remote.agent,
            Some(Agent::from_name("claude").expect("claude"))
        );
        assert_eq!(got.notices.len(), 1);
        let facts = Facts::of_posture(
            &got.remote.name,
            &got.remote.posture,
            got.remote.agent,
            got.remote.turn_started_at,
            None,
        );
        assert_eq!(facts.phase_name(), "blocked");
        assert_eq!(facts.blocked_tool.as_deref(), Some("Bash"));
        assert_eq!(facts.last_result.name(), "success");
        assert_eq!(facts.pane, None);
        // No posture, no time, no host: no hooktrack record.
        for field in ["posture", "at", "host"] {
            let mut broken = record.clone();
            broken.as_object_mut().map(|o| o.remove(field));
            assert!(read(&broken).is_none(), "{field}");
        }
    }

    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        /// What was written so far.
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
        }
    }

    /// A fleet view of a server nothing listens on: the tests feed its sightings by hand.
    fn unreached() -> ViewConfig {
        ViewConfig {
            server: crate::fleet::NatsServer {
                url: "nats://127.0.0.1:1".into(),
                ..Default::default()
            },
        }
    }

    /// A watch of [`unreached`] showing `output`: what it shows, and its notices.
    fn fleet_watch(output: crate::watch::Output) -> (Watch, Shared, Shared) {
        let (out, notices) = (Shared::default(), Shared::default());
        let config = crate::watch::WatchConfig {
            fleet: Some(unreached()),
            output: Some(output),
            ..Default::default()
        };
        let watch =
            Watch::start(config, Box::new(out.clone()), Box::new(notices.clone())).expect("watch");
        (watch, out, notices)
    }

    fn state(host: &str, sid: &str, at: &str, closed: serde_json::Value) -> Seen {
        Seen::State {
            key: format!("{host}.claude-code.{sid}"),
            record: serde_json::json!({
                "v": 1, "host": host, "session": "w", "session_id": sid, "at": at,
                "agent": "claude-code",
                "posture": {"presence": "present", "turn": {"phase": "ready"}},
                "closed": closed, "notices": []
            }),
        }
    }

    /// After the server was lost, the bucket read again is the truth: a session not in
    /// it any more is dropped from the view; a state put again (the same time) does not
    /// tell its ended turn twice. No server is reached: the viewer's sightings are fed
    /// in by hand.
    #[test]
    fn a_reload_drops_what_left_the_bucket_and_tells_an_ended_turn_once() {
        let (mut watch, out, _) = fleet_watch(crate::watch::Output::Lines);
        let turn = serde_json::json!([{"id": 1, "epoch": 1, "turn_id": "p1", "scope": "main",
            "origin": "user", "result": "success", "first_row": 1, "last_row": 3,
            "started_at": null, "ended_at": null, "tool_calls": 0, "ended_by": null}]);
        let t1 = "2026-12-05T10:00:01.000Z";
        for seen in [
            Seen::Loaded,
            state("a", "s1", t1, turn.clone()),
            state("b", "s2", t1, serde_json::json!([])),
            Seen::Connection { up: false },
            // Read again: a's state as it was, b's gone meanwhile.
            state("a", "s1", t1, turn),
            Seen::Loaded,
        ] {
            watch.on_seen(seen).expect("seen");
        }
        watch.housekeeping().expect("redraw");
        let text = out.text();
        assert_eq!(
            text.lines()
                .filter(|l| l.contains("turn p1 ended: success"))
                .count(),
            1,
            "{text}"
        );
        assert!(text.contains("b:w s2: left the fleet"), "{text}");
        let shown: Vec<&str> = text.lines().filter(|l| l.contains("claude-code")).collect();
        assert!(
            shown.iter().all(|l| l.starts_with("a:w s1")) && !shown.is_empty(),
            "{text}"
        );
    }

    /// A host whose heartbeats stopped: `--ndjson` writes each of its sessions' records
    /// again with `"stale": true`, once; its next heartbeat writes them again without.
    #[test]
    fn a_quiet_hosts_sessions_are_written_stale_once_and_current_again() {
        let (mut watch, out, _) = fleet_watch(crate::watch::Output::Ndjson);
        let long_ago = Timestamp::parse_rfc3339("2026-01-01T10:00:00.000Z").expect("a time");
        let t1 = "2026-12-05T10:00:01.000Z";
        for seen in [
            Seen::Loaded,
            Seen::Heartbeat {
                host: "a".into(),
                at: long_ago,
                every: Duration::from_secs(1),
            },
            state("a", "s1", t1, serde_json::json!([])),
            state("b", "s2", t1, serde_json::json!([])),
        ] {
            watch.on_seen(seen).expect("seen");
        }
        watch.housekeeping().expect("housekeeping");
        watch.housekeeping().expect("housekeeping again");
        watch
            .on_seen(Seen::Heartbeat {
                host: "a".into(),
                at: wall_clock(),
                every: Duration::from_secs(1),
            })
            .expect("a heartbeat");
        let text = out.text();
        let records: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let of = |sid: &str| -> Vec<Option<bool>> {
            records
                .iter()
                .filter(|r| r["session_id"] == sid)
                .map(|r| r.get("stale").and_then(serde_json::Value::as_bool))
                .collect()
        };
        assert_eq!(of("s1"), [None, Some(true), None], "{text}");
        assert_eq!(of("s2"), [None], "{text}");
    }

    /// A quiet host's status lines say `stale` where the phase was.
    #[test]
    fn a_quiet_hosts_status_line_says_stale() {
        let mut fleet = Fleet::start(unreached()).expect("fleet");
        let Seen::State { key, record } =
            state("a", "s1", "2026-12-05T10:00:01.000Z", serde_json::json!([]))
        else {
            panic!("state() makes a state");
        };
        let remote = read(&record).expect("a record").remote;
        fleet.sessions.insert(key, remote);
        let now = wall_clock();
        let phase_of = |fleet: &Fleet| {
            fleet
                .lines(now)
                .iter()
                .map(|l| l.text().split_whitespace().nth(3).unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(phase_of(&fleet), ["ready"]);
        fleet.hosts.insert(
            "a".into(),
            Beat {
                at: Timestamp::parse_rfc3339("2026-01-01T10:00:00.000Z").expect("a time"),
                every: Duration::from_secs(1),
                stale: false,
            },
        );
        assert_eq!(fleet.gone_quiet(now).len(), 1);
        assert_eq!(phase_of(&fleet), ["stale"]);
    }

    /// The updates the bucket replaced before the view read them are counted and said at
    /// each doubling of the count, not at each.
    #[test]
    fn skipped_updates_are_counted_and_said_at_each_doubling() {
        let (mut watch, _, notices) = fleet_watch(crate::watch::Output::Ndjson);
        for count in [1, 1, 1, 2, 1] {
            watch.on_seen(Seen::Skipped { count }).expect("seen");
        }
        let text = notices.text();
        let said: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once(" update(s) so far replaced"))
            .filter_map(|(l, _)| l.rsplit(' ').next())
            .collect();
        assert_eq!(said, ["1", "2", "5"], "{text}");
    }
}
