//! The parser: git's diff grammar over bytes, strict.
//!
//! Accepted: `diff --git` sections with every extended header git writes,
//! C-quoted names, `---`/`+++` lines, hunks whose line counts must match
//! their bodies, `\ No newline at end of file`, `GIT binary patch`
//! (literal and delta, verified by inflating) and `Binary files … differ`;
//! plain unified diff sections (`---`/`+++`/`@@`) with a strip level, their
//! names read as git reads them (a trailing timestamp cut off, GNU diff's
//! epoch timestamp marking a created or deleted file).
//! As in git, lines outside file sections are skipped wherever they are:
//! a commit message, a diffstat, mail signatures and the headers of the
//! next mail of an mbox, `svn diff`'s `Index:` lines, `diff -r` command
//! lines. Only text is skipped: a hunk header outside a section is refused,
//! and a section, once begun, is parsed in full or refused. Unlike git,
//! `diff -r`'s reports of changes it does not carry (`Binary files … differ`,
//! `Only in …`) are refused ([`ErrorCode::UnsupportedPatch`]) rather than
//! skipped, so a patch never applies with part of its change left out. Anything else
//! is an [`ErrorCode::InvalidPatch`] naming the line and what was
//! expected; combined diffs (`diff --cc`) are [`ErrorCode::UnsupportedPatch`].

use super::binary;
use super::quote;
use super::{
    BinaryHunk, BinaryMethod, Body, ExtendedHeader, FileName, FilePatch, FileStatus, Hunk,
    LineKind, LineSpan, Mode, Patch,
};
use crate::ErrorCode;
use std::borrow::Cow;

/// How to read a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseOptions {
    /// Leading path components to strip from names (`-p`), default 1:
    /// `a/src/x.rs` becomes `src/x.rs`. `rename`/`copy` headers, which git
    /// writes without prefixes, are stripped by one less.
    pub strip: usize,
    /// The most bytes the `GIT binary patch` hunks of one patch may
    /// inflate to, in all (a literal's content; a delta's instructions and
    /// the content it builds), default [`DEFAULT_MAX_INFLATED_BYTES`]. The
    /// sizes are checked before anything is inflated, so a small patch
    /// cannot make the parser or applier inflate gigabytes (a
    /// decompression bomb); a patch over the limit is
    /// [`ErrorCode::InvalidArgument`] naming `max_inflated_bytes`.
    pub max_inflated_bytes: u64,
}

/// The default of [`ParseOptions::max_inflated_bytes`]: 128 MiB, eight
/// times the default patch size limit.
pub const DEFAULT_MAX_INFLATED_BYTES: u64 = 128 << 20;

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            strip: 1,
            max_inflated_bytes: DEFAULT_MAX_INFLATED_BYTES,
        }
    }
}

impl ParseOptions {
    /// The default options with this strip level (`-p`).
    pub fn strip(strip: usize) -> Self {
        ParseOptions {
            strip,
            ..ParseOptions::default()
        }
    }
}

/// A patch that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: expected {expected}, found {found:?}")]
pub struct ParseError {
    line: usize,
    expected: String,
    found: String,
    code: ErrorCode,
    field: Option<&'static str>,
}

impl ParseError {
    pub(crate) fn new(line: usize, expected: impl Into<String>, found: &[u8]) -> Self {
        const MAX: usize = 120;
        let shown = &found[..found.len().min(MAX)];
        let mut found = String::from_utf8_lossy(shown).into_owned();
        if found.ends_with('\n') {
            found.pop();
        }
        ParseError {
            line,
            expected: expected.into(),
            found,
            code: ErrorCode::InvalidPatch,
            field: None,
        }
    }

    fn over_limit(line: usize, expected: String, found: &[u8]) -> Self {
        ParseError {
            code: ErrorCode::InvalidArgument,
            field: Some("max_inflated_bytes"),
            ..ParseError::new(line, expected, found)
        }
    }

    fn unsupported(line: usize, expected: &str, found: &[u8]) -> Self {
        ParseError {
            code: ErrorCode::UnsupportedPatch,
            ..ParseError::new(line, expected, found)
        }
    }

    /// The 1-based line number where the input stopped making sense
    /// (0 for a section built in code).
    pub fn line(&self) -> usize {
        self.line
    }
    /// What the grammar expected there.
    pub fn expected(&self) -> &str {
        &self.expected
    }
    /// The offending line (lossily decoded, truncated).
    pub fn found(&self) -> &str {
        &self.found
    }
    /// `invalid_patch`; `unsupported_patch` for combined diffs;
    /// `invalid_argument` for a patch over a limit of [`ParseOptions`].
    pub fn code(&self) -> ErrorCode {
        self.code
    }
    /// The [`ParseOptions`] limit the patch exceeds (`max_inflated_bytes`),
    /// when that is why it was refused.
    pub fn field(&self) -> Option<&'static str> {
        self.field
    }
}

/// Parse `input` as a patch.
///
/// The result borrows from `input`: hunk bodies are not copied.
pub fn parse<'a>(input: &'a [u8], options: &ParseOptions) -> Result<Patch<'a>, ParseError> {
    if u32::try_from(input.len()).is_err() {
        return Err(ParseError::new(1, "a patch smaller than 4 GiB", b""));
    }
    let mut cur = Cursor::new(input);
    let mut files = Vec::new();
    let mut budget = Budget {
        limit: options.max_inflated_bytes,
        used: 0,
        inflater: None,
    };
    // Like git's `find_header`: any line that does not begin a file section
    // is skipped, before the first section (a commit message, a diffstat),
    // between sections (a mail signature and the next mail's headers, `svn
    // diff`'s `Index:` lines, `diff -ruN`'s command lines) and after the
    // last. Nothing that could be part of a diff is skipped silently: a
    // hunk header outside a section is refused, and a section that starts
    // is parsed in full or refused.
    while let Some(line) = cur.peek() {
        if line.starts_with(b"diff --git ") {
            if git_header_follows(cur.peek_second()) {
                files.push(git_section(&mut cur, options.strip, &mut budget)?);
            } else {
                // git too reads a lone `diff --git` line as text (it may be
                // `git log -p` of a patch about patches).
                cur.advance();
            }
        } else if line.starts_with(b"diff --cc ") || line.starts_with(b"diff --combined ") {
            return Err(ParseError::unsupported(
                cur.line,
                "a two-way diff (combined diffs of merges are not applicable)",
                line,
            ));
        } else if line.starts_with(b"--- ")
            && cur.peek_second().is_some_and(|l| l.starts_with(b"+++ "))
            && cur.peek_third().is_some_and(|l| l.starts_with(b"@@ -"))
        {
            files.push(plain_section(&mut cur, options.strip)?);
        } else if let Some(what) = unapplied_change(line) {
            // git skips these too, and reports success for a patch that
            // leaves the change out; roundtable refuses instead.
            return Err(ParseError::unsupported(
                cur.line,
                &format!("no {what} outside a file section, which `git apply` would skip, leaving the change out"),
                line,
            ));
        } else if line.starts_with(b"@@ -") && hunk_header(strip_nl(line)).is_some() {
            return Err(ParseError::new(
                cur.line,
                "a file header (`diff --git` or `---`/`+++`) before this hunk",
                line,
            ));
        } else {
            cur.advance();
        }
    }
    if files.is_empty() {
        return Err(ParseError::new(
            cur.line,
            "at least one file section (`diff --git` or `---`/`+++`)",
            b"",
        ));
    }
    Ok(Patch::new(files))
}

struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
    /// End (exclusive) of the line at `pos`, found once per line.
    end: usize,
    /// 1-based number of the line at `pos`.
    line: usize,
}

fn line_end(input: &[u8], from: usize) -> usize {
    match memchr::memchr(b'\n', &input[from..]) {
        Some(i) => from + i + 1,
        None => input.len(),
    }
}

impl<'a> Cursor<'a> {
    fn new(input: &'a [u8]) -> Self {
        Cursor {
            input,
            pos: 0,
            end: line_end(input, 0),
            line: 1,
        }
    }

    /// The line at the cursor, with its newline (if any).
    fn peek(&self) -> Option<&'a [u8]> {
        (self.pos < self.input.len()).then(|| &self.input[self.pos..self.end])
    }

    fn peek_second(&self) -> Option<&'a [u8]> {
        (self.end < self.input.len()).then(|| &self.input[self.end..line_end(self.input, self.end)])
    }

    fn peek_third(&self) -> Option<&'a [u8]> {
        let second_end = line_end(self.input, self.end);
        (second_end < self.input.len())
            .then(|| &self.input[second_end..line_end(self.input, second_end)])
    }

    fn advance(&mut self) {
        self.pos = self.end;
        self.end = line_end(self.input, self.pos);
        self.line += 1;
    }

    /// Take the line at the cursor; it must end with a newline.
    fn take(&mut self, expected: &str) -> Result<&'a [u8], ParseError> {
        let line = self
            .peek()
            .ok_or_else(|| ParseError::new(self.line, expected, b"end of input"))?;
        if line.last() != Some(&b'\n') {
            return Err(ParseError::new(
                self.line,
                format!("{expected}, ending in a newline (is the patch truncated?)"),
                line,
            ));
        }
        self.advance();
        Ok(line)
    }

    fn error(&self, expected: impl Into<String>) -> ParseError {
        ParseError::new(self.line, expected, self.peek().unwrap_or(b"end of input"))
    }
}

/// A line of `diff -r` output outside any section that reports a change
/// the patch does not carry: GNU diff's `Binary files A and B differ` (or
/// `Files A and B differ`) and `Only in DIR: NAME` (`diff -r` without
/// `-N`). Names what it is.
fn unapplied_change(line: &[u8]) -> Option<&'static str> {
    let bare = strip_nl(line);
    let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
    let differ = (line.starts_with(b"Binary files ") || line.starts_with(b"Files "))
        && bare.ends_with(b" differ")
        && memchr::memmem::find(line, b" and ").is_some();
    if differ {
        Some("`Binary files … differ` line (GNU diff's binary change carries no data; make the patch with `git diff --binary`)")
    } else if line.starts_with(b"Only in ") && memchr::memmem::find(line, b": ").is_some() {
        Some("`Only in …` line (a file on one side only that the patch does not carry; make the patch with `diff -N`)")
    } else {
        None
    }
}

/// Whether the line after a `diff --git` line is one git reads as part of
/// its header (an extended header or a `---`/`+++` name line). When it is
/// not, git takes the `diff --git` line for text and skips it.
fn git_header_follows(next: Option<&[u8]>) -> bool {
    const HEADERS: &[&[u8]] = &[
        b"--- ",
        b"+++ ",
        b"old mode ",
        b"new mode ",
        b"deleted file mode ",
        b"new file mode ",
        b"copy from ",
        b"copy to ",
        b"rename old ",
        b"rename new ",
        b"rename from ",
        b"rename to ",
        b"similarity index ",
        b"dissimilarity index ",
        b"index ",
    ];
    next.is_some_and(|l| HEADERS.iter().any(|h| l.starts_with(h)))
}

fn strip_nl(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// What the binary hunks parsed so far may still inflate to.
struct Budget {
    limit: u64,
    used: u64,
    /// The zlib state every binary hunk is checked with (made at the
    /// first one).
    inflater: Option<binary::Inflater>,
}

fn git_section<'a>(
    cur: &mut Cursor<'a>,
    strip: usize,
    budget: &mut Budget,
) -> Result<FilePatch<'a>, ParseError> {
    let start_line = cur.line;
    let first = cur.take("a `diff --git` line")?;
    let git_line = &strip_nl(first)[b"diff --git ".len()..];
    // A git diff saved with CRLF line ends (an editor, a mail client, a
    // Windows checkout of a `.patch` file): the header lines end in a CR
    // that is not part of them (git C-quotes a name holding a CR, so a bare
    // one at the end is the line end). Hunk lines keep theirs: there a CR
    // is content, matched against the file's own.
    let crlf = git_line.last() == Some(&b'\r');
    let git_line = if crlf {
        &git_line[..git_line.len() - 1]
    } else {
        git_line
    };

    let mut headers = Vec::new();
    while let Some(line) = cur.peek() {
        let body = strip_nl(line);
        let body = if crlf {
            body.strip_suffix(b"\r").unwrap_or(body)
        } else {
            body
        };
        let header = if let Some(v) = body.strip_prefix(b"old mode ") {
            ExtendedHeader::OldMode(mode(v).ok_or_else(|| cur.error("an octal file mode"))?)
        } else if let Some(v) = body.strip_prefix(b"new mode ") {
            ExtendedHeader::NewMode(mode(v).ok_or_else(|| cur.error("an octal file mode"))?)
        } else if let Some(v) = body.strip_prefix(b"new file mode ") {
            ExtendedHeader::NewFileMode(mode(v).ok_or_else(|| cur.error("an octal file mode"))?)
        } else if let Some(v) = body.strip_prefix(b"deleted file mode ") {
            ExtendedHeader::DeletedFileMode(mode(v).ok_or_else(|| cur.error("an octal file mode"))?)
        } else if let Some(v) = body.strip_prefix(b"similarity index ") {
            ExtendedHeader::Similarity(percent(v).ok_or_else(|| cur.error("a percentage 0-100%"))?)
        } else if let Some(v) = body.strip_prefix(b"dissimilarity index ") {
            ExtendedHeader::Dissimilarity(
                percent(v).ok_or_else(|| cur.error("a percentage 0-100%"))?,
            )
        } else if let Some(v) = body.strip_prefix(b"rename from ") {
            ExtendedHeader::RenameFrom(header_name(v).map_err(|e| cur.error(e))?)
        } else if let Some(v) = body.strip_prefix(b"rename to ") {
            ExtendedHeader::RenameTo(header_name(v).map_err(|e| cur.error(e))?)
        } else if let Some(v) = body.strip_prefix(b"copy from ") {
            ExtendedHeader::CopyFrom(header_name(v).map_err(|e| cur.error(e))?)
        } else if let Some(v) = body.strip_prefix(b"copy to ") {
            ExtendedHeader::CopyTo(header_name(v).map_err(|e| cur.error(e))?)
        } else if let Some(v) = body.strip_prefix(b"index ") {
            index(v).ok_or_else(|| cur.error("`index <hex>..<hex>[ <mode>]`"))?
        } else {
            break;
        };
        cur.take("an extended header line")?;
        headers.push(header);
    }

    let mut names = None;
    let body = if cur.peek().is_some_and(|l| l.starts_with(b"--- ")) {
        names = Some(file_names(cur, false)?);
        Body::Text(hunks(cur)?)
    } else if cur.peek() == Some(b"GIT binary patch\n") {
        cur.take("`GIT binary patch`")?;
        let forward = binary_hunk(cur, budget)?;
        let reverse = match cur.peek() {
            Some(l) if l.starts_with(b"literal ") || l.starts_with(b"delta ") => {
                Some(binary_hunk(cur, budget)?)
            }
            _ => None,
        };
        Body::Binary { forward, reverse }
    } else if let Some(marker) = cur
        .peek()
        .and_then(|l| l.strip_prefix(b"Binary files "))
        .and_then(|l| l.strip_suffix(b" differ\n"))
    {
        cur.take("`Binary files … differ`")?;
        Body::BinaryMarker(Cow::Borrowed(marker))
    } else {
        if cur.peek().is_some_and(|l| l.starts_with(b"@@ ")) {
            return Err(cur.error("`---` and `+++` lines before the first hunk"));
        }
        Body::Text(Vec::new())
    };

    let mut section = resolve(Some(Cow::Borrowed(git_line)), headers, names, body, strip)
        .map_err(|expected| ParseError::new(start_line, expected, first))?;
    section.crlf = crlf;
    Ok(section)
}

fn plain_section<'a>(cur: &mut Cursor<'a>, strip: usize) -> Result<FilePatch<'a>, ParseError> {
    let start_line = cur.line;
    let first = cur.peek().unwrap_or(b"");
    let names = file_names(cur, true)?;
    let hunks = hunks(cur)?;
    if hunks.is_empty() {
        return Err(cur.error("a hunk (`@@ -a,b +c,d @@`) after the `---`/`+++` lines"));
    }
    resolve(None, Vec::new(), Some(names), Body::Text(hunks), strip)
        .map_err(|expected| ParseError::new(start_line, expected, first))
}

fn file_names<'a>(
    cur: &mut Cursor<'a>,
    traditional: bool,
) -> Result<[FileName<'a>; 2], ParseError> {
    let mut one = |prefix: &'static [u8], what: &str| -> Result<FileName<'a>, ParseError> {
        let line = cur.peek().unwrap_or(b"");
        let Some(rest) = line.strip_prefix(prefix) else {
            return Err(cur.error(format!(
                "a `{}` line",
                String::from_utf8_lossy(prefix).trim()
            )));
        };
        let rest = strip_nl(rest);
        let name = if rest.first() == Some(&b'"') {
            // git ignores what follows a quoted name (a timestamp after
            // a tab or spaces).
            let (name, used) = quote::unquote(rest).map_err(|e| cur.error(e))?;
            FileName {
                name: Cow::Owned(name),
                suffix: Cow::Borrowed(&rest[used..]),
            }
        } else {
            let end = name_end(rest, traditional);
            FileName {
                name: Cow::Borrowed(&rest[..end]),
                suffix: Cow::Borrowed(&rest[end..]),
            }
        };
        if name.name.is_empty() {
            return Err(cur.error(format!("a file name after `{what}`")));
        }
        cur.take("a file name line")?;
        Ok(name)
    };
    let old = one(b"--- ", "---")?;
    let new = one(b"+++ ", "+++")?;
    Ok([old, new])
}

/// Where an unquoted `---`/`+++` name ends, as git's `find_name_common`
/// decides: in a plain diff (`traditional`) a trailing timestamp (GNU
/// diff's `\t2024-01-01 10:00:00.000000000 +0100`, POSIX's, or one after
/// spaces) is cut off and everything before it is the name, tabs and
/// spaces included; otherwise the name ends at a tab or another
/// whitespace character that is not a space (a CR, for example).
pub(crate) fn name_end(rest: &[u8], traditional: bool) -> usize {
    if traditional {
        let stamp = timestamp_len(rest);
        if stamp > 0 {
            return rest.len() - stamp;
        }
    }
    rest.iter()
        .position(|&b| matches!(b, b'\t' | b'\r' | 0x0b | 0x0c))
        .unwrap_or(rest.len())
}

/// The length of the timestamp (with the whitespace before it) that ends
/// `line`, or 0: a date `[YY]YY-MM-DD`, optionally a time `HH:MM:SS[.frac]`
/// and a zone `+HHMM`/`+HH:MM`, after a tab or one or more spaces (the
/// formats git's `diff_timestamp_len` recognizes).
fn timestamp_len(line: &[u8]) -> usize {
    let digit = |i: usize| line.get(i).is_some_and(u8::is_ascii_digit);
    let mut end = line.len();
    if end == 0 || !digit(end - 1) {
        return 0;
    }
    // Zone: ` +0500` or ` +08:00`.
    let sane_tz = end >= 6
        && line[end - 6] == b' '
        && matches!(line[end - 5], b'+' | b'-')
        && (end - 4..end).all(digit);
    let colon_tz = end >= 7
        && line[end - 7] == b' '
        && matches!(line[end - 6], b'+' | b'-')
        && digit(end - 5)
        && digit(end - 4)
        && line[end - 3] == b':'
        && digit(end - 2)
        && digit(end - 1);
    if sane_tz {
        end -= 6;
    } else if colon_tz {
        end -= 7;
    }
    // Time: ` HH:MM:SS`, or ` HH:MM:SS.fraction`.
    let short_time = |end: usize| {
        end >= 9
            && line[end - 9] == b' '
            && digit(end - 8)
            && digit(end - 7)
            && line[end - 6] == b':'
            && digit(end - 5)
            && digit(end - 4)
            && line[end - 3] == b':'
            && digit(end - 2)
            && digit(end - 1)
    };
    if short_time(end) {
        end -= 9;
    } else if end > 0 && digit(end - 1) {
        let mut p = end - 1;
        while p > 0 && digit(p) {
            p -= 1;
        }
        if line[p] == b'.' && short_time(p) {
            end = p - 9;
        }
    }
    // Date: `YY-MM-DD`, with two more digits for a 4-digit year.
    let date = end >= 8
        && digit(end - 8)
        && digit(end - 7)
        && line[end - 6] == b'-'
        && digit(end - 5)
        && digit(end - 4)
        && line[end - 3] == b'-'
        && digit(end - 2)
        && digit(end - 1);
    if !date {
        return 0;
    }
    end -= 8;
    if end >= 2 && digit(end - 1) && digit(end - 2) {
        end -= 2;
    }
    match end.checked_sub(1).map(|i| line[i]) {
        Some(b'\t') => line.len() - (end - 1),
        Some(b' ') => {
            while end > 0 && line[end - 1] == b' ' {
                end -= 1;
            }
            line.len() - end
        }
        _ => 0,
    }
}

/// Whether a `---`/`+++` line (after the prefix) ends in GNU diff's epoch
/// timestamp, with which `diff -N` marks the side of a created or deleted
/// file: after the line's last tab, `1970-01-01 HH:MM:00[.000…] ±ZZZZ` (or
/// `1969-12-31 …` west of Greenwich) that is exactly midnight UTC of
/// 1970-01-01 in its zone, as git's `has_epoch_timestamp` decides.
pub(crate) fn has_epoch_timestamp(rest: &[u8]) -> bool {
    let Some(tab) = memchr::memrchr(b'\t', rest) else {
        return false;
    };
    let stamp = &rest[tab + 1..];
    let (epoch_minutes, t) = if let Some(t) = stamp.strip_prefix(b"1969-12-31 ") {
        (24 * 60, t)
    } else if let Some(t) = stamp.strip_prefix(b"1970-01-01 ") {
        (0, t)
    } else {
        return false;
    };
    // HH:MM:00(.0+)? ±HH[:]MM, and nothing after.
    let d = |i: usize| {
        t.get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| i32::from(b - b'0'))
    };
    let (Some(h1), Some(h2), Some(m1), Some(m2)) = (d(0), d(1), d(3), d(4)) else {
        return false;
    };
    if h1 > 2 || m1 > 5 || t.get(2) != Some(&b':') || t.get(5) != Some(&b':') {
        return false;
    }
    if t.get(6..8) != Some(b"00".as_slice()) {
        return false;
    }
    let mut i = 8;
    if t.get(i) == Some(&b'.') {
        let zeros = t[i + 1..].iter().take_while(|&&b| b == b'0').count();
        if zeros == 0 {
            return false;
        }
        i += 1 + zeros;
    }
    if t.get(i) != Some(&b' ') {
        return false;
    }
    let zone = &t[i + 1..];
    let sign = match zone.first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return false,
    };
    let z = |i: usize| {
        zone.get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| i32::from(b - b'0'))
    };
    let (zh, zm) = match (z(1), z(2), zone.get(3), zone.len()) {
        (Some(a), Some(b), Some(b':'), 6) => match (z(4), z(5)) {
            (Some(c), Some(e)) if a <= 2 && c <= 5 => (a * 10 + b, c * 10 + e),
            _ => return false,
        },
        (Some(a), Some(b), Some(_), 5) => match (z(3), z(4)) {
            (Some(c), Some(e)) if a <= 2 && c <= 5 => (a * 10 + b, c * 10 + e),
            _ => return false,
        },
        _ => return false,
    };
    let offset = sign * (zh * 60 + zm);
    (h1 * 10 + h2) * 60 + (m1 * 10 + m2) - offset == epoch_minutes
}

fn hunks<'a>(cur: &mut Cursor<'a>) -> Result<Vec<Hunk<'a>>, ParseError> {
    let mut out: Vec<Hunk<'a>> = Vec::new();
    while cur.peek().is_some_and(|l| l.starts_with(b"@@ ")) {
        if let Some(prev) = out.last() {
            if prev.spans.iter().any(|s| s.no_newline) {
                return Err(
                    cur.error("no further hunk after a line marked `\\ No newline at end of file`")
                );
            }
        }
        out.push(hunk(cur)?);
    }
    Ok(out)
}

fn hunk<'a>(cur: &mut Cursor<'a>) -> Result<Hunk<'a>, ParseError> {
    const HEADER: &str = "a hunk header `@@ -a[,b] +c[,d] @@`";
    let header = cur.peek().unwrap_or(b"");
    let header_line = cur.line;
    let (old_start, old_lines, new_start, new_lines, heading) =
        hunk_header(strip_nl(header)).ok_or_else(|| cur.error(HEADER))?;
    cur.take(HEADER)?;

    let body_start = cur.pos;
    let mut spans = Vec::with_capacity((old_lines.max(new_lines) as usize).min(1 << 16));
    let (mut old_due, mut new_due) = (old_lines, new_lines);
    let (mut old_closed, mut new_closed) = (false, false);
    // `parse` refuses inputs of 4 GiB and more, so offsets fit in u32.
    let offset = |pos: usize| (pos - body_start) as u32;
    loop {
        let Some(line) = cur.peek() else {
            if old_due == 0 && new_due == 0 {
                break;
            }
            return Err(cur.error(format!(
                "{old_due} more old and {new_due} more new hunk lines (the hunk is cut short)"
            )));
        };
        let first = line[0];
        // A `\ No newline` marker belongs to the line before it, even after
        // the counts are exhausted.
        if first == b'\\' {
            if !line.starts_with(b"\\ ") || line.len() < 12 {
                return Err(cur.error("`\\ No newline at end of file`"));
            }
            let Some(last) = spans.last_mut().filter(|s: &&mut LineSpan| !s.no_newline) else {
                return Err(cur.error("a hunk line before `\\ No newline at end of file`"));
            };
            let last: &mut LineSpan = last;
            last.no_newline = true;
            last.len -= 1; // the newline before the marker is not content
            match last.kind {
                LineKind::Context => {
                    old_closed = true;
                    new_closed = true;
                }
                LineKind::Delete => old_closed = true,
                LineKind::Insert => new_closed = true,
            }
            cur.take("`\\ No newline at end of file`")?;
            continue;
        }
        if old_due == 0 && new_due == 0 {
            break;
        }
        let (kind, uses_old, uses_new) = match first {
            b' ' | b'\n' => (LineKind::Context, true, true),
            b'-' => (LineKind::Delete, true, false),
            b'+' => (LineKind::Insert, false, true),
            _ => {
                return Err(cur.error(format!(
                    "a hunk line starting with ' ', '-', '+' or '\\' ({old_due} more old and {new_due} more new hunk lines)"
                )))
            }
        };
        if (uses_old && old_due == 0) || (uses_new && new_due == 0) {
            return Err(cur.error(format!(
                "{old_due} more old and {new_due} more new hunk lines (this line does not fit the counts in the hunk header)"
            )));
        }
        if (uses_old && old_closed) || (uses_new && new_closed) {
            return Err(
                cur.error("no further line on a side ended by `\\ No newline at end of file`")
            );
        }
        if line[line.len() - 1] != b'\n' {
            return Err(cur.error("a hunk line ending in a newline (is the patch truncated?)"));
        }
        let content_start = if first == b'\n' { cur.pos } else { cur.pos + 1 };
        spans.push(LineSpan {
            start: offset(content_start),
            len: (cur.end - content_start) as u32,
            kind,
            no_newline: false,
        });
        cur.advance();
        old_due -= u32::from(uses_old);
        new_due -= u32::from(uses_new);
    }
    // git refuses a hunk that changes nothing as corrupt (its counts are
    // then usually too small, the rest of the hunk left over as text).
    if spans.iter().all(|s| s.kind == LineKind::Context) {
        return Err(ParseError::new(
            header_line,
            "a hunk that adds or removes at least one line (are its counts too small?)",
            header,
        ));
    }
    Ok(Hunk {
        old_start,
        old_lines,
        new_start,
        new_lines,
        heading: Cow::Borrowed(heading),
        body: Cow::Borrowed(&cur.input[body_start..cur.pos]),
        spans,
    })
}

/// `@@ -a[,b] +c[,d] @@heading` → numbers and heading.
fn hunk_header(line: &[u8]) -> Option<(u32, u32, u32, u32, &[u8])> {
    let rest = line.strip_prefix(b"@@ -")?;
    let (old_start, old_lines, rest) = range(rest)?;
    let rest = rest.strip_prefix(b" +")?;
    let (new_start, new_lines, rest) = range(rest)?;
    let heading = rest.strip_prefix(b" @@")?;
    Some((old_start, old_lines, new_start, new_lines, heading))
}

fn range(s: &[u8]) -> Option<(u32, u32, &[u8])> {
    let (start, rest) = number(s)?;
    match rest.strip_prefix(b",") {
        Some(rest) => {
            let (count, rest) = number(rest)?;
            Some((start, count, rest))
        }
        None => Some((start, 1, rest)),
    }
}

fn number(s: &[u8]) -> Option<(u32, &[u8])> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 10 {
        return None;
    }
    let mut n: u32 = 0;
    for &d in &s[..digits] {
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
    }
    Some((n, &s[digits..]))
}

fn mode(s: &[u8]) -> Option<Mode> {
    if s.is_empty() || s.len() > 7 || !s.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    Some(Mode(
        s.iter().fold(0u32, |m, d| m * 8 + u32::from(d - b'0')),
    ))
}

fn percent(s: &[u8]) -> Option<u32> {
    let (n, rest) = number(s)?;
    (rest == b"%" && n <= 100).then_some(n)
}

fn is_hex_id(s: &[u8]) -> bool {
    (1..=64).contains(&s.len())
        && s.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

fn index(s: &[u8]) -> Option<ExtendedHeader<'_>> {
    let dots = s.windows(2).position(|w| w == b"..")?;
    let old = &s[..dots];
    let rest = &s[dots + 2..];
    let (new, mode_part) = match memchr::memchr(b' ', rest) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if !is_hex_id(old) || !is_hex_id(new) {
        return None;
    }
    let mode = match mode_part {
        Some(m) => Some(mode(m)?),
        None => None,
    };
    Some(ExtendedHeader::Index {
        old: Cow::Borrowed(std::str::from_utf8(old).ok()?),
        new: Cow::Borrowed(std::str::from_utf8(new).ok()?),
        mode,
    })
}

/// A name in a `rename`/`copy` header: the whole rest of the line,
/// C-quoted or bare.
fn header_name(v: &[u8]) -> Result<Cow<'_, [u8]>, &'static str> {
    if v.first() == Some(&b'"') {
        let (name, used) = quote::unquote(v)?;
        if used != v.len() {
            return Err("nothing after a quoted name");
        }
        Ok(Cow::Owned(name))
    } else if v.is_empty() {
        Err("a file name")
    } else {
        Ok(Cow::Borrowed(v))
    }
}

/// Split the names of a `diff --git` line (prefixes kept, unquoted).
///
/// Quoted names are unambiguous. Two bare names are split, as git does,
/// where the two halves name the same path once `strip` leading components
/// (`a/`, `b/`) are removed from each; a rename between bare names with
/// spaces cannot be split and yields `None` (its names come from the rename
/// headers).
pub(crate) fn split_git_names(line: &[u8], strip: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    if line.first() == Some(&b'"') {
        let (a, used) = quote::unquote(line).ok()?;
        let rest = line[used..].strip_prefix(b" ")?;
        let b = if rest.first() == Some(&b'"') {
            let (b, used) = quote::unquote(rest).ok()?;
            (used == rest.len()).then_some(b)?
        } else {
            rest.to_vec()
        };
        return Some((a, b));
    }
    if line.last() == Some(&b'"') {
        let split = line.windows(2).rposition(|w| w == b" \"")?;
        let (b, used) = quote::unquote(&line[split + 1..]).ok()?;
        return (split + 1 + used == line.len()).then(|| (line[..split].to_vec(), b));
    }
    // The common case first: equal halves around the middle space.
    let mid = line.len() / 2;
    let candidates = std::iter::once(mid).chain(memchr::memchr_iter(b' ', line));
    for i in candidates {
        if line.get(i) != Some(&b' ') {
            continue;
        }
        let (a, b) = (&line[..i], &line[i + 1..]);
        match (strip_components(a, strip), strip_components(b, strip)) {
            (Some(x), Some(y)) if x == y => return Some((a.to_vec(), b.to_vec())),
            _ => {}
        }
    }
    None
}

/// The first `n` components of `name` with the slash after each (what
/// [`strip_components`] removes); `None` when it has fewer than `n`
/// slashes.
pub(crate) fn leading_components(name: &[u8], n: usize) -> Option<&[u8]> {
    let mut end = 0;
    for _ in 0..n {
        end += memchr::memchr(b'/', &name[end..])? + 1;
    }
    Some(&name[..end])
}

/// Remove `n` leading components as git does (`find_name_common`): the
/// name starts after its `n`th slash, every slash counting, so `a//etc/x`
/// stripped once is `/etc/x` (an absolute path, which the caller refuses as
/// an escape) rather than `etc/x`; repeated slashes in what remains are
/// then squashed. `None` when the name has fewer than `n` slashes or
/// nothing after them.
fn strip_components(name: &[u8], n: usize) -> Option<Cow<'_, [u8]>> {
    let mut rest = name;
    for _ in 0..n {
        let i = memchr::memchr(b'/', rest)?;
        rest = &rest[i + 1..];
    }
    if rest.is_empty() {
        return None;
    }
    Some(if memchr::memmem::find(rest, b"//").is_some() {
        let mut out = Vec::with_capacity(rest.len());
        for &b in rest {
            if !(b == b'/' && out.last() == Some(&b'/')) {
                out.push(b);
            }
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(rest)
    })
}

fn binary_hunk(cur: &mut Cursor<'_>, budget: &mut Budget) -> Result<BinaryHunk, ParseError> {
    const WHAT: &str = "`literal <size>` or `delta <size>`";
    let line = cur.peek().unwrap_or(b"");
    let body = strip_nl(line);
    let (method, size) = if let Some(n) = body.strip_prefix(b"literal ") {
        (BinaryMethod::Literal, n)
    } else if let Some(n) = body.strip_prefix(b"delta ") {
        (BinaryMethod::Delta, n)
    } else {
        return Err(cur.error(WHAT));
    };
    let size = std::str::from_utf8(size)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| cur.error(WHAT))?;
    let hunk_line = cur.line;
    cur.take(WHAT)?;
    let mut deflated = Vec::new();
    loop {
        let line = cur.peek().unwrap_or(b"");
        if line == b"\n" {
            cur.take("an empty line ending the binary hunk")?;
            break;
        }
        if line.is_empty() {
            return Err(cur.error("base85 data or an empty line ending the binary hunk"));
        }
        binary::decode_line(strip_nl(line), &mut deflated).map_err(|e| cur.error(e))?;
        cur.take("a base85 data line")?;
    }
    // Bound what the hunk inflates to before inflating any of it: the
    // declared size, and for a delta the size of the content it builds
    // (read from the delta's first bytes), which its instructions can
    // make far larger than themselves.
    let mut stream = budget
        .inflater
        .get_or_insert_with(binary::Inflater::new)
        .start(&deflated);
    let mut cost = size;
    if method == BinaryMethod::Delta {
        let built = stream
            .delta_result_size()
            .map_err(|e| ParseError::new(hunk_line, e, line))?;
        cost = cost.saturating_add(built);
    }
    budget.used = budget.used.saturating_add(cost);
    if budget.used > budget.limit {
        return Err(ParseError::over_limit(
            hunk_line,
            format!(
                "binary hunks that inflate to at most {} bytes in all (the max_inflated_bytes limit); this patch's inflate to at least {}",
                budget.limit, budget.used
            ),
            line,
        ));
    }
    // Verify the payload now, so a corrupt binary hunk is refused at parse
    // time with its line number, not half-way through an apply.
    stream
        .check_size(size)
        .map_err(|e| ParseError::new(hunk_line, e, line))?;
    Ok(BinaryHunk {
        method,
        size,
        deflated,
    })
}

/// Derive status, paths and modes from a section's syntax, checking that
/// its parts agree. Shared by the parser and by [`FilePatch::git`].
pub(crate) fn resolve<'a>(
    git_line: Option<Cow<'a, [u8]>>,
    headers: Vec<ExtendedHeader<'a>>,
    names: Option<[FileName<'a>; 2]>,
    body: Body<'a>,
    strip: usize,
) -> Result<FilePatch<'a>, String> {
    let facts = HeaderFacts::read(&headers)?;
    let sides = Sides {
        names: &names,
        strip,
    };
    let (dev_null_old, dev_null_new) = match &names {
        Some([a, b]) => (a.is_dev_null(), b.is_dev_null()),
        None => (false, false),
    };
    if dev_null_old && dev_null_new {
        return Err("at most one of `---` and `+++` to be /dev/null".into());
    }
    if let Body::Text(h) = &body {
        if names.is_some() && h.is_empty() {
            return Err("a hunk after the `---`/`+++` lines".into());
        }
    }
    let (status, old_path, new_path) = match git_line.as_deref() {
        None => sides.traditional_paths(dev_null_old, dev_null_new)?,
        Some(line) => sides.git_paths(line, &facts, dev_null_old, dev_null_new)?,
    };
    let (old_mode, new_mode) = facts.modes(status)?;
    check_hunks(status, &body, old_mode, new_mode)?;
    Ok(FilePatch {
        git_line,
        headers,
        names,
        body,
        status,
        old_path,
        new_path,
        old_mode,
        new_mode,
        strip,
        crlf: false,
    })
}

/// A section's status, then its old and new paths (stripped).
type Paths<'a> = (FileStatus, Option<Cow<'a, [u8]>>, Option<Cow<'a, [u8]>>);

/// What a section's extended headers say (each header at most once).
#[derive(Default)]
struct HeaderFacts<'h, 'a> {
    new_file: Option<Mode>,
    deleted_file: Option<Mode>,
    old_mode: Option<Mode>,
    new_mode: Option<Mode>,
    /// The mode an `index` line gives (when the mode did not change).
    index_mode: Option<Mode>,
    rename_from: Option<&'h Cow<'a, [u8]>>,
    rename_to: Option<&'h Cow<'a, [u8]>>,
    copy_from: Option<&'h Cow<'a, [u8]>>,
    copy_to: Option<&'h Cow<'a, [u8]>>,
}

impl<'h, 'a> HeaderFacts<'h, 'a> {
    /// Read `headers`, refusing one that appears twice.
    fn read(headers: &'h [ExtendedHeader<'a>]) -> Result<Self, String> {
        let mut facts = HeaderFacts::default();
        let mut seen = std::collections::HashSet::new();
        for h in headers {
            if !seen.insert(std::mem::discriminant(h)) {
                return Err("each extended header at most once in a section".into());
            }
            match h {
                ExtendedHeader::OldMode(m) => facts.old_mode = Some(*m),
                ExtendedHeader::NewMode(m) => facts.new_mode = Some(*m),
                ExtendedHeader::NewFileMode(m) => facts.new_file = Some(*m),
                ExtendedHeader::DeletedFileMode(m) => facts.deleted_file = Some(*m),
                ExtendedHeader::RenameFrom(p) => facts.rename_from = Some(p),
                ExtendedHeader::RenameTo(p) => facts.rename_to = Some(p),
                ExtendedHeader::CopyFrom(p) => facts.copy_from = Some(p),
                ExtendedHeader::CopyTo(p) => facts.copy_to = Some(p),
                ExtendedHeader::Index { mode, .. } => facts.index_mode = *mode,
                ExtendedHeader::Similarity(_) | ExtendedHeader::Dissimilarity(_) => {}
            }
        }
        Ok(facts)
    }

    /// The old and new modes of a section of `status`, checking that its
    /// mode headers fit it.
    fn modes(&self, status: FileStatus) -> Result<(Option<Mode>, Option<Mode>), String> {
        match status {
            FileStatus::Added => {
                if self.old_mode.is_some() || self.new_mode.is_some() {
                    return Err("no `old mode`/`new mode` on a new file".into());
                }
                Ok((None, self.new_file.or(self.index_mode)))
            }
            FileStatus::Deleted => {
                if self.old_mode.is_some() || self.new_mode.is_some() {
                    return Err("no `old mode`/`new mode` on a deleted file".into());
                }
                Ok((self.deleted_file.or(self.index_mode), None))
            }
            _ => {
                if self.old_mode.is_some() != self.new_mode.is_some() {
                    return Err("`old mode` and `new mode` together".into());
                }
                Ok((
                    self.old_mode.or(self.index_mode),
                    self.new_mode.or(self.index_mode),
                ))
            }
        }
    }
}

/// A section's `---`/`+++` names and the strip level they are read at.
struct Sides<'n, 'a> {
    names: &'n Option<[FileName<'a>; 2]>,
    strip: usize,
}

impl<'a> Sides<'_, 'a> {
    /// What a name too short to strip is refused with.
    fn lacks(&self) -> String {
        let strip = self.strip;
        format!(
            "file names that survive removing {strip} leading pathname component{}",
            if strip == 1 { "" } else { "s" }
        )
    }

    /// `n` without its first `k` components.
    fn stripped(&self, n: &Cow<'a, [u8]>, k: usize) -> Result<Cow<'a, [u8]>, String> {
        match n {
            Cow::Borrowed(b) => strip_components(b, k),
            Cow::Owned(o) => strip_components(o, k).map(|s| Cow::Owned(s.into_owned())),
        }
        .ok_or_else(|| self.lacks())
    }

    /// Side `i`'s name (0: `---`, 1: `+++`), stripped; none for
    /// `/dev/null` or without the lines.
    fn file_side(&self, i: usize) -> Result<Option<Cow<'a, [u8]>>, String> {
        match self.names {
            Some(n) if n[i].is_dev_null() => Ok(None),
            Some(n) => self.stripped(&n[i].name, self.strip).map(Some),
            None => Ok(None),
        }
    }

    /// A plain unified diff's paths: names come from `---`/`+++` only,
    /// read as git's `parse_traditional_patch` reads them.
    fn traditional_paths(
        &self,
        dev_null_old: bool,
        dev_null_new: bool,
    ) -> Result<Paths<'a>, String> {
        let names = self.names;
        let side = |i: usize| -> Option<Cow<'a, [u8]>> {
            names
                .as_ref()
                .and_then(|n| self.stripped(&n[i].name, self.strip).ok())
        };
        let epoch = |i: usize| {
            names.as_ref().is_some_and(|n| {
                let written = if memchr::memchr(b'\t', &n[i].suffix).is_some() {
                    n[i].suffix.to_vec()
                } else {
                    [&*n[i].name, &*n[i].suffix].concat()
                };
                has_epoch_timestamp(&written)
            })
        };
        if dev_null_old {
            return Ok((
                FileStatus::Added,
                None,
                Some(side(1).ok_or_else(|| self.lacks())?),
            ));
        }
        if dev_null_new {
            return Ok((
                FileStatus::Deleted,
                Some(side(0).ok_or_else(|| self.lacks())?),
                None,
            ));
        }
        // git prefers the old name when the new one merely extends it
        // (`file` vs `file.orig`), otherwise the new name, and falls
        // back on the old one when the new one is too short to strip.
        let name = match (side(0), side(1)) {
            (Some(o), Some(n)) if o.len() < n.len() && n.starts_with(&o) => o,
            (_, Some(n)) => n,
            (Some(o), None) => o,
            (None, None) => return Err(self.lacks()),
        };
        // GNU diff -N dates the absent side at the epoch.
        Ok(if epoch(0) {
            (FileStatus::Added, None, Some(name))
        } else if epoch(1) {
            (FileStatus::Deleted, Some(name), None)
        } else {
            (FileStatus::Modified, Some(name.clone()), Some(name))
        })
    }

    /// A git diff's paths, from its extended headers, its `---`/`+++`
    /// names and its `diff --git` line (`git_line`), checking that they
    /// agree.
    fn git_paths(
        &self,
        git_line: &[u8],
        facts: &HeaderFacts<'_, 'a>,
        dev_null_old: bool,
        dev_null_new: bool,
    ) -> Result<Paths<'a>, String> {
        let strip = self.strip;
        let (new_file, deleted_file) = (facts.new_file, facts.deleted_file);
        if new_file.is_some() && deleted_file.is_some() {
            return Err("a section to be either a new file or a deleted file, not both".into());
        }
        let renames = facts.rename_from.is_some() || facts.rename_to.is_some();
        let copies = facts.copy_from.is_some() || facts.copy_to.is_some();
        if renames && copies {
            return Err("a section to be either a rename or a copy, not both".into());
        }
        if (renames || copies) && (new_file.is_some() || deleted_file.is_some()) {
            return Err("a rename or copy not to be a new or deleted file".into());
        }
        let header_names = split_git_names(git_line, strip);
        let header_side = |i: usize| -> Result<Option<Cow<'a, [u8]>>, String> {
            match &header_names {
                Some((a, b)) => {
                    let n = if i == 0 { a } else { b };
                    Ok(Some(Cow::Owned(
                        strip_components(n, strip)
                            .ok_or_else(|| self.lacks())?
                            .to_vec(),
                    )))
                }
                None => Ok(None),
            }
        };
        let either = |i: usize| -> Result<Cow<'a, [u8]>, String> {
            self.file_side(i)?
                .or(header_side(i)?)
                .ok_or_else(|| self.lacks())
        };
        let (status, old_path, new_path) = if renames || copies {
            let (from, to) = if renames {
                (facts.rename_from, facts.rename_to)
            } else {
                (facts.copy_from, facts.copy_to)
            };
            let (Some(from), Some(to)) = (from, to) else {
                return Err(format!(
                    "both `{0} from` and `{0} to` headers",
                    if renames { "rename" } else { "copy" }
                ));
            };
            let k = strip.saturating_sub(1);
            let old = self.stripped(from, k)?;
            let new = self.stripped(to, k)?;
            let status = if renames {
                FileStatus::Renamed
            } else {
                FileStatus::Copied
            };
            (status, Some(old), Some(new))
        } else if new_file.is_some() || dev_null_old {
            (FileStatus::Added, None, Some(either(1)?))
        } else if deleted_file.is_some() || dev_null_new {
            (FileStatus::Deleted, Some(either(0)?), None)
        } else {
            let o = either(0)?;
            let n = either(1)?;
            if o != n {
                return Err(
                    "the same old and new name (a name change needs `rename from`/`rename to`)"
                        .into(),
                );
            }
            (FileStatus::Modified, Some(o), Some(n))
        };
        // The `---`/`+++` names must agree with the header's.
        if self.names.is_some() {
            if new_file.is_some() && !dev_null_old {
                return Err("`--- /dev/null` for a new file".into());
            }
            if deleted_file.is_some() && !dev_null_new {
                return Err("`+++ /dev/null` for a deleted file".into());
            }
        }
        for (side, path) in [(0, &old_path), (1, &new_path)] {
            let header = if renames || copies {
                None
            } else {
                header_side(side)?
            };
            for named in [self.file_side(side)?, header].into_iter().flatten() {
                if let Some(path) = path {
                    if named != *path {
                        return Err(format!(
                            "the `{}` name to match the `diff --git` header",
                            if side == 0 { "---" } else { "+++" }
                        ));
                    }
                }
            }
        }
        Ok((status, old_path, new_path))
    }
}

/// A section's hunks fit its status: a new file's remove nothing, a
/// deleted file's add nothing, and a modification changes something.
fn check_hunks(
    status: FileStatus,
    body: &Body<'_>,
    old_mode: Option<Mode>,
    new_mode: Option<Mode>,
) -> Result<(), String> {
    let hunks: &[Hunk<'_>] = match body {
        Body::Text(h) => h,
        _ => &[],
    };
    match status {
        FileStatus::Added if hunks.iter().any(|h| h.old_lines != 0) => {
            Err("a new file's hunks to have no old lines".into())
        }
        FileStatus::Deleted if hunks.iter().any(|h| h.new_lines != 0) => {
            Err("a deleted file's hunks to have no new lines".into())
        }
        FileStatus::Modified
            if hunks.is_empty() && matches!(body, Body::Text(_)) && old_mode == new_mode =>
        {
            Err("a change: mode lines, rename or copy headers, hunks or binary data".into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
