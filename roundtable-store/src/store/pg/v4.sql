-- roundtable store on PostgreSQL, schema version 4: the SQLite store's
-- schema version 14 — a git-mode landing that lost a push race is
-- replayed onto the remote's new tip (issue 34, item 6).
--
-- `transaction_landings` stays immutable except for one step: while its
-- transaction is `applying`, its `old_id` and `new_id` may move to the
-- replayed commit. Its branch, remote and transaction never change, and
-- nothing changes once the transaction is finished.
DROP TRIGGER transaction_landings_immutable_u ON transaction_landings;
CREATE TRIGGER transaction_landings_immutable_u BEFORE UPDATE ON transaction_landings
    FOR EACH ROW
    WHEN (NEW.transaction_id IS DISTINCT FROM OLD.transaction_id
       OR NEW.branch IS DISTINCT FROM OLD.branch
       OR NEW.remote IS DISTINCT FROM OLD.remote)
    EXECUTE FUNCTION roundtable_refuse('landings are immutable');
CREATE OR REPLACE FUNCTION roundtable_landing_applying() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT status FROM transactions WHERE id = OLD.transaction_id) IS DISTINCT FROM 'applying' THEN
        RAISE EXCEPTION 'landings are immutable';
    END IF;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS transaction_landings_applying_u ON transaction_landings;
CREATE TRIGGER transaction_landings_applying_u BEFORE UPDATE ON transaction_landings
    FOR EACH ROW EXECUTE FUNCTION roundtable_landing_applying();
