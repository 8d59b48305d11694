//! Opcore edit plans: parse a provider's `EditPlan`/`WorkspaceEdit` JSON
//! strictly, then turn it into a [`Changeset`] against the current files.
//!
//! An edit plan is the second proposal format besides unified diffs. It
//! lists per-file changes (`documentChanges`), each with a `kind`
//! (`modify`, `create`, `delete`, `rename` + `to`), a precondition on the
//! file's current state (`{"expectedDigest": "blob:sha256:…"}` or
//! `{"expectedAbsence": true}`) and either text `edits` or a whole-blob
//! `after` digest whose bytes travel base64-encoded in a top-level `blobs`
//! map.
//!
//! [`parse_plan`] checks everything that can be checked without the files
//! (shape, enums, paths, preconditions, blobs, ranges whose end precedes
//! their start, duplicate paths); [`plan_changeset`] reads only the touched
//! files, checks every precondition, resolves every position against the
//! real text and builds the changeset. Both refuse with an [`EditError`]
//! carrying a stable [`ErrorCode`], a message that names the JSON field,
//! and structured [`details`](EditError::details).
//!
//! # Accepted shapes
//!
//! Two top-level shapes are accepted, nothing else:
//!
//! - a bare plan: `{"status"?, "reason"?, "baseline"?, "documentChanges",
//!   "blobs"?}`. `status` defaults to `complete` (a bare WorkspaceEdit has
//!   none);
//! - the `edit/propose` result: `{"proposal": {...}, "blobs"?}` where the
//!   proposal may hold `proposalId`, `provider`, `status` (required),
//!   `baseline`, `validAsOf`, `touchedResources`, `workspaceEdit`
//!   (`{"baseline"?, "documentChanges"}`), `reason`, `diagnostics` and the
//!   legacy `complete`/`incompleteReason` projections. `provider`,
//!   `validAsOf`, `baseline` and `diagnostics` are carried, not interpreted;
//!   but a `workspaceEdit.baseline` that differs from `proposal.baseline`,
//!   a legacy `complete` that contradicts `status`, and `touchedResources`
//!   that do not list exactly the plan's changes (same path, kind, `to` and
//!   precondition) are refused: labels are checked, not trusted.
//!
//! Unknown keys are refused at every level, as are duplicate keys anywhere
//! in the document (parsers disagree on which one wins). `blobs` lives at
//! the top level only; every blob must be referenced by some `after`.
//!
//! A `status` other than `complete` (`incomplete`, `unsupported`,
//! `cancelled`, `errored`) is refused with
//! [`ErrorCode::IncompleteEditPlan`] before the changes are examined (an
//! incomplete proposal need not carry any); the error carries the status,
//! the `reason` (or legacy `incompleteReason`) and `diagnostics` verbatim.
//!
//! # File changes
//!
//! | kind     | precondition           | content                                  |
//! |----------|------------------------|------------------------------------------|
//! | `modify` | `expectedDigest`       | `edits` or `after` (one of them)         |
//! | `create` | `expectedAbsence: true`| `edits` (on empty text) or `after`       |
//! | `delete` | `expectedDigest`       | none                                     |
//! | `rename` | `expectedDigest`, `to` | optional `edits` or `after` on the moved content |
//!
//! A path is touched at most once per plan, a rename's `to` included; `to`
//! must be absent now (a [`PreconditionFailed`](ErrorCode::PreconditionFailed)
//! otherwise). A path may not end up both a file and the parent directory of
//! another file of the plan. The executable bit is kept from the source for
//! `modify` and `rename`, and is off for `create`.
//!
//! # Text edits and coordinates
//!
//! An edit is `{"range": {"start": {"line", "char"}, "end": {...}},
//! "coordinateSystem", "newText", "rangeBasis"?}`, LSP style. There is no
//! plan-level default: every edit names its `coordinateSystem`:
//!
//! - `utf8`: `char` counts bytes. The text need not be UTF-8, but a
//!   position may not fall inside a well-formed UTF-8 multi-byte sequence
//!   (bytes that belong to no well-formed sequence count one each);
//! - `utf16`: `char` counts UTF-16 code units (a character outside the BMP
//!   counts two, and a position between them splits a surrogate pair);
//! - `codepoint`: `char` counts Unicode scalar values.
//!
//! For `utf16` and `codepoint` the addressed line must be valid UTF-8.
//!
//! Lines are split as LSP splits them: `\r\n`, `\n` and a lone `\r` each end
//! a line. `line` is 0-based; a text with *n* line terminators has *n* + 1
//! lines (the last one possibly empty). `char` may range from 0 to the
//! length of the line's content, which excludes its terminator: the end of
//! a line is `char` = its length, so a position can never fall between the
//! `\r` and `\n` of a CRLF; a range that removes a line break ends at
//! `{"line": l + 1, "char": 0}`. Unlike LSP, nothing is clamped: a line past
//! the end or a `char` past the end of its line is refused.
//!
//! All ranges of one file refer to the original text (as in LSP). Edits may
//! touch at a point but not overlap. Edits are applied in order of start
//! position; at an equal start an insertion (empty range) comes before a
//! replacement, and insertions at the same position keep their order in the
//! array (LSP's rule). `rangeBasis`, when given, must be the digest of the
//! text the ranges apply to (the precondition's `expectedDigest`, or the
//! empty blob for a create).
//!
//! # Preconditions
//!
//! [`plan_changeset`] checks every precondition before computing anything
//! and reports **all** failures in one error: the first is in the
//! `path`/`expected`/`actual` details, the full list in `failures` (and in
//! [`EditError::failures`]); `"absent"` spells a missing file.

pub mod agent;
mod parse;
/// The keys the edit-plan reader accepts at each level (the tool schema is
/// checked against them).
pub use parse::{
    BARE_KEYS, CHANGE_KEYS, EDIT_KEYS, POSITION_KEYS, PRECONDITION_KEYS, PROPOSAL_KEYS, RANGE_KEYS,
    TOUCHED_KEYS, WORKSPACE_EDIT_KEYS, WRAPPER_KEYS,
};
#[cfg(test)]
mod tests;
mod text;

use crate::diff::{Tree, TreeFile};
use crate::{Changeset, Digest, ErrorCode, FileChange, FileContent, FileMeta, Operation, RepoPath};
use serde_json::{json, Map, Value};
use std::fmt;

/// A parsed, self-consistent edit plan: what [`parse_plan`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct EditPlan {
    proposal_id: Option<String>,
    baseline: Option<Value>,
    changes: Vec<DocumentChange>,
}

impl EditPlan {
    /// The proposal's `proposalId`, when the plan came wrapped in one.
    pub fn proposal_id(&self) -> Option<&str> {
        self.proposal_id.as_deref()
    }

    /// The baseline the plan was computed against (opaque to roundtable:
    /// the preconditions are what is checked).
    pub fn baseline(&self) -> Option<&Value> {
        self.baseline.as_ref()
    }

    /// The file changes, in plan order.
    pub fn changes(&self) -> &[DocumentChange] {
        &self.changes
    }
}

/// One entry of `documentChanges`.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentChange {
    field: String,
    path: RepoPath,
    kind: ChangeKind,
    precondition: Precondition,
    content: ContentChange,
}

impl DocumentChange {
    /// Where the entry is in the JSON (e.g. `documentChanges[2]`).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The path it changes (for a rename, the source).
    pub fn path(&self) -> &RepoPath {
        &self.path
    }

    /// What happens to the path.
    pub fn kind(&self) -> &ChangeKind {
        &self.kind
    }

    /// What must hold of the path now.
    pub fn precondition(&self) -> &Precondition {
        &self.precondition
    }

    /// How the content changes.
    pub fn content(&self) -> &ContentChange {
        &self.content
    }
}

/// A file change's `kind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// `modify`: the content changes.
    Modify,
    /// `create`: the path is created.
    Create,
    /// `delete`: the path is removed.
    Delete,
    /// `rename`: the file moves to `to` (and may change on the way).
    Rename {
        /// The destination.
        to: RepoPath,
    },
}

impl ChangeKind {
    /// The JSON spelling: `modify`, `create`, `delete` or `rename`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeKind::Modify => "modify",
            ChangeKind::Create => "create",
            ChangeKind::Delete => "delete",
            ChangeKind::Rename { .. } => "rename",
        }
    }
}

/// A file change's `precondition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// `{"expectedDigest": "blob:sha256:…"}`: the file exists with exactly
    /// this content.
    ExpectedDigest(Digest),
    /// `{"expectedAbsence": true}`: the path does not exist.
    ExpectedAbsence,
}

/// How a file change's content changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentChange {
    /// No content given: a delete, or a rename that moves the bytes as
    /// they are.
    Keep,
    /// Text `edits` on the current content (empty text for a create).
    Edits(Vec<TextEdit>),
    /// Whole-blob replacement: `after` and its verified bytes from `blobs`.
    Replace {
        /// The `after` digest.
        digest: Digest,
        /// The bytes (`Digest::of(data) == digest`).
        data: Vec<u8>,
    },
}

/// One text edit: replace `range` with `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// The range, in `coordinate_system` units.
    pub range: Range,
    /// How `range`'s `char` offsets count.
    pub coordinate_system: CoordinateSystem,
    /// The replacement text.
    pub new_text: String,
    /// `rangeBasis`: the digest of the text the range was computed on.
    pub range_basis: Option<Digest>,
}

/// A range `[start, end)` between two positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// Where it starts.
    pub start: Position,
    /// Where it ends (not before `start`).
    pub end: Position,
}

/// A position: 0-based line, and 0-based offset within the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The 0-based line number.
    pub line: u32,
    /// The offset within the line (JSON `char`), in the edit's
    /// [`CoordinateSystem`] units.
    pub character: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, char {}", self.line, self.character)
    }
}

/// The unit `char` offsets count in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoordinateSystem {
    /// `utf8`: bytes.
    Utf8,
    /// `utf16`: UTF-16 code units.
    Utf16,
    /// `codepoint`: Unicode scalar values.
    Codepoint,
}

impl CoordinateSystem {
    /// The JSON spelling: `utf8`, `utf16` or `codepoint`.
    pub fn as_str(self) -> &'static str {
        match self {
            CoordinateSystem::Utf8 => "utf8",
            CoordinateSystem::Utf16 => "utf16",
            CoordinateSystem::Codepoint => "codepoint",
        }
    }

    fn units(self) -> &'static str {
        match self {
            CoordinateSystem::Utf8 => "bytes",
            CoordinateSystem::Utf16 => "UTF-16 code units",
            CoordinateSystem::Codepoint => "code points",
        }
    }
}

/// A proposal's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanStatus {
    /// `complete`: the plan represents the whole operation.
    Complete,
    /// `incomplete`: the provider could not represent all of it.
    Incomplete,
    /// `unsupported`: the provider does not support the operation.
    Unsupported,
    /// `cancelled`: the request was cancelled.
    Cancelled,
    /// `errored`: the provider failed.
    Errored,
}

impl PlanStatus {
    /// Every status, in declaration order.
    pub const ALL: &'static [PlanStatus] = &[
        PlanStatus::Complete,
        PlanStatus::Incomplete,
        PlanStatus::Unsupported,
        PlanStatus::Cancelled,
        PlanStatus::Errored,
    ];

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Complete => "complete",
            PlanStatus::Incomplete => "incomplete",
            PlanStatus::Unsupported => "unsupported",
            PlanStatus::Cancelled => "cancelled",
            PlanStatus::Errored => "errored",
        }
    }
}

/// One precondition that does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreconditionFailure {
    /// The JSON field of the precondition (`documentChanges[i].precondition`,
    /// or `documentChanges[i].to` for a rename destination that exists).
    pub field: String,
    /// The path.
    pub path: RepoPath,
    /// The expected digest, or `None` for "absent".
    pub expected: Option<Digest>,
    /// The current digest, or `None` for "absent".
    pub actual: Option<Digest>,
}

fn spell(d: &Option<Digest>) -> String {
    d.map_or_else(|| "absent".to_owned(), |d| d.to_string())
}

impl PreconditionFailure {
    fn to_json(&self) -> Value {
        json!({
            "field": self.field,
            "path": self.path.as_str(),
            "expected": spell(&self.expected),
            "actual": spell(&self.actual),
        })
    }
}

impl fmt::Display for PreconditionFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.path,
            spell(&self.expected),
            spell(&self.actual)
        )
    }
}

/// Why an edit plan was refused.
///
/// [`code`](EditError::code) is one of `invalid_edit_plan`,
/// `incomplete_edit_plan`, `precondition_failed`, `path_escape` /
/// `invalid_path` (a bad `path` or `to`), or the code of a failed read of
/// the tree (`io`, `path_escape`, …).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.message)]
pub struct EditError(Box<Repr>);

/// [`EditError`]'s fields (boxed: errors travel far, and `Result`s stay small).
#[derive(Debug, Clone, PartialEq)]
struct Repr {
    code: ErrorCode,
    message: String,
    field: Option<String>,
    path: Option<String>,
    status: Option<PlanStatus>,
    reason: Option<Value>,
    diagnostics: Option<Value>,
    failures: Vec<PreconditionFailure>,
}

impl EditError {
    fn new(code: ErrorCode, message: String) -> Self {
        EditError(Box::new(Repr {
            code,
            message,
            field: None,
            path: None,
            status: None,
            reason: None,
            diagnostics: None,
            failures: Vec::new(),
        }))
    }

    /// An `invalid_edit_plan` at `field`; the message starts with the field.
    fn invalid(field: &str, message: impl fmt::Display) -> Self {
        let mut e = EditError::new(
            ErrorCode::InvalidEditPlan,
            if field.is_empty() {
                format!("edit plan: {message}")
            } else {
                format!("{field}: {message}")
            },
        );
        e.0.field = Some(field.to_owned());
        e
    }

    fn with_path(mut self, path: &RepoPath) -> Self {
        self.0.path = Some(path.as_str().to_owned());
        self
    }

    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// The human-readable message (it names the field or path concerned).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The JSON location the error is about, dotted with `[i]` indices,
    /// e.g. `documentChanges[2].edits[0].range.start.char` (the root is
    /// `""`; `None` when the error is not about one field).
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// The repository path concerned (as given, for a refused path).
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }

    /// For `incomplete_edit_plan`: the proposal's status.
    pub fn status(&self) -> Option<PlanStatus> {
        self.0.status
    }

    /// For `incomplete_edit_plan`: the `reason` (or legacy
    /// `incompleteReason`) the proposal gives, verbatim.
    pub fn reason(&self) -> Option<&Value> {
        self.0.reason.as_ref()
    }

    /// For `precondition_failed`: every failed precondition, in plan order.
    pub fn failures(&self) -> &[PreconditionFailure] {
        &self.0.failures
    }

    /// Structured details for the `{"error": {"code", "message",
    /// "details"}}` envelope: an object with whichever of `field`, `path`,
    /// `status`, `reason`, `diagnostics` apply, and for
    /// `precondition_failed` the first failure's `path`, `expected`,
    /// `actual` plus the full `failures` list (each
    /// `{field, path, expected, actual}`, `"absent"` for a missing file).
    pub fn details(&self) -> Value {
        let mut m = Map::new();
        if let Some(f) = &self.0.field {
            m.insert("field".into(), f.as_str().into());
        }
        if let Some(p) = &self.0.path {
            m.insert("path".into(), p.as_str().into());
        }
        if let Some(s) = self.0.status {
            m.insert("status".into(), s.as_str().into());
        }
        if let Some(r) = &self.0.reason {
            m.insert("reason".into(), r.clone());
        }
        if let Some(d) = &self.0.diagnostics {
            m.insert("diagnostics".into(), d.clone());
        }
        if let Some(first) = self.0.failures.first() {
            m.insert("path".into(), first.path.as_str().into());
            m.insert("expected".into(), spell(&first.expected).into());
            m.insert("actual".into(), spell(&first.actual).into());
            m.insert(
                "failures".into(),
                self.0.failures.iter().map(|f| f.to_json()).collect(),
            );
        }
        Value::Object(m)
    }
}

/// Parse an Opcore edit plan (see the [module docs](self) for the accepted
/// shapes and rules).
///
/// Everything that does not need the files is checked here; a plan this
/// returns is self-consistent, and [`plan_changeset`] checks it against the
/// files.
///
/// ```
/// use roundtable_diff::edit::{parse_plan, plan_changeset};
/// use roundtable_diff::diff::TreeFile;
/// use roundtable_base::{Digest, ErrorCode};
/// use roundtable_diff::Operation;
/// use std::collections::BTreeMap;
///
/// let before = "let 漢 = \"😀\";\r\n";
/// let plan = format!(
///     r#"{{"documentChanges": [{{
///         "path": "src/a.js", "kind": "modify",
///         "precondition": {{"expectedDigest": "{}"}},
///         "edits": [{{"range": {{"start": {{"line": 0, "char": 4}}, "end": {{"line": 0, "char": 5}}}},
///                     "coordinateSystem": "utf16", "newText": "kanji"}}]
///     }}]}}"#,
///     Digest::of(before.as_bytes())
/// );
/// let plan = parse_plan(plan.as_bytes())?;
/// let tree = BTreeMap::from([(
///     b"src/a.js".to_vec(),
///     TreeFile::regular(before.as_bytes().to_vec()),
/// )]);
/// let changeset = plan_changeset(&plan, &tree)?;
/// let change = &changeset.files()[0];
/// assert_eq!(change.operation, Operation::Modify);
/// assert_eq!(change.after.as_ref().unwrap().data, "let kanji = \"😀\";\r\n".as_bytes());
///
/// // Anything but a complete proposal is refused.
/// let err = parse_plan(br#"{"proposal": {"status": "incomplete", "reason": "unresolved references"}}"#)
///     .unwrap_err();
/// assert_eq!(err.code(), ErrorCode::IncompleteEditPlan);
/// # Ok::<(), roundtable_diff::edit::EditError>(())
/// ```
pub fn parse_plan(json: &[u8]) -> Result<EditPlan, EditError> {
    parse::parse(json)
}

/// The [`Changeset`] of `plan` against `tree`, reading only the paths the
/// plan touches (each once; a rename's destination is read to check that
/// it is absent).
///
/// Every precondition is checked first, and all failures are reported in
/// one `precondition_failed` error. Then positions are resolved against the
/// current text (`invalid_edit_plan` for a line or `char` past the end, a
/// split character, a non-UTF-8 line addressed in `utf16`/`codepoint`, or
/// overlapping edits) and the new contents computed.
pub fn plan_changeset<T: Tree + ?Sized>(plan: &EditPlan, tree: &T) -> Result<Changeset, EditError> {
    let read = |path: &RepoPath| -> Result<Option<TreeFile>, EditError> {
        let file = tree.read(path.as_str().as_bytes()).map_err(|e| {
            EditError::new(e.code, format!("cannot read {path}: {}", e.source)).with_path(path)
        })?;
        // An edit plan edits regular files: it never writes through, or
        // over, a symbolic link.
        if file.as_ref().is_some_and(|f| f.symlink) {
            return Err(EditError::new(
                ErrorCode::PathEscape,
                format!(
                    "{path}: is a symbolic link; an edit plan never writes through or over one"
                ),
            )
            .with_path(path));
        }
        Ok(file)
    };

    let mut current = Vec::with_capacity(plan.changes.len());
    let mut failures = Vec::new();
    for change in &plan.changes {
        let file = read(&change.path)?;
        // Hashed once: the digest is both the precondition check and the
        // changeset's `before`.
        let meta = file.as_ref().map(FileMeta::of);
        let actual = meta.map(|m| m.digest);
        let expected = match change.precondition {
            Precondition::ExpectedDigest(d) => Some(d),
            Precondition::ExpectedAbsence => None,
        };
        if actual != expected {
            failures.push(PreconditionFailure {
                field: format!("{}.precondition", change.field),
                path: change.path.clone(),
                expected,
                actual,
            });
        }
        if let ChangeKind::Rename { to } = &change.kind {
            if let Some(dest) = read(to)? {
                failures.push(PreconditionFailure {
                    field: format!("{}.to", change.field),
                    path: to.clone(),
                    expected: None,
                    actual: Some(Digest::of(&dest.data)),
                });
            }
        }
        current.push((file, meta));
    }
    if let Some(first) = failures.first() {
        let message = match failures.len() {
            1 => format!("precondition failed: {first}"),
            n => format!(
                "precondition failed: {first} (and {} more precondition failure{})",
                n - 1,
                if n == 2 { "" } else { "s" }
            ),
        };
        let mut e = EditError::new(ErrorCode::PreconditionFailed, message);
        e.0.failures = failures;
        return Err(e);
    }

    let mut files = Vec::with_capacity(plan.changes.len() + 1);
    for (change, (file, meta)) in plan.changes.iter().zip(current) {
        let executable = file.as_ref().is_some_and(|f| f.executable);
        let old = file.as_ref().map_or(&[][..], |f| &f.data[..]);
        match &change.kind {
            ChangeKind::Modify | ChangeKind::Create => {
                let data = new_content(change, old)?;
                files.push(FileChange {
                    path: change.path.clone(),
                    operation: if change.kind == ChangeKind::Create {
                        Operation::Create
                    } else {
                        Operation::Modify
                    },
                    before: meta,
                    after: Some(FileContent {
                        data,
                        executable,
                        symlink: false,
                    }),
                });
            }
            ChangeKind::Delete => files.push(FileChange {
                path: change.path.clone(),
                operation: Operation::Delete,
                before: meta,
                after: None,
            }),
            ChangeKind::Rename { to } => {
                let data = new_content(change, old)?;
                files.push(FileChange {
                    path: change.path.clone(),
                    operation: Operation::RenamedAway { to: to.clone() },
                    before: meta,
                    after: None,
                });
                files.push(FileChange {
                    path: to.clone(),
                    operation: Operation::Rename {
                        from: change.path.clone(),
                    },
                    before: None,
                    after: Some(FileContent {
                        data,
                        executable,
                        symlink: false,
                    }),
                });
            }
        }
    }
    Changeset::new(files)
        .map_err(|d| EditError::new(ErrorCode::InvalidEditPlan, d.to_string()).with_path(&d.0))
}

/// The content `change` produces from `old`.
fn new_content(change: &DocumentChange, old: &[u8]) -> Result<Vec<u8>, EditError> {
    match &change.content {
        ContentChange::Keep => Ok(old.to_vec()),
        ContentChange::Replace { data, .. } => Ok(data.clone()),
        ContentChange::Edits(edits) => {
            text::apply(&change.field, old, edits).map_err(|e| e.with_path(&change.path))
        }
    }
}
