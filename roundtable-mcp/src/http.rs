//! Streamable HTTP on loopback: one server for many agents, each request's
//! actor bound by its bearer token.
//!
//! In front of the SDK, in this order: a connection must finish its request
//! headers within [`HEADER_READ_TIMEOUT`] (else it is dropped); a request
//! with an `Origin` header that is not this server's own loopback origin is
//! `403` (the MCP rule against DNS rebinding; no `Origin`, as from a
//! non-browser client, is fine); no valid bearer token is `401`; a body over
//! the message size limit ([`max_message_bytes`]) is `413`, one that is not
//! JSON `400` with JSON-RPC `-32700`, one that is not a JSON-RPC message
//! (or an `initialize` without `protocolVersion`) `400` with `-32600`
//! (`-32602`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::http::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use roundtable::{Actor, Engine, ErrorCode};

use crate::wire::{self, max_message_bytes, Decoded, Refusal};
use crate::{McpServer, Tokens};

/// The path MCP is served at (`http://127.0.0.1:PORT/mcp`).
pub const MCP_PATH: &str = "/mcp";

/// How long a connection may take to send a request's headers (the first
/// request's, and each next one's on a kept-alive connection) before it is
/// dropped: a client that connects and stalls holds nothing for long.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The name a refusal gives this transport's limit.
const TRANSPORT: &str = "HTTP";

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
/// plain JSON responses. A request body may hold up to
/// [`max_message_bytes`] of the engine's patch limit (97 MiB by default).
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
    let local = listener.local_addr().map_err(listen)?;
    bound(local);
    let limit = max_message_bytes(engine.options().max_patch_bytes);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(limit);
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
                async move {
                    Ok::<_, std::convert::Infallible>(route(&mcp, &tokens, limit, request).await)
                }
            });
            // A client that drops its connection, or stalls in its headers,
            // ends only that connection.
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn route(
    mcp: &StreamableHttpService<McpServer, NeverSessionManager>,
    tokens: &Tokens,
    limit: usize,
    mut request: Request<Incoming>,
) -> Response<Body> {
    if request.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, "roundtable serves MCP at /mcp\n");
    }
    let origins = request.headers().get_all(header::ORIGIN);
    if origins
        .iter()
        .any(|o| o.to_str().map_or(true, |o| !loopback_origin(o)))
    {
        return plain(
            StatusCode::FORBIDDEN,
            "this Origin may not call roundtable (only a loopback origin, or none)\n",
        );
    }
    match bearer(&request).and_then(|token| tokens.actor(token)) {
        Some(actor) => {
            request.extensions_mut().insert::<Actor>(actor);
            if request.method() != Method::POST {
                return mcp.handle(request).await;
            }
            let (parts, body) = request.into_parts();
            let bytes = match collect(body, limit).await {
                Ok(bytes) => bytes,
                Err(Collected::TooLarge(prefix)) => {
                    return json_rpc(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &wire::oversized(&prefix, limit, TRANSPORT),
                    )
                }
                Err(Collected::Broken) => {
                    return plain(StatusCode::BAD_REQUEST, "the request body did not arrive\n")
                }
            };
            match wire::decode(&bytes) {
                Decoded::Message(_) => {
                    mcp.handle(Request::from_parts(parts, Full::new(bytes)))
                        .await
                }
                Decoded::Refused(refusal) => json_rpc(StatusCode::BAD_REQUEST, &refusal),
                Decoded::Ignored => {
                    let mut response = Response::new(Full::new(Bytes::new()).boxed());
                    *response.status_mut() = StatusCode::ACCEPTED;
                    response
                }
            }
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

/// Why a request body was not taken.
enum Collected {
    /// It is over the limit; here are its first bytes.
    TooLarge(Vec<u8>),
    /// The connection failed mid-body.
    Broken,
}

/// The whole body, if it is at most `limit` bytes. A larger one is read to
/// its end and dropped (so the client, still sending, reads the answer
/// rather than a reset connection), keeping its first bytes for its id.
async fn collect(mut body: Incoming, limit: usize) -> Result<Bytes, Collected> {
    if body.size_hint().lower() > limit as u64 {
        let prefix = drain(body, Vec::new()).await;
        return Err(Collected::TooLarge(prefix));
    }
    let mut all = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| Collected::Broken)?.into_data() else {
            continue;
        };
        if all.len().saturating_add(data.len()) > limit {
            all.truncate(wire::ID_PREFIX_BYTES);
            let prefix = drain(body, all).await;
            return Err(Collected::TooLarge(prefix));
        }
        all.extend_from_slice(&data);
    }
    Ok(Bytes::from(all))
}

/// Read `body` to its end, keeping up to [`wire::ID_PREFIX_BYTES`] in
/// `prefix`.
async fn drain(mut body: Incoming, mut prefix: Vec<u8>) -> Vec<u8> {
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            let room = wire::ID_PREFIX_BYTES.saturating_sub(prefix.len());
            prefix.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    prefix
}

/// Whether `origin` (an `Origin` header's value) is a loopback origin:
/// `http` or `https` on `localhost`, `127.0.0.0/8` or `[::1]`, with or
/// without a port. A page a browser loaded from anywhere else (the DNS
/// rebinding attack), `null`, or an origin with a path or user is not.
/// Any port is: local software on another port (a proxy, the host's own
/// UI) is as trusted as the process that holds the bearer token.
fn loopback_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            if port.parse::<u16>().is_err() {
                return false;
            }
            host
        }
        _ => authority,
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A JSON-RPC error response with `status`.
fn json_rpc(status: StatusCode, refusal: &Refusal) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(refusal.to_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
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

    #[test]
    fn only_loopback_origins_are_admitted() {
        for local in [
            "http://127.0.0.1:4100",
            "http://localhost:4100",
            "http://LOCALHOST:4100",
            "http://[::1]:4100",
            "http://127.0.0.2:4100",
            "https://127.0.0.1:4100",
            "http://127.0.0.1:4101",
            "http://127.0.0.1",
            "http://localhost",
        ] {
            assert!(loopback_origin(local), "{local}");
        }
        for foreign in [
            "null",
            "",
            "http://evil.example",
            "http://evil.example:4100",
            "http://localhost.evil.example:4100",
            "http://127.0.0.1.nip.io:4100",
            "http://[::2]:4100",
            "http://10.0.0.1:4100",
            "http://127.0.0.1:4100/",
            "http://127.0.0.1:port",
            "http://user@127.0.0.1:4100",
            "file://",
        ] {
            assert!(!loopback_origin(foreign), "{foreign}");
        }
    }
}
