//! How each record of the [domain model](crate::model) is read from its
//! row: the column lists and the row mappings, in one place.

use super::{actor_from_sql, enum_from_sql, json_from_sql};
use crate::clock::Timestamp;
use crate::model::{
    Agent, Approval, Event, Proposal, Revision, SecurityReviewRecord, Task, TestResult,
    Transaction, TransactionKind, Vote,
};
use crate::store::sql::{Row, SqlError};

/// A record read back from its table: the columns a query selects for it,
/// in order, and the mapping from such a row. A trait because the records
/// are defined in the model crate, below the store.
pub trait FromRow: Sized {
    /// The columns [`FromRow::from_row`] reads, in order.
    const COLUMNS: &'static str;

    /// The record from one row.
    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Self>;
}

impl FromRow for Agent {
    const COLUMNS: &'static str =
        "id, roles, enabled, display_name, model_id, session_url, created_at, updated_at";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Agent> {
        Ok(Agent {
            id: r.get(0)?,
            roles: json_from_sql(&r.get::<String>(1)?)?,
            enabled: r.get(2)?,
            display_name: r.get(3)?,
            model_id: r.get(4)?,
            session_url: r.get(5)?,
            created_at: Timestamp(r.get(6)?),
            updated_at: Timestamp(r.get(7)?),
        })
    }
}

impl FromRow for Task {
    const COLUMNS: &'static str = "id, title, summary_md, created_by, created_at";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Task> {
        Ok(Task {
            id: r.get(0)?,
            title: r.get(1)?,
            summary_md: r.get(2)?,
            created_by: actor_from_sql(&r.get::<String>(3)?)?,
            created_at: Timestamp(r.get(4)?),
        })
    }
}

impl FromRow for Proposal {
    const COLUMNS: &'static str =
        "id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at, seq, reverts";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Proposal> {
        Ok(Proposal {
            id: r.get(0)?,
            task_id: r.get(1)?,
            author: r.get(2)?,
            title: r.get(3)?,
            summary_md: r.get(4)?,
            risk: enum_from_sql(&r.get::<String>(5)?)?,
            status: enum_from_sql(&r.get::<String>(6)?)?,
            latest_revision: r.get(7)?,
            created_at: Timestamp(r.get(8)?),
            updated_at: Timestamp(r.get(9)?),
            seq: r.get(10)?,
            reverts: r.get(11)?,
        })
    }
}

impl FromRow for Revision {
    const COLUMNS: &'static str = "number, format, digest, changeset, changeset_digest, affected_resources, base_state, base_git_head, note_md, created_by, created_at, diff_digest, rebased_from, change_id";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Revision> {
        Ok(Revision {
            number: r.get(0)?,
            format: enum_from_sql(&r.get::<String>(1)?)?,
            digest: r.get(2)?,
            changeset: json_from_sql(&r.get::<String>(3)?)?,
            changeset_digest: r.get(4)?,
            affected_resources: json_from_sql(&r.get::<String>(5)?)?,
            base_state: r
                .get::<String>(6)?
                .parse()
                .map_err(crate::store::sql::SqlError::decode)?,
            base_git_head: r.get(7)?,
            note_md: r.get(8)?,
            created_by: actor_from_sql(&r.get::<String>(9)?)?,
            created_at: Timestamp(r.get(10)?),
            diff_digest: r.get(11)?,
            rebased_from: r.get(12)?,
            change_id: r.get(13)?,
        })
    }
}

impl FromRow for Vote {
    const COLUMNS: &'static str =
        "id, proposal_id, revision, agent_id, vote, reason_md, created_at, seq";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Vote> {
        Ok(Vote {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            agent_id: r.get(3)?,
            vote: enum_from_sql(&r.get::<String>(4)?)?,
            reason_md: r.get(5)?,
            created_at: Timestamp(r.get(6)?),
            seq: r.get(7)?,
        })
    }
}

impl FromRow for SecurityReviewRecord {
    const COLUMNS: &'static str =
        "id, proposal_id, revision, verdict, note_md, reviewer, created_at";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<SecurityReviewRecord> {
        Ok(SecurityReviewRecord {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            verdict: enum_from_sql(&r.get::<String>(3)?)?,
            note_md: r.get(4)?,
            reviewer: actor_from_sql(&r.get::<String>(5)?)?,
            created_at: Timestamp(r.get(6)?),
        })
    }
}

impl FromRow for Approval {
    const COLUMNS: &'static str =
        "id, proposal_id, revision, request_id, human_id, note_md, created_at";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Approval> {
        Ok(Approval {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            request_id: r.get(3)?,
            human_id: r.get(4)?,
            note_md: r.get(5)?,
            created_at: Timestamp(r.get(6)?),
        })
    }
}

impl FromRow for TestResult {
    const COLUMNS: &'static str =
        "id, proposal_id, revision, name, status, duration_ms, note_md, recorded_by, created_at, seq";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<TestResult> {
        Ok(TestResult {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            name: r.get(3)?,
            status: enum_from_sql(&r.get::<String>(4)?)?,
            duration_ms: r.get::<Option<i64>>(5)?.and_then(|d| u64::try_from(d).ok()),
            note_md: r.get(6)?,
            recorded_by: actor_from_sql(&r.get::<String>(7)?)?,
            created_at: Timestamp(r.get(8)?),
            seq: r.get(9)?,
        })
    }
}

impl FromRow for Event {
    const COLUMNS: &'static str =
        "seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Event> {
        let kind: String = r.get(2)?;
        let id: String = r.get(3)?;
        Ok(Event {
            seq: r.get(0)?,
            kind: crate::model::EventKind::parse(&r.get::<String>(1)?),
            actor: actor_from_sql(&format!("{kind}:{id}"))?,
            subject: r.get(4)?,
            proposal_id: r.get(5)?,
            data: json_from_sql(&r.get::<String>(6)?)?,
            at: Timestamp(r.get(7)?),
            prev_digest: r.get(8)?,
            digest: r.get(9)?,
        })
    }
}

impl FromRow for Transaction {
    const COLUMNS: &'static str = "t.id, t.kind, t.proposal_id, t.revision, t.rollback_of, t.status, t.actor, t.pid, t.durability, t.before_digest, t.after_digest, t.error, t.created_at, t.finished_at, (SELECT COUNT(*) FROM transaction_files f WHERE f.transaction_id = t.id), t.seq";

    fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Transaction> {
        let error: Option<String> = r.get(11)?;
        Ok(Transaction {
            id: r.get(0)?,
            kind: enum_from_sql_kind(&r.get::<String>(1)?)?,
            proposal_id: r.get(2)?,
            revision: r.get(3)?,
            rollback_of: r.get(4)?,
            status: enum_from_sql(&r.get::<String>(5)?)?,
            actor: actor_from_sql(&r.get::<String>(6)?)?,
            pid: r.get(7)?,
            durability: enum_from_sql(&r.get::<String>(8)?)?,
            before_digest: r.get(9)?,
            after_digest: r.get(10)?,
            error: error.and_then(|e| serde_json::from_str(&e).ok()),
            created_at: Timestamp(r.get(12)?),
            finished_at: r.get::<Option<i64>>(13)?.map(Timestamp),
            file_count: r.get::<i64>(14)?.unsigned_abs(),
            seq: r.get(15)?,
        })
    }
}

fn enum_from_sql_kind(s: &str) -> crate::store::sql::Result<TransactionKind> {
    match s {
        "apply" => Ok(TransactionKind::Apply),
        "rollback" => Ok(TransactionKind::Rollback),
        other => Err(SqlError::Value {
            what: "column 1".into(),
            reason: format!("{other:?} is not a transaction kind"),
        }),
    }
}
