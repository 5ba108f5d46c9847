//! Integration tests of compaction-llm, one module per area.

mod extractive;
mod interop;
mod openai;
mod prompts;
mod scripted;
