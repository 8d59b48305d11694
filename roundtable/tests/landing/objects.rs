//! The object half of git landing, step by step (see the parent module).

use super::git;
use roundtable::changeset::Changeset;
use roundtable::diff::{parse, ParseOptions};
use roundtable::landing::{self, Identity, LandingError, Trailer};
use roundtable::workspace::Workspace;
use roundtable::ErrorCode;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::process::Command;

/// A repository with `files` committed on `main`; its directory.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for (path, body) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    dir
}

fn who(name: &str) -> Identity {
    Identity {
        name: name.into(),
        email: format!("{name}@agents.roundtable"),
        seconds: 1_700_000_000,
        offset_minutes: 60,
    }
}

/// The changeset `patch` makes to the files at `dir`.
fn changeset(dir: &Path, patch: &[u8]) -> Changeset {
    let parsed = parse(patch, &ParseOptions::default()).expect("parse git's patch");
    let ws = Workspace::open(dir).expect("workspace");
    Changeset::from_patch(&parsed, &ws).expect("changeset")
}

/// A small xorshift generator: the trials are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn body(rng: &mut Rng, tag: usize) -> String {
    (0..1 + rng.below(12))
        .map(|l| format!("line {l} of {tag} {}\n", rng.below(1000)))
        .collect()
}

/// One random change to the work tree at `dir` (committed base: `files`).
fn change(dir: &Path, rng: &mut Rng, files: &mut Vec<String>, n: usize) {
    use std::os::unix::fs::PermissionsExt as _;
    let pick = |rng: &mut Rng, files: &Vec<String>| files[rng.below(files.len())].clone();
    match rng.below(9) {
        0 | 1 if !files.is_empty() => {
            let f = pick(rng, files);
            let p = dir.join(&f);
            if p.is_file() && !p.is_symlink() {
                let mut text = std::fs::read_to_string(&p).expect("read");
                text.push_str(&format!("added {n}\n"));
                std::fs::write(&p, text.replacen("line 0", "LINE 0", 1)).expect("write");
            }
        }
        2 => {
            let path = format!("d{}/e{}/new{n}.txt", rng.below(3), rng.below(2));
            let p = dir.join(&path);
            if !p.exists() && !p.parent().is_some_and(Path::is_file) {
                std::fs::create_dir_all(p.parent().expect("parent")).ok();
                if std::fs::write(&p, body(rng, n)).is_ok() {
                    files.push(path);
                }
            }
        }
        3 if !files.is_empty() => {
            let f = pick(rng, files);
            std::fs::remove_file(dir.join(&f)).ok();
            files.retain(|x| *x != f);
        }
        4 if !files.is_empty() => {
            let f = pick(rng, files);
            let to = format!("moved{n}/{}", f.rsplit('/').next().expect("name"));
            std::fs::create_dir_all(dir.join(format!("moved{n}"))).expect("mkdir");
            if std::fs::rename(dir.join(&f), dir.join(&to)).is_ok() {
                files.retain(|x| *x != f);
                files.push(to);
            }
        }
        5 if !files.is_empty() => {
            let p = dir.join(pick(rng, files));
            if p.is_file() && !p.is_symlink() {
                let mode = std::fs::metadata(&p).expect("stat").permissions().mode();
                let flipped = if mode & 0o100 == 0 { 0o755 } else { 0o644 };
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(flipped))
                    .expect("chmod");
            }
        }
        6 => {
            let path = format!("link{n}");
            let target = files.first().cloned().unwrap_or_else(|| "nowhere".into());
            std::os::unix::fs::symlink(target, dir.join(&path)).expect("symlink");
            files.push(path);
        }
        7 => {
            // A directory becomes a file.
            if let Some(f) = files.iter().find(|f| f.contains('/')).cloned() {
                let parent = f.rsplit_once('/').expect("a directory").0.to_owned();
                std::fs::remove_dir_all(dir.join(&parent)).expect("rm -r");
                std::fs::write(dir.join(&parent), body(rng, n)).expect("write");
                let under = format!("{parent}/");
                files.retain(|x| !x.starts_with(&under));
                files.push(parent);
            }
        }
        _ if !files.is_empty() => {
            // A file becomes a directory holding a file.
            let f = pick(rng, files);
            let p = dir.join(&f);
            if p.is_file() && !p.is_symlink() {
                std::fs::remove_file(&p).expect("rm");
                std::fs::create_dir(&p).expect("mkdir");
                std::fs::write(p.join("inside.txt"), body(rng, n)).expect("write");
                files.retain(|x| *x != f);
                files.push(format!("{f}/inside.txt"));
            }
        }
        _ => {}
    }
}

#[test]
fn a_commit_built_from_objects_has_the_tree_git_makes_of_the_same_change() {
    let trials: usize = std::env::var("RT_LANDING_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let mut compared = 0;
    for trial in 0..trials {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (trial as u64 + 1).wrapping_mul(0x2545_F491));
        let base: Vec<(String, String)> = (0..3 + rng.below(6))
            .map(|i| {
                let dir = ["", "src/", "src/deep/", "docs/"][rng.below(4)];
                (format!("{dir}f{i}.txt"), body(&mut rng, i))
            })
            .collect();
        let refs: Vec<(&str, &str)> = base.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
        let dir = repo(&refs);
        let d = dir.path();
        let head = git(d, &["rev-parse", "HEAD"]).trim().to_owned();
        let mut files: Vec<String> = base.iter().map(|(p, _)| p.clone()).collect();
        for n in 0..1 + rng.below(6) {
            change(d, &mut rng, &mut files, n);
        }
        git(d, &["add", "-A"]);
        let expected = git(d, &["write-tree"]).trim().to_owned();
        let patch = git(d, &["diff", "--cached", "--binary", "-M", "HEAD"]);
        git(d, &["reset", "-q", "--hard", "HEAD"]);
        git(d, &["clean", "-q", "-fdx"]);
        if patch.is_empty() {
            continue;
        }
        let cs = changeset(d, patch.as_bytes());
        let repo = git2::Repository::open(d).expect("open");
        let base_id = git2::Oid::from_str(&head).expect("oid");
        let built = landing::build_commit(&repo, base_id, &cs, "trial\n", &who("a"), &who("h"))
            .unwrap_or_else(|e| panic!("trial {trial}: {e}\n{patch}"));
        assert_eq!(
            built.tree.to_string(),
            expected,
            "trial {trial}: the trees differ for\n{patch}"
        );
        let parent = git(d, &["rev-parse", &format!("{}^", built.id)]);
        assert_eq!(parent.trim(), head, "trial {trial}: the parent is the base");
        git(d, &["fsck", "--strict", "--no-dangling"]);
        compared += 1;
    }
    assert!(
        compared * 2 >= trials,
        "only {compared} of {trials} trials made a change"
    );
}

#[test]
fn trailers_read_back_through_git_and_the_branch_moves_by_compare_and_swap() {
    let dir = repo(&[("hello.txt", "hello\n"), ("src/lib.rs", "fn a() {}\n")]);
    let d = dir.path();
    let head = git2::Oid::from_str(git(d, &["rev-parse", "HEAD"]).trim()).expect("oid");
    let patch = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n";
    let cs = changeset(d, patch.as_bytes());
    let message = landing::message(
        "Say hello",
        "Greets the world.",
        &[
            Trailer::new("Roundtable-Proposal", "p-1"),
            Trailer::new("Roundtable-Revision", "2"),
            Trailer::new("Roundtable-Transaction", "t-9"),
            Trailer::new("Approved-by", "agent:bob"),
            Trailer::new("Approved-by", "agent:carol"),
            Trailer::new("Checks", "unit=passed lint=passed"),
        ],
    )
    .expect("message");
    let repo = git2::Repository::open(d).expect("open");
    let built = landing::build_commit(&repo, head, &cs, &message, &who("alice"), &who("host"))
        .expect("build");
    // Built, not landed: the branch and the files are as they were.
    assert_eq!(repo.refname_to_id("refs/heads/main").expect("main"), head);
    let log = git(d, &["log", "-1", "--format=%B", &built.id.to_string()]);
    let trailers = Command::new("git")
        .args(["interpret-trailers", "--parse"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(log.as_bytes())?;
            child.wait_with_output()
        })
        .expect("git interpret-trailers");
    assert_eq!(
        String::from_utf8_lossy(&trailers.stdout),
        "Roundtable-Proposal: p-1\nRoundtable-Revision: 2\nRoundtable-Transaction: t-9\n\
         Approved-by: agent:bob\nApproved-by: agent:carol\nChecks: unit=passed lint=passed\n"
    );
    let who_line = git(
        d,
        &[
            "log",
            "-1",
            "--format=%an <%ae>|%cn <%ce>",
            &built.id.to_string(),
        ],
    );
    assert_eq!(
        who_line.trim(),
        "alice <alice@agents.roundtable>|host <host@agents.roundtable>"
    );

    // The branch moved since validation: refused, naming what it holds, and
    // left where it is.
    let other =
        landing::build_commit(&repo, head, &cs, "other\n", &who("x"), &who("h")).expect("build");
    landing::move_branch(&repo, "refs/heads/main", head, other.id, "elsewhere")
        .expect("first move");
    let e = landing::move_branch(&repo, "refs/heads/main", head, built.id, "land")
        .expect_err("the branch moved");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed);
    match &e {
        LandingError::BranchMoved {
            remote,
            branch,
            expected,
            actual,
        } => {
            assert_eq!(remote, &None);
            assert_eq!(branch, "refs/heads/main");
            assert_eq!(expected, &head.to_string());
            assert_eq!(actual.as_deref(), Some(other.id.to_string().as_str()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        repo.refname_to_id("refs/heads/main").expect("main"),
        other.id
    );
    // From the id it holds, it moves.
    landing::move_branch(&repo, "refs/heads/main", other.id, built.id, "land").expect("move");
    assert_eq!(git(d, &["rev-parse", "main"]).trim(), built.id.to_string());
    // A branch that does not exist is not created by a compare-and-swap.
    let e = landing::move_branch(&repo, "refs/heads/nope", head, built.id, "land")
        .expect_err("no such branch");
    assert!(
        matches!(e, LandingError::BranchMoved { actual: None, .. }),
        "{e:?}"
    );
    git(d, &["fsck", "--strict"]);
    // A bad identity is refused before anything is written.
    let mut bad = who("a");
    bad.email = "a>b".into();
    let e = landing::build_commit(&repo, head, &cs, "m\n", &bad, &who("h")).expect_err("bad");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

/// Write `cs`'s results into the work tree at `dir` (what the transaction
/// engine does, without its journal).
fn write_files(dir: &Path, cs: &Changeset) {
    use std::os::unix::fs::PermissionsExt as _;
    for f in cs.files() {
        let p = dir.join(f.path.as_str());
        if p.is_symlink() || p.is_file() {
            std::fs::remove_file(&p).expect("rm");
        }
        let Some(after) = &f.after else { continue };
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        if after.symlink {
            let target = std::ffi::OsStr::from_bytes(&after.data);
            std::os::unix::fs::symlink(target, &p).expect("symlink");
        } else {
            std::fs::write(&p, &after.data).expect("write");
            let mode = if after.executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
    }
}

#[test]
fn the_landing_steps_leave_branch_files_and_index_agreeing() {
    let dir = repo(&[
        ("hello.txt", "hello\n"),
        ("old.txt", "old\n"),
        ("notes.txt", "notes\n"),
        ("run.sh", "echo hi\n"),
    ]);
    let d = dir.path();
    let head = git2::Oid::from_str(git(d, &["rev-parse", "HEAD"]).trim()).expect("oid");
    // A local edit nobody proposed: it must stay local.
    std::fs::write(d.join("notes.txt"), "notes, edited locally\n").expect("write");
    let patch = "diff --git a/hello.txt b/hello.txt\n--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n\
diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n\
diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+fn new() {}\n\
diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
    let cs = changeset(d, patch.as_bytes());
    let repo = git2::Repository::open(d).expect("open");
    assert_eq!(
        landing::first_difference(&repo, head, &cs).expect("compare"),
        None
    );
    let built =
        landing::build_commit(&repo, head, &cs, "Land\n", &who("a"), &who("h")).expect("build");
    landing::move_branch(&repo, "refs/heads/main", head, built.id, "land").expect("move");
    write_files(d, &cs);
    landing::update_index(&repo, built.id, cs.files().iter().map(|f| &f.path)).expect("index");
    // Only the local edit differs from the branch; nothing is staged.
    assert_eq!(git(d, &["status", "--porcelain"]), " M notes.txt\n");
    assert_eq!(git(d, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(
        git(d, &["show", "--format=", "--name-status", "HEAD"]),
        "M\thello.txt\nD\told.txt\nM\trun.sh\nA\tsrc/new.rs\n"
    );
    git(d, &["fsck", "--strict"]);

    // A touched path whose file differs from the branch (an uncommitted
    // local edit the change was validated against) is found before
    // anything is built.
    let patch =
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-notes, edited locally\n+notes, proposed\n";
    let cs = changeset(d, patch.as_bytes());
    let tip = repo.refname_to_id("refs/heads/main").expect("main");
    assert_eq!(
        landing::first_difference(&repo, tip, &cs)
            .expect("compare")
            .map(|p| p.to_string()),
        Some("notes.txt".to_owned())
    );
    // A mode the branch does not have is a difference too.
    std::fs::write(d.join("notes.txt"), "notes\n").expect("write");
    std::fs::set_permissions(
        d.join("notes.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-notes\n+notes, proposed\n";
    let cs = changeset(d, patch.as_bytes());
    assert!(landing::first_difference(&repo, tip, &cs)
        .expect("compare")
        .is_some());
}

#[test]
fn recovery_clears_the_locks_a_killed_landing_left_and_no_other() {
    let dir = repo(&[("a.txt", "a\n")]);
    let r = git2::Repository::open(dir.path()).expect("open");
    let head = r.refname_to_id("refs/heads/main").expect("main");
    let lock = dir.path().join(".git/refs/heads/main.lock");
    // The killed landing's own lock (it holds the id it was writing) goes
    // at once, and the branch can move again.
    let ours = git2::Oid::from_str("1111111111111111111111111111111111111111").expect("oid");
    std::fs::write(&lock, format!("{ours}\n")).expect("write");
    let t = std::time::Instant::now();
    landing::clear_stale_lock(&r, "refs/heads/main", ours).expect("clear");
    assert!(!lock.exists());
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    // Another writer's lock (another id) stays.
    std::fs::write(&lock, format!("{head}\n")).expect("write");
    landing::clear_stale_lock(&r, "refs/heads/main", ours).expect("clear");
    assert!(lock.exists(), "another writer's lock was removed");
    // An empty one (killed between creating and writing it) goes once it
    // has stood longer than a live writer takes.
    std::fs::write(&lock, "").expect("write");
    landing::clear_stale_lock(&r, "refs/heads/main", ours).expect("clear");
    assert!(!lock.exists());
    // An index lock nobody touches goes; one that changes stays.
    let index_lock = dir.path().join(".git/index.lock");
    std::fs::write(&index_lock, "x").expect("write");
    landing::clear_stale_index_lock(&r).expect("clear");
    assert!(!index_lock.exists());
    std::fs::write(&index_lock, "x").expect("write");
    let writer = {
        let index_lock = index_lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::write(&index_lock, "xy").expect("write");
        })
    };
    landing::clear_stale_index_lock(&r).expect("clear");
    writer.join().expect("writer");
    assert!(
        index_lock.exists(),
        "a live writer's index lock was removed"
    );
}
