//! Summarizer policy as layers: a [`Layer`] wraps a [`Summarizer`] in another one, and a
//! [`Stack`] composes layers once, outermost first (as tower's `Layer` and `ServiceBuilder`,
//! without the dependency).
//!
//! The layers this crate ships, in the order a caller usually stacks them (outermost first):
//!
//! - [`FallbackLayer`](crate::FallbackLayer): the fallback rule, written once: a failure whose
//!   class [allows a fallback](crate::ErrorClass::allows_fallback) is answered by the fallback
//!   summarizer, and the response says why ([`SummaryResponse::fallback`](crate::SummaryResponse::fallback));
//! - a circuit breaker (the facade's, over its injectable clock) would sit here;
//! - [`DeadlineLayer`](crate::DeadlineLayer): the request's [`deadline`](SummaryRequest::deadline)
//!   in real time, with no runtime of its own;
//! - [`OutputGuardLayer`](crate::OutputGuardLayer): what a model wrote is judged by
//!   [`guard::check_summary`](crate::guard::check_summary) against its request;
//! - [`PanicGuardLayer`](crate::PanicGuardLayer): a panicking summarizer is a failure, not a
//!   crash.
//!
//! A layer of one's own is a type implementing [`Layer`]:
//!
//! ```
//! use compaction_llm::layer::{Layer, Stack};
//! use compaction_llm::{
//!     ExtractiveSummarizer, FallbackLayer, PanicGuardLayer, Summarizer, SummaryFuture,
//!     SummaryKind, SummaryRequest,
//! };
//!
//! /// Counts the calls that reach the summarizer it wraps.
//! struct Counted<S> {
//!     inner: S,
//!     calls: std::sync::atomic::AtomicU32,
//! }
//!
//! impl<S: Summarizer> Summarizer for Counted<S> {
//!     fn name(&self) -> &str {
//!         self.inner.name()
//!     }
//!     fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
//!         self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
//!         self.inner.summarize(req)
//!     }
//! }
//!
//! struct CountLayer;
//!
//! impl<S: Summarizer> Layer<S> for CountLayer {
//!     type Summarizer = Counted<S>;
//!     fn layer(&self, inner: S) -> Counted<S> {
//!         Counted { inner, calls: Default::default() }
//!     }
//! }
//!
//! let s = Stack::new()
//!     .layer(FallbackLayer::new(ExtractiveSummarizer::default()))
//!     .layer(CountLayer)
//!     .layer(PanicGuardLayer)
//!     .summarizer(ExtractiveSummarizer::default());
//! let mut req = SummaryRequest::new(SummaryKind::BatchFirst, "", 400, "2026-01-02");
//! req.messages = vec![compaction_core::Message::user("fix the build")];
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let out = rt.block_on(s.summarize(&req)).unwrap();
//! assert!(out.fallback.is_none(), "the primary answered");
//! assert_eq!(s.primary.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
//! ```

use crate::summarizer::{Summarizer, SummaryRequest};

/// Wraps a summarizer `S` in another summarizer.
pub trait Layer<S> {
    /// The wrapped summarizer.
    type Summarizer: Summarizer;

    /// Wraps `inner`.
    fn layer(&self, inner: S) -> Self::Summarizer;
}

/// The layer that adds nothing: a [`Stack`] starts from it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl<S: Summarizer> Layer<S> for Identity {
    type Summarizer = S;

    fn layer(&self, inner: S) -> S {
        inner
    }
}

/// Layers composed once: the first one added is the outermost (it sees a request first and
/// its response last). [`Stack::summarizer`] applies them to a summarizer.
#[derive(Clone, Debug, Default)]
pub struct Stack<L = Identity> {
    layers: L,
}

/// Two layers, `outer` around `inner`.
#[derive(Clone, Debug)]
pub struct Pair<Outer, Inner> {
    outer: Outer,
    inner: Inner,
}

impl<S, Outer, Inner> Layer<S> for Pair<Outer, Inner>
where
    Inner: Layer<S>,
    Outer: Layer<Inner::Summarizer>,
{
    type Summarizer = Outer::Summarizer;

    fn layer(&self, s: S) -> Self::Summarizer {
        self.outer.layer(self.inner.layer(s))
    }
}

impl Stack<Identity> {
    /// An empty stack.
    pub fn new() -> Stack<Identity> {
        Stack { layers: Identity }
    }
}

impl<L> Stack<L> {
    /// Adds `layer` inside the layers added so far.
    pub fn layer<T>(self, layer: T) -> Stack<Pair<L, T>> {
        Stack {
            layers: Pair {
                outer: self.layers,
                inner: layer,
            },
        }
    }

    /// Adds `layer` when it is `Some` (a layer the configuration may leave out).
    pub fn option_layer<T>(self, layer: Option<T>) -> Stack<Pair<L, Optional<T>>> {
        self.layer(Optional(layer))
    }

    /// Wraps `s` in every layer.
    pub fn summarizer<S>(&self, s: S) -> L::Summarizer
    where
        L: Layer<S>,
    {
        self.layers.layer(s)
    }
}

/// A layer that may be absent ([`Stack::option_layer`]).
#[derive(Clone, Debug)]
pub struct Optional<T>(Option<T>);

/// A summarizer wrapped in an [`Optional`] layer: either the layer's or the summarizer itself.
#[derive(Debug)]
pub enum Either<A, B> {
    /// The layer was present.
    Layered(A),
    /// It was not.
    Plain(B),
}

impl<S, T> Layer<S> for Optional<T>
where
    S: Summarizer,
    T: Layer<S>,
{
    type Summarizer = Either<T::Summarizer, S>;

    fn layer(&self, inner: S) -> Self::Summarizer {
        match &self.0 {
            Some(l) => Either::Layered(l.layer(inner)),
            None => Either::Plain(inner),
        }
    }
}

impl<A: Summarizer, B: Summarizer> Summarizer for Either<A, B> {
    fn name(&self) -> &str {
        match self {
            Either::Layered(a) => a.name(),
            Either::Plain(b) => b.name(),
        }
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> crate::SummaryFuture<'a> {
        match self {
            Either::Layered(a) => a.summarize(req),
            Either::Plain(b) => b.summarize(req),
        }
    }
}
