//! Claims (leases): acquire, renew, release, list.
//!
//! A claim records its resource's digest at acquisition and a fencing token
//! that only grows (one counter per store, never reused). Expiry is computed
//! from the engine's clock whenever a claim is read: no background job.
//! The first write transaction after a claim's lease ran out (any mutating
//! tool's, a waiting `claim.acquire`'s retry at the expiry) also notes it
//! released, with a `claim.expired` event (`note_expired_claims`); while
//! nothing writes, an `events.wait` does at the expiry
//! (`note_lapsed_claims`): a waiter on the log learns of it without
//! anyone calling anything.

use super::args::{Cursor, Limit, ResourceId, WaitMs};
use super::details::{
    BusyDetails, ConflictDetails, DatabaseDetails, ForbiddenDetails, ForbiddenReason,
    IllegalTransitionDetails, RecordStatus, UnknownSymbolDetails,
};
use super::log::MAX_WAIT_MS;
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::claims::{overlaps, ClaimType, LineSpan, Scope};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::id::Id;
use crate::resource::Resource;
use crate::state::CacheMode;
use crate::store;
use crate::store::sql::Tx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The actor of what the engine does on its own (noting expired claims).
fn engine_actor() -> Actor {
    Actor::orchestrator(Id::new("roundtable-engine").expect("a valid id"))
}

/// Note, in write transaction `tx`, every claim whose lease ran out by
/// `now` and that no write noted yet: released at its expiry, with a
/// `claim.expired` event by the engine. Costs one index range read when
/// none lapsed.
pub(crate) fn note_expired_claims(tx: &Tx<'_>, now: Timestamp) -> Result<(), ToolError> {
    let lapsed = store::claims::expired_unnoted(tx, now)?;
    if lapsed.is_empty() {
        return Ok(());
    }
    let actor = engine_actor();
    for claim in lapsed {
        store::claims::note_expired(tx, &claim.id)?;
        store::append_event(
            tx,
            &store::NewEvent {
                actor: &actor,
                subject: &claim.id,
                proposal_id: None,
                data: crate::model::ClaimExpiredData {
                    agent_id: claim.agent_id,
                    resource_id: claim.resource_id,
                    claim_type: claim.claim_type,
                    token: claim.token,
                    expires_at: claim.expires_at,
                }
                .into(),
                at: now,
            },
        )?;
    }
    Ok(())
}

/// For a waiter on the log (`events.wait`): note the claims that lapsed
/// (in a write transaction of their own, whose `claim.expired` events
/// wake the waiters they concern), and how long until the next live claim
/// lapses, by the engine's clock (`None`: no live claim).
pub(crate) fn note_lapsed_claims(
    engine: &Engine,
) -> Result<Option<std::time::Duration>, ToolError> {
    let store = engine.store();
    let next = store.read(|tx| Ok::<_, ToolError>(store::claims::next_expiry(tx)?))?;
    let Some(mut next) = next else {
        return Ok(None);
    };
    if next <= engine.now() {
        store.write(|tx| note_expired_claims(tx, engine.now()))?;
        match store.read(|tx| Ok::<_, ToolError>(store::claims::next_expiry(tx)?))? {
            Some(at) => next = at,
            None => return Ok(None),
        }
    }
    let ms = next.0.saturating_sub(engine.now().0).max(0);
    Ok(Some(std::time::Duration::from_millis(
        u64::try_from(ms).unwrap_or(0) + 1,
    )))
}

/// A claim's digest when its file does not exist (a claim on a file to be
/// created).
pub const ABSENT: &str = "absent";

pub use crate::model::{Claim, ClaimStatus};

/// What a tool reads from a claim's record.
pub(crate) trait ClaimRecord: Sized {
    /// The claim's resource and span.
    fn scope(&self) -> Result<Scope, ToolError>;
    /// The claim named `id`, or `not_found`.
    fn load(cx: &Cx<'_>, id: &str) -> Result<Self, ToolError>;
}

impl ClaimRecord for Claim {
    /// The claim's resource and span.
    fn scope(&self) -> Result<Scope, ToolError> {
        let resource: Resource =
            self.resource_id
                .parse()
                .map_err(|e: crate::resource::ResourceError| {
                    ToolError::new(
                        format!("stored claim {} has a bad resource id: {e}", self.id),
                        DatabaseDetails {
                            claim_id: Some(self.id.clone()),
                            ..DatabaseDetails::default()
                        },
                    )
                })?;
        Ok(Scope {
            resource,
            span: self.span,
        })
    }

    fn load(cx: &Cx<'_>, id: &str) -> Result<Claim, ToolError> {
        store::claims::claim(cx.tx, id, cx.now)?.ok_or_else(|| ToolError::not_found("claim", id))
    }
}

/// Every active write claim (optionally only one agent's), as of `now`.
pub(crate) fn live_write_claims(
    tx: &Tx<'_>,
    agent: Option<&str>,
    now: Timestamp,
) -> Result<Vec<Claim>, ToolError> {
    Ok(store::claims::live_write_claims(tx, agent, now)?)
}

/// A resource's state now: its digest and, for a symbol, its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceState {
    pub digest: String,
    pub span: Option<LineSpan>,
}

/// Read `resource` from the workspace (only what it names); a directory's
/// digest leaves out what git's rules and `ignore` (the policy's
/// `[workspace] ignore`) ignore.
pub(crate) fn resource_state(
    engine: &Engine,
    ws: &crate::workspace::Workspace,
    resource: &Resource,
    ignore: Option<&crate::policy::IgnoreList>,
) -> Result<ResourceState, ToolError> {
    Ok(resource_state_indexed(engine, ws, resource, ignore, CacheMode::ReadOnly)?.0)
}

/// [`resource_state`], and for a symbol the index of the content its span
/// was resolved in (to re-resolve other claims on that file with the same
/// read); `cache` says whether a whole-tree directory's walk may bring the
/// stat cache up to date.
fn resource_state_indexed(
    engine: &Engine,
    ws: &crate::workspace::Workspace,
    resource: &Resource,
    ignore: Option<&crate::policy::IgnoreList>,
    cache: CacheMode,
) -> Result<(ResourceState, Option<Vec<crate::symbols::Symbol>>), ToolError> {
    match resource {
        Resource::File(path) => Ok((
            ResourceState {
                digest: match ws.meta(path)? {
                    Some(meta) => meta.digest.to_string(),
                    None => ABSENT.to_owned(),
                },
                span: None,
            },
            None,
        )),
        Resource::Directory(dir) => Ok((
            ResourceState {
                // A bare repository's directory is a git tree, whose id
                // already names its content.
                digest: match ws.bare_subtree(dir.as_ref())? {
                    Some(tree) => format!("git-tree:{}", tree.as_deref().unwrap_or("absent")),
                    None => crate::state::subtree_state_with(
                        engine.root(),
                        dir.as_ref(),
                        ignore,
                        cache,
                    )?
                    .to_string(),
                },
                span: None,
            },
            None,
        )),
        Resource::Symbol { path, name } => {
            let file = ws.read(path)?.ok_or_else(|| {
                ToolError::new(
                    format!("{path}: the file does not exist, so it has no symbol {name}"),
                    UnknownSymbolDetails {
                        path: path.to_string(),
                        symbol: Some(name.to_string()),
                        ..UnknownSymbolDetails::default()
                    },
                )
            })?;
            let index = crate::symbols::index_path(path, &file.data)?;
            let symbol = crate::symbols::resolve_in(path, &index, name)?;
            let state = ResourceState {
                digest: crate::Digest::of(&file.data[symbol.start_byte..symbol.end_byte])
                    .to_string(),
                span: Some(LineSpan {
                    start: symbol.start_line,
                    end: symbol.end_line,
                }),
            };
            Ok((state, Some(index)))
        }
    }
}

/// `busy` when a transaction that is still `applying` (its files may be
/// changing right now) touches `resource`. Called inside a write
/// transaction, which keeps any other apply from journaling — and so from
/// touching a file — until it ends.
fn require_no_apply_touching(cx: &Cx<'_>, resource: &Resource) -> Result<(), ToolError> {
    let rows = store::transactions::applying_files(cx.tx)?;
    let claimed = Scope {
        resource: resource.clone(),
        span: None,
    };
    for store::transactions::ApplyingFile {
        transaction_id: transaction,
        proposal_id: proposal,
        path,
    } in rows
    {
        // A journaled path that does not parse cannot be compared: assume
        // it is the claimed one.
        let touches = path.parse::<crate::RepoPath>().map_or(true, |p| {
            overlaps(
                &claimed,
                &Scope {
                    resource: Resource::File(p),
                    span: None,
                },
            )
        });
        if touches {
            return Err(ToolError::new(
                format!(
                    "transaction {transaction} (proposal {proposal}) is applying {path}; claim {resource} when it has finished"
                ),
                BusyDetails {
                    transaction_id: Some(transaction),
                    proposal_id: Some(proposal),
                    path: Some(path),
                    ..BusyDetails::default()
                },
            ));
        }
    }
    Ok(())
}

/// Arguments of `claim.acquire`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AcquireArgs")]
pub struct AcquireClaim {
    /// The resource to claim (`file:`, `directory:`, `symbol:`).
    pub resource_id: ResourceId,
    /// `write` (exclusive among agents), `read` or `review`.
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    /// How long the lease lasts, in seconds (1 to 604800, a week).
    pub ttl_s: Limit<604_800>,
    /// The task the claim is for.
    pub task_id: Option<Id>,
    /// When another agent's live claim conflicts, wait up to this many
    /// milliseconds (0 to 60000) for it to be released or to expire,
    /// first come first served among this engine's waiters, then grant;
    /// still conflicting then: `conflict` as without waiting.
    pub wait_ms: Option<WaitMs<MAX_WAIT_MS>>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of the claim tools that change one claim.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ClaimChanged {
    /// The claim as it is now.
    pub claim: Claim,
}

impl super::Request for AcquireClaim {
    const TOOL: &'static str = "claim.acquire";
    const DESCRIPTION: &'static str = "Claim a resource for a while (an enabled agent). A write claim overlapping another agent's live write claim is refused with conflict naming it: a directory overlaps everything under it, a file its symbols, two symbols of a file when their spans do; with wait_ms it first waits, first come first served, for the conflicting claims to be released or expire. An apply writing the resource is waited out (up to 2 s, with or without wait_ms); busy only when it lasts longer. Re-acquiring one's own live claim (same resource and type) renews it and returns it. Records the resource's digest and a fencing token.";
    const MUTATES: bool = true;
    const WAITS: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = ClaimChanged;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<ClaimChanged, ToolError> {
        match self.wait_ms {
            // Only write claims conflict, so only they wait.
            Some(wait) if wait.0 > 0 && self.claim_type == ClaimType::Write => {
                acquire_waiting(engine, actor, self, wait)
            }
            _ => acquire_after_apply(engine, actor, self),
        }
    }
}

/// The longest a `claim.acquire` waits for an apply that is writing its
/// resource (without `wait_ms`, or for a read or review claim), in
/// milliseconds: an apply's `applying` window is milliseconds; one that
/// lasts longer than this (a stuck or interrupted applier) is answered
/// `busy` naming its transaction.
pub const APPLY_WAIT_MS: u64 = 2_000;

/// `claim.acquire` that, on `busy` (an apply is writing the resource),
/// waits up to [`APPLY_WAIT_MS`] for the apply to finish (woken by its
/// commit) and tries again, as the `wait_ms` path does. A `conflict` is
/// answered at once: waiting for another agent's claim is what `wait_ms`
/// asks for.
fn acquire_after_apply(
    engine: &Engine,
    actor: &Actor,
    args: AcquireClaim,
) -> Result<ClaimChanged, ToolError> {
    use super::wait::Check;
    use crate::store::watch::Interest;
    let first = match super::run_tool(engine, actor, args.clone()) {
        Err(e) if e.code() == crate::ErrorCode::Busy => e,
        done => return done,
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(APPLY_WAIT_MS);
    let mut refusal = first;
    let granted = super::wait::until(engine, deadline, Interest::Any, || {
        match super::run_tool(engine, actor, args.clone()) {
            Ok(out) => Ok(Check::Done(out)),
            Err(e) if e.code() == crate::ErrorCode::Busy => {
                refusal = e;
                Ok(Check::Wait {
                    due: None,
                    head: None,
                })
            }
            Err(e) => Err(e),
        }
    })?;
    granted.ok_or(refusal)
}

/// The waiters for write claims in one engine, in arrival order: a
/// waiter tries to acquire only when no earlier waiter of another agent
/// wants an overlapping resource, so two waiters for one resource are
/// granted first come first served.
///
/// The queue is in-process, not a store table: it needs no schema
/// change, and a waiter that dies takes its place with it (a row would
/// block everyone behind it until its deadline). Waiters in other
/// processes are not ordered against these: they race when the holder
/// releases, as calls without `wait_ms` always do.
#[derive(Debug, Default)]
pub(crate) struct ClaimQueue {
    waiters: std::sync::Mutex<Vec<Waiter>>,
    next: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
struct Waiter {
    ticket: u64,
    agent: String,
    resource: Resource,
}

impl ClaimQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiter>> {
        self.waiters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Join the queue; the slot leaves it (and wakes the others) when
    /// dropped.
    fn enter<'e>(&self, engine: &'e Engine, agent: &str, resource: &Resource) -> Slot<'e> {
        let ticket = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push(Waiter {
            ticket,
            agent: agent.to_owned(),
            resource: resource.clone(),
        });
        Slot { engine, ticket }
    }

    /// How many earlier waiters compete with `ticket`'s.
    fn ahead(&self, ticket: u64) -> usize {
        let waiters = self.lock();
        let Some(me) = waiters.iter().find(|w| w.ticket == ticket) else {
            return 0;
        };
        waiters
            .iter()
            .filter(|w| {
                w.ticket < ticket && w.agent != me.agent && compete(&w.resource, &me.resource)
            })
            .count()
    }
}

/// Whether two waited-for write claims may conflict: as
/// [`overlaps`] without spans, except that two symbols of one file
/// compete only when one names the other or a member of it (their spans
/// are not known until each is tried).
fn compete(a: &Resource, b: &Resource) -> bool {
    match (a, b) {
        (Resource::Symbol { path: p, name: n }, Resource::Symbol { path: q, name: m }) => {
            let within = |x: &str, y: &str| {
                x == y || x.strip_prefix(y).is_some_and(|rest| rest.starts_with('.'))
            };
            p == q && (within(n, m) || within(m, n))
        }
        _ => overlaps(
            &Scope {
                resource: a.clone(),
                span: None,
            },
            &Scope {
                resource: b.clone(),
                span: None,
            },
        ),
    }
}

/// A place in the [`ClaimQueue`].
struct Slot<'e> {
    engine: &'e Engine,
    ticket: u64,
}

impl Slot<'_> {
    fn ahead(&self) -> usize {
        self.engine.extension::<ClaimQueue>().ahead(self.ticket)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.engine
            .extension::<ClaimQueue>()
            .lock()
            .retain(|w| w.ticket != self.ticket);
        // The next in line may try now.
        self.engine.store().notify_claim_waiters();
    }
}

/// `claim.acquire` with `wait_ms`: try when first in line; on `conflict`
/// (or `busy`: an apply is writing the resource) wait for the blocking
/// claim to be released (any commit wakes the waiter; it rereads that one
/// claim, without a write transaction) or to expire (a timed wake at its
/// expiry, by the engine's clock), then try again, until `wait`.
fn acquire_waiting(
    engine: &Engine,
    actor: &Actor,
    args: AcquireClaim,
    wait: WaitMs<MAX_WAIT_MS>,
) -> Result<ClaimChanged, ToolError> {
    use super::wait::Check;
    use crate::store::watch::Interest;
    let deadline = std::time::Instant::now() + wait.duration();
    let slot =
        engine
            .extension::<ClaimQueue>()
            .enter(engine, actor.id.as_str(), &args.resource_id.0);
    let mut refusal: Option<ToolError> = None;
    let mut blocker: Option<String> = None;
    let until_expiry = |claim: &Claim| {
        let ms = claim.expires_at.0.saturating_sub(engine.now().0).max(0);
        std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0) + 1)
    };
    let granted = super::wait::until(engine, deadline, Interest::Any, || {
        let ahead = slot.ahead();
        if ahead > 0 {
            if refusal.is_none() {
                refusal = Some(ToolError::new(
                    format!(
                        "{} is waited for by {ahead} earlier waiter(s) of other agents",
                        args.resource_id.0
                    ),
                    ConflictDetails {
                        resource_id: Some(args.resource_id.0.to_string()),
                        waiters_ahead: Some(ahead as u64),
                        ..ConflictDetails::default()
                    },
                ));
            }
            return Ok(Check::Wait {
                due: None,
                head: None,
            });
        }
        if let Some(id) = &blocker {
            let held = engine
                .store()
                .read(|tx| Ok::<_, ToolError>(store::claims::claim(tx, id, engine.now())?))?;
            if let Some(claim) = held.filter(|c| c.status == ClaimStatus::Active) {
                return Ok(Check::Wait {
                    due: Some(until_expiry(&claim)),
                    head: None,
                });
            }
        }
        match super::run_tool(engine, actor, args.clone()) {
            Ok(out) => Ok(Check::Done(out)),
            Err(e) if e.code() == crate::ErrorCode::Conflict => {
                let holder: Option<Claim> = e
                    .details_as::<ConflictDetails>()
                    .and_then(|d| d.holder)
                    .map(|c| *c);
                blocker = holder.as_ref().map(|c| c.id.clone());
                let due = holder.as_ref().map(until_expiry);
                refusal = Some(e);
                Ok(Check::Wait { due, head: None })
            }
            Err(e) if e.code() == crate::ErrorCode::Busy => {
                refusal = Some(e);
                Ok(Check::Wait {
                    due: None,
                    head: None,
                })
            }
            Err(e) => Err(e),
        }
    })?;
    drop(slot);
    match granted {
        Some(out) => Ok(out),
        None => Err(refusal.unwrap_or_else(|| {
            ToolError::new(
                format!("{} stayed claimed for {} ms", args.resource_id.0, wait.0),
                ConflictDetails {
                    resource_id: Some(args.resource_id.0.to_string()),
                    ..ConflictDetails::default()
                },
            )
        })),
    }
}

impl Tool for AcquireClaim {
    keyed!();

    // The resource is read inside the transaction (`run`), not in
    // `prepare`: an apply landing between a read there and the grant would
    // leave the claim recording content that is already gone.
    no_prep!();

    fn run(cx: &Cx<'_>, args: AcquireClaim, (): ()) -> Result<ClaimChanged, ToolError> {
        let agent = cx.enabled_agent(Self::TOOL)?;
        if let Some(task) = &args.task_id {
            let exists: bool = crate::store::agents::task_exists(cx.tx, task.as_str())?;
            if !exists {
                return Err(ToolError::not_found("task", task.as_str()));
            }
        }
        // Inside the write transaction no apply can journal, so none can
        // start changing files; one already journaled is waited out.
        require_no_apply_touching(cx, &args.resource_id.0)?;
        // Only a directory's digest depends on the policy (its ignore list).
        let policy = match &args.resource_id.0 {
            Resource::Directory(_) => Some(super::policies::effective(cx.tx)?.1),
            Resource::File(_) | Resource::Symbol { .. } => None,
        };
        let ignore = policy.as_ref().map(|p| &p.workspace.ignore);
        // Acquiring changes the store anyway: a whole-tree walk leaves the
        // stat cache warm for the freshness checks that follow.
        let (state, index) = resource_state_indexed(
            cx.engine,
            cx.engine.workspace(),
            &args.resource_id.0,
            ignore,
            CacheMode::ReadWrite,
        )?;
        let resource_id = args.resource_id.0.to_string();
        let scope = Scope {
            resource: args.resource_id.0.clone(),
            span: state.span,
        };
        let live = store::claims::live_claims_facing(cx.tx, &agent.id, cx.now)?;
        let expires = Timestamp(cx.now.0 + i64::from(args.ttl_s.0) * 1000);
        // One's own live claim on this very resource, of this type: a
        // retry, or a host that lost track of it. It is renewed and
        // returned (same id, same token), not refused.
        if let Some(own) = live.iter().find(|c| {
            c.agent_id == agent.id
                && c.resource_id == resource_id
                && c.claim_type == args.claim_type
        }) {
            store::claims::renew(cx.tx, &own.id, expires)?;
            cx.event(
                &own.id,
                None,
                crate::model::ClaimRenewedData {
                    expires_at: expires,
                    previous_expires_at: own.expires_at,
                    token: own.token,
                    reacquired: Some(true),
                },
            )?;
            return Ok(ClaimChanged {
                claim: Claim::load(cx, &own.id)?,
            });
        }
        for other in &live {
            let clash = other.agent_id != agent.id
                && args.claim_type == ClaimType::Write
                && other.claim_type == ClaimType::Write
                && overlaps(
                    &scope,
                    &held_scope(&other.scope()?, &scope, index.as_deref()),
                );
            if clash {
                let message = format!(
                    "{} overlaps {}'s write claim {} on {} (until {})",
                    resource_id, other.agent_id, other.id, other.resource_id, other.expires_at
                );
                let details = ConflictDetails {
                    holder: Some(Box::new(other.clone())),
                    ..ConflictDetails::default()
                };
                return Err(ToolError::new(message, details));
            }
        }
        let token = store::claims::next_token(cx.tx)?;
        let id = cx.new_id("claim");
        let (path, symbol) = match &args.resource_id.0 {
            Resource::File(p) => (Some(p.to_string()), None),
            Resource::Directory(d) => (d.as_ref().map(ToString::to_string), None),
            Resource::Symbol { path, name } => (Some(path.to_string()), Some(name.clone())),
        };
        store::claims::insert(
            cx.tx,
            &store::claims::NewClaim {
                id: id.as_str(),
                agent_id: &agent.id,
                resource_id: &resource_id,
                path: path.as_deref(),
                symbol: symbol.as_deref(),
                span: state.span,
                claim_type: args.claim_type,
                task_id: args.task_id.as_ref().map(Id::as_str),
                base_digest: &state.digest,
                token,
                acquired_at: cx.now,
                expires_at: expires,
            },
        )?;
        cx.event(
            id.as_str(),
            None,
            crate::model::ClaimAcquiredData {
                resource_id,
                claim_type: args.claim_type,
                token,
                expires_at: expires,
                base_digest: state.digest,
            },
        )?;
        Ok(ClaimChanged {
            claim: Claim::load(cx, id.as_str())?,
        })
    }
}

/// A held claim's scope as of the content `index` was built from (the
/// file of the requested symbol `requested`): its span re-resolved there,
/// since the span it recorded may be lines the file no longer gives it.
fn held_scope(held: &Scope, requested: &Scope, index: Option<&[crate::symbols::Symbol]>) -> Scope {
    match (&held.resource, &requested.resource, index) {
        (Resource::Symbol { path, .. }, Resource::Symbol { path: here, .. }, Some(index))
            if path == here =>
        {
            crate::claims::current_scope(held, index)
        }
        _ => held.clone(),
    }
}

/// `illegal_transition` unless the claim is active.
fn require_active(claim: &Claim, operation: &str) -> Result<(), ToolError> {
    if claim.status == ClaimStatus::Active {
        return Ok(());
    }
    let status = super::records::enum_to_sql(&claim.status);
    Err(ToolError::new(
        format!(
            "claim {} is {status}; {operation} needs it to be active",
            claim.id
        ),
        IllegalTransitionDetails {
            claim_id: Some(claim.id.clone()),
            status: Some(RecordStatus::Claim(claim.status)),
            allowed: Some(vec![RecordStatus::Claim(ClaimStatus::Active)]),
            operation: Some(operation.to_owned()),
            ..IllegalTransitionDetails::default()
        },
    ))
}

/// `forbidden` unless the actor holds the claim (or, when `orchestrator_too`,
/// is an orchestrator).
fn require_holder(
    cx: &Cx<'_>,
    claim: &Claim,
    tool: &str,
    orchestrator_too: bool,
) -> Result<(), ToolError> {
    if orchestrator_too && cx.actor.kind == ActorKind::Orchestrator {
        return Ok(());
    }
    if cx.actor.kind == ActorKind::Agent && cx.actor.id.as_str() == claim.agent_id {
        return Ok(());
    }
    Err(ToolError::new(
        format!(
            "claim {} is held by {}; {} may not call {tool} on it",
            claim.id, claim.agent_id, cx.actor
        ),
        ForbiddenDetails {
            holder: Some(claim.agent_id.clone()),
            ..ForbiddenDetails::new(cx.actor, ForbiddenReason::NotHolder)
        },
    ))
}

/// Arguments of `claim.renew`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RenewArgs")]
pub struct RenewClaim {
    /// The claim.
    pub claim_id: Id,
    /// The new lease length from now, in seconds (1 to 604800).
    pub ttl_s: Limit<604_800>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

impl super::Request for RenewClaim {
    const TOOL: &'static str = "claim.renew";
    const DESCRIPTION: &'static str = "Extend an active claim's lease from now (its holder). An expired or released claim cannot be renewed: acquire a new one (which gets a new fencing token).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = ClaimChanged;

    store_tool!();
}

impl Tool for RenewClaim {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: RenewClaim, (): ()) -> Result<ClaimChanged, ToolError> {
        let claim = Claim::load(cx, args.claim_id.as_str())?;
        require_holder(cx, &claim, Self::TOOL, false)?;
        cx.enabled_agent(Self::TOOL)?;
        require_active(&claim, Self::TOOL)?;
        let expires = Timestamp(cx.now.0 + i64::from(args.ttl_s.0) * 1000);
        store::claims::renew(cx.tx, &claim.id, expires)?;
        cx.event(
            &claim.id,
            None,
            crate::model::ClaimRenewedData {
                expires_at: expires,
                previous_expires_at: claim.expires_at,
                token: claim.token,
                reacquired: None,
            },
        )?;
        Ok(ClaimChanged {
            claim: Claim::load(cx, &claim.id)?,
        })
    }
}

/// Arguments of `claim.release`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ReleaseArgs")]
pub struct ReleaseClaim {
    /// The claim.
    pub claim_id: Id,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

impl super::Request for ReleaseClaim {
    const TOOL: &'static str = "claim.release";
    const DESCRIPTION: &'static str = "Release an active claim (its holder, or an orchestrator).";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent, ActorKind::Orchestrator];
    type Output = ClaimChanged;

    store_tool!();
}

impl Tool for ReleaseClaim {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ReleaseClaim, (): ()) -> Result<ClaimChanged, ToolError> {
        let claim = Claim::load(cx, args.claim_id.as_str())?;
        require_holder(cx, &claim, Self::TOOL, true)?;
        require_active(&claim, Self::TOOL)?;
        store::claims::release(cx.tx, &claim.id, cx.now)?;
        cx.event(
            &claim.id,
            None,
            crate::model::ClaimReleasedData {
                token: claim.token,
                transaction_id: None,
            },
        )?;
        Ok(ClaimChanged {
            claim: Claim::load(cx, &claim.id)?,
        })
    }
}

/// Arguments of `claim.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ListArgs")]
pub struct ListClaims {
    /// Only this agent's claims.
    pub agent_id: Option<Id>,
    /// Only claims on exactly this resource.
    pub resource_id: Option<ResourceId>,
    /// Only claims in this status (as of the call).
    pub status: Option<ClaimStatus>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `claim.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ClaimPage {
    /// Claims, oldest first.
    pub claims: Vec<Claim>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListClaims {
    const TOOL: &'static str = "claim.list";
    const DESCRIPTION: &'static str =
        "List claims oldest first, filtered by agent, resource or status (active, expired, released).";
    const MUTATES: bool = false;
    type Output = ClaimPage;

    store_tool!();
}

impl Tool for ListClaims {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListClaims, (): ()) -> Result<ClaimPage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let resource_id = args.resource_id.as_ref().map(|r| r.0.to_string());
        let mut claims = store::claims::list(
            cx.tx,
            &store::claims::ClaimFilter {
                after,
                agent_id: args.agent_id.as_ref().map(Id::as_str),
                resource_id: resource_id.as_deref(),
                status: args.status,
                now: cx.now,
                limit: i64::from(limit) + 1,
            },
        )?;
        let next_cursor = Cursor::page(&mut claims, limit, |c| c.seq);
        Ok(ClaimPage {
            claims,
            next_cursor,
        })
    }
}
