//! Timestamps as they arrive in rows. Nothing here reads a clock.
//!
//! One calendar: chrono's. Its general RFC 3339 parser (offsets, any fraction, `t`/`z`)
//! is what the contract's times need, and its `NaiveDate` arithmetic is plain integer
//! work on constant tables — no allocation, no lock, no panic — so the emitter's
//! watchdog can format its give-up time with it inside a signal handler. Only the digits
//! are written by hand (`put_digits`): chrono's formatter goes through `fmt` and its
//! format interpreter, which replay outputs would pay several times per line.

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, Utc};
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
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        // Four digits and two: the casts cannot truncate. An impossible date is `None`.
        let date = NaiveDate::from_ymd_opt(year as i32, month as u32, day as u32)?;
        let days = i64::from(date.num_days_from_ce()) - DAYS_FROM_CE_TO_EPOCH;
        let secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
        Some(Self(secs * 1_000 + milli))
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` for years 0 to 9999 (the same text chrono's RFC 3339
    /// writer gives there, and what `Display` writes), without a `String`: replay outputs
    /// write several times per line, and the emitter's watchdog formats its give-up time
    /// in a signal handler, where nothing may allocate. `None` outside those years.
    pub fn collector_format(self) -> Option<[u8; 24]> {
        let days = self.0.div_euclid(86_400_000);
        let ms = self.0.rem_euclid(86_400_000);
        let date = i32::try_from(days + DAYS_FROM_CE_TO_EPOCH)
            .ok()
            .and_then(NaiveDate::from_num_days_from_ce_opt)?;
        let year = i64::from(date.year());
        if !(0..=9999).contains(&year) {
            return None;
        }
        let (month, day) = (i64::from(date.month()), i64::from(date.day()));
        let mut out = *b"0000-00-00T00:00:00.000Z";
        for (at, width, value) in [
            (0, 4, year),
            (5, 2, month),
            (8, 2, day),
            (11, 2, ms / 3_600_000),
            (14, 2, ms / 60_000 % 60),
            (17, 2, ms / 1_000 % 60),
            (20, 3, ms % 1_000),
        ] {
            put_digits(&mut out, at, width, value);
        }
        Some(out)
    }

    fn datetime(self) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp_millis(self.0)
    }

    /// `HH:MM:SS.mmm`, for the timeline: the same digits chrono's `%H:%M:%S%.3f` writes (a
    /// time from milliseconds has no leap second), without its format interpreter.
    pub fn clock(self) -> String {
        match self.clock_digits() {
            Some(text) => String::from_utf8_lossy(&text).into_owned(),
            None => format!("@{}ms", self.0),
        }
    }

    /// [`Timestamp::clock`] without an allocation, for a time of chrono's calendar (`None`
    /// for one outside it, which `clock` writes as `@<ms>ms`).
    pub fn clock_digits(self) -> Option<[u8; 12]> {
        self.datetime()?;
        let day_ms = self.0.rem_euclid(86_400_000);
        let mut text = *b"00:00:00.000";
        for (at, width, value) in [
            (0, 2, day_ms / 3_600_000),
            (3, 2, day_ms / 60_000 % 60),
            (6, 2, day_ms / 1_000 % 60),
            (9, 3, day_ms % 1_000),
        ] {
            put_digits(&mut text, at, width, value);
        }
        Some(text)
    }
}

/// chrono's day number of 1970-01-01 (days from 0001-01-01, which is day 1).
const DAYS_FROM_CE_TO_EPOCH: i64 = 719_163;

/// Writes `value`'s last `width` decimal digits into `out[at..at + width]`.
fn put_digits(out: &mut [u8], at: usize, width: usize, mut value: i64) {
    for slot in out[at..at + width].iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = self.collector_format() {
            // Only ASCII digits and separators were written.
            return f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?);
        }
        match self.datetime() {
            Some(t) => f.write_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true)),
            None => write!(f, "@{}ms", self.0),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The common shape as one `&str`, without the formatting machinery per time.
        match self.collector_format() {
            Some(text) => match std::str::from_utf8(&text) {
                Ok(text) => serializer.serialize_str(text),
                Err(_) => serializer.collect_str(self),
            },
            None => serializer.collect_str(self),
        }
    }
}

/// Read back as written (a ledger streamed to a file, [`Serialize`] above): RFC 3339, or
/// the `@<ms>ms` of a time outside chrono's calendar.
impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.strip_prefix('@')
            .and_then(|t| t.strip_suffix("ms"))
            .and_then(|t| t.parse().ok())
            .map(Self)
            .or_else(|| Self::parse_rfc3339(&text))
            .ok_or_else(|| serde::de::Error::custom(format!("not a time: `{text}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes_even_outside_the_calendar() {
        for ms in [0, 1_790_000_000_123, -2_250, i64::MAX, i64::MIN] {
            let t = Timestamp::from_millis(ms);
            let json = serde_json::to_string(&t).unwrap();
            let back: Timestamp = serde_json::from_str(&json).unwrap();
            assert_eq!(back, t, "{json}");
        }
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }

    #[test]
    fn round_trips_millisecond_rfc3339() {
        let t = Timestamp::parse_rfc3339("2026-10-20T09:14:03.512Z").unwrap();
        assert_eq!(t.to_string(), "2026-10-20T09:14:03.512Z");
        assert_eq!(t.clock(), "09:14:03.512");
        let before_1970 = Timestamp::parse_rfc3339("1969-12-31T23:59:58.250Z").unwrap();
        assert_eq!(before_1970.clock(), "23:59:58.250");
    }

    #[test]
    fn the_display_fast_path_agrees_with_chrono() {
        let chrono_text = |t: Timestamp| {
            t.datetime()
                .map(|d| d.to_rfc3339_opts(SecondsFormat::Millis, true))
        };
        // Day boundaries across leap years, centuries, 1970 and the ends of 0..=9999,
        // then a stride over the whole range.
        let mut samples = vec![
            0,
            -1,
            951_868_799_999,
            951_868_800_000,
            4_107_542_400_001,
            -62_167_219_200_000,
            -62_167_219_200_001,
            253_402_300_799_999,
            253_402_300_800_000,
        ];
        samples.extend((-62_167_219_200_000_i64..253_402_300_800_000).step_by(7_919_993_017));
        for ms in samples {
            let t = Timestamp::from_millis(ms);
            let fast = t
                .collector_format()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            match fast {
                Some(text) => {
                    assert_eq!(Some(text), chrono_text(t), "{ms}");
                    assert_eq!(Timestamp::parse_rfc3339(&t.to_string()), Some(t), "{ms}");
                }
                None => assert!(
                    chrono_text(t).is_none_or(|c| c.len() != 24),
                    "{ms}: only years outside 0..=9999 take chrono's path"
                ),
            }
        }
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
