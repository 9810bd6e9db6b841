//! The live view of a tracker, without I/O: the channel judged from the events and time,
//! a [`LineReport`] per line fed, and the [`Update`] after a poll. The session reads the
//! files; this decides what to say about them.

use hooktrack_core::channel::{Channel, ChannelConfig, ChannelStatus};
use hooktrack_core::correlate::TurnRecord;
use hooktrack_core::event::Event;
use hooktrack_core::pipeline::Fed;
use hooktrack_core::posture::Posture;
use hooktrack_core::source::Source;
use hooktrack_core::time::Timestamp;
use hooktrack_core::tracker::{FedLine, Tracker};

use super::update::{LineReport, SessionNotice, SessionUpdate, Update};

/// The longest `tmux_pane` value kept from a row (pane ids are `%` and a few digits).
const MAX_PANE_LEN: usize = 64;

/// One agent session's pane and process, as its rows and its end said.
#[derive(Clone, Debug, Default)]
pub(super) struct AgentFacts {
    pub(super) tmux_pane: Option<String>,
    /// The pid the last row that named one gave (`agent_pid`).
    pub(super) agent_pid: Option<u32>,
    /// The time of its last hook row (the row's own, else when it was read).
    pub(super) last_row_at: Option<Timestamp>,
    /// Since when its agent is known gone: set by the process's end (a launcher's row, or
    /// the live watch of `agent_pid`), cleared by a hook row after it (a resumed session).
    pub(super) gone_since: Option<Timestamp>,
}

#[derive(Debug)]
pub(super) struct View {
    pub(super) channel: Channel,
    /// With line reports on: the posture after the last line reported.
    line_posture: Option<Posture>,
    lines: Vec<LineReport>,
    tmux_pane: Option<String>,
    /// Per agent session (by the tracker's index): what its rows said about its process.
    pub(super) agents: Vec<AgentFacts>,
    /// The open main turn's ledger id and when the tracker first saw it.
    turn_seen: Option<(u64, Timestamp)>,
    /// Every session's posture, the current session and the channel at the last update.
    last: Option<(Vec<Posture>, usize, ChannelStatus)>,
}

impl View {
    pub(super) fn new(channel: ChannelConfig, report_lines: bool) -> Self {
        Self {
            channel: Channel::new(channel),
            line_posture: report_lines.then(Posture::default),
            lines: Vec::new(),
            tmux_pane: None,
            agents: Vec::new(),
            turn_seen: None,
            last: None,
        }
    }

    /// One line the tracker fed at `now`: a hook event is channel evidence (and may name
    /// its pane); a line that is news is reported when line reports are on. A transcript
    /// line that is no marker is not reported.
    pub(super) fn on_line(&mut self, l: &FedLine<'_, '_>, now: Timestamp) {
        let (line, source, at, event, skipped) = match l.fed {
            Fed::Event(step) => {
                if self.agents.len() <= l.session {
                    self.agents.resize_with(l.session + 1, AgentFacts::default);
                }
                let agent = &mut self.agents[l.session];
                if step.source == Source::Hook {
                    self.channel.on_event(now, step.generation);
                    if let Some(p) = step.tmux_pane.as_ref().filter(|p| p.len() <= MAX_PANE_LEN) {
                        self.tmux_pane = Some(p.clone());
                        agent.tmux_pane = Some(p.clone());
                    }
                    if step.agent_pid.is_some() {
                        agent.agent_pid = step.agent_pid;
                    }
                    agent.last_row_at = Some(step.at.unwrap_or(now));
                    agent.gone_since = None;
                } else if step.source == Source::Process
                    && matches!(step.event, Event::ProcessEnded { .. })
                {
                    agent.gone_since = Some(step.at.unwrap_or(now));
                }
                (
                    step.line,
                    step.source,
                    step.at,
                    Some(step.name.to_string()),
                    None,
                )
            }
            Fed::Skipped(skip) if skip.source == Source::Hook => (
                skip.line,
                skip.source,
                None,
                None,
                Some(format!("{}: {}", skip.diag.name(), skip.detail)),
            ),
            Fed::Skipped(_) => return,
        };
        let Some(before) = self.line_posture.as_mut().filter(|_| !l.replayed) else {
            return;
        };
        let posture = l
            .pipeline
            .hook_posture()
            .with_channel(self.channel.status(now).state);
        self.lines.push(LineReport {
            line,
            source,
            at,
            event,
            skipped,
            changes: before.changes_to(&posture),
            posture: posture.clone(),
        });
        *before = posture;
    }

    /// The update after a poll at `now`, if anything changed. `read_lines`: the poll fed
    /// lines (the postures move only with lines).
    pub(super) fn update(
        &mut self,
        tracker: &mut Tracker,
        now: Timestamp,
        read_lines: bool,
        notices: Vec<SessionNotice>,
    ) -> Option<Update> {
        let channel = self.channel.status(now);
        let closed = tracker.take_closed();
        let quiet = !read_lines && notices.is_empty() && closed.is_empty();
        if quiet && self.last.as_ref().is_some_and(|(_, _, c)| *c == channel) {
            return None;
        }
        let postures: Vec<Posture> = tracker
            .sessions()
            .iter()
            .map(|s| s.pipeline.hook_posture().with_channel(channel.state))
            .collect();
        let current = tracker.current();
        let unchanged = self
            .last
            .as_ref()
            .is_some_and(|(p, i, c)| *p == postures && *i == current && *c == channel);
        if unchanged && closed.is_empty() && notices.is_empty() && self.lines.is_empty() {
            return None;
        }
        let turn_started_at = self.turn_started_at(tracker, now);
        let mut closed_by: Vec<Vec<TurnRecord>> = vec![Vec::new(); postures.len()];
        for (index, turn) in closed {
            if let Some(list) = closed_by.get_mut(index) {
                list.push(turn);
            }
        }
        let sessions = tracker
            .sessions()
            .iter()
            .zip(postures.iter().cloned().zip(closed_by))
            .enumerate()
            .map(|(i, (s, (posture, closed)))| {
                let agent = self.agents.get(i).cloned().unwrap_or_default();
                SessionUpdate {
                    session_id: s.session_id.clone(),
                    posture,
                    closed,
                    events: s.pipeline.events(),
                    agent: s.pipeline.detection().map(|d| d.provider),
                    turn_started_at: if i == current { turn_started_at } else { None },
                    tmux_pane: agent.tmux_pane,
                    agent_pid: agent.agent_pid,
                    last_row_at: agent.last_row_at,
                    gone_since: agent.gone_since,
                }
            })
            .collect::<Vec<_>>();
        self.last = Some((postures, current, channel.clone()));
        Some(Update {
            at: now,
            channel,
            notices,
            events: sessions.iter().map(|s| s.events).sum(),
            last_event_at: self.channel.last_event(),
            lines: std::mem::take(&mut self.lines),
            tmux_pane: self.tmux_pane.clone(),
            sessions,
            current,
            process_ends: Vec::new(),
        })
    }

    /// When the current session's open main turn started (see
    /// [`SessionUpdate::turn_started_at`]).
    fn turn_started_at(&mut self, tracker: &Tracker, now: Timestamp) -> Option<Timestamp> {
        let open = tracker.pipeline().open_turns();
        let Some(main) = open.iter().find(|t| t.is_main()) else {
            self.turn_seen = None;
            return None;
        };
        let seen = match self.turn_seen {
            Some((id, at)) if id == main.id => at,
            _ => {
                self.turn_seen = Some((main.id, now));
                now
            }
        };
        Some(main.started_at.unwrap_or(seen))
    }
}
