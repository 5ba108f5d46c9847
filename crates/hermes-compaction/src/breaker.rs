//! The one summarizer-call policy every pass shares (batch, split-turn, micro, defrag): the
//! panic guard, the pass's deadline, the output guard, the circuit breaker and the fallback
//! rule, composed in that order around one call, so a summarizer that is down is paid for a
//! bounded time, not on every pass.
//!
//! - A summarizer that panics (while building its future or polling it) is caught: the call
//!   failed with class `transient`, and the rules below apply to it like to any other.
//! - **Deadline.** A pass waits on the summarizer for at most `auxiliary.compression.deadline_secs`
//!   of real (monotonic) time, over all its calls, their retries, regenerations and model
//!   fallback included ([`crate::deadline`]); a call still running then is abandoned and
//!   failed as `transient` (a timeout), and a call the pass would start after it is not made.
//! - **Output guard.** What a summarizer other than the extractive one returns is judged by
//!   [`compaction_llm::guard::check_summary`] against its request, whatever adapter wrote it:
//!   an echo of the prompt, directive text or an answer over its budget is a failure of that
//!   class (so micro and batch passes refuse the same answers).
//! - **Fallback rule** ([`ErrorClass::allows_fallback`], written once in `compaction-llm`):
//!   auth and quota failures abort the pass (they are not the breaker's business: they answer
//!   at once and retrying elsewhere would not help); any other failure uses the extractive
//!   fallback when `compression.fallback_to_extractive` is set, else fails the pass.
//! - **Circuit breaker.** A transient failure (timeout, 5xx, rate limit, network) that took at
//!   least the request timeout (`auxiliary.compression.timeout`; a hang, a slow drip, the
//!   deadline) opens the breaker at once; faster ones open it after `breaker_failures` in a
//!   row. While it is open, passes go straight to the fallback (or fail at once without one)
//!   until `breaker_probe_secs` have passed on the compressor's clock, counted from the END of
//!   the failing call; then one call probes the summarizer: its success closes the breaker,
//!   its failure re-opens it for another interval from the probe's end. 0 failures turns the
//!   breaker off.
//!
//! So at the defaults (30 s timeout, 1 retry, 60 s deadline, 120 s probe interval) a pass
//! spends at most 60 s on a summarizer that is down, and while it stays down at most one pass
//! in each 120 s after that pays it again.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::task::Poll;
use std::time::{Duration, Instant};

use compaction_llm::{ErrorClass, Summarizer, SummaryRequest, SummaryResponse};

use crate::clock::Clock;

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
    /// How long the breaker stays open before one probe, from the failing call's end.
    pub probe_ms: u64,
    /// A transient failure whose call took at least this long opens the breaker at once (the
    /// request timeout; 0: none does).
    pub slow_ms: u64,
    /// The real time one pass may wait on the summarizer (`None`: unbounded).
    pub deadline: Option<Duration>,
}

impl CallPolicy {
    /// From `auxiliary.compression`.
    pub(crate) fn from_config(aux: &crate::config::SummarizerConfig) -> CallPolicy {
        CallPolicy {
            failures: aux.breaker_failures,
            probe_ms: aux.breaker_probe_secs.saturating_mul(1000),
            slow_ms: aux.timeout.saturating_mul(1000),
            deadline: (aux.deadline_secs > 0).then(|| Duration::from_secs(aux.deadline_secs)),
        }
    }

    /// The instant a pass starting now must be done with the summarizer by.
    pub(crate) fn pass_deadline(&self) -> Option<Instant> {
        self.deadline.and_then(|d| Instant::now().checked_add(d))
    }
}

/// Why no summary came back: the failure's class, and whether the summarizer was skipped
/// (breaker open or the pass's deadline passed, no fallback) rather than called.
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
    /// The extractive fallback, after the summarizer failed with `class` (`skipped: false`)
    /// or without calling it (`skipped: true`: the breaker is open, `class` the failure that
    /// opened it, or the pass's deadline had passed).
    Fallback { skipped: bool, class: ErrorClass },
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

    /// A failure of a call that ran from `started_ms` to `ended_ms` on the compressor's clock;
    /// `timed_out` when the pass's deadline cut it.
    fn failure(
        &mut self,
        class: ErrorClass,
        started_ms: u64,
        ended_ms: u64,
        timed_out: bool,
        policy: &CallPolicy,
    ) {
        self.last = Some(class);
        if !counts(class) {
            return;
        }
        self.failures = self.failures.saturating_add(1);
        let slow = timed_out
            || (policy.slow_ms > 0 && ended_ms.saturating_sub(started_ms) >= policy.slow_ms);
        if policy.failures > 0 && (slow || self.failures >= policy.failures) {
            self.open_until_ms = Some(ended_ms.saturating_add(policy.probe_ms));
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

/// One summary under the shared policy (see the module docs). `clock` is the compressor's
/// (the breaker's time), `deadline` the pass's. Returns the response and who wrote it, or the
/// failure that fails the pass.
pub(crate) async fn summarize(
    primary: &dyn Summarizer,
    fallback: Option<&dyn Summarizer>,
    breaker: &Mutex<Breaker>,
    policy: &CallPolicy,
    clock: &dyn Clock,
    deadline: Option<Instant>,
    req: &SummaryRequest,
) -> Result<(SummaryResponse, Route), CallFailure> {
    let started_ms = clock.now_unix_ms();
    let (allowed, last) = {
        let b = breaker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (b.allows(started_ms), b.last)
    };
    let expired = deadline.is_some_and(|d| Instant::now() >= d);
    if !allowed || expired {
        let class = if allowed {
            ErrorClass::Transient
        } else {
            last.unwrap_or(ErrorClass::Transient)
        };
        tracing::debug!(
            class = class.as_str(),
            breaker_open = !allowed,
            "summarizer not called (circuit open or the pass's deadline passed); using the fallback"
        );
        let failure = CallFailure {
            class,
            skipped: true,
        };
        return match fallback {
            Some(fb) => guarded(fb, req)
                .await
                .map(|r| {
                    (
                        r,
                        Route::Fallback {
                            skipped: true,
                            class,
                        },
                    )
                })
                .map_err(|_| failure),
            None => Err(failure),
        };
    }
    let (outcome, timed_out) = match crate::deadline::within(deadline, guarded(primary, req)).await
    {
        Some(r) => (r, false),
        None => {
            tracing::warn!("summarizer call abandoned at the pass's deadline");
            (Err(ErrorClass::Transient), true)
        }
    };
    // What comes back is judged the same way for every adapter and every pass kind.
    let outcome = outcome.and_then(|r| {
        if r.extractive {
            return Ok(r);
        }
        match compaction_llm::guard::check_summary(&r.text, req) {
            Ok(()) => Ok(r),
            Err(e) => {
                tracing::warn!(
                    class = e.class().as_str(),
                    "summary refused by the output guard"
                );
                Err(e.class())
            }
        }
    });
    let ended_ms = clock.now_unix_ms();
    let class = match outcome {
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
    if !class.allows_fallback() {
        return Err(failure);
    }
    breaker
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .failure(class, started_ms, ended_ms, timed_out, policy);
    match fallback {
        Some(fb) => {
            tracing::warn!(
                class = class.as_str(),
                "summarizer failed; using the extractive fallback"
            );
            // A failing fallback leaves the summarizer's own failure to report.
            guarded(fb, req)
                .await
                .map(|r| {
                    (
                        r,
                        Route::Fallback {
                            skipped: false,
                            class,
                        },
                    )
                })
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
            slow_ms: 30_000,
            deadline: None,
        }
    }

    #[test]
    fn opens_after_consecutive_transient_failures_and_probes_later() {
        let mut b = Breaker::default();
        let p = policy();
        b.failure(ErrorClass::Transient, 0, 0, false, &p);
        b.failure(ErrorClass::Network, 10, 10, false, &p);
        assert!(b.allows(20));
        b.failure(ErrorClass::RateLimited, 20, 20, false, &p);
        assert!(!b.allows(21));
        assert!(!b.allows(60_019));
        assert!(b.allows(60_020), "one probe after the interval");
        // A failed probe re-opens it for another interval.
        b.failure(ErrorClass::Transient, 60_020, 60_020, false, &p);
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
            b.failure(ErrorClass::EmptyOutput, 0, 0, false, &p);
            b.failure(ErrorClass::DirectiveOutput, 0, 0, false, &p);
        }
        assert!(b.allows(0));
        let off = CallPolicy {
            failures: 0,
            ..policy()
        };
        for _ in 0..10 {
            b.failure(ErrorClass::Transient, 0, 0, false, &off);
        }
        assert!(b.allows(0));
    }

    #[test]
    fn a_slow_failure_opens_at_once_until_the_interval_after_its_end() {
        let mut b = Breaker::default();
        let p = policy();
        // A fast failure counts; a call that failed after the request timeout (30 s) opens the
        // breaker at once, for the interval counted from the call's end.
        b.failure(ErrorClass::Network, 0, 100, false, &p);
        assert!(b.allows(100));
        b.failure(ErrorClass::Transient, 1_000, 61_000, false, &p);
        assert!(!b.allows(61_000));
        assert!(!b.allows(120_999), "still open just before end + interval");
        assert!(b.allows(121_000), "half-open: one probe");
        // The probe fails slowly: open again from the probe's end.
        b.failure(ErrorClass::Transient, 121_000, 151_000, false, &p);
        assert!(!b.allows(210_999));
        assert!(b.allows(211_000));
        // A call cut at the pass's deadline is slow whatever the clock says.
        let mut b = Breaker::default();
        b.failure(ErrorClass::Transient, 5, 5, true, &p);
        assert!(!b.allows(6));
        assert!(b.allows(60_005));
        // Off stays off.
        let off = CallPolicy {
            failures: 0,
            ..policy()
        };
        let mut b = Breaker::default();
        b.failure(ErrorClass::Transient, 0, 90_000, true, &off);
        assert!(b.allows(90_000));
    }
}
