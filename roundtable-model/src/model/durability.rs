//! How hard a commit tries to survive a power loss, as a name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How hard each commit tries to survive a power loss: the store's flush
/// policy, and what a transaction records it was written with. Spelled
/// `full`, `normal` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Every commit is flushed to disk before the call returns
    /// (`synchronous = FULL`).
    #[default]
    Full,
    /// Commits are flushed at WAL checkpoints (`synchronous = NORMAL`): a
    /// power loss can lose the last commits, never corrupt the store.
    /// Applied files are still flushed.
    Normal,
    /// Nothing is flushed (`synchronous = OFF`, no file syncs): for tests
    /// and throwaway sandboxes. A process crash is still recovered; a power
    /// loss can lose or corrupt anything.
    Off,
}

impl Durability {
    /// Every durability, strongest first.
    pub const ALL: [Durability; 3] = [Durability::Full, Durability::Normal, Durability::Off];

    /// The stable spelling (`full`, `normal`, `off`).
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Full => "full",
            Durability::Normal => "normal",
            Durability::Off => "off",
        }
    }

    /// The durability spelled `s`, if it is one.
    pub fn parse(s: &str) -> Option<Durability> {
        Durability::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_are_serdes() {
        for d in Durability::ALL {
            let json = serde_json::to_value(d).expect("serializes");
            assert_eq!(json, serde_json::Value::String(d.as_str().to_owned()));
            assert_eq!(Durability::parse(d.as_str()), Some(d));
        }
        assert_eq!(Durability::parse("FULL"), None);
    }
}
