//! The two stores lay out the same tables with the same columns: every
//! statement in `roundtable-store` runs on both, so a column added to one
//! migration list and not the other is a bug this finds before a query
//! does. Runs where the suite has a PostgreSQL server (`RT_TEST_STORE`, as
//! the test command sets for its second pass).

use super::support::{connect, raw_sqlite, server, store_url};
use roundtable::{Engine, EngineOptions};
use std::collections::{BTreeMap, BTreeSet};

type Layout = BTreeMap<String, BTreeSet<String>>;

/// The tables only PostgreSQL has: its schema version (SQLite counts it in
/// `PRAGMA user_version`) and the row its writers lock (SQLite's writer
/// takes the database lock).
const PG_ONLY: &[&str] = &["roundtable_schema", "store_lock"];

/// The tables whose lists are in insertion order: SQLite's implicit
/// `rowid`, which PostgreSQL spells out as a column.
const IMPLICIT_ROWID: &[&str] = &["agents", "tasks"];

fn sqlite_layout() -> Layout {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        store: None,
        ..EngineOptions::default()
    };
    drop(Engine::open(dir.path(), options).expect("open on SQLite"));
    let db = raw_sqlite(&dir.path().join(".roundtable/store.db"));
    let mut stmt = db
        .prepare(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
             WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
        )
        .expect("prepare");
    let mut rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    for table in IMPLICIT_ROWID {
        let sql: String = db
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .expect("the table exists");
        assert!(!sql.contains("WITHOUT ROWID"), "{table} has a rowid: {sql}");
        rows.push(((*table).to_owned(), "rowid".to_owned()));
    }
    layout(rows)
}

fn postgres_layout(server: &str) -> Layout {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = format!("t_layout_{}", std::process::id());
    let options = EngineOptions {
        store: Some(store_url(server, &schema)),
        ..EngineOptions::default()
    };
    drop(Engine::open(dir.path(), options).expect("open on PostgreSQL"));
    let mut c = connect(server);
    let rows = c
        .query(
            "SELECT c.table_name::text, c.column_name::text
             FROM information_schema.columns c JOIN information_schema.tables t
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name
             WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'",
            &[&schema],
        )
        .expect("columns")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .filter(|(t, _): &(String, String)| !PG_ONLY.contains(&t.as_str()))
        .collect();
    c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop the schema");
    layout(rows)
}

fn layout(rows: Vec<(String, String)>) -> Layout {
    let mut out = Layout::new();
    for (table, column) in rows {
        out.entry(table).or_default().insert(column);
    }
    out
}

#[test]
fn issue33_item1_the_sqlite_and_postgresql_stores_have_the_same_tables_and_columns() {
    let Some(server) = server() else {
        return; // no PostgreSQL server in this run: the test command's second pass has one
    };
    let (sqlite, postgres) = (sqlite_layout(), postgres_layout(&server));
    assert!(
        sqlite.len() > 10,
        "the SQLite store has its tables: {sqlite:?}"
    );
    let differ: Vec<String> = sqlite
        .keys()
        .chain(postgres.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|t| sqlite.get(*t) != postgres.get(*t))
        .map(|t| {
            format!(
                "{t}: SQLite {:?}, PostgreSQL {:?}",
                sqlite.get(t),
                postgres.get(t)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "the stores differ:\n{}",
        differ.join("\n")
    );
}
