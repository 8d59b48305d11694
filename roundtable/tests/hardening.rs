//! Hostile trees and stores: special files at touched paths, git metadata
//! that never ends, stores that are not stores. Each refusal returns
//! promptly with its stable code and changes nothing.

use crate::tools::{fingerprint, str_of, World, PATCH};
use roundtable::{Engine, ErrorCode, ToolError};
use serde_json::{json, Value};
use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Run `f` on its own thread and fail the test if it has not returned in
/// 20 s: a call that opens a FIFO for reading blocks forever.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} blocked for 20 s"))
}

/// A special file of `kind` at `path` (replacing what is there); `false`
/// when this machine cannot make one (no `mknod` rights for a device).
fn make_special(path: &Path, kind: &str) -> bool {
    let _ = std::fs::remove_file(path);
    match kind {
        "fifo" => Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo")
            .success(),
        "socket" => {
            // The listener is dropped; the socket file stays.
            std::os::unix::net::UnixListener::bind(path).is_ok()
        }
        "char_device" => Command::new("mknod")
            .arg(path)
            .args(["c", "1", "3"])
            .status()
            .is_ok_and(|s| s.success()),
        _ => unreachable!("a kind this test knows"),
    }
}

fn call(w: &Arc<World>, tool: &'static str, args: Value, who: &str) -> Result<Value, ToolError> {
    let w2 = Arc::clone(w);
    let who = who.to_owned();
    within(tool, move || {
        let actor = match who.as_str() {
            "author" => &w2.author,
            "reviewer" => &w2.reviewer,
            _ => &w2.host,
        };
        w2.engine.call(tool, args, actor)
    })
}

fn assert_special(result: Result<Value, ToolError>, kind: &str, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(
        err.code(),
        ErrorCode::SpecialFile,
        "{what}: {err} {}",
        err.details()
    );
    assert_eq!(err.details()["path"], "hello.txt", "{what}");
    assert_eq!(err.details()["type"], kind, "{what}");
    assert!(err.message().contains(kind), "{what}: {err}");
}

#[test]
fn a_fifo_socket_or_device_at_a_touched_path_is_special_file_and_nothing_blocks() {
    for kind in ["fifo", "socket", "char_device"] {
        let w = Arc::new(World::new());
        // A proposal made while hello.txt was a file, approved.
        let pid = str_of(&w.create()["proposal"]["id"]);
        w.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &w.author,
        );
        w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        );
        let file = w.dir.path().join("hello.txt");
        if !make_special(&file, kind) {
            eprintln!("skipping {kind}: cannot make one here");
            continue;
        }
        let store = fingerprint(w.dir.path());
        assert_special(
            call(
                &w,
                "claim.acquire",
                json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
                "author",
            ),
            kind,
            "claim.acquire",
        );
        assert_special(
            call(
                &w,
                "proposal.create",
                json!({"task_id": "t1", "title": "Again", "summary_md": "x", "patch": PATCH}),
                "author",
            ),
            kind,
            "proposal.create",
        );
        // Validation reports, it does not block: the file is not what the
        // revision was made against.
        match call(&w, "patch.validate", json!({"proposal_id": pid}), "host") {
            Ok(report) => {
                assert_eq!(report["valid"], false, "{report}");
                assert!(report.to_string().contains(kind), "{report}");
            }
            Err(e) => assert_eq!(e.code(), ErrorCode::SpecialFile, "{e}"),
        }
        let err = call(
            &w,
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            "host",
        )
        .expect_err("apply over a special file");
        assert!(
            matches!(
                err.code(),
                ErrorCode::SpecialFile | ErrorCode::PreconditionFailed
            ),
            "{err} {}",
            err.details()
        );
        assert!(
            err.to_string().contains(kind) || err.details().to_string().contains(kind),
            "{err} {}",
            err.details()
        );
        assert_eq!(
            fingerprint(w.dir.path()),
            store,
            "{kind}: the store changed"
        );
        let meta = std::fs::symlink_metadata(&file).expect("still there");
        assert!(!meta.is_file(), "{kind}: replaced");
    }
}

#[test]
fn recovery_reports_a_special_file_at_a_journaled_path_as_diverged_and_does_not_block() {
    let w = World::new();
    let pid = w.approved("file:hello.txt", PATCH);
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = str_of(&applied["transaction"]["id"]);
    // As if the applier had been killed mid-write: the journal says
    // `applying`, and a FIFO now stands at the journaled path.
    let dir = as_if_crashed(w, &tid);
    assert!(make_special(&dir.path().join("hello.txt"), "fifo"));
    let root = dir.path().to_path_buf();
    let engine = within("Engine::open", move || {
        Engine::open(&root, crate::support::test_options(&root))
    })
    .expect("open recovers");
    let host = roundtable::Actor::orchestrator(roundtable::Id::new("host").expect("id"));
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "recovered", "{t}");
    let advice = engine
        .call(
            "transaction.recovery",
            json!({"transaction_id": tid}),
            &host,
        )
        .expect("recovery advice");
    let path = advice["paths"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["path"] == "hello.txt"))
        .unwrap_or_else(|| panic!("{advice}"));
    assert_eq!(path["state"], "diverged", "{advice}");
    assert_eq!(path["actual"], "fifo", "{advice}");
    let meta = std::fs::symlink_metadata(dir.path().join("hello.txt")).expect("kept");
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
}

/// A git repository whose `HEAD` is replaced by `make`.
fn hostile_head(make: impl FnOnce(&Path)) -> Arc<World> {
    let w = World::new();
    let git = w.dir.path().join(".git");
    std::fs::create_dir_all(git.join("refs/heads")).expect("mkdir");
    make(&git.join("HEAD"));
    Arc::new(w)
}

#[test]
fn git_metadata_that_never_ends_or_blocks_is_refused_promptly() {
    type Make = Box<dyn FnOnce(&Path)>;
    let cases: Vec<(&str, Make)> = vec![
        (
            "link to /dev/zero",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).expect("link")),
        ),
        (
            "a fifo",
            Box::new(|p: &Path| assert!(make_special(p, "fifo"))),
        ),
        (
            "a huge file",
            Box::new(|p: &Path| {
                std::fs::write(p, vec![b'r'; 4 << 20]).expect("write");
            }),
        ),
    ];
    for (what, make) in cases {
        let w = hostile_head(make);
        let store = fingerprint(w.dir.path());
        let err = call(
            &w,
            "proposal.create",
            json!({"task_id": "t1", "title": "x", "summary_md": "x", "patch": PATCH}),
            "author",
        )
        .expect_err(what);
        assert_eq!(err.code(), ErrorCode::Io, "{what}: {err}");
        assert!(err.message().contains("HEAD"), "{what}: {err}");
        assert_eq!(fingerprint(w.dir.path()), store, "{what}");
    }
}

#[test]
fn an_empty_or_foreign_store_file_is_incompatible_store_and_kept() {
    if crate::support::postgres() {
        return; // about the SQLite store file
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".roundtable")).expect("mkdir");
    let db = dir.path().join(".roundtable/store.db");
    std::fs::write(&db, b"").expect("empty store");
    let err = Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect_err("empty store");
    assert_eq!(err.code(), ErrorCode::IncompatibleStore, "{err}");
    assert_eq!(std::fs::metadata(&db).expect("kept").len(), 0);
}

#[test]
fn a_linked_store_file_is_path_escape_and_nothing_is_created_at_its_target() {
    if crate::support::postgres() {
        return; // about the SQLite store file
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".roundtable")).expect("mkdir");
    std::os::unix::fs::symlink(
        elsewhere.path().join("stolen.db"),
        dir.path().join(".roundtable/store.db"),
    )
    .expect("link");
    let err = Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect_err("linked store");
    assert_eq!(err.code(), ErrorCode::PathEscape, "{err}");
    assert!(!elsewhere.path().join("stolen.db").exists());
}

/// Mark transaction `tid` `applying` again, as if its applier had been
/// killed before the final commit; the engine is closed first.
fn as_if_crashed(w: World, tid: &str) -> tempfile::TempDir {
    let World { dir, engine, .. } = w;
    drop(engine);
    crate::support::store_db(dir.path()).execute(
        "UPDATE transactions SET status = 'applying' WHERE id = ?1",
        &[tid],
    );
    dir
}

#[test]
fn recovery_removes_only_its_own_leftovers_never_a_users_look_alike_files() {
    let w = World::new();
    std::fs::create_dir_all(w.dir.path().join("sub")).expect("mkdir");
    std::fs::write(w.dir.path().join("sub/keep.txt"), "keep\n").expect("write");
    let patch = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+bye\n\
                 --- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1 @@\n+new\n";
    let pid = w.approved("directory:.", patch);
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = str_of(&applied["transaction"]["id"]);
    let dir = as_if_crashed(w, &tid);
    let root = dir.path();
    // A user's files and directories named like roundtable's temporaries,
    // and one temporary the crashed transaction itself left.
    std::fs::write(root.join(".rt-stage-notes.md"), "notes\n").expect("write");
    std::fs::write(root.join("sub/.rt-stage-draft"), "draft\n").expect("write");
    std::fs::create_dir_all(root.join(".rt-stage-dir/inner")).expect("mkdir");
    std::fs::create_dir_all(root.join(".rt-backup-mine")).expect("mkdir");
    std::fs::write(root.join(".rt-backup-mine/x"), "x\n").expect("write");
    let own = format!(".rt-stage-{tid}-0123456789abcdef");
    std::fs::write(root.join("sub").join(&own), "staged\n").expect("write");
    let engine = Engine::open(root, crate::support::test_options(root)).expect("open recovers");
    let host = roundtable::Actor::orchestrator(roundtable::Id::new("host").expect("id"));
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "recovered", "{t}");
    assert_eq!(
        std::fs::read(root.join("hello.txt")).expect("hello"),
        b"hello\n"
    );
    assert!(!root.join("sub/new.txt").exists());
    assert!(
        !root.join("sub").join(&own).exists(),
        "its own leftover stays"
    );
    assert_eq!(
        std::fs::read(root.join(".rt-stage-notes.md")).expect("kept"),
        b"notes\n"
    );
    assert_eq!(
        std::fs::read(root.join("sub/.rt-stage-draft")).expect("kept"),
        b"draft\n"
    );
    assert!(root.join(".rt-stage-dir/inner").is_dir());
    assert!(root.join(".rt-backup-mine/x").is_file());
    assert!(root.join("sub/keep.txt").is_file());
    // And every later open works.
    drop(engine);
    Engine::open(root, crate::support::test_options(root)).expect("opens again");
}

#[test]
fn rollback_and_recovery_keep_directories_that_were_there_and_remove_the_ones_made() {
    for how in ["rollback", "recovery"] {
        let w = World::new();
        std::fs::create_dir_all(w.dir.path().join("empty/deeper")).expect("mkdir");
        let patch = "--- /dev/null\n+++ b/empty/deeper/a.txt\n@@ -0,0 +1 @@\n+a\n\
                     --- /dev/null\n+++ b/fresh/made/b.txt\n@@ -0,0 +1 @@\n+b\n";
        let pid = w.approved("directory:.", patch);
        let applied = w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        );
        let tid = str_of(&applied["transaction"]["id"]);
        assert!(w.dir.path().join("fresh/made/b.txt").is_file());
        let dir = if how == "rollback" {
            w.ok(
                "transaction.rollback",
                json!({"transaction_id": tid}),
                &w.host,
            );
            w.dir
        } else {
            let dir = as_if_crashed(w, &tid);
            Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("recovers");
            dir
        };
        let root = dir.path();
        assert!(!root.join("empty/deeper/a.txt").exists(), "{how}");
        assert!(
            root.join("empty/deeper").is_dir(),
            "{how}: a directory that was there went"
        );
        assert!(
            !root.join("fresh").exists(),
            "{how}: a directory it made stayed"
        );
    }
}

#[test]
fn a_change_that_turns_a_directory_into_a_file_validates_and_applies_alike() {
    let w = World::new();
    std::fs::create_dir_all(w.dir.path().join("d")).expect("mkdir");
    std::fs::write(w.dir.path().join("d/x"), "x\n").expect("write");
    let patch = "diff --git a/d/x b/d/x\ndeleted file mode 100644\n--- a/d/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
                 diff --git a/d b/d\nnew file mode 100644\n--- /dev/null\n+++ b/d\n@@ -0,0 +1 @@\n+d\n";
    // git itself applies it.
    let scratch = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(scratch.path().join("d")).expect("mkdir");
    std::fs::write(scratch.path().join("d/x"), "x\n").expect("write");
    std::fs::write(scratch.path().join("p.diff"), patch).expect("write");
    let git = Command::new("git")
        .args(["apply", "p.diff"])
        .current_dir(scratch.path())
        .output()
        .expect("git apply");
    assert!(
        git.status.success(),
        "{}",
        String::from_utf8_lossy(&git.stderr)
    );
    assert_eq!(std::fs::read(scratch.path().join("d")).expect("d"), b"d\n");

    let pid = w.approved("directory:.", patch);
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
    assert_eq!(report["valid"], true, "{report}");
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(std::fs::read(w.dir.path().join("d")).expect("d"), b"d\n");
    // And back: the file goes, the directory and its file return.
    w.ok(
        "transaction.rollback",
        json!({"transaction_id": applied["transaction"]["id"]}),
        &w.host,
    );
    assert_eq!(
        std::fs::read(w.dir.path().join("d/x")).expect("d/x"),
        b"x\n"
    );
}
