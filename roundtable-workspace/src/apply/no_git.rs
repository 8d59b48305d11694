//! A build without the `git` feature: a git-mode landing is neither done
//! nor checked. Each step refuses ([`LandingError::NoGit`]); a transaction
//! with no landing (files mode) needs none of them.

use super::{landing_error, TransactionError};
use crate::landing::LandingError;
use crate::store::Store;
use crate::RepoPath;
use std::path::Path;

/// The refusal of every step.
fn no_git() -> LandingError {
    LandingError::NoGit {
        what: "a git-mode landing cannot be done, checked or recovered",
    }
}

/// Nothing to wait for: this build starts no push.
pub(super) fn await_push(_id: &str) {}

/// One transaction of a chain landing at one commit point.
pub(super) struct Link<'a> {
    /// The transaction.
    pub id: &'a str,
    /// Its landing.
    #[allow(dead_code)]
    pub landing: &'a crate::store::settings::TransactionLanding,
    /// The paths it changes.
    #[allow(dead_code)]
    pub paths: &'a [RepoPath],
    /// Its attribution record.
    #[allow(dead_code)]
    pub trace: Option<&'a crate::model::trace::TraceRecord>,
}

/// Refused: the commit point of a git-mode landing.
pub(super) fn land(
    _env: super::Env<'_>,
    chain: &[Link<'_>],
) -> Result<super::LandedChain, TransactionError> {
    Err(landing_error(chain.last().map_or("", |l| l.id))(no_git()))
}

/// Refused: writing a landed commit's note.
pub(super) fn write_note(
    _root: &Path,
    _landing: &crate::store::settings::TransactionLanding,
    _trace: &crate::model::trace::TraceRecord,
) -> Result<(), LandingError> {
    Err(no_git())
}

/// Refused: staging a landed commit in the index.
pub(super) fn stage(_root: &Path, _landed: &str, _paths: &[RepoPath]) -> Result<(), LandingError> {
    Err(no_git())
}

/// Refused: this repository's branch following its remote's.
pub(super) fn follow_remote(
    _env: super::Env<'_>,
    _landing: &crate::store::settings::TransactionLanding,
) -> Result<(), super::FastForwardError> {
    Err(no_git().into())
}

/// Refused: clearing a stale index lock.
pub(super) fn clear_stale_index_lock(_root: &Path) -> Result<(), LandingError> {
    Err(no_git())
}

/// Refused for transaction `id` if it landed in git mode (recovery must
/// not guess whether its branch moved); nothing to do for one in files
/// mode.
fn files_mode(store: &Store, id: &str) -> Result<(), TransactionError> {
    let landing = store.read(|tx| {
        Ok::<_, TransactionError>(crate::store::settings::transaction_landing(tx, id)?)
    })?;
    match landing {
        None => Ok(()),
        Some(_) => Err(landing_error(id)(no_git())),
    }
}

/// No ref locks to clear for a files-mode transaction; refused for a
/// git-mode one.
pub(super) fn clear_stale_locks(
    store: &Store,
    _root: &Path,
    id: &str,
) -> Result<(), TransactionError> {
    files_mode(store, id)
}

/// A files-mode transaction never lands as a commit (`false`); refused
/// for a git-mode one.
pub(super) fn landed(store: &Store, _root: &Path, id: &str) -> Result<bool, TransactionError> {
    files_mode(store, id).map(|()| false)
}
