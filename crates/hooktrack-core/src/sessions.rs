//! One store, several agent sessions: rows routed by the payload's `session_id` to one
//! [`Pipeline`] per session, so each gets a ledger of its own.
//!
//! A store holds more than one session when an agent was started by hand with the routing
//! environment of another, or after `/clear` (a new `session_id` in the same process).
//! Mixed into one pipeline their turns interleave and the correlator sees restarts that
//! never happened (`session_restart_without_end`, `session_end_while_absent`).
//!
//! Rules: a row with a `session_id` goes to that session's pipeline (a new one at its
//! first row); a row without one, and a line that is not a row at all, goes to the current
//! session (the one the last routed row went to), except that a row which leaves its own
//! session absent does not take that place from another session still present: Kimi Code
//! 2.1.0's `/new` sends the new session's `SessionStart` before the old one's `SessionEnd`,
//! and the agent runs on in the new one. The number of sessions is bounded: past
//! [`MAX_SESSIONS`] a new id's rows go to the current session and are counted
//! ([`Sessions::overflow_rows`]).
//!
//! An agent whose payloads name no session on every event (Letta Code:
//! [`SessionKey::AgentProcess`]) has its rows routed by the agent process that ran the
//! hook instead, the envelope's `agent_pid`, as if it were their `session_id`
//! (`pid:<pid>`, [`process_key`]): two of its processes writing one store are two
//! sessions, and its `Stop`, which names nothing, goes to its own process's turn.
//!
//! A session whose first row names a known session as its `calling_session_id` (Factory
//! Droid runs a `Task` subagent as a process and session of its own) is that session's
//! subagent: its rows go to the caller's pipeline, named as the subagent's by an
//! `agent_id` equal to their own `session_id`, as GitHub Copilot CLI names its subagents'.
//! The caller's `SubagentStop` names no subagent: it is given the id of the oldest of its
//! subagents not stopped yet (they report back in the order they were started, as far as
//! a payload can tell: it names the task, not the session).

use crate::agents::SessionKey;
use crate::pipeline::{Fed, Pipeline};
use crate::posture::Presence;
use crate::provider::ProviderChoice;
use crate::read::ReadLine;
use crate::row::{LineError, Row, parse_read_line};

/// The most sessions one store is split into.
pub const MAX_SESSIONS: usize = 64;

/// One session of a store: its id (`None` until a row names one) and its pipeline.
#[derive(Debug)]
pub struct SessionPipeline {
    pub session_id: Option<String>,
    pub pipeline: Pipeline,
    /// Lines routed here.
    pub lines: u64,
}

/// A subagent that runs as a session of its own.
#[derive(Debug)]
struct Child {
    /// Its own `session_id`.
    id: String,
    /// The session that called it (an index into `sessions`).
    caller: usize,
    /// Its caller's `SubagentStop` for it has not come yet.
    running: bool,
}

#[derive(Debug)]
pub struct Sessions {
    choice: ProviderChoice,
    sessions: Vec<SessionPipeline>,
    current: usize,
    /// The session the last line went to (the current one, unless that line ended its
    /// session while another was present).
    routed: usize,
    limit: usize,
    overflow_rows: u64,
    /// Subagent sessions, at most `limit` of them.
    children: Vec<Child>,
    /// The newest generation the store's records announced, for every session (see
    /// `deliveries.rs`), new ones and restarted ones included.
    announced: Option<u64>,
    /// Every session's pipeline reads what tool calls act on ([`Pipeline::with_tool_arguments`]).
    tool_arguments: bool,
}

impl Sessions {
    /// Splits by session, at most [`MAX_SESSIONS`].
    pub fn new(choice: ProviderChoice) -> Self {
        Self::with_limit(choice, MAX_SESSIONS)
    }

    /// Splits into at most `limit` sessions (1: one pipeline for every row, as a store
    /// was read before it was split).
    pub fn with_limit(choice: ProviderChoice, limit: usize) -> Self {
        Self {
            choice,
            sessions: vec![SessionPipeline {
                session_id: None,
                pipeline: Pipeline::new(choice),
                lines: 0,
            }],
            current: 0,
            routed: 0,
            limit: limit.max(1),
            overflow_rows: 0,
            children: Vec::new(),
            announced: None,
            tool_arguments: false,
        }
    }

    /// Every session's pipeline, now and later, reads what each tool call acts on (for a
    /// live reader's summary; see [`Pipeline::with_tool_arguments`]).
    pub fn with_tool_arguments(mut self, on: bool) -> Self {
        self.tool_arguments = on;
        for session in &mut self.sessions {
            session.pipeline.set_tool_arguments(on);
        }
        self
    }

    /// The store announced `generation` (its collector's or launcher's record): every
    /// session's rows of it are admitted.
    pub fn announce_generation(&mut self, generation: u64) {
        self.announced = self.announced.max(Some(generation));
        for session in &mut self.sessions {
            session.pipeline.announce_generation(generation);
        }
    }

    fn new_pipeline(&self) -> Pipeline {
        let mut pipeline = Pipeline::new(self.choice).with_tool_arguments(self.tool_arguments);
        if let Some(generation) = self.announced {
            pipeline.announce_generation(generation);
        }
        pipeline
    }

    /// Feeds one line to the pipeline of its session, which is [`Sessions::routed`]
    /// afterwards (and [`Sessions::current`], see the module's rules).
    ///
    /// The line is parsed once, here: the router reads the row's `session_id` and hands
    /// the parsed row on ([`Pipeline::feed_parsed`]), so a store of one session costs what
    /// one pipeline costs.
    pub fn feed<'a>(&mut self, line: ReadLine<'a>) -> Fed<'a> {
        let (number, parsed) = parse_read_line(line);
        match parsed {
            Ok(mut row) => self.feed_row(number, Ok(&mut row)),
            Err(e) => self.feed_row(number, Err(e)),
        }
    }

    /// Feeds a line parsed by the caller (perhaps ahead, on another thread: see
    /// [`Pipeline::feed_row`]) to the pipeline of its session, which is
    /// [`Sessions::current`] afterwards. A line that is not a row goes to the current
    /// session.
    ///
    /// Only the step is returned (not the index beside it): the step is a few hundred
    /// bytes, and a pair made a copy of it on every line (3.7% of a one-thread replay).
    pub fn feed_row<'a>(
        &mut self,
        number: u64,
        mut parsed: Result<&mut Row<'a>, LineError>,
    ) -> Fed<'a> {
        let before = self.current;
        if let Ok(row) = &mut parsed
            && self.limit > 1
        {
            self.adopt_subagent(row);
            // `route` makes the row's session current. A subagent's own turn rows
            // (GitHub Copilot CLI's prompt and `Stop` inside a `task` call) name the
            // subagent as their session: they belong to the session running it.
            match self.process_key(row) {
                Some(key) => self.route(Some(&key)),
                None => self.route(own_session(row)),
            };
        }
        self.routed = self.current;
        let session = &mut self.sessions[self.current];
        session.lines += 1;
        let fed = match parsed {
            Ok(row) => session.pipeline.feed_row(number, row),
            Err(e) => session.pipeline.feed_parsed(number, Err(e)),
        };
        if self.current != before && self.left_for(before) {
            self.current = before;
        }
        fed
    }

    /// A row of a subagent's own session (see the module's doc) is named as the
    /// subagent's (`agent_id` = its `session_id`) and its caller's session made current.
    fn adopt_subagent(&mut self, row: &mut Row<'_>) {
        let p = &mut row.payload;
        let Some(id) = p.session_id.as_deref() else {
            return;
        };
        if p.agent_id.is_some() {
            return;
        }
        if row.event_name == "SubagentStop" {
            if let Some(child) = self
                .children
                .iter_mut()
                .find(|c| c.running && self.sessions[c.caller].session_id.as_deref() == Some(id))
            {
                child.running = false;
                p.agent_id = Some(child.id.clone().into());
            }
            return;
        }
        let caller = match self.children.iter().find(|c| c.id == id) {
            Some(child) => child.caller,
            None => {
                let Some(parent) = p.calling_session_id.as_deref().filter(|c| *c != id) else {
                    return;
                };
                // Only a new session becomes a subagent: one already split off keeps its
                // own ledger.
                if self
                    .sessions
                    .iter()
                    .any(|s| s.session_id.as_deref() == Some(id))
                    || self.children.len() >= self.limit
                {
                    return;
                }
                let Some(caller) = self
                    .sessions
                    .iter()
                    .position(|s| s.session_id.as_deref() == Some(parent))
                else {
                    return;
                };
                self.children.push(Child {
                    id: id.to_owned(),
                    caller,
                    running: true,
                });
                caller
            }
        };
        p.agent_id = p.session_id.clone();
        self.current = caller;
    }

    /// The routed session is absent after its line while session `other` is present: the
    /// line ended a session the agent already left for `other`. Only checked when the
    /// line switched sessions (rare), so the posture is built only then.
    fn left_for(&self, other: usize) -> bool {
        self.sessions[self.routed].pipeline.hook_posture().presence == Presence::Absent
            && self.sessions[other].pipeline.hook_posture().presence == Presence::Present
    }

    /// The session of a row naming `id` (`None`: no id, or not a row), made current.
    fn route(&mut self, id: Option<&str>) -> usize {
        let Some(id) = id else {
            return self.current;
        };
        // The current session first: consecutive rows nearly always share it.
        if self.sessions[self.current].session_id.as_deref() == Some(id) {
            return self.current;
        }
        if let Some(found) = self
            .sessions
            .iter()
            .position(|s| s.session_id.as_deref() == Some(id))
        {
            self.current = found;
            return found;
        }
        // The first session takes the first id it sees (rows before it named none).
        if self.sessions[self.current].session_id.is_none() {
            self.sessions[self.current].session_id = Some(id.to_owned());
            return self.current;
        }
        if self.sessions.len() >= self.limit {
            self.overflow_rows += 1;
            return self.current;
        }
        self.sessions.push(SessionPipeline {
            session_id: Some(id.to_owned()),
            pipeline: self.new_pipeline(),
            lines: 0,
        });
        self.current = self.sessions.len() - 1;
        self.current
    }

    /// The session a row would go to, without routing it: the one its `session_id` names
    /// (the current one for a row naming none); `None` for a session not seen yet.
    pub fn peek(&self, row: &Row<'_>) -> Option<usize> {
        let key = self.process_key(row);
        let own = key.as_deref().or_else(|| own_session(row));
        match own {
            Some(id) if self.limit > 1 => self
                .sessions
                .iter()
                .position(|s| s.session_id.as_deref() == Some(id)),
            _ => Some(self.current),
        }
    }

    /// The session key of a row whose agent's sessions are its processes
    /// ([`SessionKey::AgentProcess`]): `pid:<agent_pid>`. `None` for every other row (and
    /// for such an agent's row with no `agent_pid`, a bare payload): it goes by its payload.
    /// The row's agent's descriptor decides: the one chosen, else the one the envelope's
    /// `provider` names or detection finds. With no agent chosen, a row without a
    /// `provider` that names a session of its own goes by it, without running every
    /// agent's detection rules.
    fn process_key(&self, row: &Row<'_>) -> Option<String> {
        let pid = row.agent_pid?;
        let agent = match self.choice {
            ProviderChoice::Exactly(agent) => agent,
            ProviderChoice::Kimi => return None,
            ProviderChoice::Auto
                if row.provider_hint.is_none() && row.payload.session_id.is_some() =>
            {
                return None;
            }
            ProviderChoice::Auto => crate::provider::detect(row)?.0,
        };
        (agent.descriptor().session_key == SessionKey::AgentProcess).then(|| process_key(pid))
    }

    /// Starts over with one fresh session (a file rewritten in place is replayed into it).
    pub fn restart(&mut self) {
        let announced = self.announced;
        *self = Self::with_limit(self.choice, self.limit);
        if let Some(generation) = announced {
            self.announce_generation(generation);
        }
    }

    pub fn choice(&self) -> ProviderChoice {
        self.choice
    }

    pub fn get(&self, index: usize) -> &SessionPipeline {
        &self.sessions[index.min(self.sessions.len() - 1)]
    }

    pub fn get_mut(&mut self, index: usize) -> &mut SessionPipeline {
        let last = self.sessions.len() - 1;
        &mut self.sessions[index.min(last)]
    }

    /// The session the agent is in: the one the last routed row went to (where rows
    /// without an id go), unless that row ended its session while another was present.
    pub fn current(&self) -> usize {
        self.current
    }

    /// The session the last line went to.
    pub fn routed(&self) -> usize {
        self.routed
    }

    /// The first session's pipeline, for a log that held one.
    pub fn into_first(self) -> Pipeline {
        // Never empty: created with one session, sessions are only added.
        self.sessions
            .into_iter()
            .next()
            .map_or_else(|| Pipeline::new(self.choice), |s| s.pipeline)
    }

    /// Every session, in the order of their first rows.
    pub fn all(&self) -> &[SessionPipeline] {
        &self.sessions
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Never empty: there is always a current session.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Rows of a session past the limit, routed to the current session instead.
    pub fn overflow_rows(&self) -> u64 {
        self.overflow_rows
    }
}

/// The session a row names as its own: its `session_id`, unless that names the subagent
/// it runs in (a subagent's own turn rows belong to the session running it).
fn own_session<'r>(row: &'r Row<'_>) -> Option<&'r str> {
    let p = &row.payload;
    p.session_id
        .as_deref()
        .filter(|id| p.agent_id.as_deref() != Some(*id))
}

/// The session key of the agent process `pid` ([`SessionKey::AgentProcess`]).
pub fn process_key(pid: u32) -> String {
    format!("pid:{pid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(event: &str, session: Option<&str>) -> String {
        let id = session.map_or_else(String::new, |s| format!(r#", "session_id": "{s}""#));
        format!(r#"{{"hook_event_name": "{event}"{id}}}"#)
    }

    fn feed(sessions: &mut Sessions, lines: &[String]) -> Vec<usize> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                sessions.feed(ReadLine::Line {
                    number: i as u64 + 1,
                    bytes: l.as_bytes(),
                });
                sessions.current()
            })
            .collect()
    }

    #[test]
    fn rows_go_to_their_session_and_rows_without_one_to_the_current() {
        let mut s = Sessions::new(ProviderChoice::Auto);
        let lines = [
            row("SessionStart", None),
            row("UserPromptSubmit", Some("a")),
            row("SessionStart", Some("b")),
            row("Stop", None),
            "not json".to_owned(),
            row("Stop", Some("a")),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 0, 1, 1, 1, 0]);
        let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("b")]);
        assert_eq!(s.get(1).lines, 3);
        assert_eq!(s.overflow_rows(), 0);
    }

    #[test]
    fn a_session_ended_after_the_next_one_started_leaves_the_focus_on_the_new_one() {
        // Kimi Code 2.1.0's `/new`: the new SessionStart before the old SessionEnd.
        let mut s = Sessions::new(ProviderChoice::Auto);
        let lines = [
            row("SessionStart", Some("a")),
            row("SessionStart", Some("b")),
            row("SessionEnd", Some("a")),
            row("Stop", None),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 1, 1, 1]);
        assert_eq!(s.routed(), 1);
        assert_eq!(s.get(0).lines, 2);
        assert_eq!(s.get(1).lines, 2);
        // An end of the current session, or one while no other is present, moves it.
        let mut s = Sessions::new(ProviderChoice::Auto);
        let lines = [
            row("SessionStart", Some("a")),
            row("SessionStart", Some("b")),
            row("SessionEnd", Some("b")),
            row("SessionEnd", Some("a")),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 1, 1, 0]);
    }

    #[test]
    fn a_session_that_names_a_known_caller_is_the_callers_subagent() {
        // Factory Droid's `Task`: the subagent's session names its caller only in its
        // `SessionStart`; its later rows, and those of the caller, stay in the caller's.
        let mut s = Sessions::new(ProviderChoice::Auto);
        let lines = [
            row("SessionStart", Some("a")),
            r#"{"hook_event_name": "SessionStart", "session_id": "c", "calling_session_id": "a"}"#
                .to_owned(),
            row("UserPromptSubmit", Some("c")),
            row("Stop", Some("c")),
            row("SubagentStop", Some("a")),
            // A caller never seen, or the session itself, makes no subagent.
            r#"{"hook_event_name": "SessionStart", "session_id": "d", "calling_session_id": "x"}"#
                .to_owned(),
            r#"{"hook_event_name": "SessionStart", "session_id": "e", "calling_session_id": "e"}"#
                .to_owned(),
            row("Stop", Some("c")),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 0, 0, 0, 0, 1, 2, 0]);
        let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("d"), Some("e")]);
        assert_eq!(s.get(0).lines, 6);
    }

    /// A Letta Code row as hooktrack's hook writes it: its own payload shape (no
    /// `session_id`), the agent process in the envelope.
    fn letta(event: &str, pid: u32) -> String {
        format!(
            r#"{{"provider":"letta","event":"{event}","agent_pid":{pid},"payload":{{"event_type":"{event}","working_directory":"/p"}}}}"#
        )
    }

    #[test]
    fn an_agent_keyed_by_process_has_a_session_per_agent_pid() {
        for choice in [
            ProviderChoice::Auto,
            ProviderChoice::Exactly(crate::agent::Agent::LettaCode),
        ] {
            let mut s = Sessions::new(choice);
            let lines = [
                letta("SessionStart", 11),
                letta("UserPromptSubmit", 11),
                letta("SessionStart", 22),
                letta("UserPromptSubmit", 22),
                letta("Stop", 11),
                letta("Stop", 22),
            ];
            assert_eq!(feed(&mut s, &lines), [0, 0, 1, 1, 0, 1], "{choice:?}");
            let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
            assert_eq!(ids, [Some("pid:11"), Some("pid:22")]);
        }
    }

    #[test]
    fn a_row_keyed_by_process_without_a_pid_goes_by_its_payload() {
        // A bare payload (no envelope, so no `agent_pid`) goes to the current session,
        // and the pid of a row of an agent keyed by its payload does not split it.
        let mut s = Sessions::new(ProviderChoice::Auto);
        let lines = [
            letta("SessionStart", 11),
            r#"{"event_type":"Stop","working_directory":"/p"}"#.to_owned(),
            r#"{"provider":"claude","event":"Stop","agent_pid":33,"payload":{"session_id":"a"}}"#
                .to_owned(),
            r#"{"provider":"claude","event":"Stop","agent_pid":44,"payload":{"session_id":"a"}}"#
                .to_owned(),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 0, 1, 1]);
        let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
        assert_eq!(ids, [Some("pid:11"), Some("a")]);
        // `peek` sees the same key.
        let line = letta("Stop", 11);
        let row = crate::row::parse_line(line.as_bytes()).expect("a row");
        assert_eq!(s.peek(&row), Some(0));
        let line = letta("Stop", 99);
        let row = crate::row::parse_line(line.as_bytes()).expect("a row");
        assert_eq!(s.peek(&row), None);
    }

    /// Letta Code's payloads may carry a `conversation_id` (`"default"` for every
    /// process), which reads as a session id; Auggie's name their session by it. Each
    /// agent's descriptor decides, whether the agent is chosen or named by the envelope.
    #[test]
    fn a_conversation_id_splits_auggies_sessions_and_not_lettas_processes() {
        use crate::agent::Agent;
        let row = |provider: &str, pid: u32, payload: &str| {
            format!(
                r#"{{"provider":"{provider}","event":"Stop","agent_pid":{pid},"payload":{payload}}}"#
            )
        };
        let letta = |pid| {
            row(
                "letta",
                pid,
                r#"{"event_type":"Stop","conversation_id":"default"}"#,
            )
        };
        let auggie = |pid, id| {
            row(
                "auggie",
                pid,
                &format!(r#"{{"hook_event_name":"Stop","conversation_id":"{id}"}}"#),
            )
        };
        for choice in [
            ProviderChoice::Auto,
            ProviderChoice::Exactly(Agent::LettaCode),
        ] {
            let mut s = Sessions::new(choice);
            assert_eq!(feed(&mut s, &[letta(11), letta(22), letta(11)]), [0, 1, 0]);
            let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
            assert_eq!(ids, [Some("pid:11"), Some("pid:22")], "{choice:?}");
        }
        for choice in [ProviderChoice::Auto, ProviderChoice::Exactly(Agent::Auggie)] {
            let mut s = Sessions::new(choice);
            let lines = [auggie(11, "c1"), auggie(11, "c2"), auggie(22, "c1")];
            assert_eq!(feed(&mut s, &lines), [0, 1, 0], "{choice:?}");
            let ids: Vec<_> = s.all().iter().map(|p| p.session_id.as_deref()).collect();
            assert_eq!(ids, [Some("c1"), Some("c2")], "{choice:?}");
        }
    }

    #[test]
    fn sessions_past_the_limit_go_to_the_current_one_and_are_counted() {
        let mut s = Sessions::with_limit(ProviderChoice::Auto, 2);
        let lines = [
            row("SessionStart", Some("a")),
            row("SessionStart", Some("b")),
            row("SessionStart", Some("c")),
            row("Stop", Some("c")),
        ];
        assert_eq!(feed(&mut s, &lines), [0, 1, 1, 1]);
        assert_eq!(s.len(), 2);
        assert_eq!(s.overflow_rows(), 2);
    }
}
