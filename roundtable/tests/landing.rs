//! Issue 18, the object half of git landing (`roundtable::landing`): a
//! commit built from objects has exactly the tree git makes of the same
//! change, its trailers read back through `git interpret-trailers`, `git
//! fsck` finds nothing wrong, and the branch moves only by compare-and-swap.
//!
//! The differential test makes random changes to a committed tree (edits,
//! new files in new directories, deletions, renames, mode flips, symbolic
//! links, a file that becomes a directory and a directory that becomes a
//! file), lets git stage
//! them (`git add -A`, `git write-tree`: the expected tree) and write the
//! patch (`git diff --cached --binary -M HEAD`), resets to the base, and
//! builds the commit from the changeset roundtable computes for that patch
//! against the base files. The two tree ids must be equal: the same paths,
//! bytes and modes, to the bit. `RT_LANDING_TRIALS` sets the number of
//! trials (default 40).

//! The tests are in `objects` (they call the libgit2 half: the `git`
//! feature); the helpers here (`git`, `fsck`) serve every git-mode test.

use std::path::Path;
use std::process::Command;

#[cfg(feature = "git")]
mod objects;

/// Run git in `dir` with a fixed identity and no user or system config;
/// its standard output (it must succeed).
/// `git fsck --strict` of the repository at `dir` passes: every
/// repository a git-mode test makes is one git itself accepts.
pub(crate) fn fsck(dir: &Path) {
    git(dir, &["fsck", "--strict", "--no-progress"]);
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "core.quotepath=true"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 from git")
}
