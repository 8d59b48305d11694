//! [`ToolError`]: the one error shape every tool call returns.

use super::details::{
    self, DatabaseDetails, Details, InvalidArgumentDetails, InvalidPatchDetails,
    InvalidPathDetails, InvalidPolicyDetails, NotFoundDetails, PathEscapeDetails,
    PreconditionFailedDetails, SpecialFileDetails, UnsupportedPatchDetails,
};
use super::details::{
    AmbiguousSymbolDetails, CancelledDetails, DeadlineExceededDetails, SymbolCandidate,
    UnknownSymbolDetails, UnsupportedLanguageDetails,
};
use crate::diff;
use crate::workspace::WorkspaceError;
use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A refused or failed tool call: a stable [`ErrorCode`], a message for
/// people and structured details for programs. Serializes as
/// `{"code", "message", "details"}`; the details are a value of the
/// code's [`Details`] type, serialized. The cause, when there is one, is
/// kept as the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
pub struct ToolError {
    code: ErrorCode,
    message: String,
    details: Value,
    #[serde(skip)]
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// `details` as JSON (a details type always serializes: its keys are
/// strings and its values plain data).
fn to_value<D: Details>(details: &D) -> Value {
    serde_json::to_value(details).expect("a details type serializes to JSON")
}

impl ToolError {
    /// An error with this message and details; its code is the details'
    /// ([`Details::CODE`]).
    pub fn new<D: Details>(message: impl Into<String>, details: D) -> ToolError {
        ToolError {
            code: D::CODE,
            message: message.into(),
            details: to_value(&details),
            source: None,
        }
    }

    /// An error of a lower layer that carries its details as JSON (built
    /// by the applier, edit plans, agent-native edits, landing, the
    /// transaction engine): the details are read as `code`'s type and
    /// written back, so that they are a details value like any other.
    /// Details that are not of the code's type are a defect of that layer
    /// (the tests of `operations::details` make every such error): a debug
    /// build panics; a release build keeps them as the layer wrote them
    /// rather than lose what they say.
    pub(crate) fn lower(code: ErrorCode, message: impl Into<String>, details: Value) -> ToolError {
        let details = match details::retype(code, details.clone()) {
            Ok(typed) => typed,
            Err(e) => {
                debug_assert!(
                    false,
                    "the details of a `{code}` error are not of its type: {e}"
                );
                details
            }
        };
        ToolError {
            code,
            message: message.into(),
            details,
            source: None,
        }
    }

    /// An error with `code`, `message` and `details` given as JSON (a
    /// binding raising an error it was handed): the details must read as
    /// the code's [`Details`] type, else the error says why they do not.
    pub fn from_json(
        code: ErrorCode,
        message: impl Into<String>,
        details: Value,
    ) -> Result<ToolError, serde_json::Error> {
        Ok(ToolError {
            code,
            message: message.into(),
            details: details::retype(code, details)?,
            source: None,
        })
    }

    /// The same error, keeping `source` as its cause.
    pub fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> ToolError {
        self.source = Some(Box::new(source));
        self
    }

    /// `invalid_argument` naming the field path (`affected_resources[2]`).
    pub fn invalid_argument(field: &str, reason: impl std::fmt::Display) -> ToolError {
        let reason = reason.to_string();
        let message = if field.is_empty() {
            format!("arguments: {reason}")
        } else {
            format!("{field}: {reason}")
        };
        ToolError::new(
            message,
            InvalidArgumentDetails {
                field: Some(field.to_owned()),
                reason: Some(reason),
                ..InvalidArgumentDetails::default()
            },
        )
    }

    /// `not_found` for a record of `kind` (`proposal`, `agent`…) named `id`.
    pub fn not_found(kind: &str, id: &str) -> ToolError {
        ToolError::new(
            format!("{kind} {id:?} does not exist"),
            NotFoundDetails {
                kind: kind.to_owned(),
                id: id.to_owned(),
            },
        )
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured details (always a JSON object: a value of the
    /// code's [`Details`] type).
    pub fn details(&self) -> &Value {
        &self.details
    }

    /// The details as `D`, when `D` is the type of this error's code
    /// (`None` for another code's type).
    pub fn details_as<D: Details>(&self) -> Option<D> {
        if self.code != D::CODE {
            return None;
        }
        serde_json::from_value(self.details.clone()).ok()
    }

    /// Why a `conflict` was refused (a rebase up to date or already
    /// applied, a merge conflict, a proposal already queued); `None` for
    /// another code or a conflict that names no reason.
    pub fn conflict_reason(&self) -> Option<super::details::ConflictReason> {
        if self.code != ErrorCode::Conflict {
            return None;
        }
        serde_json::from_value(self.details.get("reason")?.clone()).ok()
    }

    /// Whether the details read as the code's details type and write
    /// back unchanged (they do for every error this crate makes; an error
    /// deserialized from elsewhere may not).
    pub fn check_details(&self) -> Result<(), serde_json::Error> {
        let typed = details::retype(self.code, self.details.clone())?;
        if typed != self.details {
            return Err(serde::de::Error::custom(format!(
                "the details of a `{}` error do not read back as they were: {} became {typed}",
                self.code, self.details
            )));
        }
        Ok(())
    }

    /// `{"code", "message", "details"}`.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message, "details": self.details})
    }
}

impl From<crate::interrupt::Interrupted> for ToolError {
    fn from(e: crate::interrupt::Interrupted) -> ToolError {
        use crate::interrupt::Interrupted as I;
        match e {
            I::Cancelled => ToolError::new(e.to_string(), CancelledDetails::default()),
            I::DeadlineExceeded => {
                ToolError::new(e.to_string(), DeadlineExceededDetails::default())
            }
        }
    }
}

impl From<crate::store::sql::SqlError> for ToolError {
    fn from(e: crate::store::sql::SqlError) -> ToolError {
        let details = DatabaseDetails::retryable(e.is_retryable());
        ToolError::new(format!("store: {e}"), details).with_source(e)
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> ToolError {
        if let crate::store::StoreError::Url(why) = &e {
            return ToolError::invalid_argument("store", why);
        }
        let message = e.to_string();
        if e.code() == ErrorCode::Database {
            let details = DatabaseDetails::retryable(e.is_retryable());
            return ToolError::new(message, details).with_source(e);
        }
        ToolError::lower(e.code(), message, json!({})).with_source(e)
    }
}

impl From<diff::ParseError> for ToolError {
    fn from(e: diff::ParseError) -> ToolError {
        let line = Some(e.line() as u64);
        let expected = Some(e.expected().to_owned());
        let found = Some(e.found().to_owned());
        let field = e.field().map(str::to_owned);
        let message = e.to_string();
        let error = match e.code() {
            ErrorCode::UnsupportedPatch => ToolError::new(
                message,
                UnsupportedPatchDetails {
                    line,
                    expected,
                    found,
                    ..UnsupportedPatchDetails::default()
                },
            ),
            ErrorCode::InvalidArgument => ToolError::new(
                message,
                InvalidArgumentDetails {
                    field,
                    line,
                    expected,
                    found,
                    ..InvalidArgumentDetails::default()
                },
            ),
            code => {
                debug_assert_eq!(code, ErrorCode::InvalidPatch);
                ToolError::new(
                    message,
                    InvalidPatchDetails {
                        line,
                        expected,
                        found,
                        ..InvalidPatchDetails::default()
                    },
                )
            }
        };
        error.with_source(e)
    }
}

impl From<crate::edit::EditError> for ToolError {
    fn from(e: crate::edit::EditError) -> ToolError {
        ToolError::lower(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl From<crate::edit::agent::AgentEditError> for ToolError {
    fn from(e: crate::edit::agent::AgentEditError) -> ToolError {
        ToolError::lower(e.code(), e.to_string(), e.details().clone()).with_source(e)
    }
}

impl From<crate::state::StateError> for ToolError {
    fn from(e: crate::state::StateError) -> ToolError {
        ToolError::lower(e.code(), e.to_string(), json!({})).with_source(e)
    }
}

/// The details of a refused repository path: `path_escape` or
/// `invalid_path`, with the path and why.
fn path_error(e: &crate::PathError, message: String) -> ToolError {
    let (path, reason) = (Some(e.path.clone()), Some(e.reason.to_string()));
    match e.code() {
        ErrorCode::PathEscape => ToolError::new(
            message,
            PathEscapeDetails {
                path,
                reason,
                ..PathEscapeDetails::default()
            },
        ),
        code => {
            debug_assert_eq!(code, ErrorCode::InvalidPath);
            ToolError::new(
                message,
                InvalidPathDetails {
                    path,
                    reason,
                    ..InvalidPathDetails::default()
                },
            )
        }
    }
}

impl From<crate::changeset::ChangesetError> for ToolError {
    fn from(e: crate::changeset::ChangesetError) -> ToolError {
        use crate::changeset::ChangesetError as C;
        let message = e.to_string();
        let error = match &e {
            C::Path(p) => path_error(p, message),
            C::Apply(a) => ToolError::lower(a.code(), message, crate::workspace::apply_details(a)),
            C::Stale { path } => ToolError::new(
                message,
                PreconditionFailedDetails {
                    path: Some(path.to_string()),
                    ..PreconditionFailedDetails::default()
                },
            ),
        };
        error.with_source(e)
    }
}

impl From<crate::apply::TransactionError> for ToolError {
    fn from(e: crate::apply::TransactionError) -> ToolError {
        use crate::apply::TransactionError as T;
        match e {
            // The cause's own error, as the tools have always reported it
            // (with the failed transaction's id).
            T::Workspace(w) => ToolError::from(w),
            T::Sqlite(s) => ToolError::from(s),
            T::Store(s) => ToolError::from(s),
            e => ToolError::lower(e.code(), e.to_string(), e.details()).with_source(e),
        }
    }
}

impl From<WorkspaceError> for ToolError {
    fn from(e: WorkspaceError) -> ToolError {
        let message = e.to_string();
        let error = match &e {
            WorkspaceError::Path(p) => path_error(p, message),
            WorkspaceError::Symlink { path, link } => ToolError::new(
                message,
                PathEscapeDetails {
                    path: Some(path.clone()),
                    symlink: Some(link.clone()),
                    ..PathEscapeDetails::default()
                },
            ),
            WorkspaceError::Special { path, kind } => ToolError::new(
                message,
                SpecialFileDetails {
                    path: path.clone(),
                    kind: Some((*kind).into()),
                    transaction_id: None,
                },
            ),
            WorkspaceError::Precondition {
                path,
                expected,
                actual,
            } => ToolError::new(
                message,
                PreconditionFailedDetails {
                    path: Some(path.clone()),
                    expected: Some(expected.clone()),
                    actual: Some(Some(actual.clone())),
                    ..PreconditionFailedDetails::default()
                },
            ),
            WorkspaceError::Bare { root } => ToolError::new(
                message,
                PreconditionFailedDetails {
                    root: Some(root.clone()),
                    bare: Some(true),
                    ..PreconditionFailedDetails::default()
                },
            ),
            WorkspaceError::Apply(a) => {
                ToolError::lower(a.code(), message, crate::workspace::apply_details(a))
            }
            e => ToolError::lower(e.code(), message, e.details()),
        };
        error.with_source(e)
    }
}

impl From<crate::symbols::SymbolError> for ToolError {
    fn from(e: crate::symbols::SymbolError) -> ToolError {
        use crate::symbols::{SymbolError as S, MAX_NESTING, MAX_QUALIFIED_NAME, MAX_SOURCE_LEN};
        let message = e.to_string();
        let too_long = |len: usize, max: usize| InvalidArgumentDetails {
            len: Some(len as u64),
            max: Some(max as u64),
            ..InvalidArgumentDetails::default()
        };
        let error = match &e {
            S::UnsupportedLanguage { path } => {
                ToolError::new(message, UnsupportedLanguageDetails { path: path.clone() })
            }
            S::UnknownSymbol {
                path,
                name,
                similar,
            } => ToolError::new(
                message,
                UnknownSymbolDetails {
                    path: path.clone(),
                    name: Some(name.clone()),
                    similar: Some(similar.clone()),
                    symbol: None,
                },
            ),
            S::AmbiguousSymbol {
                path,
                name,
                candidates,
            } => ToolError::new(
                message,
                AmbiguousSymbolDetails {
                    path: path.clone(),
                    name: name.clone(),
                    candidates: candidates.iter().map(SymbolCandidate::from).collect(),
                },
            ),
            S::SourceTooLarge { len } => ToolError::new(message, too_long(*len, MAX_SOURCE_LEN)),
            S::NameTooLong { len } => ToolError::new(message, too_long(*len, MAX_QUALIFIED_NAME)),
            S::NestingTooDeep => ToolError::new(
                message,
                InvalidArgumentDetails {
                    max_nesting: Some(MAX_NESTING as u64),
                    ..InvalidArgumentDetails::default()
                },
            ),
        };
        error.with_source(e)
    }
}

impl From<crate::policy::PolicyError> for ToolError {
    fn from(e: crate::policy::PolicyError) -> ToolError {
        let details = InvalidPolicyDetails::from(&e);
        ToolError::new(e.to_string(), details).with_source(e)
    }
}

impl From<crate::landing::LandingError> for ToolError {
    fn from(e: crate::landing::LandingError) -> ToolError {
        ToolError::lower(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl crate::apply::Retryable for ToolError {
    fn retryable(&self) -> bool {
        self.details_as::<DatabaseDetails>()
            .is_some_and(|d| d.retryable == Some(true))
    }
}
