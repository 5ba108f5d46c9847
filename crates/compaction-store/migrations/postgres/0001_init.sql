-- hermes-compaction session store, PostgreSQL schema version 1.
-- Times are unix milliseconds. `pos` is the ordering key: appends use wide strides so that a
-- compaction can place its rows between neighbours without renumbering the session.
-- The message body is BYTEA (its UTF-8 bytes), so the stored text is exactly what was
-- appended whatever the database encoding, and PostgreSQL's NUL restrictions never apply.

CREATE TABLE IF NOT EXISTS hermes_sessions (
    id                TEXT PRIMARY KEY,
    generation        BIGINT NOT NULL DEFAULT 0,
    last_pos          BIGINT NOT NULL DEFAULT 0,
    cooldown_until_ms BIGINT,
    ineffective_count BIGINT NOT NULL DEFAULT 0,
    state_extra       TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS hermes_messages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    pos         BIGINT NOT NULL,
    role        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('normal', 'batch', 'micro', 'progress')),
    body        BYTEA NOT NULL,
    meta        TEXT,
    active      BOOLEAN NOT NULL,
    compacted   BOOLEAN NOT NULL,
    generation  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    archived_at BIGINT
);

-- What a resumed session loads, and the neighbour lookups of a commit.
CREATE UNIQUE INDEX IF NOT EXISTS hermes_messages_active_pos
    ON hermes_messages (session_id, pos) WHERE active;

-- Audit order (active and archived rows).
CREATE INDEX IF NOT EXISTS hermes_messages_session_pos
    ON hermes_messages (session_id, pos, id);
