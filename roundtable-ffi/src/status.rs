//! [`rt_status`]: the status every fallible export returns.
//!
//! The enum and its list `rt_status::ALL` are generated from the core's
//! error-code table (`generated.rs`, by scripts/gen-ffi from
//! schema/errors.json; scripts/ffi-header runs it before
//! cbindgen). This file maps a core code to its status.

use rt::ErrorCode;

mod generated;

pub use generated::rt_status;

impl rt_status {
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
// table without regenerating `rt_status` (record the golden errors.json,
// then scripts/ffi-header) fails the build here, not at run time.
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

    /// `(RT_<CODE>, status)` of every code of the recorded error-code
    /// table, schema/errors.json (what scripts/gen-ffi
    /// generates `rt_status` from).
    fn golden_statuses() -> BTreeMap<String, u32> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../schema/errors.json");
        let text = std::fs::read_to_string(path).expect("the golden errors.json is readable");
        let errors: serde_json::Value = serde_json::from_str(&text).expect("errors.json is JSON");
        let entries = errors.as_array().expect("errors.json is an array");
        let mut statuses = BTreeMap::new();
        for entry in entries {
            let code = entry["code"].as_str().expect("a code is a string");
            let status = entry["status"].as_u64().expect("a status is a number");
            let status = u32::try_from(status).expect("a status is a u32");
            let name = format!("RT_{}", code.to_ascii_uppercase());
            assert!(statuses.insert(name, status).is_none(), "{code} twice");
        }
        statuses
    }

    #[test]
    fn issue33_item3_the_status_list_is_generated_from_the_golden() {
        // rt_status (generated by scripts/gen-ffi) is the golden table plus
        // the ABI's own statuses, name for name and value for value, in
        // value order.
        let mut expected = golden_statuses();
        assert_eq!(expected.len(), ErrorCode::ALL.len(), "the golden is stale");
        for (name, value) in NOT_CODES {
            expected.insert(name.to_owned(), value);
        }
        let generated: BTreeMap<String, u32> = rt_status::ALL
            .iter()
            .map(|s| (format!("{s:?}"), *s as u32))
            .collect();
        assert_eq!(generated, expected);
        let values: Vec<u32> = rt_status::ALL.iter().map(|s| *s as u32).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
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
