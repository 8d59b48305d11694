//! The listener and the router, by hand over hyper: a route is a method
//! and path segments. A known path with another method is `405` with
//! `Allow`; an unknown path `404`; a body over the limit `413`; a
//! connection that does not finish its headers within
//! [`HEADER_READ_TIMEOUT`] is dropped. Every response carries the security
//! headers ([`SECURITY_HEADERS`]); every `/api` response `Cache-Control:
//! no-store`.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /`, `GET /console/<file>` | the console |
//! | `POST/GET/DELETE /api/v1/session` | sign in, who am I, sign out |
//! | `GET /api/v1/workspaces` | names and landing modes |
//! | `GET …/{ws}/tools`, `POST …/{ws}/tools/{tool}` | the caller's tools; call one |
//! | `GET …/{ws}/inbox` | `inbox.list` |
//! | `GET …/{ws}/proposals[/{id}[/files\|diff\|symbols\|interdiff]]` | read models |
//! | `GET …/{ws}/transactions[/{id}]`, `…/claims`, `…/landing` | read models |
//! | `GET …/{ws}/blame?path=` | `provenance.blame` |
//! | `GET …/{ws}/agents`, `GET …/{ws}/agents/{id}/landings` | `agent.list`; what an agent landed |
//! | `POST …/{ws}/agents/{id}/revert` | `proposal.revert_agent` for that agent |
//! | `GET …/{ws}/events` | the event stream |

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use roundtable::{Actor, CallOptions, CancelToken, Engine, ToolError};
use roundtable_mcp::{Tokens, Waits};
use serde_json::{json, Value};

use crate::auth::{self, AuthError, Caller, Origins, SessionLimits, Sessions, Via};
use crate::error::{error_body, status_of};
use crate::query::{self, Query};
use crate::views::{self, Reader};
use crate::{console, sse, Config, ServeError};

/// How long a connection may take to send a request's headers.
pub(crate) const HEADER_READ_TIMEOUT: Duration = roundtable_mcp::HEADER_READ_TIMEOUT;

/// The headers every response carries.
pub(crate) const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// The header a mutating tool call names its idempotency key in.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// What every request's handler shares.
struct App {
    workspaces: BTreeMap<String, Arc<Engine>>,
    tokens: Arc<Tokens>,
    sessions: Sessions,
    origins: Origins,
    secure_cookie: bool,
    heartbeat: Duration,
    max_body: usize,
    waits: Arc<Waits>,
}

pub(crate) async fn serve(
    config: Config,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let addr = config.listen;
    let open = !addr.ip().is_loopback();
    if open && !config.allow_non_loopback {
        return Err(ServeError::NotLoopback(addr));
    }
    if config.workspaces.is_empty() {
        return Err(ServeError::NoWorkspace);
    }
    let listen = |source| ServeError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    let max_body = config.max_body_bytes.unwrap_or_else(|| {
        let most = config
            .workspaces
            .values()
            .map(|e| e.options().max_patch_bytes)
            .max()
            .unwrap_or_default();
        roundtable_mcp::max_message_bytes(most)
    });
    let app = Arc::new(App {
        workspaces: config.workspaces,
        tokens: config.tokens,
        sessions: Sessions::new(SessionLimits {
            idle: config.session_idle,
            lifetime: config.session_lifetime,
        }),
        origins: Origins { local, open },
        secure_cookie: open,
        heartbeat: config.heartbeat,
        max_body,
        waits: Arc::new(Waits::new(config.max_waits)),
    });
    on_bound(local);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A peer that hung up before accept, or a full fd table: keep serving.
            Err(e) => {
                eprintln!("roundtable serve: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let app = Arc::clone(&app);
                async move { Ok::<_, Infallible>(handle(&app, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Answer one request, with the security headers.
async fn handle(app: &App, request: Request<Incoming>) -> Response<Body> {
    let api = request.uri().path().starts_with("/api/");
    let mut response = dispatch(app, request).await;
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The routes, as the path's segments name them.
#[derive(Debug)]
enum Route {
    Console(&'static console::File),
    Session,
    Workspaces,
    Tools(String),
    Call(String, String),
    Inbox(String),
    Proposals(String),
    Proposal(String, String),
    Files(String, String),
    Diff(String, String),
    Symbols(String, String),
    Interdiff(String, String),
    Transactions(String),
    Transaction(String, String),
    Claims(String),
    Landing(String),
    Blame(String),
    Agents(String),
    Landings(String, String),
    RevertAgent(String, String),
    Events(String),
}

impl Route {
    /// The methods the route answers.
    fn allows(&self) -> &'static [Method] {
        match self {
            Route::Session => &[Method::GET, Method::POST, Method::DELETE],
            Route::Call(..) | Route::RevertAgent(..) => &[Method::POST],
            _ => &[Method::GET],
        }
    }
}

/// The route of a path, or `None` (not found).
fn route(path: &str) -> Option<Route> {
    if path == "/" {
        return console::file("index.html").map(Route::Console);
    }
    if let Some(name) = path.strip_prefix("/console/") {
        return console::file(name).map(Route::Console);
    }
    let segs: Option<Vec<String>> = path
        .strip_prefix("/api/v1/")?
        .split('/')
        .map(query::decode)
        .collect();
    let segs = segs?;
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let own = |x: &str| x.to_owned();
    Some(match s.as_slice() {
        ["session"] => Route::Session,
        ["workspaces"] => Route::Workspaces,
        ["workspaces", ws, rest @ ..] if !ws.is_empty() => match rest {
            ["tools"] => Route::Tools(own(ws)),
            ["tools", tool] => Route::Call(own(ws), own(tool)),
            ["inbox"] => Route::Inbox(own(ws)),
            ["proposals"] => Route::Proposals(own(ws)),
            ["proposals", id] => Route::Proposal(own(ws), own(id)),
            ["proposals", id, "files"] => Route::Files(own(ws), own(id)),
            ["proposals", id, "diff"] => Route::Diff(own(ws), own(id)),
            ["proposals", id, "symbols"] => Route::Symbols(own(ws), own(id)),
            ["proposals", id, "interdiff"] => Route::Interdiff(own(ws), own(id)),
            ["transactions"] => Route::Transactions(own(ws)),
            ["transactions", id] => Route::Transaction(own(ws), own(id)),
            ["claims"] => Route::Claims(own(ws)),
            ["landing"] => Route::Landing(own(ws)),
            ["blame"] => Route::Blame(own(ws)),
            ["agents"] => Route::Agents(own(ws)),
            ["agents", id, "landings"] => Route::Landings(own(ws), own(id)),
            ["agents", id, "revert"] => Route::RevertAgent(own(ws), own(id)),
            ["events"] => Route::Events(own(ws)),
            _ => return None,
        },
        _ => return None,
    })
}

async fn dispatch(app: &App, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let Some(route) = route(&path) else {
        return refusal(&ToolError::not_found("route", &path));
    };
    let allowed = route.allows();
    if !allowed.contains(request.method()) {
        let names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
        let error =
            ToolError::invalid_argument("method", format!("{} takes {}", path, names.join(", ")));
        let mut response = json_response(StatusCode::METHOD_NOT_ALLOWED, &error_body(&error));
        if let Ok(v) = HeaderValue::from_str(&names.join(", ")) {
            response.headers_mut().insert(header::ALLOW, v);
        }
        return response;
    }
    if let Route::Console((name, text)) = route {
        return static_file(name, text);
    }
    let query = match Query::parse(request.uri().query()) {
        Ok(q) => q,
        Err(e) => return refusal(&e),
    };
    if matches!(route, Route::Session) && request.method() == Method::POST {
        return sign_in(app, request).await;
    }
    let caller = match auth::authenticate(
        request.headers(),
        &app.tokens,
        &app.sessions,
        std::time::Instant::now(),
    ) {
        Ok(caller) => caller,
        Err(e) => return auth_refusal(&e),
    };
    if let Err(e) = auth::check_write(&caller, request.method(), request.headers(), &app.origins) {
        return auth_refusal(&e);
    }
    match api(app, route, caller, request, query).await {
        Ok(response) => response,
        Err(e) => respond(e),
    }
}

/// The authenticated routes.
async fn api(
    app: &App,
    route: Route,
    caller: Caller,
    request: Request<Incoming>,
    q: Query,
) -> Result<Response<Body>, Refusal> {
    let ok = |v: Value| Ok(json_response(StatusCode::OK, &v));
    match route {
        Route::Console(_) => Err(ToolError::not_found("route", request.uri().path()).into()),
        Route::Session => {
            if request.method() == Method::DELETE {
                if let Via::Cookie { id, .. } = &caller.via {
                    app.sessions.remove(id);
                }
                let mut r = json_response(StatusCode::OK, &json!({"signed_out": true}));
                set_cookie(&mut r, &auth::cleared_cookie(app.secure_cookie));
                return Ok(r);
            }
            ok(session_body(&caller.actor, &caller.via))
        }
        Route::Workspaces => {
            let mut out = Vec::new();
            for (name, engine) in &app.workspaces {
                let (e, a, n) = (Arc::clone(engine), caller.actor.clone(), name.clone());
                out.push(
                    crate::blocking(move || views::workspace(&Reader::new(&e, &a), &n)).await?,
                );
            }
            ok(json!({ "workspaces": out }))
        }
        Route::Tools(ws) => {
            workspace(app, &ws)?;
            ok(views::tools(&caller.actor))
        }
        Route::Call(ws, tool) => call(app, &ws, &tool, caller.actor, request).await,
        Route::RevertAgent(ws, agent) => {
            revert_agent(app, &ws, &agent, caller.actor, request).await
        }
        Route::Events(ws) => {
            let engine = workspace(app, &ws)?;
            let last = request
                .headers()
                .get("last-event-id")
                .and_then(|v| v.to_str().ok());
            let after = sse::start(last, q.number("after")?)?;
            let body = sse::open(engine, caller.actor, after, app.heartbeat, &app.waits).await?;
            let mut response = Response::new(body.boxed());
            let h = response.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            h.insert("x-accel-buffering", HeaderValue::from_static("no"));
            Ok(response)
        }
        read => {
            let (ws, view) = read_view(read);
            let engine = workspace(app, &ws)?;
            let actor = caller.actor;
            let value = crate::blocking(move || view(&Reader::new(&engine, &actor), &q)).await?;
            ok(value)
        }
    }
}

/// A read route's view.
type View = Box<dyn FnOnce(&Reader<'_>, &Query) -> Result<Value, ToolError> + Send>;

/// The workspace and view of a read route.
fn read_view(route: Route) -> (String, View) {
    fn paged(p: views::Paged) -> Value {
        serde_json::to_value(p).expect("a page serializes")
    }
    match route {
        Route::Inbox(ws) => (ws, Box::new(views::inbox)),
        Route::Proposals(ws) => (ws, Box::new(|r, q| views::proposals(r, q).map(paged))),
        Route::Proposal(ws, id) => (ws, Box::new(move |r, _| views::overview(r, &id))),
        Route::Files(ws, id) => (ws, Box::new(move |r, q| views::files(r, &id, q).map(paged))),
        Route::Diff(ws, id) => (ws, Box::new(move |r, q| views::diff(r, &id, q))),
        Route::Symbols(ws, id) => (ws, Box::new(move |r, q| views::symbols(r, &id, q))),
        Route::Interdiff(ws, id) => (ws, Box::new(move |r, q| views::interdiff(r, &id, q))),
        Route::Transactions(ws) => (ws, Box::new(|r, q| views::transactions(r, q).map(paged))),
        Route::Transaction(ws, id) => (ws, Box::new(move |r, _| views::transaction(r, &id))),
        Route::Claims(ws) => (ws, Box::new(|r, q| views::claims(r, q).map(paged))),
        Route::Landing(ws) => (ws, Box::new(|r, _| views::landing(r))),
        Route::Blame(ws) => (ws, Box::new(views::blame)),
        Route::Agents(ws) => (ws, Box::new(views::agents)),
        Route::Landings(ws, id) => (ws, Box::new(move |r, _| views::landings(r, &id))),
        Route::Console(_)
        | Route::Session
        | Route::Workspaces
        | Route::Tools(_)
        | Route::Call(..)
        | Route::RevertAgent(..)
        | Route::Events(_) => unreachable!("api() answers these routes itself"),
    }
}

/// The engine of workspace `name`, or `not_found`.
fn workspace(app: &App, name: &str) -> Result<Arc<Engine>, ToolError> {
    app.workspaces
        .get(name)
        .cloned()
        .ok_or_else(|| ToolError::not_found("workspace", name))
}

/// `POST …/tools/{tool}`: the body is the arguments; a mutating tool takes
/// its idempotency key from the `Idempotency-Key` header.
async fn call(
    app: &App,
    ws: &str,
    tool: &str,
    actor: Actor,
    request: Request<Incoming>,
) -> Result<Response<Body>, Refusal> {
    let engine = workspace(app, ws)?;
    roundtable::registry::find(tool).ok_or_else(|| ToolError::not_found("tool", tool))?;
    let (key, args) = key_and_args(app, request).await?;
    run_tool(app, engine, tool, actor, key, args).await
}

/// `POST …/agents/{agent}/revert`: `proposal.revert_agent` with the
/// body's arguments and `agent_id` the path's (a body naming another
/// agent is refused). Otherwise exactly a call of the tool.
async fn revert_agent(
    app: &App,
    ws: &str,
    agent: &str,
    actor: Actor,
    request: Request<Incoming>,
) -> Result<Response<Body>, Refusal> {
    let engine = workspace(app, ws)?;
    let (key, mut args) = key_and_args(app, request).await?;
    let Some(fields) = args.as_object_mut() else {
        return Err(ToolError::invalid_argument("", "the arguments must be a JSON object").into());
    };
    if fields
        .get("agent_id")
        .is_some_and(|a| a.as_str() != Some(agent))
    {
        return Err(ToolError::invalid_argument(
            "agent_id",
            "differs from the agent in the path: name the agent once, in the path",
        )
        .into());
    }
    fields.insert("agent_id".into(), Value::String(agent.to_owned()));
    run_tool(app, engine, "proposal.revert_agent", actor, key, args).await
}

/// A tool call's `Idempotency-Key` header and its body as JSON arguments
/// (an empty body is `{}`).
async fn key_and_args(
    app: &App,
    request: Request<Incoming>,
) -> Result<(Option<String>, Value), Refusal> {
    let key = request
        .headers()
        .get(IDEMPOTENCY_KEY)
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .map_err(|_| ToolError::invalid_argument("Idempotency-Key", "not visible ASCII"))
        })
        .transpose()?;
    let bytes = body(request.into_body(), app.max_body).await?;
    let args = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        roundtable::json::parse_strict(&bytes).map_err(|e| {
            ToolError::invalid_argument("", format!("the body is not valid JSON: {e}"))
        })?
    };
    Ok((key, args))
}

/// Call `tool` on `engine` as `actor` with `args`; a mutating tool must
/// have an idempotency key (`key`, the header's), which becomes its
/// `idempotency_key`.
async fn run_tool(
    app: &App,
    engine: Arc<Engine>,
    tool: &str,
    actor: Actor,
    key: Option<String>,
    mut args: Value,
) -> Result<Response<Body>, Refusal> {
    let spec =
        roundtable::registry::find(tool).ok_or_else(|| ToolError::not_found("tool", tool))?;
    if spec.mutates {
        let key = key.ok_or_else(|| {
            ToolError::invalid_argument(
                "Idempotency-Key",
                format!("{tool} changes state: send an Idempotency-Key header (a retry with the same key has one effect)"),
            )
        })?;
        let Some(fields) = args.as_object_mut() else {
            return Err(
                ToolError::invalid_argument("", "the arguments must be a JSON object").into(),
            );
        };
        if fields
            .get("idempotency_key")
            .is_some_and(|k| k.as_str() != Some(key.as_str()))
        {
            return Err(ToolError::invalid_argument(
                "idempotency_key",
                "differs from the Idempotency-Key header: send the key once, in the header",
            )
            .into());
        }
        fields.insert("idempotency_key".into(), Value::String(key));
    }
    let cancel = CancelToken::new();
    let options = CallOptions {
        deadline: None,
        cancel: Some(cancel.clone()),
    };
    // The request dropped (its client gone) cancels the call unless it is
    // past its commit point.
    let _cancel_on_drop = CancelOnDrop(cancel);
    let name = tool.to_owned();
    let result = if spec.waits {
        let pending = app.waits.enter(&actor.to_string())?;
        let running = roundtable_mcp::spawn_wait(pending, move || {
            engine.call_with(&name, args, &actor, &options)
        })
        .ok_or_else(|| ToolError::not_found("thread", "wait"))?;
        running.await.map_err(|_| {
            ToolError::new(
                "the wait did not finish",
                roundtable::operations::details::IoDetails::default(),
            )
        })?
    } else {
        crate::blocking(move || engine.call_with(&name, args, &actor, &options)).await
    }?;
    Ok(json_response(StatusCode::OK, &result))
}

/// Cancels its token when dropped.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// `POST /api/v1/session` with `{"token": "..."}`: a session for the
/// token's actor, its id in the cookie and its CSRF token in the body.
async fn sign_in(app: &App, request: Request<Incoming>) -> Response<Body> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct SignIn {
        token: String,
    }
    let headers = request.headers().clone();
    let bytes = match body(request.into_body(), app.max_body.min(64 * 1024)).await {
        Ok(b) => b,
        Err(e) => return respond(e),
    };
    let form: SignIn = match serde_json::from_slice(&bytes) {
        Ok(f) => f,
        Err(e) => {
            return refusal(&ToolError::invalid_argument(
                "token",
                format!("the body must be {{\"token\": \"...\"}}: {e}"),
            ))
        }
    };
    // A sign-in from another site's page is refused like any foreign write.
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN) {
        if !app.origins.allows(origin.to_str().unwrap_or(""), host) {
            return respond(Refusal {
                status: StatusCode::FORBIDDEN,
                error: ToolError::invalid_argument(
                    "Origin",
                    "a sign-in from another site is refused",
                ),
            });
        }
    }
    match app
        .sessions
        .create(&app.tokens, &form.token, std::time::Instant::now())
    {
        Ok((actor, id, csrf)) => {
            let via = Via::Cookie {
                id: id.clone(),
                csrf,
            };
            let mut r = json_response(StatusCode::OK, &session_body(&actor, &via));
            set_cookie(&mut r, &auth::session_cookie(&id, app.secure_cookie));
            r
        }
        Err(e) => auth_refusal(&e),
    }
}

/// A session's body: the actor, its kind and (for a cookie) the CSRF token.
fn session_body(actor: &Actor, via: &Via) -> Value {
    let csrf = match via {
        Via::Cookie { csrf, .. } => Value::String(csrf.clone()),
        Via::Bearer => Value::Null,
    };
    json!({"actor": actor.to_string(), "kind": actor.kind, "csrf": csrf})
}

fn set_cookie(response: &mut Response<Body>, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// A refusal and its status (for most, the status of its code).
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    error: ToolError,
}

impl From<ToolError> for Refusal {
    fn from(error: ToolError) -> Refusal {
        Refusal {
            status: status_of(error.code()),
            error,
        }
    }
}

/// The whole body, if it is at most `limit` bytes; a larger one is `413`
/// (`invalid_argument` naming the body and the limit).
async fn body(mut body: Incoming, limit: usize) -> Result<Bytes, Refusal> {
    let too_large = || Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        error: ToolError::invalid_argument(
            "body",
            format!("the request body is over {limit} bytes, the most this server takes"),
        ),
    };
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large());
    }
    let mut all = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ToolError::invalid_argument("body", format!("the request body did not arrive: {e}"))
        })?;
        if let Ok(data) = frame.into_data() {
            if all.len().saturating_add(data.len()) > limit {
                return Err(too_large());
            }
            all.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(all))
}

/// An error response with the status of its code.
fn refusal(error: &ToolError) -> Response<Body> {
    json_response(status_of(error.code()), &error_body(error))
}

/// A refusal's response.
fn respond(refusal: Refusal) -> Response<Body> {
    json_response(refusal.status, &error_body(&refusal.error))
}

/// An authentication refusal: `401` with `WWW-Authenticate: Bearer`, or
/// `403`.
fn auth_refusal(error: &AuthError) -> Response<Body> {
    let status = error.status();
    let mut response = json_response(status, &error_body(&error.to_tool_error()));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"roundtable\""),
        );
    }
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn static_file(name: &str, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    let headers: &mut HeaderMap = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(console::content_type(name)),
    );
    headers.insert(
        HeaderName::from_static("cache-control"),
        HeaderValue::from_static("no-cache"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_their_handlers() {
        assert!(matches!(
            route("/"),
            Some(Route::Console(("index.html", _)))
        ));
        assert!(matches!(route("/console/app.js"), Some(Route::Console(_))));
        assert!(route("/console/nope.js").is_none());
        assert!(route("/console/../Cargo.toml").is_none());
        assert!(matches!(route("/api/v1/session"), Some(Route::Session)));
        assert!(matches!(
            route("/api/v1/workspaces/demo/tools/vote.cast"),
            Some(Route::Call(ws, t)) if ws == "demo" && t == "vote.cast"
        ));
        assert!(matches!(
            route("/api/v1/workspaces/a%20b/proposals/p1/diff"),
            Some(Route::Diff(ws, id)) if ws == "a b" && id == "p1"
        ));
        assert!(matches!(
            route("/api/v1/workspaces/demo/agents/ada/revert"),
            Some(Route::RevertAgent(ws, a)) if ws == "demo" && a == "ada"
        ));
        assert!(matches!(
            route("/api/v1/workspaces/demo/agents/ada/landings"),
            Some(Route::Landings(ws, a)) if ws == "demo" && a == "ada"
        ));
        assert!(matches!(
            route("/api/v1/workspaces/demo/blame"),
            Some(Route::Blame(_))
        ));
        assert!(route("/api/v1/workspaces/demo/agents/ada").is_none());
        assert!(route("/api/v1/workspaces//tools").is_none());
        assert!(route("/api/v1/workspaces/demo/nope").is_none());
        assert!(route("/api/v2/workspaces").is_none());
        assert_eq!(route("/api/v1/session").map(|r| r.allows().len()), Some(3));
    }
}
