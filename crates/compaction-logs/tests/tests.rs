//! The integration tests of compaction-logs (one binary; each module is one concern).

mod detect;
mod errors;
mod own_format;
mod raw;
mod samples;
