-- hermes-compaction session store, PostgreSQL schema version 5: the continuation marker.
--
-- A pass that leaves no user message with text of the user's own adds a short user-role
-- continuation message beside its summary (marker kind `continuation`). It is no summary, but
-- its row says what it is like the summary markers do.

ALTER TABLE hermes_messages DROP CONSTRAINT IF EXISTS hermes_messages_kind_check;
ALTER TABLE hermes_messages ADD CONSTRAINT hermes_messages_kind_check
    CHECK (kind IN ('normal', 'batch', 'micro', 'progress', 'continuation'));
