//! The classified summarizer error.
//!
//! Every failure of a summarizer call falls into one [`ErrorClass`]. Error values carry HTTP
//! status codes, classes and `Retry-After` delays only: never a provider response body, never
//! transcript text, never a credential.

use std::fmt;
use std::time::Duration;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a summarizer call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The provider refused the credentials (401/403), or no key was available.
    #[error("summarizer authentication failed ({})", status_or(*.status, "no API key"))]
    Auth {
        /// The HTTP status, `None` when the key was missing before any request.
        status: Option<u16>,
    },
    /// Out of quota or credits (402, or 429 `insufficient_quota`). A 402 whose error says the
    /// limit resets is [`Error::Transient`] instead.
    #[error("summarizer quota exhausted (HTTP {status})")]
    Quota {
        /// The HTTP status.
        status: u16,
    },
    /// Rate limited (429); `retry_after` is the provider's `Retry-After`, when given.
    #[error("summarizer rate limited (HTTP 429{})", retry_suffix(*.retry_after))]
    RateLimited {
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// A server error (5xx, 408), a request timeout (`status: None`), or a 402 whose error says
    /// the limit resets (a usage window, "try again in", "resets at", a `Retry-After`): worth
    /// the main model or the extractive fallback, not an abort.
    #[error("summarizer transient failure ({})", status_or(*.status, "timed out"))]
    Transient {
        /// The HTTP status, `None` for a timeout.
        status: Option<u16>,
    },
    /// The connection could not be made or was reset.
    #[error("summarizer network failure ({})", if *.connect { "connect" } else { "connection lost" })]
    Network {
        /// Whether the connection could not be established at all.
        connect: bool,
    },
    /// The request itself was larger than the model's context window.
    #[error("summarizer request exceeds the model context length (HTTP {status})")]
    ContextLengthExceeded {
        /// The HTTP status.
        status: u16,
    },
    /// The model does not exist on the endpoint (404 or `model_not_found`).
    #[error("summarizer model not found (HTTP {status})")]
    ModelNotFound {
        /// The HTTP status.
        status: u16,
    },
    /// Any other refusal of the request (4xx).
    #[error("summarizer request rejected (HTTP {status})")]
    Rejected {
        /// The HTTP status.
        status: u16,
    },
    /// The response was not a chat completion.
    #[error("summarizer response malformed: {reason}")]
    MalformedResponse {
        /// What was wrong, in fixed words.
        reason: &'static str,
    },
    /// Nothing was left after stripping reasoning blocks.
    #[error("summarizer returned empty output")]
    EmptyOutput,
    /// The output was cut by the token limit (`finish_reason: "length"`).
    #[error("summarizer output truncated by the token limit")]
    TruncatedOutput,
    /// The output issued instructions to the next context instead of summarizing.
    #[error("summarizer output contains instructions to the next context")]
    DirectiveOutput,
    /// The output is more than [`crate::guard::MAX_BUDGET_RATIO`] times the summary budget
    /// (an endpoint echoing its prompt, a model ignoring the budget).
    #[error("summarizer output of about {tokens} tokens exceeds its budget of {budget} tokens")]
    OverlongOutput {
        /// Estimated tokens of the output.
        tokens: u64,
        /// The request's summary budget in tokens.
        budget: u32,
    },
    /// The output reproduces the summarizer's own prompt (its fixed instructions or tags, or
    /// mostly the material verbatim) instead of summarizing it: an endpoint that echoes its
    /// input ([`crate::guard::is_echo`]).
    #[error("summarizer output echoes its prompt")]
    EchoedPrompt,
    /// A message could not be converted to or from another library's message type (feature
    /// `async-openai`).
    #[error("message {index}: {reason}")]
    Conversion {
        /// Index of the message in the list converted (0 for a single message).
        index: usize,
        /// What is wrong, in fixed words.
        reason: &'static str,
    },
    /// The adapter configuration is unusable.
    #[error("summarizer configuration invalid: {reason}")]
    Config {
        /// What is wrong, in fixed words.
        reason: &'static str,
    },
    /// The summarizer panicked ([`PanicGuardLayer`](crate::PanicGuardLayer)); class
    /// `transient`.
    #[error("summarizer panicked")]
    Panicked,
    /// The request's deadline passed ([`DeadlineLayer`](crate::DeadlineLayer)): before the
    /// call (`called: false`, it was not made) or during it (it was abandoned); class
    /// `transient`.
    #[error("summarizer {}", if *.called { "call abandoned at its deadline" } else { "not called: its deadline had passed" })]
    DeadlinePassed {
        /// Whether the call had been made.
        called: bool,
    },
    /// A circuit breaker is open: the summarizer was not called. Its class is `class`, the
    /// class of the failure that opened the circuit.
    #[error("summarizer not called: circuit open after {class} failures")]
    CircuitOpen {
        /// The class of the failure that opened the circuit.
        class: ErrorClass,
    },
}

/// The class of an [`Error`], a stable name for telemetry and policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// [`Error::Auth`]
    Auth,
    /// [`Error::Quota`]
    Quota,
    /// [`Error::RateLimited`]
    RateLimited,
    /// [`Error::Transient`]
    Transient,
    /// [`Error::Network`]
    Network,
    /// [`Error::ContextLengthExceeded`]
    ContextLengthExceeded,
    /// [`Error::ModelNotFound`]
    ModelNotFound,
    /// [`Error::Rejected`]
    Rejected,
    /// [`Error::MalformedResponse`]
    MalformedResponse,
    /// [`Error::EmptyOutput`]
    EmptyOutput,
    /// [`Error::TruncatedOutput`]
    TruncatedOutput,
    /// [`Error::DirectiveOutput`]
    DirectiveOutput,
    /// [`Error::OverlongOutput`]
    OverlongOutput,
    /// [`Error::EchoedPrompt`]
    EchoedPrompt,
    /// [`Error::Conversion`]
    Conversion,
    /// [`Error::Config`]
    Config,
}

impl ErrorClass {
    /// The stable snake_case name (`auth`, `quota`, `rate_limited`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Auth => "auth",
            ErrorClass::Quota => "quota",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Transient => "transient",
            ErrorClass::Network => "network",
            ErrorClass::ContextLengthExceeded => "context_length_exceeded",
            ErrorClass::ModelNotFound => "model_not_found",
            ErrorClass::Rejected => "rejected",
            ErrorClass::MalformedResponse => "malformed_response",
            ErrorClass::EmptyOutput => "empty_output",
            ErrorClass::TruncatedOutput => "truncated_output",
            ErrorClass::DirectiveOutput => "directive_output",
            ErrorClass::OverlongOutput => "overlong_output",
            ErrorClass::EchoedPrompt => "echoed_prompt",
            ErrorClass::Conversion => "conversion",
            ErrorClass::Config => "config",
        }
    }
}

impl ErrorClass {
    /// The fallback rule, written once for every caller (the [`FallbackLayer`](crate::FallbackLayer)
    /// every stack of summarizer policy uses): a failure of any class but auth and quota may be answered by a
    /// fallback summarizer; auth and quota abort the pass (the operator must act, and another
    /// summary would hide it).
    pub fn allows_fallback(self) -> bool {
        !matches!(self, ErrorClass::Auth | ErrorClass::Quota)
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Auth { .. } => ErrorClass::Auth,
            Error::Quota { .. } => ErrorClass::Quota,
            Error::RateLimited { .. } => ErrorClass::RateLimited,
            Error::Transient { .. } => ErrorClass::Transient,
            Error::Network { .. } => ErrorClass::Network,
            Error::ContextLengthExceeded { .. } => ErrorClass::ContextLengthExceeded,
            Error::ModelNotFound { .. } => ErrorClass::ModelNotFound,
            Error::Rejected { .. } => ErrorClass::Rejected,
            Error::MalformedResponse { .. } => ErrorClass::MalformedResponse,
            Error::EmptyOutput => ErrorClass::EmptyOutput,
            Error::TruncatedOutput => ErrorClass::TruncatedOutput,
            Error::DirectiveOutput => ErrorClass::DirectiveOutput,
            Error::OverlongOutput { .. } => ErrorClass::OverlongOutput,
            Error::EchoedPrompt => ErrorClass::EchoedPrompt,
            Error::Conversion { .. } => ErrorClass::Conversion,
            Error::Config { .. } => ErrorClass::Config,
            Error::Panicked | Error::DeadlinePassed { .. } => ErrorClass::Transient,
            Error::CircuitOpen { class } => *class,
        }
    }

    /// Whether the summarizer was not called at all (an open circuit, a deadline already
    /// passed), as opposed to called and failed.
    pub fn not_called(&self) -> bool {
        matches!(
            self,
            Error::CircuitOpen { .. } | Error::DeadlinePassed { called: false }
        )
    }

    /// Auth and quota failures: a batch pass must abort and leave the transcript unchanged
    /// (no extractive fallback, no retry until the operator acts). The negation of
    /// [`ErrorClass::allows_fallback`], the one place the rule is written.
    pub fn is_fatal_for_batch(&self) -> bool {
        !self.class().allows_fallback()
    }

    /// Failures that may succeed when the same request is sent again later: rate limits,
    /// server errors and timeouts, network failures, malformed responses.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::RateLimited { .. }
                | Error::Transient { .. }
                | Error::Network { .. }
                | Error::MalformedResponse { .. }
        )
    }

    /// Failures of one model that justify trying the main model instead of a separate summary
    /// model: model not found, timeout, 5xx, a 402 whose limit resets, malformed response.
    pub fn allows_model_fallback(&self) -> bool {
        matches!(
            self,
            Error::ModelNotFound { .. } | Error::Transient { .. } | Error::MalformedResponse { .. }
        )
    }

    /// The HTTP status the provider answered with, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Auth { status } | Error::Transient { status } => *status,
            Error::Quota { status }
            | Error::ContextLengthExceeded { status }
            | Error::ModelNotFound { status }
            | Error::Rejected { status } => Some(*status),
            Error::RateLimited { .. } => Some(429),
            _ => None,
        }
    }

    /// The provider's requested wait before retrying, when given.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

fn status_or(status: Option<u16>, none: &str) -> String {
    match status {
        Some(s) => format!("HTTP {s}"),
        None => none.to_owned(),
    }
}

fn retry_suffix(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!(", retry after {} ms", d.as_millis()),
        None => String::new(),
    }
}
