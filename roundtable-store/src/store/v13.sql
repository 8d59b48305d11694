-- roundtable store, schema version 13: the landing queue (issue 34).
--
-- One row per proposal the queue was asked to land, in queue order
-- (`seq`). A proposal has at most one `queued` entry; the entries it had
-- before (landed, returned, removed) stay as its history.
CREATE TABLE queue_entries (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    proposal_id    TEXT NOT NULL REFERENCES proposals(id),
    status         TEXT NOT NULL CHECK (status IN ('queued', 'landed', 'returned', 'removed')),
    enqueued_by    TEXT NOT NULL,
    enqueued_at    INTEGER NOT NULL,
    settled_at     INTEGER,
    return_reason  TEXT CHECK (return_reason IN ('check_failed', 'conflict', 'apply_refused')),
    note           TEXT,
    transaction_id TEXT
) STRICT;
CREATE UNIQUE INDEX queue_entries_one_queued ON queue_entries(proposal_id) WHERE status = 'queued';
CREATE INDEX queue_entries_by_status ON queue_entries(status, seq);
