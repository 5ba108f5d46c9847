//! The OpenAI-compatible adapter: any `/v1/chat/completions` endpoint (OpenAI, vLLM,
//! llama.cpp server, Ollama, gateways).
//!
//! - **Explicit endpoint.** The base URL and the key always come from [`OpenAiConfig`]; no
//!   `OPENAI_*` environment variable is ever read. The key comes from a named environment
//!   variable or a config string ([`ApiKey`]), is sent only as a bearer header marked
//!   sensitive, and every `Debug` impl redacts it.
//! - **Bounded time.** Each HTTP request has a timeout; retries (rate limits, 5xx, timeouts,
//!   network failures) are bounded by [`RetryConfig::max_retries`], with exponential backoff
//!   and `Retry-After` honoured up to [`RetryConfig::max_retry_after`]. There is no other retry
//!   layer underneath.
//! - **Summary-model fallback.** When a separate [`OpenAiConfig::summary_model`] fails with
//!   model-not-found, timeout, 5xx or a malformed response, the request is sent once more on
//!   the main [`OpenAiConfig::model`].
//! - **Context-length shrink.** When the provider says the request is too large, the material
//!   is cut to half ([`shrink_middle`]: head and tail kept, the middle replaced by an explicit
//!   note) and the request is retried once.
//! - **Guards.** Reasoning blocks are stripped; empty, truncated (`finish_reason: "length"`) and
//!   directive output is regenerated once, then reported as an error ([`crate::guard`]).
//! - **Redaction.** Material, previous summary and focus are redacted before sending, the
//!   output after receiving.
//! - **No content in errors or logs.** Response bodies are read only to classify the failure
//!   and are then dropped; errors carry status codes and classes.
//!
//! The adapter speaks HTTP through `reqwest` directly rather than through async-openai's
//! client: that client logs raw response bodies on server errors and on undecodable responses,
//! drops `Retry-After` from error results, retries underneath any caller policy, and fills its
//! default configuration from `OPENAI_*` environment variables — each of which this crate's
//! rules forbid. The request and response are the chat-completions JSON, built and read here.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use compaction_core::redact::redact;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::guard;
use crate::prompts::{self, Prompt};
use crate::summarizer::{Summarizer, SummaryFuture, SummaryRequest, SummaryResponse, Usage};

/// Where the API key comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum ApiKey {
    /// No key (local servers); no `Authorization` header is sent.
    None,
    /// Read from the named environment variable when the summarizer is built. Missing or
    /// empty is an [`Error::Auth`].
    Env(String),
    /// The key itself (from a config file or secret store).
    Value(String),
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiKey::None => f.write_str("None"),
            ApiKey::Env(var) => f.debug_tuple("Env").field(var).finish(),
            ApiKey::Value(_) => f.write_str("Value([REDACTED])"),
        }
    }
}

impl ApiKey {
    /// The key, resolved now.
    fn resolve(&self) -> Result<Option<String>> {
        match self {
            ApiKey::None => Ok(None),
            ApiKey::Value(v) if v.trim().is_empty() => Err(Error::Auth { status: None }),
            ApiKey::Value(v) => Ok(Some(v.trim().to_owned())),
            ApiKey::Env(var) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Ok(Some(v.trim().to_owned())),
                _ => Err(Error::Auth { status: None }),
            },
        }
    }
}

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
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

/// Configuration of [`OpenAiSummarizer`].
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Base URL up to and including the API version, e.g. `http://127.0.0.1:8000/v1`;
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// The main model.
    pub model: String,
    /// A separate summary model, tried first; the main model is the fallback.
    pub summary_model: Option<String>,
    /// The API key.
    pub api_key: ApiKey,
    /// Timeout of one HTTP request, connect to last byte (default 120 s).
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
    /// Retry policy.
    pub retry: RetryConfig,
    /// Largest response body read, in bytes (default 8 MiB); larger is a malformed response.
    pub max_response_bytes: usize,
}

impl OpenAiConfig {
    /// A configuration with defaults for everything but the endpoint, model and key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, api_key: ApiKey) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            summary_model: None,
            api_key,
            timeout: Duration::from_secs(120),
            max_output_tokens: None,
            max_tokens_field: "max_tokens".to_owned(),
            temperature: None,
            extra_body: Map::new(),
            retry: RetryConfig::default(),
            max_response_bytes: 8 << 20,
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("summary_model", &self.summary_model)
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("temperature", &self.temperature)
            .field(
                "extra_body_keys",
                &self.extra_body.keys().collect::<Vec<_>>(),
            )
            .field("retry", &self.retry)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// The OpenAI-compatible summarizer. See the [module docs](self).
pub struct OpenAiSummarizer {
    config: OpenAiConfig,
    url: String,
    key: Option<String>,
    http: reqwest::Client,
}

impl fmt::Debug for OpenAiSummarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSummarizer")
            .field("config", &self.config)
            .field("has_key", &self.key.is_some())
            .finish_non_exhaustive()
    }
}

impl OpenAiSummarizer {
    /// Builds the summarizer: resolves the key ([`Error::Auth`] when it is missing) and the
    /// HTTP client.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiSummarizer> {
        let base = config.base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Config {
                reason: "base_url must start with http:// or https://",
            });
        }
        if config.model.trim().is_empty() {
            return Err(Error::Config {
                reason: "model must not be empty",
            });
        }
        let key = config.api_key.resolve()?;
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|_| Error::Config {
                reason: "the HTTP client could not be built",
            })?;
        Ok(OpenAiSummarizer {
            url: format!("{base}/chat/completions"),
            config,
            key,
            http,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The models tried, in order: the summary model (when set and different), then the main
    /// model.
    pub fn model_chain(&self) -> Vec<&str> {
        let mut chain = Vec::with_capacity(2);
        if let Some(s) = self
            .config
            .summary_model
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            chain.push(s);
        }
        if chain.first() != Some(&self.config.model.as_str()) {
            chain.push(self.config.model.as_str());
        }
        chain
    }

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
        };
        let material = redact(&req.material);
        let chain = self.model_chain();
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
        let mut shrunk = false;
        let mut regenerated = false;
        let mut usage: Option<Usage> = None;
        loop {
            let prompt = prompts::build(req, &material);
            let completion = match self
                .complete_with_retries(model, &prompt, req.budget_tokens)
                .await
            {
                Ok(c) => c,
                Err(Error::ContextLengthExceeded { status }) if !shrunk => {
                    let chars = material.chars().count();
                    if chars < 2 {
                        return Err(Error::ContextLengthExceeded { status });
                    }
                    tracing::warn!(
                        model,
                        chars,
                        "summarizer context exceeded; shrinking material once"
                    );
                    material = Cow::Owned(shrink_middle(&material, chars / 2));
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
            match guard::check(&completion.content, completion.finish_reason.as_deref()) {
                Ok(text) => {
                    return Ok(SummaryResponse {
                        text,
                        model: completion.model,
                        usage,
                        extractive: false,
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
        prompt: &Prompt,
        budget_tokens: u32,
    ) -> Result<Completion> {
        let body = self.body(model, prompt, budget_tokens);
        let retry = &self.config.retry;
        let mut attempt: u32 = 0;
        loop {
            match self.complete_once(model, &body).await {
                Ok(c) => return Ok(c),
                Err(e) if attempt < retry.max_retries && retry_in_place(&e) => {
                    let delay = match e.retry_after() {
                        Some(d) => d.min(retry.max_retry_after),
                        None => retry
                            .initial_backoff
                            .saturating_mul(1u32 << attempt.min(16))
                            .min(retry.max_backoff),
                    };
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

    fn body(&self, model: &str, prompt: &Prompt, budget_tokens: u32) -> String {
        let max_tokens = self
            .config
            .max_output_tokens
            .unwrap_or_else(|| budget_tokens.saturating_mul(2).max(256));
        let mut body = Map::new();
        body.insert("model".into(), Value::String(model.to_owned()));
        body.insert(
            "messages".into(),
            json!([
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ]),
        );
        body.insert(self.config.max_tokens_field.clone(), json!(max_tokens));
        if let Some(t) = self.config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        body.insert("stream".into(), Value::Bool(false));
        for (k, v) in &self.config.extra_body {
            if !matches!(k.as_str(), "model" | "messages" | "stream") {
                body.insert(k.clone(), v.clone());
            }
        }
        Value::Object(body).to_string()
    }

    async fn complete_once(&self, model: &str, body: &str) -> Result<Completion> {
        let mut rb = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_owned());
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key);
        }
        let mut resp = rb.send().await.map_err(|e| transport_error(&e))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let mut bytes: Vec<u8> = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| transport_error(&e))? {
            if bytes.len() + chunk.len() > self.config.max_response_bytes {
                return Err(Error::MalformedResponse {
                    reason: "response body too large",
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            return Err(classify_status(status, retry_after, &bytes));
        }
        parse_completion(&bytes, model)
    }
}

impl Summarizer for OpenAiSummarizer {
    fn name(&self) -> &str {
        self.config
            .summary_model
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(&self.config.model)
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(self.run(req))
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
        "{}\n[… {omitted} characters omitted from the middle of the material to fit the summarizer's context window …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

// ---------------------------------------------------------------------------------------------

/// One parsed chat completion.
struct Completion {
    content: String,
    finish_reason: Option<String>,
    model: String,
    usage: Option<Usage>,
}

/// Errors worth sending the same request again on the same model.
fn retry_in_place(e: &Error) -> bool {
    matches!(
        e,
        Error::RateLimited { .. } | Error::Transient { .. } | Error::Network { .. }
    )
}

fn transport_error(e: &reqwest::Error) -> Error {
    if e.is_timeout() {
        Error::Transient { status: None }
    } else {
        Error::Network {
            connect: e.is_connect(),
        }
    }
}

fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Classifies a non-2xx answer. The body is read for its error code and message only; nothing
/// of it is kept.
fn classify_status(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Error {
    let hint = error_hint(body);
    let has = |words: &[&str]| words.iter().any(|w| hint.contains(w));
    const QUOTA: &[&str] = &[
        "insufficient_quota",
        "quota",
        "credit",
        "billing",
        "payment required",
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

fn parse_completion(bytes: &[u8], requested_model: &str) -> Result<Completion> {
    let v: Value = serde_json::from_slice(bytes).map_err(|_| Error::MalformedResponse {
        reason: "body is not JSON",
    })?;
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
    fn shrink_keeps_head_and_tail() {
        let text = "HEAD".to_owned() + &"x".repeat(100) + "TAIL";
        let out = shrink_middle(&text, 20);
        assert!(out.starts_with("HEAD"));
        assert!(out.ends_with("TAIL"));
        assert!(out.contains("88 characters omitted"));
        assert_eq!(shrink_middle("short", 20), "short");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let cfg = OpenAiConfig::new(
            "http://127.0.0.1:1/v1",
            "m",
            ApiKey::Value("sk-secret".into()),
        );
        assert!(!format!("{cfg:?}").contains("sk-secret"));
        let s = OpenAiSummarizer::new(cfg).unwrap();
        assert!(!format!("{s:?}").contains("sk-secret"));
    }
}
