//! [`rt_status`]: the status every fallible export returns.

use rt::ErrorCode;

/// The status every fallible function returns: `RT_OK` (0) on success,
/// otherwise one value per stable error code (the `rt_error`'s
/// `rt_error_code` is the same code spelled in snake_case).
///
/// Values are explicit and never reused: a new code gets a new value, a
/// retired code's value is never given to another. Each code's value is its
/// stable number in the core's error-code table (`ErrorCode::number`) and its
/// name is `RT_` + the code upper-cased; a test checks this header against
/// that table. `RT_PANIC` and
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
    /// `cancelled`: the call's cancel handle was cancelled while it waited,
    /// before its commit point; nothing changed.
    RT_CANCELLED = 27,
    /// `deadline_exceeded`: the call's deadline passed while it waited,
    /// before its commit point; nothing changed.
    RT_DEADLINE_EXCEEDED = 28,
    /// `inherited_engine`: the engine was opened by another process and
    /// this `fork()` child inherited it; nothing was done (open a new engine
    /// in the child).
    RT_INHERITED_ENGINE = 29,
    /// `panic`: a bug inside roundtable was caught at the ABI boundary; the
    /// call's effects are unknown (a store write is all or nothing).
    RT_PANIC = 1000,
    /// The core returned a code this build of the ABI has no status for
    /// (`rt_error_code` still gives its spelling).
    RT_UNKNOWN_ERROR = 1001,
}

impl rt_status {
    /// Every status, as the enum above declares it (the unit tests check this
    /// list against the enum in include/roundtable.h, both ways).
    pub(crate) const ALL: &[rt_status] = &[
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
        rt_status::RT_CANCELLED,
        rt_status::RT_DEADLINE_EXCEEDED,
        rt_status::RT_INHERITED_ENGINE,
        rt_status::RT_PANIC,
        rt_status::RT_UNKNOWN_ERROR,
    ];

    /// The statuses that are conditions of the call or the ABI, not codes of
    /// the core.
    const NOT_CODES: [rt_status; 3] = [
        rt_status::RT_OK,
        rt_status::RT_PANIC,
        rt_status::RT_UNKNOWN_ERROR,
    ];

    /// The error status whose value is `number`, if any.
    const fn from_code_number(number: u32) -> Option<rt_status> {
        let mut i = 0;
        while i < rt_status::ALL.len() {
            let status = rt_status::ALL[i];
            if status as u32 == number && !status.is_not_code() {
                return Some(status);
            }
            i += 1;
        }
        None
    }

    /// Whether this status is RT_OK, RT_PANIC or RT_UNKNOWN_ERROR.
    const fn is_not_code(self) -> bool {
        let mut i = 0;
        while i < rt_status::NOT_CODES.len() {
            if rt_status::NOT_CODES[i] as u32 == self as u32 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// The status for a core error code: the one whose value is the code's
    /// stable number ([`ErrorCode::number`]).
    pub(crate) const fn from_code(code: ErrorCode) -> rt_status {
        match rt_status::from_code_number(code.number()) {
            Some(status) => status,
            // Unreachable: the assertion below does not compile while a code
            // has no status.
            None => rt_status::RT_UNKNOWN_ERROR,
        }
    }
}

// Every core code has its status: adding a row to the core's `error_codes!`
// table without adding `RT_<NAME> = <number>` to `rt_status` (and to `ALL`)
// fails the build here, not at run time.
const _: () = {
    let mut i = 0;
    while i < ErrorCode::ALL.len() {
        assert!(
            rt_status::from_code_number(ErrorCode::ALL[i].number()).is_some(),
            "an ErrorCode has no rt_status with its number",
        );
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashSet};

    /// The enumerators of `enum rt_status` in include/roundtable.h, by name:
    /// what a C or Go host compiles against.
    fn header_statuses() -> BTreeMap<String, u32> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/roundtable.h");
        let header = std::fs::read_to_string(path).expect("include/roundtable.h is readable");
        let start = header
            .find("enum rt_status")
            .expect("the header declares enum rt_status");
        let body = &header[start..];
        let open = body.find('{').expect("enum rt_status has a body");
        let close = body.find("};").expect("enum rt_status ends");
        let mut statuses = BTreeMap::new();
        for line in body[open + 1..close].lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            let (name, value) = line
                .trim_end_matches(',')
                .split_once(" = ")
                .unwrap_or_else(|| panic!("not `NAME = value,` in enum rt_status: {line:?}"));
            let value: u32 = value
                .parse()
                .unwrap_or_else(|e| panic!("{name}'s value {value:?}: {e}"));
            assert!(
                statuses.insert(name.to_owned(), value).is_none(),
                "{name} twice in the header"
            );
        }
        statuses
    }

    /// The statuses that are not core codes, with their fixed values.
    const NOT_CODES: [(&str, u32); 3] =
        [("RT_OK", 0), ("RT_PANIC", 1000), ("RT_UNKNOWN_ERROR", 1001)];

    #[test]
    fn status_values_are_unique() {
        let mut seen = HashSet::new();
        for s in rt_status::ALL {
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
            assert_eq!(status as u32, code.number(), "{code}");
            // The status is the code's name: invalid_patch -> RT_INVALID_PATCH.
            assert_eq!(
                format!("{status:?}"),
                format!("RT_{}", code.as_str().to_ascii_uppercase()),
            );
        }
        // Every status but RT_OK, RT_PANIC and RT_UNKNOWN_ERROR is a code's.
        assert_eq!(seen.len() + NOT_CODES.len(), rt_status::ALL.len());
    }

    #[test]
    fn the_c_header_has_one_status_per_code_and_no_other() {
        let mut header = header_statuses();
        // Every core code is `RT_` + its upper-cased name, with its number.
        for &code in ErrorCode::ALL {
            let name = format!("RT_{}", code.as_str().to_ascii_uppercase());
            match header.remove(&name) {
                Some(value) => assert_eq!(
                    value,
                    code.number(),
                    "{name} is {value} in include/roundtable.h, but {code} is {}",
                    code.number()
                ),
                None => panic!("include/roundtable.h has no {name} for {code}"),
            }
        }
        // What is left is not a code: exactly RT_OK, RT_PANIC and
        // RT_UNKNOWN_ERROR, at their fixed values.
        let rest: Vec<(&str, u32)> = header.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        let mut expected = NOT_CODES.to_vec();
        expected.sort();
        assert_eq!(
            rest, expected,
            "include/roundtable.h has statuses that are not core codes"
        );
    }

    #[test]
    fn the_rust_status_list_is_the_c_header() {
        // rt_status::ALL (which `from_code` searches) is the enum, name for
        // name and value for value, so a variant missing from it is caught.
        let listed: BTreeMap<String, u32> = rt_status::ALL
            .iter()
            .map(|s| (format!("{s:?}"), *s as u32))
            .collect();
        assert_eq!(listed.len(), rt_status::ALL.len(), "a status listed twice");
        assert_eq!(listed, header_statuses());
        for (name, value) in NOT_CODES {
            let status = rt_status::ALL
                .iter()
                .find(|s| format!("{s:?}") == name)
                .unwrap_or_else(|| panic!("{name} is not in rt_status::ALL"));
            assert_eq!(*status as u32, value, "{name}");
            assert!(status.is_not_code(), "{name}");
            assert_eq!(rt_status::from_code_number(value), None, "{name}");
        }
    }
}
