//! The git side of a git-mode landing (the `git` feature): the commit
//! point, what recovery asks of the repository, and the index.

use super::{landing_error, FastForwardError, TransactionError};
use crate::changeset::{Changeset, FileChange, FileContent, Operation};
use crate::landing::LandingError;
use crate::store::Store;
use crate::workspace::{Workspace, WriteOptions};
use crate::RepoPath;
use std::path::Path;
use std::time::Duration;

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

/// How many times a push that lost the race for the remote's branch is
/// replayed onto the branch's new tip and pushed again before the
/// landing is refused.
const PUSH_REPLAYS: u32 = 5;

/// A pause of up to `attempt` × 20 ms, different on every host: hosts
/// that lost a push race to each other do not retry in lockstep.
fn jitter(attempt: u32) -> std::time::Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(attempt);
    std::time::Duration::from_millis(h.finish() % (u64::from(attempt) * 20 + 1))
}

/// One transaction of a chain that lands at one commit point: its id,
/// its landing (its commit, built on the one before it in the chain) and
/// the paths it changes.
pub(super) struct Link<'a> {
    /// The transaction.
    pub id: &'a str,
    /// Its landing.
    pub landing: &'a crate::store::settings::TransactionLanding,
    /// The paths it changes.
    pub paths: &'a [RepoPath],
    /// Its attribution record: its commit's note.
    pub trace: Option<&'a crate::model::trace::TraceRecord>,
}

/// Each link's note, for its commit as `current` has it: the commit and
/// the note's bytes (its record with `vcs.revision` naming the commit).
fn notes_of(
    chain: &[Link<'_>],
    current: &[crate::store::settings::TransactionLanding],
) -> Vec<(git2::Oid, Vec<u8>)> {
    chain
        .iter()
        .zip(current)
        .filter_map(|(link, landing)| {
            let trace = link.trace?;
            let commit = git2::Oid::from_str(&landing.new_id).ok()?;
            Some((commit, trace.at_commit(&landing.new_id).to_note()))
        })
        .collect()
}

/// The commit point of `chain` (transactions landing together, each
/// commit's parent the one before it, the first's the branch's tip) in
/// the repository of `env`'s workspace: the branch moves by ONE
/// compare-and-swap from the first's old commit to the last's new one —
/// with a remote, first the remote's (ONE push with a lease), then this
/// repository's follows.
///
/// Hosts sharing a store take turns to push to one remote's branch (a
/// lease in the store, [`crate::store::Store::lease`]; none on SQLite,
/// and a host that cannot have it in time pushes without it): with the
/// turn, the remote's branch is fetched and, when it moved since the
/// commits were built and the commits since touch none of the chain's
/// paths, each commit of the chain is replayed in order onto it
/// ([`crate::landing::replay`]) and recorded as its transaction's
/// landing (before it is pushed: recovery asks the remote for it) — so a
/// push that would lose the race is not sent.
///
/// A push refused all the same because the remote's branch moved
/// (another host won the race) fetches the new tip and is replayed and
/// pushed again in the same way, up to [`PUSH_REPLAYS`] times with a
/// random pause; when the commits since touch one of the paths, the
/// refusal stands (the change is stale).
///
/// Returns each link's landing as it landed and how following went; the
/// error is the commit point's (nothing landed), named by the last
/// transaction.
pub(super) fn land(
    env: super::Env<'_>,
    chain: &[Link<'_>],
) -> Result<super::LandedChain, TransactionError> {
    let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
        return Ok((Vec::new(), Ok(()), Ok(())));
    };
    let id = last.id;
    let root = env.workspace.root();
    let (repo, old, _) = landing_ids(root, first.landing).map_err(landing_error(id))?;
    let (_, _, new) = landing_ids(root, last.landing).map_err(landing_error(id))?;
    let mut current: Vec<_> = chain.iter().map(|l| l.landing.clone()).collect();
    let Some(remote) = &last.landing.remote else {
        crate::landing::move_branch(&repo, &last.landing.branch, old, new, "roundtable: land")
            .map_err(landing_error(id))?;
        // Right after the branch, under the same apply lock: a crash
        // between the two is finished by recovery, which writes the
        // notes a landed commit lacks.
        let notes = crate::landing::add_missing_notes(&repo, &notes_of(chain, &current)).map(drop);
        return Ok((current, Ok(()), notes));
    };
    let branch = last.landing.branch.as_str();
    let (remote_repo, location) =
        crate::landing::open_remote(&repo, remote).map_err(landing_error(id))?;
    let (mut base, mut commit) = (old, new);
    let (mut attempt, mut notes_attempt) = (0, 0);
    // Hosts pushing to one remote's branch take turns (a lease in the
    // shared store, when it has hosts to share it with): a push that
    // would lose the race is replayed before it is sent, not after.
    let turn = env.store.lease(&format!("push {location} {branch}"));
    // The notes move with the branch in the same atomic push: built on
    // the remote's notes, for the commits as they stand.
    let notes_update = |current: &[crate::store::settings::TransactionLanding]| {
        let entries = notes_of(chain, current);
        if entries.is_empty() {
            return Ok(None);
        }
        let tip = crate::landing::fetch_notes(&repo, &remote_repo)?;
        let new = crate::landing::build_notes(&repo, tip, &entries)?;
        Ok::<_, LandingError>(Some(crate::landing::NotesUpdate { expected: tip, new }))
    };
    // The remote's branch may have moved since the commits were built.
    if let Some(tip) = crate::landing::fetch(&repo, &remote_repo, branch)
        .ok()
        .flatten()
        .filter(|&tip| tip != base)
    {
        replayed_onto(env, &repo, chain, &mut current, tip, &mut base, &mut commit)?;
    }
    let mut notes = notes_update(&current).map_err(landing_error(id))?;
    loop {
        let pushed = crate::landing::push(
            &repo,
            &remote_repo,
            &location,
            crate::landing::BranchUpdate {
                branch,
                expected: base,
                new: commit,
            },
            notes.as_ref(),
            id,
        );
        let refusal = match pushed {
            Ok(()) => break,
            // Only the notes moved (another host's landing on another
            // branch, or a person's note): built again on them.
            Err(LandingError::NotesMoved { .. }) if notes_attempt < PUSH_REPLAYS => {
                notes_attempt += 1;
                notes = notes_update(&current).map_err(landing_error(id))?;
                continue;
            }
            Err(e @ LandingError::BranchMoved { .. }) if attempt < PUSH_REPLAYS => e,
            Err(e) => return Err(landing_error(id)(e)),
        };
        attempt += 1;
        let tip = crate::landing::fetch(&repo, &remote_repo, branch)
            .ok()
            .flatten();
        match tip {
            Some(tip)
                if replayed_onto(env, &repo, chain, &mut current, tip, &mut base, &mut commit)? => {
            }
            _ => return Err(landing_error(id)(refusal)),
        }
        notes = notes_update(&current).map_err(landing_error(id))?;
        std::thread::sleep(jitter(attempt));
    }
    drop(turn);
    let noted = notes.map_or(Ok(()), |n| crate::landing::follow_notes(&repo, n.new));
    // The commits from `old` to `commit` are this clone's own, its files
    // written, unless they were replayed onto another host's.
    let own = commit == new;
    let followed = follow(
        env.workspace,
        &repo,
        branch,
        old,
        commit,
        own,
        env.durable(),
    );
    Ok((current, followed, noted))
}

/// [`replay_onto`] `tip`, and when it could be replayed, `current`,
/// `base` and `commit` updated to the replay (whether it could).
fn replayed_onto(
    env: super::Env<'_>,
    repo: &git2::Repository,
    chain: &[Link<'_>],
    current: &mut Vec<crate::store::settings::TransactionLanding>,
    tip: git2::Oid,
    base: &mut git2::Oid,
    commit: &mut git2::Oid,
) -> Result<bool, TransactionError> {
    let id = chain.last().map_or("", |l| l.id);
    let Some(next) = replay_onto(env, repo, chain, current, *base, tip)? else {
        return Ok(false);
    };
    let last = next.last().map(|l| l.new_id.clone()).unwrap_or_default();
    *current = next;
    *base = tip;
    *commit = git2::Oid::from_str(&last).map_err(|source| {
        landing_error(id)(LandingError::Git {
            what: "read the new id",
            source,
        })
    })?;
    Ok(true)
}

/// When `tip` (the remote's branch, fetched) descends from `base` and the
/// commits between them touch none of `chain`'s paths: each commit of
/// `current` (the chain's landings as they stand) replayed in order onto
/// `tip` ([`crate::landing::replay`]) and recorded as its transaction's
/// landing, all in one store write (before the push: recovery asks the
/// remote for the commits that may have landed). `None` when it cannot
/// be replayed (the change is stale, or the branch was rewritten).
fn replay_onto(
    env: super::Env<'_>,
    repo: &git2::Repository,
    chain: &[Link<'_>],
    current: &[crate::store::settings::TransactionLanding],
    base: git2::Oid,
    tip: git2::Oid,
) -> Result<Option<Vec<crate::store::settings::TransactionLanding>>, TransactionError> {
    let id = chain.last().map_or("", |l| l.id);
    let paths: Vec<&RepoPath> = chain.iter().flat_map(|l| l.paths.iter()).collect();
    // Only forward: a tip that does not descend from the base was
    // rewritten, not moved on.
    if !crate::landing::contains(repo, tip, base).map_err(landing_error(id))?
        || crate::landing::first_changed(repo, base, tip, paths.iter().copied())
            .map_err(landing_error(id))?
            .is_some()
    {
        return Ok(None);
    }
    let mut next = Vec::with_capacity(current.len());
    let mut onto = tip;
    for (link, landing) in chain.iter().zip(current) {
        let (_, _, commit) =
            landing_ids(env.workspace.root(), landing).map_err(landing_error(id))?;
        let replayed =
            crate::landing::replay(repo, commit, onto, link.paths).map_err(landing_error(id))?;
        next.push(crate::store::settings::TransactionLanding {
            old_id: onto.to_string(),
            new_id: replayed.to_string(),
            ..landing.clone()
        });
        onto = replayed;
    }
    env.store.write(|tx| {
        for (link, landing) in chain.iter().zip(&next) {
            crate::store::settings::replace_transaction_landing(tx, link.id, landing)
                .map_err(TransactionError::from)?;
        }
        Ok::<_, TransactionError>(())
    })?;
    Ok(Some(next))
}

/// After the remote's branch moved to `new`, this repository's follows:
/// a branch at or past `new` stays; one at `old` when the commits from
/// `old` to `new` are this clone's `own` (built on it, their files
/// written) moves by compare-and-swap; one behind `new` otherwise (the
/// change was replayed onto commits another host landed) is brought
/// forward with its working tree ([`fast_forward`]).
fn follow(
    workspace: &Workspace,
    repo: &git2::Repository,
    branch: &str,
    old: git2::Oid,
    new: git2::Oid,
    own: bool,
    durable: bool,
) -> Result<(), FastForwardError> {
    let tip = repo
        .refname_to_id(branch)
        .map_err(|source| LandingError::Git {
            what: "read the branch",
            source,
        })?;
    // Already there, or past it (this clone landed or fetched later
    // changes since).
    if crate::landing::contains(repo, tip, new)? {
        return Ok(());
    }
    if tip == old && own {
        crate::landing::move_branch(repo, branch, old, new, "roundtable: landed on the remote")?;
        return Ok(());
    }
    fast_forward(workspace, repo, branch, tip, new, durable)
}

/// The only parent of commit `id`, if it has exactly one.
fn parent_of(repo: &git2::Repository, id: git2::Oid) -> Option<git2::Oid> {
    let commit = repo.find_commit(id).ok()?;
    (commit.parent_count() == 1).then(|| commit.parent_id(0).ok())?
}

/// Bring the branch `branch` of the repository at `workspace`'s root from
/// `from` forward to `to` (a descendant), as `git merge --ff-only` does:
/// each path that differs between the two commits is written as `git
/// checkout` of `to` writes it (all or nothing, through the workspace's
/// staged write; a path already at `to`'s state is left), then the
/// branch moves by compare-and-swap, then the index follows. A file that
/// is at neither commit's state (an uncommitted change) refuses it
/// (precondition failed) with nothing written; in a bare repository only
/// the branch moves.
pub fn fast_forward(
    workspace: &Workspace,
    repo: &git2::Repository,
    branch: &str,
    from: git2::Oid,
    to: git2::Oid,
    durable: bool,
) -> Result<(), FastForwardError> {
    if !crate::landing::contains(repo, to, from)? {
        return Err(LandingError::BranchMoved {
            remote: None,
            branch: branch.to_owned(),
            expected: format!("an ancestor of {to}"),
            actual: Some(from.to_string()),
        }
        .into());
    }
    if workspace.is_bare() {
        crate::landing::move_branch(repo, branch, from, to, "roundtable: fast-forward")?;
        return Ok(());
    }
    let paths = crate::landing::changed_paths(repo, from, to)?;
    let mut files = Vec::new();
    for path in &paths {
        let after = crate::landing::worktree_file(repo, to, path)?;
        if workspace.meta(path)? == after.as_ref().map(FileContent::meta) {
            continue;
        }
        let before = crate::landing::worktree_file(repo, from, path)?.map(|f| f.meta());
        let operation = match (&before, &after) {
            (None, _) => Operation::Create,
            (_, None) => Operation::Delete,
            _ => Operation::Modify,
        };
        files.push(FileChange {
            path: path.clone(),
            operation,
            before,
            after,
        });
    }
    let changeset = Changeset::new(files).map_err(|e| LandingError::InvalidInput {
        field: "branch",
        reason: e.to_string(),
    })?;
    workspace.apply_changeset_with(
        &changeset,
        &WriteOptions {
            durable,
            ..WriteOptions::default()
        },
    )?;
    crate::landing::move_branch(repo, branch, from, to, "roundtable: fast-forward")?;
    crate::landing::update_index(repo, to, &paths)?;
    Ok(())
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
    env: super::Env<'_>,
    landing: &crate::store::settings::TransactionLanding,
) -> Result<(), FastForwardError> {
    let (repo, old, new) = landing_ids(env.workspace.root(), landing)?;
    let own = parent_of(&repo, new) == Some(old);
    follow(
        env.workspace,
        &repo,
        &landing.branch,
        old,
        new,
        own,
        env.durable(),
    )
}

/// Remove the index lock a killed transaction left in the repository at
/// `root` ([`crate::landing::clear_stale_index_lock`]).
pub(super) fn clear_stale_index_lock(root: &Path) -> Result<(), LandingError> {
    crate::landing::open(root).and_then(|repo| crate::landing::clear_stale_index_lock(&repo))
}

/// Write the note of a landed git-mode transaction (`landing`, local:
/// without a remote, whose atomic push carries it) when its commit has
/// none: what a crash between the branch's move and the notes' left
/// undone.
pub(super) fn write_note(
    root: &Path,
    landing: &crate::store::settings::TransactionLanding,
    trace: &crate::model::trace::TraceRecord,
) -> Result<(), LandingError> {
    if landing.remote.is_some() {
        return Ok(());
    }
    let (repo, _, new) = landing_ids(root, landing)?;
    // The killed landing may have held the notes ref's lock: under the
    // apply lock no landing of this clone holds it, and one that stands
    // still for as long as a ref update waits has no live writer.
    crate::landing::clear_abandoned_lock(&repo, crate::model::trace::NOTES_REF, Duration::ZERO)?;
    crate::landing::add_missing_notes(&repo, &[(new, trace.at_commit(&landing.new_id).to_note())])
        .map(drop)
}
