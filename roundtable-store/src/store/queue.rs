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
