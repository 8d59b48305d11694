//! The store the suite runs on: the embedded SQLite default, or — with
//! `RT_TEST_STORE` set to a PostgreSQL server's URL — a schema of that
//! server per workspace root, so every test runs against either engine
//! from this one source. [`store_db`] reads and tampers with the store's
//! rows behind the engine's back on either.

use roundtable::{Engine, EngineOptions};
use std::path::Path;

/// The PostgreSQL server the suite runs against, if any.
pub(crate) fn server() -> Option<String> {
    std::env::var("RT_TEST_STORE")
        .ok()
        .filter(|s| !s.is_empty())
}

/// Whether the suite runs on PostgreSQL.
pub(crate) fn postgres() -> bool {
    server().is_some()
}

/// The schema of the workspace at `root`: the same for every engine (and
/// every process) that opens it, as `<root>/.roundtable/store.db` is.
fn schema(root: &Path) -> String {
    use sha2::Digest as _;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let hash = sha2::Sha256::digest(root.to_string_lossy().as_bytes());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("t_{hex}")
}

/// A store URL on `server` in schema `schema`.
pub(crate) fn store_url(server: &str, schema: &str) -> String {
    let sep = if server.contains('?') { '&' } else { '?' };
    format!("{server}{sep}schema={schema}")
}

/// The store URL of the workspace at `root` on `server`.
fn url(server: &str, root: &Path) -> String {
    store_url(server, &schema(root))
}

/// How the suite opens the workspace at `root`: the defaults, on the
/// suite's store.
pub(crate) fn test_options(root: &Path) -> EngineOptions {
    EngineOptions {
        store: server().map(|s| url(&s, root)),
        ..EngineOptions::default()
    }
}

/// The store of the workspace at `root`, opened behind the engine's back.
pub(crate) enum TestDb {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

/// A connection to `server`.
pub(crate) fn connect(server: &str) -> postgres::Client {
    server
        .parse::<postgres::Config>()
        .expect("a PostgreSQL URL")
        .connect(postgres::NoTls)
        .expect("connect")
}

/// Open the SQLite database at `path` behind the engine's back, with the
/// bundled SQLite the store uses and its locks as the store holds them
/// (`roundtable_sqlite_locks`), whether or not an engine opened yet in
/// this process: a connection locking the POSIX way while the store's
/// locks are installed would keep a lock the store cannot release.
pub(crate) fn raw_sqlite(path: &Path) -> rusqlite::Connection {
    roundtable_sqlite_locks::install();
    rusqlite::Connection::open(path).expect("open the database")
}

/// Open the store of the workspace at `root` (it must exist).
pub(crate) fn store_db(root: &Path) -> TestDb {
    match server() {
        Some(server) => {
            let mut client = connect(&server);
            client
                .batch_execute(&format!("SET search_path TO {}", schema(root)))
                .expect("the schema");
            TestDb::Postgres(client)
        }
        None => TestDb::Sqlite(raw_sqlite(&root.join(".roundtable/store.db"))),
    }
}

/// Give the workspace at `to` (a copy of the tree at `from`, just made) a
/// copy of `from`'s store. On SQLite the copied tree already holds it
/// (`.roundtable/store.db`) and this does nothing; on PostgreSQL `to`'s
/// schema is laid out by the engine and then given every row of `from`'s,
/// triggers off (they refuse rewriting history), identities carried on.
pub(crate) fn copy_store(from: &Path, to: &Path) {
    let Some(server) = server() else { return };
    let (src, dst) = (schema(from), schema(to));
    // The engine lays out the schema (tables, functions, triggers) from a
    // scratch root, so nothing touches the copied tree.
    let scratch = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        store: Some(url(&server, to)),
        ..EngineOptions::default()
    };
    drop(Engine::open(scratch.path(), options).expect("lay out the copy's schema"));
    let mut c = connect(&server);
    let tables: Vec<String> = c
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
            &[&dst],
        )
        .expect("tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let identities: Vec<(String, String)> = c
        .query(
            "SELECT table_name::text, column_name::text FROM information_schema.columns
             WHERE table_schema = $1 AND is_identity = 'YES' ORDER BY 1, 2",
            &[&dst],
        )
        .expect("identity columns")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut sql = String::from("BEGIN; SET LOCAL session_replication_role = replica;\n");
    let all: Vec<String> = tables.iter().map(|t| format!("{dst}.{t}")).collect();
    sql.push_str(&format!("TRUNCATE {};\n", all.join(", ")));
    for t in &tables {
        sql.push_str(&format!(
            "INSERT INTO {dst}.{t} OVERRIDING SYSTEM VALUE SELECT * FROM {src}.{t};\n"
        ));
    }
    for (t, col) in &identities {
        sql.push_str(&format!(
            "SELECT setval(pg_get_serial_sequence('{dst}.{t}', '{col}'), \
             coalesce(max({col}), 1), max({col}) IS NOT NULL) FROM {dst}.{t};\n"
        ));
    }
    sql.push_str("COMMIT;");
    c.batch_execute(&sql).expect("copy the store");
}

/// `sql` with SQLite's `?N` parameters as PostgreSQL's `$N`.
fn dollars(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

impl TestDb {
    /// Run statements separated by `;` (no parameters).
    pub(crate) fn batch(&mut self, sql: &str) {
        self.try_batch(sql).expect("batch");
    }

    /// [`TestDb::batch`], its refusal returned.
    pub(crate) fn try_batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            TestDb::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            TestDb::Postgres(c) => c.batch_execute(sql).map_err(|e| e.to_string()),
        }
    }

    /// Run one statement with text parameters (`?1`…); the rows changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[&str]) -> u64 {
        match self {
            TestDb::Sqlite(c) => c
                .execute(sql, rusqlite::params_from_iter(params.iter()))
                .expect("execute") as u64,
            TestDb::Postgres(c) => {
                let params: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                c.execute(&dollars(sql), &params).expect("execute")
            }
        }
    }

    /// The integer columns of a query's first row.
    pub(crate) fn ints(&mut self, sql: &str) -> Vec<Option<i64>> {
        match self {
            TestDb::Sqlite(c) => c
                .query_row(sql, [], |r| {
                    (0..r.as_ref().column_count())
                        .map(|i| r.get::<_, Option<i64>>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .expect("query"),
            TestDb::Postgres(c) => {
                let row = c.query_one(sql, &[]).expect("query");
                (0..row.len())
                    .map(|i| {
                        row.try_get::<_, Option<i64>>(i)
                            .or_else(|_| row.try_get::<_, Option<i32>>(i).map(|v| v.map(i64::from)))
                            .expect("an integer")
                    })
                    .collect()
            }
        }
    }

    /// The single integer a query returns, `None` if the query failed
    /// (e.g. the store is busy or not made yet): for polling.
    pub(crate) fn try_int(&mut self, sql: &str) -> Option<i64> {
        match self {
            TestDb::Sqlite(c) => c.query_row(sql, [], |r| r.get(0)).ok(),
            TestDb::Postgres(c) => c.query_one(sql, &[]).ok().and_then(|r| r.try_get(0).ok()),
        }
    }

    /// The single integer a query returns.
    pub(crate) fn int(&mut self, sql: &str) -> i64 {
        self.ints(sql)[0].expect("not NULL")
    }

    /// The text columns of a query's first row (`None` for NULL).
    pub(crate) fn texts(&mut self, sql: &str) -> Vec<Option<String>> {
        match self {
            TestDb::Sqlite(c) => c
                .query_row(sql, [], |r| {
                    (0..r.as_ref().column_count())
                        .map(|i| r.get::<_, Option<String>>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .expect("query"),
            TestDb::Postgres(c) => {
                let row = c.query_one(sql, &[]).expect("query");
                (0..row.len())
                    .map(|i| row.try_get::<_, Option<String>>(i).expect("text"))
                    .collect()
            }
        }
    }

    /// Every row of a query whose columns are all text (cast them).
    pub(crate) fn rows(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        match self {
            TestDb::Sqlite(c) => {
                let mut stmt = c.prepare(sql).expect("prepare");
                let n = stmt.column_count();
                stmt.query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, Option<String>>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
            }
            TestDb::Postgres(c) => c
                .query(sql, &[])
                .expect("query")
                .iter()
                .map(|row| {
                    (0..row.len())
                        .map(|i| row.try_get::<_, Option<String>>(i).expect("text"))
                        .collect()
                })
                .collect(),
        }
    }

    /// How many rows `table` holds.
    pub(crate) fn count(&mut self, table: &str) -> i64 {
        self.int(&format!("SELECT count(*) FROM {table}"))
    }

    /// Drop trigger `name` of `table` (to tamper with history).
    pub(crate) fn drop_trigger(&mut self, name: &str, table: &str) {
        match self {
            TestDb::Sqlite(_) => self.batch(&format!("DROP TRIGGER {name}")),
            TestDb::Postgres(_) => self.batch(&format!("DROP TRIGGER {name} ON {table}")),
        }
    }

    /// Take the store's write lock and keep it until [`TestDb::release`]:
    /// every engine's write then waits.
    pub(crate) fn hold_write_lock(&mut self) {
        match self {
            TestDb::Sqlite(_) => self.batch("BEGIN IMMEDIATE"),
            TestDb::Postgres(_) => self.batch("BEGIN; SELECT id FROM store_lock FOR UPDATE"),
        }
    }

    /// End what [`TestDb::hold_write_lock`] began.
    pub(crate) fn release(&mut self) {
        self.batch("ROLLBACK");
    }

    /// Every row of every table, as text: equal fingerprints mean an
    /// unchanged store.
    pub(crate) fn fingerprint(&mut self) -> String {
        let mut out = String::new();
        match self {
            TestDb::Sqlite(db) => {
                let mut tables: Vec<String> = db
                    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                    .expect("prepare")
                    .query_map([], |r| r.get(0))
                    .expect("query")
                    .collect::<Result<_, _>>()
                    .expect("names");
                tables.retain(|t| !t.starts_with("sqlite_"));
                for t in tables {
                    let mut stmt = db.prepare(&format!("SELECT * FROM {t}")).expect("select");
                    let n = stmt.column_count();
                    let rows: Vec<String> = stmt
                        .query_map([], |r| {
                            let cells: Vec<String> = (0..n)
                                .map(|i| format!("{:?}", r.get_ref(i).expect("cell")))
                                .collect();
                            Ok(cells.join("|"))
                        })
                        .expect("rows")
                        .collect::<Result<_, _>>()
                        .expect("rows");
                    out.push_str(&format!("{t}:{}\n", rows.join(";")));
                }
            }
            TestDb::Postgres(c) => {
                let tables: Vec<String> = c
                    .query(
                        "SELECT table_name::text FROM information_schema.tables
                         WHERE table_schema = current_schema() AND table_name <> 'roundtable_schema'
                         ORDER BY 1",
                        &[],
                    )
                    .expect("tables")
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                for t in tables {
                    let rows: Vec<String> = c
                        .query(
                            &format!("SELECT row_to_json(x)::text FROM {t} x ORDER BY 1"),
                            &[],
                        )
                        .expect("rows")
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    out.push_str(&format!("{t}:{}\n", rows.join(";")));
                }
            }
        }
        out
    }
}

/// [`TestDb::fingerprint`] of the store of the workspace at `root`.
pub(crate) fn fingerprint(root: &Path) -> String {
    store_db(root).fingerprint()
}
