//! The `proposals` and `revisions` tables. A revision is never changed
//! once inserted; a proposal's status and latest revision move.

use super::enum_to_sql;
use super::rows::FromRow as _;
use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::model::{FileSummary, Proposal, ProposalStatus, Revision, RevisionEntry, Risk};
use crate::store::sql::{params, OptionalExtension as _, Tx};
use crate::Digest;

/// The proposal named `id`, if any.
pub fn proposal(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<Proposal>> {
    conn.query_row(
        &format!("SELECT {} FROM proposals WHERE id = ?1", Proposal::COLUMNS),
        [id],
        Proposal::from_row,
    )
    .optional()
}

/// A proposal to insert: `pending`, at revision 1.
pub struct NewProposal<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its task.
    pub task_id: &'a str,
    /// The authoring agent.
    pub author: &'a str,
    /// Its title.
    pub title: &'a str,
    /// What it does.
    pub summary_md: &'a str,
    /// Its risk.
    pub risk: Risk,
    /// The proposal it reverts (`proposal.revert`), if any.
    pub reverts: Option<&'a str>,
    /// When it is created (and updated).
    pub now: Timestamp,
}

/// Insert a new proposal (its first revision is inserted apart).
pub fn insert_proposal(tx: &Tx<'_>, p: &NewProposal<'_>) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO proposals (id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at, reverts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', 1, ?7, ?7, ?8)",
        params![
            p.id,
            p.task_id,
            p.author,
            p.title,
            p.summary_md,
            enum_to_sql(&p.risk),
            p.now.0,
            p.reverts
        ],
    )?;
    Ok(())
}

/// Make `number` proposal `id`'s latest revision, updated `now`.
pub fn set_latest_revision(
    tx: &Tx<'_>,
    id: &str,
    number: u32,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE proposals SET latest_revision = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, number, now.0],
    )?;
    Ok(())
}

/// Move proposal `id` from status `from` to `to`, updated `now`; the
/// number of rows changed (0 when it was no longer `from`).
pub fn set_status(
    tx: &Tx<'_>,
    id: &str,
    from: ProposalStatus,
    to: ProposalStatus,
    now: Timestamp,
) -> crate::store::sql::Result<usize> {
    tx.execute(
        "UPDATE proposals SET status = ?2, updated_at = ?3 WHERE id = ?1 AND status = ?4",
        params![id, to.as_str(), now.0, from.as_str()],
    )
}

/// Mark proposal `id` applied at `now` if it is still open (`pending` or
/// `in_review`) or `rolled_back` (landing again); the number of rows
/// changed.
pub fn mark_applied(tx: &Tx<'_>, id: &str, now: Timestamp) -> crate::store::sql::Result<usize> {
    tx.execute(
        "UPDATE proposals SET status = 'applied', updated_at = ?2 WHERE id = ?1 AND status IN ('pending', 'in_review', 'rolled_back')",
        params![id, now.0],
    )
}

/// Open proposals (`pending` or `in_review`) after `seq` `after`, oldest
/// first, at most `limit`: the rows an inbox page examines. Walks the
/// primary key from the cursor, so a page costs the rows it passes over.
pub fn open_proposals(
    conn: &Tx<'_>,
    after: i64,
    limit: u64,
) -> crate::store::sql::Result<Vec<Proposal>> {
    let out = conn.query_map(
        &format!(
            "SELECT {} FROM proposals WHERE seq > ?1 AND status IN ('pending', 'in_review')
         ORDER BY seq LIMIT ?2",
            Proposal::COLUMNS
        ),
        params![after, i64::try_from(limit).unwrap_or(i64::MAX)],
        Proposal::from_row,
    )?;
    Ok(out)
}

/// The ids of `author`'s open proposals, oldest first.
pub fn open_of_author(conn: &Tx<'_>, author: &str) -> crate::store::sql::Result<Vec<String>> {
    conn.query_map(
        "SELECT id FROM proposals WHERE author = ?1 AND status IN ('pending', 'in_review')
         ORDER BY seq",
        [author],
        |r| r.get(0),
    )
}

/// An open proposal's latest revision, as much of it as a landing reads
/// to tell whether it made the proposal stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTouch {
    /// The proposal.
    pub proposal_id: String,
    /// Its latest revision.
    pub revision: u32,
    /// The paths that revision touches (a rename or copy: both), sorted.
    pub paths: Vec<String>,
}

/// Every open proposal but `except`, with the paths its latest revision
/// touches, oldest first: one row per open proposal, its changeset's
/// paths read and the rest of it skipped.
pub fn open_touched(conn: &Tx<'_>, except: &str) -> crate::store::sql::Result<Vec<OpenTouch>> {
    /// A changeset entry's paths, the rest of it skipped.
    #[derive(serde::Deserialize)]
    struct Paths {
        path: String,
        other_path: Option<String>,
    }
    conn.query_map(
        "SELECT p.id, p.latest_revision, r.changeset FROM proposals p
         JOIN revisions r ON r.proposal_id = p.id AND r.number = p.latest_revision
         WHERE p.status IN ('pending', 'in_review') AND p.id <> ?1
         ORDER BY p.seq",
        [except],
        |r| {
            let entries: Vec<Paths> = super::json_from_sql(&r.get::<String>(2)?)?;
            let mut paths: Vec<String> = entries
                .into_iter()
                .flat_map(|e| std::iter::once(e.path).chain(e.other_path))
                .collect();
            paths.sort_unstable();
            paths.dedup();
            Ok(OpenTouch {
                proposal_id: r.get(0)?,
                revision: r.get(1)?,
                paths,
            })
        },
    )
}

/// Where an inbox waiter stands: what it was told of, per proposal. A
/// proposal of `seq` at most `past` was told of up to event `head`, a
/// later one up to event `since` (`since <= head`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Told {
    /// The events told of for proposals after `past`.
    pub since: i64,
    /// The events told of for proposals up to `past`.
    pub head: i64,
    /// The last proposal `seq` told of up to `head`.
    pub past: i64,
}

/// Open proposals after `seq` `after` that had an event since the waiter
/// was last told of them (see [`Told`]), oldest first, at most `limit`.
/// Each open proposal costs one probe of `events_by_proposal`.
pub fn open_changed(
    conn: &Tx<'_>,
    told: Told,
    after: i64,
    limit: u64,
) -> crate::store::sql::Result<Vec<Proposal>> {
    let out = conn.query_map(
        &format!(
            "SELECT {} FROM proposals WHERE seq > ?4 AND status IN ('pending', 'in_review')
         AND EXISTS (SELECT 1 FROM events e WHERE e.proposal_id = proposals.id
                     AND ((proposals.seq <= ?3 AND e.seq > ?2) OR (proposals.seq > ?3 AND e.seq > ?1)))
         ORDER BY seq LIMIT ?5",
            Proposal::COLUMNS
        ),
        params![
            told.since,
            told.head,
            told.past,
            after,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        Proposal::from_row,
    )?;
    Ok(out)
}

/// Which proposals a page lists.
pub struct ProposalFilter<'a> {
    /// Only proposals after this `seq`.
    pub after: i64,
    /// Only this task's.
    pub task_id: Option<&'a str>,
    /// Only those in this status.
    pub status: Option<ProposalStatus>,
    /// Only this agent's.
    pub author: Option<&'a str>,
    /// At most this many rows.
    pub limit: u64,
}

/// A page of proposals, oldest first.
pub fn list_proposals(
    conn: &Tx<'_>,
    filter: &ProposalFilter<'_>,
) -> crate::store::sql::Result<Vec<Proposal>> {
    let mut sql = format!("SELECT {} FROM proposals WHERE seq > ?1", Proposal::COLUMNS);
    let mut values: Vec<Box<dyn crate::store::sql::ToValue>> = vec![Box::new(filter.after)];
    let filters: [(&str, Option<String>); 3] = [
        ("task_id", filter.task_id.map(str::to_owned)),
        ("status", filter.status.map(|s| s.as_str().to_owned())),
        ("author", filter.author.map(str::to_owned)),
    ];
    for (column, value) in filters {
        if let Some(v) = value {
            values.push(Box::new(v));
            sql.push_str(&format!(" AND {column} = ?{}", values.len()));
        }
    }
    sql.push_str(&format!(" ORDER BY seq LIMIT {}", filter.limit));
    let proposals = conn.query_map(&sql, values, Proposal::from_row)?;
    Ok(proposals)
}

/// Revision `number` of proposal `proposal_id`, if any.
pub fn revision(
    conn: &Tx<'_>,
    proposal_id: &str,
    number: u32,
) -> crate::store::sql::Result<Option<Revision>> {
    conn.query_row(
        &format!(
            "SELECT {} FROM revisions WHERE proposal_id = ?1 AND number = ?2",
            Revision::COLUMNS
        ),
        params![proposal_id, number],
        Revision::from_row,
    )
    .optional()
}

/// Every revision of `proposal_id`, by number.
pub fn revisions(conn: &Tx<'_>, proposal_id: &str) -> crate::store::sql::Result<Vec<Revision>> {
    let out = conn.query_map(
        &format!(
            "SELECT {} FROM revisions WHERE proposal_id = ?1 ORDER BY number",
            Revision::COLUMNS
        ),
        [proposal_id],
        Revision::from_row,
    )?;
    Ok(out)
}

/// The revision history of `proposal_id`, by number.
pub fn revision_entries(
    conn: &Tx<'_>,
    proposal_id: &str,
) -> crate::store::sql::Result<Vec<RevisionEntry>> {
    let out = conn.query_map(
        "SELECT number, format, digest, changeset_digest, created_at FROM revisions
         WHERE proposal_id = ?1 ORDER BY number",
        [proposal_id],
        |r| {
            Ok(RevisionEntry {
                number: r.get(0)?,
                format: super::enum_from_sql(&r.get::<String>(1)?)?,
                digest: r.get(2)?,
                changeset_digest: r.get(3)?,
                created_at: Timestamp(r.get(4)?),
            })
        },
    )?;
    Ok(out)
}

/// A revision to insert (its bytes and diff are stored blobs already).
pub struct NewRevision<'a> {
    /// Its proposal.
    pub proposal_id: &'a str,
    /// Its number.
    pub number: u32,
    /// `patch` or `edit_plan`.
    pub format: &'a str,
    /// The blob of its bytes.
    pub digest: &'a Digest,
    /// Its per-path summary.
    pub changeset: &'a [FileSummary],
    /// The changeset's digest.
    pub changeset_digest: &'a str,
    /// The canonical resources it declares.
    pub affected_resources: &'a [String],
    /// The workspace state it was made against.
    pub base_state: &'a str,
    /// The git head then, if any.
    pub base_git_head: Option<&'a str>,
    /// Its note.
    pub note_md: Option<&'a str>,
    /// Who made it.
    pub created_by: &'a Actor,
    /// When.
    pub created_at: Timestamp,
    /// The blob of its unified diff.
    pub diff_digest: &'a Digest,
    /// The revision it rebases, if `proposal.rebase` made it.
    pub rebased_from: Option<u32>,
    /// Its change without positions.
    pub change_id: &'a str,
}

/// Insert a revision.
pub fn insert_revision(tx: &Tx<'_>, r: &NewRevision<'_>) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO revisions (proposal_id, number, format, digest, changeset, changeset_digest,
             affected_resources, base_state, base_git_head, note_md, created_by, created_at, diff_digest,
             rebased_from, change_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            r.proposal_id,
            r.number,
            r.format,
            r.digest.to_string(),
            serde_json::to_string(r.changeset).expect("summaries serialize"),
            r.changeset_digest,
            serde_json::to_string(r.affected_resources).expect("strings serialize"),
            r.base_state,
            r.base_git_head,
            r.note_md,
            r.created_by.to_string(),
            r.created_at.0,
            r.diff_digest.to_string(),
            r.rebased_from,
            r.change_id
        ],
    )?;
    Ok(())
}
