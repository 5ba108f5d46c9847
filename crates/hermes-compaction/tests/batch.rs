//! Batch compaction behaviour with scripted summarizers.
