//! The governed operations: one module per group of operations
//! (proposals, evidence, claims, transactions, …), each owning its request
//! and result types. A request type is the operation: it names its tool,
//! its callers and its result ([`Request`]), and runs in one store
//! transaction. The typed [`Session`](crate::Session) runs
//! requests; the JSON [`registry`](crate::registry) decodes them from JSON
//! and runs them through the session.
//!
//! Each tool has a name, a description and JSON Schemas for its arguments
//! (`additionalProperties: false`) and its result, derived from the very
//! types that decode and encode them. Decoding is strict: an unknown key, a
//! wrong type, a bad enum value, a blank string (after trimming) or an
//! oversize value is `invalid_argument` naming the field path.
//!
//! A call runs in one SQL transaction: a mutating tool's changes and its
//! event commit together or not at all. Mutating tools take an optional
//! `idempotency_key`; the result is stored with it, so a replay returns the
//! same result, and the same key with other arguments is
//! `idempotency_conflict`. Keys are scoped to the actor.

use crate::actor::{Actor, ActorKind};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::id::Id;
use crate::store::sql::Tx;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// [`Request::execute`] of a store tool: [`run_tool`].
macro_rules! store_tool {
    () => {
        fn execute(
            self,
            engine: &crate::engine::Engine,
            actor: &crate::actor::Actor,
        ) -> Result<Self::Output, crate::operations::ToolError> {
            crate::operations::run_tool::<Self>(engine, actor, self)
        }
    };
}

/// `Tool::key` for a tool whose arguments carry `idempotency_key`.
macro_rules! keyed {
    () => {
        fn key(args: &Self) -> Option<&crate::id::Id> {
            args.idempotency_key.as_ref()
        }
    };
}

/// `Tool::key` for a read-only tool.
macro_rules! unkeyed {
    () => {
        fn key(_: &Self) -> Option<&crate::id::Id> {
            None
        }
    };
}

/// A tool with nothing to prepare outside its transaction.
macro_rules! no_prep {
    () => {
        type Prep = ();

        fn prepare(
            _: &crate::engine::Engine,
            _: &crate::actor::Actor,
            _: &Self,
        ) -> Result<(), crate::operations::ToolError> {
            Ok(())
        }
    };
}

pub mod args;
mod auth;
pub mod claims;
pub mod details;
#[cfg(feature = "git")]
mod eol;
/// A build without the `git` feature reads no line-ending rule (libgit2
/// reads them): a patch that does not apply is reported as it is.
#[cfg(not(feature = "git"))]
mod eol {
    /// `error`, as it is.
    pub(crate) fn explain(_root: &std::path::Path, error: super::ToolError) -> super::ToolError {
        error
    }
}
mod error;
pub mod evidence;
pub(crate) mod flights;
pub mod inbox;
pub mod landing;
pub mod log;
pub mod next;
pub mod policies;
pub mod proposals;
pub mod provenance;
pub mod queue;
pub mod rebase;
pub mod records;
pub mod revert;
pub mod revert_agent;
pub mod review;
pub mod setup;
pub mod transactions;
pub mod validate;
pub mod verify;
mod wait;
pub mod workspace;

pub use details::Details;
pub use error::ToolError;

/// What one tool call can see: the engine, the open SQL transaction, the
/// actor and the time the call started.
pub(crate) struct Cx<'a> {
    pub engine: &'a Engine,
    pub tx: &'a Tx<'a>,
    pub actor: &'a Actor,
    pub now: Timestamp,
}

impl Cx<'_> {
    /// A new id with this prefix.
    pub(crate) fn new_id(&self, prefix: &str) -> Id {
        self.engine.ids().next(prefix, self.now.0)
    }

    /// Record a state change in this call's transaction: `data` is the
    /// change's kind and its data.
    pub(crate) fn event(
        &self,
        subject: &str,
        proposal_id: Option<&str>,
        data: impl Into<crate::model::EventData>,
    ) -> Result<i64, ToolError> {
        Ok(crate::store::append_event(
            self.tx,
            &crate::store::NewEvent {
                actor: self.actor,
                subject,
                proposal_id,
                data: data.into(),
                at: self.now,
            },
        )?)
    }
}

/// A tool that runs in one store transaction (every tool but the
/// journaled `patch.apply` and `transaction.rollback`): the request type
/// is the tool. `prepare` runs before the transaction (it may read the
/// workspace, which can be slow, but writes nothing); `run` runs inside it.
pub(crate) trait Tool: Request {
    type Prep;

    /// Whether a read-only tool reads workspace files as well as the
    /// store. Such a call is one consistent view: it is repeated until no
    /// apply or rollback journaled or was writing files while it ran (see
    /// [`consistent_read`]), so files and rows are of one moment.
    const READS_FILES: bool = false;

    /// Whether `out` was decided from the store alone (no file was read,
    /// e.g. a proposal found `applying`), so that it stands whatever an
    /// apply did meanwhile.
    fn store_only(_out: &Self::Output) -> bool {
        false
    }

    /// The call's idempotency key, for mutating tools.
    fn key(args: &Self) -> Option<&Id>;

    /// Work done outside the transaction (reading the workspace).
    fn prepare(engine: &Engine, actor: &Actor, args: &Self) -> Result<Self::Prep, ToolError>;

    /// The call itself, inside the transaction.
    fn run(cx: &Cx<'_>, args: Self, prep: Self::Prep) -> Result<Self::Output, ToolError>;
}

/// One call of the governed workflow, as a type: the request (a tool's
/// arguments) names its tool and its result type. [`Session::run`] runs
/// any request; the JSON registry ([`TOOLS`](crate::registry::TOOLS)) decodes one from JSON,
/// runs it the same way and encodes the result, and its schemas are
/// derived from these very types.
///
/// [`Session::run`]: crate::session::Session::run
pub trait Request: Serialize + DeserializeOwned + JsonSchema {
    /// The tool's name on the JSON surface (`proposal.create`).
    const TOOL: &'static str;
    /// What it does, for people and for agents choosing a tool.
    const DESCRIPTION: &'static str;
    /// Whether it changes state (and so takes an idempotency key).
    const MUTATES: bool;
    /// The kinds of actor that may call it; any other is `forbidden`
    /// before the request runs (finer checks, such as "only the author",
    /// run inside the tool). Front ends list a tool only to these kinds.
    const CALLERS: &'static [ActorKind] = &ActorKind::ALL;
    /// Whether calling it again with the same arguments has no further
    /// effect (every read; a mutation whose repeat is a no-op or a refusal).
    const IDEMPOTENT: bool = !Self::MUTATES;
    /// Whether it may overwrite or retire state rather than only add to it
    /// (writing files, withdrawing, releasing, replacing).
    const DESTRUCTIVE: bool = false;
    /// Whether it may wait on other actors (a long poll, a claim wait)
    /// rather than return as soon as its own work is done.
    const WAITS: bool = false;
    /// What it returns.
    type Output: Serialize + DeserializeOwned + JsonSchema;

    /// Run the request as `actor` (decoded and checked already).
    #[doc(hidden)]
    fn execute(self, engine: &Engine, actor: &Actor) -> Result<Self::Output, ToolError>;
}

/// `forbidden` unless `actor`'s kind is one of the tool's
/// [`Request::CALLERS`]. Every front end (the JSON registry,
/// [`Session::run`](crate::session::Session::run)) checks this first,
/// before the arguments are decoded.
pub(crate) fn authorize<R: Request>(actor: &Actor) -> Result<(), ToolError> {
    auth::require_kind(actor, R::CALLERS, R::TOOL)
}

/// Decode arguments strictly, naming the field of the first problem.
pub(crate) fn decode<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::invalid_argument(
            "",
            "the arguments must be a JSON object",
        ));
    }
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let reason = e.inner().to_string();
        // A missing field is reported at its parent; name the field itself.
        let field = match reason
            .strip_prefix("missing field `")
            .and_then(|r| r.strip_suffix('`'))
        {
            Some(name) if path == "." => name.to_owned(),
            Some(name) => format!("{path}.{name}"),
            None if path == "." => String::new(),
            None => path,
        };
        ToolError::invalid_argument(&field, reason)
    })
}

/// The digest a replayed call must match: the tool and its decoded
/// arguments (keys sorted), without the idempotency key itself.
pub(crate) fn request_digest<A: Serialize>(tool: &str, args: &A) -> String {
    use sha2::{Digest as _, Sha256};
    let mut value = serde_json::to_value(args).expect("arguments serialize");
    if let Value::Object(map) = &mut value {
        map.remove("idempotency_key");
    }
    let canonical = crate::json::canonical(&value);
    let hash = Sha256::digest(format!("{tool}\n{canonical}").as_bytes());
    format!("sha256:{}", crate::hex::encode(&hash))
}

/// The stored result of an earlier call with this key, if any.
pub(crate) fn replay<O: DeserializeOwned>(
    tx: &Tx<'_>,
    actor: &Actor,
    key: &Id,
    tool: &str,
    request: &str,
) -> Result<Option<O>, ToolError> {
    let Some(crate::store::idempotency::Remembered {
        tool: stored_tool,
        request_digest: stored_request,
        result,
    }) = crate::store::idempotency::get(tx, actor, key.as_str())?
    else {
        return Ok(None);
    };
    if stored_tool != tool || stored_request != request {
        return Err(ToolError::new(
            format!(
                "idempotency key {key} was used for another call ({stored_tool} with other arguments)"
            ),
            details::IdempotencyConflictDetails {
                idempotency_key: key.to_string(),
                tool: stored_tool,
            },
        ));
    }
    let value = serde_json::from_str(&result).map_err(|e| {
        ToolError::new(
            format!("stored result for idempotency key {key} is not a {tool} result: {e}"),
            details::DatabaseDetails::default(),
        )
    })?;
    Ok(Some(value))
}

/// Run a store tool: read-only tools in one read transaction (one
/// consistent view with the files when they read files), mutating ones in
/// one write transaction with their idempotency row.
pub(crate) fn run_tool<T: Tool>(
    engine: &Engine,
    actor: &Actor,
    args: T,
) -> Result<T::Output, ToolError> {
    let store = engine.store();
    if !T::MUTATES && T::READS_FILES {
        return consistent_read(engine, |mark| {
            let prep = T::prepare(engine, actor, &args)?;
            store.read(|tx| {
                *mark = ApplyMark::read(tx)?;
                let cx = Cx {
                    engine,
                    tx,
                    actor,
                    now: engine.now(),
                };
                let out = T::run(&cx, decode_again::<T>(&args)?, prep)?;
                let settled = T::store_only(&out);
                Ok((out, settled))
            })
        });
    }
    if !T::MUTATES {
        let prep = T::prepare(engine, actor, &args)?;
        return read_cx(engine, actor, |cx| T::run(cx, args, prep));
    }
    let key = T::key(&args).cloned();
    let request = request_digest(T::TOOL, &args);
    if let Some(key) = &key {
        if let Some(v) = store.read(|tx| replay(tx, actor, key, T::TOOL, &request))? {
            return Ok(v);
        }
    }
    let prep = T::prepare(engine, actor, &args)?;
    write_prepared(engine, actor, args, prep, key.as_ref(), &request)
}

/// `f` in a read transaction of the store, acting as `actor` now.
pub(crate) fn read_cx<T>(
    engine: &Engine,
    actor: &Actor,
    f: impl FnOnce(&Cx<'_>) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    engine.store().read(|tx| {
        let cx = Cx {
            engine,
            tx,
            actor,
            now: engine.now(),
        };
        f(&cx)
    })
}

/// `f` in a write transaction of the store, acting as `actor` now: one
/// step of a call made of several (a mutating tool's, `queue.run`'s).
pub(crate) fn write_cx<T>(
    engine: &Engine,
    actor: &Actor,
    f: impl FnOnce(&Cx<'_>) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    engine.store().write(|tx| {
        f(&Cx {
            engine,
            tx,
            actor,
            now: engine.now(),
        })
    })
}

/// `f` in a read transaction of the store that also reads workspace
/// files, acting as `actor` now: repeated until files and rows are of one
/// moment, as a `READS_FILES` tool's call is (see [`consistent_read`]).
pub(crate) fn read_files_cx<T>(
    engine: &Engine,
    actor: &Actor,
    mut f: impl FnMut(&Cx<'_>) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    consistent_read(engine, |mark| {
        engine.store().read(|tx| {
            *mark = ApplyMark::read(tx)?;
            let cx = Cx {
                engine,
                tx,
                actor,
                now: engine.now(),
            };
            Ok((f(&cx)?, false))
        })
    })
}

/// The write transaction of a mutating tool: the idempotency re-check,
/// `run`, and the stored result.
fn write_prepared<T: Tool>(
    engine: &Engine,
    actor: &Actor,
    args: T,
    prep: T::Prep,
    key: Option<&Id>,
    request: &str,
) -> Result<T::Output, ToolError> {
    write_cx(engine, actor, |cx| {
        if let Some(key) = key {
            // Another caller may have used the key since the check above.
            if let Some(v) = replay(cx.tx, actor, key, T::TOOL, request)? {
                return Ok(v);
            }
        }
        // Claims that lapsed since the last write are noted first (and
        // only if this call commits: a refusal rolls it back with the rest).
        claims::note_expired_claims(cx.tx, cx.now)?;
        let out = T::run(cx, args, prep)?;
        if let Some(key) = key {
            remember(cx, key, T::TOOL, request, &out)?;
        }
        Ok(out)
    })
}

/// The arguments once more, for another attempt of a [`consistent_read`]
/// (`run` consumes them).
fn decode_again<T: Tool>(args: &T) -> Result<T, ToolError> {
    decode(serde_json::to_value(args).expect("arguments serialize"))
}

/// What the store says about applies at one moment: the newest
/// transaction, and how many are `applying`. Between two marks with the
/// same newest transaction and the same count, no apply journaled and none
/// finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct ApplyMark {
    newest: i64,
    applying: i64,
}

impl ApplyMark {
    fn read(tx: &Tx<'_>) -> Result<ApplyMark, ToolError> {
        let (newest, applying) = crate::store::transactions::apply_mark(tx)?;
        Ok(ApplyMark { newest, applying })
    }
}

/// Run `attempt` (a read transaction that also reads files, recording the
/// [`ApplyMark`] its snapshot saw, and saying whether its result came from
/// the store alone) until its result is one consistent view: no apply was
/// writing files when it began, and none journaled while it ran. Waits at
/// most the engine's `busy_timeout`, then `busy`.
///
/// A transaction left `applying` by a crashed applier (nobody holds the
/// apply lock) writes nothing and does not hold a read up.
fn consistent_read<O>(
    engine: &Engine,
    mut attempt: impl FnMut(&mut ApplyMark) -> Result<(O, bool), ToolError>,
) -> Result<O, ToolError> {
    let start = std::time::Instant::now();
    let timeout = engine.options().busy_timeout;
    loop {
        let mut seen = ApplyMark::default();
        let (out, store_only) = attempt(&mut seen)?;
        if store_only {
            return Ok(out);
        }
        // Same mark after: nothing journaled or finished meanwhile; and a
        // transaction still `applying` with nobody holding the apply lock
        // was left by a crashed applier and writes nothing.
        let unchanged = engine.store().read(ApplyMark::read)? == seen;
        if unchanged
            && (seen.applying == 0
                || crate::apply::ApplyLock::try_acquire(engine.root())?.is_some())
        {
            return Ok(out);
        }
        if start.elapsed() >= timeout {
            return Err(ToolError::new(
                format!(
                    "applies kept changing the files for more than {} ms while this read ran; retry",
                    timeout.as_millis()
                ),
                details::BusyDetails::default(),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Store a mutating call's result under its idempotency key.
pub(crate) fn remember<O: Serialize>(
    cx: &Cx<'_>,
    key: &Id,
    tool: &str,
    request: &str,
    out: &O,
) -> Result<(), ToolError> {
    let out = serde_json::to_string(out).expect("results serialize");
    crate::store::idempotency::insert(cx.tx, cx.actor, key.as_str(), tool, request, &out, cx.now)?;
    Ok(())
}
