//! `roundtable serve`: the tools and their read models over a JSON HTTP
//! API, an event stream, and the embedded web console, for people
//! reviewing what agents propose.
//!
//! A thin adapter: every route calls tools through the engine's registry
//! as the caller's actor, so the engine decides what each caller may read
//! and do; no rule lives here. One [`Engine`] per workspace, opened once by
//! the host; engine calls run on the runtime's blocking pool, the event
//! stream's waits on threads of their own under MCP's per-actor cap.
//!
//! - **Who calls**: `Authorization: Bearer TOKEN` (the token file of
//!   [`roundtable_mcp::Tokens`], re-read on change), or a browser session
//!   made from a token (`POST /api/v1/session`: an `HttpOnly;
//!   SameSite=Strict` cookie and a CSRF token every cookie write must echo
//!   in `X-CSRF-Token`). Revoking the token ends its sessions; a session
//!   also ends when unused for [`Config::session_idle`] or older than
//!   [`Config::session_lifetime`].
//! - **Errors**: `{"error": {"code", "message", "details"}}` with the
//!   status of its code ([`status_of`]).
//! - **Routes**: see `http.rs`; lists page with `limit` and `cursor`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let engine = Arc::new(roundtable::Engine::open(
//!     std::path::Path::new("."),
//!     roundtable::EngineOptions::default(),
//! )?);
//! let tokens = Arc::new(roundtable_mcp::Tokens::load(std::path::Path::new("tokens"))?);
//! let mut config = roundtable_serve::Config::new("127.0.0.1:0".parse()?, tokens);
//! config.workspaces.insert("demo".into(), engine);
//! roundtable_serve::run(config, |addr| println!("listening on {addr}"))?;
//! # Ok(())
//! # }
//! ```

mod auth;
mod console;
mod error;
mod http;
mod hunk_claims;
mod hunk_symbols;
mod query;
mod sse;
pub mod syntax;
mod views;

pub use error::{error_body, status_of};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use roundtable::operations::details::IoDetails;
use roundtable::{Engine, ErrorCode, ToolError};
use roundtable_mcp::Tokens;

/// How often an idle event stream sends a `: heartbeat` comment, unless
/// configured otherwise.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// How long a browser session may go unused before it ends, unless
/// configured otherwise: 12 hours.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 60 * 60);

/// How long a browser session lasts from sign-in however it is used,
/// unless configured otherwise: 7 days.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// What one server serves.
#[derive(Debug)]
pub struct Config {
    /// The workspaces by name (`demo`), each an engine opened once.
    pub workspaces: BTreeMap<String, Arc<Engine>>,
    /// The bearer tokens.
    pub tokens: Arc<Tokens>,
    /// Where to listen (port 0 picks one).
    pub listen: SocketAddr,
    /// Whether a non-loopback `listen` is allowed (the session cookie is
    /// then `Secure`: serve it behind TLS).
    pub allow_non_loopback: bool,
    /// How often an idle event stream sends a heartbeat.
    pub heartbeat: Duration,
    /// The largest request body taken (`413` past it); `None`: MCP's
    /// message limit for the largest patch limit of the workspaces.
    pub max_body_bytes: Option<usize>,
    /// The most event streams and waiting tool calls one actor may have
    /// open at once (the next is `busy`).
    pub max_waits: usize,
    /// How long a browser session may go unused: past it, the session is
    /// refused (`401`) and forgotten. Each authenticated request renews it.
    pub session_idle: Duration,
    /// How long a browser session lasts from sign-in, however it is used.
    pub session_lifetime: Duration,
}

impl Config {
    /// No workspace yet, loopback only, the default heartbeat, limits and
    /// session timeouts ([`SESSION_IDLE`], [`SESSION_LIFETIME`]).
    pub fn new(listen: SocketAddr, tokens: Arc<Tokens>) -> Config {
        Config {
            workspaces: BTreeMap::new(),
            tokens,
            listen,
            allow_non_loopback: false,
            heartbeat: HEARTBEAT,
            max_body_bytes: None,
            max_waits: roundtable_mcp::MAX_WAITS,
            session_idle: SESSION_IDLE,
            session_lifetime: SESSION_LIFETIME,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address is not loopback and non-loopback was not allowed.
    #[error("{0} is not a loopback address (use 127.0.0.1 or [::1], or allow non-loopback and serve behind TLS)")]
    NotLoopback(SocketAddr),
    /// No workspace to serve.
    #[error("no workspace to serve")]
    NoWorkspace,
    /// The listener could not be bound, or the runtime not started.
    #[error("listening on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl ServeError {
    /// The stable code: `invalid_argument` for a bad address or no
    /// workspace, `io` for a listener the system refused.
    pub fn code(&self) -> ErrorCode {
        match self {
            ServeError::NotLoopback(_) | ServeError::NoWorkspace => ErrorCode::InvalidArgument,
            ServeError::Listen { .. } => ErrorCode::Io,
        }
    }
}

/// Serve `config` until the process ends, calling `on_bound` with the
/// address once listening.
///
/// # Errors
/// [`ServeError`] when the address is refused or cannot be bound.
pub async fn serve(config: Config, on_bound: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    http::serve(config, on_bound).await
}

/// [`serve`] on a runtime of its own (the `roundtable serve` command); it
/// returns only on an error.
///
/// # Errors
/// As [`serve`], or the runtime could not start.
pub fn run(config: Config, on_bound: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let addr = config.listen;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("roundtable-serve")
        .build()
        .map_err(|source| ServeError::Listen { addr, source })?;
    runtime.block_on(serve(config, on_bound))
}

/// A fresh bearer token for a tokens file: 32 random bytes from the
/// system, hex-encoded (well past [`roundtable_mcp::MIN_TOKEN_LEN`]).
///
/// # Errors
/// The system's random source failed.
pub fn mint_token() -> std::io::Result<String> {
    auth::random_hex().map_err(std::io::Error::other)
}

/// Run an engine call on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(call).await.map_err(|e| {
        ToolError::new(
            format!("the call did not finish: {e}"),
            IoDetails::default(),
        )
    })?
}
