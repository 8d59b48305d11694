//! Issue 18 item 2: git landing mode on a bare repository (reads come from
//! the branch's commit, nothing is written into the git directory) and
//! through a remote (the commit is pushed with a lease, and the push is
//! the commit point): two engines on two clones of one bare remote land
//! concurrently, disjoint changes all land once on a linear history, and
//! of two overlapping changes the loser is `precondition_failed` with
//! nothing of it on either branch.

use super::landing::fsck;
use super::landing::git;
use super::tools::{id, str_of};
use roundtable::{Actor, Engine, ErrorCode, ToolError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One host: an engine on one repository, its orchestrator, an author and
/// a reviewer, a task, and git landing mode on `main`.
struct Host {
    root: PathBuf,
    engine: Engine,
    host: Actor,
    author: Actor,
    reviewer: Actor,
}

impl Host {
    fn open(root: &Path, remote: Option<&str>) -> Host {
        let engine = Engine::open(root, crate::support::test_options(root)).expect("open");
        let h = Host {
            root: root.to_path_buf(),
            engine,
            host: Actor::orchestrator(id("host")),
            author: Actor::agent(id("alice")),
            reviewer: Actor::agent(id("bob")),
        };
        h.ok(
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"]}),
            &h.host,
        );
        h.ok(
            "agent.register",
            json!({"agent_id": "bob", "roles": ["reviewer"]}),
            &h.host,
        );
        h.ok(
            "task.create",
            json!({"task_id": "t1", "title": "t"}),
            &h.host,
        );
        h.ok(
            "workspace.configure",
            json!({"landing": {"mode": "git", "branch": "main", "remote": remote}}),
            &h.host,
        );
        h
    }

    fn call(&self, tool: &str, args: Value, actor: &Actor) -> Result<Value, ToolError> {
        self.engine.call(tool, args, actor)
    }

    fn ok(&self, tool: &str, args: Value, actor: &Actor) -> Value {
        self.call(tool, args.clone(), actor)
            .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
    }

    /// An approved proposal for `patch` (its author first claims `path`).
    fn approved(&self, path: &str, patch: &str) -> String {
        self.ok(
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 3600}),
            &self.author,
        );
        let pid = str_of(
            &self.ok(
                "proposal.create",
                json!({"task_id": "t1", "title": format!("Change {path}"), "summary_md": "s", "patch": patch}),
                &self.author,
            )["proposal"]["id"],
        );
        self.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &self.author,
        );
        self.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &self.reviewer,
        );
        pid
    }

    fn apply(&self, pid: &str) -> Result<Value, ToolError> {
        self.call(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &self.host,
        )
    }

    fn branch(&self) -> String {
        rev(&self.root, "refs/heads/main")
    }
}

fn rev(d: &Path, what: &str) -> String {
    git(d, &["rev-parse", what]).trim().to_owned()
}

fn new_file(path: &str, body: &str) -> String {
    format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n")
}

/// A bare repository on `main` holding `hello.txt` (and `src/lib.rs`),
/// made by pushing one commit from a scratch clone; its path.
fn bare_remote(top: &Path) -> PathBuf {
    bare_remote_with(
        top,
        &[("hello.txt", "hello\n"), ("src/lib.rs", "fn a() {}\n")],
    )
}

/// `top/remote.git`, a bare repository on `main` whose one commit holds
/// `files` (path, content), made in a scratch repository `top/seed`; its
/// path.
pub(crate) fn bare_remote_with(top: &Path, files: &[(&str, &str)]) -> PathBuf {
    let work = top.join("seed");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    for (path, body) in files {
        let p = work.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "base"]);
    let remote = top.join("remote.git");
    git(
        top,
        &[
            "clone",
            "-q",
            "--bare",
            "seed",
            remote.to_str().expect("utf-8"),
        ],
    );
    remote
}

/// Bare clones `NAME.git` of `top/remote.git`, one per name; their paths.
pub(crate) fn bare_clones(top: &Path, names: &[&str]) -> Vec<PathBuf> {
    names
        .iter()
        .map(|name| {
            let clone = top.join(format!("{name}.git"));
            git(
                top,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    "remote.git",
                    clone.to_str().expect("utf-8"),
                ],
            );
            clone
        })
        .collect()
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_bare_repository_lands_and_reverts_commits_and_writes_no_file() {
    let top = tempfile::tempdir().expect("tempdir");
    let bare = bare_remote(top.path());
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".roundtable")
            .collect();
        names.sort();
        names
    };
    let before = listing(&bare);
    let engine = Engine::open(&bare, crate::support::test_options(&bare)).expect("open");
    let host = Actor::orchestrator(id("host"));
    // No working tree: files mode is refused, and so is an apply before
    // git mode is set.
    let e = engine
        .call(
            "workspace.configure",
            json!({"landing": {"mode": "files"}}),
            &host,
        )
        .expect_err("files mode on a bare repository");
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    drop(engine);
    let h = Host::open(&bare, None);
    let base = h.branch();
    // Reads come from the branch's commit: a proposal is made, validated
    // and claimed against it; a directory claim names the git tree.
    let pid = h.approved(
        "hello.txt",
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, bare\n",
    );
    let claim = h.ok(
        "claim.acquire",
        json!({"resource_id": "directory:src", "type": "read", "ttl_s": 60}),
        &h.reviewer,
    );
    let tree = rev(&bare, "main:src");
    assert_eq!(
        claim["claim"]["base_digest"],
        json!(format!("git-tree:{tree}")),
        "{claim}"
    );
    // The revision's base is the branch's commit.
    let got = h.ok("proposal.get", json!({"proposal_id": pid}), &h.host);
    assert_eq!(got["revision"]["base_git_head"], json!(base), "{got}");
    let status = h.ok("proposal.status", json!({"proposal_id": pid}), &h.host);
    assert_eq!(status["stale"], false, "{status}");
    let out = h.apply(&pid).expect("applies");
    assert_eq!(out["transaction"]["status"], "applied");
    let tip = h.branch();
    assert_eq!(rev(&bare, "main^"), base);
    assert_eq!(git(&bare, &["show", "main:hello.txt"]), "hello, bare\n");
    assert!(git(&bare, &["log", "-1", "--format=%B", "main"])
        .contains(&format!("Roundtable-Proposal: {pid}")));
    // Nothing was written into the git directory but objects and refs.
    assert_eq!(listing(&bare), before);
    assert!(!bare.join("hello.txt").exists());
    fsck(&bare);

    // A rollback lands a revert commit the same way.
    let tid = str_of(&out["transaction"]["id"]);
    let back = h.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &h.host,
    );
    assert_eq!(back["transaction"]["status"], "applied");
    assert_eq!(rev(&bare, "main^"), tip);
    assert_eq!(git(&bare, &["show", "main:hello.txt"]), "hello\n");
    assert!(git(&bare, &["log", "-1", "--format=%B", "main"])
        .contains(&format!("Roundtable-Reverts: {tip}")));
    assert_eq!(listing(&bare), before);
    fsck(&bare);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_bare_repository_in_files_mode_refuses_to_apply_and_changes_nothing() {
    let top = tempfile::tempdir().expect("tempdir");
    let bare = bare_remote(top.path());
    let engine = Engine::open(&bare, crate::support::test_options(&bare)).expect("open");
    let host = Actor::orchestrator(id("host"));
    let alice = Actor::agent(id("alice"));
    let bob = Actor::agent(id("bob"));
    for (agent, role) in [("alice", "author"), ("bob", "reviewer")] {
        engine
            .call(
                "agent.register",
                json!({"agent_id": agent, "roles": [role]}),
                &host,
            )
            .expect("register");
    }
    engine
        .call("task.create", json!({"task_id": "t1", "title": "t"}), &host)
        .expect("task");
    let created = engine
        .call(
            "proposal.create",
            json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch": "--- a/HEAD\n+++ b/HEAD\n@@ -1 +1 @@\n-ref: refs/heads/main\n+ref: refs/heads/evil\n"}),
            &alice,
        )
        .expect_err("HEAD is not in the branch's tree");
    assert_eq!(created.code(), ErrorCode::PatchDoesNotApply, "{created}");
    let pid = str_of(
        &engine
            .call(
                "proposal.create",
                json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch": new_file("config", "[core]")}),
                &alice,
            )
            .expect("create")["proposal"]["id"],
    );
    engine
        .call(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &alice,
        )
        .expect("review");
    engine
        .call(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &bob,
        )
        .expect("vote");
    let config = std::fs::read(bare.join("config")).expect("config");
    let branch = rev(&bare, "refs/heads/main");
    let db = || {
        let row = crate::support::store_db(&bare)
            .ints("SELECT (SELECT count(*) FROM transactions), (SELECT max(seq) FROM events)");
        (row[0], row[1])
    };
    let rows = db();
    let e = engine
        .call(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &host,
        )
        .expect_err("no working tree");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(e.details()["bare"], true);
    assert_eq!(std::fs::read(bare.join("config")).expect("config"), config);
    assert_eq!(rev(&bare, "refs/heads/main"), branch);
    assert_eq!(db(), rows, "the refusal wrote to the store");
    fsck(&bare);
}

/// Apply `pid`, applying again while the remote's branch moves under it
/// (a lost push race is `precondition_failed`; applying again fetches
/// and lands on the new tip); how many tries it took.
fn apply_until_landed(h: &Host, pid: &str) -> u32 {
    for tries in 1..=50 {
        match h.apply(pid) {
            Ok(out) => {
                assert_eq!(out["transaction"]["status"], "applied");
                return tries;
            }
            Err(e) if e.code() == ErrorCode::PreconditionFailed => {
                assert!(e.details()["remote"].is_string(), "{e} {}", e.details());
            }
            Err(e) => panic!("{pid}: {e} {}", e.details()),
        }
    }
    panic!("{pid} did not land in 50 tries");
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn two_engines_on_two_bare_clones_land_disjoint_changes_all_once_on_a_linear_history() {
    let top = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(top.path());
    let base = rev(&remote, "refs/heads/main");
    let per_host: usize = std::env::var("RT_REMOTE_PROPOSALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let hosts: Vec<(String, PathBuf)> = ["a", "b"]
        .into_iter()
        .zip(bare_clones(top.path(), &["a", "b"]))
        .map(|(name, clone)| (name.to_owned(), clone))
        .collect();
    let retries: Vec<u32> = std::thread::scope(|scope| {
        let runs: Vec<_> = hosts
            .iter()
            .map(|(name, clone)| {
                scope.spawn(move || {
                    let h = Host::open(clone, Some("origin"));
                    let mut extra = 0;
                    for i in 0..per_host {
                        let path = format!("{name}/{i}.txt");
                        let pid = h.approved(&path, &new_file(&path, &format!("{name} {i}")));
                        extra += apply_until_landed(&h, &pid) - 1;
                    }
                    extra
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("host")).collect()
    });
    eprintln!("lost push races, retried: {retries:?}");
    // Every change landed exactly once, on one linear history.
    let log = git(&remote, &["rev-list", "--parents", "main"]);
    let commits: Vec<&str> = log.lines().collect();
    assert_eq!(commits.len(), 2 * per_host + 1);
    for line in &commits {
        assert!(line.split(' ').count() <= 2, "a merge: {line}");
    }
    assert_eq!(commits.last().map(|l| l.trim()), Some(base.as_str()));
    for (name, _) in &hosts {
        for i in 0..per_host {
            let path = format!("{name}/{i}.txt");
            assert_eq!(
                git(&remote, &["show", &format!("main:{path}")]),
                format!("{name} {i}\n")
            );
            let touching = git(&remote, &["log", "--format=%H", "main", "--", &path]);
            assert_eq!(touching.lines().count(), 1, "{path} landed more than once");
        }
    }
    // Each commit's note went with it in the same push, replayed or not
    // (the notes ref's history is linear too), and a fresh clone fetches
    // them.
    let landed = git(&remote, &["rev-list", "main", &format!("^{base}")]);
    let fresh = top.path().join("fresh");
    git(top.path(), &["clone", "-q", "remote.git", "fresh"]);
    git(
        &fresh,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/notes/agent-trace:refs/notes/agent-trace",
        ],
    );
    for commit in landed.lines() {
        let note: Value = serde_json::from_str(&git(
            &fresh,
            &["notes", "--ref", "agent-trace", "show", commit],
        ))
        .expect("a note is JSON");
        assert_eq!(note["vcs"]["revision"], commit);
    }
    assert_eq!(
        git(&remote, &["rev-list", "--merges", "refs/notes/agent-trace"]),
        ""
    );
    fsck(&remote);
    for (_, clone) in &hosts {
        fsck(clone);
        // Each clone's branch is on the remote's history.
        git(
            &remote,
            &[
                "merge-base",
                "--is-ancestor",
                &rev(clone, "refs/heads/main"),
                "main",
            ],
        );
    }
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn of_two_overlapping_changes_racing_to_the_remote_the_loser_is_refused_and_leaves_nothing() {
    let top = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(top.path());
    let clones = bare_clones(top.path(), &["a", "b"]);
    let hosts: Vec<Host> = clones
        .iter()
        .map(|c| Host::open(c, Some("origin")))
        .collect();
    let rounds = 12;
    let mut wins = [0, 0];
    for round in 0..rounds {
        // Both create the same file with their own content, from the
        // same remote commit, and apply at once.
        let path = format!("race/{round}.txt");
        let before = rev(&remote, "refs/heads/main");
        let pids: Vec<String> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| h.approved(&path, &new_file(&path, &format!("host {i}"))))
            .collect();
        let outcomes: Vec<Result<Value, ToolError>> = std::thread::scope(|scope| {
            let runs: Vec<_> = hosts
                .iter()
                .zip(&pids)
                .map(|(h, pid)| scope.spawn(move || h.apply(pid)))
                .collect();
            runs.into_iter().map(|r| r.join().expect("apply")).collect()
        });
        let winners: Vec<usize> = (0..2).filter(|i| outcomes[*i].is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let (winner, loser) = (winners[0], 1 - winners[0]);
        wins[winner] += 1;
        let e = outcomes[loser].as_ref().expect_err("the loser");
        assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
        // The remote holds the winner's change on top of the round's base,
        // and nothing of the loser's.
        let tip = rev(&remote, "refs/heads/main");
        assert_eq!(rev(&remote, "main^"), before);
        assert_eq!(
            git(&remote, &["show", &format!("main:{path}")]),
            format!("host {winner}\n")
        );
        // The loser's branch holds none of its change: at the round's
        // base or the winner's commit (fetched), nowhere else.
        let at = hosts[loser].branch();
        assert!(at == before || at == tip, "round {round}: loser at {at}");
        let proposal = hosts[loser].ok(
            "proposal.get",
            json!({"proposal_id": pids[loser]}),
            &hosts[loser].host,
        );
        assert_ne!(proposal["proposal"]["status"], "applied");
        // The refusal named what moved.
        let details = e.details();
        assert!(
            details["path"] == json!(path) || details["actual"].is_string(),
            "{details}"
        );
    }
    eprintln!("wins by host: {wins:?}");
    fsck(&remote);
}

/// A commit adding (or changing) `path` to `content` on top of the
/// remote's `main`, pushed to the remote's `refs/heads/winner` (not its
/// `main`): another host's landing, ready to win a race. Its id.
fn winner_commit(top: &Path, path: &str, content: &str) -> String {
    let other = top.join("other");
    if !other.exists() {
        git(top, &["clone", "-q", "remote.git", "other"]);
    }
    std::fs::write(other.join(path), content).expect("write");
    git(&other, &["add", path]);
    git(&other, &["commit", "-q", "-m", &format!("other: {path}")]);
    git(&other, &["push", "-q", "origin", "HEAD:refs/heads/winner"]);
    rev(&other, "HEAD")
}

/// Makes the remote's next push lose the race: its `pre-receive` hook
/// moves `main` to `refs/heads/winner` (as another host's push landing
/// just before) once, so the push's lease no longer holds when the
/// remote locks the branch.
fn lose_next_push(remote: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let marker = remote.join("race");
    std::fs::write(&marker, "").expect("marker");
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nif [ -f '{m}' ]; then\n  rm -f '{m}'\n  env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main refs/heads/winner\nfi\nexit 0\n",
            m = marker.display()
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `git status --porcelain` of a working tree (untracked included):
/// empty when the tree, the index and `HEAD` agree.
fn status(clone: &Path) -> String {
    git(clone, &["status", "--porcelain", "--untracked-files=all"])
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue34_item6_a_a_lost_push_race_is_replayed_onto_the_winners_commit() {
    let top = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(top.path());
    let clone = top.path().join("clone");
    git(top.path(), &["clone", "-q", "remote.git", "clone"]);
    let h = Host::open(&clone, Some("origin"));
    let base = rev(&remote, "refs/heads/main");
    let pid = h.approved(
        "hello.txt",
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, remote\n",
    );
    // Another host lands other.txt between this host's fetch and its push.
    let winner = winner_commit(top.path(), "other.txt", "other\n");
    lose_next_push(&remote);
    let out = h
        .apply(&pid)
        .expect("lands after replaying onto the winner");
    assert_eq!(out["transaction"]["status"], "applied");
    assert!(!remote.join("race").exists(), "the race was not run");
    // The remote: the winner, then the change replayed onto it, linear.
    let tip = rev(&remote, "refs/heads/main");
    assert_eq!(rev(&remote, "main^"), winner);
    assert_eq!(rev(&remote, "main^^"), base);
    assert_eq!(git(&remote, &["show", "main:hello.txt"]), "hello, remote\n");
    assert_eq!(git(&remote, &["show", "main:other.txt"]), "other\n");
    let message = git(&remote, &["log", "-1", "--format=%B", "main"]);
    let tid = str_of(&out["transaction"]["id"]);
    assert!(
        message.contains(&format!("Roundtable-Transaction: {tid}")),
        "{message}"
    );
    // The clone followed: branch, files and index at the remote's tip.
    assert_eq!(h.branch(), tip);
    assert_eq!(
        std::fs::read_to_string(clone.join("other.txt")).expect("the winner's file"),
        "other\n"
    );
    assert_eq!(status(&clone), "", "the clone is not clean");
    // The store's landing names the commit that landed: rolling it back
    // reverts that commit.
    let back = h.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &h.host,
    );
    assert_eq!(back["transaction"]["status"], "applied");
    assert_eq!(git(&remote, &["show", "main:hello.txt"]), "hello\n");
    assert_eq!(git(&remote, &["show", "main:other.txt"]), "other\n");
    let reverts = git(&remote, &["log", "-1", "--format=%B", "main"]);
    assert!(reverts.contains(&tip), "{reverts}");
    fsck(&remote);
    fsck(&clone);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue34_item6_b_a_lost_push_race_whose_winner_touched_the_change_is_refused_changing_nothing() {
    let top = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(top.path());
    let clone = top.path().join("clone");
    git(top.path(), &["clone", "-q", "remote.git", "clone"]);
    let h = Host::open(&clone, Some("origin"));
    let base = rev(&remote, "refs/heads/main");
    let pid = h.approved(
        "hello.txt",
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, remote\n",
    );
    let winner = winner_commit(top.path(), "hello.txt", "hello, winner\n");
    lose_next_push(&remote);
    let e = h
        .apply(&pid)
        .expect_err("stale: the winner changed hello.txt");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(e.details()["actual"], json!(winner), "{}", e.details());
    // Nothing of the change anywhere: the remote at the winner, the clone
    // at the base with its file back, the proposal not applied.
    assert_eq!(rev(&remote, "refs/heads/main"), winner);
    assert_eq!(h.branch(), base);
    assert_eq!(
        std::fs::read_to_string(clone.join("hello.txt")).expect("read"),
        "hello\n"
    );
    assert_eq!(status(&clone), "");
    let p = h.ok("proposal.get", json!({"proposal_id": pid}), &h.host);
    assert_ne!(p["proposal"]["status"], "applied");
    let t = h.ok("transaction.list", json!({}), &h.host);
    assert_eq!(t["transactions"][0]["status"], "recovered", "{t}");
    fsck(&remote);
    fsck(&clone);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue34_item6_c_a_clean_working_tree_behind_its_remote_is_brought_forward() {
    let top = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(top.path());
    let clone = top.path().join("clone");
    git(top.path(), &["clone", "-q", "remote.git", "clone"]);
    let h = Host::open(&clone, Some("origin"));
    let pid = h.approved(
        "hello.txt",
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, remote\n",
    );
    // Someone else pushes to the remote meanwhile.
    let other = top.path().join("other");
    git(top.path(), &["clone", "-q", "remote.git", "other"]);
    std::fs::write(other.join("other.txt"), "other\n").expect("write");
    std::fs::write(other.join("src/lib.rs"), "fn a() {}\nfn b() {}\n").expect("write");
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "other"]);
    git(&other, &["push", "-q", "origin", "main"]);
    let pushed = rev(&remote, "refs/heads/main");
    let local = h.branch();
    // Not clean where the remote's commits write (an untracked file in
    // the way): refused, nothing changed.
    std::fs::write(clone.join("other.txt"), "mine\n").expect("write");
    let e = h.apply(&pid).expect_err("an untracked file in the way");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(h.branch(), local, "the local branch moved");
    assert_eq!(rev(&remote, "refs/heads/main"), pushed);
    for (path, content) in [
        ("other.txt", "mine\n"),
        ("hello.txt", "hello\n"),
        ("src/lib.rs", "fn a() {}\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(clone.join(path)).expect("read"),
            content,
            "{path}"
        );
    }
    std::fs::remove_file(clone.join("other.txt")).expect("rm");
    // Clean: the engine brings the tree forward and the change lands on
    // the remote's tip; branch, working tree and index follow.
    let out = h.apply(&pid).expect("lands");
    assert_eq!(out["transaction"]["status"], "applied");
    let tip = rev(&remote, "refs/heads/main");
    assert_eq!(rev(&remote, "main^"), pushed);
    assert_eq!(h.branch(), tip);
    assert_eq!(git(&remote, &["show", "main:hello.txt"]), "hello, remote\n");
    for (path, content) in [
        ("other.txt", "other\n"),
        ("hello.txt", "hello, remote\n"),
        ("src/lib.rs", "fn a() {}\nfn b() {}\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(clone.join(path)).expect("read"),
            content,
            "{path}"
        );
    }
    assert_eq!(status(&clone), "");
    // A remote commit that changes a path the change touches: refused as
    // stale, nothing changed (the working tree stays behind).
    let pid = h.approved(
        "hello.txt",
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello, remote\n+hello again\n",
    );
    git(&other, &["pull", "-q", "--ff-only"]);
    std::fs::write(other.join("hello.txt"), "hello, other\n").expect("write");
    git(&other, &["commit", "-q", "-am", "other 2"]);
    git(&other, &["push", "-q", "origin", "main"]);
    let pushed = rev(&remote, "refs/heads/main");
    let e = h.apply(&pid).expect_err("stale");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(e.details()["actual"], json!(pushed), "{}", e.details());
    assert_eq!(h.branch(), tip);
    assert_eq!(
        std::fs::read_to_string(clone.join("hello.txt")).expect("read"),
        "hello, remote\n"
    );
    assert_eq!(status(&clone), "");
    fsck(&remote);
    fsck(&clone);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn workspace_configure_refuses_a_remote_it_cannot_push_to() {
    let top = tempfile::tempdir().expect("tempdir");
    bare_remote(top.path());
    let clone = top.path().join("clone");
    git(top.path(), &["clone", "-q", "remote.git", "clone"]);
    let engine = Engine::open(&clone, crate::support::test_options(&clone)).expect("open");
    let host = Actor::orchestrator(id("host"));
    for remote in [
        "https://example.com/repo.git",
        "git@example.com:repo.git",
        "nowhere",
        "../seed",
    ] {
        let e = engine
            .call(
                "workspace.configure",
                json!({"landing": {"mode": "git", "branch": "main", "remote": remote}}),
                &host,
            )
            .expect_err(remote);
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{remote}: {e}");
    }
    let e = engine
        .call(
            "workspace.configure",
            json!({"landing": {"mode": "files", "remote": "origin"}}),
            &host,
        )
        .expect_err("a remote in files mode");
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    let got = engine.call("workspace.get", json!({}), &host).expect("get");
    assert_eq!(got["landing"]["mode"], "files");
    // By name or by path, a bare repository with the branch is accepted.
    for remote in ["origin", "../remote.git"] {
        let set = engine
            .call(
                "workspace.configure",
                json!({"landing": {"mode": "git", "branch": "main", "remote": remote}}),
                &host,
            )
            .expect(remote);
        assert_eq!(set["landing"]["remote"], remote);
    }
}

/// The bytes of `d`'s loose ref file for `main` (`None` while it is
/// packed or absent).
fn loose_main(git_dir: &Path) -> Option<Vec<u8>> {
    std::fs::read(git_dir.join("refs/heads/main")).ok()
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_sigkilled_apply_through_a_remote_leaves_remote_branch_tree_and_store_agreeing() {
    const RUNS: usize = 30;
    // Prepared once: a bare remote, a working-tree clone whose origin is
    // named relative to it (so a copy of the pair is self-contained), an
    // engine pushing to origin, and an approved 200-file proposal.
    let prepared = tempfile::tempdir().expect("tempdir");
    let top = prepared.path();
    let remote = bare_remote(top);
    let work = top.join("seed");
    for i in 0..200 {
        std::fs::create_dir_all(work.join(format!("d{}", i % 10))).expect("mkdir");
        std::fs::write(
            work.join(format!("d{}/f{i}.txt", i % 10)),
            format!("file {i}\nline two\n"),
        )
        .expect("write");
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "files"]);
    git(&work, &["push", "-q", "../remote.git", "main"]);
    git(top, &["clone", "-q", "remote.git", "clone"]);
    let clone = top.join("clone");
    git(&clone, &["remote", "set-url", "origin", "../remote.git"]);
    let old = rev(&remote, "refs/heads/main");
    let pid = {
        let h = Host::open(&clone, Some("origin"));
        h.ok(
            "claim.acquire",
            json!({"resource_id": "directory:.", "type": "write", "ttl_s": 36000}),
            &h.author,
        );
        let patch: String = (0..200)
            .map(|i| {
                let p = format!("d{}/f{i}.txt", i % 10);
                format!("--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n file {i}\n-line two\n+line two, changed\n")
            })
            .collect();
        let pid = str_of(
            &h.ok(
                "proposal.create",
                json!({"task_id": "t1", "title": "Many", "summary_md": "s", "patch": patch}),
                &h.author,
            )["proposal"]["id"],
        );
        h.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &h.author,
        );
        h.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &h.reviewer,
        );
        pid
    };
    let copy = |to: &Path| {
        let status = std::process::Command::new("cp")
            .args(["-a", "--"])
            .arg(top.join("."))
            .arg(to)
            .status()
            .expect("cp");
        assert!(status.success());
        crate::support::copy_store(&top.join("clone"), &to.join("clone"));
    };
    let first = tempfile::tempdir().expect("tempdir");
    copy(first.path());
    let (child, _sync, _) = super::transactions::start_apply(&first.path().join("clone"), &pid);
    let t0 = std::time::Instant::now();
    super::transactions::check_worker(child, "uninterrupted apply through a remote");
    let full = t0.elapsed().max(std::time::Duration::from_millis(2));
    let new_tree = rev(&first.path().join("remote.git"), "main^{tree}");
    let (mut at_old, mut at_new, mut forward) = (0, 0, 0);
    for run in 0..RUNS {
        let dir = tempfile::tempdir().expect("tempdir");
        copy(dir.path());
        let (remote, clone) = (dir.path().join("remote.git"), dir.path().join("clone"));
        let (mut child, _sync, _) = super::transactions::start_apply(&clone, &pid);
        if run % 3 == 2 {
            // Right after the commit point: as soon as the remote's
            // branch moved.
            let before = loose_main(&remote);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while loose_main(&remote) == before && std::time::Instant::now() < deadline {
                if child.try_wait().expect("poll").is_some() {
                    break;
                }
            }
        } else {
            std::thread::sleep(
                full * u32::try_from(run).expect("small") / u32::try_from(RUNS).expect("small"),
            );
        }
        child.kill().ok();
        let _ = child.wait();
        let engine =
            Engine::open(&clone, crate::support::test_options(&clone)).expect("reopen recovers");
        let host = Actor::orchestrator(id("host"));
        let status = str_of(
            &engine
                .call("proposal.get", json!({"proposal_id": pid}), &host)
                .expect("get")["proposal"]["status"],
        );
        let txs = engine
            .call("transaction.list", json!({"proposal_id": pid}), &host)
            .expect("list")["transactions"]
            .clone();
        let tx_status = txs[0]["status"].as_str().map(str::to_owned);
        let tip = rev(&remote, "refs/heads/main");
        if tip == old {
            at_old += 1;
            assert_eq!(status, "in_review", "run {run}");
            assert!(
                matches!(tx_status.as_deref(), None | Some("recovered")),
                "run {run}: {tx_status:?}"
            );
        } else {
            at_new += 1;
            assert_eq!(rev(&remote, "main^"), old, "run {run}");
            assert_eq!(rev(&remote, "main^{tree}"), new_tree, "run {run}");
            assert_eq!(status, "applied", "run {run}");
            assert_eq!(tx_status.as_deref(), Some("applied"), "run {run}");
            let events = engine
                .call("events.list", json!({"since_seq": 0, "limit": 1000}), &host)
                .expect("events");
            forward += events["events"]
                .as_array()
                .expect("events")
                .iter()
                .filter(|e| e["kind"] == "transaction.applied" && e["data"]["recovered"] == true)
                .count();
        }
        // The clone's branch is the remote's, and its working tree and
        // index are that commit.
        assert_eq!(rev(&clone, "refs/heads/main"), tip, "run {run}");
        assert_eq!(
            git(&clone, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "run {run}: the working tree or index differs from {tip}"
        );
        assert_eq!(
            engine
                .call("events.verify", json!({}), &host)
                .expect("verify")["valid"],
            true,
            "run {run}"
        );
        fsck(&remote);
        fsck(&clone);
    }
    eprintln!(
        "remote crash test: {RUNS} SIGKILLed applies: {at_new} landed ({forward} brought forward on open), {at_old} did not"
    );
    assert_eq!(at_new + at_old, RUNS);
    assert!(
        forward > 0,
        "no run was killed between the push and the outcome"
    );
}

/// Objects `copy_objects` carries between repositories (a landing's push
/// and fetch) are written as git would write them: a small transfer as
/// loose objects (a pack per landing would pile up until git's automatic
/// gc starts in the background of the host's next git command, packing
/// refs under the feet of its fetches), a large one as one pack; and
/// either way the receiving repository passes `git fsck --strict` with
/// the branch fully connected.
#[cfg(feature = "git")] // it calls the libgit2 half directly
#[test]
fn a_small_transfer_is_loose_objects_and_a_large_one_is_one_pack() {
    use roundtable::landing::copy_objects;
    let top = tempfile::tempdir().expect("tempdir");
    let work = top.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(work.join("src")).expect("mkdir");
    std::fs::write(work.join("src/a.txt"), "a\n").expect("write");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "base"]);
    let base = rev(&work, "main");
    let to = top.path().join("to.git");
    git(top.path(), &["clone", "-q", "--bare", "work", "to.git"]);
    let packs = |d: &Path| {
        std::fs::read_dir(d.join("objects/pack"))
            .map(|r| {
                r.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pack"))
                })
                .count()
            })
            .unwrap_or(0)
    };
    let packs_before = packs(&to);
    let from_repo = git2::Repository::open(&work).expect("open");
    let to_repo = git2::Repository::open_bare(&to).expect("open");
    let oid = |s: &str| git2::Oid::from_str(s.trim()).expect("an id");

    // Three small commits, one of them in a new directory: loose objects.
    for i in 0..3 {
        std::fs::create_dir_all(work.join(format!("src/d{i}"))).expect("mkdir");
        std::fs::write(work.join(format!("src/d{i}/f.txt")), format!("{i}\n")).expect("write");
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", &format!("c{i}")]);
    }
    let tip = rev(&work, "main");
    copy_objects(&from_repo, &to_repo, oid(&tip), &[oid(&base)]).expect("copy");
    assert_eq!(packs(&to), packs_before, "a small transfer wrote a pack");
    git(&to, &["update-ref", "refs/heads/main", tip.trim()]);
    fsck(&to);
    // Copying again is a no-op.
    copy_objects(&from_repo, &to_repo, oid(&tip), &[oid(&base)]).expect("again");
    assert_eq!(packs(&to), packs_before);

    // 150 new files in one commit: one pack.
    for i in 0..150 {
        std::fs::write(work.join(format!("src/n{i}.txt")), format!("n{i}\n")).expect("write");
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "many"]);
    let big = rev(&work, "main");
    copy_objects(&from_repo, &to_repo, oid(&big), &[oid(&tip)]).expect("copy");
    assert_eq!(packs(&to), packs_before + 1, "a large transfer is one pack");
    git(&to, &["update-ref", "refs/heads/main", big.trim()]);
    fsck(&to);
    let listed = git(&to, &["rev-list", "--objects", "main"]);
    assert_eq!(listed, git(&work, &["rev-list", "--objects", "main"]));
}
