//! One query interface over the store's two engines (embedded SQLite,
//! shared PostgreSQL): every store module writes its SQL once, binds
//! [`Value`]s and reads columns with [`Row::get`], and runs unchanged on
//! either.
//!
//! The SQL is written in the common dialect: numbered parameters
//! (`?1`, rewritten to `$1` for PostgreSQL), `ON CONFLICT … DO NOTHING`,
//! `RETURNING`, `IS NOT DISTINCT FROM`. Integers are 64-bit on both
//! (`INTEGER` / `BIGINT`), blobs `BLOB` / `BYTEA`. The few statements
//! the dialects cannot share ask [`Tx::dialect`].
//! Every statement is compiled once per connection and kept.

use std::borrow::Cow;
#[cfg(feature = "postgres")]
use std::cell::RefCell;
#[cfg(feature = "postgres")]
use std::collections::HashMap;

/// The engine a [`Tx`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// The embedded SQLite store.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// SQLite refused it.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL refused it, or the connection to the server failed.
    #[error("{}", postgres_message(.0))]
    #[cfg(feature = "postgres")]
    Postgres(#[from] postgres::Error),
    /// PostgreSQL could not prepare a statement (the SQL is named).
    #[error("{} preparing: {sql}", postgres_message(.source))]
    #[cfg(feature = "postgres")]
    Prepare {
        /// The statement as sent.
        sql: String,
        /// PostgreSQL's error.
        #[source]
        source: postgres::Error,
    },
    /// A query expected a row and found none.
    #[error("the query returned no row")]
    NoRows,
    /// A column's or parameter's value is not what the code expects.
    #[error("value {what}: {reason}")]
    Value {
        /// The column (`column 3`) or parameter.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A stored value did not decode (bad JSON, an unknown enum spelling).
    #[error("stored value does not decode: {0}")]
    Decode(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A PostgreSQL error with the server's message and SQLSTATE, not only
/// "db error".
#[cfg(feature = "postgres")]
fn postgres_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("postgres: {} (SQLSTATE {})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("postgres: {e}: {cause}"),
            None => format!("postgres: {e}"),
        },
    }
}

impl SqlError {
    /// A stored value that did not decode.
    pub fn decode(e: impl std::error::Error + Send + Sync + 'static) -> SqlError {
        SqlError::Decode(Box::new(e))
    }

    /// Whether the call may succeed if made again: the server was
    /// unreachable or restarting, the connection broke, or a
    /// serialization failure or deadlock aborted the transaction.
    pub fn is_retryable(&self) -> bool {
        match self {
            #[cfg(feature = "postgres")]
            SqlError::Postgres(e) | SqlError::Prepare { source: e, .. } => match e.code() {
                Some(code) => {
                    let c = code.code();
                    c.starts_with("08") // connection exception
                        || c.starts_with("57P") // admin shutdown, crash shutdown, cannot connect now
                        || c == "57014" // the statement timeout (or a cancel) stopped it
                        || c == "55P03" // the lock timeout: another session held the lock
                        || c == "25P03" // the idle-in-transaction timeout ended the session
                        || c == "40001" // serialization failure
                        || c == "40P01" // deadlock detected
                        || c == "53300" // too many connections
                }
                None => true, // I/O on the socket, a closed connection
            },
            SqlError::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            _ => false,
        }
    }
}

/// The result of a query.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// A parameter or column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// SQL `NULL`.
    Null,
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(Cow<'a, str>),
    /// Bytes.
    Blob(Cow<'a, [u8]>),
}

/// A value that binds as a parameter.
pub trait ToValue {
    /// The value to bind.
    fn to_value(&self) -> Value<'_>;
}

macro_rules! int_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value<'_> {
                // Every caller's integers fit: sizes, counts, seqs.
                Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
int_to_value!(i64, i32, u32, u16, u64, usize);

impl ToValue for bool {
    fn to_value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}
impl ToValue for [u8] {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(Cow::Borrowed(self))
    }
}
impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(Cow::Borrowed(self))
    }
}
impl ToValue for crate::Digest {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Owned(self.to_string()))
    }
}
impl ToValue for Value<'_> {
    fn to_value(&self) -> Value<'_> {
        match self {
            Value::Null => Value::Null,
            Value::Int(i) => Value::Int(*i),
            Value::Real(r) => Value::Real(*r),
            Value::Text(t) => Value::Text(Cow::Borrowed(t)),
            Value::Blob(b) => Value::Blob(Cow::Borrowed(b)),
        }
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value<'_> {
        match self {
            Some(v) => v.to_value(),
            None => Value::Null,
        }
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value<'_> {
        (**self).to_value()
    }
}
impl<T: ToValue + ?Sized> ToValue for Box<T> {
    fn to_value(&self) -> Value<'_> {
        (**self).to_value()
    }
}

/// A column value read into a Rust value.
pub trait FromValue: Sized {
    /// Decode `v`; the error says why it does not fit.
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String>;
}

macro_rules! int_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
                match v {
                    Value::Int(i) => <$t>::try_from(i).map_err(|_| format!("{i} is out of range")),
                    other => Err(format!("expected an integer, found {}", kind(&other))),
                }
            }
        }
    )*};
}
int_from_value!(i64, i32, u32, u16, u64, usize);

fn kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}

impl FromValue for bool {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        i64::from_value(v).map(|i| i != 0)
    }
}
impl FromValue for f64 {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        match v {
            Value::Real(r) => Ok(r),
            // Integers are exact in a double up to 2^53: every count.
            Value::Int(i) => Ok(i as f64),
            other => Err(format!("expected a number, found {}", kind(&other))),
        }
    }
}
impl FromValue for String {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        match v {
            Value::Text(t) => Ok(t.into_owned()),
            other => Err(format!("expected text, found {}", kind(&other))),
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        match v {
            Value::Blob(b) => Ok(b.into_owned()),
            other => Err(format!("expected a blob, found {}", kind(&other))),
        }
    }
}
impl FromValue for crate::Digest {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        String::from_value(v)?
            .parse()
            .map_err(|e: roundtable_base::DigestError| e.to_string())
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: Value<'_>) -> std::result::Result<Self, String> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// A statement's parameters: `params![a, b]`, an array of one type, or
/// a list of [`Value`]s built at run time.
pub trait Params {
    /// The values, in order (`?1` first).
    fn values(&self) -> Vec<Value<'_>>;
}

impl<T: ToValue, const N: usize> Params for [T; N] {
    fn values(&self) -> Vec<Value<'_>> {
        self.iter().map(ToValue::to_value).collect()
    }
}
impl<T: ToValue> Params for &[T] {
    fn values(&self) -> Vec<Value<'_>> {
        self.iter().map(ToValue::to_value).collect()
    }
}
impl<T: ToValue> Params for Vec<T> {
    fn values(&self) -> Vec<Value<'_>> {
        self.iter().map(ToValue::to_value).collect()
    }
}

/// The parameters of a statement, each converted with [`ToValue`]:
/// `params![id, now.0]`, `params![]` for none.
#[macro_export]
macro_rules! params {
    () => {
        &[] as &[&dyn $crate::store::sql::ToValue]
    };
    ($($v:expr),+ $(,)?) => {
        &[$(&$v as &dyn $crate::store::sql::ToValue),+] as &[&dyn $crate::store::sql::ToValue]
    };
}
pub use crate::params;

/// `Ok(None)` for a query that found no row.
pub trait OptionalExtension<T> {
    /// [`SqlError::NoRows`] becomes `Ok(None)`.
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(SqlError::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// One row of a result.
pub struct Row<'r> {
    inner: RowInner<'r>,
}

enum RowInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    #[cfg(feature = "postgres")]
    Postgres(&'r postgres::Row),
}

impl Row<'_> {
    /// Column `index` (from 0) as a `T`.
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T> {
        let value = match &self.inner {
            RowInner::Sqlite(r) => {
                sqlite_value(r.get_ref(index)?).map_err(|reason| SqlError::Value {
                    what: format!("column {index}"),
                    reason,
                })?
            }
            #[cfg(feature = "postgres")]
            RowInner::Postgres(r) => r.try_get::<_, Value<'_>>(index)?,
        };
        T::from_value(value).map_err(|reason| SqlError::Value {
            what: format!("column {index}"),
            reason,
        })
    }
}

fn sqlite_value(v: rusqlite::types::ValueRef<'_>) -> std::result::Result<Value<'_>, String> {
    use rusqlite::types::ValueRef;
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(Cow::Borrowed(
            std::str::from_utf8(t).map_err(|e| format!("text is not UTF-8: {e}"))?,
        )),
        ValueRef::Blob(b) => Value::Blob(Cow::Borrowed(b)),
    })
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// PostgreSQL binds a value by the type the server inferred for the
/// parameter: an integer goes to `int8`, `int4`, `int2` or `bool`, text
/// to any text type.
#[cfg(feature = "postgres")]
impl postgres::types::ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> std::result::Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>>
    {
        use postgres::types::{IsNull, Type};
        let wrong = || -> Box<dyn std::error::Error + Sync + Send> {
            format!("{} cannot bind to a parameter of type {ty}", kind(self)).into()
        };
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::UNKNOWN => i.to_string().to_sql(ty, out),
                _ => Err(wrong()),
            },
            Value::Real(r) => match *ty {
                Type::FLOAT8 => r.to_sql(ty, out),
                Type::FLOAT4 => (*r as f32).to_sql(ty, out),
                _ => Err(wrong()),
            },
            Value::Text(t) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    t.as_ref().to_sql(&Type::TEXT, out)
                }
                Type::JSON => t.as_ref().to_sql(&Type::TEXT, out),
                _ => Err(wrong()),
            },
            Value::Blob(b) => match *ty {
                Type::BYTEA => b.as_ref().to_sql(ty, out),
                _ => Err(wrong()),
            },
        }
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A column of any type PostgreSQL returns to the store.
#[cfg(feature = "postgres")]
impl<'a> postgres::types::FromSql<'a> for Value<'a> {
    fn from_sql(
        ty: &postgres::types::Type,
        raw: &'a [u8],
    ) -> std::result::Result<Value<'a>, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::Type;
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::BYTEA => Value::Blob(Cow::Borrowed(raw)),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
                Value::Text(Cow::Borrowed(<&str>::from_sql(&Type::TEXT, raw)?))
            }
            _ => return Err(format!("a column of type {ty} is not read by the store").into()),
        })
    }

    fn from_sql_null(
        _: &postgres::types::Type,
    ) -> std::result::Result<Value<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Value::Null)
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }
}

/// A PostgreSQL connection with its compiled statements.
#[cfg(feature = "postgres")]
pub struct PgConn {
    /// The connection.
    pub client: postgres::Client,
    statements: HashMap<String, postgres::Statement>,
}

#[cfg(feature = "postgres")]
impl PgConn {
    /// Wrap a connected client.
    pub fn new(client: postgres::Client) -> PgConn {
        PgConn {
            client,
            statements: HashMap::new(),
        }
    }

    /// `sql`'s compiled statement, compiled on first use.
    fn statement(&mut self, sql: &str) -> Result<postgres::Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let sql_pg = postgres_sql(sql);
        let s = self
            .client
            .prepare(&sql_pg)
            .map_err(|source| SqlError::Prepare {
                sql: sql_pg.clone(),
                source,
            })?;
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

/// The common dialect's `sql` as PostgreSQL spells it: `?N` parameters
/// become `$N`, and a bare `?` the next number after the largest so far
/// (SQLite's rule), outside quoted strings and identifiers.
pub fn postgres_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut largest = 0u32;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    out.push(c);
                }
                '?' => {
                    let mut digits = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        digits.push(d);
                        chars.next();
                    }
                    let n = digits.parse().unwrap_or(largest + 1);
                    largest = largest.max(n);
                    out.push_str(&format!("${n}"));
                }
                c => out.push(c),
            },
        }
    }
    out
}

/// One transaction (or, for a read, one snapshot) on either engine: what
/// every store function runs its SQL on.
pub struct Tx<'c> {
    inner: TxInner<'c>,
}

enum TxInner<'c> {
    Sqlite(&'c rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(&'c RefCell<PgConn>),
}

impl<'c> Tx<'c> {
    /// A transaction open on the SQLite connection `conn`.
    pub fn sqlite(conn: &'c rusqlite::Connection) -> Tx<'c> {
        Tx {
            inner: TxInner::Sqlite(conn),
        }
    }

    /// A transaction open on the PostgreSQL connection `conn`.
    #[cfg(feature = "postgres")]
    pub fn postgres(conn: &'c RefCell<PgConn>) -> Tx<'c> {
        Tx {
            inner: TxInner::Postgres(conn),
        }
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        match self.inner {
            TxInner::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            TxInner::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The SQLite connection, for what only SQLite does (streaming a
    /// blob in pieces).
    pub fn as_sqlite(&self) -> Option<&rusqlite::Connection> {
        match self.inner {
            TxInner::Sqlite(c) => Some(c),
            #[cfg(feature = "postgres")]
            TxInner::Postgres(_) => None,
        }
    }

    /// Run a statement; the number of rows it changed.
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<usize> {
        let values = params.values();
        match &self.inner {
            TxInner::Sqlite(c) => Ok(c
                .prepare_cached(sql)?
                .execute(rusqlite::params_from_iter(values.iter()))?),
            #[cfg(feature = "postgres")]
            TxInner::Postgres(c) => {
                let mut c = c.borrow_mut();
                let stmt = c.statement(sql)?;
                let refs = pg_refs(&values);
                let n = c.client.execute(&stmt, &refs)?;
                Ok(usize::try_from(n).unwrap_or(usize::MAX))
            }
        }
    }

    /// Run statements separated by `;`, with no parameters.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            TxInner::Sqlite(c) => Ok(c.execute_batch(sql)?),
            #[cfg(feature = "postgres")]
            TxInner::Postgres(c) => Ok(c.borrow_mut().client.batch_execute(sql)?),
        }
    }

    /// The first row of a query, through `f`; [`SqlError::NoRows`] when
    /// there is none.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        let values = params.values();
        match &self.inner {
            TxInner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
                match rows.next()? {
                    Some(r) => f(&Row {
                        inner: RowInner::Sqlite(r),
                    }),
                    None => Err(SqlError::NoRows),
                }
            }
            #[cfg(feature = "postgres")]
            TxInner::Postgres(c) => {
                let mut c = c.borrow_mut();
                let stmt = c.statement(sql)?;
                let refs = pg_refs(&values);
                let rows = c.client.query(&stmt, &refs)?;
                match rows.first() {
                    Some(r) => f(&Row {
                        inner: RowInner::Postgres(r),
                    }),
                    None => Err(SqlError::NoRows),
                }
            }
        }
    }

    /// Stream a query's rows to `f`, in order, until it returns `false`
    /// (a large result is never held whole).
    pub fn for_each_row(
        &self,
        sql: &str,
        params: impl Params,
        mut f: impl FnMut(&Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        let values = params.values();
        match &self.inner {
            TxInner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
                while let Some(r) = rows.next()? {
                    if !f(&Row {
                        inner: RowInner::Sqlite(r),
                    })? {
                        break;
                    }
                }
                Ok(())
            }
            #[cfg(feature = "postgres")]
            TxInner::Postgres(c) => {
                use postgres::fallible_iterator::FallibleIterator as _;
                let mut c = c.borrow_mut();
                let stmt = c.statement(sql)?;
                let mut rows = c.client.query_raw(&stmt, values.iter())?;
                while let Some(r) = rows.next()? {
                    if !f(&Row {
                        inner: RowInner::Postgres(&r),
                    })? {
                        break;
                    }
                }
                Ok(())
            }
        }
    }

    /// Every row of a query, each through `f`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: impl Params,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let values = params.values();
        match &self.inner {
            TxInner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&Row {
                        inner: RowInner::Sqlite(r),
                    })?);
                }
                Ok(out)
            }
            #[cfg(feature = "postgres")]
            TxInner::Postgres(c) => {
                let mut c = c.borrow_mut();
                let stmt = c.statement(sql)?;
                let refs = pg_refs(&values);
                let rows = c.client.query(&stmt, &refs)?;
                rows.iter()
                    .map(|r| {
                        f(&Row {
                            inner: RowInner::Postgres(r),
                        })
                    })
                    .collect()
            }
        }
    }
}

#[cfg(feature = "postgres")]
fn pg_refs<'v>(values: &'v [Value<'_>]) -> Vec<&'v (dyn postgres::types::ToSql + Sync)> {
    values
        .iter()
        .map(|v| v as &(dyn postgres::types::ToSql + Sync))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollars_outside_quotes() {
        assert_eq!(
            postgres_sql("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND \"?3\" = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND \"?3\" = $12"
        );
        assert_eq!(
            postgres_sql("a = ?2 OR b = ? LIMIT ?"),
            "a = $2 OR b = $3 LIMIT $4"
        );
    }

    #[test]
    fn values_decode_and_refuse_what_does_not_fit() {
        assert_eq!(i64::from_value(Value::Int(7)), Ok(7));
        assert!(u32::from_value(Value::Int(-1)).is_err());
        assert!(String::from_value(Value::Int(1)).is_err());
        assert_eq!(Option::<i64>::from_value(Value::Null), Ok(None));
        assert!(i64::from_value(Value::Null).is_err());
        assert!(bool::from_value(Value::Int(1)).unwrap_or(false));
    }
}
