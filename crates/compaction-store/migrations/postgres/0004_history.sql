-- hermes-compaction session store, PostgreSQL schema version 4: history and restore.
--
-- Every row now records the generation that archived it (`archived_generation`), so the rows
-- active at any generation g are exactly those written at g or before and not archived by g:
-- `generation <= g AND (active OR archived_generation > g)`. A restore re-activates such a set
-- as copies (`origin_id` names the row each copy was made from); the archive is never
-- rewritten. `pass_generation` names the generation whose commit or restore inserted a row (an
-- appended row has none), so what a generation archived and what replaced it can be shown.
--
-- hermes_generations records what made each generation: the pass kind, tokens before and
-- after when the writer knew them, and for a restore the generation it went back to.
--
-- Rows archived before this migration carry no archived generation. Their generation is
-- unknown, so a session's history starts where this migration found it (`history_from`):
-- generations before it cannot be restored.

ALTER TABLE hermes_messages ADD COLUMN archived_generation BIGINT;
ALTER TABLE hermes_messages ADD COLUMN origin_id BIGINT;
ALTER TABLE hermes_messages ADD COLUMN pass_generation BIGINT;
ALTER TABLE hermes_sessions ADD COLUMN history_from BIGINT NOT NULL DEFAULT 0;
UPDATE hermes_sessions SET history_from = generation;

-- The archived rows a restore to an older generation looks for.
CREATE INDEX IF NOT EXISTS hermes_messages_archived_generation
    ON hermes_messages (session_id, archived_generation) WHERE NOT active;

CREATE TABLE IF NOT EXISTS hermes_generations (
    session_id    TEXT NOT NULL REFERENCES hermes_sessions (id) ON DELETE CASCADE,
    generation    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    kind          TEXT NOT NULL,
    tokens_before BIGINT,
    tokens_after  BIGINT,
    restored_to   BIGINT,
    archived      BIGINT NOT NULL,
    inserted      BIGINT NOT NULL,
    PRIMARY KEY (session_id, generation)
);
