//! Applying a patch to a directory on disk, all or nothing.
//!
//! This is the imperative shell around the pure [`diff::apply`]: it checks
//! every path before touching anything, computes every result first (each
//! staged in a temporary file next to its target, so memory stays bounded),
//! and only then moves the results into place. If any step of that last
//! phase fails, everything already moved is put back. A refused patch
//! leaves the directory exactly as it was.
//!
//! Paths are checked lexically ([`RepoPath`]) and on disk: no component of
//! a touched path may be a symbolic link.

use crate::diff::{self, ApplyError, FileOutcome, Patch, Tree, TreeError, TreeFile};
use crate::{ErrorCode, PathError, RepoPath};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Why applying to a directory failed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// A path in the patch is not a valid, contained repository path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A path passes through (or is) a symbolic link.
    #[error("{path}: passes through the symbolic link {link}")]
    Symlink {
        /// The patch path.
        path: String,
        /// The component that is a link.
        link: String,
    },
    /// The patch does not apply.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// Moving results into place failed; every change was undone.
    #[error("{path}: {source} (every change was undone)")]
    Commit {
        /// The path being written or removed.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Undoing a failed commit also failed: the directory needs attention.
    #[error("{path}: {source}; undoing the partial apply failed too: {undo}")]
    Undo {
        /// The path being written or removed when the commit failed.
        path: String,
        /// The original cause.
        #[source]
        source: io::Error,
        /// What went wrong while undoing.
        undo: String,
    },
}

impl WorkspaceError {
    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            WorkspaceError::Path(e) => e.code(),
            WorkspaceError::Symlink { .. } => ErrorCode::PathEscape,
            WorkspaceError::Apply(e) => e.code(),
            WorkspaceError::Commit { .. } | WorkspaceError::Undo { .. } => ErrorCode::Io,
        }
    }
}

/// What an apply did (or, with `check`, would do) to one path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathChange {
    /// The repository path.
    pub path: RepoPath,
    /// `write` or `remove`.
    pub action: &'static str,
}

/// Apply `patch` to the directory `root`. With `check`, compute everything
/// and report what would change, but write nothing.
pub fn apply_patch(
    root: &Path,
    patch: &Patch<'_>,
    check: bool,
) -> Result<Vec<PathChange>, WorkspaceError> {
    // 1. Every path is valid and reaches no symbolic link.
    for fp in patch.files() {
        for p in [fp.old_path(), fp.new_path()].into_iter().flatten() {
            check_no_symlink(root, &RepoPath::from_bytes(p)?)?;
        }
    }

    // 2. Compute every result, staging each write next to its target. A
    //    path's final state is its last write, or removal if it was only
    //    removed (git removes first, then writes).
    let tree = DirTree { root };
    let mut writes: BTreeMap<RepoPath, Option<Staged>> = BTreeMap::new();
    let mut removes: BTreeSet<RepoPath> = BTreeSet::new();
    diff::apply(patch, &tree, &mut |outcome: FileOutcome| {
        let path = RepoPath::from_bytes(&outcome.path)
            .map_err(|e| tree_error(&outcome.path, e.code(), e))?;
        match outcome.new {
            Some(file) => {
                let staged = if check {
                    None
                } else {
                    Some(stage(root, &path, &file)?)
                };
                writes.insert(path, staged); // drops an earlier staged write
            }
            None => {
                removes.insert(path);
            }
        }
        Ok(())
    })?;
    removes.retain(|p| !writes.contains_key(p));
    for path in writes.keys() {
        check_room_for(root, path, &removes)?;
    }

    let mut changes: Vec<PathChange> = removes
        .iter()
        .map(|p| PathChange {
            path: p.clone(),
            action: "remove",
        })
        .chain(writes.keys().map(|p| PathChange {
            path: p.clone(),
            action: "write",
        }))
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    if check {
        return Ok(changes);
    }

    // 3. Move everything into place, undoing it all if any step fails.
    let writes: Vec<(RepoPath, Staged)> = writes
        .into_iter()
        .map(|(p, s)| (p, s.expect("staged when not checking")))
        .collect();
    let mut journal = Journal::new(root);
    match commit(root, &removes, writes, &mut journal) {
        // Dropping the journal removes the backups of the old contents.
        Ok(()) => Ok(changes),
        Err((path, source)) => match journal.undo() {
            Ok(()) => Err(WorkspaceError::Commit { path, source }),
            Err(undo) => Err(WorkspaceError::Undo { path, source, undo }),
        },
    }
}

fn abs(root: &Path, path: &RepoPath) -> PathBuf {
    root.join(path.as_str())
}

fn tree_error(
    path: &[u8],
    code: ErrorCode,
    e: impl std::error::Error + Send + Sync + 'static,
) -> TreeError {
    TreeError {
        code,
        path: path.to_vec(),
        source: Box::new(e),
    }
}

fn io_error(path: &RepoPath, e: io::Error) -> TreeError {
    tree_error(path.as_str().as_bytes(), ErrorCode::Io, e)
}

/// Refuse a path any of whose existing components is a symbolic link.
fn check_no_symlink(root: &Path, path: &RepoPath) -> Result<(), WorkspaceError> {
    let mut at = root.to_path_buf();
    for component in path.components() {
        at.push(component);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(WorkspaceError::Symlink {
                    path: path.to_string(),
                    link: at.strip_prefix(root).unwrap_or(&at).display().to_string(),
                })
            }
            Ok(m) if m.is_dir() => continue,
            // A regular file or nothing: deeper components cannot be links.
            _ => break,
        }
    }
    Ok(())
}

/// Refuse a write that something on disk stands in the way of, once the
/// patch's own removals are done: a file where a parent directory must be,
/// or a directory (with anything the patch does not remove) where the file
/// goes. Found now, so `--check` and the real apply agree and nothing is
/// touched.
fn check_room_for(
    root: &Path,
    path: &RepoPath,
    removes: &BTreeSet<RepoPath>,
) -> Result<(), WorkspaceError> {
    let in_the_way = |what: String| {
        WorkspaceError::Apply(ApplyError::File {
            path: path.as_str().as_bytes().to_vec(),
            reason: what,
        })
    };
    let components: Vec<&str> = path.components().collect();
    for depth in 1..components.len() {
        let ancestor = components[..depth].join("/");
        let removed = RepoPath::from_bytes(ancestor.as_bytes()).is_ok_and(|p| removes.contains(&p));
        match fs::symlink_metadata(root.join(&ancestor)) {
            Ok(m) if !m.is_dir() && !removed => {
                return Err(in_the_way(format!(
                    "`{ancestor}` is a file, so it cannot be a directory"
                )))
            }
            Ok(m) if m.is_dir() => continue,
            _ => break,
        }
    }
    let target = abs(root, path);
    if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        let mut stack = vec![target];
        while let Some(dir) = stack.pop() {
            let entries =
                fs::read_dir(&dir).map_err(|e| WorkspaceError::Apply(io_error(path, e).into()))?;
            for entry in entries {
                let entry = entry.map_err(|e| WorkspaceError::Apply(io_error(path, e).into()))?;
                let at = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(at);
                    continue;
                }
                let rel = at
                    .strip_prefix(root)
                    .unwrap_or(&at)
                    .to_string_lossy()
                    .into_owned();
                if !RepoPath::from_bytes(rel.as_bytes()).is_ok_and(|p| removes.contains(&p)) {
                    return Err(in_the_way(format!(
                        "a directory is in the way (it holds `{rel}`)"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The directory as the applier's [`Tree`].
struct DirTree<'r> {
    root: &'r Path,
}

impl Tree for DirTree<'_> {
    fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| tree_error(path, e.code(), e))?;
        let at = abs(self.root, &repo_path);
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                return Ok(None)
            }
            Err(e) => return Err(io_error(&repo_path, e)),
        };
        if !meta.is_file() {
            return Err(tree_error(
                path,
                ErrorCode::PatchDoesNotApply,
                io::Error::other("is not a regular file"),
            ));
        }
        let data = fs::read(&at).map_err(|e| io_error(&repo_path, e))?;
        Ok(Some(TreeFile {
            data,
            executable: meta.permissions().mode() & 0o111 != 0,
        }))
    }

    fn exists(&self, path: &[u8]) -> Result<bool, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| tree_error(path, e.code(), e))?;
        match fs::symlink_metadata(abs(self.root, &repo_path)) {
            Ok(m) => Ok(!m.is_dir()),
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                Ok(false)
            }
            Err(e) => Err(io_error(&repo_path, e)),
        }
    }
}

/// A result written to a temporary file, waiting to be renamed into place.
struct Staged {
    temp: tempfile::TempPath,
}

/// Write `file` to a temporary file in the nearest existing directory on
/// the way to `path` (its parents may not exist yet).
fn stage(root: &Path, path: &RepoPath, file: &TreeFile) -> Result<Staged, TreeError> {
    let target = abs(root, path);
    let mut dir = target.parent().unwrap_or(root).to_path_buf();
    while !dir.is_dir() && dir != root {
        dir.pop();
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".rt-stage-")
        .tempfile_in(&dir)
        .map_err(|e| io_error(path, e))?;
    temp.write_all(&file.data).map_err(|e| io_error(path, e))?;
    let mode = if file.executable { 0o755 } else { 0o644 };
    fs::set_permissions(temp.path(), fs::Permissions::from_mode(mode))
        .map_err(|e| io_error(path, e))?;
    Ok(Staged {
        temp: temp.into_temp_path(),
    })
}

/// Every step of a commit, so it can be undone in reverse.
struct Journal {
    steps: Vec<Step>,
    /// Where old contents are kept (as hard links) until the commit is
    /// done: a hidden directory at the root, so that directories emptied by
    /// the change really are empty.
    backups: Option<tempfile::TempDir>,
    root: PathBuf,
}

enum Step {
    /// `original` was unlinked; its content lives on at `backup`.
    Removed { original: PathBuf, backup: PathBuf },
    /// An empty directory was removed.
    RemovedDir(PathBuf),
    /// A directory was created.
    CreatedDir(PathBuf),
    /// A new file was renamed onto `path`, replacing the file now at
    /// `backup` (a hard link to the old content), if there was one.
    Placed {
        path: PathBuf,
        backup: Option<PathBuf>,
    },
}

impl Journal {
    fn new(root: &Path) -> Self {
        Journal {
            steps: Vec::new(),
            backups: None,
            root: root.to_path_buf(),
        }
    }

    /// Keep the old content of `original` reachable under a fresh name in
    /// the backup directory: one hard link, no copy. The original stays in
    /// place, so a replaced file is never missing, even for an instant.
    fn link_backup(&mut self, original: &Path) -> io::Result<PathBuf> {
        if self.backups.is_none() {
            self.backups = Some(
                tempfile::Builder::new()
                    .prefix(".rt-backup-")
                    .tempdir_in(&self.root)?,
            );
        }
        let dir = self.backups.as_ref().expect("created above").path();
        let backup = dir.join(self.steps.len().to_string());
        fs::hard_link(original, &backup)?;
        Ok(backup)
    }

    fn undo(&mut self) -> Result<(), String> {
        let mut failures = Vec::new();
        while let Some(step) = self.steps.pop() {
            let result = match &step {
                Step::Placed {
                    path,
                    backup: Some(b),
                } => fs::rename(b, path),
                Step::Placed { path, backup: None } => fs::remove_file(path),
                Step::CreatedDir(p) => fs::remove_dir(p),
                Step::RemovedDir(p) => fs::create_dir(p),
                Step::Removed { original, backup } => fs::rename(backup, original),
            };
            if let Err(e) = result {
                failures.push(e.to_string());
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            // Old contents that could not be put back stay in the backup
            // directory: name it so a person can recover them.
            if let Some(dir) = self.backups.take() {
                failures.push(format!("old contents are kept in {}", dir.keep().display()));
            }
            Err(failures.join("; "))
        }
    }
}

fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

fn commit(
    root: &Path,
    removes: &BTreeSet<RepoPath>,
    writes: Vec<(RepoPath, Staged)>,
    journal: &mut Journal,
) -> Result<(), (String, io::Error)> {
    let fail = |p: &RepoPath| {
        let p = p.to_string();
        move |e: io::Error| (p, e)
    };
    // Remove what is removed (git removes before it writes), keeping each
    // old content under a backup link.
    for path in removes {
        let original = abs(root, path);
        if !is_file(&original) {
            continue;
        }
        let backup = journal.link_backup(&original).map_err(fail(path))?;
        if let Err(e) = fs::remove_file(&original) {
            let _ = fs::remove_file(&backup);
            return Err(fail(path)(e));
        }
        journal.steps.push(Step::Removed { original, backup });
    }
    // Remove directories that the removals left empty, as git does.
    for path in removes {
        let mut dir = abs(root, path);
        while dir.pop() && dir != root {
            if fs::remove_dir(&dir).is_err() {
                break;
            }
            journal.steps.push(Step::RemovedDir(dir.clone()));
        }
    }
    // Place every new file, creating its directories; a replaced file is
    // swapped atomically by the rename.
    for (path, staged) in writes {
        let target = abs(root, &path);
        let mut missing = Vec::new();
        let mut dir = target.parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            if d == root || d.is_dir() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
            missing.push(d);
        }
        for d in missing.into_iter().rev() {
            fs::create_dir(&d).map_err(fail(&path))?;
            journal.steps.push(Step::CreatedDir(d));
        }
        let backup = if is_file(&target) {
            Some(journal.link_backup(&target).map_err(fail(&path))?)
        } else {
            None
        };
        if let Err(e) = staged.temp.persist(&target) {
            if let Some(b) = backup {
                let _ = fs::remove_file(b);
            }
            return Err(fail(&path)(e.error));
        }
        journal.steps.push(Step::Placed {
            path: target,
            backup,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).expect("readable") {
                let at = entry.expect("entry").path();
                if at.is_dir() {
                    stack.push(at.clone());
                }
                let rel = at.strip_prefix(root).expect("inside").display().to_string();
                out.insert(
                    rel,
                    if at.is_dir() {
                        Vec::new()
                    } else {
                        fs::read(&at).expect("read")
                    },
                );
            }
        }
        out
    }

    /// A fault in the middle of the commit (a staged file vanishes after
    /// earlier files were already placed and removed) is undone completely.
    #[test]
    fn a_failing_commit_is_undone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("d")).expect("mkdir");
        fs::write(root.join("a"), "old a").expect("write");
        fs::write(root.join("d/gone"), "old gone").expect("write");
        let before = files(root);

        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let staged = |path: &str, data: &str| {
            stage(root, &p(path), &TreeFile::regular(data.as_bytes().to_vec())).expect("stages")
        };
        let removes = BTreeSet::from([p("d/gone")]);
        let broken = staged("z/new", "new z");
        fs::remove_file(&broken.temp).expect("the fault: the staged file disappears");
        let writes = vec![
            (p("a"), staged("a", "new a")),
            (p("b/c"), staged("b/c", "new c")),
            (p("z/new"), broken),
        ];

        let mut journal = Journal::new(root);
        let (path, _) =
            commit(root, &removes, writes, &mut journal).expect_err("the last write fails");
        assert_eq!(path, "z/new");
        // Before undoing: a and b/c were placed, d/gone and d were removed.
        assert_eq!(fs::read_to_string(root.join("a")).expect("a"), "new a");
        assert!(!root.join("d").exists());
        journal.undo().expect("undo succeeds");
        drop(journal);
        assert_eq!(
            files(root),
            before,
            "every change undone, no staging or backup left"
        );
    }
}
