-- roundtable store, schema version 1.
-- Times are milliseconds since the Unix epoch (UTC). Records that judge or
-- describe one revision are immutable: triggers refuse UPDATE and DELETE.

CREATE TABLE blobs (
    digest TEXT PRIMARY KEY,            -- blob:sha256:<hex> of data
    size   INTEGER NOT NULL,
    data   BLOB NOT NULL
) STRICT;

CREATE TABLE agents (
    id           TEXT PRIMARY KEY,
    roles        TEXT NOT NULL,         -- JSON array of role names, sorted
    enabled      INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    display_name TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

CREATE TABLE tasks (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    summary_md TEXT,
    created_by TEXT NOT NULL,           -- kind:id of the actor
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE proposals (
    seq             INTEGER PRIMARY KEY,  -- keyset order for listing
    id              TEXT NOT NULL UNIQUE,
    task_id         TEXT NOT NULL REFERENCES tasks(id),
    author          TEXT NOT NULL REFERENCES agents(id),
    title           TEXT NOT NULL,
    summary_md      TEXT NOT NULL,
    risk            TEXT NOT NULL CHECK (risk IN ('low', 'normal', 'high', 'critical')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'in_review', 'applied', 'rejected', 'withdrawn')),
    latest_revision INTEGER NOT NULL CHECK (latest_revision >= 1),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX proposals_by_status ON proposals(status, seq);
CREATE INDEX proposals_by_task ON proposals(task_id, seq);
CREATE INDEX proposals_by_author ON proposals(author, seq);

CREATE TABLE revisions (
    proposal_id        TEXT NOT NULL REFERENCES proposals(id),
    number             INTEGER NOT NULL CHECK (number >= 1),
    format             TEXT NOT NULL CHECK (format IN ('patch', 'edit_plan')),
    digest             TEXT NOT NULL REFERENCES blobs(digest),
    changeset          TEXT NOT NULL,     -- JSON: per-file operation, before and after
    changeset_digest   TEXT NOT NULL,     -- sha256 of the canonical changeset JSON
    affected_resources TEXT NOT NULL,     -- JSON array of canonical resource ids
    base_state         TEXT NOT NULL,     -- state:sha256:<hex> when the revision was made
    base_git_head      TEXT,
    note_md            TEXT,
    created_by         TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (proposal_id, number)
) STRICT;

CREATE TABLE votes (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    proposal_id TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    vote        TEXT NOT NULL CHECK (vote IN ('approve', 'approve_with_notes', 'revise', 'reject', 'veto', 'abstain')),
    reason_md   TEXT,
    created_at  INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX votes_by_proposal ON votes(proposal_id, seq);

CREATE TABLE decisions (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    proposal_id TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    decision    TEXT NOT NULL CHECK (decision IN ('accept', 'reject', 'defer')),
    reason_md   TEXT NOT NULL,
    decided_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX decisions_by_proposal ON decisions(proposal_id, seq);

CREATE TABLE security_reviews (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    proposal_id TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    verdict     TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
    note_md     TEXT,
    reviewer    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX security_reviews_by_proposal ON security_reviews(proposal_id, seq);

CREATE TABLE human_approval_requests (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    proposal_id  TEXT NOT NULL,
    revision     INTEGER NOT NULL,
    reason_md    TEXT,
    requested_by TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX human_approval_requests_by_proposal ON human_approval_requests(proposal_id, seq);

CREATE TABLE human_approvals (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    proposal_id TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    request_id  TEXT REFERENCES human_approval_requests(id),
    human_id    TEXT NOT NULL,
    note_md     TEXT,
    created_at  INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX human_approvals_by_proposal ON human_approvals(proposal_id, seq);

CREATE TABLE test_results (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    proposal_id TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'skipped', 'errored')),
    duration_ms INTEGER,
    note_md     TEXT,
    recorded_by TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    FOREIGN KEY (proposal_id, revision) REFERENCES revisions(proposal_id, number)
) STRICT;
CREATE INDEX test_results_by_proposal ON test_results(proposal_id, seq);

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY CHECK (seq >= 1),
    kind        TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    subject     TEXT NOT NULL,          -- id of the record the event is about
    proposal_id TEXT,
    data        TEXT NOT NULL,          -- JSON object
    at          INTEGER NOT NULL,
    prev_digest TEXT NOT NULL,          -- digest of event seq-1 (zeros for the first)
    digest      TEXT NOT NULL           -- sha256 over this event's fields and prev_digest
) STRICT;
CREATE INDEX events_by_proposal ON events(proposal_id, seq);

CREATE TABLE idempotency (
    actor_kind     TEXT NOT NULL,
    actor_id       TEXT NOT NULL,
    key            TEXT NOT NULL,
    tool           TEXT NOT NULL,
    request_digest TEXT NOT NULL,       -- sha256 of the tool name and canonical arguments
    result         TEXT NOT NULL,       -- the JSON result returned the first time
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (actor_kind, actor_id, key)
) STRICT;

-- Immutable records: history is appended, never rewritten.
CREATE TRIGGER events_append_only_u BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_append_only_d BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER blobs_immutable_u BEFORE UPDATE ON blobs BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END;
CREATE TRIGGER revisions_immutable_u BEFORE UPDATE ON revisions BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
CREATE TRIGGER revisions_immutable_d BEFORE DELETE ON revisions BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
CREATE TRIGGER votes_immutable_u BEFORE UPDATE ON votes BEGIN SELECT RAISE(ABORT, 'votes are immutable'); END;
CREATE TRIGGER votes_immutable_d BEFORE DELETE ON votes BEGIN SELECT RAISE(ABORT, 'votes are immutable'); END;
CREATE TRIGGER decisions_immutable_u BEFORE UPDATE ON decisions BEGIN SELECT RAISE(ABORT, 'decisions are immutable'); END;
CREATE TRIGGER decisions_immutable_d BEFORE DELETE ON decisions BEGIN SELECT RAISE(ABORT, 'decisions are immutable'); END;
CREATE TRIGGER security_reviews_immutable_u BEFORE UPDATE ON security_reviews BEGIN SELECT RAISE(ABORT, 'security reviews are immutable'); END;
CREATE TRIGGER security_reviews_immutable_d BEFORE DELETE ON security_reviews BEGIN SELECT RAISE(ABORT, 'security reviews are immutable'); END;
CREATE TRIGGER human_approvals_immutable_u BEFORE UPDATE ON human_approvals BEGIN SELECT RAISE(ABORT, 'human approvals are immutable'); END;
CREATE TRIGGER human_approvals_immutable_d BEFORE DELETE ON human_approvals BEGIN SELECT RAISE(ABORT, 'human approvals are immutable'); END;
CREATE TRIGGER test_results_immutable_u BEFORE UPDATE ON test_results BEGIN SELECT RAISE(ABORT, 'test results are immutable'); END;
CREATE TRIGGER test_results_immutable_d BEFORE DELETE ON test_results BEGIN SELECT RAISE(ABORT, 'test results are immutable'); END;
