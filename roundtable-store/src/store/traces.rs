//! Attribution records: each landing's Agent Trace record, kept with its
//! transaction ([`crate::model::trace`]).

use crate::model::trace::TraceRecord;
use crate::store::sql::{params, OptionalExtension as _, Tx};

/// Keep `record` as transaction `id`'s (in the journal's SQL transaction).
pub fn insert(tx: &Tx<'_>, id: &str, record: &TraceRecord) -> crate::store::sql::Result<()> {
    let json = serde_json::to_string(record).expect("a trace record serializes");
    tx.execute(
        "INSERT INTO trace_records (transaction_id, record) VALUES (?1, ?2)",
        params![id, json],
    )?;
    Ok(())
}

/// Transaction `id`'s record as stored: `None` when it has none, and
/// `Some(Err(..))` when the stored text is not a record (written behind
/// roundtable's back).
pub fn get(
    tx: &Tx<'_>,
    id: &str,
) -> crate::store::sql::Result<Option<Result<TraceRecord, String>>> {
    let text: Option<String> = tx
        .query_row(
            "SELECT record FROM trace_records WHERE transaction_id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(text.map(|t| serde_json::from_str(&t).map_err(|e| e.to_string())))
}
