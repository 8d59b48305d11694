-- roundtable store, schema version 14: a git-mode landing that lost a
-- push race is replayed onto the remote's new tip (issue 34, item 6).
--
-- `transaction_landings` stays immutable except for one step: while its
-- transaction is `applying`, its `old_id` and `new_id` may move to the
-- replayed commit (written before that commit is pushed, so recovery asks
-- the remote for the commit that may have landed). Its branch, remote
-- and transaction never change, and nothing changes once the transaction
-- is finished.
DROP TRIGGER transaction_landings_immutable_u;
CREATE TRIGGER transaction_landings_immutable_u BEFORE UPDATE ON transaction_landings
WHEN NEW.transaction_id IS NOT OLD.transaction_id
  OR NEW.branch IS NOT OLD.branch
  OR NEW.remote IS NOT OLD.remote
  OR (SELECT status FROM transactions WHERE id = OLD.transaction_id) IS NOT 'applying'
BEGIN SELECT RAISE(ABORT, 'landings are immutable'); END;
