//! `roundtable._roundtable`: the extension module behind `import roundtable`.
//!
//! A thin layer over the core (which knows nothing of Python):
//!
//! - [`PyEngine`] wraps an [`Engine`] behind an `Arc`, so a call clones the
//!   handle, **releases the GIL** (`Python::detach`) and runs the tool while
//!   other Python threads go on; `close()` drops the module's handle and the
//!   engine closes once the last in-flight call returns.
//! - Arguments and results cross as JSON values (`convert`).
//! - Every [`ToolError`] becomes an instance of the Python hierarchy in
//!   `roundtable/_errors.py` (built there by `_from_core`), so the classes,
//!   their multiple inheritance (`OSError` for `io`) and `.report` live in
//!   Python where they are easy to read and type.
//! - `parse_patch`, `apply_patch` and `make_patch` run the diff engine
//!   alone, also without the GIL.

mod convert;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use roundtable::diff::{self, ParseOptions};
use roundtable::operations::details::{InvalidPatchDetails, IoDetails};
use roundtable::{
    Actor, CallOptions, CancelToken, Engine, EngineOptions, ErrorCode, Id, ToolError,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The first `std::io::Error` in the cause chain: its errno and kind.
fn os_cause(e: &ToolError) -> (Option<i32>, Option<String>) {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return (io.raw_os_error(), Some(format!("{:?}", io.kind())));
        }
        cause = c.source();
    }
    (None, None)
}

/// A core error as the Python exception of its code's class.
fn raise(py: Python<'_>, e: &ToolError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let (errno, kind) = os_cause(e);
        let details = convert::to_py(py, e.details())?;
        let factory = py.import("roundtable._errors")?.getattr("_from_core")?;
        let exc = factory.call1((e.code().as_str(), e.message(), details, errno, kind))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|failed| failed)
}

/// Patch or JSON bytes from `bytes`, `bytearray` or `str` (encoded as
/// UTF-8): borrowed from a `bytes` object, copied otherwise.
fn bytes_of(data: &Bound<'_, PyAny>, field: &str) -> Result<PyBackedBytes, ToolError> {
    if let Ok(s) = data.cast::<PyString>() {
        let encoded = s
            .encode_utf8()
            .map_err(|_| ToolError::invalid_argument(field, "the string is not valid UTF-8"))?;
        return Ok(PyBackedBytes::from(encoded));
    }
    data.extract::<PyBackedBytes>()
        .map_err(|_| ToolError::invalid_argument(field, "expected bytes (or str)"))
}

fn actor_id(id: String) -> Result<Id, ToolError> {
    Id::new(id).map_err(|e| ToolError::invalid_argument("id", e))
}

/// Who is calling: an agent, a human or the orchestrator, with an id.
#[pyclass(
    frozen,
    eq,
    hash,
    skip_from_py_object,
    module = "roundtable._roundtable",
    name = "Actor"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyActor {
    inner: Actor,
}

#[pymethods]
impl PyActor {
    /// An AI agent (its id is its registered agent id).
    #[staticmethod]
    fn agent(py: Python<'_>, id: String) -> PyResult<PyActor> {
        let id = actor_id(id).map_err(|e| raise(py, &e))?;
        Ok(PyActor {
            inner: Actor::agent(id),
        })
    }

    /// A person.
    #[staticmethod]
    fn human(py: Python<'_>, id: String) -> PyResult<PyActor> {
        let id = actor_id(id).map_err(|e| raise(py, &e))?;
        Ok(PyActor {
            inner: Actor::human(id),
        })
    }

    /// The host program driving the agents.
    #[staticmethod]
    fn orchestrator(py: Python<'_>, id: String) -> PyResult<PyActor> {
        let id = actor_id(id).map_err(|e| raise(py, &e))?;
        Ok(PyActor {
            inner: Actor::orchestrator(id),
        })
    }

    /// `KIND:ID`, as the CLI's `--as` takes it.
    #[staticmethod]
    fn parse(py: Python<'_>, spelling: String) -> PyResult<PyActor> {
        Actor::parse(&spelling)
            .map(|inner| PyActor { inner })
            .map_err(|e| raise(py, &ToolError::invalid_argument("actor", e)))
    }

    /// `"agent"`, `"human"` or `"orchestrator"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }

    /// The actor's id.
    #[getter]
    fn id(&self) -> String {
        self.inner.id.as_str().to_owned()
    }

    fn __repr__(&self) -> String {
        format!(
            "Actor.{}({:?})",
            self.inner.kind.as_str(),
            self.inner.id.as_str()
        )
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    /// Pickling and copying: `Actor.parse("KIND:ID")`, so an actor (and a
    /// record holding one) crosses a `multiprocessing` queue.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let parse = slf.get_type().getattr("parse")?;
        Ok((parse, (slf.get().inner.to_string(),)))
    }
}

/// A cancellation handle: give it to calls (`cancel=`), then `cancel()`
/// from any thread ends their waits.
#[pyclass(frozen, module = "roundtable._roundtable", name = "Cancel")]
#[derive(Default)]
pub struct PyCancel {
    token: CancelToken,
}

#[pymethods]
impl PyCancel {
    #[new]
    fn new() -> PyCancel {
        PyCancel::default()
    }

    /// Cancel every call given this handle: each one still waiting fails
    /// with `cancelled` and changes nothing.
    fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// A new handle, cancelled when this one is (at once if it already
    /// is) and by its own `cancel()`, which leaves this one alone: one call
    /// cancellable by itself and by its session's handle.
    fn child(&self) -> PyCancel {
        PyCancel {
            token: self.token.child(),
        }
    }
}

/// The options of a call given a timeout or a cancellation handle.
fn call_options(timeout_ms: Option<u64>, cancel: Option<&PyCancel>) -> Option<CallOptions> {
    if timeout_ms.is_none() && cancel.is_none() {
        return None;
    }
    Some(CallOptions {
        deadline: timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms)),
        cancel: cancel.map(|c| c.token.clone()),
    })
}

/// An open workspace: the repository root and its store.
#[pyclass(frozen, module = "roundtable._roundtable", name = "Engine")]
pub struct PyEngine {
    engine: RwLock<Option<Arc<Engine>>>,
    root: PathBuf,
}

impl PyEngine {
    /// One tool call with the GIL released: its JSON result.
    fn run(
        &self,
        py: Python<'_>,
        actor: &PyActor,
        tool: &str,
        args: &Bound<'_, PyAny>,
        timeout_ms: Option<u64>,
        cancel: Option<&PyCancel>,
    ) -> PyResult<Value> {
        let engine = self.handle()?;
        let args = convert::to_json(args, "").map_err(|e| raise(py, &e))?;
        let actor = actor.inner.clone();
        let options = call_options(timeout_ms, cancel);
        py.detach(move || match options {
            None => engine.call(tool, args, &actor),
            Some(o) => engine.call_with(tool, args, &actor, &o),
        })
        .map_err(|e| raise(py, &e))
    }

    fn handle(&self) -> PyResult<Arc<Engine>> {
        self.engine
            .read()
            .map_err(|_| PyValueError::new_err("the engine's handle lock is poisoned"))?
            .clone()
            .ok_or_else(|| PyValueError::new_err("the engine is closed"))
    }
}

#[pymethods]
impl PyEngine {
    /// Open the workspace at `root` (creating its store when absent).
    #[staticmethod]
    #[pyo3(signature = (root, options = None))]
    fn open(
        py: Python<'_>,
        root: PathBuf,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyEngine> {
        let options = match options {
            Some(o) => convert::to_json(o.as_any(), "options").map_err(|e| raise(py, &e))?,
            None => json!({}),
        };
        let options = EngineOptions::from_json(&options).map_err(|e| raise(py, &e))?;
        let at = root.clone();
        let engine = py
            .detach(move || Engine::open(&at, options))
            .map_err(|e| raise(py, &e))?;
        Ok(PyEngine {
            engine: RwLock::new(Some(Arc::new(engine))),
            root,
        })
    }

    /// Call `tool` with `args` (a dict) as `actor`; the tool's result. With
    /// `timeout_ms` or `cancel`, every wait the call makes gives up at the
    /// deadline or once `cancel` is cancelled (`deadline_exceeded`,
    /// `cancelled`; nothing changed).
    #[pyo3(signature = (actor, tool, args, *, timeout_ms = None, cancel = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        actor: &PyActor,
        tool: String,
        args: &Bound<'py, PyAny>,
        timeout_ms: Option<u64>,
        cancel: Option<&PyCancel>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = self.run(py, actor, &tool, args, timeout_ms, cancel)?;
        convert::to_py(py, &out)
    }

    /// `call` returning the result as the generated record `plan` describes
    /// (see `convert::to_record`): what a session's typed methods use.
    #[pyo3(signature = (actor, tool, args, plan, *, timeout_ms = None, cancel = None))]
    #[allow(clippy::too_many_arguments)]
    fn call_record<'py>(
        &self,
        py: Python<'py>,
        actor: &PyActor,
        tool: String,
        args: &Bound<'py, PyAny>,
        plan: &Bound<'py, PyAny>,
        timeout_ms: Option<u64>,
        cancel: Option<&PyCancel>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = self.run(py, actor, &tool, args, timeout_ms, cancel)?;
        convert::to_record(py, &out, plan)
    }

    /// `call` with JSON text in and out (parsed strictly: a key given twice
    /// is refused).
    #[pyo3(signature = (actor, tool, args, *, timeout_ms = None, cancel = None))]
    fn call_json(
        &self,
        py: Python<'_>,
        actor: &PyActor,
        tool: String,
        args: &Bound<'_, PyAny>,
        timeout_ms: Option<u64>,
        cancel: Option<&PyCancel>,
    ) -> PyResult<String> {
        let engine = self.handle()?;
        let args = bytes_of(args, "args").map_err(|e| raise(py, &e))?;
        let actor = actor.inner.clone();
        let options = call_options(timeout_ms, cancel);
        let out = py
            .detach(move || match options {
                None => engine.call_json(&tool, &args, &actor),
                Some(o) => engine.call_json_with(&tool, &args, &actor, &o),
            })
            .map_err(|e| raise(py, &e))?;
        Ok(out.to_string())
    }

    /// Benchmark helper: call `tool` `n` times from Rust (arguments decoded
    /// once, cloned per call, GIL released) and return the seconds taken:
    /// the cost of the Rust call itself, to set `call`'s overhead against.
    fn _time_calls(
        &self,
        py: Python<'_>,
        actor: &PyActor,
        tool: String,
        args: &Bound<'_, PyAny>,
        n: u32,
    ) -> PyResult<f64> {
        let engine = self.handle()?;
        let args = convert::to_json(args, "").map_err(|e| raise(py, &e))?;
        let actor = actor.inner.clone();
        py.detach(move || {
            let start = std::time::Instant::now();
            for _ in 0..n {
                engine.call(&tool, args.clone(), &actor)?;
            }
            Ok(start.elapsed().as_secs_f64())
        })
        .map_err(|e: ToolError| raise(py, &e))
    }

    /// Close the engine. In-flight calls on other threads finish first;
    /// later calls raise `ValueError`. Closing never applies or commits
    /// anything; closing twice is harmless.
    fn close(&self) -> PyResult<()> {
        let taken = self
            .engine
            .write()
            .map_err(|_| PyValueError::new_err("the engine's handle lock is poisoned"))?
            .take();
        drop(taken);
        Ok(())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.engine.read().map(|e| e.is_none()).unwrap_or(true)
    }

    /// The repository root the engine was opened on.
    #[getter]
    fn root(&self) -> std::ffi::OsString {
        self.root.clone().into_os_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<roundtable._roundtable.Engine root={:?}{}>",
            self.root.display().to_string(),
            if self.closed() { " closed" } else { "" }
        )
    }
}

/// What a patch touches: `{"files": [...]}`, one entry per file section.
#[pyfunction]
#[pyo3(signature = (data, *, strip = 1))]
fn parse_patch<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    strip: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = bytes_of(data, "data").map_err(|e| raise(py, &e))?;
    let summary = py
        .detach(|| -> Result<Value, ToolError> {
            let patch = diff::parse(&bytes, &ParseOptions::strip(strip))?;
            serde_json::to_value(patch.summary())
                .map_err(|e| ToolError::new(e.to_string(), InvalidPatchDetails::default()))
        })
        .map_err(|e| raise(py, &e))?;
    convert::to_py(py, &summary)
}

/// Apply a patch to the directory `root`, all or nothing; with `check`,
/// only verify it applies. The paths written or removed.
#[pyfunction]
#[pyo3(signature = (root, data, *, check = false, strip = 1))]
fn apply_patch<'py>(
    py: Python<'py>,
    root: PathBuf,
    data: &Bound<'py, PyAny>,
    check: bool,
    strip: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = bytes_of(data, "data").map_err(|e| raise(py, &e))?;
    let changes = py
        .detach(|| -> Result<Value, ToolError> {
            let patch = diff::parse(&bytes, &ParseOptions::strip(strip))?;
            let changes = roundtable::workspace::apply_patch(
                &root,
                &patch,
                roundtable::workspace::WriteMode::check_if(check),
            )?;
            serde_json::to_value(changes)
                .map_err(|e| ToolError::new(e.to_string(), IoDetails::default()))
        })
        .map_err(|e| raise(py, &e))?;
    convert::to_py(py, &changes)
}

/// The patch turning the file `path`'s `old` content into `new` (each
/// `bytes` or `str`, `None` for absent: a creation or a deletion), as
/// `git diff` writes it; empty when nothing changes.
#[pyfunction]
fn make_patch<'py>(
    py: Python<'py>,
    path: &str,
    old: Option<&Bound<'py, PyAny>>,
    new: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let side = |data: Option<&Bound<'py, PyAny>>, field: &str| {
        data.map(|d| bytes_of(d, field))
            .transpose()
            .map_err(|e| raise(py, &e))
    };
    let (old, new) = (side(old, "old")?, side(new, "new")?);
    let text = py
        .detach(|| roundtable::changeset::render::file_patch(path, old.as_deref(), new.as_deref()))
        .map_err(|e| raise(py, &ToolError::from(e)))?;
    Ok(PyBytes::new(py, &text))
}

/// Every tool: name, description, whether it mutates, argument and result
/// JSON Schemas.
#[pyfunction]
fn tools(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    convert::to_py(py, &Engine::tools_json())
}

/// Raise the exception the extension raises for a core error with this
/// code, caused by the OS error `errno` when given (the test suite checks
/// every code the core knows maps to its class). The details must be of
/// the code's details type (`invalid_argument` naming `details` if not).
#[pyfunction]
#[pyo3(signature = (code, message, details = None, errno = None))]
fn _raise_error(
    py: Python<'_>,
    code: String,
    message: String,
    details: Option<&Bound<'_, PyDict>>,
    errno: Option<i32>,
) -> PyResult<()> {
    let details = match details {
        Some(d) => convert::to_json(d.as_any(), "details").map_err(|e| raise(py, &e))?,
        None => json!({}),
    };
    let code = code
        .parse::<ErrorCode>()
        .map_err(|e| raise(py, &ToolError::invalid_argument("code", e.to_string())))?;
    let mut error = ToolError::from_json(code, message, details)
        .map_err(|e| raise(py, &ToolError::invalid_argument("details", e)))?;
    if let Some(errno) = errno {
        error = error.with_source(std::io::Error::from_raw_os_error(errno));
    }
    Err(raise(py, &error))
}

/// The extension module.
#[pymodule]
fn _roundtable(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The core's error-code table, which the Python classes are tested
    // against (tests/python/test_errors.py).
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    m.add("ERROR_CODES", PyTuple::new(py, codes)?)?;
    // The JSON surface's version, which the generated Python types were
    // made from (roundtable/__init__.py compares them at import).
    m.add("JSON_VERSION", roundtable::registry::JSON_VERSION)?;
    m.add_class::<PyActor>()?;
    m.add_class::<PyEngine>()?;
    m.add_class::<PyCancel>()?;
    m.add_function(wrap_pyfunction!(parse_patch, m)?)?;
    m.add_function(wrap_pyfunction!(apply_patch, m)?)?;
    m.add_function(wrap_pyfunction!(make_patch, m)?)?;
    m.add_function(wrap_pyfunction!(tools, m)?)?;
    m.add_function(wrap_pyfunction!(_raise_error, m)?)?;
    Ok(())
}
