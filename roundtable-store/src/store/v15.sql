-- roundtable store, schema version 15: hosts share the landing queue's
-- work (issue 34, "many hosts").
--
-- A `queue.run` leases the entries of each lane it works on: `runner`
-- names the host that leased an entry last (its workspace clone and
-- orchestrator; kept once the lease ends, as the record of who ran it),
-- `lease_until` (milliseconds since the epoch) how long the lease holds
-- unless renewed (NULL: not leased). A lane holding an entry another
-- runner's lease holds is left to that runner; a lease not renewed
-- expires, so a host that died leaves its lanes to the others.
ALTER TABLE queue_entries ADD COLUMN runner TEXT;
ALTER TABLE queue_entries ADD COLUMN lease_until INTEGER;
CREATE INDEX queue_entries_leased ON queue_entries(lease_until) WHERE lease_until IS NOT NULL;
