//! [`ToolError`]: the one error shape every tool call returns.

use crate::diff;
use crate::workspace::WorkspaceError;
use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A refused or failed tool call: a stable [`ErrorCode`], a message for
/// people and structured details for programs. Serializes as
/// `{"code", "message", "details"}`. The cause, when there is one, is kept
/// as the [`source`](std::error::Error::source).
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

impl ToolError {
    /// An error with this code, message and details (an object).
    pub fn new(code: ErrorCode, message: impl Into<String>, details: Value) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            details,
            source: None,
        }
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
            ErrorCode::InvalidArgument,
            message,
            json!({"field": field, "reason": reason}),
        )
    }

    /// `not_found` for a record of `kind` (`proposal`, `agent`…) named `id`.
    pub fn not_found(kind: &str, id: &str) -> ToolError {
        ToolError::new(
            ErrorCode::NotFound,
            format!("{kind} {id:?} does not exist"),
            json!({"kind": kind, "id": id}),
        )
    }

    /// `forbidden`, saying why.
    pub fn forbidden(message: impl Into<String>, details: Value) -> ToolError {
        ToolError::new(ErrorCode::Forbidden, message, details)
    }

    /// `conflict`, saying with what.
    pub fn conflict(message: impl Into<String>, details: Value) -> ToolError {
        ToolError::new(ErrorCode::Conflict, message, details)
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured details (always a JSON object).
    pub fn details(&self) -> &Value {
        &self.details
    }

    /// `{"code", "message", "details"}`.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message, "details": self.details})
    }
}

impl From<crate::interrupt::Interrupted> for ToolError {
    fn from(e: crate::interrupt::Interrupted) -> ToolError {
        ToolError::new(e.code(), e.to_string(), json!({}))
    }
}

impl From<crate::store::sql::SqlError> for ToolError {
    fn from(e: crate::store::sql::SqlError) -> ToolError {
        let details = crate::store::database_details(e.is_retryable());
        ToolError::new(ErrorCode::Database, format!("store: {e}"), details).with_source(e)
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> ToolError {
        if let crate::store::StoreError::Url(why) = &e {
            return ToolError::invalid_argument("store", why);
        }
        let details = if e.code() == ErrorCode::Database {
            crate::store::database_details(e.is_retryable())
        } else {
            json!({})
        };
        ToolError::new(e.code(), e.to_string(), details).with_source(e)
    }
}

impl From<diff::ParseError> for ToolError {
    fn from(e: diff::ParseError) -> ToolError {
        let mut details = json!({"line": e.line(), "expected": e.expected(), "found": e.found()});
        if let Some(field) = e.field() {
            details["field"] = json!(field);
        }
        ToolError::new(e.code(), e.to_string(), details).with_source(e)
    }
}

impl From<crate::edit::EditError> for ToolError {
    fn from(e: crate::edit::EditError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl From<crate::edit::agent::AgentEditError> for ToolError {
    fn from(e: crate::edit::agent::AgentEditError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), e.details().clone()).with_source(e)
    }
}

impl From<crate::state::StateError> for ToolError {
    fn from(e: crate::state::StateError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), json!({})).with_source(e)
    }
}

impl From<crate::changeset::ChangesetError> for ToolError {
    fn from(e: crate::changeset::ChangesetError) -> ToolError {
        use crate::changeset::ChangesetError as C;
        let details = match &e {
            C::Path(p) => json!({"path": p.path, "reason": p.reason}),
            C::Apply(a) => crate::workspace::apply_details(a),
            C::Stale { path } => json!({"path": path}),
        };
        ToolError::new(e.code(), e.to_string(), details).with_source(e)
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
            e => ToolError::new(e.code(), e.to_string(), e.details()).with_source(e),
        }
    }
}

impl From<WorkspaceError> for ToolError {
    fn from(e: WorkspaceError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl From<crate::symbols::SymbolError> for ToolError {
    fn from(e: crate::symbols::SymbolError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl From<crate::policy::PolicyError> for ToolError {
    fn from(e: crate::policy::PolicyError) -> ToolError {
        ToolError::new(e.code(), e.to_string(), e.details()).with_source(e)
    }
}

impl crate::apply::Retryable for ToolError {
    fn retryable(&self) -> bool {
        self.code() == ErrorCode::Database && self.details()["retryable"] == true
    }
}
