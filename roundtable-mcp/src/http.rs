//! Streamable HTTP on loopback: one server for many agents, each request's
//! actor bound by its bearer token.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::http::{header, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use roundtable::{Actor, Engine, ErrorCode};

use crate::{McpServer, Tokens};

/// The path MCP is served at (`http://127.0.0.1:PORT/mcp`).
pub const MCP_PATH: &str = "/mcp";

/// Why the HTTP server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address is not a loopback address: the transport is for hosts
    /// on this machine, and bearer tokens travel in clear text.
    #[error("{0} is not a loopback address (use 127.0.0.1 or [::1])")]
    NotLoopback(SocketAddr),
    /// The listener could not be bound, or accepting failed.
    #[error("listening on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl HttpError {
    /// The stable code: `invalid_argument` for a bad address, `io` for a
    /// listener the system refused.
    pub fn code(&self) -> ErrorCode {
        match self {
            HttpError::NotLoopback(_) => ErrorCode::InvalidArgument,
            HttpError::Listen { .. } => ErrorCode::Io,
        }
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// Serve `engine` over streamable HTTP at `addr` (loopback only; port 0
/// picks one), calling `bound` with the address once it listens, until the
/// process ends.
///
/// Every request must carry `Authorization: Bearer TOKEN` naming an actor
/// in `tokens`; anything else is `401` before any MCP handling, never a
/// default actor. Requests are served statelessly (no MCP session), with
/// plain JSON responses.
///
/// # Errors
/// [`HttpError`] when the address is not loopback or cannot be bound.
pub async fn serve_http(
    engine: Arc<Engine>,
    addr: SocketAddr,
    tokens: Arc<Tokens>,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    if !addr.ip().is_loopback() {
        return Err(HttpError::NotLoopback(addr));
    }
    let listen = |source| HttpError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    bound(listener.local_addr().map_err(listen)?);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let waits = Arc::default();
    let mcp = Arc::new(StreamableHttpService::new(
        move || {
            Ok(McpServer::per_request(
                Arc::clone(&engine),
                Arc::clone(&waits),
            ))
        },
        Arc::new(NeverSessionManager::default()),
        config,
    ));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A peer that hung up before accept, or a full fd table: keep serving.
            Err(e) => {
                eprintln!("roundtable mcp: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let mcp = Arc::clone(&mcp);
        let tokens = Arc::clone(&tokens);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let mcp = Arc::clone(&mcp);
                let tokens = Arc::clone(&tokens);
                async move { Ok::<_, std::convert::Infallible>(route(&mcp, &tokens, request).await) }
            });
            // A client that drops its connection ends only that connection.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn route(
    mcp: &StreamableHttpService<McpServer, NeverSessionManager>,
    tokens: &Tokens,
    mut request: Request<Incoming>,
) -> Response<Body> {
    if request.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, "roundtable serves MCP at /mcp\n");
    }
    match bearer(&request).and_then(|token| tokens.actor(token)) {
        Some(actor) => {
            request.extensions_mut().insert::<Actor>(actor);
            mcp.handle(request).await
        }
        None => {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "a bearer token the host minted is required\n",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"roundtable\""),
            );
            response
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header, if any.
fn bearer<B>(request: &Request<B>) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_auth(value: &str) -> Request<()> {
        Request::builder()
            .header(header::AUTHORIZATION, value)
            .body(())
            .expect("request")
    }

    #[test]
    fn only_a_bearer_header_yields_a_token() {
        assert_eq!(bearer(&with_auth("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&with_auth("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(&with_auth("Basic abc")), None);
        assert_eq!(bearer(&with_auth("Bearer ")), None);
        assert_eq!(bearer(&with_auth("Bearerabc")), None);
        assert_eq!(bearer(&Request::new(())), None);
    }
}
