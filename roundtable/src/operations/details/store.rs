//! The details of the codes about the store, the operating system and
//! policy documents.

use super::present;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `io`: where the read or write failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IoDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// For the apply lock: its file (in `.roundtable/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub lock: Option<String>,
    /// The argument (or edit-plan field) concerned, as a path
    /// (`affected_resources[2]`, `documentChanges[0].to`; `""` for the
    /// whole); for the command line, the flag (`--as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub field: Option<String>,
    /// The git reference concerned (`refs/heads/main`).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    #[schemars(with = "String")]
    pub reference: Option<String>,
    /// For the command line's demo: the step whose check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub step: Option<String>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `database`: whether the call may be retried, and the stored record
/// that does not read back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseDetails {
    /// The same call may succeed if made again: the server was down or
    /// restarting, the connection broke, or another write held the store
    /// past the busy timeout. Nothing was written. Present only when so
    /// (always `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::flag")]
    pub retryable: Option<bool>,
    /// The change landed (past the commit point: the branch, or the
    /// remote's, moved) but recording its outcome failed: never retryable;
    /// the transaction (`transaction_id`) stays `applying` until the next
    /// apply or open records it, and a call made again with the same
    /// idempotency key returns the landing's result (always `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::flag")]
    pub landed: Option<bool>,
    /// A stored claim that does not read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub claim_id: Option<String>,
    /// A stored path that does not read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// A stored blob that is missing or does not match its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub digest: Option<String>,
    /// A transaction whose journal does not read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
    /// For a stored policy that no longer parses: the 1-based line, when known.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<u64>")]
    pub line: Option<Option<u64>>,
    /// For a stored policy that no longer parses: the 1-based column, when known.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<u64>")]
    pub column: Option<Option<u64>>,
    /// For a stored policy that no longer parses: the dotted key, when known.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub key: Option<Option<String>>,
    /// For a stored policy that no longer parses: an unknown key's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// For a stored policy that no longer parses: the glob that does not compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub glob: Option<String>,
}

impl DatabaseDetails {
    /// The details of a failed database call: `retryable` when it is.
    pub fn retryable(retryable: bool) -> DatabaseDetails {
        DatabaseDetails {
            retryable: retryable.then_some(true),
            ..DatabaseDetails::default()
        }
    }
}

impl From<InvalidPolicyDetails> for DatabaseDetails {
    /// A stored policy that no longer parses: the same keys.
    fn from(p: InvalidPolicyDetails) -> DatabaseDetails {
        DatabaseDetails {
            line: Some(p.line),
            column: Some(p.column),
            key: Some(p.key),
            name: p.name,
            glob: p.glob,
            ..DatabaseDetails::default()
        }
    }
}

/// `incompatible_store`: no details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IncompatibleStoreDetails {}

/// `invalid_policy`: where the document is malformed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidPolicyDetails {
    /// The 1-based line, when known.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(schema_with = "super::nullable::<u64>")]
    pub line: Option<u64>,
    /// The 1-based column (in characters), when known.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(schema_with = "super::nullable::<u64>")]
    pub column: Option<u64>,
    /// The dotted key path (`approvals.carry_over`, `roles[0].role`), when known.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(schema_with = "super::nullable::<String>")]
    pub key: Option<String>,
    /// For an unknown key: its own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// For a glob that does not compile: the glob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub glob: Option<String>,
}

impl From<&crate::policy::PolicyError> for InvalidPolicyDetails {
    fn from(e: &crate::policy::PolicyError) -> InvalidPolicyDetails {
        use crate::policy::PolicyError as P;
        let place = |key: &Option<String>, line: &Option<usize>, column: &Option<usize>| {
            InvalidPolicyDetails {
                line: line.map(|l| l as u64),
                column: column.map(|c| c as u64),
                key: key.clone(),
                name: None,
                glob: None,
            }
        };
        match e {
            P::Syntax {
                key, line, column, ..
            }
            | P::Invalid {
                key, line, column, ..
            } => place(key, line, column),
            P::UnknownKey {
                name,
                key,
                line,
                column,
            } => InvalidPolicyDetails {
                name: Some(name.clone()),
                ..place(key, line, column)
            },
            P::Glob {
                glob,
                key,
                line,
                column,
                ..
            } => InvalidPolicyDetails {
                glob: Some(glob.clone()),
                ..place(key, line, column)
            },
        }
    }
}
