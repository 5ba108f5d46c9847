//! `session history | undo | diff | pin`: see, undo and pin over the store. Thin over
//! [`TranscriptStore::history`](hermes_compaction::store::TranscriptStore::history),
//! [`restore`](hermes_compaction::store::TranscriptStore::restore) and
//! [`set_pinned`](hermes_compaction::store::TranscriptStore::set_pinned); the text comes from
//! the store's [`HistoryTable`] and [`GenerationDiff`] (redacted).

use hermes_compaction::store::{Access, GenerationDiff, HistoryTable};

use crate::cli::StoreArgs;
use crate::{Error, Result, with_store};

/// `session history`: one line per generation.
pub async fn history(s: &StoreArgs) -> Result<String> {
    with_store(&s.db, Access::Existing, async |store| {
        Ok(HistoryTable(&store.history(&s.session).await?).to_string())
    })
    .await
}

/// `session undo [--to N]`: restores generation N (default: the one before the current).
pub async fn undo(s: &StoreArgs, to: Option<u64>) -> Result<String> {
    let session = s.session.as_str();
    with_store(&s.db, Access::Existing, async |store| {
        let current = store.generation(session).await?;
        let target = match to {
            Some(n) => n,
            None if current == 0 => {
                return Err(Error::Config(format!(
                    "session {session} is at generation 0: nothing to undo"
                )));
            }
            None => current - 1,
        };
        let done = store.restore(session, current, target).await?;
        Ok(format!(
            "session={session} restored generation {target}: generation={current}->{} archived={} reactivated={}",
            done.generation, done.archived, done.reactivated
        ))
    })
    .await
}

/// `session pin --index I [--unpin]`.
pub async fn pin(s: &StoreArgs, index: usize, pinned: bool) -> Result<String> {
    let session = s.session.as_str();
    with_store(&s.db, Access::Existing, async |store| {
        let (messages, generation) = store.load_active_with_generation(session).await?;
        let Some(m) = messages.get(index) else {
            return Err(Error::Config(format!(
                "--index {index} is out of range: session {session} has {} active messages",
                messages.len()
            )));
        };
        let row = m
            .row_id()
            .ok_or_else(|| Error::Pass(format!("message {index} has no row id")))?;
        let (new_row, after) = store.set_pinned(session, generation, row, pinned).await?;
        Ok(format!(
            "session={session} message {index} {}: row={row}->{new_row} generation={generation}->{after}",
            if pinned { "pinned" } else { "unpinned" }
        ))
    })
    .await
}

/// `session diff --generation N`: what N archived, and what replaced it.
pub async fn diff(s: &StoreArgs, generation: u64) -> Result<String> {
    let session = s.session.as_str();
    with_store(&s.db, Access::Existing, async |store| {
        let generations = store.history(session).await?;
        let current = generations.len() as u64 - 1;
        if generation == 0 || generation > current {
            return Err(Error::Config(format!(
                "--generation {generation}: session {session} has generations 1 to {current}"
            )));
        }
        let rows = store.load_all(session).await?;
        let diff = GenerationDiff::of(&generations[generation as usize], &rows);
        if diff.unrecorded() {
            return Err(Error::Config(format!(
                "--generation {generation} was written before the store recorded what each generation archived"
            )));
        }
        Ok(diff.to_string())
    })
    .await
}
