//! Advisory digests: a file's digest and mode for a question whose
//! answer writes nothing (is a proposal stale, for an inbox page), taken
//! from a memo keyed by the file's `lstat` instead of a read and a hash
//! on every call.
//!
//! The memo trusts an entry as git's index does (and as the state cache,
//! [`crate::state`], does): only while the file's device, inode, size,
//! mtime, ctime and `st_mode` are all unchanged, **and** only when the
//! file's times were already more than a second old when it was read and
//! hashed (the racy-timestamp rule: a rewrite within the same timestamp
//! tick as the read could keep an identical stat and a stale digest, so
//! such an entry is never trusted and the file is read again). Any write
//! moves the ctime, which no caller can set back; a rename over the file
//! or a delete and re-create changes the inode or the ctime.
//!
//! Never for a write: the apply's own preconditions
//! ([`apply_changeset`](super::apply_changeset)'s check before its first
//! write) and the validation an apply runs read and hash every file they
//! rely on, through [`Workspace::meta`] and the view's fresh `fstat`, and
//! never consult this memo.

use super::view::Stamp;
use super::{lock, Workspace, WorkspaceError};
use crate::changeset::FileMeta;
use crate::RepoPath;
use rustix::fs::AtFlags;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The most paths a [`DigestMemo`] remembers; past it, it starts over
/// (the next calls read and hash again). About 150 bytes a path.
const MEMO_ENTRIES: usize = 1 << 17;

/// Digests of files remembered by their `lstat`, for advisory reads only
/// ([`Workspace::meta_advisory`]): see the module documentation for when
/// an entry is trusted. Shared by every view of one workspace (an
/// engine keeps one); safe to use from several threads at once.
#[derive(Debug, Default)]
pub struct DigestMemo {
    /// Each path's stamp when it was read, and its digest and mode then.
    entries: Mutex<HashMap<RepoPath, (Stamp, FileMeta)>>,
    /// Files read and hashed because no trusted entry answered.
    hashed: AtomicU64,
    /// Answers taken from a trusted entry.
    reused: AtomicU64,
}

/// What a [`DigestMemo`] has done since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DigestMemoStats {
    /// Files read and hashed because no trusted entry answered (absent
    /// paths and bare-repository reads included).
    pub hashed: u64,
    /// Answers taken from a trusted entry, with no read.
    pub reused: u64,
}

impl DigestMemo {
    /// How many files it read and hashed and how many answers it reused.
    pub fn stats(&self) -> DigestMemoStats {
        DigestMemoStats {
            hashed: self.hashed.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }

    /// The remembered digest of `path` when `now` proves the file is the
    /// one it was taken of, unwritten since.
    fn trusted(&self, path: &RepoPath, now: &Stamp) -> Option<FileMeta> {
        let entries = lock(&self.entries);
        let (stamp, meta) = entries.get(path)?;
        stamp.unchanged(now).then_some(*meta)
    }

    /// Remember `meta` for `path` as read under `stamp` (`None`: nothing
    /// is there, so nothing is remembered).
    fn remember(&self, path: &RepoPath, read: Option<(Stamp, FileMeta)>) {
        let mut entries = lock(&self.entries);
        match read {
            None => {
                entries.remove(path);
            }
            Some(entry) => {
                if entries.len() >= MEMO_ENTRIES && !entries.contains_key(path) {
                    entries.clear();
                }
                entries.insert(path.clone(), entry);
            }
        }
    }
}

impl Workspace {
    /// [`meta`](Workspace::meta) for an advisory answer: the digest and
    /// mode of the file at `path`, or `None` if absent, taken from `memo`
    /// when a fresh `lstat` proves the file unwritten since it was read
    /// (see the module documentation for the racy-timestamp rule), else
    /// read and hashed as `meta` does (with the same errors) and
    /// remembered. On a view, a file the view already read is answered
    /// with what it read.
    ///
    /// Only for answers that decide no write (an inbox's staleness): a
    /// check before a write calls [`meta`](Workspace::meta), which always
    /// reads.
    pub fn meta_advisory(
        &self,
        path: &RepoPath,
        memo: &DigestMemo,
    ) -> Result<Option<FileMeta>, WorkspaceError> {
        if self.bare.is_some() {
            // A blob has no `lstat`: read it.
            memo.hashed.fetch_add(1, Ordering::Relaxed);
            return self.meta(path);
        }
        if let Some(seen) = self.seen(path) {
            return Ok(Some(seen.meta()));
        }
        if let Some((dir, name)) = self.parent(path)? {
            if let Ok(st) = rustix::fs::statat(&*dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                if let Some(meta) = memo.trusted(path, &Stamp::of(&st)) {
                    memo.reused.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(meta));
                }
            }
        }
        memo.hashed.fetch_add(1, Ordering::Relaxed);
        let read = self.load(path)?.map(|seen| (seen.stamp, seen.meta()));
        memo.remember(path, read);
        Ok(read.map(|(_, meta)| meta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    fn p(s: &str) -> RepoPath {
        RepoPath::from_bytes(s.as_bytes()).expect("valid")
    }

    /// Sleep until every file written before the call is more than a
    /// second old (the memo trusts nothing younger).
    fn settle() {
        std::thread::sleep(Duration::from_millis(2100));
    }

    #[test]
    fn a_settled_file_is_hashed_once_and_a_rewrite_is_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("f"), "one").expect("write");
        let ws = Workspace::open(root).expect("opens");
        let memo = DigestMemo::default();
        settle();
        let first = ws.meta_advisory(&p("f"), &memo).expect("reads");
        assert_eq!(first, ws.meta(&p("f")).expect("reads"));
        let again = ws.view().meta_advisory(&p("f"), &memo).expect("reads");
        assert_eq!(again, first);
        assert_eq!(
            memo.stats(),
            DigestMemoStats {
                hashed: 1,
                reused: 1
            }
        );
        // Same size, at once: the ctime moved, so it is read again.
        fs::write(root.join("f"), "two").expect("write");
        let after = ws.meta_advisory(&p("f"), &memo).expect("reads");
        assert_ne!(after, first);
        assert_eq!(after, ws.meta(&p("f")).expect("reads"));
        assert_eq!(memo.stats().hashed, 2);
    }

    #[test]
    fn a_fresh_file_is_never_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("f"), "one").expect("write");
        let ws = Workspace::open(root).expect("opens");
        let memo = DigestMemo::default();
        for _ in 0..3 {
            ws.meta_advisory(&p("f"), &memo).expect("reads");
        }
        assert_eq!(memo.stats().hashed, 3, "written within the second");
        assert_eq!(memo.stats().reused, 0);
    }

    /// The racy rule, deterministically: an entry taken of a file changed
    /// within the last second is not trusted even when the stat now is
    /// identical (a same-size rewrite in the same timestamp tick could
    /// leave it so); one taken of an older file is.
    #[test]
    fn an_identical_stat_of_a_young_file_is_not_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("f"), "one").expect("write");
        let stat = || rustix::fs::stat(root.join("f")).expect("stat");
        let memo = DigestMemo::default();
        let meta = FileMeta::of(&crate::diff::TreeFile::regular(b"one".to_vec()));
        let young = Stamp::of(&stat());
        memo.remember(&p("f"), Some((young, meta)));
        assert_eq!(memo.trusted(&p("f"), &Stamp::of(&stat())), None);
        settle();
        let old = Stamp::of(&stat());
        memo.remember(&p("f"), Some((old, meta)));
        assert_eq!(memo.trusted(&p("f"), &Stamp::of(&stat())), Some(meta));
        // Gone: forgotten.
        memo.remember(&p("f"), None);
        assert_eq!(memo.trusted(&p("f"), &Stamp::of(&stat())), None);
    }

    /// Rewrites of the same size, back to back: every answer is the bytes
    /// now there. (Where the file system's timestamps are fine enough that
    /// no two rewrites share a stat, this passes without the racy rule
    /// too: `an_identical_stat_of_a_young_file_is_not_trusted` is the
    /// rule's deterministic test.)
    #[test]
    fn rewrites_within_one_tick_are_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let ws = Workspace::open(root).expect("opens");
        let memo = DigestMemo::default();
        for i in 0..200u32 {
            for text in [format!("{:08}\n", i * 2), format!("{:08}\n", i * 2 + 1)] {
                fs::write(root.join("f"), &text).expect("write");
                let meta = ws.meta_advisory(&p("f"), &memo).expect("reads");
                let want = FileMeta::of(&crate::diff::TreeFile::regular(text.into_bytes()));
                assert_eq!(meta, Some(want), "iteration {i}");
            }
        }
        assert_eq!(memo.stats().reused, 0, "no young file is trusted");
    }

    #[test]
    fn absent_paths_and_errors_are_as_meta_says() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("d")).expect("mkdir");
        std::os::unix::fs::symlink("d", root.join("link")).expect("link");
        let ws = Workspace::open(root).expect("opens");
        let memo = DigestMemo::default();
        assert_eq!(
            ws.meta_advisory(&p("missing"), &memo).expect("absent"),
            None
        );
        assert_eq!(
            ws.meta_advisory(&p("d/missing"), &memo).expect("absent"),
            None
        );
        for path in ["link/f", "d"] {
            let advisory = ws.meta_advisory(&p(path), &memo).expect_err(path);
            let meta = ws.meta(&p(path)).expect_err(path);
            assert_eq!(advisory.code(), meta.code(), "{path}");
        }
    }
}
