//! [`Watch`]: what a supervisor uses to follow many stores at once, as `hooktrack watch`
//! does. It finds the stores (the paths it is given, glob patterns, and with none the
//! per-user default stores and `hooktrack session`'s stores, including those that appear
//! later), follows every agent session in them through one [`Hub`], drops a session whose
//! agent has been gone for the grace period, writes an agent end it detects to its store
//! ([`record_process_end`]), and hands each update to its outputs: the text or ndjson
//! view on the writer it is handed, tmux user options on the agent's pane, a shell
//! command or a notification per transition.
//!
//! The outputs never block tracking: tmux commands, `--on-change` commands and
//! notifications run on worker threads behind bounded queues, each with a deadline.
//!
//! ```no_run
//! use std::time::Duration;
//! use hooktrack::watch::{Output, Watch, WatchConfig};
//!
//! let config = WatchConfig {
//!     paths: vec!["/tmp/session".into()],
//!     output: Some(Output::Ndjson),
//!     ..WatchConfig::default()
//! };
//! let mut watch = Watch::start(config, Box::new(std::io::stdout()), Box::new(std::io::stderr()))?;
//! while watch.step(Duration::from_millis(200))? {}
//! watch.finish()?;
//! # Ok::<(), hooktrack::watch::WatchError>(())
//! ```

mod bounded;
mod config;
mod discover;
mod facts;
mod jump;
mod notify;
mod record;
#[cfg(feature = "fleet")]
mod remote;
mod tmux;
mod trust;
mod view;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::store::StorePaths;
use hooktrack_live::hub::{Hub, HubConfig, SessionId, wall_clock};
use hooktrack_live::locate::resolve_store;
use hooktrack_live::session::{Session, SessionConfig, TmuxServer, Update};

use discover::{Discover, Discovered, Found, is_pattern};
use facts::Facts;
use notify::{Action, Notifier};
use tmux::Tmux;

use crate::safe_text::{Notation, SafeWriter};
use view::{Shown, StatusLine, View, pane_facts, session_name, short_id, status_line};

pub use bounded::RunError;
pub use config::{WatchConfig, WatchError, default_folders};
pub use jump::{JumpError, jump};
pub use notify::{DESKTOP_GAP, Desktop};
pub use record::record_process_end;
pub use tmux::{
    OPTIONS as TMUX_OPTIONS, SERVER_OPTIONS as TMUX_SERVER_OPTIONS, TmuxError, TmuxTarget,
    is_pane_target,
};
pub use view::Output;

/// A store followed: how it is shown and where it is.
struct Store {
    name: String,
    paths: StorePaths,
    /// The pane given for it (`WatchConfig::panes`).
    pane: Option<String>,
    /// Found after the first look: its first update is news, not history.
    fresh: bool,
    /// The path it was named by, while its store is not there yet (looked for again).
    pending: Option<PathBuf>,
    /// One `hooktrack session` run's store: let go once all its sessions are dropped.
    one_run: bool,
}

/// The home of the agent a store is named for (its folder's name is the agent's store
/// name: `agents/copilot/`, `hook-observation/claude/`), among `homes`; a family's shared
/// store (`kimi`) takes its first agent's (Kimi Code's).
fn agent_home_of(
    homes: &[(hooktrack_core::agent::Agent, PathBuf)],
    paths: &StorePaths,
) -> Option<PathBuf> {
    let name = paths.dir.as_path().file_name()?.to_str()?;
    homes
        .iter()
        .find(|(agent, _)| agent.store_name() == name)
        .map(|(_, home)| home.clone())
}

/// Many stores followed; see the module's documentation.
pub struct Watch {
    hub: Hub,
    updates: Receiver<(SessionId, Update)>,
    session: SessionConfig,
    /// Each agent's home ([`WatchConfig::agent_homes`]).
    agent_homes: Vec<(hooktrack_core::agent::Agent, PathBuf)>,
    discover: Discover,
    next_look: Instant,
    look_every: Duration,
    stores: HashMap<SessionId, Store>,
    order: Vec<SessionId>,
    latest: HashMap<SessionId, Update>,
    dropped: HashSet<(SessionId, Option<String>)>,
    /// The stores whose first update was seen (the notifiers' baseline).
    looked: HashSet<SessionId>,
    /// Agent ends already written (or found written) to their store.
    recorded: HashSet<(SessionId, Option<String>, u32)>,
    record_ends: bool,
    grace_ms: i64,
    next_redraw: Instant,
    view: Option<Box<dyn View>>,
    out: Box<dyn Write>,
    tmux: Option<Tmux>,
    on_change: Option<Notifier>,
    notify: Option<Notifier>,
    #[cfg(feature = "fleet")]
    publisher: Option<crate::fleet::Publisher>,
    /// The publisher's refused writes when first said (said once).
    #[cfg(feature = "fleet")]
    refusals_said: u64,
    /// Every host's sessions, read from a NATS server instead of stores.
    #[cfg(feature = "fleet")]
    fleet: Option<remote::Fleet>,
    warnings: Receiver<String>,
}

/// How often the views redraw the ages when nothing else happens.
const REDRAW: Duration = Duration::from_secs(1);
/// Stores are looked for at least this often (the re-check, when shorter).
const LOOK_EVERY: Duration = Duration::from_secs(1);

impl Watch {
    /// Finds the stores there now (their contents are history: not notified), starts
    /// the outputs' workers and the hub. `out` gets the view, `notices` what the ndjson
    /// view cannot put among its lines.
    pub fn start(
        config: WatchConfig,
        out: Box<dyn Write>,
        notices: Box<dyn Write>,
    ) -> Result<Watch, WatchError> {
        let mut given = Vec::new();
        let mut discover = Discover::default();
        for path in &config.paths {
            if is_pattern(path) {
                discover.pattern(path.clone());
                continue;
            }
            // A store not created yet is fine (no events yet), a path to nowhere is a typo.
            let parent_exists = path
                .parent()
                .is_none_or(|p| p.as_os_str().is_empty() || p.exists());
            if !path.exists() && !parent_exists {
                return Err(WatchError::NoSuchPath { path: path.clone() });
            }
            let paths = resolve_store(path).map_err(|source| WatchError::Resolve {
                path: path.clone(),
                source,
            })?;
            given.push((path.clone(), paths));
        }
        if config.checkpoint.is_some() && (given.len() != 1 || config.paths.len() != 1) {
            return Err(WatchError::CheckpointNeedsOnePath);
        }
        #[cfg(feature = "fleet")]
        let from_server = config.fleet.is_some();
        #[cfg(not(feature = "fleet"))]
        let from_server = false;
        if from_server && !config.paths.is_empty() {
            return Err(WatchError::ServerAndStores);
        }
        if config.paths.is_empty() && !from_server {
            if config.default_stores.is_none() && config.session_roots.is_none() {
                return Err(WatchError::NothingToWatch);
            }
            if let Some(folder) = &config.default_stores {
                discover.stores_in(folder.clone());
            }
            if let Some(folder) = &config.session_roots {
                discover.session_roots_in(folder.clone());
            }
        }
        let mut panes: HashMap<String, String> = HashMap::new();
        for (path, pane) in &config.panes {
            if !given.iter().any(|(p, _)| p.display().to_string() == *path) {
                return Err(WatchError::PaneNotWatched {
                    path: path.clone(),
                    pane: pane.clone(),
                });
            }
            panes.insert(path.clone(), pane.clone());
        }
        let (warn_tx, warnings) = mpsc::channel::<String>();
        let worker = |what| move |source| WatchError::Worker { what, source };
        let tmux = match &config.tmux {
            Some(target) => Some(
                Tmux::start(target.clone(), wall_clock(), warn_tx.clone())
                    .map_err(worker("tmux publisher"))?,
            ),
            None => None,
        };
        let on_change = match &config.on_change {
            Some(command) => Some(
                Notifier::start(
                    Action::Shell(command.clone()),
                    config.command_timeout,
                    warn_tx.clone(),
                )
                .map_err(worker("--on-change runner"))?,
            ),
            None => None,
        };
        let notify = match &config.notify {
            Some(desktop) => Some(
                Notifier::start(
                    Action::Desktop(desktop.clone()),
                    config.command_timeout,
                    warn_tx.clone(),
                )
                .map_err(worker("--notify worker"))?,
            ),
            None => None,
        };
        drop(warn_tx);
        #[cfg(feature = "fleet")]
        let publisher = match config.publish.clone() {
            Some(publish) => Some(
                crate::fleet::Publisher::start(publish)
                    .map_err(|source| WatchError::Publish { source })?,
            ),
            None => None,
        };
        #[cfg(feature = "fleet")]
        let fleet = match config.fleet.clone() {
            Some(view) => {
                Some(remote::Fleet::start(view).map_err(|source| WatchError::View { source })?)
            }
            None => None,
        };
        let (hub, updates) = Hub::start(HubConfig {
            recheck: config.recheck,
        })
        .map_err(|source| WatchError::Hub { source })?;
        let session = SessionConfig {
            provider: config.provider,
            checkpoint: config.checkpoint.clone(),
            // The tmux supervisor reads an agent's pane while it waits on the user, on the
            // server it publishes to, to show it running again once the dialog is gone.
            read_screens: config.tmux.as_ref().map(|t| TmuxServer {
                socket: t.socket.clone(),
            }),
            ..SessionConfig::default()
        };
        let width = given
            .iter()
            .map(|(p, _)| p.display().to_string().chars().count())
            .max()
            .unwrap_or(0);
        let mut watch = Watch {
            hub,
            updates,
            session,
            agent_homes: config.agent_homes.clone(),
            discover,
            next_look: Instant::now(),
            look_every: LOOK_EVERY.min(config.recheck),
            stores: HashMap::new(),
            order: Vec::new(),
            latest: HashMap::new(),
            dropped: HashSet::new(),
            looked: HashSet::new(),
            recorded: HashSet::new(),
            record_ends: config.record_process_ends,
            grace_ms: i64::try_from(config.drop_after.as_millis()).unwrap_or(i64::MAX),
            next_redraw: Instant::now() + REDRAW,
            view: config
                .output
                .map(|o| o.view(safe_writer(notices, Notation::Text))),
            out: match config.output {
                Some(Output::Ndjson) => safe_writer(out, Notation::Json),
                Some(Output::Lines) => safe_writer(out, Notation::Text),
                // The live view writes its own escapes and makes its lines safe itself.
                Some(Output::Live) | None => out,
            },
            tmux,
            on_change,
            notify,
            #[cfg(feature = "fleet")]
            publisher,
            #[cfg(feature = "fleet")]
            refusals_said: 0,
            #[cfg(feature = "fleet")]
            fleet,
            warnings,
        };
        for (path, paths) in given {
            let name = path.display().to_string();
            let pending = (!paths.events.exists()).then(|| path.clone());
            watch.add(Store {
                name: format!("{name:<width$}"),
                pane: panes.remove(&name),
                paths,
                fresh: false,
                pending,
                one_run: false,
            });
        }
        // What is there at start is history, like the given paths' contents.
        watch.look(false);
        // Said once the first look is done: what appears from now on is news.
        #[cfg(feature = "fleet")]
        if let Some(fleet) = &watch.fleet {
            let said = format!("watching every host's sessions on {}", fleet.url());
            watch.notice(&said)?;
        }
        if config.paths.is_empty() && !from_server {
            let mut said = Vec::new();
            if let Some(f) = &config.default_stores {
                said.push(format!("every default store in {}", f.display()));
            }
            if let Some(f) = &config.session_roots {
                said.push(format!("every session's store in {}", f.display()));
            }
            watch.notice(&format!("watching {}", said.join(" and ")))?;
        }
        for pattern in config.paths.iter().filter(|p| is_pattern(p)) {
            watch.notice(&format!(
                "watching what {} matches, now and later",
                pattern.display()
            ))?;
        }
        Ok(watch)
    }

    /// Waits up to `wait` for an update and hands it to the outputs; looks for new
    /// stores, drops sessions whose agent has been gone for the grace period, redraws.
    /// `false` once the hub has stopped.
    pub fn step(&mut self, wait: Duration) -> Result<bool, WatchError> {
        if Instant::now() >= self.next_look {
            self.look(true);
        }
        let wait = wait
            .min(self.next_redraw.saturating_duration_since(Instant::now()))
            .min(self.next_look.saturating_duration_since(Instant::now()));
        #[cfg(feature = "fleet")]
        if let Some(fleet) = &self.fleet {
            // A fleet's watch follows no store: the viewer is what it waits on.
            match fleet.recv(wait) {
                Ok(seen) => self.on_seen(seen)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(false),
            }
            self.housekeeping()?;
            return Ok(true);
        }
        match self.updates.recv_timeout(wait) {
            Ok((id, update)) => self.on_update(id, update)?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(false),
        }
        self.housekeeping()?;
        Ok(true)
    }

    /// Ends the view's last frame, stops following, and removes what the outputs
    /// published (tmux options), each removal bounded.
    pub fn finish(mut self) -> Result<(), WatchError> {
        let result = match &mut self.view {
            Some(view) => view.finish(&mut self.out),
            None => self.out.flush(),
        };
        drop(self.hub);
        if let Some(t) = self.tmux {
            t.finish();
        }
        for n in [self.on_change, self.notify].into_iter().flatten() {
            n.finish();
        }
        #[cfg(feature = "fleet")]
        if let Some(publisher) = self.publisher {
            publisher.finish(Duration::from_secs(2));
        }
        result.map_err(|source| WatchError::Write { source })
    }

    /// The sessions' configuration for a store: with the home of the agent the store is
    /// named for (`agents/<name>/`, `hook-observation/<name>/`), where its session file is.
    fn session_config(&self, paths: &StorePaths) -> SessionConfig {
        SessionConfig {
            agent_home: agent_home_of(&self.agent_homes, paths),
            ..self.session.clone()
        }
    }

    fn add(&mut self, store: Store) {
        if let Some(why) = trust::refusal(&store.paths) {
            let _ = self.notice(&format!("{}: {why}", store.name.trim_end()));
            return;
        }
        if let Some(cleaned) = trust::clean(&store.paths) {
            let _ = self.notice(&cleaned);
        }
        let id = self.hub.add(Session::open(
            store.paths.clone(),
            self.session_config(&store.paths),
        ));
        self.stores.insert(id, store);
        self.order.push(id);
    }

    /// New stores (`fresh`: found after the start), and given paths whose store appeared
    /// somewhere else than first resolved (an empty folder that became a store).
    fn look(&mut self, fresh: bool) {
        self.next_look = Instant::now() + self.look_every;
        for Discovered {
            found,
            at_start,
            one_run,
        } in self.discover.look()
        {
            let (name, paths, pending) = match found {
                Found::Store { name, paths } => (name, paths, None),
                Found::Path(path) => match resolve_store(&path) {
                    Ok(paths) => {
                        let pending = (!paths.events.exists()).then(|| path.clone());
                        (path.display().to_string(), paths, pending)
                    }
                    Err(e) => {
                        let _ = self.notice(&format!("{}: {}", path.display(), error_chain(&e)));
                        continue;
                    }
                },
            };
            self.add(Store {
                name,
                paths,
                pane: None,
                // Found late because the first look was full: still what the logs held.
                fresh: fresh && !at_start,
                pending,
                one_run,
            });
        }
        let moved: Vec<(SessionId, StorePaths)> = self
            .stores
            .iter()
            .filter_map(|(id, s)| {
                let path = s.pending.as_ref()?;
                let now = resolve_store(path).ok()?;
                (now != s.paths && now.events.exists()).then_some((*id, now))
            })
            .collect();
        for (old, paths) in moved {
            let Some(mut store) = self.stores.remove(&old) else {
                continue;
            };
            if let Some(why) = trust::refusal(&paths) {
                self.hub.remove(old);
                self.order.retain(|o| *o != old);
                let _ = self.notice(&format!("{}: {why}", store.name.trim_end()));
                continue;
            }
            self.hub.remove(old);
            self.latest.remove(&old);
            self.dropped.retain(|(id, _)| *id != old);
            store.paths = paths;
            store.pending = None;
            // Its first rows were written after the start: news.
            store.fresh = true;
            let id = self.hub.add(Session::open(
                store.paths.clone(),
                self.session_config(&store.paths),
            ));
            if let Some(slot) = self.order.iter_mut().find(|o| **o == old) {
                *slot = id;
            }
            self.stores.insert(id, store);
        }
        let mut refused = Vec::new();
        for (id, store) in &mut self.stores {
            if store.pending.is_some() && store.paths.events.exists() {
                store.pending = None;
                if let Some(why) = trust::refusal(&store.paths) {
                    refused.push((*id, format!("{}: {why}", store.name.trim_end())));
                }
            }
        }
        for (id, why) in refused {
            self.hub.remove(id);
            self.stores.remove(&id);
            self.order.retain(|o| *o != id);
            let _ = self.notice(&why);
        }
    }

    fn notice(&mut self, text: &str) -> Result<(), WatchError> {
        match &mut self.view {
            Some(view) => view
                .notice(&mut self.out, text)
                .map_err(|source| WatchError::Write { source }),
            None => Ok(()),
        }
    }

    fn on_update(&mut self, id: SessionId, update: Update) -> Result<(), WatchError> {
        let Some(store) = self.stores.get(&id) else {
            // A store replaced since (its path resolved elsewhere): its last words.
            return Ok(());
        };
        let name = store.name.trim_end().to_owned();
        let given = store.pane.clone();
        let fresh = store.fresh;
        // An agent's end is in the store before any output says it (a reader of the line
        // finds its row); it comes once per agent, never on a turn's hot path.
        if self.record_ends {
            self.record_ends_of(id, &update);
        }
        // Then the line: what is queued below for the other outputs wakes their workers,
        // and the `tmux` or `notify-send` each then starts, would otherwise run before it
        // on a loaded machine (issue 33: the line came hundreds of milliseconds after the
        // update reached this thread).
        if let Some(view) = &mut self.view {
            let dropped = &self.dropped;
            view.update(&mut self.out, &name, &update, &|sid| {
                dropped.contains(&(id, sid.map(str::to_owned)))
            })
            .map_err(|source| WatchError::Write { source })?;
        }
        let dropped = &self.dropped;
        if let Some(t) = &mut self.tmux {
            for facts in pane_facts(&name, &update, given.as_deref(), |sid| {
                dropped.contains(&(id, sid.map(str::to_owned)))
            }) {
                t.update(&facts, wall_clock());
            }
        }
        // Per session of the store: a session that blocks or ends while another's rows
        // came last is told too. Sessions of a store's first update are what the logs
        // held, unless the store itself appeared after the start; one that appears later
        // is news from its first update.
        let first_look = self.looked.insert(id);
        let news = fresh || !first_look;
        if self.on_change.is_some() || self.notify.is_some() {
            for (sid, one) in update.per_session() {
                let key = format!(
                    "{id:?} {}",
                    one.current().session_id.as_deref().unwrap_or("")
                );
                if self
                    .dropped
                    .contains(&(id, one.current().session_id.clone()))
                {
                    continue;
                }
                let facts = Facts::of(&session_name(&name, &update, sid), &one, given.as_deref());
                for n in [&mut self.on_change, &mut self.notify]
                    .into_iter()
                    .flatten()
                {
                    n.update(&key, news, &facts, one.at, one.closed());
                }
            }
        }
        #[cfg(feature = "fleet")]
        if let Some(publisher) = &self.publisher {
            for (sid, one) in update.per_session() {
                // Nothing read yet: no session to show (its id comes with its rows).
                if one.events == 0
                    || self
                        .dropped
                        .contains(&(id, one.current().session_id.clone()))
                {
                    continue;
                }
                // Named by its session id even alone in its store: a fleet's sessions
                // are told apart by host, agent and id.
                let sid = sid.or(one.current().session_id.as_deref());
                let Ok(line) = serde_json::to_vec(&view::ndjson_line(&name, sid, &one)) else {
                    continue;
                };
                let agent = one.agent().map_or("unknown", |a| a.name());
                publisher.publish(agent, sid.unwrap_or(&name), &line);
            }
        }
        self.latest.insert(id, update);
        Ok(())
    }

    /// Writes each agent end the update shows, seen from the pid its rows name, to the
    /// store (once: [`record_process_end`] looks for it first).
    fn record_ends_of(&mut self, id: SessionId, update: &Update) {
        let Some(store) = self.stores.get(&id) else {
            return;
        };
        let mut problems = Vec::new();
        // The ends the tracker judged (which pid, which session, and when it counts: its
        // rule, the one a replay of the store applies to the row written here).
        for end in &update.process_ends {
            let (pid, at) = (end.pid, end.at);
            if !self.recorded.insert((id, end.session_id.clone(), pid)) {
                continue;
            }
            let pane = update
                .sessions
                .iter()
                .find(|s| s.session_id == end.session_id)
                .and_then(|s| s.tmux_pane.as_deref());
            if let Err(e) =
                record_process_end(&store.paths, end.session_id.as_deref(), pane, pid, at)
            {
                problems.push(format!(
                    "{}: the end of agent process {pid} was not written to the store: {}",
                    store.name.trim_end(),
                    error_chain(&e)
                ));
            }
        }
        for problem in problems {
            let _ = self.notice(&problem);
        }
    }

    /// Stops following the store of a `hooktrack session` run whose sessions were all
    /// dropped (its agent is gone and its launcher has ended): room for the next runs.
    fn let_go_of_finished_runs(&mut self) {
        let finished: Vec<SessionId> = self
            .order
            .iter()
            .filter(|id| self.stores.get(id).is_some_and(|s| s.one_run))
            .filter(|id| {
                self.latest.get(id).is_some_and(|u| {
                    !u.sessions.is_empty()
                        && u.sessions
                            .iter()
                            .all(|s| self.dropped.contains(&(**id, s.session_id.clone())))
                })
            })
            .copied()
            .collect();
        for id in finished {
            self.hub.remove(id);
            self.stores.remove(&id);
            self.latest.remove(&id);
            self.looked.remove(&id);
            self.order.retain(|o| *o != id);
            self.dropped.retain(|(o, _)| *o != id);
            self.discover.release();
        }
    }

    /// Drops sessions whose agent has been gone for the grace period, passes on the
    /// workers' warnings, and redraws when due.
    fn housekeeping(&mut self) -> Result<(), WatchError> {
        let write = |source| WatchError::Write { source };
        let now = wall_clock();
        for id in &self.order {
            let (Some(update), Some(store)) = (self.latest.get(id), self.stores.get(id)) else {
                continue;
            };
            let name = store.name.trim_end();
            for s in &update.sessions {
                let key = (*id, s.session_id.clone());
                let gone = s.gone_since.is_some_and(|g| {
                    now.as_millis().saturating_sub(g.as_millis()) >= self.grace_ms
                });
                if !gone {
                    self.dropped.remove(&key);
                    continue;
                }
                if !self.dropped.insert(key) {
                    continue;
                }
                if let Some(view) = &mut self.view {
                    view.dropped(
                        &mut self.out,
                        name,
                        s.session_id.as_deref(),
                        s.gone_since,
                        now,
                    )
                    .map_err(write)?;
                }
                #[cfg(feature = "fleet")]
                if let Some(publisher) = &self.publisher {
                    let agent = s.agent.map_or("unknown", |a| a.name());
                    publisher.forget(agent, s.session_id.as_deref().unwrap_or(name));
                }
                if let Some(t) = &mut self.tmux
                    && let Some(pane) = s.tmux_pane.as_deref().or(store.pane.as_deref())
                {
                    t.forget(pane, &session_name(name, update, s.session_id.as_deref()));
                }
            }
        }
        self.let_go_of_finished_runs();
        #[cfg(feature = "fleet")]
        if let Some(publisher) = &self.publisher {
            // A refused write is no outage: retrying will not help; the person must know,
            // once (the publisher retries less and less often, up to every minute).
            let refused = publisher.stats().refused;
            if refused > 0 && self.refusals_said == 0 {
                self.refusals_said = refused;
                self.notice(&format!(
                    "fleet: the NATS server refused a write: this host's user may not publish its sessions there (retried less and less often, at most every {} s; said once)",
                    crate::fleet::RETRY_CAP.as_secs()
                ))?;
            }
        }
        #[cfg(feature = "fleet")]
        self.fleet_housekeeping(now)?;
        let warnings: Vec<String> = self.warnings.try_iter().collect();
        for warning in warnings {
            self.notice(&warning)?;
        }
        let due = Instant::now() >= self.next_redraw;
        if !due && !self.view.as_ref().is_some_and(|v| v.redraws_on_update()) {
            return Ok(());
        }
        if due && let Some(t) = &mut self.tmux {
            t.tick(now);
        }
        self.next_redraw = Instant::now() + REDRAW;
        let Some(view) = &mut self.view else {
            return Ok(());
        };
        // A store of several session_ids: one status line per session.
        let local: Vec<StatusLine> = self
            .order
            .iter()
            .filter_map(|id| Some((id, self.stores.get(id)?, self.latest.get(id)?)))
            .flat_map(|(id, store, update)| {
                let name = &store.name;
                update
                    .per_session()
                    .into_iter()
                    .filter(|(_, one)| {
                        !self
                            .dropped
                            .contains(&(*id, one.current().session_id.clone()))
                    })
                    .map(|(session, update)| match session {
                        Some(sid) => status_line(
                            &format!("{name} {}", short_id(sid)),
                            &Shown::of(&update),
                            now,
                        ),
                        None => status_line(name, &Shown::of(&update), now),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        // A fleet's watch has remote sessions only: the local list is empty then.
        #[cfg(feature = "fleet")]
        let lines = match &self.fleet {
            Some(fleet) => fleet.lines(now),
            None => local,
        };
        #[cfg(not(feature = "fleet"))]
        let lines = local;
        view.redraw(&mut self.out, &lines).map_err(write)
    }
}

/// `out` through [`SafeWriter`]: text from agents reaches the output shown, never as
/// terminal control.
fn safe_writer(out: Box<dyn Write>, notation: Notation) -> Box<dyn Write> {
    Box::new(SafeWriter::new(out, notation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooktrack_core::agent::Agent;

    /// A store's sessions find the session file of the agent the store is named for (a
    /// default store, a session's): Copilot's log is where a permission's answer is.
    #[test]
    fn a_store_follows_the_home_of_the_agent_it_is_named_for() {
        // Two agents with stores of their own, and a third whose home is not known.
        let mut agents = Agent::ALL.iter().copied();
        let first = agents.next().expect("an agent");
        let second = agents
            .find(|a| a.store_name() != first.store_name())
            .expect("a second store");
        let third = agents
            .find(|a| {
                ![first, second]
                    .iter()
                    .any(|o| o.store_name() == a.store_name())
            })
            .expect("a third store");
        let homes = vec![
            (first, PathBuf::from("/h/first")),
            (second, PathBuf::from("/h/second")),
        ];
        let store = |dir: &str, agent: Agent| {
            StorePaths::in_dir(PathBuf::from(dir).join(agent.store_name()))
        };
        assert_eq!(
            agent_home_of(&homes, &store("/s/hooktrack/agents", second)),
            Some(PathBuf::from("/h/second"))
        );
        assert_eq!(
            agent_home_of(&homes, &store("/s/sessions/r/hook-observation", first)),
            Some(PathBuf::from("/h/first"))
        );
        assert_eq!(
            agent_home_of(&homes, &store("/s/hooktrack/agents", third)),
            None
        );
        let named_for_none = StorePaths::in_dir(PathBuf::from("/s/some/events"));
        assert_eq!(agent_home_of(&homes, &named_for_none), None);
    }

    /// What the writer saw queued for the pane when each line was written.
    struct Probe {
        queued: std::rc::Rc<tmux::Queued>,
        seen: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
    }

    impl Write for Probe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if buf.ends_with(b"\n") {
                self.seen.borrow_mut().push(self.queued.for_pane("%0"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue 33: on a loaded machine the line came hundreds of milliseconds after its
    /// update reached the watch, behind the tmux options queued first (their worker woke
    /// and started `tmux`). The line is written before anything is queued for the pane.
    #[test]
    fn an_update_is_printed_before_its_pane_options_are_queued() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("opencode");
        std::fs::create_dir(&store).expect("store");
        let recorded = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/corpus/opencode/opencode-1.18.33-tui-permissions.ndjson"
        );
        let rows: String = std::fs::read_to_string(recorded)
            .expect("the recording")
            .lines()
            .take(5)
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            rows.contains(r#""tmux_pane":"%0""#),
            "the rows name the pane"
        );
        std::fs::write(store.join("events.ndjson"), rows).expect("rows");
        let target = TmuxTarget {
            socket: Some("hooktrack-unit-never-started".into()),
            timeout: Duration::from_secs(1),
        };
        let (tmux, queued) = Tmux::without_worker(target, wall_clock());
        let queued = std::rc::Rc::new(queued);
        let seen = std::rc::Rc::default();
        let out = Probe {
            queued: std::rc::Rc::clone(&queued),
            seen: std::rc::Rc::clone(&seen),
        };
        let config = WatchConfig {
            paths: vec![store],
            output: Some(Output::Ndjson),
            ..WatchConfig::default()
        };
        let mut watch =
            Watch::start(config, Box::new(out), Box::new(std::io::sink())).expect("watch");
        watch.tmux = Some(tmux);
        for _ in 0..30 {
            if !seen.borrow().is_empty() {
                break;
            }
            assert!(
                watch.step(Duration::from_secs(1)).expect("step"),
                "hub gone"
            );
        }
        assert_eq!(
            *seen.borrow(),
            [0],
            "the line, with nothing queued for %0 yet"
        );
        assert!(queued.for_pane("%0") > 0, "then the pane's options");
    }
}
