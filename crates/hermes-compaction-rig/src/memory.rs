//! [`CompactingMemory`]: rig's conversation memory over the library's compressor and store.

use std::sync::Arc;

use hermes_compaction::compressor::Persistence;
use hermes_compaction::core::{Estimator, Message, TokenCounter};
use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer};
use hermes_compaction::store::{
    Commit, CommitSplice, CompactionState, GenerationKind, PassLabel, Store, StoreError,
    TranscriptStore,
};
use hermes_compaction::{BatchReport, Compressor, Config, FailureKind};
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::{ConversationMemory, MemoryError};
use rig_core::wasm_compat::WasmBoxedFuture;

use crate::{Result, convert};

/// A rig [`ConversationMemory`] that keeps each conversation as a session of the library's
/// store (the conversation id is the session id) and compacts it before each prompt.
///
/// - [`append`](ConversationMemory::append) converts the turn's messages
///   ([`convert::from_rig`]) and stores them in one transaction, creating the session on first
///   use: all of them or none.
/// - [`load`](ConversationMemory::load) reads the session in one snapshot, runs the
///   compressor's before-request check (a batch pass when the session is at or over the
///   threshold of `config`'s window), commits the pass (generation-checked) before it returns,
///   and returns the kept messages as rig's ([`convert::to_rig`]). A pass refused because
///   another load committed first is not retried blindly: the rows are reloaded (that pass's
///   result) and checked again, so a conversation is compacted once. The anti-thrash state is
///   saved with each load.
/// - [`clear`](ConversationMemory::clear) archives every active row as one generation (never
///   deletes: the store's `restore` undoes it) and resets the compaction state.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use hermes_compaction::{Config, core::Estimator, llm::ExtractiveSummarizer, store::Store};
/// use hermes_compaction_rig::CompactingMemory;
///
/// let store = Store::connect("sqlite::memory:").await?.into_dyn();
/// let memory = CompactingMemory::new(store, Config::default())
///     .with_summarizer(Arc::new(ExtractiveSummarizer::default()))
///     .with_counter(Arc::new(Estimator::default()));
/// let loaded = memory.load_session("thread-1").await?;
/// assert!(loaded.messages.is_empty() && loaded.report.is_none());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CompactingMemory {
    store: Arc<dyn TranscriptStore>,
    config: Config,
    summarizer: Arc<dyn Summarizer>,
    counter: Arc<dyn TokenCounter>,
}

impl std::fmt::Debug for CompactingMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactingMemory")
            .field("backend", &self.store.backend())
            .field("context_length", &self.config.model.context_length)
            .field("summarizer", &self.summarizer.name())
            .finish_non_exhaustive()
    }
}

/// What one [`CompactingMemory::load_session`] did: the transcript as the store held it, the
/// pass (if one ran), and what it kept, in both forms.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use hermes_compaction::Config;
/// use hermes_compaction_rig::{CompactingMemory, Loaded};
/// use rig_core::completion::Message;
///
/// let memory = CompactingMemory::connect("sqlite::memory:", Config::default()).await?;
/// memory.append_messages("t", &[Message::user("hi")]).await?;
/// let loaded: Loaded = memory.load_session("t").await?;
/// assert!(loaded.report.is_none()); // far below the threshold: no pass
/// assert_eq!(loaded.before.len(), loaded.kept.len());
/// assert_eq!(loaded.messages, [Message::user("hi")]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Loaded {
    /// The session's active messages before the pass (after a reload, the reloaded ones).
    pub before: Vec<Message>,
    /// The session's active messages after it: what the store now holds.
    pub kept: Vec<Message>,
    /// `kept` as rig's messages: what `load` returns.
    pub messages: Vec<RigMessage>,
    /// The batch pass, when one ran (check it with `compaction_core::laws::check(&before,
    /// &kept, &report.law, counter)`).
    pub report: Option<BatchReport>,
    /// Whether a first pass was refused because another writer had committed since the
    /// snapshot, so the load took the store's rows and checked again (`report` is then the
    /// second check's).
    pub reloaded: bool,
}

impl CompactingMemory {
    /// A memory over `store`, compacting by `config` with the extractive summarizer and the
    /// default token estimator (replace them with [`with_summarizer`](Self::with_summarizer)
    /// and [`with_counter`](Self::with_counter)).
    pub fn new(store: Arc<dyn TranscriptStore>, config: Config) -> CompactingMemory {
        CompactingMemory {
            store,
            config,
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            counter: Arc::new(Estimator::default()),
        }
    }

    /// A memory over the store at `url`: `sqlite://PATH` (created when missing),
    /// `sqlite::memory:`, or with feature `postgres` a `postgres://` URL.
    ///
    /// # Errors
    ///
    /// The store's, when it cannot connect or migrate (or the backend is compiled out).
    pub async fn connect(url: &str, config: Config) -> Result<CompactingMemory> {
        let store = Store::connect(url).await?.into_dyn();
        Ok(CompactingMemory::new(store, config))
    }

    /// Summaries from `summarizer` (an OpenAI-compatible one in production).
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> CompactingMemory {
        self.summarizer = summarizer;
        self
    }

    /// Token counts from `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> CompactingMemory {
        self.counter = counter;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TranscriptStore> {
        &self.store
    }

    /// The configuration passes run with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// [`load`](ConversationMemory::load), with what it did.
    ///
    /// # Errors
    ///
    /// The store's (a session id the store refuses, an unreachable store), or a conversion
    /// error naming the message.
    pub async fn load_session(&self, session: &str) -> Result<Loaded> {
        self.store.open_or_create(session).await?;
        let (persistence, messages) = Persistence::load(self.store.clone(), session).await?;
        let mut c = Compressor::builder(self.config.clone())
            .summarizer(self.summarizer.clone())
            .counter(self.counter.clone())
            .session(session)
            .store(persistence)
            .build()?;
        let mut before = messages.clone();
        let mut t = c.transcript(messages);
        // The cooldowns and the anti-thrash pause the last flush stored.
        c.reload(&mut t).await?;
        let (_, mut report) = c.before_request(&mut t).await;
        let reloaded = report
            .as_ref()
            .is_some_and(|r| r.failure_kind() == Some(FailureKind::StaleGeneration));
        if reloaded {
            // Another writer (a concurrent load) committed first: take its rows and check
            // again, rather than compacting what it already compacted.
            c.reload(&mut t).await?;
            before = t.messages().to_vec();
            report = c.before_request(&mut t).await.1;
        }
        // The compaction state, for the next load (nothing else is unwritten here).
        c.flush(&mut t).await?;
        let kept = t.messages().to_vec();
        let messages = convert::to_rig(&kept)?;
        Ok(Loaded {
            before,
            kept,
            messages,
            report,
            reloaded,
        })
    }

    /// [`append`](ConversationMemory::append): stores `messages` after the session's active
    /// rows, in one transaction. Returns how many library messages were stored.
    ///
    /// # Errors
    ///
    /// A conversion error naming the rig message (nothing stored), or the store's.
    pub async fn append_messages(&self, session: &str, messages: &[RigMessage]) -> Result<usize> {
        let mut ours = convert::from_rig(messages)?;
        self.store.open_or_create(session).await?;
        if ours.is_empty() {
            return Ok(0);
        }
        Ok(self.store.append(session, &mut ours).await?.len())
    }

    /// [`clear`](ConversationMemory::clear): archives every active row as one generation and
    /// resets the compaction state. A session that does not exist is left so.
    ///
    /// # Errors
    ///
    /// The store's (after three refusals in a row because other writers kept committing).
    pub async fn clear_session(&self, session: &str) -> Result<()> {
        match self.store.open(session).await {
            Err(StoreError::UnknownSession { .. }) => return Ok(()),
            other => other?,
        };
        let mut attempts = 0;
        loop {
            let (rows, generation) = self.store.load_active_with_generation(session).await?;
            let archive: Vec<_> = rows.iter().filter_map(Message::row_id).collect();
            if archive.is_empty() {
                break;
            }
            let mut commit = Commit {
                generation,
                splices: vec![CommitSplice {
                    archive,
                    insert_after: None,
                    insert: Vec::new(),
                }],
                label: PassLabel::new(GenerationKind::Unknown),
            };
            match self.store.archive_and_compact(session, &mut commit).await {
                Ok(_) => break,
                Err(StoreError::StaleGeneration { .. }) if attempts < 2 => attempts += 1,
                Err(e) => return Err(e.into()),
            }
        }
        self.store
            .set_compaction_state(session, &CompactionState::default())
            .await?;
        Ok(())
    }
}

impl ConversationMemory for CompactingMemory {
    fn load<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<Vec<RigMessage>, MemoryError>> {
        Box::pin(async move {
            self.load_session(conversation_id.as_str())
                .await
                .map(|l| l.messages)
                .map_err(MemoryError::backend)
        })
    }

    fn append<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
        messages: Vec<RigMessage>,
    ) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            self.append_messages(conversation_id.as_str(), &messages)
                .await
                .map(|_| ())
                .map_err(MemoryError::backend)
        })
    }

    fn clear<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            self.clear_session(conversation_id.as_str())
                .await
                .map_err(MemoryError::backend)
        })
    }
}
