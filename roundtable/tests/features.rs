//! What a build without the default features does: the store opens only
//! SQLite, and a file whose grammar is not built has no symbols. These run
//! under `cargo test -p roundtable --no-default-features` (the test
//! command does); with the default features the suite proves the other
//! side (PostgreSQL runs, symbol claims resolve).

#[cfg(not(feature = "rust"))]
use super::tools::World;
use roundtable::ErrorCode;
#[cfg(not(feature = "postgres"))]
use roundtable::{Engine, EngineOptions};
#[cfg(not(feature = "rust"))]
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
