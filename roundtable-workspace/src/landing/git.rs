//! The shell half of git landing (the `git` feature): everything that
//! reads or writes a repository through libgit2. Its items are named at
//! [`crate::landing`].

use super::{trailers, BranchCommit, Identity, LandedCommit, LandingError, RemoteRefusal};
use crate::changeset::Changeset;
use crate::model::trace::NOTES_REF;
use git2::{FileMode, Oid, Repository};
use std::path::Path;

fn git(what: &'static str) -> impl FnOnce(git2::Error) -> LandingError {
    move |source| LandingError::Git { what, source }
}

/// The repository whose working tree (or git directory) is `root`.
pub fn open(root: &Path) -> Result<Repository, LandingError> {
    Repository::open(root).map_err(git("open the repository"))
}

impl Identity {
    fn signature(&self, field: &'static str) -> Result<git2::Signature<'static>, LandingError> {
        let bad = |s: &str| s.trim().is_empty() || s.contains(['<', '>', '\n']);
        if bad(&self.name) || bad(&self.email) {
            return Err(LandingError::InvalidInput {
                field,
                reason: "a name and an email, each one line without '<' or '>'".into(),
            });
        }
        git2::Signature::new(
            &self.name,
            &self.email,
            &git2::Time::new(self.seconds, self.offset_minutes),
        )
        .map_err(git("make a signature"))
    }
}

/// What [`build_commit`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The new commit's id.
    pub id: Oid,
    /// Its tree's id.
    pub tree: Oid,
}

/// Write the commit whose tree is `base`'s tree with `changeset` applied
/// (each resulting file a blob of its bytes, mode `100644`, `100755` or
/// `120000` for a link; each removed path gone), `base` its only parent.
/// Moves no ref.
pub fn build_commit(
    repo: &Repository,
    base: Oid,
    changeset: &Changeset,
    message: &str,
    author: &Identity,
    committer: &Identity,
) -> Result<Commit, LandingError> {
    let parent = repo
        .find_commit(base)
        .map_err(git("find the base commit"))?;
    let base_tree = parent.tree().map_err(git("read the base tree"))?;
    // Removals in a pass of their own, before any new entry: a path that
    // stops being a file and becomes a directory (or the reverse) cannot be
    // removed and re-added in one update (libgit2 refuses it as a
    // directory/file conflict).
    let mut removals = git2::build::TreeUpdateBuilder::new();
    let mut removed = false;
    for file in changeset.files().iter().filter(|f| f.after.is_none()) {
        removals.remove(file.path.as_str());
        removed = true;
    }
    let mid = if removed {
        let id = removals
            .create_updated(repo, &base_tree)
            .map_err(git("write the trees"))?;
        repo.find_tree(id).map_err(git("read a tree"))?
    } else {
        base_tree
    };
    let mut upserts = git2::build::TreeUpdateBuilder::new();
    for file in changeset.files() {
        let Some(after) = &file.after else { continue };
        let blob = repo.blob(&after.data).map_err(git("write a blob"))?;
        let mode = if after.symlink {
            FileMode::Link
        } else if after.executable {
            FileMode::BlobExecutable
        } else {
            FileMode::Blob
        };
        upserts.upsert(file.path.as_str(), blob, mode);
    }
    let tree_id = upserts
        .create_updated(repo, &mid)
        .map_err(git("write the trees"))?;
    let tree = repo.find_tree(tree_id).map_err(git("read the new tree"))?;
    let id = write_commit(
        repo,
        &author.signature("author")?,
        &committer.signature("committer")?,
        message,
        &tree,
        &parent,
    )?;
    Ok(Commit { id, tree: tree_id })
}

/// Write a commit object (one parent), signed when the repository's
/// configuration asks for it ([`signing_key`]). Moves no ref.
fn write_commit(
    repo: &Repository,
    author: &git2::Signature<'_>,
    committer: &git2::Signature<'_>,
    message: &str,
    tree: &git2::Tree<'_>,
    parent: &git2::Commit<'_>,
) -> Result<Oid, LandingError> {
    let Some(key) = signing_key(repo)? else {
        return repo
            .commit(None, author, committer, message, tree, &[parent])
            .map_err(git("write the commit"));
    };
    let buffer = repo
        .commit_create_buffer(author, committer, message, tree, &[parent])
        .map_err(git("write the commit"))?;
    let content = std::str::from_utf8(&buffer).map_err(|_| LandingError::InvalidInput {
        field: "message",
        reason: "a signed commit must be UTF-8".into(),
    })?;
    let signature = ssh_sign(&key, &buffer)?;
    repo.commit_signed(content, &signature, None)
        .map_err(git("write the signed commit"))
}

/// The SSH key landing commits are signed with: the repository's
/// `user.signingKey` when its configuration (with the user's and the
/// system's) sets `commit.gpgSign` and `gpg.format = ssh`, as for `git
/// commit -S`. `None`: commits are not signed. Only SSH signing is
/// supported: `commit.gpgSign` with another format is refused rather than
/// silently left unsigned.
pub fn signing_key(repo: &Repository) -> Result<Option<std::path::PathBuf>, LandingError> {
    let config = repo.config().map_err(git("read the configuration"))?;
    if !config.get_bool("commit.gpgsign").unwrap_or(false) {
        return Ok(None);
    }
    let format = config.get_string("gpg.format").unwrap_or_default();
    let key = config.get_path("user.signingkey").ok();
    match (format.as_str(), key) {
        ("ssh", Some(key)) => Ok(Some(key)),
        ("ssh", None) => Err(LandingError::InvalidInput {
            field: "user.signingKey",
            reason: "commit.gpgSign is set with gpg.format ssh but user.signingKey names no key file".into(),
        }),
        _ => Err(LandingError::InvalidInput {
            field: "gpg.format",
            reason: format!(
                "commit.gpgSign is set with gpg.format {:?}: roundtable signs landing commits with ssh keys only (gpg.format = ssh)",
                if format.is_empty() { "openpgp" } else { &format }
            ),
        }),
    }
}

/// `data` signed with the SSH key at `key` in git's namespace (`ssh-keygen
/// -Y sign -n git`, what `git commit -S` runs): the armored signature.
fn ssh_sign(key: &Path, data: &[u8]) -> Result<String, LandingError> {
    use std::io::Write as _;
    let fail = |what: String| git("sign the commit")(git2::Error::from_str(&what));
    let mut child = std::process::Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "git", "-f"])
        .arg(key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("run ssh-keygen: {e}")))?;
    let mut stdin = child.stdin.take().ok_or_else(|| fail("no stdin".into()))?;
    stdin
        .write_all(data)
        .map_err(|e| fail(format!("write to ssh-keygen: {e}")))?;
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| fail(format!("run ssh-keygen: {e}")))?;
    let signature = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || !signature.contains("BEGIN SSH SIGNATURE") {
        return Err(fail(format!(
            "ssh-keygen -Y sign with {}: {}",
            key.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(signature)
}

/// Whether commit `id` carries a signature by a key the repository's
/// `gpg.ssh.allowedSignersFile` allows (`git verify-commit`, with
/// `gpg.format = ssh`); `None` when no such file is configured (nothing to
/// check against).
pub fn signature_allowed(repo: &Repository, id: Oid) -> Result<Option<bool>, LandingError> {
    let config = repo.config().map_err(git("read the configuration"))?;
    let Ok(allowed) = config.get_path("gpg.ssh.allowedsignersfile") else {
        return Ok(None);
    };
    let mut cmd = std::process::Command::new("git");
    for var in LOCAL_ENV {
        cmd.env_remove(var);
    }
    let status = cmd
        .env("LC_ALL", "C")
        .arg("--git-dir")
        .arg(repo.path())
        .args(["-c", "gpg.format=ssh", "-c"])
        .arg(format!("gpg.ssh.allowedSignersFile={}", allowed.display()))
        .args(["verify-commit", &id.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| git("check a signature")(git2::Error::from_str(&e.to_string())))?;
    Ok(Some(status.success()))
}

/// How long a ref update waits for another writer's lock on the ref (git's
/// own `core.filesRefLockTimeout` default is 100 ms): several hosts push
/// to one remote.
const REF_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Move `branch` (a full ref name, `refs/heads/main`) from `expected` to
/// `new`, atomically: refused with [`LandingError::BranchMoved`] (naming
/// what it holds) when it is not at `expected`, and then nothing changed.
/// While another writer holds the ref's lock, it waits (up to two
/// seconds) for it.
pub fn move_branch(
    repo: &Repository,
    branch: &str,
    expected: Oid,
    new: Oid,
    reflog: &str,
) -> Result<(), LandingError> {
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    let mut moved = repo.reference_matching(branch, new, true, expected, reflog);
    while matches!(&moved, Err(e) if e.code() == git2::ErrorCode::Locked)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
        moved = repo.reference_matching(branch, new, true, expected, reflog);
    }
    match moved {
        Ok(_) => Ok(()),
        Err(e)
            if e.code() == git2::ErrorCode::Modified || e.code() == git2::ErrorCode::NotFound =>
        {
            let actual = repo.refname_to_id(branch).ok().map(|id| id.to_string());
            Err(LandingError::BranchMoved {
                remote: None,
                branch: branch.to_owned(),
                expected: expected.to_string(),
                actual,
            })
        }
        Err(e) => Err(git("move the branch")(e)),
    }
}

/// The repository `remote` names, to push a branch to and fetch it from:
/// a remote configured in `repo` (its URL) or a path, either of which
/// must be a bare repository on this machine's file system (`file://`
/// URLs included) — libgit2 is built here without network transports.
/// Returns it with its location as the details name it.
pub fn open_remote(repo: &Repository, remote: &str) -> Result<(Repository, String), LandingError> {
    let url = match repo.find_remote(remote) {
        Ok(r) => r
            .url()
            .map(str::to_owned)
            .map_err(|_| LandingError::InvalidInput {
                field: "remote",
                reason: format!("remote {remote:?} has no URL that is valid UTF-8"),
            })?,
        Err(_) => remote.to_owned(),
    };
    let path = url.strip_prefix("file://").unwrap_or(&url);
    if path.contains("://") || (path.contains(':') && !path.starts_with('/')) {
        return Err(LandingError::InvalidInput {
            field: "remote",
            reason: format!("{url} is not a path on this machine (only local bare repositories are supported as remotes)"),
        });
    }
    let base = repo.workdir().unwrap_or_else(|| repo.path());
    let at = base.join(path);
    let remote_repo = Repository::open_bare(&at).map_err(|e| LandingError::InvalidInput {
        field: "remote",
        reason: format!("{url} is not a bare repository: {}", e.message()),
    })?;
    Ok((remote_repo, url))
}

/// Transfers of fewer objects than this are written as loose objects, as
/// git's own fetch and receive write them (`fetch.unpackLimit`,
/// `receive.unpackLimit`: 100). A pack per landing would pile up in a
/// host's clone until git's automatic gc (`gc.autoPackLimit`: 50 packs)
/// starts in the background of the host's next git command, packing refs
/// under the feet of its fetches and of the next landing.
const UNPACK_LIMIT: usize = 100;

/// Copy into `to` every object reachable from `tip` in `from` that is not
/// reachable from `known` (ids `to` already has): what a push or fetch
/// transfers. A small transfer is written as loose objects, each only once
/// everything it refers to is there; a larger one as one pack. Either way
/// an object `to` has always comes with everything it refers to, which is
/// what lets an object already there end the walk.
pub fn copy_objects(
    from: &Repository,
    to: &Repository,
    tip: Oid,
    known: &[Oid],
) -> Result<(), LandingError> {
    let to_odb = to.odb().map_err(git("open the object store"))?;
    if to_odb.exists(tip) {
        return Ok(());
    }
    let walk = || -> Result<git2::Revwalk<'_>, LandingError> {
        let mut walk = from.revwalk().map_err(git("walk the history"))?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(git("walk the history"))?;
        walk.push(tip).map_err(git("walk the history"))?;
        for id in known {
            if from.find_commit(*id).is_ok() {
                walk.hide(*id).map_err(git("walk the history"))?;
            }
        }
        Ok(walk)
    };
    if let Some(missing) = missing_objects(from, &to_odb, walk()?, UNPACK_LIMIT)? {
        let from_odb = from.odb().map_err(git("open the object store"))?;
        for id in missing {
            let object = from_odb.read(id).map_err(git("read an object"))?;
            to_odb
                .write(object.kind(), object.data())
                .map_err(git("write an object"))?;
        }
        return Ok(());
    }
    let mut pack = from.packbuilder().map_err(git("build a pack"))?;
    pack.insert_walk(&mut walk()?)
        .map_err(git("build a pack"))?;
    let mut writer = to_odb.packwriter().map_err(git("write a pack"))?;
    let mut failed = None;
    pack.foreach(
        |chunk| match std::io::Write::write_all(&mut writer, chunk) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        },
    )
    .map_err(git("write a pack"))?;
    if let Some(e) = failed {
        return Err(git("write a pack")(git2::Error::from_str(&e.to_string())));
    }
    writer.commit().map_err(git("write a pack"))?;
    Ok(())
}

/// The objects of `commits` (parents first) that `to` lacks, each after
/// everything it refers to; `None` once there are `limit` of them.
fn missing_objects(
    from: &Repository,
    to: &git2::Odb<'_>,
    commits: git2::Revwalk<'_>,
    limit: usize,
) -> Result<Option<Vec<Oid>>, LandingError> {
    let mut missing = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for commit in commits {
        let commit = commit.map_err(git("walk the history"))?;
        let tree = from
            .find_commit(commit)
            .map_err(git("read a commit"))?
            .tree_id();
        // Depth first, each object after its children: (id, is a tree,
        // children pushed already).
        let mut stack = vec![(tree, true, false)];
        while let Some((id, is_tree, expanded)) = stack.pop() {
            if expanded {
                missing.push(id);
                if missing.len() >= limit {
                    return Ok(None);
                }
                continue;
            }
            if !seen.insert(id) || to.exists(id) {
                continue;
            }
            stack.push((id, is_tree, true));
            if is_tree {
                let tree = from.find_tree(id).map_err(git("read a tree"))?;
                for entry in tree.iter() {
                    match entry.kind() {
                        Some(git2::ObjectType::Tree) => stack.push((entry.id(), true, false)),
                        Some(git2::ObjectType::Blob) => stack.push((entry.id(), false, false)),
                        // A submodule's commit lives in its own repository.
                        _ => {}
                    }
                }
            }
        }
        missing.push(commit);
        if missing.len() >= limit {
            return Ok(None);
        }
    }
    Ok(Some(missing))
}

/// The configuration key whose value, on a push's command line, names
/// the transaction pushing: recovery finds a push its killed applier left
/// running by it ([`await_push`]). The remote's hooks can read it too
/// (`git config roundtable.landing`).
const PUSH_MARKER: &str = "roundtable.landing";

/// The environment variables that point git at a repository (`git
/// rev-parse --local-env-vars`): a push never inherits the host's.
const LOCAL_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    "GIT_QUARANTINE_PATH",
];

/// The most lines of the remote's messages a refusal carries.
const MAX_REMOTE_MESSAGES: usize = 20;

/// Push `new` to `branch` of `remote` with a lease, the way git pushes:
/// `git send-pack --force-with-lease=BRANCH:EXPECTED`, so the remote's
/// `git receive-pack` receives the objects and runs everything a push
/// runs there — `receive.fsckObjects`, `receive.denyNonFastForwards` and
/// the other `receive.*` settings, the `pre-receive` and `update` hooks —
/// and moves the branch from `expected` only (checked under its ref
/// lock). A branch that is not at `expected` is
/// [`LandingError::BranchMoved`] naming the remote, the ref and both ids;
/// any other refusal [`LandingError::RemoteRejected`] with the remote's
/// reason and messages; either way the remote's branch is unchanged
/// (objects a refused push sent are quarantined and dropped by git). A
/// refusal for another push's ref lock is retried for up to two seconds.
/// With `notes`, the notes ref ([`NOTES_REF`]) moves in the same atomic
/// push (both or neither), with its own lease: notes that moved while the
/// branch did not are [`LandingError::NotesMoved`].
/// `tag` (the transaction) marks the push's command line for
/// [`await_push`]. Needs `git` on `PATH`.
pub fn push(
    local: &Repository,
    remote: &Repository,
    location: &str,
    update: BranchUpdate<'_>,
    notes: Option<&NotesUpdate>,
    tag: &str,
) -> Result<(), LandingError> {
    let BranchUpdate {
        branch,
        expected,
        new,
    } = update;
    let io = |what: &'static str| {
        move |e: std::io::Error| git(what)(git2::Error::from_str(&e.to_string()))
    };
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    loop {
        let mut cmd = std::process::Command::new("git");
        for var in LOCAL_ENV {
            cmd.env_remove(var);
        }
        cmd.env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .arg("-c")
            .arg(format!("{PUSH_MARKER}={tag}"))
            .arg("--git-dir")
            .arg(local.path())
            .args(["send-pack", "--helper-status", "--atomic"])
            .arg(format!("--force-with-lease={branch}:{expected}"));
        if let Some(n) = notes {
            let was = n.expected.map(|id| id.to_string()).unwrap_or_default();
            cmd.arg(format!("--force-with-lease={NOTES_REF}:{was}"));
        }
        cmd.arg(remote.path()).arg(format!("{new}:{branch}"));
        if let Some(n) = notes {
            cmd.arg(format!("{}:{NOTES_REF}", n.new));
        }
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(io("run git send-pack"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut status = None;
        for line in stdout.lines() {
            if let Some(rest) = line.strip_prefix("ok ") {
                if rest.split(' ').next() == Some(branch) {
                    return Ok(());
                }
            } else if let Some(rest) = line.strip_prefix("error ") {
                if let Some(reason) = rest.strip_prefix(branch).and_then(|r| r.strip_prefix(' ')) {
                    status = Some(reason.trim().to_owned());
                }
            }
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let messages: Vec<String> = stderr
            .lines()
            .map(|l| l.strip_prefix("remote: ").unwrap_or(l).trim_end())
            .filter(|l| !l.is_empty() && !l.starts_with("To "))
            .take(MAX_REMOTE_MESSAGES)
            .map(|l| l.chars().take(500).collect())
            .collect();
        let status = status.unwrap_or_else(|| format!("the push failed ({})", out.status));
        // Where the remote's branch is now says what the refusal was.
        let actual = remote.refname_to_id(branch).ok();
        if let Some(tip) = actual.filter(|&tip| tip != expected) {
            if contains(remote, tip, new)? {
                return Ok(());
            }
        }
        if actual != Some(expected) {
            return Err(LandingError::BranchMoved {
                remote: Some(location.to_owned()),
                branch: branch.to_owned(),
                expected: expected.to_string(),
                actual: actual.map(|id| id.to_string()),
            });
        }
        if let Some(n) = notes {
            let notes_now = remote.refname_to_id(NOTES_REF).ok();
            if notes_now != n.expected {
                return Err(LandingError::NotesMoved {
                    remote: location.to_owned(),
                    expected: n.expected.map(|id| id.to_string()),
                    actual: notes_now.map(|id| id.to_string()),
                });
            }
        }
        if status.contains("lock") && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        return Err(LandingError::RemoteRejected(Box::new(RemoteRefusal {
            remote: location.to_owned(),
            branch: branch.to_owned(),
            status,
            messages,
        })));
    }
}

/// Wait (up to a minute) until no push [`push`] started for `tag` (a
/// transaction) is still running on this machine: one its applier left
/// when it was killed may yet move the remote's branch, and recovery must
/// not judge the transaction before it ends. Linux: the processes are
/// found by their command line in `/proc` (elsewhere it returns at once).
pub fn await_push(tag: &str) {
    let marker = format!("{PUSH_MARKER}={tag}");
    let running = || {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
                && std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == marker.as_bytes()))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Fetch `branch` of `remote` into `local`'s object store: the remote
/// branch's commit, now present here (`None`: no such branch there).
pub fn fetch(
    local: &Repository,
    remote: &Repository,
    branch: &str,
) -> Result<Option<Oid>, LandingError> {
    let Ok(tip) = remote.refname_to_id(branch) else {
        return Ok(None);
    };
    let known: Vec<Oid> = local.refname_to_id(branch).into_iter().collect();
    copy_objects(remote, local, tip, &known)?;
    Ok(Some(tip))
}

/// Write the tree of `branch`'s tip in `repo` into `dir` (an empty
/// directory outside the repository): the files a checkout of that commit
/// holds, links as links, executables executable. Neither the
/// repository's index nor its working tree, if any, is touched, so this
/// serves a bare repository too.
pub fn checkout_into(repo: &Repository, branch: &str, dir: &Path) -> Result<(), LandingError> {
    let tip = repo.refname_to_id(branch).map_err(git("read the branch"))?;
    let tree = repo
        .find_commit(tip)
        .and_then(|c| c.tree())
        .map_err(git("read the branch's tree"))?;
    let mut options = git2::build::CheckoutBuilder::new();
    options
        .target_dir(dir)
        .update_index(false)
        .force()
        .recreate_missing(true);
    repo.checkout_tree(tree.as_object(), Some(&mut options))
        .map_err(git("write the branch's tree"))
}

/// Whether `commit` is `tip` or one of its ancestors in `repo` (never,
/// when `repo` does not have it).
pub fn contains(repo: &Repository, tip: Oid, commit: Oid) -> Result<bool, LandingError> {
    if tip == commit {
        return Ok(true);
    }
    if !repo
        .odb()
        .map_err(git("open the object store"))?
        .exists(commit)
    {
        return Ok(false);
    }
    repo.graph_descendant_of(tip, commit)
        .map_err(git("compare histories"))
}

/// Remove the lock file a killed landing left on `branch` in `repo`
/// (called by recovery, under the apply lock). A lock that holds `ours`
/// — the id the killed landing was writing — is its own and goes at once;
/// an empty one (killed between creating and writing it) goes once it has
/// stood longer than any live writer takes; any other is another
/// writer's, waited for as a ref update waits, and then left alone.
pub fn clear_stale_lock(repo: &Repository, branch: &str, ours: Oid) -> Result<(), LandingError> {
    let lock = repo.commondir().join(format!("{branch}.lock"));
    let io =
        |e: std::io::Error| git("clear a stale ref lock")(git2::Error::from_str(&e.to_string()));
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    loop {
        let held = match std::fs::read(&lock) {
            Ok(held) => held,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        };
        let text = String::from_utf8_lossy(&held);
        let mine = text.trim() == ours.to_string();
        if mine || (held.is_empty() && std::time::Instant::now() >= deadline) {
            return match std::fs::remove_file(&lock) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                _ => Ok(()),
            };
        }
        if std::time::Instant::now() >= deadline {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Remove the `index.lock` a killed landing left in `repo` (called by
/// recovery, under the apply lock, before it stages the landed paths):
/// a lock that neither goes nor changes for as long as a ref update waits
/// has no live writer.
pub fn clear_stale_index_lock(repo: &Repository) -> Result<(), LandingError> {
    let lock = repo.path().join("index.lock");
    let io =
        |e: std::io::Error| git("clear a stale index lock")(git2::Error::from_str(&e.to_string()));
    let seen = |lock: &Path| {
        std::fs::metadata(lock)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let Some(first) = seen(&lock) else {
        return Ok(());
    };
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
        if seen(&lock) != Some(first) {
            return Ok(());
        }
    }
    match std::fs::remove_file(&lock) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
        _ => Ok(()),
    }
}

/// Bring the index of `repo` (which has a working tree) in line with
/// commit `landed` at `paths` (the paths a change touched, once its files
/// are written and the branch is at `landed`): a path the commit holds is
/// staged with the commit's blob id and mode and the stat data of the file
/// on disk (the blob is already written: nothing is hashed or compressed
/// again), a path it does not hold leaves the index. Written atomically
/// (`index.lock`, then a rename).
pub fn update_index<'p>(
    repo: &Repository,
    landed: Oid,
    paths: impl IntoIterator<Item = &'p crate::RepoPath>,
) -> Result<(), LandingError> {
    use std::os::unix::fs::MetadataExt as _;
    let workdir = repo.workdir().ok_or_else(|| LandingError::InvalidInput {
        field: "repository",
        reason: "has no working tree".into(),
    })?;
    let tree = repo
        .find_commit(landed)
        .and_then(|c| c.tree())
        .map_err(git("read the landed tree"))?;
    let mut index = repo.index().map_err(git("read the index"))?;
    for path in paths {
        let rel = Path::new(path.as_str());
        let entry = match tree.get_path(rel) {
            Ok(entry) => Some(entry),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(git("look up a path")(e)),
        };
        let on_disk = workdir.join(rel).symlink_metadata().ok();
        match (entry, on_disk) {
            (Some(entry), Some(meta)) if entry.kind() == Some(git2::ObjectType::Blob) => {
                // The index stores 32-bit stat fields, truncated as git does.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let time = |secs: i64, nanos: i64| git2::IndexTime::new(secs as i32, nanos as u32);
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let staged = git2::IndexEntry {
                    ctime: time(meta.ctime(), meta.ctime_nsec()),
                    mtime: time(meta.mtime(), meta.mtime_nsec()),
                    dev: meta.dev() as u32,
                    ino: meta.ino() as u32,
                    mode: entry.filemode() as u32,
                    uid: meta.uid(),
                    gid: meta.gid(),
                    file_size: meta.size() as u32,
                    id: entry.id(),
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_str().as_bytes().to_vec(),
                };
                index.add(&staged).map_err(git("stage a file"))?;
            }
            _ => match index.remove_path(rel) {
                Ok(()) => {}
                Err(e) if e.code() == git2::ErrorCode::NotFound => {}
                Err(e) => return Err(git("unstage a file")(e)),
            },
        }
    }
    index.write().map_err(git("write the index"))
}

/// The attributes through which git converts a path's bytes between the
/// working tree and the object store (`gitattributes(5)`).
const CONVERTING_ATTRIBUTES: &[&str] = &[
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];

/// Whether git may convert `path`'s bytes between the working tree of
/// `repo` and its object store: an attribute of
/// [`CONVERTING_ATTRIBUTES`] is set for it (by `.gitattributes` or
/// `info/attributes`), or `core.autocrlf` is `true` or `input`. Never for
/// a repository without a working tree (its changes are read from and
/// written as blobs), nor for a symbolic link.
fn converts(repo: &Repository, path: &str) -> Result<bool, LandingError> {
    if repo.workdir().is_none() {
        return Ok(false);
    }
    let config = repo.config().map_err(git("read the configuration"))?;
    if config
        .get_string("core.autocrlf")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "input"))
    {
        return Ok(true);
    }
    for name in CONVERTING_ATTRIBUTES {
        let value = repo
            .get_attr_bytes(Path::new(path), name, git2::AttrCheckFlags::FILE_THEN_INDEX)
            .map_err(git("read the attributes"))?;
        if value.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Run git on the working tree of `repo` with `input` on its standard
/// input (never the host's `GIT_DIR` and the like); its standard output.
fn run_git(repo: &Repository, args: &[&str], input: &[u8]) -> Result<Vec<u8>, LandingError> {
    use std::io::Write as _;
    let fail = |what: String| git("convert a file as git does")(git2::Error::from_str(&what));
    let workdir = repo
        .workdir()
        .ok_or_else(|| fail("no working tree".into()))?;
    let mut cmd = std::process::Command::new("git");
    for var in LOCAL_ENV {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("LC_ALL", "C")
        .arg("--git-dir")
        .arg(repo.path())
        .arg("--work-tree")
        .arg(workdir)
        .args(args)
        .current_dir(workdir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("run git {}: {e}", args[0])))?;
    let mut stdin = child.stdin.take().ok_or_else(|| fail("no stdin".into()))?;
    // Written on its own thread: git may answer before it read it all.
    let out = std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(input));
        let out = child.wait_with_output();
        let written = writer.join();
        (out, written)
    });
    let out = out
        .0
        .map_err(|e| fail(format!("run git {}: {e}", args[0])))?;
    if !out.status.success() {
        return Err(fail(format!(
            "git {} failed: {}",
            args[0],
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// The blob `git add` makes of `data` at `path` (its clean filters and
/// line-ending conversion applied), written to `repo`'s object store.
fn clean(repo: &Repository, path: &str, data: &[u8]) -> Result<Oid, LandingError> {
    let out = run_git(
        repo,
        &["hash-object", "-w", "--stdin", &format!("--path={path}")],
        data,
    )?;
    Oid::from_str(String::from_utf8_lossy(&out).trim()).map_err(git("read a blob id"))
}

/// What `git checkout` writes at `path` for blob `blob` (its smudge
/// filters and line-ending conversion applied).
fn smudge(repo: &Repository, path: &str, blob: Oid) -> Result<Vec<u8>, LandingError> {
    run_git(
        repo,
        &[
            "cat-file",
            "--filters",
            &format!("--path={path}"),
            &blob.to_string(),
        ],
        &[],
    )
}

/// A change to a working tree in the two forms git gives a file's bytes.
#[derive(Debug, Clone)]
pub struct Converted {
    /// As the commit stores it: each file as `git add` would make its blob.
    pub blobs: Changeset,
    /// As the working tree holds it after the landing: each file as `git
    /// checkout` of the landed commit writes it.
    pub worktree: Changeset,
}

/// `changeset` (a change to the working tree of `repo`, its files in
/// working-tree form) converted as git converts files
/// (`gitattributes(5)`: `text`, `eol`, `core.autocrlf`, filter drivers,
/// `ident`, `working-tree-encoding`): each resulting file's blob is what
/// `git add` makes of it, and the working tree gets what `git checkout` of
/// that blob writes — so after the landing `git status` is clean and the
/// tree is what a checkout of the landed commit would be. `None` when no
/// touched path is converted (the bytes are the blobs, as they are): then
/// no `git` process runs. Needs `git` on `PATH` otherwise.
pub fn convert(
    repo: &Repository,
    changeset: &Changeset,
) -> Result<Option<Converted>, LandingError> {
    let mut converting = false;
    let mut blobs = Vec::new();
    let mut worktree = Vec::new();
    for file in changeset.files() {
        let mut blob_form = file.clone();
        let mut tree_form = file.clone();
        if let Some(after) = file.after.as_ref().filter(|a| !a.symlink) {
            let path = file.path.as_str();
            if converts(repo, path)? {
                converting = true;
                let id = clean(repo, path, &after.data)?;
                let stored = repo.find_blob(id).map_err(git("read a blob"))?;
                if let Some(a) = blob_form.after.as_mut() {
                    a.data = stored.content().to_vec();
                }
                let written = smudge(repo, path, id)?;
                if let Some(a) = tree_form.after.as_mut() {
                    a.data = written;
                }
            }
        }
        blobs.push(blob_form);
        worktree.push(tree_form);
    }
    if !converting {
        return Ok(None);
    }
    let whole = |files| {
        Changeset::new(files).map_err(|e: crate::changeset::DuplicatePath| {
            LandingError::InvalidInput {
                field: "changeset",
                reason: e.to_string(),
            }
        })
    };
    Ok(Some(Converted {
        blobs: whole(blobs)?,
        worktree: whole(worktree)?,
    }))
}

/// Whether each path `changeset` touches is, in `base`'s tree, what the
/// changeset's precondition says (the same bytes and mode, or absent; for
/// a path git converts, the bytes `git checkout` writes): a
/// change validated against the working tree lands on the branch only when
/// the branch holds what it was validated against there, so the commit is
/// the change and nothing else (no uncommitted local edit rides along).
/// The first path that differs, or `None`.
pub fn first_difference(
    repo: &Repository,
    base: Oid,
    changeset: &Changeset,
) -> Result<Option<crate::RepoPath>, LandingError> {
    let tree = repo
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(git("read the base tree"))?;
    for file in changeset.files() {
        let entry = match tree.get_path(Path::new(file.path.as_str())) {
            Ok(entry) => Some(entry),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(git("look up a path")(e)),
        };
        let same = match (&file.before, entry) {
            (None, None) => true,
            (Some(meta), Some(entry)) => {
                let mode = entry.filemode();
                let mode_ok = if meta.symlink {
                    mode == i32::from(FileMode::Link)
                } else if meta.executable {
                    mode == i32::from(FileMode::BlobExecutable)
                } else {
                    mode == i32::from(FileMode::Blob)
                };
                // In working-tree form: what `git checkout` writes there.
                let written = if !meta.symlink && converts(repo, file.path.as_str())? {
                    Some(smudge(repo, file.path.as_str(), entry.id())?)
                } else {
                    None
                };
                mode_ok
                    && match written {
                        Some(bytes) => crate::Digest::of(&bytes) == meta.digest,
                        None => repo
                            .find_blob(entry.id())
                            .is_ok_and(|b| crate::Digest::of(b.content()) == meta.digest),
                    }
            }
            _ => false,
        };
        if !same {
            return Ok(Some(file.path.clone()));
        }
    }
    Ok(None)
}

/// The newest `limit` commits on `branch` (first parents, newest first) of
/// the repository at `root` that roundtable landed: those whose message
/// carries a `Roundtable-Proposal` trailer.
pub fn landed_commits(
    root: &Path,
    branch: &str,
    limit: usize,
) -> Result<Vec<LandedCommit>, LandingError> {
    let repo = open(root)?;
    let tip = repo.refname_to_id(branch).map_err(git("read the branch"))?;
    let mut walk = repo.revwalk().map_err(git("walk the history"))?;
    walk.push(tip).map_err(git("walk the history"))?;
    walk.simplify_first_parent()
        .map_err(git("walk the history"))?;
    let mut out = Vec::new();
    for oid in walk {
        if out.len() >= limit {
            break;
        }
        let oid = oid.map_err(git("walk the history"))?;
        let commit = repo.find_commit(oid).map_err(git("read a commit"))?;
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        let trailers = trailers(commit.message_bytes());
        if !trailers.iter().any(|(k, _)| k == "Roundtable-Proposal") {
            continue;
        }
        let author = commit.author();
        out.push(LandedCommit {
            id: oid.to_string(),
            summary: message.lines().next().unwrap_or_default().to_owned(),
            author: format!(
                "{} <{}>",
                String::from_utf8_lossy(author.name_bytes()),
                String::from_utf8_lossy(author.email_bytes())
            ),
            trailers,
        });
    }
    Ok(out)
}

/// The entry (id and mode) at `path` in `tree`, `None` when it has none.
fn entry_at(tree: &git2::Tree<'_>, path: &str) -> Result<Option<(Oid, i32)>, LandingError> {
    match tree.get_path(Path::new(path)) {
        Ok(entry) => Ok(Some((entry.id(), entry.filemode()))),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git("look up a path")(e)),
    }
}

/// The tree of commit `id`.
fn tree_of(repo: &Repository, id: Oid) -> Result<git2::Tree<'_>, LandingError> {
    repo.find_commit(id)
        .and_then(|c| c.tree())
        .map_err(git("read a commit's tree"))
}

/// The first of `paths` whose entry (blob id and mode, or absence)
/// differs between commits `a` and `b` of `repo`, or `None`: whether the
/// commits between two tips touched any path a change touches.
pub fn first_changed<'p>(
    repo: &Repository,
    a: Oid,
    b: Oid,
    paths: impl IntoIterator<Item = &'p crate::RepoPath>,
) -> Result<Option<crate::RepoPath>, LandingError> {
    let (ta, tb) = (tree_of(repo, a)?, tree_of(repo, b)?);
    for path in paths {
        if entry_at(&ta, path.as_str())? != entry_at(&tb, path.as_str())? {
            return Ok(Some(path.clone()));
        }
    }
    Ok(None)
}

/// Every path whose file differs between the trees of commits `from` and
/// `to` of `repo` (added, removed, or changed in bytes or mode), as `git
/// diff --no-renames --name-only FROM TO` lists them. A path that is not
/// a repository path roundtable can write (not UTF-8, a submodule) is
/// [`LandingError::InvalidInput`].
pub fn changed_paths(
    repo: &Repository,
    from: Oid,
    to: Oid,
) -> Result<Vec<crate::RepoPath>, LandingError> {
    let (tf, tt) = (tree_of(repo, from)?, tree_of(repo, to)?);
    let diff = repo
        .diff_tree_to_tree(Some(&tf), Some(&tt), None)
        .map_err(git("compare two trees"))?;
    let mut out = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if file.mode() == git2::FileMode::Commit {
                return Err(LandingError::InvalidInput {
                    field: "branch",
                    reason: "the commits between the two tips change a submodule".into(),
                });
            }
        }
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .and_then(Path::to_str)
            .and_then(|p| p.parse::<crate::RepoPath>().ok())
            .ok_or_else(|| LandingError::InvalidInput {
                field: "branch",
                reason: "the commits between the two tips change a path that is not UTF-8".into(),
            })?;
        out.push(path);
    }
    Ok(out)
}

/// The file at `path` in commit `commit` as a working tree holds it (what
/// `git checkout` writes: its smudge filters and line-ending conversion
/// applied; a link's target), `None` when the commit has no file there.
pub fn worktree_file(
    repo: &Repository,
    commit: Oid,
    path: &crate::RepoPath,
) -> Result<Option<crate::changeset::FileContent>, LandingError> {
    let tree = tree_of(repo, commit)?;
    let Some((id, mode)) = entry_at(&tree, path.as_str())? else {
        return Ok(None);
    };
    let symlink = mode == i32::from(FileMode::Link);
    let executable = mode == i32::from(FileMode::BlobExecutable);
    if !(symlink || executable || mode == i32::from(FileMode::Blob)) {
        return Ok(None);
    }
    let data = if !symlink && converts(repo, path.as_str())? {
        smudge(repo, path.as_str(), id)?
    } else {
        repo.find_blob(id)
            .map_err(git("read a blob"))?
            .content()
            .to_vec()
    };
    Ok(Some(crate::changeset::FileContent {
        data,
        executable,
        symlink,
    }))
}

/// Commit `commit` (a landing's, whose only parent is an older tip of the
/// branch) replayed onto `onto`: a commit with its message, author and
/// committer, `onto` its only parent, and `onto`'s tree with each of
/// `paths` (the paths the change touches) as `commit` has it — present
/// with its blob and mode, or absent. What `git rebase` makes of it when
/// the commits between the two tips touch none of `paths` (the caller
/// checks with [`first_changed`]). Moves no ref.
pub fn replay<'p>(
    repo: &Repository,
    commit: Oid,
    onto: Oid,
    paths: impl IntoIterator<Item = &'p crate::RepoPath> + Clone,
) -> Result<Oid, LandingError> {
    let original = repo.find_commit(commit).map_err(git("read a commit"))?;
    let source = original.tree().map_err(git("read a commit's tree"))?;
    let parent = repo.find_commit(onto).map_err(git("read a commit"))?;
    let base = parent.tree().map_err(git("read a commit's tree"))?;
    // Removals first, as `build_commit` does (a file that becomes a
    // directory, or the reverse).
    let mut removals = git2::build::TreeUpdateBuilder::new();
    let mut upserts = git2::build::TreeUpdateBuilder::new();
    for path in paths {
        match entry_at(&source, path.as_str())? {
            Some((id, mode)) => {
                let mode = match mode {
                    m if m == i32::from(FileMode::Link) => FileMode::Link,
                    m if m == i32::from(FileMode::BlobExecutable) => FileMode::BlobExecutable,
                    _ => FileMode::Blob,
                };
                upserts.upsert(path.as_str(), id, mode);
            }
            None => {
                removals.remove(path.as_str());
            }
        }
    }
    let mid = removals
        .create_updated(repo, &base)
        .map_err(git("write the trees"))?;
    let mid = repo.find_tree(mid).map_err(git("read a tree"))?;
    let tree = upserts
        .create_updated(repo, &mid)
        .map_err(git("write the trees"))?;
    let tree = repo.find_tree(tree).map_err(git("read the new tree"))?;
    let message = original
        .message_raw()
        .map_err(|_| LandingError::InvalidInput {
            field: "message",
            reason: "the landing's commit message is not UTF-8".into(),
        })?;
    let (author, committer) = (original.author(), original.committer());
    write_commit(repo, &author, &committer, message, &tree, &parent)
}

/// Remove the lock file on `branch` (`refs/heads/main.lock`) that a
/// killed push left in `repo` (a remote), when it is abandoned: it was
/// last written longer than `older_than` ago (git holds a ref lock for
/// the moment it moves the ref, and a push's hooks for seconds), and
/// neither it nor the ref changes while it is watched (for as long as a
/// ref update waits for a lock). While it stands, every push to the
/// branch fails (`RemoteRejected`, "cannot lock ref"). Whether it
/// removed one.
pub fn clear_abandoned_lock(
    repo: &Repository,
    branch: &str,
    older_than: std::time::Duration,
) -> Result<bool, LandingError> {
    let lock = repo.commondir().join(format!("{branch}.lock"));
    let io = |e: std::io::Error| {
        git("clear an abandoned ref lock")(git2::Error::from_str(&e.to_string()))
    };
    let seen = |lock: &Path| {
        std::fs::metadata(lock)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let Some(first) = seen(&lock) else {
        return Ok(false);
    };
    let old_enough = first
        .1
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age >= older_than);
    if !old_enough {
        return Ok(false);
    }
    let tip = repo.refname_to_id(branch).ok();
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        if seen(&lock) != Some(first) || repo.refname_to_id(branch).ok() != tip {
            return Ok(false);
        }
    }
    match std::fs::remove_file(&lock) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(e)),
    }
}

/// A move of a branch by compare-and-swap: `branch` (a full ref name)
/// from `expected` to `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchUpdate<'a> {
    /// The full ref name.
    pub branch: &'a str,
    /// Where it is expected to be.
    pub expected: Oid,
    /// Where it moves to.
    pub new: Oid,
}

/// A move of the notes ref ([`NOTES_REF`]) that goes with a landing:
/// from `expected` (`None`: it does not exist yet) to `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotesUpdate {
    /// Where the ref is expected to be.
    pub expected: Option<Oid>,
    /// The notes commit it moves to.
    pub new: Oid,
}

/// The notes ref's commit in `repo`, `None` when it has none.
pub fn notes_tip(repo: &Repository) -> Option<Oid> {
    repo.refname_to_id(NOTES_REF).ok()
}

/// The notes commit that adds `notes` (each a landed commit and its
/// note's bytes) to the notes at `parent` (`None`: no notes yet), its only
/// parent: each note a blob named by the commit's full id at the top of
/// the tree, replacing the commit's note wherever the tree held it (git
/// fans a large notes tree out into `ab/cdef…` directories; both forms
/// are read by `git notes`). Moves no ref.
pub fn build_notes(
    repo: &Repository,
    parent: Option<Oid>,
    notes: &[(Oid, Vec<u8>)],
) -> Result<Oid, LandingError> {
    let parent = parent
        .map(|id| repo.find_commit(id))
        .transpose()
        .map_err(git("read the notes commit"))?;
    let base = match &parent {
        Some(p) => p.tree().map_err(git("read the notes tree"))?,
        None => {
            let empty = repo
                .treebuilder(None)
                .and_then(|b| b.write())
                .map_err(git("write the notes tree"))?;
            repo.find_tree(empty).map_err(git("read the notes tree"))?
        }
    };
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (commit, bytes) in notes {
        let hex = commit.to_string();
        let fanned = format!("{}/{}", &hex[..2], &hex[2..]);
        if base.get_path(Path::new(&fanned)).is_ok() {
            update.remove(fanned);
        }
        let blob = repo.blob(bytes).map_err(git("write a note"))?;
        update.upsert(hex, blob, FileMode::Blob);
    }
    let tree = update
        .create_updated(repo, &base)
        .map_err(git("write the notes tree"))?;
    let tree = repo.find_tree(tree).map_err(git("read the notes tree"))?;
    let who = git2::Signature::now("roundtable", "roundtable@localhost")
        .map_err(git("make a signature"))?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(
        None,
        &who,
        &who,
        "Notes added by roundtable\n",
        &tree,
        &parents,
    )
    .map_err(git("write the notes commit"))
}

/// Move the notes ref of `repo` from `expected` (`None`: absent) to
/// `new` by compare-and-swap: [`LandingError::NotesMoved`] when it is
/// elsewhere, and nothing changed.
pub fn move_notes(repo: &Repository, expected: Option<Oid>, new: Oid) -> Result<(), LandingError> {
    let moved = match expected {
        Some(old) => repo
            .reference_matching(NOTES_REF, new, true, old, "roundtable: notes")
            .map(drop),
        None => repo
            .reference(NOTES_REF, new, false, "roundtable: notes")
            .map(drop),
    };
    match moved {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::Modified
                    | git2::ErrorCode::NotFound
                    | git2::ErrorCode::Exists
                    | git2::ErrorCode::Locked
            ) =>
        {
            Err(LandingError::NotesMoved {
                remote: String::new(),
                expected: expected.map(|id| id.to_string()),
                actual: notes_tip(repo).map(|id| id.to_string()),
            })
        }
        Err(e) => Err(git("move the notes ref")(e)),
    }
}

/// Add to the notes ref of `repo` each of `notes` (a commit and its
/// note's bytes) whose commit has no note there yet, in one notes commit
/// moved by compare-and-swap (retried on a moved ref a few times). How
/// many it added.
pub fn add_missing_notes(
    repo: &Repository,
    notes: &[(Oid, Vec<u8>)],
) -> Result<usize, LandingError> {
    let mut attempt = 0;
    loop {
        let tip = notes_tip(repo);
        let missing: Vec<(Oid, Vec<u8>)> = notes
            .iter()
            .filter(|(commit, _)| note(repo, *commit).ok().flatten().is_none())
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let new = build_notes(repo, tip, &missing)?;
        match move_notes(repo, tip, new) {
            Ok(()) => return Ok(missing.len()),
            Err(LandingError::NotesMoved { .. }) if attempt < 10 => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The note of `commit` under the notes ref of `repo` (its bytes), `None`
/// when it has none.
pub fn note(repo: &Repository, commit: Oid) -> Result<Option<Vec<u8>>, LandingError> {
    match repo.find_note(Some(NOTES_REF), commit) {
        Ok(n) => {
            let blob = repo.find_blob(n.id()).map_err(git("read a note"))?;
            Ok(Some(blob.content().to_vec()))
        }
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git("read a note")(e)),
    }
}

/// Fetch the notes ref of `remote` into `local`'s object store: its
/// commit, now present here (`None`: the remote has no notes).
pub fn fetch_notes(local: &Repository, remote: &Repository) -> Result<Option<Oid>, LandingError> {
    let Some(tip) = notes_tip(remote) else {
        return Ok(None);
    };
    let known: Vec<Oid> = notes_tip(local).into_iter().collect();
    copy_objects(remote, local, tip, &known)?;
    Ok(Some(tip))
}

/// Bring the notes ref of `local` forward to `tip` (a notes commit it
/// has): when it has no notes, or its notes commit is `tip`'s ancestor.
/// Notes of its own the remote lacks are left as they are.
pub fn follow_notes(local: &Repository, tip: Oid) -> Result<(), LandingError> {
    let here = notes_tip(local);
    match here {
        Some(h) if h == tip || !contains(local, tip, h)? => Ok(()),
        _ => match move_notes(local, here, tip) {
            Err(LandingError::NotesMoved { .. }) => Ok(()),
            other => other,
        },
    }
}

/// The first-parent history of `branch` in the repository at `root`,
/// newest first, down to (not including) `since` (a revision git can
/// resolve: an id, a tag, `main~10`) or the root, at most `limit`
/// commits: each with its trailers and its note under [`NOTES_REF`].
/// Whether more commits were left beyond `limit`.
pub fn branch_history(
    root: &Path,
    branch: &str,
    since: Option<&str>,
    limit: usize,
) -> Result<(Vec<BranchCommit>, bool), LandingError> {
    let repo = open(root)?;
    let tip = repo.refname_to_id(branch).map_err(git("read the branch"))?;
    let mut walk = repo.revwalk().map_err(git("walk the history"))?;
    walk.push(tip).map_err(git("walk the history"))?;
    walk.simplify_first_parent()
        .map_err(git("walk the history"))?;
    if let Some(since) = since {
        let stop = repo
            .revparse_single(since)
            .and_then(|o| o.peel_to_commit())
            .map_err(|e| LandingError::InvalidInput {
                field: "since",
                reason: format!("{since:?} names no commit: {}", e.message()),
            })?;
        walk.hide(stop.id()).map_err(git("walk the history"))?;
    }
    let mut out = Vec::new();
    for oid in walk {
        if out.len() >= limit {
            return Ok((out, true));
        }
        let oid = oid.map_err(git("walk the history"))?;
        let commit = repo.find_commit(oid).map_err(git("read a commit"))?;
        out.push(BranchCommit {
            signed: signature_allowed(&repo, oid)?,
            id: oid.to_string(),
            summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                .into_owned(),
            trailers: trailers(commit.message_bytes()),
            note: note(&repo, oid)?,
        });
    }
    Ok((out, false))
}

/// `path` at the tip of `branch` in the repository at `root`, blamed: git's
/// own `git blame --porcelain` (run as a program, on the branch's commit,
/// never the working tree; no ignore-revs file, so every line names the
/// commit that last changed it) read by [`super::blame::parse_porcelain`],
/// and the message of each commit a line comes from. A path the tip does
/// not hold (or a branch with no commit) is [`FileAtTip::Missing`], a
/// directory or submodule [`FileAtTip::NotAFile`]. Reads only; needs `git`
/// on `PATH`.
///
/// [`FileAtTip::Missing`]: super::blame::FileAtTip::Missing
/// [`FileAtTip::NotAFile`]: super::blame::FileAtTip::NotAFile
pub fn blame_at_tip(
    root: &Path,
    branch: &str,
    path: &str,
) -> Result<super::blame::FileAtTip, LandingError> {
    use super::blame::{parse_porcelain, FileAtTip, FileBlame};
    let repo = open(root)?;
    let tip = match repo.refname_to_id(branch) {
        Ok(tip) => tip,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(FileAtTip::Missing),
        Err(e) => return Err(git("read the branch")(e)),
    };
    let tree = tree_of(&repo, tip)?;
    match tree.get_path(Path::new(path)) {
        Ok(entry) if entry.kind() == Some(git2::ObjectType::Blob) => {}
        Ok(_) => return Ok(FileAtTip::NotAFile),
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(FileAtTip::Missing),
        Err(e) => return Err(git("look up a path")(e)),
    }
    let fail = |what: String| git("blame a file")(git2::Error::from_str(&what));
    let mut cmd = std::process::Command::new("git");
    for var in LOCAL_ENV {
        cmd.env_remove(var);
    }
    let out = cmd
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .arg("--git-dir")
        .arg(repo.path())
        .args(["blame", "--porcelain", "--ignore-revs-file", ""])
        .arg(tip.to_string())
        .arg("--")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| fail(format!("run git blame: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "git blame failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let porcelain = parse_porcelain(&out.stdout).map_err(|e| fail(e.to_string()))?;
    let mut messages = std::collections::BTreeMap::new();
    for id in porcelain.commits.keys() {
        let oid = Oid::from_str(id).map_err(git("read a commit id"))?;
        let commit = repo.find_commit(oid).map_err(git("read a commit"))?;
        messages.insert(id.clone(), commit.message_bytes().to_vec());
    }
    Ok(FileAtTip::Blamed(FileBlame {
        tip: tip.to_string(),
        porcelain,
        messages,
    }))
}
