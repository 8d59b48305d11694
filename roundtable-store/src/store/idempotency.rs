//! The `idempotency` table: a mutating call's stored result under its
//! caller's key.

use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::store::sql::{params, OptionalExtension as _, Tx};

/// What an earlier call with a key stored.
pub struct Remembered {
    /// The tool it called.
    pub tool: String,
    /// The digest of its request.
    pub request_digest: String,
    /// Its result (JSON text).
    pub result: String,
}

/// The call `actor` made with `key`, if any.
pub fn get(
    conn: &Tx<'_>,
    actor: &Actor,
    key: &str,
) -> crate::store::sql::Result<Option<Remembered>> {
    conn.query_row(
        "SELECT tool, request_digest, result FROM idempotency
         WHERE actor_kind = ?1 AND actor_id = ?2 AND key = ?3",
        params![actor.kind.as_str(), actor.id.as_str(), key],
        |r| {
            Ok(Remembered {
                tool: r.get(0)?,
                request_digest: r.get(1)?,
                result: r.get(2)?,
            })
        },
    )
    .optional()
}

/// Store the result (JSON text) of `actor`'s call of `tool` with `key`.
pub fn insert(
    tx: &Tx<'_>,
    actor: &Actor,
    key: &str,
    tool: &str,
    request_digest: &str,
    result: &str,
    now: Timestamp,
) -> crate::store::sql::Result<()> {
    tx.execute(
        "INSERT INTO idempotency (actor_kind, actor_id, key, tool, request_digest, result, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            actor.kind.as_str(),
            actor.id.as_str(),
            key,
            tool,
            request_digest,
            result,
            now.0
        ],
    )?;
    Ok(())
}
