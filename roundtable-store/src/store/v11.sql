-- roundtable store, schema version 11: many hosts on one store (issue 20).
--
-- `transactions.clone_id` names the workspace clone whose working tree an
-- apply writes (the id in `<root>/.roundtable/clone`): recovery on open
-- finishes only its own clone's transactions, never another host's in
-- flight. NULL for transactions made before: they are every opener's own.
ALTER TABLE transactions ADD COLUMN clone_id TEXT;
