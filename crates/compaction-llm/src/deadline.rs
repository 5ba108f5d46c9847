//! The [`DeadlineLayer`]: a request's deadline in real (monotonic) time, with no runtime of
//! its own: a caller may run under whatever executor it has (a current-thread runtime without
//! timers included), so the wait is kept by one short-lived timer thread per bounded call,
//! started only when the call does not finish at its first poll and ended as soon as the call
//! does.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Instant;

use crate::error::Error;
use crate::layer::Layer;
use crate::summarizer::{Summarizer, SummaryFuture, SummaryRequest};

/// Bounds each call by its request's [`deadline`](SummaryRequest::deadline): a request whose
/// deadline has passed is not sent ([`Error::DeadlinePassed`] with `called: false`), and a
/// call still running at it is abandoned (`called: true`). Both are of class `transient`. A
/// request without a deadline is passed through.
///
/// ```
/// use std::time::{Duration, Instant};
/// use compaction_llm::layer::Layer;
/// use compaction_llm::{DeadlineLayer, Error, Summarizer, SummaryFuture, SummaryKind, SummaryRequest};
///
/// struct Hangs;
/// impl Summarizer for Hangs {
///     fn name(&self) -> &str { "hangs" }
///     fn summarize<'a>(&'a self, _: &'a SummaryRequest) -> SummaryFuture<'a> {
///         Box::pin(std::future::pending())
///     }
/// }
///
/// let s = DeadlineLayer.layer(Hangs);
/// let req = SummaryRequest::new(SummaryKind::BatchFirst, "x", 100, "2026-01-02")
///     .with_deadline(Some(Instant::now() + Duration::from_millis(20)));
/// // A runtime without timers: the deadline keeps its own time.
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(s.summarize(&req)), Err(Error::DeadlinePassed { called: true }));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadlineLayer;

/// A summarizer bounded by its requests' deadlines ([`DeadlineLayer`]).
#[derive(Clone, Debug)]
pub struct Deadline<S>(pub S);

impl<S: Summarizer> Layer<S> for DeadlineLayer {
    type Summarizer = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline(inner)
    }
}

impl<S: Summarizer> Summarizer for Deadline<S> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            if req.deadline.is_some_and(|d| Instant::now() >= d) {
                tracing::debug!("summarizer not called: the deadline had passed");
                return Err(Error::DeadlinePassed { called: false });
            }
            match within(req.deadline, self.0.summarize(req)).await {
                Some(r) => r,
                None => {
                    tracing::warn!("summarizer call abandoned at its deadline");
                    Err(Error::DeadlinePassed { called: true })
                }
            }
        })
    }
}

/// `fut`'s output, or `None` when `deadline` passes first (`fut` is then dropped). Without a
/// deadline it is `fut` itself.
async fn within<F: Future>(deadline: Option<Instant>, fut: F) -> Option<F::Output> {
    let Some(at) = deadline else {
        return Some(fut.await);
    };
    let mut fut = pin!(fut);
    let mut timer: Option<Timer> = None;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        if Instant::now() >= at {
            return Poll::Ready(None);
        }
        match &timer {
            Some(t) => t.set_waker(cx.waker()),
            None => match Timer::start(at, cx.waker().clone()) {
                Some(t) => timer = Some(t),
                // No thread to keep time: wait for the call alone (its own timeouts bound it).
                None => tracing::warn!("no timer thread for the summarizer deadline"),
            },
        }
        Poll::Pending
    })
    .await
}

struct Shared {
    done: AtomicBool,
    waker: Mutex<Waker>,
}

/// Wakes the task at the deadline; dropping it ends the thread at once.
struct Timer {
    shared: Arc<Shared>,
    thread: std::thread::Thread,
}

impl Timer {
    fn start(at: Instant, waker: Waker) -> Option<Timer> {
        let shared = Arc::new(Shared {
            done: AtomicBool::new(false),
            waker: Mutex::new(waker),
        });
        let theirs = shared.clone();
        let handle = std::thread::Builder::new()
            .name("hermes-deadline".into())
            .spawn(move || {
                loop {
                    if theirs.done.load(Ordering::Acquire) {
                        return;
                    }
                    let now = Instant::now();
                    if now >= at {
                        let w = theirs
                            .waker
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .clone();
                        w.wake();
                        return;
                    }
                    std::thread::park_timeout(at - now);
                }
            })
            .ok()?;
        Some(Timer {
            shared,
            thread: handle.thread().clone(),
        })
    }

    fn set_waker(&self, waker: &Waker) {
        let mut w = self
            .shared
            .waker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !w.will_wake(waker) {
            *w = waker.clone();
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn block_on<F: Future>(f: F) -> F::Output {
        // A runtime without timers: the deadline must not need one.
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_call_that_never_ends_is_cut_at_the_deadline() {
        let at = Instant::now() + Duration::from_millis(50);
        let out = block_on(within(Some(at), std::future::pending::<u8>()));
        assert_eq!(out, None);
        assert!(Instant::now() >= at);
    }

    #[test]
    fn a_ready_call_passes_and_no_deadline_waits_for_it() {
        let at = Instant::now() + Duration::from_secs(3_600);
        assert_eq!(block_on(within(Some(at), async { 7 })), Some(7));
        assert_eq!(block_on(within(None, async { 8 })), Some(8));
        // A deadline already past still lets a call that is ready at once through.
        let past = Instant::now();
        assert_eq!(block_on(within(Some(past), async { 9 })), Some(9));
    }
}
