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
//! The shell half works on a [`git2::Repository`] (libgit2, in process:
//! no `git` binary on the landing path). [`build_commit`] writes the blobs,
//! the trees that change (`git_tree_create_updated`: the work is the
//! change's paths times their depth, not the repository's size) and the
//! commit object, and moves no ref: an object nothing references is inert
//! (`git gc` prunes it). [`move_branch`] is the commit point.

use crate::changeset::Changeset;
use crate::ErrorCode;
use git2::{FileMode, Oid, Repository};
use std::path::Path;

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
    /// A trailer or identity the caller gave cannot be written as given.
    #[error("{field}: {reason}")]
    InvalidInput {
        /// Which value.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// libgit2 refused or failed.
    #[error("git: {what}: {source}")]
    Git {
        /// What was being done.
        what: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
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
            LandingError::BranchMoved { .. } | LandingError::RemoteRejected(_) => {
                ErrorCode::PreconditionFailed
            }
            LandingError::InvalidInput { .. } => ErrorCode::InvalidArgument,
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

fn git(what: &'static str) -> impl FnOnce(git2::Error) -> LandingError {
    move |source| LandingError::Git { what, source }
}

/// The repository whose working tree (or git directory) is `root`.
pub fn open(root: &Path) -> Result<Repository, LandingError> {
    Repository::open(root).map_err(git("open the repository"))
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

impl Identity {
    fn signature(&self, field: &'static str) -> Result<git2::Signature<'static>, LandingError> {
        let bad = |s: &str| s.trim().is_empty() || s.contains(['<', '>', '\n']);
        if bad(&self.name) || bad(&self.email) {
            return Err(LandingError::InvalidInput {
                field,
                reason: "a name and an email, each one line without '<' or '>'".into(),
            });
        }
        git2::Signature::new(
            &self.name,
            &self.email,
            &git2::Time::new(self.seconds, self.offset_minutes),
        )
        .map_err(git("make a signature"))
    }
}

/// What [`build_commit`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The new commit's id.
    pub id: Oid,
    /// Its tree's id.
    pub tree: Oid,
}

/// Write the commit whose tree is `base`'s tree with `changeset` applied
/// (each resulting file a blob of its bytes, mode `100644`, `100755` or
/// `120000` for a link; each removed path gone), `base` its only parent.
/// Moves no ref.
pub fn build_commit(
    repo: &Repository,
    base: Oid,
    changeset: &Changeset,
    message: &str,
    author: &Identity,
    committer: &Identity,
) -> Result<Commit, LandingError> {
    let parent = repo
        .find_commit(base)
        .map_err(git("find the base commit"))?;
    let base_tree = parent.tree().map_err(git("read the base tree"))?;
    // Removals in a pass of their own, before any new entry: a path that
    // stops being a file and becomes a directory (or the reverse) cannot be
    // removed and re-added in one update (libgit2 refuses it as a
    // directory/file conflict).
    let mut removals = git2::build::TreeUpdateBuilder::new();
    let mut removed = false;
    for file in changeset.files().iter().filter(|f| f.after.is_none()) {
        removals.remove(file.path.as_str());
        removed = true;
    }
    let mid = if removed {
        let id = removals
            .create_updated(repo, &base_tree)
            .map_err(git("write the trees"))?;
        repo.find_tree(id).map_err(git("read a tree"))?
    } else {
        base_tree
    };
    let mut upserts = git2::build::TreeUpdateBuilder::new();
    for file in changeset.files() {
        let Some(after) = &file.after else { continue };
        let blob = repo.blob(&after.data).map_err(git("write a blob"))?;
        let mode = if after.symlink {
            FileMode::Link
        } else if after.executable {
            FileMode::BlobExecutable
        } else {
            FileMode::Blob
        };
        upserts.upsert(file.path.as_str(), blob, mode);
    }
    let tree_id = upserts
        .create_updated(repo, &mid)
        .map_err(git("write the trees"))?;
    let tree = repo.find_tree(tree_id).map_err(git("read the new tree"))?;
    let id = repo
        .commit(
            None,
            &author.signature("author")?,
            &committer.signature("committer")?,
            message,
            &tree,
            &[&parent],
        )
        .map_err(git("write the commit"))?;
    Ok(Commit { id, tree: tree_id })
}

/// How long a ref update waits for another writer's lock on the ref (git's
/// own `core.filesRefLockTimeout` default is 100 ms): several hosts push
/// to one remote.
const REF_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Move `branch` (a full ref name, `refs/heads/main`) from `expected` to
/// `new`, atomically: refused with [`LandingError::BranchMoved`] (naming
/// what it holds) when it is not at `expected`, and then nothing changed.
/// While another writer holds the ref's lock, it waits (up to two
/// seconds) for it.
pub fn move_branch(
    repo: &Repository,
    branch: &str,
    expected: Oid,
    new: Oid,
    reflog: &str,
) -> Result<(), LandingError> {
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    let mut moved = repo.reference_matching(branch, new, true, expected, reflog);
    while matches!(&moved, Err(e) if e.code() == git2::ErrorCode::Locked)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
        moved = repo.reference_matching(branch, new, true, expected, reflog);
    }
    match moved {
        Ok(_) => Ok(()),
        Err(e)
            if e.code() == git2::ErrorCode::Modified || e.code() == git2::ErrorCode::NotFound =>
        {
            let actual = repo.refname_to_id(branch).ok().map(|id| id.to_string());
            Err(LandingError::BranchMoved {
                remote: None,
                branch: branch.to_owned(),
                expected: expected.to_string(),
                actual,
            })
        }
        Err(e) => Err(git("move the branch")(e)),
    }
}

/// The repository `remote` names, to push a branch to and fetch it from:
/// a remote configured in `repo` (its URL) or a path, either of which
/// must be a bare repository on this machine's file system (`file://`
/// URLs included) — libgit2 is built here without network transports.
/// Returns it with its location as the details name it.
pub fn open_remote(repo: &Repository, remote: &str) -> Result<(Repository, String), LandingError> {
    let url = match repo.find_remote(remote) {
        Ok(r) => r
            .url()
            .map(str::to_owned)
            .map_err(|_| LandingError::InvalidInput {
                field: "remote",
                reason: format!("remote {remote:?} has no URL that is valid UTF-8"),
            })?,
        Err(_) => remote.to_owned(),
    };
    let path = url.strip_prefix("file://").unwrap_or(&url);
    if path.contains("://") || (path.contains(':') && !path.starts_with('/')) {
        return Err(LandingError::InvalidInput {
            field: "remote",
            reason: format!("{url} is not a path on this machine (only local bare repositories are supported as remotes)"),
        });
    }
    let base = repo.workdir().unwrap_or_else(|| repo.path());
    let at = base.join(path);
    let remote_repo = Repository::open_bare(&at).map_err(|e| LandingError::InvalidInput {
        field: "remote",
        reason: format!("{url} is not a bare repository: {}", e.message()),
    })?;
    Ok((remote_repo, url))
}

/// Transfers of fewer objects than this are written as loose objects, as
/// git's own fetch and receive write them (`fetch.unpackLimit`,
/// `receive.unpackLimit`: 100). A pack per landing would pile up in a
/// host's clone until git's automatic gc (`gc.autoPackLimit`: 50 packs)
/// starts in the background of the host's next git command, packing refs
/// under the feet of its fetches and of the next landing.
const UNPACK_LIMIT: usize = 100;

/// Copy into `to` every object reachable from `tip` in `from` that is not
/// reachable from `known` (ids `to` already has): what a push or fetch
/// transfers. A small transfer is written as loose objects, each only once
/// everything it refers to is there; a larger one as one pack. Either way
/// an object `to` has always comes with everything it refers to, which is
/// what lets an object already there end the walk.
pub fn copy_objects(
    from: &Repository,
    to: &Repository,
    tip: Oid,
    known: &[Oid],
) -> Result<(), LandingError> {
    let to_odb = to.odb().map_err(git("open the object store"))?;
    if to_odb.exists(tip) {
        return Ok(());
    }
    let walk = || -> Result<git2::Revwalk<'_>, LandingError> {
        let mut walk = from.revwalk().map_err(git("walk the history"))?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(git("walk the history"))?;
        walk.push(tip).map_err(git("walk the history"))?;
        for id in known {
            if from.find_commit(*id).is_ok() {
                walk.hide(*id).map_err(git("walk the history"))?;
            }
        }
        Ok(walk)
    };
    if let Some(missing) = missing_objects(from, &to_odb, walk()?, UNPACK_LIMIT)? {
        let from_odb = from.odb().map_err(git("open the object store"))?;
        for id in missing {
            let object = from_odb.read(id).map_err(git("read an object"))?;
            to_odb
                .write(object.kind(), object.data())
                .map_err(git("write an object"))?;
        }
        return Ok(());
    }
    let mut pack = from.packbuilder().map_err(git("build a pack"))?;
    pack.insert_walk(&mut walk()?)
        .map_err(git("build a pack"))?;
    let mut writer = to_odb.packwriter().map_err(git("write a pack"))?;
    let mut failed = None;
    pack.foreach(
        |chunk| match std::io::Write::write_all(&mut writer, chunk) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        },
    )
    .map_err(git("write a pack"))?;
    if let Some(e) = failed {
        return Err(git("write a pack")(git2::Error::from_str(&e.to_string())));
    }
    writer.commit().map_err(git("write a pack"))?;
    Ok(())
}

/// The objects of `commits` (parents first) that `to` lacks, each after
/// everything it refers to; `None` once there are `limit` of them.
fn missing_objects(
    from: &Repository,
    to: &git2::Odb<'_>,
    commits: git2::Revwalk<'_>,
    limit: usize,
) -> Result<Option<Vec<Oid>>, LandingError> {
    let mut missing = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for commit in commits {
        let commit = commit.map_err(git("walk the history"))?;
        let tree = from
            .find_commit(commit)
            .map_err(git("read a commit"))?
            .tree_id();
        // Depth first, each object after its children: (id, is a tree,
        // children pushed already).
        let mut stack = vec![(tree, true, false)];
        while let Some((id, is_tree, expanded)) = stack.pop() {
            if expanded {
                missing.push(id);
                if missing.len() >= limit {
                    return Ok(None);
                }
                continue;
            }
            if !seen.insert(id) || to.exists(id) {
                continue;
            }
            stack.push((id, is_tree, true));
            if is_tree {
                let tree = from.find_tree(id).map_err(git("read a tree"))?;
                for entry in tree.iter() {
                    match entry.kind() {
                        Some(git2::ObjectType::Tree) => stack.push((entry.id(), true, false)),
                        Some(git2::ObjectType::Blob) => stack.push((entry.id(), false, false)),
                        // A submodule's commit lives in its own repository.
                        _ => {}
                    }
                }
            }
        }
        missing.push(commit);
        if missing.len() >= limit {
            return Ok(None);
        }
    }
    Ok(Some(missing))
}

/// The configuration key whose value, on a push's command line, names
/// the transaction pushing: recovery finds a push its killed applier left
/// running by it ([`await_push`]). The remote's hooks can read it too
/// (`git config roundtable.landing`).
const PUSH_MARKER: &str = "roundtable.landing";

/// The environment variables that point git at a repository (`git
/// rev-parse --local-env-vars`): a push never inherits the host's.
const LOCAL_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    "GIT_QUARANTINE_PATH",
];

/// The most lines of the remote's messages a refusal carries.
const MAX_REMOTE_MESSAGES: usize = 20;

/// Push `new` to `branch` of `remote` with a lease, the way git pushes:
/// `git send-pack --force-with-lease=BRANCH:EXPECTED`, so the remote's
/// `git receive-pack` receives the objects and runs everything a push
/// runs there — `receive.fsckObjects`, `receive.denyNonFastForwards` and
/// the other `receive.*` settings, the `pre-receive` and `update` hooks —
/// and moves the branch from `expected` only (checked under its ref
/// lock). A branch that is not at `expected` is
/// [`LandingError::BranchMoved`] naming the remote, the ref and both ids;
/// any other refusal [`LandingError::RemoteRejected`] with the remote's
/// reason and messages; either way the remote's branch is unchanged
/// (objects a refused push sent are quarantined and dropped by git). A
/// refusal for another push's ref lock is retried for up to two seconds.
/// `tag` (the transaction) marks the push's command line for
/// [`await_push`]. Needs `git` on `PATH`.
pub fn push(
    local: &Repository,
    remote: &Repository,
    location: &str,
    branch: &str,
    expected: Oid,
    new: Oid,
    tag: &str,
) -> Result<(), LandingError> {
    let io = |what: &'static str| {
        move |e: std::io::Error| git(what)(git2::Error::from_str(&e.to_string()))
    };
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    loop {
        let mut cmd = std::process::Command::new("git");
        for var in LOCAL_ENV {
            cmd.env_remove(var);
        }
        let out = cmd
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .arg("-c")
            .arg(format!("{PUSH_MARKER}={tag}"))
            .arg("--git-dir")
            .arg(local.path())
            .args(["send-pack", "--helper-status", "--atomic"])
            .arg(format!("--force-with-lease={branch}:{expected}"))
            .arg(remote.path())
            .arg(format!("{new}:{branch}"))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(io("run git send-pack"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut status = None;
        for line in stdout.lines() {
            if let Some(rest) = line.strip_prefix("ok ") {
                if rest.split(' ').next() == Some(branch) {
                    return Ok(());
                }
            } else if let Some(rest) = line.strip_prefix("error ") {
                if let Some(reason) = rest.strip_prefix(branch).and_then(|r| r.strip_prefix(' ')) {
                    status = Some(reason.trim().to_owned());
                }
            }
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let messages: Vec<String> = stderr
            .lines()
            .map(|l| l.strip_prefix("remote: ").unwrap_or(l).trim_end())
            .filter(|l| !l.is_empty() && !l.starts_with("To "))
            .take(MAX_REMOTE_MESSAGES)
            .map(|l| l.chars().take(500).collect())
            .collect();
        let status = status.unwrap_or_else(|| format!("the push failed ({})", out.status));
        // Where the remote's branch is now says what the refusal was.
        let actual = remote.refname_to_id(branch).ok();
        if let Some(tip) = actual.filter(|&tip| tip != expected) {
            if contains(remote, tip, new)? {
                return Ok(());
            }
        }
        if actual != Some(expected) {
            return Err(LandingError::BranchMoved {
                remote: Some(location.to_owned()),
                branch: branch.to_owned(),
                expected: expected.to_string(),
                actual: actual.map(|id| id.to_string()),
            });
        }
        if status.contains("lock") && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        return Err(LandingError::RemoteRejected(Box::new(RemoteRefusal {
            remote: location.to_owned(),
            branch: branch.to_owned(),
            status,
            messages,
        })));
    }
}

/// Wait (up to a minute) until no push [`push`] started for `tag` (a
/// transaction) is still running on this machine: one its applier left
/// when it was killed may yet move the remote's branch, and recovery must
/// not judge the transaction before it ends. Linux: the processes are
/// found by their command line in `/proc` (elsewhere it returns at once).
pub fn await_push(tag: &str) {
    let marker = format!("{PUSH_MARKER}={tag}");
    let running = || {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
                && std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == marker.as_bytes()))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Fetch `branch` of `remote` into `local`'s object store: the remote
/// branch's commit, now present here (`None`: no such branch there).
pub fn fetch(
    local: &Repository,
    remote: &Repository,
    branch: &str,
) -> Result<Option<Oid>, LandingError> {
    let Ok(tip) = remote.refname_to_id(branch) else {
        return Ok(None);
    };
    let known: Vec<Oid> = local.refname_to_id(branch).into_iter().collect();
    copy_objects(remote, local, tip, &known)?;
    Ok(Some(tip))
}

/// Whether `commit` is `tip` or one of its ancestors in `repo` (never,
/// when `repo` does not have it).
pub fn contains(repo: &Repository, tip: Oid, commit: Oid) -> Result<bool, LandingError> {
    if tip == commit {
        return Ok(true);
    }
    if !repo
        .odb()
        .map_err(git("open the object store"))?
        .exists(commit)
    {
        return Ok(false);
    }
    repo.graph_descendant_of(tip, commit)
        .map_err(git("compare histories"))
}

/// Remove the lock file a killed landing left on `branch` in `repo`
/// (called by recovery, under the apply lock). A lock that holds `ours`
/// — the id the killed landing was writing — is its own and goes at once;
/// an empty one (killed between creating and writing it) goes once it has
/// stood longer than any live writer takes; any other is another
/// writer's, waited for as a ref update waits, and then left alone.
pub fn clear_stale_lock(repo: &Repository, branch: &str, ours: Oid) -> Result<(), LandingError> {
    let lock = repo.commondir().join(format!("{branch}.lock"));
    let io =
        |e: std::io::Error| git("clear a stale ref lock")(git2::Error::from_str(&e.to_string()));
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    loop {
        let held = match std::fs::read(&lock) {
            Ok(held) => held,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        };
        let text = String::from_utf8_lossy(&held);
        let mine = text.trim() == ours.to_string();
        if mine || (held.is_empty() && std::time::Instant::now() >= deadline) {
            return match std::fs::remove_file(&lock) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                _ => Ok(()),
            };
        }
        if std::time::Instant::now() >= deadline {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Remove the `index.lock` a killed landing left in `repo` (called by
/// recovery, under the apply lock, before it stages the landed paths):
/// a lock that neither goes nor changes for as long as a ref update waits
/// has no live writer.
pub fn clear_stale_index_lock(repo: &Repository) -> Result<(), LandingError> {
    let lock = repo.path().join("index.lock");
    let io =
        |e: std::io::Error| git("clear a stale index lock")(git2::Error::from_str(&e.to_string()));
    let seen = |lock: &Path| {
        std::fs::metadata(lock)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let Some(first) = seen(&lock) else {
        return Ok(());
    };
    let deadline = std::time::Instant::now() + REF_LOCK_WAIT;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
        if seen(&lock) != Some(first) {
            return Ok(());
        }
    }
    match std::fs::remove_file(&lock) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
        _ => Ok(()),
    }
}

/// Bring the index of `repo` (which has a working tree) in line with
/// commit `landed` at `paths` (the paths a change touched, once its files
/// are written and the branch is at `landed`): a path the commit holds is
/// staged with the commit's blob id and mode and the stat data of the file
/// on disk (the blob is already written: nothing is hashed or compressed
/// again), a path it does not hold leaves the index. Written atomically
/// (`index.lock`, then a rename).
pub fn update_index<'p>(
    repo: &Repository,
    landed: Oid,
    paths: impl IntoIterator<Item = &'p crate::RepoPath>,
) -> Result<(), LandingError> {
    use std::os::unix::fs::MetadataExt as _;
    let workdir = repo.workdir().ok_or_else(|| LandingError::InvalidInput {
        field: "repository",
        reason: "has no working tree".into(),
    })?;
    let tree = repo
        .find_commit(landed)
        .and_then(|c| c.tree())
        .map_err(git("read the landed tree"))?;
    let mut index = repo.index().map_err(git("read the index"))?;
    for path in paths {
        let rel = Path::new(path.as_str());
        let entry = match tree.get_path(rel) {
            Ok(entry) => Some(entry),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(git("look up a path")(e)),
        };
        let on_disk = workdir.join(rel).symlink_metadata().ok();
        match (entry, on_disk) {
            (Some(entry), Some(meta)) if entry.kind() == Some(git2::ObjectType::Blob) => {
                // The index stores 32-bit stat fields, truncated as git does.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let time = |secs: i64, nanos: i64| git2::IndexTime::new(secs as i32, nanos as u32);
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let staged = git2::IndexEntry {
                    ctime: time(meta.ctime(), meta.ctime_nsec()),
                    mtime: time(meta.mtime(), meta.mtime_nsec()),
                    dev: meta.dev() as u32,
                    ino: meta.ino() as u32,
                    mode: entry.filemode() as u32,
                    uid: meta.uid(),
                    gid: meta.gid(),
                    file_size: meta.size() as u32,
                    id: entry.id(),
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_str().as_bytes().to_vec(),
                };
                index.add(&staged).map_err(git("stage a file"))?;
            }
            _ => match index.remove_path(rel) {
                Ok(()) => {}
                Err(e) if e.code() == git2::ErrorCode::NotFound => {}
                Err(e) => return Err(git("unstage a file")(e)),
            },
        }
    }
    index.write().map_err(git("write the index"))
}

/// The attributes through which git converts a path's bytes between the
/// working tree and the object store (`gitattributes(5)`).
const CONVERTING_ATTRIBUTES: &[&str] = &[
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];

/// Whether git may convert `path`'s bytes between the working tree of
/// `repo` and its object store: an attribute of
/// [`CONVERTING_ATTRIBUTES`] is set for it (by `.gitattributes` or
/// `info/attributes`), or `core.autocrlf` is `true` or `input`. Never for
/// a repository without a working tree (its changes are read from and
/// written as blobs), nor for a symbolic link.
fn converts(repo: &Repository, path: &str) -> Result<bool, LandingError> {
    if repo.workdir().is_none() {
        return Ok(false);
    }
    let config = repo.config().map_err(git("read the configuration"))?;
    if config
        .get_string("core.autocrlf")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "input"))
    {
        return Ok(true);
    }
    for name in CONVERTING_ATTRIBUTES {
        let value = repo
            .get_attr_bytes(Path::new(path), name, git2::AttrCheckFlags::FILE_THEN_INDEX)
            .map_err(git("read the attributes"))?;
        if value.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Run git on the working tree of `repo` with `input` on its standard
/// input (never the host's `GIT_DIR` and the like); its standard output.
fn run_git(repo: &Repository, args: &[&str], input: &[u8]) -> Result<Vec<u8>, LandingError> {
    use std::io::Write as _;
    let fail = |what: String| git("convert a file as git does")(git2::Error::from_str(&what));
    let workdir = repo
        .workdir()
        .ok_or_else(|| fail("no working tree".into()))?;
    let mut cmd = std::process::Command::new("git");
    for var in LOCAL_ENV {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("LC_ALL", "C")
        .arg("--git-dir")
        .arg(repo.path())
        .arg("--work-tree")
        .arg(workdir)
        .args(args)
        .current_dir(workdir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("run git {}: {e}", args[0])))?;
    let mut stdin = child.stdin.take().ok_or_else(|| fail("no stdin".into()))?;
    // Written on its own thread: git may answer before it read it all.
    let out = std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(input));
        let out = child.wait_with_output();
        let written = writer.join();
        (out, written)
    });
    let out = out
        .0
        .map_err(|e| fail(format!("run git {}: {e}", args[0])))?;
    if !out.status.success() {
        return Err(fail(format!(
            "git {} failed: {}",
            args[0],
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// The blob `git add` makes of `data` at `path` (its clean filters and
/// line-ending conversion applied), written to `repo`'s object store.
fn clean(repo: &Repository, path: &str, data: &[u8]) -> Result<Oid, LandingError> {
    let out = run_git(
        repo,
        &["hash-object", "-w", "--stdin", &format!("--path={path}")],
        data,
    )?;
    Oid::from_str(String::from_utf8_lossy(&out).trim()).map_err(git("read a blob id"))
}

/// What `git checkout` writes at `path` for blob `blob` (its smudge
/// filters and line-ending conversion applied).
fn smudge(repo: &Repository, path: &str, blob: Oid) -> Result<Vec<u8>, LandingError> {
    run_git(
        repo,
        &[
            "cat-file",
            "--filters",
            &format!("--path={path}"),
            &blob.to_string(),
        ],
        &[],
    )
}

/// A change to a working tree in the two forms git gives a file's bytes.
#[derive(Debug, Clone)]
pub struct Converted {
    /// As the commit stores it: each file as `git add` would make its blob.
    pub blobs: Changeset,
    /// As the working tree holds it after the landing: each file as `git
    /// checkout` of the landed commit writes it.
    pub worktree: Changeset,
}

/// `changeset` (a change to the working tree of `repo`, its files in
/// working-tree form) converted as git converts files
/// (`gitattributes(5)`: `text`, `eol`, `core.autocrlf`, filter drivers,
/// `ident`, `working-tree-encoding`): each resulting file's blob is what
/// `git add` makes of it, and the working tree gets what `git checkout` of
/// that blob writes — so after the landing `git status` is clean and the
/// tree is what a checkout of the landed commit would be. `None` when no
/// touched path is converted (the bytes are the blobs, as they are): then
/// no `git` process runs. Needs `git` on `PATH` otherwise.
pub fn convert(
    repo: &Repository,
    changeset: &Changeset,
) -> Result<Option<Converted>, LandingError> {
    let mut converting = false;
    let mut blobs = Vec::new();
    let mut worktree = Vec::new();
    for file in changeset.files() {
        let mut blob_form = file.clone();
        let mut tree_form = file.clone();
        if let Some(after) = file.after.as_ref().filter(|a| !a.symlink) {
            let path = file.path.as_str();
            if converts(repo, path)? {
                converting = true;
                let id = clean(repo, path, &after.data)?;
                let stored = repo.find_blob(id).map_err(git("read a blob"))?;
                if let Some(a) = blob_form.after.as_mut() {
                    a.data = stored.content().to_vec();
                }
                let written = smudge(repo, path, id)?;
                if let Some(a) = tree_form.after.as_mut() {
                    a.data = written;
                }
            }
        }
        blobs.push(blob_form);
        worktree.push(tree_form);
    }
    if !converting {
        return Ok(None);
    }
    let whole = |files| {
        Changeset::new(files).map_err(|e: crate::changeset::DuplicatePath| {
            LandingError::InvalidInput {
                field: "changeset",
                reason: e.to_string(),
            }
        })
    };
    Ok(Some(Converted {
        blobs: whole(blobs)?,
        worktree: whole(worktree)?,
    }))
}

/// Whether each path `changeset` touches is, in `base`'s tree, what the
/// changeset's precondition says (the same bytes and mode, or absent; for
/// a path git converts, the bytes `git checkout` writes): a
/// change validated against the working tree lands on the branch only when
/// the branch holds what it was validated against there, so the commit is
/// the change and nothing else (no uncommitted local edit rides along).
/// The first path that differs, or `None`.
pub fn first_difference(
    repo: &Repository,
    base: Oid,
    changeset: &Changeset,
) -> Result<Option<crate::RepoPath>, LandingError> {
    let tree = repo
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(git("read the base tree"))?;
    for file in changeset.files() {
        let entry = match tree.get_path(Path::new(file.path.as_str())) {
            Ok(entry) => Some(entry),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => return Err(git("look up a path")(e)),
        };
        let same = match (&file.before, entry) {
            (None, None) => true,
            (Some(meta), Some(entry)) => {
                let mode = entry.filemode();
                let mode_ok = if meta.symlink {
                    mode == i32::from(FileMode::Link)
                } else if meta.executable {
                    mode == i32::from(FileMode::BlobExecutable)
                } else {
                    mode == i32::from(FileMode::Blob)
                };
                // In working-tree form: what `git checkout` writes there.
                let written = if !meta.symlink && converts(repo, file.path.as_str())? {
                    Some(smudge(repo, file.path.as_str(), entry.id())?)
                } else {
                    None
                };
                mode_ok
                    && match written {
                        Some(bytes) => crate::Digest::of(&bytes) == meta.digest,
                        None => repo
                            .find_blob(entry.id())
                            .is_ok_and(|b| crate::Digest::of(b.content()) == meta.digest),
                    }
            }
            _ => false,
        };
        if !same {
            return Ok(Some(file.path.clone()));
        }
    }
    Ok(None)
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

/// The newest `limit` commits on `branch` (first parents, newest first) of
/// the repository at `root` that roundtable landed: those whose message
/// carries a `Roundtable-Proposal` trailer.
pub fn landed_commits(
    root: &Path,
    branch: &str,
    limit: usize,
) -> Result<Vec<LandedCommit>, LandingError> {
    let repo = open(root)?;
    let tip = repo.refname_to_id(branch).map_err(git("read the branch"))?;
    let mut walk = repo.revwalk().map_err(git("walk the history"))?;
    walk.push(tip).map_err(git("walk the history"))?;
    walk.simplify_first_parent()
        .map_err(git("walk the history"))?;
    let mut out = Vec::new();
    for oid in walk {
        if out.len() >= limit {
            break;
        }
        let oid = oid.map_err(git("walk the history"))?;
        let commit = repo.find_commit(oid).map_err(git("read a commit"))?;
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        let trailers = trailers(commit.message_bytes());
        if !trailers.iter().any(|(k, _)| k == "Roundtable-Proposal") {
            continue;
        }
        let author = commit.author();
        out.push(LandedCommit {
            id: oid.to_string(),
            summary: message.lines().next().unwrap_or_default().to_owned(),
            author: format!(
                "{} <{}>",
                String::from_utf8_lossy(author.name_bytes()),
                String::from_utf8_lossy(author.email_bytes())
            ),
            trailers,
        });
    }
    Ok(out)
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
