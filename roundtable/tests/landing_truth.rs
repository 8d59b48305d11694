//! Issue 31, "the record must be the truth" (items 10, 11, 12 and 15): a
//! landed commit's trailers are exactly roundtable's whatever the title
//! and summary hold, and `roundtable log` reads them as git does; every
//! commit names every piece of evidence that let it land, carried or
//! fresh, with the revision it was given on; a push goes through the
//! remote's receive path (its hooks and `receive.*` settings); the working
//! tree after a landing is what `git checkout` of the landed commit
//! writes. Every repository these tests make passes `git fsck --strict`.

use super::landing::fsck;
use super::landing::git;
use super::tools::{str_of, World};
use roundtable::EngineOptions;
#[cfg(feature = "git")]
use roundtable::ErrorCode;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// A repository on `main` holding `hello.txt` and `files`, committed, then
/// a World on it in git landing mode.
fn git_world(files: &[(&str, &str)]) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("hello.txt"), "hello\n").expect("write");
    for (path, body) in files {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    let w = World::with(dir, EngineOptions::default());
    w.ok(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": null}}),
        &w.host,
    );
    w
}

/// `git interpret-trailers --parse` of `message`.
fn git_trailers(message: &[u8]) -> String {
    git_trailers_within(message, std::time::Duration::from_secs(60)).expect("git answers")
}

/// `git interpret-trailers --parse` of `message`, or `None` when git does
/// not answer within `wait` (git 2.39 loops forever on a scissors line
/// after a `---` divider: a length computed past the divider wraps).
fn git_trailers_within(message: &[u8], wait: std::time::Duration) -> Option<String> {
    let mut child = Command::new("git")
        .args(["interpret-trailers", "--parse"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git interpret-trailers");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(message)
        .expect("write");
    let deadline = std::time::Instant::now() + wait;
    while child.try_wait().expect("poll").is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().expect("kill the git it started");
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    Some(String::from_utf8(out.stdout).expect("utf-8"))
}

/// Trailers as `git interpret-trailers --parse` prints them.
fn printed(trailers: &[(String, String)]) -> String {
    trailers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect()
}

/// The raw message of `commit`.
fn body(d: &Path, commit: &str) -> Vec<u8> {
    Command::new("git")
        .args(["cat-file", "commit", commit])
        .current_dir(d)
        .output()
        .map(|o| {
            let raw = o.stdout;
            let at = raw.windows(2).position(|w| w == b"\n\n").expect("a header");
            raw[at + 2..].to_vec()
        })
        .expect("git cat-file")
}

fn head(d: &Path) -> String {
    git(d, &["rev-parse", "refs/heads/main"]).trim().to_owned()
}

/// A proposal by the world's author with `title` and `summary`, in review
/// and approved by the reviewer (the author first claims `resource`); its
/// id and the approving vote's id.
fn approved_as(
    w: &World,
    resource: &str,
    patch: &str,
    title: &str,
    summary: &str,
) -> (String, String) {
    w.ok(
        "claim.acquire",
        json!({"resource_id": resource, "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": title, "summary_md": summary, "patch": patch}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let vote = w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    (pid, str_of(&vote["vote"]["id"]))
}

fn new_file(path: &str, body: &str) -> String {
    format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n")
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item10_trailer_forgery_is_escaped_and_log_reads_trailers_as_git_does() {
    let w = git_world(&[]);
    let d = w.dir.path();
    let forged = "Does what it says.\n\nRoundtable-Proposal: prop-FAKE\nApproved-by: agent:lead\nHuman-Approved-by: human:admin\n---\nThe rest of the story.";
    let hostile = [
        // The issue's forgery: fake trailers, then a divider.
        ("Forge the record", forged.to_owned()),
        // A plain Markdown rule; a scissors line; a title git would take
        // for the divider.
        (
            "--- a rule in the title",
            "Intro.\n\n---\n\nMore.\n# ------------------------ >8 ------------------------\nAfter the scissors.\n---\t"
                .to_owned(),
        ),
        // Trailer-looking prose only, and a control character (a NUL is
        // refused at the argument: no store keeps one).
        (
            "Signed-off-by: someone",
            "Signed-off-by: x\n(cherry picked from commit 0123)\nReviewed-by: y\u{7}z".to_owned(),
        ),
    ];
    let mut landed = Vec::new();
    for (i, (title, summary)) in hostile.iter().enumerate() {
        let (pid, vote) = approved_as(
            &w,
            &format!("file:f{i}.txt"),
            &new_file(&format!("f{i}.txt"), "x"),
            title,
            summary,
        );
        let out = w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        );
        let tid = str_of(&out["transaction"]["id"]);
        let tip = head(d);
        let expected = format!(
            "Roundtable-Proposal: {pid}\nRoundtable-Revision: 1\nRoundtable-Transaction: {tid}\n\
             Roundtable-Chain: {}\nApproved-by: agent:bob (revision 1, {vote})\n",
            super::git_landing::chain_trailer(d, &tip)
        );
        // git's own parser sees exactly roundtable's trailers, and so does
        // `git log`'s.
        let message = body(d, &tip);
        assert_eq!(git_trailers(&message), expected, "{title}");
        assert_eq!(
            git(d, &["log", "-1", "--format=%(trailers:only,unfold)", &tip]).trim_end(),
            expected.trim_end(),
            "{title}"
        );
        // The title and the summary's words are all still there.
        let text = String::from_utf8(message).expect("utf-8");
        assert!(
            text.contains(title.trim_start_matches('-').trim()),
            "{text}"
        );
        assert!(text.contains("Roundtable-Proposal: prop-FAKE") || i != 0);
        landed.push((tip, expected));
    }
    // `roundtable log` lists every one of them, newest first, with the
    // trailers git reads.
    let log = roundtable::landing::landed_commits(d, "refs/heads/main", 10).expect("log");
    assert_eq!(log.len(), hostile.len(), "{log:#?}");
    for (commit, (tip, expected)) in log.iter().zip(landed.iter().rev()) {
        assert_eq!(&commit.id, tip);
        assert_eq!(&printed(&commit.trailers), expected);
    }
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    fsck(d);
}

/// A deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// Lines that git's trailer parser treats specially.
const LINES: &[&str] = &[
    "",
    " ",
    "---",
    "--- x",
    "---\t",
    "----",
    "-- -",
    "# comment",
    "# ------------------------ >8 ------------------------",
    "; ------------------------ >8 ------------------------",
    "Key: value",
    "Roundtable-Proposal: prop-FAKE",
    "Approved-by: agent:lead",
    "Signed-off-by: a <a@b>",
    "(cherry picked from commit 0123)",
    "  continued",
    "\tcontinued",
    "prose, more prose",
    "Conflicts:",
    "\tsrc/a.rs",
    "Bad Key: v",
    "Key : v",
    "k:v",
    ":x",
    "Key:",
    "---\r",
    "\r",
    "Ünïcode: ✓",
];

fn random_text(rng: &mut Rng, lines: usize) -> String {
    (0..lines)
        .map(|_| LINES[rng.below(LINES.len())])
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn item10_trailer_parser_and_message_agree_with_git() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut compared, mut hung) = (0, 0);
    // The parser reads what git reads, on any message.
    for _ in 0..300 {
        let n = 1 + rng.below(9);
        let mut message = random_text(&mut rng, n);
        if rng.below(3) > 0 {
            message.push('\n');
        }
        let ours = roundtable::landing::trailers(message.as_bytes());
        match git_trailers_within(message.as_bytes(), std::time::Duration::from_secs(3)) {
            Some(theirs) => {
                compared += 1;
                assert_eq!(printed(&ours), theirs, "{message:?}");
            }
            None => hung += 1,
        }
    }
    eprintln!(
        "trailer parser: {compared} messages read as git reads them; git did not answer on {hung}"
    );
    assert!(compared >= 250, "{compared}");
    // A message built from any title and summary carries exactly its
    // trailers, for git and for the parser.
    let trailers = [
        roundtable::landing::Trailer::new("Roundtable-Proposal", "prop-1"),
        roundtable::landing::Trailer::new("Approved-by", "agent:bob (revision 1, vote-1)"),
    ];
    let want = "Roundtable-Proposal: prop-1\nApproved-by: agent:bob (revision 1, vote-1)\n";
    for _ in 0..300 {
        let title = loop {
            let t = LINES[rng.below(LINES.len())].trim();
            if !t.is_empty() {
                break t;
            }
        };
        let n = rng.below(8);
        let summary = random_text(&mut rng, n);
        let message = roundtable::landing::message(title, &summary, &trailers).expect("a message");
        assert_eq!(git_trailers(message.as_bytes()), want, "{message:?}");
        assert_eq!(
            printed(&roundtable::landing::trailers(message.as_bytes())),
            want,
            "{message:?}"
        );
    }
}

/// `m.py`: two classes, one method each.
const M_PY: &str =
    "class User:\n    def save(self):\n        return 1\n\n\nclass Order:\n    def total(self):\n        return 2\n";
/// Changes `User.save` only.
const IN_SAVE: &str = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n     def save(self):\n-        return 1\n+        return 10\n \n";
/// Changes `Order.total` only.
const IN_TOTAL: &str = "--- a/m.py\n+++ b/m.py\n@@ -7,2 +7,2 @@\n     def total(self):\n-        return 2\n+        return 20\n";

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn item11_a_rebased_landing_names_the_carried_evidence_and_its_revision() {
    let w = git_world(&[("m.py", M_PY)]);
    let d = w.dir.path();
    // A required check that carries over a trivial rebase too.
    let policy = "version = 1\n[approvals]\nminimum = 1\ncarry_over = \"trivial_rebase\"\n[checks]\nrequired = [\"unit\"]\ncarry_on_trivial_rebase = true\n";
    let set = w.ok("policy.set", json!({"document": policy}), &w.host);
    w.ok(
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        &w.host,
    );
    w.ok(
        "agent.register",
        json!({"agent_id": "ben", "roles": ["author"]}),
        &w.host,
    );
    let ben = roundtable::Actor::agent(super::tools::id("ben"));
    let (pa, vote_a) = approved_as(&w, "symbol:m.py#User.save", IN_SAVE, "Save more", "s");
    // Ben's change, approved on revision 1, with its check.
    w.ok(
        "claim.acquire",
        json!({"resource_id": "symbol:m.py#Order.total", "type": "write", "ttl_s": 3600}),
        &ben,
    );
    let pb = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Total more", "summary_md": "t", "patch": IN_TOTAL}),
            &ben,
        )["proposal"]["id"],
    );
    w.ok("proposal.request_review", json!({"proposal_id": pb}), &ben);
    let vote_b = str_of(
        &w.ok(
            "vote.cast",
            json!({"proposal_id": pb, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        )["vote"]["id"],
    );
    let mut checks = Vec::new();
    for pid in [&pa, &pb] {
        let t = w.ok(
            "test.record",
            json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
            &w.host,
        );
        checks.push(str_of(&t["test_result"]["id"]));
    }
    // Ann's lands as it is: fresh evidence on revision 1.
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pa, "revision": 1}),
        &w.host,
    );
    let ta = str_of(&out["transaction"]["id"]);
    let first = head(d);
    assert_eq!(
        git_trailers(&body(d, &first)),
        format!(
            "Roundtable-Proposal: {pa}\nRoundtable-Revision: 1\nRoundtable-Transaction: {ta}\n\
             Roundtable-Chain: {}\nApproved-by: agent:bob (revision 1, {vote_a})\nChecks: unit=passed (revision 1, {})\n",
            super::git_landing::chain_trailer(d, &first),
            checks[0]
        )
    );
    // Ben's is stale now: the engine rebases it (revision 2) and lands it;
    // the approval and the check carried over, and the commit says so.
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pb, "revision": 1, "rebase": true}),
        &w.host,
    );
    assert_eq!(out["transaction"]["revision"], 2, "{out:#}");
    let tb = str_of(&out["transaction"]["id"]);
    let second = head(d);
    assert_eq!(
        git_trailers(&body(d, &second)),
        format!(
            "Roundtable-Proposal: {pb}\nRoundtable-Revision: 2\nRoundtable-Transaction: {tb}\n\
             Roundtable-Chain: {}\nApproved-by: agent:bob (revision 1, {vote_b})\nChecks: unit=passed (revision 1, {})\n",
            super::git_landing::chain_trailer(d, &second),
            checks[1]
        )
    );
    // What the commit names is what the evaluation counted.
    let approvals = out["validation"]["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == "approvals")
        .expect("approvals")
        .clone();
    assert_eq!(approvals["evidence"], json!([vote_b]), "{approvals:#}");
    let log = roundtable::landing::landed_commits(d, "refs/heads/main", 10).expect("log");
    assert_eq!(log.len(), 2);
    assert!(log[0]
        .trailers
        .iter()
        .any(|(k, v)| k == "Approved-by" && v.contains("revision 1")));
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    fsck(d);
}

/// A bare remote on `main` holding `hello.txt`, and a working-tree clone
/// of it whose `origin` is the remote, in git landing mode through
/// `origin`: the world (on the clone) and the remote's path.
#[cfg(feature = "git")]
fn remote_world(top: &Path) -> (World, std::path::PathBuf) {
    let seed = top.join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("hello.txt"), "hello\n").expect("write");
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "base"]);
    let remote = top.join("remote.git");
    git(top, &["clone", "-q", "--bare", "seed", "remote.git"]);
    let dir = tempfile::tempdir_in(top).expect("tempdir");
    git(
        top,
        &[
            "clone",
            "-q",
            "remote.git",
            dir.path().to_str().expect("utf-8"),
        ],
    );
    let w = World::with(dir, EngineOptions::default());
    w.ok(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
        &w.host,
    );
    (w, remote)
}

#[cfg(feature = "git")]
fn hook(remote: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = remote.join("hooks").join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("write a hook");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[cfg(feature = "git")] // it calls the libgit2 half directly
#[test]
fn item12_a_push_goes_through_the_remotes_receive_path() {
    let top = tempfile::tempdir().expect("tempdir");
    let (w, remote) = remote_world(top.path());
    let d = w.dir.path();
    let base = head(&remote);
    // Each refusal of the remote's receive path: the push is refused with
    // the remote's reason, and nothing moved anywhere.
    let refusals: [(&str, &str, &[&str]); 3] = [
        ("pre-receive hook declined", "pre-receive", &[]),
        ("hook declined", "update", &[]),
        ("", "", &["receive.maxInputSize", "1"]),
    ];
    for (i, (status, hook_name, config)) in refusals.iter().enumerate() {
        if hook_name.is_empty() {
            git(&remote, &["config", config[0], config[1]]);
        } else {
            hook(&remote, hook_name, "echo \"no pushes today\" >&2; exit 1");
        }
        let path = format!("r{i}.txt");
        let (pid, _) = approved_as(
            &w,
            &format!("file:{path}"),
            &new_file(&path, "x"),
            "Push",
            "s",
        );
        let e = w
            .engine
            .call(
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &w.host,
            )
            .expect_err("the remote refuses");
        assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
        let details = e.details();
        assert_eq!(details["reason"], "remote_rejected", "{details:#}");
        assert_eq!(details["ref"], "refs/heads/main");
        if !status.is_empty() {
            assert_eq!(details["remote_status"], *status, "{details:#}");
            assert!(
                details["remote_messages"]
                    .as_array()
                    .expect("messages")
                    .iter()
                    .any(|m| m == "no pushes today"),
                "{details:#}"
            );
        }
        assert_eq!(head(&remote), base, "the remote's branch moved");
        assert_eq!(head(d), base, "the clone's branch moved");
        assert!(!d.join(&path).exists(), "the file was left written");
        assert_eq!(git(d, &["status", "--porcelain"]), "");
        let got = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
        assert_eq!(got["proposal"]["status"], "in_review");
        if hook_name.is_empty() {
            git(&remote, &["config", "--unset", config[0]]);
        } else {
            std::fs::remove_file(remote.join("hooks").join(hook_name)).expect("remove the hook");
        }
        w.ok("proposal.withdraw", json!({"proposal_id": pid}), &w.author);
    }
    // With hooks that accept, fsck on receive and no non-fast-forward:
    // it lands, and the hooks saw the push.
    git(&remote, &["config", "receive.fsckObjects", "true"]);
    git(&remote, &["config", "receive.denyNonFastForwards", "true"]);
    hook(&remote, "pre-receive", "cat >> pre-receive.log");
    hook(&remote, "update", "echo \"$1\" >> update.log");
    let (pid, _) = approved_as(&w, "file:ok.txt", &new_file("ok.txt", "x"), "Push", "s");
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tip = head(&remote);
    assert_eq!(head(d), tip);
    assert_eq!(git(&remote, &["rev-parse", "main^"]).trim(), base);
    assert_eq!(
        std::fs::read_to_string(remote.join("pre-receive.log")).expect("pre-receive ran"),
        format!(
            "{base} {tip} refs/heads/main\n{} {} refs/notes/agent-trace\n",
            "0".repeat(40),
            git(&remote, &["rev-parse", "refs/notes/agent-trace"]).trim()
        )
    );
    assert_eq!(
        std::fs::read_to_string(remote.join("update.log")).expect("update ran"),
        "refs/heads/main\nrefs/notes/agent-trace\n"
    );
    assert_eq!(git(d, &["status", "--porcelain"]), "");

    // The push itself: a commit that is not a fast-forward is refused by
    // `receive.denyNonFastForwards` (the lease matches: only the remote's
    // setting stops it), and a malformed object by `receive.fsckObjects`.
    let local = roundtable::landing::open(d).expect("open");
    let (remote_repo, location) =
        roundtable::landing::open_remote(&local, "origin").expect("remote");
    let oid = |s: &str| git2::Oid::from_str(s.trim()).expect("an id");
    let sibling = git(
        d,
        &[
            "commit-tree",
            "-p",
            &base,
            "-m",
            "sibling",
            &format!("{base}^{{tree}}"),
        ],
    );
    let e = roundtable::landing::push(
        &local,
        &remote_repo,
        &location,
        roundtable::landing::BranchUpdate {
            branch: "refs/heads/main",
            expected: oid(&tip),
            new: oid(&sibling),
        },
        None,
        "t-nonff",
    )
    .expect_err("not a fast-forward");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(e.details()["reason"], "remote_rejected", "{e}");
    assert!(e.to_string().contains("non-fast-forward"), "{e}");
    assert_eq!(head(&remote), tip);
    let tree = git(d, &["rev-parse", "main^{tree}"]);
    let bad = format!(
        "tree {}\nparent {tip}\nauthor A<a@example.com> 1 +0000\ncommitter C <c@example.com> 1 +0000\n\nbad\n",
        tree.trim()
    );
    let bad_id = {
        let mut child = Command::new("git")
            .args([
                "hash-object",
                "-t",
                "commit",
                "--literally",
                "-w",
                "--stdin",
            ])
            .current_dir(d)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("git hash-object");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(bad.as_bytes())
            .expect("write");
        String::from_utf8(child.wait_with_output().expect("wait").stdout).expect("utf-8")
    };
    let e = roundtable::landing::push(
        &local,
        &remote_repo,
        &location,
        roundtable::landing::BranchUpdate {
            branch: "refs/heads/main",
            expected: oid(&tip),
            new: oid(&bad_id),
        },
        None,
        "t-fsck",
    )
    .expect_err("a malformed commit");
    assert_eq!(e.details()["reason"], "remote_rejected", "{e}");
    assert_eq!(head(&remote), tip);
    // The malformed object was only ever in this clone: remove it.
    let bad_id = bad_id.trim();
    std::fs::remove_file(d.join(".git/objects").join(&bad_id[..2]).join(&bad_id[2..]))
        .expect("remove the malformed object");
    fsck(&remote);
    fsck(d);
}

/// What `git checkout` of `commit` writes at `path`.
fn checkout_bytes(d: &Path, commit: &str, path: &str) -> Vec<u8> {
    let out = Command::new("git")
        .args(["cat-file", "--filters", &format!("{commit}:{path}")])
        .current_dir(d)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git cat-file");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item15_the_working_tree_after_a_landing_is_what_git_checkout_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_path_buf();
    let d = d.as_path();
    git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join(".gitattributes"), "*.txt text eol=crlf\n").expect("write");
    std::fs::write(d.join("hello.txt"), "hello\n").expect("write");
    std::fs::write(d.join("notes.md"), "plain\n").expect("write");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    let w = World::with(dir, EngineOptions::default());
    let d = w.dir.path();
    // The world wrote hello.txt as LF: the checkout writes CRLF.
    std::fs::remove_file(d.join("hello.txt")).expect("rm");
    git(d, &["checkout", "--", "hello.txt"]);
    assert_eq!(
        std::fs::read(d.join("hello.txt")).expect("read"),
        b"hello\r\n"
    );
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    w.ok(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": null}}),
        &w.host,
    );
    // A change to a converted file as the agent sees it (CRLF), a new
    // converted file written with LF, a file no attribute converts.
    let cases: [(&str, String, &[u8], &[u8]); 3] = [
        (
            "file:hello.txt",
            "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\r\n+hello, world\r\n".to_owned(),
            b"hello, world\n",
            b"hello, world\r\n",
        ),
        (
            "file:new.txt",
            new_file("new.txt", "fresh"),
            b"fresh\n",
            b"fresh\r\n",
        ),
        (
            "file:notes.md",
            "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-plain\n+plainer\n".to_owned(),
            b"plainer\n",
            b"plainer\n",
        ),
    ];
    let mut landed = Vec::new();
    for (resource, patch, blob, tree) in &cases {
        let path = resource.trim_start_matches("file:");
        let (pid, _) = approved_as(&w, resource, patch, "Convert", "s");
        let out = w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        );
        landed.push(str_of(&out["transaction"]["id"]));
        let tip = head(d);
        // The commit holds what `git add` makes; the working tree what
        // `git checkout` of it writes; git sees nothing modified.
        assert_eq!(
            git(d, &["cat-file", "blob", &format!("{tip}:{path}")]).as_bytes(),
            *blob,
            "{path}"
        );
        assert_eq!(checkout_bytes(d, &tip, path), *tree, "{path}");
        assert_eq!(std::fs::read(d.join(path)).expect("read"), *tree, "{path}");
        assert_eq!(git(d, &["status", "--porcelain"]), "", "{path}");
        assert_eq!(git(d, &["diff", "HEAD", "--stat"]), "", "{path}");
    }
    // A rollback lands the revert the same way: the base's blob again,
    // CRLF in the working tree, nothing modified.
    let back = w.ok(
        "transaction.rollback",
        json!({"transaction_id": landed[0]}),
        &w.host,
    );
    assert_eq!(back["transaction"]["status"], "applied", "{back:#}");
    assert_eq!(git(d, &["cat-file", "blob", "HEAD:hello.txt"]), "hello\n");
    assert_eq!(
        std::fs::read(d.join("hello.txt")).expect("read"),
        b"hello\r\n"
    );
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    fsck(d);
}
