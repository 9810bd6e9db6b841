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
        if let Some(t) = Self::parse_collector_format(text) {
            return Some(t);
        }
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| Self(t.timestamp_millis()))
    }

    /// The one shape the collector writes, `YYYY-MM-DDTHH:MM:SS.mmmZ`, without chrono's
    /// general parser (3% of a replay). Anything else, or an impossible date, is `None`
    /// and goes to the general parser, which decides.
    fn parse_collector_format(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != 24
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
            || b[19] != b'.'
            || b[23] != b'Z'
        {
            return None;
        }
        let num = |from: usize, to: usize| -> Option<i64> {
            b[from..to].iter().try_fold(0i64, |n, &d| {
                d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
            })
        };
        let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
        let (hour, minute, second, milli) =
            (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let month_days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        if !(1..=12).contains(&month)
            || day < 1
            || day > month_days[(month - 1) as usize]
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
        Some(Self(secs * 1_000 + milli))
    }

    fn datetime(self) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp_millis(self.0)
    }

    /// `HH:MM:SS.mmm`, for the timeline.
    pub fn clock(self) -> String {
        // The same digits chrono's `%H:%M:%S%.3f` writes (a time from milliseconds has no
        // leap second), without its format-string interpreter: the timeline asks per line.
        match self.datetime() {
            Some(_) => {
                let ms = self.0.rem_euclid(86_400_000);
                let mut text = String::with_capacity(12);
                for (value, width, sep) in [
                    (ms / 3_600_000, 2, Some(':')),
                    (ms / 60_000 % 60, 2, Some(':')),
                    (ms / 1_000 % 60, 2, Some('.')),
                    (ms % 1_000, 3, None),
                ] {
                    for place in (0..width).rev() {
                        let digit = value / 10_i64.pow(place) % 10;
                        text.push(char::from(b'0' + digit as u8));
                    }
                    text.extend(sep);
                }
                text
            }
            None => format!("@{}ms", self.0),
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
        let before_1970 = Timestamp::parse_rfc3339("1969-12-31T23:59:58.250Z").unwrap();
        assert_eq!(before_1970.clock(), "23:59:58.250");
    }

    #[test]
    fn the_collector_format_fast_path_agrees_with_chrono() {
        let samples = [
            "1970-01-01T00:00:00.000Z",
            "2000-02-29T23:59:59.999Z",
            "2026-10-20T09:14:03.512Z",
            "2100-03-01T00:00:00.001Z",
            "1969-12-31T23:59:59.999Z",
            "2024-12-31T12:00:00.000Z",
        ];
        for text in samples {
            let general = DateTime::parse_from_rfc3339(text)
                .unwrap()
                .timestamp_millis();
            assert_eq!(
                Timestamp::parse_collector_format(text),
                Some(Timestamp(general)),
                "{text}"
            );
        }
        // Impossible dates and other shapes leave the decision to chrono.
        for text in [
            "2026-02-29T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-10-20T09:14:03.512+02:00",
            "2026-10-20T24:00:00.000Z",
        ] {
            assert_eq!(Timestamp::parse_collector_format(text), None, "{text}");
        }
        assert_eq!(
            Timestamp::parse_rfc3339("2026-10-20T11:14:03.512+02:00"),
            Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z")
        );
        assert_eq!(Timestamp::parse_rfc3339("2026-02-29T00:00:00.000Z"), None);
    }

    #[test]
    fn rejects_non_times() {
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }
}
