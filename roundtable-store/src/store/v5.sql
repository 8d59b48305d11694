-- roundtable store, schema version 5: a journaled path may be a symbolic
-- link (its digest is then of the link's target). NULL, as in every row
-- journaled before this version, means a regular file.
ALTER TABLE transaction_files ADD COLUMN before_symlink INTEGER;
ALTER TABLE transaction_files ADD COLUMN after_symlink INTEGER;
