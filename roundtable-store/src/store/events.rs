//! The `events` table: the hash-chained audit log (appended by
//! [`append_event`](super::append_event)), read back in order, and the
//! evidence tables' cross-check against it.

use super::rows::FromRow as _;
use super::EventFields;
use crate::model::{Event, RecordKind};
use crate::store::sql::{params, Dialect, OptionalExtension as _, Tx};

/// A table of evidence and the event that must record each of its rows
/// `r` with the row's own content (an `e` of `r`'s proposal).
pub struct Recorded {
    /// The table.
    pub table: &'static str,
    /// What a row is called in a report.
    pub what: RecordKind,
    /// The event kind whose subject is the row's id, for the tables the
    /// policy reads (`None`: the row is recorded otherwise).
    pub kind: Option<&'static str>,
    /// SQL over `r` and `e`: true when `e` records `r`.
    pub matches: &'static str,
}

/// Every evidence table, with how its event is matched.
pub const RECORDED: &[Recorded] = &[
    Recorded {
        table: "votes",
        what: RecordKind::Vote,
        kind: Some("vote.cast"),
        matches: "e.kind = 'vote.cast' AND e.subject = r.id AND e.actor_kind = 'agent' AND e.actor_id = r.agent_id
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.vote') = r.vote",
    },
    Recorded {
        table: "decisions",
        what: RecordKind::Decision,
        kind: None,
        matches: "((e.kind = 'decision.recorded' AND e.subject = r.id AND json_extract(e.data, '$.decision') = r.decision)
                   OR (e.kind = 'proposal.rejected' AND e.subject = r.proposal_id AND r.decision = 'reject'
                       AND json_extract(e.data, '$.decision_id') = r.id))
                  AND json_extract(e.data, '$.revision') = r.revision AND e.actor_kind || ':' || e.actor_id = r.decided_by",
    },
    Recorded {
        table: "security_reviews",
        what: RecordKind::SecurityReview,
        kind: Some("security.reviewed"),
        matches: "e.kind = 'security.reviewed' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.reviewer
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.verdict') = r.verdict",
    },
    Recorded {
        table: "human_approval_requests",
        what: RecordKind::HumanApprovalRequest,
        kind: Some("human.approval_requested"),
        matches: "e.kind = 'human.approval_requested' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.requested_by
                  AND json_extract(e.data, '$.revision') = r.revision",
    },
    Recorded {
        table: "human_approvals",
        what: RecordKind::HumanApproval,
        kind: Some("human.approved"),
        matches: "e.kind = 'human.approved' AND e.subject = r.id AND e.actor_kind = 'human' AND e.actor_id = r.human_id
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.request_id') IS r.request_id",
    },
    Recorded {
        table: "test_results",
        what: RecordKind::TestResult,
        kind: Some("test.recorded"),
        matches: "e.kind = 'test.recorded' AND e.subject = r.id AND e.actor_kind || ':' || e.actor_id = r.recorded_by
                  AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.name') = r.name
                  AND json_extract(e.data, '$.status') = r.status",
    },
    Recorded {
        table: "transactions",
        what: RecordKind::Transaction,
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
pub fn recorded_filter(table: &str) -> String {
    match RECORDED
        .iter()
        .find(|t| t.table == table)
        .and_then(|t| t.kind)
    {
        Some(kind) => {
            format!("id IN (SELECT subject FROM events WHERE proposal_id = ?1 AND kind = '{kind}')")
        }
        None => "TRUE".to_owned(),
    }
}

/// A [`Recorded::matches`] condition as PostgreSQL spells it: SQLite's
/// `json_extract(x, '$.a')` is `(x::jsonb ->> 'a')` (text), so what it is
/// compared with is compared as text, and `IS` between values is `IS NOT
/// DISTINCT FROM`.
fn postgres_matches(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut rest = sql;
    while let Some(at) = rest.find("json_extract(") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "json_extract(".len()..];
        let Some(close) = after.find(')') else {
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        let (column, path) = inner.split_once(", ").unwrap_or((inner, "'$'"));
        let key = path.trim_matches('\'').trim_start_matches("$.");
        out.push_str(&format!("({column}::jsonb ->> '{key}')"));
        rest = &after[close + 1..];
        // The value compared with it, as text.
        for (op, pg) in [(" = r.", " = r."), (" IS r.", " IS NOT DISTINCT FROM r.")] {
            if let Some(tail) = rest.strip_prefix(op) {
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                out.push_str(&format!("{pg}{}::text", &tail[..end]));
                rest = &tail[end..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A page of events after `seq` `since` (only `proposal_id`'s when
/// given), in `seq` order, at most `limit`.
pub fn list(
    conn: &Tx<'_>,
    since: i64,
    proposal_id: Option<&str>,
    limit: i64,
) -> crate::store::sql::Result<Vec<Event>> {
    // Two spellings, not `(?2 IS NULL OR proposal_id = ?2)`: SQLite
    // cannot use `events_by_proposal` for the OR, and would scan every
    // later event to fill one proposal's page.
    let filter = if proposal_id.is_some() {
        "proposal_id = ?2"
    } else {
        "CAST(?2 AS TEXT) IS NULL"
    };
    let events = conn.query_map(
        &format!(
            "SELECT {} FROM events WHERE seq > ?1 AND {filter} ORDER BY seq LIMIT ?3",
            Event::COLUMNS
        ),
        params![since, proposal_id, limit],
        Event::from_row,
    )?;
    Ok(events)
}

/// Which events a waiter waits for.
pub struct EventFilter<'a> {
    /// Only events after this seq.
    pub since: i64,
    /// Only this proposal's.
    pub proposal_id: Option<&'a str>,
    /// Only these kinds (any kind when empty).
    pub kinds: &'a [&'a str],
    /// Only this actor's: `(kind, id)`.
    pub actor: Option<(&'a str, &'a str)>,
}

/// The first `limit` events matching `filter`, in `seq` order.
pub fn matching(
    conn: &Tx<'_>,
    filter: &EventFilter<'_>,
    limit: i64,
) -> crate::store::sql::Result<Vec<Event>> {
    use crate::store::sql::Value;
    let mut sql = format!("SELECT {} FROM events WHERE seq > ?", Event::COLUMNS);
    let mut values = vec![Value::Int(filter.since)];
    if let Some(p) = filter.proposal_id {
        sql.push_str(" AND proposal_id = ?");
        values.push(Value::Text(p.into()));
    }
    if !filter.kinds.is_empty() {
        let marks = vec!["?"; filter.kinds.len()].join(", ");
        sql.push_str(&format!(" AND kind IN ({marks})"));
        values.extend(filter.kinds.iter().map(|k| Value::Text((*k).into())));
    }
    if let Some((kind, id)) = filter.actor {
        sql.push_str(" AND actor_kind = ? AND actor_id = ?");
        values.push(Value::Text(kind.into()));
        values.push(Value::Text(id.into()));
    }
    sql.push_str(" ORDER BY seq LIMIT ?");
    values.push(Value::Int(limit));
    let events = conn.query_map(&sql, values, Event::from_row)?;
    Ok(events)
}

/// The seq of the last event about `proposal_id` (0 when none).
pub fn last_of_proposal(conn: &Tx<'_>, proposal_id: &str) -> crate::store::sql::Result<i64> {
    conn.query_row(
        "SELECT coalesce(max(seq), 0) FROM events WHERE proposal_id = ?1",
        [proposal_id],
        |r| r.get(0),
    )
}

/// The last event's seq (0 for an empty log).
pub fn head_seq(conn: &Tx<'_>) -> crate::store::sql::Result<i64> {
    conn.query_row("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
        r.get(0)
    })
}

/// The chain head a transaction's `journaled` phase recorded.
pub struct JournaledHead {
    /// The transaction.
    pub transaction_id: String,
    /// The head's seq (`None` when malformed).
    pub seq: Option<i64>,
    /// The head's digest (`None` when malformed).
    pub digest: Option<String>,
}

/// Every chain head a `journaled` phase recorded, in phase order.
pub fn journaled_heads(conn: &Tx<'_>) -> crate::store::sql::Result<Vec<JournaledHead>> {
    let sql = match conn.dialect() {
        Dialect::Sqlite => "SELECT transaction_id, json_extract(detail, '$.chain_head.seq'), json_extract(detail, '$.chain_head.digest')
         FROM transaction_phases WHERE phase = 'journaled' AND json_extract(detail, '$.chain_head') IS NOT NULL
         ORDER BY seq",
        Dialect::Postgres => "SELECT transaction_id,
             CASE WHEN jsonb_typeof(detail::jsonb #> '{chain_head,seq}') = 'number' THEN (detail::jsonb #>> '{chain_head,seq}')::bigint END,
             CASE WHEN jsonb_typeof(detail::jsonb #> '{chain_head,digest}') = 'string' THEN detail::jsonb #>> '{chain_head,digest}' END
         FROM transaction_phases WHERE phase = 'journaled' AND detail::jsonb -> 'chain_head' IS NOT NULL
           AND jsonb_typeof(detail::jsonb -> 'chain_head') <> 'null'
         ORDER BY seq",
    };
    let heads = conn.query_map(sql, params![], |r| {
        Ok(JournaledHead {
            transaction_id: r.get(0)?,
            seq: r.get(1)?,
            digest: r.get(2)?,
        })
    })?;
    Ok(heads)
}

/// Stream the log in `seq` order to `f`, with each event's hashed fields
/// as stored and its stored digest, until `f` returns `false`.
pub fn for_each(
    conn: &Tx<'_>,
    mut f: impl FnMut(&EventFields<'_>, &str) -> bool,
) -> crate::store::sql::Result<()> {
    conn.for_each_row(
        "SELECT seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest
         FROM events ORDER BY seq",
        params![],
        |r| {
        let (kind, actor_kind, actor_id, subject, data): (String, String, String, String, String) =
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(6)?);
        let proposal_id: Option<String> = r.get(5)?;
        let prev: String = r.get(8)?;
        let digest: String = r.get(9)?;
        let fields = EventFields {
            seq: r.get(0)?,
            kind: &kind,
            actor_kind: &actor_kind,
            actor_id: &actor_id,
            subject: &subject,
            proposal_id: proposal_id.as_deref(),
            data: &data,
            at: r.get(7)?,
            prev_digest: &prev,
        };
        Ok(f(&fields, &digest))
    })
}

/// How many rows the evidence table `t` holds.
pub fn row_count(conn: &Tx<'_>, t: &Recorded) -> crate::store::sql::Result<u64> {
    Ok(conn
        .query_row(
            &format!("SELECT count(*) FROM {}", t.table),
            params![],
            |r| r.get::<i64>(0),
        )?
        .unsigned_abs())
}

/// The rows of `t` no event records, by `seq`: how many, and the first
/// `max` as `(id, proposal_id)`.
pub fn unrecorded(
    conn: &Tx<'_>,
    t: &Recorded,
    max: usize,
) -> crate::store::sql::Result<(u64, Vec<(String, String)>)> {
    let matches = match conn.dialect() {
        Dialect::Sqlite => t.matches.to_owned(),
        Dialect::Postgres => postgres_matches(t.matches),
    };
    let mut count = 0u64;
    let mut first = Vec::new();
    conn.for_each_row(
        &format!(
            "SELECT r.id, r.proposal_id FROM {} r
             WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.proposal_id = r.proposal_id AND ({matches}))
             ORDER BY r.seq",
            t.table
        ),
        params![],
        |r| {
            count += 1;
            if first.len() < max {
                first.push((r.get(0)?, r.get(1)?));
            }
            Ok(true)
        },
    )?;
    Ok((count, first))
}

/// The digest of event `seq` (`None`: the log has no such event).
pub fn digest_at(conn: &Tx<'_>, seq: i64) -> crate::store::sql::Result<Option<String>> {
    conn.query_row("SELECT digest FROM events WHERE seq = ?1", [seq], |r| {
        r.get(0)
    })
    .optional()
}

/// Whether an event of `kind` names `subject`.
pub fn names(conn: &Tx<'_>, kind: &str, subject: &str) -> crate::store::sql::Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM events WHERE kind = ?1 AND subject = ?2 LIMIT 1",
            params![kind, subject],
            |r| r.get::<i64>(0),
        )
        .optional()?
        .is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_matches_compare_json_fields_as_text_and_is_as_not_distinct() {
        assert_eq!(
            postgres_matches(
                "e.subject = r.id AND json_extract(e.data, '$.revision') = r.revision AND json_extract(e.data, '$.request_id') IS r.request_id"
            ),
            "e.subject = r.id AND (e.data::jsonb ->> 'revision') = r.revision::text AND (e.data::jsonb ->> 'request_id') IS NOT DISTINCT FROM r.request_id::text"
        );
        // Every condition the cross-check uses translates without a
        // `json_extract` left over.
        for t in RECORDED {
            assert!(
                !postgres_matches(t.matches).contains("json_extract"),
                "{}",
                t.table
            );
        }
    }
}
