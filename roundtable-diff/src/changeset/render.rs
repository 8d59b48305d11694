//! Rendering a [`Changeset`] as a git-style unified diff, so that every
//! change — an edit plan included — can be reviewed (and applied) as a
//! patch.

use super::{Changeset, ChangesetError, FileChange, Operation};
use crate::diff::{
    binary, BinaryHunk, Body, ExtendedHeader, FilePatch, Hunk, Line, LineKind, Mode, Patch, Tree,
};
use crate::RepoPath;
use similar::{Algorithm, DiffTag};
use std::borrow::Cow;

/// Lines of context around each change, as `git diff` writes.
const CONTEXT: usize = 3;

/// The lines of `data`, each with its newline (the last may lack one).
pub fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', data) {
        out.push(&data[start..=end]);
        start = end + 1;
    }
    if start < data.len() {
        out.push(&data[start..]);
    }
    out
}

fn line(kind: LineKind, content: &[u8]) -> Line<'_> {
    Line {
        kind,
        content,
        no_newline: !content.ends_with(b"\n"),
    }
}

/// Hunks turning `old` into `new` (Myers, three lines of context), and the
/// share of bytes the two have in common.
fn hunks(old: &[u8], new: &[u8]) -> (Vec<Hunk<'static>>, u32) {
    let (a, b) = (lines(old), lines(new));
    let ops = similar::capture_diff_slices(Algorithm::Myers, &a, &b);
    let common: usize = ops
        .iter()
        .filter(|op| op.tag() == DiffTag::Equal)
        .flat_map(|op| op.old_range())
        .map(|i| a[i].len())
        .sum();
    let similarity = (100 * common / old.len().max(new.len()).max(1)) as u32;
    let mut out = Vec::new();
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old_from, old_to) = (first.old_range().start, last.old_range().end);
        let (new_from, new_to) = (first.new_range().start, last.new_range().end);
        let mut hunk_lines = Vec::new();
        for op in &group {
            let (tag, o, n) = op.as_tag_tuple();
            if matches!(tag, DiffTag::Equal) {
                hunk_lines.extend(o.map(|i| line(LineKind::Context, a[i])));
                continue;
            }
            if matches!(tag, DiffTag::Delete | DiffTag::Replace) {
                hunk_lines.extend(o.map(|i| line(LineKind::Delete, a[i])));
            }
            if matches!(tag, DiffTag::Insert | DiffTag::Replace) {
                hunk_lines.extend(n.map(|i| line(LineKind::Insert, b[i])));
            }
        }
        // An empty range is written as the line before it.
        let start = |from: usize, to: usize| if to == from { from } else { from + 1 } as u32;
        out.push(Hunk::new(
            start(old_from, old_to),
            start(new_from, new_to),
            b"",
            &hunk_lines,
        ));
    }
    (out, similarity.min(100))
}

/// git's heuristic: a NUL in the first 8000 bytes makes a file binary.
pub fn is_binary(data: &[u8]) -> bool {
    memchr::memchr(0, &data[..data.len().min(8000)]).is_some()
}

fn blob(data: &[u8]) -> String {
    binary::blob_id(data, 40).expect("40 hex digits is SHA-1")
}

impl Changeset {
    /// This changeset as a git-style patch against `tree` (which must hold
    /// each touched file as the changeset's preconditions say: the old
    /// sides of the diff are read from it, only for the touched files).
    pub fn to_patch<T: Tree + ?Sized>(&self, tree: &T) -> Result<Patch<'static>, ChangesetError> {
        let mut files = Vec::new();
        for change in self.files() {
            // A file that becomes a link or back is written as git writes
            // it: its deletion, then its creation.
            let retyped = matches!(change.operation, Operation::Modify)
                && matches!((&change.before, &change.after), (Some(b), Some(a)) if b.symlink != a.symlink);
            if retyped {
                let deletion = FileChange {
                    operation: Operation::Delete,
                    after: None,
                    ..change.clone()
                };
                let creation = FileChange {
                    operation: Operation::Create,
                    before: None,
                    ..change.clone()
                };
                for part in [deletion, creation] {
                    files.extend(self.section(&part, tree)?);
                }
                continue;
            }
            if let Some(fp) = self.section(change, tree)? {
                files.push(fp);
            }
        }
        Ok(Patch::new(files))
    }

    /// This changeset as unified diff text (see [`Changeset::to_patch`]).
    pub fn render_diff<T: Tree + ?Sized>(&self, tree: &T) -> Result<Vec<u8>, ChangesetError> {
        Ok(self.to_patch(tree)?.render())
    }

    fn read_checked<T: Tree + ?Sized>(
        &self,
        tree: &T,
        path: &RepoPath,
    ) -> Result<(Vec<u8>, bool, bool), ChangesetError> {
        let file = tree
            .read(path.as_str().as_bytes())
            .map_err(crate::diff::ApplyError::from)?;
        // The entry for `path` says what it must be now (a copy's source
        // has no entry: it is read as it is).
        let expected = self
            .files()
            .iter()
            .find(|c| &c.path == path)
            .and_then(|c| c.before);
        if let (Some(want), Some(file)) = (expected, &file) {
            if want != super::FileMeta::of(file) {
                return Err(ChangesetError::Stale { path: path.clone() });
            }
        }
        let file = file.ok_or_else(|| ChangesetError::Stale { path: path.clone() })?;
        Ok((file.data, file.executable, file.symlink))
    }

    fn section<T: Tree + ?Sized>(
        &self,
        change: &FileChange,
        tree: &T,
    ) -> Result<Option<FilePatch<'static>>, ChangesetError> {
        let source = match &change.operation {
            Operation::RenamedAway { .. } => return Ok(None), // written with its destination
            Operation::Rename { from } | Operation::Copy { from } => Some(from.clone()),
            _ => None,
        };
        let (old, old_exec, old_link) = match (&source, &change.before) {
            (Some(from), _) => self.read_checked(tree, from)?,
            (None, Some(_)) => self.read_checked(tree, &change.path)?,
            (None, None) => (Vec::new(), false, false),
        };
        let (new, new_exec, new_link) = match &change.after {
            Some(a) => (a.data.clone(), a.executable, a.symlink),
            None => (Vec::new(), false, false),
        };
        let mode = |exec: bool, link: bool| {
            if link {
                Mode::SYMLINK
            } else {
                Mode::file(exec)
            }
        };
        // A link's mode is 120000 whatever its executable bit says.
        let (old_exec, new_exec) = (old_exec && !old_link, new_exec && !new_link);
        let created = source.is_none() && change.before.is_none();
        let deleted = change.after.is_none();
        if !created
            && !deleted
            && source.is_none()
            && old == new
            && old_exec == new_exec
            && old_link == new_link
        {
            return Ok(None); // no net change
        }
        let binary = is_binary(&old) || is_binary(&new);
        let (text_hunks, similarity) = if binary || old == new {
            (Vec::new(), 100)
        } else {
            hunks(&old, &new)
        };
        let id = |data: &[u8], side_absent: bool| -> Cow<'static, str> {
            match (side_absent, binary) {
                (true, true) => Cow::Owned("0".repeat(40)),
                (true, false) => Cow::Borrowed("0000000"),
                (false, true) => Cow::Owned(blob(data)),
                (false, false) => Cow::Owned(blob(data)[..7].to_owned()),
            }
        };
        let mut headers = Vec::new();
        let mode_changes = !created && !deleted && old_exec != new_exec;
        if created {
            headers.push(ExtendedHeader::NewFileMode(mode(new_exec, new_link)));
        } else if deleted {
            headers.push(ExtendedHeader::DeletedFileMode(mode(old_exec, old_link)));
        } else if mode_changes {
            headers.push(ExtendedHeader::OldMode(mode(old_exec, old_link)));
            headers.push(ExtendedHeader::NewMode(mode(new_exec, new_link)));
        }
        let path_bytes = |p: &RepoPath| Cow::Owned(p.as_str().as_bytes().to_vec());
        match &change.operation {
            Operation::Rename { from } => {
                headers.push(ExtendedHeader::Similarity(similarity));
                headers.push(ExtendedHeader::RenameFrom(path_bytes(from)));
                headers.push(ExtendedHeader::RenameTo(path_bytes(&change.path)));
            }
            Operation::Copy { from } => {
                headers.push(ExtendedHeader::Similarity(similarity));
                headers.push(ExtendedHeader::CopyFrom(path_bytes(from)));
                headers.push(ExtendedHeader::CopyTo(path_bytes(&change.path)));
            }
            _ => {}
        }
        if old != new || created || deleted {
            headers.push(ExtendedHeader::Index {
                old: id(&old, created),
                new: id(&new, deleted),
                mode: (!created && !deleted && !mode_changes).then_some(mode(new_exec, new_link)),
            });
        }
        let body = if binary && old != new {
            Body::Binary {
                forward: BinaryHunk::literal(&new),
                reverse: Some(BinaryHunk::literal(&old)),
            }
        } else {
            Body::Text(text_hunks)
        };
        let old_path = source.as_ref().unwrap_or(&change.path);
        let fp = FilePatch::git(
            old_path.as_str().as_bytes(),
            change.path.as_str().as_bytes(),
            headers,
            body,
        )
        .expect("a changeset renders to a well-formed section");
        Ok(Some(fp))
    }
}

/// The git-style patch that turns one regular file's `old` contents into
/// `new` at `path`, as [`Changeset::render_diff`] writes it (Myers, three
/// lines of context, `GIT binary patch` for binary contents): `old: None`
/// creates the file, `new: None` deletes it, and `Some(b"")` is an empty
/// file. Empty when nothing changes (both sides equal, or both absent).
/// The file is not executable on either side. For hosts that hold a file's
/// old and new contents and need the patch an agent would have sent.
pub fn file_patch(
    path: &str,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<Vec<u8>, ChangesetError> {
    let path = RepoPath::from_bytes(path.as_bytes())?;
    let operation = match (old, new) {
        (None, None) => return Ok(Vec::new()),
        (None, Some(_)) => Operation::Create,
        (Some(_), None) => Operation::Delete,
        (Some(_), Some(_)) => Operation::Modify,
    };
    let mut tree = std::collections::BTreeMap::new();
    if let Some(old) = old {
        tree.insert(
            path.as_str().as_bytes().to_vec(),
            crate::diff::TreeFile::regular(old.to_vec()),
        );
    }
    let change = FileChange {
        before: old.map(|o| crate::FileMeta {
            digest: crate::Digest::of(o),
            executable: false,
            symlink: false,
        }),
        after: new.map(|n| super::FileContent {
            data: n.to_vec(),
            executable: false,
            symlink: false,
        }),
        path,
        operation,
    };
    Changeset::new(vec![change])
        .expect("one path is never touched twice")
        .render_diff(&tree)
}

#[cfg(test)]
mod tests {
    use super::file_patch;
    use crate::diff::{apply_in_memory, parse, ParseOptions, TreeFile};
    use std::collections::BTreeMap;

    fn tree(files: &[(&str, &[u8])]) -> BTreeMap<Vec<u8>, TreeFile> {
        files
            .iter()
            .map(|(p, d)| (p.as_bytes().to_vec(), TreeFile::regular(d.to_vec())))
            .collect()
    }

    /// A path and its old and new contents (`None`: absent).
    type Case<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>);

    /// Each kind of change applies to the old side and gives the new one.
    #[test]
    fn issue34_item5_a_file_patch_applies_to_its_old_side() {
        let latin1: &[u8] = b"caf\xe9\n";
        let binary: &[u8] = b"\0\x01\x02";
        let cases: [Case; 6] = [
            (
                "src/a.txt",
                Some(b"one\ntwo\nthree\n"),
                Some(b"one\n2\nthree\nfour"),
            ),
            ("new.txt", None, Some(b"hello\n")),
            ("gone.txt", Some(b"bye\n"), None),
            ("empty", None, Some(b"")),
            ("l1.txt", Some(b"cafe\n"), Some(latin1)),
            ("bin", Some(b"text\n"), Some(binary)),
        ];
        for (path, old, new) in cases {
            let text = file_patch(path, old, new).expect("renders");
            let patch = parse(&text, &ParseOptions::default()).expect("parses");
            let before = old.map_or_else(BTreeMap::new, |o| tree(&[(path, o)]));
            let after = apply_in_memory(&patch, &before).expect("applies");
            let got = after.get(path.as_bytes()).map(|f| f.data.as_slice());
            assert_eq!(got, new, "{path}: {}", String::from_utf8_lossy(&text));
        }
        assert!(file_patch("same", Some(b"x\n"), Some(b"x\n"))
            .expect("renders")
            .is_empty());
        assert!(file_patch("none", None, None).expect("renders").is_empty());
    }

    #[test]
    fn issue34_item5_a_file_patch_refuses_a_path_outside_the_repository() {
        let e = file_patch("../x", None, Some(b"x")).expect_err("escapes");
        assert_eq!(e.code(), crate::ErrorCode::PathEscape);
        let e = file_patch("", None, Some(b"x")).expect_err("empty");
        assert_eq!(e.code(), crate::ErrorCode::InvalidPath);
    }
}
