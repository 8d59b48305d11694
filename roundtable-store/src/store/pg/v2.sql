-- roundtable store on PostgreSQL, schema version 2: the SQLite store's
-- schema version 12 — every permission bit of a journaled path before the
-- change (issue 31, item 14).
--
-- `transaction_files.before_mode` holds the permission bits (`st_mode &
-- 0o7777`) of the regular file at the path before the change, so a
-- rollback or recovery that recreates a file the change deleted (or
-- renamed away) gives it back its mode. NULL for a path that was absent or
-- a symbolic link, and for every row journaled before this version.
ALTER TABLE transaction_files ADD COLUMN before_mode BIGINT;
