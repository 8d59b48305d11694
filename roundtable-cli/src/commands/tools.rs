//! `roundtable tools`: every tool with its schemas.

use crate::cli_util::to_json;
use roundtable::{Engine, ToolError};

pub(crate) fn run() -> Result<String, ToolError> {
    to_json(&Engine::tools_json())
}
