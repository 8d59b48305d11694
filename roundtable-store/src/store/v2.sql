-- roundtable store, schema version 2: claims (leases with fencing tokens)
-- and versioned policies.

CREATE TABLE claims (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    agent_id      TEXT NOT NULL REFERENCES agents(id),
    resource_id   TEXT NOT NULL,          -- canonical spelling
    path          TEXT,                   -- the file or directory (NULL: the root)
    symbol        TEXT,                   -- the symbol name, for symbol claims
    start_line    INTEGER,                -- the symbol's span at acquisition
    end_line      INTEGER,
    type          TEXT NOT NULL CHECK (type IN ('write', 'read', 'review')),
    task_id       TEXT REFERENCES tasks(id),
    base_digest   TEXT NOT NULL,          -- the resource's digest at acquisition
    token         INTEGER NOT NULL UNIQUE CHECK (token >= 1),  -- fencing token, grows per store
    acquired_at   INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    released_at   INTEGER
) STRICT;
CREATE INDEX claims_by_agent ON claims(agent_id, seq);
CREATE INDEX claims_live ON claims(released_at, expires_at);

-- The fencing-token counter: never reset, never reused.
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT;
INSERT INTO counters (name, value) VALUES ('claim_token', 0);

CREATE TABLE policies (
    version      INTEGER PRIMARY KEY CHECK (version >= 1),
    status       TEXT NOT NULL CHECK (status IN ('draft', 'active', 'retired')),
    document     TEXT NOT NULL,           -- the TOML text as submitted
    digest       TEXT NOT NULL,           -- blob:sha256: of the document
    note_md      TEXT,
    created_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    activated_at INTEGER,
    retired_at   INTEGER
) STRICT;
-- At most one active policy.
CREATE UNIQUE INDEX policies_one_active ON policies(status) WHERE status = 'active';
CREATE TRIGGER policies_document_immutable BEFORE UPDATE OF document, digest ON policies
BEGIN SELECT RAISE(ABORT, 'policy documents are immutable'); END;
CREATE TRIGGER policies_no_delete BEFORE DELETE ON policies
BEGIN SELECT RAISE(ABORT, 'policies are never deleted'); END;
