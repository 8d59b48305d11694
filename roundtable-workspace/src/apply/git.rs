//! The git side of a git-mode landing (the `git` feature): the commit
//! point, what recovery asks of the repository, and the index.

use super::{landing_error, TransactionError};
use crate::landing::LandingError;
use crate::store::Store;
use crate::RepoPath;
use std::path::Path;

pub(super) use crate::landing::await_push;

/// The repository at `root` and `landing`'s old and new commit ids.
fn landing_ids(
    root: &Path,
    landing: &crate::store::settings::TransactionLanding,
) -> Result<(git2::Repository, git2::Oid, git2::Oid), LandingError> {
    let git = |what| move |source| LandingError::Git { what, source };
    let repo = crate::landing::open(root)?;
    let old = git2::Oid::from_str(&landing.old_id).map_err(git("read the old id"))?;
    let new = git2::Oid::from_str(&landing.new_id).map_err(git("read the new id"))?;
    Ok((repo, old, new))
}

/// The commit point of `landing` in the repository at `root`: its branch
/// moves from the old commit to the new one by compare-and-swap — with a
/// remote, first the remote's (a push with a lease), then this
/// repository's follows. The outer error is the commit point's (nothing
/// landed); the inner one is following's, after the change landed.
pub(super) fn land(
    root: &Path,
    id: &str,
    landing: &crate::store::settings::TransactionLanding,
) -> Result<Result<(), LandingError>, LandingError> {
    let (repo, old, new) = landing_ids(root, landing)?;
    if let Some(remote) = &landing.remote {
        let (remote_repo, location) = crate::landing::open_remote(&repo, remote)?;
        crate::landing::push(
            &repo,
            &remote_repo,
            &location,
            &landing.branch,
            old,
            new,
            id,
        )?;
        return Ok(follow(&repo, landing, old, new));
    }
    crate::landing::move_branch(&repo, &landing.branch, old, new, "roundtable: land").map(Ok)
}

/// After the remote's branch moved to `new`, this repository's follows
/// from `old` (a branch already at `new` stays).
fn follow(
    repo: &git2::Repository,
    landing: &crate::store::settings::TransactionLanding,
    old: git2::Oid,
    new: git2::Oid,
) -> Result<(), LandingError> {
    // Already there, or past it (this clone landed or fetched later
    // changes since).
    if let Ok(tip) = repo.refname_to_id(&landing.branch) {
        if crate::landing::contains(repo, tip, new)? {
            return Ok(());
        }
    }
    crate::landing::move_branch(
        repo,
        &landing.branch,
        old,
        new,
        "roundtable: landed on the remote",
    )
}

/// Stage `paths` in the index of the repository at `root` as the files
/// stand, retried briefly while another git process holds `index.lock`.
pub(super) fn stage(root: &Path, landed: &str, paths: &[RepoPath]) -> Result<(), LandingError> {
    let landed = git2::Oid::from_str(landed).map_err(|source| LandingError::Git {
        what: "read the new id",
        source,
    })?;
    let mut tries = 0;
    loop {
        let done = crate::landing::open(root)
            .and_then(|repo| crate::landing::update_index(&repo, landed, paths));
        match done {
            Err(_) if tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Remove the ref locks a killed git-mode transaction `id` left on its
/// branch, here and on its remote ([`crate::landing::clear_stale_lock`]).
pub(super) fn clear_stale_locks(
    store: &Store,
    root: &Path,
    id: &str,
) -> Result<(), TransactionError> {
    let landing = store.read(|tx| {
        Ok::<_, TransactionError>(crate::store::settings::transaction_landing(tx, id)?)
    })?;
    let Some(landing) = landing else {
        return Ok(());
    };
    let (repo, _, new) = landing_ids(root, &landing).map_err(landing_error(id))?;
    crate::landing::clear_stale_lock(&repo, &landing.branch, new).map_err(landing_error(id))?;
    if let Some(remote) = &landing.remote {
        let (remote_repo, _) =
            crate::landing::open_remote(&repo, remote).map_err(landing_error(id))?;
        crate::landing::clear_stale_lock(&remote_repo, &landing.branch, new)
            .map_err(landing_error(id))?;
    }
    Ok(())
}

/// Whether transaction `id` landed in git mode: its branch is at the
/// commit built for it (the ref update is the commit point) — with a
/// remote, the remote's branch holds it (at it, or past it: others may
/// have landed on top since). Changes nothing: [`super::finish_landed`] brings
/// this repository's branch forward, under the apply lock.
pub(super) fn landed(store: &Store, root: &Path, id: &str) -> Result<bool, TransactionError> {
    let landing = store.read(|tx| {
        Ok::<_, TransactionError>(crate::store::settings::transaction_landing(tx, id)?)
    })?;
    let Some(landing) = landing else {
        return Ok(false);
    };
    let Ok((repo, _, new)) = landing_ids(root, &landing) else {
        return Ok(false);
    };
    let Some(remote) = &landing.remote else {
        // At the new commit, or past it: later landings may have moved
        // the branch on since (the store failed before this one's
        // outcome was recorded, and the host went on).
        return match repo.refname_to_id(&landing.branch) {
            Ok(tip) => crate::landing::contains(&repo, tip, new).map_err(landing_error(id)),
            Err(_) => Ok(false),
        };
    };
    // An unreachable remote cannot say: recovery must not guess.
    let (remote_repo, _) = crate::landing::open_remote(&repo, remote).map_err(landing_error(id))?;
    match remote_repo.refname_to_id(&landing.branch) {
        Ok(tip) => crate::landing::contains(&remote_repo, tip, new).map_err(landing_error(id)),
        Err(_) => Ok(false),
    }
}

/// A transaction that landed on its remote: this repository's branch
/// follows the remote's (see `follow`).
pub(super) fn follow_remote(
    root: &Path,
    landing: &crate::store::settings::TransactionLanding,
) -> Result<(), LandingError> {
    let (repo, old, new) = landing_ids(root, landing)?;
    follow(&repo, landing, old, new)
}

/// Remove the index lock a killed transaction left in the repository at
/// `root` ([`crate::landing::clear_stale_index_lock`]).
pub(super) fn clear_stale_index_lock(root: &Path) -> Result<(), LandingError> {
    crate::landing::open(root).and_then(|repo| crate::landing::clear_stale_index_lock(&repo))
}
