//! Stable error codes shared by every front end.
//!
//! Each module has its own typed error (`thiserror`); every variant maps to
//! exactly one [`ErrorCode`]. The code's snake_case spelling is the stable
//! contract: it is what the CLI prints, what the C ABI's status values and the
//! Python exception classes are derived from. Codes are never renamed or
//! reused.
//!
//! Every code is one row of the `error_codes!` table below: the variant, its
//! spelling, its stable number and its rustdoc. The enum, [`ErrorCode::ALL`],
//! [`ErrorCode::as_str`], [`ErrorCode::number`], [`ErrorCode::from_number`],
//! the serde spelling and [`FromStr`] are all generated from it. `roundtable
//! errors` prints it (with each code's description and details schema), a
//! test records that as `schema/errors.json`, and the
//! bindings are generated from the record: the C `rt_status` enum
//! (`scripts/gen-ffi`, run by `scripts/ffi-header`, then cbindgen), the Go
//! `Code*` constants and `Err*` sentinels (`scripts/gen-go`) and the Python
//! exception classes (`scripts/gen-python`). Adding a row here (and its
//! details in `tools/details.rs`, which the compiler asks for) needs no hand
//! edit in C, Go or Python: record the golden
//! (`RT_UPDATE_GOLDEN=1 cargo test -p roundtable-cli --test all
//! recorded_contract`), run the three generators (each has `--check`, which
//! CI runs).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One row per code: its rustdoc, the variant, the stable snake_case name
/// and the stable number (the C `rt_status` value). This table is the only
/// place a code's name and number are written; the C status list, the Go
/// constants and the Python classes are generated from it (through the
/// recorded `roundtable errors`). The numbers are also the enum's
/// discriminants, so two rows with one number do not compile.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $number:literal;)+) => {
        /// A stable, machine-readable error code.
        ///
        /// The spelling returned by [`ErrorCode::as_str`] and the number
        /// returned by [`ErrorCode::number`] never change once released; new
        /// codes are only ever added, with new numbers.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum ErrorCode {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant = $number,
            )+
        }

        impl ErrorCode {
            /// Every code, in declaration order (which is ascending number
            /// order).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The stable snake_case spelling of this code.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)+
                }
            }

            /// The stable number of this code: the value of its C status
            /// (`RT_` + the upper-cased spelling). Never 0 (`RT_OK`), never
            /// reused.
            pub const fn number(self) -> u32 {
                match self {
                    $(ErrorCode::$variant => $number,)+
                }
            }

            /// The code whose stable number is `number`, if any.
            pub const fn from_number(number: u32) -> Option<ErrorCode> {
                match number {
                    $($number => Some(ErrorCode::$variant),)+
                    _ => None,
                }
            }
        }

        impl FromStr for ErrorCode {
            type Err = UnknownErrorCode;

            /// The code spelled `s` (its [`ErrorCode::as_str`] spelling,
            /// exactly).
            fn from_str(s: &str) -> Result<ErrorCode, UnknownErrorCode> {
                match s {
                    $($name => Ok(ErrorCode::$variant),)+
                    _ => Err(UnknownErrorCode { name: s.to_owned() }),
                }
            }
        }
    };
}

error_codes! {
    /// The patch text is malformed: it does not follow the unified/git diff
    /// grammar (the details name the line and what was expected).
    InvalidPatch = "invalid_patch", 1;
    /// The patch is well formed but does not apply to the current contents:
    /// a hunk's context is not found, a file to create exists, a file to
    /// modify is missing, a binary pre-image does not match.
    PatchDoesNotApply = "patch_does_not_apply", 2;
    /// The patch uses a feature roundtable deliberately does not apply
    /// (submodules/gitlinks, combined diffs of merges).
    UnsupportedPatch = "unsupported_patch", 3;
    /// A path would leave the repository root, or names `.git`/`.roundtable`;
    /// a path passes through a symbolic link; or a symbolic link's target
    /// would leave the root (or point into `.git`/`.roundtable`).
    PathEscape = "path_escape", 4;
    /// A path is not a valid repository path (empty, not UTF-8, NUL byte…).
    InvalidPath = "invalid_path", 5;
    /// A patch cannot be reversed (a copy has no inverse in the diff grammar).
    IrreversiblePatch = "irreversible_patch", 6;
    /// A call's arguments are invalid (a field is missing, of the wrong type
    /// or out of range).
    InvalidArgument = "invalid_argument", 7;
    /// The operating system refused a read or write.
    Io = "io", 8;
    /// A change's precondition does not hold: the file's current digest is
    /// not the expected one, or a file expected to be absent exists.
    PreconditionFailed = "precondition_failed", 9;
    /// An edit plan is malformed (bad JSON shape, overlapping edits, a
    /// range off the end of a line or inside a character, a blob that does
    /// not match its digest…).
    InvalidEditPlan = "invalid_edit_plan", 10;
    /// An edit plan's proposal status is not `complete` (`incomplete`,
    /// `unsupported`, `cancelled`, `errored`): it must not be applied.
    IncompleteEditPlan = "incomplete_edit_plan", 11;
    /// The named proposal, revision, task, agent or other record does not
    /// exist.
    NotFound = "not_found", 12;
    /// The actor may not do this: wrong kind (an agent calling a human-only
    /// tool), not the author, the author voting on their own proposal, an
    /// unregistered or disabled agent.
    Forbidden = "forbidden", 13;
    /// The call lost a race or repeats a record: the expected revision is
    /// not the latest, the id is taken, a revision was superseded.
    Conflict = "conflict", 14;
    /// The proposal's current status does not allow this operation (the
    /// details name the status and the statuses that would).
    IllegalTransition = "illegal_transition", 15;
    /// An idempotency key was used before with other arguments (or another
    /// tool).
    IdempotencyConflict = "idempotency_conflict", 16;
    /// The store's database failed (locked past the busy timeout, corrupt,
    /// disk full); the call changed nothing.
    Database = "database", 17;
    /// The store was written by a newer roundtable (its schema version is
    /// higher than this code knows), so it is not opened.
    IncompatibleStore = "incompatible_store", 18;
    /// A `symbol:` resource names no symbol in the file's current content.
    UnknownSymbol = "unknown_symbol", 19;
    /// A `symbol:` resource names more than one symbol (the details list
    /// the candidates and their spans).
    AmbiguousSymbol = "ambiguous_symbol", 20;
    /// Symbols are asked for in a file whose language roundtable cannot
    /// index.
    UnsupportedLanguage = "unsupported_language", 21;
    /// A policy document is malformed (bad TOML, an unknown key, a bad glob;
    /// the details name the place).
    InvalidPolicy = "invalid_policy", 22;
    /// A claim's resource changed since the claim was acquired (its digest
    /// is not the claim's base digest), or its fencing token was superseded.
    StaleClaim = "stale_claim", 23;
    /// A gate of the validation report fails (the details carry the whole
    /// report).
    ValidationFailed = "validation_failed", 24;
    /// Another applier holds the workspace's apply lock past the wait: the
    /// call changed nothing and may be retried soon (unlike `conflict`,
    /// nobody owns what the call wanted).
    Busy = "busy", 25;
    /// A path names something that is not a regular file, a directory or a
    /// symbolic link (a FIFO, a socket, a device): roundtable never opens
    /// one (the details name the path and its type).
    SpecialFile = "special_file", 26;
    /// The caller cancelled the call (its cancel token) while it waited,
    /// before its commit point: it changed nothing.
    Cancelled = "cancelled", 27;
    /// The call's deadline passed while it waited, before its commit
    /// point: it changed nothing.
    DeadlineExceeded = "deadline_exceeded", 28;
    /// The engine was opened by another process: this process is a
    /// `fork()` child that inherited it (its locks, threads and database
    /// connections belong to the parent). Nothing was done; open a new
    /// engine in this process.
    InheritedEngine = "inherited_engine", 29;
}

/// A name that is not the spelling of any [`ErrorCode`] (what parsing one
/// with [`str::parse`] returns for an unknown name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not an error code")]
pub struct UnknownErrorCode {
    name: String,
}

impl UnknownErrorCode {
    /// The name that was not recognised.
    pub fn name(&self) -> &str {
        &self.name
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
                !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            // serde spelling and as_str agree
            let json = serde_json::to_string(code).expect("serializes");
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(code.to_string(), s);
        }
    }

    #[test]
    fn numbers_are_unique_nonzero_and_ascending() {
        let mut last = 0;
        for &code in ErrorCode::ALL {
            let n = code.number();
            // 0 is RT_OK; ALL is in declaration order, which is number order.
            assert!(n > last, "{code} has number {n}, not above {last}");
            assert_eq!(ErrorCode::from_number(n), Some(code));
            last = n;
        }
        assert_eq!(ErrorCode::from_number(0), None);
        assert_eq!(ErrorCode::from_number(last + 1), None);
        assert_eq!(ErrorCode::from_number(u32::MAX), None);
    }

    #[test]
    fn the_numbers_released_so_far_do_not_move() {
        // A few fixed points of the released ABI (RT_INVALID_PATCH = 1 …
        // RT_SPECIAL_FILE = 26); roundtable-ffi checks every one against
        // include/roundtable.h.
        assert_eq!(ErrorCode::InvalidPatch.number(), 1);
        assert_eq!(ErrorCode::Io.number(), 8);
        assert_eq!(ErrorCode::NotFound.number(), 12);
        assert_eq!(ErrorCode::SpecialFile.number(), 26);
    }

    #[test]
    fn names_parse_back_and_unknown_names_are_a_typed_error() {
        for &code in ErrorCode::ALL {
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
            assert_eq!(ErrorCode::from_str(code.as_str()), Ok(code));
        }
        for bad in [
            "",
            "nope",
            "NOT_FOUND",
            "NotFound",
            " not_found",
            "not_found\0",
            "ok",
        ] {
            let err = bad.parse::<ErrorCode>().expect_err(bad);
            assert_eq!(err.name(), bad);
            assert_eq!(err.to_string(), format!("{bad:?} is not an error code"));
        }
    }
}
