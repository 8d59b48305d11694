//! What a change does to one path, as a name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a change does to one path (a changeset operation's name, without
/// its other path). Spelled `create`, `modify`, `delete`, `rename` (to
/// this path), `renamed_away` (from this path) or `copy`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    /// The path is created.
    Create,
    /// Its content or mode changes.
    Modify,
    /// It is removed.
    Delete,
    /// It is created from another path, which is removed.
    Rename,
    /// It is removed because it was renamed.
    RenamedAway,
    /// It is created as a copy of another path.
    Copy,
}

impl OperationKind {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationKind::Create => "create",
            OperationKind::Modify => "modify",
            OperationKind::Delete => "delete",
            OperationKind::Rename => "rename",
            OperationKind::RenamedAway => "renamed_away",
            OperationKind::Copy => "copy",
        }
    }
}

impl fmt::Display for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for OperationKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_are_serdes() {
        use OperationKind::*;
        for k in [Create, Modify, Delete, Rename, RenamedAway, Copy] {
            let json = serde_json::to_value(k).expect("serializes");
            assert_eq!(json, k.as_str());
            assert_eq!(
                serde_json::from_value::<OperationKind>(json).expect("reads"),
                k
            );
        }
    }
}
