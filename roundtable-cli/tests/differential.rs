//! Differential test: `roundtable patch apply` against `git apply`.
//!
//! Each trial builds a small random tree in a fresh git repository, commits
//! it, makes random edits — text edits near the start, middle and end, CRLF
//! line endings, missing final newlines, renames and copies with and without
//! edits, deletions, new files, mode flips, binary and empty files, names
//! with spaces, tabs, quotes, backslashes and non-ASCII characters — stages
//! them and asks git for the patch:
//!
//! ```text
//! git -c core.quotepath=true diff --cached --binary -M -C -C HEAD
//! ```
//!
//! Two plain copies A and B of the committed tree (no `.git`) are then, in
//! about half of the trials, "altered" identically: lines shifted or changed
//! in files the patch modifies, files it needs deleted, files it creates
//! created beforehand, exec bits flipped, binary pre-images corrupted…
//! `git apply --binary` runs in A and `roundtable patch apply --root B` in B.
//! They must agree: either both succeed and the trees are identical (bytes
//! and exec bit of every regular file), or both refuse and leave their tree
//! exactly as it was, roundtable exiting 1 with a JSON error object.
//! `roundtable patch apply --check` must predict the outcome without
//! touching the tree, and `roundtable patch parse` must describe the patch
//! as git does (one entry per section, status, paths, hunks, line counts).
//! When the target is untouched, git's result must also be exactly the
//! edited tree (which checks the harness itself). Every patch git writes
//! must also render back byte for byte after parsing.
//!
//! Two exceptions to "git is the oracle", both places where git itself
//! goes wrong and roundtable refuses instead:
//! - when a directory of the target stands where the patch needs a file
//!   (see [`directory_in_the_way`]), git is not all-or-nothing (it dies
//!   half-way through writing), so there the test only requires roundtable
//!   to refuse cleanly;
//! - when a hunk's last line is marked `\ No newline at end of file` but
//!   that line has a newline in the target, git "matches" it anyway (it
//!   compares only the pre-image's bytes) and then drops the newline or
//!   glues the next line on; roundtable refuses with a reason naming
//!   exactly this ([`NO_NEWLINE_DEVIATION`]), which the test accepts.
//!
//! Two deliberate refusals where git applies are accepted too: a `diff -r`
//! report of a change the patch leaves out ([`LEFT_OUT_DEVIATION`]), and a
//! symbolic link whose target leaves the root, which git creates and
//! roundtable refuses as `path_escape` ([`LINK_ESCAPE_DEVIATION`]).
//!
//! Environment:
//! - `RT_DIFF_TRIALS`: number of trials (default 300);
//! - `RT_DIFF_SEED`: base seed, decimal or `0x` hex (default [`DEFAULT_SEED`]);
//! - `RT_DIFF_ONLY`: run only this trial number (reproduces one failure);
//! - `RT_DIFF_KEEP`: a directory; each failing trial is saved there in the
//!   `differential-cases` layout (`patch.diff`, `before/`, `expect.txt`).
//!
//! A second test replays every saved case under `tests/differential-cases/`
//! against the installed git.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The base seed when `RT_DIFF_SEED` is not set.
const DEFAULT_SEED: u64 = 0x0d1f_f5ee_d000_0001;
/// The number of trials when `RT_DIFF_TRIALS` is not set.
const DEFAULT_TRIALS: usize = 300;
/// The reason roundtable gives where it deliberately refuses a hunk that
/// git would apply by corrupting the file (see the module docs).
const NO_NEWLINE_DEVIATION: &str =
    "the hunk says its last line has no final newline, but in the file that line has one";
/// Where git skips a `diff -r` report of a change the patch does not
/// carry (`Binary files … differ`, `Only in …`) and applies the rest,
/// roundtable refuses, saying this.
pub(super) const LEFT_OUT_DEVIATION: &str = "which `git apply` would skip, leaving the change out";
/// Where git creates a symbolic link whatever its target, roundtable
/// refuses one whose target leaves the root (`path_escape`), saying this.
pub(super) const LINK_ESCAPE_DEVIATION: &str =
    "leaves the root (resolved from the link's directory";
/// Error codes roundtable documents (`roundtable::ErrorCode`).
const DOCUMENTED_CODES: &[&str] = &[
    "invalid_patch",
    "patch_does_not_apply",
    "unsupported_patch",
    "path_escape",
    "invalid_path",
    "irreversible_patch",
    "invalid_argument",
    "io",
];

// ---------------------------------------------------------------------------
// A tiny seeded PRNG (splitmix64): reproducible, no dependencies.

pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(super) fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "empty range");
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(super) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// An index into `weights`, chosen with probability proportional to
    /// its weight.
    pub(super) fn weighted(&mut self, weights: &[usize]) -> usize {
        let mut roll = self.below(weights.iter().sum());
        for (i, &w) in weights.iter().enumerate() {
            if roll < w {
                return i;
            }
            roll -= w;
        }
        unreachable!("roll is below the total weight")
    }

    fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

// ---------------------------------------------------------------------------
// In-memory trees: repository-relative path bytes ('/'-separated) to files.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct File {
    /// The bytes, or a symbolic link's target.
    pub(super) data: Vec<u8>,
    pub(super) exec: bool,
    /// A symbolic link (to `data`), never followed by the harness.
    pub(super) link: bool,
}

impl File {
    /// A symbolic link to `target`.
    pub(super) fn link(target: Vec<u8>) -> File {
        File {
            data: target,
            exec: false,
            link: true,
        }
    }
}

pub(super) type Tree = BTreeMap<Vec<u8>, File>;

/// Whether git would call this content binary (a NUL in the first 8000
/// bytes; our files are smaller than that).
fn is_binary(data: &[u8]) -> bool {
    data.contains(&0)
}

/// Whether `path` can be added to `tree`: it is not a file already, no
/// file sits where one of its directories would be, and it is not a
/// directory of an existing file.
fn path_free(tree: &Tree, path: &[u8]) -> bool {
    if tree.contains_key(path) {
        return false;
    }
    let parent_is_file = path
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'/' && tree.contains_key(&path[..i]));
    let mut dir = path.to_vec();
    dir.push(b'/');
    let is_dir = tree
        .range(dir.clone()..)
        .next()
        .is_some_and(|(k, _)| k.starts_with(&dir));
    !parent_is_file && !is_dir
}

/// Every directory that holds a file of `tree`.
fn directories(tree: &Tree) -> Vec<Vec<u8>> {
    let mut dirs: Vec<Vec<u8>> = tree
        .keys()
        .flat_map(|k| {
            k.iter()
                .enumerate()
                .filter(|&(_, &b)| b == b'/')
                .map(|(i, _)| k[..i].to_vec())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Pick one key of `tree` satisfying `keep`.
fn pick_key(rng: &mut Rng, tree: &Tree, keep: impl Fn(&File) -> bool) -> Option<Vec<u8>> {
    let keys: Vec<&Vec<u8>> = tree
        .iter()
        .filter(|(_, f)| keep(f))
        .map(|(k, _)| k)
        .collect();
    (!keys.is_empty()).then(|| rng.pick(&keys).to_vec())
}

fn show(path: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(path))
}

// ---------------------------------------------------------------------------
// Random names and contents.

/// Directory names: plain, with a space, a tab, a quote, a backslash,
/// non-ASCII, and the `a`/`b` that look like diff prefixes.
const DIRS: &[&str] = &[
    "src", "a", "b", "sub dir", "naïve", "t\tab", "q\"d", "back\\s", "日本",
];
/// File name stems, with every awkward character the header quoting has
/// to survive.
const STEMS: &[&str] = &[
    "main",
    "lib",
    "notes",
    "a",
    "b",
    "x",
    "sp ace",
    "trailing ",
    "tab\tname",
    "q\"uote",
    "back\\slash",
    "naïve",
    "日本語",
    "crab🦀",
    "-dash",
    "#hash",
    "mix \t\"\\ü",
    "new\nline",
    " lead",
    "ctl\u{1}\u{7f}",
];
const EXTS: &[&str] = &["", ".txt", ".rs", ".bin", ".md"];

/// A path not yet used in `tree` (0 to 2 directories deep).
pub(super) fn gen_path(rng: &mut Rng, tree: &Tree) -> Vec<u8> {
    loop {
        let mut path = String::new();
        for _ in 0..rng.weighted(&[4, 3, 1]) {
            path.push_str(rng.pick::<&str>(DIRS));
            path.push('/');
        }
        path.push_str(rng.pick::<&str>(STEMS));
        path.push_str(rng.pick::<&str>(EXTS));
        if rng.chance(30) {
            // A numeric suffix keeps collisions rare in bigger trees.
            let _ = write!(path, "{}", rng.below(10));
        }
        if path_free(tree, path.as_bytes()) {
            return path.into_bytes();
        }
    }
}

/// Lines that look like patch syntax once prefixed, or are whitespace
/// games: the parser and the matcher must take them as plain content.
const TRICKY_LINES: &[&str] = &[
    "}",
    "{",
    "",
    "    return 0;",
    "// note",
    "-- not a header",
    "++ nor this",
    "--- a/x",
    "+++ b/x",
    "@@ -1 +1 @@",
    "diff --git a/x b/x",
    "\\ No newline at end of file",
    "  trailing  ",
    "\tindented",
    "naïve ünïcode",
    "-",
    "+",
    " ",
];

/// One line of text, without its terminator. Numbered lines repeat often
/// (few distinct numbers), so context lines are ambiguous as in real code.
fn gen_line(rng: &mut Rng) -> Vec<u8> {
    match rng.weighted(&[60, 30, 5, 5]) {
        0 => format!("line {}", rng.below(40)).into_bytes(),
        1 => rng.pick(TRICKY_LINES).as_bytes().to_vec(),
        // Not UTF-8 (Latin-1), still text to git.
        2 => b"caf\xe9 cr\xe8me".to_vec(),
        // A lone carriage return inside a line.
        _ => b"before\rafter".to_vec(),
    }
}

/// Text as lines without `\n` (a CRLF line keeps its `\r`), plus whether
/// the last line is terminated.
struct Text {
    lines: Vec<Vec<u8>>,
    final_newline: bool,
}

impl Text {
    fn parse(data: &[u8]) -> Text {
        if data.is_empty() {
            return Text {
                lines: Vec::new(),
                final_newline: true,
            };
        }
        let mut lines: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let final_newline = data.ends_with(b"\n");
        if final_newline {
            lines.pop();
        }
        Text {
            lines,
            final_newline,
        }
    }

    fn render(&self) -> Vec<u8> {
        let mut out = self.lines.join(&b"\n"[..]);
        if self.final_newline && !self.lines.is_empty() {
            out.push(b'\n');
        }
        out
    }

    fn is_crlf(&self) -> bool {
        self.lines.iter().any(|l| l.ends_with(b"\r"))
    }

    /// A new line in this file's line-ending style.
    fn new_line(&self, rng: &mut Rng) -> Vec<u8> {
        let mut line = gen_line(rng);
        if self.is_crlf() {
            line.push(b'\r');
        }
        line
    }

    /// A line position, biased towards the start and the end of the file.
    fn position(&self, rng: &mut Rng) -> usize {
        let len = self.lines.len();
        match rng.weighted(&[3, 3, 4]) {
            0 => rng.below(len.min(2) + 1),
            1 => len - rng.below(len.min(2) + 1),
            _ => rng.below(len + 1),
        }
    }

    fn toggle_crlf(&mut self) {
        let crlf = self.is_crlf();
        for line in &mut self.lines {
            if crlf {
                if line.ends_with(b"\r") {
                    line.pop();
                }
            } else {
                line.push(b'\r');
            }
        }
    }
}

fn gen_text(rng: &mut Rng) -> Vec<u8> {
    let count = if rng.chance(10) {
        rng.range(1, 2)
    } else {
        rng.range(4, 25)
    };
    // Some files use a tiny alphabet, so that a hunk's context occurs many
    // times and the order in which positions are tried decides the result.
    let low_entropy = rng.chance(20);
    let mut text = Text {
        lines: (0..count)
            .map(|_| {
                if low_entropy {
                    rng.pick(&[&b"}"[..], b"", b"a", b"b"]).to_vec()
                } else {
                    gen_line(rng)
                }
            })
            .collect(),
        final_newline: !rng.chance(20),
    };
    match rng.weighted(&[80, 15, 5]) {
        0 => {}
        1 => text.toggle_crlf(),
        _ => {
            // Mixed line endings.
            for line in &mut text.lines {
                if rng.chance(50) {
                    line.push(b'\r');
                }
            }
        }
    }
    text.render()
}

/// Random bytes with at least one NUL, so git treats them as binary.
fn gen_binary(rng: &mut Rng) -> Vec<u8> {
    let len = rng.range(1, 600);
    let mut data: Vec<u8> = if rng.chance(30) {
        // Runs of a few byte values: compressible, and deltas stay small.
        (0..len)
            .map(|i| [0u8, 7, 0xff, b'A'][(i / 16) % 4])
            .collect()
    } else {
        (0..len).map(|_| rng.byte()).collect()
    };
    let nul = rng.below(len);
    data[nul] = 0;
    data
}

pub(super) fn gen_file(rng: &mut Rng) -> File {
    let data = match rng.weighted(&[70, 18, 12]) {
        0 => gen_text(rng),
        1 => gen_binary(rng),
        _ => Vec::new(),
    };
    File {
        data,
        exec: rng.chance(20),
        link: false,
    }
}

/// One to three line edits (insert, delete, replace), sometimes a toggled
/// final newline or line-ending style; never returns the input unchanged.
fn edit_text(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut text = Text::parse(data);
    for _ in 0..rng.range(1, 3) {
        let len = text.lines.len();
        let pos = text.position(rng);
        match rng.below(3) {
            1 if len > 0 => {
                let at = pos.min(len - 1);
                let count = rng.range(1, 2).min(len - at);
                text.lines.drain(at..at + count);
            }
            2 if len > 0 => {
                let at = pos.min(len - 1);
                text.lines[at] = text.new_line(rng);
            }
            _ => {
                for _ in 0..rng.range(1, 3) {
                    let line = text.new_line(rng);
                    text.lines.insert(pos, line);
                }
            }
        }
    }
    if rng.chance(10) {
        text.final_newline = !text.final_newline;
    }
    if rng.chance(5) {
        text.toggle_crlf();
    }
    let mut out = text.render();
    if out == data {
        out.extend_from_slice(b"appended\n");
    }
    out
}

/// Byte flips, insertions, deletions and appends; never returns the input
/// unchanged.
fn edit_binary(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..rng.range(1, 3) {
        let pos = rng.below(out.len() + 1);
        match rng.below(4) {
            0 if pos < out.len() => out[pos] ^= rng.range(1, 255) as u8,
            1 => {
                let chunk: Vec<u8> = (0..rng.range(1, 16)).map(|_| rng.byte()).collect();
                out.splice(pos..pos, chunk);
            }
            2 if pos < out.len() => {
                let end = (pos + rng.range(1, 16)).min(out.len());
                out.drain(pos..end);
            }
            _ => out.extend((0..rng.range(1, 8)).map(|_| rng.byte())),
        }
    }
    if out == data {
        out.push(0);
    }
    out
}

fn edit_content(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    if is_binary(data) {
        edit_binary(rng, data)
    } else {
        edit_text(rng, data)
    }
}

// ---------------------------------------------------------------------------
// The random edits between the committed tree and the patch's result.

/// The committed tree: one to seven files, now and then up to fifteen.
pub(super) fn gen_tree(rng: &mut Rng) -> Tree {
    let mut tree = Tree::new();
    let count = if rng.chance(10) {
        rng.range(8, 15)
    } else {
        rng.range(1, 7)
    };
    for _ in 0..count {
        let path = gen_path(rng, &tree);
        tree.insert(path, gen_file(rng));
    }
    tree
}

/// One to five (now and then up to ten) random edits of `old`; the result
/// always differs from it.
/// Each edit is described in `log`.
pub(super) fn mutate(rng: &mut Rng, old: &Tree, log: &mut Vec<String>) -> Tree {
    let mut tree = old.clone();
    let count = if rng.chance(10) {
        rng.range(6, 10)
    } else {
        rng.range(1, 5)
    };
    for _ in 0..count {
        edit_once(rng, &mut tree, log);
    }
    while tree == *old {
        edit_once(rng, &mut tree, log);
    }
    tree
}

fn edit_once(rng: &mut Rng, tree: &mut Tree, log: &mut Vec<String>) {
    // modify, rename, copy, delete, create, chmod, binary edit, retype,
    // file->dir, dir->file, swap
    let op = rng.weighted(&[6, 3, 3, 2, 3, 2, 2, 1, 1, 1, 1]);
    let any = pick_key(rng, tree, |_| true);
    let Some(path) = any.filter(|_| op != 4) else {
        let path = gen_path(rng, tree);
        log.push(format!("create {}", show(&path)));
        let file = gen_file(rng);
        tree.insert(path, file);
        return;
    };
    match op {
        0 => {
            let Some(path) = pick_key(rng, tree, |f| !is_binary(&f.data) && !f.link) else {
                return;
            };
            log.push(format!("modify text {}", show(&path)));
            let file = tree.get_mut(&path).expect("picked from the tree");
            file.data = edit_text(rng, &file.data);
        }
        1 => {
            let mut file = tree.remove(&path).expect("picked from the tree");
            let to = gen_path(rng, tree);
            let edited = rng.chance(50) && !file.link;
            if edited {
                file.data = edit_content(rng, &file.data);
            }
            log.push(format!(
                "rename {} -> {} (edited: {edited})",
                show(&path),
                show(&to)
            ));
            tree.insert(to, file);
        }
        2 => {
            let mut file = tree[&path].clone();
            let to = gen_path(rng, tree);
            let edited = rng.chance(40) && !file.link;
            if edited {
                file.data = edit_content(rng, &file.data);
            }
            log.push(format!(
                "copy {} -> {} (edited: {edited})",
                show(&path),
                show(&to)
            ));
            tree.insert(to, file);
        }
        3 => {
            log.push(format!("delete {}", show(&path)));
            tree.remove(&path);
        }
        5 | 7 if tree[&path].link => {} // a link has no mode or content of a file's
        5 => {
            let file = tree.get_mut(&path).expect("picked from the tree");
            file.exec = !file.exec;
            let edited = rng.chance(40);
            if edited {
                file.data = edit_content(rng, &file.data);
            }
            log.push(format!("chmod {} (edited: {edited})", show(&path)));
        }
        6 => {
            let Some(path) = pick_key(rng, tree, |f| is_binary(&f.data) && !f.link) else {
                return;
            };
            log.push(format!("modify binary {}", show(&path)));
            let file = tree.get_mut(&path).expect("picked from the tree");
            file.data = edit_binary(rng, &file.data);
        }
        7 => {
            log.push(format!("retype {}", show(&path)));
            let file = tree.get_mut(&path).expect("picked from the tree");
            file.data = match rng.below(3) {
                0 => gen_text(rng),
                1 => gen_binary(rng),
                _ => Vec::new(),
            };
        }
        8 => {
            // A file becomes a directory of the same name. Not for a name
            // ending in a space: git cannot read back its own `diff --git
            // a/x /y b/x /y` header (its name splitter gives up at the
            // " /"), so a section without `---`/`+++` lines there (a new
            // empty or binary file) is unreadable to `git apply`.
            if path.ends_with(b" ") {
                return;
            }
            tree.remove(&path);
            let mut child = path.clone();
            child.push(b'/');
            child.extend_from_slice(rng.pick(STEMS).as_bytes());
            log.push(format!("file to dir {}", show(&child)));
            tree.insert(child, gen_file(rng));
        }
        9 => {
            // A directory becomes a file of the same name.
            let dirs = directories(tree);
            if dirs.is_empty() {
                return;
            }
            let dir = rng.pick(&dirs).clone();
            let mut prefix = dir.clone();
            prefix.push(b'/');
            tree.retain(|k, _| !k.starts_with(&prefix));
            log.push(format!("dir to file {}", show(&dir)));
            tree.insert(dir, gen_file(rng));
        }
        _ => {
            // Move a file away and put a new one in its place.
            // (The new name is chosen while the old one is still taken,
            // so it cannot be a directory the old name needs.)
            let to = gen_path(rng, tree);
            let file = tree.remove(&path).expect("picked from the tree");
            tree.insert(to.clone(), file);
            log.push(format!("swap {} -> {} + new", show(&path), show(&to)));
            tree.insert(path, gen_file(rng));
        }
    }
}

// ---------------------------------------------------------------------------
// Altering the target before applying (identically in A and B).

/// One or two alterations of the committed tree `old` aimed at what the
/// patch (`old` -> `new`) touches. Each is described in `log`.
fn alter(rng: &mut Rng, old: &Tree, new: &Tree, log: &mut Vec<String>) -> Tree {
    let mut target = old.clone();
    let keys = |keep: &dyn Fn(&[u8], &File) -> bool| -> Vec<Vec<u8>> {
        old.iter()
            .filter(|(k, f)| keep(k, f))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let changed = keys(&|k, f| new.get(k) != Some(f));
    let deleted = keys(&|k, _| !new.contains_key(k));
    let untouched = keys(&|k, f| new.get(k) == Some(f));
    let modified_text =
        keys(&|k, f| new.get(k).is_some_and(|n| n.data != f.data) && !is_binary(&f.data));
    let binaries = keys(&|k, f| new.get(k) != Some(f) && is_binary(&f.data));
    let created: Vec<Vec<u8>> = new
        .keys()
        .filter(|k| !old.contains_key(*k))
        .cloned()
        .collect();

    // Kinds whose pool is empty (or whose path an earlier alteration
    // removed) are skipped, so try until enough alterations were made.
    let wanted = rng.range(1, 2);
    let mut done = 0;
    for _ in 0..50 {
        if done == wanted {
            break;
        }
        let kind = rng.below(14);
        let pool = match kind {
            0..=4 | 13 => &modified_text,
            5 | 8 | 12 => &changed,
            6 | 7 => &created,
            9 => &binaries,
            10 => &deleted,
            _ => &untouched,
        };
        if pool.is_empty() {
            continue;
        }
        let path = rng.pick(pool).clone();
        let present = target.contains_key(&path);
        let what = match kind {
            0..=4 | 13 if present => {
                let file = target.get_mut(&path).expect("present");
                let mut text = Text::parse(&file.data);
                let what = match kind {
                    0 => {
                        // Shift everything: far from hunks, git finds
                        // them again at an offset.
                        let at = if rng.chance(50) { 0 } else { text.lines.len() };
                        for _ in 0..rng.range(1, 3) {
                            let line = text.new_line(rng);
                            text.lines.insert(at, line);
                        }
                        "shift lines (insert at start or end)"
                    }
                    1 => {
                        let at = rng.below(text.lines.len() + 1);
                        let line = text.new_line(rng);
                        text.lines.insert(at, line);
                        "insert a line"
                    }
                    13 if !text.lines.is_empty() => {
                        // Context that occurs twice: which copy a hunk
                        // lands on depends on the search order.
                        let from = rng.below(text.lines.len());
                        let to = (from + rng.range(1, 6)).min(text.lines.len());
                        let block = text.lines[from..to].to_vec();
                        let at = rng.below(text.lines.len() + 1);
                        text.lines.splice(at..at, block);
                        "duplicate a block of lines"
                    }
                    2 if !text.lines.is_empty() => {
                        let at = rng.below(text.lines.len());
                        text.lines[at] = text.new_line(rng);
                        "change a line"
                    }
                    3 if !text.lines.is_empty() => {
                        let at = rng.below(text.lines.len());
                        text.lines.remove(at);
                        "delete a line"
                    }
                    _ if rng.chance(50) => {
                        text.final_newline = !text.final_newline;
                        "toggle the final newline"
                    }
                    _ => {
                        text.toggle_crlf();
                        "toggle CRLF"
                    }
                };
                file.data = text.render();
                what
            }
            5 if present => {
                target.remove(&path);
                "delete a file the patch changes"
            }
            6 if path_free(&target, &path) => {
                let file = if rng.chance(50) {
                    new[&path].clone()
                } else {
                    gen_file(rng)
                };
                target.insert(path.clone(), file);
                "create a file the patch creates"
            }
            7 => {
                let mut child = path.clone();
                child.extend_from_slice(b"/inner");
                if !path_free(&target, &child) {
                    continue;
                }
                target.insert(child, gen_file(rng));
                "make a directory where the patch creates a file"
            }
            8 if present => {
                let file = target.get_mut(&path).expect("present");
                file.exec = !file.exec;
                "flip the exec bit of a file the patch changes"
            }
            9 if present => {
                let file = target.get_mut(&path).expect("present");
                let at = rng.below(file.data.len());
                file.data[at] ^= 0x20;
                "corrupt a binary pre-image"
            }
            10 if present => {
                let file = target.get_mut(&path).expect("present");
                file.data.extend_from_slice(b"extra\n");
                "append to a file the patch deletes"
            }
            11 if present => {
                let file = target.get_mut(&path).expect("present");
                if rng.chance(50) {
                    file.data = edit_content(rng, &file.data);
                    "edit a file the patch does not touch"
                } else {
                    file.exec = !file.exec;
                    "flip the exec bit of a file the patch does not touch"
                }
            }
            12 if present => {
                target.remove(&path);
                let mut child = path.clone();
                child.extend_from_slice(b"/inner");
                target.insert(child, gen_file(rng));
                "replace a file the patch changes with a directory"
            }
            _ => continue,
        };
        log.push(format!("{what}: {}", show(&path)));
        done += 1;
    }
    target
}

// ---------------------------------------------------------------------------
// The filesystem side.

fn fs_path(root: &Path, path: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(path))
}

fn write_file(root: &Path, path: &[u8], file: &File) -> Result<(), String> {
    let full = fs_path(root, path);
    let parent = full.parent().expect("a file path has a parent");
    fs::create_dir_all(parent).map_err(|e| format!("mkdir {}: {e}", parent.display()))?;
    // Never write through a link, nor keep a file where a link goes.
    if fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
        fs::remove_file(&full).map_err(|e| format!("rm {}: {e}", full.display()))?;
    }
    if file.link {
        return std::os::unix::fs::symlink(OsStr::from_bytes(&file.data), &full)
            .map_err(|e| format!("symlink {}: {e}", full.display()));
    }
    fs::write(&full, &file.data).map_err(|e| format!("write {}: {e}", full.display()))?;
    let mode = if file.exec { 0o755 } else { 0o644 };
    fs::set_permissions(&full, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", full.display()))
}

/// Create `root` holding exactly `tree`.
pub(super) fn write_tree(root: &Path, tree: &Tree) -> Result<(), String> {
    fs::create_dir_all(root).map_err(|e| format!("mkdir {}: {e}", root.display()))?;
    tree.iter()
        .try_for_each(|(path, file)| write_file(root, path, file))
}

/// Turn the checkout of `from` at `root` into a checkout of `to`.
pub(super) fn transition(root: &Path, from: &Tree, to: &Tree) -> Result<(), String> {
    for path in from.keys().filter(|k| !to.contains_key(*k)) {
        let full = fs_path(root, path);
        fs::remove_file(&full).map_err(|e| format!("rm {}: {e}", full.display()))?;
        // Prune directories left empty, so a file can take their name.
        let mut dir = full.parent();
        while let Some(d) = dir.filter(|d| *d != root) {
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    to.iter()
        .filter(|(path, file)| from.get(*path) != Some(file))
        .try_for_each(|(path, file)| write_file(root, path, file))
}

/// The regular files under `root` (recursively), with their bytes and exec
/// bit, and the symbolic links with their targets (never followed).
/// Directories and anything else are not recorded.
pub(super) fn snapshot(root: &Path) -> Result<Tree, String> {
    fn walk(root: &Path, dir: &Path, tree: &mut Tree) -> Result<(), String> {
        let entries = fs::read_dir(dir).map_err(|e| format!("readdir {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("readdir {}: {e}", dir.display()))?;
            let path = entry.path();
            let meta =
                fs::symlink_metadata(&path).map_err(|e| format!("stat {}: {e}", path.display()))?;
            if meta.is_dir() {
                walk(root, &path, tree)?;
            } else if meta.is_file() {
                let data = fs::read(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
                let rel = path.strip_prefix(root).expect("under the root");
                tree.insert(
                    rel.as_os_str().as_bytes().to_vec(),
                    File {
                        data,
                        exec: meta.permissions().mode() & 0o111 != 0,
                        link: false,
                    },
                );
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path)
                    .map_err(|e| format!("readlink {}: {e}", path.display()))?;
                let rel = path.strip_prefix(root).expect("under the root");
                tree.insert(
                    rel.as_os_str().as_bytes().to_vec(),
                    File::link(target.into_os_string().into_vec()),
                );
            }
        }
        Ok(())
    }
    let mut tree = Tree::new();
    if root.exists() {
        walk(root, root, &mut tree)?;
    }
    Ok(tree)
}

/// A readable account of how two trees differ.
pub(super) fn tree_diff(left_name: &str, left: &Tree, right_name: &str, right: &Tree) -> String {
    let mut out = String::new();
    for (path, file) in left {
        match right.get(path) {
            None => {
                let _ = writeln!(out, "  only in {left_name}: {}", show(path));
            }
            Some(other) if other != file => {
                let _ = writeln!(
                    out,
                    "  differs: {} (exec {} vs {}, link {} vs {})\n    {left_name}: {}\n    {right_name}: {}",
                    show(path),
                    file.exec,
                    other.exec,
                    file.link,
                    other.link,
                    preview(&file.data),
                    preview(&other.data)
                );
            }
            Some(_) => {}
        }
    }
    for path in right.keys().filter(|k| !left.contains_key(*k)) {
        let _ = writeln!(out, "  only in {right_name}: {}", show(path));
    }
    out
}

fn preview(data: &[u8]) -> String {
    const MAX: usize = 600;
    let shown = String::from_utf8_lossy(&data[..data.len().min(MAX)]);
    let more = if data.len() > MAX { "…" } else { "" };
    format!("{} bytes {:?}{more}", data.len(), shown)
}

// ---------------------------------------------------------------------------
// Running git and roundtable.

/// Scratch space for a test run: a tmpfs directory when there is one (file
/// churn on the disk is slow), and a fake HOME so no user config leaks in.
pub(super) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("rt-diff-")
            .tempdir_in(base)
            .expect("create the scratch directory");
        fs::create_dir(dir.path().join("home")).expect("create the fake HOME");
        Scratch { dir }
    }

    pub(super) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A fresh empty directory for one trial.
    pub(super) fn trial_dir(&self) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("trial-")
            .tempdir_in(self.root())
            .expect("create a trial directory")
    }

    /// `git` with a hermetic environment, run in `dir`.
    pub(super) fn git(&self, dir: &Path) -> Command {
        let home = self.root().join("home");
        let mut cmd = Command::new("git");
        cmd.current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            // Never discover a repository above the scratch directory.
            .env("GIT_CEILING_DIRECTORIES", self.root())
            .env("GIT_AUTHOR_NAME", "x")
            .env("GIT_AUTHOR_EMAIL", "x@y")
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "x")
            .env("GIT_COMMITTER_EMAIL", "x@y")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z")
            .env("LC_ALL", "C");
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_CONFIG",
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }
}

pub(super) fn roundtable() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roundtable"))
}

pub(super) fn run(cmd: &mut Command) -> Result<Output, String> {
    cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))
}

/// Run `cmd`, failing unless it exits 0; returns its stdout.
pub(super) fn run_ok(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = run(cmd)?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

pub(super) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn describe(name: &str, out: &Output) -> String {
    format!(
        "{name}: {}\n  stdout: {}\n  stderr: {}",
        out.status,
        lossy(&out.stdout).trim_end(),
        lossy(&out.stderr).trim_end()
    )
}

// ---------------------------------------------------------------------------
// The comparison.

/// What happened when both tools applied the patch.
pub(super) struct Applied {
    /// git's outcome and the tree it left.
    pub(super) git: Output,
    pub(super) after: Tree,
    /// roundtable's error code when it refused.
    pub(super) refusal: Option<String>,
    /// Whether a directory stood in the way (git was not the oracle).
    in_the_way: bool,
}

/// Apply `patch_file` with `git apply` to a copy of `target` and with
/// `roundtable patch apply` to another, and check that they agree.
fn differential(
    scratch: &Scratch,
    work: &Path,
    patch_file: &Path,
    target: &Tree,
) -> Result<Applied, String> {
    differential_with(scratch, work, patch_file, target, 1, true, &[])
}

/// [`differential`] at strip level `strip` (`-p`). With `exact`, the patch
/// is a `git diff` whose sections must render back byte for byte; other
/// patches (mail, `diff -ruN`, svn, hg, hand-written) are only applied,
/// and git stays the oracle.
pub(super) fn differential_with(
    scratch: &Scratch,
    work: &Path,
    patch_file: &Path,
    target: &Tree,
    strip: usize,
    exact: bool,
    git_options: &[&str],
) -> Result<Applied, String> {
    let patch = fs::read(patch_file).map_err(|e| format!("read {}: {e}", patch_file.display()))?;
    let in_the_way = if exact {
        // Every diff git writes renders back byte for byte.
        let parsed = roundtable::diff::parse(&patch, &roundtable::diff::ParseOptions::default())
            .map_err(|e| format!("roundtable cannot parse git's patch: {e}"))?;
        if parsed.render() != patch {
            return Err(format!(
                "parse then render is not byte-identical for git's patch\n{}",
                lossy(&patch)
            ));
        }
        let paths = sections(&patch)
            .into_iter()
            .map(|s| {
                section_paths(s)
                    .ok_or_else(|| format!("harness: cannot read the headers of\n{}", lossy(s)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        directory_in_the_way(target, &paths)
    } else {
        false
    };
    let p = format!("-p{strip}");

    let a = work.join("A");
    let b = work.join("B");
    write_tree(&a, target)?;
    write_tree(&b, target)?;
    let before = snapshot(&a)?;
    if before != *target || snapshot(&b)? != *target {
        return Err(
            "harness: the target did not survive a round trip through the filesystem".into(),
        );
    }

    let git = run(scratch
        .git(&a)
        .args(["apply", "--binary", &p])
        .args(git_options)
        .arg(patch_file))?;
    let check = run(roundtable()
        .args(["patch", "apply", "--check", &p, "--root"])
        .arg(&b)
        .arg(patch_file))?;
    let after_check = snapshot(&b)?;
    if after_check != before {
        return Err(format!(
            "`roundtable patch apply --check` changed the tree\n{}\n{}",
            describe("roundtable --check", &check),
            tree_diff("before", &before, "after --check", &after_check)
        ));
    }
    let rt = run(roundtable()
        .args(["patch", "apply", &p, "--root"])
        .arg(&b)
        .arg(patch_file))?;
    let after_a = snapshot(&a)?;
    let after_b = snapshot(&b)?;
    let both = format!(
        "{}\n{}",
        describe("git apply", &git),
        describe("roundtable", &rt)
    );

    // A refusal is exit code 1, a documented JSON error, and no change.
    let refused_cleanly = || -> Result<String, String> {
        let code = error_code(&rt.stdout).map_err(|e| format!("{e}\n{both}"))?;
        if after_b != before {
            return Err(format!(
                "roundtable refused but changed the tree\n{both}\n{}",
                tree_diff("before", &before, "roundtable", &after_b)
            ));
        }
        Ok(code)
    };
    let refusal = if in_the_way {
        // git is no oracle here (see `directory_in_the_way`): roundtable
        // must refuse whatever git did.
        if rt.status.code() != Some(1) {
            return Err(format!(
                "a directory stands where the patch needs a file, yet roundtable did not refuse\n{both}"
            ));
        }
        Some(refused_cleanly()?)
    } else {
        match (git.status.success(), rt.status.code()) {
            (true, Some(0)) => {
                if after_a != after_b {
                    return Err(format!(
                        "both applied, but the trees differ\n{both}\n{}",
                        tree_diff("git", &after_a, "roundtable", &after_b)
                    ));
                }
                None
            }
            (false, Some(1)) => {
                if after_a != before {
                    return Err(format!(
                        "harness: git refused but changed its tree\n{both}\n{}",
                        tree_diff("before", &before, "git", &after_a)
                    ));
                }
                Some(refused_cleanly()?)
            }
            (true, Some(1))
                if lossy(&rt.stdout).contains(NO_NEWLINE_DEVIATION)
                    || lossy(&rt.stdout).contains(LEFT_OUT_DEVIATION)
                    || lossy(&rt.stdout).contains(LINK_ESCAPE_DEVIATION) =>
            {
                // The documented deviation: git corrupts, roundtable refuses.
                Some(refused_cleanly()?)
            }
            (true, _) => return Err(format!("git applied, roundtable did not\n{both}")),
            (false, Some(0)) => {
                return Err(format!(
                    "git refused, roundtable applied\n{both}\n{}",
                    tree_diff("before", &before, "roundtable", &after_b)
                ))
            }
            (false, _) => return Err(format!("git refused, roundtable exited oddly\n{both}")),
        }
    };
    // Checked last: when the real apply disagrees with git, that is the
    // more useful report.
    if check.status.code() != rt.status.code() {
        return Err(format!(
            "`--check` predicted a different outcome than the apply\n{}\n{both}",
            describe("roundtable --check", &check)
        ));
    }
    Ok(Applied {
        git,
        after: after_a,
        refusal,
        in_the_way,
    })
}

/// Whether, once the patch's deletions and renames have cleared their
/// paths, a directory of `target` still stands where the patch reads or
/// writes a file. git has no sensible behaviour there: its checks let a
/// directory pass for a file to create (it then dies half-way through
/// writing, exit 128, leaving a partial tree), and a pure rename or copy
/// of a directory "succeeds" by making an empty directory. roundtable must
/// refuse such a patch and leave the tree alone.
fn directory_in_the_way(target: &Tree, sections: &[SectionPaths]) -> bool {
    let mut files: Vec<&[u8]> = target.keys().map(Vec::as_slice).collect();
    let is_dir = |files: &[&[u8]], path: &[u8]| {
        files
            .iter()
            .any(|f| f.len() > path.len() && f.starts_with(path) && f[path.len()] == b'/')
    };
    if sections
        .iter()
        .any(|s| s.status != "added" && is_dir(&files, &s.old))
    {
        return true;
    }
    for s in sections
        .iter()
        .filter(|s| matches!(s.status, "deleted" | "renamed"))
    {
        files.retain(|f| *f != s.old.as_slice());
    }
    sections
        .iter()
        .any(|s| s.status != "deleted" && is_dir(&files, &s.new))
}

/// The code of roundtable's `{"error":{"code","message","details"}}`.
pub(super) fn error_code(stdout: &[u8]) -> Result<String, String> {
    let json: serde_json::Value = serde_json::from_slice(stdout)
        .map_err(|e| format!("roundtable's refusal is not JSON: {e}"))?;
    let error = json
        .get("error")
        .filter(|_| json.as_object().is_some_and(|o| o.len() == 1))
        .ok_or("roundtable's refusal is not a lone {\"error\": …} object")?;
    let code = error
        .get("code")
        .and_then(|c| c.as_str())
        .ok_or("roundtable's error has no string \"code\"")?;
    if !DOCUMENTED_CODES.contains(&code) {
        return Err(format!(
            "roundtable's error code {code:?} is not documented"
        ));
    }
    if !error.get("message").is_some_and(|m| m.is_string()) {
        return Err("roundtable's error has no string \"message\"".into());
    }
    if error.get("details").is_none() {
        return Err("roundtable's error has no \"details\"".into());
    }
    Ok(code.to_string())
}

/// `git diff --name-status -z` output: one entry per section, in patch
/// order, with raw paths.
fn parse_name_status(raw: &[u8]) -> Vec<SectionPaths> {
    let mut fields = raw.split(|&b| b == 0).filter(|f| !f.is_empty());
    let mut entries = Vec::new();
    while let Some(letter) = fields.next() {
        let old = fields.next().unwrap_or_default().to_vec();
        let (status, new) = match letter[0] {
            b'R' => ("renamed", fields.next().unwrap_or_default().to_vec()),
            b'C' => ("copied", fields.next().unwrap_or_default().to_vec()),
            b'A' => ("added", old.clone()),
            b'D' => ("deleted", old.clone()),
            _ => ("modified", old.clone()),
        };
        entries.push(SectionPaths { status, old, new });
    }
    entries
}

/// The patch split at its `diff --git` lines (content lines always carry
/// a one-character prefix, and base85 lines have no spaces, so a section
/// header cannot be confused with content).
fn sections(patch: &[u8]) -> Vec<&[u8]> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in patch.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    starts.push(patch.len());
    starts.windows(2).map(|w| &patch[w[0]..w[1]]).collect()
}

/// `@@ -a[,b] +c[,d] @@` as `[a, b, c, d]`.
fn hunk_header(line: &[u8]) -> Option<[u64; 4]> {
    let text = std::str::from_utf8(line).ok()?;
    let mut ranges = text.strip_prefix("@@ -")?.split(' ');
    let old = ranges.next()?;
    let new = ranges.next()?.strip_prefix('+')?;
    let pair = |r: &str| -> Option<(u64, u64)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = pair(old)?;
    let (c, d) = pair(new)?;
    Some([a, b, c, d])
}

/// What one section does, read from its git headers: the status and the
/// unquoted, prefix-stripped old and new paths.
#[derive(Debug, PartialEq, Eq)]
struct SectionPaths {
    status: &'static str,
    old: Vec<u8>,
    new: Vec<u8>,
}

/// The C-quoted name at the start of `s` (which starts with `"`),
/// unquoted, and what follows it.
fn unquote(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        match *s.get(i)? {
            b'"' => return Some((out, &s[i + 1..])),
            b'\\' => {
                let c = *s.get(i + 1)?;
                i += 2;
                out.push(match c {
                    b'a' => 7,
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 11,
                    b'f' => 12,
                    b'r' => b'\r',
                    b'0'..=b'3' => {
                        let d = s.get(i..i + 2)?;
                        i += 2;
                        (c - b'0') * 64 + (d[0] - b'0') * 8 + (d[1] - b'0')
                    }
                    other => other,
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// A name as written after `rename from `, `--- ` and the like: C-quoted,
/// or raw (git appends a tab to a raw `---`/`+++` name holding a space).
fn header_name(s: &[u8]) -> Option<Vec<u8>> {
    if s.starts_with(b"\"") {
        unquote(s).map(|(name, _)| name)
    } else {
        Some(s.strip_suffix(b"\t").unwrap_or(s).to_vec())
    }
}

fn section_paths(section: &[u8]) -> Option<SectionPaths> {
    let mut lines = section.split(|&b| b == b'\n');
    let names = lines.next()?.strip_prefix(b"diff --git ")?;
    let (mut status, mut old, mut new) = ("modified", None, None);
    for line in lines {
        if line.starts_with(b"@@ ") || line == b"GIT binary patch" {
            break;
        }
        let value = |prefix: &[u8]| line.strip_prefix(prefix).and_then(header_name);
        if let Some(path) = value(b"rename from ") {
            (status, old) = ("renamed", Some(path));
        } else if let Some(path) = value(b"copy from ") {
            (status, old) = ("copied", Some(path));
        } else if let Some(path) = value(b"rename to ").or_else(|| value(b"copy to ")) {
            new = Some(path);
        } else if line.starts_with(b"new file mode ") {
            status = "added";
        } else if line.starts_with(b"deleted file mode ") {
            status = "deleted";
        } else if let Some(path) = value(b"--- ").filter(|p| p != b"/dev/null") {
            old = Some(path.strip_prefix(b"a/")?.to_vec());
        } else if let Some(path) = value(b"+++ ").filter(|p| p != b"/dev/null") {
            new = Some(path.strip_prefix(b"b/")?.to_vec());
        }
    }
    if old.is_none() || new.is_none() {
        // Neither renamed nor copied, and no `---`/`+++` lines (a mode
        // change, an empty file, a binary patch): both names in the
        // `diff --git` line are the same.
        let name = if names.starts_with(b"\"") {
            unquote(names)?.0
        } else {
            names[..names.len().checked_sub(1)? / 2].to_vec()
        };
        let name = name.strip_prefix(b"a/")?.to_vec();
        old.get_or_insert_with(|| name.clone());
        new.get_or_insert(name);
    }
    Some(SectionPaths {
        status,
        old: old?,
        new: new?,
    })
}

/// Check `roundtable patch parse` against git's own view of the patch:
/// the sections, `git diff --name-status -z` (status and raw paths, in
/// patch order) and `git apply --numstat` (line counts).
fn check_parse(
    patch_file: &Path,
    patch: &[u8],
    name_status: &[SectionPaths],
    numstat: &str,
) -> Result<(), String> {
    let out = run(roundtable().args(["patch", "parse"]).arg(patch_file))?;
    if !out.status.success() {
        return Err(describe("`roundtable patch parse` failed", &out));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("`patch parse` output is not JSON: {e}"))?;
    let files = json
        .get("files")
        .and_then(|f| f.as_array())
        .ok_or("`patch parse` output has no \"files\" array")?;
    let sections = sections(patch);
    if files.len() != sections.len() {
        return Err(format!(
            "`patch parse` reports {} files for {} `diff --git` sections",
            files.len(),
            sections.len()
        ));
    }
    if name_status.len() != sections.len() {
        return Err("harness: --name-status and the patch disagree".into());
    }
    let numstat: Vec<&str> = numstat.lines().collect();
    for (i, ((file, section), ns)) in files.iter().zip(&sections).zip(name_status).enumerate() {
        let fail = |what: String| format!("`patch parse` file #{i}: {what}\n{file}");
        let field = |name: &str| file.get(name).ok_or_else(|| fail(format!("no {name:?}")));
        // The test's own header reader (used for `directory_in_the_way`)
        // must agree with git too.
        if section_paths(section).as_ref() != Some(ns) {
            return Err(format!(
                "harness: the header reader says {:?}, git says {ns:?}",
                section_paths(section)
            ));
        }
        let status = ns.status;
        if field("status")?.as_str() != Some(status) {
            return Err(fail(format!("status should be {status:?}")));
        }
        let path_is = |name: &str, want: &[u8]| -> Result<(), String> {
            let got = field(name)?.as_str().map(str::as_bytes);
            if got == Some(want) {
                Ok(())
            } else {
                Err(fail(format!("{name} should be {}", show(want))))
            }
        };
        if status != "added" {
            path_is("old_path", &ns.old)?;
        }
        if status != "deleted" {
            path_is("new_path", &ns.new)?;
        }
        let binary = section
            .split(|&b| b == b'\n')
            .any(|l| l == b"GIT binary patch");
        if field("binary")?.as_bool() != Some(binary) {
            return Err(fail(format!("binary should be {binary}")));
        }
        if binary {
            continue;
        }
        let want_hunks: Vec<[u64; 4]> = section
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"@@ -"))
            .map(|l| hunk_header(l).ok_or_else(|| fail(format!("bad hunk header {}", show(l)))))
            .collect::<Result<_, _>>()?;
        let got_hunks: Vec<[u64; 4]> = field("hunks")?
            .as_array()
            .ok_or_else(|| fail("hunks is not an array".into()))?
            .iter()
            .map(|h| {
                let num = |k: &str| h.get(k).and_then(|v| v.as_u64());
                Some([
                    num("old_start")?,
                    num("old_lines")?,
                    num("new_start")?,
                    num("new_lines")?,
                ])
            })
            .collect::<Option<_>>()
            .ok_or_else(|| fail("a hunk lacks a numeric range field".into()))?;
        if got_hunks != want_hunks {
            return Err(fail(format!("hunks should be {want_hunks:?}")));
        }
        let mut counts = numstat.get(i).map(|l| l.split('\t')).into_iter().flatten();
        let want_added = counts.next().and_then(|n| n.parse::<u64>().ok());
        let want_removed = counts.next().and_then(|n| n.parse::<u64>().ok());
        let got_added = field("added_lines")?.as_u64();
        let got_removed = field("removed_lines")?.as_u64();
        if (got_added, got_removed) != (want_added, want_removed) {
            return Err(fail(format!(
                "added/removed lines should be {want_added:?}/{want_removed:?} (git apply --numstat)"
            )));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// One trial.

#[derive(Default)]
struct Stats {
    trials: usize,
    in_the_way: usize,
    altered: usize,
    applied: usize,
    refused: BTreeMap<String, usize>,
}

/// A trial as far as it got: what the failure report shows and saves.
#[derive(Default)]
struct Case {
    /// The random edits and alterations, described.
    log: Vec<String>,
    patch: Vec<u8>,
    /// The tree the patch is applied to.
    target: Tree,
}

fn harness(e: String) -> String {
    format!("harness: {e}")
}

/// Run the trial with this seed; on failure, the report (reason, edits
/// and alterations) and the case.
fn run_trial(scratch: &Scratch, seed: u64, stats: &mut Stats) -> Result<(), (String, Case)> {
    let work = scratch.trial_dir();
    let mut case = Case::default();
    trial(scratch, work.path(), &mut Rng::new(seed), stats, &mut case).map_err(|reason| {
        let mut report = format!("{reason}\nedits and alterations:\n");
        for line in &case.log {
            let _ = writeln!(report, "  {line}");
        }
        (report, case)
    })
}

fn trial(
    scratch: &Scratch,
    work: &Path,
    rng: &mut Rng,
    stats: &mut Stats,
    case: &mut Case,
) -> Result<(), String> {
    // The committed tree, then the edited and staged one.
    let old = gen_tree(rng);
    let repo = work.join("repo");
    write_tree(&repo, &old).map_err(harness)?;
    let git = |args: &[&str]| run_ok(scratch.git(&repo).args(args)).map_err(harness);
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-q", "--allow-empty", "-m", "base"])?;
    let new = mutate(rng, &old, &mut case.log);
    transition(&repo, &old, &new).map_err(harness)?;
    git(&["add", "-A"])?;
    let diff = [
        "-c",
        "core.quotepath=true",
        "diff",
        "--cached",
        "--binary",
        "-M",
        "-C",
        "-C",
    ];
    case.patch = git(&[&diff[..], &["HEAD"]].concat())?;
    let name_status = git(&[&diff[..], &["--name-status", "-z", "HEAD"]].concat())?;
    let patch_file = work.join("patch.diff");
    fs::write(&patch_file, &case.patch).map_err(|e| harness(e.to_string()))?;
    if case.patch.is_empty() {
        return Err(harness("git produced an empty patch".into()));
    }

    // The target: the committed tree, altered in about half of the trials,
    // and now and then the edited tree (the patch is already applied).
    case.target = match rng.weighted(&[50, 45, 5]) {
        0 => old.clone(),
        1 => alter(rng, &old, &new, &mut case.log),
        _ => {
            case.log.push("target: the patch is already applied".into());
            new.clone()
        }
    };
    let applied = differential(scratch, work, &patch_file, &case.target)?;
    if case.target == old {
        // Untouched target: git must reproduce the edited tree exactly,
        // which also checks the harness.
        if applied.refusal.is_some() || applied.after != new {
            return Err(harness(format!(
                "git did not reproduce the edited tree\n{}\n{}",
                describe("git apply", &applied.git),
                tree_diff("git", &applied.after, "edited", &new)
            )));
        }
    } else {
        stats.altered += 1;
    }

    let numstat = run_ok(
        scratch
            .git(work)
            .args(["apply", "--numstat"])
            .arg(&patch_file),
    )
    .map_err(harness)?;
    check_parse(
        &patch_file,
        &case.patch,
        &parse_name_status(&name_status),
        &lossy(&numstat),
    )?;

    stats.trials += 1;
    stats.in_the_way += usize::from(applied.in_the_way);
    match applied.refusal {
        None => stats.applied += 1,
        Some(code) => *stats.refused.entry(code).or_default() += 1,
    }
    Ok(())
}

/// Save a failing case in the `tests/differential-cases` layout.
fn save_case(dir: &Path, report: &str, case: &Case) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    fs::write(dir.join("patch.diff"), &case.patch).map_err(|e| e.to_string())?;
    write_tree(&dir.join("before"), &case.target)?;
    fs::write(dir.join("expect.txt"), report).map_err(|e| e.to_string())
}

pub(super) fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={value:?} is not a number")))
}

#[test]
fn roundtable_apply_agrees_with_git_apply() {
    let seed = env_number("RT_DIFF_SEED").unwrap_or(DEFAULT_SEED);
    let trials = env_number("RT_DIFF_TRIALS").map_or(DEFAULT_TRIALS, |n| n as usize);
    let only = env_number("RT_DIFF_ONLY").map(|n| n as usize);
    let keep = std::env::var_os("RT_DIFF_KEEP").map(PathBuf::from);
    let scratch = Scratch::new();
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut failures = Vec::new();

    let range = match only {
        Some(trial) => trial..trial + 1,
        None => 0..trials,
    };
    for trial in range {
        let trial_seed = seed ^ (trial as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
        if let Err((reason, case)) = run_trial(&scratch, trial_seed, &mut stats) {
            let repro = format!(
                "RT_DIFF_SEED={seed:#x} RT_DIFF_ONLY={trial} \
                 cargo test -p roundtable-cli --test differential"
            );
            let mut report = format!(
                "trial {trial} (seed {seed:#x}) failed; reproduce with\n  {repro}\n{reason}"
            );
            if let Some(keep) = &keep {
                let dir = keep.join(format!("{seed:x}-{trial}"));
                match save_case(&dir, &reason, &case) {
                    Ok(()) => {
                        let _ = writeln!(report, "saved in {}", dir.display());
                    }
                    Err(e) => {
                        let _ = writeln!(report, "could not save the case: {e}");
                    }
                }
            }
            let _ = write!(report, "patch:\n{}", preview_patch(&case.patch));
            eprintln!("{report}\n");
            failures.push(report);
        }
    }

    eprintln!(
        "differential: {} trials passed ({} altered, {} with a directory in the way; \
         {} applied, refused {:?}), {} failed, in {:.1?}",
        stats.trials,
        stats.altered,
        stats.in_the_way,
        stats.applied,
        stats.refused,
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of the trials disagreed with git apply (seed {seed:#x}); first:\n{}",
        failures.len(),
        failures[0]
    );
}

pub(super) fn preview_patch(patch: &[u8]) -> String {
    const MAX: usize = 6000;
    let text = String::from_utf8_lossy(&patch[..patch.len().min(MAX)]).into_owned();
    if patch.len() > MAX {
        text + "\n[… truncated]"
    } else {
        text
    }
}

/// Replay every case saved under `tests/differential-cases/<name>/`
/// (`patch.diff` applied to `before/`) against git.
#[test]
fn saved_cases_agree_with_git_apply() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential-cases");
    let entries = fs::read_dir(&cases).expect("tests/differential-cases exists");
    let mut dirs: Vec<PathBuf> = entries
        .map(|e| e.expect("read the cases directory").path())
        .filter(|p| p.join("patch.diff").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no saved cases under {}", cases.display());
    let scratch = Scratch::new();
    let mut failures = Vec::new();
    for dir in &dirs {
        let target = snapshot(&dir.join("before")).expect("read before/");
        let work = scratch.trial_dir();
        if let Err(e) = differential(&scratch, work.path(), &dir.join("patch.diff"), &target) {
            failures.push(format!("{}: {e}", dir.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "saved cases disagree with git apply:\n{}",
        failures.join("\n\n")
    );
}
