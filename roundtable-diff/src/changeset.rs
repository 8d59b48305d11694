//! [`Changeset`]: the one normalized form every proposal becomes.
//!
//! A unified diff and an Opcore edit plan both turn into a changeset, built
//! against the current files by reading only the files they touch.
//! Everything downstream — coverage, policy, validation, apply, rollback —
//! works on changesets, never on patch text: each touched path carries its
//! precondition (the exact digest and mode it must have now, or that it must
//! be absent) and its complete resulting content and mode.

use crate::{Digest, RepoPath};
use roundtable_base::two_threads;
use serde::{Deserialize, Serialize};

mod operation;
pub use operation::OperationKind;

pub mod render;

/// A file's state as a precondition: its digest and executable bit, and
/// whether it is a symbolic link (then the digest is of its target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileMeta {
    /// `blob:sha256:` of the bytes (a link's target).
    pub digest: Digest,
    /// Whether the executable bit is set.
    pub executable: bool,
    /// Whether it is a symbolic link (serialized only when it is).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
}

/// The results' size from which [`Changeset::after_metas`] hashes on two
/// threads (below it, a thread costs more than it saves).
const HASH_APART_BYTES: usize = 4 << 20;

/// A file's complete resulting state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// The bytes (a link's target).
    pub data: Vec<u8>,
    /// Whether the executable bit is set.
    pub executable: bool,
    /// Whether it is a symbolic link to `data`.
    pub symlink: bool,
}

impl FileMeta {
    /// The digest and mode of a file in a [`Tree`](crate::diff::Tree).
    pub fn of(file: &crate::diff::TreeFile) -> FileMeta {
        FileMeta {
            digest: Digest::of(&file.data),
            executable: file.executable,
            symlink: file.symlink,
        }
    }
}

impl FileContent {
    /// The digest and mode of this content.
    pub fn meta(&self) -> FileMeta {
        FileMeta {
            digest: Digest::of(&self.data),
            executable: self.executable,
            symlink: self.symlink,
        }
    }
}

/// What happens to a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Operation {
    /// The path is created (it must be absent now).
    Create,
    /// The path's content and/or mode changes.
    Modify,
    /// The path is removed.
    Delete,
    /// The path is created from another path, which is removed
    /// (that path has its own [`Operation::RenamedAway`] entry).
    Rename {
        /// The source path.
        from: RepoPath,
    },
    /// The path is removed because it was renamed to `to`.
    RenamedAway {
        /// The destination path.
        to: RepoPath,
    },
    /// The path is created as a copy of another path (which is unchanged).
    Copy {
        /// The source path.
        from: RepoPath,
    },
}

impl Operation {
    /// The stable spelling: `create`, `modify`, `delete`, `rename`,
    /// `renamed_away`, `copy`.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Its kind, without the other path.
    pub fn kind(&self) -> OperationKind {
        use OperationKind as K;
        match self {
            Operation::Create => K::Create,
            Operation::Modify => K::Modify,
            Operation::Delete => K::Delete,
            Operation::Rename { .. } => K::Rename,
            Operation::RenamedAway { .. } => K::RenamedAway,
            Operation::Copy { .. } => K::Copy,
        }
    }
}

/// One touched path: what must hold now, and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path.
    pub path: RepoPath,
    /// What happens to it.
    pub operation: Operation,
    /// The precondition: the state it must have now, or `None` for "must
    /// be absent".
    pub before: Option<FileMeta>,
    /// The result: the complete new state, or `None` for "removed".
    pub after: Option<FileContent>,
}

impl FileChange {
    /// `Some((before, after))` executable bits when the mode changes.
    pub fn mode_change(&self) -> Option<(bool, bool)> {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) if b.executable != a.executable => {
                Some((b.executable, a.executable))
            }
            _ => None,
        }
    }
}

/// A normalized change: one [`FileChange`] per touched path, sorted by path.
#[derive(Debug, Clone, Default)]
pub struct Changeset {
    files: Vec<FileChange>,
    /// Each result's digest and mode, computed once when first asked for.
    afters: std::sync::OnceLock<Vec<Option<FileMeta>>>,
    /// For an agent-native change: where each hunk matched, per path it
    /// edited (a record of how the changeset was found, not part of it:
    /// equality ignores it).
    matches: std::collections::BTreeMap<RepoPath, Vec<crate::edit::agent::MatchedHunk>>,
}

impl PartialEq for Changeset {
    fn eq(&self, other: &Changeset) -> bool {
        self.files == other.files
    }
}

impl Eq for Changeset {}

/// A changeset that names one path twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: touched twice in one changeset")]
pub struct DuplicatePath(pub RepoPath);

impl Changeset {
    /// A changeset of these changes; each path may appear once.
    pub fn new(mut files: Vec<FileChange>) -> Result<Changeset, DuplicatePath> {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(w) = files.windows(2).find(|w| w[0].path == w[1].path) {
            return Err(DuplicatePath(w[0].path.clone()));
        }
        Ok(Changeset {
            files,
            afters: Default::default(),
            matches: Default::default(),
        })
    }

    /// This changeset, recording where the hunks of the change it was
    /// made from matched ([`edit::agent`](crate::edit::agent)).
    pub fn with_matches(
        mut self,
        matches: std::collections::BTreeMap<RepoPath, Vec<crate::edit::agent::MatchedHunk>>,
    ) -> Changeset {
        self.matches = matches;
        self
    }

    /// Where the hunks that edit `path` matched, in hunk order (empty for
    /// a unified diff or an edit plan).
    pub fn matches(&self, path: &RepoPath) -> &[crate::edit::agent::MatchedHunk] {
        self.matches.get(path).map_or(&[], Vec::as_slice)
    }

    /// The changes, sorted by path.
    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    /// The digest and mode of each change's result (`None`: removed), in
    /// the order of [`files`](Changeset::files); hashed once per changeset.
    pub fn after_metas(&self) -> &[Option<FileMeta>] {
        self.afters.get_or_init(|| {
            let meta = |f: &FileChange| f.after.as_ref().map(FileContent::meta);
            let size = |f: &FileChange| f.after.as_ref().map_or(0, |c| c.data.len());
            let bytes: usize = self.files.iter().map(size).sum();
            if bytes < HASH_APART_BYTES {
                return self.files.iter().map(meta).collect();
            }
            // A large change's results are hashed on two threads, halved
            // by bytes.
            let (first, second) = two_threads::halves(&self.files, bytes, size);
            let (rest, mut out) = two_threads::both(
                true,
                || second.iter().map(meta).collect::<Vec<_>>(),
                || first.iter().map(meta).collect::<Vec<_>>(),
            );
            out.extend(rest);
            out
        })
    }

    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The change's identity, `v2:sha256:<hex>`: per touched path (in
    /// path order) its operation, the other path of a rename or copy, the
    /// modes before and after and, for text, each hunk's removed and added
    /// lines **in their place** — the [`CHANGE_CONTEXT`] old lines on
    /// either side of it (fewer at the start or end of the file, and
    /// whether it is there) and the qualified name of the innermost symbol
    /// of the old content that encloses it (`symbols` lists a file's
    /// symbols with their 1-based line spans; none for a language without
    /// a grammar); for binary content or a link, the before and after
    /// digests. `base` gives the current content of a path the change
    /// reads (each path with a precondition, and each copy's source).
    ///
    /// Two changesets with the same id make the same edits with the same
    /// text around them in the same symbols, wherever the file's other
    /// lines moved: a rebase that only moved them is trivial. The same
    /// edit in another block, another function, or next to lines another
    /// change rewrote has another id. Ids without the `v2:` prefix were
    /// made by an earlier rule (no context, no symbol) and match nothing
    /// made now ([`CHANGE_ID_PREFIX`]).
    pub fn change_id<'b>(
        &self,
        base: &dyn Fn(&RepoPath) -> Option<&'b [u8]>,
        symbols: &dyn Fn(&RepoPath, &[u8]) -> Vec<NamedSpan>,
    ) -> String {
        use sha2::{Digest as _, Sha256};
        fn feed(h: &mut Sha256, bytes: &[u8]) {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        fn feed_lines(h: &mut Sha256, lines: &[&[u8]]) {
            h.update((lines.len() as u64).to_le_bytes());
            for l in lines {
                feed(h, l);
            }
        }
        let mode = |exec: bool, link: bool| [b'm', u8::from(exec), u8::from(link)];
        let mut h = Sha256::new();
        for f in &self.files {
            feed(&mut h, f.path.as_str().as_bytes());
            feed(&mut h, f.operation.name().as_bytes());
            let source = match &f.operation {
                Operation::Rename { from } | Operation::Copy { from } => Some(from),
                Operation::RenamedAway { to } => {
                    feed(&mut h, to.as_str().as_bytes());
                    None
                }
                _ => None,
            };
            let old: Option<(&[u8], bool, bool)> = match (source, &f.before) {
                (Some(from), _) => base(from).map(|d| (d, false, false)),
                (None, Some(b)) => base(&f.path).map(|d| (d, b.executable, b.symlink)),
                (None, None) => None,
            };
            if let Some(from) = source {
                feed(&mut h, from.as_str().as_bytes());
            }
            match &f.before {
                Some(b) => h.update(mode(b.executable, b.symlink)),
                None => h.update(b"absent"),
            }
            match &f.after {
                Some(a) => h.update(mode(a.executable, a.symlink)),
                None => h.update(b"absent"),
            }
            if matches!(f.operation, Operation::RenamedAway { .. }) {
                // Its content moved: the destination's hunks say the change.
                h.update(b"end");
                continue;
            }
            let old_data = old.map_or(&[][..], |(d, _, _)| d);
            let new_data = f.after.as_ref().map_or(&[][..], |a| a.data.as_slice());
            let opaque = old.is_some_and(|(d, _, link)| link || render::is_binary(d))
                || f.after
                    .as_ref()
                    .is_some_and(|a| a.symlink || render::is_binary(&a.data));
            if opaque {
                h.update(b"digests");
                feed(&mut h, Digest::of(old_data).to_string().as_bytes());
                feed(&mut h, Digest::of(new_data).to_string().as_bytes());
            } else {
                let hunks = crate::merge::placed_hunks(old_data, new_data, CHANGE_CONTEXT);
                let spans = if hunks.is_empty() || old_data.is_empty() {
                    Vec::new()
                } else {
                    symbols(source.unwrap_or(&f.path), old_data)
                };
                let total = old_data.iter().filter(|&&b| b == b'\n').count()
                    + usize::from(!old_data.is_empty() && !old_data.ends_with(b"\n"));
                for hunk in hunks {
                    h.update(b"hunk");
                    feed_lines(&mut h, &hunk.removed);
                    feed_lines(&mut h, &hunk.added);
                    feed_lines(&mut h, &hunk.before);
                    feed_lines(&mut h, &hunk.after);
                    h.update([
                        u8::from(hunk.old.0 == hunk.before.len()),
                        u8::from(hunk.old.1 + hunk.after.len() == total),
                    ]);
                    match enclosing(&spans, hunk.old, total) {
                        Some(name) => feed(&mut h, name.as_bytes()),
                        None => h.update(b"no symbol"),
                    }
                }
            }
            h.update(b"end");
        }
        format!(
            "{CHANGE_ID_PREFIX}sha256:{}",
            crate::hex::encode(&h.finalize())
        )
    }
}

/// How many old lines on either side of a hunk are part of its identity
/// ([`Changeset::change_id`]): git's default context.
pub const CHANGE_CONTEXT: usize = 3;

/// What every [`Changeset::change_id`] made by the current rule starts
/// with; an id without it never matches one with it.
pub const CHANGE_ID_PREFIX: &str = "v2:";

/// Whether two change ids ([`Changeset::change_id`]) say the same change
/// by the current rule: both present, equal and made by it (an id of an
/// earlier rule matches nothing).
pub fn same_change(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b && a.starts_with(CHANGE_ID_PREFIX),
        _ => false,
    }
}

/// A symbol of a file, for [`Changeset::change_id`]: its qualified name
/// and its 1-based, inclusive line span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSpan {
    /// The qualified name (`User.save`).
    pub name: String,
    /// Its first line.
    pub start_line: u32,
    /// Its last line.
    pub end_line: u32,
}

/// The innermost of `spans` that holds the hunk over old lines
/// `old.0..old.1` (0-based): every removed line, or for an insertion the
/// lines on both sides of it (within a file of `total` lines).
fn enclosing(spans: &[NamedSpan], old: (usize, usize), total: usize) -> Option<&str> {
    let line = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    let (first, last) = if old.0 == old.1 {
        (line(old.0.max(1)), line((old.0 + 1).min(total.max(1))))
    } else {
        (line(old.0 + 1), line(old.1))
    };
    spans
        .iter()
        .filter(|s| s.start_line <= first && last <= s.end_line)
        .max_by_key(|s| (s.start_line, std::cmp::Reverse(s.end_line)))
        .map(|s| s.name.as_str())
}

/// Why a changeset could not be built from a patch.
#[derive(Debug, thiserror::Error)]
pub enum ChangesetError {
    /// A path in the patch is not a valid repository path.
    #[error(transparent)]
    Path(#[from] crate::PathError),
    /// The patch does not apply to the current files.
    #[error(transparent)]
    Apply(#[from] crate::diff::ApplyError),
    /// A file is no longer what the changeset was made against.
    #[error("{path}: no longer matches the changeset's precondition")]
    Stale {
        /// The file.
        path: RepoPath,
    },
}

impl ChangesetError {
    /// The stable error code.
    pub fn code(&self) -> crate::ErrorCode {
        match self {
            ChangesetError::Path(e) => e.code(),
            ChangesetError::Apply(e) => e.code(),
            ChangesetError::Stale { .. } => crate::ErrorCode::PreconditionFailed,
        }
    }
}

/// Records the state of every file the applier looks at, so each touched
/// path's precondition is exactly what the patch was applied to.
struct Recording<'t, T: ?Sized> {
    tree: &'t T,
    seen: std::cell::RefCell<std::collections::HashMap<Vec<u8>, Option<FileMeta>>>,
}

impl<T: crate::diff::Tree + ?Sized> crate::diff::Tree for Recording<'_, T> {
    fn read(&self, path: &[u8]) -> Result<Option<crate::diff::TreeFile>, crate::diff::TreeError> {
        let found = self.tree.read_meta(path)?;
        let meta = found.as_ref().map(|(_, m)| *m);
        self.seen.borrow_mut().insert(path.to_vec(), meta);
        Ok(found.map(|(f, _)| f))
    }

    fn read_meta(
        &self,
        path: &[u8],
    ) -> Result<Option<(crate::diff::TreeFile, FileMeta)>, crate::diff::TreeError> {
        let found = self.tree.read_meta(path)?;
        self.seen
            .borrow_mut()
            .insert(path.to_vec(), found.as_ref().map(|(_, m)| *m));
        Ok(found)
    }

    fn exists(&self, path: &[u8]) -> Result<bool, crate::diff::TreeError> {
        if let Some(seen) = self.seen.borrow().get(path) {
            return Ok(seen.is_some());
        }
        let exists = self.tree.exists(path)?;
        if !exists {
            self.seen.borrow_mut().insert(path.to_vec(), None);
        }
        Ok(exists)
    }
}

impl Changeset {
    /// The changeset a patch makes to `tree`, reading only the files the
    /// patch touches. Each touched path's precondition is its state in
    /// `tree`; its result is the outcome of the last section that touched
    /// it, the sections applied in order ([`crate::diff::apply()`]).
    pub fn from_patch<T: crate::diff::Tree + ?Sized>(
        patch: &crate::diff::Patch<'_>,
        tree: &T,
    ) -> Result<Changeset, ChangesetError> {
        use crate::diff::FileStatus;
        use std::collections::BTreeMap;
        // Validate every path before reading anything.
        for fp in patch.files() {
            for p in [fp.old_path(), fp.new_path()].into_iter().flatten() {
                RepoPath::from_bytes(p)?;
            }
        }
        let recording = Recording {
            tree,
            seen: Default::default(),
        };
        let mut finals: BTreeMap<Vec<u8>, Option<FileContent>> = BTreeMap::new();
        // Every result is kept anyway: the sections' results are computed
        // on two threads.
        crate::diff::apply_on_two_threads(patch, &recording, &mut |o| {
            let new = o.new.map(|f| FileContent {
                data: f.data,
                executable: f.executable,
                symlink: f.symlink,
            });
            // Sections apply in order: the last outcome for a path is its
            // result (a file modified and then deleted stays deleted).
            finals.insert(o.path, new);
            Ok(())
        })?;

        // Label each path by the section that touched it last.
        let mut labels: BTreeMap<Vec<u8>, Operation> = BTreeMap::new();
        for fp in patch.files() {
            let path =
                |p: Option<&[u8]>| RepoPath::from_bytes(p.expect("this status has the path"));
            match fp.status() {
                FileStatus::Added => {
                    labels.insert(fp.path().to_vec(), Operation::Create);
                }
                FileStatus::Deleted => {
                    labels.insert(fp.path().to_vec(), Operation::Delete);
                }
                FileStatus::Modified => {
                    labels.insert(fp.path().to_vec(), Operation::Modify);
                }
                FileStatus::Renamed => {
                    let (from, to) = (path(fp.old_path())?, path(fp.new_path())?);
                    labels.insert(
                        from.as_str().as_bytes().to_vec(),
                        Operation::RenamedAway { to: to.clone() },
                    );
                    labels.insert(to.as_str().as_bytes().to_vec(), Operation::Rename { from });
                }
                FileStatus::Copied => {
                    let from = path(fp.old_path())?;
                    labels.insert(fp.path().to_vec(), Operation::Copy { from });
                }
            }
        }

        let seen = recording.seen.into_inner();
        // Paths the change removes: nothing is below one (it is a file or
        // a link now), so a path there is absent without looking.
        let removed: std::collections::HashSet<&[u8]> = finals
            .iter()
            .filter(|(_, after)| after.is_none())
            .map(|(p, _)| p.as_slice())
            .collect();
        let below_removed: Vec<bool> = finals
            .keys()
            .map(|raw| crate::diff::below_a_removed_path(raw, &removed))
            .collect();
        let mut files = Vec::with_capacity(finals.len());
        for ((raw, after), below_removed) in finals.into_iter().zip(below_removed) {
            let path = RepoPath::from_bytes(&raw)?;
            let before = match seen.get(&raw) {
                Some(meta) => *meta,
                None if below_removed => None,
                None => tree
                    .read(&raw)
                    .map_err(crate::diff::ApplyError::from)?
                    .as_ref()
                    .map(FileMeta::of),
            };
            // A label that no longer fits the net effect is replaced by it
            // (e.g. a rename's source that a later section re-created).
            let operation = match (labels.remove(&raw), &before, &after) {
                (Some(op @ (Operation::Delete | Operation::RenamedAway { .. })), Some(_), None) => {
                    op
                }
                (
                    Some(
                        op
                        @ (Operation::Create | Operation::Rename { .. } | Operation::Copy { .. }),
                    ),
                    None,
                    Some(_),
                ) => op,
                (Some(Operation::Modify), Some(_), Some(_)) => Operation::Modify,
                (_, None, Some(_)) => Operation::Create,
                (_, Some(_), None) => Operation::Delete,
                (_, _, _) => Operation::Modify,
            };
            if before.is_none() && after.is_none() {
                continue; // created and removed again: no net change
            }
            files.push(FileChange {
                path,
                operation,
                before,
                after,
            });
        }
        Ok(Changeset::new(files).expect("paths come from a map, so each is unique"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{parse, ParseOptions, TreeFile};
    use std::collections::BTreeMap;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<Vec<u8>, TreeFile> {
        files
            .iter()
            .map(|(p, c)| {
                (
                    p.as_bytes().to_vec(),
                    TreeFile::regular(c.as_bytes().to_vec()),
                )
            })
            .collect()
    }

    fn p(s: &str) -> RepoPath {
        RepoPath::from_bytes(s.as_bytes()).expect("valid")
    }

    #[test]
    fn from_patch_records_preconditions_and_results() {
        let text = b"diff --git a/m b/m\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-1\n+2\n\
diff --git a/old b/new\nsimilarity index 100%\nrename from old\nrename to new\n\
diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
diff --git a/made b/made\nnew file mode 100755\n--- /dev/null\n+++ b/made\n@@ -0,0 +1 @@\n+y\n";
        let patch = parse(text, &ParseOptions::default()).expect("parses");
        let t = tree(&[
            ("m", "1\n"),
            ("old", "o\n"),
            ("gone", "x\n"),
            ("untouched", "u\n"),
        ]);
        let cs = Changeset::from_patch(&patch, &t).expect("applies");
        let meta = |c: &str| {
            Some(FileMeta {
                digest: Digest::of(c.as_bytes()),
                executable: false,
                symlink: false,
            })
        };
        let content = |c: &str, x: bool| {
            Some(FileContent {
                data: c.as_bytes().to_vec(),
                executable: x,
                symlink: false,
            })
        };
        assert_eq!(
            cs.files(),
            &[
                FileChange {
                    path: p("gone"),
                    operation: Operation::Delete,
                    before: meta("x\n"),
                    after: None
                },
                FileChange {
                    path: p("m"),
                    operation: Operation::Modify,
                    before: meta("1\n"),
                    after: content("2\n", false)
                },
                FileChange {
                    path: p("made"),
                    operation: Operation::Create,
                    before: None,
                    after: content("y\n", true)
                },
                FileChange {
                    path: p("new"),
                    operation: Operation::Rename { from: p("old") },
                    before: None,
                    after: content("o\n", false)
                },
                FileChange {
                    path: p("old"),
                    operation: Operation::RenamedAway { to: p("new") },
                    before: meta("o\n"),
                    after: None
                },
            ]
        );
    }

    #[test]
    fn from_patch_refuses_bad_paths_and_stale_files() {
        let patch = parse(
            b"--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-1\n+2\n",
            &ParseOptions::default(),
        )
        .expect("parses");
        let e = Changeset::from_patch(&patch, &tree(&[])).expect_err("escape");
        assert_eq!(e.code(), crate::ErrorCode::PathEscape);
        let patch = parse(
            b"--- a/m\n+++ b/m\n@@ -1 +1 @@\n-1\n+2\n",
            &ParseOptions::default(),
        )
        .expect("parses");
        let e = Changeset::from_patch(&patch, &tree(&[("m", "other\n")])).expect_err("stale");
        assert_eq!(e.code(), crate::ErrorCode::PatchDoesNotApply);
    }

    /// Links render as git writes them (mode 120000, a type change as a
    /// deletion and a creation) and the rendered diff applies back.
    #[test]
    fn links_render_as_a_diff_that_applies_to_its_results() {
        let mut before = tree(&[("f", "file\n")]);
        for (p, t) in [("l", "f"), ("k", "f"), ("gone", "f")] {
            before.insert(p.as_bytes().to_vec(), TreeFile::link(t.as_bytes().to_vec()));
        }
        let link = |t: &str| {
            Some(FileContent {
                data: t.as_bytes().to_vec(),
                executable: false,
                symlink: true,
            })
        };
        let change = |path: &str, operation: Operation, after: Option<FileContent>| FileChange {
            path: p(path),
            operation,
            before: before.get(path.as_bytes()).map(FileMeta::of),
            after,
        };
        let cs = Changeset::new(vec![
            change("l", Operation::Modify, link("d/x")),
            change("n", Operation::Create, link("l")),
            change("f", Operation::Modify, link("k")),
            change(
                "k",
                Operation::Modify,
                Some(FileContent {
                    data: b"now a file\n".to_vec(),
                    executable: true,
                    symlink: false,
                }),
            ),
            change("gone", Operation::Delete, None),
        ])
        .expect("unique paths");
        let text = cs.render_diff(&before).expect("renders");
        let shown = String::from_utf8_lossy(&text).into_owned();
        assert!(shown.contains("new file mode 120000"), "{shown}");
        assert!(shown.contains("deleted file mode 120000"), "{shown}");
        let patch =
            parse(&text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}\n{shown}"));
        let after = crate::diff::apply_in_memory(&patch, &before)
            .unwrap_or_else(|e| panic!("{e}\n{shown}"));
        for c in cs.files() {
            let got = after.get(c.path.as_str().as_bytes()).map(|f| FileContent {
                data: f.data.clone(),
                executable: f.executable,
                symlink: f.symlink,
            });
            assert_eq!(got, c.after, "{}\n{shown}", c.path);
        }
    }

    /// Rendering a changeset as a diff and applying that diff to the old
    /// tree gives exactly the changeset's results.
    #[test]
    fn renders_as_a_diff_that_applies_to_its_results() {
        let bin_old: Vec<u8> = (0u8..=255).collect();
        let bin_new: Vec<u8> = (0u8..=255).rev().collect();
        let mut before = tree(&[
            (
                "m.txt",
                "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
            ),
            ("nonl.txt", "a\nb"),
            ("old name", "moved\nand edited\n"),
            ("gone", "bye\n"),
            ("mode.sh", "#!/bin/sh\n"),
            ("src", "copied\n"),
        ]);
        before.insert(b"bin".to_vec(), TreeFile::regular(bin_old.clone()));
        let meta_of = |t: &BTreeMap<Vec<u8>, TreeFile>, path: &str| {
            t.get(path.as_bytes()).map(|f| FileMeta {
                digest: Digest::of(&f.data),
                executable: f.executable,
                symlink: false,
            })
        };
        let content = |c: &[u8], x: bool| {
            Some(FileContent {
                data: c.to_vec(),
                executable: x,
                symlink: false,
            })
        };
        let change = |path: &str, operation: Operation, after: Option<FileContent>| FileChange {
            path: p(path),
            operation,
            before: meta_of(&before, path),
            after,
        };
        let cs = Changeset::new(vec![
            change(
                "m.txt",
                Operation::Modify,
                content(
                    b"one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n",
                    false,
                ),
            ),
            change("nonl.txt", Operation::Modify, content(b"a\nb\nc\n", false)),
            change(
                "old name",
                Operation::RenamedAway { to: p("new name") },
                None,
            ),
            change(
                "new name",
                Operation::Rename {
                    from: p("old name"),
                },
                content(b"moved\nand edited twice\n", false),
            ),
            change("gone", Operation::Delete, None),
            change("made.sh", Operation::Create, content(b"echo made\n", true)),
            change("empty", Operation::Create, content(b"", false)),
            change("mode.sh", Operation::Modify, content(b"#!/bin/sh\n", true)),
            change("bin", Operation::Modify, content(&bin_new, false)),
            change(
                "copy",
                Operation::Copy { from: p("src") },
                content(b"copied\nand changed\n", false),
            ),
        ])
        .expect("unique paths");
        let text = cs.render_diff(&before).expect("renders");
        let patch = parse(&text, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&text)));
        let after =
            crate::diff::apply_in_memory(&patch, &before).expect("the rendered diff applies");
        for c in cs.files() {
            let got = after.get(c.path.as_str().as_bytes()).map(|f| FileContent {
                data: f.data.clone(),
                executable: f.executable,
                symlink: false,
            });
            assert_eq!(
                got,
                c.after,
                "{}\n{}",
                c.path,
                String::from_utf8_lossy(&text)
            );
        }
        assert_eq!(
            after.get(b"src".as_slice()),
            before.get(b"src".as_slice()),
            "a copy's source is unchanged"
        );
        // A stale tree is refused rather than rendered wrongly.
        let mut stale = before.clone();
        stale.insert(
            b"m.txt".to_vec(),
            TreeFile::regular(b"changed meanwhile\n".to_vec()),
        );
        let e = cs.render_diff(&stale).expect_err("stale");
        assert_eq!(e.code(), crate::ErrorCode::PreconditionFailed);
    }

    #[test]
    fn issue34_item5_a_file_patch_modifies_creates_and_deletes_one_file() {
        let path = "src/a.txt";
        let old = b"one\ntwo\nthree\n".as_slice();
        let new = b"one\n2\nthree\nfour".as_slice();
        for (before, after) in [
            (Some(old), Some(new)),
            (None, Some(new)),
            (Some(old), None),
            (Some(b"bin\0ary".as_slice()), Some(b"bin\0ary!".as_slice())),
        ] {
            let text = render::file_patch(path, before, after).expect("renders");
            let shown = String::from_utf8_lossy(&text).into_owned();
            assert!(
                shown.starts_with("diff --git a/src/a.txt b/src/a.txt\n"),
                "{shown}"
            );
            let patch =
                parse(&text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}\n{shown}"));
            let t: BTreeMap<Vec<u8>, TreeFile> = before
                .map(|d| (b"src/a.txt".to_vec(), TreeFile::regular(d.to_vec())))
                .into_iter()
                .collect();
            let out =
                crate::diff::apply_in_memory(&patch, &t).unwrap_or_else(|e| panic!("{e}\n{shown}"));
            assert_eq!(
                out.get(b"src/a.txt".as_slice()).map(|f| f.data.as_slice()),
                after,
                "{shown}"
            );
        }
        assert!(render::file_patch(path, Some(old), Some(old))
            .expect("renders")
            .is_empty());
    }
}
