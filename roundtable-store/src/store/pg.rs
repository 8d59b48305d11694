//! The store on a PostgreSQL server: one database (or one schema of it)
//! shared by every host that governs the repository.
//!
//! - The schema is the SQLite store's model (`pg/v1.sql`), versioned in
//!   `roundtable_schema`; hosts opening a new database at once migrate it
//!   once (an advisory lock serializes the migrations).
//! - Every write is one `READ COMMITTED` transaction that first locks the
//!   one row of `store_lock`: writers run one at a time across every host,
//!   as SQLite's `BEGIN IMMEDIATE` makes them on one machine. Each write
//!   appends to the one hash chain of events, so it could not run beside
//!   another anyway; the lock makes the fencing counter, the event `seq`
//!   and its chain gap-free in commit order, and every check-then-write a
//!   plain read under the lock. Reads are `REPEATABLE READ READ ONLY`
//!   snapshots and take no lock.
//! - Idle connections are kept in a pool; every connection has a bounded
//!   `statement_timeout` and a `lock_timeout` of [`LOCK_TIMEOUT`]; a write
//!   transaction has an `idle_in_transaction_session_timeout` of
//!   [`IDLE_IN_TRANSACTION`]: a host that stops (paused, hung) while it
//!   holds the write lock holds it for at most that long, then the server
//!   ends its session and rolls its write back; the others go on, and
//!   the stopped host's call fails with a retryable `database` error. A server that is down or restarting fails the
//!   call with `database`, marked retryable, having written nothing.
//! - A commit that appended events sends `NOTIFY roundtable_events`, which
//!   wakes every host's waiters ([`super::watch`]).

use super::sql::{PgConn, SqlError, Tx};
use super::StoreError;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{PG_MIGRATIONS as MIGRATIONS, PG_SCHEMA_VERSION};

/// The channel commits notify and watchers listen on.
pub const CHANNEL: &str = "roundtable_events";

/// The advisory-lock key migrations take (any fixed number: "rtbl").
const MIGRATION_LOCK: i64 = 0x7274_626c;

/// How many idle connections the pool keeps.
const POOL_IDLE: usize = 8;

/// How long a session may sit inside a write transaction without sending
/// the server anything before the server ends it (PostgreSQL's
/// `idle_in_transaction_session_timeout`). It bounds how long one host
/// can hold the store's write lock (the row of `store_lock`) without
/// working: a host paused (`SIGSTOP`, a debugger, a swapped-out VM) or
/// hung while it holds it stops every other host's writes for at most
/// this long. Its session ended, its transaction is rolled back — nothing
/// of it is written — and when it comes back its call fails with a
/// retryable `database` error. No write of the engine's spends this
/// long between two statements.
pub const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(5);

/// How long a statement waits for a lock another session holds before it
/// fails, retryable (PostgreSQL's `lock_timeout`). The write lock is
/// taken without waiting (`SKIP LOCKED`, retried up to the busy timeout);
/// this bounds every other lock wait (a migration's, a row lock).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a PostgreSQL store is: the server's connection settings and the
/// schema, from a `postgres://` URL.
#[derive(Clone)]
pub struct PgLocation {
    /// The server's connection settings.
    pub config: postgres::Config,
    /// The schema (`?schema=NAME`), `public` when not given.
    pub schema: String,
    /// The URL with any password removed, for messages.
    pub shown: String,
}

impl PgLocation {
    /// Read `url` (`postgres://…` or `postgresql://…`, libpq's URL
    /// form, plus roundtable's own `schema=NAME` parameter).
    pub fn parse(url: &str) -> Result<PgLocation, String> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err("a store URL starts with postgres:// or postgresql://".into());
        }
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let mut schema = None;
        let mut kept = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            match pair.split_once('=') {
                Some(("schema", name)) => schema = Some(name.to_owned()),
                _ if pair.is_empty() => {}
                _ => kept.push(pair),
            }
        }
        let schema = schema.unwrap_or_else(|| "public".to_owned());
        let valid = schema.len() <= 63
            && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(format!(
                "schema {schema:?} is not a lower-case SQL name (a-z, 0-9, _; at most 63)"
            ));
        }
        let rebuilt = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let mut config: postgres::Config = rebuilt.parse().map_err(|e| format!("{e}"))?;
        if config.get_application_name().is_none() {
            config.application_name("roundtable");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        Ok(PgLocation {
            config,
            shown: format!("{}?schema={schema}", without_password(base)),
            schema,
        })
    }
}

/// `postgres://user:secret@host/db` as `postgres://user@host/db`.
fn without_password(base: &str) -> String {
    let Some((scheme, rest)) = base.split_once("://") else {
        return base.to_owned();
    };
    match rest.split_once('@') {
        Some((who, host)) => {
            let user = who.split_once(':').map_or(who, |(u, _)| u);
            format!("{scheme}://{user}@{host}")
        }
        None => base.to_owned(),
    }
}

/// Opens connections to one store, each set up alike.
#[derive(Clone)]
pub struct Connector {
    location: PgLocation,
    statement_timeout: Duration,
}

impl Connector {
    /// A new connection, its session set up: the schema first on the
    /// search path, the statement timeout.
    pub fn connect(&self) -> Result<PgConn, SqlError> {
        let client = self.location.config.connect(postgres::NoTls)?;
        let mut conn = PgConn::new(client);
        let ms = self.statement_timeout.as_millis();
        conn.client.batch_execute(&format!(
            "SET search_path TO \"{}\"; SET statement_timeout = {ms}; SET lock_timeout = {}; SET idle_in_transaction_session_timeout = {};",
            self.location.schema,
            LOCK_TIMEOUT.as_millis(),
            ms.saturating_mul(4).max(60_000),
        ))?;
        Ok(conn)
    }
}

/// An open PostgreSQL store.
pub struct PgStore {
    connector: Connector,
    idle: Mutex<Vec<PgConn>>,
    busy_timeout: Duration,
}

impl PgStore {
    /// Connect, create the schema when absent and migrate it. `true` in
    /// the pair when this open created it.
    pub fn open(
        location: PgLocation,
        busy_timeout: Duration,
        statement_timeout: Duration,
    ) -> Result<(PgStore, bool), StoreError> {
        let store = PgStore {
            connector: Connector {
                location,
                statement_timeout,
            },
            idle: Mutex::new(Vec::new()),
            busy_timeout,
        };
        let mut conn = store.connect().map_err(|e| store.error(e))?;
        let created = migrate(&mut conn, &store.connector.location).map_err(|e| match e {
            Migration::Sql(e) => store.error(e),
            Migration::TooNew(found) => StoreError::TooNew {
                path: store.shown().to_owned(),
                found,
                known: PG_SCHEMA_VERSION,
            },
        })?;
        store.give(conn);
        Ok((store, created))
    }

    /// The URL, without its password.
    pub fn shown(&self) -> &str {
        &self.connector.location.shown
    }

    /// A query failure of this store.
    pub fn error(&self, source: SqlError) -> StoreError {
        StoreError::Database {
            path: self.shown().to_owned(),
            source,
        }
    }

    /// What opens this store's connections.
    pub fn connector(&self) -> Connector {
        self.connector.clone()
    }

    fn connect(&self) -> Result<PgConn, SqlError> {
        self.connector.connect()
    }

    /// An idle connection, or a new one.
    fn take(&self) -> Result<PgConn, SqlError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        match idle {
            Some(conn) if !conn.client.is_closed() => Ok(conn),
            _ => self.connect(),
        }
    }

    /// Return a connection to the pool (a broken one is dropped).
    fn give(&self, conn: PgConn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < POOL_IDLE {
            idle.push(conn);
        }
    }

    /// A connection with a transaction begun by `begin`. A pooled
    /// connection the server has closed since (it restarted) is only
    /// found out by using it: nothing has been done on it yet, so it is
    /// dropped and the next one (or a new one) tried.
    fn begin(&self, begin: &str) -> Result<PgConn, SqlError> {
        let mut tries = 0;
        loop {
            let mut conn = self.take()?;
            match conn.client.batch_execute(begin) {
                Ok(()) => return Ok(conn),
                Err(e) if tries <= POOL_IDLE && gone(&e) => tries += 1,
                Err(e) => {
                    self.give(conn);
                    return Err(e.into());
                }
            }
        }
    }

    /// Run `f` in one write transaction holding the store's write lock;
    /// it commits only when `f` succeeds. `notify`: whether the commit
    /// appended events (checked after `f`).
    pub fn write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
        appended: impl FnOnce() -> bool,
    ) -> Result<T, E> {
        let err = |e: SqlError| self.error(e);
        let mut conn = self
            .begin(&format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL idle_in_transaction_session_timeout = {}",
                IDLE_IN_TRANSACTION.as_millis()
            ))
            .map_err(err)?;
        if let Err(e) = self.lock_writes(&mut conn) {
            let _ = conn.client.batch_execute("ROLLBACK");
            self.give(conn);
            return Err(E::from(match e {
                Locked::Sql(e) => err(e),
                Locked::Interrupted(why) => StoreError::Interrupted(why),
                Locked::TimedOut => StoreError::Busy {
                    path: self.shown().to_owned(),
                    waited: self.busy_timeout,
                },
            }));
        }
        let cell = std::cell::RefCell::new(conn);
        let out = f(&Tx::postgres(&cell));
        let mut conn = cell.into_inner();
        let out = match out {
            Ok(v) => v,
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give(conn);
                return Err(e);
            }
        };
        if appended() {
            if let Err(e) = conn.client.batch_execute(&format!("NOTIFY {CHANNEL}")) {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give(conn);
                return Err(E::from(err(e.into())));
            }
        }
        // The transaction's id, to learn its fate should the connection
        // break while it commits.
        let xid = conn
            .client
            .query_one("SELECT txid_current()", &[])
            .and_then(|r| r.try_get::<_, i64>(0));
        let xid = match xid {
            Ok(xid) => xid,
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give(conn);
                return Err(E::from(err(e.into())));
            }
        };
        match conn.client.batch_execute("COMMIT") {
            Ok(()) => {
                self.give(conn);
                Ok(out)
            }
            Err(e) if conn.client.is_closed() || e.as_db_error().is_none() => {
                // The server may have committed before the connection
                // broke: ask it, once it is back, rather than report a
                // committed change as failed.
                drop(conn);
                match self.fate(xid) {
                    Some(true) => Ok(out),
                    Some(false) => Err(E::from(err(e.into()))),
                    None => Err(E::from(StoreError::CommitUnknown {
                        path: self.shown().to_owned(),
                        source: e.into(),
                    })),
                }
            }
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give(conn);
                Err(E::from(err(e.into())))
            }
        }
    }

    /// Whether transaction `xid` committed (`None`: the server could not
    /// be asked within the busy timeout).
    fn fate(&self, xid: i64) -> Option<bool> {
        let started = Instant::now();
        loop {
            if let Ok(mut conn) = self.connect() {
                let status = conn
                    .client
                    .query_one("SELECT txid_status($1)", &[&xid])
                    .and_then(|r| r.try_get::<_, Option<String>>(0));
                match status.as_ref().map(Option::as_deref) {
                    Ok(Some("committed")) => return Some(true),
                    Ok(Some("aborted")) => return Some(false),
                    _ => {}
                }
            }
            if started.elapsed() >= self.busy_timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Take the write lock: the one row of `store_lock`. The wait gives
    /// up at the busy timeout, or as soon as the calling thread's call is
    /// cancelled or past its deadline.
    fn lock_writes(&self, conn: &mut PgConn) -> Result<(), Locked> {
        let started = Instant::now();
        let mut attempt = 0u32;
        loop {
            let got = conn
                .client
                .query("SELECT id FROM store_lock FOR UPDATE SKIP LOCKED", &[])
                .map_err(|e| Locked::Sql(e.into()))?;
            if !got.is_empty() {
                return Ok(());
            }
            crate::interrupt::check().map_err(Locked::Interrupted)?;
            if started.elapsed() >= self.busy_timeout {
                return Err(Locked::TimedOut);
            }
            let step = Duration::from_micros(if attempt < 10 { 200 } else { 2000 });
            let until = crate::interrupt::bound(Instant::now() + step);
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            attempt += 1;
        }
    }

    /// Run `f` on one read-only snapshot.
    pub fn read<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let conn = self
            .begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(|e| self.error(e))?;
        let cell = std::cell::RefCell::new(conn);
        let out = f(&Tx::postgres(&cell));
        let mut conn = cell.into_inner();
        // Ending a read-only transaction cannot lose anything.
        let _ = conn.client.batch_execute("COMMIT");
        self.give(conn);
        out
    }
}

/// A lease taken with [`PgStore::lease`]: held until dropped, or until
/// the server ends its session (its holder idle in it for
/// [`IDLE_IN_TRANSACTION`]: paused, hung).
pub struct PgLease<'a> {
    store: &'a PgStore,
    conn: Option<PgConn>,
}

impl Drop for PgLease<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            let _ = conn.client.batch_execute("ROLLBACK");
            self.store.give(conn);
        }
    }
}

impl PgStore {
    /// Take the lease named by `key`, shared by every host on this
    /// database: a transaction-scoped advisory lock, held by an open
    /// transaction that writes nothing. Waits for another holder up to
    /// [`LOCK_TIMEOUT`]; `None` when it could not be had in that time (or
    /// the server could not be reached) — a lease is an optimisation,
    /// never a condition. A holder that stops for [`IDLE_IN_TRANSACTION`]
    /// loses it: the server ends its session.
    pub fn lease(&self, key: i64) -> Option<PgLease<'_>> {
        let mut conn = self
            .begin(&format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL idle_in_transaction_session_timeout = {}",
                IDLE_IN_TRANSACTION.as_millis()
            ))
            .ok()?;
        match conn
            .client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&key])
        {
            Ok(_) => Some(PgLease {
                store: self,
                conn: Some(conn),
            }),
            Err(_) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give(conn);
                None
            }
        }
    }
}

/// Whether `e` says the connection is gone (the socket broke, or the
/// server shut the session down).
fn gone(e: &postgres::Error) -> bool {
    e.as_db_error()
        .is_none_or(|db| db.code().code().starts_with("57P"))
}

enum Locked {
    Sql(SqlError),
    Interrupted(crate::interrupt::Interrupted),
    TimedOut,
}

enum Migration {
    Sql(SqlError),
    TooNew(i64),
}

impl From<postgres::Error> for Migration {
    fn from(e: postgres::Error) -> Migration {
        Migration::Sql(e.into())
    }
}

/// Bring the schema up to [`PG_SCHEMA_VERSION`], creating it when absent;
/// `true` when this call created it. One transaction per step, under an
/// advisory lock, so hosts opening a new database at once migrate it once.
fn migrate(conn: &mut PgConn, location: &PgLocation) -> Result<bool, Migration> {
    let schema = &location.schema;
    let mut created = false;
    loop {
        let mut tx = conn.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
             CREATE TABLE IF NOT EXISTS roundtable_schema (version BIGINT NOT NULL);"
        ))?;
        let version: Option<i64> = tx
            .query_opt("SELECT max(version) FROM roundtable_schema", &[])?
            .and_then(|r| r.get(0));
        let version = version.unwrap_or(0);
        if version > PG_SCHEMA_VERSION {
            return Err(Migration::TooNew(version));
        }
        if version == PG_SCHEMA_VERSION {
            tx.commit()?;
            return Ok(created);
        }
        let index = usize::try_from(version).map_err(|_| Migration::TooNew(version))?;
        tx.batch_execute(MIGRATIONS[index])?;
        tx.execute(
            "INSERT INTO roundtable_schema (version) VALUES ($1)",
            &[&(version + 1)],
        )?;
        tx.commit()?;
        created |= version == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_a_schema_and_never_show_the_password() {
        let l = PgLocation::parse("postgres://rt:secret@localhost:5433/gov?schema=team_a")
            .expect("parses");
        assert_eq!(l.schema, "team_a");
        assert_eq!(l.shown, "postgres://rt@localhost:5433/gov?schema=team_a");
        assert_eq!(l.config.get_dbname(), Some("gov"));
        let l = PgLocation::parse("postgresql://rt@%2Ftmp%2Fpg/db").expect("socket form");
        assert_eq!(l.schema, "public");
        for bad in [
            "mysql://x/y",
            "postgres://h/db?schema=Team",
            "postgres://h/db?schema=a;drop",
            "postgres://h/db?nonsense_key=1",
        ] {
            assert!(PgLocation::parse(bad).is_err(), "{bad}");
        }
    }
}
