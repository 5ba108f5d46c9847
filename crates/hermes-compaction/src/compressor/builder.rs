//! [`Compressor::builder`]: the one way to get a compressor. Settings are resolved once: the
//! one-shot mode (if any) is applied to the configuration, the result is validated
//! ([`Config::validate`], the one statement of every range), and only then are the fixed
//! settings derived from it.

use std::sync::Arc;

use compaction_core::{Estimator, TokenCounter};
use compaction_llm::Summarizer;

use super::{Compressor, NEAR_WINDOW_RATIO, Settings, ThrashState, batch_config, micro_config};
#[cfg(feature = "store")]
use crate::Persistence;
use crate::clock::{Clock, SystemClock};
use crate::config::{Config, ConfigError};

/// What a [`Compressor`] is built from; see [`Compressor::builder`].
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::core::Estimator;
/// use hermes_compaction::llm::ExtractiveSummarizer;
/// use hermes_compaction::{Compressor, Config, OneShot};
///
/// let mut config = Config::default();
/// config.model.context_length = 16_000;
/// let c = Compressor::builder(config.clone())
///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
///     .counter(Arc::new(Estimator::default()))
///     .session("session-1")
///     .build()
///     .unwrap();
/// assert_eq!(c.status().session_id, "session-1");
/// // A micro one-shot run turns micro compaction on, before validation, whatever the file says.
/// let c = Compressor::builder(config.clone())
///     .one_shot(OneShot::Micro { max_passes: None })
///     .build()
///     .unwrap();
/// assert!(c.status().config.compression.micro_compact);
/// // A bad value is refused once, here, naming its key.
/// config.model.context_length = 10;
/// let e = Compressor::builder(config).build().unwrap_err();
/// assert!(e.to_string().contains("model.context_length"), "{e}");
/// ```
#[must_use = "a builder does nothing until `build`"]
pub struct CompressorBuilder {
    config: Config,
    summarizer: Option<Arc<dyn Summarizer>>,
    counter: Option<Arc<dyn TokenCounter>>,
    session_id: String,
    #[cfg(feature = "store")]
    persistence: Option<Persistence>,
    clock: Option<Arc<dyn Clock>>,
    state: ThrashState,
    one_shot: Option<OneShot>,
}

impl std::fmt::Debug for CompressorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressorBuilder")
            .field("session_id", &self.session_id)
            .field("one_shot", &self.one_shot)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// Starts building a compressor from `config`. Unless given, the summarizer is the
    /// extractive one, the counter the estimator, the session id `session`, the clock the
    /// system's, and there is no store. The extractive fallback is used when
    /// `compression.fallback_to_extractive` is set.
    pub fn builder(config: Config) -> CompressorBuilder {
        CompressorBuilder {
            config,
            summarizer: None,
            counter: None,
            session_id: "session".into(),
            #[cfg(feature = "store")]
            persistence: None,
            clock: None,
            state: ThrashState::default(),
            one_shot: None,
        }
    }
}

impl CompressorBuilder {
    /// The summarizer (e.g. [`summarizer_from_config`](crate::summarizer_from_config)).
    pub fn summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> CompressorBuilder {
        self.summarizer = Some(summarizer);
        self
    }

    /// The token counter.
    pub fn counter(mut self, counter: Arc<dyn TokenCounter>) -> CompressorBuilder {
        self.counter = Some(counter);
        self
    }

    /// The session id used in telemetry.
    pub fn session(mut self, session_id: impl Into<String>) -> CompressorBuilder {
        self.session_id = session_id.into();
        self
    }

    /// Persist every pass with `archive_and_compact`, and keep the originals of insertion
    /// trims, in this store session.
    #[cfg(feature = "store")]
    pub fn store(mut self, persistence: Persistence) -> CompressorBuilder {
        self.persistence = Some(persistence);
        self
    }

    /// The clock every time the compressor reads comes from (cooldowns, pauses, the cache
    /// time-to-live rule, the date in summary prompts). Any `Fn() -> u64 + Send + Sync`
    /// returning unix milliseconds is a [`Clock`], so a plain `fn` works.
    pub fn clock(self, clock: impl Clock + 'static) -> CompressorBuilder {
        self.shared_clock(Arc::new(clock))
    }

    /// [`clock`](Self::clock) with a clock shared by several compressors.
    pub fn shared_clock(mut self, clock: Arc<dyn Clock>) -> CompressorBuilder {
        self.clock = Some(clock);
        self
    }

    /// Durable state to start from (e.g. loaded from the store after a restart).
    pub fn state(mut self, state: ThrashState) -> CompressorBuilder {
        self.state = state;
        self
    }

    /// The one-shot run the compressor is for (what [`Compressor::one_shot`] is then given):
    /// a micro run turns `compression.micro_compact` on and runs every turn, whatever the
    /// configuration says. Applied before validation, so no caller can forget it.
    pub fn one_shot(mut self, mode: OneShot) -> CompressorBuilder {
        self.one_shot = Some(mode);
        self
    }

    /// Validates the configuration (with the one-shot mode applied) and builds the
    /// compressor; the error names the key and its allowed range.
    pub fn build(self) -> Result<Compressor, ConfigError> {
        let mut config = self.config;
        if let Some(mode) = &self.one_shot {
            mode.configure(&mut config);
        }
        config.validate()?;
        let settings = Settings {
            batch: batch_config(&config),
            proactive_batch: super::proactive_batch_config(&config),
            micro: micro_config(&config),
            micro_every_n_turns: config.micro_every_n_turns(),
            threshold: config.window().threshold_tokens(),
            window_tokens: (config.window().effective_window() as f64 * NEAR_WINDOW_RATIO) as u64,
            call: crate::breaker::CallPolicy::from_config(&config.auxiliary.compression),
            warm_cache: config.warm_cache_on(),
            config: Arc::new(config),
        };
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let summarizer: Arc<dyn Summarizer> = self
            .summarizer
            .unwrap_or_else(|| Arc::new(compaction_llm::ExtractiveSummarizer::default()));
        let calls = crate::breaker::compose(
            summarizer.clone(),
            settings.config.compression.fallback_to_extractive,
            settings.call,
            clock.clone(),
        );
        let mut c = Compressor {
            settings,
            counter: self
                .counter
                .unwrap_or_else(|| Arc::new(Estimator::default())),
            summarizer,
            calls,
            #[cfg(feature = "store")]
            persistence: self.persistence,
            session_id: self.session_id,
            clock,
            rt: super::Runtime::default(),
        };
        c.rt.state = self.state;
        Ok(c)
    }
}

/// Which one-shot run to make ([`Compressor::one_shot`]), or to preview
/// ([`Compressor::preview`]).
///
/// ```
/// use hermes_compaction::OneShot;
///
/// assert_eq!(OneShot::batch().to_string(), "batch");
/// let focused = OneShot::Batch { focus: Some("the parser".into()) };
/// assert_eq!(focused.as_str(), "batch");
/// assert_eq!(OneShot::Micro { max_passes: Some(2) }.to_string(), "micro");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OneShot {
    /// One forced batch pass: prune first, summarize the middle unless pruning alone reaches
    /// the low-water mark.
    Batch {
        /// A topic the summary keeps in full detail (redacted and bounded before it reaches
        /// the summarizer); a preview ignores it.
        focus: Option<String>,
    },
    /// One forced prune-only pass: no summarizer.
    Prune,
    /// Micro passes until nothing is absorbable, at most `max_passes` that change the
    /// transcript (no limit: until done).
    Micro {
        /// The most passes that may change the transcript.
        max_passes: Option<u32>,
    },
}

/// `batch`, `prune` or `micro`.
impl std::fmt::Display for OneShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl OneShot {
    /// A batch pass without a focus.
    pub fn batch() -> OneShot {
        OneShot::Batch { focus: None }
    }

    /// `batch`, `prune` or `micro`.
    pub fn as_str(&self) -> &'static str {
        match self {
            OneShot::Batch { .. } => "batch",
            OneShot::Prune => "prune",
            OneShot::Micro { .. } => "micro",
        }
    }

    /// The same run without its focus (what a report keeps: counts only, never text).
    pub(crate) fn without_focus(&self) -> OneShot {
        match self {
            OneShot::Batch { .. } => OneShot::batch(),
            other => other.clone(),
        }
    }

    /// `config` as this run needs it: micro runs turn `compression.micro_compact` on and run
    /// every turn at every hook (`compression.timing = "eager"`: the command line's micro mode
    /// is micro whatever the file says). Applied by
    /// [`CompressorBuilder::one_shot`](crate::compressor::CompressorBuilder::one_shot) before
    /// validation.
    pub(crate) fn configure(&self, config: &mut Config) {
        if let OneShot::Micro { .. } = self {
            config.compression.micro_compact = true;
            config.compression.micro_compact_every_n_turns = 1;
            config.compression.timing = crate::config::Timing::Eager;
        }
    }
}
