//! `inbox.list`: every open proposal waiting on the calling actor, and why,
//! derived by the same rules as `proposal.status`'s `next`
//! (`next::next_actors`), a page of proposals at a time.
//!
//! What a page costs: it examines at most `limit` open proposals (keyset
//! over the proposals' `seq`, walking the primary key from the cursor). It
//! reads the agents and the effective policy once; for each proposal, its
//! last event's seq, and — only when something happened to it since the
//! engine last judged it (`InboxMemo`) — its own evidence rows and
//! stored revision bytes, and evaluates the policy (the added lines read
//! off the stored diff's hunks); it always checks the revision's
//! preconditions, each touched file's digest taken from the engine's
//! `DigestMemo` when a fresh `lstat` proves the file unwritten since it
//! was hashed (git's racy-timestamp rule: a file changed within a second
//! of its hashing is never trusted), else read and hashed; pages asking
//! about the same revision at once share one check that started after
//! each of them asked (`StaleFlights`, in a workspace view of its own).
//! That `stale` is advisory: it decides no write. It runs
//! no dry run, no claim freshness or overlap check and no coverage (no
//! symbol parsing): those are `proposal.status`'s and
//! `patch.validate`'s, and `patch.apply` runs them all again. So an apply
//! listed here may still be refused for a claim or coverage gap.

use super::args::{Cursor, Limit, WaitMs};
use super::next::{asks, next_actors, NextAction, NextRole, Situation};
use super::rebase::rebase_outlook;
use super::records::Proposal;
use super::validate::{gather_for_policy, policy_from_store, stale_against, Shared};
use super::Request as _;
use super::{read_files_cx, Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::engine::Engine;
use crate::model::{Agent, EventKind, Revision, SecurityReviewRecord, TestResult, Vote};
use crate::policy::{Policy, PolicyReport};
use crate::store;
use crate::store::watch::Interest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Arguments of `inbox.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InboxArgs")]
pub struct ListInbox {
    /// Open proposals examined per page, 1 to 100 (default 50). A page
    /// lists what waits on the caller among them, so it may hold fewer
    /// items (even none) and still have a `next_cursor`.
    pub limit: Option<Limit<100>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// One thing waiting on the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxItem {
    /// The proposal.
    pub proposal: Proposal,
    /// The revision to act on (the latest).
    pub revision: u32,
    /// As whom the caller is asked (`author`, `reviewer`,
    /// `security_reviewer`, `human`, `orchestrator`).
    pub role: NextRole,
    /// What to do.
    pub action: NextAction,
    /// Why, for people (what `proposal.status`'s `next` says).
    pub why: String,
    /// For `run_queue_check`: the speculative state to test and the check
    /// to run on it (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_check: Option<super::queue::QueueCheckRequest>,
}

/// Result of `inbox.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct InboxPage {
    /// What waits on the caller, oldest proposal first (a proposal may
    /// wait on it for several things).
    pub items: Vec<InboxItem>,
    /// How many open proposals this page examined.
    pub examined: u32,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListInbox {
    const TOOL: &'static str = "inbox.list";
    const DESCRIPTION: &'static str = "What waits on the calling actor: for each open proposal, the votes to cast, security reviews, human approvals, checks to run, revisions to attach (a failed check, a stale revision: rebase or attach) and applies to make, by the rules of proposal.status's next. Pages over open proposals (keyset); a page examines up to limit proposals and lists what waits on the caller among them. Checks policy and preconditions only (no dry run, claims or coverage: proposal.status has those).";
    const MUTATES: bool = false;
    type Output = InboxPage;

    store_tool!();
}

impl Tool for ListInbox {
    const READS_FILES: bool = true;

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListInbox, (): ()) -> Result<InboxPage, ToolError> {
        if cx.actor.kind == ActorKind::Agent {
            // Only a registered, enabled agent has anything to do.
            cx.enabled_agent(Self::TOOL)?;
        }
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut open = store::proposals::open_proposals(cx.tx, after, u64::from(limit) + 1)?;
        let next_cursor = Cursor::page(&mut open, limit, |p| p.seq);
        let shared = Shared::read(cx)?;
        let memo = cx.engine.extension::<InboxMemo>();
        memo.keep_for(&shared);
        let mut items = Vec::new();
        for p in &open {
            items.extend(waiting_on_caller(cx, p, &shared, &memo)?);
        }
        Ok(InboxPage {
            items,
            examined: u32::try_from(open.len()).unwrap_or(u32::MAX),
            next_cursor,
        })
    }
}

/// The longest an `inbox.wait` waits, in milliseconds (ten minutes).
pub const MAX_INBOX_WAIT_MS: u32 = 600_000;

/// Arguments of `inbox.wait`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "InboxWaitArgs")]
pub struct WaitInbox {
    /// The `cursor` of the previous result: return only what is new or
    /// changed since (absent: everything that waits on the caller now).
    pub after: Option<Cursor>,
    /// How long to wait for something to wait on the caller, 0 (just
    /// look) to 600000 milliseconds (default 30000).
    pub timeout_ms: Option<WaitMs<MAX_INBOX_WAIT_MS>>,
    /// Items per result, 1 to 100 (default 50). A proposal's items are
    /// never split across results, so a result holds more only when one
    /// proposal alone waits on the caller for more things.
    pub limit: Option<Limit<100>>,
}

/// Result of `inbox.wait`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InboxWait {
    /// What waits on the caller and is new or changed since `after`,
    /// oldest proposal first; empty only when the wait timed out.
    pub items: Vec<InboxItem>,
    /// Pass as `after` to wait for what comes next.
    pub cursor: Cursor,
    /// Whether `timeout_ms` passed with nothing new waiting on the caller.
    pub timed_out: bool,
}

impl super::Request for WaitInbox {
    const TOOL: &'static str = "inbox.wait";
    const DESCRIPTION: &'static str = "Wait (a long poll, up to timeout_ms) until something waits on the calling actor, instead of polling events.wait and inbox.list: returns inbox.list's items. Without after, returns at once with everything that waits on the caller now, if anything does. With after (the previous result's cursor), returns the items whose proposal had an event since that result and now waits on the caller (an item whose proposal changes again is returned again). Never returns an empty list before the timeout; on timeout returns no items, timed_out true and a cursor to continue from. A worker loop: cursor = null; loop { r = inbox.wait(after = cursor); handle r.items; cursor = r.cursor }.";
    const MUTATES: bool = false;
    const WAITS: bool = true;
    type Output = InboxWait;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<InboxWait, ToolError> {
        let mut told = match &self.after {
            None => store::proposals::Told {
                since: 0,
                head: 0,
                past: 0,
            },
            Some(c) => told_of(c).ok_or_else(|| {
                ToolError::invalid_argument("after", "is not a cursor inbox.wait returned")
            })?,
        };
        let limit = self.limit.map_or(50, |l| l.0) as usize;
        let timeout = self
            .timeout_ms
            .map_or(std::time::Duration::from_secs(30), WaitMs::duration);
        let deadline = std::time::Instant::now() + timeout;
        // The first look says what the caller waits for; a look that finds
        // it waits for something else (a new proposal of its own, new
        // roles or policy) registers again with that.
        let mut interest = anything();
        loop {
            let found = super::wait::until(engine, deadline, interest.clone(), || {
                let look = read_files_cx(engine, actor, |cx| look(cx, told, limit))?;
                if !look.items.is_empty() {
                    return Ok(super::wait::Check::Done(Step::Found(InboxWait {
                        items: look.items,
                        cursor: cursor_of(look.next),
                        timed_out: false,
                    })));
                }
                // Nothing new waits on the caller up to `look.head`: what
                // changed up to there was told of (it waits on others).
                told = store::proposals::Told {
                    since: look.head,
                    head: look.head,
                    past: 0,
                };
                if look.interest != interest {
                    return Ok(super::wait::Check::Done(Step::Again(look.interest)));
                }
                Ok(super::wait::Check::Wait {
                    due: None,
                    head: Some(look.head),
                })
            })?;
            match found {
                Some(Step::Found(out)) => return Ok(out),
                Some(Step::Again(next)) => interest = next,
                None => {
                    return Ok(InboxWait {
                        items: Vec::new(),
                        cursor: cursor_of(told),
                        timed_out: true,
                    })
                }
            }
        }
    }
}

/// What one wait of `inbox.wait` ended with.
enum Step {
    /// Something new waits on the caller.
    Found(InboxWait),
    /// Nothing yet, and the caller waits for other events now.
    Again(Interest),
}

/// Any committed event.
fn anything() -> Interest {
    Interest::Events {
        kinds: Vec::new(),
        proposal_id: None,
        actor: None,
    }
}

/// What wakes `cx`'s caller's `inbox.wait`, judged with `shared`'s agents
/// and policy.
///
/// An agent that no requirement of the policy can ask to vote or review
/// (it holds no role the approvals, a role rule or the security review
/// names, and the approvals do not take any agent) is only ever asked
/// about its own proposals: it waits for their events (a landing that
/// makes one stale writes `proposal.stale` about it), its own (a proposal
/// it creates), and a change of agents or policy (which may make it a
/// reviewer: it then registers again). Everyone else waits for any
/// event.
fn interest_of(cx: &Cx<'_>, shared: &Shared) -> Result<Interest, ToolError> {
    if cx.actor.kind != ActorKind::Agent {
        return Ok(anything());
    }
    let id = cx.actor.id.as_str();
    let roles = shared
        .agents()
        .iter()
        .find(|a| a.id == id)
        .map_or(&[][..], |a| a.roles.as_slice());
    if may_review(shared.policy(), roles) {
        return Ok(anything());
    }
    let mut any = vec![
        Interest::Events {
            kinds: Vec::new(),
            proposal_id: None,
            actor: Some((cx.actor.kind.as_str().to_owned(), id.to_owned())),
        },
        Interest::Events {
            kinds: [
                EventKind::AgentRegistered,
                EventKind::AgentUpdated,
                EventKind::PolicyActivated,
            ]
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect(),
            proposal_id: None,
            actor: None,
        },
    ];
    any.extend(
        store::proposals::open_of_author(cx.tx, id)?
            .into_iter()
            .map(|p| Interest::Events {
                kinds: Vec::new(),
                proposal_id: Some(p),
                actor: None,
            }),
    );
    Ok(Interest::AnyOf(any))
}

/// Whether `policy` can ask an agent holding `roles` to vote or review
/// someone else's proposal.
fn may_review(policy: &Policy, roles: &[String]) -> bool {
    let holds = |role: &str| roles.iter().any(|r| r == role);
    let approvals = &policy.approvals;
    (approvals.minimum > 0
        && (approvals.eligible_roles.is_empty()
            || approvals.eligible_roles.iter().any(|r| holds(r))))
        || policy.roles.iter().any(|rule| holds(&rule.role))
        || holds(crate::policy::SECURITY_ROLE)
}

/// One look of `inbox.wait`.
struct Look {
    /// What is new and waits on the caller.
    items: Vec<InboxItem>,
    /// The log head the look read up to.
    head: i64,
    /// Where the caller stands once told of `items`.
    next: store::proposals::Told,
    /// What wakes the caller's wait.
    interest: Interest,
}

/// The open proposals changed since the caller was last `told`, oldest
/// first, judged as `inbox.list` judges them: what waits on the caller,
/// whole proposals at a time until `limit` items.
fn look(cx: &Cx<'_>, told: store::proposals::Told, limit: usize) -> Result<Look, ToolError> {
    /// Proposals read per query.
    const BATCH: u64 = 100;
    if cx.actor.kind == ActorKind::Agent {
        cx.enabled_agent(WaitInbox::TOOL)?;
    }
    let head = store::events::head_seq(cx.tx)?;
    if told.head > head {
        return Err(ToolError::invalid_argument(
            "after",
            "is past the end of this store's log: not a cursor of this store",
        ));
    }
    let shared = Shared::read(cx)?;
    let memo = cx.engine.extension::<InboxMemo>();
    memo.keep_for(&shared);
    let interest = interest_of(cx, &shared)?;
    let mut items: Vec<InboxItem> = Vec::new();
    // The last proposal handled whole (its items taken, or none waiting).
    let mut done = 0;
    loop {
        let batch = store::proposals::open_changed(cx.tx, told, done, BATCH)?;
        let full = batch.len() as u64 == BATCH;
        for p in &batch {
            let mine = waiting_on_caller(cx, p, &shared, &memo)?;
            if !items.is_empty() && items.len() + mine.len() > limit {
                // `p` on: the next result's.
                return Ok(Look {
                    items,
                    head,
                    interest,
                    next: store::proposals::Told {
                        since: told.since,
                        head,
                        past: done,
                    },
                });
            }
            items.extend(mine);
            done = p.seq;
        }
        if !full {
            break;
        }
    }
    Ok(Look {
        items,
        head,
        interest,
        next: store::proposals::Told {
            since: head,
            head,
            past: 0,
        },
    })
}

/// The opaque cursor for a caller told of what `told` says.
fn cursor_of(told: store::proposals::Told) -> Cursor {
    use base64::Engine as _;
    Cursor(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("w:{}.{}.{}", told.since, told.head, told.past)),
    )
}

/// What a cursor of [`cursor_of`] says; `None` for any other string.
fn told_of(cursor: &Cursor) -> Option<store::proposals::Told> {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&cursor.0)
        .ok()?;
    let text = std::str::from_utf8(&raw).ok()?;
    let mut parts = text.strip_prefix("w:")?.split('.');
    let mut next = || parts.next()?.parse::<i64>().ok().filter(|n| *n >= 0);
    let told = store::proposals::Told {
        since: next()?,
        head: next()?,
        past: next()?,
    };
    (parts.next().is_none() && told.since <= told.head).then_some(told)
}

/// What waits on the caller of `cx` in open proposal `p` (nothing while it
/// is being applied), by the rules of `proposal.status`'s `next`, judged
/// with `shared`'s agents and policy against the files now.
fn waiting_on_caller(
    cx: &Cx<'_>,
    p: &Proposal,
    shared: &Shared,
    memo: &InboxMemo,
) -> Result<Vec<InboxItem>, ToolError> {
    if store::transactions::applying_for(cx.tx, &p.id)?.is_some() {
        return Ok(Vec::new()); // being applied: it waits on nobody
    }
    let judged = memo.judged(cx, p, shared)?;
    let stale = stale_now(cx.engine, p, &judged.revision);
    // Only the orchestrator and the author act on the outlook: a
    // reviewer's page does not merge anything.
    let concerned = cx.actor.kind == ActorKind::Orchestrator
        || (cx.actor.kind == ActorKind::Agent && cx.actor.id.as_str() == p.author);
    let rebase = (stale && concerned)
        .then(|| rebase_outlook(cx, p, &judged.revision))
        .flatten();
    let next = next_actors(&Situation {
        proposal: p,
        policy: &judged.policy,
        stale,
        rebase,
        claims: None,
        coverage_failed: false,
        valid: judged.policy.approvable && !stale,
        votes: &judged.votes,
        reviews: &judged.reviews,
        tests: &judged.tests,
    });
    let mut items: Vec<InboxItem> = next
        .into_iter()
        .filter(|n| asks(n, cx.actor))
        .map(|n| InboxItem {
            proposal: p.clone(),
            revision: p.latest_revision,
            role: n.actor,
            action: n.action,
            why: n.why,
            queue_check: None,
        })
        .collect();
    // The landing queue's external checks waiting for an answer.
    if cx.actor.kind == ActorKind::Orchestrator {
        let waiting =
            super::queue::waiting_checks(cx.tx, &p.id, p.latest_revision, shared.policy())?;
        items.extend(waiting.into_iter().map(|r| InboxItem {
            proposal: p.clone(),
            revision: p.latest_revision,
            role: super::next::NextRole::Orchestrator,
            action: super::queue::CHECK_ACTION,
            why: super::queue::check_why(&r),
            queue_check: Some(r),
        }));
    }
    Ok(items)
}

/// Whether `revision` of `p` is stale against the files now: an advisory
/// answer ([`stale_against`], digests from the engine's `DigestMemo`
/// while each file's `lstat` is unchanged). Pages asking about the same
/// revision at once share one check that started after each of them
/// asked ([`StaleFlights`]), run in a workspace view of its own (a view
/// made before the check would answer from what it read earlier).
fn stale_now(engine: &Engine, p: &Proposal, revision: &Revision) -> bool {
    let flights = engine.extension::<StaleFlights>();
    let key = (p.id.clone(), revision.number);
    let shared = flights.0.share(&key, || {
        let digests = engine.extension::<crate::workspace::DigestMemo>();
        let ws = engine.workspace().view();
        Ok::<_, std::convert::Infallible>(stale_against(&ws, &digests, &revision.changeset))
    });
    let Ok(stale) = shared;
    *stale
}

/// The inbox's staleness checks in progress, by proposal and revision: 50
/// consoles asking for their inbox after the same event check a proposal
/// touching 3,000 files at most twice between them, not 50 times
/// ([`super::flights`]; nothing is remembered once handed out).
#[derive(Debug, Default)]
pub(crate) struct StaleFlights(pub(crate) super::flights::Flights<(String, u32), bool>);

/// What the inbox worked out for one proposal from the store alone: its
/// latest revision, the policy's evaluation of it and the evidence
/// `next_actors` reads.
#[derive(Debug)]
struct Judged {
    /// The proposal's last event when this was worked out.
    last_event: i64,
    revision: Revision,
    policy: PolicyReport,
    votes: Vec<Vote>,
    reviews: Vec<SecurityReviewRecord>,
    tests: Vec<TestResult>,
}

/// The inbox's memory of what it worked out per open proposal, so a page
/// re-reads and re-evaluates only the proposals something happened to.
///
/// Everything a judgement reads is the proposal's own rows (revisions,
/// votes, reviews, approvals, checks: each written with an event naming
/// the proposal, which the policy requires of evidence anyway) and the
/// agents and policy every page reads ([`Shared`]). So a judgement holds
/// while the proposal's last event is the same and the agents and policy
/// are those it was made with; the staleness of the files and a rebase's
/// outlook are never remembered (the files change behind the store): a
/// page works staleness out again, from file digests the engine's
/// `DigestMemo` holds only while each file's `lstat` is unchanged.
#[derive(Debug, Default)]
pub(crate) struct InboxMemo(Mutex<Memory>);

#[derive(Debug, Default)]
struct Memory {
    /// The agents and policy the judgements were made with.
    made_with: Option<(Vec<Agent>, Policy, Option<u32>)>,
    judged: HashMap<String, Arc<Judged>>,
}

impl Memory {
    /// Whether the judgements were made with `shared`'s agents and policy.
    fn made_with(&self, shared: &Shared) -> bool {
        self.made_with.as_ref().is_some_and(|(a, p, v)| {
            (a.as_slice(), p, *v) == (shared.agents(), shared.policy(), shared.policy_version())
        })
    }
}

/// The most proposals remembered: past it the memory starts over (a page
/// re-reads what it needs).
const MEMO_LIMIT: usize = 4096;

impl InboxMemo {
    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forget every judgement made with other agents or another policy.
    fn keep_for(&self, shared: &Shared) {
        let mut memory = self.lock();
        if !memory.made_with(shared) {
            memory.judged.clear();
            memory.made_with = Some((
                shared.agents().to_vec(),
                shared.policy().clone(),
                shared.policy_version(),
            ));
        }
        if memory.judged.len() > MEMO_LIMIT {
            memory.judged.clear();
        }
    }

    /// `p`'s judgement with `shared`'s agents and policy: remembered when
    /// nothing happened to `p` since, else worked out now (outside the
    /// lock: pages run side by side) and remembered.
    fn judged(&self, cx: &Cx<'_>, p: &Proposal, shared: &Shared) -> Result<Arc<Judged>, ToolError> {
        let last_event = store::events::last_of_proposal(cx.tx, &p.id)?;
        let remembered = self.lock().judged.get(&p.id).cloned();
        if let Some(j) = remembered
            .filter(|j| j.last_event == last_event && j.revision.number == p.latest_revision)
        {
            return Ok(j);
        }
        let ev = gather_for_policy(cx, p, shared)?;
        let policy = policy_from_store(cx.engine, cx.tx, &ev)?;
        let judged = Arc::new(Judged {
            last_event,
            revision: ev.revision,
            policy,
            votes: ev.votes,
            reviews: ev.reviews,
            tests: ev.tests,
        });
        let mut memory = self.lock();
        // Only what was made with the agents and policy remembered now.
        if memory.made_with(shared) {
            memory.judged.insert(p.id.clone(), Arc::clone(&judged));
        }
        Ok(judged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue34_item5_only_an_agent_no_requirement_can_ask_to_review_waits_narrowly() {
        let roles = |r: &[&str]| r.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut policy = Policy::default();
        // Any agent but the author approves: everyone may review.
        assert!(may_review(&policy, &roles(&["author"])));
        assert!(may_review(&policy, &roles(&[])));
        policy.approvals.eligible_roles = roles(&["reviewer"]);
        assert!(!may_review(&policy, &roles(&["author"])));
        assert!(may_review(&policy, &roles(&["author", "reviewer"])));
        assert!(may_review(&policy, &roles(&["security"])));
        let mut policy = Policy::parse(
            "version = 1\n[approvals]\neligible_roles = [\"reviewer\"]\n[[roles]]\npaths = [\"db/**\"]\nrole = \"dba\"\nminimum = 1\n",
        )
        .expect("a policy");
        assert!(may_review(&policy, &roles(&["dba"])));
        assert!(!may_review(&policy, &roles(&["author"])));
        // No approvals needed at all: only the role rules ask.
        policy.approvals.minimum = 0;
        policy.approvals.eligible_roles.clear();
        assert!(!may_review(&policy, &roles(&["author"])));
    }

    #[test]
    fn issue34_item5_cursors_read_back_and_others_do_not() {
        let told = store::proposals::Told {
            since: 3,
            head: 9,
            past: 4,
        };
        assert_eq!(told_of(&cursor_of(told)), Some(told));
        assert_eq!(told_of(&Cursor::after(5)), None);
        assert_eq!(told_of(&Cursor("w:1.2".into())), None);
        let backwards = store::proposals::Told {
            since: 9,
            head: 3,
            past: 0,
        };
        assert_eq!(told_of(&cursor_of(backwards)), None);
    }
}
