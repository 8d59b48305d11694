-- roundtable store, schema version 4: each transaction records the
-- directories it creates (a JSON array of repository paths), journaled with
-- it, so a rollback or a recovery removes exactly those and never a
-- directory that was there before.
ALTER TABLE transactions ADD COLUMN created_dirs TEXT NOT NULL DEFAULT '[]';
