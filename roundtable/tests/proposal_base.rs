//! O(change) proposals (issue 16, item 8): a revision's `base_state` is a
//! digest over git `HEAD` and the before-state of the paths it touches, so
//! making one reads only those files, and files it does not touch leave it
//! unchanged.

use super::tools::{str_of, World, PATCH};
use roundtable::state::{touched_state, TouchedPath};
use roundtable::Digest;
use serde_json::{json, Value};

fn create(w: &World, patch: &str) -> Value {
    w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch}),
        &w.author,
    )["revision"]
        .clone()
}

#[test]
fn the_base_is_the_touched_paths_and_head_not_the_tree() {
    let w = World::new();
    let first = create(&w, PATCH);
    let expected = touched_state(
        None,
        [TouchedPath {
            path: "hello.txt",
            before: Some((Digest::of(b"hello\n"), false, false)),
        }],
    );
    assert_eq!(str_of(&first["base_state"]), expected.to_string());
    assert_eq!(first["base_git_head"], Value::Null);

    // An untouched file appearing leaves the base as it was.
    std::fs::write(w.dir.path().join("other.txt"), "x\n").expect("write");
    let second = create(&w, PATCH);
    assert_eq!(second["base_state"], first["base_state"]);

    // The touched file in another state is another base.
    std::fs::write(w.dir.path().join("hello.txt"), "hello\n\n").expect("write");
    let third = create(
        &w,
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1,2 +1,2 @@\n-hello\n+hi\n \n",
    );
    assert_ne!(third["base_state"], first["base_state"]);

    // A created path's base records its absence, and HEAD is part of it.
    let head = "0123456789abcdef0123456789abcdef01234567";
    let git = w.dir.path().join(".git");
    std::fs::create_dir_all(git.join("refs/heads")).expect("mkdir");
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
    std::fs::write(git.join("refs/heads/main"), format!("{head}\n")).expect("write");
    let create_new = "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n";
    let fourth = create(&w, create_new);
    assert_eq!(fourth["base_git_head"], head);
    let expected = touched_state(
        Some(head),
        [TouchedPath {
            path: "new.txt",
            before: None,
        }],
    );
    assert_eq!(str_of(&fourth["base_state"]), expected.to_string());
}
