//! Reads of the `transactions` and `transaction_files` tables the tools
//! make (the apply writes its journal itself, in `apply`).

use super::enum_to_sql;
use super::rows::FromRow as _;
use crate::clock::Timestamp;
use crate::model::{Transaction, TransactionStatus};
use crate::store::sql::{params, OptionalExtension as _, Tx};

/// A path an `applying` transaction journaled.
pub struct ApplyingFile {
    /// The transaction.
    pub transaction_id: String,
    /// Its proposal.
    pub proposal_id: String,
    /// The journaled path (as stored).
    pub path: String,
}

/// Every path of every transaction still `applying`, by transaction then
/// path.
pub fn applying_files(conn: &Tx<'_>) -> crate::store::sql::Result<Vec<ApplyingFile>> {
    let rows = conn.query_map(
        "SELECT t.id, t.proposal_id, f.path FROM transactions t
         JOIN transaction_files f ON f.transaction_id = t.id
         WHERE t.status = 'applying' ORDER BY t.seq, f.path",
        params![],
        |r| {
            Ok(ApplyingFile {
                transaction_id: r.get(0)?,
                proposal_id: r.get(1)?,
                path: r.get(2)?,
            })
        },
    )?;
    Ok(rows)
}

/// The clone (its store's `clone_id`: one repository of one host) that
/// journaled transaction `id`; `None` for a transaction journaled before
/// clones were recorded, or none of that id.
pub fn clone_of(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT clone_id FROM transactions WHERE id = ?1",
            params![id],
            |r| r.get::<Option<String>>(0),
        )
        .optional()?
        .flatten())
}

/// The newest transaction's `seq` (0 for none) and how many are
/// `applying`.
pub fn apply_mark(conn: &Tx<'_>) -> crate::store::sql::Result<(i64, i64)> {
    conn.query_row(
        "SELECT coalesce(max(seq), 0), count(*) FILTER (WHERE status = 'applying') FROM transactions",
        params![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// The newest apply of `proposal_id` still `applying`, if any.
pub fn applying_for(conn: &Tx<'_>, proposal_id: &str) -> crate::store::sql::Result<Option<String>> {
    conn.query_row(
        "SELECT id FROM transactions WHERE proposal_id = ?1 AND kind = 'apply' AND status = 'applying'
                 ORDER BY seq DESC LIMIT 1",
        [proposal_id],
        |r| r.get(0),
    )
    .optional()
}

/// Mark applied transaction `id` rolled back; the number of rows changed.
pub fn mark_rolled_back(tx: &Tx<'_>, id: &str) -> crate::store::sql::Result<usize> {
    tx.execute(
        "UPDATE transactions SET status = 'rolled_back' WHERE id = ?1 AND status = 'applied'",
        [id],
    )
}

/// A page of transactions after `seq` `after` (only `proposal_id`'s, only
/// in `status`, when given), oldest first, at most `limit`.
pub fn list(
    conn: &Tx<'_>,
    after: i64,
    proposal_id: Option<&str>,
    status: Option<TransactionStatus>,
    limit: i64,
) -> crate::store::sql::Result<Vec<Transaction>> {
    let proposal = if proposal_id.is_some() {
        " AND t.proposal_id = ?2"
    } else {
        " AND CAST(?2 AS TEXT) IS NULL"
    };
    let status_sql = if status.is_some() {
        " AND t.status = ?3"
    } else {
        " AND CAST(?3 AS TEXT) IS NULL"
    };
    let transactions = conn.query_map(&format!(
        "SELECT {} FROM transactions t WHERE t.seq > ?1{proposal}{status_sql} ORDER BY t.seq LIMIT ?4",
        Transaction::COLUMNS
    ), params![after, proposal_id, status.map(|s| enum_to_sql(&s)), limit],
            Transaction::from_row)?;
    Ok(transactions)
}

/// Transaction `id`'s phases, in order.
pub fn phases(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Vec<crate::model::Phase>> {
    let phases = conn.query_map("SELECT phase, status, detail, at FROM transaction_phases WHERE transaction_id = ?1 ORDER BY seq", [id], |r| {
            let detail: String = r.get(2)?;
            Ok(crate::model::Phase {
                phase: super::enum_from_sql(&r.get::<String>(0)?)?,
                status: super::enum_from_sql(&r.get::<String>(1)?)?,
                detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                at: Timestamp(r.get(3)?),
            })
        })?;
    Ok(phases)
}
