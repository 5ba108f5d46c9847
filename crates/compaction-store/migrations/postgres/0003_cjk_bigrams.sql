-- hermes-compaction session store, PostgreSQL schema version 3: CJK text in the search index.
--
-- Index text now splits runs of CJK characters (Han, kana, Hangul) into overlapping bigrams,
-- and queries split them the same way. A document written before holds such a run as one
-- word that no query finds any more, so the index is emptied and rebuilt lazily: archived
-- rows are marked not indexed, and trimmed originals get the same mark (`search_indexed`,
-- set when an original is stored and indexed at once), so the next search of a session
-- indexes both again. Nothing but the index is lost; running this twice leaves the same state.

ALTER TABLE hermes_originals ADD COLUMN IF NOT EXISTS search_indexed BOOLEAN NOT NULL DEFAULT FALSE;

-- Trimmed originals not yet in the search index: what the next search of a session indexes.
CREATE INDEX IF NOT EXISTS hermes_originals_unindexed
    ON hermes_originals (session_id, handle) WHERE NOT search_indexed;

TRUNCATE hermes_search;

UPDATE hermes_messages SET search_indexed = FALSE WHERE search_indexed;
UPDATE hermes_originals SET search_indexed = FALSE WHERE search_indexed;
