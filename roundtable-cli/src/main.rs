//! `roundtable` — the command-line front end.
//!
//! Every command prints JSON on stdout (indented on a terminal, compact on
//! a pipe). A refusal is `{"error":{"code","message","details"}}` — a
//! [`ToolError`], the one error shape every front end shares — with exit
//! status 1; a usage error exits with status 2.
//!
//! The human commands (`show`, `approve`, `reject`, `status`, `events`;
//! see `human.rs`) print readable text unless `--json`.
//!
//! `init`, `call` and `tools` are the tool surface: `call` runs one tool
//! through [`Engine::call_json`] as the actor given by `--as`.

use clap::{Parser, Subcommand};
use roundtable::diff::{self, ParseOptions, Patch};
use roundtable::workspace::Workspace;
use roundtable::{Actor, Engine, EngineOptions, ErrorCode, ToolError};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod demo;
mod human;
mod mcp;
mod terminal;

#[derive(Parser)]
#[command(
    name = "roundtable",
    version,
    about = "Govern the changes AI agents propose to a repository"
)]
struct Cli {
    /// The governance store: a PostgreSQL URL
    /// (`postgres://user@host/db?schema=NAME`) that several hosts, each on
    /// its own clone, share. Default: the embedded SQLite store in
    /// `<root>/.roundtable/`.
    #[arg(long, global = true, env = "ROUNDTABLE_STORE")]
    store: Option<String>,
    #[command(subcommand)]
    command: Command,
}

/// The store every command's engine opens (`--store`).
static STORE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// How every command opens its engine: the defaults, on the store
/// `--store` (or `ROUNDTABLE_STORE`) names.
pub(crate) fn engine_options() -> EngineOptions {
    EngineOptions {
        store: STORE.get().cloned().flatten(),
        ..EngineOptions::default()
    }
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
    /// Create the workspace's store (`<root>/.roundtable/`) when absent and
    /// print `{"root", "store", "engine", "schema_version", "created"}`.
    ///
    /// Opening an existing store creates nothing and reports
    /// `"created": false` (an older store is migrated; a newer one is
    /// refused as `incompatible_store`).
    Init {
        /// The repository root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Call one tool and print its result JSON.
    ///
    /// The arguments are a JSON object, parsed strictly: a key given twice,
    /// an unknown key, a wrong type or a bad value is `invalid_argument`
    /// naming the field. Opening the workspace creates its store when
    /// absent. `roundtable tools` lists every tool and its schemas.
    ///
    /// Example: roundtable call task.create --as orchestrator:host --args '{"task_id":"t1","title":"Fix it"}'
    #[command(verbatim_doc_comment)]
    Call {
        /// The tool (`proposal.create`, `vote.cast`, ...).
        tool: String,
        /// The repository root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Who is calling, as KIND:ID, KIND being agent, human or
        /// orchestrator (`agent:alice`, `human:bob`). A bad spelling is
        /// an `invalid_argument` error (exit 1), not a usage error.
        #[arg(long = "as", value_name = "KIND:ID")]
        actor: String,
        /// The arguments: inline JSON, `@FILE` to read a file, or `-` to
        /// read standard input.
        #[arg(long, value_name = "JSON|@FILE|-", default_value = "{}")]
        args: String,
    },
    /// Print every tool: `[{"name", "description", "mutates", "callers",
    /// "idempotent", "destructive", "waits", "input_schema", "output_schema"}]`.
    Tools,
    /// Print every error code: `[{"code", "status", "description",
    /// "details_schema"}]`, sorted by code; `status` is the C `rt_status`
    /// number and `details_schema` the JSON Schema of the error's
    /// `details`.
    Errors,
    /// Run a whole governed change in a fresh temporary git repository,
    /// printing each step.
    Demo {
        /// Keep the temporary repository and print its path.
        #[arg(long)]
        keep: bool,
        /// Print one JSON document with every step's data instead of lines.
        #[arg(long)]
        json: bool,
        /// Land as git commits (git landing mode): the change and its
        /// revert each land as one commit with trailers.
        #[arg(long)]
        git: bool,
    },
    /// Serve every tool over the Model Context Protocol, for coding agents.
    ///
    /// Over stdio (the default) one server serves one actor, named by the
    /// host that launches it: `--as agent:ID`, or $ROUNDTABLE_ACTOR. The
    /// tool list holds only what that actor's kind may call. Standard
    /// output carries the protocol only.
    ///
    /// With --http ADDR:PORT (loopback) and --tokens FILE, one server serves
    /// many agents over streamable HTTP at /mcp: each request names its
    /// actor by `Authorization: Bearer TOKEN`, the file holding one
    /// `TOKEN KIND:ID` per line (re-read when it changes). A missing or
    /// unknown token is 401. It prints {"url", "tokens"} once listening.
    ///
    /// Example: roundtable mcp --root . --as agent:alice
    #[command(verbatim_doc_comment)]
    Mcp {
        /// The repository root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// The actor every call acts as, KIND:ID (stdio only).
        #[arg(long = "as", value_name = "KIND:ID", conflicts_with = "http")]
        actor: Option<String>,
        /// Serve streamable HTTP on this loopback address instead of stdio.
        #[arg(long, value_name = "ADDR:PORT", requires = "tokens")]
        http: Option<std::net::SocketAddr>,
        /// The bearer tokens file for --http.
        #[arg(long, value_name = "FILE", requires = "http")]
        tokens: Option<PathBuf>,
    },
    /// The commands a person uses (readable text; `--json` for JSON).
    #[command(flatten)]
    Human(human::HumanCommand),
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

fn read_input(file: &Path) -> Result<Input, ToolError> {
    let fail = |e: std::io::Error| {
        ToolError::new(
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

fn parse_patch(bytes: &[u8], strip: usize) -> Result<Patch<'_>, ToolError> {
    Ok(diff::parse(bytes, &ParseOptions::strip(strip))?)
}

fn patch_json(patch: &Patch<'_>) -> Result<String, ToolError> {
    to_json(&patch.summary())
}

/// Serialize a command's result: indented for a terminal, compact for a
/// program reading a pipe.
fn to_json(value: &impl Serialize) -> Result<String, ToolError> {
    use std::io::IsTerminal as _;
    let text = if std::io::stdout().is_terminal() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    // Safe on a terminal (no raw C1 or bidirectional controls), the same JSON.
    text.map(terminal::json)
        .map_err(|e| ToolError::new(ErrorCode::Io, e.to_string(), json!({})))
}

/// A typed value as JSON the way the tools write it: through a
/// [`serde_json::Value`], so every object's keys come out sorted (a
/// tool's typed result prints exactly as `roundtable call` prints it).
fn to_json_sorted(value: &impl Serialize) -> Result<String, ToolError> {
    let value = serde_json::to_value(value)
        .map_err(|e| ToolError::new(ErrorCode::Io, e.to_string(), json!({})))?;
    to_json(&value)
}

fn check_root(root: &Path) -> Result<(), ToolError> {
    if !root.is_dir() {
        return Err(ToolError::new(
            ErrorCode::InvalidArgument,
            format!("{}: not a directory", root.display()),
            json!({"field": "root"}),
        ));
    }
    Ok(())
}

/// The bytes of `--args`: inline JSON, `@FILE`, or `-` for standard input
/// (`@-` too, as with curl). Neither `@` nor a lone `-` can begin a JSON
/// object, so the spellings never overlap.
fn read_args(args: &str) -> Result<Input, ToolError> {
    if args == "-" {
        return read_input(Path::new("-"));
    }
    if let Some(file) = args.strip_prefix('@') {
        return read_input(Path::new(file));
    }
    Ok(Input::Read(args.as_bytes().to_vec()))
}

/// `root` made absolute (symlinks resolved) when it exists, for reports.
fn absolute(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

fn init(root: &Path) -> Result<String, ToolError> {
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

fn call(tool: &str, root: &Path, actor: &str, args: &str) -> Result<String, ToolError> {
    // Everything that can be refused without the store is checked first, so
    // a mistyped command does not create a store.
    let actor = Actor::parse(actor).map_err(|e| ToolError::invalid_argument("--as", e))?;
    if roundtable::tools::find(tool).is_none() {
        return Err(ToolError::new(
            ErrorCode::NotFound,
            format!("there is no tool {tool:?} (`roundtable tools` lists them)"),
            json!({"kind": "tool", "id": tool}),
        ));
    }
    let bytes = read_args(args)?;
    let engine = Engine::open(&absolute(root), engine_options())?;
    to_json(&human::spinner(tool, || {
        engine.call_json(tool, &bytes, &actor)
    })?)
}

fn run(command: Command) -> Result<String, ToolError> {
    match command {
        Command::Init { root } => init(&root),
        Command::Call {
            tool,
            root,
            actor,
            args,
        } => call(&tool, &root, &actor, &args),
        Command::Tools => to_json(&Engine::tools_json()),
        Command::Errors => to_json(&roundtable::tools::errors_json()),
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
            check_root(&root)?;
            let changes = roundtable::workspace::apply_patch(
                &root,
                &patch,
                roundtable::workspace::WriteMode::check_if(check),
            )?;
            to_json(&json!({ "applied": !check, "check": check, "changes": changes }))
        }
        Command::Edit(EditCommand::Apply { root, check, plan }) => {
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
        Command::State { root } => {
            let state = human::spinner("hashing the tree", || {
                roundtable::state::compute_state(&root)
            })?;
            to_json(
                &json!({ "state": state.state, "git_head": state.git_head, "files": state.files }),
            )
        }
        Command::Demo {
            keep,
            json: false,
            git,
        } => {
            let result = demo::run(keep, git, &mut |line| print(line))?;
            Ok(match result.root {
                Some(root) => format!("ok: every step checked; the repository is kept at {root}"),
                None => "ok: every step checked".to_owned(),
            })
        }
        Command::Demo {
            keep,
            json: true,
            git,
        } => to_json_sorted(&demo::run(keep, git, &mut |_| {})?),
        Command::Human(command) => human::run(command),
        Command::Mcp { .. } => unreachable!("main serves mcp itself"),
    }
}

/// The error; in a debug build, first a panic when its details do not
/// conform to its code's schema (`roundtable errors`), so every refusal the
/// command line prints is held to the published shape by the test suite.
fn conformed(e: ToolError) -> ToolError {
    #[cfg(debug_assertions)]
    if let Err(v) = e.check_details() {
        panic!("{v}\ndetails: {}", e.details());
    }
    e
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
    let _ = STORE.set(cli.store.clone().filter(|s| !s.is_empty()));
    if let Command::Mcp {
        root,
        actor,
        http,
        tokens,
    } = &cli.command
    {
        // Standard output is the protocol's: a refusal goes to stderr.
        return match mcp::run(root, actor.as_deref(), *http, tokens.as_ref()).map_err(conformed) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}", json!({"error": e.to_json()}));
                ExitCode::from(1)
            }
        };
    }
    // The human commands report a refusal as readable text unless --json.
    let readable = matches!(&cli.command, Command::Human(c) if !c.json());
    match run(cli.command).map_err(conformed) {
        Ok(text) => {
            print(&text);
            ExitCode::SUCCESS
        }
        Err(e) if readable => {
            eprintln!("error: {}", terminal::escape(e.message(), &[]));
            ExitCode::from(1)
        }
        Err(e) => {
            let error = json!({"error": e.to_json()});
            print(&to_json(&error).unwrap_or_else(|_| error.to_string()));
            ExitCode::from(1)
        }
    }
}
