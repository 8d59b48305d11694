-- roundtable store, schema version 6: a proposal can be `rolled_back` (its
-- applied change was rolled back), and a proposal made by `proposal.revert`
-- names the proposal it reverts (`reverts`, NULL for every other one).
--
-- SQLite cannot alter a CHECK constraint, so the table is rebuilt the way
-- SQLite documents (https://www.sqlite.org/lang_altertable.html, "other kinds
-- of table schema changes"): the migration runs with foreign keys off (see
-- `store::migrate`), copies every row with its `seq` (the keyset order and
-- INTEGER PRIMARY KEY, so nothing renumbers), drops the old table, renames the
-- new one into its place (the references from `revisions` and `transactions`
-- name `proposals` and so resolve to it again), recreates every index, and
-- `store::migrate` runs `PRAGMA foreign_key_check` before committing.
CREATE TABLE proposals_v6 (
    seq             INTEGER PRIMARY KEY,  -- keyset order for listing
    id              TEXT NOT NULL UNIQUE,
    task_id         TEXT NOT NULL REFERENCES tasks(id),
    author          TEXT NOT NULL REFERENCES agents(id),
    title           TEXT NOT NULL,
    summary_md      TEXT NOT NULL,
    risk            TEXT NOT NULL CHECK (risk IN ('low', 'normal', 'high', 'critical')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'in_review', 'applied', 'rolled_back', 'rejected', 'withdrawn')),
    latest_revision INTEGER NOT NULL CHECK (latest_revision >= 1),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    reverts         TEXT REFERENCES proposals_v6(id)
) STRICT;
INSERT INTO proposals_v6 (seq, id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at, reverts)
    SELECT seq, id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at, NULL FROM proposals;
DROP TABLE proposals;
ALTER TABLE proposals_v6 RENAME TO proposals;
CREATE INDEX proposals_by_status ON proposals(status, seq);
CREATE INDEX proposals_by_task ON proposals(task_id, seq);
CREATE INDEX proposals_by_author ON proposals(author, seq);
CREATE INDEX proposals_by_task_status ON proposals(task_id, status, seq);
CREATE INDEX proposals_by_author_status ON proposals(author, status, seq);
CREATE INDEX proposals_by_task_author ON proposals(task_id, author, seq);
CREATE INDEX proposals_by_task_author_status ON proposals(task_id, author, status, seq);
CREATE INDEX proposals_by_reverts ON proposals(reverts) WHERE reverts IS NOT NULL;
