//! The `queue_entries` table: the landing queue, in order.

use super::rows::FromRow as _;
use super::{actor_from_sql, enum_from_sql, enum_to_sql};
use crate::clock::Timestamp;
use crate::model::{QueueEntry, QueueReturnReason, QueueStatus};
use crate::store::sql::{params, OptionalExtension as _, Row, Tx};

impl super::rows::FromRow for QueueEntry {
    const COLUMNS: &'static str = "id, proposal_id, status, enqueued_by, enqueued_at, settled_at, return_reason, note, transaction_id, seq";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<QueueEntry> {
        Ok(QueueEntry {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            status: enum_from_sql(&r.get::<String>(2)?)?,
            enqueued_by: actor_from_sql(&r.get::<String>(3)?)?,
            enqueued_at: Timestamp(r.get(4)?),
            settled_at: r.get::<Option<i64>>(5)?.map(Timestamp),
            return_reason: r
                .get::<Option<String>>(6)?
                .map(|s| enum_from_sql(&s))
                .transpose()?,
            note: r.get(7)?,
            transaction_id: r.get(8)?,
            seq: r.get(9)?,
        })
    }
}

/// Insert a `queued` entry (the caller checked the proposal has none).
pub fn insert(tx: &Tx<'_>, e: &QueueEntry) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO queue_entries (id, proposal_id, status, enqueued_by, enqueued_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            e.id,
            e.proposal_id,
            enum_to_sql(&e.status),
            e.enqueued_by.to_string(),
            e.enqueued_at.0
        ],
    )?;
    Ok(())
}

/// The `queued` entry of `proposal_id`, if it has one.
pub fn queued_for(tx: &Tx<'_>, proposal_id: &str) -> crate::store::sql::Result<Option<QueueEntry>> {
    tx.query_row(
        &format!(
            "SELECT {} FROM queue_entries WHERE proposal_id = ?1 AND status = 'queued'",
            QueueEntry::COLUMNS
        ),
        [proposal_id],
        QueueEntry::from_row,
    )
    .optional()
}

/// Entry `id`, if any.
pub fn entry(tx: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<QueueEntry>> {
    tx.query_row(
        &format!(
            "SELECT {} FROM queue_entries WHERE id = ?1",
            QueueEntry::COLUMNS
        ),
        [id],
        QueueEntry::from_row,
    )
    .optional()
}

/// Up to `limit` entries after `seq` `after`, in queue order: only those
/// with `status` when given.
pub fn list(
    tx: &Tx<'_>,
    status: Option<QueueStatus>,
    after: i64,
    limit: i64,
) -> crate::store::sql::Result<Vec<QueueEntry>> {
    let status = status.map(|s| enum_to_sql(&s));
    let out = tx.query_map(
        &format!(
            "SELECT {} FROM queue_entries WHERE seq > ?1 AND (CAST(?2 AS TEXT) IS NULL OR status = ?2)
             ORDER BY seq LIMIT ?3",
            QueueEntry::COLUMNS
        ),
        params![after, status, limit],
        QueueEntry::from_row,
    )?;
    Ok(out)
}

/// How an entry leaves the queue.
#[derive(Debug)]
pub struct Settle<'a> {
    /// `landed`, `returned` or `removed`.
    pub status: QueueStatus,
    /// When.
    pub at: Timestamp,
    /// Why it was returned.
    pub return_reason: Option<QueueReturnReason>,
    /// The output, conflict, refusal or reason.
    pub note: Option<&'a str>,
    /// The transaction that landed it.
    pub transaction_id: Option<&'a str>,
}

/// Settle entry `id` if it is still `queued`; whether it was.
pub fn settle(tx: &Tx<'_>, id: &str, s: &Settle<'_>) -> crate::store::sql::Result<bool> {
    let n = tx.execute(
        "UPDATE queue_entries SET status = ?2, settled_at = ?3, return_reason = ?4, note = ?5, transaction_id = ?6
         WHERE id = ?1 AND status = 'queued'",
        params![
            id,
            enum_to_sql(&s.status),
            s.at.0,
            s.return_reason.map(|r| enum_to_sql(&r)),
            s.note,
            s.transaction_id
        ],
    )?;
    Ok(n == 1)
}

/// The `queued` entries leased to a runner other than `runner` whose
/// lease holds after `now`, with that runner.
pub fn leased_to_others(
    tx: &Tx<'_>,
    runner: &str,
    now: Timestamp,
) -> crate::store::sql::Result<Vec<(String, String)>> {
    let out = tx.query_map(
        "SELECT id, runner FROM queue_entries
         WHERE status = 'queued' AND lease_until > ?2 AND runner IS NOT NULL AND runner <> ?1
         ORDER BY seq",
        params![runner, now.0],
        |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
    )?;
    Ok(out)
}

/// Which of entries `ids` are `queued`.
pub fn queued_among<'a>(
    tx: &Tx<'_>,
    ids: impl IntoIterator<Item = &'a str>,
) -> crate::store::sql::Result<std::collections::BTreeSet<&'a str>> {
    let mut out = std::collections::BTreeSet::new();
    for id in ids {
        let queued = tx
            .query_row(
                "SELECT 1 FROM queue_entries WHERE id = ?1 AND status = 'queued'",
                [id],
                |r| r.get::<i64>(0),
            )
            .optional()?
            .is_some();
        if queued {
            out.insert(id);
        }
    }
    Ok(out)
}

/// Lease the `queued` entries `ids` to `runner` until `until` (the
/// caller checked, in this transaction, that no other runner's lease
/// holds any of them); how many were leased.
pub fn lease(
    tx: &Tx<'_>,
    ids: &[&str],
    runner: &str,
    until: Timestamp,
) -> crate::store::sql::Result<usize> {
    let mut n = 0;
    for id in ids {
        n += tx.execute(
            "UPDATE queue_entries SET runner = ?2, lease_until = ?3 WHERE id = ?1 AND status = 'queued'",
            params![*id, runner, until.0],
        )?;
    }
    Ok(n)
}

/// Extend to `until` every lease `runner` holds on a `queued` entry; how
/// many.
pub fn renew_leases(
    tx: &Tx<'_>,
    runner: &str,
    until: Timestamp,
) -> crate::store::sql::Result<usize> {
    tx.execute(
        "UPDATE queue_entries SET lease_until = ?2
         WHERE runner = ?1 AND lease_until IS NOT NULL AND status = 'queued'",
        params![runner, until.0],
    )
}

/// End every lease `runner` holds (the entries keep `runner` as the
/// record of who ran them last); how many.
pub fn release_leases(tx: &Tx<'_>, runner: &str) -> crate::store::sql::Result<usize> {
    tx.execute(
        "UPDATE queue_entries SET lease_until = NULL WHERE runner = ?1 AND lease_until IS NOT NULL",
        params![runner],
    )
}

/// The runner that leased entry `id` last and until when its lease holds
/// (`None`: not leased now), if the entry exists.
#[allow(clippy::type_complexity)]
pub fn lease_of(
    tx: &Tx<'_>,
    id: &str,
) -> crate::store::sql::Result<Option<(Option<String>, Option<Timestamp>)>> {
    tx.query_row(
        "SELECT runner, lease_until FROM queue_entries WHERE id = ?1",
        [id],
        |r| {
            Ok((
                r.get::<Option<String>>(0)?,
                r.get::<Option<i64>>(1)?.map(Timestamp),
            ))
        },
    )
    .optional()
}
