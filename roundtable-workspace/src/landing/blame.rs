//! Reading `git blame --porcelain` (the pure half of `provenance.blame`):
//! which commit each line of a file comes from, and what git says of each
//! commit (author, committer, summary). Nothing here runs git; the shell
//! half (the `git` feature's `blame_at_tip`) runs it and hands its output here.
//!
//! The porcelain format: per group of lines, a header `SHA ORIG FINAL
//! [COUNT]`; the first time a commit appears, `key value` lines about it
//! (`author`, `author-mail`, `author-time`, `committer`, …, `summary`,
//! `boundary`, `previous`, `filename`); then per line a header and the
//! line's content after a tab. Keys this parser does not know are skipped,
//! as git's documentation asks of readers.

use std::collections::BTreeMap;

/// What git says of a commit a line comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlameCommit {
    /// The author's name.
    pub author: String,
    /// The author's email, without the angle brackets.
    pub author_email: String,
    /// The author time, seconds since the epoch.
    pub author_time: i64,
    /// The committer's name.
    pub committer: String,
    /// The committer's email, without the angle brackets.
    pub committer_email: String,
    /// The committer time, seconds since the epoch.
    pub committer_time: i64,
    /// The first line of its message.
    pub summary: String,
}

/// One line of the blamed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlamedLine {
    /// The commit it comes from (hex).
    pub commit: String,
    /// Its content, without the line feed (invalid UTF-8 replaced).
    pub content: String,
}

/// A parsed `git blame --porcelain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Porcelain {
    /// The file's lines, in order (line 1 first).
    pub lines: Vec<BlamedLine>,
    /// Every commit a line comes from, by id.
    pub commits: BTreeMap<String, BlameCommit>,
}

/// Consecutive lines from one commit: lines `start..=end` (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRange {
    /// The first line.
    pub start: u32,
    /// The last line.
    pub end: u32,
    /// The commit.
    pub commit: String,
}

/// A file blamed at the tip of a branch (the `git` feature's `blame_at_tip`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBlame {
    /// The commit the branch was at: the file as blamed is its.
    pub tip: String,
    /// Each line's commit, and git's facts about each commit.
    pub porcelain: Porcelain,
    /// Each of those commits' whole message, by id (its trailers are read
    /// from it).
    pub messages: BTreeMap<String, Vec<u8>>,
}

/// What is at a path at the tip of a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAtTip {
    /// A file: blamed.
    Blamed(FileBlame),
    /// Nothing (or the branch has no commit).
    Missing,
    /// A directory or a submodule, not a file.
    NotAFile,
}

/// Why porcelain output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git blame --porcelain, line {line}: {reason}")]
pub struct PorcelainError {
    /// The output line (1-based) where reading stopped.
    pub line: usize,
    /// Why.
    pub reason: &'static str,
}

/// Whether `s` is a commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex
/// digits.
fn is_commit_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Read `git blame --porcelain` output. Every final line from 1 to the
/// last must be given exactly once, each by a commit git described.
pub fn parse_porcelain(out: &[u8]) -> Result<Porcelain, PorcelainError> {
    let mut commits: BTreeMap<String, BlameCommit> = BTreeMap::new();
    let mut lines: Vec<Option<BlamedLine>> = Vec::new();
    // The commit and final line of the line whose content comes next.
    let mut current: Option<(String, usize)> = None;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let number = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
    };
    for (i, raw) in out.split(|&b| b == b'\n').enumerate() {
        let at = i + 1;
        let fail = |reason| PorcelainError { line: at, reason };
        if let Some(content) = raw.strip_prefix(b"\t") {
            let (commit, final_line) = current.take().ok_or(fail("content without a header"))?;
            let slot = lines
                .get_mut(final_line - 1)
                .ok_or(fail("a line past the end"))?;
            if slot.is_some() {
                return Err(fail("a line given twice"));
            }
            *slot = Some(BlamedLine {
                commit,
                content: text(content),
            });
            continue;
        }
        if raw.is_empty() {
            continue;
        }
        let (key, value) = match raw.iter().position(|&b| b == b' ') {
            Some(p) => (&raw[..p], &raw[p + 1..]),
            None => (raw, &b""[..]),
        };
        let key_text = std::str::from_utf8(key).unwrap_or("");
        if is_commit_id(key_text) {
            let mut fields = value.split(|&b| b == b' ');
            let _orig = fields.next().and_then(number);
            let final_line = fields
                .next()
                .and_then(number)
                .filter(|&n| n >= 1)
                .ok_or(fail("a header without its final line"))?;
            let final_line =
                usize::try_from(final_line).map_err(|_| fail("a line number too large"))?;
            if final_line > lines.len() {
                lines.resize(final_line, None);
            }
            commits.entry(key_text.to_owned()).or_default();
            current = Some((key_text.to_owned(), final_line));
            continue;
        }
        let Some((id, _)) = current.as_ref() else {
            return Err(fail("a field before any header"));
        };
        let commit = commits.entry(id.clone()).or_default();
        let email = |v: &[u8]| {
            text(
                v.strip_prefix(b"<")
                    .and_then(|v| v.strip_suffix(b">"))
                    .unwrap_or(v),
            )
        };
        match key {
            b"author" => commit.author = text(value),
            b"author-mail" => commit.author_email = email(value),
            b"author-time" => commit.author_time = number(value).unwrap_or(0),
            b"committer" => commit.committer = text(value),
            b"committer-mail" => commit.committer_email = email(value),
            b"committer-time" => commit.committer_time = number(value).unwrap_or(0),
            b"summary" => commit.summary = text(value),
            _ => {}
        }
    }
    if current.is_some() {
        return Err(PorcelainError {
            line: 0,
            reason: "a header without its line",
        });
    }
    let lines = lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            l.ok_or(PorcelainError {
                line: i + 1,
                reason: "a final line git did not give",
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Porcelain { lines, commits })
}

/// The lines grouped into ranges of consecutive lines from one commit, in
/// order.
pub fn ranges(lines: &[BlamedLine]) -> Vec<LineRange> {
    let mut out: Vec<LineRange> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        match out.last_mut() {
            Some(last) if last.commit == line.commit => last.end = n,
            _ => out.push(LineRange {
                start: n,
                end: n,
                commit: line.commit.clone(),
            }),
        }
    }
    out
}

/// The id a roundtable evidence trailer's value names: `WHO (revision N,
/// ID)` gives `ID` (what `patch.apply` writes after `Approved-by`,
/// `Security-Reviewed-by`, `Human-Approved-by` and `Checks`).
pub fn evidence_id(value: &str) -> Option<&str> {
    let inner = value.strip_suffix(')')?;
    let open = inner.rfind(" (revision ")?;
    let (_, id) = inner[open..].split_once(", ")?;
    let id = id.trim();
    (!id.is_empty() && !id.contains([' ', '(', ')'])).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "457fb8a9fff2c8454c2c59bbfb3aab8f3a54dc84";
    const B: &str = "0436ed532fb678a93a02bf35ebf15ea7761165cc";

    fn sample() -> String {
        format!(
            "{A} 1 1 1\nauthor A\nauthor-mail <a@x>\nauthor-time 10\nauthor-tz +0000\n\
             committer C\ncommitter-mail <c@x>\ncommitter-time 11\ncommitter-tz +0000\n\
             summary one\nboundary\nfilename f\n\ta\n\
             {B} 2 2 2\nauthor B\nauthor-mail <b@x>\nauthor-time 20\nauthor-tz +0000\n\
             committer B\ncommitter-mail <b@x>\ncommitter-time 21\ncommitter-tz +0000\n\
             summary two\nprevious {A} f\nfilename f\n\tB\n{B} 3 3\n\t\tindented\n\
             {A} 3 4 1\n\tc\n"
        )
    }

    #[test]
    fn porcelain_gives_every_line_its_commit_and_each_commit_its_facts() {
        let p = parse_porcelain(sample().as_bytes()).expect("parses");
        let got: Vec<(&str, &str)> = p
            .lines
            .iter()
            .map(|l| (l.commit.as_str(), l.content.as_str()))
            .collect();
        assert_eq!(got, [(A, "a"), (B, "B"), (B, "\tindented"), (A, "c")]);
        assert_eq!(
            p.commits[A],
            BlameCommit {
                author: "A".into(),
                author_email: "a@x".into(),
                author_time: 10,
                committer: "C".into(),
                committer_email: "c@x".into(),
                committer_time: 11,
                summary: "one".into(),
            }
        );
        assert_eq!(p.commits[B].summary, "two");
        let r = ranges(&p.lines);
        assert_eq!(
            r,
            [
                LineRange {
                    start: 1,
                    end: 1,
                    commit: A.into()
                },
                LineRange {
                    start: 2,
                    end: 3,
                    commit: B.into()
                },
                LineRange {
                    start: 4,
                    end: 4,
                    commit: A.into()
                },
            ]
        );
    }

    #[test]
    fn porcelain_with_a_gap_a_repeat_or_stray_content_is_refused() {
        for bad in [
            format!("{A} 1 2 1\nsummary x\n\tb\n"),
            format!("{A} 1 1 1\n\ta\n{A} 1 1 1\n\ta\n"),
            "\tstray\n".to_owned(),
            "summary before a header\n".to_owned(),
            format!("{A} 1\n\ta\n"),
            format!("{A} 1 1 1\n"),
        ] {
            assert!(parse_porcelain(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_porcelain(b"").expect("empty file"),
            Porcelain::default()
        );
    }

    #[test]
    fn evidence_ids_come_from_the_parenthesis_roundtable_writes() {
        assert_eq!(
            evidence_id("agent:bob (revision 1, vote-01)"),
            Some("vote-01")
        );
        assert_eq!(
            evidence_id("unit=passed (revision 12, test-9)"),
            Some("test-9")
        );
        assert_eq!(evidence_id("odd (name) (revision 2, x)"), Some("x"));
        assert_eq!(evidence_id("agent:bob"), None);
        assert_eq!(evidence_id("agent:bob (revision 1)"), None);
        assert_eq!(evidence_id("a (revision 1, two words)"), None);
    }
}
