//! What a build without the default features does: the store opens only
//! SQLite, a file whose grammar is not built has no symbols, and changes
//! land as files only (no git landing, no bare repository). These run
//! under `cargo test -p roundtable --no-default-features` (the test
//! command does); with the default features the suite proves the other
//! side (PostgreSQL runs, symbol claims resolve, git mode lands commits).

#[cfg(any(not(feature = "rust"), not(feature = "git")))]
use super::tools::World;
use roundtable::ErrorCode;
#[cfg(any(not(feature = "postgres"), not(feature = "git")))]
use roundtable::{Engine, EngineOptions};
#[cfg(any(not(feature = "rust"), not(feature = "git")))]
use serde_json::json;

/// A build without `postgres` refuses a store URL when the engine opens,
/// with a message that names the feature and not the password, and makes
/// no SQLite store in its place.
#[cfg(not(feature = "postgres"))]
#[test]
fn issue33_item1_without_postgres_a_store_url_is_refused_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        store: Some("postgres://rt:secret@127.0.0.1:1/db".into()),
        ..EngineOptions::default()
    };
    let Err(err) = Engine::open(dir.path(), options) else {
        panic!("this build has no PostgreSQL store, yet the engine opened");
    };
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    let message = err.to_string();
    assert!(message.contains("`postgres` feature"), "{message}");
    assert!(!message.contains("secret"), "{message}");
    assert!(!dir.path().join(".roundtable/store.db").exists());
}

/// A build without the Rust grammar treats `.rs` like a file in no
/// language: a claim on one of its symbols is `unsupported_language`
/// naming the path, and nothing is granted; a claim on the file works.
#[cfg(not(feature = "rust"))]
#[test]
fn issue33_item1_without_the_rust_grammar_a_symbol_claim_is_unsupported() {
    let w = World::new();
    let file = w.dir.path().join("src/lib.rs");
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&file, "fn alpha() {}\n").expect("write");
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/lib.rs#alpha", "type": "write", "ttl_s": 60}),
        &w.author,
        ErrorCode::UnsupportedLanguage,
    );
    assert_eq!(err.details()["path"], "src/lib.rs");
    let held = w.ok("claim.list", json!({}), &w.host);
    assert_eq!(held["claims"], json!([]), "a refusal grants nothing");
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60}),
        &w.author,
    );
}

/// A build without `git` lands files only, and says so wherever git
/// landing would be used, changing nothing: `workspace.configure` with
/// mode git is `invalid_argument` on `landing.mode` (the store keeps files
/// mode, the repository its refs); a bare repository is refused when the
/// engine opens, before any store is made in it; and a workspace whose
/// stored mode is git (set by a build with git) is refused when the engine
/// opens, before recovery, rather than landed as files. Files mode goes on
/// working (the rest of the suite runs in it).
#[cfg(not(feature = "git"))]
#[test]
fn issue33_item1_a_build_without_git_refuses_git_landing_and_changes_nothing() {
    use super::landing::{fsck, git};
    use super::support::{fingerprint, store_db, test_options};
    let no_git = |message: &str| {
        assert!(
            message.contains("no git support (the `git` feature)"),
            "{message}"
        );
    };

    // A working tree on `main`: git mode would be accepted with git.
    let w = World::new();
    let root = w.dir.path().to_path_buf();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "hello.txt"]);
    git(&root, &["commit", "-q", "-m", "base"]);
    let head = git(&root, &["rev-parse", "refs/heads/main"]);
    let err = w.refused(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main"}}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "landing.mode", "{err}");
    no_git(err.message());
    let settings = w.ok("workspace.get", json!({}), &w.host);
    assert_eq!(settings["landing"]["mode"], "files");
    // Files mode is still configurable.
    w.ok(
        "workspace.configure",
        json!({"landing": {"mode": "files"}}),
        &w.host,
    );

    // A store a build with git left in git mode: refused at open, the
    // store, the files and the branch as they were.
    let World { dir, engine, .. } = w;
    drop(engine);
    let landing = r#"{"mode":"git","branch":"main","remote":null}"#;
    store_db(&root).execute(
        "INSERT INTO settings (key, value, updated_at) VALUES ('landing', ?1, 0) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[landing],
    );
    let store_before = fingerprint(&root);
    let Err(err) = Engine::open(&root, test_options(&root)) else {
        panic!("this build has no git landing, yet a git-mode workspace opened");
    };
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert_eq!(err.details()["field"], "landing.mode", "{err}");
    no_git(err.message());
    assert_eq!(
        fingerprint(&root),
        store_before,
        "a refused open wrote the store"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("hello.txt")).expect("read"),
        "hello\n"
    );
    assert_eq!(git(&root, &["rev-parse", "refs/heads/main"]), head);
    assert_eq!(
        git(&root, &["status", "--porcelain", "--", "hello.txt"]),
        ""
    );
    fsck(&root);

    // A bare repository: refused at open, no store made in its git
    // directory.
    let top = tempfile::tempdir().expect("tempdir");
    git(
        top.path(),
        &[
            "clone",
            "-q",
            "--bare",
            &root.display().to_string(),
            "r.git",
        ],
    );
    let bare = top.path().join("r.git");
    let Err(err) = Engine::open(&bare, EngineOptions::default()) else {
        panic!("this build reads no bare repository, yet one opened");
    };
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    no_git(err.message());
    assert!(
        !bare.join(".roundtable").exists(),
        "a refused open made a store"
    );
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/main"]), head);
    fsck(&bare);
    drop(dir);
}
