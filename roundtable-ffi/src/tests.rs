//! Unit tests of the ABI's conventions, calling the exports from Rust.

use super::*;
use std::ffi::CStr;

/// Read a C string returned by an accessor.
fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: the accessors return NUL-terminated strings that live as long
    // as their error, which the caller has not freed yet.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The code and details of an error, then free it.
fn take(err: *mut rt_error) -> (String, String, serde_json::Value) {
    // SAFETY: `err` is a live error from an export.
    let (code, message, details) = unsafe {
        (
            text(rt_error_code(err)),
            text(rt_error_message(err)),
            text(rt_error_details_json(err)),
        )
    };
    // SAFETY: freed once.
    unsafe { rt_error_free(err) };
    let details = serde_json::from_str(&details).expect("details are JSON");
    (code, message, details)
}

#[test]
fn a_panic_becomes_rt_panic_with_an_error() {
    let result = catching(|| panic!("boom"));
    let mut err: *mut rt_error = ptr::null_mut();
    // SAFETY: `err` is writable.
    let status = unsafe { finish(&mut err, result) };
    assert_eq!(status, rt_status::RT_PANIC);
    let (code, message, details) = take(err);
    assert_eq!(code, "panic");
    assert!(message.contains("boom"), "{message}");
    assert_eq!(details["panic"], "boom");
    assert_eq!(guarded(7, || panic!("again")), 7);
}

#[test]
fn null_and_non_utf8_arguments_are_invalid_argument() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = CString::new(dir.path().to_str().expect("utf-8")).expect("no NUL");
    let mut engine: *mut rt_engine = ptr::null_mut();
    let mut err: *mut rt_error = ptr::null_mut();
    // SAFETY: valid strings and writable outputs.
    let status = unsafe { rt_engine_open(root.as_ptr(), ptr::null(), &mut engine, &mut err) };
    assert_eq!(status, rt_status::RT_OK);
    assert!(err.is_null());

    let bad = [0xffu8, 0xfe, 0];
    let actor = c"{\"id\":\"host\",\"kind\":\"orchestrator\"}";
    let mut out: *mut c_char = ptr::null_mut();
    // SAFETY: every pointer is NULL or valid.
    let status = unsafe {
        rt_engine_call(
            engine,
            bad.as_ptr().cast(),
            c"{}".as_ptr(),
            actor.as_ptr(),
            &mut out,
            &mut err,
        )
    };
    assert_eq!(status, rt_status::RT_INVALID_ARGUMENT);
    assert!(out.is_null(), "no output on failure");
    let (code, _, details) = take(err);
    assert_eq!(code, "invalid_argument");
    assert_eq!(details["field"], "tool");

    // SAFETY: as above; a NULL err_out is allowed.
    let status = unsafe {
        rt_engine_call(
            engine,
            c"agent.list".as_ptr(),
            ptr::null(),
            actor.as_ptr(),
            &mut out,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, rt_status::RT_INVALID_ARGUMENT);
    assert!(out.is_null());

    // SAFETY: closed once; NULLs are accepted by every free.
    unsafe {
        rt_engine_close(engine);
        rt_engine_close(ptr::null_mut());
        rt_string_free(ptr::null_mut());
        rt_error_free(ptr::null_mut());
        assert!(rt_error_code(ptr::null()).is_null());
    }
}

#[test]
fn patch_parse_describes_the_patch() {
    let patch = b"--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-one\n+two\n";
    let mut out: *mut c_char = ptr::null_mut();
    // SAFETY: `patch` is readable for its length; `out` is writable.
    let status = unsafe { rt_patch_parse(patch.as_ptr(), patch.len(), &mut out, ptr::null_mut()) };
    assert_eq!(status, rt_status::RT_OK);
    let json: serde_json::Value = serde_json::from_str(&text(out)).expect("JSON");
    assert_eq!(json["files"][0]["new_path"], "n.txt");
    // SAFETY: freed once.
    unsafe { rt_string_free(out) };
    // SAFETY: NULL with a non-zero length is refused before any read.
    let status = unsafe { rt_patch_parse(ptr::null(), 3, &mut out, ptr::null_mut()) };
    assert_eq!(status, rt_status::RT_INVALID_ARGUMENT);
}

#[test]
fn issue34_item5_patch_make_writes_a_patch_the_parser_reads() {
    let (path, old, new) = (b"src/n.txt", b"one\n", b"two\n");
    let mut out: *mut c_char = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: the inputs are readable for their lengths; the outputs writable.
    let status = unsafe {
        rt_patch_make(
            path.as_ptr(),
            path.len(),
            old.as_ptr(),
            old.len(),
            new.as_ptr(),
            new.len(),
            &mut out,
            &mut len,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, rt_status::RT_OK);
    let patch = text(out);
    assert_eq!(patch.len(), len);
    assert!(patch.contains("-one\n+two\n"), "{patch}");
    // SAFETY: freed once.
    unsafe { rt_string_free(out) };
    // NULL old side: a creation.
    // SAFETY: as above.
    let status = unsafe {
        rt_patch_make(
            path.as_ptr(),
            path.len(),
            ptr::null(),
            0,
            new.as_ptr(),
            new.len(),
            &mut out,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(status, rt_status::RT_OK);
    assert!(text(out).contains("new file mode 100644"));
    // SAFETY: freed once.
    unsafe { rt_string_free(out) };
    // A path outside the repository; NULL with a length.
    let escape = b"../x";
    // SAFETY: as above.
    let status = unsafe {
        rt_patch_make(
            escape.as_ptr(),
            escape.len(),
            ptr::null(),
            0,
            new.as_ptr(),
            new.len(),
            &mut out,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(status, rt_status::RT_PATH_ESCAPE);
    // SAFETY: NULL with a length is refused before any read.
    let status = unsafe {
        rt_patch_make(
            path.as_ptr(),
            path.len(),
            ptr::null(),
            3,
            new.as_ptr(),
            new.len(),
            &mut out,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(status, rt_status::RT_INVALID_ARGUMENT);
}

#[test]
fn versions() {
    assert_eq!(rt_abi_version(), RT_ABI_VERSION);
    assert_eq!(text(rt_version()), env!("CARGO_PKG_VERSION"));
}

#[test]
fn the_json_version_is_the_cores_and_the_tools_json_is_the_registry() {
    assert_eq!(RT_JSON_VERSION, rt::registry::JSON_VERSION);
    assert_eq!(rt_json_version(), RT_JSON_VERSION);
    let mut out: *mut c_char = ptr::null_mut();
    // SAFETY: `out` is writable; the error pointer may be NULL.
    let status = unsafe { rt_tools_json(&mut out, ptr::null_mut()) };
    assert_eq!(status, rt_status::RT_OK);
    let json: serde_json::Value = serde_json::from_str(&text(out)).expect("JSON");
    // SAFETY: freed once.
    unsafe { rt_string_free(out) };
    assert_eq!(json, Engine::tools_json());
}

/// Issue 31 item 22 through the ABI: a `fork()` child's `rt_engine_call`
/// on the parent's engine returns `RT_INHERITED_ENGINE` at once (naming
/// both processes), its `rt_engine_close` frees nothing of the parent's,
/// and the parent's engine goes on.
#[test]
fn item22_a_forked_child_gets_rt_inherited_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = CString::new(dir.path().to_str().expect("utf-8")).expect("no NUL");
    let mut engine: *mut rt_engine = ptr::null_mut();
    // SAFETY: valid strings and writable outputs.
    let status =
        unsafe { rt_engine_open(root.as_ptr(), ptr::null(), &mut engine, ptr::null_mut()) };
    assert_eq!(status, rt_status::RT_OK);
    let actor = c"{\"id\":\"host\",\"kind\":\"orchestrator\"}";
    let call = |args: &CStr| -> (rt_status, *mut rt_error) {
        let mut out: *mut c_char = ptr::null_mut();
        let mut err: *mut rt_error = ptr::null_mut();
        // SAFETY: an open engine; valid strings and writable outputs.
        let status = unsafe {
            rt_engine_call(
                engine,
                c"task.create".as_ptr(),
                args.as_ptr(),
                actor.as_ptr(),
                &mut out,
                &mut err,
            )
        };
        // SAFETY: NULL or a result string of this call.
        unsafe { rt_string_free(out) };
        (status, err)
    };
    assert_eq!(
        call(c"{\"task_id\":\"t1\",\"title\":\"one\"}").0,
        rt_status::RT_OK
    );
    // SAFETY: the child makes one call, closes its copy and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let (status, err) = call(c"{\"task_id\":\"child\",\"title\":\"no\"}");
        let ok = status == rt_status::RT_INHERITED_ENGINE && !err.is_null() && {
            let (code, _, details) = take(err);
            code == "inherited_engine"
                && details["pid"] == std::process::id()
                && details["opened_by_pid"].as_u64().is_some()
        };
        // SAFETY: the child's copy of the handle, closed once.
        unsafe { rt_engine_close(engine) };
        // SAFETY: end the child without the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut wstatus = 0;
    // SAFETY: our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut wstatus, 0) }, pid);
    assert!(
        libc::WIFEXITED(wstatus) && libc::WEXITSTATUS(wstatus) == 0,
        "the child's call was not refused"
    );
    assert_eq!(
        call(c"{\"task_id\":\"t2\",\"title\":\"two\"}").0,
        rt_status::RT_OK
    );
    let (status, err) = call(c"{\"task_id\":\"child\",\"title\":\"the child made none\"}");
    assert_eq!(
        status,
        rt_status::RT_OK,
        "{:?}",
        (!err.is_null()).then(|| take(err))
    );
    // SAFETY: closed once.
    unsafe { rt_engine_close(engine) };
}
