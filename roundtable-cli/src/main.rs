//! `roundtable` — the command-line front end.
//!
//! Every command prints JSON on stdout. A refusal is
//! `{"error":{"code","message","details"}}` with exit status 1; a usage
//! error exits with status 2.

use clap::{Parser, Subcommand};
use roundtable::diff::{self, ApplyError, ParseOptions, Patch};
use roundtable::workspace::{self, WorkspaceError};
use roundtable::ErrorCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

mod demo;

#[derive(Parser)]
#[command(
    name = "roundtable",
    version,
    about = "Govern the changes AI agents propose to a repository"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with unified / git diffs.
    #[command(subcommand)]
    Patch(PatchCommand),
    /// Run a whole change through roundtable in a fresh temporary repository.
    Demo {
        /// Keep the temporary repository and print its path.
        #[arg(long)]
        keep: bool,
    },
}

#[derive(Subcommand)]
enum PatchCommand {
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

/// A refusal: a stable code, a message and structured details.
pub(crate) struct Failure {
    code: ErrorCode,
    message: String,
    details: Value,
}

impl Failure {
    fn new(code: ErrorCode, message: impl Into<String>, details: Value) -> Self {
        Failure {
            code,
            message: message.into(),
            details,
        }
    }
}

impl From<diff::ParseError> for Failure {
    fn from(e: diff::ParseError) -> Self {
        Failure::new(
            e.code(),
            e.to_string(),
            json!({"line": e.line(), "expected": e.expected(), "found": e.found()}),
        )
    }
}

impl From<WorkspaceError> for Failure {
    fn from(e: WorkspaceError) -> Self {
        let details = match &e {
            WorkspaceError::Apply(ApplyError::Hunk { path, hunk, reason }) => {
                json!({"path": String::from_utf8_lossy(path), "hunk": hunk, "reason": reason})
            }
            WorkspaceError::Apply(a) => json!({"path": String::from_utf8_lossy(a.path())}),
            WorkspaceError::Path(p) => json!({"path": p.path, "reason": p.reason}),
            WorkspaceError::Symlink { path, link } => json!({"path": path, "symlink": link}),
            WorkspaceError::Commit { path, .. } | WorkspaceError::Undo { path, .. } => {
                json!({"path": path})
            }
            _ => json!({}),
        };
        Failure::new(e.code(), e.to_string(), details)
    }
}

fn read_input(file: &PathBuf) -> Result<Vec<u8>, Failure> {
    let result = if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map(|_| buf)
    } else {
        std::fs::read(file)
    };
    result.map_err(|e| {
        Failure::new(
            ErrorCode::Io,
            format!("{}: {e}", file.display()),
            json!({"path": file.display().to_string()}),
        )
    })
}

fn parse_patch(bytes: &[u8], strip: usize) -> Result<Patch<'_>, Failure> {
    Ok(diff::parse(bytes, &ParseOptions { strip })?)
}

fn patch_json(patch: &Patch<'_>) -> Value {
    let files: Vec<Value> = patch
        .files()
        .iter()
        .map(|f| {
            let lossy = |p: Option<&[u8]>| p.map(|p| String::from_utf8_lossy(p).into_owned());
            json!({
                "old_path": lossy(f.old_path()),
                "new_path": lossy(f.new_path()),
                "status": f.status(),
                "old_mode": f.old_mode(),
                "new_mode": f.new_mode(),
                "binary": f.is_binary(),
                "hunks": f.hunks().iter().map(|h| json!({
                    "old_start": h.old_start(),
                    "old_lines": h.old_lines(),
                    "new_start": h.new_start(),
                    "new_lines": h.new_lines(),
                })).collect::<Vec<_>>(),
                "added_lines": f.added_lines(),
                "removed_lines": f.removed_lines(),
            })
        })
        .collect();
    json!({ "files": files })
}

fn run(command: Command) -> Result<Value, Failure> {
    match command {
        Command::Patch(PatchCommand::Parse { file, strip }) => {
            let bytes = read_input(&file)?;
            Ok(patch_json(&parse_patch(&bytes, strip)?))
        }
        Command::Patch(PatchCommand::Apply {
            root,
            check,
            strip,
            file,
        }) => {
            let bytes = read_input(&file)?;
            let patch = parse_patch(&bytes, strip)?;
            if !root.is_dir() {
                return Err(Failure::new(
                    ErrorCode::InvalidArgument,
                    format!("{}: not a directory", root.display()),
                    json!({"field": "root"}),
                ));
            }
            let changes = workspace::apply_patch(&root, &patch, check)?;
            Ok(json!({ "applied": !check, "check": check, "changes": changes }))
        }
        Command::Demo { keep } => demo::run(keep),
    }
}

fn print_json(value: &Value) {
    let text = serde_json::to_string_pretty(value).expect("JSON values always serialize");
    #[allow(clippy::print_stdout)] // the CLI's output is its interface
    {
        println!("{text}");
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // exits 2 on usage errors
    match run(cli.command) {
        Ok(value) => {
            print_json(&value);
            ExitCode::SUCCESS
        }
        Err(f) => {
            print_json(
                &json!({"error": {"code": f.code, "message": f.message, "details": f.details}}),
            );
            ExitCode::from(1)
        }
    }
}
