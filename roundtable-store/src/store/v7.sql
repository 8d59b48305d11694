-- roundtable store, schema version 7: rebase. A revision made by
-- proposal.rebase names the revision it rebases; every revision made from
-- this version on records its change without positions (`change_id`, the
-- digest of each file's hunks' removed and added lines and modes), which
-- is how a trivial rebase is recognised. Both are NULL in older rows. The
-- base and result contents of the touched files are stored as blobs.
ALTER TABLE revisions ADD COLUMN rebased_from INTEGER;
ALTER TABLE revisions ADD COLUMN change_id TEXT;
