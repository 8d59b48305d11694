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
//!    runs of ASCII whitespace are collapsed to one space;
//! 4. [`unicode_punctuation`](MatchRung::UnicodePunctuation): equal at the
//!    `whitespace` rung once typographic dashes, quotes and non-breaking or
//!    other odd spaces are read as their ASCII counterparts (the last pass
//!    of Codex's `apply_patch` matcher), so an ASCII hunk finds a line
//!    written with `–`, `’` or U+00A0.
//!
//! A rung is taken only when it finds exactly one place in the file (or,
//! after `@@ anchor` lines, in the rest of the file after the last anchor);
//! two or more places at a rung is an ambiguous match, and no place at any
//! rung a missing one — both refused with `patch_does_not_apply`, naming the
//! hunk, the file and the candidate lines. Every hunk is matched against the
//! original content, hunks of one file must not overlap, and a failure in
//! any hunk refuses the whole change. The rung each hunk needed is recorded
//! on the changeset ([`Changeset::matches`]).
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
pub use crate::model::{MatchRung, MatchedHunk};
use crate::{Changeset, Digest, ErrorCode, FileChange, FileContent, FileMeta, Operation, RepoPath};
use serde_json::{json, Value};
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
/// use roundtable::diff::TreeFile;
/// use roundtable::edit::agent::{changeset, AgentFormat, MatchRung};
/// use roundtable::RepoPath;
/// use std::collections::BTreeMap;
///
/// let tree = BTreeMap::from([(b"a.py".to_vec(), TreeFile::regular(b"def f():\n    return 1  \n".to_vec()))]);
/// let text = "a.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n";
/// let cs = changeset(AgentFormat::SearchReplace, text.as_bytes(), &tree)?;
/// assert_eq!(cs.files()[0].after.as_ref().unwrap().data, b"def f():\n    return 2\n");
/// let path = RepoPath::from_bytes(b"a.py").unwrap();
/// assert_eq!(cs.matches(&path)[0].rung, MatchRung::TrailingWhitespace);
/// # Ok::<(), roundtable::edit::agent::AgentEditError>(())
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
    build(&ops, tree)
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

fn build<T: Tree + ?Sized>(ops: &[FileOp], tree: &T) -> Result<Changeset, AgentEditError> {
    check_touched_once(ops)?;
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
                    if let ([h], true) = (hunks.as_slice(), *create_if_absent) {
                        if h.old.is_empty() {
                            files.push(created(path, join_new(h)));
                            continue;
                        }
                    }
                    return Err(precondition(path, *line, "present", None));
                };
                if *create_if_absent {
                    if let Some(h) = hunks.iter().find(|h| h.old.is_empty()) {
                        return Err(AgentEditError::new(
                            ErrorCode::PreconditionFailed,
                            format!(
                                "hunk {} (line {}): an empty SEARCH creates a file, but {path} exists",
                                h.number, h.line
                            ),
                            json!({"hunk": h.number, "line": h.line, "path": path.as_str(),
                                   "expected": "absent", "actual": meta.digest.to_string()}),
                        ));
                    }
                }
                let (data, found) = apply_hunks(path, &file.data, hunks)?;
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

/// A file's lines under every rung, and each normalized line's hash,
/// computed once.
struct Normalized {
    rungs: Vec<Vec<Vec<u8>>>,
    hashes: Vec<Vec<u64>>,
}

fn line_hash(line: &[u8]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

impl Normalized {
    fn new(lines: &[Line<'_>]) -> Self {
        let rungs: Vec<Vec<Vec<u8>>> = MatchRung::LADDER
            .iter()
            .map(|r| lines.iter().map(|l| normalize(l.content, *r)).collect())
            .collect();
        let hashes = rungs
            .iter()
            .map(|ls| ls.iter().map(|l| line_hash(l)).collect())
            .collect();
        Normalized { rungs, hashes }
    }

    fn at(&self, rung: MatchRung) -> &[Vec<u8>] {
        &self.rungs[rung as usize]
    }

    fn hashes(&self, rung: MatchRung) -> &[u64] {
        &self.hashes[rung as usize]
    }
}

/// The rolling hash's base (odd, so multiplication by it is invertible).
const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

/// How many places a search verifies line by line; beyond them, places
/// are only counted (by their hash), so an ambiguous search of a
/// repetitive file costs O(lines), not O(lines × hunk).
const VERIFIED: usize = 11;

/// The places in `[lo, n]` where `want` (already normalized) matches:
/// up to [`VERIFIED`] of them checked line by line, and how many there
/// are in all (a Rabin–Karp search over the lines' hashes).
fn starts(
    norm: &Normalized,
    rung: MatchRung,
    lo: usize,
    want: &[Vec<u8>],
    at_end: bool,
) -> (Vec<usize>, usize) {
    let file = norm.at(rung);
    let hashes = norm.hashes(rung);
    let n = file.len();
    let m = want.len();
    if m > n.saturating_sub(lo) {
        return (Vec::new(), 0);
    }
    let roll = |acc: u64, h: u64| acc.wrapping_mul(BASE).wrapping_add(h);
    let target = want.iter().fold(0u64, |acc, l| roll(acc, line_hash(l)));
    let top = (1..m).fold(1u64, |acc, _| acc.wrapping_mul(BASE));
    let first = if at_end { n - m } else { lo };
    let mut window = hashes[first..first + m]
        .iter()
        .fold(0u64, |acc, h| roll(acc, *h));
    let mut verified = Vec::new();
    let mut count = 0;
    let mut s = first;
    loop {
        if window == target {
            if verified.len() < VERIFIED {
                if file[s..s + m] == *want {
                    verified.push(s);
                    count += 1;
                }
            } else {
                count += 1;
            }
        }
        if at_end || s + m >= n {
            break;
        }
        window = roll(
            window.wrapping_sub(hashes[s].wrapping_mul(top)),
            hashes[s + m],
        );
        s += 1;
    }
    (verified, count)
}

/// The most line comparisons the near-miss search makes for one refusal.
const NEAR_MISS_BUDGET: usize = 1 << 22;

/// Where a hunk landed: the old lines `[start, start + len)`, and the rung.
struct Placed {
    start: usize,
    len: usize,
    rung: MatchRung,
}

/// The text of a file line for a refusal.
fn shown(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// Find `want` in the lines from `lo` by the ladder: the first rung with a
/// unique place wins; two places at a rung is ambiguous.
fn ladder(
    norm: &Normalized,
    lines: &[Line<'_>],
    lo: usize,
    want: &[String],
    at_end: bool,
    what: &dyn Fn(&str) -> AgentEditError,
    missing: &dyn Fn(Vec<Value>) -> AgentEditError,
) -> Result<(usize, MatchRung), AgentEditError> {
    for rung in MatchRung::LADDER {
        let w: Vec<Vec<u8>> = want.iter().map(|l| normalize(l.as_bytes(), rung)).collect();
        let (found, count) = starts(norm, rung, lo, &w, at_end);
        match (found.as_slice(), count) {
            ([s], 1) => return Ok((*s, rung)),
            (_, 0) => continue,
            (many, count) => {
                let candidates: Vec<Value> = many
                    .iter()
                    .take(10)
                    .map(|&s| json!({"line": s + 1, "text": shown(lines[s].content)}))
                    .collect();
                let mut e = what(&format!(
                    "matches {count} places at rung {} (lines {}{}); add context lines or an `@@` anchor to make it unique",
                    rung.as_str(),
                    many.iter()
                        .take(10)
                        .map(|s| (s + 1).to_string())
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
    let loosest = MatchRung::LADDER[MatchRung::LADDER.len() - 1];
    let loose = norm.at(loosest);
    let w: Vec<Vec<u8>> = want
        .iter()
        .map(|l| normalize(l.as_bytes(), loosest))
        .collect();
    let mut best = 0;
    let mut at = Vec::new();
    let mut budget = NEAR_MISS_BUDGET;
    for s in lo..loose.len() {
        if budget == 0 {
            break;
        }
        let k = w
            .iter()
            .zip(&loose[s..])
            .take_while(|(a, b)| a == b)
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
            match (lines.get(differs), want.get(best)) {
                (Some(l), Some(expected)) => json!({
                    "line": differs + 1, "text": shown(l.content), "expected": expected,
                    "matched_from": s + 1, "matched_lines": best,
                }),
                // The lines match up to the end of the file (or, with
                // `*** End of File`, it is not at the end).
                _ => json!({"line": s + 1, "text": shown(lines[s].content),
                            "matched_from": s + 1, "matched_lines": best}),
            }
        })
        .collect();
    Err(missing(candidates))
}

/// Place every hunk of one file against its original content, then write
/// the result; the matches are returned in hunk order.
fn apply_hunks(
    path: &RepoPath,
    data: &[u8],
    hunks: &[Hunk],
) -> Result<(Vec<u8>, Vec<MatchedHunk>), AgentEditError> {
    let lines = split_lines(data);
    let norm = Normalized::new(&lines);
    let mut placed: Vec<(Placed, &Hunk)> = Vec::with_capacity(hunks.len());
    for h in hunks {
        let refuse = |reason: &str, message: String| {
            AgentEditError::new(
                ErrorCode::PatchDoesNotApply,
                format!("hunk {} (line {}) of {path}: {message}", h.number, h.line),
                json!({"hunk": h.number, "line": h.line, "path": path.as_str(), "reason": reason}),
            )
        };
        let mut lo = 0;
        let mut rung = MatchRung::Exact;
        for a in &h.anchors {
            let what = |m: &str| refuse("ambiguous", format!("its anchor `@@ {a}` {m}"));
            let missing = |c: Vec<Value>| {
                let mut e = refuse(
                    "not_found",
                    format!("its anchor `@@ {a}` matches no line of the file at any rung"),
                );
                e.details["anchor"] = json!(a);
                e.details["candidates"] = Value::Array(c);
                e
            };
            let (at, r) = ladder(
                &norm,
                &lines,
                lo,
                std::slice::from_ref(a),
                false,
                &what,
                &missing,
            )?;
            lo = at + 1;
            rung = rung.max(r);
        }
        // Where the hunk's old lines start, and how many of them it replaces.
        let (start, len) = if h.old.is_empty() {
            // A pure insertion: after the last anchor, or at the end.
            if h.at_end {
                (lines.len(), 0)
            } else {
                (lo, 0)
            }
        } else {
            let what = |m: &str| {
                refuse(
                    "ambiguous",
                    format!("its block of {} lines {m}", h.old.len()),
                )
            };
            let missing = |c: Vec<Value>| {
                let first = h.old.first().map_or("", String::as_str);
                let mut e = refuse(
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
            let mut len = h.old.len();
            // The refusal of the lines as written, once they match nowhere.
            let mut as_written = None;
            let (s, r) = loop {
                match ladder(&norm, &lines, lo, &h.old[..len], h.at_end, &what, &missing) {
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
            rung = rung.max(r);
            (s, len)
        };
        placed.push((Placed { start, len, rung }, h));
    }
    placed.sort_by_key(|(p, h)| (p.start, p.len != 0, h.number));
    for w in placed.windows(2) {
        let (a, ha) = &w[0];
        let (b, hb) = &w[1];
        if b.start < a.start + a.len || (a.len > 0 && b.len > 0 && b.start == a.start) {
            return Err(AgentEditError::new(
                ErrorCode::PatchDoesNotApply,
                format!(
                    "hunk {} (line {}) of {path} overlaps hunk {} (lines {}-{} of the file)",
                    hb.number,
                    hb.line,
                    ha.number,
                    a.start + 1,
                    a.start + a.len
                ),
                json!({"hunk": hb.number, "line": hb.line, "path": path.as_str(), "reason": "overlap",
                       "other_hunk": ha.number,
                       "candidates": [{"line": b.start + 1,
                                       "text": lines.get(b.start).map(|l| shown(l.content))}]}),
            ));
        }
    }

    // The line ending new lines take: the file's first terminator.
    let eol: &[u8] = lines
        .iter()
        .find(|l| !l.term.is_empty())
        .map_or(b"\n", |l| l.term);
    let final_newline = lines.last().is_none_or(|l| !l.term.is_empty());
    let mut out: Vec<(&[u8], &[u8])> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (p, h) in &placed {
        out.extend(lines[next..p.start].iter().map(|l| (l.content, l.term)));
        for n in &h.new {
            match n {
                // A blank context line the placement dropped.
                NewLine::Keep(i) if *i >= p.len => {}
                NewLine::Keep(i) => {
                    let l = &lines[p.start + i];
                    out.push((l.content, l.term));
                }
                NewLine::Add(s) => out.push((s.as_bytes(), eol)),
            }
        }
        next = p.start + p.len;
    }
    out.extend(lines[next..].iter().map(|l| (l.content, l.term)));
    let mut data = Vec::with_capacity(out.iter().map(|(c, t)| c.len() + t.len().max(1)).sum());
    let last = out.len().saturating_sub(1);
    for (i, (content, term)) in out.iter().enumerate() {
        data.extend_from_slice(content);
        if i < last || final_newline {
            data.extend_from_slice(if term.is_empty() { eol } else { term });
        }
    }
    let mut found: Vec<MatchedHunk> = placed
        .iter()
        .map(|(p, h)| MatchedHunk {
            hunk: h.number,
            rung: p.rung,
            line: u32::try_from(p.start + 1).unwrap_or(u32::MAX),
        })
        .collect();
    found.sort_by_key(|m| m.hunk);
    Ok((data, found))
}
