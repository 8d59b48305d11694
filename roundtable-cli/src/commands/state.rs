//! `roundtable state`: the workspace state hash, git HEAD and file count.

use crate::cli_util::{spinner, to_json};
use roundtable::ToolError;
use serde_json::json;
use std::path::Path;

pub(crate) fn run(root: &Path) -> Result<String, ToolError> {
    let state = spinner("hashing the tree", || {
        roundtable::state::compute_state(root)
    })?;
    to_json(&json!({ "state": state.state, "git_head": state.git_head, "files": state.files }))
}
