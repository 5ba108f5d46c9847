-- hermes-compaction session store, SQLite schema version 5: the continuation marker.
--
-- A pass that leaves no user message with text of the user's own adds a short user-role
-- continuation message beside its summary (marker kind `continuation`). It is no summary, but
-- its row says what it is like the summary markers do.
--
-- SQLite cannot change a CHECK constraint in place, so hermes_messages is rebuilt with the
-- wider one: every row copied with its id, the AUTOINCREMENT counter kept (ids are never
-- reused), the indexes recreated. No other table references hermes_messages.

CREATE TABLE hermes_messages_v5 (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id          TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    pos                 INTEGER NOT NULL,
    role                TEXT NOT NULL,
    kind                TEXT NOT NULL
                        CHECK (kind IN ('normal', 'batch', 'micro', 'progress', 'continuation')),
    body                BLOB NOT NULL,
    meta                TEXT,
    active              BOOLEAN NOT NULL,
    compacted           BOOLEAN NOT NULL,
    generation          INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    archived_at         INTEGER,
    search_indexed      BOOLEAN NOT NULL DEFAULT FALSE,
    archived_generation INTEGER,
    origin_id           INTEGER,
    pass_generation     INTEGER
);

INSERT INTO hermes_messages_v5 (
    id, session_id, pos, role, kind, body, meta, active, compacted, generation, created_at,
    archived_at, search_indexed, archived_generation, origin_id, pass_generation
)
SELECT
    id, session_id, pos, role, kind, body, meta, active, compacted, generation, created_at,
    archived_at, search_indexed, archived_generation, origin_id, pass_generation
FROM hermes_messages;

-- The counter of the old table (it may be past the largest id still present).
UPDATE sqlite_sequence
SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'hermes_messages'), 0))
WHERE name = 'hermes_messages_v5';

DROP TABLE hermes_messages;
ALTER TABLE hermes_messages_v5 RENAME TO hermes_messages;

CREATE UNIQUE INDEX IF NOT EXISTS hermes_messages_active_pos
    ON hermes_messages (session_id, pos) WHERE active;
CREATE INDEX IF NOT EXISTS hermes_messages_session_pos
    ON hermes_messages (session_id, pos, id);
CREATE INDEX IF NOT EXISTS hermes_messages_unindexed
    ON hermes_messages (session_id, id) WHERE NOT active AND NOT search_indexed;
CREATE INDEX IF NOT EXISTS hermes_messages_archived_generation
    ON hermes_messages (session_id, archived_generation) WHERE NOT active;
