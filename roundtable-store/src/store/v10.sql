-- roundtable store, schema version 10: landing through a remote (issue 18).
--
-- `transaction_landings.remote` names the bare repository a git-mode apply
-- pushes its commit to (its configured location), or is NULL when the
-- branch is this repository's own. With a remote, the push — the remote
-- branch moved from `old_id` to `new_id` by compare-and-swap — is the
-- commit point, and recovery asks the remote whether `new_id` landed.
ALTER TABLE transaction_landings ADD COLUMN remote TEXT;
