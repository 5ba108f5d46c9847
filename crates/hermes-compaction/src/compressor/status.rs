//! [`Compressor::status`]: everything a caller reads of a compressor, in one borrowed view
//! (what it was built with and where the session stands).

use compaction_core::micro::MicroState;
use compaction_core::{TokenCounter, Transcript};
use compaction_llm::Summarizer;

use super::{Compressor, ThrashState};
use crate::config::Config;
use crate::report::{PreparedTotals, PreparedUse};

/// What a [`Compressor`] was built with and where its session stands, read in one call
/// ([`Compressor::status`]). It borrows the compressor: read what you need, then call the
/// next hook.
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::core::{Estimator, Message};
/// use hermes_compaction::llm::ExtractiveSummarizer;
/// use hermes_compaction::{Compressor, Config};
///
/// let mut config = Config::default();
/// config.model.context_length = 16_000;
/// let mut c = Compressor::builder(config)
///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
///     .counter(Arc::new(Estimator::default()))
///     .session("s1")
///     .build()
///     .unwrap();
/// let mut t = c.transcript(vec![Message::system("be brief")]);
/// t.push(Message::user("hi"), c.status().counter);
/// let s = c.status();
/// assert_eq!(s.session_id, "s1");
/// assert!(s.threshold_tokens < 16_000);
/// assert_eq!(s.config.model.context_length, 16_000);
/// assert!(!s.state.compacted && s.micro.cursor.is_none());
/// assert!(!s.compaction_requested && !s.has_prepared);
/// assert_eq!(s.store_generation, None);
/// assert!(s.in_sync(&t), "always in sync without a store");
/// ```
#[non_exhaustive]
pub struct Status<'a> {
    /// The configuration (read at construction; it does not change).
    pub config: &'a Config,
    /// The token counter (what [`Transcript::push`] takes).
    pub counter: &'a dyn TokenCounter,
    /// The summarizer.
    pub summarizer: &'a dyn Summarizer,
    /// The session id used in telemetry.
    pub session_id: &'a str,
    /// The compaction threshold in tokens.
    pub threshold_tokens: u64,
    /// Whether batch summary requests reuse the agent's last request as their prefix
    /// (`auxiliary.compression.warm_cache`).
    pub warm_cache: bool,
    /// The anti-thrash and cooldown state (persisted with [`Compressor::flush`], read back
    /// with [`Compressor::reload`]).
    pub state: &'a ThrashState,
    /// The micro state: cursor, rolling summary, failure counts.
    pub micro: &'a MicroState,
    /// Running totals of the summaries prepared ahead in this session: started, used,
    /// discarded, and the summarizer tokens of the discarded ones.
    pub prepared_totals: PreparedTotals,
    /// What became of the last summary prepared ahead that was settled (used, or discarded
    /// and why), at a pass or before one; `None` before the first. A trigger put off to the
    /// next request returns no report: this says why its candidate was discarded.
    pub last_prepared: Option<PreparedUse>,
    /// Whether a summary prepared ahead waits for the next pass (running or ready).
    pub has_prepared: bool,
    /// Whether the model asked for a compaction
    /// ([`request_compaction`](Compressor::request_compaction)) that the next
    /// [`before_request`](Compressor::before_request) will make.
    pub compaction_requested: bool,
    /// The session generation the transcript reflects in the store: the one the compressor
    /// was given, advanced by each pass it committed; `None` without a store. It needs no
    /// connection, so a store that went away after the last commit cannot hide what was
    /// committed.
    pub store_generation: Option<u64>,
    compressor: &'a Compressor,
}

impl Status<'_> {
    /// Whether the store holds `t` as it is, as far as the compressor knows without asking
    /// it: every message of `t` written (stamped with a row id), no pin change waiting for
    /// the next flush, and no overflow pass applied without its commit (after one, `false`
    /// until a store write resynchronised them). Always `true` without a store. A change made
    /// by another writer since is not seen here: [`Compressor::flush`] reports it.
    pub fn in_sync(&self, t: &Transcript) -> bool {
        self.compressor.store_in_sync(t)
    }
}

impl std::fmt::Debug for Status<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Status")
            .field("session_id", &self.session_id)
            .field("threshold_tokens", &self.threshold_tokens)
            .field("summarizer", &self.summarizer.name())
            .field("warm_cache", &self.warm_cache)
            .field("state", self.state)
            .field("micro", self.micro)
            .field("prepared_totals", &self.prepared_totals)
            .field("last_prepared", &self.last_prepared)
            .field("has_prepared", &self.has_prepared)
            .field("compaction_requested", &self.compaction_requested)
            .field("store_generation", &self.store_generation)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// What the compressor was built with and where its session stands, in one borrowed view
    /// ([`Status`]).
    pub fn status(&self) -> Status<'_> {
        #[cfg(feature = "store")]
        let store_generation = self.store_generation();
        #[cfg(not(feature = "store"))]
        let store_generation = None;
        Status {
            config: self.config(),
            counter: self.counter(),
            summarizer: self.summarizer(),
            session_id: self.session_id(),
            threshold_tokens: self.threshold_tokens(),
            warm_cache: self.settings.warm_cache,
            state: self.state(),
            micro: self.rt.micro_state(),
            prepared_totals: self.prepared_totals(),
            last_prepared: self.last_prepared(),
            has_prepared: self.has_prepared(),
            compaction_requested: self.rt.compaction_requested(),
            store_generation,
            compressor: self,
        }
    }
}
