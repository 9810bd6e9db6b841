//! Timestamps as they arrive in rows. Nothing here reads a clock.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC.
///
/// A time always comes from the data (an envelope's `received_at`, a capture line's
/// `recv_ts`, a payload's `timestamp`) or from the caller, never from a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Parses an RFC 3339 time (`2026-10-20T09:14:03.512Z`); `None` if it is not one.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| Self(t.timestamp_millis()))
    }

    fn datetime(self) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp_millis(self.0)
    }

    /// `HH:MM:SS.mmm`, for the timeline.
    pub fn clock(self) -> String {
        match self.datetime() {
            Some(t) => t.format("%H:%M:%S%.3f").to_string(),
            None => format!("@{}ms", self.0),
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.datetime() {
            Some(t) => f.write_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true)),
            None => write!(f, "@{}ms", self.0),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_millisecond_rfc3339() {
        let t = Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z").unwrap();
        assert_eq!(t.to_string(), "2026-10-20T09:14:03.512Z");
        assert_eq!(t.clock(), "09:14:03.512");
    }

    #[test]
    fn rejects_non_times() {
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }
}
