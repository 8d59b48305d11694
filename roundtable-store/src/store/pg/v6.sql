-- roundtable store on PostgreSQL, schema version 6: the SQLite store's
-- schema version 16 — attribution records (issue 36, provenance).
--
-- `trace_records`: each landing's Agent Trace record (JSON), written in
-- the journal's own SQL transaction; immutable.
CREATE TABLE trace_records (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions(id),
    record         TEXT NOT NULL
);
CREATE TRIGGER trace_records_immutable_u BEFORE UPDATE ON trace_records
    FOR EACH ROW EXECUTE FUNCTION roundtable_refuse('trace records are immutable');

-- An agent's model (models.dev convention, `provider/model`) and the link
-- to its session or conversation, as the host registers them: an
-- attribution record names them (the contributor's `model_id`, the
-- conversation's `url`).
ALTER TABLE agents ADD COLUMN model_id TEXT;
ALTER TABLE agents ADD COLUMN session_url TEXT;
