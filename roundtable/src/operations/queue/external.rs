//! External checks of the landing queue: `[checks.NAME] external = true`.
//!
//! The engine does not run such a check. When a round stacks a
//! speculative state that needs one, the state is left where a runner can
//! take it — in git mode a commit on the branch tip holding the whole
//! stack, under `refs/roundtable/queue/ENTRY`; otherwise a copy of the
//! tree with the stack written over it, in
//! `.roundtable/queue/ENTRY/DIGEST/` — and announced once: a
//! `queue.check_requested` event (subject: the entry) and an item in the
//! orchestrator's inbox ([`NextAction::RunQueueCheck`], with a
//! [`QueueCheckRequest`]). The proposal and those behind it in its lane
//! stay queued; the run goes on with the other lanes. Every state of a
//! lane is announced at once (each answered on its own proposal), and
//! the engine's own checks run on a state once its external checks
//! passed; the lane's batch lands up to the longest state that passed
//! every check, in one step.
//!
//! The answer is a `test.record` of the check's name on the proposal's
//! latest revision, recorded after the request (its note naming no other
//! state's digest). A later round that stacks the same state (the same
//! workspace state under it, the same revisions stacked: the same
//! [`QueueCheckRequestedData::state`]) takes a passed answer as the check
//! passing; a failed or errored one hands the proposal back
//! (`check_failed`, the answer's note as the output) whatever the state
//! (the failed result already stops it landing). A state that changed (the
//! branch moved, a proposal ahead left) voids the request: the new state
//! is announced. No answer within the check's `timeout_s` is an errored
//! run, recorded and handed back like any other.
//!
//! What was left for a runner is removed once its entry settles (and when
//! a new state of the same entry is announced): [`sweep`] runs after
//! every `queue.run` and `queue.remove`.

use super::checks::CheckRun;
use super::{Files, Item, QueueRun, State};
use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::model::{
    Event, EventData, EventKind, QueueCheckRequestedData, QueueEntry, QueueStatus, TestStatus,
};
use crate::operations::next::NextAction;
use crate::operations::records::ProposalRecord as _;
use crate::operations::{write_cx, ToolError};
use crate::policy::Policy;
use crate::store;
use crate::store::sql::Tx;
use roundtable_base::state_hash::{StateHash, STATE_PREFIX};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The directory under the workspace root that holds the states left
/// for external checks in files mode, one subdirectory per entry.
pub(crate) const STATES_DIR: &str = ".roundtable/queue";

/// The ref namespace of the speculative commits left for external checks
/// in git mode, one ref per entry.
pub(crate) const REF_PREFIX: &str = "refs/roundtable/queue/";

/// A speculative state waiting for an external check's answer, as the
/// orchestrator's inbox names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueCheckRequest {
    /// The queue entry whose state it is.
    pub entry_id: String,
    /// The check (`[checks.NAME]`, `external = true`).
    pub name: String,
    /// The proposals ahead of it in the state, in order (the state is the
    /// branch, these, and the proposal).
    pub ahead: Vec<String>,
    /// The state's digest (name it in the answer's note to bind the answer
    /// to this state).
    pub state: StateHash,
    /// Git mode: the speculative commit to test (also at
    /// `refs/roundtable/queue/ENTRY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Files mode: the directory holding the state to test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When it was announced.
    pub requested_at: Timestamp,
    /// How long the queue waits for the answer, in seconds.
    pub timeout_s: u32,
}

/// One announced request, read back from its event.
#[derive(Debug, Clone)]
struct Requested {
    /// Its event's seq: an answer is a `test.recorded` after it.
    seq: i64,
    at: Timestamp,
    data: QueueCheckRequestedData,
    /// The answers recorded after it (test result ids, oldest first).
    answers: Vec<String>,
}

/// Each check's latest request for `entry_id` among `events` (a
/// proposal's `queue.check_requested` and `test.recorded`, in order),
/// with the `test.recorded` of that check's name on the requested
/// revision after it.
fn latest_requests(entry_id: &str, events: &[Event]) -> BTreeMap<String, Requested> {
    let mut out: BTreeMap<String, Requested> = BTreeMap::new();
    for e in events {
        match e.typed_data() {
            Some(EventData::QueueCheckRequested(data)) if e.subject == entry_id => {
                out.insert(
                    data.name.clone(),
                    Requested {
                        seq: e.seq,
                        at: e.at,
                        data,
                        answers: Vec::new(),
                    },
                );
            }
            Some(EventData::TestRecorded(t)) => {
                if let Some(r) = out
                    .get_mut(&t.name)
                    .filter(|r| r.data.revision == t.revision && r.seq < e.seq)
                {
                    r.answers.push(e.subject.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// The latest requests of `entry` (queued), per check name.
fn requests_of(tx: &Tx<'_>, entry: &QueueEntry) -> Result<BTreeMap<String, Requested>, ToolError> {
    let kinds = [
        EventKind::QueueCheckRequested.as_str(),
        EventKind::TestRecorded.as_str(),
    ];
    let events = store::events::matching(
        tx,
        &store::events::EventFilter {
            since: 0,
            proposal_id: Some(&entry.proposal_id),
            kinds: &kinds,
            actor: None,
        },
        i64::MAX,
    )?;
    Ok(latest_requests(&entry.id, &events))
}

/// The answer to `r`: the first result recorded after it whose note names
/// no other state's digest.
fn answer_to(tx: &Tx<'_>, r: &Requested) -> Result<Option<crate::model::TestResult>, ToolError> {
    let own = r.data.state.to_string();
    for id in &r.answers {
        let Some(t) = store::evidence::test_result(tx, id)? else {
            continue;
        };
        let note = t.note_md.as_deref().unwrap_or("");
        if names_other_state(note, &own) {
            continue;
        }
        return Ok(Some(t));
    }
    Ok(None)
}

/// Whether `note` names a state digest other than `own`.
fn names_other_state(note: &str, own: &str) -> bool {
    let prefix = STATE_PREFIX;
    note.match_indices(prefix).any(|(at, _)| {
        let digest: String = note[at..]
            .chars()
            .take(prefix.len() + 64)
            .collect::<String>();
        digest.parse::<StateHash>().is_ok() && digest != own
    })
}

/// The requests of open proposal `proposal_id` still waiting for an
/// answer (its queued entry's latest request per check, on `revision`,
/// unanswered): what the orchestrator's inbox lists.
pub(crate) fn waiting(
    tx: &Tx<'_>,
    proposal_id: &str,
    revision: u32,
    policy: &Policy,
) -> Result<Vec<QueueCheckRequest>, ToolError> {
    if policy.checks.external().next().is_none() {
        return Ok(Vec::new());
    }
    let Some(entry) = store::queue::queued_for(tx, proposal_id)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, r) in requests_of(tx, &entry)? {
        let external = policy.checks.external().any(|(n, _)| *n == name);
        if !external || r.data.revision != revision || answer_to(tx, &r)?.is_some() {
            continue;
        }
        out.push(QueueCheckRequest {
            entry_id: entry.id.clone(),
            name,
            ahead: r.data.ahead,
            state: r.data.state,
            commit: r.data.commit,
            path: r.data.path,
            requested_at: r.at,
            timeout_s: r.data.timeout_s,
        });
    }
    Ok(out)
}

/// What the inbox's item says to the orchestrator about `r`.
pub(crate) fn why(r: &QueueCheckRequest) -> String {
    let place = match (&r.commit, &r.path) {
        (Some(c), _) => format!("commit {c} ({REF_PREFIX}{})", r.entry_id),
        (None, Some(p)) => format!("the directory {p}"),
        (None, None) => "the state".to_owned(),
    };
    format!(
        "run the landing queue's external check {} on {place} (the branch{} and this proposal; {}) and answer it with test.record (name {}, this revision) within {} s",
        r.name,
        if r.ahead.is_empty() {
            String::new()
        } else {
            format!(", {}", r.ahead.join(", "))
        },
        r.state,
        r.name,
        r.timeout_s
    )
}

/// The action of an inbox item for a [`QueueCheckRequest`].
pub(crate) const ACTION: NextAction = NextAction::RunQueueCheck;

/// Before a round stacks anything: hand back every queued entry (but
/// `theirs`, leased to another host) whose
/// latest request of an external check was answered `failed` or
/// `errored` (the failed result keeps it from landing anyway), with the
/// answer's note. Whether any went back.
pub(super) fn take_failed_answers(
    engine: &Engine,
    actor: &Actor,
    policy: &Policy,
    theirs: &std::collections::BTreeSet<String>,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    if policy.checks.external().next().is_none() {
        return Ok(false);
    }
    let failed: Vec<(QueueEntry, u32, String)> = engine.store().read(|tx| {
        let mut failed = Vec::new();
        for entry in store::queue::list(tx, Some(QueueStatus::Queued), 0, i64::MAX)? {
            if theirs.contains(&entry.id) {
                continue;
            }
            let latest = super::Proposal::load(tx, &entry.proposal_id)?.latest_revision;
            for (name, r) in requests_of(tx, &entry)? {
                if r.data.revision != latest {
                    continue;
                }
                let Some(t) = answer_to(tx, &r)? else {
                    continue;
                };
                if t.status == TestStatus::Passed {
                    continue;
                }
                let note = format!(
                    "external check {name} {} on this proposal stacked on {} ({}):\n{}",
                    super::not_passed(t.status),
                    super::stacked_on(&r.data.ahead),
                    r.data.state,
                    t.note_md.as_deref().unwrap_or("(no note)")
                );
                failed.push((entry.clone(), r.data.revision, note));
                break;
            }
        }
        Ok::<_, ToolError>(failed)
    })?;
    super::hand_back_failed(engine, actor, failed, out)
}

/// The external checks of one round: the workspace state its states were
/// stacked on, and where states are left for runners.
pub(super) struct Round {
    base: StateHash,
    place: Place,
    external: Vec<(String, u32)>,
}

impl Round {
    /// `None` when the policy names no external check.
    pub(super) fn new(engine: &Engine, policy: &Policy) -> Result<Option<Round>, ToolError> {
        let external: Vec<(String, u32)> = policy
            .checks
            .external()
            .map(|(name, c)| (name.clone(), c.timeout_s))
            .collect();
        if external.is_empty() {
            return Ok(None);
        }
        Ok(Some(Round {
            base: base_state(engine, policy)?,
            place: Place::new(engine, policy)?,
            external,
        }))
    }

    /// The external checks' runs on `state` when every one is known — a
    /// passed, failed or errored answer to a request for this very state
    /// (recorded already), or an errored run once the request's
    /// `timeout_s` passed unanswered — else `None`: the state waits,
    /// announced now when the check's latest request was for another
    /// state (or none).
    pub(super) fn outcome(
        &mut self,
        engine: &Engine,
        actor: &Actor,
        items: &[Item],
        state: &State,
    ) -> Result<Option<Vec<CheckRun>>, ToolError> {
        let item = &items[state.item];
        let digest = state_digest(&self.base, items, state);
        let requests = engine.store().read(|tx| {
            let mut with_answers = BTreeMap::new();
            for (name, r) in requests_of(tx, &item.entry)? {
                let answer = answer_to(tx, &r)?;
                with_answers.insert(name, (r, answer));
            }
            Ok::<_, ToolError>(with_answers)
        })?;
        let now = engine.now();
        let mut runs = Vec::new();
        let mut waits = false;
        let mut announce = Vec::new();
        for (name, timeout_s) in &self.external {
            let current = requests
                .get(name)
                .filter(|(r, _)| r.data.state == digest && r.data.revision == item.revision.number);
            match current {
                Some((_, Some(t))) => runs.push(CheckRun {
                    name: name.clone(),
                    status: t.status,
                    output: format!(
                        "external check answered by {} ({}) on {}{}",
                        t.recorded_by,
                        t.id,
                        digest,
                        t.note_md
                            .as_deref()
                            .map(|n| format!(":\n{n}"))
                            .unwrap_or_default()
                    ),
                    duration_ms: t.duration_ms.unwrap_or(0),
                    recorded: true,
                }),
                Some((r, None)) if now.0 >= r.at.0 + i64::from(r.data.timeout_s) * 1000 => {
                    runs.push(CheckRun {
                        name: name.clone(),
                        status: TestStatus::Errored,
                        output: format!(
                            "timed out: no test.record answered the external check {name} within its timeout of {} s (requested for {})",
                            r.data.timeout_s, r.data.state
                        ),
                        duration_ms: u64::try_from(now.0 - r.at.0).unwrap_or(0),
                        recorded: false,
                    });
                }
                Some((_, None)) => waits = true,
                None => {
                    waits = true;
                    announce.push((name.clone(), *timeout_s));
                }
            }
        }
        if !announce.is_empty() {
            let (commit, path) = match self.place.leave(engine, item, state, &digest) {
                Ok(where_) => where_,
                Err(e) => {
                    // Nowhere to leave it: the checks error on this state.
                    runs.extend(announce.into_iter().map(|(name, _)| CheckRun {
                        name,
                        status: TestStatus::Errored,
                        output: format!("the state could not be left for the external check: {e}"),
                        duration_ms: 0,
                        recorded: false,
                    }));
                    return Ok(Some(runs));
                }
            };
            write_cx(engine, actor, |cx| {
                for (name, timeout_s) in &announce {
                    cx.event(
                        &item.entry.id,
                        Some(&item.proposal.id),
                        QueueCheckRequestedData {
                            revision: item.revision.number,
                            name: name.clone(),
                            ahead: state.ahead.clone(),
                            state: digest,
                            commit: commit.clone(),
                            path: path.clone(),
                            timeout_s: *timeout_s,
                        },
                    )?;
                }
                Ok(())
            })?;
        }
        Ok((!waits).then_some(runs))
    }
}

/// The workspace state the round's states were stacked on (the whole
/// tree and git `HEAD`).
fn base_state(engine: &Engine, policy: &Policy) -> Result<StateHash, ToolError> {
    let options = crate::state::StateOptions {
        ignore: Some(&policy.workspace.ignore),
        ..crate::state::StateOptions::default()
    };
    Ok(crate::state::compute_state_with(engine.root(), options)?.state)
}

/// The digest of a state: the workspace state under it and each revision
/// stacked (the ones ahead, then its own), in order.
fn state_digest(base: &StateHash, items: &[Item], state: &State) -> StateHash {
    let mut h = sha2::Sha256::new();
    h.update(b"roundtable-queue-state\0\x01");
    h.update(base.as_bytes());
    let own = &items[state.item];
    let stacked = state
        .ahead
        .iter()
        .filter_map(|id| items.iter().find(|i| i.proposal.id == *id))
        .chain(std::iter::once(own));
    for i in stacked {
        h.update((i.proposal.id.len() as u64).to_le_bytes());
        h.update(i.proposal.id.as_bytes());
        h.update(i.revision.number.to_le_bytes());
    }
    StateHash::from_bytes(h.finalize().into())
}

/// Where states are left: the landing branch (git mode) or the
/// workspace's state directory (files mode), with what leaving one needs.
enum Place {
    Files {
        /// The files the workspace state lists, read once per round.
        listed: Option<Vec<Vec<u8>>>,
        ignore: crate::policy::IgnoreList,
    },
    #[cfg(feature = "git")]
    Git { branch: String },
}

impl Place {
    fn new(engine: &Engine, policy: &Policy) -> Result<Place, ToolError> {
        let landing = engine
            .store()
            .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
        match landing.branch_ref() {
            #[cfg(feature = "git")]
            Some(branch) => Ok(Place::Git { branch }),
            _ => Ok(Place::Files {
                listed: None,
                ignore: policy.workspace.ignore.clone(),
            }),
        }
    }

    /// Leave `state` (of `item`, digest `digest`) for a runner, replacing
    /// what was left for the entry before: the commit (git mode) or the
    /// directory (files mode).
    fn leave(
        &mut self,
        engine: &Engine,
        item: &Item,
        state: &State,
        digest: &StateHash,
    ) -> Result<(Option<String>, Option<String>), ToolError> {
        match self {
            Place::Files { listed, ignore } => {
                let files = match listed {
                    Some(f) => f,
                    None => {
                        let options = crate::state::StateOptions {
                            ignore: Some(ignore),
                            ..crate::state::StateOptions::default()
                        };
                        listed.insert(crate::state::listed_files(engine.root(), &options)?)
                    }
                };
                let path =
                    leave_files(engine.root(), &item.entry.id, files, &state.overlay, digest)
                        .map_err(|e| {
                            ToolError::new(
                                format!(
                                    "{}: the state could not be left for an external check: {e}",
                                    states_dir(engine.root()).display()
                                ),
                                crate::operations::details::IoDetails {
                                    path: Some(STATES_DIR.to_owned()),
                                    ..crate::operations::details::IoDetails::default()
                                },
                            )
                        })?;
                Ok((None, Some(path.display().to_string())))
            }
            #[cfg(feature = "git")]
            Place::Git { branch } => {
                let commit = leave_commit(engine, branch, item, state, digest)?;
                Ok((Some(commit), None))
            }
        }
    }
}

/// `<root>/.roundtable/queue`.
fn states_dir(root: &Path) -> PathBuf {
    root.join(STATES_DIR)
}

/// Copy the tree at `root` (`files`) with `overlay` written over it into
/// `.roundtable/queue/ENTRY/DIGEST` (written beside it and renamed in, so
/// a runner never sees half a state), removing the entry's other states;
/// the directory.
fn leave_files(
    root: &Path,
    entry_id: &str,
    files: &[Vec<u8>],
    overlay: &Files,
    digest: &StateHash,
) -> std::io::Result<PathBuf> {
    let entry_dir = states_dir(root).join(entry_id);
    std::fs::create_dir_all(&entry_dir)?;
    let hex = roundtable_base::hex::encode(digest.as_bytes());
    let to = entry_dir.join(&hex[..16]);
    for old in std::fs::read_dir(&entry_dir)? {
        let old = old?.path();
        if old != to {
            remove_any(&old)?;
        }
    }
    if !to.exists() {
        let fresh = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(&entry_dir)?;
        super::checks::materialize_into(root, files, overlay, fresh.path())?;
        std::fs::rename(fresh.keep(), &to)?;
    }
    Ok(to)
}

/// Remove a file or a directory tree.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Write the stack of `state` as one commit on `branch`'s tip (each file
/// as `git add` makes it) and point `refs/roundtable/queue/ENTRY` at it;
/// the commit's id.
#[cfg(feature = "git")]
fn leave_commit(
    engine: &Engine,
    branch: &str,
    item: &Item,
    state: &State,
    digest: &StateHash,
) -> Result<String, ToolError> {
    use crate::changeset::{Changeset, FileChange, FileContent, Operation};
    use crate::landing;
    let repo = landing::open(engine.root())?;
    let tip = repo.refname_to_id(branch).map_err(|source| {
        ToolError::from(landing::LandingError::Git {
            what: "read the branch",
            source,
        })
    })?;
    let files = state
        .overlay
        .iter()
        .map(|(path, f)| FileChange {
            path: path.clone(),
            operation: if f.is_some() {
                Operation::Modify
            } else {
                Operation::Delete
            },
            before: None,
            after: f.as_ref().map(|f| FileContent {
                data: f.data.clone(),
                executable: f.executable,
                symlink: f.symlink,
            }),
        })
        .collect();
    let changeset = Changeset::new(files)
        .map_err(|e| ToolError::invalid_argument("changeset", e.to_string()))?;
    let converted = landing::convert(&repo, &changeset)?;
    let blobs = converted.as_ref().map_or(&changeset, |c| &c.blobs);
    let who = landing::Identity {
        name: "roundtable queue".to_owned(),
        email: "queue@orchestrator.roundtable".to_owned(),
        seconds: engine.now().0.div_euclid(1000),
        offset_minutes: 0,
    };
    let mut stacked = state.ahead.clone();
    stacked.push(item.proposal.id.clone());
    let message = format!(
        "Speculative state of queue entry {}\n\nThe branch with {} stacked on it, for the landing queue's external checks.\n\nRoundtable-Queue-Entry: {}\nRoundtable-Queue-State: {}\n",
        item.entry.id,
        stacked.join(", "),
        item.entry.id,
        digest
    );
    let built = landing::build_commit(&repo, tip, blobs, &message, &who, &who)?;
    repo.reference(
        &format!("{REF_PREFIX}{}", item.entry.id),
        built.id,
        true,
        "roundtable: a speculative state for an external check",
    )
    .map_err(|source| {
        ToolError::from(landing::LandingError::Git {
            what: "write the queue's ref",
            source,
        })
    })?;
    Ok(built.id.to_string())
}

/// Remove what was left for external checks of entries no longer queued:
/// their directories under `.roundtable/queue/` and their refs under
/// `refs/roundtable/queue/`. Best effort past the store read: a leftover
/// is removed by the next sweep.
pub(crate) fn sweep(engine: &Engine) -> Result<(), ToolError> {
    let dir = states_dir(engine.root());
    let has_dir = dir.is_dir();
    #[cfg(feature = "git")]
    let repo = crate::landing::open(engine.root()).ok();
    #[cfg(feature = "git")]
    let refs: Vec<String> = repo
        .as_ref()
        .and_then(|r| r.references_glob(&format!("{REF_PREFIX}*")).ok())
        .map(|refs| {
            refs.filter_map(|r| r.ok().and_then(|r| r.name().ok().map(str::to_owned)))
                .collect()
        })
        .unwrap_or_default();
    #[cfg(not(feature = "git"))]
    let refs: Vec<String> = Vec::new();
    if !has_dir && refs.is_empty() {
        return Ok(());
    }
    let queued: std::collections::BTreeSet<String> = engine.store().read(|tx| {
        Ok::<_, ToolError>(
            store::queue::list(tx, Some(QueueStatus::Queued), 0, i64::MAX)?
                .into_iter()
                .map(|e| e.id)
                .collect(),
        )
    })?;
    if has_dir {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !queued.contains(&name) {
                    let _ = remove_any(&e.path());
                }
            }
        }
    }
    #[cfg(feature = "git")]
    if let Some(repo) = &repo {
        for name in refs {
            let entry = name.strip_prefix(REF_PREFIX).unwrap_or_default();
            if !queued.contains(entry) {
                if let Ok(mut r) = repo.find_reference(&name) {
                    let _ = r.delete();
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::Actor;
    use crate::id::Id;
    use crate::model::TestRecordedData;

    fn event(seq: i64, subject: &str, data: impl Into<EventData>) -> Event {
        let data: EventData = data.into();
        Event {
            seq,
            kind: data.kind(),
            actor: Actor::orchestrator(Id::new("host").expect("id")),
            subject: subject.to_owned(),
            proposal_id: Some("p1".into()),
            data: data.data_value(),
            at: Timestamp(seq * 1000),
            prev_digest: String::new(),
            digest: String::new(),
        }
    }

    fn requested(name: &str, revision: u32, state: u8) -> QueueCheckRequestedData {
        QueueCheckRequestedData {
            revision,
            name: name.to_owned(),
            ahead: Vec::new(),
            state: StateHash::from_bytes([state; 32]),
            commit: None,
            path: None,
            timeout_s: 60,
        }
    }

    fn recorded(name: &str, revision: u32) -> TestRecordedData {
        TestRecordedData {
            revision,
            name: name.to_owned(),
            status: TestStatus::Passed,
        }
    }

    #[test]
    fn issue34_item2_an_answer_is_a_result_of_the_name_and_revision_after_the_latest_request() {
        let events = vec![
            event(1, "t-early", recorded("e2e", 1)),
            event(2, "q1", requested("e2e", 1, 1)),
            event(3, "t-other-name", recorded("lint", 1)),
            event(4, "t-other-revision", recorded("e2e", 2)),
            event(5, "t-answer", recorded("e2e", 1)),
            event(6, "q-other-entry", requested("e2e", 1, 9)),
            event(7, "q1", requested("lint", 1, 2)),
        ];
        let r = latest_requests("q1", &events);
        assert_eq!(r.len(), 2);
        assert_eq!(r["e2e"].answers, vec!["t-answer".to_owned()]);
        assert_eq!(r["e2e"].data.state, StateHash::from_bytes([1; 32]));
        assert!(r["lint"].answers.is_empty());
        // A new request for the check voids the answers to the old one.
        let mut again = events.clone();
        again.push(event(8, "q1", requested("e2e", 1, 3)));
        let r = latest_requests("q1", &again);
        assert!(r["e2e"].answers.is_empty());
        assert_eq!(r["e2e"].seq, 8);
    }

    #[test]
    fn issue34_item2_a_note_naming_another_state_answers_that_state() {
        let own = StateHash::from_bytes([1; 32]).to_string();
        let other = StateHash::from_bytes([2; 32]).to_string();
        assert!(!names_other_state("all green", &own));
        assert!(!names_other_state(&format!("tested {own}: ok"), &own));
        assert!(names_other_state(&format!("tested {other}: ok"), &own));
        assert!(!names_other_state("state:sha256:not-a-digest", &own));
    }
}
