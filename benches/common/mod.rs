//! Shared by the benches that run the facade: a summarizer that answers at once.

use compaction_llm::{Summarizer, SummaryFuture, SummaryRequest, SummaryResponse};

/// Answers every request at once with a fixed summary, so a bench times the library alone.
#[derive(Debug)]
pub struct InstantSummarizer;

impl Summarizer for InstantSummarizer {
    fn name(&self) -> &str {
        "instant"
    }

    fn summarize<'a>(&'a self, _req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async {
            Ok(SummaryResponse {
                text: "Goal: keep the build green. Done: ran the tests and fixed them.".into(),
                model: "instant".into(),
                usage: None,
                extractive: false,
                fallback: None,
            })
        })
    }
}
