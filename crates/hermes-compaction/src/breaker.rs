//! The one summarizer-call policy every pass shares (batch, split-turn, micro, defrag): the
//! fallback rule, a wall-clock budget per call, and a circuit breaker, so a summarizer that is
//! down is paid for a few times, not on every pass.
//!
//! - A summarizer that panics (while building its future or polling it) is caught: the call
//!   failed with class `transient`, and the rules below apply to it like to any other.
//! - Auth and quota failures abort the pass (they are not the breaker's business: they answer
//!   at once and retrying elsewhere would not help).
//! - Any other failure uses the extractive fallback when `compression.fallback_to_extractive`
//!   is set, else fails the pass.
//! - Each call is bounded in time by the adapter (the OpenAI-compatible adapters stop retrying
//!   once `auxiliary.compression.timeout` x (`max_retries` + 1) has passed, and honour a
//!   `Retry-After` up to the request timeout): the breaker bounds how many passes pay that.
//! - After `auxiliary.compression.breaker_failures` consecutive transient failures (timeouts,
//!   5xx, rate limits, network), the breaker opens: passes go straight to the fallback (or fail
//!   at once without one) until `breaker_probe_secs` have passed on the compressor's clock; then
//!   one call probes the summarizer, and its success closes the breaker, its failure re-opens it
//!   for another interval.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::task::Poll;

use compaction_llm::{ErrorClass, Summarizer, SummaryRequest, SummaryResponse};

/// The breaker's state: consecutive transient failures and when the summarizer may be tried
/// again. Plain data owned by the compressor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Breaker {
    failures: u32,
    open_until_ms: Option<u64>,
    last: Option<ErrorClass>,
}

/// The settings of [`summarize`], read once from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallPolicy {
    /// Consecutive transient failures that open the breaker (0: never).
    pub failures: u32,
    /// How long the breaker stays open before one probe.
    pub probe_ms: u64,
}

impl CallPolicy {
    /// From `auxiliary.compression`.
    pub(crate) fn from_config(aux: &crate::config::SummarizerConfig) -> CallPolicy {
        CallPolicy {
            failures: aux.breaker_failures,
            probe_ms: aux.breaker_probe_secs.saturating_mul(1000),
        }
    }
}

/// Why no summary came back: the failure's class, and whether the summarizer was skipped
/// (breaker open, no fallback) rather than called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallFailure {
    pub class: ErrorClass,
    pub skipped: bool,
}

/// Which summarizer wrote a summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The configured summarizer.
    Primary,
    /// The extractive fallback, after the summarizer failed (`skipped: false`) or without
    /// calling it because the breaker is open (`skipped: true`).
    Fallback { skipped: bool },
}

impl Breaker {
    /// Whether the summarizer may be called at `now_ms`: the breaker is closed, or its probe
    /// time has come.
    fn allows(&self, now_ms: u64) -> bool {
        self.open_until_ms.is_none_or(|t| now_ms >= t)
    }

    fn success(&mut self) {
        *self = Breaker::default();
    }

    fn failure(&mut self, class: ErrorClass, now_ms: u64, policy: &CallPolicy) {
        self.last = Some(class);
        if !counts(class) {
            return;
        }
        self.failures = self.failures.saturating_add(1);
        if policy.failures > 0 && self.failures >= policy.failures {
            self.open_until_ms = Some(now_ms.saturating_add(policy.probe_ms));
        }
    }
}

/// Failures that say the summarizer is unreachable or overloaded, which a later call may not
/// see: the ones the breaker counts.
fn counts(class: ErrorClass) -> bool {
    matches!(
        class,
        ErrorClass::Transient | ErrorClass::Network | ErrorClass::RateLimited
    )
}

/// One summary under the shared policy (see the module docs). `now_ms` is the compressor's
/// clock. Returns the response and who wrote it, or the failure that fails the pass.
pub(crate) async fn summarize(
    primary: &dyn Summarizer,
    fallback: Option<&dyn Summarizer>,
    breaker: &Mutex<Breaker>,
    policy: &CallPolicy,
    now_ms: u64,
    req: &SummaryRequest,
) -> Result<(SummaryResponse, Route), CallFailure> {
    let (allowed, last) = {
        let b = breaker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (b.allows(now_ms), b.last)
    };
    if !allowed {
        let last = last.unwrap_or(ErrorClass::Transient);
        tracing::debug!(
            class = last.as_str(),
            "summarizer circuit open; using the fallback without calling it"
        );
        let failure = CallFailure {
            class: last,
            skipped: true,
        };
        return match fallback {
            Some(fb) => guarded(fb, req)
                .await
                .map(|r| (r, Route::Fallback { skipped: true }))
                .map_err(|_| failure),
            None => Err(failure),
        };
    }
    let class = match guarded(primary, req).await {
        Ok(r) => {
            breaker
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .success();
            return Ok((r, Route::Primary));
        }
        Err(class) => class,
    };
    let failure = CallFailure {
        class,
        skipped: false,
    };
    if matches!(class, ErrorClass::Auth | ErrorClass::Quota) {
        return Err(failure);
    }
    breaker
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .failure(class, now_ms, policy);
    match fallback {
        Some(fb) => {
            tracing::warn!(
                class = class.as_str(),
                "summarizer failed; using the extractive fallback"
            );
            // A failing fallback leaves the summarizer's own failure to report.
            guarded(fb, req)
                .await
                .map(|r| (r, Route::Fallback { skipped: false }))
                .map_err(|_| failure)
        }
        None => Err(failure),
    }
}

/// One call of `s`, with a panic (in `summarize` or while its future is polled) caught and
/// returned as a `transient` failure, so no summarizer can fail the caller's turn.
fn guarded<'a>(
    s: &'a dyn Summarizer,
    req: &'a SummaryRequest,
) -> impl Future<Output = Result<SummaryResponse, ErrorClass>> + 'a {
    let mut call = catch_unwind(AssertUnwindSafe(|| s.summarize(req))).ok();
    std::future::poll_fn(move |cx| {
        let Some(fut) = call.as_mut() else {
            return Poll::Ready(Err(panicked()));
        };
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(r)) => Poll::Ready(r.map_err(|e| e.class())),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => {
                call = None;
                Poll::Ready(Err(panicked()))
            }
        }
    })
}

fn panicked() -> ErrorClass {
    tracing::error!("the summarizer panicked; counted as a transient failure");
    ErrorClass::Transient
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CallPolicy {
        CallPolicy {
            failures: 3,
            probe_ms: 60_000,
        }
    }

    #[test]
    fn opens_after_consecutive_transient_failures_and_probes_later() {
        let mut b = Breaker::default();
        let p = policy();
        b.failure(ErrorClass::Transient, 0, &p);
        b.failure(ErrorClass::Network, 10, &p);
        assert!(b.allows(20));
        b.failure(ErrorClass::RateLimited, 20, &p);
        assert!(!b.allows(21));
        assert!(!b.allows(60_019));
        assert!(b.allows(60_020), "one probe after the interval");
        // A failed probe re-opens it for another interval.
        b.failure(ErrorClass::Transient, 60_020, &p);
        assert!(!b.allows(60_021));
        assert!(b.allows(120_020));
        b.success();
        assert_eq!(b, Breaker::default());
    }

    #[test]
    fn output_failures_do_not_count_and_zero_never_opens() {
        let mut b = Breaker::default();
        let p = policy();
        for _ in 0..10 {
            b.failure(ErrorClass::EmptyOutput, 0, &p);
            b.failure(ErrorClass::DirectiveOutput, 0, &p);
        }
        assert!(b.allows(0));
        let off = CallPolicy {
            failures: 0,
            ..policy()
        };
        for _ in 0..10 {
            b.failure(ErrorClass::Transient, 0, &off);
        }
        assert!(b.allows(0));
    }
}
