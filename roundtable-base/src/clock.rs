//! Time: an injectable [`Clock`] and the [`Timestamp`] every record carries.
//!
//! Nothing in roundtable reads the system time directly: the engine asks its
//! clock, so tests (and claim expiry, which is computed at read time) can
//! move time explicitly.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Milliseconds since the Unix epoch, UTC. Serializes as RFC 3339 with
/// millisecond precision (`2026-12-03T09:32:59.123Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for Timestamp {
    type Err = String;

    /// Parse what [`Timestamp`]'s `Display` writes: `YYYY-MM-DDTHH:MM:SS.mmmZ`
    /// (UTC; the fraction, when present, has 1 to 3 digits).
    fn from_str(s: &str) -> Result<Timestamp, String> {
        let bad = || format!("{s:?} is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SS.mmmZ)");
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Result<i64, String> {
            let part = s.get(r).ok_or_else(bad)?;
            if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            part.parse().map_err(|_| bad())
        };
        if b.len() < 20
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
        {
            return Err(bad());
        }
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
        let rest = &s[19..];
        let ms = match rest.strip_suffix('Z') {
            Some("") => 0,
            Some(f) => {
                let digits = f.strip_prefix('.').ok_or_else(bad)?;
                if digits.is_empty()
                    || digits.len() > 3
                    || !digits.bytes().all(|c| c.is_ascii_digit())
                {
                    return Err(bad());
                }
                let n: i64 = digits.parse().map_err(|_| bad())?;
                n * 10_i64.pow(3 - digits.len() as u32)
            }
            None => return Err(bad()),
        };
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 59 {
            return Err(bad());
        }
        let days = days_from_civil(y, m as u32, d as u32);
        if civil_from_days(days) != (y, m as u32, d as u32) {
            return Err(bad());
        }
        Ok(Timestamp(
            ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms,
        ))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "UTC, RFC 3339, millisecond precision"
        })
    }
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01);
/// Howard Hinnant's `civil_from_days` algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The day number (days since 1970-01-01) of a proleptic Gregorian
/// date; the inverse of [`civil_from_days`] (same algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's real-time clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that only moves when told to: for tests. Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(start.0)))
    }

    /// Move the clock forward (or back, with a negative amount) by `ms`.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Set the clock.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339() {
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Timestamp(1_796_291_579_123).to_string(),
            "2026-12-03T09:52:59.123Z"
        );
        // 2000-02-29 (a leap day in a century year divisible by 400).
        assert_eq!(
            Timestamp(951_782_400_000).to_string(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(Timestamp(-1).to_string(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_what_it_formats_and_nothing_else() {
        for ms in [
            0,
            -1,
            951_782_400_000,
            1_796_291_579_123,
            253_402_300_799_999,
        ] {
            let t = Timestamp(ms);
            assert_eq!(t.to_string().parse::<Timestamp>(), Ok(t), "{t}");
            let json = serde_json::to_string(&t).expect("serializes");
            assert_eq!(
                serde_json::from_str::<Timestamp>(&json).expect("reads back"),
                t
            );
        }
        assert_eq!(
            "2026-12-03T09:52:59Z".parse(),
            Ok(Timestamp(1_796_291_579_000))
        );
        assert_eq!(
            "2026-12-03T09:52:59.1Z".parse(),
            Ok(Timestamp(1_796_291_579_100))
        );
        for bad in [
            "",
            "2026-12-03",
            "2026-12-03T09:52:59.123",
            "2026-12-03T09:52:59.1234Z",
            "2026-02-30T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-12-03T24:00:00.000Z",
            "2026-12-03T09:52:59.+12Z",
            "+026-12-03T09:52:59.000Z",
            "2026-12-03 09:52:59.000Z",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp(5));
        let shared = c.clone();
        assert_eq!(c.now(), Timestamp(5));
        shared.advance_ms(10);
        assert_eq!(c.now(), Timestamp(15));
    }
}
