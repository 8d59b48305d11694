//! Errors over HTTP: one status per stable [`ErrorCode`], and the JSON body
//! every front end writes for a refusal, `{"error": {"code", "message",
//! "details"}}` ([`ToolError::to_json`] under `error`, as the CLI prints it).

use hyper::StatusCode;
use roundtable::{ErrorCode, ToolError};
use serde_json::{json, Value};

/// The HTTP status of an error with `code`.
///
/// One exhaustive `match` with no catch-all: a new code does not compile
/// until it is given its status here.
pub fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode as E;
    match code {
        // The request itself is malformed.
        E::InvalidArgument | E::InvalidPath => StatusCode::BAD_REQUEST,
        // Well-formed, but its content is refused.
        E::InvalidPatch
        | E::UnsupportedPatch
        | E::PathEscape
        | E::IrreversiblePatch
        | E::InvalidEditPlan
        | E::IncompleteEditPlan
        | E::UnknownSymbol
        | E::AmbiguousSymbol
        | E::UnsupportedLanguage
        | E::InvalidPolicy
        | E::ValidationFailed
        | E::SpecialFile => StatusCode::UNPROCESSABLE_ENTITY,
        E::NotFound => StatusCode::NOT_FOUND,
        E::Forbidden => StatusCode::FORBIDDEN,
        // The state moved under the request: read again and retry.
        E::PatchDoesNotApply
        | E::PreconditionFailed
        | E::Conflict
        | E::IllegalTransition
        | E::IdempotencyConflict
        | E::StaleClaim => StatusCode::CONFLICT,
        // Try again later.
        E::Busy | E::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        E::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        // The server's side failed.
        E::Io | E::Database | E::IncompatibleStore | E::InheritedEngine => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

/// The response body of `error`: `{"error": {"code", "message", "details"}}`.
pub fn error_body(error: &ToolError) -> Value {
    json!({ "error": error.to_json() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_an_error_status() {
        for code in ErrorCode::ALL {
            let status = status_of(*code);
            assert!(
                status.is_client_error() || status.is_server_error(),
                "{code}: {status}"
            );
        }
        assert_eq!(status_of(ErrorCode::NotFound), StatusCode::NOT_FOUND);
        assert_eq!(status_of(ErrorCode::Forbidden), StatusCode::FORBIDDEN);
        assert_eq!(status_of(ErrorCode::Conflict), StatusCode::CONFLICT);
        assert_eq!(
            status_of(ErrorCode::InvalidArgument),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn the_body_is_the_tool_error_under_error() {
        let e = ToolError::not_found("proposal", "p1");
        let body = error_body(&e);
        assert_eq!(body["error"]["code"], "not_found");
        assert_eq!(body["error"]["details"]["id"], "p1");
        assert!(body["error"]["message"].as_str().is_some());
    }
}
