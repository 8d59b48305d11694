//! The `policies` table: versioned policy documents (`draft`, `active`,
//! `retired`).

use super::rows::FromRow as _;
use super::{actor_from_sql, enum_from_sql};
use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::model::PolicyRecord;
use crate::store::sql::{params, OptionalExtension as _, Row, Tx};

impl super::rows::FromRow for PolicyRecord {
    /// The columns [`PolicyRecord::from_row`] reads, in order.
    const COLUMNS: &'static str =
        "version, status, document, digest, note_md, created_by, created_at, activated_at, retired_at";

    /// A stored version from its row.
    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<PolicyRecord> {
        Ok(PolicyRecord {
            version: r.get(0)?,
            status: enum_from_sql(&r.get::<String>(1)?)?,
            document: r.get(2)?,
            digest: r.get(3)?,
            note_md: r.get(4)?,
            created_by: Some(actor_from_sql(&r.get::<String>(5)?)?),
            created_at: Some(Timestamp(r.get(6)?)),
            activated_at: r.get::<Option<i64>>(7)?.map(Timestamp),
            retired_at: r.get::<Option<i64>>(8)?.map(Timestamp),
        })
    }
}

/// Policy version `version`, if stored.
pub fn version(conn: &Tx<'_>, version: u32) -> crate::store::sql::Result<Option<PolicyRecord>> {
    conn.query_row(
        &format!(
            "SELECT {} FROM policies WHERE version = ?1",
            PolicyRecord::COLUMNS
        ),
        [version],
        PolicyRecord::from_row,
    )
    .optional()
}

/// The active version, if one is.
pub fn active(conn: &Tx<'_>) -> crate::store::sql::Result<Option<PolicyRecord>> {
    conn.query_row(
        &format!(
            "SELECT {} FROM policies WHERE status = 'active'",
            PolicyRecord::COLUMNS
        ),
        params![],
        PolicyRecord::from_row,
    )
    .optional()
}

/// The active version's number, if one is.
pub fn active_version(conn: &Tx<'_>) -> crate::store::sql::Result<Option<u32>> {
    conn.query_row(
        "SELECT version FROM policies WHERE status = 'active'",
        params![],
        |r| r.get(0),
    )
    .optional()
}

/// The number the next stored version gets.
pub fn next_version(conn: &Tx<'_>) -> crate::store::sql::Result<u32> {
    conn.query_row(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM policies",
        params![],
        |r| r.get(0),
    )
}

/// Store `document` (digest `digest`) as draft `version`, by `created_by` at `now`.
pub fn insert_draft(
    tx: &Tx<'_>,
    version: u32,
    document: &str,
    digest: &str,
    note_md: Option<&str>,
    created_by: &Actor,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO policies (version, status, document, digest, note_md, created_by, created_at)
         VALUES (?1, 'draft', ?2, ?3, ?4, ?5, ?6)",
        params![
            version,
            document,
            digest,
            note_md,
            created_by.to_string(),
            now.0
        ],
    )?;
    Ok(())
}

/// Retire `version` at `now`.
pub fn retire(tx: &Tx<'_>, version: u32, now: Timestamp) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE policies SET status = 'retired', retired_at = ?2 WHERE version = ?1",
        params![version, now.0],
    )?;
    Ok(())
}

/// Activate `version` at `now`.
pub fn activate(tx: &Tx<'_>, version: u32, now: Timestamp) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE policies SET status = 'active', activated_at = ?2 WHERE version = ?1",
        params![version, now.0],
    )?;
    Ok(())
}
