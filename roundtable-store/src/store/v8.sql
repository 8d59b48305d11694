-- roundtable store, schema version 8: agent-native change formats. A
-- revision may be submitted as a Codex `apply_patch` envelope
-- (`codex_patch`) or as SEARCH/REPLACE blocks (`search_replace`), besides a
-- unified diff (`patch`) and an edit plan (`edit_plan`). Where each hunk of
-- such a revision matched, and the rung of the matching ladder it needed,
-- is part of the stored changeset summary (`changeset`, each file's
-- `matches`), so no new column is needed.
--
-- SQLite cannot alter the CHECK on `format`, so the table is rebuilt as
-- store/v6.sql rebuilt `proposals`: with foreign keys off (`store::migrate`)
-- every row is copied, the old table (and its immutability triggers) is
-- dropped, the new one renamed into its place (the references from votes,
-- decisions, reviews, approvals and test results name `revisions` and so
-- resolve to it again), the triggers are recreated, and `store::migrate`
-- runs `PRAGMA foreign_key_check` before committing. `revisions` has no
-- index besides its primary key.
CREATE TABLE revisions_v8 (
    proposal_id        TEXT NOT NULL REFERENCES proposals(id),
    number             INTEGER NOT NULL CHECK (number >= 1),
    format             TEXT NOT NULL CHECK (format IN ('patch', 'edit_plan', 'codex_patch', 'search_replace')),
    digest             TEXT NOT NULL REFERENCES blobs(digest),
    changeset          TEXT NOT NULL,     -- JSON: per-file operation, before and after, hunk matches
    changeset_digest   TEXT NOT NULL,     -- sha256 of the canonical changeset JSON (without the matches)
    affected_resources TEXT NOT NULL,     -- JSON array of canonical resource ids
    base_state         TEXT NOT NULL,     -- state:sha256:<hex> when the revision was made
    base_git_head      TEXT,
    note_md            TEXT,
    created_by         TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    diff_digest        TEXT REFERENCES blobs(digest),
    rebased_from       INTEGER,
    change_id          TEXT,
    PRIMARY KEY (proposal_id, number)
) STRICT;
INSERT INTO revisions_v8 (proposal_id, number, format, digest, changeset, changeset_digest,
                          affected_resources, base_state, base_git_head, note_md, created_by,
                          created_at, diff_digest, rebased_from, change_id)
    SELECT proposal_id, number, format, digest, changeset, changeset_digest,
           affected_resources, base_state, base_git_head, note_md, created_by,
           created_at, diff_digest, rebased_from, change_id FROM revisions;
DROP TABLE revisions;
ALTER TABLE revisions_v8 RENAME TO revisions;
CREATE TRIGGER revisions_immutable_u BEFORE UPDATE ON revisions BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
CREATE TRIGGER revisions_immutable_d BEFORE DELETE ON revisions BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
