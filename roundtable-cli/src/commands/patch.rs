//! `roundtable patch parse` and `roundtable patch apply`: a unified / git
//! diff read, or applied to a directory (ungoverned, as `git apply` would).

use crate::cli_util::{check_root, read_input, to_json};
use clap::Subcommand;
use roundtable::diff::{self, ParseOptions, Patch};
use roundtable::ToolError;
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum PatchCommand {
    /// Parse a patch and print its files, hunks and line counts as JSON.
    Parse {
        /// The patch file (`-` for standard input).
        file: PathBuf,
        /// Leading path components to strip from names.
        #[arg(short = 'p', default_value_t = 1)]
        strip: usize,
    },
    /// Apply a patch to a directory, all or nothing, as `git apply` would.
    Apply {
        /// The directory to apply to (no git repository needed).
        #[arg(long)]
        root: PathBuf,
        /// Check that the patch applies and report what would change; write nothing.
        #[arg(long)]
        check: bool,
        /// Leading path components to strip from names.
        #[arg(short = 'p', default_value_t = 1)]
        strip: usize,
        /// The patch file (`-` for standard input).
        file: PathBuf,
    },
}

fn parse_patch(bytes: &[u8], strip: usize) -> Result<Patch<'_>, ToolError> {
    Ok(diff::parse(bytes, &ParseOptions::strip(strip))?)
}

pub(crate) fn run(command: PatchCommand) -> Result<String, ToolError> {
    match command {
        PatchCommand::Parse { file, strip } => {
            let bytes = read_input(&file)?;
            to_json(&parse_patch(&bytes, strip)?.summary())
        }
        PatchCommand::Apply {
            root,
            check,
            strip,
            file,
        } => {
            let bytes = read_input(&file)?;
            let patch = parse_patch(&bytes, strip)?;
            check_root(&root)?;
            let changes = roundtable::workspace::apply_patch(
                &root,
                &patch,
                roundtable::workspace::WriteMode::check_if(check),
            )?;
            to_json(&json!({ "applied": !check, "check": check, "changes": changes }))
        }
    }
}
