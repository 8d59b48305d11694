//! JSON values ↔ Python objects, both ways, by hand.
//!
//! Python → JSON is strict: only what JSON can carry crosses (`None`,
//! `bool`, `int` within 64 bits, finite `float`, `str`, `dict` with `str`
//! keys, `list`/`tuple`); anything else is `invalid_argument` naming the
//! field path the way the core names fields (`affected_resources[2]`).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
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
