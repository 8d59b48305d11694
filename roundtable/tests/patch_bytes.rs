//! Issue 19 item 4, the core half: a patch can be given as bytes
//! (`patch_base64`), so a diff that is not UTF-8 — a Latin-1 file's lines
//! — is proposed, read back and applied byte for byte; giving the patch
//! twice or as bad base64 is refused with nothing stored.

use super::tools::{str_of, World};
use base64::Engine as _;
use roundtable::session::{AttachPatch, CreateProposal};
use roundtable::ErrorCode;
use serde_json::json;

/// `caf\xe9` (Latin-1 "café") becomes `na\xefve` (Latin-1 "naïve").
const LATIN1_PATCH: &[u8] =
    b"--- a/latin1.txt\n+++ b/latin1.txt\n@@ -1,2 +1,2 @@\n-caf\xe9\n+na\xefve\n keep \xff\n";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn a_latin1_patch_given_as_bytes_lands_byte_for_byte() {
    let w = World::new();
    let file = w.dir.path().join("latin1.txt");
    std::fs::write(&file, b"caf\xe9\nkeep \xff\n").expect("write");
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:latin1.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let created = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "Latin-1", "summary_md": "bytes", "patch_base64": b64(LATIN1_PATCH)}),
        &w.author,
    );
    let pid = str_of(&created["proposal"]["id"]);
    // Read back exactly: not UTF-8, so as base64, never as lossy text.
    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "include_content": true}),
        &w.reviewer,
    );
    assert!(got.get("content").is_none(), "{got}");
    assert_eq!(got["content_base64"], json!(b64(LATIN1_PATCH)));
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
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied");
    assert_eq!(
        std::fs::read(&file).expect("read"),
        b"na\xefve\nkeep \xff\n".to_vec()
    );
    // A UTF-8 patch given as bytes reads back as text, as if given so.
    let utf8 = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, bytes\n";
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let second = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "UTF-8", "summary_md": "s", "patch_base64": b64(utf8.as_bytes())}),
        &w.author,
    );
    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": str_of(&second["proposal"]["id"]), "include_content": true}),
        &w.reviewer,
    );
    assert_eq!(got["content"], json!(utf8));
    assert!(got.get("content_base64").is_none());
}

#[test]
fn the_typed_api_proposes_bytes_too() {
    let w = World::new();
    std::fs::write(w.dir.path().join("latin1.txt"), b"caf\xe9\nkeep \xff\n").expect("write");
    let alice = w.engine.session(w.author.clone());
    let made = alice
        .proposals()
        .create(CreateProposal::patch_bytes(
            "t1",
            "Latin-1",
            "bytes",
            LATIN1_PATCH,
        ))
        .expect("create");
    assert_eq!(made.revision.number, 1);
    let revised = alice
        .proposals()
        .attach_patch(AttachPatch::patch_bytes(
            made.proposal.id.as_str(),
            1,
            LATIN1_PATCH,
        ))
        .expect("attach");
    assert_eq!(revised.revision.number, 2);
    assert_eq!(revised.revision.digest, made.revision.digest);
}

#[test]
fn a_patch_given_twice_or_as_bad_base64_is_refused_and_nothing_is_stored() {
    let w = World::new();
    let text = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hi\n";
    for (args, field) in [
        (
            json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch": text, "patch_base64": b64(text.as_bytes())}),
            "patch_base64",
        ),
        (
            json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch_base64": "not base64!"}),
            "patch_base64",
        ),
        (
            json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch_base64": b64(b"  \n")}),
            "patch_base64",
        ),
        (
            json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch_base64": b64(text.as_bytes()), "edit_plan": {"status": "ok", "changes": []}}),
            "edit_plan",
        ),
    ] {
        let e = w.refused(
            "proposal.create",
            args.clone(),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(e.details()["field"], field, "{args}: {e}");
    }
    assert_eq!(w.rows("proposals"), 0);
}
