//! Every lower layer's error as a tool error: its details are a value of
//! its code's details type.

use super::*;
use crate::apply::TransactionError;
use crate::diff::{ApplyError, ParseOptions, TreeError, TreeFile};
use crate::edit::agent::{changeset as agent_changeset, AgentFormat};
use crate::edit::PlanStatus;
use crate::landing::LandingError;
use crate::operations::ToolError;
use crate::symbols::{Symbol, SymbolError, SymbolKind};
use crate::workspace::{SpecialKind, WorkspaceError};
use crate::{Digest, RepoPath};
use std::collections::BTreeMap;
use std::io;

/// The error's details are a value of its code's details type (the
/// conversion itself panics, in a debug build, when a lower layer's
/// details are not).
#[track_caller]
fn conforms(e: impl Into<ToolError>) -> ToolError {
    let e = e.into();
    if let Err(v) = e.check_details() {
        panic!("{v}\ndetails: {}", e.details());
    }
    e
}

fn io_error() -> io::Error {
    io::Error::from_raw_os_error(13)
}

fn rp(p: &str) -> RepoPath {
    RepoPath::from_bytes(p.as_bytes()).expect("a path")
}

#[test]
fn every_code_has_a_description_and_a_closed_object_schema() {
    let all = errors_json();
    let all = all.as_array().expect("a list");
    assert_eq!(all.len(), ErrorCode::ALL.len());
    let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    names.sort_unstable();
    for (entry, name) in all.iter().zip(names) {
        assert_eq!(entry["code"], name, "sorted by code");
        let code: ErrorCode = name.parse().expect("a code");
        assert_eq!(entry["status"], code.number());
        let text = entry["description"].as_str().expect("a description");
        assert!(
            text.ends_with('.') && !text.contains('\n') && !text.contains(". "),
            "{code}: one sentence: {text:?}"
        );
        let schema = &entry["details_schema"];
        assert_eq!(schema, &details_schema(code));
        assert_eq!(schema["type"], "object", "{code}");
        assert_eq!(schema["additionalProperties"], false, "{code}");
        let empty = serde_json::Map::new();
        let props = schema["properties"].as_object().unwrap_or(&empty);
        for key in schema["required"].as_array().into_iter().flatten() {
            assert!(
                props.contains_key(key.as_str().expect("a key")),
                "{code}: {key}"
            );
        }
        for (key, prop) in props {
            assert!(
                prop.get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.is_empty()),
                "{code}.{key} has no description"
            );
        }
        // The details' own records are closed too.
        for name in [
            "MatchCandidate",
            "PreconditionFailure",
            "ErrorCause",
            "MovedPath",
            "Symbol",
        ] {
            if let Some(def) = schema["$defs"].get(name) {
                assert_eq!(def["additionalProperties"], false, "{code}: {name}");
            }
        }
    }
}

#[test]
fn the_details_own_enums_are_the_codes_own_spellings() {
    // SpecialKind: every kind the workspace reports.
    for kind in [
        SpecialKind::Fifo,
        SpecialKind::Socket,
        SpecialKind::CharDevice,
        SpecialKind::BlockDevice,
        SpecialKind::Submodule,
    ] {
        // A new kind fails to compile here until it is listed.
        match kind {
            SpecialKind::Fifo
            | SpecialKind::Socket
            | SpecialKind::CharDevice
            | SpecialKind::BlockDevice
            | SpecialKind::Submodule => {}
        }
        conforms(WorkspaceError::Special {
            path: "p".into(),
            kind,
        });
    }
    // An incomplete plan's status is any but `complete`.
    for &status in PlanStatus::ALL {
        let read = serde_json::from_value::<EditPlanStatus>(json!(status.as_str()));
        assert_eq!(read.is_ok(), status != PlanStatus::Complete, "{status:?}");
    }
}

#[test]
fn tool_layer_helpers_conform() {
    conforms(ToolError::invalid_argument("affected_resources[2]", "bad"));
    conforms(ToolError::invalid_argument(
        "",
        "the arguments must be a JSON object",
    ));
    conforms(ToolError::not_found("task", "t1"));
    // The MCP server's wait cap (roundtable-mcp, `waits`).
    conforms(ToolError::new(
        "too many waits",
        BusyDetails {
            max_waits: Some(600),
            ..BusyDetails::default()
        },
    ));
    conforms(ToolError::from(crate::interrupt::Interrupted::Cancelled));
    conforms(ToolError::from(
        crate::interrupt::Interrupted::DeadlineExceeded,
    ));
    conforms(ToolError::from(crate::store::sql::SqlError::NoRows));
    conforms(crate::changeset::ChangesetError::Stale { path: rp("a") });
    conforms(crate::changeset::ChangesetError::Path(
        RepoPath::from_bytes(b"../x").expect_err("escapes"),
    ));
}

fn workspace_errors() -> Vec<WorkspaceError> {
    let tree_error = |code, source: Box<dyn std::error::Error + Send + Sync>| TreeError {
        code,
        path: b"a".to_vec(),
        source,
    };
    let errors = vec![
        WorkspaceError::Path(RepoPath::from_bytes(b"../x").expect_err("escapes")),
        WorkspaceError::Path(RepoPath::from_bytes(b"").expect_err("empty")),
        WorkspaceError::Symlink {
            path: "l/a".into(),
            link: "l".into(),
        },
        WorkspaceError::Special {
            path: "fifo".into(),
            kind: SpecialKind::Fifo,
        },
        WorkspaceError::Apply(ApplyError::Hunk {
            path: b"a".to_vec(),
            hunk: 2,
            reason: "the context does not match",
        }),
        WorkspaceError::Apply(ApplyError::File {
            path: b"a".to_vec(),
            reason: "already exists".into(),
        }),
        WorkspaceError::Apply(ApplyError::Unsupported {
            path: b"sub".to_vec(),
            reason: "a submodule",
        }),
        WorkspaceError::Apply(ApplyError::LinkEscape {
            path: b"l".to_vec(),
            target: b"../../etc".to_vec(),
        }),
        WorkspaceError::Apply(ApplyError::IsLink {
            path: b"l".to_vec(),
        }),
        WorkspaceError::Apply(ApplyError::Tree(tree_error(
            ErrorCode::Io,
            Box::new(io_error()),
        ))),
        WorkspaceError::Apply(ApplyError::Tree(tree_error(
            ErrorCode::SpecialFile,
            Box::new(WorkspaceError::Special {
                path: "a".into(),
                kind: SpecialKind::Socket,
            }),
        ))),
        WorkspaceError::Apply(ApplyError::Tree(tree_error(
            ErrorCode::PathEscape,
            Box::new(WorkspaceError::Symlink {
                path: "a".into(),
                link: "a".into(),
            }),
        ))),
        WorkspaceError::Precondition {
            path: "a".into(),
            expected: Digest::of(b"x").to_string(),
            actual: "absent".into(),
        },
        WorkspaceError::Root {
            root: "/nope".into(),
            source: io_error(),
        },
        WorkspaceError::Commit {
            path: "a".into(),
            source: io_error(),
        },
        WorkspaceError::Undo {
            path: "a".into(),
            source: io_error(),
            undo: "b: gone".into(),
        },
        WorkspaceError::Bare {
            root: "/r.git".into(),
        },
    ];
    #[cfg(feature = "git")]
    let errors = errors
        .into_iter()
        .chain([WorkspaceError::Git {
            what: "read HEAD",
            source: git2::Error::from_str("no"),
        }])
        .collect();
    errors
}

fn landing_errors() -> Vec<LandingError> {
    let errors = vec![
        LandingError::BranchMoved {
            remote: None,
            branch: "refs/heads/main".into(),
            expected: "a".repeat(40),
            actual: None,
        },
        LandingError::BranchMoved {
            remote: Some("origin".into()),
            branch: "refs/heads/main".into(),
            expected: "a".repeat(40),
            actual: Some("b".repeat(40)),
        },
        LandingError::RemoteRejected(Box::new(crate::landing::RemoteRefusal {
            remote: "../remote.git".into(),
            branch: "refs/heads/main".into(),
            status: "pre-receive hook declined".into(),
            messages: vec!["no pushes today".into()],
        })),
        LandingError::InvalidInput {
            field: "trailer",
            reason: "two lines".into(),
        },
        LandingError::NoGit {
            what: "a change cannot land in git mode",
        },
    ];
    #[cfg(feature = "git")]
    let errors = errors
        .into_iter()
        .chain([LandingError::Git {
            what: "write a tree",
            source: git2::Error::from_str("no"),
        }])
        .collect();
    errors
}

#[test]
fn workspace_transaction_and_landing_errors_conform() {
    for e in workspace_errors() {
        conforms(e);
    }
    for source in workspace_errors() {
        let e = conforms(TransactionError::Write {
            transaction_id: "tx1".into(),
            source,
        });
        assert_eq!(e.details()["transaction_id"], "tx1", "{e}");
    }
    for e in landing_errors() {
        // As the apply tools report a landing step's refusal.
        conforms(ToolError::from(e));
    }
    for source in landing_errors() {
        conforms(TransactionError::Landing {
            transaction_id: "tx1".into(),
            source,
        });
    }
    for e in [
        TransactionError::Lock {
            path: ".roundtable/apply.lock".into(),
            source: rustix::io::Errno::ACCESS,
        },
        TransactionError::Interrupted(crate::interrupt::Interrupted::Cancelled),
        TransactionError::Interrupted(crate::interrupt::Interrupted::DeadlineExceeded),
        TransactionError::Busy { waited_ms: 5000 },
        TransactionError::Exists { id: "tx1".into() },
        TransactionError::NotFound { id: "tx1".into() },
        TransactionError::FinishedElsewhere { id: "tx1".into() },
        TransactionError::Journal {
            message: "m".into(),
            details: json!({"transaction_id": "tx1"}),
        },
        TransactionError::Journal {
            message: "m".into(),
            details: json!({"path": "a", "digest": Digest::of(b"x")}),
        },
        TransactionError::Journal {
            message: "m".into(),
            details: json!({}),
        },
        TransactionError::Sqlite(crate::store::sql::SqlError::NoRows),
    ] {
        conforms(e);
    }
}

#[test]
fn symbol_and_policy_errors_conform() {
    let symbol = Symbol {
        name: "a.f".into(),
        kind: SymbolKind::Function,
        start_line: 1,
        end_line: 3,
        start_byte: 0,
        end_byte: 20,
        definition: true,
    };
    for e in [
        SymbolError::UnsupportedLanguage {
            path: "a.txt".into(),
        },
        SymbolError::UnknownSymbol {
            path: "a.rs".into(),
            name: "g".into(),
            similar: vec!["f".into()],
        },
        SymbolError::AmbiguousSymbol {
            path: "a.rs".into(),
            name: "f".into(),
            candidates: vec![symbol.clone(), symbol],
        },
        SymbolError::SourceTooLarge { len: 1 << 33 },
        SymbolError::NestingTooDeep,
        SymbolError::NameTooLong { len: 5000 },
    ] {
        conforms(e);
    }
    for text in [
        "version = \n",
        "version = 1\n[approvals]\nminimun = 1\n",
        "version = 1\n[workspace]\nignore = [\"{a\"]\n",
        "version = 99\n",
    ] {
        let e = crate::policy::Policy::parse(text).expect_err(text);
        let details = InvalidPolicyDetails::from(&e);
        assert_eq!(details.line, e.line().map(|l| l as u64), "{text}");
        conforms(e);
        // A stored policy that no longer parses is `database`, with
        // the same details.
        let stored = conforms(ToolError::new("m", DatabaseDetails::from(details)));
        assert_eq!(stored.code(), ErrorCode::Database);
    }
}

#[test]
fn patch_parse_errors_conform() {
    let e = conforms(
        crate::diff::parse(b"diff --git a/x\n@@ nonsense\n", &Default::default()).expect_err("bad"),
    );
    assert_eq!(e.code(), ErrorCode::InvalidPatch);
    let e = conforms(
        crate::diff::parse(b"diff --cc a\nindex 1,2..3\n", &ParseOptions::default())
            .expect_err("combined"),
    );
    assert_eq!(e.code(), ErrorCode::UnsupportedPatch);
    let data = vec![0u8; 1 << 16];
    let mut text = b"diff --git a/z.bin b/z.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\nGIT binary patch\nliteral 65536\n".to_vec();
    crate::diff::binary::encode_lines(&crate::diff::binary::deflate(&data), &mut text);
    text.extend_from_slice(b"\nliteral 0\n");
    crate::diff::binary::encode_lines(&crate::diff::binary::deflate(b""), &mut text);
    text.push(b'\n');
    let limited = ParseOptions {
        max_inflated_bytes: 100,
        ..ParseOptions::default()
    };
    let e = conforms(crate::diff::parse(&text, &limited).expect_err("over the limit"));
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.details()["field"], "max_inflated_bytes");
}

#[test]
fn edit_plan_errors_conform() {
    let digest = Digest::of(b"old\n");
    let modify = |path: &str, expected: &Digest| {
        format!(
            r#"{{"documentChanges": [{{"path": "{path}", "kind": "modify", "precondition": {{"expectedDigest": "{expected}"}},
                "edits": [{{"range": {{"start": {{"line": 0, "char": 0}}, "end": {{"line": 0, "char": 3}}}}, "coordinateSystem": "utf8", "newText": "new"}}]}}]}}"#
        )
    };
    for bad in [
        "[]".to_owned(),
        r#"{"documentChanges": 3}"#.to_owned(),
        modify("../x", &digest),
        modify("", &digest),
        r#"{"proposal": {"status": "incomplete", "reason": {"why": [1]}, "diagnostics": ["d"]}}"#
            .to_owned(),
        r#"{"proposal": {"status": "errored"}}"#.to_owned(),
    ] {
        let e = crate::edit::parse_plan(bad.as_bytes()).expect_err(&bad);
        conforms(e);
    }
    let tree = BTreeMap::from([
        (b"a".to_vec(), TreeFile::regular(b"other\n".to_vec())),
        (b"l".to_vec(), TreeFile::link(b"a".to_vec())),
        (b"short".to_vec(), TreeFile::regular(b"ol\n".to_vec())),
    ]);
    for (path, expected) in [
        ("a", digest),
        ("l", Digest::of(b"a")),
        ("short", Digest::of(b"ol\n")),
    ] {
        let plan = crate::edit::parse_plan(modify(path, &expected).as_bytes()).expect("parses");
        let e = crate::edit::plan_changeset(&plan, &tree).expect_err(path);
        conforms(e);
    }
}

#[test]
fn agent_edit_errors_conform() {
    let tree = BTreeMap::from([
        (b"a".to_vec(), TreeFile::regular(b"a\nb\na\n".to_vec())),
        (b"c".to_vec(), TreeFile::regular(b"x\ny\nz\n".to_vec())),
    ]);
    let codex: &[&[u8]] = &[
        b"nonsense\n",
        b"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n",
        b"*** Begin Patch\n*** Delete File: nope\n*** End Patch\n",
        b"*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch\n",
        b"*** Begin Patch\n*** Update File: c\n@@ nowhere\n-y\n+w\n*** End Patch\n",
        b"*** Begin Patch\n*** Update File: c\n-q\n+w\n*** End of File\n*** End Patch\n",
        b"*** Begin Patch\n*** Update File: c\n x\n*** End Patch\n",
        b"*** Begin Patch\n*** Update File: c\n-y\n+w\n*** Update File: c\n-z\n+v\n*** End Patch\n",
        b"*** Begin Patch\n*** Add File: d\n+x\n*** Add File: d/e\n+y\n*** End Patch\n",
        b"\xff\xfe",
    ];
    for text in codex {
        let e = agent_changeset(AgentFormat::Codex, text, &tree)
            .expect_err(&String::from_utf8_lossy(text));
        conforms(e);
    }
    let search_replace: &[&[u8]] = &[
        b"a\n<<<<<<< SEARCH\na\n=======\nc\n>>>>>>> REPLACE\n",
        b"c\n<<<<<<< SEARCH\nx\ny\n=======\n1\n>>>>>>> REPLACE\n<<<<<<< SEARCH\ny\nz\n=======\n2\n>>>>>>> REPLACE\n",
        b"c\n<<<<<<< SEARCH\nx\nq\n=======\n1\n>>>>>>> REPLACE\n",
        b"c\n<<<<<<< SEARCH\n=======\n1\n>>>>>>> REPLACE\n",
    ];
    for text in search_replace {
        let e = agent_changeset(AgentFormat::SearchReplace, text, &tree)
            .expect_err(&String::from_utf8_lossy(text));
        conforms(e);
    }
}

#[test]
fn details_not_of_the_codes_type_are_refused() {
    let refused = |code: ErrorCode, details: Value| {
        let e = retype(code, details.clone())
            .expect_err(&format!("{code} {details} should be refused"));
        e.to_string()
    };
    assert!(refused(ErrorCode::NotFound, json!({"kind": "task"})).contains("`id`"));
    assert!(refused(
        ErrorCode::NotFound,
        json!({"kind": "task", "id": "t", "name": "x"})
    )
    .contains("unknown field `name`"));
    refused(ErrorCode::NotFound, json!({"kind": "task", "id": 7}));
    let actor = json!({"kind": "agent", "id": "ada"});
    retype(
        ErrorCode::Forbidden,
        json!({"actor": actor, "reason": "disabled"}),
    )
    .expect("of the type");
    refused(
        ErrorCode::Forbidden,
        json!({"actor": actor, "reason": "sleepy"}),
    );
    refused(
        ErrorCode::Forbidden,
        json!({"actor": {"kind": "robot", "id": "r"}}),
    );
    refused(ErrorCode::Conflict, json!({"holder": "ada"}));
    refused(
        ErrorCode::ValidationFailed,
        json!({"report": {"valid": false}}),
    );
    refused(ErrorCode::IncompatibleStore, json!({"path": "x"}));
    refused(
        ErrorCode::PatchDoesNotApply,
        json!({"path": "a", "candidates": [{"line": 1}]}),
    );
    refused(ErrorCode::Io, json!([]));
    // A key that may be `null` reads back as `null`, not as absent.
    let e = ToolError::from_json(
        ErrorCode::PreconditionFailed,
        "m",
        json!({"ref": "refs/heads/main", "head": null}),
    )
    .expect("of the type");
    assert_eq!(
        e.details(),
        &json!({"ref": "refs/heads/main", "head": null})
    );
    e.check_details().expect("reads back unchanged");
    // An error handed in from elsewhere with details of another code.
    let e = ToolError::from_json(ErrorCode::Busy, "m", json!({"holder": {}}))
        .expect_err("not busy's details");
    assert!(e.to_string().contains("unknown field `holder`"), "{e}");
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "the details of a `not_found` error are not of its type")]
fn a_debug_build_panics_on_a_lower_layers_details_not_of_the_type() {
    let _ = ToolError::lower(ErrorCode::NotFound, "x", json!({"kind": "task"}));
}

#[test]
fn the_code_comes_from_the_details_type() {
    let e = ToolError::not_found("task", "t1");
    assert_eq!(
        e.to_json(),
        json!({"code": "not_found", "message": "task \"t1\" does not exist", "details": {"kind": "task", "id": "t1"}})
    );
    assert_eq!(
        e.details_as::<NotFoundDetails>(),
        Some(NotFoundDetails {
            kind: "task".into(),
            id: "t1".into()
        })
    );
    // Another code's type reads nothing.
    assert_eq!(e.details_as::<ConflictDetails>(), None);
    let e = ToolError::new("m", StaleClaimDetails::default());
    assert_eq!(e.code(), ErrorCode::StaleClaim);
    assert_eq!(e.details(), &json!({}));
}
