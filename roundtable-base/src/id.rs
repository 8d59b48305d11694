//! Identifiers: the [`Id`] every record is named by, and the generator of
//! new ones.
//!
//! An id is 1 to 128 characters from `[A-Za-z0-9._-]`: safe in a path, a
//! URL, a shell word and a log line, so nothing downstream has to escape it.
//! Generated ids are `<prefix>-<26 characters>`: a 48-bit millisecond time
//! and 80 random bits in Crockford base 32 (the ULID layout), so they sort
//! by creation time and two processes creating records in the same
//! millisecond still never collide. Within one process, ids made in the same
//! millisecond count upwards, so they also sort in creation order.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::sync::Mutex;

/// The longest id.
pub const MAX_ID_LEN: usize = 128;

/// A valid identifier: `[A-Za-z0-9._-]{1,128}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Id(String);

/// Why a string is not an [`Id`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdError(String);

impl Id {
    /// Check `s` and make it an id.
    pub fn new(s: impl Into<String>) -> Result<Id, IdError> {
        let s = s.into();
        if s.is_empty() {
            return Err(IdError("is empty".into()));
        }
        if s.len() > MAX_ID_LEN {
            return Err(IdError(format!(
                "is {} characters; the limit is {MAX_ID_LEN}",
                s.len()
            )));
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(IdError(format!(
                "contains {c:?}; an id is made of letters, digits, '.', '_' and '-'"
            )));
        }
        Ok(Id(s))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Id {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Id, IdError> {
        Id::new(s)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        let s = String::deserialize(d)?;
        Id::new(s).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Id {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Id".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[A-Za-z0-9._-]{1,128}$"
        })
    }
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Makes new ids: time-ordered, unique across processes.
#[derive(Debug, Default)]
pub struct IdGenerator {
    last: Mutex<(u64, u128)>,
}

impl IdGenerator {
    /// A new id `<prefix>-<ulid>` for a record made at `millis`.
    ///
    /// # Panics
    /// Never in practice: only if the operating system has no random
    /// source at all, which roundtable cannot run without.
    pub fn next(&self, prefix: &str, millis: i64) -> Id {
        let ms = u64::try_from(millis).unwrap_or(0) & ((1 << 48) - 1);
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let random = if ms <= last.0 && last.1 < (1u128 << 80) - 1 {
            // Same (or an earlier) millisecond: count up from the last id so
            // this process's ids stay in creation order.
            last.1 + 1
        } else {
            let mut bytes = [0u8; 10];
            getrandom::fill(&mut bytes).expect("the operating system has a random source");
            bytes
                .iter()
                .fold(0u128, |acc, &b| (acc << 8) | u128::from(b))
        };
        let ms = ms.max(last.0);
        *last = (ms, random);
        let value = (u128::from(ms) << 80) | random;
        let mut out = String::with_capacity(prefix.len() + 27);
        out.push_str(prefix);
        out.push('-');
        for i in (0..26).rev() {
            let digit = (value >> (i * 5)) & 31;
            out.push(char::from(CROCKFORD[digit as usize]));
        }
        Id::new(out).expect("a prefix and Crockford digits make a valid id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_ids() {
        assert!(Id::new("agent-1.alpha_B").is_ok());
        assert!(Id::new("a".repeat(128)).is_ok());
        for bad in ["", "has space", "slash/no", "ünï", "tab\t"] {
            assert!(Id::new(bad).is_err(), "{bad:?}");
        }
        assert!(Id::new("a".repeat(129)).is_err());
    }

    #[test]
    fn generated_ids_are_unique_and_sorted_within_one_millisecond() {
        let g = IdGenerator::default();
        let ids: Vec<Id> = (0..1000).map(|_| g.next("prop", 1_000)).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids);
        assert!(ids[0].as_str().starts_with("prop-"));
        assert_eq!(ids[0].as_str().len(), "prop-".len() + 26);
        // A later millisecond sorts after.
        assert!(g.next("prop", 1_001) > ids[999]);
    }

    #[test]
    fn a_clock_going_back_does_not_reorder() {
        let g = IdGenerator::default();
        let a = g.next("x", 5_000);
        let b = g.next("x", 4_000);
        assert!(b > a);
    }
}
