//! Content digests: `blob:sha256:<64 lowercase hex digits>`.

use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::fmt;
use std::str::FromStr;

/// The SHA-256 digest of a file's bytes, spelled `blob:sha256:<hex>`.
///
/// This is roundtable's own content address (patch revisions, claims'
/// base digests, changeset preconditions); it is not a git object id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

/// The prefix of every digest's spelling.
pub const DIGEST_PREFIX: &str = "blob:sha256:";

impl Digest {
    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Digest {
        Digest(sha2::Sha256::digest(data).into())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A digest from its raw 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }
}

/// A string that is not `blob:sha256:` followed by 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a digest (expected blob:sha256: and 64 lowercase hex digits)")]
pub struct DigestError(pub String);

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = || DigestError(s.chars().take(100).collect());
        let hex = s.strip_prefix(DIGEST_PREFIX).ok_or_else(fail)?;
        crate::hex::decode_32(hex).map(Digest).ok_or_else(fail)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{DIGEST_PREFIX}{}", crate::hex::encode(&self.0))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

string_schema!(Digest);

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_round_trips_and_matches_sha256sum() {
        let d = Digest::of(b"hello\n");
        let s = d.to_string();
        assert_eq!(
            s,
            "blob:sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(s.parse::<Digest>(), Ok(d));
    }

    #[test]
    fn refuses_other_spellings() {
        let good = Digest::of(b"").to_string();
        for bad in [
            "",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            &good.to_uppercase(),
            &good[..good.len() - 1],
            &format!("{good}0"),
            "blob:sha256:zz",
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad}");
        }
    }
}
