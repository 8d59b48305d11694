//! The two grammars, read strictly: a line that is not part of the grammar
//! is refused with its line number, never skipped.

use super::{AgentEditError, FileOp, Hunk, NewLine};
use crate::RepoPath;
use serde_json::json;

/// The document's lines, 1-based, each without its `\n` or `\r\n`.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect()
}

fn path(line: usize, s: &str) -> Result<RepoPath, AgentEditError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(AgentEditError::syntax(line, s, "a file path"));
    }
    RepoPath::from_bytes(s.as_bytes()).map_err(|e| {
        AgentEditError::new(
            e.code(),
            format!("line {line}: {e}"),
            json!({"line": line, "path": e.path, "reason": e.reason}),
        )
    })
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF: &str = "*** End of File";

/// The heredoc openers agents wrap an envelope in (`apply_patch <<'EOF'`
/// and the like), as Codex's lenient parser accepts them: `<<EOF`,
/// `<<'EOF'` or `<<"EOF"`, optionally after the command name
/// `apply_patch`; the wrapper closes with a line `EOF`.
const HEREDOCS: [&str; 3] = ["<<EOF", "<<'EOF'", "<<\"EOF\""];

/// Whether `line` (trimmed) opens a heredoc wrapper.
fn heredoc_opener(line: &str) -> bool {
    let l = line.trim();
    let l = l
        .strip_prefix("apply_patch")
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .map_or(l, str::trim_start);
    HEREDOCS.contains(&l)
}

/// A Codex `apply_patch` envelope.
///
/// Beyond the strict grammar it accepts what Codex's own parser accepts and
/// is harmless: the markers (`*** Begin Patch`, `*** End Patch`, the file
/// section headers) padded or indented with whitespace; a heredoc wrapper
/// (`apply_patch <<'EOF'` … `EOF`, also `<<EOF` and `<<"EOF"`) around the
/// envelope; blank lines between file sections, between hunks and after
/// `*** End of File`. Blank lines *inside* a hunk are empty context lines,
/// as Codex reads them; a trailing one that the file does not have is
/// dropped when the hunk is placed (see [`Hunk::blank_tail`]).
pub(super) fn codex(text: &str) -> Result<Vec<FileOp>, AgentEditError> {
    let all = lines(text);
    // Blank lines around the envelope are allowed, nothing else.
    let first = all.iter().position(|(_, l)| !l.trim().is_empty());
    let last = all.iter().rposition(|(_, l)| !l.trim().is_empty());
    let (Some(mut first), Some(mut last)) = (first, last) else {
        return Err(AgentEditError::syntax(1, "", BEGIN));
    };
    if heredoc_opener(all[first].1) && last > first && all[last].1.trim() == "EOF" {
        // The wrapper's lines go; blank lines just inside it are allowed.
        let inner = &all[first + 1..last];
        match (
            inner.iter().position(|(_, l)| !l.trim().is_empty()),
            inner.iter().rposition(|(_, l)| !l.trim().is_empty()),
        ) {
            (Some(f), Some(l)) => {
                last = first + 1 + l;
                first = first + 1 + f;
            }
            _ => return Err(AgentEditError::syntax(all[last].0, all[last].1, BEGIN)),
        }
    }
    let (n, l) = all[first];
    if l.trim() != BEGIN {
        return Err(AgentEditError::syntax(n, l, BEGIN));
    }
    let (n, l) = all[last];
    if last == first || l.trim() != END {
        return Err(AgentEditError::syntax(n, l, END));
    }
    let body = &all[first + 1..last];
    let mut ops = Vec::new();
    let mut hunk_number = 0u32;
    let mut i = 0;
    while i < body.len() {
        let (n, l) = body[i];
        let header = l.trim();
        i += 1;
        if header.is_empty() {
            // A blank line between file sections.
            continue;
        }
        if let Some(p) = header.strip_prefix(ADD) {
            let path = path(n, p)?;
            let mut content = Vec::new();
            while let Some(&(_, l)) = body.get(i) {
                let Some(added) = l.strip_prefix('+') else {
                    break;
                };
                content.extend_from_slice(added.as_bytes());
                content.push(b'\n');
                i += 1;
            }
            ops.push(FileOp::Add {
                path,
                line: n,
                content,
            });
        } else if let Some(p) = header.strip_prefix(DELETE) {
            ops.push(FileOp::Delete {
                path: path(n, p)?,
                line: n,
            });
        } else if let Some(p) = header.strip_prefix(UPDATE) {
            let path = path(n, p)?;
            let mut move_to = None;
            if let Some(&(m, l)) = body.get(i) {
                if let Some(q) = l.trim().strip_prefix(MOVE) {
                    move_to = Some(super::parse::path(m, q)?);
                    i += 1;
                }
            }
            let mut hunks = Vec::new();
            loop {
                // Blank lines between hunks (and after `*** End of File`).
                while body.get(i).is_some_and(|(_, l)| l.trim().is_empty()) {
                    i += 1;
                }
                let Some(&(_, l)) = body.get(i) else {
                    break;
                };
                if l.starts_with("*** ") && l.trim_end() != EOF {
                    break;
                }
                hunk_number += 1;
                hunks.push(codex_hunk(body, &mut i, hunk_number)?);
            }
            if hunks.is_empty() && move_to.is_none() {
                return Err(AgentEditError::syntax(
                    n,
                    l,
                    "an `*** Update File:` section with hunks or a `*** Move to:`",
                ));
            }
            ops.push(FileOp::Update {
                path,
                line: n,
                move_to,
                hunks,
                create_if_absent: false,
            });
        } else {
            return Err(AgentEditError::syntax(
                n,
                l,
                "`*** Add File: `, `*** Delete File: `, `*** Update File: ` or `*** End Patch`",
            ));
        }
    }
    if ops.is_empty() {
        return Err(AgentEditError::syntax(
            all[last].0,
            all[last].1,
            "a file section",
        ));
    }
    Ok(ops)
}

/// One hunk of an update section, from `body[*i]`: `@@` lines, then
/// ` `/`-`/`+` lines, then an optional `*** End of File`.
fn codex_hunk(body: &[(usize, &str)], i: &mut usize, number: u32) -> Result<Hunk, AgentEditError> {
    let start = body[*i].0;
    let mut anchors = Vec::new();
    while let Some(&(_, l)) = body.get(*i) {
        if l.trim_end() == "@@" {
            *i += 1;
        } else if let Some(a) = l.strip_prefix("@@ ") {
            let a = a.trim();
            if !a.is_empty() {
                anchors.push(a.to_owned());
            }
            *i += 1;
        } else {
            break;
        }
    }
    let mut old = Vec::new();
    let mut new = Vec::new();
    let mut changes = false;
    let mut at_end = false;
    while let Some(&(n, l)) = body.get(*i) {
        if l.starts_with("@@") || l.starts_with("*** ") {
            if l.trim_end() == EOF {
                at_end = true;
                *i += 1;
            }
            break;
        }
        if let Some(c) = l.strip_prefix(' ') {
            new.push(NewLine::Keep(old.len()));
            old.push(c.to_owned());
        } else if l.is_empty() {
            // An empty line is an empty context line, as Codex reads it.
            new.push(NewLine::Keep(old.len()));
            old.push(String::new());
        } else if let Some(r) = l.strip_prefix('-') {
            old.push(r.to_owned());
            changes = true;
        } else if let Some(a) = l.strip_prefix('+') {
            new.push(NewLine::Add(a.to_owned()));
            changes = true;
        } else {
            return Err(AgentEditError::syntax(
                n,
                l,
                "a hunk line starting with ' ', '-' or '+', an `@@` line, or `*** End of File`",
            ));
        }
        *i += 1;
    }
    if !changes {
        let (n, l) = body.get(*i).copied().unwrap_or((start, ""));
        return Err(AgentEditError::new(
            crate::ErrorCode::InvalidPatch,
            format!("hunk {number} (line {start}): adds or removes no line"),
            json!({"hunk": number, "line": start, "found_line": n, "found": l}),
        ));
    }
    // Only added lines, with no context and no anchor: Codex appends them
    // at the end of the file, as if `*** End of File` closed the hunk.
    if old.is_empty() && anchors.is_empty() {
        at_end = true;
    }
    // Last context lines that are blank (often the blank lines an agent
    // leaves before the next `@@`) may be dropped when the file has no
    // blank lines there: Codex retries without one.
    let blank_tail = old
        .iter()
        .enumerate()
        .rev()
        .zip(new.iter().rev())
        .take_while(|((k, o), n)| o.is_empty() && **n == NewLine::Keep(*k))
        .count();
    Ok(Hunk {
        number,
        line: start,
        anchors,
        old,
        new,
        at_end,
        blank_tail,
    })
}

/// A path line without the decorations agents put around a file name (the
/// ones aider strips): surrounding blanks, trailing `:`s, leading `#`s (a
/// Markdown heading), surrounding backticks and asterisks (code and bold),
/// and `\_` for `_` (escaped Markdown).
fn strip_decorations(line: &str) -> String {
    line.trim()
        .trim_end_matches(':')
        .trim_start_matches('#')
        .trim()
        .trim_matches('`')
        .trim_matches('*')
        .replace("\\_", "_")
}

/// Whether a line outside the blocks is prose rather than a path: once its
/// decorations are stripped it contains a blank and either ended with `:`
/// (`Here's the change:`), ends like a sentence (`.`, `!`, `?`, `,`, `;`),
/// or has three or more words. A path of three or more words with blanks
/// is therefore refused too (rename it, or use a unified diff).
fn reads_as_prose(line: &str) -> bool {
    let name = strip_decorations(line);
    name.contains(char::is_whitespace)
        && (line.trim_end().ends_with(':')
            || name.ends_with(['.', '!', '?', ',', ';'])
            || name.split_whitespace().count() >= 3)
}

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";

/// SEARCH/REPLACE blocks, each after its file path (or after a block of
/// the same file); Markdown fence lines, blank lines and `...` lines may
/// surround them. The path line is read without its decorations
/// ([`strip_decorations`]); any other text, prose above all
/// ([`reads_as_prose`]), is refused with its line number.
pub(super) fn search_replace(text: &str) -> Result<Vec<FileOp>, AgentEditError> {
    let all = lines(text);
    let mut ops: Vec<FileOp> = Vec::new();
    let mut pending: Option<(usize, &str)> = None;
    let mut previous: Option<RepoPath> = None;
    let mut number = 0u32;
    let mut i = 0;
    while i < all.len() {
        let (n, l) = all[i];
        i += 1;
        let t = l.trim_end();
        if t.trim().is_empty() || t.trim() == "..." || t.trim_start().starts_with("```") {
            continue;
        }
        if t == DIVIDER || t == REPLACE {
            return Err(AgentEditError::syntax(
                n,
                l,
                "`<<<<<<< SEARCH` or a file path",
            ));
        }
        if t != SEARCH {
            if reads_as_prose(l) {
                return Err(AgentEditError::syntax(
                    n,
                    l,
                    "a file path alone on its line, a fence or `<<<<<<< SEARCH` (this line reads as prose; text outside the blocks is refused)",
                ));
            }
            if let Some((m, p)) = pending {
                return Err(AgentEditError::new(
                    crate::ErrorCode::InvalidPatch,
                    format!("line {n}: text outside a block; only a file path may precede `<<<<<<< SEARCH` (the path {p:?} at line {m} has no block)"),
                    json!({"line": n, "found": l}),
                ));
            }
            pending = Some((n, l));
            continue;
        }
        let file = match pending.take() {
            Some((m, p)) => path(m, &strip_decorations(p))?,
            None => previous.clone().ok_or_else(|| {
                AgentEditError::syntax(n, l, "a file path on the line before `<<<<<<< SEARCH`")
            })?,
        };
        number += 1;
        let mut search = Vec::new();
        let mut replace = Vec::new();
        let mut in_replace = false;
        let mut closed = false;
        while let Some(&(m, b)) = all.get(i) {
            i += 1;
            let bt = b.trim_end();
            if bt == SEARCH {
                return Err(AgentEditError::syntax(
                    m,
                    b,
                    if in_replace { REPLACE } else { DIVIDER },
                ));
            }
            if bt == DIVIDER {
                if in_replace {
                    return Err(AgentEditError::syntax(m, b, REPLACE));
                }
                in_replace = true;
            } else if bt == REPLACE {
                if !in_replace {
                    return Err(AgentEditError::syntax(m, b, DIVIDER));
                }
                closed = true;
                break;
            } else if in_replace {
                replace.push(b.to_owned());
            } else {
                search.push(b.to_owned());
            }
        }
        if !closed {
            let (m, b) = all.last().copied().unwrap_or((n, ""));
            return Err(AgentEditError::syntax(
                m,
                b,
                if in_replace { REPLACE } else { DIVIDER },
            ));
        }
        let hunk = Hunk {
            number,
            line: n,
            anchors: Vec::new(),
            old: search,
            new: replace.into_iter().map(NewLine::Add).collect(),
            at_end: false,
            blank_tail: 0,
        };
        let existing = ops.iter_mut().find_map(|op| match op {
            FileOp::Update { path, hunks, .. } if *path == file => Some(hunks),
            _ => None,
        });
        match existing {
            Some(hunks) => hunks.push(hunk),
            None => ops.push(FileOp::Update {
                path: file.clone(),
                line: n,
                move_to: None,
                hunks: vec![hunk],
                create_if_absent: true,
            }),
        }
        previous = Some(file);
    }
    if let Some((m, p)) = pending {
        return Err(AgentEditError::syntax(
            m,
            p,
            "`<<<<<<< SEARCH` after the file path",
        ));
    }
    if ops.is_empty() {
        return Err(AgentEditError::syntax(
            1,
            all.first().map_or("", |x| x.1),
            "a SEARCH/REPLACE block",
        ));
    }
    Ok(ops)
}
