//! What the workspace's tests share.

use crate::changeset::{Changeset, FileContent, FileMeta};
use crate::diff::TreeFile;
use crate::RepoPath;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Every file and directory under `root`, by relative path, with its
/// bytes (a directory's empty).
pub(super) fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("readable") {
            let at = entry.expect("entry").path();
            if at.is_dir() {
                stack.push(at.clone());
            }
            let rel = at.strip_prefix(root).expect("inside").display().to_string();
            out.insert(
                rel,
                if at.is_dir() {
                    Vec::new()
                } else {
                    fs::read(&at).expect("read")
                },
            );
        }
    }
    out
}

/// A changeset modifying `path` from `before` to `after`.
pub(super) fn one_change(path: &str, before: &[u8], after: &[u8]) -> Changeset {
    Changeset::new(vec![crate::changeset::FileChange {
        path: RepoPath::from_bytes(path.as_bytes()).expect("valid"),
        operation: crate::changeset::Operation::Modify,
        before: Some(FileMeta::of(&TreeFile::regular(before.to_vec()))),
        after: Some(FileContent {
            data: after.to_vec(),
            executable: false,
            symlink: false,
        }),
    }])
    .expect("one path")
}

/// Where a test may act in the middle of a changeset's apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Point {
    /// After every final check, before the first result is staged.
    BeforeStage,
    /// After staging, before the first rename.
    BeforeCommit,
}

type Hook = Option<(Point, Box<dyn FnOnce()>)>;

thread_local! {
    static HOOK: std::cell::RefCell<Hook> = const { std::cell::RefCell::new(None) };
}

/// Run `f` (once) when this thread's next apply reaches `point`.
pub(super) fn on(point: Point, f: impl FnOnce() + 'static) {
    HOOK.with(|h| *h.borrow_mut() = Some((point, Box::new(f))));
}

/// Called by the apply at `point`: runs the hook set for it.
pub(super) fn at(point: Point) {
    let hook = HOOK.with(|h| {
        let mut h = h.borrow_mut();
        match h.take() {
            Some((p, f)) if p == point => Some(f),
            other => {
                *h = other;
                None
            }
        }
    });
    if let Some(f) = hook {
        f();
    }
}
