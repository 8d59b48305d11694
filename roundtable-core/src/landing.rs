//! Landing a changeset as a git commit (issue 18, the object half): the
//! commit is built from objects — the base commit's tree plus the
//! changeset, blob by blob, never a checkout — and a branch moves to it by
//! compare-and-swap, from the id the caller validated against to the new
//! one, so a branch that moved meanwhile is refused and nothing else
//! changes.
//!
//! The pure half is [`message`]: the commit message with the trailers that
//! name what governed the change (`Roundtable-Proposal`, `Approved-by`, …),
//! in the form `git interpret-trailers` parses.
//!
//! The shell half works on a [`git2::Repository`] (libgit2, in process:
//! no `git` binary on the landing path). [`build_commit`] writes the blobs,
//! the trees that change (`git_tree_create_updated`: the work is the
//! change's paths times their depth, not the repository's size) and the
//! commit object, and moves no ref: an object nothing references is inert
//! (`git gc` prunes it). [`move_branch`] is the commit point.

use crate::changeset::Changeset;
use crate::ErrorCode;
use git2::{FileMode, Oid, Repository};
use std::path::Path;

/// Why a landing step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LandingError {
    /// The branch (here, or on the remote) is not at the commit the change
    /// was validated against.
    #[error("{}{branch} moved: expected {expected}, found {}", remote.as_deref().map(|r| format!("{r}: ")).unwrap_or_default(), actual.as_deref().unwrap_or("no branch"))]
    BranchMoved {
        /// The remote whose branch it is (`None`: this repository's).
        remote: Option<String>,
        /// The full ref name.
        branch: String,
        /// The id the caller expected.
        expected: String,
        /// The id it holds now (`None`: the ref does not exist).
        actual: Option<String>,
    },
    /// A trailer or identity the caller gave cannot be written as given.
    #[error("{field}: {reason}")]
    InvalidInput {
        /// Which value.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// libgit2 refused or failed.
    #[error("git: {what}: {source}")]
    Git {
        /// What was being done.
        what: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
}

impl LandingError {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            LandingError::BranchMoved { .. } => ErrorCode::PreconditionFailed,
            LandingError::InvalidInput { .. } => ErrorCode::InvalidArgument,
            LandingError::Git { .. } => ErrorCode::Io,
        }
    }
}

impl LandingError {
    /// Structured details for programs: for a moved branch, the ref, the
    /// id expected and the id found.
    pub fn details(&self) -> serde_json::Value {
        match self {
            LandingError::BranchMoved {
                remote,
                branch,
                expected,
                actual,
            } => {
                serde_json::json!({"remote": remote, "ref": branch, "expected": expected, "actual": actual})
            }
            _ => serde_json::json!({}),
        }
    }
}

fn git(what: &'static str) -> impl FnOnce(git2::Error) -> LandingError {
    move |source| LandingError::Git { what, source }
}

/// The repository whose working tree (or git directory) is `root`.
pub fn open(root: &Path) -> Result<Repository, LandingError> {
    Repository::open(root).map_err(git("open the repository"))
}

/// One `Key: value` line of a commit message's trailer block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// The key (`Roundtable-Proposal`, `Approved-by`, …): letters, digits
    /// and `-`.
    pub key: String,
    /// The value: one line.
    pub value: String,
}

impl Trailer {
    /// A trailer `key: value`.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Trailer {
        Trailer {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// The commit message: `title`, a blank line and `summary` (when not
/// blank), a blank line and one line per trailer. Refused when the title is
/// blank or spans lines, a key is not a trailer key, or a value spans lines
/// (each would make `git interpret-trailers` read something else).
pub fn message(title: &str, summary: &str, trailers: &[Trailer]) -> Result<String, LandingError> {
    let title = title.trim();
    if title.is_empty() || title.contains('\n') {
        return Err(LandingError::InvalidInput {
            field: "title",
            reason: "must be one non-blank line".into(),
        });
    }
    let mut out = String::from(title);
    out.push('\n');
    let summary = summary.trim();
    if !summary.is_empty() {
        out.push('\n');
        out.push_str(summary);
        out.push('\n');
    }
    if !trailers.is_empty() {
        out.push('\n');
    }
    for t in trailers {
        let key_ok = !t.key.is_empty()
            && t.key.starts_with(|c: char| c.is_ascii_alphanumeric())
            && t.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !key_ok {
            return Err(LandingError::InvalidInput {
                field: "trailer key",
                reason: format!("{:?} is not a trailer key (letters, digits, '-')", t.key),
            });
        }
        let value = t.value.trim();
        if value.is_empty() || value.contains(['\n', '\r']) {
            return Err(LandingError::InvalidInput {
                field: "trailer value",
                reason: format!("the value of {} must be one non-blank line", t.key),
            });
        }
        out.push_str(&t.key);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    }
    Ok(out)
}

/// Who a commit names: a name, an email and a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The name.
    pub name: String,
    /// The email address.
    pub email: String,
    /// Seconds since the epoch.
    pub seconds: i64,
    /// Offset from UTC in minutes.
    pub offset_minutes: i32,
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
    let id = repo
        .commit(
            None,
            &author.signature("author")?,
            &committer.signature("committer")?,
            message,
            &tree,
            &[&parent],
        )
        .map_err(git("write the commit"))?;
    Ok(Commit { id, tree: tree_id })
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

/// Copy into `to` every object reachable from `tip` in `from` that is not
/// reachable from `known` (ids `to` already has), as one pack written to
/// `to`'s object store: what a push or fetch transfers.
pub fn copy_objects(
    from: &Repository,
    to: &Repository,
    tip: Oid,
    known: &[Oid],
) -> Result<(), LandingError> {
    if to.odb().map_err(git("open the object store"))?.exists(tip) {
        return Ok(());
    }
    let mut walk = from.revwalk().map_err(git("walk the history"))?;
    walk.push(tip).map_err(git("walk the history"))?;
    for id in known {
        if from.find_commit(*id).is_ok() {
            walk.hide(*id).map_err(git("walk the history"))?;
        }
    }
    let mut pack = from.packbuilder().map_err(git("build a pack"))?;
    pack.insert_walk(&mut walk).map_err(git("build a pack"))?;
    let odb = to.odb().map_err(git("open the object store"))?;
    let mut writer = odb.packwriter().map_err(git("write a pack"))?;
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

/// Push `new` to `branch` of `remote` with a lease: the remote branch
/// must still be at `expected` (`--force-with-lease` semantics), checked
/// and moved atomically under the remote's ref lock; otherwise
/// [`LandingError::BranchMoved`] naming the remote, the ref and both ids,
/// and the remote's branch is unchanged (its new objects are inert).
pub fn push(
    local: &Repository,
    remote: &Repository,
    location: &str,
    branch: &str,
    expected: Oid,
    new: Oid,
) -> Result<(), LandingError> {
    copy_objects(local, remote, new, &[expected])?;
    move_branch(remote, branch, expected, new, "roundtable: push").map_err(|e| match e {
        LandingError::BranchMoved {
            branch,
            expected,
            actual,
            ..
        } => LandingError::BranchMoved {
            remote: Some(location.to_owned()),
            branch,
            expected,
            actual,
        },
        other => other,
    })
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

/// Whether each path `changeset` touches is, in `base`'s tree, what the
/// changeset's precondition says (the same bytes and mode, or absent): a
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
                mode_ok
                    && repo
                        .find_blob(entry.id())
                        .is_ok_and(|b| crate::Digest::of(b.content()) == meta.digest)
            }
            _ => false,
        };
        if !same {
            return Ok(Some(file.path.clone()));
        }
    }
    Ok(None)
}

/// A commit roundtable landed, as `roundtable log` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LandedCommit {
    /// The commit id.
    pub id: String,
    /// Its first line.
    pub summary: String,
    /// Its author, `name <email>`.
    pub author: String,
    /// Its trailers, in order: `(key, value)`.
    pub trailers: Vec<(String, String)>,
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
        let trailers: Vec<(String, String)> = git2::message_trailers_strs(&message)
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_title_summary_and_one_line_per_trailer() {
        let m = message(
            "Say hello",
            "Greets the world.\n",
            &[
                Trailer::new("Roundtable-Proposal", "p1"),
                Trailer::new("Approved-by", "agent:bob"),
            ],
        )
        .expect("message");
        assert_eq!(
            m,
            "Say hello\n\nGreets the world.\n\nRoundtable-Proposal: p1\nApproved-by: agent:bob\n"
        );
        assert_eq!(message(" T ", "  ", &[]).expect("bare"), "T\n");
    }

    #[test]
    fn a_message_refuses_what_would_read_as_something_else() {
        for (title, trailers) in [
            ("", vec![]),
            ("two\nlines", vec![]),
            ("t", vec![Trailer::new("Bad Key", "v")]),
            ("t", vec![Trailer::new("-lead", "v")]),
            ("t", vec![Trailer::new("Key", "two\nlines")]),
            ("t", vec![Trailer::new("Key", " ")]),
        ] {
            let e = message(title, "", &trailers).expect_err(title);
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        }
    }
}
