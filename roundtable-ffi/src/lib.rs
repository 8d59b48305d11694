//! The C ABI over roundtable: `libroundtable.so`, `libroundtable.a`
//! and `include/roundtable.h` (generated from this crate by cbindgen).
//!
//! Conventions (see the header's preamble for the host's view):
//!
//! - every fallible export returns an [`rt_status`], `RT_OK` = 0;
//! - outputs are written only on success; on failure the optional
//!   `rt_error **err_out` receives a per-call error object;
//! - every body runs inside [`catching`] or [`guarded`]: a panic becomes `RT_PANIC`, never
//!   an unwind into C and never an abort;
//! - NULL or non-UTF-8 input is `RT_INVALID_ARGUMENT` naming the argument;
//! - every `_free` (and `rt_engine_close`) accepts NULL.
//!
//! This is the only crate of the workspace with `unsafe` code; every unsafe
//! block states why it is sound.

#![deny(unsafe_op_in_unsafe_fn)]
// The C names (`rt_engine`, `rt_status`, `RT_OK`) are the ABI.
#![allow(non_camel_case_types)]

mod status;

pub use status::rt_status;

use rt::diff::ParseOptions;
use rt::{Actor, Engine, EngineOptions, ToolError};
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr;

/// The version of this ABI (the functions, their signatures and the status
/// values). It grows when the ABI changes incompatibly; compare it with
/// `rt_abi_version()` to detect a header/library mismatch.
pub const RT_ABI_VERSION: u32 = 1;

/// The version of the JSON surface (the tools, their arguments, results
/// and error codes, as `rt_tools_json` describes them), independent of
/// the ABI's: compare it with `rt_json_version()` to detect a binding
/// generated from other schemas.
pub const RT_JSON_VERSION: u32 = 1;

/// A governed workspace opened by `rt_engine_open`: a repository root and its
/// store. Opaque to the host.
///
/// Reference-counted: the host's handle holds one reference and each call
/// in flight another, so `rt_engine_close` while other threads are inside
/// calls lets them finish; the engine is freed when the last one returns.
pub struct rt_engine {
    engine: Engine,
    refs: std::sync::atomic::AtomicUsize,
}

/// One reference to an engine, held for a call's duration.
struct Held(ptr::NonNull<rt_engine>);

impl Held {
    /// A reference to the engine at `engine`, or `invalid_argument` for
    /// NULL.
    ///
    /// # Safety
    /// `engine` is NULL or an engine from `rt_engine_open` on which the
    /// host has not yet called `rt_engine_close` (calls already inside it
    /// keep it alive; a call may not start after the close).
    unsafe fn enter(engine: *mut rt_engine) -> Result<Held, rt_error> {
        let Some(ptr) = ptr::NonNull::new(engine) else {
            return Err(rt_error::invalid_argument("engine", "must not be NULL"));
        };
        // SAFETY: the caller guarantees the engine is alive: the host's own
        // reference has not been released.
        unsafe { ptr.as_ref() }
            .refs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Held(ptr))
    }

    fn engine(&self) -> &Engine {
        // SAFETY: this reference keeps the engine alive until dropped.
        &unsafe { self.0.as_ref() }.engine
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: this reference kept it alive until now.
        unsafe { release(self.0) };
    }
}

/// Drop one reference; the last frees the engine.
///
/// # Safety
/// `engine` is alive and the caller owns one of its references, which it
/// gives up.
unsafe fn release(engine: ptr::NonNull<rt_engine>) {
    use std::sync::atomic::{fence, Ordering};
    // SAFETY: alive: the caller still owns a reference.
    if unsafe { engine.as_ref() }
        .refs
        .fetch_sub(1, Ordering::Release)
        != 1
    {
        return;
    }
    // Every other reference's release happened before this free.
    fence(Ordering::Acquire);
    // SAFETY: the last reference: nobody else can reach it; it came from
    // `Box::into_raw` in `rt_engine_open`.
    let handle = unsafe { Box::from_raw(engine.as_ptr()) };
    // A panic while closing is contained: there is no status to report it.
    guarded((), move || drop(handle));
}

/// A failed call's error: a stable code, a message for people and details
/// (a JSON object) for programs. Opaque; read it with the `rt_error_*`
/// accessors and free it with `rt_error_free`.
pub struct rt_error {
    status: rt_status,
    code: CString,
    message: CString,
    details: CString,
}

impl rt_error {
    fn from_tool(e: &ToolError) -> rt_error {
        rt_error {
            status: rt_status::from_code(e.code()),
            code: cstring(e.code().as_str().to_owned()),
            message: cstring(e.message().to_owned()),
            details: cstring(e.details().to_string()),
        }
    }

    fn invalid_argument(field: &str, reason: &str) -> rt_error {
        rt_error::from_tool(&ToolError::invalid_argument(field, reason))
    }

    fn panic(payload: &(dyn std::any::Any + Send)) -> rt_error {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".to_owned());
        let details = serde_json::json!({ "panic": what });
        rt_error {
            status: rt_status::RT_PANIC,
            code: cstring("panic".to_owned()),
            message: cstring(format!("internal error (a bug in roundtable): {what}")),
            details: cstring(details.to_string()),
        }
    }
}

impl From<ToolError> for rt_error {
    fn from(e: ToolError) -> rt_error {
        rt_error::from_tool(&e)
    }
}

/// `s` as a C string; a NUL byte (which JSON text never holds, but a message
/// might) is dropped rather than truncating the string.
fn cstring(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|&b| b != 0);
        CString::new(bytes).expect("every NUL byte was removed")
    })
}

/// Run `body` behind the panic boundary: its result, or a panic turned into
/// an `RT_PANIC` error saying what panicked. Never unwinds.
fn catching(body: impl FnOnce() -> Result<(), rt_error>) -> Result<(), rt_error> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(rt_error::panic(payload.as_ref())),
    }
}

/// Run `body` behind the panic boundary for an export that returns no
/// status: its value, or `fallback` when it panicked.
fn guarded<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The status of `result`; an error is written to `err_out` when that is
/// not NULL (the host frees it with `rt_error_free`).
///
/// # Safety
/// `err_out` is NULL or valid for writing one pointer.
unsafe fn finish(err_out: *mut *mut rt_error, result: Result<(), rt_error>) -> rt_status {
    let Err(error) = result else {
        return rt_status::RT_OK;
    };
    let status = error.status;
    if !err_out.is_null() {
        // SAFETY: the caller guarantees a non-NULL `err_out` is valid for
        // writing one pointer.
        unsafe { err_out.write(Box::into_raw(Box::new(error))) };
    }
    status
}

/// The NUL-terminated UTF-8 string at `p`, or `invalid_argument` naming
/// `field`.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
unsafe fn str_arg<'a>(p: *const c_char, field: &str) -> Result<&'a str, rt_error> {
    if p.is_null() {
        return Err(rt_error::invalid_argument(field, "must not be NULL"));
    }
    // SAFETY: non-NULL, and the caller guarantees it is NUL-terminated and
    // lives for 'a.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| {
        let reason = format!("is not valid UTF-8 (at byte {})", e.valid_up_to());
        rt_error::invalid_argument(field, &reason)
    })
}

/// Check that an output pointer is not NULL.
fn out_arg<T>(p: *mut *mut T, field: &str) -> Result<(), rt_error> {
    if p.is_null() {
        Err(rt_error::invalid_argument(field, "must not be NULL"))
    } else {
        Ok(())
    }
}

/// A JSON value as a string the host frees with `rt_string_free`.
fn json_out_string(value: &serde_json::Value) -> *mut c_char {
    cstring(value.to_string()).into_raw()
}

fn parse_actor(json: &str) -> Result<Actor, rt_error> {
    let value = rt::json::parse_strict(json.as_bytes())
        .map_err(|e| rt_error::invalid_argument("actor", &format!("not valid JSON: {e}")))?;
    serde_json::from_value(value).map_err(|e| {
        rt_error::invalid_argument(
            "actor",
            &format!("{e} (expected {{\"id\": \"...\", \"kind\": \"agent\"|\"human\"|\"orchestrator\"}})"),
        )
    })
}

/// Open the workspace at `root` (an existing directory), creating its store
/// (`<root>/.roundtable/`) when absent and finishing any transaction a
/// crashed applier left half done.
///
/// - `root`: a NUL-terminated UTF-8 path; required.
/// - `options_json`: NULL for the defaults, or a JSON object
///   `{"durability": "full"|"normal"|"off", "busy_timeout_ms": N,
///   "max_patch_bytes": N, "max_files": N, "max_inflated_bytes": N,
///   "store": "postgres://…", "statement_timeout_ms": N}` (every key
///   optional, unknown keys refused; `max_inflated_bytes` bounds what a
///   patch's `GIT binary patch` hunks inflate to, default 128 MiB; `store`
///   names a PostgreSQL database several hosts share instead of the
///   embedded SQLite store).
/// - `engine_out`: required; on success receives the engine, which the
///   caller owns and closes with `rt_engine_close`. Untouched on failure.
/// - `err_out`: NULL, or receives an error the caller frees with
///   `rt_error_free` — only on failure.
///
/// Thread safety: may be called from any thread; several engines, in this
/// or other processes, may open one workspace at once.
///
/// Processes: the engine belongs to this process. A `fork()` child's calls
/// through it return `RT_INHERITED_ENGINE` at once (nothing done); the
/// child opens its own. On Linux another SQLite library in the process may
/// open and close the store: the engine's locks do not depend on it.
///
/// # Safety
/// Each pointer is NULL or valid: `root` and `options_json` NUL-terminated
/// strings, `engine_out` and `err_out` writable.
#[no_mangle]
pub unsafe extern "C" fn rt_engine_open(
    root: *const c_char,
    options_json: *const c_char,
    engine_out: *mut *mut rt_engine,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        // SAFETY: the caller guarantees `root` is NULL or NUL-terminated.
        let root = unsafe { str_arg(root, "root") }?;
        let options = if options_json.is_null() {
            EngineOptions::default()
        } else {
            // SAFETY: non-NULL, and the caller guarantees it is NUL-terminated.
            let text = unsafe { str_arg(options_json, "options") }?;
            let value = rt::json::parse_strict(text.as_bytes()).map_err(|e| {
                rt_error::invalid_argument("options", &format!("not valid JSON: {e}"))
            })?;
            EngineOptions::from_json(&value)?
        };
        out_arg(engine_out, "engine_out")?;
        let engine = Engine::open(Path::new(root), options)?;
        let handle = Box::into_raw(Box::new(rt_engine {
            engine,
            refs: std::sync::atomic::AtomicUsize::new(1),
        }));
        // SAFETY: checked non-NULL above; the caller guarantees it is
        // writable. The host owns the box until `rt_engine_close`.
        unsafe { engine_out.write(handle) };
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// Call the tool `tool` (e.g. `"proposal.create"`) with the arguments
/// `args_json` (a JSON object, parsed strictly: unknown keys and repeated
/// keys are refused) as the actor `actor_json` (`{"id": "...", "kind":
/// "agent"|"human"|"orchestrator"}`, supplied by the host, never by the
/// agent).
///
/// - `engine`, `tool`, `args_json`, `actor_json`, `result_json_out`:
///   required (NULL is `RT_INVALID_ARGUMENT`); strings are NUL-terminated
///   UTF-8.
/// - `result_json_out`: on success receives the tool's result as JSON text,
///   which the caller owns and frees with `rt_string_free`. Untouched on
///   failure.
/// - `err_out`: NULL, or receives an error the caller frees with
///   `rt_error_free` — only on failure. A refused call changes nothing.
///
/// Thread safety: one engine may be used from several threads at once,
/// and closed while calls are in flight (they finish first); a call must
/// not start after `rt_engine_close`.
///
/// A string cannot hold a NUL byte here: `rt_engine_call_n` takes each as
/// pointer and length.
///
/// # Safety
/// `engine` is NULL or an open engine from `rt_engine_open`; each other
/// pointer is NULL or valid (strings NUL-terminated, outputs writable).
#[no_mangle]
pub unsafe extern "C" fn rt_engine_call(
    engine: *mut rt_engine,
    tool: *const c_char,
    args_json: *const c_char,
    actor_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        // SAFETY: the caller guarantees a non-NULL `engine` is open; the
        // reference keeps it alive through a concurrent close.
        let held = unsafe { Held::enter(engine) }?;
        // SAFETY: the caller guarantees each is NULL or NUL-terminated and
        // lives through this call.
        let (tool, args, actor) = unsafe {
            (
                str_arg(tool, "tool")?,
                str_arg(args_json, "args")?,
                str_arg(actor_json, "actor")?,
            )
        };
        out_arg(result_json_out, "result_json_out")?;
        let text = call(
            &held,
            tool,
            args.as_bytes(),
            actor,
            &rt::CallOptions::default(),
        )?;
        // SAFETY: checked non-NULL above; the caller guarantees it is
        // writable. The host owns the string until `rt_string_free`.
        unsafe { result_json_out.write(text.into_raw()) };
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// The call both entry points make: the result as JSON text.
fn call(
    held: &Held,
    tool: &str,
    args: &[u8],
    actor: &str,
    options: &rt::CallOptions,
) -> Result<CString, rt_error> {
    let actor = parse_actor(actor)?;
    let result = held.engine().call_json_with(tool, args, &actor, options)?;
    Ok(cstring(result.to_string()))
}

/// A cancellation handle for calls (`rt_call_options.cancel`): made by
/// `rt_cancel_new`, cancelled from any thread by `rt_cancel_cancel`, freed
/// by `rt_cancel_free` (a call using it keeps what it needs, so freeing it
/// during the call is safe). Opaque.
pub struct rt_cancel {
    token: rt::CancelToken,
}

/// What may interrupt one call (`rt_engine_call_n`): every wait the call
/// makes — the workspace apply lock, a store busy with another writer, a
/// claim wait, `events.wait` — gives up when the deadline passes or the
/// handle is cancelled, and the call then fails with `RT_DEADLINE_EXCEEDED`
/// or `RT_CANCELLED` having changed nothing. A mutating call that passed
/// its commit point finishes and reports success even if it was cancelled
/// meanwhile: retry it with its idempotency key to learn the outcome.
#[repr(C)]
pub struct rt_call_options {
    /// Milliseconds from the call's start before it gives up waiting; 0
    /// for no deadline.
    pub timeout_ms: u64,
    /// NULL, or a handle from `rt_cancel_new`.
    pub cancel: *const rt_cancel,
}

/// A new cancellation handle, not cancelled; free it with
/// `rt_cancel_free`. NULL only if the allocation panicked.
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn rt_cancel_new() -> *mut rt_cancel {
    guarded(ptr::null_mut(), || {
        Box::into_raw(Box::new(rt_cancel {
            token: rt::CancelToken::new(),
        }))
    })
}

/// Cancel every call using `cancel`: each stops at its next wait. NULL is
/// accepted.
///
/// Thread safety: any thread, while calls use it.
///
/// # Safety
/// `cancel` is NULL or a handle from `rt_cancel_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rt_cancel_cancel(cancel: *const rt_cancel) {
    // SAFETY: the caller guarantees a live handle or NULL.
    if let Some(c) = unsafe { cancel.as_ref() } {
        c.token.cancel();
    }
}

/// Free a cancellation handle. NULL is accepted.
///
/// # Safety
/// `cancel` is NULL or a handle from `rt_cancel_new`, freed once.
#[no_mangle]
pub unsafe extern "C" fn rt_cancel_free(cancel: *mut rt_cancel) {
    if cancel.is_null() {
        return;
    }
    // SAFETY: from `Box::into_raw` in `rt_cancel_new`, freed once.
    let handle = unsafe { Box::from_raw(cancel) };
    guarded((), move || drop(handle));
}

/// The call options `options` points at (NULL: none).
///
/// # Safety
/// `options` is NULL or valid, its `cancel` NULL or a live handle.
unsafe fn call_options(options: *const rt_call_options) -> rt::CallOptions {
    // SAFETY: the caller guarantees NULL or valid.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return rt::CallOptions::default();
    };
    rt::CallOptions {
        deadline: (o.timeout_ms > 0)
            .then(|| std::time::Instant::now() + std::time::Duration::from_millis(o.timeout_ms)),
        // SAFETY: the caller guarantees NULL or a live handle; the token is
        // cloned, so the handle may be freed during the call.
        cancel: unsafe { o.cancel.as_ref() }.map(|c| c.token.clone()),
    }
}

/// `rt_engine_call` with every string as a pointer and a length in bytes
/// (not NUL-terminated; a NUL byte inside is refused as invalid JSON or an
/// unknown tool, never a silent truncation), the result's length, and
/// options that interrupt its waits.
///
/// - `tool`, `args_json`, `actor_json`: `len` bytes of UTF-8 each; a
///   pointer may be NULL only with a length of 0 (then refused as empty).
/// - `options`: NULL, or a deadline and a cancellation handle
///   (`rt_call_options`).
/// - `result_json_out`: required; on success receives the result as
///   NUL-terminated JSON text the caller frees with `rt_string_free`.
/// - `result_len_out`: NULL, or receives the result's length in bytes
///   (without the NUL) on success.
/// - `err_out`: as for `rt_engine_call`.
///
/// Thread safety: as `rt_engine_call`.
///
/// # Safety
/// `engine` is NULL or an open engine; each input pointer is NULL or valid
/// for reading its length; `options` is NULL or valid; the outputs are
/// NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rt_engine_call_n(
    engine: *mut rt_engine,
    tool: *const u8,
    tool_len: usize,
    args_json: *const u8,
    args_len: usize,
    actor_json: *const u8,
    actor_len: usize,
    options: *const rt_call_options,
    result_json_out: *mut *mut c_char,
    result_len_out: *mut usize,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        // SAFETY: as in `rt_engine_call`.
        let held = unsafe { Held::enter(engine) }?;
        // SAFETY: the caller guarantees `options` is NULL or valid.
        let options = unsafe { call_options(options) };
        // SAFETY: the caller guarantees each is NULL or valid for its length.
        let (tool, args, actor) = unsafe {
            (
                bytes_arg(tool, tool_len, "tool")?,
                bytes_arg(args_json, args_len, "args")?,
                bytes_arg(actor_json, actor_len, "actor")?,
            )
        };
        let utf8 = |bytes: &'_ [u8], field: &str| -> Result<String, rt_error> {
            std::str::from_utf8(bytes).map(str::to_owned).map_err(|e| {
                let reason = format!("is not valid UTF-8 (at byte {})", e.valid_up_to());
                rt_error::invalid_argument(field, &reason)
            })
        };
        let (tool, actor) = (utf8(tool, "tool")?, utf8(actor, "actor")?);
        out_arg(result_json_out, "result_json_out")?;
        let text = call(&held, &tool, args, &actor, &options)?;
        let len = text.as_bytes().len();
        // SAFETY: checked non-NULL above; the caller guarantees the outputs
        // are writable. The host owns the string until `rt_string_free`.
        unsafe {
            result_json_out.write(text.into_raw());
            if !result_len_out.is_null() {
                result_len_out.write(len);
            }
        }
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// The `len` bytes at `p`, or `invalid_argument` naming `field` (NULL with
/// a length).
///
/// # Safety
/// `p` is NULL or valid for reading `len` bytes that outlive `'a`.
unsafe fn bytes_arg<'a>(p: *const u8, len: usize, field: &str) -> Result<&'a [u8], rt_error> {
    if p.is_null() {
        if len == 0 {
            return Ok(&[]);
        }
        return Err(rt_error::invalid_argument(
            field,
            "is NULL with a nonzero length",
        ));
    }
    // SAFETY: non-NULL, and the caller guarantees `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Every tool as JSON (`[{"name", "description", "mutates", "callers",
/// "idempotent", "destructive", "waits", "input_schema",
/// "output_schema"}]`): what `roundtable tools` prints, for a binding to
/// check or generate its types from.
///
/// - `json_out`: required; on success receives JSON text the caller frees
///   with `rt_string_free`.
/// - `err_out`: NULL, or receives an error — only on failure.
///
/// Thread safety: any thread; touches no engine.
///
/// # Safety
/// The outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rt_tools_json(
    json_out: *mut *mut c_char,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        out_arg(json_out, "json_out")?;
        let text = json_out_string(&Engine::tools_json());
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { json_out.write(text) };
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// Close an engine. NULL is accepted (nothing happens).
///
/// Thread safety: call it once. Calls other threads are making on this
/// engine finish normally, and the engine is freed when the last returns;
/// no call may start after this one (the handle is invalid then).
///
/// # Safety
/// `engine` is NULL or an engine from `rt_engine_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn rt_engine_close(engine: *mut rt_engine) {
    let Some(engine) = ptr::NonNull::new(engine) else {
        return;
    };
    // SAFETY: the caller gives up the host's reference, once.
    unsafe { release(engine) };
}

/// Parse the patch text `patch` (`len` bytes, need not be NUL-terminated;
/// `-p1` paths) and describe what it touches: `{"files": [{"old_path",
/// "new_path", "status", "old_mode", "new_mode", "binary", "hunks",
/// "added_lines", "removed_lines"}]}`. A malformed patch is
/// `RT_INVALID_PATCH` with the line and what was expected in the details.
///
/// - `patch`: may be NULL only when `len` is 0.
/// - `result_json_out`: required; on success receives JSON text the caller
///   frees with `rt_string_free`. Untouched on failure.
/// - `err_out`: NULL, or receives an error the caller frees with
///   `rt_error_free` — only on failure.
///
/// Thread safety: may be called from any thread; touches no engine.
///
/// # Safety
/// `patch` is NULL or valid for reading `len` bytes; the outputs are NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn rt_patch_parse(
    patch: *const u8,
    len: usize,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        let bytes: &[u8] = if patch.is_null() {
            if len != 0 {
                return Err(rt_error::invalid_argument(
                    "patch",
                    &format!("is NULL but len is {len}"),
                ));
            }
            &[]
        } else {
            // SAFETY: non-NULL, and the caller guarantees it is readable for
            // `len` bytes (so `len` fits in isize) through this call.
            unsafe { std::slice::from_raw_parts(patch, len) }
        };
        out_arg(result_json_out, "result_json_out")?;
        let parsed = rt::diff::parse(bytes, &ParseOptions::default()).map_err(ToolError::from)?;
        let summary = serde_json::to_value(parsed.summary()).map_err(|e| {
            ToolError::new(
                format!("summary: {e}"),
                rt::operations::details::IoDetails::default(),
            )
        })?;
        // SAFETY: checked non-NULL above; the caller guarantees it is
        // writable. The host owns the string until `rt_string_free`.
        unsafe { result_json_out.write(json_out_string(&summary)) };
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// Make the git-style patch that turns one regular file's contents
/// `old_data` into `new_data` at `path`, with the engine's own diff (the one
/// `proposal.diff` renders: three lines of context, `GIT binary patch` for
/// binary contents), ready for `proposal.create`'s `patch` (or, when it is
/// not UTF-8, `patch_base64`). A NULL side is an absent file: NULL
/// `old_data` creates the file, NULL `new_data` deletes it; an empty file
/// is a non-NULL pointer with length 0. The file is not executable on
/// either side. Equal sides (or both NULL) make an empty patch (length 0),
/// which no tool accepts. A path that is not a repository path is
/// `RT_INVALID_PATH` or `RT_PATH_ESCAPE`.
///
/// - `path`: `path_len` bytes of UTF-8 (need not be NUL-terminated).
/// - `old_data`, `new_data`: NULL (absent; then the length must be 0) or
///   valid for reading their lengths.
/// - `patch_out`: required; on success receives the patch text (never
///   holding a NUL byte, NUL-terminated) the caller frees with
///   `rt_string_free`. Untouched on failure.
/// - `patch_len_out`: NULL, or receives its length in bytes (without the
///   NUL) on success.
/// - `err_out`: NULL, or receives an error the caller frees with
///   `rt_error_free` — only on failure.
///
/// Thread safety: may be called from any thread; touches no engine.
///
/// # Safety
/// Each input pointer is NULL or valid for reading its length; the outputs
/// are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rt_patch_make(
    path: *const u8,
    path_len: usize,
    old_data: *const u8,
    old_len: usize,
    new_data: *const u8,
    new_len: usize,
    patch_out: *mut *mut c_char,
    patch_len_out: *mut usize,
    err_out: *mut *mut rt_error,
) -> rt_status {
    let result = catching(|| {
        // SAFETY: the caller guarantees each is NULL or valid for its length.
        let (path, old, new) = unsafe {
            (
                bytes_arg(path, path_len, "path")?,
                side_arg(old_data, old_len, "old_data")?,
                side_arg(new_data, new_len, "new_data")?,
            )
        };
        let path = std::str::from_utf8(path).map_err(|e| {
            let reason = format!("is not valid UTF-8 (at byte {})", e.valid_up_to());
            rt_error::invalid_argument("path", &reason)
        })?;
        out_arg(patch_out, "patch_out")?;
        let text = rt::changeset::render::file_patch(path, old, new).map_err(ToolError::from)?;
        let len = text.len();
        let text = CString::new(text)
            .expect("a rendered patch holds no NUL byte (binary contents are base85)");
        // SAFETY: checked non-NULL above; the caller guarantees the outputs
        // are writable. The host owns the string until `rt_string_free`.
        unsafe {
            patch_out.write(text.into_raw());
            if !patch_len_out.is_null() {
                patch_len_out.write(len);
            }
        }
        Ok(())
    });
    // SAFETY: the caller guarantees `err_out` is NULL or writable.
    unsafe { finish(err_out, result) }
}

/// One side of [`rt_patch_make`]: NULL is an absent file (its length must
/// be 0), else the `len` bytes at `p`.
///
/// # Safety
/// `p` is NULL or valid for reading `len` bytes.
unsafe fn side_arg<'a>(
    p: *const u8,
    len: usize,
    field: &str,
) -> Result<Option<&'a [u8]>, rt_error> {
    if p.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: as the caller guarantees.
    unsafe { bytes_arg(p, len, field) }.map(Some)
}

/// Free a string returned by roundtable (a `result_json_out`). NULL is
/// accepted.
///
/// Thread safety: any thread may free a string, once.
///
/// # Safety
/// `s` is NULL or a string from roundtable not yet freed; never a string
/// from `rt_error_*` or `rt_version`.
#[no_mangle]
pub unsafe extern "C" fn rt_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: `s` came from `CString::into_raw` and is freed once.
    let s = unsafe { CString::from_raw(s) };
    guarded((), move || drop(s));
}

/// The error's stable snake_case code (`"not_found"`, `"invalid_argument"`…;
/// `"panic"` for `RT_PANIC`): the same spelling as the Rust `ErrorCode` and
/// the Python exception classes. Lives until `rt_error_free`; NULL when
/// `err` is NULL.
///
/// Thread safety: any thread, while no thread frees `err`.
///
/// # Safety
/// `err` is NULL or an error from roundtable not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rt_error_code(err: *const rt_error) -> *const c_char {
    // SAFETY: the caller guarantees `err` is NULL or a live error.
    let err = unsafe { err.as_ref() };
    guarded(ptr::null(), || err.map_or(ptr::null(), |e| e.code.as_ptr()))
}

/// The error's message, for people (e.g. `"tool: must not be NULL"`).
/// Lives until `rt_error_free`; NULL when `err` is NULL.
///
/// Thread safety: any thread, while no thread frees `err`.
///
/// # Safety
/// `err` is NULL or an error from roundtable not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rt_error_message(err: *const rt_error) -> *const c_char {
    // SAFETY: the caller guarantees `err` is NULL or a live error.
    let err = unsafe { err.as_ref() };
    guarded(ptr::null(), || {
        err.map_or(ptr::null(), |e| e.message.as_ptr())
    })
}

/// The error's details as JSON text, always an object (e.g.
/// `{"field":"tool","reason":"must not be NULL"}`). Lives until
/// `rt_error_free`; NULL when `err` is NULL.
///
/// Thread safety: any thread, while no thread frees `err`.
///
/// # Safety
/// `err` is NULL or an error from roundtable not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rt_error_details_json(err: *const rt_error) -> *const c_char {
    // SAFETY: the caller guarantees `err` is NULL or a live error.
    let err = unsafe { err.as_ref() };
    guarded(ptr::null(), || {
        err.map_or(ptr::null(), |e| e.details.as_ptr())
    })
}

/// Free an error and the strings its accessors returned. NULL is accepted.
///
/// Thread safety: an error is immutable; it may be read from several
/// threads, and is freed once.
///
/// # Safety
/// `err` is NULL or an error from roundtable not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rt_error_free(err: *mut rt_error) {
    if err.is_null() {
        return;
    }
    // SAFETY: `err` came from `Box::into_raw` in `finish` and is freed once.
    let err = unsafe { Box::from_raw(err) };
    guarded((), move || drop(err));
}

/// roundtable's version (`"0.1.0"`): a static string, never freed.
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn rt_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    guarded(ptr::null(), || VERSION.as_ptr().cast())
}

/// The JSON-surface version this library implements (`RT_JSON_VERSION`
/// of its header).
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn rt_json_version() -> u32 {
    guarded(0, || RT_JSON_VERSION)
}

/// The ABI version this library implements (`RT_ABI_VERSION` of its
/// header).
///
/// Thread safety: any thread.
#[no_mangle]
pub extern "C" fn rt_abi_version() -> u32 {
    guarded(0, || RT_ABI_VERSION)
}

#[cfg(test)]
mod tests;
