//! Factory Droid's hooks: Claude Code's payload shape, read by Claude Code's adapter.
//! Its `Stop` ends every turn, also one the user interrupted or whose model call failed:
//! the session file tells those (`transcript.rs`).

use std::borrow::Cow;

use crate::agents::claude_code::adapter as claude;
use crate::event::Event;
use crate::payload::Payload;

/// One payload, delivered under the event `name`, as a canonical event.
pub fn normalize<'a>(name: &Cow<'a, str>, p: &mut Payload<'a>) -> Event<'a> {
    claude::normalize(name, p)
}
