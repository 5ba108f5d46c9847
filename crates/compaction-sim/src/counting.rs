//! A summarizer wrapper that counts calls and tokens, so a replay can price its summaries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hermes_compaction::core::tokens::estimate_text;
use hermes_compaction::llm::{Summarizer, SummaryFuture, SummaryRequest};

/// A summarizer wrapper that counts calls and tokens. Providers that report usage are taken
/// at their word; for the others (the extractive summarizer reports none) the prompt is
/// estimated from the material, the previous summary and the focus (or from the messages when
/// there is no material) and the output from the summary text, with the default estimator.
pub struct CountingSummarizer {
    inner: Arc<dyn Summarizer>,
    calls: AtomicU64,
    prompt_tokens: AtomicU64,
    output_tokens: AtomicU64,
    estimated: AtomicU64,
}

/// What a [`CountingSummarizer`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryUsage {
    /// Calls made (successful or not).
    pub calls: u64,
    /// Prompt tokens (reported or estimated).
    pub prompt_tokens: u64,
    /// Output tokens (reported or estimated).
    pub output_tokens: u64,
    /// Calls whose tokens were estimated because the summarizer reported no usage.
    pub estimated_calls: u64,
}

impl std::fmt::Debug for CountingSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingSummarizer")
            .field("inner", &self.inner.name())
            .field("usage", &self.usage())
            .finish()
    }
}

impl CountingSummarizer {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Summarizer>) -> CountingSummarizer {
        CountingSummarizer {
            inner,
            calls: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            estimated: AtomicU64::new(0),
        }
    }

    /// What was counted so far.
    pub fn usage(&self) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
            estimated_calls: self.estimated.load(Ordering::Relaxed),
        }
    }
}

impl Summarizer for CountingSummarizer {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let out = self.inner.summarize(req).await;
            if let Ok(resp) = &out {
                let (p, o) = match resp.usage {
                    Some(u) => (u.prompt_tokens, u.completion_tokens),
                    None => {
                        self.estimated.fetch_add(1, Ordering::Relaxed);
                        (estimate_prompt(req), estimate_text(&resp.text))
                    }
                };
                self.prompt_tokens.fetch_add(p, Ordering::Relaxed);
                self.output_tokens.fetch_add(o, Ordering::Relaxed);
            }
            out
        })
    }
}

fn estimate_prompt(req: &SummaryRequest) -> u64 {
    let body = if req.material.is_empty() {
        req.messages
            .iter()
            .map(|m| estimate_text(&m.text()))
            .sum::<u64>()
    } else {
        estimate_text(&req.material)
    };
    body + req.previous_summary.as_deref().map_or(0, estimate_text)
        + req.focus.as_deref().map_or(0, estimate_text)
}
