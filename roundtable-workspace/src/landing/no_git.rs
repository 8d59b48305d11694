//! A build without the `git` feature: what the layers above read of a
//! repository's landings is refused ([`LandingError::NoGit`]).

use super::{BranchCommit, LandedCommit, LandingError};
use std::path::Path;

/// Refused: this build reads no repository (see the `git` feature's
/// `landed_commits`).
pub fn landed_commits(
    _root: &Path,
    _branch: &str,
    _limit: usize,
) -> Result<Vec<LandedCommit>, LandingError> {
    Err(LandingError::NoGit {
        what: "the commits landed on a branch cannot be read",
    })
}

/// Refused: this build reads no repository (see the `git` feature's
/// `branch_history`).
pub fn branch_history(
    _root: &Path,
    _branch: &str,
    _since: Option<&str>,
    _limit: usize,
) -> Result<(Vec<BranchCommit>, bool), LandingError> {
    Err(LandingError::NoGit {
        what: "a branch's history cannot be read",
    })
}

/// Refused: this build reads no repository (see the `git` feature's
/// `blame_at_tip`).
pub fn blame_at_tip(
    _root: &Path,
    _branch: &str,
    _path: &str,
) -> Result<super::blame::FileAtTip, LandingError> {
    Err(LandingError::NoGit {
        what: "a file's lines cannot be blamed",
    })
}
