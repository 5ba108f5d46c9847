//! [`CompactingLayer`]: the compressor's check before every model call of a tool loop,
//! through rig's handler layer ([`Intercept`]).
//!
//! [`CompactingMemory`](crate::CompactingMemory) compacts at `load`, between prompts. One
//! prompt's tool loop can still outgrow the window: each tool round adds a call and its
//! result, and rig's runtime sends the whole history again at the next round without asking
//! the memory. rig-core 0.44 has no agent loop of its own; what it offers every runtime is the
//! handler a completion is dispatched to, and [`Intercept`] layers around it
//! ([`ErasedHandler::layered`](rig_core::serve::ErasedHandler::layered)). The layer sees each
//! completion request before the model does, so it runs the same check that
//! [`CompactingMemory`](crate::CompactingMemory)'s `load` (rig's `ConversationMemory::load`)
//! runs, between tool rounds.
//!
//! A completion request is only dispatched once every call of the previous reply has its
//! result, so the check never falls between a call and its result; a request that still
//! holds a call without its result (a malformed one) is passed on unchanged.
//!
//! The runtime keeps its own, uncompacted history and sends it again at the next round. The
//! layer remembers what it sent instead of each history it compacted, and puts it back in
//! place of that history's prefix in later requests, so one pass serves the rest of the
//! loop (and the prompt cache sees the same prefix) until the compacted history itself
//! reaches the threshold again. The store is not touched: the runtime appends the whole turn
//! to the memory afterwards, and the memory's next `load` compacts it durably.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use hermes_compaction::core::{Estimator, Message, TokenCounter};
use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer};
use hermes_compaction::{BatchReport, Compressor, Config, Outcome};
use rig_core::completion::Message as RigMessage;
use rig_core::effect::{EffectId, EffectKind, Outcome as EffectOutcome};
use rig_core::error::ErrorReport;
use rig_core::serve::{Decision, Intercept, Verdict};

use crate::{Result, convert};

/// How many compacted histories a layer remembers (one per conversation in flight; the
/// oldest is forgotten first).
const REMEMBERED: usize = 32;

/// A rig [`Intercept`] that compacts each completion request's history when it reaches the
/// threshold of `config`'s window, so a long tool loop cannot overflow it (see the
/// [module docs](self)). Put it around the model's handler with
/// [`ErasedHandler::layered`](rig_core::serve::ErasedHandler::layered). Clones share what
/// they remember and count, so keep one to read [`passes`](Self::passes) after giving a
/// clone to the handler.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use hermes_compaction::Config;
/// use hermes_compaction_rig::CompactingLayer;
/// use rig_core::completion::{CompletionRequest, Message};
/// use rig_core::effect::{EffectId, EffectKind};
/// use rig_core::serve::{Decision, Intercept};
///
/// let mut config = Config::default();
/// config.model.context_length = 16_000;
/// let layer = CompactingLayer::new(config);
/// // rig calls `before` for every dispatch; a short request goes on as it is.
/// let mut request = CompletionRequest::new(Message::user("hi"));
/// request.chat_history.insert(0, Message::assistant("hello"));
/// let kind = EffectKind::Completion { request, stream: false };
/// assert!(matches!(layer.before(EffectId::from_raw(1), &kind).await, Decision::Proceed));
/// assert_eq!(layer.passes(), 0);
/// # }
/// ```
#[derive(Clone)]
pub struct CompactingLayer {
    config: Config,
    summarizer: Arc<dyn Summarizer>,
    counter: Arc<dyn TokenCounter>,
    state: Arc<Mutex<LayerState>>,
}

#[derive(Default)]
struct LayerState {
    /// The histories compacted so far, newest last.
    remembered: Vec<Substitution>,
    /// How many passes changed a request.
    passes: usize,
    /// The last pass's report.
    last: Option<BatchReport>,
}

/// A conversation the layer has checked past the threshold: the runtime's history at that
/// round (its length and digest), what was sent instead of it (`None`: it was sent as it
/// is), and the compressor that checked it, so its cooldowns, anti-thrash state and
/// calibration carry into the conversation's next round.
struct Substitution {
    len: usize,
    digest: u64,
    sent: Option<Vec<RigMessage>>,
    compressor: Option<Box<Compressor>>,
}

impl std::fmt::Debug for CompactingLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactingLayer")
            .field("context_length", &self.config.model.context_length)
            .field("summarizer", &self.summarizer.name())
            .finish_non_exhaustive()
    }
}

impl CompactingLayer {
    /// A layer compacting by `config` with the extractive summarizer and the default token
    /// estimator (replace them with [`with_summarizer`](Self::with_summarizer) and
    /// [`with_counter`](Self::with_counter); use the memory's, so both count alike). Once a
    /// conversation has reached the threshold, its compressor is kept from one round to the
    /// next, so a failure cooldown or the anti-thrash pause holds across the rounds of a tool
    /// loop. A summary prepared ahead (`compression.prepare_at`) is turned off: the layer
    /// starts no work that outlives the round it runs in.
    pub fn new(mut config: Config) -> CompactingLayer {
        config.compression.prepare_at = 0.0;
        CompactingLayer {
            config,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            counter: Arc::new(Estimator::default()),
            state: Arc::default(),
        }
    }

    /// Summaries from `summarizer`.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> CompactingLayer {
        self.summarizer = summarizer;
        self
    }

    /// Token counts from `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> CompactingLayer {
        self.counter = counter;
        self
    }

    /// How many passes changed a request so far.
    pub fn passes(&self) -> usize {
        self.lock().passes
    }

    /// The report of the last pass that ran (changed a request or not).
    pub fn last_report(&self) -> Option<BatchReport> {
        self.lock().last.clone()
    }

    /// The history to send for `history`: the runtime's history with a prefix this layer
    /// compacted before replaced by what it sent, then checked (and compacted when at or
    /// over the threshold). `None` when it is to be sent as it is.
    ///
    /// # Errors
    ///
    /// A conversion error naming the message (the request then goes on unchanged).
    pub async fn check(&self, history: &[RigMessage]) -> Result<Option<Vec<RigMessage>>> {
        let prefixes = prefix_digests(history);
        let (mut current, substituted, compressor) = self.substitute(history, &prefixes);
        let ours = match convert::from_rig(&current) {
            Ok(ours) => ours,
            Err(e) => {
                self.keep(
                    history,
                    &prefixes,
                    substituted.then_some(current),
                    compressor,
                );
                return Err(e);
            }
        };
        if has_open_call(&ours) {
            let sent = substituted.then_some(current);
            self.keep(history, &prefixes, sent.clone(), compressor);
            return Ok(sent);
        }
        let mut c = match compressor {
            Some(c) => c,
            None => Box::new(
                Compressor::builder(self.config.clone())
                    .summarizer(self.summarizer.clone())
                    .counter(self.counter.clone())
                    .build()?,
            ),
        };
        let mut t = c.transcript(ours);
        let (_, report) = c.before_request(&mut t).await;
        let changed = report
            .as_ref()
            .is_some_and(|r| matches!(r.outcome, Outcome::Pruned | Outcome::Summarized));
        let checked = report.is_some();
        {
            let mut state = self.lock();
            if checked {
                state.last = report;
            }
            if changed {
                state.passes += 1;
            }
        }
        if changed {
            current = convert::to_rig(t.messages())?;
        }
        let sent = (changed || substituted).then_some(current);
        // A conversation past the threshold keeps its compressor for the next round; one
        // under it (no pass considered, nothing substituted) has no state worth keeping.
        if checked || substituted {
            self.keep(history, &prefixes, sent.clone(), Some(c));
        }
        Ok(sent)
    }

    /// `history` with the longest remembered prefix replaced (and whether one was), and the
    /// compressor of that conversation, taken out while this round uses it.
    fn substitute(
        &self,
        history: &[RigMessage],
        prefixes: &[u64],
    ) -> (Vec<RigMessage>, bool, Option<Box<Compressor>>) {
        let mut state = self.lock();
        let best = state
            .remembered
            .iter_mut()
            .filter(|s| s.len <= history.len() && prefixes[s.len] == s.digest)
            .max_by_key(|s| s.len);
        match best {
            Some(s) => {
                let compressor = s.compressor.take();
                match &s.sent {
                    Some(sent) => {
                        let mut out = sent.clone();
                        out.extend_from_slice(&history[s.len..]);
                        (out, true, compressor)
                    }
                    None => (history.to_vec(), false, compressor),
                }
            }
            None => (history.to_vec(), false, None),
        }
    }

    /// Remembers this round of a conversation: it replaces the entries of the same
    /// conversation's earlier rounds (its prefixes), the oldest conversation is forgotten
    /// first.
    fn keep(
        &self,
        history: &[RigMessage],
        prefixes: &[u64],
        sent: Option<Vec<RigMessage>>,
        compressor: Option<Box<Compressor>>,
    ) {
        let mut state = self.lock();
        state
            .remembered
            .retain(|s| s.len > history.len() || prefixes[s.len] != s.digest);
        if state.remembered.len() == REMEMBERED {
            state.remembered.remove(0);
        }
        state.remembered.push(Substitution {
            len: history.len(),
            digest: prefixes[history.len()],
            sent,
            compressor,
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LayerState> {
        // The state is a cache and a counter; a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Intercept for CompactingLayer {
    fn name(&self) -> String {
        "hermes-compaction".into()
    }

    /// A completion request's history checked (see [`CompactingLayer::check`]); any other
    /// effect, and a request the check could not read, goes on unchanged.
    async fn before(&self, _id: EffectId, kind: &EffectKind) -> Decision {
        let EffectKind::Completion { request, stream } = kind else {
            return Decision::Proceed;
        };
        match self.check(&request.chat_history).await {
            Ok(Some(history)) => {
                let mut request = request.clone();
                request.chat_history = history;
                Decision::Patch(EffectKind::Completion {
                    request,
                    stream: *stream,
                })
            }
            Ok(None) => Decision::Proceed,
            Err(e) => {
                // The error names the message, never its content.
                tracing::warn!("hermes-compaction layer: the request goes on unchanged: {e}");
                Decision::Proceed
            }
        }
    }

    async fn after(
        &self,
        _id: EffectId,
        _kind: &EffectKind,
        _outcome: &std::result::Result<EffectOutcome, ErrorReport>,
    ) -> Verdict {
        Verdict::Keep
    }
}

/// Whether a tool call of `messages` has no result after it.
fn has_open_call(messages: &[Message]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for m in messages {
        if let Some(id) = m.tool_call_id() {
            open.retain(|o| *o != id);
        }
        open.extend(m.tool_calls().iter().map(|c| c.call_id()));
    }
    !open.is_empty()
}

/// The digest of every prefix of `messages` (entry `n` is that of the first `n`), from one
/// serialization of each message: a history sent again is recognised by the digest of its
/// prefix.
fn prefix_digests(messages: &[RigMessage]) -> Vec<u64> {
    let mut h = DefaultHasher::new();
    let mut out = Vec::with_capacity(messages.len() + 1);
    let close = |h: &DefaultHasher, n: usize| {
        let mut h = h.clone();
        n.hash(&mut h);
        h.finish()
    };
    out.push(close(&h, 0));
    for (i, m) in messages.iter().enumerate() {
        match serde_json::to_vec(m) {
            Ok(bytes) => bytes.hash(&mut h),
            // Never equal to another history's digest by accident of a failed encoding.
            Err(_) => (m as *const RigMessage as usize).hash(&mut h),
        }
        out.push(close(&h, i + 1));
    }
    out
}
