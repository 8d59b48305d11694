//! The commit: staged results renamed into place and removed paths
//! unlinked (git removes first, then writes), directories created and the
//! ones a removal empties pruned, each step journaled and everything undone
//! if any step fails.

use super::journal::{Journal, Step};
use super::kind::{kind_at, Kind};
use super::stage::Staged;
use super::DIR_FLAGS;
use super::{errno, parent_of, Located, Verified, Workspace, WorkspaceError, WriteOptions};
use crate::RepoPath;
use rustix::fs::{AtFlags, Mode};
use std::collections::BTreeSet;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

impl Workspace {
    /// Move staged results into place and remove what is removed; undo
    /// everything if any step fails.
    /// The old contents are kept as the options say
    /// ([`held`](WriteOptions::held), else hard links); temporary names
    /// carry their tag, and only the directories they allow are pruned.
    pub(super) fn commit_staged(
        &self,
        removes: &BTreeSet<&RepoPath>,
        staged: Vec<(&RepoPath, Staged)>,
        options: &WriteOptions<'_>,
        verified: &Verified,
    ) -> Result<(), WorkspaceError> {
        // Directories are created and removed here: nothing remembered.
        let ws = &self.plain();
        let mut journal = Journal::holding(options.held, options.tag);
        match ws.commit(removes, staged, &mut journal, options.prune_only, verified) {
            // Every directory written in must still be the one at its
            // path: one moved away (or replaced) while the change was
            // staged or renamed got the change outside the root, or beside
            // someone else's files. Undone, and refused.
            Ok(()) => match ws.verify_used(&journal) {
                // Dropping the journal removes the backups of the old contents.
                Ok(()) => Ok(()),
                Err(moved) => match journal.undo(ws) {
                    Ok(()) => Err(moved),
                    Err(undo) => Err(WorkspaceError::Undo {
                        path: match &moved {
                            WorkspaceError::Precondition { path, .. } => path.clone(),
                            _ => String::new(),
                        },
                        source: io::Error::other(moved.to_string()),
                        undo,
                    }),
                },
            },
            Err((path, source)) => match journal.undo(ws) {
                Ok(()) => Err(WorkspaceError::Commit { path, source }),
                Err(undo) => Err(WorkspaceError::Undo { path, source, undo }),
            },
        }
    }

    /// Check that every directory the commit wrote in is still the one at
    /// its path from the root (a directory the commit pruned aside).
    fn verify_used(&self, journal: &Journal<'_>) -> Result<(), WorkspaceError> {
        let pruned: BTreeSet<&str> = journal
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::RemovedDir { path } => Some(path.as_str()),
                _ => None,
            })
            .collect();
        let mut checked: BTreeSet<&str> = BTreeSet::new();
        for (prefix, fd) in &journal.used {
            if pruned.contains(prefix.as_str()) || !checked.insert(prefix.as_str()) {
                continue;
            }
            self.still_at(prefix, fd, "the directory the change was written in")?;
        }
        Ok(())
    }

    /// The steps of [`commit_staged`](Workspace::commit_staged), each
    /// journaled; the first failure, with its path, stops it.
    pub(super) fn commit(
        &self,
        removes: &BTreeSet<&RepoPath>,
        staged: Vec<(&RepoPath, Staged)>,
        journal: &mut Journal<'_>,
        prune_only: Option<&BTreeSet<RepoPath>>,
        verified: &Verified,
    ) -> Result<(), (String, io::Error)> {
        let fail = |p: &RepoPath| {
            let p = p.to_string();
            move |e: io::Error| (p, e)
        };
        let name_of = |p: &RepoPath| p.components().last().unwrap_or_default().to_owned();
        let located = |p: &RepoPath| -> Result<Option<Located>, (String, io::Error)> {
            if let Some(dir) = verified.get(parent_of(p)) {
                return Ok(Some((Arc::clone(dir), name_of(p))));
            }
            self.parent(p)
                .map_err(|e| (p.to_string(), io::Error::other(e.to_string())))
        };
        let mut pruned: BTreeSet<String> = BTreeSet::new();
        // Remove what is removed (git removes before it writes), keeping
        // each old content under a backup link.
        for &path in removes {
            let Some((dir, name)) = located(path)? else {
                continue;
            };
            if !matches!(
                kind_at(&*dir, &name),
                Ok(Some(Kind::File | Kind::Link | Kind::Special(_)))
            ) {
                continue;
            }
            let backup = journal
                .backup(&self.dir, path, &dir, &name)
                .map_err(fail(path))?;
            rustix::fs::unlinkat(&*dir, name.as_str(), AtFlags::empty())
                .map_err(|e| fail(path)(errno(e)))?;
            journal
                .used
                .push((parent_of(path).to_owned(), Arc::clone(&dir)));
            journal.steps.push(Step::Removed {
                path: path.clone(),
                backup,
            });
        }
        // Remove directories that the removals left empty, as git does.
        for &path in removes {
            let components: Vec<&str> = path.components().collect();
            for depth in (1..components.len()).rev() {
                let Ok(dir_path) = RepoPath::from_bytes(components[..depth].join("/").as_bytes())
                else {
                    break;
                };
                if prune_only.is_some_and(|only| !only.contains(&dir_path)) {
                    break;
                }
                let Ok(Some((parent, name))) = self.parent(&dir_path) else {
                    break;
                };
                if rustix::fs::unlinkat(&*parent, name.as_str(), AtFlags::REMOVEDIR).is_err() {
                    break;
                }
                pruned.insert(dir_path.to_string());
                journal.steps.push(Step::RemovedDir { path: dir_path });
            }
        }
        // Place every new file, creating its directories; a replaced file
        // is swapped atomically by the rename.
        // Placing only creates directories, so a handle opened here stays
        // good until the end of the loop.
        let mut opened: std::collections::HashMap<String, Arc<OwnedFd>> = Default::default();
        for (path, mut staged) in staged {
            let components: Vec<&str> = path.components().collect();
            let mut dir = Arc::clone(&self.dir);
            let mut prefix = String::new();
            let parent = parent_of(path);
            let known = verified
                .get(parent)
                .filter(|_| !pruned.contains(parent))
                .map(Arc::clone);
            let on_the_way = if let Some(known) = known {
                dir = known;
                &[][..]
            } else {
                &components[..components.len() - 1]
            };
            for component in on_the_way {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(component);
                if let Some(fd) = opened.get(&prefix) {
                    dir = Arc::clone(fd);
                    continue;
                }
                match rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty()) {
                    Ok(fd) => dir = Arc::new(fd),
                    Err(rustix::io::Errno::NOENT) => {
                        rustix::fs::mkdirat(&*dir, *component, Mode::from_raw_mode(0o755))
                            .map_err(|e| fail(path)(errno(e)))?;
                        journal.steps.push(Step::CreatedDir {
                            parent: Arc::clone(&dir),
                            name: (*component).to_owned(),
                        });
                        let fd = rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty())
                            .map_err(|e| fail(path)(errno(e)))?;
                        dir = Arc::new(fd);
                    }
                    Err(e) => return Err(fail(path)(errno(e))),
                }
                opened.insert(prefix.clone(), Arc::clone(&dir));
            }
            let name = components[components.len() - 1].to_owned();
            let backup = match kind_at(&*dir, &name) {
                Ok(Some(Kind::File | Kind::Link)) => Some(
                    journal
                        .backup(&self.dir, path, &dir, &name)
                        .map_err(fail(path))?,
                ),
                _ => None,
            };
            if let Err(e) =
                rustix::fs::renameat(&*staged.dir, staged.name.as_str(), &*dir, name.as_str())
            {
                return Err(fail(path)(errno(e)));
            }
            staged.placed = true;
            journal.used.push((parent.to_owned(), Arc::clone(&dir)));
            journal.steps.push(Step::Placed { dir, name, backup });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changeset::{Changeset, FileContent};
    use crate::workspace::flush::Flush;
    use crate::workspace::journal::Held;
    use crate::workspace::stage::Content;
    use crate::workspace::testing::files;
    use crate::workspace::WriteMode;
    use crate::ErrorCode;
    use std::fs;
    use std::path::Path;

    fn regular(data: &[u8]) -> Content<'_> {
        Content {
            data,
            executable: false,
            symlink: false,
            mode: None,
        }
    }

    fn link(target: &[u8]) -> Content<'_> {
        Content {
            data: target,
            executable: false,
            symlink: true,
            mode: None,
        }
    }

    /// A fault in the middle of the commit (a staged file vanishes after
    /// earlier files were already placed and removed) is undone completely:
    /// from hard-link backups, or — when the caller holds the old contents
    /// — from those, with no backup directory made.
    fn fail_mid_commit_and_undo(holding: bool) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("d")).expect("mkdir");
        fs::write(root.join("a"), "old a").expect("write");
        fs::set_permissions(root.join("a"), fs::Permissions::from_mode(0o750)).expect("chmod");
        fs::write(root.join("d/gone"), "old gone").expect("write");
        let before = files(root);
        let ws = Workspace::open(root).expect("opens");

        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let (a, c, z, gone) = (p("a"), p("b/c"), p("z/new"), p("d/gone"));
        let held: Held<'_> = [
            (&a, (b"old a".as_slice(), true, false)),
            (&gone, (b"old gone".as_slice(), false, false)),
        ]
        .into_iter()
        .collect();
        let removes = BTreeSet::from([&gone]);
        let broken = ws
            .stage(&z, regular(b"new z"), Flush::None, None, &Verified::new())
            .expect("stages");
        rustix::fs::unlinkat(&*broken.dir, broken.name.as_str(), AtFlags::empty())
            .expect("the fault: the staged file disappears");
        let staged = vec![
            (
                &a,
                ws.stage(&a, regular(b"new a"), Flush::None, None, &Verified::new())
                    .expect("stages"),
            ),
            (
                &c,
                ws.stage(&c, regular(b"new c"), Flush::None, None, &Verified::new())
                    .expect("stages"),
            ),
            (&z, broken),
        ];

        let mut journal = Journal::holding(holding.then_some(&held), None);
        let (path, _) = ws
            .commit(&removes, staged, &mut journal, None, &Verified::new())
            .expect_err("the last write fails");
        assert_eq!(path, "z/new");
        // Before undoing: a and b/c were placed, d/gone and d were removed.
        assert_eq!(fs::read_to_string(root.join("a")).expect("a"), "new a");
        assert!(!root.join("d").exists());
        let backups = fs::read_dir(root)
            .expect("root")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(".rt-backup-"))
            })
            .count();
        assert_eq!(backups, usize::from(!holding));
        journal.undo(&ws).expect("undo succeeds");
        drop(journal);
        assert_eq!(
            files(root),
            before,
            "every change undone, no staging or backup left"
        );
        let mode = |p: &str| {
            fs::metadata(root.join(p))
                .expect("meta")
                .permissions()
                .mode()
                & 0o777
        };
        // Every permission bit is put back, not just the executable one.
        assert_eq!(mode("a"), 0o750);
        assert_eq!(mode("d/gone"), 0o644);
    }

    #[test]
    fn a_failing_commit_is_undone_from_backup_links() {
        fail_mid_commit_and_undo(false);
    }

    #[test]
    fn a_failing_commit_holding_the_old_contents_restores_them() {
        fail_mid_commit_and_undo(true);
    }

    /// A link is staged under a temporary name and renamed over its path;
    /// replacing and removing links keeps their old targets for an undo,
    /// and a staged link an interrupted write left is removed as its own.
    #[test]
    fn links_are_staged_renamed_and_undone_like_files() {
        use crate::changeset::{FileChange, Operation};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::os::unix::fs::symlink("a", root.join("l")).expect("link");
        std::os::unix::fs::symlink("b", root.join("gone")).expect("link");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let ws = Workspace::open(root).expect("opens");
        let l = p("l");
        let gone = p("gone");
        let held: Held<'_> = [
            (&l, (b"a".as_slice(), false, true)),
            (&gone, (b"b".as_slice(), false, true)),
        ]
        .into_iter()
        .collect();
        let staged = vec![(
            &l,
            ws.stage(&l, link(b"d/c"), Flush::None, None, &Verified::new())
                .expect("stages"),
        )];
        let removes = BTreeSet::from([&gone]);
        let mut journal = Journal::holding(Some(&held), None);
        ws.commit(&removes, staged, &mut journal, None, &Verified::new())
            .expect("commits");
        assert_eq!(
            fs::read_link(root.join("l")).expect("link"),
            Path::new("d/c")
        );
        assert!(fs::symlink_metadata(root.join("gone")).is_err());
        journal.undo(&ws).expect("undo");
        drop(journal);
        assert_eq!(fs::read_link(root.join("l")).expect("link"), Path::new("a"));
        assert_eq!(
            fs::read_link(root.join("gone")).expect("link"),
            Path::new("b")
        );
        assert_eq!(
            fs::read_dir(root).expect("ls").count(),
            2,
            "no temporaries left"
        );

        // An escaping link is refused even where no applier checked it.
        let escaping = Changeset::new(vec![FileChange {
            path: p("x"),
            operation: Operation::Create,
            before: None,
            after: Some(FileContent {
                data: b"../outside".to_vec(),
                executable: false,
                symlink: true,
            }),
        }])
        .expect("one path");
        let e = ws
            .apply_changeset(&escaping, WriteMode::Write)
            .expect_err("escapes");
        assert_eq!(e.code(), ErrorCode::PathEscape, "{e}");
        assert_eq!(fs::read_dir(root).expect("ls").count(), 2);

        // What an interrupted write tagged `t1` left: its staged link goes,
        // a user's link of a similar name stays.
        std::os::unix::fs::symlink("a", root.join(".rt-stage-t1-0123")).expect("link");
        std::os::unix::fs::symlink("a", root.join(".rt-stage-other-0123")).expect("link");
        let removed = ws
            .remove_leftovers(&[l], "t1", &BTreeSet::new())
            .expect("removes");
        assert_eq!(removed, [".rt-stage-t1-0123"]);
        assert!(fs::symlink_metadata(root.join(".rt-stage-other-0123")).is_ok());
    }
}
