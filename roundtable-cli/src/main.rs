//! `roundtable` — the command-line front end.
//!
//! Every command prints JSON on stdout (indented on a terminal, compact on
//! a pipe). A refusal is `{"error":{"code","message","details"}}` — a
//! [`ToolError`], the one error shape every front end shares — with exit
//! status 1; a usage error exits with status 2.
//!
//! The human commands (`show`, `approve`, `reject`, `status`, `log`,
//! `blame`, `recover`, `events`) print readable text unless `--json`.
//!
//! `init`, `call` and `tools` are the tool surface: `call` runs one tool
//! through [`roundtable::Engine::call_json`] as the actor given by `--as`.
//!
//! This file only parses the command line and dispatches: each command is
//! one module of `commands/`, and what they share is in `cli_util`.

use clap::{Parser, Subcommand};
use commands::{approve, blame, edit, events, log, patch, reject, serve, show, verify};
use roundtable::ToolError;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

mod cli_util;
mod commands;
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

#[derive(Subcommand)]
enum Command {
    /// Work with unified / git diffs.
    #[command(subcommand)]
    Patch(patch::PatchCommand),
    /// Work with Opcore edit plans (WorkspaceEdit JSON).
    #[command(subcommand)]
    Edit(edit::EditCommand),
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
        /// Then leave one more change waiting on the human carol, and serve
        /// the review console on the kept repository at ADDR:PORT (as
        /// `roundtable serve`), printing carol's sign-in token.
        #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1, default_missing_value = "127.0.0.1:8090", conflicts_with = "json")]
        serve: Option<std::net::SocketAddr>,
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
    /// Serve the review console and its JSON API over HTTP, for people.
    ///
    /// One server for one or more workspaces (--workspace NAME=ROOT, each
    /// opened once). Callers authenticate with `Authorization: Bearer
    /// TOKEN` from --tokens (the format of `roundtable mcp --tokens`), or
    /// sign in from the browser with a token (an HttpOnly session cookie
    /// and a CSRF token for writes). Every action is a tool call as the
    /// caller's actor. It prints {"url", "workspaces", "tokens"} once
    /// listening.
    ///
    /// Example: roundtable serve --listen 127.0.0.1:8090 --tokens tokens --workspace demo=.
    #[command(verbatim_doc_comment)]
    Serve(serve::ServeArgs),
    /// Show a proposal: title, author, risk, status, each policy
    /// requirement (✓/✗ with who satisfied it or who can) and the diff.
    Show(show::ShowArgs),
    /// Approve a revision of a proposal as a person (`human.approve`).
    ///
    /// Only the latest revision can be approved: naming an older one is
    /// refused with a message saying which revision is the latest.
    Approve(approve::ApproveArgs),
    /// Reject a proposal as a person (`patch.reject`).
    Reject(reject::RejectArgs),
    /// Open proposals and what each waits for, live claims with their
    /// expiry, recent transactions.
    Status(cli_util::Common),
    /// The commits roundtable landed on the workspace's branch (git landing
    /// mode), newest first, each with the trailers naming what governed it.
    Log(log::LogArgs),
    /// Who wrote each line of a file at the tip of the landing branch (git
    /// landing mode), like `git blame`: the commit and, for lines
    /// roundtable landed, the proposal and its author agent (with --json:
    /// the transaction, task and the evidence that let it land). A line
    /// roundtable did not land starts with `!` and names git's author.
    Blame(blame::BlameArgs),
    /// Open the workspace — which finishes or undoes every transaction a
    /// crashed or interrupted applier left `applying` — and report what
    /// recovery could not finish (exit 1, `busy`, naming each transaction
    /// and its cause), or that nothing is left applying.
    Recover(cli_util::Common),
    /// The audit log, one line per event (with --json, one JSON object per
    /// line).
    Events(events::EventsArgs),
    /// Check that a branch's history (git mode) is the one roundtable
    /// governed: every commit's transaction, event, note and chain point.
    /// Exit status 1 when a commit was not governed or anything disagrees.
    Verify(verify::VerifyArgs),
}

impl Command {
    /// Whether a refusal prints as readable text (the human commands
    /// without `--json`) rather than as JSON.
    fn readable(&self) -> bool {
        let common = match self {
            Command::Show(a) => a.common(),
            Command::Approve(a) => a.common(),
            Command::Reject(a) => a.common(),
            Command::Status(common) | Command::Recover(common) => common,
            Command::Log(a) => a.common(),
            Command::Blame(a) => a.common(),
            Command::Events(a) => a.common(),
            Command::Verify(a) => a.common(),
            _ => return false,
        };
        !common.json
    }
}

fn run(command: Command) -> Result<String, ToolError> {
    use commands::*;
    match command {
        Command::Patch(command) => patch::run(command),
        Command::Edit(command) => edit::run(command),
        Command::State { root } => state::run(&root),
        Command::Init { root } => init::run(&root),
        Command::Call {
            tool,
            root,
            actor,
            args,
        } => call::run(&tool, &root, &actor, &args),
        Command::Tools => tools::run(),
        Command::Errors => errors::run(),
        Command::Demo {
            serve: Some(listen),
            git,
            ..
        } => demo::serve(git, listen).map(|()| String::new()),
        Command::Demo {
            keep, json, git, ..
        } => demo::command(keep, json, git),
        Command::Show(args) => show::run(args),
        Command::Approve(args) => approve::run(args),
        Command::Reject(args) => reject::run(args),
        Command::Status(common) => status::run(&common),
        Command::Log(args) => log::run(args),
        Command::Blame(args) => blame::run(args),
        Command::Recover(common) => recover::run(&common),
        Command::Events(args) => events::run(args),
        Command::Serve(args) => serve::run(args).map(|()| String::new()),
        Command::Verify(args) => verify::run(args).map(|(report, _)| report),
        Command::Mcp { .. } => unreachable!("main serves mcp itself"),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse(); // exits 2 on usage errors
    let _ = cli_util::STORE.set(cli.store.clone().filter(|s| !s.is_empty()));
    if let Command::Mcp {
        root,
        actor,
        http,
        tokens,
    } = &cli.command
    {
        // Standard output is the protocol's: a refusal goes to stderr.
        return match commands::mcp::run(root, actor.as_deref(), *http, tokens.as_ref()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}", json!({"error": e.to_json()}));
                ExitCode::from(1)
            }
        };
    }
    // The human commands report a refusal as readable text unless --json.
    let readable = cli.command.readable();
    if let Command::Verify(args) = cli.command {
        // The report either way; exit 1 when it found anything (for CI).
        return match commands::verify::run(args) {
            Ok((report, valid)) => {
                cli_util::print(&report);
                if valid {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(e) => refused(&e, readable),
        };
    }
    match run(cli.command) {
        Ok(text) => {
            cli_util::print(&text);
            ExitCode::SUCCESS
        }
        Err(e) => refused(&e, readable),
    }
}

/// Report a refusal (readable text on stderr, or the error as JSON) and
/// exit 1.
fn refused(e: &ToolError, readable: bool) -> ExitCode {
    if readable {
        eprintln!("error: {}", terminal::escape(e.message(), &[]));
    } else {
        let error = json!({"error": e.to_json()});
        cli_util::print(&cli_util::to_json(&error).unwrap_or_else(|_| error.to_string()));
    }
    ExitCode::from(1)
}
