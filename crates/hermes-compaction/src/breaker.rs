//! The one summarizer-call policy every pass shares (batch, split-turn, micro, defrag): the
//! panic guard, the pass's deadline, the output guard, the circuit breaker and the fallback
//! rule, layers ([`compaction_llm::layer`]) composed once in that order around the summarizer
//! when the compressor is built ([`compose`]), so a summarizer that is down is paid for a
//! bounded time, not on every pass. All but the breaker are `compaction-llm`'s; the breaker
//! is here because its time is the compressor's [`Clock`].
//!
//! - A summarizer that panics (while building its future or polling it) is caught: the call
//!   failed with class `transient`, and the rules below apply to it like to any other.
//! - **Deadline.** A pass waits on the summarizer for at most `auxiliary.compression.deadline_secs`
//!   of real (monotonic) time, over all its calls, their retries, regenerations and model
//!   fallback included ([`compaction_llm::DeadlineLayer`]); a call still running then is abandoned and
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

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compaction_llm::layer::{Layer, Stack};
use compaction_llm::{
    DeadlineLayer, Error, ErrorClass, FallbackLayer, OutputGuardLayer, PanicGuardLayer, Summarizer,
    SummaryFuture, SummaryRequest, SummaryResponse,
};

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

/// The circuit breaker as a [`Layer`]: the state is shared by every summarizer it wraps, and
/// its time is the compressor's clock (injectable, so tests move it by hand).
pub(crate) struct BreakerLayer {
    state: Arc<Mutex<Breaker>>,
    policy: CallPolicy,
    clock: Arc<dyn Clock>,
}

/// A summarizer behind the circuit breaker ([`BreakerLayer`]).
pub(crate) struct Breakered<S> {
    inner: S,
    state: Arc<Mutex<Breaker>>,
    policy: CallPolicy,
    clock: Arc<dyn Clock>,
}

impl<S: Summarizer> Layer<S> for BreakerLayer {
    type Summarizer = Breakered<S>;

    fn layer(&self, inner: S) -> Breakered<S> {
        Breakered {
            inner,
            state: self.state.clone(),
            policy: self.policy,
            clock: self.clock.clone(),
        }
    }
}

impl<S: Summarizer> Breakered<S> {
    fn state(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<S: Summarizer> Summarizer for Breakered<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            let started_ms = self.clock.now_unix_ms();
            let (allowed, last) = {
                let b = self.state();
                (b.allows(started_ms), b.last)
            };
            if !allowed {
                let class = last.unwrap_or(ErrorClass::Transient);
                tracing::debug!(
                    class = class.as_str(),
                    "summarizer not called: its circuit breaker is open"
                );
                return Err(Error::CircuitOpen { class });
            }
            let outcome = self.inner.summarize(req).await;
            match &outcome {
                // Not called (the deadline had passed): nothing to count.
                Err(e) if e.not_called() => {}
                Ok(_) => {
                    // The call's end is read as for a failure (a scripted clock sees the same
                    // reads either way).
                    self.clock.now_unix_ms();
                    self.state().success();
                }
                Err(e) => {
                    let ended_ms = self.clock.now_unix_ms();
                    let class = e.class();
                    // Auth and quota are not the breaker's business: they answer at once.
                    if class.allows_fallback() {
                        let timed_out = matches!(e, Error::DeadlinePassed { called: true });
                        self.state()
                            .failure(class, started_ms, ended_ms, timed_out, &self.policy);
                    }
                }
            }
            outcome
        })
    }
}

/// The one stack of summarizer policy every pass calls through, composed once when the
/// compressor is built: fallback (when `fallback` is set: the extractive summarizer behind its
/// own panic guard), circuit breaker, deadline, output guard and panic guard, outermost first.
pub(crate) fn compose(
    primary: Arc<dyn Summarizer>,
    fallback: bool,
    policy: CallPolicy,
    clock: Arc<dyn Clock>,
) -> Arc<dyn Summarizer> {
    let extractive = fallback.then(|| {
        FallbackLayer::new(PanicGuardLayer.layer(compaction_llm::ExtractiveSummarizer::default()))
    });
    let stack = Stack::new()
        .option_layer(extractive)
        .layer(BreakerLayer {
            state: Arc::default(),
            policy,
            clock,
        })
        .layer(DeadlineLayer)
        .layer(OutputGuardLayer)
        .layer(PanicGuardLayer);
    Arc::new(stack.summarizer(primary))
}

/// One summary through `calls` (a stack [`compose`] made) under the request's deadline (the
/// pass's, set where the pass builds its requests). Returns the response and who wrote it, or
/// the failure that fails the pass.
pub(crate) async fn summarize(
    calls: &dyn Summarizer,
    req: &SummaryRequest,
) -> Result<(SummaryResponse, Route), CallFailure> {
    match calls.summarize(req).await {
        Ok(r) => {
            let route = match r.fallback {
                None => Route::Primary,
                Some(c) => Route::Fallback {
                    skipped: c.skipped,
                    class: c.class,
                },
            };
            Ok((r, route))
        }
        Err(e) => Err(CallFailure {
            class: e.class(),
            skipped: e.not_called(),
        }),
    }
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
