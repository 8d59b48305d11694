//! Landing a changeset as a git commit (issue 18, the object half): the
//! commit is built from objects — the base commit's tree plus the
//! changeset, blob by blob, never a checkout — and a branch moves to it by
//! compare-and-swap, from the id the caller validated against to the new
//! one, so a branch that moved meanwhile is refused and nothing else
//! changes.
//!
//! The pure half is [`message`]: the commit message with the trailers that
//! name what governed the change (`Roundtable-Proposal`, `Approved-by`, …),
//! in the form `git interpret-trailers` parses.
//!
//! The shell half (the `git` feature; module `git`, its items named here)
//! works on a `git2::Repository` (libgit2, in process: no `git` binary on
//! the landing path). `build_commit` writes the blobs,
//! the trees that change (`git_tree_create_updated`: the work is the
//! change's paths times their depth, not the repository's size) and the
//! commit object, and moves no ref: an object nothing references is inert
//! (`git gc` prunes it). `move_branch` is the commit point.
//!
//! A build without the `git` feature keeps the pure half; of the shell
//! half only [`landed_commits`] is named, and it refuses
//! ([`LandingError::NoGit`]).

use crate::ErrorCode;

pub mod blame;
#[cfg(feature = "git")]
mod git;
#[cfg(feature = "git")]
pub use git::*;
#[cfg(not(feature = "git"))]
mod no_git;
#[cfg(not(feature = "git"))]
pub use no_git::*;

/// What a build without the `git` feature says when git landing would be
/// used (the same words wherever it is refused).
pub const NO_GIT: &str = "this build of roundtable has no git support (the `git` feature)";

/// Why a landing step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LandingError {
    /// The branch (here, or on the remote) is not at the commit the change
    /// was validated against.
    #[error("{}{branch} moved: expected {expected}, found {}", remote.as_deref().map(|r| format!("{r}: ")).unwrap_or_default(), actual.as_deref().unwrap_or("no branch"))]
    BranchMoved {
        /// The remote whose branch it is (`None`: this repository's).
        remote: Option<String>,
        /// The full ref name.
        branch: String,
        /// The id the caller expected.
        expected: String,
        /// The id it holds now (`None`: the ref does not exist).
        actual: Option<String>,
    },
    /// The remote's receive path refused the push (its `pre-receive` or
    /// `update` hook declined, its `receive.fsckObjects` found a bad
    /// object, `receive.denyNonFastForwards`, …) while its branch was
    /// still where the landing expected it: nothing landed.
    #[error("{} refused the push to {}: {}", .0.remote, .0.branch, .0.status)]
    RemoteRejected(Box<RemoteRefusal>),
    /// The notes ref ([`crate::model::trace::NOTES_REF`]) is not at the
    /// commit the landing's notes were built on (another writer added
    /// notes meanwhile): the notes are built again on it.
    #[error("{}{} moved: expected {}, found {}", if remote.is_empty() { String::new() } else { format!("{remote}: ") }, crate::model::trace::NOTES_REF, expected.as_deref().unwrap_or("no notes"), actual.as_deref().unwrap_or("no notes"))]
    NotesMoved {
        /// The remote whose notes they are (empty: this repository's).
        remote: String,
        /// The id the landing expected (`None`: no notes).
        expected: Option<String>,
        /// The id it holds now.
        actual: Option<String>,
    },
    /// A trailer or identity the caller gave cannot be written as given.
    #[error("{field}: {reason}")]
    InvalidInput {
        /// Which value.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// libgit2 refused or failed.
    #[cfg(feature = "git")]
    #[error("git: {what}: {source}")]
    Git {
        /// What was being done.
        what: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// A build without the `git` feature was asked to land in git mode, or
    /// to read or check a git landing (`invalid_argument`).
    #[error("{NO_GIT}: {what}")]
    NoGit {
        /// What could not be done.
        what: &'static str,
    },
}

/// What a remote said when its receive path refused a push
/// ([`LandingError::RemoteRejected`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRefusal {
    /// The remote.
    pub remote: String,
    /// The full ref name.
    pub branch: String,
    /// The remote's reason, as git reports it (`pre-receive hook
    /// declined`, `hook declined`, `unpacker error`, …).
    pub status: String,
    /// What the remote said while refusing (its hooks' output), at most
    /// 20 lines.
    pub messages: Vec<String>,
}

impl LandingError {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            LandingError::BranchMoved { .. }
            | LandingError::NotesMoved { .. }
            | LandingError::RemoteRejected(_) => ErrorCode::PreconditionFailed,
            LandingError::InvalidInput { .. } | LandingError::NoGit { .. } => {
                ErrorCode::InvalidArgument
            }
            #[cfg(feature = "git")]
            LandingError::Git { .. } => ErrorCode::Io,
        }
    }
}

impl LandingError {
    /// Structured details for programs: for a moved branch, the ref, the
    /// id expected and the id found.
    pub fn details(&self) -> serde_json::Value {
        match self {
            LandingError::BranchMoved {
                remote,
                branch,
                expected,
                actual,
            } => {
                serde_json::json!({"remote": remote, "ref": branch, "expected": expected, "actual": actual})
            }
            LandingError::RemoteRejected(r) => serde_json::json!({
                "remote": r.remote, "ref": r.branch, "reason": "remote_rejected",
                "remote_status": r.status, "remote_messages": r.messages,
            }),
            _ => serde_json::json!({}),
        }
    }
}

/// One `Key: value` line of a commit message's trailer block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// The key (`Roundtable-Proposal`, `Approved-by`, …): letters, digits
    /// and `-`.
    pub key: String,
    /// The value: one line.
    pub value: String,
}

impl Trailer {
    /// A trailer `key: value`.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Trailer {
        Trailer {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// The commit message: `title`, a blank line and `summary` (when not
/// blank), a blank line and one line per trailer. Refused when the title is
/// blank or spans lines, a key is not a trailer key, or a value spans lines
/// (each would make `git interpret-trailers` read something else).
///
/// The title and the summary are free text, never trusted: git's trailer
/// parser (`git interpret-trailers --parse`, `%(trailers)`, [`trailers`])
/// sees exactly `trailers` whatever they hold. Their lines that git would
/// read as something else are escaped ([`escape_line`]): a line starting
/// with `---` and a space (the patch divider, where git stops reading the
/// message) gets one leading space; a line ending with git's scissors
/// (`# ------------------------ >8 ------------------------`, where git cuts
/// the message) gets one trailing space; a NUL (where git's C strings end)
/// becomes U+FFFD. Trailer-like lines in the summary need nothing: git reads
/// only the last paragraph, and that is always roundtable's block.
pub fn message(title: &str, summary: &str, trailers: &[Trailer]) -> Result<String, LandingError> {
    let title = title.trim();
    if title.is_empty() || title.contains(['\n', '\r']) {
        return Err(LandingError::InvalidInput {
            field: "title",
            reason: "must be one non-blank line".into(),
        });
    }
    let mut out = escape_line(title);
    out.push('\n');
    let summary = summary.trim();
    if !summary.is_empty() {
        out.push('\n');
        for line in summary.split('\n') {
            out.push_str(&escape_line(line));
            out.push('\n');
        }
    }
    if !trailers.is_empty() {
        out.push('\n');
    }
    for t in trailers {
        let key_ok = !t.key.is_empty()
            && t.key.starts_with(|c: char| c.is_ascii_alphanumeric())
            && t.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !key_ok {
            return Err(LandingError::InvalidInput {
                field: "trailer key",
                reason: format!("{:?} is not a trailer key (letters, digits, '-')", t.key),
            });
        }
        let value = t.value.trim();
        if value.is_empty() || value.contains(['\n', '\r', '\0']) {
            return Err(LandingError::InvalidInput {
                field: "trailer value",
                reason: format!("the value of {} must be one non-blank line", t.key),
            });
        }
        out.push_str(&t.key);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    }
    Ok(out)
}

/// git's scissors line without its comment character: where `git commit`
/// and git's trailer parser cut a message (`wt_status_locate_end`).
const CUT_LINE: &str = "------------------------ >8 ------------------------";

/// One line of free text (no line feed) as a commit message carries it so
/// that git reads it as a line of prose: a line git would take for the
/// patch divider (`---` then whitespace) gets a leading space, one it would
/// take for the scissors line under any comment character (it ends with
/// the scissors) a trailing space, and a NUL becomes U+FFFD. Any other line
/// is unchanged.
pub fn escape_line(line: &str) -> String {
    let mut out = line.replace('\0', "\u{fffd}");
    if is_divider(out.as_bytes()) {
        out.insert(0, ' ');
    }
    if out.ends_with(CUT_LINE) {
        out.push(' ');
    }
    out
}

/// git's `isspace` (`sane_ctype`): space, tab, line feed, carriage return.
fn git_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether the line at the start of `s` is git's patch divider: `---`
/// followed by whitespace (the line's end counts).
fn is_divider(s: &[u8]) -> bool {
    s.starts_with(b"---") && s.get(3).is_none_or(|&b| git_space(b))
}

/// The start of the line after the one at `at` (`buf.len()` at the end).
fn next_line(buf: &[u8], at: usize) -> usize {
    buf[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(buf.len(), |i| at + i + 1)
}

/// Whether the line at `at` holds only whitespace.
fn is_blank_line(buf: &[u8], at: usize) -> bool {
    buf[at..]
        .iter()
        .take_while(|&&b| b != b'\n')
        .all(|&b| git_space(b))
}

/// The start of the last line of `buf[..len]` (a final line feed belongs
/// to it); `None` when `len` is 0.
fn last_line(buf: &[u8], len: usize) -> Option<usize> {
    match len {
        0 => None,
        1 => Some(0),
        _ => Some(
            buf[..len - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1),
        ),
    }
}

/// Where the `:` of a trailer line at `at` is: after a token of letters,
/// digits and `-`, optionally followed by blanks (git's `find_separator`).
fn find_separator(buf: &[u8], at: usize) -> Option<usize> {
    let mut blank = false;
    for (i, &c) in buf[at..].iter().enumerate() {
        if c == b':' {
            return Some(i);
        }
        if !blank && (c.is_ascii_alphanumeric() || c == b'-') {
            continue;
        }
        if i != 0 && (c == b' ' || c == b'\t') {
            blank = true;
            continue;
        }
        break;
    }
    None
}

/// How much of `buf[..len]` git ignores at its end: from the scissors
/// line on, and a trailing run of comment lines, empty lines and an old
/// `Conflicts:` block (git's `ignored_log_message_bytes`).
fn ignored_bytes(buf: &[u8], len: usize) -> usize {
    let pattern = format!("\n# {CUT_LINE}\n");
    let pattern = pattern.as_bytes();
    let cutoff = if buf.starts_with(&pattern[1..]) {
        0
    } else {
        buf.windows(pattern.len())
            .position(|w| w == pattern)
            .map_or(len, |p| (p + 1).min(len))
    };
    let (mut boc, mut bol, mut conflicts) = (0, 0, false);
    while bol < cutoff {
        let next = buf[bol..cutoff]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(cutoff, |i| bol + i + 1);
        if buf[bol] == b'#' || buf[bol] == b'\n' {
            if boc == 0 {
                boc = bol;
            }
        } else if buf[bol..].starts_with(b"Conflicts:\n") {
            conflicts = true;
            if boc == 0 {
                boc = bol;
            }
        } else if conflicts && buf[bol] == b'\t' {
        } else if boc != 0 {
            boc = 0;
            conflicts = false;
        }
        bol = next;
    }
    if boc != 0 {
        len - boc
    } else {
        len - cutoff
    }
}

/// Where the trailer block of `buf[..len]` starts (`len`: there is none):
/// the last paragraph, not the title, whose lines are all trailers (or
/// continuations), or at least a quarter of them trailers with one that
/// git itself writes (git's `find_trailer_block_start`, with no trailer
/// configured).
fn trailer_block_start(buf: &[u8], len: usize) -> usize {
    let mut s = 0;
    while s < len {
        if buf[s] == b'#' {
            s = next_line(buf, s);
            continue;
        }
        if is_blank_line(buf, s) {
            break;
        }
        s = next_line(buf, s);
    }
    let end_of_title = s;
    let (mut only_spaces, mut recognized) = (true, false);
    let (mut trailers, mut others, mut possible) = (0usize, 0usize, 0usize);
    let mut line = last_line(buf, len);
    while let Some(bol) = line.filter(|&l| l >= end_of_title) {
        line = last_line(buf, bol);
        if buf[bol] == b'#' {
            others += possible;
            possible = 0;
            continue;
        }
        if is_blank_line(buf, bol) {
            if only_spaces {
                continue;
            }
            others += possible;
            if (recognized && trailers * 3 >= others) || (trailers > 0 && others == 0) {
                return next_line(buf, bol);
            }
            return len;
        }
        only_spaces = false;
        let rest = &buf[bol..];
        if rest.starts_with(b"Signed-off-by: ") || rest.starts_with(b"(cherry picked from commit ")
        {
            trailers += 1;
            possible = 0;
            recognized = true;
        } else if find_separator(buf, bol).is_some_and(|p| p >= 1) && !git_space(buf[bol]) {
            trailers += 1;
            possible = 0;
        } else if git_space(buf[bol]) {
            possible += 1;
        } else {
            others += 1 + possible;
            possible = 0;
        }
    }
    len
}

/// Trim git's whitespace from both ends.
fn git_trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !git_space(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !git_space(b))
        .map_or(start, |i| i + 1);
    &s[start..end]
}

/// The trailers of a commit message exactly as git's own parser reads
/// them (`git interpret-trailers --parse`, and `git log`'s
/// `%(trailers:only,unfold)` but for the patch divider, which `git log`
/// does not look for), with git's default configuration: the message ends
/// at a NUL, at a `---` divider line, at the scissors line, before a
/// trailing run of comment and empty lines; the trailers are the last
/// paragraph (never the title) when git takes it for a trailer block;
/// continuation lines are unfolded. Each is `(key, value)`, in order.
pub fn trailers(message: &[u8]) -> Vec<(String, String)> {
    let buf = message
        .iter()
        .position(|&b| b == 0)
        .map_or(message, |n| &message[..n]);
    let mut end = buf.len();
    let mut s = 0;
    while s < buf.len() {
        if is_divider(&buf[s..]) && s + 3 < buf.len() {
            end = s;
            break;
        }
        s = next_line(buf, s);
    }
    let end = end - ignored_bytes(buf, end);
    let start = trailer_block_start(buf, end);
    // The block's lines, continuation lines joined to the trailer before.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut last_is_trailer = false;
    let mut at = start;
    while at < end {
        let next = buf[at..end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(end, |i| at + i + 1);
        let line = &buf[at..next];
        match lines.last_mut() {
            Some(last) if last_is_trailer && git_space(line[0]) => last.extend_from_slice(line),
            _ => {
                last_is_trailer = find_separator(line, 0).is_some_and(|p| p >= 1);
                lines.push(line.to_vec());
            }
        }
        at = next;
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    lines
        .iter()
        .filter(|l| l[0] != b'#')
        .filter_map(|l| {
            let sep = find_separator(l, 0).filter(|&p| p >= 1)?;
            let key = git_trim(&l[..sep]);
            let value = git_trim(&l[sep + 1..]);
            // Unfold: each line feed and the whitespace after it, one space.
            let mut unfolded = Vec::with_capacity(value.len());
            let mut i = 0;
            while i < value.len() {
                let c = value[i];
                i += 1;
                if c == b'\n' {
                    while i < value.len() && git_space(value[i]) {
                        i += 1;
                    }
                    unfolded.push(b' ');
                } else {
                    unfolded.push(c);
                }
            }
            Some((text(key), text(git_trim(&unfolded))))
        })
        .collect()
}

/// Who a commit names: a name, an email and a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The name.
    pub name: String,
    /// The email address.
    pub email: String,
    /// Seconds since the epoch.
    pub seconds: i64,
    /// Offset from UTC in minutes.
    pub offset_minutes: i32,
}

/// A commit roundtable landed, as `landing.log` (and `roundtable log`)
/// shows it.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct LandedCommit {
    /// The commit id.
    pub id: String,
    /// Its first line.
    pub summary: String,
    /// Its author, `name <email>`.
    pub author: String,
    /// Its trailers, in order, each a `[key, value]` pair
    /// (`["Roundtable-Proposal", "prop-…"]`).
    #[schemars(with = "Vec<Vec<String>>")]
    pub trailers: Vec<(String, String)>,
}

/// A commit of a branch's history as `provenance.verify` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchCommit {
    /// The commit id.
    pub id: String,
    /// Its first line.
    pub summary: String,
    /// Its trailers, as git reads them ([`trailers`]).
    pub trailers: Vec<(String, String)>,
    /// Its note under `refs/notes/agent-trace`, if any.
    pub note: Option<Vec<u8>>,
    /// Whether it is signed by a key the repository's
    /// `gpg.ssh.allowedSignersFile` allows (`None`: no such file is
    /// configured, nothing was checked).
    pub signed: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_title_summary_and_one_line_per_trailer() {
        let m = message(
            "Say hello",
            "Greets the world.\n",
            &[
                Trailer::new("Roundtable-Proposal", "p1"),
                Trailer::new("Approved-by", "agent:bob"),
            ],
        )
        .expect("message");
        assert_eq!(
            m,
            "Say hello\n\nGreets the world.\n\nRoundtable-Proposal: p1\nApproved-by: agent:bob\n"
        );
        assert_eq!(message(" T ", "  ", &[]).expect("bare"), "T\n");
    }

    #[test]
    fn a_message_refuses_what_would_read_as_something_else() {
        for (title, trailers) in [
            ("", vec![]),
            ("two\nlines", vec![]),
            ("t", vec![Trailer::new("Bad Key", "v")]),
            ("t", vec![Trailer::new("-lead", "v")]),
            ("t", vec![Trailer::new("Key", "two\nlines")]),
            ("t", vec![Trailer::new("Key", " ")]),
        ] {
            let e = message(title, "", &trailers).expect_err(title);
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        }
    }
}
