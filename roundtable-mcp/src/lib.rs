//! roundtable's tools over the Model Context Protocol.
//!
//! A thin adapter over [`roundtable::Engine`]: every tool of the registry
//! is an MCP tool with its input and output JSON Schemas and annotations
//! from its nature; results are `structuredContent` (plus the same JSON as
//! text).
//!
//! A refusal is a tool error (`isError: true`) whose one content item is
//! the text of the JSON `{"code", "message", "details"}`: `code` is the
//! stable [`roundtable::ErrorCode`] name, `message` says why for a reader,
//! `details` is the code's details object (its schema is in `roundtable
//! errors`). A refusal carries no `structuredContent`: clients that check
//! structured content against the tool's output schema even on errors (the
//! TypeScript SDK, the Inspector) would otherwise report a schema mismatch
//! instead of the refusal. A client reads it by parsing the text.
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
//!
//! Each transport takes messages up to one size ([`max_message_bytes`]: six
//! times the engine's patch limit plus 1 MiB, 97 MiB by default), so every
//! patch the engine takes reaches it; a larger message gets a JSON-RPC error
//! naming the limit (over stdio on its own line, with the request's `id` when
//! the start of the line shows it, and the server keeps serving; over HTTP
//! with status `413`). Input that is not JSON is `-32700`, JSON that is not a
//! JSON-RPC message `-32600`, an `initialize` without `protocolVersion` and a
//! call of a tool that does not exist `-32602`, on both transports.

mod http;
mod lines;
mod schema;
mod server;
mod stdio;
mod tokens;
mod waits;
mod wire;

pub use http::{serve_http, HttpError, HEADER_READ_TIMEOUT, MCP_PATH};
pub use server::{tool_list, McpServer};
pub use tokens::{TokenError, Tokens, MIN_TOKEN_LEN};
pub use waits::{spawn as spawn_wait, Pending, Waits, MAX_WAITS, PROGRESS_EVERY, QUIET_WAIT_MS};
pub use wire::max_message_bytes;

use std::sync::Arc;

use roundtable::{Actor, Engine};

/// Serve `actor` over standard input and output until the client closes
/// the stream.
///
/// # Errors
/// The transport's error when the stream cannot be read or written, or the
/// client's first messages are not a valid MCP opening.
pub async fn serve_stdio(engine: Arc<Engine>, actor: Actor) -> std::io::Result<()> {
    let (read, write) = stdio::transport();
    serve_io(engine, actor, read, write).await
}

/// Serve `actor` over newline-delimited JSON-RPC on `read` and `write` (as
/// [`serve_stdio`] does on standard input and output) until `read` ends.
///
/// # Errors
/// As [`serve_stdio`].
pub async fn serve_io<R, W>(
    engine: Arc<Engine>,
    actor: Actor,
    read: R,
    write: W,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    let limit = max_message_bytes(engine.options().max_patch_bytes);
    let running = McpServer::for_actor(engine, actor)
        .serve(lines::LineTransport::new(read, write, limit))
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
