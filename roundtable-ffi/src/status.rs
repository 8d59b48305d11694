//! [`rt_status`]: the status every fallible export returns.

use rt::ErrorCode;

/// The status every fallible function returns: `RT_OK` (0) on success,
/// otherwise one value per stable error code (the `rt_error`'s
/// `rt_error_code` is the same code spelled in snake_case).
///
/// Values are explicit and never reused: a new code gets a new value, a
/// retired code's value is never given to another. `RT_PANIC` and
/// `RT_UNKNOWN_ERROR` (1000 and up) are conditions of the ABI itself, not
/// codes of the core. A NULL or non-UTF-8 argument is `RT_INVALID_ARGUMENT`
/// naming the argument, like any other invalid argument.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum rt_status {
    /// Success: the outputs were written.
    RT_OK = 0,
    /// `invalid_patch`: the patch text does not follow the diff grammar.
    RT_INVALID_PATCH = 1,
    /// `patch_does_not_apply`: the patch does not apply to the current contents.
    RT_PATCH_DOES_NOT_APPLY = 2,
    /// `unsupported_patch`: a feature roundtable does not apply (submodules, combined diffs).
    RT_UNSUPPORTED_PATCH = 3,
    /// `path_escape`: a path leaves the root or names `.git`/`.roundtable`.
    RT_PATH_ESCAPE = 4,
    /// `invalid_path`: not a valid repository path.
    RT_INVALID_PATH = 5,
    /// `irreversible_patch`: the patch cannot be reversed.
    RT_IRREVERSIBLE_PATCH = 6,
    /// `invalid_argument`: an argument is missing, NULL, not UTF-8, not valid
    /// JSON, of the wrong type or out of range (the details name the field).
    RT_INVALID_ARGUMENT = 7,
    /// `io`: the operating system refused a read or write.
    RT_IO = 8,
    /// `precondition_failed`: a file's current digest is not the expected one.
    RT_PRECONDITION_FAILED = 9,
    /// `invalid_edit_plan`: the edit plan is malformed.
    RT_INVALID_EDIT_PLAN = 10,
    /// `incomplete_edit_plan`: the edit plan's status is not `complete`.
    RT_INCOMPLETE_EDIT_PLAN = 11,
    /// `not_found`: the named record (or tool) does not exist.
    RT_NOT_FOUND = 12,
    /// `forbidden`: the actor may not do this.
    RT_FORBIDDEN = 13,
    /// `conflict`: the call lost a race or repeats a record.
    RT_CONFLICT = 14,
    /// `illegal_transition`: the proposal's status does not allow this.
    RT_ILLEGAL_TRANSITION = 15,
    /// `idempotency_conflict`: the idempotency key was used with other arguments.
    RT_IDEMPOTENCY_CONFLICT = 16,
    /// `database`: the store failed; the call changed nothing.
    RT_DATABASE = 17,
    /// `incompatible_store`: the store was written by a newer roundtable.
    RT_INCOMPATIBLE_STORE = 18,
    /// `unknown_symbol`: a `symbol:` resource names no symbol.
    RT_UNKNOWN_SYMBOL = 19,
    /// `ambiguous_symbol`: a `symbol:` resource names more than one symbol.
    RT_AMBIGUOUS_SYMBOL = 20,
    /// `unsupported_language`: symbols asked for in a language roundtable cannot index.
    RT_UNSUPPORTED_LANGUAGE = 21,
    /// `invalid_policy`: the policy document is malformed.
    RT_INVALID_POLICY = 22,
    /// `stale_claim`: a claim's resource changed since it was acquired.
    RT_STALE_CLAIM = 23,
    /// `validation_failed`: a gate of the validation report fails.
    RT_VALIDATION_FAILED = 24,
    /// `busy`: another applier holds the apply lock; retry soon.
    RT_BUSY = 25,
    /// `special_file`: a path names a FIFO, socket or device, never opened.
    RT_SPECIAL_FILE = 26,
    /// `panic`: a bug inside roundtable was caught at the ABI boundary; the
    /// call's effects are unknown (a store write is all or nothing).
    RT_PANIC = 1000,
    /// The core returned a code this build of the ABI has no status for
    /// (`rt_error_code` still gives its spelling).
    RT_UNKNOWN_ERROR = 1001,
}

impl rt_status {
    /// The status for a core error code.
    pub(crate) fn from_code(code: ErrorCode) -> rt_status {
        match code {
            ErrorCode::InvalidPatch => rt_status::RT_INVALID_PATCH,
            ErrorCode::PatchDoesNotApply => rt_status::RT_PATCH_DOES_NOT_APPLY,
            ErrorCode::UnsupportedPatch => rt_status::RT_UNSUPPORTED_PATCH,
            ErrorCode::PathEscape => rt_status::RT_PATH_ESCAPE,
            ErrorCode::InvalidPath => rt_status::RT_INVALID_PATH,
            ErrorCode::IrreversiblePatch => rt_status::RT_IRREVERSIBLE_PATCH,
            ErrorCode::InvalidArgument => rt_status::RT_INVALID_ARGUMENT,
            ErrorCode::Io => rt_status::RT_IO,
            ErrorCode::PreconditionFailed => rt_status::RT_PRECONDITION_FAILED,
            ErrorCode::InvalidEditPlan => rt_status::RT_INVALID_EDIT_PLAN,
            ErrorCode::IncompleteEditPlan => rt_status::RT_INCOMPLETE_EDIT_PLAN,
            ErrorCode::NotFound => rt_status::RT_NOT_FOUND,
            ErrorCode::Forbidden => rt_status::RT_FORBIDDEN,
            ErrorCode::Conflict => rt_status::RT_CONFLICT,
            ErrorCode::IllegalTransition => rt_status::RT_ILLEGAL_TRANSITION,
            ErrorCode::IdempotencyConflict => rt_status::RT_IDEMPOTENCY_CONFLICT,
            ErrorCode::Database => rt_status::RT_DATABASE,
            ErrorCode::IncompatibleStore => rt_status::RT_INCOMPATIBLE_STORE,
            ErrorCode::UnknownSymbol => rt_status::RT_UNKNOWN_SYMBOL,
            ErrorCode::AmbiguousSymbol => rt_status::RT_AMBIGUOUS_SYMBOL,
            ErrorCode::UnsupportedLanguage => rt_status::RT_UNSUPPORTED_LANGUAGE,
            ErrorCode::InvalidPolicy => rt_status::RT_INVALID_POLICY,
            ErrorCode::StaleClaim => rt_status::RT_STALE_CLAIM,
            ErrorCode::ValidationFailed => rt_status::RT_VALIDATION_FAILED,
            ErrorCode::Busy => rt_status::RT_BUSY,
            ErrorCode::SpecialFile => rt_status::RT_SPECIAL_FILE,
            // `ErrorCode` is non-exhaustive; the unit test below fails until
            // a new code is given its own status here.
            _ => rt_status::RT_UNKNOWN_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every status (keep in step with the enum).
    const ALL: &[rt_status] = &[
        rt_status::RT_OK,
        rt_status::RT_INVALID_PATCH,
        rt_status::RT_PATCH_DOES_NOT_APPLY,
        rt_status::RT_UNSUPPORTED_PATCH,
        rt_status::RT_PATH_ESCAPE,
        rt_status::RT_INVALID_PATH,
        rt_status::RT_IRREVERSIBLE_PATCH,
        rt_status::RT_INVALID_ARGUMENT,
        rt_status::RT_IO,
        rt_status::RT_PRECONDITION_FAILED,
        rt_status::RT_INVALID_EDIT_PLAN,
        rt_status::RT_INCOMPLETE_EDIT_PLAN,
        rt_status::RT_NOT_FOUND,
        rt_status::RT_FORBIDDEN,
        rt_status::RT_CONFLICT,
        rt_status::RT_ILLEGAL_TRANSITION,
        rt_status::RT_IDEMPOTENCY_CONFLICT,
        rt_status::RT_DATABASE,
        rt_status::RT_INCOMPATIBLE_STORE,
        rt_status::RT_UNKNOWN_SYMBOL,
        rt_status::RT_AMBIGUOUS_SYMBOL,
        rt_status::RT_UNSUPPORTED_LANGUAGE,
        rt_status::RT_INVALID_POLICY,
        rt_status::RT_STALE_CLAIM,
        rt_status::RT_VALIDATION_FAILED,
        rt_status::RT_BUSY,
        rt_status::RT_SPECIAL_FILE,
        rt_status::RT_PANIC,
        rt_status::RT_UNKNOWN_ERROR,
    ];

    #[test]
    fn status_values_are_unique() {
        let mut seen = HashSet::new();
        for s in ALL {
            assert!(
                seen.insert(*s as u32),
                "{s:?} reuses the value {}",
                *s as u32
            );
        }
        assert_eq!(rt_status::RT_OK as u32, 0);
    }

    #[test]
    fn every_error_code_has_its_own_status() {
        let mut seen = HashSet::new();
        for &code in ErrorCode::ALL {
            let status = rt_status::from_code(code);
            assert_ne!(status, rt_status::RT_UNKNOWN_ERROR, "{code} has no status");
            assert!(seen.insert(status), "{code} shares {status:?}");
            // The status is the code's name: invalid_patch -> RT_INVALID_PATCH.
            assert_eq!(
                format!("{status:?}"),
                format!("RT_{}", code.as_str().to_ascii_uppercase()),
            );
        }
        // Every status but RT_OK, RT_PANIC and RT_UNKNOWN_ERROR is a code's.
        assert_eq!(seen.len() + 3, ALL.len());
    }
}
