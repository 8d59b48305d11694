//! The write path: the streaming apply of a patch, the apply of a
//! changeset (preconditions, room, staging, flushes, commit), and the
//! root-level ungoverned writes the CLI uses. How a write goes is one
//! value, [`WriteOptions`].

use super::error::{boxed, describe, unwrap_tree_error};
use super::flush::Flush;
use super::journal::Held;
use super::stage::{Content, Staged};
use super::view::Memo;
use super::{Verified, Workspace, WorkspaceError};
use crate::changeset::{Changeset, FileContent};
use crate::diff::{ApplyError, Patch};
use crate::RepoPath;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What an apply did (or, in [`WriteMode::Check`], would do) to one path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathChange {
    /// The repository path.
    pub path: RepoPath,
    /// `write` or `remove`.
    pub action: PathAction,
}

/// What an apply does to one path ([`PathChange::action`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathAction {
    /// The path is written (created or replaced).
    Write,
    /// The path is removed.
    Remove,
}

/// Whether an apply writes, or only checks and reports what it would
/// change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// Check everything, then write.
    #[default]
    Write,
    /// Check everything and report what would change; write nothing.
    Check,
}

impl WriteMode {
    /// [`WriteMode::Check`] when `check` (the CLI's `--check` flag), else
    /// [`WriteMode::Write`].
    pub fn check_if(check: bool) -> WriteMode {
        if check {
            WriteMode::Check
        } else {
            WriteMode::Write
        }
    }
}

/// How a changeset is applied (the crate-private
/// `Workspace::apply_changeset_with`): the one value that says whether to
/// write, how durably, under which tag, what to prune, and where the old
/// contents are kept for an undo. The
/// default writes, flushes nothing, tags nothing, prunes every emptied
/// directory and keeps old contents as hard links.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    /// Write, or only check.
    pub mode: WriteMode,
    /// Flush to disk: once after every result is staged (so the renames
    /// only ever expose complete contents) and once after the renames and
    /// removals (so they survive a power loss).
    pub durable: bool,
    /// Every temporary name (`.rt-stage-TAG-…`, `.rt-backup-TAG-…`) carries
    /// this tag (a transaction id), so what an interrupted write leaves
    /// can be told from a user's file and removed exactly
    /// (the crate-private `Workspace::remove_leftovers`).
    pub tag: Option<&'a str>,
    /// Which directories a removal leaves empty are removed: `None`, every
    /// one (as `git apply` does); `Some(dirs)`, only these (a rollback or
    /// recovery removes only the directories its transaction created).
    pub prune_only: Option<&'a BTreeSet<RepoPath>>,
    /// The old content of every path the change replaces or removes, when
    /// the caller holds it (a governed apply's snapshot): the commit then
    /// keeps no hard links, and an undo restores from it.
    pub(crate) held: Option<&'a Held<'a>>,
    /// The permission bits (`0o7777`) to create a path with when no
    /// regular file is at it: a rollback's or recovery's, recreating what
    /// the change deleted or renamed away with the bits its journal
    /// recorded (`0600` stays `0600`). A path not here, or a file that is
    /// there, is written as always.
    pub(crate) modes: Option<&'a BTreeMap<RepoPath, u32>>,
}

impl Workspace {
    /// Apply `patch`, all or nothing. In [`WriteMode::Check`], compute
    /// everything and report what would change, but write nothing.
    ///
    /// Unlike [`Changeset::from_patch`] followed by
    /// [`Workspace::apply_changeset`], this streams: each result is staged
    /// as soon as it is computed, so memory is bounded by the largest file,
    /// not by the size of the change.
    pub(crate) fn apply_patch(
        &self,
        patch: &Patch<'_>,
        mode: WriteMode,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        if mode == WriteMode::Write {
            self.refuse_bare_write()?;
        }
        for fp in patch.files() {
            for p in [fp.old_path(), fp.new_path()].into_iter().flatten() {
                RepoPath::from_bytes(p)?;
            }
        }
        let mut writes: BTreeMap<RepoPath, Option<Staged>> = BTreeMap::new();
        let mut removes: BTreeSet<RepoPath> = BTreeSet::new();
        // Directory handles are remembered while reading and staging only:
        // the commit creates and removes directories.
        let reader = self.with_memo(Some(Memo::default()));
        let result = crate::diff::apply(patch, &reader, &mut |outcome| {
            let path = RepoPath::from_bytes(&outcome.path)
                .map_err(|e| boxed(&outcome.path, e.code(), e))?;
            match outcome.new {
                Some(file) => {
                    let staged = match mode {
                        WriteMode::Check => None,
                        WriteMode::Write => Some(
                            reader
                                .stage(
                                    &path,
                                    Content::from(&file),
                                    Flush::None,
                                    None,
                                    &Verified::new(),
                                )
                                .map_err(|e| boxed(&outcome.path, e.code(), e))?,
                        ),
                    };
                    writes.insert(path, staged); // drops an earlier staged write
                }
                None => {
                    // Sections apply in order: a removal after a write (a
                    // file modified, then deleted) wins.
                    writes.remove(&path);
                    removes.insert(path);
                }
            }
            Ok(())
        });
        match result {
            Ok(()) => {}
            Err(ApplyError::Tree(t)) => return Err(unwrap_tree_error(t)),
            Err(e) => return Err(e.into()),
        }
        // A path's final state is its last outcome: a path removed and
        // then written again is written (after the removals).
        removes.retain(|p| !writes.contains_key(p));
        let removes: BTreeSet<&RepoPath> = removes.iter().collect();
        for path in writes.keys() {
            reader.check_room_for(path, &removes)?;
        }
        drop(reader);
        let mut changes: Vec<PathChange> = removes
            .iter()
            .map(|p| PathChange {
                path: (*p).clone(),
                action: PathAction::Remove,
            })
            .chain(writes.keys().map(|p| PathChange {
                path: p.clone(),
                action: PathAction::Write,
            }))
            .collect();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        if mode == WriteMode::Check {
            return Ok(changes);
        }
        let staged = writes
            .iter_mut()
            .map(|(p, s)| (p, s.take().expect("staged when not checking")))
            .collect();
        self.commit_staged(&removes, staged, &WriteOptions::default(), &Verified::new())?;
        Ok(changes)
    }

    /// Apply `changeset`, all or nothing, after checking every
    /// precondition against the files as they are now; in
    /// [`WriteMode::Check`], write nothing. The other options are the
    /// defaults.
    pub(crate) fn apply_changeset(
        &self,
        changeset: &Changeset,
        mode: WriteMode,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        self.apply_changeset_with(
            changeset,
            &WriteOptions {
                mode,
                ..WriteOptions::default()
            },
        )
    }

    /// [`apply_changeset`](Workspace::apply_changeset), written as
    /// `options` say. Each durable flush is one `syncfs` of the root's
    /// file system for many files, or per file and directory for a few.
    /// When the options hold the old contents
    /// ([`held`](WriteOptions::held)), the commit keeps no hard links and
    /// an undo restores from them.
    ///
    /// On a view, every directory it opened while reading is first checked
    /// to still be the one at its path from the root (a directory moved
    /// away, or replaced by a link or another directory, since validation
    /// is `precondition_failed`), and staging opens its directories afresh.
    pub(crate) fn apply_changeset_with(
        &self,
        changeset: &Changeset,
        options: &WriteOptions<'_>,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        if options.mode == WriteMode::Write && !changeset.files().is_empty() {
            self.refuse_bare_write()?;
        }
        // Reading and staging remember directory handles (a view's own, or
        // ones kept for this call); the commit remembers nothing.
        let local;
        let reader = if self.memo.is_some() {
            self
        } else {
            local = self.with_memo(Some(Memo::default()));
            &local
        };
        reader.verify_dirs()?;
        for change in changeset.files() {
            let actual = reader.meta_now(&change.path, change.before.as_ref())?;
            if actual != change.before {
                return Err(WorkspaceError::Precondition {
                    path: change.path.to_string(),
                    expected: describe(change.before.as_ref()),
                    actual: describe(actual.as_ref()),
                });
            }
        }
        let removes: BTreeSet<&RepoPath> = changeset
            .files()
            .iter()
            .filter(|c| c.after.is_none())
            .map(|c| &c.path)
            .collect();
        let writes: Vec<(&RepoPath, &FileContent)> = changeset
            .files()
            .iter()
            .filter_map(|c| c.after.as_ref().map(|a| (&c.path, a)))
            .collect();
        for (path, _) in &writes {
            reader.check_room_for(path, &removes)?;
        }
        let changes = changeset
            .files()
            .iter()
            .map(|c| PathChange {
                path: c.path.clone(),
                action: if c.after.is_some() {
                    PathAction::Write
                } else {
                    PathAction::Remove
                },
            })
            .collect();
        if options.mode == WriteMode::Check {
            return Ok(changes);
        }
        let flush = Flush::for_write(options.durable, changeset.files().len());
        // Staging and the commit work in the very directories validation
        // read (just checked to still be at their paths): a directory
        // swapped from now on gets nothing of this change, so no result
        // lands beside someone else's files, and none is split between two
        // directories.
        let verified = reader.remembered_dirs();
        reader.forget();
        #[cfg(test)]
        super::testing::at(super::testing::Point::BeforeStage);
        let staged = reader.stage_all(&writes, flush, options, &verified)?;
        self.flush_staged(flush, changeset)?;
        #[cfg(test)]
        super::testing::at(super::testing::Point::BeforeCommit);
        self.commit_staged(&removes, staged, options, &verified)?;
        self.flush_committed(flush, changeset)?;
        Ok(changes)
    }
}

/// The results' size from which [`Workspace::stage_all`] stages on two
/// threads (below it, a thread costs more than it saves).
const STAGE_APART_BYTES: usize = 1 << 20;

impl Workspace {
    /// Stage every one of `writes` (in path order), as
    /// [`stage`](Workspace::stage) does; the first failure in that order
    /// is the one returned, and nothing staged is left behind. A large
    /// change is staged on two threads, halved by bytes: each half stops
    /// at its own first failure, and the first half's, if any, comes
    /// first.
    fn stage_all<'p>(
        &self,
        writes: &[(&'p RepoPath, &FileContent)],
        flush: Flush,
        options: &WriteOptions<'_>,
        verified: &Verified,
    ) -> Result<Vec<(&'p RepoPath, Staged)>, WorkspaceError> {
        let stage_each = |writes: &[(&'p RepoPath, &FileContent)]| {
            writes
                .iter()
                .map(|&(path, content)| {
                    let content = Content {
                        mode: options.modes.and_then(|m| m.get(path).copied()),
                        ..Content::from(content)
                    };
                    Ok((
                        path,
                        self.stage(path, content, flush, options.tag, verified)?,
                    ))
                })
                .collect::<Result<Vec<_>, WorkspaceError>>()
        };
        let size = |(_, c): &(&RepoPath, &FileContent)| c.data.len();
        let bytes: usize = writes.iter().map(size).sum();
        if bytes < STAGE_APART_BYTES {
            return stage_each(writes);
        }
        let (first, second) = roundtable_base::two_threads::halves(writes, bytes, size);
        let (second, first) =
            roundtable_base::two_threads::both(true, || stage_each(second), || stage_each(first));
        let mut staged = first?;
        staged.extend(second?);
        Ok(staged)
    }
}

/// Apply `patch` to the directory `root`, all or nothing. With
/// [`WriteMode::Check`], compute everything and report what would change,
/// but write nothing.
pub fn apply_patch(
    root: &Path,
    patch: &Patch<'_>,
    mode: WriteMode,
) -> Result<Vec<PathChange>, WorkspaceError> {
    Workspace::open(root)?.apply_patch(patch, mode)
}

/// Apply `changeset` (e.g. an edit plan's, from
/// `plan_changeset`) to the directory
/// `root`, all or nothing; every file's precondition is checked first.
/// With [`WriteMode::Check`], report what would change and write nothing.
///
/// This and [`apply_patch`] are the ungoverned writes (the CLI's `patch
/// apply` and `edit apply`): no claim, review, journal or event. A
/// governed change goes through `Engine::session`.
pub fn apply_changeset(
    root: &Path,
    changeset: &Changeset,
    mode: WriteMode,
) -> Result<Vec<PathChange>, WorkspaceError> {
    Workspace::open(root)?.apply_changeset(changeset, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changeset::FileMeta;
    use crate::workspace::testing::{files, one_change};
    use crate::ErrorCode;
    use std::fs;

    /// A directory swapped between a view's reads (validation) and its
    /// write — moved out of the root and replaced by a link to it, or by
    /// another directory holding someone else's work — is a precondition
    /// failure: nothing is written outside the root, nothing overwritten.
    #[test]
    fn a_directory_swapped_after_validation_is_a_precondition_failure() {
        for replacement in ["link", "directory"] {
            let top = tempfile::tempdir().expect("tempdir");
            let (root, outside) = (top.path().join("root"), top.path().join("outside"));
            fs::create_dir_all(root.join("d")).expect("mkdir");
            fs::create_dir_all(&outside).expect("mkdir");
            fs::write(root.join("d/f"), "old\n").expect("write");
            let ws = Workspace::open(&root).expect("open");
            let view = ws.view();
            let change = one_change("d/f", b"old\n", b"new\n");
            let path = RepoPath::from_bytes(b"d/f").expect("path");
            assert!(view.read(&path).expect("reads").is_some());
            view.check_room(&change).expect("room");
            swap_out(&root, &outside, replacement);
            let e = view
                .apply_changeset_with(&change, &WriteOptions::default())
                .expect_err(replacement);
            assert_eq!(
                e.code(),
                ErrorCode::PreconditionFailed,
                "{replacement}: {e}"
            );
            assert_swapped_untouched(&root, &outside, replacement, replacement);
        }
    }

    /// Issue 33: a large change is staged on two threads; when staging
    /// fails in both halves, the failure first in path order is the one
    /// returned (every time), and no staged file is left behind.
    #[test]
    fn issue33_staging_on_two_threads_reports_the_first_failure_and_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let big = vec![b'x'; 64 << 10];
        // 40 new files of 64 KiB (2.5 MiB in all: staged on two threads),
        // and two new links whose targets leave the root (staging refuses
        // them), one in each half.
        let mut changes: Vec<crate::changeset::FileChange> = (0..40)
            .map(|i| crate::changeset::FileChange {
                path: RepoPath::from_bytes(format!("f{i:02}").as_bytes()).expect("path"),
                operation: crate::changeset::Operation::Create,
                before: None,
                after: Some(FileContent {
                    data: big.clone(),
                    executable: false,
                    symlink: false,
                }),
            })
            .collect();
        for name in ["f05-link", "f30-link"] {
            changes.push(crate::changeset::FileChange {
                path: RepoPath::from_bytes(name.as_bytes()).expect("path"),
                operation: crate::changeset::Operation::Create,
                before: None,
                after: Some(FileContent {
                    data: b"../../outside".to_vec(),
                    executable: false,
                    symlink: true,
                }),
            });
        }
        let change = Changeset::new(changes).expect("distinct paths");
        let ws = Workspace::open(root).expect("open");
        for _ in 0..10 {
            let e = ws
                .apply_changeset_with(
                    &change,
                    &WriteOptions {
                        durable: true,
                        ..WriteOptions::default()
                    },
                )
                .expect_err("an escaping link is refused");
            assert_eq!(e.code(), ErrorCode::PathEscape, "{e}");
            assert!(e.to_string().contains("f05-link"), "{e}");
            assert!(files(root).is_empty(), "{:?}", files(root).keys());
        }
    }

    /// Move `root/d` (holding `f`) to `outside/d` and put in its place a
    /// `link` to it or a real `directory` holding someone else's `f`.
    fn swap_out(root: &Path, outside: &Path, replacement: &str) {
        fs::rename(root.join("d"), outside.join("d")).expect("move out");
        if replacement == "link" {
            std::os::unix::fs::symlink(outside.join("d"), root.join("d")).expect("link");
        } else {
            fs::create_dir(root.join("d")).expect("mkdir");
            fs::write(root.join("d/f"), "theirs\n").expect("theirs");
        }
    }

    /// After [`swap_out`] and a refused write: the moved directory holds
    /// only its old `f`, and a replacement directory only its own.
    fn assert_swapped_untouched(root: &Path, outside: &Path, replacement: &str, case: &str) {
        let moved: Vec<_> = fs::read_dir(outside.join("d"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(moved, ["f"], "{case}: something written outside");
        assert_eq!(
            fs::read(outside.join("d/f")).expect("f"),
            b"old\n",
            "{case}"
        );
        if replacement == "directory" {
            assert_eq!(fs::read(root.join("d/f")).expect("f"), b"theirs\n");
            assert_eq!(fs::read_dir(root.join("d")).expect("ls").count(), 1);
        }
    }

    /// Item 23 (issue 31): a directory swapped after every check, between
    /// validation and staging or between staging and the renames —
    /// moved out of the root and replaced by a link to it or by a real
    /// directory holding someone else's file — is `precondition_failed`;
    /// nothing stays written, in the moved directory or in its replacement.
    #[test]
    fn item23_a_directory_swapped_before_staging_or_commit_gets_nothing() {
        use crate::workspace::testing::{on, Point};
        for point in [Point::BeforeStage, Point::BeforeCommit] {
            for replacement in ["link", "directory"] {
                let top = tempfile::tempdir().expect("tempdir");
                let (root, outside) = (top.path().join("root"), top.path().join("outside"));
                fs::create_dir_all(root.join("d")).expect("mkdir");
                fs::create_dir_all(&outside).expect("mkdir");
                fs::write(root.join("d/f"), "old\n").expect("write");
                let ws = Workspace::open(&root).expect("open");
                let view = ws.view();
                let change = one_change("d/f", b"old\n", b"new\n");
                let path = RepoPath::from_bytes(b"d/f").expect("path");
                assert!(view.read(&path).expect("reads").is_some());
                view.check_room(&change).expect("room");
                let (r, o) = (root.clone(), outside.clone());
                on(point, move || swap_out(&r, &o, replacement));
                let e = view
                    .apply_changeset_with(&change, &WriteOptions::default())
                    .expect_err(replacement);
                let case = format!("{point:?} {replacement}");
                assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{case}: {e}");
                assert_swapped_untouched(&root, &outside, replacement, &case);
                let names: Vec<_> = fs::read_dir(&root)
                    .expect("ls")
                    .map(|e| e.expect("entry").file_name())
                    .collect();
                assert_eq!(
                    names,
                    ["d"],
                    "{case}: a backup or temporary left at the root"
                );
            }
        }
    }

    /// Writing through a view checks each precondition against the file as
    /// it is now: a file rewritten since the view read it is refused, both
    /// when its times are too recent to trust and when they were settled
    /// (then the fresh `fstat` differs); an untouched settled file passes.
    #[test]
    fn a_view_refuses_to_write_over_a_file_changed_since_it_read_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for name in ["recent", "settled", "kept"] {
            fs::write(root.join(name), "old!").expect("write");
        }
        let ws = Workspace::open(root).expect("opens");
        let recent = ws.view();
        recent
            .read(&RepoPath::from_bytes(b"recent").expect("valid"))
            .expect("reads");
        fs::write(root.join("recent"), "new!").expect("same size, other bytes");
        let err = recent
            .apply_changeset_with(
                &one_change("recent", b"old!", b"ours"),
                &WriteOptions::default(),
            )
            .expect_err("changed since it was read");
        assert!(matches!(err, WorkspaceError::Precondition { .. }), "{err}");
        assert_eq!(fs::read(root.join("recent")).expect("read"), b"new!");

        // Old enough that a stamp is trusted.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let settled = ws.view();
        for name in ["settled", "kept"] {
            settled
                .read(&RepoPath::from_bytes(name.as_bytes()).expect("valid"))
                .expect("reads");
        }
        fs::write(root.join("settled"), "new!").expect("same size, other bytes");
        let err = settled
            .apply_changeset_with(
                &one_change("settled", b"old!", b"ours"),
                &WriteOptions::default(),
            )
            .expect_err("changed since it was read");
        assert!(matches!(err, WorkspaceError::Precondition { .. }), "{err}");
        assert_eq!(fs::read(root.join("settled")).expect("read"), b"new!");
        settled
            .apply_changeset_with(
                &one_change("kept", b"old!", b"ours"),
                &WriteOptions::default(),
            )
            .expect("unchanged since it was read");
        assert_eq!(fs::read(root.join("kept")).expect("read"), b"ours");
        // The write made the view forget: it reads the new content.
        let kept = RepoPath::from_bytes(b"kept").expect("valid");
        assert_eq!(
            settled.read(&kept).expect("reads").expect("exists").data,
            b"ours"
        );
    }

    #[test]
    fn apply_changeset_checks_every_precondition_first() {
        use crate::changeset::{FileChange, Operation};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("a"), "a1").expect("write");
        fs::write(root.join("b"), "b1").expect("write");
        let ws = Workspace::open(root).expect("opens");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let meta = |s: &str| {
            Some(FileMeta {
                digest: crate::Digest::of(s.as_bytes()),
                executable: false,
                symlink: false,
            })
        };
        let change = |path: &str, before: Option<FileMeta>, after: &str| FileChange {
            path: p(path),
            operation: Operation::Modify,
            before,
            after: Some(FileContent {
                data: after.as_bytes().to_vec(),
                executable: false,
                symlink: false,
            }),
        };
        // b's precondition is stale: nothing at all is written, a included.
        let stale = Changeset::new(vec![
            change("a", meta("a1"), "a2"),
            change("b", meta("b0"), "b2"),
        ])
        .expect("unique");
        let before = files(root);
        let e = ws
            .apply_changeset(&stale, WriteMode::Write)
            .expect_err("stale");
        assert_eq!(e.code(), ErrorCode::PreconditionFailed);
        assert!(e.to_string().starts_with("b: expected blob:sha256:"), "{e}");
        assert_eq!(files(root), before);
        // "Must be absent" is a precondition too.
        let exists = Changeset::new(vec![FileChange {
            before: None,
            ..change("a", None, "x")
        }])
        .expect("unique");
        assert!(ws
            .apply_changeset(&exists, WriteMode::Write)
            .expect_err("exists")
            .to_string()
            .contains("expected absent"));
        // Fresh preconditions: applied.
        let fresh = Changeset::new(vec![
            change("a", meta("a1"), "a2"),
            change("b", meta("b1"), "b2"),
        ])
        .expect("unique");
        ws.apply_changeset(&fresh, WriteMode::Write)
            .expect("applies");
        assert_eq!(fs::read_to_string(root.join("b")).expect("b"), "b2");
    }
}
