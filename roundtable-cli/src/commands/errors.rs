//! `roundtable errors`: every error code with its details schema.

use crate::cli_util::to_json;
use roundtable::ToolError;

pub(crate) fn run() -> Result<String, ToolError> {
    to_json(&roundtable::operations::details::errors_json())
}
