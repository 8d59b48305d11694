//! The engine and the process it lives in (issue 31 items 21 and 22):
//! another SQLite in the same process closing the store must not cost an
//! acknowledged write, and an engine inherited across `fork()` refuses
//! every call with `inherited_engine` instead of hanging.

use crate::tools::{id, scratch_dir};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROOT_VAR: &str = "RT_PROCESS_ROOT";
const DO_VAR: &str = "RT_PROCESS_DO";

fn host() -> Actor {
    Actor::orchestrator(id("host"))
}

fn create(engine: &Engine, task_id: &str) -> Result<serde_json::Value, roundtable::ToolError> {
    engine.call(
        "task.create",
        json!({"task_id": task_id, "title": "A task"}),
        &host(),
    )
}

/// Not a test on its own: re-executed by the tests below, open the
/// workspace at `RT_PROCESS_ROOT` (SQLite) and do `RT_PROCESS_DO`:
/// `create:ID` makes a task, `get:ID` reads one (failing when it is
/// absent); then close the engine, as a short-lived host or CLI does.
#[test]
fn process_worker() {
    let Some(root) = std::env::var_os(ROOT_VAR) else {
        return;
    };
    let what = std::env::var(DO_VAR).expect("RT_PROCESS_DO");
    let engine = Engine::open(Path::new(&root), EngineOptions::default()).expect("open");
    match what.split_once(':') {
        Some(("create", task)) => {
            create(&engine, task).expect("create");
        }
        Some(("get", task)) => {
            engine
                .call("task.get", json!({"task_id": task}), &host())
                .unwrap_or_else(|e| panic!("task {task} is not there: {e}"));
        }
        _ => panic!("unknown {what}"),
    }
    drop(engine);
}

/// Run [`process_worker`] in another process; whether it succeeded, and
/// what it said.
fn in_another_process(root: &Path, what: &str) -> (bool, String) {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "process::process_worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROOT_VAR, root)
        .env(DO_VAR, what)
        .output()
        .expect("run a worker");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && said.contains("1 passed"), said)
}

/// Item 21. A second SQLite library in the process (Python's `sqlite3`,
/// a host's own libsqlite3) that opens the store and closes it again
/// closes its descriptors of `store.db` and `store.db-shm` — and POSIX
/// drops every lock the process holds on a file when any descriptor of
/// it is closed. With the engine's locks gone, another process that
/// writes and closes believes it is the store's last user: it
/// checkpoints and deletes the WAL under the engine, and the engine's
/// next acknowledged write goes to a deleted file, lost to every other
/// process. The engine's locks must survive the other library's close.
#[test]
fn item21_another_sqlite_closing_the_store_in_the_process_loses_no_write() {
    let dir = scratch_dir();
    let root = dir.path();
    // SQLite whatever store the suite runs on: this is about its locks.
    let engine = Engine::open(root, EngineOptions::default()).expect("open");
    create(&engine, "before").expect("before");
    engine
        .call("task.list", json!({}), &host())
        .expect("a read, so readers hold the store too");
    let db = root.join(".roundtable/store.db");
    let shm = root.join(".roundtable/store.db-shm");
    assert!(shm.is_file(), "the store is in WAL mode");
    for round in 0..3 {
        // What the other library's open-read-close does to this process's
        // descriptors: open the files, then close them.
        drop(std::fs::File::open(&db).expect("open store.db"));
        drop(std::fs::File::open(&shm).expect("open store.db-shm"));
        // Another process writes and closes its engine.
        let theirs = format!("theirs-{round}");
        let (ok, said) = in_another_process(root, &format!("create:{theirs}"));
        assert!(ok, "round {round}: the other process: {said}");
        // This engine's write is acknowledged…
        let ours = format!("ours-{round}");
        create(&engine, &ours).unwrap_or_else(|e| panic!("round {round}: {e}"));
        // …so every process sees it, and sees the other's.
        for task in [&ours, &theirs, &"before".to_owned()] {
            let (ok, said) = in_another_process(root, &format!("get:{task}"));
            assert!(ok, "round {round}: {task} lost for another process: {said}");
        }
        engine
            .call("task.get", json!({"task_id": theirs}), &host())
            .unwrap_or_else(|e| panic!("round {round}: {theirs} unseen here: {e}"));
    }
    assert!(std::fs::symlink_metadata(&db).is_ok());
}

/// Wait for the child `pid` for up to `limit`; its exit status, or
/// `None` when it did not end (it is then killed).
fn wait_child(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(got >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if got == pid {
            return Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            });
        }
        if started.elapsed() > limit {
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Item 22. A child forked while other threads use the engine inherits
/// its locks (held by threads that do not exist in the child) and its
/// SQLite state: a call through it hung on a futex or wrote beside the
/// parent. Every call from the child fails at once with
/// `inherited_engine`, dropping it there leaves the parent's store
/// alone, and the parent goes on.
#[test]
fn item22_a_call_through_an_engine_inherited_across_fork_fails_fast() {
    let dir = scratch_dir();
    let root = dir.path().to_owned();
    let engine = std::sync::Arc::new(Engine::open(&root, EngineOptions::default()).expect("open"));
    create(&engine, "t0").expect("t0");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Threads keep the engine's locks busy while the parent forks.
    let busy: Vec<_> = (0..3)
        .map(|t| {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    create(&engine, &format!("busy-{t}-{n}")).expect("a busy write");
                    engine
                        .call("task.list", json!({}), &host())
                        .expect("a busy read");
                    n += 1;
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    for child in 0..4 {
        // SAFETY: the child only calls the engine, then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let code = match create(&engine, &format!("child-{child}")) {
                Err(e) if e.code() == ErrorCode::InheritedEngine => {
                    let session_refused = engine
                        .session(host())
                        .run(roundtable::session::ListTasks::all())
                        .is_err_and(|e| e.code() == ErrorCode::InheritedEngine);
                    if session_refused {
                        // Dropping it here neither hangs nor touches the
                        // parent's store.
                        // SAFETY: the child's copy of the engine is never
                        // used again: the child exits right after.
                        unsafe {
                            std::ptr::drop_in_place(std::sync::Arc::as_ptr(&engine).cast_mut())
                        };
                        0
                    } else {
                        3
                    }
                }
                Err(_) => 2,
                Ok(_) => 1,
            };
            // SAFETY: end the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let status = wait_child(pid, Duration::from_secs(20));
        assert_eq!(
            status,
            Some(0),
            "child {child}: None = hung, 1 = the call ran, 2 = another error, 3 = a session call ran"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in busy {
        assert!(t.join().expect("a busy thread") > 0);
    }
    // The parent goes on, and nothing a child did reached the store.
    create(&engine, "after").expect("the parent still works");
    let listed = engine.call("task.list", json!({}), &host()).expect("list");
    let text = listed.to_string();
    assert!(!text.contains("child-"), "a child wrote: {text}");
    let (ok, said) = in_another_process(&root, "get:after");
    assert!(ok, "{said}");
}
