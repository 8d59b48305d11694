//! The `settings` table: the workspace's own settings, one JSON value per
//! key (store/v9.sql), and the git side of git-mode transactions
//! (`transaction_landings`).

use crate::clock::Timestamp;
use crate::model::Landing;
use crate::store::sql::{params, OptionalExtension as _, Tx};

/// The key of the landing setting.
const LANDING: &str = "landing";

/// The landing setting (files mode when never set). A stored value that
/// does not read as a landing setting is an error, never a silent
/// fallback to files mode.
pub fn landing(conn: &Tx<'_>) -> crate::store::sql::Result<Landing> {
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM settings WHERE key = ?1",
            [LANDING],
            |r| r.get(0),
        )
        .optional()?;
    match value {
        None => Ok(Landing::default()),
        Some(v) => serde_json::from_str(&v).map_err(crate::store::sql::SqlError::decode),
    }
}

/// Store the landing setting.
pub fn set_landing(
    conn: &Tx<'_>,
    landing: &Landing,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    let value = serde_json::to_string(landing).expect("a landing serializes");
    conn.execute(
        "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        params![LANDING, value, now.0],
    )?;
    Ok(())
}

/// The git side of one git-mode transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionLanding {
    /// The full ref name.
    pub branch: String,
    /// The commit the branch was at when the change was validated.
    pub old_id: String,
    /// The commit built for the change.
    pub new_id: String,
    /// The remote the branch is pushed to (its configured location), when
    /// there is one: then the push is the commit point.
    pub remote: Option<String>,
}

/// Record `landing` for transaction `id`.
pub fn insert_transaction_landing(
    conn: &Tx<'_>,
    id: &str,
    landing: &TransactionLanding,
) -> crate::store::sql::Result<()> {
    conn.execute(
        "INSERT INTO transaction_landings (transaction_id, branch, old_id, new_id, remote) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, landing.branch, landing.old_id, landing.new_id, landing.remote],
    )?;
    Ok(())
}

/// Record that transaction `id` (`applying`) lands `landing` instead of
/// what it journaled: its commit was replayed onto a newer tip of the
/// remote's branch after losing a push race. Written before that commit
/// is pushed, so that recovery asks the remote for the commit that may
/// have landed.
pub fn replace_transaction_landing(
    conn: &Tx<'_>,
    id: &str,
    landing: &TransactionLanding,
) -> crate::store::sql::Result<()> {
    conn.execute(
        "UPDATE transaction_landings SET old_id = ?2, new_id = ?3 WHERE transaction_id = ?1",
        params![id, landing.old_id, landing.new_id],
    )?;
    Ok(())
}

/// The git side of transaction `id`, if it landed in git mode.
pub fn transaction_landing(
    conn: &Tx<'_>,
    id: &str,
) -> crate::store::sql::Result<Option<TransactionLanding>> {
    conn.query_row(
        "SELECT branch, old_id, new_id, remote FROM transaction_landings WHERE transaction_id = ?1",
        [id],
        |r| {
            Ok(TransactionLanding {
                branch: r.get(0)?,
                old_id: r.get(1)?,
                new_id: r.get(2)?,
                remote: r.get(3)?,
            })
        },
    )
    .optional()
}

/// The apply transactions that landed on `branch` and were not undone
/// (`applied`, or `rolled_back` by a later commit): each id and the
/// commit that landed it, oldest first.
pub fn landed_on(conn: &Tx<'_>, branch: &str) -> crate::store::sql::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    conn.for_each_row(
        "SELECT l.transaction_id, l.new_id FROM transaction_landings l
         JOIN transactions t ON t.id = l.transaction_id
         WHERE l.branch = ?1 AND t.kind = 'apply' AND t.status IN ('applied', 'rolled_back')
         ORDER BY t.seq",
        params![branch],
        |r| {
            out.push((r.get(0)?, r.get(1)?));
            Ok(true)
        },
    )?;
    Ok(out)
}
