-- roundtable store, schema version 3: transactions (one apply or rollback
-- attempt each), their per-file journal and their phases.

CREATE TABLE transactions (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL CHECK (kind IN ('apply', 'rollback')),
    proposal_id  TEXT NOT NULL REFERENCES proposals(id),
    revision     INTEGER NOT NULL,
    rollback_of  TEXT REFERENCES transactions(id),
    status       TEXT NOT NULL CHECK (status IN ('applying', 'applied', 'failed', 'recovered', 'rolled_back')),
    actor        TEXT NOT NULL,
    pid          INTEGER NOT NULL,        -- the applying process, for inspection
    durability   TEXT NOT NULL CHECK (durability IN ('full', 'normal', 'off')),
    before_digest TEXT NOT NULL,          -- sha256 over the touched paths' before states
    after_digest  TEXT NOT NULL,          -- sha256 over their after states
    error        TEXT,                    -- why it failed, as JSON
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER
) STRICT;
CREATE INDEX transactions_by_proposal ON transactions(proposal_id, seq);
CREATE INDEX transactions_by_status ON transactions(status, seq);

-- The journal: written and committed before the first file is touched.
CREATE TABLE transaction_files (
    transaction_id    TEXT NOT NULL REFERENCES transactions(id),
    path              TEXT NOT NULL,
    operation         TEXT NOT NULL,
    before_digest     TEXT REFERENCES blobs(digest),   -- NULL: absent before
    before_executable INTEGER,
    after_digest      TEXT,                            -- NULL: absent after
    after_executable  INTEGER,
    PRIMARY KEY (transaction_id, path)
) STRICT;

CREATE TABLE transaction_phases (
    seq            INTEGER PRIMARY KEY,
    transaction_id TEXT NOT NULL REFERENCES transactions(id),
    phase          TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    detail         TEXT NOT NULL,          -- JSON object
    at             INTEGER NOT NULL
) STRICT;
CREATE INDEX transaction_phases_by_transaction ON transaction_phases(transaction_id, seq);

CREATE TRIGGER transaction_files_immutable_u BEFORE UPDATE ON transaction_files
BEGIN SELECT RAISE(ABORT, 'the transaction journal is immutable'); END;
CREATE TRIGGER transaction_files_immutable_d BEFORE DELETE ON transaction_files
BEGIN SELECT RAISE(ABORT, 'the transaction journal is immutable'); END;
CREATE TRIGGER transaction_phases_append_only_u BEFORE UPDATE ON transaction_phases
BEGIN SELECT RAISE(ABORT, 'phases are append-only'); END;
CREATE TRIGGER transaction_phases_append_only_d BEFORE DELETE ON transaction_phases
BEGIN SELECT RAISE(ABORT, 'phases are append-only'); END;

-- Proposal listing filtered on two or three columns at once: one index per
-- combination, so such a page also costs O(limit), not O(rows matching one
-- filter).
CREATE INDEX proposals_by_task_status ON proposals(task_id, status, seq);
CREATE INDEX proposals_by_author_status ON proposals(author, status, seq);
CREATE INDEX proposals_by_task_author ON proposals(task_id, author, seq);
CREATE INDEX proposals_by_task_author_status ON proposals(task_id, author, status, seq);

-- Every revision as a unified diff: the patch itself, or an edit plan
-- rendered against the files it was made on (what reviewers read).
ALTER TABLE revisions ADD COLUMN diff_digest TEXT REFERENCES blobs(digest);
