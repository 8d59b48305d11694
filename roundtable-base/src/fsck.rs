//! What `git fsck --strict` refuses in a tree, as pure checks: names that
//! some file system reads as `.git` (HFS+ ignores certain Unicode code
//! points, NTFS ignores trailing dots and spaces, reads `x:stream` as `x`
//! and has 8.3 short names such as `git~1`), a `.gitmodules` or
//! `.gitattributes` under any such spelling that is not a plain file, and
//! the content git refuses in them (a submodule name that climbs out with
//! `..`, a url or path read as a command-line option, an `update = !cmd`,
//! a url that smuggles a newline or an empty host into a credential
//! request, an attributes line too long to parse).
//!
//! [`RepoPath`] refuses the names; [`check_content`] the content, at
//! proposal create (and revise and rebase) time, before anything is
//! stored. The rules are git's (as of git 2.39, checked against it by the
//! `item13_*` tests), with a few stricter ones, each said where it is:
//! a `.gitmodules` this parser cannot read is refused (git only warns),
//! and a url with an encoded newline or carriage return is refused
//! whatever its scheme.

use crate::path::PathError;
use crate::{ErrorCode, RepoPath};

/// The code points HFS+ ignores when it compares names, so `.g\u{200c}it`
/// is `.git` there (zero-width joiners and non-joiners, directional marks
/// and overrides, the deprecated format characters, the byte order mark).
fn hfs_ignorable(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// Whether HFS+ reads `name` as `.` followed by `word` (ASCII letters,
/// compared case-insensitively).
fn hfs_is_dot(name: &str, word: &str) -> bool {
    let mut chars = name.chars().filter(|c| !hfs_ignorable(*c));
    if chars.next() != Some('.') {
        return false;
    }
    for want in word.chars() {
        match chars.next() {
            Some(c) if c.is_ascii() && c.eq_ignore_ascii_case(&want) => {}
            _ => return false,
        }
    }
    chars.next().is_none()
}

/// Whether what follows a matched NTFS name is nothing NTFS keeps: only
/// dots and spaces, up to the end or an alternate data stream's `:`.
fn ntfs_tail_ignored(rest: &[u8]) -> bool {
    for &b in rest {
        match b {
            b':' => return true,
            b'.' | b' ' => {}
            _ => return false,
        }
    }
    true
}

/// Whether NTFS reads `segment` as `.git`: `.git` or its short name
/// `git~1`, case-insensitively, then only what NTFS drops.
fn ntfs_is_dotgit(segment: &[u8]) -> bool {
    let lower = |n: usize| segment.get(..n).map(<[u8]>::to_ascii_lowercase);
    if lower(4).as_deref() == Some(b".git") {
        return ntfs_tail_ignored(&segment[4..]);
    }
    if lower(5).as_deref() == Some(b"git~1") {
        return ntfs_tail_ignored(&segment[5..]);
    }
    false
}

/// Whether NTFS may read `name` as `.` followed by `word`: the long name
/// itself, its regular 8.3 short name (the first six letters, `~1` to
/// `~4`), or a fall-back short name made of a prefix of `short` (the
/// hashed six characters NTFS would use), a `~` and digits, eight
/// characters in all — each followed only by what NTFS drops.
fn ntfs_is_dot(name: &[u8], word: &str, short: &str) -> bool {
    let word = word.as_bytes();
    if name.first() == Some(&b'.')
        && name.len() > word.len()
        && name[1..=word.len()].eq_ignore_ascii_case(word)
    {
        return ntfs_tail_ignored(&name[word.len() + 1..]);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&word[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return ntfs_tail_ignored(&name[8..]);
    }
    if name.len() < 8 {
        return false;
    }
    let short = short.as_bytes();
    let mut tilde = false;
    let mut i = 0;
    while i < 8 {
        let b = name[i];
        if tilde {
            if !b.is_ascii_digit() {
                return false;
            }
        } else if b == b'~' {
            i += 1;
            if !(b'1'..=b'9').contains(&name[i]) {
                return false;
            }
            tilde = true;
        } else if i >= 6 || !b.is_ascii() || b.to_ascii_lowercase() != short[i] {
            return false;
        }
        i += 1;
    }
    ntfs_tail_ignored(&name[8..])
}

/// Whether some file system git protects reads `component` as `.git`:
/// exactly (ASCII case-insensitively), through HFS+'s ignored code points,
/// or through NTFS's trailing dots and spaces, stream names and short name
/// `git~1` — in any backslash-separated part, as NTFS splits there.
pub fn is_dotgit(component: &str) -> bool {
    hfs_is_dot(component, "git")
        || component
            .as_bytes()
            .split(|b| *b == b'\\')
            .any(ntfs_is_dotgit)
}

/// A file git reads from the tree itself, and so checks in `fsck`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotFile {
    /// `.gitmodules`: the submodules' names, paths and urls.
    Modules,
    /// `.gitattributes`: per-path attributes.
    Attributes,
}

impl DotFile {
    /// Which of them some file system reads `component` as, if any.
    pub fn of(component: &str) -> Option<DotFile> {
        let raw = component.as_bytes();
        if hfs_is_dot(component, "gitmodules") || ntfs_is_dot(raw, "gitmodules", "gi7eba") {
            Some(DotFile::Modules)
        } else if hfs_is_dot(component, "gitattributes")
            || ntfs_is_dot(raw, "gitattributes", "gi7d29")
        {
            Some(DotFile::Attributes)
        } else {
            None
        }
    }
}

/// The longest `.gitattributes` line git parses (bytes, its newline not
/// counted); a longer one is an fsck error.
pub const MAX_ATTRIBUTES_LINE: usize = 2048;

/// Refuse, as `git fsck --strict` would, the content `data` at `path`
/// (a link when `symlink`): a `.gitmodules` (under any spelling HFS+ or
/// NTFS reads as it, such as `gitmod~1`) that is a link, unreadable, or names a
/// submodule with a `..` component (`path_escape`), or gives a url or
/// path that reads as an option, an `update = !command`, or a url that
/// carries a newline or an empty host (`invalid_path`); a
/// `.gitattributes` with a line longer than [`MAX_ATTRIBUTES_LINE`]
/// bytes. Other paths pass.
pub fn check_content(path: &RepoPath, data: &[u8], symlink: bool) -> Result<(), PathError> {
    let name = path.components().last().unwrap_or_default();
    let fail = |code, reason| Err(PathError::new(path.as_str(), reason, code));
    match DotFile::of(name) {
        None => Ok(()),
        Some(DotFile::Modules) if symlink => fail(
            ErrorCode::InvalidPath,
            "is a .gitmodules that is a symbolic link (git fsck refuses it)",
        ),
        Some(DotFile::Attributes) if symlink => Ok(()),
        Some(DotFile::Modules) => {
            let Some(entries) = parse_config(data) else {
                return fail(
                    ErrorCode::InvalidPath,
                    "is a .gitmodules that does not parse as git configuration",
                );
            };
            for entry in entries {
                if let Some((code, reason)) = refuse_submodule(&entry) {
                    return fail(code, reason);
                }
            }
            Ok(())
        }
        Some(DotFile::Attributes) => {
            let long = data
                .split(|b| *b == b'\n')
                .any(|line| line.strip_suffix(b"\r").unwrap_or(line).len() > MAX_ATTRIBUTES_LINE);
            if long {
                fail(
                    ErrorCode::InvalidPath,
                    "is a .gitattributes with a line longer than 2048 bytes (git fsck refuses it)",
                )
            } else {
                Ok(())
            }
        }
    }
}

/// Why git refuses one `.gitmodules` setting, if it does.
fn refuse_submodule(entry: &ConfigEntry) -> Option<(ErrorCode, &'static str)> {
    // `section.sub.section.key`: the section is up to the first dot, the
    // key after the last, the subsection (the submodule's name) between.
    let (section, rest) = entry.name.split_once('.')?;
    let (name, key) = rest.rsplit_once('.')?;
    if section != "submodule" {
        return None;
    }
    if name.is_empty() || name.split(['/', '\\']).any(|c| c == "..") {
        return Some((
            ErrorCode::PathEscape,
            "is a .gitmodules naming a submodule with a `..` component (git fsck refuses it)",
        ));
    }
    let value = entry.value.as_deref()?;
    match key {
        "url" if !url_allowed(value) => Some((
            ErrorCode::InvalidPath,
            "is a .gitmodules whose submodule url git fsck refuses (an option, a newline, an empty host, or `..` into the host)",
        )),
        "path" if value.starts_with('-') => Some((
            ErrorCode::InvalidPath,
            "is a .gitmodules whose submodule path starts with `-` (git fsck refuses it)",
        )),
        "update" if value.starts_with('!') => Some((
            ErrorCode::InvalidPath,
            "is a .gitmodules whose submodule update runs a command (git fsck refuses it)",
        )),
        _ => None,
    }
}

/// `%XX` decoded (a malformed escape is kept as it is).
fn url_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(u8::try_from(h * 16 + l).unwrap_or(0));
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Whether git accepts `url` as a submodule's url: not an option; no
/// newline once decoded (stricter than git: nor a carriage return, in any
/// scheme); a relative url does not climb into the host part
/// (`../:x`, `..//x`); an http(s) or ftp(s) url (or one given to those
/// remote helpers, `https::…`) has a host.
fn url_allowed(url: &str) -> bool {
    if url.starts_with('-') {
        return false;
    }
    if url_decode(url).iter().any(|b| matches!(b, b'\n' | b'\r')) {
        return false;
    }
    let relative = url.starts_with("./") || url.starts_with("../");
    if relative || url.starts_with("git://") {
        let mut rest = url;
        let mut ups = 0;
        loop {
            if let Some(r) = rest.strip_prefix("../") {
                ups += 1;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("./") {
                rest = r;
            } else {
                break;
            }
        }
        return !(ups > 0 && (rest.starts_with(':') || rest.starts_with('/')));
    }
    let lower = url.to_ascii_lowercase();
    let helper = ["http::", "https::", "ftp::", "ftps::"]
        .iter()
        .find_map(|p| lower.starts_with(p).then(|| &url[p.len()..]));
    let direct = ["http://", "https://", "ftp://", "ftps://"]
        .iter()
        .any(|p| lower.starts_with(p));
    let curl = match (helper, direct) {
        (Some(u), _) => u,
        (None, true) => url,
        (None, false) => return true,
    };
    let Some((_, after)) = curl.split_once("://") else {
        return false;
    };
    let authority = after.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    !host.is_empty()
}

/// One setting of a git configuration file: its full name (`section`,
/// `section.subsection` or the legacy `section.sub` lowercased, then
/// `.key` lowercased) and its value (`None`: a key with no `=`, true).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigEntry {
    name: String,
    value: Option<String>,
}

/// Parse `data` as git configuration (git's grammar: `[section]`,
/// `[section "subsection"]`, legacy `[section.sub]`, `key = value` with
/// quotes, `\\ \" \n \t \b` escapes, `\` line continuation, `#`/`;`
/// comments, a setting after the header on its line); `None` when it is
/// not (or holds a NUL byte).
fn parse_config(data: &[u8]) -> Option<Vec<ConfigEntry>> {
    let text = std::str::from_utf8(data).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\0') {
        return None;
    }
    let text = text.replace("\r\n", "\n");
    let mut p = Cursor {
        chars: text.chars().collect(),
        at: 0,
    };
    let mut section: Option<String> = None;
    let mut out = Vec::new();
    loop {
        p.skip(|c| c.is_whitespace());
        let Some(c) = p.peek() else { break };
        match c {
            '#' | ';' => p.skip(|c| c != '\n'),
            '[' => {
                p.at += 1;
                section = Some(p.section_header()?);
            }
            c if c.is_ascii_alphabetic() => {
                let key = p.key();
                let value = p.value()?;
                let section = section.as_deref()?;
                out.push(ConfigEntry {
                    name: format!("{section}.{key}"),
                    value,
                });
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A position in a configuration's characters.
struct Cursor {
    chars: Vec<char>,
    at: usize,
}

impl Cursor {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    fn skip(&mut self, while_: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&while_) {
            self.at += 1;
        }
    }

    /// After `[`: the section's name, lowercased, with `.subsection`.
    fn section_header(&mut self) -> Option<String> {
        let mut name = String::new();
        loop {
            match self.next()? {
                ']' => return (!name.is_empty()).then_some(name),
                c if c.is_ascii_alphanumeric() || c == '-' || c == '.' => {
                    name.push(c.to_ascii_lowercase())
                }
                c if c == ' ' || c == '\t' => break,
                _ => return None,
            }
        }
        self.skip(|c| c == ' ' || c == '\t');
        if self.next()? != '"' || name.is_empty() {
            return None;
        }
        name.push('.');
        loop {
            match self.next()? {
                '"' => break,
                '\n' => return None,
                '\\' => match self.next()? {
                    '\n' => return None,
                    c => name.push(c),
                },
                c => name.push(c),
            }
        }
        (self.next()? == ']').then_some(name)
    }

    /// A key's name, lowercased (starts with a letter; letters, digits, `-`).
    fn key(&mut self) -> String {
        let mut key = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        {
            key.push(c.to_ascii_lowercase());
            self.at += 1;
        }
        key
    }

    /// After a key: `= value` to the end of its line, or nothing.
    fn value(&mut self) -> Option<Option<String>> {
        self.skip(|c| c == ' ' || c == '\t');
        match self.peek() {
            None | Some('\n') => return Some(None),
            Some('#' | ';') => {
                self.skip(|c| c != '\n');
                return Some(None);
            }
            Some('=') => self.at += 1,
            Some(_) => return None,
        }
        self.skip(|c| c == ' ' || c == '\t');
        let mut value = String::new();
        let mut spaces = 0usize;
        let mut quoted = false;
        loop {
            let Some(c) = self.next() else {
                return (!quoted).then_some(Some(value));
            };
            if c == '\n' {
                return (!quoted).then_some(Some(value));
            }
            if !quoted && (c == '#' || c == ';') {
                self.skip(|c| c != '\n');
                return Some(Some(value));
            }
            if !quoted && c.is_whitespace() {
                if !value.is_empty() {
                    spaces += 1;
                }
                continue;
            }
            for _ in 0..spaces {
                value.push(' ');
            }
            spaces = 0;
            match c {
                '"' => quoted = !quoted,
                '\\' => match self.next()? {
                    '\n' => {}
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    'b' => value.push('\u{8}'),
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    _ => return None,
                },
                c => value.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotgit_look_alikes() {
        for yes in [
            ".git",
            ".GIT",
            "git~1",
            "GIT~1",
            ".git.",
            ".git ",
            ".git. .",
            ".git::$INDEX_ALLOCATION",
            "x\\.git",
            ".git\\x",
            ".g\u{200c}it",
            "\u{feff}.git",
            ".git\u{200f}",
            "git~1.",
        ] {
            assert!(is_dotgit(yes), "{yes:?}");
        }
        for no in [
            ".gitx",
            "git~2",
            ".git~1",
            ".g\u{a0}it",
            ".gi\u{200c}t.",
            "a:b",
            ".github",
        ] {
            assert!(!is_dotgit(no), "{no:?}");
        }
    }

    #[test]
    fn dot_files_by_every_spelling() {
        for m in [
            ".gitmodules",
            "gitmod~1",
            "GI7EBA~9",
            "gi7eb~12",
            "~1000000",
            ".gitmodules .",
            ".gitmodules:x",
            ".gitmodule\u{200c}s",
        ] {
            assert_eq!(DotFile::of(m), Some(DotFile::Modules), "{m:?}");
        }
        for a in [".gitattributes", "gi7d29~1", "gitatt~2"] {
            assert_eq!(DotFile::of(a), Some(DotFile::Attributes), "{a:?}");
        }
        for n in [
            "gitmod~5",
            "gitmodu~1",
            "gi7eba~1x",
            "~12345678",
            ".gitignore",
        ] {
            assert_eq!(DotFile::of(n), None, "{n:?}");
        }
    }

    #[test]
    fn config_parses_as_git_does() {
        let parsed = parse_config(
            b"# c\n[Submodule \"A\\\"b\"] url = \" -x\" ; c\n[submodule.X]\n\tPATH=a\\\n b  c \nflag\n",
        )
        .expect("parses");
        let flat: Vec<(String, Option<String>)> =
            parsed.into_iter().map(|e| (e.name, e.value)).collect();
        assert_eq!(
            flat,
            [
                ("submodule.A\"b.url".to_owned(), Some(" -x".to_owned())),
                ("submodule.x.path".to_owned(), Some("a b  c".to_owned())),
                ("submodule.x.flag".to_owned(), None),
            ]
        );
        for bad in [
            &b"garbage ["[..],
            b"[x]\nk = \"open\n",
            b"[x]\nk = a\\q\n",
            b"k = v\n",
        ] {
            assert!(
                parse_config(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
