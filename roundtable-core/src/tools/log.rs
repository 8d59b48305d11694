//! The audit log: reading it and verifying its hash chain.

use super::args::Limit;
use super::records::Event;
use super::{Cx, Tool, ToolError};
use crate::id::Id;
use rusqlite::params;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `events.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsListArgs {
    /// Return events after this `seq` (default 0: from the start).
    pub since_seq: Option<u64>,
    /// Only events about this proposal.
    pub proposal_id: Option<Id>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<Limit<1000>>,
}

/// Result of `events.list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EventPage {
    /// Events in `seq` order.
    pub events: Vec<Event>,
    /// Pass as `since_seq` for the next page; `null` when this page is the
    /// end of the log for now.
    pub next_since_seq: Option<i64>,
}

/// `events.list`.
pub struct EventsList;

impl Tool for EventsList {
    const NAME: &'static str = "events.list";
    const DESCRIPTION: &'static str =
        "Read the audit log in seq order after since_seq, optionally for one proposal.";
    const MUTATES: bool = false;
    type Args = EventsListArgs;
    type Output = EventPage;

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: EventsListArgs, (): ()) -> Result<EventPage, ToolError> {
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

/// Arguments of `events.verify` (none).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsVerifyArgs {}

/// Result of `events.verify`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChainReport {
    /// Whether every event's digest matches its content and its
    /// predecessor, and `seq` runs 1, 2, 3… without a gap.
    pub valid: bool,
    /// How many events were checked.
    pub checked: u64,
    /// The last event's seq (0 for an empty log).
    pub last_seq: i64,
    /// The last event's digest: a commitment to the whole log.
    pub head_digest: String,
    /// The first event that does not verify, if any.
    pub first_invalid_seq: Option<i64>,
    /// Why it does not.
    pub reason: Option<String>,
}

/// `events.verify`.
pub struct EventsVerify;

impl Tool for EventsVerify {
    const NAME: &'static str = "events.verify";
    const DESCRIPTION: &'static str = "Check the audit log's hash chain: every event's digest covers its fields and its predecessor's digest.";
    const MUTATES: bool = false;
    type Args = EventsVerifyArgs;
    type Output = ChainReport;

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, _: EventsVerifyArgs, (): ()) -> Result<ChainReport, ToolError> {
        let mut stmt = cx.tx.prepare(
            "SELECT seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest
             FROM events ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        let mut report = ChainReport {
            valid: true,
            checked: 0,
            last_seq: 0,
            head_digest: crate::store::GENESIS_DIGEST.to_owned(),
            first_invalid_seq: None,
            reason: None,
        };
        while let Some(r) = rows.next()? {
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
            let expected = crate::store::EventFields {
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
            let problem = if seq != report.last_seq + 1 {
                Some(format!("seq {seq} follows {}", report.last_seq))
            } else if prev != report.head_digest {
                Some("prev_digest is not the previous event's digest".to_owned())
            } else if digest != expected {
                Some("digest does not match the event's content".to_owned())
            } else {
                None
            };
            report.checked += 1;
            if let Some(reason) = problem {
                report.valid = false;
                report.first_invalid_seq = Some(seq);
                report.reason = Some(reason);
                break;
            }
            report.last_seq = seq;
            report.head_digest = digest;
        }
        Ok(report)
    }
}
