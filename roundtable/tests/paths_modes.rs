//! Issue 31 items 13, 14, 16 and 23: trees git itself rejects are refused
//! at create; every permission bit survives apply, landing and rollback;
//! nothing is written into a submodule's checkout; a directory swapped
//! during an apply gets nothing.

use super::landing::git;
use super::tools::{str_of, World};
use roundtable::ErrorCode;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// Run git in `dir` with `input` on its standard input; its status and
/// output.
fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> (bool, String) {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run git");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// Whether `git fsck --strict` rejects a commit whose tree holds `data`
/// at `path` (a link when `link`): the oracle the refusals are held to.
fn fsck_rejects(path: &str, data: &[u8], link: bool) -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q"]);
    let (ok, blob) = git_stdin(d, &["hash-object", "-w", "--stdin"], data);
    assert!(ok, "{blob}");
    let mut entry = (
        if link { "120000 blob" } else { "100644 blob" },
        blob.trim().to_owned(),
    );
    let components: Vec<&str> = path.split('/').collect();
    for name in components.iter().rev() {
        let line = format!("{} {}\t{name}\n", entry.0, entry.1);
        let (ok, tree) = git_stdin(d, &["mktree"], line.as_bytes());
        assert!(ok, "mktree {path:?}: {tree}");
        entry = ("040000 tree", tree.trim().to_owned());
    }
    let (ok, commit) = git_stdin(d, &["commit-tree", "-m", "m", &entry.1], b"");
    assert!(ok, "{commit}");
    git(d, &["update-ref", "refs/heads/master", commit.trim()]);
    let (ok, _) = git_stdin(d, &["fsck", "--strict", "--no-progress"], b"");
    !ok
}

/// A patch creating `path` with `data` (a link when `link`).
fn creating(path: &str, data: &str, link: bool) -> String {
    let mode = if link { "120000" } else { "100644" };
    let mut body = String::new();
    let lines: Vec<&str> = data.split_inclusive('\n').collect();
    for line in &lines {
        body.push('+');
        body.push_str(line);
    }
    if !data.ends_with('\n') {
        body.push_str("\n\\ No newline at end of file\n");
    }
    format!(
        "diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{body}",
        lines.len()
    )
}

/// Item 13: every path and `.gitmodules`/`.gitattributes` content that
/// `git fsck --strict` (run here, on this machine) rejects is refused at
/// `proposal.create` — `path_escape` or `invalid_path`, nothing stored —
/// and what it accepts is accepted. A few cases are refused although git
/// accepts them (listed as `stricter`, said in `roundtable::fsck`).
#[test]
fn item13_fsck_rejected_paths_refused_at_create() {
    let w = World::new();
    let modules = |body: &str| format!("[submodule \"x\"]\n{body}\n");
    let long_line = format!("{} text\n", "a".repeat(2100));
    // (path, content, link, stricter than git)
    let cases: Vec<(String, String, bool, bool)> = vec![
        (".g\u{200c}it/config".into(), "x\n".into(), false, false),
        ("\u{feff}.git/hooks/x".into(), "x\n".into(), false, false),
        ("git~1/config".into(), "x\n".into(), false, false),
        ("GIT~1/config".into(), "x\n".into(), false, false),
        (".git./config".into(), "x\n".into(), false, false),
        (".git /config".into(), "x\n".into(), false, false),
        (
            "a/.git::$INDEX_ALLOCATION/x".into(),
            "x\n".into(),
            false,
            false,
        ),
        ("x\\.git/y".into(), "x\n".into(), false, false),
        (".gitmodules/x".into(), "x\n".into(), false, false),
        ("gitmod~1/x".into(), "x\n".into(), false, false),
        (".gitattributes/x".into(), "x\n".into(), false, false),
        (".gitmodules".into(), "x".into(), true, false),
        ("sub/gi7eba~1".into(), "x".into(), true, false),
        (
            ".gitmodules".into(),
            "[submodule \"../../x\"]\n\tpath = x\n\turl = https://example.com/x\n".into(),
            false,
            false,
        ),
        (
            "sub/.gitmodules".into(),
            "[submodule \"a\\\\..\"]\n\turl = x\n".into(),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = --upload-pack=touch /tmp/pwned"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\tURL = \" -x\""),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = \"\"-x"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            "[submodule.x]\n\turl = -x\n".into(),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            "[submodule \"x\"] url = -x\n".into(),
            false,
            false,
        ),
        (".gitmodules".into(), modules("\tpath = -x"), false, false),
        (
            ".gitmodules".into(),
            modules("\tupdate = !sh evil"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = https:///x"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = http::https:///x"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = https://e%0a/x"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = ../../x%0ahost=evil"),
            false,
            false,
        ),
        (".gitmodules".into(), modules("\turl = ../:x"), false, false),
        (
            ".gitmodules".into(),
            modules("\turl = git://e/%0a"),
            false,
            false,
        ),
        (".gitmodules .".into(), modules("\turl = -x"), false, false),
        (".gitattributes".into(), long_line.clone(), false, false),
        // Refused although git accepts them.
        (".gitmodules".into(), "garbage [\n".into(), false, true),
        (".gitmodules".into(), modules("\turl = x%0ay"), false, true),
        (
            ".gitmodules".into(),
            modules("\turl = https://e/x%0d"),
            false,
            true,
        ),
        // Accepted, as git accepts them.
        (
            ".gitmodules".into(),
            modules("\tpath = x\n\turl = ../x.git"),
            false,
            false,
        ),
        (
            ".gitmodules".into(),
            modules("\turl = ./../../x/"),
            false,
            false,
        ),
        ("gitmod~5".into(), "x".into(), true, false),
        (".gitx/y".into(), "x\n".into(), false, false),
        ("git~2/y".into(), "x\n".into(), false, false),
        (".git~1/y".into(), "x\n".into(), false, false),
        (".g\u{a0}it/y".into(), "x\n".into(), false, false),
        (
            ".gitattributes".into(),
            "*.rs diff=rust\n".into(),
            false,
            false,
        ),
        (".gitattributes".into(), "x".into(), true, false),
        ("d/a:b/con".into(), "x\n".into(), false, false),
    ];
    let (mut refused, mut accepted) = (0, 0);
    for (path, data, link, stricter) in &cases {
        let rejects = fsck_rejects(path, data.as_bytes(), *link);
        assert!(
            rejects != *stricter || !rejects,
            "{path:?} {data:?}: the table disagrees with git fsck (git rejects: {rejects})"
        );
        let args = json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": creating(path, data, *link)});
        if rejects || *stricter {
            let before = super::support::fingerprint(w.dir.path());
            let e = w
                .engine
                .call("proposal.create", args.clone(), &w.author)
                .expect_err(&format!("{path:?} {data:?} must be refused"));
            assert!(
                matches!(e.code(), ErrorCode::PathEscape | ErrorCode::InvalidPath),
                "{path:?} {data:?}: {e} {}",
                e.details()
            );
            assert_eq!(super::support::fingerprint(w.dir.path()), before);
            refused += 1;
        } else {
            let out = w.ok("proposal.create", args, &w.author);
            assert!(!str_of(&out["proposal"]["id"]).is_empty());
            accepted += 1;
        }
    }
    eprintln!("item13: {refused} refused, {accepted} accepted, git fsck --strict the oracle");
    // The names are refused wherever a path is taken (reads too).
    let e = roundtable::RepoPath::from_bytes(b"git~1/config").expect_err("refused");
    assert_eq!(e.code(), ErrorCode::PathEscape, "{e}");
}

/// The permission bits (`0o7777`) of `p`.
fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::symlink_metadata(p)
        .expect("meta")
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Item 14: a governed apply keeps every permission bit of the files it
/// rewrites (a 0600 `.env` stays 0600, 0444 stays 0444, 0750 stays 0750,
/// a 0600 file made executable becomes 0700), and the rollback restores
/// the bytes with the same bits.
#[test]
fn item14_apply_and_rollback_keep_every_permission_bit() {
    let w = World::new();
    let d = w.dir.path();
    let files = [
        (".env", 0o600, 0o600),
        ("ro.txt", 0o444, 0o444),
        ("run.sh", 0o750, 0o750),
        ("tool", 0o600, 0o700),
    ];
    let mut patch = String::new();
    for (name, mode, _) in files {
        std::fs::write(d.join(name), "old\n").expect("write");
        set_mode(&d.join(name), mode);
        let mode_change = if name == "tool" {
            "old mode 100644\nnew mode 100755\n".to_owned()
        } else {
            String::new()
        };
        patch.push_str(&format!(
            "diff --git a/{name} b/{name}\n{mode_change}--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-old\n+new\n"
        ));
    }
    let pid = w.approved("directory:.", &patch);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied", "{out}");
    for (name, _, after) in files {
        assert_eq!(
            std::fs::read_to_string(d.join(name)).expect("read"),
            "new\n"
        );
        assert_eq!(mode_of(&d.join(name)), after, "{name} after the apply");
    }
    let tid = str_of(&out["transaction"]["id"]);
    w.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
    );
    for (name, before, _) in files {
        assert_eq!(
            std::fs::read_to_string(d.join(name)).expect("read"),
            "old\n"
        );
        let want = if name == "tool" { 0o600 } else { before };
        assert_eq!(mode_of(&d.join(name)), want, "{name} after the rollback");
    }
}

/// Files a change deletes (or renames away), each with permission bits
/// git's two modes cannot spell: `(path, content, mode)`.
const DELETED: [(&str, &str, u32); 3] = [
    (".env", "SECRET=1\n", 0o600),
    ("run.sh", "#!/bin/sh\n", 0o750),
    ("key.pem", "KEY\n", 0o640),
];

/// A world holding [`DELETED`], and an approved proposal deleting `.env`
/// and `run.sh` and renaming `key.pem` to `moved.pem`.
fn deleting_world() -> (World, String) {
    let w = World::new();
    let d = w.dir.path();
    for (name, data, mode) in DELETED {
        std::fs::write(d.join(name), data).expect("write");
        set_mode(&d.join(name), mode);
    }
    let patch = "diff --git a/.env b/.env\ndeleted file mode 100644\n--- a/.env\n+++ /dev/null\n@@ -1 +0,0 @@\n-SECRET=1\n\
                 diff --git a/run.sh b/run.sh\ndeleted file mode 100755\n--- a/run.sh\n+++ /dev/null\n@@ -1 +0,0 @@\n-#!/bin/sh\n\
                 diff --git a/key.pem b/moved.pem\nsimilarity index 100%\nrename from key.pem\nrename to moved.pem\n";
    let pid = w.approved("directory:.", patch);
    (w, pid)
}

/// Apply `pid` of `w` (it deletes every file of [`DELETED`]); the
/// transaction's id, once its journal is checked to record each file's
/// permission bits.
fn apply_deleting(w: &World, pid: &str) -> String {
    let d = w.dir.path();
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied", "{out}");
    for (name, _, _) in DELETED {
        assert!(!d.join(name).exists(), "{name} deleted");
    }
    let tid = str_of(&out["transaction"]["id"]);
    let got = w.ok("transaction.get", json!({"transaction_id": tid}), &w.host);
    let files = got["files"].as_array().expect("files");
    for (name, _, mode) in DELETED {
        let f = files
            .iter()
            .find(|f| f["path"] == name)
            .unwrap_or_else(|| panic!("{name} journaled: {got:#}"));
        assert_eq!(f["before_mode"], json!(mode), "{name}: {f}");
    }
    let created = files
        .iter()
        .find(|f| f["path"] == "moved.pem")
        .expect("moved.pem journaled");
    assert!(
        created.get("before_mode").is_none(),
        "absent before: {created}"
    );
    tid
}

/// Each file of [`DELETED`] is back in `root` with its bytes and every
/// permission bit, and the rename's result is gone.
fn assert_recreated(root: &Path, how: &str) {
    for (name, data, mode) in DELETED {
        assert_eq!(
            std::fs::read_to_string(root.join(name)).expect("read"),
            data,
            "{name} after the {how}"
        );
        assert_eq!(
            mode_of(&root.join(name)),
            mode,
            "{name} after the {how}: {:o}",
            mode_of(&root.join(name))
        );
    }
    assert!(!root.join("moved.pem").exists(), "after the {how}");
}

/// Item 14 (follow-up): a file a governed apply deleted or renamed away
/// comes back with every permission bit it had (`0600`, `0750`, `0640`),
/// not git's `0644`/`0755` — by `transaction.rollback`, and by the
/// recovery of an apply left `applying` — because the journal records
/// each path's bits (`before_mode`, shown by `transaction.get`).
#[test]
fn item14_rollback_and_recovery_recreate_a_deleted_file_with_its_mode() {
    // Rollback.
    let (w, pid) = deleting_world();
    let tid = apply_deleting(&w, &pid);
    let out = w.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied", "{out}");
    assert_recreated(w.dir.path(), "rollback");

    // Recovery: the applier "died" before recording its outcome (the
    // transaction left `applying`); the next open puts the files back.
    let (w, pid) = deleting_world();
    let tid = apply_deleting(&w, &pid);
    crate::support::store_db(w.dir.path()).execute(
        "UPDATE transactions SET status = 'applying', finished_at = NULL WHERE id = ?1",
        &[&tid],
    );
    let World {
        dir, engine, host, ..
    } = w;
    drop(engine);
    let engine = roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect("reopen");
    let got = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("transaction.get");
    assert_eq!(got["transaction"]["status"], "recovered", "{got}");
    assert_recreated(dir.path(), "recovery");
}

/// Item 14 (follow-up): a store at the schema before `before_mode`
/// (SQLite version 11, PostgreSQL version 1) opens and migrates (to the
/// current version); a transaction journaled before keeps working, and its rollback
/// falls back to git's modes (`0644`, or `0755` when executable) for the
/// files it recreates.
#[test]
fn item14_a_journal_from_before_before_mode_migrates_and_rolls_back_at_gits_modes() {
    let (w, pid) = deleting_world();
    let tid = apply_deleting(&w, &pid);
    let World {
        dir, engine, host, ..
    } = w;
    drop(engine);
    let postgres = crate::support::postgres();
    // The store as schema version 11 left it: the column not there (nor
    // the landing queue's table, which came later), the version lower.
    crate::support::store_db(dir.path()).batch(if postgres {
        "ALTER TABLE transaction_files DROP COLUMN before_mode;
         DROP TABLE queue_entries;
         DROP TABLE trace_records;
         ALTER TABLE agents DROP COLUMN model_id;
         ALTER TABLE agents DROP COLUMN session_url;
         DELETE FROM roundtable_schema WHERE version >= 2;"
    } else {
        "ALTER TABLE transaction_files DROP COLUMN before_mode;
         DROP TABLE queue_entries;
         DROP TABLE trace_records;
         ALTER TABLE agents DROP COLUMN model_id;
         ALTER TABLE agents DROP COLUMN session_url;
         PRAGMA user_version = 11;"
    });
    let engine = roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect("open migrates");
    let mut db = crate::support::store_db(dir.path());
    let version = if postgres {
        db.ints("SELECT max(version) FROM roundtable_schema")[0]
    } else {
        db.ints("PRAGMA user_version")[0]
    };
    let expected = if postgres {
        (roundtable::store::PG_SCHEMA_VERSION, 6)
    } else {
        (roundtable::store::SCHEMA_VERSION, 16)
    };
    assert_eq!(version, Some(expected.0));
    assert_eq!(version, Some(expected.1));
    let nulls = db.ints("SELECT count(*) FROM transaction_files WHERE before_mode IS NULL")[0];
    assert_eq!(nulls, Some(4), "every row journaled before is NULL");
    let got = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("transaction.get on a migrated store");
    for f in got["files"].as_array().expect("files") {
        assert!(f.get("before_mode").is_none(), "{f}");
    }
    engine
        .call(
            "transaction.rollback",
            json!({"transaction_id": tid}),
            &host,
        )
        .expect("rollback of a journal from before");
    let d = dir.path();
    for (name, data, _) in DELETED {
        assert_eq!(std::fs::read_to_string(d.join(name)).expect("read"), data);
    }
    assert_eq!(mode_of(&d.join(".env")), 0o644);
    assert_eq!(mode_of(&d.join("run.sh")), 0o755);
    assert_eq!(mode_of(&d.join("key.pem")), 0o644);
    assert!(!d.join("moved.pem").exists());
    drop(engine);
    // Reopening migrates nothing again.
    drop(
        roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path()))
            .expect("reopen"),
    );
}

/// A patch turning `old\n` into `new\n` at `path`.
fn modifying(path: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-old\n+new\n")
}

/// Item 16: nothing is read or written in a submodule's checkout (a
/// directory holding a `.git` file or directory), in files mode as in git
/// mode: a change there is refused at create (`special_file`, type
/// `submodule`), and one created before the checkout appeared is refused
/// at apply (`precondition_failed`, its precondition stage saying
/// `special_file`) with nothing written.
#[test]
fn item16_no_write_into_a_submodule_checkout_in_files_mode() {
    no_write_into_a_submodule_checkout(false);
}

/// [`item16_no_write_into_a_submodule_checkout_in_files_mode`], in git mode.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item16_no_write_into_a_submodule_checkout_in_git_mode() {
    no_write_into_a_submodule_checkout(true);
}

fn no_write_into_a_submodule_checkout(git_mode: bool) {
    let w = if git_mode {
        super::git_landing::git_world(&[("vendor/lib/x", "old\n"), ("later/x", "old\n")])
    } else {
        let w = World::new();
        for p in ["vendor/lib/x", "later/x"] {
            let p = w.dir.path().join(p);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, "old\n").expect("write");
        }
        w
    };
    let d = w.dir.path();
    // A submodule's checkout: `.git` is a file naming its git dir.
    std::fs::write(
        d.join("vendor/lib/.git"),
        "gitdir: ../../.git/modules/lib\n",
    )
    .expect("gitdir");
    for patch in [
        modifying("vendor/lib/x"),
        creating("vendor/lib/new", "x\n", false),
    ] {
        let e = w.refused(
            "proposal.create",
            json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": patch}),
            &w.author,
            ErrorCode::SpecialFile,
        );
        assert_eq!(e.details()["type"], "submodule", "{e} {}", e.details());
    }
    // Created while `later/` was a plain directory; it then becomes a
    // nested repository's checkout (a `.git` directory): the apply is
    // refused and writes nothing.
    let pid = w.approved("directory:.", &modifying("later/x"));
    std::fs::create_dir(d.join("later/.git")).expect("nested repository");
    let e = w
        .engine
        .call(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        )
        .expect_err("refused");
    assert_eq!(
        e.code(),
        ErrorCode::PreconditionFailed,
        "git mode {git_mode}: {e}"
    );
    let stages = e.details()["report"]["stages"]
        .as_array()
        .expect("stages")
        .clone();
    let pre = stages
        .iter()
        .find(|s| s["name"] == "preconditions")
        .expect("preconditions");
    assert_eq!(pre["reasons"][0]["code"], "special_file", "{pre}");
    assert_eq!(
        std::fs::read_to_string(d.join("later/x")).expect("x"),
        "old\n"
    );
    assert!(!d.join("vendor/lib/new").exists());
    if git_mode {
        std::fs::remove_dir(d.join("later/.git")).expect("rmdir");
        std::fs::remove_file(d.join("vendor/lib/.git")).expect("rm");
        git(d, &["fsck", "--strict"]);
    }
}
