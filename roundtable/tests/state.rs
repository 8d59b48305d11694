//! The workspace state hash and its stat cache, on real files.

use roundtable::state::{
    compute_state, compute_state_with, CacheMode, CacheStatus, StateOptions, WorkspaceState,
    CACHE_FILE,
};
use roundtable::ErrorCode;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

fn write(root: &Path, rel: &str, data: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
    fs::write(path, data).expect("write");
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    fs::set_permissions(root.join(rel), fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A small nested tree.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "README.md", b"# hello\n");
    write(root, "src/lib.rs", b"pub fn f() {}\n");
    write(root, "src/a/b/deep.txt", b"deep\n");
    write(root, "src/a.txt", b"sorts between src/a/ and src/b\n");
    write(root, "empty", b"");
    write(root, "bin/run.sh", b"#!/bin/sh\necho hi\n");
    chmod(root, "bin/run.sh", 0o755);
    dir
}

/// The state with the cache off: the reference every cached run must match.
fn uncached(root: &Path) -> WorkspaceState {
    compute_state_with(root, CacheMode::Off).expect("state")
}

fn state(root: &Path) -> WorkspaceState {
    compute_state(root).expect("state")
}

/// Runs until the cache holds every file and no entry is racy (every file
/// strictly older than the cache file), i.e. a warm run hashes nothing.
fn settled(root: &Path) -> WorkspaceState {
    for _ in 0..500 {
        let s = state(root);
        if s.stats.hashed == 0 && s.stats.cache == CacheStatus::Loaded {
            return s;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the cache never settled");
}

/// Both a cached and an uncached run, asserted equal.
fn both(root: &Path) -> WorkspaceState {
    let cached = state(root);
    let reference = uncached(root);
    assert_eq!(
        cached.state, reference.state,
        "cached run disagrees with an uncached one"
    );
    assert_eq!(cached.files, reference.files);
    assert_eq!(cached.git_head, reference.git_head);
    cached
}

#[test]
fn any_byte_of_any_file_changes_the_state() {
    let dir = tree();
    let root = dir.path();
    let base = both(root).state;
    for rel in [
        "README.md",
        "src/lib.rs",
        "src/a/b/deep.txt",
        "src/a.txt",
        "bin/run.sh",
    ] {
        let original = fs::read(root.join(rel)).expect("read");
        for at in [0, original.len() / 2, original.len() - 1] {
            let mut changed = original.clone();
            changed[at] ^= 0x01;
            write(root, rel, &changed);
            assert_ne!(both(root).state, base, "{rel} byte {at}");
            write(root, rel, &original);
            assert_eq!(both(root).state, base, "{rel} restored");
        }
    }
    // The empty file gaining a byte, then losing it.
    write(root, "empty", b"\0");
    assert_ne!(both(root).state, base);
    write(root, "empty", b"");
    assert_eq!(both(root).state, base);
}

#[test]
fn adding_removing_and_renaming_change_the_state() {
    let dir = tree();
    let root = dir.path();
    let base = both(root);
    assert_eq!(base.files, 6);

    write(root, "src/new.rs", b"");
    let added = both(root);
    assert_ne!(added.state, base.state);
    assert_eq!(added.files, 7);
    fs::remove_file(root.join("src/new.rs")).expect("rm");
    assert_eq!(both(root).state, base.state);

    fs::remove_file(root.join("src/lib.rs")).expect("rm");
    let removed = both(root);
    assert_ne!(removed.state, base.state);
    assert_eq!(removed.files, 5);
    write(root, "src/lib.rs", b"pub fn f() {}\n");
    assert_eq!(both(root).state, base.state);

    // Same bytes under another name, in the same and in another directory.
    for to in ["src/lib2.rs", "lib.rs", "src/a/lib.rs"] {
        fs::rename(root.join("src/lib.rs"), root.join(to)).expect("mv");
        assert_ne!(both(root).state, base.state, "renamed to {to}");
        fs::rename(root.join(to), root.join("src/lib.rs")).expect("mv back");
        assert_eq!(both(root).state, base.state);
    }

    // Swapping the contents of two files is a change too.
    fs::rename(root.join("README.md"), root.join("tmp")).expect("mv");
    fs::rename(root.join("src/a.txt"), root.join("README.md")).expect("mv");
    fs::rename(root.join("tmp"), root.join("src/a.txt")).expect("mv");
    assert_ne!(both(root).state, base.state);
}

#[test]
fn the_executable_bit_is_state_other_mode_bits_are_not() {
    let dir = tree();
    let root = dir.path();
    let base = both(root).state;
    chmod(root, "src/lib.rs", 0o755);
    let exec = both(root).state;
    assert_ne!(exec, base);
    chmod(root, "src/lib.rs", 0o644);
    assert_eq!(both(root).state, base);
    chmod(root, "bin/run.sh", 0o644);
    assert_ne!(both(root).state, base);
    chmod(root, "bin/run.sh", 0o700);
    assert_eq!(both(root).state, base, "0o700 is as executable as 0o755");
    chmod(root, "README.md", 0o600);
    assert_eq!(both(root).state, base, "read/write bits are not state");
}

#[test]
fn touch_and_identical_rewrites_leave_the_state_unchanged() {
    let dir = tree();
    let root = dir.path();
    let base = settled(root);

    let later = SystemTime::now() + Duration::from_secs(3600);
    let file = fs::File::options()
        .write(true)
        .open(root.join("src/lib.rs"))
        .expect("open");
    file.set_modified(later).expect("touch");
    drop(file);
    let touched = both(root);
    assert_eq!(touched.state, base.state);

    write(root, "README.md", b"# hello\n");
    let rewritten = both(root);
    assert_eq!(rewritten.state, base.state);

    // A new empty directory is not part of the state (as in git).
    fs::create_dir(root.join("src/empty-dir")).expect("mkdir");
    assert_eq!(both(root).state, base.state);
}

#[test]
fn a_warm_run_hashes_only_the_changed_file() {
    let dir = tree();
    let root = dir.path();
    for i in 0..50 {
        write(
            root,
            &format!("many/{}/f{i}.txt", i % 7),
            format!("{i}\n").as_bytes(),
        );
    }
    let base = settled(root);
    assert_eq!(base.files, 56);
    assert_eq!(base.stats.reused, 56);

    write(root, "many/3/f10.txt", b"changed\n");
    let warm = state(root);
    assert_eq!(warm.stats.cache, CacheStatus::Loaded);
    assert_eq!(warm.stats.hashed, 1, "{:?}", warm.stats);
    assert_eq!(warm.stats.bytes_hashed, 8);
    assert_eq!(warm.stats.reused, 55);
    assert!(warm.stats.cache_written);
    assert_ne!(warm.state, base.state);
    assert_eq!(warm.state, uncached(root).state);

    // Adding a file hashes just it; removing one hashes nothing.
    let settled_again = settled(root);
    write(root, "many/new.txt", b"new\n");
    let added = state(root);
    assert_eq!(added.stats.hashed, 1, "{:?}", added.stats);
    settled(root);
    fs::remove_file(root.join("many/new.txt")).expect("rm");
    let removed = state(root);
    assert_eq!(removed.stats.hashed, 0, "{:?}", removed.stats);
    assert_eq!(removed.state, settled_again.state);
    assert!(removed.stats.cache_written, "the removal is recorded");
    let quiet = state(root);
    assert!(!quiet.stats.cache_written, "nothing changed: no rewrite");
}

#[test]
fn the_racy_case_is_still_detected() {
    let dir = tree();
    let root = dir.path();
    let base = settled(root);
    let path = root.join("src/lib.rs");
    let before = fs::metadata(&path).expect("stat");

    // Same size, and the mtime set back to the cached value.
    fs::write(&path, b"pub fn g() {}\n").expect("write");
    let file = fs::File::options().write(true).open(&path).expect("open");
    file.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
    drop(file);
    let after = fs::metadata(&path).expect("stat");
    assert_eq!(after.len(), before.len());
    assert_eq!(
        after.modified().expect("mtime"),
        before.modified().expect("mtime")
    );

    let s = state(root);
    assert_eq!(s.stats.hashed, 1);
    assert_ne!(s.state, base.state);
    assert_eq!(s.state, uncached(root).state);
}

#[test]
fn changes_within_one_timestamp_tick_are_seen() {
    // Write, cache, rewrite with the same size at once: the rewrite often
    // lands in the same timestamp tick as the cache write, so its stat can
    // be identical to the cached one; the racy rule must re-hash it.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..200u32 {
        let a = format!("{:08}\n", i * 2);
        let b = format!("{:08}\n", i * 2 + 1);
        write(root, "f", a.as_bytes());
        let first = state(root);
        write(root, "f", b.as_bytes());
        let second = state(root);
        assert_ne!(first.state, second.state, "iteration {i}");
        assert_eq!(second.state, uncached(root).state, "iteration {i}");
    }
}

#[test]
fn files_changed_at_or_after_the_cache_write_are_rehashed() {
    let dir = tree();
    let root = dir.path();
    settled(root);
    // A file stamped in the future is never older than the cache: it is
    // re-hashed on every run (the racy rule), the rest is reused.
    let file = fs::File::options()
        .write(true)
        .open(root.join("src/lib.rs"))
        .expect("open");
    file.set_modified(SystemTime::now() + Duration::from_secs(3600))
        .expect("set mtime");
    drop(file);
    state(root);
    for _ in 0..3 {
        let s = state(root);
        assert_eq!(s.stats.hashed, 1, "{:?}", s.stats);
        assert_eq!(s.stats.racy, 1, "{:?}", s.stats);
        assert_eq!(s.stats.reused, 5);
    }
}

#[test]
fn a_corrupt_or_foreign_cache_is_ignored_and_rebuilt() {
    let dir = tree();
    let root = dir.path();
    let good = settled(root);
    let cache = root.join(CACHE_FILE);
    let bytes = fs::read(&cache).expect("cache exists");

    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    let mut wrong_version = bytes.clone();
    wrong_version[8] = 99;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("garbage", b"not a cache at all, just some text".repeat(10)),
        ("truncated", bytes[..bytes.len() - 40].to_vec()),
        ("flipped", flipped),
        ("version", wrong_version),
    ];
    for (what, data) in damaged {
        fs::write(&cache, &data).expect("damage");
        // Change a file too: a trusted corrupt cache would hide it.
        write(root, "README.md", b"# HELLO\n");
        let s = state(root);
        assert!(
            matches!(s.stats.cache, CacheStatus::Ignored(_)),
            "{what}: {:?}",
            s.stats.cache
        );
        assert_eq!(s.stats.hashed, 6, "{what}: every file re-hashed");
        assert_eq!(s.state, uncached(root).state, "{what}");
        assert!(s.stats.cache_written, "{what}: rebuilt");
        write(root, "README.md", b"# hello\n");
        assert_eq!(settled(root).state, good.state, "{what}");
    }

    // A directory where the cache file should be.
    fs::remove_file(&cache).expect("rm");
    fs::create_dir(&cache).expect("mkdir");
    let s = state(root);
    assert!(matches!(s.stats.cache, CacheStatus::Ignored(_)));
    assert_eq!(s.state, good.state);
    assert!(s.stats.cache_write_error.is_some());
}

#[test]
fn cache_modes() {
    let dir = tree();
    let root = dir.path();
    let off = uncached(root);
    assert!(!root.join(".roundtable").exists(), "Off writes nothing");
    assert_eq!(off.stats.cache, CacheStatus::NotUsed);
    assert_eq!(off.stats.hashed, 6);

    let first = state(root);
    assert_eq!(first.stats.cache, CacheStatus::Absent);
    assert!(root.join(CACHE_FILE).is_file());
    settled(root);

    let rebuilt = compute_state_with(root, CacheMode::Rebuild).expect("state");
    assert_eq!(rebuilt.stats.hashed, 6);
    assert!(rebuilt.stats.cache_written);
    assert_eq!(rebuilt.state, off.state);

    for threads in [1, 2, 3, 8] {
        let opts = StateOptions {
            cache: CacheMode::Off,
            threads,
            ignore: None,
        };
        assert_eq!(
            compute_state_with(root, opts).expect("state").state,
            off.state
        );
    }
}

#[test]
fn dot_git_and_dot_roundtable_are_not_state() {
    let dir = tree();
    let root = dir.path();
    let base = both(root).state;
    write(root, ".roundtable/store.sqlite", b"rows");
    write(root, ".roundtable/deep/x", b"x");
    // A `.git` directory without HEAD is not a repository.
    write(root, ".git/config", b"[core]\n");
    write(root, ".git/objects/ab/cdef", b"blob");
    // Nested repositories, worktrees and submodules are left out too.
    write(root, "vendor/lib/.git/config", b"x");
    write(
        root,
        "vendor/other/.git",
        b"gitdir: ../../.git/modules/other\n",
    );
    write(root, "src/.roundtable/x", b"x");
    let s = both(root);
    assert_eq!(s.state, base);
    assert_eq!(s.files, 6);
    assert_eq!(s.git_head, None);
    // But a file next to them is state.
    write(root, "vendor/lib/x", b"x");
    assert_ne!(both(root).state, base);
}

#[cfg(target_os = "linux")]
#[test]
fn dot_git_is_excluded_in_any_case() {
    let dir = tree();
    let root = dir.path();
    let base = both(root).state;
    write(root, "sub/.GIT/config", b"x");
    write(root, ".RoundTable/x", b"x");
    assert_eq!(both(root).state, base);
}

#[test]
fn symlinks_are_hashed_as_their_target_and_never_followed() {
    let outside = tempfile::tempdir().expect("tempdir");
    for i in 0..100 {
        write(outside.path(), &format!("d{}/f{i}", i % 10), b"outside");
    }
    write(outside.path(), "file", b"one");
    let dir = tree();
    let root = dir.path();
    let base = both(root);

    std::os::unix::fs::symlink(outside.path(), root.join("big")).expect("symlink");
    std::os::unix::fs::symlink(outside.path().join("file"), root.join("src/file-link"))
        .expect("symlink");
    let linked = both(root);
    assert_eq!(
        linked.files,
        base.files + 2,
        "links count once, never followed"
    );
    assert_eq!(linked.stats.symlinks, 2);
    assert_ne!(linked.state, base.state);

    // The target's content is not state; the target string is.
    write(outside.path(), "file", b"two");
    write(outside.path(), "d1/new", b"new");
    assert_eq!(both(root).state, linked.state);
    fs::remove_file(root.join("src/file-link")).expect("rm");
    std::os::unix::fs::symlink("../README.md", root.join("src/file-link")).expect("symlink");
    let retargeted = both(root);
    assert_ne!(retargeted.state, linked.state);
    assert_eq!(retargeted.files, linked.files);

    // A dangling link and a link to `/` are entries like any other.
    std::os::unix::fs::symlink("/", root.join("slash")).expect("symlink");
    std::os::unix::fs::symlink("missing", root.join("dangling")).expect("symlink");
    assert_eq!(both(root).files, base.files + 4);

    // A symlink and a file with the same bytes as the target differ.
    let d1 = tempfile::tempdir().expect("tempdir");
    let d2 = tempfile::tempdir().expect("tempdir");
    write(d1.path(), "x", b"target");
    std::os::unix::fs::symlink("target", d2.path().join("x")).expect("symlink");
    assert_ne!(uncached(d1.path()).state, uncached(d2.path()).state);
}

#[test]
fn a_symlinked_roundtable_dir_is_not_written_through() {
    let outside = tempfile::tempdir().expect("tempdir");
    let dir = tree();
    let root = dir.path();
    std::os::unix::fs::symlink(outside.path(), root.join(".roundtable")).expect("symlink");
    let s = state(root);
    assert!(matches!(s.stats.cache, CacheStatus::Ignored(_)));
    assert!(s.stats.cache_write_error.is_some());
    assert_eq!(fs::read_dir(outside.path()).expect("ls").count(), 0);
    assert_eq!(s.state, uncached(root).state);
}

#[test]
fn fifos_are_skipped_without_blocking() {
    let dir = tree();
    let root = dir.path();
    let base = both(root);
    let status = Command::new("mkfifo")
        .arg(root.join("src/pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let s = both(root);
    assert_eq!(s.state, base.state);
    assert_eq!(s.files, base.files);
}

#[test]
fn non_utf8_names_are_state() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tree();
    let root = dir.path();
    let base = both(root);
    fs::write(root.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), b"x").expect("write");
    let s = both(root);
    assert_eq!(s.files, base.files + 1);
    assert_ne!(s.state, base.state);
}

#[test]
fn same_tree_same_state_anywhere() {
    let a = tree();
    let b = tree();
    assert_eq!(both(a.path()).state, both(b.path()).state);
    // Different inodes and times, same state — and a copied cache from
    // another tree is harmless (the inodes do not match).
    fs::create_dir(b.path().join(".roundtable")).ok();
    fs::copy(a.path().join(CACHE_FILE), b.path().join(CACHE_FILE)).expect("copy");
    write(b.path(), "src/lib.rs", b"pub fn g() {}\n");
    assert_eq!(state(b.path()).state, uncached(b.path()).state);
}

#[test]
fn json_shape() {
    let dir = tree();
    let s = uncached(dir.path());
    let json = serde_json::to_value(&s).expect("serializes");
    let state = json["state"].as_str().expect("a string");
    assert!(
        state.starts_with("state:sha256:") && state.len() == 13 + 64,
        "{state}"
    );
    assert_eq!(
        state
            .parse::<roundtable::state::StateHash>()
            .expect("parses"),
        s.state
    );
    assert_eq!(
        json,
        serde_json::json!({"state": state, "git_head": null, "files": 6})
    );
}

#[test]
fn errors_carry_the_path_and_a_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let err = compute_state(&missing).expect_err("missing root");
    assert_eq!(err.code(), ErrorCode::Io);
    assert!(err.to_string().contains("missing"), "{err}");

    write(dir.path(), "file", b"x");
    let err = compute_state(&dir.path().join("file")).expect_err("a file is not a root");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);

    // An unreadable directory (meaningless as root, who reads anything).
    write(dir.path(), "tree/locked/x", b"x");
    chmod(dir.path(), "tree/locked", 0o000);
    if fs::read_dir(dir.path().join("tree/locked")).is_err() {
        let err = compute_state(&dir.path().join("tree")).expect_err("unreadable");
        assert_eq!(err.code(), ErrorCode::Io);
        assert!(err.to_string().contains("locked"), "{err}");
    }
    chmod(dir.path(), "tree/locked", 0o755);
}

// ---------------------------------------------------------------------------
// git HEAD
// ---------------------------------------------------------------------------

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn git_head_moves_change_the_state() {
    let dir = tree();
    let root = dir.path();
    let no_repo = both(root);
    git(root, &["init", "-q"]);
    write(root, ".git/info/exclude", b".roundtable/\n");
    let unborn = both(root);
    assert_eq!(unborn.git_head, None, "unborn branch");
    assert_eq!(
        unborn.state, no_repo.state,
        "an unborn repository adds nothing"
    );

    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    let one = both(root);
    let head1 = git(root, &["rev-parse", "HEAD"]);
    assert_eq!(one.git_head.as_deref(), Some(head1.as_str()));
    assert_ne!(one.state, no_repo.state);

    // Same tree, new commit: only HEAD moved.
    git(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let two = both(root);
    let head2 = git(root, &["rev-parse", "HEAD"]);
    assert_ne!(head1, head2);
    assert_eq!(two.git_head.as_deref(), Some(head2.as_str()));
    assert_ne!(two.state, one.state);
    assert_eq!(two.files, one.files);

    // Packed refs: the loose ref file is gone, HEAD reads the same.
    git(root, &["pack-refs", "--all"]);
    assert!(!root.join(".git/refs/heads/main").exists());
    let packed = both(root);
    assert_eq!(packed.git_head.as_deref(), Some(head2.as_str()));
    assert_eq!(packed.state, two.state);

    // An annotated tag adds a peeled `^` line; still the branch's commit.
    git(root, &["tag", "-a", "-m", "t", "v1", "HEAD~1"]);
    git(root, &["pack-refs", "--all"]);
    assert_eq!(both(root).git_head.as_deref(), Some(head2.as_str()));

    // Detached HEAD.
    git(root, &["checkout", "-q", "--detach", "HEAD~1"]);
    let detached = both(root);
    assert_eq!(detached.git_head.as_deref(), Some(head1.as_str()));
    assert_eq!(detached.state, one.state, "same tree, same commit");

    // A branch with a loose ref again, back at the second commit.
    git(root, &["checkout", "-q", "-b", "feature", &head2]);
    assert_eq!(both(root).git_head.as_deref(), Some(head2.as_str()));
    assert!(root.join(".git/refs/heads/feature").is_file());

    // A new unborn branch: no commit.
    git(root, &["checkout", "-q", "--orphan", "empty"]);
    assert_eq!(both(root).git_head, None);
}

#[test]
fn git_worktrees_and_gitdir_files() {
    let dir = tree();
    let root = dir.path();
    git(root, &["init", "-q"]);
    write(root, ".git/info/exclude", b".roundtable/\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    git(root, &["branch", "side"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
    git(root, &["pack-refs", "--all"]);
    let side = git(root, &["rev-parse", "side"]);
    let main = git(root, &["rev-parse", "main"]);

    let wt_parent = tempfile::tempdir().expect("tempdir");
    let wt = wt_parent.path().join("wt");
    git(
        root,
        &["worktree", "add", "-q", wt.to_str().expect("utf-8"), "side"],
    );
    assert!(wt.join(".git").is_file(), "a worktree has a .git file");
    let in_wt = both(&wt);
    assert_eq!(in_wt.git_head.as_deref(), Some(side.as_str()));
    assert_eq!(in_wt.files, 6, "the .git file is not state");
    assert_eq!(both(root).git_head.as_deref(), Some(main.as_str()));

    // A relative `gitdir:` file (as submodules write).
    let sub = tempfile::tempdir().expect("tempdir");
    let rel = pathdiff(sub.path(), &root.join(".git"));
    fs::write(sub.path().join(".git"), format!("gitdir: {rel}\n")).expect("write");
    assert_eq!(both(sub.path()).git_head.as_deref(), Some(main.as_str()));

    // A malformed `.git` file is an error, not "no repository".
    fs::write(sub.path().join(".git"), "nonsense\n").expect("write");
    let err = compute_state(sub.path()).expect_err("bad .git file");
    assert_eq!(err.code(), ErrorCode::Io);
}

/// `to` relative to `from` (both absolute), via `..` components.
fn pathdiff(from: &Path, to: &Path) -> String {
    let depth = from.components().count() - 1;
    let up = "../".repeat(depth);
    let to = to.to_str().expect("utf-8").trim_start_matches('/');
    format!("{up}{to}")
}

#[test]
fn hostile_git_heads_are_refused_not_followed() {
    let dir = tree();
    let root = dir.path();
    write(root, ".git/HEAD", b"ref: ../../../../etc/passwd\n");
    let err = compute_state(root).expect_err("escaping ref");
    assert_eq!(err.code(), ErrorCode::Io);
    write(root, ".git/HEAD", b"not a ref\n");
    assert!(compute_state(root).is_err());
    write(root, ".git/HEAD", b"ref: refs/heads/a\n");
    write(root, ".git/refs/heads/a", b"ref: refs/heads/b\n");
    write(root, ".git/refs/heads/b", b"ref: refs/heads/a\n");
    assert!(compute_state(root).is_err(), "a symref loop");
    write(root, ".git/refs/heads/b", &[b'A'; 40]);
    assert_eq!(
        compute_state(root).expect("state").git_head,
        Some("a".repeat(40)),
        "hex is normalized to lowercase"
    );
}

/// The state cache creates `.roundtable/` when it is absent, with the same
/// `.gitignore` (`*`) the store writes; an existing one is left alone.
#[test]
fn the_state_cache_creates_an_ignored_store_directory() {
    let dir = tree();
    let root = dir.path();
    assert!(!root.join(".roundtable").exists());
    state(root);
    let ignore = root.join(".roundtable/.gitignore");
    assert_eq!(fs::read_to_string(&ignore).expect("ignore file"), "*\n");
    fs::write(&ignore, "mine\n").expect("edit");
    state(root);
    write(root, "new.txt", b"x");
    state(root);
    assert_eq!(fs::read_to_string(&ignore).expect("ignore file"), "mine\n");
}
