//! Reads of the `transactions` and `transaction_files` tables the tools
//! make (the apply writes its journal itself, in `apply`).

use rusqlite::Connection;

/// A path an `applying` transaction journaled.
pub(crate) struct ApplyingFile {
    /// The transaction.
    pub transaction_id: String,
    /// Its proposal.
    pub proposal_id: String,
    /// The journaled path (as stored).
    pub path: String,
}

/// Every path of every transaction still `applying`, by transaction then
/// path.
pub(crate) fn applying_files(conn: &Connection) -> rusqlite::Result<Vec<ApplyingFile>> {
    let mut stmt = conn.prepare(
        "SELECT t.id, t.proposal_id, f.path FROM transactions t
         JOIN transaction_files f ON f.transaction_id = t.id
         WHERE t.status = 'applying' ORDER BY t.seq, f.path",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ApplyingFile {
                transaction_id: r.get(0)?,
                proposal_id: r.get(1)?,
                path: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
