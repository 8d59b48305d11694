//! The `claims` table and its fencing-token counter.

use super::enum_from_sql;
use crate::claims::{ClaimType, LineSpan};
use crate::clock::Timestamp;
use crate::model::{Claim, ClaimStatus};
use crate::store::sql::{params, OptionalExtension as _, Row, Tx};

/// The columns [`claim_from_row`] reads, in order.
const CLAIM_COLUMNS: &str = "id, agent_id, resource_id, type, task_id, base_digest, token, start_line, end_line, acquired_at, expires_at, released_at, seq";

/// A claim from its row, its status as of `now`.
///
/// A claim whose lease ran out is noted by the engine once
/// ([`note_expired`], with its `claim.expired` event): its `released_at`
/// becomes its `expires_at` (the engine released it at its expiry). It
/// reads exactly as before it was noted: `expired`, no `released_at` (a
/// holder cannot release at that instant: the claim is no longer active
/// then).
fn claim_from_row(r: &Row<'_>, now: Timestamp) -> crate::store::sql::Result<Claim> {
    let expires_at = Timestamp(r.get(10)?);
    let released_at: Option<i64> = r.get::<Option<i64>>(11)?.filter(|at| *at != expires_at.0);
    let span = match (r.get::<Option<u32>>(7)?, r.get::<Option<u32>>(8)?) {
        (Some(start), Some(end)) => Some(LineSpan { start, end }),
        _ => None,
    };
    Ok(Claim {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        resource_id: r.get(2)?,
        claim_type: enum_from_sql(&r.get::<String>(3)?)?,
        task_id: r.get(4)?,
        base_digest: r.get(5)?,
        token: r.get(6)?,
        span,
        acquired_at: Timestamp(r.get(9)?),
        expires_at,
        released_at: released_at.map(Timestamp),
        status: if released_at.is_some() {
            ClaimStatus::Released
        } else if expires_at <= now {
            ClaimStatus::Expired
        } else {
            ClaimStatus::Active
        },
        seq: r.get(12)?,
    })
}

/// The claim named `id`, its status as of `now`, if any.
pub fn claim(conn: &Tx<'_>, id: &str, now: Timestamp) -> crate::store::sql::Result<Option<Claim>> {
    conn.query_row(
        &format!("SELECT {} FROM claims WHERE id = ?1", CLAIM_COLUMNS),
        [id],
        |r| claim_from_row(r, now),
    )
    .optional()
}

/// Every active write claim (only `agent`'s when given) as of `now`,
/// oldest first.
pub fn live_write_claims(
    conn: &Tx<'_>,
    agent: Option<&str>,
    now: Timestamp,
) -> crate::store::sql::Result<Vec<Claim>> {
    let claims = conn.query_map(
        &format!(
            "SELECT {} FROM claims WHERE type = 'write' AND released_at IS NULL AND expires_at > ?1
         AND (CAST(?2 AS TEXT) IS NULL OR agent_id = ?2) ORDER BY seq",
            CLAIM_COLUMNS
        ),
        params![now.0, agent],
        |r| claim_from_row(r, now),
    )?;
    Ok(claims)
}

/// The active claims as of `now` an acquisition by `agent` is checked
/// against: every write claim and all of `agent`'s own, oldest first.
pub fn live_claims_facing(
    conn: &Tx<'_>,
    agent: &str,
    now: Timestamp,
) -> crate::store::sql::Result<Vec<Claim>> {
    let claims = conn.query_map(
        &format!(
            "SELECT {} FROM claims WHERE released_at IS NULL AND expires_at > ?1
             AND (type = 'write' OR agent_id = ?2) ORDER BY seq",
            CLAIM_COLUMNS
        ),
        params![now.0, agent],
        |r| claim_from_row(r, now),
    )?;
    Ok(claims)
}

/// Every write claim granted after fencing token `token` to an agent other
/// than `agent`, live or not (released, lapsed), as of `now`, oldest
/// first: the grants that supersede a claim holding `token`.
pub fn write_claims_after(
    conn: &Tx<'_>,
    token: i64,
    agent: &str,
    now: Timestamp,
) -> crate::store::sql::Result<Vec<Claim>> {
    let claims = conn.query_map(
        &format!(
            "SELECT {} FROM claims WHERE type = 'write' AND token > ?1 AND agent_id <> ?2 ORDER BY seq",
            CLAIM_COLUMNS
        ),
        params![token, agent],
        |r| claim_from_row(r, now),
    )?;
    Ok(claims)
}

/// The next fencing token: the store's counter, incremented.
pub fn next_token(tx: &Tx<'_>) -> crate::store::sql::Result<i64> {
    tx.query_row(
        "UPDATE counters SET value = value + 1 WHERE name = 'claim_token' RETURNING value",
        params![],
        |r| r.get(0),
    )
}

/// A claim to insert.
pub struct NewClaim<'a> {
    /// Its id.
    pub id: &'a str,
    /// The holder.
    pub agent_id: &'a str,
    /// The canonical resource id.
    pub resource_id: &'a str,
    /// The resource's path, if it has one.
    pub path: Option<&'a str>,
    /// A symbol's name.
    pub symbol: Option<&'a str>,
    /// A symbol's line span at acquisition.
    pub span: Option<LineSpan>,
    /// The claim's type.
    pub claim_type: ClaimType,
    /// The task it is for.
    pub task_id: Option<&'a str>,
    /// The resource's digest at acquisition.
    pub base_digest: &'a str,
    /// Its fencing token.
    pub token: i64,
    /// When it was acquired.
    pub acquired_at: Timestamp,
    /// When it lapses.
    pub expires_at: Timestamp,
}

/// Insert a new claim.
pub fn insert(tx: &Tx<'_>, claim: &NewClaim<'_>) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO claims (id, agent_id, resource_id, path, symbol, start_line, end_line, type, task_id,
             base_digest, token, acquired_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            claim.id,
            claim.agent_id,
            claim.resource_id,
            claim.path,
            claim.symbol,
            claim.span.map(|s| s.start),
            claim.span.map(|s| s.end),
            claim.claim_type.as_str(),
            claim.task_id,
            claim.base_digest,
            claim.token,
            claim.acquired_at.0,
            claim.expires_at.0
        ],
    )?;
    Ok(())
}

/// Move claim `id`'s expiry to `expires_at`.
pub fn renew(tx: &Tx<'_>, id: &str, expires_at: Timestamp) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE claims SET expires_at = ?2 WHERE id = ?1",
        params![id, expires_at.0],
    )?;
    Ok(())
}

/// Mark claim `id` released at `at`.
pub fn release(tx: &Tx<'_>, id: &str, at: Timestamp) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE claims SET released_at = ?2 WHERE id = ?1",
        params![id, at.0],
    )?;
    Ok(())
}

/// The claims whose lease ran out by `now` that the engine has not
/// noted yet (see [`note_expired`]), oldest first: a range of the
/// `claims_live` index, empty but for the claims that just lapsed.
pub fn expired_unnoted(conn: &Tx<'_>, now: Timestamp) -> crate::store::sql::Result<Vec<Claim>> {
    conn.query_map(
        &format!(
            "SELECT {} FROM claims WHERE released_at IS NULL AND expires_at <= ?1 ORDER BY seq",
            CLAIM_COLUMNS
        ),
        params![now.0],
        |r| claim_from_row(r, now),
    )
}

/// The earliest expiry of a claim not released nor noted expired (one
/// that lapsed already included), if any: the `claims_live` index's first
/// entry.
pub fn next_expiry(conn: &Tx<'_>) -> crate::store::sql::Result<Option<Timestamp>> {
    let at: Option<i64> = conn.query_row(
        "SELECT min(expires_at) FROM claims WHERE released_at IS NULL",
        params![],
        |r| r.get(0),
    )?;
    Ok(at.map(Timestamp))
}

/// Note that claim `id`'s lease ran out: it is released at its expiry
/// (it still reads `expired`, without a `released_at`).
pub fn note_expired(tx: &Tx<'_>, id: &str) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE claims SET released_at = expires_at WHERE id = ?1 AND released_at IS NULL",
        params![id],
    )?;
    Ok(())
}

/// Which claims a page lists.
pub struct ClaimFilter<'a> {
    /// Only claims after this `seq`.
    pub after: i64,
    /// Only this holder's.
    pub agent_id: Option<&'a str>,
    /// Only claims on exactly this canonical resource id.
    pub resource_id: Option<&'a str>,
    /// Only claims in this status as of `now`.
    pub status: Option<ClaimStatus>,
    /// The moment statuses are computed at.
    pub now: Timestamp,
    /// At most this many rows.
    pub limit: i64,
}

/// A page of claims, oldest first.
pub fn list(conn: &Tx<'_>, filter: &ClaimFilter<'_>) -> crate::store::sql::Result<Vec<Claim>> {
    let status = match filter.status {
        None => "",
        Some(ClaimStatus::Active) => " AND released_at IS NULL AND expires_at > ?4",
        Some(ClaimStatus::Expired) => {
            " AND ((released_at IS NULL AND expires_at <= ?4) OR released_at = expires_at)"
        }
        Some(ClaimStatus::Released) => " AND released_at IS NOT NULL AND released_at <> expires_at",
    };
    // Plain equality (not `?2 IS NULL OR …`) so SQLite can use the
    // agent index: a page costs O(limit).
    let agent = if filter.agent_id.is_some() {
        " AND agent_id = ?2"
    } else {
        " AND CAST(?2 AS TEXT) IS NULL"
    };
    let resource = if filter.resource_id.is_some() {
        " AND resource_id = ?3"
    } else {
        " AND CAST(?3 AS TEXT) IS NULL"
    };
    let sql = format!(
        "SELECT {} FROM claims WHERE seq > ?1{agent}{resource}{status} AND CAST(?4 AS BIGINT) = CAST(?4 AS BIGINT) ORDER BY seq LIMIT ?5",
        CLAIM_COLUMNS
    );
    let claims = conn.query_map(
        &sql,
        params![
            filter.after,
            filter.agent_id,
            filter.resource_id,
            filter.now.0,
            filter.limit
        ],
        |r| claim_from_row(r, filter.now),
    )?;
    Ok(claims)
}
