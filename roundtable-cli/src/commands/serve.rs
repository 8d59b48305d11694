//! `roundtable serve`: the JSON API, event stream and web console over
//! HTTP, for one or more workspaces.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use roundtable::{Engine, EngineOptions, ToolError};
use serde_json::json;

/// The flags of `roundtable serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (port 0 picks one). Loopback unless
    /// --allow-non-loopback.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8090")]
    listen: SocketAddr,
    /// The bearer tokens file: one `TOKEN KIND:ID` per line (as `roundtable
    /// mcp --tokens`), re-read when it changes.
    #[arg(long, value_name = "FILE")]
    tokens: PathBuf,
    /// A workspace to serve, by name and repository root (repeatable).
    #[arg(long = "workspace", value_name = "NAME=ROOT", required = true)]
    workspaces: Vec<String>,
    /// The governance store of a workspace named by --workspace, when it
    /// is not the global --store or the embedded one (repeatable).
    #[arg(long = "workspace-store", value_name = "NAME=URL")]
    stores: Vec<String>,
    /// Listen beyond loopback (serve behind TLS: the session cookie is
    /// then `Secure`, and bearer tokens must not travel in clear text).
    #[arg(long)]
    allow_non_loopback: bool,
}

/// Serve one workspace, `name` at `root`, with the tokens in `tokens`
/// (`roundtable demo --serve`).
pub(crate) fn serve_one(
    listen: SocketAddr,
    tokens: PathBuf,
    name: &str,
    root: PathBuf,
) -> Result<(), ToolError> {
    run(ServeArgs {
        listen,
        tokens,
        workspaces: vec![format!("{name}={}", root.display())],
        stores: Vec::new(),
        allow_non_loopback: false,
    })
}

/// Open every workspace, then serve until the process ends, printing
/// `{"url", "workspaces", "tokens"}` once listening.
pub(crate) fn run(args: ServeArgs) -> Result<(), ToolError> {
    // Everything that can be refused without a store is checked first.
    if !args.listen.ip().is_loopback() && !args.allow_non_loopback {
        return Err(ToolError::invalid_argument(
            "--listen",
            format!(
                "{} is not a loopback address (use 127.0.0.1 or [::1], or pass --allow-non-loopback and serve behind TLS)",
                args.listen
            ),
        ));
    }
    let tokens = roundtable_mcp::Tokens::load(&args.tokens)
        .map_err(|e| super::mcp::with_field(e.code(), e.to_string(), "--tokens"))?;
    let mut roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    for spec in &args.workspaces {
        let (name, root) = pair(spec, "--workspace")?;
        if roots.insert(name.clone(), PathBuf::from(root)).is_some() {
            return Err(ToolError::invalid_argument(
                "--workspace",
                format!("workspace {name:?} is named twice"),
            ));
        }
    }
    let mut stores: BTreeMap<String, String> = BTreeMap::new();
    for spec in &args.stores {
        let (name, url) = pair(spec, "--workspace-store")?;
        if !roots.contains_key(&name) {
            return Err(ToolError::invalid_argument(
                "--workspace-store",
                format!("no --workspace is named {name:?}"),
            ));
        }
        stores.insert(name, url);
    }
    let mut config = roundtable_serve::Config::new(args.listen, Arc::new(tokens));
    config.allow_non_loopback = args.allow_non_loopback;
    for (name, root) in roots {
        let options = match stores.remove(&name) {
            Some(url) => EngineOptions {
                store: Some(url),
                ..EngineOptions::default()
            },
            None => crate::cli_util::engine_options(),
        };
        let engine = Engine::open(&crate::cli_util::absolute(&root), options)?;
        config.workspaces.insert(name, Arc::new(engine));
    }
    let names: Vec<String> = config.workspaces.keys().cloned().collect();
    let count = config.tokens.len();
    roundtable_serve::run(config, |bound| {
        // The one line a host reads to learn the port (with port 0).
        crate::cli_util::print(
            &json!({"url": format!("http://{bound}/"), "workspaces": names, "tokens": count})
                .to_string(),
        );
    })
    .map_err(|e| super::mcp::with_field(e.code(), e.to_string(), "--listen"))
}

/// `NAME=VALUE`, both non-empty.
fn pair(spec: &str, flag: &str) -> Result<(String, String), ToolError> {
    match spec.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(ToolError::invalid_argument(
            flag,
            format!("{spec:?} is not NAME=VALUE"),
        )),
    }
}
