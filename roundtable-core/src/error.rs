//! Stable error codes shared by every front end.
//!
//! Each module has its own typed error (`thiserror`); every variant maps to
//! exactly one [`ErrorCode`]. The code's snake_case spelling is the stable
//! contract: it is what the CLI prints, what the C ABI's status values and the
//! Python exception classes are derived from. Codes are never renamed or
//! reused.

use serde::Serialize;
use std::fmt;

/// A stable, machine-readable error code.
///
/// The spelling returned by [`ErrorCode::as_str`] never changes once
/// released; new codes are only ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The patch text is malformed: it does not follow the unified/git diff
    /// grammar (the details name the line and what was expected).
    InvalidPatch,
    /// The patch is well formed but does not apply to the current contents:
    /// a hunk's context is not found, a file to create exists, a file to
    /// modify is missing, a binary pre-image does not match.
    PatchDoesNotApply,
    /// The patch uses a feature roundtable deliberately does not apply
    /// (submodules/gitlinks, combined diffs of merges).
    UnsupportedPatch,
    /// A path would leave the repository root, or names `.git`/`.roundtable`;
    /// a path passes through a symbolic link; or a symbolic link's target
    /// would leave the root (or point into `.git`/`.roundtable`).
    PathEscape,
    /// A path is not a valid repository path (empty, not UTF-8, NUL byte…).
    InvalidPath,
    /// A patch cannot be reversed (a copy has no inverse in the diff grammar).
    IrreversiblePatch,
    /// A call's arguments are invalid (a field is missing, of the wrong type
    /// or out of range).
    InvalidArgument,
    /// The operating system refused a read or write.
    Io,
    /// A change's precondition does not hold: the file's current digest is
    /// not the expected one, or a file expected to be absent exists.
    PreconditionFailed,
    /// An edit plan is malformed (bad JSON shape, overlapping edits, a
    /// range off the end of a line or inside a character, a blob that does
    /// not match its digest…).
    InvalidEditPlan,
    /// An edit plan's proposal status is not `complete` (`incomplete`,
    /// `unsupported`, `cancelled`, `errored`): it must not be applied.
    IncompleteEditPlan,
    /// The named proposal, revision, task, agent or other record does not
    /// exist.
    NotFound,
    /// The actor may not do this: wrong kind (an agent calling a human-only
    /// tool), not the author, the author voting on their own proposal, an
    /// unregistered or disabled agent.
    Forbidden,
    /// The call lost a race or repeats a record: the expected revision is
    /// not the latest, the id is taken, a revision was superseded.
    Conflict,
    /// The proposal's current status does not allow this operation (the
    /// details name the status and the statuses that would).
    IllegalTransition,
    /// An idempotency key was used before with other arguments (or another
    /// tool).
    IdempotencyConflict,
    /// The store's database failed (locked past the busy timeout, corrupt,
    /// disk full); the call changed nothing.
    Database,
    /// The store was written by a newer roundtable (its schema version is
    /// higher than this code knows), so it is not opened.
    IncompatibleStore,
    /// A `symbol:` resource names no symbol in the file's current content.
    UnknownSymbol,
    /// A `symbol:` resource names more than one symbol (the details list
    /// the candidates and their spans).
    AmbiguousSymbol,
    /// Symbols are asked for in a file whose language roundtable cannot
    /// index.
    UnsupportedLanguage,
    /// A policy document is malformed (bad TOML, an unknown key, a bad glob;
    /// the details name the place).
    InvalidPolicy,
    /// A claim's resource changed since the claim was acquired (its digest
    /// is not the claim's base digest), or its fencing token was superseded.
    StaleClaim,
    /// A gate of the validation report fails (the details carry the whole
    /// report).
    ValidationFailed,
    /// Another applier holds the workspace's apply lock past the wait: the
    /// call changed nothing and may be retried soon (unlike `conflict`,
    /// nobody owns what the call wanted).
    Busy,
    /// A path names something that is not a regular file, a directory or a
    /// symbolic link (a FIFO, a socket, a device): roundtable never opens
    /// one (the details name the path and its type).
    SpecialFile,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::InvalidPatch,
        ErrorCode::PatchDoesNotApply,
        ErrorCode::UnsupportedPatch,
        ErrorCode::PathEscape,
        ErrorCode::InvalidPath,
        ErrorCode::IrreversiblePatch,
        ErrorCode::InvalidArgument,
        ErrorCode::Io,
        ErrorCode::PreconditionFailed,
        ErrorCode::InvalidEditPlan,
        ErrorCode::IncompleteEditPlan,
        ErrorCode::NotFound,
        ErrorCode::Forbidden,
        ErrorCode::Conflict,
        ErrorCode::IllegalTransition,
        ErrorCode::IdempotencyConflict,
        ErrorCode::Database,
        ErrorCode::IncompatibleStore,
        ErrorCode::UnknownSymbol,
        ErrorCode::AmbiguousSymbol,
        ErrorCode::UnsupportedLanguage,
        ErrorCode::InvalidPolicy,
        ErrorCode::StaleClaim,
        ErrorCode::ValidationFailed,
        ErrorCode::Busy,
        ErrorCode::SpecialFile,
    ];

    /// The stable snake_case spelling of this code.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidPatch => "invalid_patch",
            ErrorCode::PatchDoesNotApply => "patch_does_not_apply",
            ErrorCode::UnsupportedPatch => "unsupported_patch",
            ErrorCode::PathEscape => "path_escape",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::IrreversiblePatch => "irreversible_patch",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::Io => "io",
            ErrorCode::PreconditionFailed => "precondition_failed",
            ErrorCode::InvalidEditPlan => "invalid_edit_plan",
            ErrorCode::IncompleteEditPlan => "incomplete_edit_plan",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::Conflict => "conflict",
            ErrorCode::IllegalTransition => "illegal_transition",
            ErrorCode::IdempotencyConflict => "idempotency_conflict",
            ErrorCode::Database => "database",
            ErrorCode::IncompatibleStore => "incompatible_store",
            ErrorCode::UnknownSymbol => "unknown_symbol",
            ErrorCode::AmbiguousSymbol => "ambiguous_symbol",
            ErrorCode::UnsupportedLanguage => "unsupported_language",
            ErrorCode::InvalidPolicy => "invalid_policy",
            ErrorCode::StaleClaim => "stale_claim",
            ErrorCode::ValidationFailed => "validation_failed",
            ErrorCode::Busy => "busy",
            ErrorCode::SpecialFile => "special_file",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_snake_case() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            // serde spelling and as_str agree
            let json = serde_json::to_string(code).expect("serializes");
            assert_eq!(json, format!("\"{s}\""));
        }
    }
}
