//! The [`Summarizer`] extension point and its request and response.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use compaction_core::Message;

use crate::error::{ErrorClass, Result};

/// The future a [`Summarizer`] returns.
pub type SummaryFuture<'a> = Pin<Box<dyn Future<Output = Result<SummaryResponse>> + Send + 'a>>;

/// Turns a span of conversation into a summary. Dyn-compatible: hold it as
/// `Arc<dyn Summarizer>`.
///
/// Implementations must not put transcript text or provider response bodies into errors or
/// logs, and should redact secrets ([`compaction_redact`]) in what they send and return.
///
/// A summarizer over your own model client; wrap it in a
/// [`FallbackLayer`](crate::FallbackLayer) so failures other than auth and quota fall back to
/// the extractive summarizer (the [`layer`](crate::layer) module composes the other policy
/// layers):
///
/// ```
/// use compaction_llm::{
///     Error, ExtractiveSummarizer, FallbackLayer, Summarizer, SummaryFuture, SummaryKind,
///     SummaryRequest, SummaryResponse,
/// };
/// use compaction_llm::layer::Stack;
///
/// struct MyModel;
///
/// impl Summarizer for MyModel {
///     fn name(&self) -> &str {
///         "my-model"
///     }
///
///     fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
///         Box::pin(async move {
///             if req.material.is_empty() {
///                 // Errors carry classes and statuses, never text.
///                 return Err(Error::Transient { status: Some(503) });
///             }
///             // Call your model with compaction_llm::prompts::build(req, &req.material) here,
///             // and pass its output through compaction_llm::guard::check_within (reasoning
///             // stripped, directives and over-budget output refused, secrets redacted).
///             let out = "## Goal\n- ship the fix";
///             let text = compaction_llm::guard::check_within(out, Some("stop"), req.budget_tokens)?;
///             Ok(SummaryResponse::new(text, "my-model"))
///         })
///     }
/// }
///
/// let s = Stack::new().layer(FallbackLayer::new(ExtractiveSummarizer::default())).summarizer(MyModel);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let req = SummaryRequest::new(SummaryKind::BatchFirst, "[user] fix it", 400, "2026-01-02");
/// assert_eq!(rt.block_on(s.summarize(&req)).unwrap().text, "## Goal\n- ship the fix");
/// // A transient failure is answered by the fallback.
/// let empty = SummaryRequest::new(SummaryKind::BatchFirst, "", 400, "2026-01-02")
///     .with_messages(vec![compaction_core::Message::user("fix it")]);
/// let out = rt.block_on(s.summarize(&empty)).unwrap();
/// assert!(out.extractive && out.fallback.is_some());
/// ```
pub trait Summarizer: Send + Sync {
    /// The model id (or adapter name) that produces the summaries, for telemetry.
    fn name(&self) -> &str;

    /// Produces the summary `req` asks for.
    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a>;
}

impl<S: Summarizer + ?Sized> Summarizer for Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        (**self).summarize(req)
    }
}

impl<S: Summarizer + ?Sized> Summarizer for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        (**self).summarize(req)
    }
}

/// What kind of summary a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SummaryKind {
    /// Batch compaction, first summary of the middle.
    BatchFirst,
    /// Batch compaction, iterative update of [`SummaryRequest::previous_summary`].
    BatchUpdate,
    /// Micro-compaction: fold one exchange into the running summary.
    MicroMerge,
    /// Shorten the running summary alone (material is empty or the summary itself).
    Defrag,
    /// Progress of the current long turn (section 4a), updated in place.
    TurnProgress,
}

impl SummaryKind {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryKind::BatchFirst => "batch_first",
            SummaryKind::BatchUpdate => "batch_update",
            SummaryKind::MicroMerge => "micro_merge",
            SummaryKind::Defrag => "defrag",
            SummaryKind::TurnProgress => "turn_progress",
        }
    }
}

/// One summary request. Its `Debug` shows sizes, never text.
#[derive(Clone, PartialEq)]
pub struct SummaryRequest {
    /// What to produce.
    pub kind: SummaryKind,
    /// The span, already serialized to plain text and redacted by the caller.
    pub material: String,
    /// The raw span, for deterministic summarizers (may be empty; then `material` is used).
    pub messages: Vec<Message>,
    /// The summary to update (batch update, micro merge, turn progress) or shorten (defrag).
    pub previous_summary: Option<String>,
    /// A focus topic the summary should favour.
    pub focus: Option<String>,
    /// Target size of the summary in tokens.
    pub budget_tokens: u32,
    /// Today's date, `YYYY-MM-DD`, supplied by the caller (core has no clock).
    pub current_date: String,
    /// The caller appends a [ledger](compaction_core::ledger) of the span's file paths and
    /// commands to the summary, so the summarizer need not enumerate them.
    pub ledger_kept: bool,
    /// The agent's last request as sent, when the summarizer is the agent's own model: an
    /// adapter that honours it sends those messages unchanged, up to the span's end
    /// ([`WarmPrefix::sent`]), followed by one instruction naming the span, so the provider's
    /// prompt cache serves the prefix
    /// ([`prompts::build_warm`](crate::prompts::build_warm)). `None`: a standalone request.
    pub warm: Option<WarmPrefix>,
    /// When the caller stops waiting for the summary (real, monotonic time), as the
    /// [`DeadlineLayer`](crate::DeadlineLayer) keeps it. `None`: no deadline.
    pub deadline: Option<Instant>,
}

/// The agent's last request, reused as the prefix of a warm-cache summary request.
///
/// `messages` are shared (`Arc`), never copied per attempt; `span` is the range of them the
/// summary replaces (within `messages`); the request sends them up to the span's end
/// ([`WarmPrefix::sent`]). Its `Debug` shows sizes, never text.
#[derive(Clone, PartialEq)]
pub struct WarmPrefix {
    /// The messages of the agent's last request, in order, as it sent them.
    pub messages: Arc<[Message]>,
    /// The messages the summary replaces (indices into `messages`).
    pub span: Range<usize>,
}

impl WarmPrefix {
    /// A prefix whose span lies within its messages and is not empty; `None` otherwise.
    pub fn new(messages: Arc<[Message]>, span: Range<usize>) -> Option<WarmPrefix> {
        (span.start < span.end && span.end <= messages.len())
            .then_some(WarmPrefix { messages, span })
    }

    /// The messages a warm request sends before its instruction: the last request's messages
    /// up to the end of the span. Prompt caches that serve a request's longest cached prefix
    /// (OpenAI's, DeepSeek's, Gemini's implicit cache, vLLM's and SGLang's prefix caches) serve
    /// all of them, since they begin the last request byte for byte; the messages after the
    /// span would only add input the summary leaves out.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use compaction_core::Message;
    /// use compaction_llm::WarmPrefix;
    ///
    /// let sent: Arc<[Message]> = vec![
    ///     Message::system("You are a coding agent."),
    ///     Message::user("fix the build"),
    ///     Message::assistant("fixed"),
    ///     Message::user("now run the tests"),
    /// ]
    /// .into();
    /// let warm = WarmPrefix::new(sent, 1..3).unwrap();
    /// assert_eq!(warm.sent().len(), 3, "the system message and the span");
    /// ```
    pub fn sent(&self) -> &[Message] {
        &self.messages[..self.span.end]
    }
}

impl fmt::Debug for WarmPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmPrefix")
            .field("messages", &self.messages.len())
            .field("span", &self.span)
            .finish()
    }
}

impl SummaryRequest {
    /// A request with no raw messages, no previous summary and no focus.
    pub fn new(
        kind: SummaryKind,
        material: impl Into<String>,
        budget_tokens: u32,
        current_date: impl Into<String>,
    ) -> SummaryRequest {
        SummaryRequest {
            kind,
            material: material.into(),
            messages: Vec::new(),
            previous_summary: None,
            focus: None,
            budget_tokens,
            current_date: current_date.into(),
            ledger_kept: false,
            warm: None,
            deadline: None,
        }
    }

    /// Sets the deadline (see [`SummaryRequest::deadline`]).
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> SummaryRequest {
        self.deadline = deadline;
        self
    }

    /// Makes the request a warm-cache one over `prefix` (see [`SummaryRequest::warm`]).
    pub fn with_warm(mut self, prefix: Option<WarmPrefix>) -> SummaryRequest {
        self.warm = prefix;
        self
    }

    /// Says whether the caller appends a ledger of the span's files and commands.
    pub fn with_ledger_kept(mut self, kept: bool) -> SummaryRequest {
        self.ledger_kept = kept;
        self
    }

    /// Sets the previous summary.
    pub fn with_previous(mut self, summary: impl Into<String>) -> SummaryRequest {
        self.previous_summary = Some(summary.into());
        self
    }

    /// Sets the focus topic.
    pub fn with_focus(mut self, focus: impl Into<String>) -> SummaryRequest {
        self.focus = Some(focus.into());
        self
    }

    /// Sets the raw messages of the span.
    pub fn with_messages(mut self, messages: Vec<Message>) -> SummaryRequest {
        self.messages = messages;
        self
    }
}

impl fmt::Debug for SummaryRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryRequest")
            .field("kind", &self.kind)
            .field("material_chars", &self.material.len())
            .field("messages", &self.messages.len())
            .field(
                "previous_summary_chars",
                &self.previous_summary.as_ref().map(String::len),
            )
            .field("focus", &self.focus.is_some())
            .field("budget_tokens", &self.budget_tokens)
            .field("current_date", &self.current_date)
            .field("ledger_kept", &self.ledger_kept)
            .field("warm", &self.warm)
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// Token usage the provider reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the output.
    pub completion_tokens: u64,
}

/// A summary. Its `Debug` shows sizes, never text.
#[derive(Clone, PartialEq)]
pub struct SummaryResponse {
    /// The summary body (guarded and redacted).
    pub text: String,
    /// The model (or adapter) that produced it.
    pub model: String,
    /// Usage, when the provider reported it.
    pub usage: Option<Usage>,
    /// Whether the deterministic extractive summarizer produced it (embedded default or
    /// fallback), rather than a model.
    pub extractive: bool,
    /// Set when a [`FallbackLayer`](crate::FallbackLayer) answered for a primary that failed
    /// or was skipped: why. `None` for the primary's own answer.
    pub fallback: Option<FallbackCause>,
}

impl SummaryResponse {
    /// A model's summary `text` from `model`, with no usage reported.
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> SummaryResponse {
        SummaryResponse {
            text: text.into(),
            model: model.into(),
            usage: None,
            extractive: false,
            fallback: None,
        }
    }
}

impl fmt::Debug for SummaryResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryResponse")
            .field("text_chars", &self.text.len())
            .field("model", &self.model)
            .field("usage", &self.usage)
            .field("extractive", &self.extractive)
            .field("fallback", &self.fallback)
            .finish()
    }
}

/// Why a response came from the fallback rather than the primary summarizer
/// ([`SummaryResponse::fallback`](crate::SummaryResponse::fallback)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FallbackCause {
    /// The class of the primary's failure (for a skipped call: of the failure that opened
    /// the circuit, or `transient` for a deadline already passed).
    pub class: ErrorClass,
    /// The primary was not called at all ([`Error::not_called`](crate::Error::not_called)).
    pub skipped: bool,
}
