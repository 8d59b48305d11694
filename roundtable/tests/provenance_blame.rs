//! Issue 36 item 2: `provenance.blame` attributes every line of a file at
//! the tip of the landing branch. 50 proposals by 5 agents land on three
//! shared files (each changing scripted lines, a ground-truth map kept
//! line by line); a person's plain `git commit` lands in the middle, and a
//! commit carrying another landing's `Roundtable-*` trailers, copied. Blame
//! names each governed line's proposal, author agent, task and evidence
//! as the store has them; the plain and the forged commits' lines are not
//! governed. Refusals (files mode, bad paths) change nothing.

use super::git_landing::git_world;
use super::landing::{fsck, git};
use super::tools::{id, str_of, World};
use roundtable::session::{BlameFile, NotGoverned};
use roundtable::{Actor, ErrorCode};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

const FILES: [&str; 3] = ["src/a.rs", "src/b.rs", "docs/c.md"];
const LINES: usize = 30;
const AGENTS: [&str; 5] = ["ana", "ben", "cai", "dee", "eve"];

/// Who wrote a line, as the test scripted it.
#[derive(Debug, Clone, PartialEq)]
enum Truth {
    /// The base commit (plain git).
    Base,
    /// Proposal `.0` by agent `.1`.
    Landed(String, String),
    /// The person's plain commit.
    Plain,
    /// The commit with copied trailers.
    Forged,
}

/// A patch replacing `old` by `new` (same line count) in `path`: one hunk
/// over the whole file.
pub(crate) fn patch(path: &str, old: &[String], new: &[String]) -> String {
    let mut out = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -1,{} +1,{} @@\n",
        old.len(),
        new.len()
    );
    for (o, n) in old.iter().zip(new) {
        if o == n {
            out.push_str(&format!(" {o}\n"));
        } else {
            out.push_str(&format!("-{o}\n+{n}\n"));
        }
    }
    out
}

fn read_lines(d: &Path, path: &str) -> Vec<String> {
    std::fs::read_to_string(d.join(path))
        .expect("read")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(d: &Path, path: &str, lines: &[String]) {
    std::fs::write(d.join(path), lines.join("\n") + "\n").expect("write");
}

fn tip(d: &Path) -> String {
    git(d, &["rev-parse", "refs/heads/main"]).trim().to_owned()
}

/// The lines proposal `i` changes in its file: two to four, scripted.
fn lines_of(i: usize) -> Vec<usize> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let count = 2 + (x % 3) as usize;
    let mut out = Vec::new();
    while out.len() < count {
        x ^= x >> 31;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let n = (x >> 17) as usize % LINES;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Land proposal `i` by `agent`: its lines of `file` (but `keep`) rewritten, claimed,
/// reviewed (bob approves) and applied. Its id and transaction.
fn land(
    w: &World,
    agent: &Actor,
    i: usize,
    file: &str,
    keep: &[usize],
    truth: &mut [Truth],
) -> (String, String) {
    let d = w.dir.path();
    let old = read_lines(d, file);
    let mut new = old.clone();
    let mut lines = lines_of(i);
    lines.retain(|n| !keep.contains(n));
    if lines.is_empty() {
        lines.push((0..LINES).find(|n| !keep.contains(n)).expect("a line"));
    }
    for n in lines {
        new[n] = format!("{file} line {} by {} in change {i}", n + 1, agent.id);
        truth[n] = Truth::Landed(String::new(), agent.id.to_string());
    }
    w.ok(
        "claim.acquire",
        json!({"resource_id": format!("file:{file}"), "type": "write", "ttl_s": 3600}),
        agent,
    );
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": format!("Change {i}"), "summary_md": "Scripted.",
                   "patch": patch(file, &old, &new)}),
            agent,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        agent,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    if i.is_multiple_of(7) {
        w.ok(
            "test.record",
            json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
            &w.host,
        );
    }
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied", "{out:#}");
    for t in truth.iter_mut() {
        if let Truth::Landed(p, _) = t {
            if p.is_empty() {
                *p = pid.clone();
            }
        }
    }
    (pid, str_of(&out["transaction"]["id"]))
}

/// A commit made behind roundtable's back: `lines` of `file` rewritten,
/// committed with `message` as `author`. Its id.
fn outside_commit(d: &Path, file: &str, lines: &[usize], tag: &str, message: &str) -> String {
    let mut content = read_lines(d, file);
    for &n in lines {
        content[n] = format!("{file} line {} {tag}", n + 1);
    }
    write_lines(d, file, &content);
    git(d, &["add", "--", file]);
    git(
        d,
        &[
            "commit",
            "-q",
            "--author",
            "Pat Person <pat@example.com>",
            "-m",
            message,
        ],
    );
    tip(d)
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_blame_attributes_every_line_of_50_landings_by_5_agents() {
    let base: Vec<(String, String)> = FILES
        .iter()
        .map(|f| {
            let body: String = (1..=LINES)
                .map(|n| format!("{f} line {n} base\n"))
                .collect();
            ((*f).to_owned(), body)
        })
        .collect();
    let base_refs: Vec<(&str, &str)> = base.iter().map(|(f, b)| (f.as_str(), b.as_str())).collect();
    let w = git_world(&base_refs);
    let d = w.dir.path();
    let agents: Vec<Actor> = AGENTS.iter().map(|a| w.agent(a, &["author"])).collect();
    let mut truth: BTreeMap<&str, Vec<Truth>> = FILES
        .iter()
        .map(|f| (*f, vec![Truth::Base; LINES]))
        .collect();
    let mut landed: Vec<(String, String)> = Vec::new();
    let mut plain = String::new();
    let mut forged = String::new();
    // Lines no later landing touches, so that the outside commits keep
    // some of theirs (the others are overwritten by agents later).
    let mut keep: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for i in 0..50 {
        let file = FILES[i % FILES.len()];
        let truth_of = truth.get_mut(file).expect("a file");
        let kept = keep.get(file).cloned().unwrap_or_default();
        landed.push(land(
            &w,
            &agents[i % AGENTS.len()],
            i,
            file,
            &kept,
            truth_of,
        ));
        if i == 24 {
            // A person's plain commit in the middle.
            let lines = [3, 4, 5, 17];
            plain = outside_commit(d, FILES[0], &lines, "by a person", "Tidy by hand");
            keep.insert(FILES[0], vec![3, 4]);
            for n in lines {
                truth.get_mut(FILES[0]).expect("a file")[n] = Truth::Plain;
            }
        }
        if i == 39 {
            // A commit whose trailers are copied from landing 30.
            let (pid, tid) = &landed[30];
            let message = format!(
                "Looks governed\n\nRoundtable-Proposal: {pid}\nRoundtable-Revision: 1\n\
                 Roundtable-Transaction: {tid}\nApproved-by: agent:bob (revision 1, vote-x)\n"
            );
            let lines = [0, 9, 10, 28];
            forged = outside_commit(d, FILES[1], &lines, "with copied trailers", &message);
            keep.insert(FILES[1], vec![0, 28]);
            for n in lines {
                truth.get_mut(FILES[1]).expect("a file")[n] = Truth::Forged;
            }
        }
    }
    // The votes and checks the store has, per proposal.
    let mut votes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (pid, _) in &landed {
        let page = w.ok("vote.list", json!({"proposal_id": pid}), &w.host);
        let mut ids: Vec<String> = page["votes"]
            .as_array()
            .expect("votes")
            .iter()
            .map(|v| str_of(&v["id"]))
            .collect();
        let tests = w.ok("test.list", json!({"proposal_id": pid}), &w.host);
        for t in tests["tests"].as_array().into_iter().flatten() {
            ids.push(str_of(&t["id"]));
        }
        votes.insert(pid.clone(), ids);
    }
    let transactions: BTreeMap<&str, &str> = landed
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    // Blame as an agent (any actor kind may), every line of every file.
    let reader = w.engine.session(agents[2].clone());
    let mut seen = BTreeMap::<&str, usize>::new();
    for file in FILES {
        let blame = reader
            .transactions()
            .blame(BlameFile::new(file))
            .unwrap_or_else(|e| panic!("blame {file}: {e} {}", e.details()));
        assert_eq!(blame.commit, tip(d));
        assert_eq!(blame.branch, "refs/heads/main");
        assert_eq!(blame.line_count as usize, LINES);
        let content = git(d, &["show", &format!("main:{file}")]);
        let mut n = 0;
        for range in &blame.ranges {
            assert!(range.start_line <= range.end_line);
            assert_eq!(
                range.lines.len() as u32,
                range.end_line - range.start_line + 1
            );
            let commit = blame
                .commits
                .iter()
                .find(|c| c.id == range.commit)
                .expect("the range's commit is listed");
            assert_eq!(range.governed, commit.governed);
            for (line, text) in (range.start_line..=range.end_line).zip(&range.lines) {
                n += 1;
                assert_eq!(line as usize, n, "{file}: ranges in order, no gap");
                assert_eq!(Some(text.as_str()), content.lines().nth(n - 1));
                let want = &truth[file][n - 1];
                let at = format!("{file}:{n} ({want:?}, {commit:?})");
                match want {
                    Truth::Landed(pid, agent) => {
                        assert!(commit.governed, "{at}");
                        let l = commit.landing.as_ref().expect("provenance");
                        assert_eq!(&l.proposal_id, pid, "{at}");
                        assert_eq!(&l.author_agent, agent, "{at}");
                        assert_eq!(l.transaction_id, transactions[pid.as_str()], "{at}");
                        assert_eq!((l.revision, l.task_id.as_str()), (1, "t1"), "{at}");
                        assert_eq!(l.applied_by, "orchestrator:host");
                        let ids: Vec<&str> = l.evidence.iter().map(|e| e.id.as_str()).collect();
                        let mut want_ids: Vec<&str> =
                            votes[pid].iter().map(String::as_str).collect();
                        // Only the records the policy counted are named: a
                        // check it does not require is not.
                        want_ids.retain(|i| !i.starts_with("test"));
                        assert_eq!(ids, want_ids, "{at}");
                        assert!(l.evidence.iter().all(|e| e.by == "agent:bob"), "{at}");
                        assert_eq!(commit.author, format!("{agent} <{agent}@agent.roundtable>"));
                        *seen.entry("landed").or_default() += 1;
                    }
                    Truth::Plain | Truth::Forged | Truth::Base => {
                        assert!(!commit.governed && commit.landing.is_none(), "{at}");
                        let expect = match want {
                            Truth::Plain => {
                                assert_eq!(commit.id, plain);
                                assert_eq!(commit.author, "Pat Person <pat@example.com>");
                                NotGoverned::NoTransaction
                            }
                            Truth::Forged => {
                                assert_eq!(commit.id, forged);
                                assert_eq!(commit.summary, "Looks governed");
                                NotGoverned::OtherCommit
                            }
                            _ => NotGoverned::NoTransaction,
                        };
                        assert_eq!(commit.not_governed, Some(expect), "{at}");
                        *seen.entry("outside").or_default() += 1;
                    }
                }
            }
        }
        assert_eq!(n, LINES, "{file}: every line");
        // The JSON path says the same.
        let json_blame = w.ok("provenance.blame", json!({"path": file}), &w.host);
        assert_eq!(json_blame, serde_json::to_value(&blame).expect("json"));
    }
    // Every kind of line was met: landed, plain, forged.
    assert!(seen["landed"] > 40, "{seen:?}");
    assert!(truth[FILES[0]].contains(&Truth::Plain));
    assert!(truth[FILES[1]].contains(&Truth::Forged));
    assert!(
        truth
            .values()
            .flatten()
            .filter(|t| matches!(t, Truth::Landed(..)))
            .count()
            > 40
    );
    fsck(d);
}

/// Files mode (the only mode of a build without `git`): nothing is
/// committed, so nothing to trace: `invalid_argument` on `landing.mode`,
/// the store and the files unchanged.
#[test]
fn issue36_blame_refuses_files_mode_changing_nothing() {
    let files = World::new();
    let before = std::fs::read(files.dir.path().join("hello.txt")).expect("read");
    for actor in [&files.host, &files.author] {
        let e = files.refused(
            "provenance.blame",
            json!({"path": "hello.txt"}),
            actor,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(e.details()["field"], "landing.mode", "{e}");
        assert!(e.message().contains("git landing mode"), "{e}");
    }
    let after = std::fs::read(files.dir.path().join("hello.txt")).expect("read");
    assert_eq!(before, after);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_blame_refuses_bad_paths_changing_nothing() {
    // Git mode: a path outside the repository, into .git, absent at the
    // tip, or not a file is refused; the repository and the store are as
    // they were.
    let w = git_world(&[("src/lib.rs", "fn a() {}\n")]);
    let d = w.dir.path();
    std::fs::write(d.join("untracked.txt"), "not committed\n").expect("write");
    let before = (
        tip(d),
        git(d, &["status", "--porcelain", "--untracked-files=all"]),
        git(d, &["for-each-ref"]),
    );
    let person = Actor::human(id("carol"));
    for (path, code) in [
        ("../outside.txt", ErrorCode::InvalidArgument),
        ("/etc/passwd", ErrorCode::InvalidArgument),
        (".git/config", ErrorCode::InvalidArgument),
        ("src/../hello.txt", ErrorCode::InvalidArgument),
        ("", ErrorCode::InvalidArgument),
        ("src", ErrorCode::InvalidArgument),
        ("missing.txt", ErrorCode::NotFound),
        ("untracked.txt", ErrorCode::NotFound),
    ] {
        let e = w.refused("provenance.blame", json!({"path": path}), &person, code);
        if code == ErrorCode::NotFound {
            assert_eq!(e.details(), &json!({"kind": "file", "id": path}));
        } else {
            assert_eq!(e.details()["field"], "path", "{path}: {e}");
        }
    }
    let after = (
        tip(d),
        git(d, &["status", "--porcelain", "--untracked-files=all"]),
        git(d, &["for-each-ref"]),
    );
    assert_eq!(before, after);
    // The typed API refuses a bad path before any call.
    let typed = w
        .engine
        .session(person)
        .transactions()
        .blame(BlameFile::new("../x"))
        .expect_err("refused");
    assert_eq!(typed.code(), ErrorCode::InvalidArgument);
    fsck(d);
}

/// A rollback lands a revert commit: its lines are governed by the
/// rollback transaction, which names the one it rolled back; the original
/// commit's lines are gone from the tip.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_blame_names_a_rollbacks_revert_commit() {
    let w = git_world(&[]);
    let d = w.dir.path();
    let pid = w.approved("file:hello.txt", super::tools::PATCH);
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = str_of(&applied["transaction"]["id"]);
    let landed = w.ok("provenance.blame", json!({"path": "hello.txt"}), &w.author);
    assert_eq!(landed["ranges"][0]["lines"], json!(["hello, world"]));
    assert_eq!(
        landed["commits"][0]["landing"]["transaction_id"],
        tid.as_str()
    );
    assert_eq!(landed["commits"][0]["landing"]["kind"], "apply");
    let rolled = w.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
    );
    let rid = str_of(&rolled["transaction"]["id"]);
    let blame = w.ok("provenance.blame", json!({"path": "hello.txt"}), &w.author);
    assert_eq!(blame["commit"], tip(d).as_str());
    assert_eq!(
        blame["ranges"],
        json!([{"start_line": 1, "end_line": 1, "commit": tip(d), "governed": true,
                "lines": ["hello"]}])
    );
    let landing = &blame["commits"][0]["landing"];
    assert_eq!(landing["transaction_id"], rid.as_str());
    assert_eq!(landing["kind"], "rollback");
    assert_eq!(landing["rollback_of"], tid.as_str());
    assert_eq!(landing["proposal_id"], pid.as_str());
    assert_eq!(landing["evidence"], json!([]));
    fsck(d);
}
