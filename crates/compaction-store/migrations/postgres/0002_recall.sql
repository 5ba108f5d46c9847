-- hermes-compaction session store, PostgreSQL schema version 2: recall of compacted content.
--
-- hermes_originals keeps the full original of every message trimmed at insertion time, keyed
-- by its handle, as the exact wire bytes the tool returned (BYTEA, like message bodies). Rows
-- are never deleted.
--
-- hermes_search is a full-text index (tsvector with the `simple` configuration, GIN) over what
-- compaction removed from the live transcript: archived message rows (indexed lazily, the first
-- time a search of their session runs after they were archived: `search_indexed` marks the rows
-- done) and trimmed originals (indexed when stored). Each document names its session, so
-- results never cross sessions. The index holds no copy of the text.

CREATE TABLE IF NOT EXISTS hermes_originals (
    session_id TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    handle     TEXT NOT NULL,
    body       BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, handle)
);

ALTER TABLE hermes_messages ADD COLUMN IF NOT EXISTS search_indexed BOOLEAN NOT NULL DEFAULT FALSE;

-- Archived rows not yet in the search index: what the next search of a session indexes.
CREATE INDEX IF NOT EXISTS hermes_messages_unindexed
    ON hermes_messages (session_id, id) WHERE NOT active AND NOT search_indexed;

CREATE TABLE IF NOT EXISTS hermes_search (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    row_id     BIGINT,
    handle     TEXT,
    tsv        TSVECTOR NOT NULL,
    CHECK ((row_id IS NULL) <> (handle IS NULL))
);

CREATE INDEX IF NOT EXISTS hermes_search_tsv ON hermes_search USING GIN (tsv);
CREATE INDEX IF NOT EXISTS hermes_search_session ON hermes_search (session_id);
