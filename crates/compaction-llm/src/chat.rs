//! The chat-completions engine both OpenAI-compatible adapters share: the request body, the
//! model chain with summary-model fallback, bounded retries, the context-length shrink, the
//! output guards, redaction, and the classification of failures. An adapter supplies only a
//! [`Transport`] that sends one request and reports one classified result.

// Without the reqwest adapter the raw-bytes helpers (and without any adapter, all but
// `RetryConfig` and `shrink_middle`) are unused.
#![cfg_attr(not(feature = "openai"), allow(dead_code))]

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use compaction_redact::redact;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::guard;
use crate::prompts;
use crate::summarizer::{SummaryRequest, SummaryResponse, Usage, WarmPrefix};

/// Bounded retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryConfig {
    /// Extra attempts per model after the first, for rate limits, 5xx, timeouts and network
    /// failures (default 2, so at most 3 requests per model).
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time (default 500 ms).
    pub initial_backoff: Duration,
    /// Longest computed backoff (default 8 s).
    pub max_backoff: Duration,
    /// Longest `Retry-After` honoured; longer requests are shortened to this (default 30 s).
    pub max_retry_after: Duration,
    /// Wall-clock budget for one model's attempts: no retry starts when its delay would end
    /// past this much time after the first attempt began (`None`: only `max_retries` bounds
    /// them). The facade sets it to the request timeout x (`max_retries` + 1).
    pub max_total: Option<Duration>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
            max_total: None,
        }
    }
}

/// The options of a chat-completions summarizer, one type for every adapter
/// ([`OpenAiSummarizer`](crate::OpenAiSummarizer) through `OpenAiConfig::chat`,
/// [`AsyncOpenAiSummarizer`](crate::AsyncOpenAiSummarizer) directly): the models, the output
/// cap, sampling, vendor body fields, the per-call timeout and the retries. Its `Debug` shows
/// the names of `extra_body`'s fields, not their values.
///
/// ```
/// use std::time::Duration;
/// use compaction_llm::ChatOptions;
///
/// let mut o = ChatOptions::new("qwen3-8b");
/// o.summary_model = Some("qwen3-1.7b".into());
/// o.timeout = Duration::from_secs(30);
/// assert_eq!(o.max_tokens_field, "max_tokens");
/// assert!(o.retry.is_none(), "each adapter's default retries");
/// ```
#[derive(Clone, PartialEq)]
pub struct ChatOptions {
    /// The main model.
    pub model: String,
    /// A separate summary model, tried first; the main model is the fallback.
    pub summary_model: Option<String>,
    /// Bound on one call (default 120 s): for the reqwest adapter one HTTP request, connect to
    /// last byte; for the async-openai adapter one call, the client's own retries included.
    pub timeout: Duration,
    /// Output token cap sent with each request; default twice the request's budget, at
    /// least 256.
    pub max_output_tokens: Option<u32>,
    /// The body field that carries the cap (default `max_tokens`; newer OpenAI models want
    /// `max_completion_tokens`).
    pub max_tokens_field: String,
    /// Sampling temperature, sent when set.
    pub temperature: Option<f64>,
    /// Extra top-level body fields for vendor options (`model`, `messages` and `stream` are
    /// never overridden).
    pub extra_body: Map<String, Value>,
    /// Retries of this crate; `None` (the default) means the adapter's own default: the
    /// reqwest adapter [`RetryConfig::default`], the async-openai adapter none (its client
    /// already retries).
    pub retry: Option<RetryConfig>,
}

impl ChatOptions {
    /// Defaults for everything but the model.
    pub fn new(model: impl Into<String>) -> ChatOptions {
        ChatOptions {
            model: model.into(),
            summary_model: None,
            timeout: Duration::from_secs(120),
            max_output_tokens: None,
            max_tokens_field: "max_tokens".to_owned(),
            temperature: None,
            extra_body: Map::new(),
            retry: None,
        }
    }
}

impl std::fmt::Debug for ChatOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOptions")
            .field("model", &self.model)
            .field("summary_model", &self.summary_model)
            .field("timeout", &self.timeout)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("temperature", &self.temperature)
            .field(
                "extra_body_keys",
                &self.extra_body.keys().collect::<Vec<_>>(),
            )
            .field("retry", &self.retry)
            .finish()
    }
}

/// What the engine runs with: an adapter's options, their retries resolved.
#[derive(Clone, Debug)]
pub(crate) struct ChatParams {
    pub(crate) options: ChatOptions,
    pub(crate) retry: RetryConfig,
}

/// The future of one [`Transport::complete`].
pub(crate) type CompletionFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Completion>> + Send + 'a>>;

/// Sends one chat-completions request (no retries of its own beyond what the adapter
/// documents) and classifies the outcome.
pub(crate) trait Transport: Send + Sync {
    fn complete<'a>(&'a self, model: &'a str, body: &'a Value) -> CompletionFuture<'a>;
}

/// One parsed chat completion.
pub(crate) struct Completion {
    pub(crate) content: String,
    pub(crate) finish_reason: Option<String>,
    pub(crate) model: String,
    pub(crate) usage: Option<Usage>,
}

impl ChatParams {
    /// `options` with `default_retry` when they leave the retries to the adapter.
    pub(crate) fn new(options: &ChatOptions, default_retry: RetryConfig) -> ChatParams {
        ChatParams {
            retry: options.retry.clone().unwrap_or(default_retry),
            options: options.clone(),
        }
    }

    /// The models tried, in order: the summary model (when set and different), then the main
    /// model.
    pub(crate) fn model_chain(&self) -> Vec<&str> {
        let mut chain = Vec::with_capacity(2);
        if let Some(s) = self
            .options
            .summary_model
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            chain.push(s);
        }
        if chain.first() != Some(&self.options.model.as_str()) {
            chain.push(self.options.model.as_str());
        }
        chain
    }

    /// The name a summarizer reports: the summary model when set, else the main model.
    pub(crate) fn name(&self) -> &str {
        self.options
            .summary_model
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(&self.options.model)
    }
}

/// Produces one summary over `transport`: the rules listed in the `openai` module docs.
pub(crate) async fn summarize<T: Transport + ?Sized>(
    params: &ChatParams,
    transport: &T,
    req: &SummaryRequest,
) -> Result<SummaryResponse> {
    Engine { params, transport }.run(req).await
}

struct Engine<'a, T: ?Sized> {
    params: &'a ChatParams,
    transport: &'a T,
}

impl<T: Transport + ?Sized> Engine<'_, T> {
    async fn run(&self, req: &SummaryRequest) -> Result<SummaryResponse> {
        // A content-free copy with redacted previous summary and focus; the material is passed
        // separately so it can be shrunk without cloning the request.
        let light = SummaryRequest {
            kind: req.kind,
            material: String::new(),
            messages: Vec::new(),
            previous_summary: req
                .previous_summary
                .as_deref()
                .map(|s| redact(s).into_owned()),
            focus: req.focus.as_deref().map(|s| redact(s).into_owned()),
            budget_tokens: req.budget_tokens,
            current_date: req.current_date.clone(),
            ledger_kept: req.ledger_kept,
            // Shared, not copied: the agent's last request as it sent it.
            warm: req.warm.clone(),
            deadline: req.deadline,
        };
        let material = redact(&req.material);
        let chain = self.params.model_chain();
        let mut last = None;
        for (i, model) in chain.iter().enumerate() {
            match self.generate(model, &light, &material).await {
                Ok(r) => return Ok(r),
                Err(e) if i + 1 < chain.len() && e.allows_model_fallback() => {
                    tracing::warn!(
                        model = *model,
                        fallback = chain[i + 1],
                        class = e.class().as_str(),
                        status = e.status(),
                        "summary model failed; retrying on the main model"
                    );
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(Error::Config {
            reason: "no model configured",
        }))
    }

    /// One model: context-length shrink once, output regeneration once.
    async fn generate(
        &self,
        model: &str,
        req: &SummaryRequest,
        material: &str,
    ) -> Result<SummaryResponse> {
        let mut material: Cow<'_, str> = Cow::Borrowed(material);
        // The request with its previous summary shrunk, once the provider said it is too large.
        let mut shrunk_req: Option<SummaryRequest> = None;
        let mut shrunk = false;
        let mut regenerated = false;
        let mut usage: Option<Usage> = None;
        // A warm-cache request (the agent's last request plus one instruction) until the
        // provider finds it too long; then the standalone request, shrunk as usual.
        let mut warm = req.warm.as_ref().zip(prompts::build_warm(req));
        loop {
            let current = shrunk_req.as_ref().unwrap_or(req);
            let mut prompt = prompts::build(current, &material);
            let messages = match &warm {
                Some((prefix, instruction)) => {
                    let messages = warm_messages(prefix, instruction);
                    // The output guard judges the answer against everything the standalone
                    // request would have held, and the instruction besides.
                    prompt.system.push_str("\n\n");
                    prompt.system.push_str(instruction);
                    messages
                }
                None => json!([
                    {"role": "system", "content": prompt.system},
                    {"role": "user", "content": prompt.user},
                ]),
            };
            let completion = match self
                .complete_with_retries(model, messages, req.budget_tokens)
                .await
            {
                Ok(c) => c,
                Err(Error::ContextLengthExceeded { .. }) if warm.is_some() => {
                    tracing::warn!(
                        model,
                        "warm-cache summary request too long; sending the standalone request"
                    );
                    warm = None;
                    continue;
                }
                Err(Error::ContextLengthExceeded { status }) if !shrunk => {
                    // Halve what is sent, the previous summary included: the larger part
                    // gives up the most.
                    let chars = material.chars().count();
                    let previous = current.previous_summary.as_deref();
                    let previous_chars = previous.map_or(0, |p| p.chars().count());
                    if chars + previous_chars < 2 {
                        return Err(Error::ContextLengthExceeded { status });
                    }
                    let (material_max, previous_max) = halve_shares(chars, previous_chars);
                    tracing::warn!(
                        model,
                        chars,
                        previous_chars,
                        "summarizer context exceeded; shrinking the request once"
                    );
                    let shrunk_previous = previous.map(|p| shrink_middle(p, previous_max));
                    material = Cow::Owned(shrink_middle(&material, material_max));
                    let mut next = current.clone();
                    next.previous_summary = shrunk_previous;
                    shrunk_req = Some(next);
                    shrunk = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(u) = completion.usage {
                let acc = usage.get_or_insert_with(Usage::default);
                acc.prompt_tokens += u.prompt_tokens;
                acc.completion_tokens += u.completion_tokens;
            }
            match guard::check_against(
                &completion.content,
                completion.finish_reason.as_deref(),
                req.budget_tokens,
                &prompt,
            ) {
                Ok(text) => {
                    return Ok(SummaryResponse {
                        text,
                        model: completion.model,
                        usage,
                        extractive: false,
                        fallback: None,
                    });
                }
                Err(e) if !regenerated => {
                    tracing::warn!(
                        model,
                        class = e.class().as_str(),
                        "summary output rejected; regenerating once"
                    );
                    regenerated = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn complete_with_retries(
        &self,
        model: &str,
        messages: Value,
        budget_tokens: u32,
    ) -> Result<Completion> {
        let body = self.body(model, messages, budget_tokens);
        let retry = &self.params.retry;
        let started = std::time::Instant::now();
        let mut attempt: u32 = 0;
        loop {
            match self.transport.complete(model, &body).await {
                Ok(c) => return Ok(c),
                Err(e) if attempt < retry.max_retries && retry_in_place(&e) => {
                    let delay = match e.retry_after() {
                        Some(d) => d.min(retry.max_retry_after),
                        None => retry
                            .initial_backoff
                            .saturating_mul(1u32 << attempt.min(16))
                            .min(retry.max_backoff),
                    };
                    if retry
                        .max_total
                        .is_some_and(|budget| started.elapsed() + delay >= budget)
                    {
                        tracing::warn!(
                            model,
                            class = e.class().as_str(),
                            attempt = attempt + 1,
                            "summarizer call failed; no retry within the time budget"
                        );
                        return Err(e);
                    }
                    tracing::warn!(
                        model,
                        class = e.class().as_str(),
                        status = e.status(),
                        attempt = attempt + 1,
                        delay_ms = delay.as_millis() as u64,
                        "summarizer call failed; retrying"
                    );
                    attempt += 1;
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn body(&self, model: &str, messages: Value, budget_tokens: u32) -> Value {
        let max_tokens = self
            .params
            .options
            .max_output_tokens
            .unwrap_or_else(|| budget_tokens.saturating_mul(2).max(256));
        let mut body = Map::new();
        body.insert("model".into(), Value::String(model.to_owned()));
        body.insert("messages".into(), messages);
        body.insert(
            self.params.options.max_tokens_field.clone(),
            json!(max_tokens),
        );
        if let Some(t) = self.params.options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        body.insert("stream".into(), Value::Bool(false));
        for (k, v) in &self.params.options.extra_body {
            if !matches!(k.as_str(), "model" | "messages" | "stream") {
                body.insert(k.clone(), v.clone());
            }
        }
        Value::Object(body)
    }
}

/// The messages of a warm-cache request: the agent's last request up to the span's end
/// ([`WarmPrefix::sent`]), each message in its wire form (what
/// [`Message::to_wire_value`](compaction_core::Message::to_wire_value) writes, the library's
/// metadata left out), then the instruction as one user message.
pub(crate) fn warm_messages(prefix: &WarmPrefix, instruction: &str) -> Value {
    let mut out: Vec<Value> = prefix.sent().iter().map(|m| m.to_wire_value()).collect();
    out.push(json!({"role": "user", "content": instruction}));
    Value::Array(out)
}

/// The characters the material and the previous summary keep when a request of `material`
/// plus `previous` characters must be halved: each keeps half of the target unless the other
/// needs less, so whichever is large is cut and a small one survives whole.
fn halve_shares(material: usize, previous: usize) -> (usize, usize) {
    let target = (material + previous) / 2;
    if material <= target / 2 {
        (material, target - material)
    } else if previous <= target / 2 {
        (target - previous, previous)
    } else {
        (target / 2, target - target / 2)
    }
}

/// Cuts `text` to about `max_chars` characters: the head and the tail are kept, the middle is
/// replaced by a line saying how many characters were left out.
pub fn shrink_middle(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    if n <= max_chars {
        return text.to_owned();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let omitted = n - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(n - tail)
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n[… {omitted} characters omitted from the middle to fit the summarizer's context window …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

// ---------------------------------------------------------------------------------------------

/// Errors worth sending the same request again on the same model. A 402 whose limit resets
/// is not: its window does not reset within a backoff, so the chain moves on.
pub(crate) fn retry_in_place(e: &Error) -> bool {
    match e {
        Error::Transient { status: Some(402) } => false,
        Error::RateLimited { .. } | Error::Transient { .. } | Error::Network { .. } => true,
        _ => false,
    }
}

pub(crate) fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Classifies a non-2xx answer. The body is read for its error code and message only; nothing
/// of it is kept.
pub(crate) fn classify_status(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Error {
    classify_hint(status, retry_after, &error_hint(body))
}

/// Classifies a non-2xx answer from its status and the lower-cased error type, code and
/// message (`hint`), which is read and dropped.
pub(crate) fn classify_hint(status: u16, retry_after: Option<Duration>, hint: &str) -> Error {
    let has = |words: &[&str]| words.iter().any(|w| hint.contains(w));
    const QUOTA: &[&str] = &[
        "insufficient_quota",
        "quota",
        "credit",
        "billing",
        "payment required",
        // Anthropic's terminal "You're out of extra usage" (a 400): paid, not waited out.
        "out of extra usage",
        "extra usage",
        "insufficient balance",
        "spending limit",
    ];
    const CONTEXT: &[&str] = &[
        "context_length",
        "context length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "input is too long",
        "reduce the length",
        "exceeds the maximum",
        "request too large",
    ];
    // A limit that says it resets (a usage window, a daily cap) is waited out, not paid.
    const RESETS: &[&str] = &[
        "resets",
        "reset at",
        "reset in",
        "will reset",
        "reset on",
        "reset after",
        "try again in",
        "try again tomorrow",
        "try again at",
        "try again after",
        "retry in",
        "retry after",
        "rate limit",
        "rate-limit",
        "rate_limit",
        "usage window",
        "rate window",
        "per minute",
        "per hour",
        "per day",
        "daily limit",
        "hourly limit",
    ];
    const MODEL: &[&str] = &[
        "model_not_found",
        "model not found",
        "does not exist",
        "unknown model",
        "no such model",
        "not a valid model",
    ];
    match status {
        401 | 403 => Error::Auth {
            status: Some(status),
        },
        402 if retry_after.is_some() || has(RESETS) => Error::Transient {
            status: Some(status),
        },
        402 => Error::Quota { status },
        429 if has(QUOTA) => Error::Quota { status },
        429 => Error::RateLimited { retry_after },
        404 => Error::ModelNotFound { status },
        408 => Error::Transient {
            status: Some(status),
        },
        413 => Error::ContextLengthExceeded { status },
        500..=599 => Error::Transient {
            status: Some(status),
        },
        400..=499 if has(CONTEXT) => Error::ContextLengthExceeded { status },
        400..=499 if has(MODEL) => Error::ModelNotFound { status },
        // A 4xx quota that says it resets is waited out like a 402 that does.
        400..=499 if has(QUOTA) && has(RESETS) => Error::Transient {
            status: Some(status),
        },
        400..=499 if has(QUOTA) => Error::Quota { status },
        _ => Error::Rejected { status },
    }
}

/// Lower-cased `type`, `code` and `message` of an error body (or its first 2 KiB of text).
fn error_hint(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let err = v.get("error").unwrap_or(&v);
        if let Some(s) = err.as_str() {
            return s.to_lowercase();
        }
        let mut hint = String::new();
        for k in ["type", "code", "message", "detail"] {
            match err.get(k) {
                Some(Value::String(s)) => hint.push_str(s),
                Some(Value::Number(n)) => hint.push_str(&n.to_string()),
                _ => {}
            }
            hint.push(' ');
        }
        return hint.to_lowercase();
    }
    String::from_utf8_lossy(&body[..body.len().min(2048)]).to_lowercase()
}

pub(crate) fn parse_completion(bytes: &[u8], requested_model: &str) -> Result<Completion> {
    let v: Value = serde_json::from_slice(bytes).map_err(|_| Error::MalformedResponse {
        reason: "body is not JSON",
    })?;
    parse_completion_value(&v, requested_model)
}

/// Reads a chat completion already parsed as JSON.
pub(crate) fn parse_completion_value(v: &Value, requested_model: &str) -> Result<Completion> {
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(Error::MalformedResponse {
            reason: "error object in a success response",
        });
    }
    let choice = match v.get("choices").and_then(Value::as_array) {
        None => {
            return Err(Error::MalformedResponse {
                reason: "no choices array",
            });
        }
        Some(c) if c.is_empty() => {
            return Err(Error::MalformedResponse {
                reason: "empty choices array",
            });
        }
        Some(c) => &c[0],
    };
    let message =
        choice
            .get("message")
            .filter(|m| m.is_object())
            .ok_or(Error::MalformedResponse {
                reason: "choice without a message object",
            })?;
    let content = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(_) => {
            return Err(Error::MalformedResponse {
                reason: "message content is neither text nor parts",
            });
        }
    };
    let usage = v.get("usage").and_then(|u| {
        Some(Usage {
            prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
            completion_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    });
    Ok(Completion {
        content,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        model: v
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(requested_model)
            .to_owned(),
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_classify() {
        // Issue 33, item 9: a 400 "out of extra usage" is terminal quota (the pass leaves the
        // transcript unchanged), not a rejection that falls back.
        let extra = br#"{"type":"error","error":{"type":"invalid_request_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."}}"#;
        assert_eq!(
            classify_status(400, None, extra),
            Error::Quota { status: 400 }
        );
        let q = br#"{"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#;
        assert_eq!(classify_status(429, None, q), Error::Quota { status: 429 });
        assert_eq!(
            classify_status(429, Some(Duration::from_secs(2)), b"{}"),
            Error::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        let ctx = br#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#;
        assert_eq!(
            classify_status(400, None, ctx),
            Error::ContextLengthExceeded { status: 400 }
        );
        assert_eq!(
            classify_status(400, None, b"The model `x` does not exist"),
            Error::ModelNotFound { status: 400 }
        );
        assert_eq!(
            classify_status(400, None, b"bad"),
            Error::Rejected { status: 400 }
        );
        assert_eq!(
            classify_status(503, None, b""),
            Error::Transient { status: Some(503) }
        );
        assert_eq!(
            classify_status(403, None, b""),
            Error::Auth { status: Some(403) }
        );
    }

    #[test]
    fn retry_after_parses_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn halving_cuts_what_is_large() {
        assert_eq!(halve_shares(100, 0), (50, 0));
        assert_eq!(halve_shares(0, 100), (0, 50));
        // A small previous summary survives whole; a small material too.
        assert_eq!(halve_shares(1_000, 100), (450, 100));
        assert_eq!(halve_shares(100, 1_000), (100, 450));
        // Both large: each keeps a half of the target.
        assert_eq!(halve_shares(480_000, 320_000), (200_000, 200_000));
        let (m, p) = halve_shares(7, 4);
        assert!(m + p <= 5);
    }

    #[test]
    fn shrink_keeps_head_and_tail() {
        let text = "HEAD".to_owned() + &"x".repeat(100) + "TAIL";
        let out = shrink_middle(&text, 20);
        assert!(out.starts_with("HEAD"));
        assert!(out.ends_with("TAIL"));
        assert!(out.contains("88 characters omitted"));
        assert_eq!(shrink_middle("short", 20), "short");
    }
}
