//! roundtable's tools over the Model Context Protocol.
//!
//! A thin adapter over [`roundtable::Engine`]: every tool of the registry
//! is an MCP tool with its input and output JSON Schemas and annotations
//! from its nature; results are `structuredContent` (plus the same JSON as
//! text); a refusal is a tool error whose structured content is
//! `{"code", "message", "details"}` with the stable code.
//!
//! The actor is bound by whoever starts the server and is never read from
//! tool arguments:
//!
//! - over stdio ([`serve_stdio`]) one server serves one actor, named by the
//!   launching host (`roundtable mcp --as agent:ID`);
//! - over streamable HTTP ([`serve_http`], loopback only) each request names
//!   its actor by a bearer token from a file the host writes ([`Tokens`]);
//!   an unknown or missing token is `401` before any MCP handling.
//!
//! Calls that wait (`events.wait`, `claim.acquire`) run on threads of their
//! own, never on the pool changes run on, at most [`MAX_WAITS`] pending per
//! actor (`busy` with `max_waits` past it); without a `progressToken` a
//! wait lasts at most [`QUIET_WAIT_MS`], with one it is sent progress every
//! [`PROGRESS_EVERY`]. `notifications/cancelled`, or an HTTP client that
//! disconnects, cancels the engine call (nothing granted or changed unless
//! it passed its commit point).
//!
//! The tool list an actor sees holds only the tools its kind may call
//! ([`tool_list`]): an agent does not see `patch.apply` or `agent.register`.
//! Both protocol eras are served by the SDK: the `initialize` handshake
//! (2025-11-25 and earlier) and the stateless revision (2026-07-28,
//! `server/discover`, per-request `_meta`).

mod http;
mod server;
mod stdio;
mod tokens;
mod waits;

pub use http::{serve_http, HttpError, MCP_PATH};
pub use server::{tool_list, McpServer};
pub use tokens::{TokenError, Tokens, MIN_TOKEN_LEN};
pub use waits::{MAX_WAITS, PROGRESS_EVERY, QUIET_WAIT_MS};

use std::sync::Arc;

use roundtable::{Actor, Engine};

/// Serve `actor` over standard input and output until the client closes
/// the stream.
///
/// # Errors
/// The transport's error when the stream cannot be read or written, or the
/// client's first messages are not a valid MCP opening.
pub async fn serve_stdio(engine: Arc<Engine>, actor: Actor) -> std::io::Result<()> {
    use rmcp::ServiceExt;
    let running = McpServer::for_actor(engine, actor)
        .serve(stdio::transport())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// [`serve_stdio`] on a runtime of its own, for a program that is not
/// async (the `roundtable mcp` command).
///
/// # Errors
/// As [`serve_stdio`], or the runtime could not start.
pub fn run_stdio(engine: Arc<Engine>, actor: Actor) -> std::io::Result<()> {
    // One agent's requests: one thread for the protocol (no hand-offs
    // between workers), engine calls on the blocking pool.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(serve_stdio(engine, actor))
}

/// [`serve_http`] on a runtime of its own (the `roundtable mcp --http`
/// command); it returns only on an error.
///
/// # Errors
/// As [`serve_http`], or the runtime could not start.
pub fn run_http(
    engine: Arc<Engine>,
    addr: std::net::SocketAddr,
    tokens: Arc<Tokens>,
    bound: impl FnOnce(std::net::SocketAddr),
) -> Result<(), HttpError> {
    let runtime = runtime().map_err(|source| HttpError::Listen { addr, source })?;
    runtime.block_on(serve_http(engine, addr, tokens, bound))
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("roundtable-mcp")
        .build()
}
