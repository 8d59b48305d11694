//! `roundtable` — the command-line front end.
//!
//! Every command prints JSON on stdout. A refusal is
//! `{"error":{"code","message","details"}}` with exit status 1; a usage
//! error exits with status 2.

use clap::{Parser, Subcommand};
use roundtable::diff::{self, ApplyError, FileStatus, Mode, ParseOptions, Patch};
use roundtable::workspace::{Workspace, WorkspaceError};
use roundtable::ErrorCode;
use serde::Serialize;
use serde_json::{json, Value};
use std::borrow::Cow;
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
    /// Work with Opcore edit plans (WorkspaceEdit JSON).
    #[command(subcommand)]
    Edit(EditCommand),
    /// Print the workspace state hash, git HEAD and file count.
    State {
        /// The repository root.
        #[arg(long)]
        root: PathBuf,
    },
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

#[derive(Subcommand)]
enum EditCommand {
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

impl From<roundtable::edit::EditError> for Failure {
    fn from(e: roundtable::edit::EditError) -> Self {
        Failure::new(e.code(), e.to_string(), e.details())
    }
}

impl From<roundtable::state::StateError> for Failure {
    fn from(e: roundtable::state::StateError) -> Self {
        Failure::new(e.code(), e.to_string(), json!({}))
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
            WorkspaceError::Precondition {
                path,
                expected,
                actual,
            } => json!({"path": path, "expected": expected, "actual": actual}),
            WorkspaceError::Commit { path, .. } | WorkspaceError::Undo { path, .. } => {
                json!({"path": path})
            }
            _ => json!({}),
        };
        Failure::new(e.code(), e.to_string(), details)
    }
}

/// A patch's bytes: mapped from a regular file, or read (stdin, pipes).
enum Input {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(m) => m,
            Input::Read(v) => v,
        }
    }
}

fn read_input(file: &PathBuf) -> Result<Input, Failure> {
    let fail = |e: std::io::Error| {
        Failure::new(
            ErrorCode::Io,
            format!("{}: {e}", file.display()),
            json!({"path": file.display().to_string()}),
        )
    };
    if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(fail)?;
        return Ok(Input::Read(buf));
    }
    let f = std::fs::File::open(file).map_err(fail)?;
    let meta = f.metadata().map_err(fail)?;
    if meta.is_file() && meta.len() >= 1 << 20 {
        // SAFETY: the map is read-only and private; the patch file is the
        // user's input for the duration of one command. If another process
        // truncates it meanwhile the command may be killed by SIGBUS, the
        // same hazard every mmap-reading tool (grep, git) accepts.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&f) }.map_err(fail)?;
        return Ok(Input::Mapped(map));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut &f, &mut buf).map_err(fail)?;
    Ok(Input::Read(buf))
}

fn parse_patch(bytes: &[u8], strip: usize) -> Result<Patch<'_>, Failure> {
    Ok(diff::parse(bytes, &ParseOptions { strip })?)
}

/// One file of `patch parse`'s output.
#[derive(Serialize)]
struct FileSummary<'a> {
    old_path: Option<Cow<'a, str>>,
    new_path: Option<Cow<'a, str>>,
    status: FileStatus,
    old_mode: Option<Mode>,
    new_mode: Option<Mode>,
    binary: bool,
    hunks: Vec<HunkRange>,
    added_lines: usize,
    removed_lines: usize,
}

#[derive(Serialize)]
struct HunkRange {
    old_start: u32,
    old_lines: u32,
    new_start: u32,
    new_lines: u32,
}

fn patch_json(patch: &Patch<'_>) -> Result<String, Failure> {
    let files: Vec<FileSummary<'_>> = patch
        .files()
        .iter()
        .map(|f| FileSummary {
            old_path: f.old_path().map(String::from_utf8_lossy),
            new_path: f.new_path().map(String::from_utf8_lossy),
            status: f.status(),
            old_mode: f.old_mode(),
            new_mode: f.new_mode(),
            binary: f.is_binary(),
            hunks: f
                .hunks()
                .iter()
                .map(|h| HunkRange {
                    old_start: h.old_start(),
                    old_lines: h.old_lines(),
                    new_start: h.new_start(),
                    new_lines: h.new_lines(),
                })
                .collect(),
            added_lines: f.added_lines(),
            removed_lines: f.removed_lines(),
        })
        .collect();
    #[derive(Serialize)]
    struct Summary<'a> {
        files: Vec<FileSummary<'a>>,
    }
    to_json(&Summary { files })
}

/// Serialize a command's result: indented for a terminal, compact for a
/// program reading a pipe.
fn to_json(value: &impl Serialize) -> Result<String, Failure> {
    use std::io::IsTerminal as _;
    let text = if std::io::stdout().is_terminal() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    text.map_err(|e| Failure::new(ErrorCode::Io, e.to_string(), json!({})))
}

fn open_root(root: &std::path::Path) -> Result<Workspace, Failure> {
    if !root.is_dir() {
        return Err(Failure::new(
            ErrorCode::InvalidArgument,
            format!("{}: not a directory", root.display()),
            json!({"field": "root"}),
        ));
    }
    Ok(Workspace::open(root)?)
}

fn run(command: Command) -> Result<String, Failure> {
    match command {
        Command::Patch(PatchCommand::Parse { file, strip }) => {
            let bytes = read_input(&file)?;
            patch_json(&parse_patch(&bytes, strip)?)
        }
        Command::Patch(PatchCommand::Apply {
            root,
            check,
            strip,
            file,
        }) => {
            let bytes = read_input(&file)?;
            let patch = parse_patch(&bytes, strip)?;
            let changes = open_root(&root)?.apply_patch(&patch, check)?;
            to_json(&json!({ "applied": !check, "check": check, "changes": changes }))
        }
        Command::Edit(EditCommand::Apply { root, check, plan }) => {
            let bytes = read_input(&plan)?;
            let plan = roundtable::edit::parse_plan(&bytes)?;
            let workspace = open_root(&root)?;
            let changeset = roundtable::edit::plan_changeset(&plan, &workspace)?;
            let changes = workspace.apply_changeset(&changeset, check)?;
            to_json(&json!({ "applied": !check, "check": check, "changes": changes }))
        }
        Command::State { root } => {
            let state = roundtable::state::compute_state(&root)?;
            to_json(
                &json!({ "state": state.state, "git_head": state.git_head, "files": state.files }),
            )
        }
        Command::Demo { keep } => to_json(&demo::run(keep)?),
    }
}

fn print(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not worth a panic.
    let _ = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"));
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // exits 2 on usage errors
    match run(cli.command) {
        Ok(text) => {
            print(&text);
            ExitCode::SUCCESS
        }
        Err(f) => {
            let error =
                json!({"error": {"code": f.code, "message": f.message, "details": f.details}});
            print(&to_json(&error).unwrap_or_else(|_| error.to_string()));
            ExitCode::from(1)
        }
    }
}
