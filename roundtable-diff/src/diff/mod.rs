//! The diff engine: git's diff grammar as typed values.
//!
//! [`parse`] turns patch bytes into a [`Patch`]; [`Patch::render`] turns it
//! back into bytes (byte-identical for anything `git diff` writes);
//! [`apply`](apply()) computes the new contents of every touched file as
//! `git apply` (without options) would, except where git misapplies
//! silently (see [`apply()`]'s module: `-U0` hunks placed by their header,
//! `index` post-image ids checked, a series' sections applied in order);
//! [`Patch::reverse`] inverts a patch.
//!
//! Everything here is pure: the applier reads current contents through the
//! [`Tree`] trait and hands results to a sink, so the caller decides where
//! bytes come from and where they go.
//!
//! ```
//! use roundtable_diff::diff::{self, ParseOptions};
//! use std::collections::BTreeMap;
//!
//! let text = b"diff --git a/hello.txt b/hello.txt\n\
//! index ce01362..94954ab 100644\n\
//! --- a/hello.txt\n\
//! +++ b/hello.txt\n\
//! @@ -1 +1,2 @@\n \
//! hello\n\
//! +world\n";
//! let patch = diff::parse(text, &ParseOptions::default())?;
//! assert_eq!(patch.render(), text.to_vec());
//!
//! let mut tree = BTreeMap::new();
//! tree.insert(b"hello.txt".to_vec(), diff::TreeFile::regular(b"hello\n".to_vec()));
//! let after = diff::apply_in_memory(&patch, &tree)?;
//! assert_eq!(after[b"hello.txt".as_slice()].data, b"hello\nworld\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod apply;
pub mod binary;
mod parse;
pub(crate) mod quote;
mod render;
mod summary;

pub(crate) use apply::below_a_removed_path;
pub use apply::{
    apply, apply_hunks, apply_in_memory, apply_on_two_threads, link_target_escapes, ApplyError,
    FileOutcome, Tree, TreeError, TreeFile,
};
pub use parse::{parse, ParseError, ParseOptions, DEFAULT_MAX_INFLATED_BYTES};
pub use summary::{FileSummary, HunkRange, PatchSummary};

use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// A parsed patch: one [`FilePatch`] per file section, in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch<'a> {
    files: Vec<FilePatch<'a>>,
}

impl<'a> Patch<'a> {
    /// A patch made of these file sections.
    pub fn new(files: Vec<FilePatch<'a>>) -> Self {
        Patch { files }
    }

    /// The file sections, in input order.
    pub fn files(&self) -> &[FilePatch<'a>] {
        &self.files
    }

    /// Consume the patch, returning its file sections.
    pub fn into_files(self) -> Vec<FilePatch<'a>> {
        self.files
    }

    /// A copy that owns all its bytes (no longer borrows the input).
    pub fn into_owned(self) -> Patch<'static> {
        Patch {
            files: self.files.into_iter().map(FilePatch::into_owned).collect(),
        }
    }

    /// The inverse patch: applying it to the result of this patch restores
    /// the original. Fails for copies (the diff grammar cannot express
    /// "un-copy" except as a deletion whose content is unknown) and for
    /// binary patches that carry no reverse hunk.
    pub fn reverse(&self) -> Result<Patch<'static>, ReverseError> {
        // Sections are reversed in reverse order, so that (for example) the
        // deletion of a file that reused a renamed file's old name comes
        // before the rename back into that name.
        let mut files = self
            .files
            .iter()
            .rev()
            .map(FilePatch::reverse)
            .collect::<Result<Vec<_>, _>>()?;
        // A plain section right after a git section without `---`/`+++`
        // lines would be read as that section's names: make it a git
        // section of its own, with names that strip to its path.
        for i in 1..files.len() {
            if files[i - 1].is_git() && files[i - 1].names.is_none() && !files[i].is_git() {
                let f = &mut files[i];
                let path = f.path().to_vec();
                let named =
                    |prefix: &[u8]| -> Vec<u8> { [prefix.repeat(f.strip), path.clone()].concat() };
                let (old, new) = (named(b"a/"), named(b"b/"));
                let mut line = Vec::new();
                quote::write_quoted(&mut line, &old);
                line.push(b' ');
                quote::write_quoted(&mut line, &new);
                let side = |name: Vec<u8>, absent: bool| FileName {
                    name: Cow::Owned(if absent { b"/dev/null".to_vec() } else { name }),
                    suffix: Cow::Borrowed(b"".as_slice()),
                };
                let (old_absent, new_absent) = (f.old_path.is_none(), f.new_path.is_none());
                f.names = Some([side(old, old_absent), side(new, new_absent)]);
                f.git_line = Some(Cow::Owned(line));
            }
        }
        Ok(Patch::new(files))
    }
}

/// Why [`Patch::reverse`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", String::from_utf8_lossy(path))]
pub struct ReverseError {
    /// The path of the section that cannot be reversed.
    pub path: Vec<u8>,
    /// Why.
    pub reason: &'static str,
}

impl ReverseError {
    /// The stable error code (`irreversible_patch`).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::IrreversiblePatch
    }
}

/// What a file section does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Creates a file (`new file mode`, or `--- /dev/null`).
    Added,
    /// Deletes a file (`deleted file mode`, or `+++ /dev/null`).
    Deleted,
    /// Changes a file's content and/or mode in place.
    Modified,
    /// Moves a file, possibly changing it (`rename from`/`rename to`).
    Renamed,
    /// Copies a file, possibly changing the copy (`copy from`/`copy to`).
    Copied,
}

/// A git file mode as written in diff headers (`100644`, `100755`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mode(pub u32);

impl Mode {
    /// A regular, non-executable file.
    pub const REGULAR: Mode = Mode(0o100644);
    /// A regular, executable file.
    pub const EXECUTABLE: Mode = Mode(0o100755);
    /// A symbolic link.
    pub const SYMLINK: Mode = Mode(0o120000);
    /// A submodule (gitlink).
    pub const GITLINK: Mode = Mode(0o160000);

    /// The mode of a regular file with or without the executable bit.
    pub fn file(executable: bool) -> Mode {
        if executable {
            Mode::EXECUTABLE
        } else {
            Mode::REGULAR
        }
    }

    /// Whether this is a regular file (executable or not).
    pub fn is_regular_file(self) -> bool {
        self.0 & 0o170000 == 0o100000
    }

    /// Whether the owner's executable bit is set: git decides a regular
    /// file's executability by this bit alone (`mode & 0o100`), so
    /// `100654` is not executable and `100744` is.
    pub fn is_executable(self) -> bool {
        self.0 & 0o100 != 0
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06o}", self.0)
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    /// The octal spelling [`Mode`]'s `Display` writes (`100644`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() || s.len() > 7 || !s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return Err(serde::de::Error::custom(format!(
                "{s:?} is not an octal git mode"
            )));
        }
        u32::from_str_radix(&s, 8)
            .map(Mode)
            .map_err(serde::de::Error::custom)
    }
}

/// One git extended header line, in the order it appeared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtendedHeader<'a> {
    /// `old mode <mode>`
    OldMode(Mode),
    /// `new mode <mode>`
    NewMode(Mode),
    /// `new file mode <mode>`
    NewFileMode(Mode),
    /// `deleted file mode <mode>`
    DeletedFileMode(Mode),
    /// `similarity index <n>%`
    Similarity(u32),
    /// `dissimilarity index <n>%`
    Dissimilarity(u32),
    /// `rename from <path>` (path unquoted, not stripped)
    RenameFrom(Cow<'a, [u8]>),
    /// `rename to <path>`
    RenameTo(Cow<'a, [u8]>),
    /// `copy from <path>`
    CopyFrom(Cow<'a, [u8]>),
    /// `copy to <path>`
    CopyTo(Cow<'a, [u8]>),
    /// `index <old>..<new>[ <mode>]` (abbreviated or full hex object ids)
    Index {
        /// Pre-image object id (hex).
        old: Cow<'a, str>,
        /// Post-image object id (hex).
        new: Cow<'a, str>,
        /// The mode, written when it did not change.
        mode: Option<Mode>,
    },
}

impl ExtendedHeader<'_> {
    fn into_owned(self) -> ExtendedHeader<'static> {
        use ExtendedHeader::*;
        match self {
            OldMode(m) => OldMode(m),
            NewMode(m) => NewMode(m),
            NewFileMode(m) => NewFileMode(m),
            DeletedFileMode(m) => DeletedFileMode(m),
            Similarity(n) => Similarity(n),
            Dissimilarity(n) => Dissimilarity(n),
            RenameFrom(p) => RenameFrom(owned(p)),
            RenameTo(p) => RenameTo(owned(p)),
            CopyFrom(p) => CopyFrom(owned(p)),
            CopyTo(p) => CopyTo(owned(p)),
            Index { old, new, mode } => Index {
                old: Cow::Owned(old.into_owned()),
                new: Cow::Owned(new.into_owned()),
                mode,
            },
        }
    }

    fn reversed(&self) -> ExtendedHeader<'static> {
        use ExtendedHeader::*;
        match self.clone().into_owned() {
            OldMode(m) => NewMode(m),
            NewMode(m) => OldMode(m),
            NewFileMode(m) => DeletedFileMode(m),
            DeletedFileMode(m) => NewFileMode(m),
            RenameFrom(p) => RenameTo(p),
            RenameTo(p) => RenameFrom(p),
            Index { old, new, mode } => Index {
                old: new,
                new: old,
                mode,
            },
            other => other,
        }
    }
}

fn owned(c: Cow<'_, [u8]>) -> Cow<'static, [u8]> {
    Cow::Owned(c.into_owned())
}

/// A `---` or `+++` line: the name as written (unquoted, prefix included,
/// `/dev/null` for an absent side) and whatever followed it on the line
/// (a tab and timestamp from GNU diff, or git's lone tab after names with
/// spaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileName<'a> {
    /// The name, unquoted.
    pub name: Cow<'a, [u8]>,
    /// Bytes after the name up to the line end (often empty).
    pub suffix: Cow<'a, [u8]>,
}

impl FileName<'_> {
    fn into_owned(self) -> FileName<'static> {
        FileName {
            name: owned(self.name),
            suffix: owned(self.suffix),
        }
    }

    pub(crate) fn is_dev_null(&self) -> bool {
        &*self.name == b"/dev/null"
    }
}

/// The kind of a hunk line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// ` ` — present before and after.
    Context,
    /// `-` — removed.
    Delete,
    /// `+` — added.
    Insert,
}

/// One line of a hunk. `content` includes the line terminator unless the
/// line is followed by `\ No newline at end of file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'h> {
    /// Context, delete or insert.
    pub kind: LineKind,
    /// The line's bytes after the prefix character.
    pub content: &'h [u8],
    /// Whether the line lacks its final newline.
    pub no_newline: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineSpan {
    start: u32,
    len: u32,
    kind: LineKind,
    no_newline: bool,
}

/// One `@@ -a,b +c,d @@` hunk.
///
/// The hunk keeps its body as written (prefixes, markers and all), so
/// rendering is a copy; [`Hunk::lines`] reads it as typed lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    old_start: u32,
    old_lines: u32,
    new_start: u32,
    new_lines: u32,
    heading: Cow<'a, [u8]>,
    body: Cow<'a, [u8]>,
    spans: Vec<LineSpan>,
}

/// The marker git writes after a line that lacks its final newline.
pub const NO_NEWLINE_MARKER: &[u8] = b"\\ No newline at end of file\n";

impl<'a> Hunk<'a> {
    /// Build a hunk from typed lines; counts are derived from the lines.
    /// `heading` is what follows the closing `@@` (usually a space and a
    /// function name, or empty).
    pub fn new(
        old_start: u32,
        new_start: u32,
        heading: &[u8],
        lines: &[Line<'_>],
    ) -> Hunk<'static> {
        let mut body = Vec::new();
        let mut spans = Vec::with_capacity(lines.len());
        let (mut old_lines, mut new_lines) = (0u32, 0u32);
        for line in lines {
            body.push(match line.kind {
                LineKind::Context => b' ',
                LineKind::Delete => b'-',
                LineKind::Insert => b'+',
            });
            spans.push(LineSpan {
                start: body.len() as u32,
                len: line.content.len() as u32,
                kind: line.kind,
                no_newline: line.no_newline,
            });
            body.extend_from_slice(line.content);
            if line.no_newline {
                body.push(b'\n');
                body.extend_from_slice(NO_NEWLINE_MARKER);
            }
            match line.kind {
                LineKind::Context => {
                    old_lines += 1;
                    new_lines += 1;
                }
                LineKind::Delete => old_lines += 1,
                LineKind::Insert => new_lines += 1,
            }
        }
        Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines,
            heading: Cow::Owned(heading.to_vec()),
            body: Cow::Owned(body),
            spans,
        }
    }

    /// First line of the pre-image range (1-based; 0 for an empty range at
    /// the start).
    pub fn old_start(&self) -> u32 {
        self.old_start
    }
    /// Number of pre-image lines (context + deleted).
    pub fn old_lines(&self) -> u32 {
        self.old_lines
    }
    /// First line of the post-image range.
    pub fn new_start(&self) -> u32 {
        self.new_start
    }
    /// Number of post-image lines (context + inserted).
    pub fn new_lines(&self) -> u32 {
        self.new_lines
    }
    /// The text after the closing `@@`.
    pub fn heading(&self) -> &[u8] {
        &self.heading
    }

    /// The hunk's lines, in order.
    pub fn lines(&self) -> impl ExactSizeIterator<Item = Line<'_>> + '_ {
        self.spans.iter().map(move |s| Line {
            kind: s.kind,
            content: &self.body[s.start as usize..(s.start + s.len) as usize],
            no_newline: s.no_newline,
        })
    }

    /// Number of inserted lines.
    pub fn added(&self) -> usize {
        self.spans
            .iter()
            .filter(|s| s.kind == LineKind::Insert)
            .count()
    }

    /// Number of deleted lines.
    pub fn removed(&self) -> usize {
        self.spans
            .iter()
            .filter(|s| s.kind == LineKind::Delete)
            .count()
    }

    fn into_owned(self) -> Hunk<'static> {
        Hunk {
            heading: owned(self.heading),
            body: owned(self.body),
            ..self
        }
    }

    fn reversed(&self) -> Hunk<'static> {
        let lines: Vec<Line<'_>> = self
            .lines()
            .map(|l| Line {
                kind: match l.kind {
                    LineKind::Context => LineKind::Context,
                    LineKind::Delete => LineKind::Insert,
                    LineKind::Insert => LineKind::Delete,
                },
                ..l
            })
            .collect();
        Hunk::new(self.new_start, self.old_start, &self.heading, &lines)
    }
}

/// How a binary hunk encodes its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryMethod {
    /// `literal <size>`: the whole new content, deflated.
    Literal,
    /// `delta <size>`: a git delta against the old content, deflated.
    Delta,
}

/// One hunk of a `GIT binary patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryHunk {
    /// Literal or delta.
    pub method: BinaryMethod,
    /// The inflated size of the payload.
    pub size: u64,
    /// The zlib-deflated payload (the base85 text decoded).
    pub deflated: Vec<u8>,
}

impl BinaryHunk {
    /// A literal hunk carrying `data` whole.
    pub fn literal(data: &[u8]) -> BinaryHunk {
        BinaryHunk {
            method: BinaryMethod::Literal,
            size: data.len() as u64,
            deflated: binary::deflate(data),
        }
    }

    /// The payload inflated (literal content or delta instructions).
    pub fn inflate(&self) -> Result<Vec<u8>, &'static str> {
        binary::inflate(&self.deflated, self.size)
    }
}

/// The body of a file section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// Text hunks (none for a pure rename, copy, mode change, or an empty
    /// file created or deleted).
    Text(Vec<Hunk<'a>>),
    /// `Binary files X and Y differ`: a binary change without its data
    /// (the text between `Binary files ` and ` differ`). It cannot be
    /// applied.
    BinaryMarker(Cow<'a, [u8]>),
    /// `GIT binary patch`: the forward hunk and, as git writes it, the
    /// reverse hunk.
    Binary {
        /// Turns the old content into the new.
        forward: BinaryHunk,
        /// Turns the new content back into the old.
        reverse: Option<BinaryHunk>,
    },
}

impl Body<'_> {
    fn into_owned(self) -> Body<'static> {
        match self {
            Body::Text(h) => Body::Text(h.into_iter().map(Hunk::into_owned).collect()),
            Body::BinaryMarker(m) => Body::BinaryMarker(owned(m)),
            Body::Binary { forward, reverse } => Body::Binary { forward, reverse },
        }
    }
}

/// One file section of a patch.
///
/// It keeps the syntax it was written with (so it renders back
/// byte-for-byte) and the meaning derived from it at the strip level it
/// was parsed with: status, paths and modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch<'a> {
    /// Everything after `diff --git ` on the header line; `None` for a
    /// plain unified diff section.
    git_line: Option<Cow<'a, [u8]>>,
    headers: Vec<ExtendedHeader<'a>>,
    /// The `---` and `+++` lines, when present.
    names: Option<[FileName<'a>; 2]>,
    body: Body<'a>,
    status: FileStatus,
    old_path: Option<Cow<'a, [u8]>>,
    new_path: Option<Cow<'a, [u8]>>,
    old_mode: Option<Mode>,
    new_mode: Option<Mode>,
    /// The strip level the meaning was derived with.
    strip: usize,
    /// Whether the `diff --git` line and the extended headers ended in
    /// CRLF (a git diff saved with CRLF line ends); rendered back so.
    crlf: bool,
}

impl<'a> FilePatch<'a> {
    /// A git-style section (`diff --git a/OLD b/NEW`) built from its parts,
    /// with `a/` and `b/` prefixes. Status, paths and modes are derived
    /// exactly as the parser derives them, so `parse(render(x)) == x`.
    pub fn git(
        old_path: &[u8],
        new_path: &[u8],
        headers: Vec<ExtendedHeader<'static>>,
        body: Body<'static>,
    ) -> Result<FilePatch<'static>, ParseError> {
        let a = [b"a/".as_slice(), old_path].concat();
        let b = [b"b/".as_slice(), new_path].concat();
        let mut git_line = Vec::new();
        quote::write_name(&mut git_line, &a);
        git_line.push(b' ');
        quote::write_name(&mut git_line, &b);
        let is_new = headers
            .iter()
            .any(|h| matches!(h, ExtendedHeader::NewFileMode(_)));
        let is_deleted = headers
            .iter()
            .any(|h| matches!(h, ExtendedHeader::DeletedFileMode(_)));
        let has_hunks = matches!(&body, Body::Text(h) if !h.is_empty());
        let names = has_hunks.then(|| {
            let name = |n: Vec<u8>| FileName {
                suffix: Cow::Borrowed(if n.contains(&b' ') {
                    b"\t".as_slice()
                } else {
                    b"".as_slice()
                }),
                name: Cow::Owned(n),
            };
            [
                name(if is_new {
                    b"/dev/null".to_vec()
                } else {
                    a.clone()
                }),
                name(if is_deleted {
                    b"/dev/null".to_vec()
                } else {
                    b.clone()
                }),
            ]
        });
        parse::resolve(Some(Cow::Owned(git_line)), headers, names, body, 1)
            .map_err(|expected| ParseError::new(0, expected, b""))
    }

    /// Whether this section has a `diff --git` header.
    pub fn is_git(&self) -> bool {
        self.git_line.is_some()
    }
    /// The extended header lines, in order.
    pub fn headers(&self) -> &[ExtendedHeader<'a>] {
        &self.headers
    }
    /// The `---`/`+++` names as written, when present.
    pub fn file_names(&self) -> Option<&[FileName<'a>; 2]> {
        self.names.as_ref()
    }
    /// The body: text hunks or binary data.
    pub fn body(&self) -> &Body<'a> {
        &self.body
    }
    /// The text hunks (empty for binary sections).
    pub fn hunks(&self) -> &[Hunk<'a>] {
        match &self.body {
            Body::Text(h) => h,
            _ => &[],
        }
    }
    /// Whether the section changes a binary file.
    pub fn is_binary(&self) -> bool {
        !matches!(self.body, Body::Text(_))
    }
    /// What the section does.
    pub fn status(&self) -> FileStatus {
        self.status
    }
    /// The path before the change (stripped); `None` when the file is added.
    pub fn old_path(&self) -> Option<&[u8]> {
        self.old_path.as_deref()
    }
    /// The path after the change (stripped); `None` when the file is deleted.
    pub fn new_path(&self) -> Option<&[u8]> {
        self.new_path.as_deref()
    }
    /// The path this section is best known by: the new path, or the old
    /// one for a deletion.
    pub fn path(&self) -> &[u8] {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .expect("every section has at least one path")
    }
    /// The mode before, when the patch states it.
    pub fn old_mode(&self) -> Option<Mode> {
        self.old_mode
    }
    /// The mode after, when the patch states it.
    pub fn new_mode(&self) -> Option<Mode> {
        self.new_mode
    }
    /// The mode the patch explicitly gives the result (`new mode` or `new
    /// file mode`). Without one, the result keeps the mode the file has in
    /// the tree, whatever the `index` line says, as `git apply` does.
    pub fn stated_new_mode(&self) -> Option<Mode> {
        self.headers.iter().find_map(|h| match h {
            ExtendedHeader::NewMode(m) | ExtendedHeader::NewFileMode(m) => Some(*m),
            _ => None,
        })
    }
    /// The `index` line's object ids, when present.
    pub fn index(&self) -> Option<(&str, &str)> {
        self.headers.iter().find_map(|h| match h {
            ExtendedHeader::Index { old, new, .. } => Some((&**old, &**new)),
            _ => None,
        })
    }
    /// Lines added by the text hunks.
    pub fn added_lines(&self) -> usize {
        self.hunks().iter().map(Hunk::added).sum()
    }
    /// Lines removed by the text hunks.
    pub fn removed_lines(&self) -> usize {
        self.hunks().iter().map(Hunk::removed).sum()
    }

    /// The strip level the section was read with.
    pub fn strip(&self) -> usize {
        self.strip
    }

    /// The components the strip level removed from the two names of the
    /// `diff --git` line (`a/` and `b/` for git's default prefixes, the
    /// file's first directory twice for `git diff --no-prefix`); `None`
    /// for a plain section, at strip 0, or when the line cannot be split.
    pub fn removed_prefixes(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if self.strip == 0 {
            return None;
        }
        let (a, b) = parse::split_git_names(self.git_line.as_deref()?, self.strip)?;
        Some((
            parse::leading_components(&a, self.strip)?.to_vec(),
            parse::leading_components(&b, self.strip)?.to_vec(),
        ))
    }

    /// The new file's name as written, before stripping: the `+++` name,
    /// or the `diff --git` line's second name; `None` for a deletion.
    pub fn written_new_name(&self) -> Option<Vec<u8>> {
        self.new_path.as_ref()?;
        if let Some([_, new]) = &self.names {
            if !new.is_dev_null() {
                return Some(new.name.to_vec());
            }
        }
        let (_, b) = parse::split_git_names(self.git_line.as_deref()?, self.strip)?;
        Some(b)
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> FilePatch<'static> {
        FilePatch {
            git_line: self.git_line.map(owned),
            headers: self
                .headers
                .into_iter()
                .map(ExtendedHeader::into_owned)
                .collect(),
            names: self.names.map(|[a, b]| [a.into_owned(), b.into_owned()]),
            body: self.body.into_owned(),
            status: self.status,
            old_path: self.old_path.map(owned),
            new_path: self.new_path.map(owned),
            old_mode: self.old_mode,
            new_mode: self.new_mode,
            strip: self.strip,
            crlf: self.crlf,
        }
    }

    fn reverse(&self) -> Result<FilePatch<'static>, ReverseError> {
        let refuse = |reason| ReverseError {
            path: self.path().to_vec(),
            reason,
        };
        if self.status == FileStatus::Copied {
            return Err(refuse("a copy has no inverse in the diff grammar"));
        }
        let body = match &self.body {
            Body::Text(h) => Body::Text(h.iter().map(Hunk::reversed).collect()),
            Body::BinaryMarker(m) => Body::BinaryMarker(owned(m.clone())),
            Body::Binary { forward, reverse } => Body::Binary {
                forward: reverse
                    .clone()
                    .ok_or_else(|| refuse("the binary patch has no reverse hunk"))?,
                reverse: Some(forward.clone()),
            },
        };
        let git_line = self.git_line.as_ref().map(|line| {
            // Swap the two names on the `diff --git` line; names that were
            // quoted stay quoted, so the line splits the same way.
            let quoted = line.first() == Some(&b'"') || line.last() == Some(&b'"');
            let write = if quoted {
                quote::write_quoted
            } else {
                quote::write_name
            };
            match parse::split_git_names(line, self.strip) {
                Some((a, b)) => {
                    let mut out = Vec::new();
                    write(&mut out, &b);
                    out.push(b' ');
                    write(&mut out, &a);
                    Cow::Owned(out)
                }
                None => owned(line.clone()),
            }
        });
        let status = match self.status {
            FileStatus::Added => FileStatus::Deleted,
            FileStatus::Deleted => FileStatus::Added,
            other => other,
        };
        Ok(FilePatch {
            git_line,
            headers: self.headers.iter().map(ExtendedHeader::reversed).collect(),
            names: self
                .names
                .as_ref()
                .map(|[a, b]| [b.clone().into_owned(), a.clone().into_owned()]),
            body,
            status,
            old_path: self.new_path.clone().map(owned),
            new_path: self.old_path.clone().map(owned),
            old_mode: self.new_mode,
            new_mode: self.old_mode,
            strip: self.strip,
            crlf: self.crlf,
        })
    }
}
