//! Agent-native change formats: the Codex `apply_patch` envelope and
//! SEARCH/REPLACE blocks, parsed and matched against the current files into
//! a [`Changeset`] before anything downstream sees them.
//!
//! Pure: the files come through a [`Tree`], and nothing is written. Both
//! formats become a list of per-file operations whose hunks name lines to
//! find ("old" lines) and the lines that replace them; each hunk is placed
//! by the **matching ladder**, never by line numbers and never fuzzily:
//!
//! 1. [`exact`](MatchRung::Exact): every line equal (terminators aside);
//! 2. [`trailing_whitespace`](MatchRung::TrailingWhitespace): equal once
//!    trailing spaces, tabs and carriage returns are removed;
//! 3. [`whitespace`](MatchRung::Whitespace): equal once trimmed and inner
//!    runs of ASCII whitespace are collapsed to one space. The replacement
//!    is then written at the file's indentation (aider's rule for a SEARCH
//!    missing leading whitespace): the hunk's lines are outdented by the
//!    indentation they all share, and every added line gets the one prefix
//!    by which each matched file line is more indented than the hunk's
//!    line; when that prefix is not the same on every non-blank line the
//!    hunk is refused (`reason` `indentation`), never written unindented;
//! 4. [`unicode_punctuation`](MatchRung::UnicodePunctuation): equal at the
//!    `whitespace` rung once typographic dashes, quotes and non-breaking or
//!    other odd spaces are read as their ASCII counterparts (the last pass
//!    of Codex's `apply_patch` matcher), so an ASCII hunk finds a line
//!    written with `–`, `’` or U+00A0; the replacement is re-indented as at
//!    the `whitespace` rung.
//!
//! A rung is taken only when it finds exactly one place in its scope; two
//! or more places at a rung is an ambiguous match, and no place at any
//! rung a missing one — both refused with `patch_does_not_apply`, naming
//! the hunk, the file and the candidate lines.
//!
//! Hunks apply **in order, each against the running result**, as the
//! agents' own tools apply them:
//!
//! - a SEARCH/REPLACE block is searched in the whole file as the blocks
//!   before it left it, so block 2 may edit what block 1 wrote, and a line
//!   block 1 replaced is no longer there to be found; its recorded line is
//!   its line in that running text;
//! - a Codex hunk is searched after the previous hunk of its file (and
//!   after its own `@@` anchors, each found uniquely after the one
//!   before), among the original lines, as Codex seeks each chunk forward
//!   from the last; its recorded line is its line in the original file.
//!
//! A failure in any hunk refuses the whole change. The rung each hunk
//! needed is recorded on the changeset ([`Changeset::matches`]). The work
//! of placing is about the file's lines plus the hunks' lines (each hunk's
//! rarest line is looked up in an index of the running text's lines) and is bounded
//! per change by [`PLACEMENT_WORK_LIMIT`] (`reason` `work_limit`).
//!
//! The Codex envelope is read as leniently as Codex's own `apply_patch`
//! where that is harmless (padded markers, a heredoc wrapper, blank lines
//! between hunks, a trailing blank context line, added lines with no
//! context appended at the end of the file), but not where it would change
//! a file the agent did not mean to: `*** Add File:` over an existing file
//! is refused (Codex overwrites it), every hunk must match one place (Codex
//! takes the first), a pure insertion after an `@@ anchor` goes right after
//! the anchor (Codex appends it at the end of the file), a whole envelope
//! lands or nothing does (Codex writes file by file and stops at the first
//! failure), and paths are relative to the repository.
//!
//! Lines are compared without their terminator, so a CRLF file matches an
//! LF envelope; new lines take the file's line ending (that of its first
//! line; `\n` for a new or single-line file), untouched lines keep their
//! own, and a file without a final newline keeps lacking one.

mod parse;
#[cfg(test)]
mod tests;

use crate::diff::{Tree, TreeFile};
mod rung;
use crate::{Changeset, Digest, ErrorCode, FileChange, FileContent, FileMeta, Operation, RepoPath};
pub use rung::{MatchRung, MatchedHunk};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// The two agent-native formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentFormat {
    /// The Codex `apply_patch` envelope.
    Codex,
    /// SEARCH/REPLACE blocks.
    SearchReplace,
}

/// Why an agent-native change was refused: a stable [`ErrorCode`]
/// (`invalid_patch` for the text, `patch_does_not_apply` for a missing,
/// ambiguous or overlapping match, `precondition_failed` for a file that
/// is absent or present against the change, `path_escape`/`invalid_path`
/// for a bad path, or a read's code), a message naming the hunk and file,
/// and structured details.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AgentEditError {
    code: ErrorCode,
    message: String,
    details: Value,
}

impl AgentEditError {
    fn new(code: ErrorCode, message: String, details: Value) -> Self {
        AgentEditError {
            code,
            message,
            details,
        }
    }

    /// A malformed document: `line` is the 1-based line of the text.
    fn syntax(line: usize, found: &str, expected: &str) -> Self {
        AgentEditError::new(
            ErrorCode::InvalidPatch,
            format!("line {line}: expected {expected}, found {found:?}"),
            json!({"line": line, "expected": expected, "found": found}),
        )
    }

    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Structured details: `line` of the text for a syntax error; `hunk`,
    /// `path`, `line`, `reason` (`not_found`, `ambiguous`, `overlap`) and
    /// `candidates` (each `{line, text}` of the file, plus `expected` for a
    /// near miss) for a match refusal; `path`, `expected`, `actual` for a
    /// precondition.
    pub fn details(&self) -> &Value {
        &self.details
    }
}

/// One file operation of a parsed document.
#[derive(Debug, Clone, PartialEq)]
enum FileOp {
    /// Create `path` with `content` (it must be absent). Codex's own
    /// `apply_patch` lets `*** Add File:` overwrite an existing file; here
    /// that is refused with `precondition_failed` (expected `absent`), so a
    /// stale or mistaken envelope never silently replaces a file; an agent
    /// rewrites an existing file with `*** Update File:` hunks.
    Add {
        path: RepoPath,
        line: usize,
        content: Vec<u8>,
    },
    /// Remove `path` (it must exist).
    Delete { path: RepoPath, line: usize },
    /// Edit `path` by `hunks`, and move it to `move_to`.
    Update {
        path: RepoPath,
        line: usize,
        move_to: Option<RepoPath>,
        hunks: Vec<Hunk>,
        /// SEARCH/REPLACE: one hunk with an empty SEARCH creates the file
        /// when it is absent.
        create_if_absent: bool,
    },
}

impl FileOp {
    fn path(&self) -> &RepoPath {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path, .. }
            | FileOp::Update { path, .. } => path,
        }
    }

    fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. }
            | FileOp::Delete { line, .. }
            | FileOp::Update { line, .. } => *line,
        }
    }
}

/// A line of a hunk's result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NewLine {
    /// The file's own line at this index of the matched old lines (a
    /// context line keeps the file's bytes, whatever rung matched it).
    Keep(usize),
    /// A line the change writes.
    Add(String),
}

/// One hunk: lines to find, and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    /// 1-based, across the document.
    number: u32,
    /// The 1-based line of the document where it starts.
    line: usize,
    /// `@@ anchor` lines, each found (uniquely) after the previous one.
    anchors: Vec<String>,
    /// The lines to find (context and removed lines, in order).
    old: Vec<String>,
    /// The result.
    new: Vec<NewLine>,
    /// `*** End of File`: the old lines must end the file. (A Codex hunk
    /// of only added lines, with no context and no anchor, is placed so:
    /// appended at the end.)
    at_end: bool,
    /// How many of the last old lines are blank context lines that may be
    /// dropped: when the lines match nowhere with them, they are matched
    /// again without the last one, then the last two, and so on (Codex
    /// reads a blank line left before the next `@@` or `*** End Patch` as
    /// empty context, and retries without one).
    blank_tail: usize,
}

/// The [`Changeset`] that `text` in `format` makes against `tree`, reading
/// only the files it names; the changeset records where each hunk matched
/// ([`Changeset::matches`]).
///
/// ```
/// use roundtable_diff::diff::TreeFile;
/// use roundtable_diff::edit::agent::{changeset, AgentFormat, MatchRung};
/// use roundtable_base::RepoPath;
/// use std::collections::BTreeMap;
///
/// let tree = BTreeMap::from([(b"a.py".to_vec(), TreeFile::regular(b"def f():\n    return 1  \n".to_vec()))]);
/// let text = "a.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n";
/// let cs = changeset(AgentFormat::SearchReplace, text.as_bytes(), &tree)?;
/// assert_eq!(cs.files()[0].after.as_ref().unwrap().data, b"def f():\n    return 2\n");
/// let path = RepoPath::from_bytes(b"a.py").unwrap();
/// assert_eq!(cs.matches(&path)[0].rung, MatchRung::TrailingWhitespace);
/// # Ok::<(), roundtable_diff::edit::agent::AgentEditError>(())
/// ```
pub fn changeset<T: Tree + ?Sized>(
    format: AgentFormat,
    text: &[u8],
    tree: &T,
) -> Result<Changeset, AgentEditError> {
    let text = std::str::from_utf8(text).map_err(|e| {
        AgentEditError::new(
            ErrorCode::InvalidPatch,
            format!("the text is not UTF-8 (at byte {})", e.valid_up_to()),
            json!({"byte": e.valid_up_to()}),
        )
    })?;
    let ops = match format {
        AgentFormat::Codex => parse::codex(text)?,
        AgentFormat::SearchReplace => parse::search_replace(text)?,
    };
    build(format, &ops, tree)
}

/// Each path once, a move's destination included.
fn check_touched_once(ops: &[FileOp]) -> Result<(), AgentEditError> {
    let mut seen: HashMap<&RepoPath, usize> = HashMap::new();
    for op in ops {
        let mut paths = vec![op.path()];
        if let FileOp::Update {
            move_to: Some(to), ..
        } = op
        {
            paths.push(to);
        }
        for p in paths {
            if let Some(prev) = seen.insert(p, op.line()) {
                return Err(AgentEditError::new(
                    ErrorCode::InvalidPatch,
                    format!(
                        "line {}: {p} is already changed by the section at line {prev}",
                        op.line()
                    ),
                    json!({"line": op.line(), "path": p.as_str(), "previous_line": prev}),
                ));
            }
        }
    }
    Ok(())
}

fn read<T: Tree + ?Sized>(tree: &T, path: &RepoPath) -> Result<Option<TreeFile>, AgentEditError> {
    let file = tree.read(path.as_str().as_bytes()).map_err(|e| {
        AgentEditError::new(
            e.code,
            format!("cannot read {path}: {}", e.source),
            json!({"path": path.as_str()}),
        )
    })?;
    if file.as_ref().is_some_and(|f| f.symlink) {
        return Err(AgentEditError::new(
            ErrorCode::PathEscape,
            format!("{path}: is a symbolic link; an agent edit never writes through or over one"),
            json!({"path": path.as_str()}),
        ));
    }
    Ok(file)
}

fn precondition(
    path: &RepoPath,
    line: usize,
    expected: &str,
    actual: Option<Digest>,
) -> AgentEditError {
    let actual_s = actual.map_or_else(|| "absent".to_owned(), |d| d.to_string());
    let what = if actual.is_some() {
        "exists"
    } else {
        "does not exist"
    };
    AgentEditError::new(
        ErrorCode::PreconditionFailed,
        format!("line {line}: {path} {what}, and the change expects it {expected}"),
        json!({"path": path.as_str(), "line": line, "expected": expected, "actual": actual_s}),
    )
}

fn build<T: Tree + ?Sized>(
    format: AgentFormat,
    ops: &[FileOp],
    tree: &T,
) -> Result<Changeset, AgentEditError> {
    check_touched_once(ops)?;
    let mut work = Work::new(PLACEMENT_WORK_LIMIT);
    let mut files = Vec::new();
    let mut matches = BTreeMap::new();
    for op in ops {
        let file = read(tree, op.path())?;
        let meta = file.as_ref().map(FileMeta::of);
        match op {
            FileOp::Add {
                path,
                line,
                content,
            } => {
                if let Some(m) = meta {
                    return Err(precondition(path, *line, "absent", Some(m.digest)));
                }
                files.push(created(path, content.clone()));
            }
            FileOp::Delete { path, line } => {
                if meta.is_none() {
                    return Err(precondition(path, *line, "present", None));
                }
                files.push(FileChange {
                    path: path.clone(),
                    operation: Operation::Delete,
                    before: meta,
                    after: None,
                });
            }
            FileOp::Update {
                path,
                line,
                move_to,
                hunks,
                create_if_absent,
            } => {
                let (Some(file), Some(meta)) = (file, meta) else {
                    match (hunks.as_slice(), *create_if_absent) {
                        ([h], true) if h.old.is_empty() => {
                            files.push(created(path, join_new(h)));
                        }
                        // The first block creates the file, the next ones
                        // edit what it wrote.
                        ([h, rest @ ..], true) if h.old.is_empty() => {
                            if let Some(h) = rest.iter().find(|h| h.old.is_empty()) {
                                return Err(create_existing(path, h, "absent"));
                            }
                            let (data, found) = apply_hunks(path, b"", hunks, format, &mut work)?;
                            matches.insert(path.clone(), found);
                            files.push(created(path, data));
                        }
                        _ => return Err(precondition(path, *line, "present", None)),
                    }
                    continue;
                };
                if *create_if_absent {
                    if let Some(h) = hunks.iter().find(|h| h.old.is_empty()) {
                        return Err(create_existing(path, h, &meta.digest.to_string()));
                    }
                }
                let (data, found) = apply_hunks(path, &file.data, hunks, format, &mut work)?;
                if !found.is_empty() {
                    matches.insert(path.clone(), found);
                }
                let content = FileContent {
                    data,
                    executable: file.executable,
                    symlink: false,
                };
                match move_to {
                    None => files.push(FileChange {
                        path: path.clone(),
                        operation: Operation::Modify,
                        before: Some(meta),
                        after: Some(content),
                    }),
                    Some(to) => {
                        if let Some(dest) = read(tree, to)? {
                            return Err(precondition(
                                to,
                                *line,
                                "absent",
                                Some(Digest::of(&dest.data)),
                            ));
                        }
                        files.push(FileChange {
                            path: path.clone(),
                            operation: Operation::RenamedAway { to: to.clone() },
                            before: Some(meta),
                            after: None,
                        });
                        files.push(FileChange {
                            path: to.clone(),
                            operation: Operation::Rename { from: path.clone() },
                            before: None,
                            after: Some(content),
                        });
                    }
                }
            }
        }
    }
    // No path ends up both a file and the directory of another.
    let results: std::collections::HashSet<&str> = files
        .iter()
        .filter(|f| f.after.is_some())
        .map(|f| f.path.as_str())
        .collect();
    for path in &results {
        if let Some((at, _)) = path
            .match_indices('/')
            .find(|(at, _)| results.contains(&path[..*at]))
        {
            return Err(AgentEditError::new(
                ErrorCode::InvalidPatch,
                format!(
                    "{path} needs {} to be a directory, but the change makes it a file",
                    &path[..at]
                ),
                json!({"path": path, "file": &path[..at]}),
            ));
        }
    }
    let cs = Changeset::new(files).map_err(|d| {
        AgentEditError::new(
            ErrorCode::InvalidPatch,
            d.to_string(),
            json!({"path": d.0.as_str()}),
        )
    })?;
    Ok(cs.with_matches(matches))
}

/// An empty SEARCH (which creates its file) where the file exists, or
/// after the block that creates it (`actual`: the digest, or `absent`).
fn create_existing(path: &RepoPath, h: &Hunk, actual: &str) -> AgentEditError {
    AgentEditError::new(
        ErrorCode::PreconditionFailed,
        format!(
            "hunk {} (line {}): an empty SEARCH creates a file, but {path} exists (or an earlier block creates it)",
            h.number, h.line
        ),
        json!({"hunk": h.number, "line": h.line, "path": path.as_str(),
               "expected": "absent", "actual": actual}),
    )
}

fn created(path: &RepoPath, data: Vec<u8>) -> FileChange {
    FileChange {
        path: path.clone(),
        operation: Operation::Create,
        before: None,
        after: Some(FileContent {
            data,
            executable: false,
            symlink: false,
        }),
    }
}

/// A new file's bytes from a hunk's added lines, each ending in `\n`.
fn join_new(h: &Hunk) -> Vec<u8> {
    let mut out = Vec::new();
    for l in &h.new {
        if let NewLine::Add(s) = l {
            out.extend_from_slice(s.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// One line of a file: its content and its terminator (`\n`, `\r\n`, or
/// empty for a last line without one).
struct Line<'a> {
    content: &'a [u8],
    term: &'a [u8],
}

fn split_lines(data: &[u8]) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let (line, tail) = rest.split_at(i + 1);
                let cut = if line.len() >= 2 && line[line.len() - 2] == b'\r' {
                    line.len() - 2
                } else {
                    line.len() - 1
                };
                out.push(Line {
                    content: &line[..cut],
                    term: &line[cut..],
                });
                rest = tail;
            }
            None => {
                out.push(Line {
                    content: rest,
                    term: b"",
                });
                rest = b"";
            }
        }
    }
    out
}

/// A line as a rung compares it.
fn normalize(line: &[u8], rung: MatchRung) -> Vec<u8> {
    match rung {
        MatchRung::Exact => line.to_vec(),
        MatchRung::TrailingWhitespace => {
            let end = line
                .iter()
                .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c'))
                .map_or(0, |i| i + 1);
            line[..end].to_vec()
        }
        MatchRung::Whitespace => collapse_whitespace(line),
        MatchRung::UnicodePunctuation => match std::str::from_utf8(line) {
            Ok(text) if !text.is_ascii() => {
                let ascii: String = text.chars().map(ascii_punctuation).collect();
                collapse_whitespace(ascii.as_bytes())
            }
            // ASCII or not UTF-8: nothing to read differently.
            _ => collapse_whitespace(line),
        },
    }
}

/// A line trimmed, with its inner runs of ASCII whitespace one space.
fn collapse_whitespace(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    for word in line
        .split(|b| b.is_ascii_whitespace() || *b == b'\x0b')
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(word);
    }
    out
}

/// The ASCII character the `unicode_punctuation` rung reads `c` as: the
/// typographic dashes, quotes and spaces Codex's matcher folds (see
/// [`MatchRung::UnicodePunctuation`]); every other character is itself.
fn ascii_punctuation(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

fn line_hash(line: &[u8]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

/// The most units of work (a line indexed, walked or compared) placing the
/// hunks of one change may take; past it the change is refused with
/// `patch_does_not_apply` (details `reason`: `work_limit`). Placement costs
/// about the touched files' lines plus the hunks' lines (each hunk's rarest
/// line is looked up in an index of the file's lines), so only a
/// pathological change meets it: many long hunks made of lines that each
/// occur thousands of times in a large file.
pub const PLACEMENT_WORK_LIMIT: u64 = 1 << 28;

/// The work budget of one change's placements (see
/// [`PLACEMENT_WORK_LIMIT`]).
#[derive(Debug)]
struct Work {
    spent: u64,
    limit: u64,
}

impl Work {
    fn new(limit: u64) -> Self {
        Work { spent: 0, limit }
    }

    /// Spend `n` units: false once the budget is exhausted.
    fn spend(&mut self, n: usize) -> bool {
        self.spent = self.spent.saturating_add(n as u64);
        self.spent <= self.limit
    }
}

/// No node.
const NIL: usize = usize::MAX;

/// One line of the running text of a file: an original line, or one a
/// hunk wrote. Removed lines stay in the arena, unlinked from the live list
/// but kept in the ghost list, which orders every line that ever existed
/// consistently with every moment's live order (so the line number a hunk
/// matched at can be computed afterwards).
struct Node<'a> {
    content: Cow<'a, [u8]>,
    term: &'a [u8],
    /// The line under each rung of [`MatchRung::LADDER`], and its hash.
    norm: Vec<Vec<u8>>,
    hash: Vec<u64>,
    live: bool,
    prev: usize,
    next: usize,
    ghost_prev: usize,
    ghost_next: usize,
}

/// A file's text while its hunks are applied in order: a linked list of
/// lines with, per rung, an index from a normalized line's hash to the
/// lines that have it (removed ones are skipped when looked up). The
/// original lines are nodes `0..originals`, in order.
struct Running<'a> {
    nodes: Vec<Node<'a>>,
    first: usize,
    last: usize,
    ghost_first: usize,
    ghost_last: usize,
    originals: usize,
    live: usize,
    index: Vec<HashMap<u64, Vec<usize>>>,
}

/// Where a search may look: the whole running text (SEARCH/REPLACE: block
/// after block against the running result), or the original lines from
/// the given one on (Codex: each hunk after the previous one).
#[derive(Clone, Copy)]
enum Scope {
    All,
    From(usize),
}

impl<'a> Running<'a> {
    fn new(lines: &[Line<'a>]) -> Self {
        let mut text = Running {
            nodes: Vec::with_capacity(lines.len()),
            first: NIL,
            last: NIL,
            ghost_first: NIL,
            ghost_last: NIL,
            originals: lines.len(),
            live: 0,
            index: MatchRung::LADDER.iter().map(|_| HashMap::new()).collect(),
        };
        for l in lines {
            let id = text.push(Cow::Borrowed(l.content), l.term);
            text.link(text.last, id, NIL);
            text.ghost_link(text.ghost_last, id, NIL);
        }
        text
    }

    /// A new, unlinked node.
    fn push(&mut self, content: Cow<'a, [u8]>, term: &'a [u8]) -> usize {
        let id = self.nodes.len();
        let norm: Vec<Vec<u8>> = MatchRung::LADDER
            .iter()
            .map(|r| normalize(&content, *r))
            .collect();
        let hash: Vec<u64> = norm.iter().map(|l| line_hash(l)).collect();
        for (r, h) in hash.iter().enumerate() {
            self.index[r].entry(*h).or_default().push(id);
        }
        self.nodes.push(Node {
            content,
            term,
            norm,
            hash,
            live: false,
            prev: NIL,
            next: NIL,
            ghost_prev: NIL,
            ghost_next: NIL,
        });
        id
    }

    /// Link `id` live between `prev` and `next` (adjacent, or NIL).
    fn link(&mut self, prev: usize, id: usize, next: usize) {
        self.nodes[id].prev = prev;
        self.nodes[id].next = next;
        self.nodes[id].live = true;
        self.live += 1;
        match prev {
            NIL => self.first = id,
            p => self.nodes[p].next = id,
        }
        match next {
            NIL => self.last = id,
            n => self.nodes[n].prev = id,
        }
    }

    fn ghost_link(&mut self, prev: usize, id: usize, next: usize) {
        self.nodes[id].ghost_prev = prev;
        self.nodes[id].ghost_next = next;
        match prev {
            NIL => self.ghost_first = id,
            p => self.nodes[p].ghost_next = id,
        }
        match next {
            NIL => self.ghost_last = id,
            n => self.nodes[n].ghost_prev = id,
        }
    }

    /// The first live node of a scope (NIL when it is empty).
    fn scope_start(&self, scope: Scope) -> usize {
        match scope {
            Scope::All => self.first,
            Scope::From(x) if x < self.originals => x,
            Scope::From(_) => NIL,
        }
    }

    /// The live nodes of a scope, in order.
    fn flat(&self, scope: Scope) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = self.scope_start(scope);
        while at != NIL {
            out.push(at);
            at = self.nodes[at].next;
        }
        out
    }

    /// The `m` live nodes from `start`.
    fn window(&self, start: usize, m: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(m);
        let mut at = start;
        while out.len() < m && at != NIL {
            out.push(at);
            at = self.nodes[at].next;
        }
        out
    }

    /// Whether `want` (normalized at `rung`) matches the live lines from
    /// `start` (and, `at_end`, ends the text); the lines compared are
    /// spent from `work`.
    fn matches_at(
        &self,
        start: usize,
        rung: usize,
        want: &[Vec<u8>],
        at_end: bool,
        work: &mut Work,
    ) -> Option<bool> {
        let mut at = start;
        for (j, w) in want.iter().enumerate() {
            if at == NIL || self.nodes[at].norm[rung] != *w {
                return work.spend(j + 1).then_some(false);
            }
            at = self.nodes[at].next;
        }
        work.spend(want.len()).then_some(!at_end || at == NIL)
    }

    /// The places in `scope` where `want` (normalized at `rung`) matches:
    /// every one, verified, when the index gives few candidates for its
    /// rarest line; otherwise (a line repeated all over the file) a
    /// Rabin–Karp pass over the scope that verifies the first
    /// [`VERIFIED`] places and counts the others by hash. `None` when the
    /// work budget is exhausted.
    fn find(
        &self,
        rung: MatchRung,
        want: &[Vec<u8>],
        scope: Scope,
        at_end: bool,
        work: &mut Work,
    ) -> Option<(Vec<usize>, usize)> {
        let r = rung as usize;
        if !work.spend(want.len()) {
            return None;
        }
        // The hunk's rarest line (at this rung) gives the fewest candidate
        // places: each is that line's node, `key` lines into the hunk.
        let empty = Vec::new();
        let Some((key, cands)) = want
            .iter()
            .enumerate()
            .map(|(j, l)| (j, self.index[r].get(&line_hash(l)).unwrap_or(&empty)))
            .min_by_key(|(_, c)| c.len())
        else {
            return Some((Vec::new(), 0));
        };
        let in_scope = |id: usize| match scope {
            Scope::All => true,
            Scope::From(x) => id >= x && id < self.originals,
        };
        if cands.len().saturating_mul(key + want.len()) <= 4 * self.live + 64 {
            let mut found = Vec::new();
            for &c in cands.iter().filter(|&&c| self.nodes[c].live) {
                let mut start = c;
                for _ in 0..key {
                    if start == NIL {
                        break;
                    }
                    start = self.nodes[start].prev;
                }
                if !work.spend(key) {
                    return None;
                }
                if start != NIL
                    && in_scope(start)
                    && self.matches_at(start, r, want, at_end, work)?
                {
                    found.push(start);
                }
            }
            let count = found.len();
            return Some((found, count));
        }
        let flat = self.flat(scope);
        if !work.spend(flat.len()) {
            return None;
        }
        let n = flat.len();
        let m = want.len();
        if m > n {
            return Some((Vec::new(), 0));
        }
        let roll = |acc: u64, h: u64| acc.wrapping_mul(BASE).wrapping_add(h);
        let target = want.iter().fold(0u64, |acc, l| roll(acc, line_hash(l)));
        let top = (1..m).fold(1u64, |acc, _| acc.wrapping_mul(BASE));
        let hash = |i: usize| self.nodes[flat[i]].hash[r];
        let begin = if at_end { n - m } else { 0 };
        let mut window = (begin..begin + m).fold(0u64, |acc, i| roll(acc, hash(i)));
        let mut verified = Vec::new();
        let mut count = 0;
        let mut s = begin;
        loop {
            if window == target {
                if verified.len() < VERIFIED {
                    if self.matches_at(flat[s], r, want, at_end, work)? {
                        verified.push(flat[s]);
                        count += 1;
                    }
                } else {
                    count += 1;
                }
            }
            if at_end || s + m >= n {
                break;
            }
            window = roll(window.wrapping_sub(hash(s).wrapping_mul(top)), hash(s + m));
            s += 1;
        }
        Some((verified, count))
    }

    /// The 1-based line of each live node (a Codex search only sees
    /// original lines, numbered as in the original file).
    fn lines_of(&self, ids: &[usize], scope: Scope) -> Vec<usize> {
        if let Scope::From(_) = scope {
            return ids.iter().map(|id| id + 1).collect();
        }
        let at: HashMap<usize, usize> = self
            .flat(Scope::All)
            .into_iter()
            .enumerate()
            .map(|(i, id)| (id, i + 1))
            .collect();
        ids.iter()
            .map(|id| at.get(id).copied().unwrap_or(0))
            .collect()
    }

    /// Replace the live `window` (or, empty, insert before `before`, NIL
    /// for the end) by the unlinked nodes `new`.
    fn splice(&mut self, window: &[usize], before: usize, new: std::ops::Range<usize>) {
        let (mut prev, next, mut ghost) = match (window.first(), window.last()) {
            (Some(&a), Some(&b)) => (self.nodes[a].prev, self.nodes[b].next, b),
            _ => {
                let prev = if before == NIL {
                    self.last
                } else {
                    self.nodes[before].prev
                };
                let ghost = if before == NIL {
                    self.ghost_last
                } else {
                    self.nodes[before].ghost_prev
                };
                (prev, before, ghost)
            }
        };
        for &w in window {
            self.nodes[w].live = false;
            self.live -= 1;
        }
        match prev {
            NIL => self.first = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.last = prev,
            n => self.nodes[n].prev = prev,
        }
        for id in new {
            self.link(prev, id, next);
            prev = id;
            let after = if ghost == NIL {
                self.ghost_first
            } else {
                self.nodes[ghost].ghost_next
            };
            self.ghost_link(ghost, id, after);
            ghost = id;
        }
    }
}

/// The rolling hash's base (odd, so multiplication by it is invertible).
const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

/// How many places a search verifies line by line when it falls back to
/// a pass over the whole scope; beyond them, places are only counted (by
/// their hash), so an ambiguous search of a repetitive file costs
/// O(lines), not O(lines × hunk).
const VERIFIED: usize = 11;

/// The most line comparisons the near-miss search makes for one refusal.
const NEAR_MISS_BUDGET: usize = 1 << 22;

/// The text of a file line for a refusal.
fn shown(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// How a refusal of one search is worded.
struct Refusals<'f> {
    /// `what("matches N places …")` for an ambiguous search.
    what: &'f dyn Fn(&str) -> AgentEditError,
    /// For no place at any rung, with the nearest misses.
    missing: &'f dyn Fn(Vec<Value>) -> AgentEditError,
    /// For an exhausted work budget.
    limit: &'f dyn Fn() -> AgentEditError,
}

/// Find `want` in `scope` by the ladder: the first rung with a unique
/// place wins; two places at a rung is ambiguous.
fn ladder(
    text: &Running<'_>,
    scope: Scope,
    want: &[String],
    at_end: bool,
    work: &mut Work,
    refuse: &Refusals<'_>,
) -> Result<(usize, MatchRung), AgentEditError> {
    for rung in MatchRung::LADDER {
        let w: Vec<Vec<u8>> = want.iter().map(|l| normalize(l.as_bytes(), rung)).collect();
        let (found, count) = text
            .find(rung, &w, scope, at_end, work)
            .ok_or_else(|| (refuse.limit)())?;
        match (found.as_slice(), count) {
            ([s], 1) => return Ok((*s, rung)),
            (_, 0) => continue,
            (many, count) => {
                let mut at: Vec<(usize, usize)> = text
                    .lines_of(many, scope)
                    .into_iter()
                    .zip(many.iter().copied())
                    .collect();
                at.sort_unstable();
                at.truncate(10);
                let candidates: Vec<Value> = at
                    .iter()
                    .map(
                        |&(line, id)| json!({"line": line, "text": shown(&text.nodes[id].content)}),
                    )
                    .collect();
                let mut e = (refuse.what)(&format!(
                    "matches {count} places at rung {} (lines {}{}); add context lines or an `@@` anchor to make it unique",
                    rung.as_str(),
                    at.iter()
                        .map(|(line, _)| line.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if count > 10 { ", …" } else { "" }
                ));
                e.details["reason"] = json!("ambiguous");
                e.details["rung"] = json!(rung);
                e.details["count"] = json!(count);
                e.details["candidates"] = Value::Array(candidates);
                return Err(e);
            }
        }
    }
    // The nearest misses: the starts where the longest prefix of the lines
    // matches at the loosest rung, with the first line that differs.
    let flat = text.flat(scope);
    let numbers = text.lines_of(&flat, scope);
    let loosest = MatchRung::LADDER[MatchRung::LADDER.len() - 1];
    let loose_rung = loosest as usize;
    let loose: Vec<&[u8]> = flat
        .iter()
        .map(|&id| &text.nodes[id].norm[loose_rung][..])
        .collect();
    let w: Vec<Vec<u8>> = want
        .iter()
        .map(|l| normalize(l.as_bytes(), loosest))
        .collect();
    let mut best = 0;
    let mut at = Vec::new();
    let mut budget = NEAR_MISS_BUDGET;
    for s in 0..loose.len() {
        if budget == 0 {
            break;
        }
        let k = w
            .iter()
            .zip(&loose[s..])
            .take_while(|(a, b)| a.as_slice() == **b)
            .count();
        budget = budget.saturating_sub(k + 1);
        if k > best {
            best = k;
            at.clear();
        }
        if k == best && k > 0 {
            at.push(s);
        }
    }
    let candidates = at
        .iter()
        .take(3)
        .map(|&s| {
            let differs = s + best;
            match (flat.get(differs), want.get(best)) {
                (Some(&l), Some(expected)) => json!({
                    "line": numbers[differs], "text": shown(&text.nodes[l].content), "expected": expected,
                    "matched_from": numbers[s], "matched_lines": best,
                }),
                // The lines match up to the end of the file (or, with
                // `*** End of File`, it is not at the end).
                _ => json!({"line": numbers[s], "text": shown(&text.nodes[flat[s]].content),
                            "matched_from": numbers[s], "matched_lines": best}),
            }
        })
        .collect();
    Err((refuse.missing)(candidates))
}

/// A line's leading blanks.
fn indent(line: &[u8]) -> &[u8] {
    let n = line
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c'))
        .unwrap_or(line.len());
    &line[..n]
}

fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| b.is_ascii_whitespace() || *b == b'\x0b')
}

/// How a hunk matched at the whitespace rung is re-indented (aider's rule
/// for a SEARCH missing leading whitespace): the hunk's lines (old and
/// added) are outdented by the indentation all their non-blank lines
/// share, then every non-blank matched line of the file must be one same
/// prefix followed by the outdented old line's indentation; added lines
/// are written as that prefix + the outdented line. `Ok((outdent, prefix))`,
/// or `Err(i)`: the first old line whose indentation disagrees.
fn reindent(file: &[&[u8]], old: &[String], added: &[&str]) -> Result<(usize, Vec<u8>), usize> {
    let outdent = old
        .iter()
        .map(String::as_str)
        .chain(added.iter().copied())
        .map(str::as_bytes)
        .filter(|l| !is_blank(l))
        .map(|l| indent(l).len())
        .min()
        .unwrap_or(0);
    let mut prefix: Option<&[u8]> = None;
    for (i, (f, o)) in file.iter().zip(old).enumerate() {
        let o = o.as_bytes();
        if is_blank(o) {
            continue;
        }
        let (fi, oi) = (indent(f), indent(&o[outdent..]));
        let Some(p) = fi.strip_suffix(oi) else {
            return Err(i);
        };
        match prefix {
            Some(q) if q != p => return Err(i),
            _ => prefix = Some(p),
        }
    }
    Ok((outdent, prefix.unwrap_or_default().to_vec()))
}

/// One hunk as applied: where (its first live node, or NIL at the end),
/// the nodes it removed and the ones it wrote.
struct Applied {
    hunk: u32,
    rung: MatchRung,
    at: usize,
    removed: Vec<usize>,
    written: std::ops::Range<usize>,
}

/// Apply the hunks of one file in order, each against the running result:
/// a SEARCH/REPLACE block is searched in the whole text as the blocks
/// before it left it (so a block may edit what an earlier one wrote); a
/// Codex hunk is searched from the end of the previous hunk on (the
/// original lines after it), as Codex applies its chunks. The matches are
/// returned in hunk order, each at its 1-based line in the text it was
/// searched in (SEARCH/REPLACE: the running text; Codex: the original
/// file).
fn apply_hunks(
    path: &RepoPath,
    data: &[u8],
    hunks: &[Hunk],
    format: AgentFormat,
    work: &mut Work,
) -> Result<(Vec<u8>, Vec<MatchedHunk>), AgentEditError> {
    let lines = split_lines(data);
    // The line ending new lines take: the file's first terminator.
    let eol: &[u8] = lines
        .iter()
        .find(|l| !l.term.is_empty())
        .map_or(b"\n", |l| l.term);
    let final_newline = lines.last().is_none_or(|l| !l.term.is_empty());
    if !work.spend(lines.len()) {
        if let Some(h) = hunks.first() {
            return Err(work_limit(path, h));
        }
    }
    let mut text = Running::new(&lines);
    let codex = format == AgentFormat::Codex;
    // Codex: the first original line the next hunk may use.
    let mut lo = 0;
    let mut applied: Vec<Applied> = Vec::with_capacity(hunks.len());
    for h in hunks {
        let scope = if codex { Scope::From(lo) } else { Scope::All };
        let (scope, mut rung) = follow_anchors(&text, path, h, scope, work)?;
        let (at, window, shape) = if h.old.is_empty() {
            // A pure insertion: after the last anchor, or at the end.
            let at = match scope {
                Scope::From(x) if !h.at_end && x < text.originals => x,
                _ => NIL,
            };
            (at, Vec::new(), (0, Vec::new()))
        } else {
            let (s, window, shape, r) = place_block(&text, path, h, scope, work)?;
            rung = rung.max(r);
            (s, window, shape)
        };
        let written = write_new_lines(&mut text, &h.new, &window, shape, eol);
        if codex {
            // The next hunk is sought after this one: after its lines, or
            // after the place it inserted at; lines appended at the end
            // leave the cursor where it was (as in Codex, where a pure
            // addition goes to the end and the next chunk is sought from
            // the previous one).
            lo = match (window.last(), at) {
                (Some(&b), _) => b + 1,
                (None, NIL) => lo,
                (None, x) => x,
            };
        }
        text.splice(&window, at, written.clone());
        applied.push(Applied {
            hunk: h.number,
            rung,
            at: window.first().copied().unwrap_or(at),
            removed: window,
            written,
        });
    }
    let data = render(&text, eol, final_newline, data.len());
    Ok((data, matched_hunks(&text, &applied, codex)))
}

/// How the lines a hunk adds are re-indented: this many bytes of their
/// indentation off, then this prefix on ([`reindent`]).
type Reindent = (usize, Vec<u8>);

/// `patch_does_not_apply` for hunk `h` of `path`, `reason` in the details.
fn refusal(path: &RepoPath, h: &Hunk, reason: &str, message: String) -> AgentEditError {
    AgentEditError::new(
        ErrorCode::PatchDoesNotApply,
        format!("hunk {} (line {}) of {path}: {message}", h.number, h.line),
        json!({"hunk": h.number, "line": h.line, "path": path.as_str(), "reason": reason}),
    )
}

/// The refusal of a change whose placement exceeds the work bound, at
/// hunk `h`.
fn work_limit(path: &RepoPath, h: &Hunk) -> AgentEditError {
    AgentEditError::new(
        ErrorCode::PatchDoesNotApply,
        format!(
            "hunk {} (line {}) of {path}: placing this change's hunks needs more than {PLACEMENT_WORK_LIMIT} line comparisons; split the change, or start each hunk with a line that occurs fewer times in the file",
            h.number, h.line
        ),
        json!({"hunk": h.number, "line": h.line, "path": path.as_str(), "reason": "work_limit"}),
    )
}

/// Find hunk `h`'s `@@` anchors in order, each after the one before,
/// from `scope` on: the scope after the last anchor, and the highest rung
/// any matched at.
fn follow_anchors(
    text: &Running<'_>,
    path: &RepoPath,
    h: &Hunk,
    mut scope: Scope,
    work: &mut Work,
) -> Result<(Scope, MatchRung), AgentEditError> {
    let exhausted = || work_limit(path, h);
    let mut rung = MatchRung::Exact;
    for a in &h.anchors {
        let what = |m: &str| refusal(path, h, "ambiguous", format!("its anchor `@@ {a}` {m}"));
        let missing = |c: Vec<Value>| {
            let mut e = refusal(
                path,
                h,
                "not_found",
                format!("its anchor `@@ {a}` matches no line of the file at any rung"),
            );
            e.details["anchor"] = json!(a);
            e.details["candidates"] = Value::Array(c);
            e
        };
        let refusals = Refusals {
            what: &what,
            missing: &missing,
            limit: &exhausted,
        };
        let (at, r) = ladder(text, scope, std::slice::from_ref(a), false, work, &refusals)?;
        scope = Scope::From(at + 1);
        rung = rung.max(r);
    }
    Ok((scope, rung))
}

/// Place hunk `h`'s old lines in `text` (from `scope` on), down the
/// matching ladder, dropping trailing blank context lines one by one
/// while they match nowhere: where they start, the nodes they match, how
/// to re-indent the lines the hunk adds (at the rungs that compare lines
/// trimmed), and the rung.
fn place_block(
    text: &Running<'_>,
    path: &RepoPath,
    h: &Hunk,
    scope: Scope,
    work: &mut Work,
) -> Result<(usize, Vec<usize>, Reindent, MatchRung), AgentEditError> {
    let exhausted = || work_limit(path, h);
    let what = |m: &str| {
        refusal(
            path,
            h,
            "ambiguous",
            format!("its block of {} lines {m}", h.old.len()),
        )
    };
    let missing = |c: Vec<Value>| {
        let first = h.old.first().map_or("", String::as_str);
        let mut e = refusal(
            path,
            h,
            "not_found",
            if c.is_empty() {
                format!(
                    "its lines match nowhere in the file at any rung; no line resembles its first line {first:?}"
                )
            } else {
                "its lines match nowhere in the file at any rung; the nearest candidates are in details.candidates".to_owned()
            },
        );
        if h.at_end {
            e.details["at_end"] = json!(true);
        }
        e.details["candidates"] = Value::Array(c);
        e
    };
    let refusals = Refusals {
        what: &what,
        missing: &missing,
        limit: &exhausted,
    };
    let mut len = h.old.len();
    // The refusal of the lines as written, once they match nowhere.
    let mut as_written = None;
    let (s, r) = loop {
        match ladder(text, scope, &h.old[..len], h.at_end, work, &refusals) {
            Ok(found) => break found,
            Err(e) if e.details["reason"] == "not_found" => {
                let e = as_written.take().unwrap_or(e);
                // Again without one more trailing blank context line.
                if h.old.len() - len < h.blank_tail && len > 1 {
                    as_written = Some(e);
                    len -= 1;
                } else {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    };
    let old = &h.old[..len];
    let window = text.window(s, len);
    let mut shape = (0, Vec::new());
    // Both rungs that compare lines trimmed re-indent the result.
    if r >= MatchRung::Whitespace {
        let file: Vec<&[u8]> = window
            .iter()
            .map(|&id| &text.nodes[id].content[..])
            .collect();
        let added: Vec<&str> = h
            .new
            .iter()
            .filter_map(|n| match n {
                NewLine::Add(s) => Some(s.as_str()),
                NewLine::Keep(_) => None,
            })
            .collect();
        shape = reindent(&file, old, &added).map_err(|i| {
            let line = text.lines_of(&window[i..=i], scope)[0];
            let mut e = refusal(
                path,
                h,
                "indentation",
                format!(
                    "its lines match the file's at rung {} from line {}, but line {line}'s indentation differs from the hunk's by another amount than the lines before it, so the replacement's indentation cannot be derived; copy the file's indentation exactly",
                    r.as_str(),
                    text.lines_of(&window[..1], scope)[0]
                ),
            );
            e.details["rung"] = json!(r);
            e.details["candidates"] = json!([{"line": line, "text": shown(file[i]), "expected": old[i]}]);
            e
        })?;
    }
    Ok((s, window, shape, r))
}

/// Push a hunk's new lines onto `text`'s arena: a kept line with the
/// file's bytes (from `window`, the nodes it matched), an added one
/// re-indented by `shape` (`outdent` bytes off, `prefix` on) and ended by
/// `eol`; the nodes written.
fn write_new_lines<'a>(
    text: &mut Running<'a>,
    new: &[NewLine],
    window: &[usize],
    (outdent, prefix): Reindent,
    eol: &'a [u8],
) -> std::ops::Range<usize> {
    let first_new = text.nodes.len();
    for n in new {
        match n {
            // A blank context line the placement dropped.
            NewLine::Keep(i) if *i >= window.len() => {}
            NewLine::Keep(i) => {
                let kept = &text.nodes[window[*i]];
                let (content, term) = (kept.content.clone(), kept.term);
                text.push(content, term);
            }
            NewLine::Add(s) => {
                let s = s.as_bytes();
                let line = if is_blank(s) || (outdent == 0 && prefix.is_empty()) {
                    Cow::Owned(s.to_vec())
                } else {
                    Cow::Owned([&prefix[..], &s[outdent..]].concat())
                };
                text.push(line, eol);
            }
        }
    }
    first_new..text.nodes.len()
}

/// The live lines of `text`, each ended by its own terminator (or `eol`
/// for a line written without one), the last one only if
/// `final_newline`.
fn render(text: &Running<'_>, eol: &[u8], final_newline: bool, capacity: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(capacity);
    let mut at = text.first;
    while at != NIL {
        let node = &text.nodes[at];
        data.extend_from_slice(&node.content);
        if node.next != NIL || final_newline {
            data.extend_from_slice(if node.term.is_empty() { eol } else { node.term });
        }
        at = node.next;
    }
    data
}

/// Each applied hunk's match, in hunk order, at its 1-based line: in the
/// original file for Codex (past its end for an insertion at the end),
/// in the running text otherwise.
fn matched_hunks(text: &Running<'_>, applied: &[Applied], codex: bool) -> Vec<MatchedHunk> {
    let lines_at = if codex {
        applied
            .iter()
            .map(|a| {
                if a.at == NIL {
                    text.originals + 1
                } else {
                    a.at + 1
                }
            })
            .collect()
    } else {
        running_lines(text, applied)
    };
    let mut found: Vec<MatchedHunk> = applied
        .iter()
        .zip(lines_at)
        .map(|(a, line)| MatchedHunk {
            hunk: a.hunk,
            rung: a.rung,
            line: u32::try_from(line).unwrap_or(u32::MAX),
        })
        .collect();
    found.sort_by_key(|m| m.hunk);
    found
}

/// The 1-based line of the running text each applied hunk matched at (or
/// was inserted before), at the moment it was applied: every node's rank
/// in the ghost order, then a sweep over the hunks counting, with a
/// Fenwick tree, the nodes live at that moment before its place.
fn running_lines(text: &Running<'_>, applied: &[Applied]) -> Vec<usize> {
    let mut rank = vec![0; text.nodes.len()];
    let mut at = text.ghost_first;
    let mut r = 0;
    while at != NIL {
        rank[at] = r;
        r += 1;
        at = text.nodes[at].ghost_next;
    }
    let size = text.nodes.len();
    let mut tree = vec![0i64; size + 1];
    let add = |tree: &mut Vec<i64>, i: usize, v: i64| {
        let mut i = i + 1;
        while i <= size {
            tree[i] += v;
            i += i & i.wrapping_neg();
        }
    };
    let before = |tree: &Vec<i64>, i: usize| {
        let (mut i, mut sum) = (i, 0i64);
        while i > 0 {
            sum += tree[i];
            i -= i & i.wrapping_neg();
        }
        usize::try_from(sum).unwrap_or(0)
    };
    for &r in &rank[..text.originals] {
        add(&mut tree, r, 1);
    }
    let mut live = text.originals;
    let mut out = Vec::with_capacity(applied.len());
    for a in applied {
        out.push(if a.at == NIL {
            live + 1
        } else {
            before(&tree, rank[a.at]) + 1
        });
        for &d in &a.removed {
            add(&mut tree, rank[d], -1);
        }
        for b in a.written.clone() {
            add(&mut tree, rank[b], 1);
        }
        live = live + a.written.len() - a.removed.len();
    }
    out
}
