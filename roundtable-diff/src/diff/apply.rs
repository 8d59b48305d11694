//! The applier: a patch plus current contents in, new contents out — as
//! `git apply` (no options) computes them, except where git misapplies
//! silently (below), which a governance gate must not copy.
//!
//! Hunks are matched as git matches them: the pre-image (context and
//! removed lines) must equal the file's lines byte for byte; the search
//! starts at the hunk's new start line and alternates forward and back
//! one line at a time; a hunk that starts at line 0 or 1 must match at the
//! beginning and one without trailing context must match at the end; lines
//! written by an earlier hunk are never matched again; there is no fuzz.
//!
//! Where roundtable departs from git, it places or refuses rather than
//! misplaces: a hunk without any context line (`git diff -U0`) away from
//! the start of the file is placed by its header, as `git apply
//! --unidiff-zero` reads it (plain `git apply` lands it at the end of the
//! file), and refused when its removed lines are not there, when an
//! earlier hunk of the file was found away from its header, or when the
//! section's `index` line names other content than the file; one at the
//! start of the file keeps git's whole-file reading unless the `index` line
//! names the file. A text section whose `index` line names the file it
//! applies to as its pre-image must produce the post-image its `index` line
//! names (a hunk whose header lies about its place is refused, where git
//! lands it on the first matching context).
//!
//! Across sections, sections for one path apply in order, as the commits
//! of a series (`format-patch`, `git log -p --reverse`) did: a section
//! that modifies, deletes or renames a path an earlier section created
//! or changed in place sees that result, and a path's final state
//! is the outcome of the last section that touched it — a file modified
//! and then deleted stays deleted (`git apply` writes it back with its
//! intermediate content, because it removes everything before it writes
//! anything). The rest is git's bookkeeping: a copy, and a rename of a
//! path written only as another rename's destination, read the original; a path
//! is free for a new file when any section, earlier or later, deletes or
//! renames it away (so swapped and cyclic renames apply).

use super::binary;
use super::{BinaryHunk, BinaryMethod, Body, FilePatch, FileStatus, Hunk, LineKind, Mode, Patch};
use crate::ErrorCode;
use std::collections::{BTreeMap, HashMap};

/// A file's state: its bytes and whether it is executable, or, for a
/// symbolic link, its target (the link's content, as git stores it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// The content (a link's target).
    pub data: Vec<u8>,
    /// Whether the executable bit is set (never for a link).
    pub executable: bool,
    /// Whether this is a symbolic link whose target is `data`.
    pub symlink: bool,
}

impl TreeFile {
    /// A non-executable file with this content.
    pub fn regular(data: Vec<u8>) -> Self {
        TreeFile {
            data,
            executable: false,
            symlink: false,
        }
    }

    /// A symbolic link to `target`.
    pub fn link(target: Vec<u8>) -> Self {
        TreeFile {
            data: target,
            executable: false,
            symlink: true,
        }
    }
}

/// Whether a symbolic link at `path` pointing at `target` leaves the root,
/// resolved lexically from the link's directory (nothing is followed): an
/// absolute target, one whose `..` climbs above the root, or one that
/// lands in `.git/` or `.roundtable/` (or on a name no [`RepoPath`] may
/// hold) escapes. A target at the root itself, or at a missing file, does
/// not.
///
/// [`RepoPath`]: crate::RepoPath
pub fn link_target_escapes(path: &[u8], target: &[u8]) -> bool {
    if target.first() == Some(&b'/') || target.contains(&0) {
        return true;
    }
    let mut resolved: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    resolved.pop(); // the link's own name
    for component in target.split(|&b| b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => {
                if resolved.pop().is_none() {
                    return true;
                }
            }
            name => resolved.push(name),
        }
    }
    resolved.retain(|c| !c.is_empty());
    !resolved.is_empty() && crate::RepoPath::from_bytes(&resolved.join(&b'/')).is_err()
}

/// A failure of the [`Tree`] the applier reads from or the sink it writes
/// to; carries its own stable code.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", String::from_utf8_lossy(path))]
pub struct TreeError {
    /// The stable code (`io`, `path_escape`, …).
    pub code: ErrorCode,
    /// The path being read or written.
    pub path: Vec<u8>,
    /// The cause.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Where the applier reads current contents from.
pub trait Tree {
    /// The file at `path` (a stripped patch path), or `None` if absent. A
    /// symbolic link at `path` is returned as a link
    /// ([`TreeFile::symlink`], its target as `data`), never followed; the
    /// applier decides whether the section may touch it.
    fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError>;

    /// Whether a file exists at `path`.
    fn exists(&self, path: &[u8]) -> Result<bool, TreeError> {
        Ok(self.read(path)?.is_some())
    }

    /// The file at `path` with its digest and mode: [`read`](Tree::read)
    /// and hash, unless the tree already knows the digest.
    fn read_meta(&self, path: &[u8]) -> Result<Option<(TreeFile, crate::FileMeta)>, TreeError> {
        Ok(self.read(path)?.map(|f| {
            let meta = crate::FileMeta::of(&f);
            (f, meta)
        }))
    }
}

impl Tree for BTreeMap<Vec<u8>, TreeFile> {
    fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError> {
        Ok(self.get(path).cloned())
    }
    fn exists(&self, path: &[u8]) -> Result<bool, TreeError> {
        Ok(self.contains_key(path))
    }
}

/// One result of applying a section: `path` gets `new`, or is removed
/// when `new` is `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    /// The path (as in the patch, stripped).
    pub path: Vec<u8>,
    /// The new state, or `None` for removal.
    pub new: Option<TreeFile>,
}

/// Why a patch does not apply.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// A hunk's pre-image was not found where git would look for it.
    #[error(
        "{}: hunk #{hunk} does not apply: {reason}",
        String::from_utf8_lossy(path)
    )]
    Hunk {
        /// The file.
        path: Vec<u8>,
        /// 1-based hunk number within the file's section.
        hunk: usize,
        /// What did not match.
        reason: &'static str,
    },
    /// The file is not in the state the section needs.
    #[error("{}: {reason}", String::from_utf8_lossy(path))]
    File {
        /// The file.
        path: Vec<u8>,
        /// What is wrong.
        reason: String,
    },
    /// The section uses something roundtable does not apply.
    #[error("{}: {reason}", String::from_utf8_lossy(path))]
    Unsupported {
        /// The file.
        path: Vec<u8>,
        /// What.
        reason: &'static str,
    },
    /// A symbolic link's target, resolved lexically from the link's
    /// directory, leaves the root or lands in `.git/` or `.roundtable/`.
    #[error(
        "{}: the symbolic link's target `{}` leaves the root (resolved from the link's directory; roundtable never follows a link)",
        String::from_utf8_lossy(path),
        String::from_utf8_lossy(target)
    )]
    LinkEscape {
        /// The link.
        path: Vec<u8>,
        /// Its target.
        target: Vec<u8>,
    },
    /// The path is a symbolic link, but the section treats it as a
    /// regular file: nothing is read or written through a link.
    #[error(
        "{}: is a symbolic link, which the patch does not say (never read or written through)",
        String::from_utf8_lossy(path)
    )]
    IsLink {
        /// The path.
        path: Vec<u8>,
    },
    /// Reading the tree or writing a result failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
}

impl ApplyError {
    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApplyError::Hunk { .. } | ApplyError::File { .. } => ErrorCode::PatchDoesNotApply,
            ApplyError::Unsupported { .. } => ErrorCode::UnsupportedPatch,
            ApplyError::LinkEscape { .. } | ApplyError::IsLink { .. } => ErrorCode::PathEscape,
            ApplyError::Tree(e) => e.code,
        }
    }

    /// The path the failure is about.
    pub fn path(&self) -> &[u8] {
        match self {
            ApplyError::Hunk { path, .. }
            | ApplyError::File { path, .. }
            | ApplyError::Unsupported { path, .. }
            | ApplyError::LinkEscape { path, .. }
            | ApplyError::IsLink { path } => path,
            ApplyError::Tree(e) => &e.path,
        }
    }

    fn file(path: &[u8], reason: impl Into<String>) -> Self {
        ApplyError::File {
            path: path.to_vec(),
            reason: reason.into(),
        }
    }
}

enum Entry {
    /// Written by an earlier section; the content is kept only when a later
    /// section reads it. `in_place` when that section created the path or
    /// changed it where it stood (not a rename's or copy's destination):
    /// a later rename or copy of the path then moves that result, as the
    /// next commit of a series would.
    Written {
        content: Option<TreeFile>,
        in_place: bool,
    },
    /// Deleted by an earlier section.
    Deleted,
    /// The source of an earlier rename: still readable, free to recreate.
    RenamedAway,
}

/// Apply `patch` to the files of `tree`, handing each result to `sink` in
/// section order (a rename yields the removal of its source, then the
/// write of its destination). A path's final state is the last outcome
/// handed to `sink` for it.
///
/// Nothing is handed to `sink` for a section until that section has been
/// computed in full; on error, the caller discards what it received. Only
/// contents that a later section reads again are kept in memory, so peak
/// memory is bounded by the largest file, not the size of the change.
pub fn apply<T: Tree + ?Sized>(
    patch: &Patch<'_>,
    tree: &T,
    sink: &mut dyn FnMut(FileOutcome) -> Result<(), TreeError>,
) -> Result<(), ApplyError> {
    walk(patch, tree, None, &mut |step| match step {
        Step::Done(outcome) => sink(outcome).map_err(ApplyError::from),
        Step::Apart { .. } => unreachable!("nothing is computed apart without a queue"),
    })
}

/// The number of sections from which [`apply_on_two_threads`] computes
/// results on a second thread (below it, a thread costs more than it
/// saves).
const APART_SECTIONS: usize = 16;

/// [`apply()`], with each section's result computed on one of two
/// threads where no later section reads it: the sections' bookkeeping and
/// every read of `tree` stay on the calling thread, in section order; the
/// results, the errors and the order in which `sink` receives them are
/// exactly [`apply()`]'s (the first failure in section order is the one
/// reported, whatever the threads' timing). Unlike [`apply()`], nothing
/// reaches `sink` until every section is computed, so memory holds every
/// result: for a caller that keeps them all anyway (a changeset).
pub fn apply_on_two_threads<T: Tree + ?Sized>(
    patch: &Patch<'_>,
    tree: &T,
    sink: &mut dyn FnMut(FileOutcome) -> Result<(), TreeError>,
) -> Result<(), ApplyError> {
    let sections = patch.files().len();
    if sections < APART_SECTIONS {
        return apply(patch, tree, sink);
    }
    let results: Vec<std::sync::OnceLock<Result<Vec<u8>, ApplyError>>> =
        (0..sections).map(|_| std::sync::OnceLock::new()).collect();
    let (queue, jobs) = std::sync::mpsc::channel::<Apart<'_, '_>>();
    let jobs = std::sync::Mutex::new(jobs);
    // Take jobs until the queue is closed and empty.
    let work = || loop {
        let next = jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .recv();
        let Ok(job) = next else { break };
        let result = section_data(job.fp, &job.pre);
        // Each section is sent once.
        let _ = results[job.section].set(result);
    };
    let mut steps = Vec::with_capacity(sections);
    let walked = std::thread::scope(|scope| {
        let helper = scope.spawn(work);
        let walked = walk(patch, tree, Some(&queue), &mut |step| {
            steps.push(step);
            Ok(())
        });
        drop(queue);
        work();
        helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        walked
    });
    let mut results = results;
    for step in steps {
        match step {
            Step::Done(outcome) => sink(outcome)?,
            Step::Apart {
                section,
                renamed_away,
                path,
                executable,
            } => {
                let data = results[section]
                    .take()
                    .expect("every section sent is computed before the queue closes")?;
                if let Some(old) = renamed_away {
                    sink(FileOutcome {
                        path: old,
                        new: None,
                    })?;
                }
                sink(FileOutcome {
                    path,
                    new: Some(TreeFile {
                        data,
                        executable,
                        symlink: false,
                    }),
                })?;
            }
        }
    }
    walked
}

/// A section's result to compute apart: the section and its pre-image.
struct Apart<'p, 'a> {
    /// The section's index.
    section: usize,
    /// The section.
    fp: &'p FilePatch<'a>,
    /// The content it applies to.
    pre: Vec<u8>,
}

/// What [`walk`] yields per outcome, in section order.
enum Step {
    /// An outcome computed in place.
    Done(FileOutcome),
    /// A regular file written at `path` whose bytes are section
    /// `section`'s result, computed apart.
    /// A rename's source is removed first (`renamed_away`), once the
    /// result is known to exist.
    Apart {
        section: usize,
        renamed_away: Option<Vec<u8>>,
        path: Vec<u8>,
        executable: bool,
    },
}

/// Which section last reads each path through the table (modifications
/// and deletions read an earlier section's result; renames one written in
/// place).
fn last_readers<'p>(patch: &'p Patch<'_>) -> HashMap<&'p [u8], usize> {
    let mut last_reader = HashMap::new();
    for (i, fp) in patch.files().iter().enumerate() {
        if matches!(
            fp.status(),
            FileStatus::Modified | FileStatus::Deleted | FileStatus::Renamed
        ) {
            if let Some(p) = fp.old_path() {
                last_reader.insert(p, i);
            }
        }
    }
    last_reader
}

/// Paths some section deletes or renames away, earlier or later: like git
/// (`prepare_fn_table`), a new file, rename or copy may take such a path
/// even while it still exists, which is how swapped and cyclic renames
/// (`git diff -M -B`) apply: a path's final state is its last write,
/// whatever removal the sink also received for it.
fn to_be_removed<'p>(patch: &'p Patch<'_>) -> std::collections::HashSet<&'p [u8]> {
    patch
        .files()
        .iter()
        .filter(|fp| matches!(fp.status(), FileStatus::Deleted | FileStatus::Renamed))
        .filter_map(|fp| fp.old_path())
        .collect()
}

/// `unsupported` for a gitlink, and a refusal for a section that turns a
/// file into a link or back (git writes that as a deletion and a creation).
fn check_modes(fp: &FilePatch<'_>) -> Result<(), ApplyError> {
    for mode in [fp.old_mode(), fp.new_mode()].into_iter().flatten() {
        if !mode.is_regular_file() && mode != Mode::SYMLINK {
            return Err(ApplyError::Unsupported {
                path: fp.path().to_vec(),
                reason: "submodules (gitlinks) are not applied: roundtable does not manage nested repositories",
            });
        }
    }
    if let (Some(old), Some(new)) = (fp.old_mode(), fp.stated_new_mode()) {
        if (old == Mode::SYMLINK) != (new == Mode::SYMLINK) {
            return Err(ApplyError::file(
                fp.path(),
                format!("new mode ({new}) does not match old mode ({old}): a file becomes a symbolic link (or back) as a deletion and a creation"),
            ));
        }
    }
    Ok(())
}

/// The content section `fp` applies to — an earlier section's result
/// from `table`, or the file in `tree` — with the section's status (a
/// plain diff adding lines to a missing file is a creation).
fn pre_image<T: Tree + ?Sized>(
    fp: &FilePatch<'_>,
    table: &HashMap<Vec<u8>, Entry>,
    tree: &T,
) -> Result<(TreeFile, FileStatus), ApplyError> {
    let mut status = fp.status();
    let pre: TreeFile = match status {
        FileStatus::Added => TreeFile::regular(Vec::new()),
        FileStatus::Renamed | FileStatus::Copied => {
            let old = fp.old_path().expect("renames and copies have an old path");
            match table.get(old) {
                // A series (`format-patch`, `git log -p --reverse`):
                // the path was changed by an earlier section, and this
                // one moves that result. (A copy reads the original:
                // in one `git diff -C`, a copy's source is the
                // pre-image even where another section changes it.)
                Some(Entry::Written {
                    content: Some(content),
                    in_place: true,
                }) if status == FileStatus::Renamed => content.clone(),
                Some(Entry::Deleted) => {
                    return Err(ApplyError::file(old, "was deleted by an earlier section"))
                }
                // A rename's or copy's destination that this section
                // moves away again reads the original, which is how
                // swapped and cyclic renames (`git diff -M -B`) apply.
                _ => tree
                    .read(old)?
                    .ok_or_else(|| ApplyError::file(old, "does not exist in the tree"))?,
            }
        }
        FileStatus::Modified | FileStatus::Deleted => {
            let old = fp
                .old_path()
                .expect("modifications and deletions have an old path");
            match table.get(old) {
                Some(Entry::Written {
                    content: Some(content),
                    ..
                }) => content.clone(),
                Some(Entry::Written { content: None, .. }) => {
                    unreachable!("kept because a later section reads it")
                }
                Some(Entry::Deleted) => {
                    return Err(ApplyError::file(old, "was deleted by an earlier section"))
                }
                Some(Entry::RenamedAway) | None => match tree.read(old)? {
                    Some(f) => f,
                    // A plain diff that only adds lines to a missing
                    // file creates it (git infers creation the same way).
                    None if !fp.is_git()
                        && status == FileStatus::Modified
                        && fp.hunks().iter().all(|h| h.old_lines() == 0) =>
                    {
                        status = FileStatus::Added;
                        TreeFile::regular(Vec::new())
                    }
                    None => return Err(ApplyError::file(old, "does not exist in the tree")),
                },
            }
        }
    };
    Ok((pre, status))
}

/// The sections of `patch` applied to `tree` in order, each outcome
/// handed to `step`. With a `queue`, a section's result that no later
/// section reads (and that is not a deletion, which must come out empty,
/// nor a link, whose target is checked) is sent there to compute and
/// yielded as [`Step::Apart`]; the bookkeeping goes on without it, since
/// nothing after it depends on its bytes. Stops at the first failure of
/// the sections it computes itself (the caller orders it after those
/// computed apart).
fn walk<'p, 'a, T: Tree + ?Sized>(
    patch: &'p Patch<'a>,
    tree: &T,
    queue: Option<&std::sync::mpsc::Sender<Apart<'p, 'a>>>,
    step: &mut dyn FnMut(Step) -> Result<(), ApplyError>,
) -> Result<(), ApplyError> {
    let last_reader = last_readers(patch);
    let to_be_removed = to_be_removed(patch);
    let mut table: HashMap<Vec<u8>, Entry> = HashMap::new();

    for (i, fp) in patch.files().iter().enumerate() {
        check_modes(fp)?;
        let free_for_new =
            |path: &[u8], table: &HashMap<Vec<u8>, Entry>| -> Result<bool, ApplyError> {
                Ok(match table.get(path) {
                    Some(Entry::Written { .. }) => false,
                    Some(Entry::Deleted | Entry::RenamedAway) => true,
                    None => {
                        to_be_removed.contains(path)
                            || below_a_removed_path(path, &to_be_removed)
                            || !tree.exists(path)?
                    }
                })
            };
        let (pre, status) = pre_image(fp, &table, tree)?;
        if status != FileStatus::Added {
            check_pre_type(fp, &pre)?;
        }
        if matches!(
            status,
            FileStatus::Added | FileStatus::Renamed | FileStatus::Copied
        ) {
            let new = fp.new_path().expect("this status has a new path");
            if !free_for_new(new, &table)? {
                return Err(ApplyError::file(new, "already exists in the tree"));
            }
        }

        let written = (status != FileStatus::Deleted).then(|| {
            let new = fp.new_path().expect("non-deletions have a new path");
            let symlink = fp
                .stated_new_mode()
                .map_or(pre.symlink, |m| m == Mode::SYMLINK);
            // Kept for a later section that reads it.
            let keep = last_reader.get(new).is_some_and(|&j| j > i);
            (new, symlink, keep)
        });
        let apart = match (queue, written) {
            (Some(queue), Some((_, false, false))) => Some(queue),
            _ => None,
        };
        let data = match apart {
            Some(_) => None,
            None => Some(section_data(fp, &pre.data)?),
        };

        if status == FileStatus::Deleted {
            let data = data.expect("a deletion is computed in place");
            let old = fp.old_path().expect("deletions have an old path");
            if !data.is_empty() {
                return Err(ApplyError::file(
                    old,
                    "the deletion leaves content behind (the file has more than the patch removes)",
                ));
            }
            table.insert(old.to_vec(), Entry::Deleted);
            step(Step::Done(FileOutcome {
                path: old.to_vec(),
                new: None,
            }))?;
            continue;
        }
        // The source a rename leaves, handed over with its destination.
        let mut renamed_away = None;
        if status == FileStatus::Renamed {
            let old = fp.old_path().expect("renames have an old path");
            // The source leaves unless an earlier section wrote it as
            // another rename's or copy's destination: then this section
            // moved the original away, and that write stands.
            let written_elsewhere = matches!(
                table.get(old),
                Some(Entry::Written {
                    in_place: false,
                    ..
                })
            );
            if !written_elsewhere {
                table.insert(old.to_vec(), Entry::RenamedAway);
                renamed_away = Some(old);
            }
        }
        let (new, symlink, keep) = written.expect("only a deletion writes nothing");
        let executable = !symlink
            && fp
                .stated_new_mode()
                .map_or(pre.executable, |m| m.is_executable());
        let in_place = matches!(status, FileStatus::Added | FileStatus::Modified);
        let Some(data) = data else {
            // Computed apart: nothing after this section reads its bytes.
            table.insert(
                new.to_vec(),
                Entry::Written {
                    content: None,
                    in_place,
                },
            );
            if let Some(queue) = apart {
                // The receiving side outlives the walk: a send fails only
                // if it panicked, which the caller's join reports.
                let _ = queue.send(Apart {
                    section: i,
                    fp,
                    pre: pre.data,
                });
            }
            step(Step::Apart {
                section: i,
                renamed_away: renamed_away.map(<[u8]>::to_vec),
                path: new.to_vec(),
                executable,
            })?;
            continue;
        };
        if let Some(old) = renamed_away {
            step(Step::Done(FileOutcome {
                path: old.to_vec(),
                new: None,
            }))?;
        }
        if symlink {
            check_link(new, &data)?;
        }
        let file = TreeFile {
            data,
            executable,
            symlink,
        };
        table.insert(
            new.to_vec(),
            Entry::Written {
                content: keep.then(|| file.clone()),
                in_place,
            },
        );
        step(Step::Done(FileOutcome {
            path: new.to_vec(),
            new: Some(file),
        }))?;
    }
    Ok(())
}

/// The bytes section `fp` makes of `pre`: its hunks applied (and checked
/// against its `index` line), or its binary patch.
fn section_data(fp: &FilePatch<'_>, pre: &[u8]) -> Result<Vec<u8>, ApplyError> {
    Ok(match fp.body() {
        Body::Text(hunks) if hunks.is_empty() => pre.to_vec(),
        Body::Text(hunks) => {
            let named = index_names(fp, pre);
            let data = apply_hunks_at(pre, hunks, named.is_some()).map_err(|(hunk, reason)| {
                ApplyError::Hunk {
                    path: fp.old_path().unwrap_or(fp.path()).to_vec(),
                    hunk,
                    reason,
                }
            })?;
            check_index(fp, hunks, named, &data)?;
            data
        }
        Body::BinaryMarker(_) => {
            return Err(ApplyError::file(
                fp.path(),
                "the binary change carries no data (`Binary files … differ`); regenerate it with `git diff --binary`",
            ))
        }
        Body::Binary { forward, .. } => binary_result(fp, pre, forward)?,
    })
}

/// The hex length of the object ids (40 or 64) with which the section's
/// `index` line names `pre` as its pre-image, if it does: the file is then
/// exactly the one the diff was made from. An id shorter than git's
/// shortest abbreviation (7) names nothing.
fn index_names(fp: &FilePatch<'_>, pre: &[u8]) -> Option<usize> {
    let (old_id, _) = fp.index()?;
    if old_id.len() < 7 || old_id.bytes().all(|b| b == b'0') {
        return None;
    }
    // An abbreviated id may be of either object format.
    let formats: &[usize] = if old_id.len() > 40 { &[64] } else { &[40, 64] };
    formats
        .iter()
        .copied()
        .find(|&n| binary::blob_id(pre, n).is_some_and(|full| full.starts_with(old_id)))
}

/// Check a text section's result against its `index` line, when the line
/// names the content the section was applied to (`named`, from
/// [`index_names`]).
///
/// git's `index <pre>..<post>` names the blobs before and after (usually
/// abbreviated). When the pre-image id names the content found, the file
/// is exactly the one the diff was made from, so the result must be the
/// post-image: a hunk that landed anywhere else (a header that lies about
/// its lines, a context that repeats) is refused rather than landed. When
/// the pre-image id names other content, the file changed since the diff
/// was made: hunks with context are still found by their context, but a
/// hunk without any (`-U0`) could only be placed on the named content, so
/// it is refused.
fn check_index(
    fp: &FilePatch<'_>,
    hunks: &[Hunk<'_>],
    named: Option<usize>,
    post: &[u8],
) -> Result<(), ApplyError> {
    let Some((old_id, new_id)) = fp.index() else {
        return Ok(());
    };
    let is_null = |id: &str| id.bytes().all(|b| b == b'0');
    if is_null(old_id) || old_id.len() < 7 {
        return Ok(());
    }
    let path = fp.old_path().unwrap_or(fp.path());
    match named {
        Some(hex_len) => {
            let found = binary::blob_id(post, hex_len).expect("40 or 64 hex digits");
            if !is_null(new_id) && new_id.len() >= 7 && !found.starts_with(new_id) {
                return Err(ApplyError::file(
                    path,
                    format!(
                        "the file is the pre-image its index line names ({old_id}), but the hunks make blob {found}, not the post-image {new_id}: a hunk would land away from where the diff was made"
                    ),
                ));
            }
        }
        None => {
            if hunks.iter().any(floating) {
                return Err(ApplyError::file(
                    path,
                    format!(
                        "a hunk without context lines can only be placed on the content the diff was made from (its index line names blob {old_id}), and the file is no longer that content"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Check that what a section found at its old path is what the section
/// says it is: a link where it names mode 120000, a regular file where it
/// names a file's mode or (outside a git diff) none. A git section without
/// a mode (a pure rename or copy) takes what it finds, as `git apply`
/// does. A link read is checked to stay inside the root, so nothing
/// roundtable records (a rollback recreates the before state) escapes.
fn check_pre_type(fp: &FilePatch<'_>, pre: &TreeFile) -> Result<(), ApplyError> {
    let path = fp.old_path().unwrap_or(fp.path());
    let expect_link = match fp.old_mode() {
        Some(m) => m == Mode::SYMLINK,
        None if fp.is_git() => pre.symlink,
        None => false,
    };
    match (expect_link, pre.symlink) {
        (false, true) => Err(ApplyError::IsLink {
            path: path.to_vec(),
        }),
        (true, false) => Err(ApplyError::file(
            path,
            "is a regular file, but the patch changes a symbolic link there",
        )),
        (true, true) => check_link(path, &pre.data),
        (false, false) => Ok(()),
    }
}

/// A link at `path` to `target` may be written: the target is a path
/// (not empty, no NUL byte) and stays inside the root.
fn check_link(path: &[u8], target: &[u8]) -> Result<(), ApplyError> {
    if target.is_empty() {
        return Err(ApplyError::file(
            path,
            "a symbolic link needs a target (its content is empty)",
        ));
    }
    if link_target_escapes(path, target) {
        return Err(ApplyError::LinkEscape {
            path: path.to_vec(),
            target: target.to_vec(),
        });
    }
    Ok(())
}

/// Whether a directory on the way to `path` is a path some section
/// removes: that is a file or a link now, so nothing is below it (and a
/// link there is not looked through).
pub(crate) fn below_a_removed_path(
    path: &[u8],
    removed: &std::collections::HashSet<&[u8]>,
) -> bool {
    path.iter()
        .enumerate()
        .any(|(i, &b)| b == b'/' && removed.contains(&path[..i]))
}

/// Apply `patch` to an in-memory tree and return the whole resulting tree.
pub fn apply_in_memory(
    patch: &Patch<'_>,
    tree: &BTreeMap<Vec<u8>, TreeFile>,
) -> Result<BTreeMap<Vec<u8>, TreeFile>, ApplyError> {
    let mut finals: BTreeMap<Vec<u8>, Option<TreeFile>> = BTreeMap::new();
    apply(patch, tree, &mut |o: FileOutcome| {
        finals.insert(o.path, o.new);
        Ok(())
    })?;
    let mut out = tree.clone();
    for (path, new) in finals {
        match new {
            Some(f) => out.insert(path, f),
            None => out.remove(&path),
        };
    }
    Ok(out)
}

fn binary_result(
    fp: &FilePatch<'_>,
    pre: &[u8],
    forward: &BinaryHunk,
) -> Result<Vec<u8>, ApplyError> {
    let path = fp.path();
    let (old_id, new_id) = fp
        .index()
        .ok_or_else(|| ApplyError::file(path, "a binary patch needs an `index` line"))?;
    let hex_len = old_id.len();
    if new_id.len() != hex_len || !(hex_len == 40 || hex_len == 64) {
        return Err(ApplyError::file(path, "a binary patch needs full object ids on its `index` line (`git diff --binary` writes them)"));
    }
    let is_null = |id: &str| id.bytes().all(|b| b == b'0');
    let id_of = |data: &[u8]| binary::blob_id(data, hex_len).expect("40 or 64 hex digits");
    if is_null(old_id) {
        if !pre.is_empty() {
            return Err(ApplyError::file(
                path,
                "the binary patch expects no pre-image",
            ));
        }
    } else {
        let found = id_of(pre);
        if found != old_id {
            return Err(ApplyError::file(
                path,
                format!("the binary pre-image does not match the patch (expected blob {old_id}, found {found})"),
            ));
        }
    }
    let payload = forward.inflate().map_err(|e| ApplyError::file(path, e))?;
    let result = match forward.method {
        BinaryMethod::Literal => payload,
        BinaryMethod::Delta => {
            binary::apply_delta(pre, &payload).map_err(|e| ApplyError::file(path, e))?
        }
    };
    if is_null(new_id) {
        if !result.is_empty() {
            return Err(ApplyError::file(
                path,
                "the binary patch should leave no content",
            ));
        }
    } else {
        let found = id_of(&result);
        if found != new_id {
            return Err(ApplyError::file(
                path,
                format!(
                    "the binary patch produces blob {found}, not the {new_id} its index line names"
                ),
            ));
        }
    }
    Ok(result)
}

#[derive(Clone, Copy)]
struct ImageLine<'x> {
    bytes: &'x [u8],
    patched: bool,
}

/// A file's lines as a gap buffer: hunks usually apply in order, so moving
/// the gap to each hunk costs the distance from the previous one, not the
/// length of the file.
struct Image<'x> {
    left: Vec<ImageLine<'x>>,
    /// Lines after the gap, last line first.
    right: Vec<ImageLine<'x>>,
}

impl<'x> Image<'x> {
    fn new(data: &'x [u8]) -> Self {
        let mut right: Vec<ImageLine<'x>> = Vec::new();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', data) {
            right.push(ImageLine {
                bytes: &data[start..=end],
                patched: false,
            });
            start = end + 1;
        }
        if start < data.len() {
            right.push(ImageLine {
                bytes: &data[start..],
                patched: false,
            });
        }
        right.reverse();
        Image {
            left: Vec::new(),
            right,
        }
    }

    fn len(&self) -> usize {
        self.left.len() + self.right.len()
    }

    fn get(&self, i: usize) -> ImageLine<'x> {
        if i < self.left.len() {
            self.left[i]
        } else {
            self.right[self.right.len() - 1 - (i - self.left.len())]
        }
    }

    fn move_gap(&mut self, pos: usize) {
        while self.left.len() > pos {
            let l = self.left.pop().expect("left is longer than pos");
            self.right.push(l);
        }
        while self.left.len() < pos {
            let l = self.right.pop().expect("pos is within the image");
            self.left.push(l);
        }
    }

    fn replace(&mut self, pos: usize, remove: usize, with: &[&'x [u8]]) {
        self.move_gap(pos);
        let keep = self.right.len() - remove;
        self.right.truncate(keep);
        self.left.extend(with.iter().map(|&bytes| ImageLine {
            bytes,
            patched: true,
        }));
    }

    fn into_bytes(self) -> Vec<u8> {
        let total: usize = self
            .left
            .iter()
            .chain(&self.right)
            .map(|l| l.bytes.len())
            .sum();
        let mut out = Vec::with_capacity(total);
        for l in self.left.iter().chain(self.right.iter().rev()) {
            out.extend_from_slice(l.bytes);
        }
        out
    }

    fn matches(&self, pos: usize, pre: &[&[u8]], match_beginning: bool, match_end: bool) -> bool {
        let n = self.len();
        if pos + pre.len() > n
            || (match_end && pos + pre.len() != n)
            || (match_beginning && pos != 0)
        {
            return false;
        }
        pre.iter().enumerate().all(|(k, want)| {
            let l = self.get(pos + k);
            !l.patched && l.bytes == *want
        })
    }

    /// git's `find_pos`: try `line`, then `line+1`, `line-1`, `line+2`, …
    /// (only `line` for a hunk without context).
    fn find(&self, placement: Placement, pre: &[&[u8]]) -> Option<usize> {
        let Placement {
            match_beginning,
            match_end,
            line,
            exact,
            ..
        } = placement;
        if exact {
            return self.matches(line, pre, false, false).then_some(line);
        }
        let n = self.len();
        let line = if match_beginning {
            0
        } else if match_end {
            n.checked_sub(pre.len()).unwrap_or(n)
        } else {
            line.min(n)
        };
        if match_beginning || match_end {
            // Only one position can satisfy an anchored hunk.
            return self
                .matches(line, pre, match_beginning, match_end)
                .then_some(line);
        }
        let (mut back, mut fwd) = (line, line);
        let mut current = line;
        let mut i = 0usize;
        loop {
            if self.matches(current, pre, false, false) {
                return Some(current);
            }
            loop {
                if back == 0 && fwd == n {
                    return None;
                }
                if i & 1 == 1 {
                    if back == 0 {
                        i += 1;
                        continue;
                    }
                    back -= 1;
                    current = back;
                } else {
                    if fwd == n {
                        i += 1;
                        continue;
                    }
                    fwd += 1;
                    current = fwd;
                }
                break;
            }
            i += 1;
        }
    }
}

/// Why a hunk's pre-image was not found (only computed on failure).
fn mismatch_reason(image: &Image<'_>, placement: Placement, pre: &[&[u8]]) -> &'static str {
    if placement.exact {
        return if placement.line + pre.len() > image.len() {
            "it has no context lines, so only its header places it (as `git apply --unidiff-zero` reads it), and the header points past the end of the file"
        } else {
            "it has no context lines, so only its header places it (as `git apply --unidiff-zero` reads it), and its removed lines are not at the line the header names"
        };
    }
    let Placement {
        match_beginning,
        match_end,
        ..
    } = placement;
    // git compares only the pre-image's bytes, so a last line marked
    // `\ No newline at end of file` also "matches" a line that has one, and
    // git then drops that newline or glues the next line on. roundtable
    // refuses instead, and says so.
    if let Some((last, rest)) = pre.split_last() {
        if !last.ends_with(b"\n") {
            let with_newline = [*last, b"\n".as_slice()].concat();
            let mut fixed: Vec<&[u8]> = rest.to_vec();
            fixed.push(&with_newline);
            let without_end = Placement {
                match_end: false,
                ..placement
            };
            if image.find(without_end, &fixed).is_some() {
                return "the hunk says its last line has no final newline, but in the file that line has one";
            }
        }
    }
    match (match_beginning, match_end) {
        (true, true) => "the file is not exactly the hunk's pre-image",
        (true, false) => "its context and removed lines are not at the start of the file, where a hunk starting at line 1 must match",
        (false, true) => "its context and removed lines are not at the end of the file, where a hunk without trailing context must match",
        (false, false) => "its context and removed lines are not in the file",
    }
}

/// Where a hunk may match, as its lines and header say.
#[derive(Clone, Copy)]
struct Placement {
    /// It must match at the start of the file.
    match_beginning: bool,
    /// It must match at the end of the file.
    match_end: bool,
    /// The 0-based image line its header puts it at.
    line: usize,
    /// It has no context lines: it is placed at `line` and nowhere else.
    exact: bool,
    /// It has no context lines and does not start the file: only its
    /// header says where it goes, so it cannot follow the file if the
    /// file moved since the diff was made.
    floating: bool,
}

/// Whether a hunk has no context line and does not start the file (see
/// [`Placement::floating`]).
fn floating(hunk: &Hunk<'_>) -> bool {
    hunk.old_start() > 1 && hunk.lines().all(|l| l.kind != LineKind::Context)
}

/// Fill `pre` and `post` with a hunk's pre- and post-image lines; returns
/// where it may match.
///
/// A hunk with context matches as `git apply` matches it. A hunk without
/// any context line (`git diff -U0`) has nothing to be found by: `git
/// apply` without `--unidiff-zero` anchors it at the end of the file (a
/// hunk "without trailing context"), landing an insertion meant for line 3
/// after the last line. roundtable places it by its header alone, as
/// `--unidiff-zero` reads the header (`@@ -2,0 +3 @@` inserts after line
/// 2), and refuses it when its removed lines are not exactly there. One
/// that starts the file keeps git's reading (the whole file, start to
/// end: a rewrite that shares no line) unless `named`, the section's
/// `index` line naming the file as the diff's pre-image, says the header
/// is the file's.
fn images<'p>(
    hunk: &'p Hunk<'_>,
    named: bool,
    pre: &mut Vec<&'p [u8]>,
    post: &mut Vec<&'p [u8]>,
) -> Placement {
    pre.clear();
    post.clear();
    let mut trailing = 0usize;
    let mut context = false;
    for line in hunk.lines() {
        match line.kind {
            LineKind::Context => {
                pre.push(line.content);
                post.push(line.content);
                trailing += 1;
                context = true;
            }
            LineKind::Delete => {
                pre.push(line.content);
                trailing = 0;
            }
            LineKind::Insert => {
                post.push(line.content);
                trailing = 0;
            }
        }
    }
    if !context && (hunk.old_start() > 1 || named) {
        // `+c,0` names the line after which lines were removed; `+c,d`
        // (d > 0) the first line of the result.
        let line = if hunk.new_lines() == 0 {
            hunk.new_start() as usize
        } else {
            hunk.new_start().saturating_sub(1) as usize
        };
        return Placement {
            match_beginning: false,
            match_end: false,
            line,
            exact: true,
            floating: hunk.old_start() > 1,
        };
    }
    Placement {
        match_beginning: hunk.old_start() <= 1,
        match_end: trailing == 0,
        line: hunk.new_start().saturating_sub(1) as usize,
        exact: false,
        floating: false,
    }
}

/// The common case of [`apply_hunks`] without building a line image: each
/// hunk matches exactly where [`Image::find`] tries first, below the lines
/// earlier hunks produced, so the result is the untouched runs of `old`
/// copied whole between the hunks' post-images. `None` as soon as a hunk
/// does not match there: the general search then starts over and decides.
fn apply_in_order(old: &[u8], hunks: &[Hunk<'_>], named: bool) -> Option<Vec<u8>> {
    // Line i of `old` is old[bounds[i]..bounds[i + 1]].
    let mut bounds = Vec::with_capacity(old.len() / 32 + 2);
    bounds.push(0);
    bounds.extend(memchr::memchr_iter(b'\n', old).map(|e| e + 1));
    if bounds.last() != Some(&old.len()) {
        bounds.push(old.len());
    }
    let lines = bounds.len() - 1;
    let mut out = Vec::with_capacity(old.len() + old.len() / 8);
    // The image is `out` (out_lines lines, final) then old[next..].
    let (mut out_lines, mut next) = (0usize, 0usize);
    let (mut pre, mut post) = (Vec::new(), Vec::new());
    let any_floating = hunks.iter().any(floating);
    for hunk in hunks {
        let Placement {
            match_beginning,
            match_end,
            line,
            exact,
            ..
        } = images(hunk, named, &mut pre, &mut post);
        let n = out_lines + (lines - next);
        let pos = if exact {
            line
        } else if match_beginning {
            0
        } else if match_end {
            n.checked_sub(pre.len()).unwrap_or(n)
        } else {
            line.min(n)
        };
        // A hunk placed away from its header (the file moved) makes a
        // later hunk without context unplaceable: the general search
        // decides, and refuses it.
        if any_floating && pos != line {
            return None;
        }
        if pos < out_lines
            || pos + pre.len() > n
            || (match_end && pos + pre.len() != n)
            || (match_beginning && pos != 0)
        {
            return None;
        }
        let from = next + (pos - out_lines);
        let matched = pre
            .iter()
            .enumerate()
            .all(|(k, want)| old[bounds[from + k]..bounds[from + k + 1]] == **want);
        if !matched {
            return None;
        }
        out.extend_from_slice(&old[bounds[next]..bounds[from]]);
        for l in &post {
            out.extend_from_slice(l);
        }
        next = from + pre.len();
        out_lines = pos + post.len();
    }
    out.extend_from_slice(&old[bounds[next]..]);
    Some(out)
}

/// Apply text hunks to `old`, as `git apply` does — except that a hunk
/// without context lines away from the start of the file is placed by its
/// header (as `git apply --unidiff-zero` reads it), not at the end of the
/// file. On failure, returns the 1-based number of the hunk that did not
/// apply and why.
pub fn apply_hunks(old: &[u8], hunks: &[Hunk<'_>]) -> Result<Vec<u8>, (usize, &'static str)> {
    apply_hunks_at(old, hunks, false)
}

/// [`apply_hunks`], `named` when the section's `index` line names `old` as
/// the diff's pre-image (then every hunk without context is placed by its
/// header, one at the start of the file too).
fn apply_hunks_at(
    old: &[u8],
    hunks: &[Hunk<'_>],
    named: bool,
) -> Result<Vec<u8>, (usize, &'static str)> {
    if let Some(new) = apply_in_order(old, hunks, named) {
        return Ok(new);
    }
    let mut image = Image::new(old);
    let mut pre: Vec<&[u8]> = Vec::new();
    let mut post: Vec<&[u8]> = Vec::new();
    let mut moved = false;
    for (i, hunk) in hunks.iter().enumerate() {
        let placement = images(hunk, named, &mut pre, &mut post);
        if placement.floating && moved {
            return Err((
                i + 1,
                "it has no context lines, so only its header places it, and an earlier hunk of the file was found away from where its header put it (the file changed since the diff was made)",
            ));
        }
        let Some(pos) = image.find(placement, &pre) else {
            return Err((i + 1, mismatch_reason(&image, placement, &pre)));
        };
        moved |= pos != placement.line;
        image.replace(pos, pre.len(), &post);
    }
    Ok(image.into_bytes())
}

#[cfg(test)]
mod tests;
