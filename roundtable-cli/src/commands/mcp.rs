//! `roundtable mcp`: the tools over the Model Context Protocol.

use roundtable::operations::details::{InvalidArgumentDetails, IoDetails};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use roundtable::{Actor, Engine, ErrorCode, ToolError};
use serde_json::json;

/// The environment variable a launching host may set instead of `--as`.
pub(crate) const ACTOR_ENV: &str = "ROUNDTABLE_ACTOR";

/// Serve over stdio as one actor, or over HTTP with a token file.
pub(crate) fn run(
    root: &Path,
    actor: Option<&str>,
    http: Option<SocketAddr>,
    tokens: Option<&PathBuf>,
) -> Result<(), ToolError> {
    // Everything that can be refused without the store is checked first.
    let served = match (http, tokens) {
        (Some(addr), Some(file)) => {
            if !addr.ip().is_loopback() {
                return Err(ToolError::invalid_argument(
                    "--http",
                    format!("{addr} is not a loopback address (use 127.0.0.1 or [::1])"),
                ));
            }
            let tokens = roundtable_mcp::Tokens::load(file)
                .map_err(|e| with_field(e.code(), e.to_string(), "--tokens"))?;
            Served::Http(addr, Arc::new(tokens))
        }
        _ => Served::Stdio(stdio_actor(actor)?),
    };
    let engine = Arc::new(Engine::open(
        &crate::cli_util::absolute(root),
        crate::cli_util::engine_options(),
    )?);
    match served {
        Served::Stdio(actor) => roundtable_mcp::run_stdio(engine, actor)
            .map_err(|e| ToolError::new(format!("mcp over stdio: {e}"), IoDetails::default())),
        Served::Http(addr, tokens) => {
            let count = tokens.len();
            roundtable_mcp::run_http(engine, addr, tokens, |bound| {
                // The one line a host reads to learn the port (with port 0).
                crate::cli_util::print(
                    &json!({"url": format!("http://{bound}{}", roundtable_mcp::MCP_PATH), "tokens": count})
                        .to_string(),
                );
            })
            .map_err(|e| with_field(e.code(), e.to_string(), "--http"))
        }
    }
}

/// A refusal of the flag `flag` (its `field`): `io` or
/// `invalid_argument`, the only codes a token file or a listener has
/// (`roundtable mcp` and `roundtable serve` alike).
pub(crate) fn with_field(code: ErrorCode, message: String, flag: &str) -> ToolError {
    let field = Some(flag.to_owned());
    match code {
        ErrorCode::Io => ToolError::new(
            message,
            IoDetails {
                field,
                ..IoDetails::default()
            },
        ),
        _ => ToolError::new(
            message,
            InvalidArgumentDetails {
                field,
                ..InvalidArgumentDetails::default()
            },
        ),
    }
}

enum Served {
    Stdio(Actor),
    Http(SocketAddr, Arc<roundtable_mcp::Tokens>),
}

/// `--as`, else `$ROUNDTABLE_ACTOR`; never a default.
fn stdio_actor(actor: Option<&str>) -> Result<Actor, ToolError> {
    let spelled = match actor {
        Some(a) => a.to_owned(),
        None => std::env::var(ACTOR_ENV)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                ToolError::invalid_argument(
                    "--as",
                    format!("no actor: pass --as KIND:ID (e.g. agent:alice) or set ${ACTOR_ENV}"),
                )
            })?,
    };
    Actor::parse(&spelled).map_err(|e| ToolError::invalid_argument("--as", e))
}
