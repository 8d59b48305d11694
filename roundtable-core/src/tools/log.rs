//! The audit log: reading it and verifying its hash chain.

use super::args::Limit;
use super::records::Event;
use super::{Cx, Tool, ToolError};
use crate::id::Id;
use rusqlite::params;
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
        // Two spellings, not `(?2 IS NULL OR proposal_id = ?2)`: SQLite
        // cannot use `events_by_proposal` for the OR, and would scan every
        // later event to fill one proposal's page.
        let filter = if args.proposal_id.is_some() {
            "proposal_id = ?2"
        } else {
            "?2 IS NULL"
        };
        let mut stmt = cx.tx.prepare(&format!(
            "SELECT {} FROM events WHERE seq > ?1 AND {filter} ORDER BY seq LIMIT ?3",
            Event::COLUMNS
        ))?;
        let mut events = stmt
            .query_map(
                params![
                    since,
                    args.proposal_id.as_ref().map(Id::as_str),
                    i64::from(limit) + 1
                ],
                Event::from_row,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
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
    pub kind: String,
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

/// A table of evidence and the event that must record each of its rows
/// `r` with the row's own content (an `e` of `r`'s proposal).
pub(crate) struct Recorded {
    /// The table.
    pub table: &'static str,
    /// What a row is called in a report.
    pub what: &'static str,
    /// The event kind whose subject is the row's id, for the tables the
    /// policy reads (`None`: the row is recorded otherwise).
    pub kind: Option<&'static str>,
    /// SQL over `r` and `e`: true when `e` records `r`.
    pub matches: &'static str,
}

/// Every evidence table, with how its event is matched.
pub(crate) const RECORDED: &[Recorded] = &[
    Recorded {
        table: "votes",
        what: "vote",
        kind: Some("vote.cast"),
        matches: "e.kind = 'vote.cast' AND e.subject = r.id AND e.actor_kind = 'agent' AND e.actor_id = r.agent_id
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.vote') = r.vote",
    },
    Recorded {
        table: "decisions",
        what: "decision",
        kind: None,
        matches: "((e.kind = 'decision.recorded' AND e.subject = r.id AND json_extract(e.data, '$.decision') = r.decision)
                   OR (e.kind = 'proposal.rejected' AND e.subject = r.proposal_id AND r.decision = 'reject'
                       AND json_extract(e.data, '$.decision_id') = r.id))
                  AND json_extract(e.data, '$.revision') = r.revision AND e.actor_kind || ':' || e.actor_id = r.decided_by",
    },
    Recorded {
        table: "security_reviews",
        what: "security_review",
        kind: Some("security.reviewed"),
        matches: "e.kind = 'security.reviewed' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.reviewer
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.verdict') = r.verdict",
    },
    Recorded {
        table: "human_approval_requests",
        what: "human_approval_request",
        kind: Some("human.approval_requested"),
        matches: "e.kind = 'human.approval_requested' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.requested_by
                  AND json_extract(e.data, '$.revision') = r.revision",
    },
    Recorded {
        table: "human_approvals",
        what: "human_approval",
        kind: Some("human.approved"),
        matches: "e.kind = 'human.approved' AND e.subject = r.id AND e.actor_kind = 'human' AND e.actor_id = r.human_id
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.request_id') IS r.request_id",
    },
    Recorded {
        table: "test_results",
        what: "test_result",
        kind: Some("test.recorded"),
        matches: "e.kind = 'test.recorded' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.recorded_by
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.name') = r.name
                  AND json_extract(e.data, '$.status') = r.status",
    },
    Recorded {
        table: "transactions",
        what: "transaction",
        kind: None,
        matches: "e.kind = 'transaction.started' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.actor
                  AND json_extract(e.data, '$.revision') = r.revision",
    },
];

/// The SQL condition that keeps only the rows of `table` (of the proposal
/// bound as `?1`) that an event of their kind names (`1` for a table
/// without one subject kind): the policy counts no evidence inserted
/// behind roundtable's back. The subquery is uncorrelated, so SQLite
/// reads the proposal's events once.
pub(crate) fn recorded_filter(table: &str) -> String {
    match RECORDED
        .iter()
        .find(|t| t.table == table)
        .and_then(|t| t.kind)
    {
        Some(kind) => {
            format!("id IN (SELECT subject FROM events WHERE proposal_id = ?1 AND kind = '{kind}')")
        }
        None => "1".to_owned(),
    }
}

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
        let expected = match args.expected_head {
            Some(h) => {
                if !is_event_digest(&h.digest) {
                    return Err(ToolError::invalid_argument(
                        "expected_head.digest",
                        "is not sha256: and 64 lowercase hex digits",
                    ));
                }
                let seq = i64::try_from(h.seq).map_err(|_| {
                    ToolError::invalid_argument("expected_head.seq", "is too large")
                })?;
                Some((seq, h.digest))
            }
            None => None,
        };
        // The heads transactions saw: seq -> (transaction, digest).
        let mut seen: BTreeMap<i64, Vec<(String, String)>> = BTreeMap::new();
        {
            let mut stmt = cx.tx.prepare(
                "SELECT transaction_id, json_extract(detail, '$.chain_head.seq'), json_extract(detail, '$.chain_head.digest')
                 FROM transaction_phases WHERE phase = 'journaled' AND json_extract(detail, '$.chain_head') IS NOT NULL
                 ORDER BY seq",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let seq: Option<i64> = r.get(1)?;
                let digest: Option<String> = r.get(2)?;
                seen.entry(seq.unwrap_or(-1))
                    .or_default()
                    .push((r.get(0)?, digest.unwrap_or_default()));
            }
        }
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
        let mut problem: Option<(Option<i64>, String)> = None;
        // What the log holds at `seq` (verified so far) against a head
        // someone kept: `Some(problem)` when they disagree.
        let at = |seq: i64, digest: &str, head: &str, whose: &str| -> Option<String> {
            (digest != head).then(|| {
                format!("event {seq} is not the head {whose} saw: the log was rewritten up to it")
            })
        };
        // The empty log's head, seq 0.
        if let Some(heads) = seen.get(&0) {
            for (t, d) in heads {
                if let Some(p) = at(
                    0,
                    crate::store::GENESIS_DIGEST,
                    d,
                    &format!("transaction {t}"),
                ) {
                    problem.get_or_insert((Some(1), p));
                }
            }
        }
        if let Some((0, d)) = &expected {
            let ok = d == crate::store::GENESIS_DIGEST;
            report.expected_head_found = Some(ok);
            if !ok {
                problem.get_or_insert((
                    Some(1),
                    at(0, crate::store::GENESIS_DIGEST, d, "the host").unwrap_or_default(),
                ));
            }
        }
        let mut stmt = cx.tx.prepare(
            "SELECT seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest
             FROM events ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if problem.is_some() {
                break;
            }
            let seq: i64 = r.get(0)?;
            let prev: String = r.get(8)?;
            let digest: String = r.get(9)?;
            let (kind, actor_kind, actor_id, subject, data): (
                String,
                String,
                String,
                String,
                String,
            ) = (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(6)?);
            let proposal_id: Option<String> = r.get(5)?;
            let computed = crate::store::EventFields {
                seq,
                kind: &kind,
                actor_kind: &actor_kind,
                actor_id: &actor_id,
                subject: &subject,
                proposal_id: proposal_id.as_deref(),
                data: &data,
                at: r.get(7)?,
                prev_digest: &prev,
            }
            .digest();
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
                    .as_ref()
                    .filter(|(s, _)| *s == seq)
                    .and_then(|(_, d)| at(seq, &digest, d, "the host"));
                if expected.as_ref().is_some_and(|(s, _)| *s == seq) {
                    report.expected_head_found = Some(host.is_none());
                }
                host.or_else(|| {
                    seen.get(&seq)?
                        .iter()
                        .find_map(|(t, d)| at(seq, &digest, d, &format!("transaction {t}")))
                })
            });
            if let Some(reason) = broken {
                problem = Some((Some(seq), reason));
                break;
            }
            report.last_seq = seq;
            report.head_digest = digest;
        }
        drop(rows);
        if problem.is_none() {
            // Heads beyond the end: the log was truncated.
            let last = report.last_seq;
            let beyond = expected
                .as_ref()
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
            if let Some(reason) = beyond {
                problem = Some((Some(last + 1), reason));
            }
        }
        // Every evidence record (and transaction) has its event.
        let mut unrecorded_count = 0u64;
        for t in RECORDED {
            report.records_checked += cx
                .tx
                .query_row(&format!("SELECT count(*) FROM {}", t.table), [], |r| {
                    r.get::<_, i64>(0)
                })?
                .unsigned_abs();
            let mut stmt = cx.tx.prepare(&format!(
                "SELECT r.id, r.proposal_id FROM {} r
                 WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.proposal_id = r.proposal_id AND ({}))
                 ORDER BY r.seq",
                t.table, t.matches
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                unrecorded_count += 1;
                if report.unrecorded.len() < MAX_UNRECORDED {
                    report.unrecorded.push(UnrecordedRecord {
                        kind: t.what.to_owned(),
                        id: r.get(0)?,
                        proposal_id: r.get(1)?,
                    });
                }
            }
        }
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
