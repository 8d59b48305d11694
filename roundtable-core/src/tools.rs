//! The tool surface: one registry of tools every front end (Rust, C,
//! Python, CLI) calls through [`Engine::call`](crate::Engine::call).
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

use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::id::Id;
use crate::ErrorCode;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// `Tool::key` for a tool whose arguments carry `idempotency_key`.
macro_rules! keyed {
    () => {
        fn key(args: &Self::Args) -> Option<&crate::id::Id> {
            args.idempotency_key.as_ref()
        }
    };
}

/// `Tool::key` for a read-only tool.
macro_rules! unkeyed {
    () => {
        fn key(_: &Self::Args) -> Option<&crate::id::Id> {
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
            _: &Self::Args,
        ) -> Result<(), crate::tools::ToolError> {
            Ok(())
        }
    };
}

pub mod args;
mod auth;
pub mod claims;
mod error;
pub mod evidence;
pub mod log;
pub mod policies;
pub mod proposals;
pub mod records;
pub mod review;
pub mod setup;
pub mod transactions;
pub mod validate;

pub use error::ToolError;

/// What one tool call can see: the engine, the open SQL transaction, the
/// actor and the time the call started.
pub(crate) struct Cx<'a> {
    pub engine: &'a Engine,
    pub tx: &'a rusqlite::Transaction<'a>,
    pub actor: &'a Actor,
    pub now: Timestamp,
}

impl Cx<'_> {
    /// A new id with this prefix.
    pub(crate) fn new_id(&self, prefix: &str) -> Id {
        self.engine.ids().next(prefix, self.now.0)
    }

    /// Record a state change in this call's transaction.
    pub(crate) fn event(
        &self,
        kind: &str,
        subject: &str,
        proposal_id: Option<&str>,
        data: Value,
    ) -> Result<i64, ToolError> {
        Ok(crate::store::append_event(
            self.tx,
            &crate::store::NewEvent {
                kind,
                actor: self.actor,
                subject,
                proposal_id,
                data,
                at: self.now,
            },
        )?)
    }
}

/// One tool. `prepare` runs before the transaction (it may read the
/// workspace, which can be slow, but writes nothing); `run` runs inside it.
pub(crate) trait Tool {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    /// Whether the tool changes state (and so takes an idempotency key and
    /// a write transaction).
    const MUTATES: bool;
    type Args: DeserializeOwned + Serialize + JsonSchema;
    type Output: Serialize + JsonSchema;
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
    fn key(args: &Self::Args) -> Option<&Id>;

    /// Work done outside the transaction (reading the workspace).
    fn prepare(engine: &Engine, actor: &Actor, args: &Self::Args) -> Result<Self::Prep, ToolError>;

    /// The call itself, inside the transaction.
    fn run(cx: &Cx<'_>, args: Self::Args, prep: Self::Prep) -> Result<Self::Output, ToolError>;
}

/// A tool as the registry lists it.
#[derive(Clone, Copy)]
pub struct ToolSpec {
    /// The tool's name (`proposal.create`).
    pub name: &'static str,
    /// What it does, for people and for agents choosing a tool.
    pub description: &'static str,
    /// Whether it changes state.
    pub mutates: bool,
    input_schema: fn() -> Value,
    output_schema: fn() -> Value,
    call: fn(&Engine, Value, &Actor) -> Result<Value, ToolError>,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .finish()
    }
}

impl ToolSpec {
    /// The JSON Schema of the arguments.
    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }

    /// The JSON Schema of the result.
    pub fn output_schema(&self) -> Value {
        (self.output_schema)()
    }

    pub(crate) fn invoke(
        &self,
        engine: &Engine,
        args: Value,
        actor: &Actor,
    ) -> Result<Value, ToolError> {
        (self.call)(engine, args, actor)
    }
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a schema serializes")
}

const fn spec<T: Tool>() -> ToolSpec {
    ToolSpec {
        name: T::NAME,
        description: T::DESCRIPTION,
        mutates: T::MUTATES,
        input_schema: schema::<T::Args>,
        output_schema: schema::<T::Output>,
        call: call::<T>,
    }
}

/// A mutating tool whose call runs its own transactions (the transaction
/// engine: the apply lock, the journal, the files, the outcome).
const fn custom<A: JsonSchema, O: JsonSchema>(
    name: &'static str,
    description: &'static str,
    call: fn(&Engine, Value, &Actor) -> Result<Value, ToolError>,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        mutates: true,
        input_schema: schema::<A>,
        output_schema: schema::<O>,
        call,
    }
}

/// Every tool, in a stable order.
pub static TOOLS: &[ToolSpec] = &[
    spec::<setup::AgentRegister>(),
    spec::<setup::TaskCreate>(),
    spec::<proposals::Create>(),
    spec::<proposals::AttachPatch>(),
    spec::<proposals::Get>(),
    spec::<proposals::List>(),
    spec::<review::ProposalFiles>(),
    spec::<review::ProposalDiff>(),
    spec::<review::ProposalSymbols>(),
    spec::<review::ProposalCompare>(),
    spec::<review::ProposalStatusTool>(),
    spec::<proposals::RequestReview>(),
    spec::<proposals::Withdraw>(),
    spec::<proposals::Reject>(),
    spec::<evidence::VoteCast>(),
    spec::<evidence::VoteList>(),
    spec::<evidence::DecisionRecord>(),
    spec::<evidence::SecurityReview>(),
    spec::<evidence::HumanRequestApproval>(),
    spec::<evidence::HumanApprove>(),
    spec::<evidence::TestRecord>(),
    spec::<claims::Acquire>(),
    spec::<claims::Renew>(),
    spec::<claims::Release>(),
    spec::<claims::List>(),
    spec::<validate::Validate>(),
    spec::<policies::Set>(),
    spec::<policies::Activate>(),
    spec::<policies::Get>(),
    custom::<transactions::ApplyArgs, transactions::Applied>(
        "patch.apply",
        transactions::APPLY,
        transactions::apply_call,
    ),
    custom::<transactions::RollbackArgs, transactions::RolledBack>(
        "transaction.rollback",
        transactions::ROLLBACK,
        transactions::rollback_call,
    ),
    spec::<transactions::Get>(),
    spec::<transactions::List>(),
    spec::<transactions::PhasesList>(),
    spec::<transactions::RecoveryCheck>(),
    spec::<log::EventsList>(),
    spec::<log::EventsVerify>(),
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
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
pub(crate) fn replay(
    tx: &rusqlite::Transaction<'_>,
    actor: &Actor,
    key: &Id,
    tool: &str,
    request: &str,
) -> Result<Option<Value>, ToolError> {
    use rusqlite::OptionalExtension as _;
    let row: Option<(String, String, String)> = tx
        .query_row(
            "SELECT tool, request_digest, result FROM idempotency
             WHERE actor_kind = ?1 AND actor_id = ?2 AND key = ?3",
            rusqlite::params![actor.kind.as_str(), actor.id.as_str(), key.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((stored_tool, stored_request, result)) = row else {
        return Ok(None);
    };
    if stored_tool != tool || stored_request != request {
        return Err(ToolError::new(
            ErrorCode::IdempotencyConflict,
            format!(
                "idempotency key {key} was used for another call ({stored_tool} with other arguments)"
            ),
            json!({"idempotency_key": key, "tool": stored_tool}),
        ));
    }
    let value = serde_json::from_str(&result).map_err(|e| {
        ToolError::new(
            ErrorCode::Database,
            format!("stored result for idempotency key {key} is not JSON: {e}"),
            json!({}),
        )
    })?;
    Ok(Some(value))
}

fn call<T: Tool>(engine: &Engine, args: Value, actor: &Actor) -> Result<Value, ToolError> {
    let args: T::Args = decode(args)?;
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
                Ok((
                    serde_json::to_value(out).expect("results serialize"),
                    settled,
                ))
            })
        });
    }
    if !T::MUTATES {
        let prep = T::prepare(engine, actor, &args)?;
        return store.read(|tx| {
            let cx = Cx {
                engine,
                tx,
                actor,
                now: engine.now(),
            };
            let out = T::run(&cx, args, prep)?;
            Ok(serde_json::to_value(out).expect("results serialize"))
        });
    }
    let key = T::key(&args).cloned();
    let request = request_digest(T::NAME, &args);
    if let Some(key) = &key {
        if let Some(v) = store.read(|tx| replay(tx, actor, key, T::NAME, &request))? {
            return Ok(v);
        }
    }
    let prep = T::prepare(engine, actor, &args)?;
    store.write(|tx| {
        if let Some(key) = &key {
            // Another caller may have used the key since the check above.
            if let Some(v) = replay(tx, actor, key, T::NAME, &request)? {
                return Ok(v);
            }
        }
        let cx = Cx {
            engine,
            tx,
            actor,
            now: engine.now(),
        };
        let out = serde_json::to_value(T::run(&cx, args, prep)?).expect("results serialize");
        if let Some(key) = &key {
            remember(&cx, key, T::NAME, &request, &out)?;
        }
        Ok(out)
    })
}

/// The arguments once more, for another attempt of a [`consistent_read`]
/// (`run` consumes them).
fn decode_again<T: Tool>(args: &T::Args) -> Result<T::Args, ToolError> {
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
    fn read(tx: &rusqlite::Transaction<'_>) -> Result<ApplyMark, ToolError> {
        let (newest, applying): (i64, i64) = tx.query_row(
            "SELECT coalesce(max(seq), 0), count(*) FILTER (WHERE status = 'applying') FROM transactions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
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
fn consistent_read(
    engine: &Engine,
    mut attempt: impl FnMut(&mut ApplyMark) -> Result<(Value, bool), ToolError>,
) -> Result<Value, ToolError> {
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
            && (seen.applying == 0 || crate::apply::ApplyLock::try_acquire(engine)?.is_some())
        {
            return Ok(out);
        }
        if start.elapsed() >= timeout {
            return Err(ToolError::new(
                ErrorCode::Busy,
                format!(
                    "applies kept changing the files for more than {} ms while this read ran; retry",
                    timeout.as_millis()
                ),
                json!({}),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Store a mutating call's result under its idempotency key.
pub(crate) fn remember(
    cx: &Cx<'_>,
    key: &Id,
    tool: &str,
    request: &str,
    out: &Value,
) -> Result<(), ToolError> {
    cx.tx.execute(
        "INSERT INTO idempotency (actor_kind, actor_id, key, tool, request_digest, result, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        rusqlite::params![
            cx.actor.kind.as_str(),
            cx.actor.id.as_str(),
            key.as_str(),
            tool,
            request,
            out.to_string(),
            cx.now.0
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_unique_and_schemas_are_closed() {
        let mut names = std::collections::HashSet::new();
        for t in TOOLS {
            assert!(names.insert(t.name), "{} twice", t.name);
            let input = t.input_schema();
            assert_eq!(input["type"], "object", "{}", t.name);
            assert_eq!(input["additionalProperties"], false, "{}", t.name);
            let has_key = input["properties"].get("idempotency_key").is_some();
            assert_eq!(
                has_key, t.mutates,
                "{}: idempotency_key iff mutating",
                t.name
            );
            assert!(!t.description.is_empty());
            assert_eq!(t.output_schema()["type"], "object", "{}", t.name);
        }
    }
}
