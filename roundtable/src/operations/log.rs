//! The audit log: reading it and verifying its hash chain.

use super::args::{Limit, WaitMs};
use super::records::Event;
use super::{Cx, Tool, ToolError};
use crate::actor::Actor;
use crate::engine::Engine;
use crate::id::Id;
use crate::model::EventKind;
use crate::store;
use crate::store::watch::Interest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Arguments of `events.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EventsListArgs")]
pub struct ListEvents {
    /// Return events after this `seq` (default 0: from the start).
    pub since_seq: Option<u64>,
    /// Only events about this proposal.
    pub proposal_id: Option<Id>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<Limit<1000>>,
}

/// Result of `events.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EventPage {
    /// Events in `seq` order.
    pub events: Vec<Event>,
    /// Pass as `since_seq` for the next page; `null` when this page is the
    /// end of the log for now.
    pub next_since_seq: Option<i64>,
}

impl super::Request for ListEvents {
    const TOOL: &'static str = "events.list";
    const DESCRIPTION: &'static str =
        "Read the audit log in seq order after since_seq, optionally for one proposal.";
    const MUTATES: bool = false;
    type Output = EventPage;

    store_tool!();
}

impl Tool for ListEvents {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListEvents, (): ()) -> Result<EventPage, ToolError> {
        let limit = args.limit.map_or(100, |l| l.0);
        let since = i64::try_from(args.since_seq.unwrap_or(0))
            .map_err(|_| ToolError::invalid_argument("since_seq", "is too large"))?;
        let mut events = store::events::list(
            cx.tx,
            since,
            args.proposal_id.as_ref().map(Id::as_str),
            i64::from(limit) + 1,
        )?;
        let next_since_seq = if events.len() > limit as usize {
            events.truncate(limit as usize);
            events.last().map(|e| e.seq)
        } else {
            None
        };
        Ok(EventPage {
            events,
            next_since_seq,
        })
    }
}

/// The longest `events.wait` and waiting `claim.acquire` may wait, in
/// milliseconds: a long poll is at most a minute (call again to wait
/// longer).
pub const MAX_WAIT_MS: u32 = 60_000;

/// The most kinds an `events.wait` filter may name.
pub const MAX_KINDS: usize = 64;

/// Arguments of `events.wait`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EventsWaitArgs")]
pub struct WaitEvents {
    /// Wait for events after this `seq` (the `next_since_seq` of the
    /// previous call, or 0).
    pub since_seq: u64,
    /// Only events about this proposal.
    pub proposal_id: Option<Id>,
    /// Only events of these kinds (`proposal.applied`, `claim.released`,
    /// …): 1 to 64 known kinds.
    pub kinds: Option<Vec<EventKind>>,
    /// Only events this actor caused.
    pub actor: Option<Actor>,
    /// Return at most this many events, 1 to 1000 (default 100).
    pub limit: Option<Limit<1000>>,
    /// How long to wait for a first matching event, 0 (just look) to
    /// 60000 milliseconds (default 30000).
    pub timeout_ms: Option<WaitMs<MAX_WAIT_MS>>,
}

/// Result of `events.wait`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EventWait {
    /// The matching events after `since_seq`, in `seq` order (empty when
    /// the wait timed out).
    pub events: Vec<Event>,
    /// Whether `timeout_ms` passed with no matching event.
    pub timed_out: bool,
    /// The log's last seq when the call returned.
    pub head_seq: i64,
    /// Pass as `since_seq` to wait for what comes next: the last event
    /// returned when `limit` cut the page short, else `head_seq` (nothing
    /// up to it that matches was left out).
    pub next_since_seq: i64,
}

impl super::Request for WaitEvents {
    const TOOL: &'static str = "events.wait";
    const DESCRIPTION: &'static str = "Wait (a long poll, up to timeout_ms) for events after since_seq, optionally only of some kinds, about one proposal or by one actor. Returns as soon as one matching event is committed, by this process or another on the same store; on timeout returns no events, timed_out true and the head seq to resume from.";
    const MUTATES: bool = false;
    const WAITS: bool = true;
    type Output = EventWait;

    fn execute(self, engine: &Engine, _actor: &Actor) -> Result<EventWait, ToolError> {
        let since = i64::try_from(self.since_seq)
            .map_err(|_| ToolError::invalid_argument("since_seq", "is too large"))?;
        let kinds = match &self.kinds {
            None => Vec::new(),
            Some(kinds) => {
                if kinds.is_empty() || kinds.len() > MAX_KINDS {
                    return Err(ToolError::invalid_argument(
                        "kinds",
                        format!(
                            "must name 1 to {MAX_KINDS} event kinds, not {}",
                            kinds.len()
                        ),
                    ));
                }
                if let Some((i, k)) = kinds
                    .iter()
                    .enumerate()
                    .find(|(_, k)| matches!(k, EventKind::Unknown(_)))
                {
                    return Err(ToolError::invalid_argument(
                        &format!("kinds[{i}]"),
                        format!("{k:?} is not an event kind"),
                    ));
                }
                kinds.iter().map(EventKind::as_str).collect()
            }
        };
        let limit = self.limit.map_or(100, |l| l.0);
        let timeout = self
            .timeout_ms
            .map_or(std::time::Duration::from_secs(30), WaitMs::duration);
        let deadline = std::time::Instant::now() + timeout;
        let proposal_id = self.proposal_id.as_ref().map(Id::as_str);
        let actor = self
            .actor
            .as_ref()
            .map(|a| (a.kind.as_str(), a.id.as_str()));
        let interest = Interest::Events {
            kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
            proposal_id: proposal_id.map(str::to_owned),
            actor: actor.map(|(k, id)| (k.to_owned(), id.to_owned())),
        };
        // One look at the events after `after` (`since`, or the head a
        // look found nothing up to: the log is appended in `seq` order
        // under the write lock, so a later look need only read what
        // came since): the matching events, where to resume, the head.
        let look = |after: i64| -> Result<EventWait, ToolError> {
            let filter = store::events::EventFilter {
                since: after,
                proposal_id,
                kinds: &kinds,
                actor,
            };
            engine.store().read(|tx| {
                let mut events = store::events::matching(tx, &filter, i64::from(limit) + 1)?;
                let head_seq = store::events::head_seq(tx)?;
                let next = if events.len() > limit as usize {
                    events.truncate(limit as usize);
                    events.last().map_or(head_seq, |e| e.seq)
                } else {
                    head_seq
                };
                Ok::<_, ToolError>(EventWait {
                    timed_out: events.is_empty(),
                    events,
                    head_seq,
                    next_since_seq: next.max(since),
                })
            })
        };
        let mut last: Option<EventWait> = None;
        let found = super::wait::until(engine, deadline, interest, || {
            let after = last.as_ref().map_or(since, |l| l.head_seq.max(since));
            let page = look(after)?;
            Ok(if page.events.is_empty() {
                let head = page.head_seq;
                last = Some(page);
                // A claim that lapses is noted (`claim.expired`) by the
                // first write after; while nothing else writes, by this
                // waiter, at the expiry.
                let due = super::claims::note_lapsed_claims(engine)?;
                super::wait::Check::Wait {
                    due,
                    head: Some(head),
                }
            } else {
                super::wait::Check::Done(page)
            })
        })?;
        match found.or(last) {
            Some(page) => Ok(page),
            None => look(since),
        }
    }
}

/// A point of the audit chain: an event's `seq` and `digest` (`0` and
/// the genesis digest stand for the empty log). A host that keeps one
/// outside the store (from `events.verify` or a transaction's `journaled`
/// phase) can later prove the log up to it was neither rewritten nor
/// truncated.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainHead {
    /// The event's seq.
    pub seq: u64,
    /// Its digest: `sha256:` and 64 lowercase hex digits.
    pub digest: String,
}

/// Arguments of `events.verify`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EventsVerifyArgs")]
pub struct VerifyEvents {
    /// A head the host recorded earlier, outside the store: the log must
    /// still hold event `seq` with this digest (else it was rewritten or
    /// truncated).
    pub expected_head: Option<ChainHead>,
}

/// An evidence record (or transaction) that no event records.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct UnrecordedRecord {
    /// `vote`, `decision`, `security_review`, `human_approval_request`,
    /// `human_approval`, `test_result` or `transaction`.
    pub kind: crate::model::RecordKind,
    /// The record's id.
    pub id: String,
    /// Its proposal.
    pub proposal_id: String,
}

/// Result of `events.verify`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChainReport {
    /// Whether every check passed: each event's digest matches its content
    /// and its predecessor, `seq` runs 1, 2, 3… without a gap, the expected
    /// head (when given) and every head a transaction saw are in the log,
    /// and every evidence record and transaction has its event.
    pub valid: bool,
    /// How many events were checked.
    pub checked: u64,
    /// The last event's seq (0 for an empty log).
    pub last_seq: i64,
    /// The last event's digest: a commitment to the whole log.
    pub head_digest: String,
    /// The first event that does not verify, if any.
    pub first_invalid_seq: Option<i64>,
    /// Why the log does not verify (the first problem found).
    pub reason: Option<String>,
    /// Whether `expected_head` is in the log (`null` when none was given).
    pub expected_head_found: Option<bool>,
    /// How many evidence records and transactions were cross-checked
    /// against their events.
    pub records_checked: u64,
    /// Records with no event recording them (inserted behind roundtable's
    /// back, or their event was removed), at most 100.
    pub unrecorded: Vec<UnrecordedRecord>,
}

/// The most unrecorded records a report lists.
const MAX_UNRECORDED: usize = 100;

/// Whether `d` is spelled as an event digest.
fn is_event_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl super::Request for VerifyEvents {
    const TOOL: &'static str = "events.verify";
    const DESCRIPTION: &'static str = "Check the audit log: every event's digest covers its fields and its predecessor's digest; the expected_head the host kept (seq and digest) is still in the log, as is the head every transaction saw when it was journaled; and every vote, decision, security review, approval (request), test result and transaction has the event that records it.";
    const MUTATES: bool = false;
    type Output = ChainReport;

    store_tool!();
}

impl Tool for VerifyEvents {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: VerifyEvents, (): ()) -> Result<ChainReport, ToolError> {
        let expected = expected_head(args.expected_head)?;
        let seen = heads_seen(cx.tx)?;
        let mut report = ChainReport {
            valid: true,
            checked: 0,
            last_seq: 0,
            head_digest: crate::store::GENESIS_DIGEST.to_owned(),
            first_invalid_seq: None,
            reason: None,
            expected_head_found: expected.as_ref().map(|_| false),
            records_checked: 0,
            unrecorded: Vec::new(),
        };
        let mut problem = genesis_problem(&seen, expected.as_ref(), &mut report);
        if problem.is_none() {
            problem = walk_chain(cx.tx, &seen, expected.as_ref(), &mut report)?;
        }
        if problem.is_none() {
            problem = truncation(&seen, expected.as_ref(), report.last_seq);
        }
        // Every evidence record (and transaction) has its event.
        let unrecorded_count = unrecorded_records(cx.tx, &mut report)?;
        if problem.is_none() {
            if let Some(first) = report.unrecorded.first() {
                problem = Some((
                    None,
                    format!(
                        "{} {} of {} has no event recording it ({unrecorded_count} such records): it was not written through roundtable",
                        first.kind, first.id, first.proposal_id
                    ),
                ));
            }
        }
        if let Some((seq, reason)) = problem {
            report.valid = false;
            report.first_invalid_seq = seq;
            report.reason = Some(reason);
        }
        Ok(report)
    }
}

/// The first thing wrong with the log: the seq of the first invalid event
/// (`None` for a record without its event), and why.
type Problem = (Option<i64>, String);

/// The heads transactions saw when they were journaled: seq ->
/// (transaction, digest); seq -1 for a malformed head.
type HeadsSeen = BTreeMap<i64, Vec<(String, String)>>;

/// The head the host kept (`expected_head`), checked: its seq and digest.
fn expected_head(head: Option<ChainHead>) -> Result<Option<(i64, String)>, ToolError> {
    let Some(h) = head else {
        return Ok(None);
    };
    if !is_event_digest(&h.digest) {
        return Err(ToolError::invalid_argument(
            "expected_head.digest",
            "is not sha256: and 64 lowercase hex digits",
        ));
    }
    let seq = i64::try_from(h.seq)
        .map_err(|_| ToolError::invalid_argument("expected_head.seq", "is too large"))?;
    Ok(Some((seq, h.digest)))
}

/// The heads every transaction saw when it was journaled.
fn heads_seen(tx: &store::sql::Tx<'_>) -> Result<HeadsSeen, ToolError> {
    let mut seen = HeadsSeen::new();
    for head in store::events::journaled_heads(tx)? {
        seen.entry(head.seq.unwrap_or(-1))
            .or_default()
            .push((head.transaction_id, head.digest.unwrap_or_default()));
    }
    Ok(seen)
}

/// What the log holds at `seq` (verified so far) against a `head`
/// someone (`whose`) kept: `Some(problem)` when they disagree.
fn rewritten(seq: i64, digest: &str, head: &str, whose: &str) -> Option<String> {
    (digest != head)
        .then(|| format!("event {seq} is not the head {whose} saw: the log was rewritten up to it"))
}

/// The empty log's head, seq 0, against the heads kept at seq 0 (by a
/// transaction, or by the host).
fn genesis_problem(
    seen: &HeadsSeen,
    expected: Option<&(i64, String)>,
    report: &mut ChainReport,
) -> Option<Problem> {
    let mut problem = None;
    if let Some(heads) = seen.get(&0) {
        for (t, d) in heads {
            if let Some(p) = rewritten(
                0,
                crate::store::GENESIS_DIGEST,
                d,
                &format!("transaction {t}"),
            ) {
                problem.get_or_insert((Some(1), p));
            }
        }
    }
    if let Some((0, d)) = expected {
        let ok = d == crate::store::GENESIS_DIGEST;
        report.expected_head_found = Some(ok);
        if !ok {
            problem.get_or_insert((
                Some(1),
                rewritten(0, crate::store::GENESIS_DIGEST, d, "the host").unwrap_or_default(),
            ));
        }
    }
    problem
}

/// Walk the log in order: each event's seq follows the last, its
/// `prev_digest` is the previous event's digest, its digest covers its
/// content, and it is the head the host and every transaction kept at its
/// seq. Counts into `report`; the first problem stops the walk.
fn walk_chain(
    tx: &store::sql::Tx<'_>,
    seen: &HeadsSeen,
    expected: Option<&(i64, String)>,
    report: &mut ChainReport,
) -> Result<Option<Problem>, ToolError> {
    let mut problem = None;
    store::events::for_each(tx, |fields, digest| {
        let seq = fields.seq;
        let prev = fields.prev_digest;
        let computed = fields.digest();
        report.checked += 1;
        let broken = if seq != report.last_seq + 1 {
            Some(format!("seq {seq} follows {}", report.last_seq))
        } else if prev != report.head_digest {
            Some("prev_digest is not the previous event's digest".to_owned())
        } else if digest != computed {
            Some("digest does not match the event's content".to_owned())
        } else {
            None
        };
        let broken = broken.or_else(|| {
            let host = expected
                .filter(|(s, _)| *s == seq)
                .and_then(|(_, d)| rewritten(seq, digest, d, "the host"));
            if expected.is_some_and(|(s, _)| *s == seq) {
                report.expected_head_found = Some(host.is_none());
            }
            host.or_else(|| {
                seen.get(&seq)?
                    .iter()
                    .find_map(|(t, d)| rewritten(seq, digest, d, &format!("transaction {t}")))
            })
        });
        if let Some(reason) = broken {
            problem = Some((Some(seq), reason));
            return false;
        }
        report.last_seq = seq;
        report.head_digest = digest.to_owned();
        true
    })?;
    Ok(problem)
}

/// Heads kept beyond the log's `last` event: the log was truncated (or a
/// journal holds a malformed head).
fn truncation(seen: &HeadsSeen, expected: Option<&(i64, String)>, last: i64) -> Option<Problem> {
    let beyond = expected
        .filter(|(s, _)| *s > last)
        .map(|(s, _)| format!("the log ends at seq {last}, before the head the host kept (seq {s}): events were deleted"))
        .or_else(|| {
            seen.range(last + 1..).next().and_then(|(s, heads)| {
                heads.first().map(|(t, _)| {
                    format!("the log ends at seq {last}, before the head transaction {t} saw (seq {s}): events were deleted")
                })
            })
        })
        .or_else(|| {
            seen.get(&-1).and_then(|h| h.first()).map(|(t, _)| {
                format!("transaction {t}'s journal holds a malformed chain head")
            })
        });
    beyond.map(|reason| (Some(last + 1), reason))
}

/// Count the evidence records (and transactions) into `report`, listing
/// the first [`MAX_UNRECORDED`] that no event records; how many there are.
fn unrecorded_records(tx: &store::sql::Tx<'_>, report: &mut ChainReport) -> Result<u64, ToolError> {
    let mut unrecorded_count = 0u64;
    for t in store::events::RECORDED {
        report.records_checked += store::events::row_count(tx, t)?;
        let room = MAX_UNRECORDED - report.unrecorded.len();
        let (count, first) = store::events::unrecorded(tx, t, room)?;
        unrecorded_count += count;
        for (id, proposal_id) in first {
            report.unrecorded.push(UnrecordedRecord {
                kind: t.what,
                id,
                proposal_id,
            });
        }
    }
    Ok(unrecorded_count)
}
