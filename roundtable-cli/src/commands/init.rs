//! `roundtable init`: the workspace's store created when absent.

use crate::cli_util::{absolute, engine_options, to_json};
use roundtable::{Engine, ToolError};
use serde_json::json;
use std::path::Path;

pub(crate) fn run(root: &Path) -> Result<String, ToolError> {
    let root = absolute(root);
    let engine = Engine::open(&root, engine_options())?;
    let store = engine.store_info();
    to_json(&json!({
        "root": engine.root().display().to_string(),
        "store": store.location,
        "engine": store.engine.as_str(),
        "schema_version": store.schema_version,
        "created": store.created,
    }))
}
