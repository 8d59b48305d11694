//! The `agents` and `tasks` tables: who may act, and what proposals
//! belong to.

use super::rows::FromRow as _;
use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::model::{Agent, Task};
use crate::store::sql::{params, Dialect, OptionalExtension as _, Tx};

/// The agent named `id`, if registered.
pub fn agent(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<Agent>> {
    conn.query_row(
        &format!("SELECT {} FROM agents WHERE id = ?1", Agent::COLUMNS),
        [id],
        Agent::from_row,
    )
    .optional()
}

/// Every agent, by id.
pub fn all_agents(conn: &Tx<'_>) -> crate::store::sql::Result<Vec<Agent>> {
    let agents = conn.query_map(
        &format!("SELECT {} FROM agents ORDER BY id", Agent::COLUMNS),
        params![],
        Agent::from_row,
    )?;
    Ok(agents)
}

/// The stored spelling of a role list (a JSON array).
fn roles_json(roles: &[String]) -> String {
    serde_json::to_string(roles).expect("strings serialize")
}

/// What `agent.register` sets of an agent.
#[derive(Debug, Clone, Copy)]
pub struct AgentFields<'a> {
    /// Its roles, sorted.
    pub roles: &'a [String],
    /// Whether it may act.
    pub enabled: bool,
    /// A name for people.
    pub display_name: Option<&'a str>,
    /// Its model (`provider/model`).
    pub model_id: Option<&'a str>,
    /// Its session's or conversation's link.
    pub session_url: Option<&'a str>,
}

/// Register a new agent `id`, created and updated `now`.
pub fn insert_agent(
    tx: &Tx<'_>,
    id: &str,
    fields: AgentFields<'_>,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO agents (id, roles, enabled, display_name, model_id, session_url, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        params![
            id,
            roles_json(fields.roles),
            fields.enabled,
            fields.display_name,
            fields.model_id,
            fields.session_url,
            now.0
        ],
    )?;
    Ok(())
}

/// Change what `agent.register` sets of agent `id`, updated `now`.
pub fn update_agent(
    tx: &Tx<'_>,
    id: &str,
    fields: AgentFields<'_>,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "UPDATE agents SET roles = ?2, enabled = ?3, display_name = ?4, model_id = ?5, session_url = ?6,
         updated_at = ?7 WHERE id = ?1",
        params![
            id,
            roles_json(fields.roles),
            fields.enabled,
            fields.display_name,
            fields.model_id,
            fields.session_url,
            now.0
        ],
    )?;
    Ok(())
}

/// Whether a task named `id` exists.
pub fn task_exists(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = ?1)",
        [id],
        |r| r.get(0),
    )
}

/// Create task `id`, by `created_by` at `now`.
pub fn insert_task(
    tx: &Tx<'_>,
    id: &str,
    title: &str,
    summary_md: Option<&str>,
    created_by: &Actor,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO tasks (id, title, summary_md, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, title, summary_md, created_by.to_string(), now.0],
    )?;
    Ok(())
}

/// The task named `id`, if any.
pub fn task(conn: &Tx<'_>, id: &str) -> crate::store::sql::Result<Option<Task>> {
    conn.query_row(
        "SELECT id, title, summary_md, created_by, created_at FROM tasks WHERE id = ?1",
        [id],
        Task::from_row,
    )
    .optional()
}

/// A page of agents after `after` (a rowid; 0 from the start), oldest
/// registration first, at most `limit`, with a role and an enabled flag
/// to match when given: each with its rowid, the page's keyset.
pub fn list_agents(
    conn: &Tx<'_>,
    after: i64,
    role: Option<&str>,
    enabled: Option<bool>,
    limit: u64,
) -> crate::store::sql::Result<Vec<(i64, Agent)>> {
    // The roles are a JSON array of names.
    let has_role = match conn.dialect() {
        Dialect::Sqlite => "EXISTS (SELECT 1 FROM json_each(agents.roles) WHERE value = ?2)",
        Dialect::Postgres => "agents.roles::jsonb @> jsonb_build_array(CAST(?2 AS TEXT))",
    };
    let rows = conn.query_map(
        &format!(
            "SELECT {}, rowid FROM agents
         WHERE rowid > ?1
           AND (CAST(?2 AS TEXT) IS NULL OR {has_role})
           AND (CAST(?3 AS BIGINT) IS NULL OR enabled = ?3)
         ORDER BY rowid LIMIT ?4",
            Agent::COLUMNS
        ),
        params![after, role, enabled, limit as i64],
        // The rowid follows the record's columns.
        |r| {
            let rowid = Agent::COLUMNS.split(',').count();
            Ok((r.get(rowid)?, Agent::from_row(r)?))
        },
    )?;
    Ok(rows)
}

/// A page of tasks after `after` (a rowid; 0 from the start), oldest
/// first, at most `limit`: each with its rowid.
pub fn list_tasks(
    conn: &Tx<'_>,
    after: i64,
    limit: u64,
) -> crate::store::sql::Result<Vec<(i64, Task)>> {
    let rows = conn.query_map(
        "SELECT id, title, summary_md, created_by, created_at, rowid FROM tasks
         WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        params![after, limit as i64],
        |r| Ok((r.get(5)?, Task::from_row(r)?)),
    )?;
    Ok(rows)
}
