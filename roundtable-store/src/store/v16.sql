-- roundtable store, schema version 16: attribution records (issue 36,
-- provenance).
--
-- `trace_records` holds each landing's Agent Trace record (JSON: the
-- lines it added, attributed to the proposal's author, and what governed
-- it), written in the journal's own SQL transaction. In git mode the
-- landed commit's note under `refs/notes/agent-trace` is this record with
-- `vcs.revision` naming the commit; `provenance.verify` compares the two.
-- Immutable, as the journal is.
CREATE TABLE trace_records (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions(id),
    record         TEXT NOT NULL
);
CREATE TRIGGER trace_records_immutable_u BEFORE UPDATE ON trace_records BEGIN SELECT RAISE(ABORT, 'trace records are immutable'); END;

-- An agent's model (models.dev convention, `provider/model`) and the link
-- to its session or conversation, as the host registers them: an
-- attribution record names them (the contributor's `model_id`, the
-- conversation's `url`).
ALTER TABLE agents ADD COLUMN model_id TEXT;
ALTER TABLE agents ADD COLUMN session_url TEXT;
