//! hooktrack: trustworthy turn state from AI coding agents' lifecycle hooks.
//! (Facade; narrowed below.)

pub use hooktrack_core::*;
pub use hooktrack_live::{hub, session, tail};
pub mod output;
pub use hooktrack_producer as producer;

pub use agent::{Agent, UnknownAgent};
pub use correlate::{Correlator, Observation, Outcome, TurnRecord};
pub use diagnostics::{Diag, Diagnostics, Note};
pub use event::{Event, TurnId};
pub use hub::{Hub, HubConfig, SessionId};
pub use pipeline::{Fed, Pipeline, Skip, Step};
pub use posture::{ChannelState, Phase, Posture, Presence, TurnResult};
pub use provider::ProviderChoice;
pub use session::{Session, SessionConfig, Update};
pub use time::Timestamp;
