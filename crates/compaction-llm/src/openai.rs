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
//! - **Summary-model fallback.** When a separate [`ChatOptions::summary_model`](crate::ChatOptions::summary_model) fails with
//!   model-not-found, timeout, 5xx, a 402 whose limit resets or a malformed response, the
//!   request is sent once more on the main [`ChatOptions::model`](crate::ChatOptions::model).
//! - **Context-length shrink.** When the provider says the request is too large, the material
//!   and the previous summary together are cut to half, the larger of them giving up the most
//!   ([`shrink_middle`]: head and tail kept, the middle replaced by an explicit note), and the
//!   request is retried once.
//! - **Guards.** Reasoning blocks are stripped; empty, truncated (`finish_reason: "length"`),
//!   directive and overlong output (over 1.5 times the summary budget, e.g. an echoed prompt)
//!   is regenerated once, then reported as an error ([`crate::guard`]), so the compressor falls
//!   back to the extractive summary when it is configured to.
//! - **Redaction.** Material, previous summary and focus are redacted before sending, the
//!   output after receiving.
//! - **The connection stays where it was pointed.** A redirect is followed only to the same
//!   origin (scheme, host and port of the configured `base_url`), at most 3 times; a redirect
//!   to any other origin is not followed and fails the request as the status it came with, so
//!   the material is never re-sent elsewhere. (Callers of the async-openai adapter build their
//!   own HTTP client: see [`crate::interop`].)
//! - **No content in errors or logs.** Response bodies are read only to classify the failure
//!   and are then dropped; errors carry status codes and classes.
//!
//! The adapter speaks HTTP through `reqwest` directly rather than through async-openai's
//! client: that client logs raw response bodies on server errors and on undecodable responses,
//! drops `Retry-After` from error results, retries underneath any caller policy, and fills its
//! default configuration from `OPENAI_*` environment variables — each of which this crate's
//! rules forbid. The request and response are the chat-completions JSON, built and read here.

use std::fmt;

use serde_json::Value;

use crate::chat::{self, ChatOptions, ChatParams, Completion, CompletionFuture, Transport};
pub use crate::chat::{RetryConfig, shrink_middle};
use crate::error::{Error, Result};
use crate::summarizer::{Summarizer, SummaryFuture};

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

/// Configuration of [`OpenAiSummarizer`]: the endpoint and key, and the [`ChatOptions`]
/// every chat adapter shares (`chat.retry` left `None` is [`RetryConfig::default`]).
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Base URL up to and including the API version, e.g. `http://127.0.0.1:8000/v1`;
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// The API key.
    pub api_key: ApiKey,
    /// Largest response body read, in bytes (default 8 MiB); larger is a malformed response.
    pub max_response_bytes: usize,
    /// The models, output cap, sampling, vendor fields, request timeout (one HTTP request,
    /// connect to last byte) and retries.
    pub chat: ChatOptions,
}

impl OpenAiConfig {
    /// A configuration with defaults for everything but the endpoint, model and key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, api_key: ApiKey) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key,
            max_response_bytes: 8 << 20,
            chat: ChatOptions::new(model),
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("chat", &self.chat)
            .finish()
    }
}

/// The OpenAI-compatible summarizer. See the [module docs](self).
pub struct OpenAiSummarizer {
    config: OpenAiConfig,
    params: ChatParams,
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
        if config.chat.model.trim().is_empty() {
            return Err(Error::Config {
                reason: "model must not be empty",
            });
        }
        let key = config.api_key.resolve()?;
        let http = reqwest::Client::builder()
            .timeout(config.chat.timeout)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|_| Error::Config {
                reason: "the HTTP client could not be built",
            })?;
        Ok(OpenAiSummarizer {
            url: format!("{base}/chat/completions"),
            params: ChatParams::new(&config.chat, RetryConfig::default()),
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
        self.params.model_chain()
    }

    async fn complete_once(&self, model: &str, body: &Value) -> Result<Completion> {
        let mut rb = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string());
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key);
        }
        let mut resp = rb.send().await.map_err(|e| transport_error(&e))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(chat::parse_retry_after);
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
            return Err(chat::classify_status(status, retry_after, &bytes));
        }
        chat::parse_completion(&bytes, model)
    }
}

impl Transport for OpenAiSummarizer {
    fn complete<'a>(&'a self, model: &'a str, body: &'a Value) -> CompletionFuture<'a> {
        Box::pin(self.complete_once(model, body))
    }
}

impl Summarizer for OpenAiSummarizer {
    fn name(&self) -> &str {
        self.params.name()
    }

    fn summarize<'a>(&'a self, req: &'a crate::SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(chat::summarize(&self.params, self, req))
    }
}

// ---------------------------------------------------------------------------------------------

/// Follows a redirect only to the origin of the request that started the chain (3 hops at
/// most); any other redirect is returned to the caller unfollowed.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first();
        let same = first.is_some_and(|f| f.origin() == attempt.url().origin());
        if same && attempt.previous().len() <= 3 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

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
