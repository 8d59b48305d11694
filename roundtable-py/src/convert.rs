//! JSON values ↔ Python objects, both ways, by hand.
//!
//! Python → JSON is strict: only what JSON can carry crosses (`None`,
//! `bool`, `int` within 64 bits, finite `float`, `str`, `dict` with `str`
//! keys, `list`/`tuple`); anything else is `invalid_argument` naming the
//! field path the way the core names fields (`affected_resources[2]`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use pyo3::IntoPyObjectExt;
use roundtable::ToolError;
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused rather than recursed into.
const MAX_DEPTH: usize = 128;

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A Python object as a JSON value; `path` names it in a refusal.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, path: &str) -> Result<Value, ToolError> {
    walk(obj, path, 0)
}

fn walk(obj: &Bound<'_, PyAny>, path: &str, depth: usize) -> Result<Value, ToolError> {
    if depth > MAX_DEPTH {
        return Err(ToolError::invalid_argument(
            path,
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // `bool` is a subclass of `int`: test it first.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s
            .to_cow()
            .map_err(|_| ToolError::invalid_argument(path, "the string is not valid UTF-8"))?;
        return Ok(Value::String(s.into_owned()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err(ToolError::invalid_argument(
            path,
            "the integer does not fit in 64 bits",
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| ToolError::invalid_argument(path, "NaN and infinity are not JSON"));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(ToolError::invalid_argument(
                    path,
                    format!("a key is a {}, not a str", type_name(&k)),
                ));
            };
            let key = key
                .to_cow()
                .map_err(|_| ToolError::invalid_argument(path, "a key is not valid UTF-8"))?;
            let value = walk(&v, &child(path, &key), depth + 1)?;
            map.insert(key.into_owned(), value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .enumerate()
            .map(|(i, v)| walk(&v, &format!("{path}[{i}]"), depth + 1))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .enumerate()
            .map(|(i, v)| walk(&v, &format!("{path}[{i}]"), depth + 1))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    Err(ToolError::invalid_argument(
        path,
        format!("a {} is not a JSON value", type_name(obj)),
    ))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// A JSON value as Python objects (`dict`, `list`, `str`, `int`, `float`,
/// `bool`, `None`).
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Null => Ok(py.None().into_bound(py)),
        Value::Bool(b) => b.into_bound_py_any(py),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)
            }
        }
        Value::String(s) => s.into_bound_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            Ok(list.into_any())
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            Ok(dict.into_any())
        }
    }
}

/// What a plan says a JSON value becomes (`roundtable/_records.py` writes
/// the plans, generated with the records): a record, a tuple, an actor.
const PLAN_RECORD: u8 = 0;
const PLAN_TUPLE: u8 = 1;
const PLAN_ACTOR: u8 = 2;

/// A tool result as its generated record, built here in one pass instead of
/// as plain dicts that `from_dict` then walks again in Python.
///
/// `plan` is `None` (plain JSON values), `(0, cls, fields)` for a record
/// (`fields`: `(key, attribute, plan)` of each field that is converted,
/// renamed or may be absent), `(1, plan)` for an array (a tuple of its
/// items) or `(2,)` for an actor. A record is `cls` with its `__dict__` the
/// JSON object's dict, converted fields replaced, and `raw` the plain dict
/// (what `from_dict` builds too).
pub(crate) fn to_record<'py>(
    py: Python<'py>,
    value: &Value,
    plan: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = to_py(py, value)?;
    typed(py, raw, plan)
}

/// `object.__new__(cls)` with `attrs` as its `__dict__`: what `from_dict`
/// does in Python, without `__init__` or the frozen `__setattr__`.
fn new_record<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyType>,
    attrs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let args = PyTuple::empty(py);
    // SAFETY: `cls` is a type and `args` a tuple, both alive for the call;
    // PyType_GenericNew returns a new reference or NULL with an exception
    // set. `record` then owns a live object, and PyObject_GenericSetDict
    // takes its own reference to `attrs` (a dict) or fails with an
    // exception set (e.g. a class without a `__dict__`).
    unsafe {
        let made = pyo3::ffi::PyType_GenericNew(
            cls.as_ptr().cast::<pyo3::ffi::PyTypeObject>(),
            args.as_ptr(),
            std::ptr::null_mut(),
        );
        if made.is_null() {
            return Err(PyErr::fetch(py));
        }
        let record = Bound::from_owned_ptr(py, made);
        if pyo3::ffi::PyObject_GenericSetDict(record.as_ptr(), attrs.as_ptr(), std::ptr::null_mut())
            != 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(record)
    }
}

/// The actors records named, by `(kind, id)`: an actor is immutable, so
/// each one is validated and allocated once (at most 4096 kept).
static ACTORS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The actor a record names (`{"kind", "id"}`); an unknown kind or a bad
/// id is `invalid_argument`, never some other kind.
fn actor<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let part = |key: &str| raw.get_item(PyString::intern(py, key));
    let key = PyTuple::new(py, [part("kind")?, part("id")?])?;
    let cache = ACTORS.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    if let Some(known) = cache.get_item(&key)? {
        return Ok(known);
    }
    let spelling = format!(
        "{}:{}",
        key.get_item(0)?.extract::<String>()?,
        key.get_item(1)?.extract::<String>()?
    );
    let parsed = roundtable::Actor::parse(&spelling)
        .map_err(|e| crate::raise(py, &ToolError::invalid_argument("actor", e)))?;
    let made = Bound::new(py, crate::PyActor { inner: parsed })?.into_any();
    if cache.len() >= 4096 {
        cache.clear();
    }
    cache.set_item(key, &made)?;
    Ok(made)
}

/// `raw` (plain JSON as Python objects) as `plan` says.
fn typed<'py>(
    py: Python<'py>,
    raw: Bound<'py, PyAny>,
    plan: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if plan.is_none() || raw.is_none() {
        return Ok(raw);
    }
    let plan = plan.cast::<PyTuple>()?;
    match plan.get_item(0)?.extract::<u8>()? {
        PLAN_RECORD => {
            let raw_dict = raw.cast::<PyDict>()?;
            let attrs = raw_dict.copy()?;
            for field in plan.get_item(2)?.cast::<PyTuple>()?.iter() {
                let field = field.cast::<PyTuple>()?;
                let key = field.get_item(0)?;
                let attr = field.get_item(1)?;
                let converted = match raw_dict.get_item(&key)? {
                    Some(child) => typed(py, child, &field.get_item(2)?)?,
                    None => py.None().into_bound(py),
                };
                if !attr.is(&key) {
                    attrs.del_item(&key).ok();
                }
                attrs.set_item(attr, converted)?;
            }
            attrs.set_item(pyo3::intern!(py, "raw"), raw)?;
            new_record(py, plan.get_item(1)?.cast::<PyType>()?, &attrs)
        }
        PLAN_TUPLE => {
            let item_plan = plan.get_item(1)?;
            let raw_items = raw.cast::<PyList>()?;
            if item_plan.is_none() {
                return Ok(PyTuple::new(py, raw_items.iter())?.into_any());
            }
            let items = raw_items
                .iter()
                .map(|item| typed(py, item, &item_plan))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any())
        }
        PLAN_ACTOR => actor(py, &raw),
        other => Err(PyValueError::new_err(format!(
            "unknown record plan {other}"
        ))),
    }
}
