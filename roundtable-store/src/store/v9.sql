-- roundtable store, schema version 9: git landing (issue 18).
--
-- `settings` holds the workspace's own settings, one JSON value per key,
-- read by every process and front end: `landing` is how `patch.apply`
-- lands (`{"mode": "files"}` when absent, or `{"mode": "git", "branch":
-- "main", "remote": null}`).
--
-- `transaction_landings` records, in the journal's own SQL transaction,
-- the git side of a git-mode apply: the branch, the commit it was at when
-- the change was validated and the commit built for the change. Recovery
-- reads it: a branch at `new_id` means the change landed (the ref update
-- is the commit point) and the files and store are brought forward; any
-- other id means it did not, and the files go back to before.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,          -- JSON
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE transaction_landings (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions(id),
    branch         TEXT NOT NULL,      -- full ref name, refs/heads/...
    old_id         TEXT NOT NULL,      -- the branch's commit when validated
    new_id         TEXT NOT NULL       -- the commit built for the change
) STRICT;
CREATE TRIGGER transaction_landings_immutable_u BEFORE UPDATE ON transaction_landings BEGIN SELECT RAISE(ABORT, 'landings are immutable'); END;
