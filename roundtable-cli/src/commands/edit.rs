//! `roundtable edit apply`: an Opcore edit plan applied to a directory
//! (ungoverned), all or nothing.

use crate::cli_util::{check_root, read_input, to_json};
use clap::Subcommand;
use roundtable::workspace::Workspace;
use roundtable::ToolError;
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum EditCommand {
    /// Apply an edit plan to a directory, all or nothing.
    Apply {
        /// The directory to apply to.
        #[arg(long)]
        root: PathBuf,
        /// Check the plan and its preconditions and report what would change; write nothing.
        #[arg(long)]
        check: bool,
        /// The plan (`-` for standard input).
        plan: PathBuf,
    },
}

pub(crate) fn run(command: EditCommand) -> Result<String, ToolError> {
    let EditCommand::Apply { root, check, plan } = command;
    let bytes = read_input(&plan)?;
    let plan = roundtable::edit::parse_plan(&bytes)?;
    check_root(&root)?;
    let changeset = roundtable::edit::plan_changeset(&plan, &Workspace::open(&root)?)?;
    let changes = roundtable::workspace::apply_changeset(
        &root,
        &changeset,
        roundtable::workspace::WriteMode::check_if(check),
    )?;
    to_json(&json!({ "applied": !check, "check": check, "changes": changes }))
}
