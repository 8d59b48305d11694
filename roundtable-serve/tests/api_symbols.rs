//! `roundtable serve` over real HTTP, for issue 35: each hunk of a diff
//! names the symbols it changes, from the engine's `proposal.symbols`.

use serde_json::Value;

mod support;
use support::*;

const WS: &str = "/api/v1/workspaces/demo";

/// Two functions twenty comment lines apart, a blank line between the
/// comments and the second (else they are its leading comments, part of
/// its span as the symbol index reads it).
const TWO: &str = "fn first() -> u32 {\n    1\n}\n// 1\n// 2\n// 3\n// 4\n// 5\n// 6\n// 7\n// 8\n// 9\n// 10\n// 11\n// 12\n// 13\n// 14\n// 15\n// 16\n// 17\n// 18\n// 19\n// 20\n\nfn second() -> u32 {\n    2\n}\n";

/// A change to each function, and one to a comment between them: three
/// hunks far enough apart to stay three, as git writes them (no `@@`
/// heading).
const PATCH: &str = "--- a/src/two.rs\n+++ b/src/two.rs\n@@ -1,3 +1,3 @@\n fn first() -> u32 {\n-    1\n+    10\n }\n@@ -12,3 +12,3 @@\n // 9\n-// 10\n+// ten\n // 11\n@@ -25,3 +25,3 @@\n fn second() -> u32 {\n-    2\n+    20\n }\n";

/// The `symbol` and the `symbols` names of each hunk of `diff` (one file).
fn labels(file: &Value) -> Vec<(Value, Vec<String>)> {
    file["hunks"]
        .as_array()
        .expect("hunks")
        .iter()
        .map(|h| {
            let names = h["symbols"]
                .as_array()
                .expect("symbols")
                .iter()
                .map(|s| s["name"].as_str().expect("name").to_owned())
                .collect();
            (h["symbol"].clone(), names)
        })
        .collect()
}

#[test]
fn each_hunk_names_the_function_it_changes() {
    let w = world();
    std::fs::write(w.dir.path().join("repo/src/two.rs"), TWO).expect("write");
    let pid = propose(&w, PATCH, "p1");
    let want = vec![
        (Value::from("first"), vec!["first".to_owned()]),
        (Value::Null, vec![]),
        (Value::from("second"), vec!["second".to_owned()]),
    ];
    // One file's diff.
    let one = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{pid}/diff?path=src/two.rs"),
    );
    assert_eq!(one.status, 200, "{}", String::from_utf8_lossy(&one.body));
    let one = one.json();
    assert_eq!(labels(&one), want, "{one:#}");
    let first = &one["hunks"][0]["symbols"][0];
    assert_eq!(first["kind"], "function", "{first}");
    assert_eq!(first["change"], "modified", "{first}");
    // The same on a page of every file's.
    let page = get(&w, CAROL, &format!("{WS}/proposals/{pid}/diff")).json();
    let items = page["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{page:#}");
    assert_eq!(labels(&items[0]), want, "{page:#}");
    // A file without a grammar: hunks, none naming a symbol.
    let pid = propose(
        &w,
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hi\n",
        "p2",
    );
    let txt = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{pid}/diff?path=hello.txt"),
    )
    .json();
    assert_eq!(labels(&txt), vec![(Value::Null, vec![])], "{txt:#}");
}
