//! async-openai interop (feature `async-openai`): conversions between [`Message`] and
//! async-openai's chat request messages, and [`AsyncOpenAiSummarizer`], a summarizer over a
//! `async_openai::Client<C>` the caller already holds (OpenAI, Azure, custom headers: whatever
//! its `Config` says).
//!
//! # Conversions
//!
//! A [`Message`] keeps every field of the JSON it was read from; async-openai's types keep the
//! fields they know. So:
//!
//! - [`to_request_message`] gives the async-openai message; fields async-openai has no place
//!   for (vendor extras such as `ts` or `reasoning_content`, the library metadata) are left
//!   out, `"content": null` on an assistant message becomes an absent `content`, and the keys
//!   come in async-openai's order when it is serialized.
//! - [`restore`] turns that async-openai message back into the original [`Message`]: the very
//!   bytes it was read from when the async-openai message is unchanged, and otherwise the
//!   changed message with the original's left-out fields and metadata put back.
//! - [`from_request_message`] reads an async-openai message the framework built itself; the
//!   [`Message`] serializes to exactly the bytes async-openai sends for it
//!   ([`Message::to_wire_json`] equals `serde_json::to_string` of the input), so a prompt
//!   prefix stays byte-stable for the provider's cache when a compacted transcript is sent
//!   back through async-openai.
//!
//! Every message of the shared fixture transcripts converts, restores byte-identically, and
//! goes from async-openai to a [`Message`] and back to the same async-openai message (the
//! crate's tests check all of them).
//!
//! ```
//! use compaction_core::Message;
//! use compaction_llm::interop::{from_request_message, restore, to_request_message};
//!
//! let m = Message::from_json(r#"{"ts":17,"role":"user","content":"hi"}"#).unwrap();
//! let a = to_request_message(&m).unwrap();
//! assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"role":"user","content":"hi"}"#);
//! // Unchanged: the original bytes come back, `ts` and key order included.
//! assert_eq!(restore(&m, &a).unwrap().to_json(), m.to_json());
//! // A message built on the async-openai side keeps async-openai's bytes.
//! let b = from_request_message(&a).unwrap();
//! assert_eq!(b.to_wire_json(), serde_json::to_string(&a).unwrap());
//! ```
//!
//! # The summarizer
//!
//! [`AsyncOpenAiSummarizer`] sends the same chat-completions request as
//! [`OpenAiSummarizer`](crate::openai) (feature `openai`), through the caller's client, and
//! follows the same rules, with the same code: redaction of what is sent and returned, the
//! output guards with one regeneration, the context-length shrink, the summary-model fallback
//! and the error classes ([`Error`]), so [`FallbackSummarizer`](crate::FallbackSummarizer) and
//! the compressor treat both alike. What the client imposes:
//!
//! - **Retries underneath.** async-openai's client retries 429, 5xx and connect failures up to
//!   3 times itself, honouring `Retry-After` without a cap. [`ChatOptions::retry`]
//!   therefore defaults to no retries of its own, and [`ChatOptions::timeout`] bounds
//!   each call including the client's retries (async-openai sets no timeout of its own).
//! - **No `Retry-After` in errors.** A rate limit arrives as [`Error::RateLimited`] with no
//!   delay.
//! - **Non-JSON error bodies lose their status.** async-openai reports a 4xx whose body is not
//!   an OpenAI error object as a deserialization error without the HTTP status; it is
//!   classified [`Error::MalformedResponse`].
//! - **No response size cap.** The client reads whole bodies.
//! - **Its own logs carry bodies.** async-openai logs server error bodies at `warn` (target
//!   `async_openai::client`) and undecodable bodies at `error` (target `async_openai::error`).
//!   This crate's own log lines carry model names, classes and status codes only. To keep
//!   bodies out of your logs, turn async-openai's targets off, e.g.
//!   `EnvFilter::new("info,async_openai=off")` or
//!   `Targets::new().with_default(Level::INFO).with_target("async_openai", LevelFilter::OFF)`.
//! - **Configuration.** Base URL, key and headers are the client's; build its `Config` with
//!   them explicitly (`OpenAIConfig::new().with_api_base(..).with_api_key(..)`), since a
//!   default `OpenAIConfig` reads `OPENAI_*` environment variables. TLS is whatever the
//!   caller's async-openai features choose (its default `rustls`).
//! - **Redirects are the client's.** async-openai's default HTTP client is reqwest's default,
//!   which follows up to 10 redirects to any origin, and a 307/308 re-sends the whole request
//!   (the redacted material) there. The crate cannot change a client it is handed; build yours
//!   with a redirect policy, e.g. `Client::with_config(cfg).with_http_client(
//!   reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?)`, as the
//!   `openai` adapter does (it follows same-origin redirects only).

use std::fmt;

use async_openai::Client;
use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::types::chat::ChatCompletionRequestMessage;
use compaction_core::Message;
use serde_json::{Map, Value};

use crate::chat::{
    self, ChatOptions, ChatParams, Completion, CompletionFuture, RetryConfig, Transport,
};
use crate::error::{Error, Result};
use crate::summarizer::{Summarizer, SummaryFuture, SummaryRequest};

/// The async-openai crate this module is built against (0.43), for naming its types at the
/// same version.
pub use async_openai;

/// Converts a message to async-openai's chat request message. See the [module
/// docs](self#conversions) for what is left out.
///
/// Fails with [`Error::Conversion`] (message index 0) when async-openai has no type for it
/// (an unknown role, a tool result with image parts, content of a shape the role does not
/// take).
pub fn to_request_message(m: &Message) -> Result<ChatCompletionRequestMessage> {
    convert(m, 0)
}

/// [`to_request_message`] for each message; the error names the first message that failed.
pub fn to_request_messages(msgs: &[Message]) -> Result<Vec<ChatCompletionRequestMessage>> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| convert(m, i))
        .collect()
}

/// A [`Message`] holding exactly what async-openai serializes for `m`, in its key order.
pub fn from_request_message(m: &ChatCompletionRequestMessage) -> Result<Message> {
    from_request(m, 0)
}

/// [`from_request_message`] for each message.
pub fn from_request_messages(msgs: &[ChatCompletionRequestMessage]) -> Result<Vec<Message>> {
    msgs.iter()
        .enumerate()
        .map(|(i, m)| from_request(m, i))
        .collect()
}

/// The message `converted` stands for, given the `original` it was converted from with
/// [`to_request_message`]: `original` itself (same bytes, unknown fields, key order,
/// metadata) when `converted` is unchanged; otherwise `converted` with the fields
/// async-openai left out of `original` appended after its own, and `original`'s metadata.
pub fn restore(original: &Message, converted: &ChatCompletionRequestMessage) -> Result<Message> {
    let as_sent = convert(original, 0)?;
    if &as_sent == converted {
        return Ok(original.clone());
    }
    let dropped: Vec<(String, Value)> = {
        let Value::Object(orig) = original.to_wire_value() else {
            return Err(conversion(0, "the original message is not a JSON object"));
        };
        let kept = to_value(&as_sent, 0)?;
        orig.into_iter()
            .filter(|(k, _)| kept.get(k).is_none())
            .collect()
    };
    let mut body = to_value(converted, 0)?;
    for (k, v) in dropped {
        if !body.contains_key(&k) {
            body.insert(k, v);
        }
    }
    let mut m = Message::try_from(Value::Object(body))
        .map_err(|_| conversion(0, "the restored message does not parse"))?;
    if let Some(meta) = original.meta() {
        *m.meta_mut() = meta.clone();
    }
    Ok(m)
}

/// A [`Summarizer`] over a caller-supplied async-openai client. See the [module
/// docs](self#the-summarizer).
///
/// ```no_run
/// use compaction_llm::interop::async_openai::{Client, config::OpenAIConfig};
/// use compaction_llm::ChatOptions;
/// use compaction_llm::interop::AsyncOpenAiSummarizer;
///
/// let client = Client::with_config(
///     OpenAIConfig::new()
///         .with_api_base("http://127.0.0.1:8000/v1")
///         .with_api_key("local-key"),
/// );
/// let summarizer = AsyncOpenAiSummarizer::new(client, ChatOptions::new("qwen3-8b")).unwrap();
/// # let _ = summarizer;
/// ```
pub struct AsyncOpenAiSummarizer<C: Config> {
    client: Client<C>,
    options: ChatOptions,
    params: ChatParams,
}

impl<C: Config> fmt::Debug for AsyncOpenAiSummarizer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The client's config holds the key: only its base URL is shown.
        f.debug_struct("AsyncOpenAiSummarizer")
            .field("api_base", &self.client.config().api_base())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<C: Config> AsyncOpenAiSummarizer<C> {
    /// Wraps `client`; fails with [`Error::Config`] when the model is empty.
    pub fn new(client: Client<C>, options: ChatOptions) -> Result<Self> {
        if options.model.trim().is_empty() {
            return Err(Error::Config {
                reason: "model must not be empty",
            });
        }
        // The client already retries: none of this crate's unless asked.
        let params = ChatParams::new(
            &options,
            RetryConfig {
                max_retries: 0,
                ..RetryConfig::default()
            },
        );
        Ok(AsyncOpenAiSummarizer {
            client,
            options,
            params,
        })
    }

    /// The options.
    pub fn options(&self) -> &ChatOptions {
        &self.options
    }

    /// The client.
    pub fn client(&self) -> &Client<C> {
        &self.client
    }

    /// The models tried, in order: the summary model (when set and different), then the main
    /// model.
    pub fn model_chain(&self) -> Vec<&str> {
        self.params.model_chain()
    }

    async fn complete_once(&self, model: &str, body: &Value) -> Result<Completion> {
        let chat = self.client.chat();
        let call = chat.create_byot::<&Value, Value>(body);
        match tokio::time::timeout(self.options.timeout, call).await {
            Err(_) => Err(Error::Transient { status: None }),
            Ok(Err(e)) => Err(classify(&e)),
            Ok(Ok(v)) => chat::parse_completion_value(&v, model),
        }
    }
}

impl<C: Config + 'static> Transport for AsyncOpenAiSummarizer<C> {
    fn complete<'a>(&'a self, model: &'a str, body: &'a Value) -> CompletionFuture<'a> {
        Box::pin(self.complete_once(model, body))
    }
}

impl<C: Config + 'static> Summarizer for AsyncOpenAiSummarizer<C> {
    fn name(&self) -> &str {
        self.params.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(chat::summarize(&self.params, self, req))
    }
}

// ---------------------------------------------------------------------------------------------

/// Classifies an async-openai failure into this crate's classes; the API error's type, code
/// and message are read for classification only and dropped.
fn classify(e: &OpenAIError) -> Error {
    match e {
        OpenAIError::ApiError(api) => {
            let err = &api.api_error;
            let mut hint = String::new();
            for part in [
                err.r#type.as_deref(),
                err.code.as_deref(),
                Some(err.message.as_str()),
            ]
            .into_iter()
            .flatten()
            {
                hint.push_str(part);
                hint.push(' ');
            }
            chat::classify_hint(api.status_code.as_u16(), None, &hint.to_lowercase())
        }
        OpenAIError::Reqwest(e) if e.is_timeout() => Error::Transient { status: None },
        OpenAIError::Reqwest(e) => match e.status() {
            Some(s) => chat::classify_hint(s.as_u16(), None, ""),
            None => Error::Network {
                connect: e.is_connect(),
            },
        },
        OpenAIError::JSONDeserialize(..) => Error::MalformedResponse {
            reason: "body is not a chat completion or an OpenAI error object",
        },
        OpenAIError::StreamError(_) => Error::MalformedResponse {
            reason: "unexpected event stream",
        },
        OpenAIError::InvalidArgument(_) => Error::Config {
            reason: "async-openai rejected the request arguments",
        },
        _ => Error::Config {
            reason: "async-openai failed before sending the request",
        },
    }
}

fn convert(m: &Message, index: usize) -> Result<ChatCompletionRequestMessage> {
    serde_json::from_str(&m.to_wire_json()).map_err(|e| {
        conversion(
            index,
            match e.classify() {
                serde_json::error::Category::Data => {
                    "role or content has no async-openai request message type"
                }
                _ => "message is not valid JSON",
            },
        )
    })
}

fn from_request(m: &ChatCompletionRequestMessage, index: usize) -> Result<Message> {
    let json = serde_json::to_string(m)
        .map_err(|_| conversion(index, "async-openai message did not serialize"))?;
    Message::from_json(&json).map_err(|_| conversion(index, "async-openai message does not parse"))
}

fn to_value(m: &ChatCompletionRequestMessage, index: usize) -> Result<Map<String, Value>> {
    match serde_json::to_value(m) {
        Ok(Value::Object(o)) => Ok(o),
        _ => Err(conversion(
            index,
            "async-openai message is not a JSON object",
        )),
    }
}

fn conversion(index: usize, reason: &'static str) -> Error {
    Error::Conversion { index, reason }
}
