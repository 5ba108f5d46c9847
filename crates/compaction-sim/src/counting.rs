//! A summarizer wrapper that counts calls and tokens, so a replay can price its summaries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hermes_compaction::core::tokens::estimate_text;
use hermes_compaction::llm::{Summarizer, SummaryFuture, SummaryRequest};

/// A summarizer wrapper that counts calls and tokens. Providers that report usage are taken
/// at their word; for the others (the extractive summarizer reports none) the prompt is
/// estimated from the request the chat adapter would send (its instructions, the previous
/// summary, the focus and the material, or the messages when there is no material; a warm
/// request's prefix and instruction), each message on its wire JSON, and the output from the
/// summary text, with the default estimator.
pub struct CountingSummarizer {
    inner: Arc<dyn Summarizer>,
    calls: AtomicU64,
    prompt_tokens: AtomicU64,
    prompt_hit_tokens: AtomicU64,
    output_tokens: AtomicU64,
    estimated: AtomicU64,
    in_flight: AtomicU64,
}

/// What a [`CountingSummarizer`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryUsage {
    /// Calls made (successful or not).
    pub calls: u64,
    /// Prompt tokens (reported or estimated).
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those of warm-cache requests' prefixes (the agent's last request
    /// up to the span's end, which the provider's cache serves): priced at the hit price.
    pub prompt_hit_tokens: u64,
    /// Output tokens (reported or estimated).
    pub output_tokens: u64,
    /// Calls whose tokens were estimated because the summarizer reported no usage.
    pub estimated_calls: u64,
}

impl SummaryUsage {
    /// What was counted since `earlier` (field by field, never below 0).
    pub fn minus(self, earlier: SummaryUsage) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls.saturating_sub(earlier.calls),
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            prompt_hit_tokens: self
                .prompt_hit_tokens
                .saturating_sub(earlier.prompt_hit_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            estimated_calls: self.estimated_calls.saturating_sub(earlier.estimated_calls),
        }
    }

    /// Both counts together.
    pub fn plus(self, other: SummaryUsage) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls + other.calls,
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            prompt_hit_tokens: self.prompt_hit_tokens + other.prompt_hit_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            estimated_calls: self.estimated_calls + other.estimated_calls,
        }
    }
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
            prompt_hit_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            estimated: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
        }
    }

    /// Calls begun and not yet returned.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// What was counted so far.
    pub fn usage(&self) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            prompt_hit_tokens: self.prompt_hit_tokens.load(Ordering::Relaxed),
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
            self.in_flight.fetch_add(1, Ordering::Relaxed);
            let out = self.inner.summarize(req).await;
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            if let Ok(resp) = &out {
                let (p, hit, o) = match resp.usage {
                    Some(u) => (u.prompt_tokens, 0, u.completion_tokens),
                    None => {
                        self.estimated.fetch_add(1, Ordering::Relaxed);
                        let (p, hit) = estimate_prompt(req);
                        (p, hit, estimate_text(&resp.text))
                    }
                };
                self.prompt_tokens.fetch_add(p, Ordering::Relaxed);
                self.prompt_hit_tokens.fetch_add(hit, Ordering::Relaxed);
                self.output_tokens.fetch_add(o, Ordering::Relaxed);
            }
            out
        })
    }
}

/// The estimated prompt of `req` and, for a warm-cache request, the part of it its prefix
/// holds. A warm request is the agent's last request as sent, up to the span's end
/// ([`WarmPrefix::sent`](hermes_compaction::llm::WarmPrefix::sent): the cache's hit, the
/// span among it) plus one instruction
/// ([`build_warm`](hermes_compaction::llm::prompts::build_warm)), so its prompt is the prefix
/// plus that instruction; a standalone one is its whole prompt
/// ([`build`](hermes_compaction::llm::prompts::build): the instructions, the previous
/// summary, the focus and the material), all at the miss price. Every message is measured on
/// its wire JSON, as the issue units measure the agent's prompts (`ceil(chars / 4)`), so the
/// two forms and the agent's requests are counted with one ruler.
fn estimate_prompt(req: &SummaryRequest) -> (u64, u64) {
    if let (Some(warm), Some(instruction)) = (
        req.warm.as_ref(),
        hermes_compaction::llm::prompts::build_warm(req),
    ) {
        let prefix: u64 = warm
            .sent()
            .iter()
            .map(|m| estimate_text(&m.to_wire_json()))
            .sum();
        return (prefix + wire_tokens("user", &instruction), prefix);
    }
    // The request as the chat adapter sends it: the system prompt (role, task, rules,
    // sections) and the user message (the previous summary, the focus, the material).
    let joined;
    let material = if req.material.is_empty() {
        joined = req
            .messages
            .iter()
            .map(|m| m.text().to_string())
            .collect::<Vec<_>>()
            .join("\n");
        joined.as_str()
    } else {
        req.material.as_str()
    };
    let prompt = hermes_compaction::llm::prompts::build(req, material);
    (
        wire_tokens("system", &prompt.system) + wire_tokens("user", &prompt.user),
        0,
    )
}

/// The estimated tokens of one chat message of `role` holding `content`, measured as every
/// prompt message is in the issue units: on its wire JSON (quotes and escapes included), as
/// the warm request's prefix and the agent's own prompts are.
fn wire_tokens(role: &str, content: &str) -> u64 {
    estimate_text(&serde_json::json!({"role": role, "content": content}).to_string())
}
