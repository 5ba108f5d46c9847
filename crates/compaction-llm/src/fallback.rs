//! The fallback rule, written once: [`FallbackSummarizer`] (made by [`FallbackLayer`]).

use crate::error::Error;
use crate::layer::Layer;
use crate::summarizer::{FallbackCause, Summarizer, SummaryFuture, SummaryRequest};

/// A primary summarizer with a fallback (usually [`ExtractiveSummarizer`]): a failure whose
/// class [allows a fallback](crate::ErrorClass::allows_fallback) (everything but auth and quota) is
/// answered by the fallback, and its response carries the [`FallbackCause`]; auth and quota
/// errors, and a failure of the fallback itself, return the primary's error. The primary's
/// error class is logged (no content).
///
/// ```
/// use compaction_llm::layer::Stack;
/// use compaction_llm::{ExtractiveSummarizer, FallbackLayer, ScriptedSummarizer, Summarizer};
/// # use compaction_llm::{Error, SummaryKind, SummaryRequest};
///
/// let model = ScriptedSummarizer::new();
/// model.fail_always(Some(Error::Transient { status: Some(503) }));
/// let s = Stack::new().layer(FallbackLayer::new(ExtractiveSummarizer::default())).summarizer(model);
/// # let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 400, "2026-01-02")
/// #     .with_messages(vec![compaction_core::Message::user("fix it")]);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let out = rt.block_on(s.summarize(&req)).unwrap();
/// assert!(out.extractive);
/// assert_eq!(out.fallback.unwrap().class.as_str(), "transient");
/// ```
///
/// [`ExtractiveSummarizer`]: crate::ExtractiveSummarizer
#[derive(Debug)]
pub struct FallbackSummarizer<P, F> {
    /// Tried first.
    pub primary: P,
    /// Used when the primary fails with a non-fatal error.
    pub fallback: F,
}

/// Wraps a summarizer in a [`FallbackSummarizer`] over a clone of its fallback.
#[derive(Clone, Debug)]
pub struct FallbackLayer<F> {
    fallback: F,
}

impl<F> FallbackLayer<F> {
    /// The layer that falls back to `fallback`.
    pub fn new(fallback: F) -> FallbackLayer<F> {
        FallbackLayer { fallback }
    }
}

impl<S: Summarizer, F: Summarizer + Clone> Layer<S> for FallbackLayer<F> {
    type Summarizer = FallbackSummarizer<S, F>;

    fn layer(&self, inner: S) -> Self::Summarizer {
        FallbackSummarizer {
            primary: inner,
            fallback: self.fallback.clone(),
        }
    }
}

impl<P: Summarizer, F: Summarizer> Summarizer for FallbackSummarizer<P, F> {
    fn name(&self) -> &str {
        self.primary.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            let e: Error = match self.primary.summarize(req).await {
                Ok(r) => return Ok(r),
                Err(e) if !e.class().allows_fallback() => return Err(e),
                Err(e) => e,
            };
            let cause = FallbackCause {
                class: e.class(),
                skipped: e.not_called(),
            };
            tracing::warn!(
                class = cause.class.as_str(),
                skipped = cause.skipped,
                status = e.status(),
                primary = self.primary.name(),
                fallback = self.fallback.name(),
                kind = req.kind.as_str(),
                "summarizer failed; using fallback"
            );
            match self.fallback.summarize(req).await {
                Ok(mut r) => {
                    r.fallback = Some(cause);
                    Ok(r)
                }
                // A failing fallback leaves the primary's own failure to report.
                Err(_) => Err(e),
            }
        })
    }
}
