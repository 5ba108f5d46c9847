//! The compressor's store writes: the flush of what the agent appended, the reload after
//! another writer moved the session on, the durable anti-thrash state, and the commit of a
//! pass (with the history label it records).

use compaction_core::Transcript;
#[cfg(feature = "store")]
use compaction_core::micro::MicroEvent;
use compaction_core::{MarkerKind, Message, TokenCounter};

use super::Compressor;
#[cfg(feature = "store")]
use super::ThrashState;
use crate::persist::PersistError;

impl Compressor {
    /// Persists what the agent appended to `t` since the last flush and stamps the new row
    /// ids on `t` itself, so the next flush skips them: idempotent, and the cost is what was
    /// appended, not the transcript. Returns how many rows were written (0 without a store).
    ///
    /// Call it whenever the agent wants its messages durable (after each turn, or after each
    /// append). The compressor also flushes before each commit, so a pass never replaces a
    /// message the store has not seen. The agent appends at the end, so "not persisted yet" is
    /// the suffix after the last stamped message; a message inserted elsewhere without a row
    /// id makes the next commit fail cleanly (`MissingRowId`).
    ///
    /// After an overflow pass that the store could not commit, the first flush resynchronises
    /// the store instead: in one `archive_and_compact` it archives the active rows the
    /// transcript no longer holds and inserts the messages the store has not seen, at their
    /// positions. That fails (and the store stays as it was) when another writer changed the
    /// session meanwhile.
    ///
    /// Every write names the generation the transcript reflects: when the session's rows
    /// changed since (any writer's commit, or the compressor was built with an old generation),
    /// the flush is refused with
    /// [`StoreError::StaleGeneration`](compaction_store::StoreError::StaleGeneration) and
    /// writes nothing. Carrying on would never store anything again: call
    /// [`reload`](Self::reload), which adopts the store's transcript and writes what the agent
    /// appended, then continue. A flush with nothing to write reads the session's generation
    /// once, so a store-side change (an undo through [`Session`](compaction_store::Session),
    /// another process's pass) is reported at the next flush rather than at the next pass;
    /// until a reload, [`Status::in_sync`](crate::Status::in_sync) is `false`.
    ///
    /// A pin is one pin, whichever side sets it. Pins set with [`Transcript::pin`] persist:
    /// the flush writes each pin change on a stored message as a generation of its own (see
    /// [`Transcript::pending_pin_writes`]), and counts it among the rows written. A change
    /// the store's side made to pins alone
    /// ([`Session::pin_at`](compaction_store::Session::pin_at)) is adopted instead of
    /// refused: the flush finds the session's rows are the transcript's but for their pins,
    /// takes the store's pins, row ids and generation into `t` (a pin `t` set and has not
    /// written yet stays `t`'s), and goes on; one extra read.
    ///
    /// The anti-thrash and cooldown state ([`ThrashState`]) is written with the flush when it
    /// changed since it was last written or read (two store calls then), into the session's
    /// [`CompactionState`](compaction_store::CompactionState); [`reload`](Self::reload) reads
    /// it back after a restart.
    ///
    /// Do not append copies of the transcript's messages to the store yourself: the copies
    /// get the row ids, the transcript does not, and the next commit writes them again.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::Persistence;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Store, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let persistence = Persistence {
    ///     store: store.clone(),
    ///     session: "s1".into(),
    ///     generation: store.generation("s1").await.unwrap(),
    /// };
    /// let mut c = Compressor::builder(Config::default())
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s1")
    ///     .store(persistence)
    ///     .build()
    ///     .unwrap();
    /// let mut t = c.transcript(vec![Message::system("be brief")]);
    /// t.push(Message::user("hi"), c.status().counter);
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 2); // both written, ids stamped on `t`
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 0); // idempotent
    /// t.push(Message::assistant("hello"), c.status().counter);
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 1);
    /// assert_eq!(store.load_active("s1").await.unwrap().len(), t.len());
    /// # }
    /// ```
    #[cfg(feature = "store")]
    pub async fn flush(
        &mut self,
        t: &mut Transcript,
    ) -> Result<usize, compaction_store::StoreError> {
        let written = self.write_unpersisted(t, true).await?;
        self.save_state().await?;
        Ok(written)
    }

    /// [`flush`](Self::flush); with `check_idle`, a flush with nothing to write reads the
    /// generation (a commit that follows checks it itself, so the pass runner's flush skips
    /// that read).
    #[cfg(feature = "store")]
    async fn write_unpersisted(
        &mut self,
        t: &mut Transcript,
        check_idle: bool,
    ) -> Result<usize, compaction_store::StoreError> {
        let Some(p) = &mut self.persistence else {
            return Ok(0);
        };
        let mut result = write_once(p, t, self.rt.resync_pending, check_idle).await;
        if matches!(
            result,
            Err(compaction_store::StoreError::StaleGeneration { .. })
        ) && !self.rt.resync_pending
        {
            // Another writer moved the session on. A change to pins only (a store-side
            // `Session::pin_at`) is adopted and the write made again; anything else is left
            // to `reload`, and the transcript is known not to be the store's until then.
            match crate::persist::adopt_pins(p, t).await {
                Ok(true) => result = write_once(p, t, false, check_idle).await,
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    session = %self.session_id,
                    "the store's rows could not be read to adopt its pins: {e}"
                ),
            }
        }
        match &result {
            Err(compaction_store::StoreError::StaleGeneration { .. }) => self.rt.store_moved = true,
            // A write, or the idle read, found the session at the transcript's generation.
            Ok(n) if *n > 0 || check_idle => self.rt.store_moved = false,
            _ => {}
        }
        match &result {
            Ok(_) => {
                // The resync wrote the pass's summary in their place: they are no longer
                // "unseen" for a later reload (see `reload`).
                self.rt.unpersisted_removed.clear();
                self.rt.resync_pending = false;
            }
            Err(e) if self.rt.resync_pending => tracing::warn!(
                session = %self.session_id,
                "compaction store resync failed (the store keeps the rows from before the \
                 last overflow pass): {e}"
            ),
            Err(e) => {
                tracing::warn!(session = %self.session_id, "compaction store flush failed: {e}")
            }
        }
        result
    }

    /// Recovers from a stale generation: the session's rows changed since the transcript was
    /// loaded (any writer's commit: a pass, an undo, a restore, another handle's flush; or
    /// the compressor was given an old generation, e.g. resuming from a snapshot), so [`flush`](Self::flush) and every commit are refused with
    /// [`StoreError::StaleGeneration`](compaction_store::StoreError::StaleGeneration) (a pass
    /// reports [`FailureKind::StaleGeneration`](crate::FailureKind::StaleGeneration)).
    ///
    /// In one snapshot it reads the session's active rows and generation, appends after them
    /// what `t` holds that the store never saw (the messages the agent appended since its last
    /// successful flush, and the ones an overflow pass applied without its commit removed),
    /// then replaces `t` with the result and adopts the generation. State that described the
    /// old transcript is reset: usage tickets from before (the next
    /// [`after_response`](Self::after_response) with one is ignored), the micro state, the
    /// proactive-prune re-arm point and a pending resync. The [`ThrashState`] is the one the
    /// store holds on the first reload of a compressor that has not flushed yet (how a
    /// resumed session gets its cooldowns and anti-thrash pause back, as the last
    /// [`flush`](Self::flush) wrote them), and is kept otherwise (the session counts as
    /// compacted when the reloaded rows hold a summary). Returns how many
    /// messages it appended. On error (the store is unreachable, or moved on again between
    /// the read and the append) nothing changes and it can be called again. Without a store
    /// it does nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::Persistence;
    /// use hermes_compaction::core::{Edit, Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Commit, Store, StoreError, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let (persistence, messages) = Persistence::load(store.clone(), "s1").await.unwrap();
    /// let mut c = Compressor::builder(Config::default())
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s1")
    ///     .store(persistence)
    ///     .build()
    ///     .unwrap();
    /// let mut t = c.transcript(messages);
    /// t.push(Message::user("one"), c.status().counter);
    /// t.push(Message::assistant("two"), c.status().counter);
    /// c.flush(&mut t).await.unwrap();
    ///
    /// // Another process compacts the session: it drops the first message.
    /// let (rows, generation) = store.load_active_with_generation("s1").await.unwrap();
    /// let mut commit = Commit::from_edit(generation, &Edit::single(0..1, vec![]), &rows).unwrap();
    /// store.archive_and_compact("s1", &mut commit).await.unwrap();
    ///
    /// t.push(Message::user("three"), c.status().counter);
    /// match c.flush(&mut t).await {
    ///     // Refused, nothing written: reload (it writes "three" too), then go on.
    ///     Err(compaction_store::StoreError::StaleGeneration { .. }) => assert_eq!(c.reload(&mut t).await.unwrap(), 1),
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!(t.len(), 2); // "two" and "three"
    /// assert_eq!(store.load_active("s1").await.unwrap().len(), 2);
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 0);
    /// # }
    /// ```
    #[cfg(feature = "store")]
    pub async fn reload(
        &mut self,
        t: &mut Transcript,
    ) -> Result<usize, compaction_store::StoreError> {
        let Some(p) = &mut self.persistence else {
            return Ok(0);
        };
        let (mut messages, generation) = p.store.load_active_with_generation(&p.session).await?;
        let first_unstamped = t
            .messages()
            .iter()
            .rposition(|m| m.row_id().is_some())
            .map_or(0, |i| i + 1);
        // What the store never saw, in the order the agent had it.
        let mut fresh: Vec<Message> = self.rt.unpersisted_removed.clone();
        fresh.extend(t.messages()[first_unstamped..].iter().cloned());
        let written = fresh.len();
        if !fresh.is_empty() {
            p.store
                .append_at(&p.session, generation, &mut fresh)
                .await
                .inspect_err(|e| {
                    tracing::warn!(session = %self.session_id, "compaction store reload failed: {e}")
                })?;
        }
        p.generation = generation;
        messages.append(&mut fresh);
        let pins = t.pending_pin_writes();
        self.rt.unpersisted_removed.clear();
        self.rt.resync_pending = false;
        self.rt.store_moved = false;
        self.rt.micro_record(MicroEvent::Reset);
        self.rt.proactive_rearm_at = None;
        self.rt.awaiting_effect = false;
        self.rt.epoch += 1;
        *t = self.transcript(messages);
        // Pins set on stored messages and not written yet are set again on the rows the store
        // still holds, so the next flush writes them.
        for (row, pinned) in pins {
            if let Some(i) = t.messages().iter().position(|m| m.row_id() == Some(row)) {
                t.pin(i, pinned);
            }
        }
        self.load_state().await?;
        Ok(written)
    }

    /// Writes the [`ThrashState`] (cooldowns, the anti-thrash pause, the compacted flag) into
    /// the session's [`CompactionState`](compaction_store::CompactionState), keeping what
    /// else its `extra` holds (see [`ThrashState::write_to`]), when it changed since it was
    /// last written or read: part of [`flush`](Self::flush). Two store calls (a read, then a
    /// write); a no-op without a store.
    #[cfg(feature = "store")]
    pub(crate) async fn save_state(&mut self) -> Result<(), compaction_store::StoreError> {
        let Some(p) = &self.persistence else {
            return Ok(());
        };
        if self.rt.state_stored.as_ref() == Some(&self.rt.state) {
            return Ok(());
        }
        let mut stored = p.store.compaction_state(&p.session).await?;
        self.rt.state.write_to(&mut stored);
        p.store.set_compaction_state(&p.session, &stored).await?;
        self.rt.state_stored = Some(self.rt.state.clone());
        Ok(())
    }

    /// Adopts the [`ThrashState`] the session's
    /// [`CompactionState`](compaction_store::CompactionState) holds (written by
    /// [`save_state`](Self::save_state); read with [`ThrashState::read_from`]) when this
    /// compressor has neither written nor read it yet (a resumed session: part of
    /// [`reload`](Self::reload)); keeps the session compacted when the transcript already
    /// showed it was. Once written or read, the state in memory is the newest and is kept. A
    /// no-op without a store.
    #[cfg(feature = "store")]
    pub(crate) async fn load_state(&mut self) -> Result<(), compaction_store::StoreError> {
        let Some(p) = &self.persistence else {
            return Ok(());
        };
        if self.rt.state_stored.is_some() {
            return Ok(());
        }
        let stored = p.store.compaction_state(&p.session).await?;
        let compacted = self.rt.state.compacted;
        self.rt.state = ThrashState::read_from(&stored);
        self.rt.state.compacted |= compacted;
        self.rt.state_stored = Some(self.rt.state.clone());
        Ok(())
    }

    /// The session generation the transcript reflects in the store: the one the compressor
    /// was given, advanced by each pass it committed; `None` without a store. Read it instead
    /// of asking the store after a run: it needs no connection, so a store that went away
    /// after the last commit cannot hide what was committed.
    #[cfg(feature = "store")]
    pub(crate) fn store_generation(&self) -> Option<u64> {
        self.persistence.as_ref().map(|p| p.generation)
    }

    /// The store and session insertion trims keep originals in (the compressor's own).
    #[cfg(feature = "store")]
    pub(crate) fn trim_store(&self) -> Option<(&dyn compaction_store::TranscriptStore, &str)> {
        self.persistence
            .as_ref()
            .map(|p| (&*p.store, p.session.as_str()))
    }

    /// Whether the store holds `t` as it is, as far as this compressor knows without asking
    /// it: every message of `t` written (stamped with a row id), no pin change waiting for
    /// the next flush, no overflow pass applied without its commit (after one, `false` until
    /// a store write resynchronised them), and no store write refused because the session
    /// changed on the store's side in a way `t` could not adopt (after one, `false` until
    /// [`reload`](Self::reload)). Always `true` without a store. A change made by another
    /// writer since the last store write is not seen here until the next
    /// [`flush`](Self::flush), which reads the generation.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use hermes_compaction::compressor::Persistence;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::store::{Store, TranscriptStore};
    /// use hermes_compaction::{Compressor, Config};
    ///
    /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    /// store.create_session("s1").await.unwrap();
    /// let (persistence, messages) = Persistence::load(store.clone(), "s1").await.unwrap();
    /// let mut c = Compressor::builder(Config::default())
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s1")
    ///     .store(persistence)
    ///     .build()
    ///     .unwrap();
    /// let mut t = c.transcript(messages);
    /// t.push(Message::user("remember the port is 8443"), c.status().counter);
    /// assert!(!c.status().in_sync(&t)); // appended, not flushed
    /// c.flush(&mut t).await.unwrap();
    /// assert!(c.status().in_sync(&t));
    /// t.pin(0, true);
    /// assert!(!c.status().in_sync(&t)); // the pin is not stored yet
    /// assert_eq!(c.flush(&mut t).await.unwrap(), 1);
    /// assert!(c.status().in_sync(&t));
    /// assert!(store.load_active("s1").await.unwrap()[0].is_pinned());
    /// # }
    /// ```
    pub(crate) fn store_in_sync(&self, t: &Transcript) -> bool {
        #[cfg(feature = "store")]
        return self.persistence.is_none()
            || (!self.rt.resync_pending
                && !self.rt.store_moved
                && t.pending_pin_writes().is_empty()
                && t.messages().iter().all(|m| m.row_id().is_some()));
        #[cfg(not(feature = "store"))]
        {
            let _ = t;
            true
        }
    }

    /// An overflow pass is applied without its commit: the store needs a resync, and the
    /// messages it never saw that `edit` removes are kept for [`reload`](Self::reload).
    pub(crate) fn keep_unpersisted(&mut self, t: &Transcript, edit: &compaction_core::Edit) {
        #[cfg(feature = "store")]
        {
            self.rt.resync_pending = self.persistence.is_some();
            self.rt.unpersisted_removed.extend(
                edit.splices
                    .iter()
                    .flat_map(|s| t.messages()[s.range.clone()].iter())
                    .filter(|m| m.row_id().is_none())
                    .cloned(),
            );
        }
        #[cfg(not(feature = "store"))]
        let _ = (t, edit);
    }

    /// Commits `edit` with `archive_and_compact` (flushing unpersisted messages first) and
    /// stamps its new rows; a no-op without a store. A failure is logged (without content)
    /// and returned with its cause.
    #[cfg(feature = "store")]
    pub(crate) async fn persist_edit(
        &mut self,
        t: &mut Transcript,
        edit: &mut compaction_core::Edit,
    ) -> Result<(), PersistError> {
        self.persist_edit_as(t, edit, None).await
    }

    /// [`persist_edit`](Self::persist_edit) of an undo: labelled `restore` in the history.
    pub(crate) async fn persist_restore(
        &mut self,
        t: &mut Transcript,
        edit: &mut compaction_core::Edit,
    ) -> Result<(), PersistError> {
        #[cfg(feature = "store")]
        let label = Some(compaction_store::PassLabel::new(
            compaction_store::GenerationKind::Restore,
        ));
        #[cfg(feature = "store")]
        return self.persist_edit_as(t, edit, label).await;
        #[cfg(not(feature = "store"))]
        return self.persist_edit(t, edit).await;
    }

    /// [`persist_edit`](Self::persist_edit) with the history label given rather than read
    /// from the edit.
    #[cfg(feature = "store")]
    pub(crate) async fn persist_edit_as(
        &mut self,
        t: &mut Transcript,
        edit: &mut compaction_core::Edit,
        label: Option<compaction_store::PassLabel>,
    ) -> Result<(), PersistError> {
        use compaction_store::{Commit, StoreError, stamp_edit};
        if self.persistence.is_none() {
            return Ok(());
        }
        // Flush what the agent has not persisted yet (or resync), so every replaced row has
        // an id.
        self.write_unpersisted(t, false)
            .await
            .map_err(|e| stale_hint(PersistError::store(e)))?;
        let Some(p) = &mut self.persistence else {
            return Ok(());
        };
        let label = label.unwrap_or_else(|| pass_label(t, edit, self.counter.as_ref()));
        let committed = async {
            let mut commit = Commit::from_edit(p.generation, edit, t.messages())?.with_label(label);
            let ids = p.store.archive_and_compact(&p.session, &mut commit).await?;
            p.generation += 1;
            if !stamp_edit(edit, &ids) {
                return Err(StoreError::OutOfRange {
                    what: crate::persist::ROW_COUNT,
                });
            }
            Ok(())
        }
        .await;
        let Err(e) = committed else {
            return Ok(());
        };
        tracing::warn!(session = %self.session_id, "compaction store commit failed: {e}");
        // The commit may have landed although it failed for us (the database died before its
        // acknowledgement came): ask the store what it holds rather than assume, and say so
        // when it cannot be asked. The generation the compressor commits against stays as it
        // was, so a commit that did land makes the next one stale (reload) rather than wrong.
        let held = match p.store.generation(&p.session).await {
            Ok(g) => crate::report::StoreGeneration::Confirmed(g),
            Err(read) => {
                tracing::warn!(
                    session = %self.session_id,
                    "the store's generation could not be read after the failed commit: {read}"
                );
                crate::report::StoreGeneration::Unconfirmed {
                    last_known: p.generation,
                }
            }
        };
        let mut failure = stale_hint(PersistError::store(e));
        failure.held = Some(held);
        if failure.failure == crate::FailureKind::StaleGeneration {
            // The transcript is not the store's any more. (Nothing is adopted here: an
            // overflow pass still applies its edit to `t` as planned.)
            self.rt.store_moved = true;
        }
        Err(failure)
    }

    #[cfg(not(feature = "store"))]
    pub(crate) async fn persist_edit(
        &mut self,
        _t: &mut Transcript,
        _edit: &mut compaction_core::Edit,
    ) -> Result<(), PersistError> {
        Ok(())
    }
}

/// A store failure of a pass, its cause saying how to catch up when it is a stale generation.
#[cfg(feature = "store")]
fn stale_hint(mut failure: PersistError) -> PersistError {
    if failure.failure == crate::FailureKind::StaleGeneration {
        failure.cause.push_str(
            "; the session changed on the store's side since the transcript was loaded: \
             `flush` adopts a change of pins alone, `reload` adopts any other",
        );
    }
    failure
}

/// One write of [`Compressor::flush`]: the resync (when `resync`) or the append of the
/// unstamped suffix, then the pending pin changes; with `check_idle`, a write with nothing to
/// do reads the generation, so a store-side change is reported rather than a clean flush the
/// next commit would contradict.
#[cfg(feature = "store")]
async fn write_once(
    p: &mut crate::persist::Persistence,
    t: &mut Transcript,
    resync: bool,
    check_idle: bool,
) -> Result<usize, compaction_store::StoreError> {
    let written = if resync {
        crate::persist::resync(p, t).await?
    } else {
        crate::persist::append_unstamped(p, t).await?
    };
    let pins = crate::persist::write_pins(p, t).await?;
    if written + pins == 0 && check_idle {
        crate::persist::check_generation(p).await?;
    }
    Ok(written + pins)
}

/// What the store's history records for a pass: its kind, read from the markers it writes (a
/// batch marker: batch; a micro or progress marker: micro; none: prune), and the estimated
/// tokens before and after.
#[cfg(feature = "store")]
fn pass_label(
    t: &Transcript,
    edit: &compaction_core::Edit,
    counter: &dyn TokenCounter,
) -> compaction_store::PassLabel {
    use compaction_store::{GenerationKind, PassLabel};
    let markers: Vec<MarkerKind> = edit
        .splices
        .iter()
        .flat_map(|s| s.replacement.iter())
        .filter_map(Message::marker_kind)
        .collect();
    let kind = if markers.contains(&MarkerKind::Batch) {
        GenerationKind::Batch
    } else if markers.is_empty() {
        GenerationKind::Prune
    } else {
        GenerationKind::Micro
    };
    let before = t.current_tokens();
    let (removed, added) = edit.token_change(t, counter);
    PassLabel::new(kind).with_tokens(before, (before + added).saturating_sub(removed))
}
