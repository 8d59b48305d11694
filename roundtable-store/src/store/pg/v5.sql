-- roundtable store on PostgreSQL, schema version 5: the SQLite store's
-- schema version 15 — hosts share the landing queue's work (issue 34,
-- "many hosts").
--
-- `runner`: the host that leased an entry last (kept once the lease
-- ends); `lease_until`: until when its lease holds unless renewed
-- (milliseconds since the epoch; NULL: not leased).
ALTER TABLE queue_entries ADD COLUMN runner TEXT;
ALTER TABLE queue_entries ADD COLUMN lease_until BIGINT;
CREATE INDEX queue_entries_leased ON queue_entries(lease_until) WHERE lease_until IS NOT NULL;
