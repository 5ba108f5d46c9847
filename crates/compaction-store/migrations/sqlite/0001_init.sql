-- hermes-compaction session store, SQLite schema version 1.
-- Times are unix milliseconds. `pos` is the ordering key: appends use wide strides so that a
-- compaction can place its rows between neighbours without renumbering the session.

CREATE TABLE IF NOT EXISTS hermes_sessions (
    id                TEXT PRIMARY KEY NOT NULL,
    generation        INTEGER NOT NULL DEFAULT 0,
    last_pos          INTEGER NOT NULL DEFAULT 0,
    cooldown_until_ms INTEGER,
    ineffective_count INTEGER NOT NULL DEFAULT 0,
    state_extra       TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS hermes_messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    pos         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('normal', 'batch', 'micro', 'progress')),
    body        BLOB NOT NULL,
    meta        TEXT,
    active      BOOLEAN NOT NULL,
    compacted   BOOLEAN NOT NULL,
    generation  INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    archived_at INTEGER
);

-- What a resumed session loads, and the neighbour lookups of a commit.
CREATE UNIQUE INDEX IF NOT EXISTS hermes_messages_active_pos
    ON hermes_messages (session_id, pos) WHERE active;

-- Audit order (active and archived rows).
CREATE INDEX IF NOT EXISTS hermes_messages_session_pos
    ON hermes_messages (session_id, pos, id);
