//! What `archive_and_compact` writes: a core [`Edit`] translated into row ids.

use compaction_core::{Edit, Message};

use crate::{Result, RowId, StoreError};

/// One compaction pass as the store sees it: the generation it was planned against and the
/// splices it makes, in transcript order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Commit {
    /// The session generation the pass was planned against (see
    /// [`TranscriptStore::generation`](crate::TranscriptStore::generation)).
    pub generation: u64,
    /// Non-overlapping splices in transcript order.
    pub splices: Vec<CommitSplice>,
    /// What the pass was, for [`TranscriptStore::history`](crate::TranscriptStore::history)
    /// (content-free; the default says nothing).
    pub label: PassLabel,
}

/// What made a generation: the kind of pass and, where its writer knew them, the tokens
/// before and after. Recorded with the commit, listed by
/// [`TranscriptStore::history`](crate::TranscriptStore::history).
///
/// ```
/// use compaction_store::{GenerationKind, PassLabel};
/// let label = PassLabel::new(GenerationKind::Batch).with_tokens(12_000, 3_400);
/// assert_eq!(label.kind.as_str(), "batch");
/// assert_eq!((label.tokens_before, label.tokens_after), (Some(12_000), Some(3_400)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PassLabel {
    /// The kind of pass.
    pub kind: GenerationKind,
    /// The transcript's tokens before the pass, when known.
    pub tokens_before: Option<u64>,
    /// The transcript's tokens after the pass, when known.
    pub tokens_after: Option<u64>,
}

impl PassLabel {
    /// A label of `kind` with no token counts.
    pub fn new(kind: GenerationKind) -> PassLabel {
        PassLabel {
            kind,
            tokens_before: None,
            tokens_after: None,
        }
    }

    /// The same label with the tokens before and after the pass.
    pub fn with_tokens(mut self, before: u64, after: u64) -> PassLabel {
        self.tokens_before = Some(before);
        self.tokens_after = Some(after);
        self
    }
}

/// What made a generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GenerationKind {
    /// The writer did not say (and every generation written before schema version 4).
    #[default]
    Unknown,
    /// Generation 0: the session was created.
    Created,
    /// A batch pass (prune first, then summaries).
    Batch,
    /// A prune-only pass.
    Prune,
    /// A micro pass (rolling or progress marker).
    Micro,
    /// The store was brought back in line with a transcript after an unpersisted pass.
    Resync,
    /// [`TranscriptStore::restore`](crate::TranscriptStore::restore).
    Restore,
    /// A message was pinned or unpinned.
    Pin,
}

impl GenerationKind {
    /// The stored and printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            GenerationKind::Unknown => "unknown",
            GenerationKind::Created => "created",
            GenerationKind::Batch => "batch",
            GenerationKind::Prune => "prune",
            GenerationKind::Micro => "micro",
            GenerationKind::Resync => "resync",
            GenerationKind::Restore => "restore",
            GenerationKind::Pin => "pin",
        }
    }

    /// The kind named `name` (what [`as_str`](Self::as_str) gives); an unknown name is
    /// [`Unknown`](Self::Unknown), so a newer writer's kinds still read.
    pub fn parse(name: &str) -> GenerationKind {
        [
            GenerationKind::Created,
            GenerationKind::Batch,
            GenerationKind::Prune,
            GenerationKind::Micro,
            GenerationKind::Resync,
            GenerationKind::Restore,
            GenerationKind::Pin,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
        .unwrap_or(GenerationKind::Unknown)
    }
}

impl std::fmt::Display for GenerationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Archive a run of consecutive active rows and put `insert` in their place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitSplice {
    /// Consecutive active rows of the session, in transcript order (possibly none).
    pub archive: Vec<RowId>,
    /// Where a pure insertion goes when `archive` is empty: after this active row, or at the
    /// start of the transcript when `None`. Ignored when `archive` is not empty.
    pub insert_after: Option<RowId>,
    /// The new messages, in order. The store stamps each with its new row id, replacing any
    /// row id it carried (a rewritten copy of an old message is a new row).
    pub insert: Vec<Message>,
}

impl Commit {
    /// Translates `edit`, planned against `before` at `generation`, into a commit.
    ///
    /// Row ids come from the metadata of the messages of `before` (what
    /// [`load_active`](crate::TranscriptStore::load_active) and
    /// [`append`](crate::TranscriptStore::append) stamp). Splices that change nothing are
    /// dropped; splices that touch (one starts where the previous ends) are merged, so a pure
    /// insertion never anchors on a row the same commit archives.
    ///
    /// Fails with [`StoreError::Edit`] when the edit does not fit `before`, and with
    /// [`StoreError::MissingRowId`] naming the index of a replaced (or anchoring) message that
    /// was never persisted.
    pub fn from_edit(generation: u64, edit: &Edit, before: &[Message]) -> Result<Commit> {
        edit.validate(before.len())?;
        let row_of = |index: usize| -> Result<RowId> {
            before[index]
                .row_id()
                .ok_or(StoreError::MissingRowId { index })
        };
        let mut splices: Vec<CommitSplice> = Vec::new();
        let mut prev_end: Option<usize> = None;
        for s in &edit.splices {
            if s.range.is_empty() && s.replacement.is_empty() {
                continue;
            }
            let archive = s.range.clone().map(row_of).collect::<Result<Vec<_>>>()?;
            match splices.last_mut() {
                Some(last) if prev_end == Some(s.range.start) => {
                    if last.archive.is_empty() && !archive.is_empty() {
                        last.insert_after = None;
                    }
                    last.archive.extend(archive);
                    last.insert.extend(s.replacement.iter().cloned());
                }
                _ => {
                    let insert_after = match (archive.is_empty(), s.range.start) {
                        (true, 0) | (false, _) => None,
                        (true, start) => Some(row_of(start - 1)?),
                    };
                    splices.push(CommitSplice {
                        archive,
                        insert_after,
                        insert: s.replacement.clone(),
                    });
                }
            }
            prev_end = Some(s.range.end);
        }
        Ok(Commit {
            generation,
            splices,
            label: PassLabel::default(),
        })
    }

    /// The same commit with `label`.
    pub fn with_label(mut self, label: PassLabel) -> Commit {
        self.label = label;
        self
    }

    /// Whether the commit archives nothing and inserts nothing.
    pub fn is_empty(&self) -> bool {
        self.splices
            .iter()
            .all(|s| s.archive.is_empty() && s.insert.is_empty())
    }

    /// Number of rows the commit archives.
    pub fn archived_len(&self) -> usize {
        self.splices.iter().map(|s| s.archive.len()).sum()
    }

    /// Number of rows the commit inserts.
    pub fn inserted_len(&self) -> usize {
        self.splices.iter().map(|s| s.insert.len()).sum()
    }
}

/// Stamps the replacement messages of `edit`, in order, with the row ids that
/// [`archive_and_compact`](crate::TranscriptStore::archive_and_compact) returned for the
/// commit made from it, so the applied transcript carries them and the next append skips them.
///
/// Returns `false` (and stamps nothing) when the counts differ.
pub fn stamp_edit(edit: &mut Edit, ids: &[RowId]) -> bool {
    let total: usize = edit.splices.iter().map(|s| s.replacement.len()).sum();
    if total != ids.len() {
        return false;
    }
    let messages = edit
        .splices
        .iter_mut()
        .flat_map(|s| s.replacement.iter_mut());
    for (m, id) in messages.zip(ids) {
        m.meta_mut().row_id = Some(*id);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use compaction_core::Splice;

    fn stamped(n: usize) -> Vec<Message> {
        (0..n)
            .map(|i| {
                let mut m = Message::user(format!("m{i}"));
                m.meta_mut().row_id = Some(100 + i as RowId);
                m
            })
            .collect()
    }

    #[test]
    fn from_edit_reads_row_ids_and_anchors() {
        let before = stamped(6);
        let edit = Edit {
            splices: vec![
                Splice {
                    range: 0..0,
                    replacement: vec![Message::user("first")],
                },
                Splice {
                    range: 1..3,
                    replacement: vec![Message::assistant("s")],
                },
                Splice {
                    range: 4..4,
                    replacement: vec![Message::assistant("x")],
                },
                Splice {
                    range: 5..5,
                    replacement: vec![],
                },
            ],
        };
        let c = Commit::from_edit(7, &edit, &before).unwrap();
        assert_eq!(c.generation, 7);
        assert_eq!(c.splices.len(), 3);
        assert_eq!(c.splices[0].archive, Vec::<RowId>::new());
        assert_eq!(c.splices[0].insert_after, None);
        assert_eq!(c.splices[1].archive, vec![101, 102]);
        assert_eq!(c.splices[2].insert_after, Some(103));
        assert_eq!((c.archived_len(), c.inserted_len()), (2, 3));
    }

    #[test]
    fn touching_splices_merge() {
        let before = stamped(5);
        let edit = Edit {
            splices: vec![
                Splice {
                    range: 1..1,
                    replacement: vec![Message::user("a")],
                },
                Splice {
                    range: 1..3,
                    replacement: vec![Message::user("b")],
                },
                Splice {
                    range: 3..3,
                    replacement: vec![Message::user("c")],
                },
            ],
        };
        let c = Commit::from_edit(0, &edit, &before).unwrap();
        assert_eq!(c.splices.len(), 1);
        assert_eq!(c.splices[0].archive, vec![101, 102]);
        assert_eq!(c.splices[0].insert_after, None);
        let texts: Vec<String> = c.splices[0]
            .insert
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        assert_eq!(texts, ["a", "b", "c"]);
    }

    #[test]
    fn missing_row_id_names_the_index() {
        let mut before = stamped(4);
        before[2].meta_mut().row_id = None;
        let e = Commit::from_edit(0, &Edit::single(1..3, vec![]), &before).unwrap_err();
        assert!(matches!(e, StoreError::MissingRowId { index: 2 }), "{e:?}");
        let e = Commit::from_edit(0, &Edit::single(3..3, vec![Message::user("x")]), &before)
            .unwrap_err();
        assert!(matches!(e, StoreError::MissingRowId { index: 2 }), "{e:?}");
        let e = Commit::from_edit(0, &Edit::single(3..9, vec![]), &before).unwrap_err();
        assert!(matches!(e, StoreError::Edit(_)), "{e:?}");
    }

    #[test]
    fn stamp_edit_checks_counts() {
        let mut edit = Edit::single(0..1, vec![Message::user("a"), Message::user("b")]);
        assert!(!stamp_edit(&mut edit, &[1]));
        assert_eq!(edit.splices[0].replacement[0].row_id(), None);
        assert!(stamp_edit(&mut edit, &[5, 6]));
        assert_eq!(edit.splices[0].replacement[1].row_id(), Some(6));
    }
}
