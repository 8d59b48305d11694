//! The evidence tables: `votes`, `decisions`, `security_reviews`,
//! `human_approval_requests`, `human_approvals`, `test_results`. Rows are
//! only ever inserted (immutability triggers refuse changes).

use super::enum_to_sql;
use super::events::recorded_filter;
use super::rows::FromRow as _;
use crate::clock::Timestamp;
use crate::model::{
    Approval, ApprovalRequest, Decision, SecurityReviewRecord, TestResult, Vote, VoteValue,
};
use crate::store::sql::{params, OptionalExtension as _, Tx};

/// Insert vote `id` by `agent_id` on `revision` of `proposal_id`, cast `now`.
#[allow(clippy::too_many_arguments)]
pub fn insert_vote(
    tx: &Tx<'_>,
    id: &str,
    proposal_id: &str,
    revision: u32,
    agent_id: &str,
    vote: VoteValue,
    reason_md: Option<&str>,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO votes (id, proposal_id, revision, agent_id, vote, reason_md, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            id,
            proposal_id,
            revision,
            agent_id,
            enum_to_sql(&vote),
            reason_md,
            now.0
        ],
    )?;
    Ok(())
}

/// The vote named `id`, if any.
pub fn vote(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<Vote>> {
    conn.query_row(
        &format!("SELECT {} FROM votes WHERE id = ?1", Vote::COLUMNS),
        [id],
        Vote::from_row,
    )
    .optional()
}

/// A page of `proposal_id`'s votes after `seq` `after` (only on
/// `revision` when given), oldest first, at most `limit`.
pub fn list_votes(
    conn: &Tx<'_>,
    proposal_id: &str,
    after: i64,
    revision: Option<u32>,
    limit: i64,
) -> crate::store::sql::Result<Vec<Vote>> {
    let votes = conn.query_map(&format!(
        "SELECT {} FROM votes WHERE proposal_id = ?1 AND seq > ?2 AND (CAST(?3 AS BIGINT) IS NULL OR revision = ?3)
         ORDER BY seq LIMIT ?4",
        Vote::COLUMNS
    ), params![proposal_id, after, revision, limit], Vote::from_row)?;
    Ok(votes)
}

/// Insert a decision.
pub fn insert_decision(tx: &Tx<'_>, d: &Decision) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO decisions (id, proposal_id, revision, decision, reason_md, decided_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            d.id,
            d.proposal_id,
            d.revision,
            enum_to_sql(&d.decision),
            d.reason_md,
            d.decided_by.to_string(),
            d.created_at.0
        ],
    )?;
    Ok(())
}

/// Insert a security review.
pub fn insert_security_review(
    tx: &Tx<'_>,
    r: &SecurityReviewRecord,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO security_reviews (id, proposal_id, revision, verdict, note_md, reviewer, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            r.id,
            r.proposal_id,
            r.revision,
            enum_to_sql(&r.verdict),
            r.note_md,
            r.reviewer.to_string(),
            r.created_at.0
        ],
    )?;
    Ok(())
}

/// Insert a request for human approval.
pub fn insert_approval_request(tx: &Tx<'_>, r: &ApprovalRequest) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO human_approval_requests (id, proposal_id, revision, reason_md, requested_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            r.id,
            r.proposal_id,
            r.revision,
            r.reason_md,
            r.requested_by.to_string(),
            r.created_at.0
        ],
    )?;
    Ok(())
}

/// The proposal and revision approval request `id` is for, if it exists.
pub fn approval_request_target(
    conn: &Tx<'_>,
    id: &str,
) -> crate::store::sql::Result<Option<(String, u32)>> {
    conn.query_row(
        "SELECT proposal_id, revision FROM human_approval_requests WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// Insert a human approval.
pub fn insert_approval(tx: &Tx<'_>, a: &Approval) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO human_approvals (id, proposal_id, revision, request_id, human_id, note_md, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            a.id,
            a.proposal_id,
            a.revision,
            a.request_id,
            a.human_id,
            a.note_md,
            a.created_at.0
        ],
    )?;
    Ok(())
}

/// Insert a test result (a duration beyond `i64` is refused).
pub fn insert_test_result(tx: &Tx<'_>, t: &TestResult) -> crate::store::sql::Result<()> {
    let duration = t
        .duration_ms
        .map(i64::try_from)
        .transpose()
        .map_err(crate::store::sql::SqlError::decode)?;
    tx.execute(
        "INSERT INTO test_results (id, proposal_id, revision, name, status, duration_ms, note_md, recorded_by, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            t.id,
            t.proposal_id,
            t.revision,
            t.name,
            enum_to_sql(&t.status),
            duration,
            t.note_md,
            t.recorded_by.to_string(),
            t.created_at.0
        ],
    )?;
    Ok(())
}

/// The rows of `table` for `proposal_id` that their event records, by
/// `seq` (see [`recorded_filter`]).
fn recorded<T>(
    conn: &Tx<'_>,
    table: &str,
    columns: &str,
    proposal_id: &str,
    row: fn(&crate::store::sql::Row<'_>) -> crate::store::sql::Result<T>,
) -> crate::store::sql::Result<Vec<T>> {
    let sql = format!(
        "SELECT {columns} FROM {table} WHERE proposal_id = ?1 AND {} ORDER BY seq",
        recorded_filter(table)
    );
    let out = conn.query_map(&sql, [proposal_id], row)?;
    Ok(out)
}

/// `proposal_id`'s votes that their events record, oldest first.
pub fn recorded_votes(conn: &Tx<'_>, proposal_id: &str) -> crate::store::sql::Result<Vec<Vote>> {
    recorded(conn, "votes", Vote::COLUMNS, proposal_id, Vote::from_row)
}

/// `proposal_id`'s security reviews that their events record, oldest first.
pub fn recorded_security_reviews(
    conn: &Tx<'_>,
    proposal_id: &str,
) -> crate::store::sql::Result<Vec<SecurityReviewRecord>> {
    recorded(
        conn,
        "security_reviews",
        SecurityReviewRecord::COLUMNS,
        proposal_id,
        SecurityReviewRecord::from_row,
    )
}

/// `proposal_id`'s human approvals that their events record, oldest first.
pub fn recorded_approvals(
    conn: &Tx<'_>,
    proposal_id: &str,
) -> crate::store::sql::Result<Vec<Approval>> {
    recorded(
        conn,
        "human_approvals",
        Approval::COLUMNS,
        proposal_id,
        Approval::from_row,
    )
}

/// `proposal_id`'s test results that their events record, oldest first.
pub fn recorded_test_results(
    conn: &Tx<'_>,
    proposal_id: &str,
) -> crate::store::sql::Result<Vec<TestResult>> {
    recorded(
        conn,
        "test_results",
        TestResult::COLUMNS,
        proposal_id,
        TestResult::from_row,
    )
}

/// Test result `id`, if any.
pub fn test_result(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<TestResult>> {
    conn.query_row(
        &format!(
            "SELECT {} FROM test_results WHERE id = ?1",
            TestResult::COLUMNS
        ),
        [id],
        TestResult::from_row,
    )
    .optional()
}

/// A page of `proposal_id`'s test results after `seq` `after` (only on
/// `revision`, only named `name`, when given), oldest first.
pub fn list_test_results(
    conn: &Tx<'_>,
    proposal_id: &str,
    after: i64,
    revision: Option<u32>,
    name: Option<&str>,
    limit: i64,
) -> crate::store::sql::Result<Vec<TestResult>> {
    let out = conn.query_map(&format!(
        "SELECT {} FROM test_results WHERE proposal_id = ?1 AND seq > ?2
             AND (CAST(?3 AS BIGINT) IS NULL OR revision = ?3) AND (CAST(?4 AS TEXT) IS NULL OR name = ?4)
         ORDER BY seq LIMIT ?5",
        TestResult::COLUMNS
    ), params![proposal_id, after, revision, name, limit],
            TestResult::from_row)?;
    Ok(out)
}
