-- hermes-compaction session store, SQLite schema version 2: recall of compacted content.
--
-- hermes_originals keeps the full original of every message trimmed at insertion time, keyed
-- by its handle, as the exact wire bytes the tool returned. Rows are never deleted.
--
-- hermes_search is a contentless FTS5 index over what compaction removed from the live
-- transcript: archived message rows (indexed lazily, the first time a search of their session
-- runs after they were archived: `search_indexed` marks the rows done) and trimmed originals
-- (indexed when stored). hermes_search_docs maps each index document to its session and source,
-- so results never cross sessions. The index holds no copy of the text.

CREATE TABLE IF NOT EXISTS hermes_originals (
    session_id TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    handle     TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, handle)
);

ALTER TABLE hermes_messages ADD COLUMN search_indexed BOOLEAN NOT NULL DEFAULT FALSE;

-- Archived rows not yet in the search index: what the next search of a session indexes.
CREATE INDEX IF NOT EXISTS hermes_messages_unindexed
    ON hermes_messages (session_id, id) WHERE NOT active AND NOT search_indexed;

CREATE TABLE IF NOT EXISTS hermes_search_docs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    row_id     INTEGER,
    handle     TEXT,
    CHECK ((row_id IS NULL) <> (handle IS NULL))
);

CREATE INDEX IF NOT EXISTS hermes_search_docs_session ON hermes_search_docs (session_id, id);

CREATE VIRTUAL TABLE IF NOT EXISTS hermes_search USING fts5 (
    body_text,
    content = '',
    tokenize = 'unicode61 remove_diacritics 2'
);
