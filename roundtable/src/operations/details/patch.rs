//! The details of the codes about patches, paths, edit plans and
//! preconditions.

use super::present;
use crate::model::{Landing, MatchRung};
use crate::operations::args::PatchFormat;
use crate::operations::validate::ValidationReport;
use crate::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `invalid_patch`: where the text stopped making sense.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidPatchDetails {
    /// The 1-based line where the text stopped making sense (0 for a section built in code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// What the grammar expected there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expected: Option<String>,
    /// The offending line (lossily decoded, truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub found: Option<String>,
    /// For text that is not UTF-8: the offset of its first invalid byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub byte: Option<u64>,
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// The 1-based number of the agent-native hunk concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub hunk: Option<u64>,
    /// For an agent-native hunk that adds or removes no line: the line after its last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub found_line: Option<u64>,
    /// For a file an agent-native change touches twice: the line of the earlier section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub previous_line: Option<u64>,
    /// For a path the change needs as a directory: the file the change makes there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub file: Option<String>,
    /// When a unified diff does not parse but reads like an agent-native
    /// format: the `patch_format` to give instead (`codex` or
    /// `search_replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "PatchFormat")]
    pub suggested_patch_format: Option<PatchFormat>,
}

/// A place in the file near a refused agent-native hunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchCandidate {
    /// Its 1-based line in the file (for a near miss, the first line that differs).
    pub line: u64,
    /// That line's text (`null` past the end of the file).
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(schema_with = "super::nullable::<String>")]
    pub text: Option<String>,
    /// For a near miss: the hunk's line that differs there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expected: Option<String>,
    /// For a near miss: the 1-based line the matching lines start at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub matched_from: Option<u64>,
    /// For a near miss: how many of the hunk's lines match from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub matched_lines: Option<u64>,
}

/// `patch_does_not_apply`: the file and hunk that do not apply, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchDoesNotApplyDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// The 1-based number of the hunk in its file's section (or in the agent-native document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub hunk: Option<u64>,
    /// What did not match: the applier's words for a unified diff's hunk;
    /// `not_found`, `ambiguous`, `indentation` (matched at the whitespace
    /// rung with an uneven indentation offset) or `work_limit` (placing
    /// the change's hunks exceeds the work bound) for an agent-native hunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// For an agent-native hunk: its 1-based line in the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// For an agent-native hunk whose `@@` anchor matches no line: the anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub anchor: Option<String>,
    /// For an agent-native hunk marked `*** End of File` that matches nowhere (always `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::flag")]
    pub at_end: Option<bool>,
    /// For an ambiguous agent-native hunk: the rung of the matching ladder
    /// at which it matched more than one place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "MatchRung")]
    pub rung: Option<MatchRung>,
    /// For an ambiguous agent-native hunk: how many places it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub count: Option<u64>,
    /// When git converts the path's line ends: the rule (`core.autocrlf=true`,
    /// or the path's `.gitattributes` `text`/`eol` attributes); the diff
    /// must have the line ends the working tree has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub eol_rule: Option<String>,
    /// With `eol_rule`: what git does to the path's line ends (CRLF on
    /// checkout and LF in the repository, or LF on `git add`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub eol_conversion: Option<String>,
    /// For an agent-native hunk: the places it matches (ambiguous, up to
    /// 10), its nearest misses (not found, up to 3) or the line whose
    /// indentation differs (indentation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<MatchCandidate>")]
    pub candidates: Option<Vec<MatchCandidate>>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `unsupported_patch`: where the unsupported feature is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsupportedPatchDetails {
    /// The 1-based line where the feature is (0 for a section built in code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// What the grammar expected there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expected: Option<String>,
    /// The offending line (lossily decoded, truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub found: Option<String>,
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `path_escape`: the path, and the link or target that leaves the root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathEscapeDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Why the path is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// For a path through a symbolic link: the component that is a link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub symlink: Option<String>,
    /// For a symbolic link whose target leaves the root: the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub target: Option<String>,
    /// The argument (or edit-plan field) concerned, as a path
    /// (`affected_resources[2]`, `documentChanges[0].to`; `""` for the
    /// whole); for the command line, the flag (`--as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub field: Option<String>,
    /// The 1-based line of the text concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `invalid_path`: the path and why it is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidPathDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Why the path is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// The argument (or edit-plan field) concerned, as a path
    /// (`affected_resources[2]`, `documentChanges[0].to`; `""` for the
    /// whole); for the command line, the flag (`--as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub field: Option<String>,
    /// The 1-based line of the text concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `irreversible_patch`: no details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IrreversiblePatchDetails {}

/// `invalid_argument`: the argument and why it is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidArgumentDetails {
    /// The argument (or edit-plan field) concerned, as a path
    /// (`affected_resources[2]`, `documentChanges[0].to`; `""` for the
    /// whole); for the command line, the flag (`--as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub field: Option<String>,
    /// Why the value is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// For an oversized source or symbol name: its length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub len: Option<u64>,
    /// For an oversized source or symbol name: the most allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub max: Option<u64>,
    /// For declarations nested too deep to index: the deepest allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub max_nesting: Option<u64>,
    /// For a `strip` refused: the path the diff's name makes at the strip level given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// For a `strip` refused: the strip level at which the diff's names
    /// make sense (0 for `git diff --no-prefix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub suggested_strip: Option<u64>,
    /// For a patch over a limit: the 1-based line concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// For a patch over a limit: what the grammar expected there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expected: Option<String>,
    /// For a patch over a limit: the offending line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub found: Option<String>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// One precondition of an edit plan that does not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreconditionFailure {
    /// The plan's field (`documentChanges[0].precondition`, or
    /// `documentChanges[0].to` for a rename onto an existing file).
    pub field: String,
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// The digest expected (`blob:sha256:…`), or `absent`.
    pub expected: String,
    /// The digest found, or `absent`.
    pub actual: String,
}

/// The error that made a precondition fail, as a call would return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorCause {
    /// Its stable code.
    #[schemars(schema_with = "super::records::code_schema")]
    pub code: ErrorCode,
    /// Its message.
    pub message: String,
    /// Its details (as that code's schema has them).
    pub details: serde_json::Map<String, Value>,
}

/// Why a precondition failed, when a word says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PreconditionReason {
    /// A git landing's push was refused by the remote's receive path (a
    /// `pre-receive` or `update` hook, `receive.fsckObjects`,
    /// `receive.denyNonFastForwards`, …) while its branch was still where
    /// expected.
    RemoteRejected,
    /// A revert: the lines around the reverted change changed, so that its
    /// inverse would not apply where the change was.
    Moved,
    /// `proposal.revert_agent`: the agent landed nothing since the time
    /// given that is still applied, or the current files already hold
    /// what its landings found.
    NothingToRevert,
}

/// `precondition_failed`: what was expected, and what is there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreconditionFailedDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// What the change expects: a digest (`blob:sha256:…`, with
    /// ` (executable)` or ` (symbolic link)` when so), `absent` or
    /// `present`; for a branch, the commit id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub expected: Option<String>,
    /// What is there now, spelled as `expected`; `null` for a branch that does not exist.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub actual: Option<Option<String>>,
    /// For an edit plan: every precondition that does not hold, in plan
    /// order (`path`, `expected` and `actual` are the first's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<PreconditionFailure>")]
    pub failures: Option<Vec<PreconditionFailure>>,
    /// For an agent-native change: the 1-based line of its section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// For an agent-native change: the number of the hunk concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub hunk: Option<u64>,
    /// For a bare repository: its directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub root: Option<String>,
    /// For a bare repository, which has no working tree to write files to (always `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::flag")]
    pub bare: Option<bool>,
    /// For a bare repository, or `landing.log` in files mode: the workspace's landing setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Landing")]
    pub landing: Option<Landing>,
    /// The proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The revision concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub revision: Option<u64>,
    /// For a git landing whose push the remote's receive path refused (a
    /// `pre-receive` or `update` hook, `receive.fsckObjects`,
    /// `receive.denyNonFastForwards`, …) while its branch was still where
    /// expected: `remote_rejected`; for a revert: `moved` when the lines
    /// around the reverted change changed, so that its inverse would not
    /// apply where the change was; `nothing_to_revert` when an agent's undo
    /// finds nothing to undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "PreconditionReason")]
    pub reason: Option<PreconditionReason>,
    /// For `remote_rejected`: the remote's reason as git reports it
    /// (`pre-receive hook declined`, `hook declined`, `unpacker error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub remote_status: Option<String>,
    /// For `remote_rejected`: what the remote said while refusing (its
    /// hooks' output), at most 20 lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub remote_messages: Option<Vec<String>>,
    /// For a git landing: the branch (`refs/heads/main`).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    #[schemars(with = "String")]
    pub reference: Option<String>,
    /// For a git landing: the branch the repository's `HEAD` is on (`null`: a detached `HEAD`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub head: Option<Option<String>>,
    /// For a git landing: the remote (`null`: this repository's own branch).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub remote: Option<Option<String>>,
    /// For a revert whose inverse does not apply: why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ErrorCause")]
    pub cause: Option<Box<ErrorCause>>,
    /// For a revert that cannot be inverted as a diff: the paths that changed since the apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub paths: Option<Vec<String>>,
    /// For a revision that no longer matches the workspace: the whole validation report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ValidationReport")]
    pub report: Option<Box<ValidationReport>>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

/// `invalid_edit_plan`: the field and path concerned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidEditPlanDetails {
    /// The argument (or edit-plan field) concerned, as a path
    /// (`affected_resources[2]`, `documentChanges[0].to`; `""` for the
    /// whole); for the command line, the flag (`--as`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub field: Option<String>,
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
}

/// An edit plan's status other than `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EditPlanStatus {
    /// The provider could not represent all of the operation.
    Incomplete,
    /// The provider does not support the operation.
    Unsupported,
    /// The request was cancelled.
    Cancelled,
    /// The provider failed.
    Errored,
}

/// `incomplete_edit_plan`: the plan's status and its reasons, verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IncompleteEditPlanDetails {
    /// The plan's `status` field (`proposal.status`).
    pub field: String,
    /// The plan's status.
    pub status: EditPlanStatus,
    /// The plan's `reason` (or `incompleteReason`), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Value>,
    /// The plan's `diagnostics`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Value>,
}

/// A kind of file roundtable never opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpecialKind {
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A submodule (a gitlink in a bare repository's tree).
    Submodule,
}

impl From<crate::workspace::SpecialKind> for SpecialKind {
    fn from(kind: crate::workspace::SpecialKind) -> SpecialKind {
        use crate::workspace::SpecialKind as K;
        match kind {
            K::Fifo => SpecialKind::Fifo,
            K::Socket => SpecialKind::Socket,
            K::CharDevice => SpecialKind::CharDevice,
            K::BlockDevice => SpecialKind::BlockDevice,
            K::Submodule => SpecialKind::Submodule,
        }
    }
}

/// `special_file`: the path and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecialFileDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// What the path is.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SpecialKind")]
    pub kind: Option<SpecialKind>,
    /// The transaction the failure happened in (recorded `failed` or `recovered`; nothing changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
}

impl PreconditionFailedDetails {
    /// The details naming only `path`.
    pub fn at(path: &impl std::fmt::Display) -> PreconditionFailedDetails {
        PreconditionFailedDetails {
            path: Some(path.to_string()),
            ..PreconditionFailedDetails::default()
        }
    }
}
