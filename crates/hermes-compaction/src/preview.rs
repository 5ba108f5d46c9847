//! Previews: what the pass that would run now would do, planned by core and read without
//! calling a summarizer or writing anything (see [`compaction_core::preview`]).

use compaction_core::Transcript;
use compaction_core::batch::{self, BatchRequest};
use compaction_core::micro;
pub use compaction_core::preview::{Fate, MessagePreview, PlannedSummary, Preview, PreviewKind};

use crate::compressor::{Compressor, OneShot};
use crate::config::ReclaimGate;

impl Compressor {
    /// What [`one_shot`](Self::one_shot)`(t, mode)` would do first on `t` now (with the
    /// compressor's settings and state), as a [`Preview`]: every message's fate, the
    /// summaries it would write, tokens before and after (each summary estimated from
    /// `summary_max_tokens`). A batch preview is the forced batch pass (its focus changes no
    /// fate and is ignored); a prune preview the prune-only pass; a micro preview the micro
    /// pass the next [`finalize_turn`](Self::finalize_turn) would make (the reclaim gate as
    /// configured). Calls no summarizer, writes nothing, changes no state.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::preview::Fate;
    /// use hermes_compaction::{Compressor, Config, OneShot};
    ///
    /// let mut config = Config::default();
    /// config.model.context_length = 16_000;
    /// let mut c = Compressor::builder(config)
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s1")
    ///     .build()
    ///     .unwrap();
    /// let mut msgs = vec![Message::system("You are a coding agent.")];
    /// for i in 0..60 {
    ///     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(80))));
    ///     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(80))));
    /// }
    /// let t = c.transcript(msgs);
    /// let p = c.preview(&t, OneShot::batch());
    /// assert!(p.messages.iter().any(|m| matches!(m.fate, Fate::Summarized { .. })));
    /// assert!(p.tokens_after < p.tokens_before);
    /// // Nothing to prune in a conversation without tool outputs.
    /// assert_eq!(c.preview(&t, OneShot::Prune).tokens_after, p.tokens_before);
    /// ```
    pub fn preview(&self, t: &Transcript, mode: OneShot) -> Preview {
        match mode {
            OneShot::Batch { .. } => self.preview_batch(t, false),
            OneShot::Prune => self.preview_batch(t, true),
            OneShot::Micro { .. } => self.preview_micro(t),
        }
    }

    fn preview_micro(&self, t: &Transcript) -> Preview {
        let mut cfg = self.micro_settings().clone();
        if self.config().compression.micro_compact_min_reclaim_tokens == ReclaimGate::Auto {
            cfg.min_reclaim_tokens = self.cache_gate(t);
        }
        // A planner of its own, from the compressor's state: a preview changes nothing.
        let mut planner = micro::MicroPlanner::default();
        planner.state = self.micro_state().clone();
        let plan = planner.plan(&micro::MicroRequest {
            transcript: t,
            hook: micro::MicroHook::Turn,
            threshold_tokens: self.threshold_tokens(),
            compacted: self.state().compacted,
            config: &cfg,
            counter: self.counter(),
        });
        compaction_core::preview::of_micro(t, &plan, self.counter())
    }

    fn preview_batch(&self, t: &Transcript, prune_only: bool) -> Preview {
        let req = BatchRequest {
            force: true,
            prune_only,
            focus: None,
            compacted: self.state().compacted,
        };
        let cfg = self.batch_settings();
        let plan = batch::plan_batch(t, self.threshold_tokens(), cfg, &req, self.counter());
        compaction_core::preview::of_batch(t, &plan, cfg, self.counter())
    }
}
