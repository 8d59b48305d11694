//! Who is calling: a bearer token, or a browser session made from one.
//!
//! The actor always comes from here, never from a request body. A bearer
//! token is looked up in the host's token file ([`Tokens`], re-read when it
//! changes). A browser trades a token for a session (`POST
//! /api/v1/session`): a random id in an `HttpOnly; SameSite=Strict` cookie
//! and a random CSRF token it must echo in `X-CSRF-Token` on every write.
//! A session remembers the token it was made from, so removing that token
//! from the file ends the session at its next request.
//!
//! A session also ends with time ([`SessionLimits`]): when it goes unused
//! for longer than its idle timeout (each authenticated request renews
//! that clock), and in any case once its absolute lifetime has passed
//! since sign-in. An ended session is refused (`401`) and forgotten.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION, COOKIE, HOST, ORIGIN};
use hyper::{Method, StatusCode};
use roundtable::operations::details::{ForbiddenDetails, InvalidArgumentDetails, IoDetails};
use roundtable::{Actor, ToolError};
use roundtable_mcp::Tokens;

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "rt_session";

/// The header a cookie-authenticated write carries its CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The most live sessions one token may have: signing in again past it
/// ends that token's oldest session, so a token holder signing in in a
/// loop cannot grow the server's memory without bound.
pub(crate) const MAX_SESSIONS_PER_TOKEN: usize = 32;

/// Why a request was not admitted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    /// Neither a bearer token nor a session cookie.
    #[error(
        "no credentials: send Authorization: Bearer TOKEN, or sign in with POST /api/v1/session"
    )]
    Missing,
    /// A bearer token (or a token offered to sign in) the file does not hold.
    #[error("the token is not one the host minted, or it was revoked")]
    BadToken,
    /// A session cookie naming no live session.
    #[error("the session ended (signed out, or its token was revoked): sign in again")]
    NoSession,
    /// A session cookie naming a session that has just timed out.
    #[error("{0}: sign in again")]
    Expired(Expiry),
    /// A cookie write without this session's CSRF token.
    #[error(
        "{CSRF_HEADER} is missing or is not this session's: a write from the console must carry it"
    )]
    Csrf {
        /// The session's actor.
        actor: Actor,
    },
    /// A write whose `Origin` is not this server's.
    #[error("Origin {origin:?} is not this server's: a write from another site is refused")]
    Origin {
        /// The caller.
        actor: Actor,
        /// The refused origin.
        origin: String,
    },
    /// The operating system gave no random bytes for a session.
    #[error("no random bytes for a session id: {0}")]
    Random(String),
}

impl AuthError {
    /// `401` for missing or dead credentials, `403` for a write refused
    /// for its CSRF token or origin.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            AuthError::Missing
            | AuthError::BadToken
            | AuthError::NoSession
            | AuthError::Expired(_) => StatusCode::UNAUTHORIZED,
            AuthError::Csrf { .. } | AuthError::Origin { .. } => StatusCode::FORBIDDEN,
            AuthError::Random(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The refusal with its stable code: `invalid_argument` naming the
    /// credential (`Authorization`, the cookie) for a `401`, `forbidden`
    /// naming the caller for a `403`.
    pub(crate) fn to_tool_error(&self) -> ToolError {
        let message = self.to_string();
        let argument = |field: &str| {
            ToolError::new(
                message.clone(),
                InvalidArgumentDetails {
                    field: Some(field.to_owned()),
                    reason: Some(message.clone()),
                    ..InvalidArgumentDetails::default()
                },
            )
        };
        let forbidden = |actor: &Actor| {
            ToolError::new(
                message.clone(),
                ForbiddenDetails {
                    actor: actor.clone(),
                    reason: None,
                    allowed_kinds: None,
                    author: None,
                    holder: None,
                    required_role: None,
                },
            )
        };
        match self {
            AuthError::Missing | AuthError::BadToken => argument("Authorization"),
            AuthError::NoSession | AuthError::Expired(_) => argument(SESSION_COOKIE),
            AuthError::Csrf { actor } | AuthError::Origin { actor, .. } => forbidden(actor),
            AuthError::Random(_) => ToolError::new(message.clone(), IoDetails::default()),
        }
    }
}

/// How a request proved who it is.
#[derive(Debug, Clone)]
pub(crate) enum Via {
    /// `Authorization: Bearer TOKEN`: no CSRF token needed.
    Bearer,
    /// The session cookie.
    Cookie {
        /// The session id.
        id: String,
        /// The session's CSRF token.
        csrf: String,
    },
}

/// An admitted caller.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// Who acts.
    pub(crate) actor: Actor,
    /// How it proved it.
    pub(crate) via: Via,
}

/// How long a browser session may live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionLimits {
    /// The longest a session may go unused.
    pub(crate) idle: Duration,
    /// The longest a session may last from sign-in, however used.
    pub(crate) lifetime: Duration,
}

/// Why a session timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Expiry {
    /// Unused for longer than the idle timeout.
    #[error("the session went unused for longer than its idle timeout")]
    Idle,
    /// Older than its absolute lifetime.
    #[error("the session is older than its lifetime")]
    Lifetime,
}

/// Whether a session signed in at `made_at` and last used at `used_at` has
/// timed out at `now` under `limits`; the absolute lifetime is checked
/// first. A session is alive up to and including each limit.
pub(crate) fn expiry(
    limits: SessionLimits,
    made_at: Instant,
    used_at: Instant,
    now: Instant,
) -> Option<Expiry> {
    if now.saturating_duration_since(made_at) > limits.lifetime {
        Some(Expiry::Lifetime)
    } else if now.saturating_duration_since(used_at) > limits.idle {
        Some(Expiry::Idle)
    } else {
        None
    }
}

#[derive(Debug)]
struct Session {
    token: String,
    csrf: String,
    /// Its place in the order sessions were made (the oldest goes first
    /// past the cap).
    made: u64,
    /// When it was signed in.
    made_at: Instant,
    /// When it was last used (signed in, or an authenticated request).
    used_at: Instant,
}

/// The live browser sessions of one server.
#[derive(Debug)]
pub(crate) struct Sessions {
    live: Mutex<HashMap<String, Session>>,
    made: std::sync::atomic::AtomicU64,
    limits: SessionLimits,
}

impl Sessions {
    /// No session yet; each will end under `limits`.
    pub(crate) fn new(limits: SessionLimits) -> Sessions {
        Sessions {
            live: Mutex::new(HashMap::new()),
            made: std::sync::atomic::AtomicU64::new(0),
            limits,
        }
    }

    /// Sign in with `token` at `now`: the actor, a new session id and its
    /// CSRF token. Sessions of any token that have timed out by `now` are
    /// forgotten first, so unused ones do not pile up.
    pub(crate) fn create(
        &self,
        tokens: &Tokens,
        token: &str,
        now: Instant,
    ) -> Result<(Actor, String, String), AuthError> {
        let actor = tokens.actor(token).ok_or(AuthError::BadToken)?;
        let id = random_hex()?;
        let csrf = random_hex()?;
        let mut live = self.lock();
        live.retain(|_, s| expiry(self.limits, s.made_at, s.used_at, now).is_none());
        let mut same: Vec<(u64, String)> = live
            .iter()
            .filter(|(_, s)| s.token == token)
            .map(|(id, s)| (s.made, id.clone()))
            .collect();
        if same.len() >= MAX_SESSIONS_PER_TOKEN {
            same.sort();
            for (_, old) in &same[..=same.len() - MAX_SESSIONS_PER_TOKEN] {
                live.remove(old);
            }
        }
        live.insert(
            id.clone(),
            Session {
                token: token.to_owned(),
                csrf: csrf.clone(),
                made: self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                made_at: now,
                used_at: now,
            },
        );
        Ok((actor, id, csrf))
    }

    /// End session `id` (nothing when it is not live).
    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The caller of session `id` at `now`, renewing its idle clock; ending
    /// it when it has timed out or its token was revoked.
    fn caller(&self, tokens: &Tokens, id: &str, now: Instant) -> Result<Caller, AuthError> {
        let mut live = self.lock();
        let session = live.get_mut(id).ok_or(AuthError::NoSession)?;
        if let Some(why) = expiry(self.limits, session.made_at, session.used_at, now) {
            live.remove(id);
            return Err(AuthError::Expired(why));
        }
        match tokens.actor(&session.token) {
            Some(actor) => {
                session.used_at = session.used_at.max(now);
                Ok(Caller {
                    actor,
                    via: Via::Cookie {
                        id: id.to_owned(),
                        csrf: session.csrf.clone(),
                    },
                })
            }
            None => {
                live.remove(id);
                Err(AuthError::NoSession)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The caller of a request at `now`: its bearer token when it sends one (a
/// bad one is refused even with a cookie), else its session cookie.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    tokens: &Tokens,
    sessions: &Sessions,
    now: Instant,
) -> Result<Caller, AuthError> {
    if headers.contains_key(AUTHORIZATION) {
        let token = bearer(headers).ok_or(AuthError::BadToken)?;
        let actor = tokens.actor(token).ok_or(AuthError::BadToken)?;
        return Ok(Caller {
            actor,
            via: Via::Bearer,
        });
    }
    match cookie(headers, SESSION_COOKIE) {
        Some(id) => sessions.caller(tokens, id, now),
        None => Err(AuthError::Missing),
    }
}

/// Whether a write by `caller` may go on: a foreign `Origin` is refused
/// whatever the credentials; a cookie write needs its session's CSRF
/// token. Reads (`GET`, `HEAD`) always may.
pub(crate) fn check_write(
    caller: &Caller,
    method: &Method,
    headers: &HeaderMap,
    origins: &Origins,
) -> Result<(), AuthError> {
    if method == Method::GET || method == Method::HEAD {
        return Ok(());
    }
    let host = headers.get(HOST).and_then(|h| h.to_str().ok());
    for origin in headers.get_all(ORIGIN) {
        let spelled = origin.to_str().unwrap_or("");
        if !origins.allows(spelled, host) {
            return Err(AuthError::Origin {
                actor: caller.actor.clone(),
                origin: String::from_utf8_lossy(origin.as_bytes()).into_owned(),
            });
        }
    }
    if let Via::Cookie { csrf, .. } = &caller.via {
        let sent = headers.get(CSRF_HEADER).map(HeaderValue::as_bytes);
        if !sent.is_some_and(|sent| same(sent, csrf.as_bytes())) {
            return Err(AuthError::Csrf {
                actor: caller.actor.clone(),
            });
        }
    }
    Ok(())
}

/// The origins that are this server's own.
#[derive(Debug, Clone)]
pub(crate) struct Origins {
    /// The address the server listens on.
    pub(crate) local: SocketAddr,
    /// Whether it listens beyond loopback (then the origin a proxy or
    /// browser names in `Host` is also its own).
    pub(crate) open: bool,
}

impl Origins {
    /// Whether `origin` is this server's: `http://` and its listening
    /// address, `localhost` or another loopback spelling of it on the same
    /// port; when listening beyond loopback, also `http(s)://` and the
    /// request's `Host`.
    pub(crate) fn allows(&self, origin: &str, host: Option<&str>) -> bool {
        let port = self.local.port();
        if origin == format!("http://{}", self.local) {
            return true;
        }
        if self.local.ip().is_loopback() {
            let loopback = [
                format!("http://localhost:{port}"),
                format!("http://127.0.0.1:{port}"),
                format!("http://[::1]:{port}"),
            ];
            if loopback.iter().any(|o| o == origin) {
                return true;
            }
        }
        self.open
            && host.is_some_and(|host| {
                origin == format!("http://{host}") || origin == format!("https://{host}")
            })
    }
}

/// The `Set-Cookie` value of session `id`.
pub(crate) fn session_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/{secure}")
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn cleared_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}")
}

/// The token of an `Authorization: Bearer TOKEN` header, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// 32 random bytes, hex-encoded.
pub(crate) fn random_hex() -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equality that takes the same time wherever the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn cookies_and_bearers_are_read_exactly() {
        let h = headers(&[("cookie", "a=1; rt_session=abc; b=2")]);
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("abc"));
        assert_eq!(
            cookie(&headers(&[("cookie", "rt_session=")]), "rt_session"),
            None
        );
        assert_eq!(
            cookie(&headers(&[("cookie", "xrt_session=1")]), "rt_session"),
            None
        );
        assert_eq!(
            bearer(&headers(&[("authorization", "Bearer t")])),
            Some("t")
        );
        assert_eq!(bearer(&headers(&[("authorization", "Basic t")])), None);
        assert_eq!(bearer(&headers(&[("authorization", "Bearer ")])), None);
    }

    #[test]
    fn only_the_servers_own_origins_are_allowed() {
        let local: SocketAddr = "127.0.0.1:8090".parse().expect("addr");
        let o = Origins { local, open: false };
        assert!(o.allows("http://127.0.0.1:8090", None));
        assert!(o.allows("http://localhost:8090", None));
        assert!(!o.allows("http://localhost:8091", None));
        assert!(!o.allows("http://evil.example", Some("evil.example")));
        assert!(!o.allows("null", None));
        let open = Origins {
            local: "0.0.0.0:8090".parse().expect("addr"),
            open: true,
        };
        assert!(open.allows("https://rt.example", Some("rt.example")));
        assert!(!open.allows("https://evil.example", Some("rt.example")));
    }

    #[test]
    fn a_token_has_a_bounded_number_of_sessions_the_oldest_ending_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens");
        std::fs::write(&path, "tok-carol-0123456789 human:carol\n").expect("write");
        let tokens = Tokens::load(&path).expect("load");
        let sessions = Sessions::new(LIMITS);
        let now = Instant::now();
        let first = sessions
            .create(&tokens, "tok-carol-0123456789", now)
            .expect("first")
            .1;
        for _ in 0..MAX_SESSIONS_PER_TOKEN {
            sessions
                .create(&tokens, "tok-carol-0123456789", now)
                .expect("more");
        }
        assert_eq!(sessions.lock().len(), MAX_SESSIONS_PER_TOKEN);
        assert!(matches!(
            sessions.caller(&tokens, &first, now),
            Err(AuthError::NoSession)
        ));
        assert!(matches!(
            sessions.create(&tokens, "tok-nobody-0123456789", now),
            Err(AuthError::BadToken)
        ));
    }

    const LIMITS: SessionLimits = SessionLimits {
        idle: Duration::from_secs(60),
        lifetime: Duration::from_secs(300),
    };

    fn carol() -> (tempfile::TempDir, Tokens) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens");
        std::fs::write(&path, "tok-carol-0123456789 human:carol\n").expect("write");
        let tokens = Tokens::load(&path).expect("load");
        (dir, tokens)
    }

    #[test]
    fn expiry_checks_the_lifetime_then_the_idle_time_each_limit_inclusive() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(expiry(LIMITS, t0, t0, t0), None);
        assert_eq!(expiry(LIMITS, t0, t0, at(60)), None);
        assert_eq!(expiry(LIMITS, t0, t0, at(61)), Some(Expiry::Idle));
        assert_eq!(expiry(LIMITS, t0, at(250), at(300)), None);
        assert_eq!(expiry(LIMITS, t0, at(300), at(301)), Some(Expiry::Lifetime));
        // Both passed: the lifetime is what is said.
        assert_eq!(expiry(LIMITS, t0, t0, at(400)), Some(Expiry::Lifetime));
        // A clock reading before the use (another thread's) is no expiry.
        assert_eq!(expiry(LIMITS, at(10), at(10), t0), None);
    }

    #[test]
    fn a_session_used_in_time_lives_on_an_idle_one_ends_and_is_forgotten() {
        let (_dir, tokens) = carol();
        let sessions = Sessions::new(LIMITS);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let id = sessions
            .create(&tokens, "tok-carol-0123456789", t0)
            .expect("signed in")
            .1;
        // Each use within the idle timeout renews it, past the first
        // idle deadline.
        for s in [50, 100, 150] {
            let caller = sessions.caller(&tokens, &id, at(s)).expect("alive");
            assert_eq!(caller.actor.to_string(), "human:carol");
        }
        let err = sessions.caller(&tokens, &id, at(211)).expect_err("idle");
        assert!(matches!(err, AuthError::Expired(Expiry::Idle)), "{err:?}");
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        // Forgotten: the next use is an unknown session.
        assert!(matches!(
            sessions.caller(&tokens, &id, at(212)),
            Err(AuthError::NoSession)
        ));
    }

    #[test]
    fn a_session_ends_at_its_lifetime_however_used_and_sign_in_sweeps_the_dead() {
        let (_dir, tokens) = carol();
        let sessions = Sessions::new(LIMITS);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let id = sessions
            .create(&tokens, "tok-carol-0123456789", t0)
            .expect("signed in")
            .1;
        for s in (30..=300).step_by(30) {
            sessions.caller(&tokens, &id, at(s)).expect("alive");
        }
        assert!(matches!(
            sessions.caller(&tokens, &id, at(301)),
            Err(AuthError::Expired(Expiry::Lifetime))
        ));
        // An idle session nobody uses again goes at the next sign-in.
        let idle = sessions
            .create(&tokens, "tok-carol-0123456789", at(400))
            .expect("signed in")
            .1;
        let fresh = sessions
            .create(&tokens, "tok-carol-0123456789", at(461))
            .expect("signed in")
            .1;
        let live = sessions.lock();
        assert!(!live.contains_key(&idle) && live.contains_key(&fresh));
        assert_eq!(live.len(), 1);
    }

    #[test]
    fn session_ids_are_random_and_cookies_are_strict() {
        let a = random_hex().expect("random");
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_hex().expect("random"));
        let c = session_cookie("x", false);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && !c.contains("Secure"));
        assert!(session_cookie("x", true).ends_with("; Secure"));
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
