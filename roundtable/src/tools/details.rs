//! The `details` of every error code: one JSON Schema per [`ErrorCode`].
//!
//! Every refused call carries `{"code", "message", "details"}`. The
//! details are built where the refusal is made (a tool, the workspace, the
//! patch parser and applier, edit plans, symbols, policy, the transaction
//! engine, landing, the store); this module declares, per code, every key
//! any of those places puts in them, each with its type, in the JSON
//! Schema dialect of the tool schemas (2020-12). The set of keys is
//! closed (`additionalProperties: false`); a key listed under `required`
//! is in the details of every error of that code. Records the tools also
//! return (a [`ValidationReport`], a [`Claim`], an [`Actor`]…) are `$ref`s
//! to `$defs` entries of the same name and the same shape as in the tool
//! schemas.
//!
//! The schemas are the contract, and debug builds hold the code to it:
//! every error a tool call, [`Engine::open`](crate::Engine::open) or the
//! typed [`Session`](crate::Session) returns is checked against its
//! code's schema ([`ToolError::check_details`]) and a mismatch panics,
//! so the whole test suite is the conformance test. [`errors_json`] lists
//! every code with its C status, a one-sentence description and its
//! schema; `roundtable errors` prints it, and the Go and Python bindings
//! generate their typed details from it.

mod check;

use super::rebase::FileConflict;
use super::validate::ValidationReport;
use super::ToolError;
use crate::actor::{Actor, ActorKind};
use crate::edit::PlanStatus;
use crate::model::{
    Claim, ClaimStatus, Landing, MatchRung, PolicyStatus, ProposalStatus, TransactionStatus,
};
use crate::symbols::SymbolKind;
use crate::tools::args::PatchFormat;
use crate::ErrorCode;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Why an error's details do not conform to its code's schema (see
/// [`ToolError::check_details`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the details of a `{code}` error do not conform to its schema at {path}: {reason}")]
pub struct DetailsViolation {
    code: ErrorCode,
    path: String,
    reason: String,
}

impl DetailsViolation {
    /// The error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// Where in the details: `$` for the details object itself, then
    /// `.key` and `[index]` (`$.report.stages[0].status`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What the schema wants there and what is there instead.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// The JSON Schema (2020-12) of the `details` of an error with `code`: an
/// object with every key any refusal of that code puts in its details, the
/// keys every such refusal has under `required`, and its own `$defs`.
pub fn details_schema(code: ErrorCode) -> Value {
    table()[&code].schema.clone()
}

/// One sentence saying what an error with `code` means.
pub fn description(code: ErrorCode) -> &'static str {
    table()[&code].description
}

/// Every error code as JSON, sorted by code: `[{"code", "status",
/// "description", "details_schema"}]`, `status` being the code's C
/// `rt_status` number ([`ErrorCode::number`]). `roundtable errors` prints
/// it; `schema/errors.json` records it.
pub fn errors_json() -> Value {
    let mut codes: Vec<ErrorCode> = ErrorCode::ALL.to_vec();
    codes.sort_by_key(|c| c.as_str());
    Value::Array(
        codes
            .into_iter()
            .map(|code| {
                json!({
                    "code": code.as_str(),
                    "status": code.number(),
                    "description": description(code),
                    "details_schema": details_schema(code),
                })
            })
            .collect(),
    )
}

/// Whether `details` conform to the schema of `code` ([`details_schema`]).
pub fn check_details(code: ErrorCode, details: &Value) -> Result<(), DetailsViolation> {
    check::validate(&table()[&code].schema, details).map_err(|v| DetailsViolation {
        code,
        path: v.path,
        reason: v.reason,
    })
}

impl ToolError {
    /// Whether this error's details conform to its code's schema
    /// ([`details_schema`]). Debug builds check every error the engine
    /// and the session return, and panic on a mismatch.
    pub fn check_details(&self) -> Result<(), DetailsViolation> {
        check_details(self.code(), self.details())
    }

    /// The error itself; in a debug build, first a panic naming the
    /// code, the details and the place they leave the schema when they do
    /// not conform to it. Applied where an error leaves the engine.
    pub(crate) fn conformed(self) -> ToolError {
        #[cfg(debug_assertions)]
        if let Err(v) = self.check_details() {
            panic!("{v}\ndetails: {}", self.details());
        }
        self
    }
}

/// One code's description and schema.
struct Entry {
    description: &'static str,
    schema: Value,
}

/// Every code's entry, built once.
fn table() -> &'static BTreeMap<ErrorCode, Entry> {
    static TABLE: OnceLock<BTreeMap<ErrorCode, Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        ErrorCode::ALL
            .iter()
            .map(|&code| {
                let mut shape = Shape::new();
                let description = declare(code, &mut shape);
                let schema = shape.build(code, description);
                (
                    code,
                    Entry {
                        description,
                        schema,
                    },
                )
            })
            .collect()
    })
}

// ---------------------------------------------------------------------------
// Building a schema.

/// The keys of one code's details, and the `$defs` they refer to.
struct Shape {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<&'static str>,
}

impl Shape {
    fn new() -> Shape {
        Shape {
            generator: SchemaGenerator::default(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    /// A key some refusals of the code have.
    fn key(&mut self, name: &'static str, schema: Value) -> &mut Shape {
        assert!(
            self.properties.insert(name.to_owned(), schema).is_none(),
            "{name} declared twice"
        );
        self
    }

    /// A key every refusal of the code has.
    fn always(&mut self, name: &'static str, schema: Value) -> &mut Shape {
        self.required.push(name);
        self.key(name, schema)
    }

    /// A `$ref` to `T`'s schema (its `$defs` entry, as the tool schemas
    /// have it).
    fn typed<T: JsonSchema>(&mut self, description: &str) -> Value {
        let mut schema: Value = self.generator.subschema_for::<T>().into();
        schema["description"] = json!(description);
        schema
    }

    /// A `$ref` to a `$defs` entry the details declare themselves.
    fn own(&mut self, name: &str, schema: Value, description: &str) -> Value {
        self.generator
            .definitions_mut()
            .insert(name.to_owned(), schema);
        json!({"$ref": format!("#/$defs/{name}"), "description": description})
    }

    fn build(mut self, code: ErrorCode, description: &str) -> Value {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": format!("{}Details", camel(code.as_str())),
            "description": format!("The details of `{code}`: {description}"),
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": false,
        });
        let defs = self.generator.take_definitions(true);
        if !defs.is_empty() {
            schema["$defs"] = Value::Object(defs);
        }
        schema
    }
}

/// `not_found` → `NotFound`.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn text(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn text_or_null(description: &str) -> Value {
    json!({"type": ["string", "null"], "description": description})
}

fn texts(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn count(description: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": description})
}

fn count_or_null(description: &str) -> Value {
    json!({"type": ["integer", "null"], "minimum": 0, "description": description})
}

/// A flag present only when set: always `true`.
fn flag(description: &str) -> Value {
    json!({"type": "boolean", "const": true, "description": description})
}

/// Any JSON value (given verbatim by the caller).
fn anything(description: &str) -> Value {
    json!({"description": description})
}

fn one_of_strings(values: &[&str], description: &str) -> Value {
    json!({"type": "string", "enum": values, "description": description})
}

/// A string enum in the style of schemars' unit enums: `oneOf` of
/// documented constants.
fn string_enum(description: &str, values: &[(&str, &str)]) -> Value {
    json!({
        "description": description,
        "oneOf": values
            .iter()
            .map(|(value, what)| json!({"type": "string", "const": value, "description": what}))
            .collect::<Vec<_>>(),
    })
}

fn array_of(item: Value, description: &str) -> Value {
    let mut item = item;
    if let Some(m) = item.as_object_mut() {
        m.remove("description");
    }
    json!({"type": "array", "items": item, "description": description})
}

/// The constants of a schemars unit enum (`oneOf` of `const`s).
fn constants<T: JsonSchema>() -> Vec<String> {
    let schema: Value = schemars::schema_for!(T).into();
    schema["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["const"].as_str().map(str::to_owned))
        .collect()
}

// ---------------------------------------------------------------------------
// The keys several codes share.

const PATH: &str =
    "The repository path the refusal is about (lossily decoded when it is not UTF-8).";
const TRANSACTION_ID: &str =
    "The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).";
const FIELD: &str = "The argument (or edit-plan field) concerned, as a path (`affected_resources[2]`, `documentChanges[0].to`; `\"\"` for the whole); for the command line, the flag (`--as`).";
const LINE: &str = "The 1-based line of the text concerned.";
const PROPOSAL_ID: &str = "The proposal.";
const REVISION: &str = "The revision concerned.";
const LATEST_REVISION: &str = "The proposal's latest revision.";

/// The keys of a patch that does not parse (a unified diff's grammar).
fn parse_error_keys(s: &mut Shape) {
    s.key(
        "line",
        count(
            "The 1-based line where the text stopped making sense (0 for a section built in code).",
        ),
    )
    .key("expected", text("What the grammar expected there."))
    .key(
        "found",
        text("The offending line (lossily decoded, truncated)."),
    );
}

/// A workspace write that failed inside a transaction names it.
fn transaction_key(s: &mut Shape) {
    s.key("transaction_id", text(TRANSACTION_ID));
}

// ---------------------------------------------------------------------------
// The codes.

/// Declare `code`'s keys into `s`; its description.
fn declare(code: ErrorCode, s: &mut Shape) -> &'static str {
    match code {
        ErrorCode::InvalidPatch => invalid_patch(s),
        ErrorCode::PatchDoesNotApply => patch_does_not_apply(s),
        ErrorCode::UnsupportedPatch => {
            parse_error_keys(s);
            s.key("path", text(PATH));
            transaction_key(s);
            "The patch uses a feature roundtable deliberately does not apply (submodules and gitlinks, combined diffs of merges)."
        }
        ErrorCode::PathEscape => {
            s.key("path", text(PATH))
                .key("reason", text("Why the path is refused."))
                .key("symlink", text("For a path through a symbolic link: the component that is a link."))
                .key("target", text("For a symbolic link whose target leaves the root: the target."))
                .key("field", text(FIELD))
                .key("line", count(LINE));
            transaction_key(s);
            "A path would leave the repository root, names `.git` or `.roundtable`, or passes through a symbolic link (or a link's target would leave the root)."
        }
        ErrorCode::InvalidPath => {
            s.key("path", text(PATH))
                .key("reason", text("Why the path is refused."))
                .key("field", text(FIELD))
                .key("line", count(LINE));
            transaction_key(s);
            "A path is not a valid repository path (empty, not UTF-8, a NUL byte, too long)."
        }
        ErrorCode::IrreversiblePatch => {
            "A patch cannot be reversed (a copy has no inverse in the diff grammar); no tool reports it with details today."
        }
        ErrorCode::InvalidArgument => invalid_argument(s),
        ErrorCode::Io => {
            s.key("path", text(PATH))
                .key("lock", text("For the apply lock: its file (in `.roundtable/`)."))
                .key("field", text(FIELD))
                .key("ref", text("The git reference concerned (`refs/heads/main`)."))
                .key("step", text("For the command line's demo: the step whose check failed."));
            transaction_key(s);
            "The operating system (or libgit2) refused a read or write."
        }
        ErrorCode::PreconditionFailed => precondition_failed(s),
        ErrorCode::InvalidEditPlan => {
            s.key("field", text(FIELD)).key("path", text(PATH));
            "An edit plan is malformed: a bad JSON shape, overlapping edits, a range off the end of a line or inside a character, a blob that does not match its digest."
        }
        ErrorCode::IncompleteEditPlan => incomplete_edit_plan(s),
        ErrorCode::NotFound => {
            s.always(
                "kind",
                text("What kind of record was looked for (`proposal`, `revision`, `task`, `agent`, `claim`, `policy`, `transaction`, `test result`, `approval request`, `tool`)."),
            )
            .always("id", text("The id looked for (a revision is `PROPOSAL@NUMBER`)."));
            "The named proposal, revision, task, agent, tool or other record does not exist."
        }
        ErrorCode::Forbidden => forbidden(s),
        ErrorCode::Conflict => conflict(s),
        ErrorCode::IllegalTransition => illegal_transition(s),
        ErrorCode::IdempotencyConflict => {
            s.always("idempotency_key", text("The key."))
                .always("tool", text("The tool the key was first used with."));
            "An idempotency key was used before with other arguments (or another tool)."
        }
        ErrorCode::Database => database(s),
        ErrorCode::IncompatibleStore => {
            "The store was written by a newer roundtable (or is not a roundtable store), so it is not opened."
        }
        ErrorCode::UnknownSymbol => {
            s.always("path", text(PATH))
                .key("name", text("The name asked for."))
                .key("similar", texts("Names in the file that resemble it."))
                .key("symbol", text("The name asked for, in a file that does not exist."));
            "A `symbol:` resource names no symbol in the file's current content."
        }
        ErrorCode::AmbiguousSymbol => ambiguous_symbol(s),
        ErrorCode::UnsupportedLanguage => {
            s.always("path", text(PATH));
            "Symbols are asked for in a file whose language roundtable cannot index."
        }
        ErrorCode::InvalidPolicy => {
            s.always("line", count_or_null("The 1-based line, when known."))
                .always("column", count_or_null("The 1-based column (in characters), when known."))
                .always("key", text_or_null("The dotted key path (`approvals.carry_over`, `roles[0].role`), when known."))
                .key("name", text("For an unknown key: its own name."))
                .key("glob", text("For a glob that does not compile: the glob."));
            "A policy document is malformed: bad TOML, an unknown key, a bad glob, a value the format does not allow."
        }
        ErrorCode::StaleClaim => stale_claim(s),
        ErrorCode::ValidationFailed => {
            let report = s.typed::<ValidationReport>("The whole validation report.");
            s.always("report", report)
                .key("stage", one_of_strings(&["rebase"], "For `patch.apply` with `rebase`: `rebase` when rebasing the revision changed what surrounds its change (its context lines or enclosing symbol), so that none of its evidence carries."))
                .key("reason", one_of_strings(&["not_trivial"], "With `stage`: `not_trivial`."));
            "A gate of the validation report fails (the details carry the whole report)."
        }
        ErrorCode::Busy => {
            s.key("lock", text("For the apply lock: its file (in `.roundtable/`)."))
                .key("waited_ms", count("How long the call waited for the apply lock, in milliseconds."))
                .key("transaction_id", text("The transaction applying the path."))
                .key("proposal_id", text("The proposal it applies."))
                .key("path", text("The path it is applying."))
                .key("max_waits", count("Over MCP: the most waiting calls (`events.wait`, `claim.acquire`) one client may have pending at once, which this call would have passed."));
            "Another applier holds the workspace (or the path) past the wait, or (over MCP, with `max_waits`) the client already has the most waits pending: the call changed nothing and may be retried soon."
        }
        ErrorCode::SpecialFile => special_file(s),
        ErrorCode::Cancelled => {
            s.key("lock", text("When the call was waiting for the apply lock: its file."));
            "The caller cancelled the call while it waited, before its commit point: it changed nothing."
        }
        ErrorCode::DeadlineExceeded => {
            s.key("lock", text("When the call was waiting for the apply lock: its file."));
            "The call's deadline passed while it waited, before its commit point: it changed nothing."
        }
        ErrorCode::InheritedEngine => {
            s.always("opened_by_pid", count("The process that opened the engine."))
                .always("pid", count("This process: a `fork()` child of it."));
            "The engine was opened by another process and this one inherited it across `fork()`: the call did nothing; open a new engine in this process."
        }
    }
}

/// [`ErrorCode::InvalidPatch`]'s keys; its description.
fn invalid_patch(s: &mut Shape) -> &'static str {
    parse_error_keys(s);
    let format = s.typed::<PatchFormat>(
        "When a unified diff does not parse but reads like an agent-native format: the `patch_format` to give instead (`codex` or `search_replace`).",
    );
    s.key(
        "byte",
        count("For text that is not UTF-8: the offset of its first invalid byte."),
    )
    .key("path", text(PATH))
    .key(
        "hunk",
        count("The 1-based number of the agent-native hunk concerned."),
    )
    .key(
        "found_line",
        count("For an agent-native hunk that adds or removes no line: the line after its last."),
    )
    .key(
        "previous_line",
        count("For a file an agent-native change touches twice: the line of the earlier section."),
    )
    .key(
        "file",
        text("For a path the change needs as a directory: the file the change makes there."),
    )
    .key("suggested_patch_format", format);
    "The patch text is malformed: it follows neither the unified/git diff grammar nor the agent-native format it was given as."
}

/// [`ErrorCode::PatchDoesNotApply`]'s keys; its description.
fn patch_does_not_apply(s: &mut Shape) -> &'static str {
    let candidate = json!({
        "type": "object",
        "description": "A place in the file near a refused agent-native hunk.",
        "properties": {
            "line": count("Its 1-based line in the file (for a near miss, the first line that differs)."),
            "text": text_or_null("That line's text (`null` past the end of the file)."),
            "expected": text("For a near miss: the hunk's line that differs there."),
            "matched_from": count("For a near miss: the 1-based line the matching lines start at."),
            "matched_lines": count("For a near miss: how many of the hunk's lines match from there."),
        },
        "required": ["line", "text"],
        "additionalProperties": false,
    });
    let candidates = s.own("MatchCandidate", candidate, "");
    let rung = s.typed::<MatchRung>(
        "For an ambiguous agent-native hunk: the rung of the matching ladder at which it matched more than one place.",
    );
    s.always("path", text(PATH))
        .key(
            "hunk",
            count("The 1-based number of the hunk in its file's section (or in the agent-native document)."),
        )
        .key(
            "reason",
            text("What did not match: the applier's words for a unified diff's hunk; `not_found`, `ambiguous`, `indentation` (matched at the whitespace rung with an uneven indentation offset) or `work_limit` (placing the change's hunks exceeds the work bound) for an agent-native hunk."),
        )
        .key("line", count("For an agent-native hunk: its 1-based line in the document."))
        .key(
            "anchor",
            text("For an agent-native hunk whose `@@` anchor matches no line: the anchor."),
        )
        .key("at_end", flag("For an agent-native hunk marked `*** End of File` that matches nowhere."))
        .key("rung", rung)
        .key("count", count("For an ambiguous agent-native hunk: how many places it matches."))
        .key(
            "eol_rule",
            text("When git converts the path's line ends: the rule (`core.autocrlf=true`, or the path's `.gitattributes` `text`/`eol` attributes); the diff must have the line ends the working tree has."),
        )
        .key(
            "eol_conversion",
            text("With `eol_rule`: what git does to the path's line ends (CRLF on checkout and LF in the repository, or LF on `git add`)."),
        )
        .key(
            "other_hunk",
            count("For overlapping agent-native hunks: the number of the hunk it overlaps."),
        )
        .key(
            "candidates",
            array_of(
                candidates,
                "For an agent-native hunk: the places it matches (ambiguous, up to 10), its nearest misses (not found, up to 3) or the line whose indentation differs (indentation).",
            ),
        );
    transaction_key(s);
    "The patch is well formed but does not apply to the current contents: a hunk's context is not found, a file to create exists, a file to modify is missing."
}

/// [`ErrorCode::InvalidArgument`]'s keys; its description.
fn invalid_argument(s: &mut Shape) -> &'static str {
    s.key("field", text(FIELD))
        .key("reason", text("Why the value is refused."))
        .key("len", count("For an oversized source or symbol name: its length in bytes."))
        .key("max", count("For an oversized source or symbol name: the most allowed."))
        .key("max_nesting", count("For declarations nested too deep to index: the deepest allowed."))
        .key("path", text("For a `strip` refused: the path the diff's name makes at the strip level given."))
        .key(
            "suggested_strip",
            count("For a `strip` refused: the strip level at which the diff's names make sense (0 for `git diff --no-prefix`)."),
        );
    parse_error_keys(s);
    transaction_key(s);
    "A call's arguments are invalid: a field is missing, of the wrong type or out of range."
}

/// [`ErrorCode::PreconditionFailed`]'s keys; its description.
fn precondition_failed(s: &mut Shape) -> &'static str {
    let failure = json!({
        "type": "object",
        "description": "One precondition of an edit plan that does not hold.",
        "properties": {
            "field": text("The plan's field (`documentChanges[0].precondition`, or `documentChanges[0].to` for a rename onto an existing file)."),
            "path": text(PATH),
            "expected": text("The digest expected (`blob:sha256:…`), or `absent`."),
            "actual": text("The digest found, or `absent`."),
        },
        "required": ["field", "path", "expected", "actual"],
        "additionalProperties": false,
    });
    let failures = s.own("PreconditionFailure", failure, "");
    let cause = json!({
        "type": "object",
        "description": "The error that made the precondition fail, as a call would return it.",
        "properties": {
            "code": one_of_strings(
                &ErrorCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                "Its stable code.",
            ),
            "message": text("Its message."),
            "details": json!({"type": "object", "description": "Its details (as that code's schema has them)."}),
        },
        "required": ["code", "message", "details"],
        "additionalProperties": false,
    });
    let cause = s.own(
        "ErrorCause",
        cause,
        "For a revert whose inverse does not apply: why not.",
    );
    let landing = s.typed::<Landing>(
        "For a bare repository, or `landing.log` in files mode: the workspace's landing setting.",
    );
    let report = s.typed::<ValidationReport>(
        "For a revision that no longer matches the workspace: the whole validation report.",
    );
    s.key("path", text(PATH))
        .key(
            "expected",
            text("What the change expects: a digest (`blob:sha256:…`, with ` (executable)` or ` (symbolic link)` when so), `absent` or `present`; for a branch, the commit id."),
        )
        .key(
            "actual",
            text_or_null("What is there now, spelled as `expected`; `null` for a branch that does not exist."),
        )
        .key(
            "failures",
            array_of(failures, "For an edit plan: every precondition that does not hold, in plan order (`path`, `expected` and `actual` are the first's)."),
        )
        .key("line", count("For an agent-native change: the 1-based line of its section."))
        .key("hunk", count("For an agent-native change: the number of the hunk concerned."))
        .key("root", text("For a bare repository: its directory."))
        .key("bare", flag("For a bare repository, which has no working tree to write files to."))
        .key("landing", landing)
        .key("proposal_id", text(PROPOSAL_ID))
        .key("revision", count(REVISION))
        .key(
            "reason",
            one_of_strings(&["remote_rejected", "moved"], "For a git landing whose push the remote's receive path refused (a `pre-receive` or `update` hook, `receive.fsckObjects`, `receive.denyNonFastForwards`, …) while its branch was still where expected: `remote_rejected`; for a revert: `moved` when the lines around the reverted change changed, so that its inverse would not apply where the change was."),
        )
        .key("remote_status", text("For `remote_rejected`: the remote's reason as git reports it (`pre-receive hook declined`, `hook declined`, `unpacker error`, …)."))
        .key("remote_messages", texts("For `remote_rejected`: what the remote said while refusing (its hooks' output), at most 20 lines."))
        .key("ref", text("For a git landing: the branch (`refs/heads/main`)."))
        .key("head", text_or_null("For a git landing: the branch the repository's `HEAD` is on (`null`: a detached `HEAD`)."))
        .key("remote", text_or_null("For a git landing: the remote (`null`: this repository's own branch)."))
        .key("cause", cause)
        .key("paths", texts("For a revert that cannot be inverted as a diff: the paths that changed since the apply."))
        .key("report", report);
    transaction_key(s);
    "A change's precondition does not hold: a file's current digest is not the expected one, a file expected to be absent exists, a branch moved."
}

/// [`ErrorCode::IncompleteEditPlan`]'s keys; its description.
fn incomplete_edit_plan(s: &mut Shape) -> &'static str {
    let statuses: Vec<&str> = PlanStatus::ALL
        .iter()
        .filter(|&&p| p != PlanStatus::Complete)
        .map(|p| p.as_str())
        .collect();
    s.always(
        "field",
        text("The plan's `status` field (`proposal.status`)."),
    )
    .always("status", one_of_strings(&statuses, "The plan's status."))
    .key(
        "reason",
        anything("The plan's `reason` (or `incompleteReason`), verbatim."),
    )
    .key(
        "diagnostics",
        anything("The plan's `diagnostics`, verbatim."),
    );
    "An edit plan's status is not `complete` (`incomplete`, `unsupported`, `cancelled`, `errored`): it must not be applied."
}

/// [`ErrorCode::Forbidden`]'s keys; its description.
fn forbidden(s: &mut Shape) -> &'static str {
    let actor = s.typed::<Actor>("The caller.");
    let kinds = s.typed::<ActorKind>("");
    let reason = s.own(
        "ForbiddenReason",
        string_enum(
            "Why an actor may not do something.",
            &[
                (
                    "wrong_kind",
                    "The tool is not for the caller's kind of actor (`allowed_kinds`).",
                ),
                ("unregistered", "The agent is not registered."),
                ("disabled", "The agent is disabled."),
                (
                    "not_author",
                    "Only the proposal's author (`author`) may do this.",
                ),
                (
                    "author",
                    "The proposal's author may not do this to their own proposal (vote, review).",
                ),
                (
                    "not_holder",
                    "Only the claim's holder (`holder`) may do this.",
                ),
                (
                    "missing_role",
                    "The agent lacks the role this needs (`required_role`).",
                ),
            ],
        ),
        "Why.",
    );
    s.always("actor", actor)
        .key("reason", reason)
        .key(
            "allowed_kinds",
            array_of(kinds, "The kinds of actor the tool is for."),
        )
        .key("author", text("The proposal's author."))
        .key("holder", text("The agent holding the claim."))
        .key("required_role", text("The role needed (`security`)."));
    "The actor may not do this: the wrong kind of actor, not the author, the author voting on their own proposal, an unregistered or disabled agent."
}

/// [`ErrorCode::Conflict`]'s keys; its description.
fn conflict(s: &mut Shape) -> &'static str {
    let report = s.typed::<ValidationReport>(
        "For an apply of a superseded revision: the whole validation report.",
    );
    let holder = s.typed::<Claim>("The other agent's write claim that is in the way.");
    let files = s.typed::<FileConflict>("");
    let moved = json!({
        "type": "object",
        "description": "A path a transaction wrote that changed since.",
        "properties": {
            "path": text(PATH),
            "expected": text("What the transaction left there (`absent`, or a digest)."),
            "actual": text("What is there now, spelled the same way."),
        },
        "required": ["path", "expected", "actual"],
        "additionalProperties": false,
    });
    let moved = s.own("MovedPath", moved, "");
    let reason = s.own(
        "ConflictReason",
        string_enum(
            "Why a rebase was refused.",
            &[
                (
                    "up_to_date",
                    "The revision is not stale: the files it touches are as it was made on.",
                ),
                ("already_applied", "Its change is already in the files."),
                (
                    "merge_conflict",
                    "It does not merge onto the current files (`files`).",
                ),
                (
                    "base_unavailable",
                    "The revision does not keep the content it was made on (`path`).",
                ),
            ],
        ),
        "For a rebase: why it was refused.",
    );
    s.key("proposal_id", text(PROPOSAL_ID))
        .key("revision", count(REVISION))
        .key("latest_revision", count(LATEST_REVISION))
        .key(
            "expected_revision",
            count("The revision the call expected to be the latest."),
        )
        .key("report", report)
        .key("holder", holder)
        .key(
            "resource_id",
            text("The resource claimed (`file:src/a.rs`)."),
        )
        .key(
            "waiters_ahead",
            count("How many earlier waiters of other agents wait for the resource."),
        )
        .key("reason", reason)
        .key("path", text(PATH))
        .key(
            "files",
            array_of(
                files,
                "For a merge conflict: every file that does not merge.",
            ),
        )
        .key("request_id", text("The approval request."))
        .key(
            "kind",
            text("For a record whose id is taken: its kind (`task`, `transaction`)."),
        )
        .key("id", text("For a record whose id is taken: the id."))
        .key("transaction_id", text("The transaction concerned."))
        .key(
            "paths",
            array_of(
                moved,
                "For a rollback: the paths the transaction wrote that changed since.",
            ),
        );
    "The call lost a race or repeats a record: the expected revision is not the latest, the id is taken, a revision was superseded, another agent's claim is in the way."
}

/// [`ErrorCode::IllegalTransition`]'s keys; its description.
fn illegal_transition(s: &mut Shape) -> &'static str {
    let mut statuses = constants::<ProposalStatus>();
    statuses.extend(constants::<ClaimStatus>());
    statuses.extend(constants::<TransactionStatus>());
    statuses.extend(constants::<PolicyStatus>());
    statuses.sort();
    statuses.dedup();
    let statuses: Vec<&str> = statuses.iter().map(String::as_str).collect();
    let landing = s.typed::<Landing>(
        "For a rollback of a transaction that landed in another landing mode: the workspace's landing setting now.",
    );
    s.key("proposal_id", text(PROPOSAL_ID))
        .key("claim_id", text("The claim."))
        .key("version", count("The policy version."))
        .key("transaction_id", text("The transaction."))
        .key("status", one_of_strings(&statuses, "The record's status (a proposal's, claim's, transaction's or policy version's)."))
        .key(
            "allowed",
            json!({"type": "array", "items": {"type": "string", "enum": statuses}, "description": "The statuses that would allow the operation."}),
        )
        .key("operation", text("The tool (or operation) refused."))
        .key("landing", landing);
    "The record's current status does not allow this operation (the details name the status and the statuses that would)."
}

/// [`ErrorCode::Database`]'s keys; its description.
fn database(s: &mut Shape) -> &'static str {
    s.key("retryable", flag("The same call may succeed if made again: the server was down or restarting, the connection broke, or another write held the store past the busy timeout. Nothing was written."))
        .key("landed", flag("The change landed (past the commit point: the branch, or the remote's, moved) but recording its outcome failed: never retryable; the transaction (`transaction_id`) stays `applying` until the next apply or open records it, and a call made again with the same idempotency key returns the landing's result."))
        .key("claim_id", text("A stored claim that does not read back."))
        .key("path", text("A stored path that does not read back."))
        .key("digest", text("A stored blob that is missing or does not match its digest."))
        .key("transaction_id", text("A transaction whose journal does not read back."))
        .key("line", count_or_null("For a stored policy that no longer parses: the 1-based line, when known."))
        .key("column", count_or_null("For a stored policy that no longer parses: the 1-based column, when known."))
        .key("key", text_or_null("For a stored policy that no longer parses: the dotted key, when known."))
        .key("name", text("For a stored policy that no longer parses: an unknown key's name."))
        .key("glob", text("For a stored policy that no longer parses: the glob that does not compile."));
    "The store's database failed (locked past the busy timeout, corrupt, disk full, the server unreachable) or holds what this code did not write; the call changed nothing (`retryable` says when the same call may succeed later)."
}

/// [`ErrorCode::AmbiguousSymbol`]'s keys; its description.
fn ambiguous_symbol(s: &mut Shape) -> &'static str {
    let kind = s.typed::<SymbolKind>("What kind of item it is.");
    let symbol = json!({
        "type": "object",
        "description": "One indexed symbol.",
        "properties": {
            "name": text("The qualified name, `.`-separated."),
            "kind": kind,
            "start_line": count("First line of the span, 1-based."),
            "end_line": count("Last line of the span, 1-based and inclusive."),
            "start_byte": count("First byte of the span."),
            "end_byte": count("One past the last byte of the span."),
            "definition": json!({"type": "boolean", "description": "`true` for a definition, `false` for a bare declaration."}),
        },
        "required": ["name", "kind", "start_line", "end_line", "start_byte", "end_byte", "definition"],
        "additionalProperties": false,
    });
    let symbol = s.own("Symbol", symbol, "");
    s.always("path", text(PATH))
        .always("name", text("The name asked for."))
        .always(
            "candidates",
            array_of(symbol, "Every symbol of that name, with its span."),
        );
    "A `symbol:` resource names more than one symbol (the details list the candidates and their spans)."
}

/// [`ErrorCode::StaleClaim`]'s keys; its description.
fn stale_claim(s: &mut Shape) -> &'static str {
    let reason = s.own(
        "StaleClaimReason",
        string_enum(
            "Why an apply's fencing check refused the author's claim.",
            &[
                ("lapsed", "It was released or lapsed after validation read it."),
                ("superseded", "Another agent was granted an overlapping write claim with a newer token since (`newer_claim_id`, `newer_token`)."),
            ],
        ),
        "Why the claim no longer fences the apply.",
    );
    s.key("proposal_id", text(PROPOSAL_ID))
        .key("revision", count(REVISION))
        .key("claim_id", text("The author's claim validation relied on."))
        .key("resource_id", text("Its resource (`symbol:src/a.rs#f`)."))
        .key("token", count("Its fencing token."))
        .key("reason", reason)
        .key(
            "newer_claim_id",
            text("The claim granted since, with the newer token."),
        )
        .key("newer_token", count("Its fencing token."));
    "A claim's resource changed since the claim was acquired, or its fencing token was superseded: inside validation reports, and as `patch.apply`'s refusal when the author's claim lapsed, or another agent was granted its resource, between validation and the journal (nothing was applied)."
}

/// [`ErrorCode::SpecialFile`]'s keys; its description.
fn special_file(s: &mut Shape) -> &'static str {
    let kind = s.own(
        "SpecialKind",
        string_enum(
            "A kind of file roundtable never opens.",
            &[
                ("fifo", "A named pipe."),
                ("socket", "A Unix domain socket."),
                ("char_device", "A character device."),
                ("block_device", "A block device."),
                (
                    "submodule",
                    "A submodule (a gitlink in a bare repository's tree).",
                ),
            ],
        ),
        "What the path is.",
    );
    s.always("path", text(PATH)).key("type", kind);
    transaction_key(s);
    "A path names something that is not a regular file, a directory or a symbolic link (a FIFO, a socket, a device), which roundtable never opens."
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::TransactionError;
    use crate::diff::{ApplyError, ParseOptions, TreeError, TreeFile};
    use crate::edit::agent::{changeset as agent_changeset, AgentFormat};
    use crate::landing::LandingError;
    use crate::symbols::{Symbol, SymbolError};
    use crate::workspace::{SpecialKind, WorkspaceError};
    use crate::{Digest, RepoPath};
    use std::collections::BTreeMap;
    use std::io;

    /// The error's details conform to its code's schema.
    #[track_caller]
    fn conforms(e: impl Into<ToolError>) -> ToolError {
        let e = e.into();
        if let Err(v) = e.check_details() {
            panic!("{v}\ndetails: {}", e.details());
        }
        e
    }

    /// The details do not conform: the violation.
    #[track_caller]
    fn refused(code: ErrorCode, details: Value) -> DetailsViolation {
        check_details(code, &details).expect_err(&format!("{code} {details} should not conform"))
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
            let props = schema["properties"].as_object().expect("properties");
            for key in schema["required"].as_array().expect("required") {
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
            // Only what the validator checks, and every $ref resolves.
            assert_eq!(check::unsupported(schema), Vec::<String>::new(), "{code}");
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
        let schema = details_schema(ErrorCode::IncompleteEditPlan);
        let statuses = schema["properties"]["status"]["enum"]
            .as_array()
            .expect("enum");
        assert_eq!(statuses.len(), PlanStatus::ALL.len() - 1);
        assert!(!statuses.contains(&json!("complete")));
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
            crate::ErrorCode::Busy,
            "too many waits",
            json!({"max_waits": 600}),
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
        vec![
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
            WorkspaceError::Git {
                what: "read HEAD",
                source: git2::Error::from_str("no"),
            },
        ]
    }

    fn landing_errors() -> Vec<LandingError> {
        vec![
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
            LandingError::Git {
                what: "write a tree",
                source: git2::Error::from_str("no"),
            },
        ]
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
            conforms(ToolError::new(e.code(), e.to_string(), e.details()));
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
            let details = e.details();
            conforms(e);
            // A stored policy that no longer parses is `database`, with
            // the same details.
            conforms(ToolError::new(ErrorCode::Database, "m", details));
        }
    }

    #[test]
    fn patch_parse_errors_conform() {
        let e = conforms(
            crate::diff::parse(b"diff --git a/x\n@@ nonsense\n", &Default::default())
                .expect_err("bad"),
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
            r#"{"proposal": {"status": "incomplete", "reason": {"why": [1]}, "diagnostics": ["d"]}}"#.to_owned(),
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
    fn details_off_their_schema_are_refused_with_the_place() {
        let v = refused(ErrorCode::NotFound, json!({"kind": "task"}));
        assert_eq!((v.code(), v.path()), (ErrorCode::NotFound, "$"));
        assert!(v.reason().contains("`id` is missing"), "{v}");
        let v = refused(
            ErrorCode::NotFound,
            json!({"kind": "task", "id": "t", "name": "x"}),
        );
        assert!(v.reason().contains("`name` is not allowed"), "{v}");
        let v = refused(ErrorCode::NotFound, json!({"kind": "task", "id": 7}));
        assert_eq!(v.path(), "$.id");
        let actor = json!({"kind": "agent", "id": "ada"});
        check_details(
            ErrorCode::Forbidden,
            &json!({"actor": actor, "reason": "disabled"}),
        )
        .expect("conforms");
        let v = refused(
            ErrorCode::Forbidden,
            json!({"actor": actor, "reason": "sleepy"}),
        );
        assert_eq!(v.path(), "$.reason");
        let v = refused(
            ErrorCode::Forbidden,
            json!({"actor": {"kind": "robot", "id": "r"}}),
        );
        assert_eq!(v.path(), "$.actor.kind");
        let v = refused(ErrorCode::Conflict, json!({"holder": "ada"}));
        assert_eq!(v.path(), "$.holder");
        let v = refused(
            ErrorCode::ValidationFailed,
            json!({"report": {"valid": false}}),
        );
        assert_eq!(v.path(), "$.report");
        let v = refused(ErrorCode::IncompatibleStore, json!({"path": "x"}));
        assert!(v.reason().contains("(the schema's keys: none)"), "{v}");
        let v = refused(
            ErrorCode::PatchDoesNotApply,
            json!({"path": "a", "candidates": [{"line": 1}]}),
        );
        assert_eq!(v.path(), "$.candidates[0]");
        let v = refused(ErrorCode::Io, json!([]));
        assert!(v.reason().contains("expected object"), "{v}");
        assert!(
            v.to_string()
                .starts_with("the details of a `io` error do not conform"),
            "{v}"
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(
        expected = "the details of a `not_found` error do not conform to its schema at $: the required key `id` is missing"
    )]
    fn a_debug_build_panics_on_details_off_their_schema() {
        let _ = ToolError::new(ErrorCode::NotFound, "x", json!({"kind": "task"})).conformed();
    }

    #[test]
    fn conforming_errors_pass_through_unchanged() {
        let e = ToolError::not_found("task", "t1").conformed();
        assert_eq!(
            e.to_json(),
            json!({"code": "not_found", "message": "task \"t1\" does not exist", "details": {"kind": "task", "id": "t1"}})
        );
    }
}
