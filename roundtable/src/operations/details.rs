//! The `details` of every error code: one Rust type per [`ErrorCode`].
//!
//! Every refused call carries `{"code", "message", "details"}`. The
//! details of each code are one `Serialize + Deserialize + JsonSchema`
//! type (a struct whose keys are optional where refusals of that code
//! carry different ones), tied to its code by the [`Details`] trait: a
//! [`ToolError`](crate::ToolError) is built from a details value
//! ([`ToolError::new`](crate::ToolError::new)) and takes its code from the value's type, so a
//! `conflict` with the details of `stale_claim` does not compile. Records
//! the details embed (a [`ValidationReport`](crate::operations::validate::ValidationReport), a
//! [`Claim`](crate::model::Claim), an [`Actor`](crate::actor::Actor)…)
//! are the same Rust types the tools return, so their schemas are the
//! same `$defs`.
//!
//! The table at the bottom of this file maps every code to its type;
//! its `match` is exhaustive, so a code without a details type does not
//! compile. From it come [`details_schema`] (schemars' schema of the
//! type), [`description`] and [`errors_json`] (`roundtable errors`,
//! recorded as `schema/errors.json`, from which the Go and Python
//! bindings generate their typed details).
//!
//! Errors of the lower layers (the workspace, the patch parser and
//! applier, edit plans, symbols, policy, landing, the transaction
//! engine) carry their details as JSON they build themselves; the
//! conversions in `tools/error.rs` read those into the code's type
//! ([`retype`]), so the details a call returns are always a serialized
//! details value.

mod patch;
mod records;
mod store;
mod symbols;
#[cfg(test)]
mod tests;

pub use patch::{
    EditPlanStatus, ErrorCause, IncompleteEditPlanDetails, InvalidArgumentDetails,
    InvalidEditPlanDetails, InvalidPatchDetails, InvalidPathDetails, IrreversiblePatchDetails,
    MatchCandidate, PatchDoesNotApplyDetails, PathEscapeDetails, PreconditionFailedDetails,
    PreconditionFailure, PreconditionReason, SpecialFileDetails, SpecialKind,
    UnsupportedPatchDetails,
};
pub use records::{
    BusyDetails, CancelledDetails, ConflictDetails, ConflictReason, DeadlineExceededDetails,
    ForbiddenDetails, ForbiddenReason, IdempotencyConflictDetails, IllegalTransitionDetails,
    InheritedEngineDetails, MovedPath, NotFoundDetails, RebaseStage, RecordStatus,
    StaleClaimDetails, StaleClaimReason, ValidationFailedDetails, ValidationFailedReason,
};
pub use store::{DatabaseDetails, IncompatibleStoreDetails, InvalidPolicyDetails, IoDetails};
pub use symbols::{
    AmbiguousSymbolDetails, SymbolCandidate, UnknownSymbolDetails, UnsupportedLanguageDetails,
};

use crate::ErrorCode;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

/// The details of one error code: the type says which code
/// ([`Details::CODE`]), and a [`ToolError`](super::ToolError) built from
/// a value of it ([`ToolError::new`](super::ToolError::new)) has that
/// code.
pub trait Details: Serialize + DeserializeOwned + JsonSchema {
    /// The code whose details these are.
    const CODE: ErrorCode;
    /// One sentence saying what an error with the code means.
    const DESCRIPTION: &'static str;
}

/// The JSON Schema (2020-12) of the `details` of an error with `code`:
/// schemars' schema of the code's details type (an object with every key
/// any refusal of that code puts in its details, the keys every such
/// refusal has under `required`, `additionalProperties: false`, and its
/// own `$defs`).
pub fn details_schema(code: ErrorCode) -> Value {
    table::schema(code)
}

/// One sentence saying what an error with `code` means.
pub fn description(code: ErrorCode) -> &'static str {
    table::description(code)
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

/// `details` read as the details type of `code` and written back: the
/// details an error of that code carries. An error when they are not of
/// that type (a key it does not have, a value of the wrong type, a
/// required key missing).
pub fn retype(code: ErrorCode, details: Value) -> Result<Value, serde_json::Error> {
    table::retype(code, details)
}

/// `T`'s schema as a details schema: titled and described for `code`.
fn schema<T: Details>() -> Value {
    let mut schema: Value = schemars::schema_for!(T).into();
    // Every details schema lists its keys and its required keys, even
    // none (the bindings read an object with no `properties` as free-form).
    for (key, empty) in [("properties", json!({})), ("required", json!([]))] {
        if schema.get(key).is_none() {
            schema[key] = empty;
        }
    }
    schema["description"] = json!(format!("The details of `{}`: {}", T::CODE, T::DESCRIPTION));
    schema
}

/// `details` through `T` (an object: serde would read a struct from an
/// array too).
fn retyped<T: Details>(details: Value) -> Result<Value, serde_json::Error> {
    if !details.is_object() {
        return Err(serde::de::Error::custom(format!(
            "details are a JSON object, not {details}"
        )));
    }
    serde_json::to_value(serde_json::from_value::<T>(details)?)
}

/// The schema of a key every refusal has but whose value may be `null`:
/// `T` or `null`, under `required`. (The field is an `Option` read with
/// `deserialize_with = "Option::deserialize"`, so that serde refuses it
/// missing.)
fn nullable<T: JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<Option<T>>()
}

/// The schema of a key present only when set: always `true`.
fn flag(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "boolean", "const": true})
}

/// For an optional key whose value may be `null`: a present key (even
/// `null`) is `Some`, so `{"actual": null}` reads back as it was written.
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// The code of every type, the description of every code, and the
/// dispatch from a code to its type: one line per code, and a `match`
/// that does not compile while a code has no line.
macro_rules! details_table {
    ($($code:ident => $ty:ty : $description:expr;)+) => {
        $(
            impl Details for $ty {
                const CODE: ErrorCode = ErrorCode::$code;
                const DESCRIPTION: &'static str = $description;
            }
        )+

        mod table {
            use super::*;

            pub(super) fn schema(code: ErrorCode) -> Value {
                match code {
                    $(ErrorCode::$code => super::schema::<$ty>(),)+
                }
            }

            pub(super) fn description(code: ErrorCode) -> &'static str {
                match code {
                    $(ErrorCode::$code => <$ty as Details>::DESCRIPTION,)+
                }
            }

            pub(super) fn retype(code: ErrorCode, details: Value) -> Result<Value, serde_json::Error> {
                match code {
                    $(ErrorCode::$code => super::retyped::<$ty>(details),)+
                }
            }
        }
    };
}

details_table! {
    InvalidPatch => InvalidPatchDetails:
        "The patch text is malformed: it follows neither the unified/git diff grammar nor the agent-native format it was given as.";
    PatchDoesNotApply => PatchDoesNotApplyDetails:
        "The patch is well formed but does not apply to the current contents: a hunk's context is not found, a file to create exists, a file to modify is missing.";
    UnsupportedPatch => UnsupportedPatchDetails:
        "The patch uses a feature roundtable deliberately does not apply (submodules and gitlinks, combined diffs of merges).";
    PathEscape => PathEscapeDetails:
        "A path would leave the repository root, names `.git` or `.roundtable`, or passes through a symbolic link (or a link's target would leave the root).";
    InvalidPath => InvalidPathDetails:
        "A path is not a valid repository path (empty, not UTF-8, a NUL byte, too long).";
    IrreversiblePatch => IrreversiblePatchDetails:
        "A patch cannot be reversed (a copy has no inverse in the diff grammar); no tool reports it with details today.";
    InvalidArgument => InvalidArgumentDetails:
        "A call's arguments are invalid: a field is missing, of the wrong type or out of range.";
    Io => IoDetails:
        "The operating system (or libgit2) refused a read or write.";
    PreconditionFailed => PreconditionFailedDetails:
        "A change's precondition does not hold: a file's current digest is not the expected one, a file expected to be absent exists, a branch moved.";
    InvalidEditPlan => InvalidEditPlanDetails:
        "An edit plan is malformed: a bad JSON shape, overlapping edits, a range off the end of a line or inside a character, a blob that does not match its digest.";
    IncompleteEditPlan => IncompleteEditPlanDetails:
        "An edit plan's status is not `complete` (`incomplete`, `unsupported`, `cancelled`, `errored`): it must not be applied.";
    NotFound => NotFoundDetails:
        "The named proposal, revision, task, agent, tool or other record does not exist.";
    Forbidden => ForbiddenDetails:
        "The actor may not do this: the wrong kind of actor, not the author, the author voting on their own proposal, an unregistered or disabled agent.";
    Conflict => ConflictDetails:
        "The call lost a race or repeats a record: the expected revision is not the latest, the id is taken, a revision was superseded, another agent's claim is in the way.";
    IllegalTransition => IllegalTransitionDetails:
        "The record's current status does not allow this operation (the details name the status and the statuses that would).";
    IdempotencyConflict => IdempotencyConflictDetails:
        "An idempotency key was used before with other arguments (or another tool).";
    Database => DatabaseDetails:
        "The store's database failed (locked past the busy timeout, corrupt, disk full, the server unreachable) or holds what this code did not write; the call changed nothing (`retryable` says when the same call may succeed later).";
    IncompatibleStore => IncompatibleStoreDetails:
        "The store was written by a newer roundtable (or is not a roundtable store), so it is not opened.";
    UnknownSymbol => UnknownSymbolDetails:
        "A `symbol:` resource names no symbol in the file's current content.";
    AmbiguousSymbol => AmbiguousSymbolDetails:
        "A `symbol:` resource names more than one symbol (the details list the candidates and their spans).";
    UnsupportedLanguage => UnsupportedLanguageDetails:
        "Symbols are asked for in a file whose language roundtable cannot index.";
    InvalidPolicy => InvalidPolicyDetails:
        "A policy document is malformed: bad TOML, an unknown key, a bad glob, a value the format does not allow.";
    StaleClaim => StaleClaimDetails:
        "A claim's resource changed since the claim was acquired, or its fencing token was superseded: inside validation reports, and as `patch.apply`'s refusal when the author's claim lapsed, or another agent was granted its resource, between validation and the journal (nothing was applied).";
    ValidationFailed => ValidationFailedDetails:
        "A gate of the validation report fails (the details carry the whole report).";
    Busy => BusyDetails:
        "Another applier holds the workspace (or the path) past the wait, or (over MCP, with `max_waits`) the client already has the most waits pending: the call changed nothing and may be retried soon.";
    SpecialFile => SpecialFileDetails:
        "A path names something that is not a regular file, a directory or a symbolic link (a FIFO, a socket, a device), which roundtable never opens.";
    Cancelled => CancelledDetails:
        "The caller cancelled the call while it waited, before its commit point: it changed nothing.";
    DeadlineExceeded => DeadlineExceededDetails:
        "The call's deadline passed while it waited, before its commit point: it changed nothing.";
    InheritedEngine => InheritedEngineDetails:
        "The engine was opened by another process and this one inherited it across `fork()`: the call did nothing; open a new engine in this process.";
}
