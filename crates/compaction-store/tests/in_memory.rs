//! A downstream store: [`TranscriptStore`] implemented in memory, as a framework would (its eight
//! required methods, joined to the backend table as `memory:`), with
//! nothing but this crate's trait and value types (built with `--no-default-features`, so
//! neither sqlx nor tokio; the futures run on a ten-line executor below). One contract test
//! drives it through the trait and its [`Session`] handle; with the `sqlite` feature the same
//! contract runs on SQLite too, so the in-memory model and the engine are held to one
//! standard.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use compaction_core::{Edit, MarkerKind, Message, Role, marker};
use compaction_store::{
    Backend, BoxFuture, Change, Commit, CommitSplice, CompactionState, GenerationInfo,
    GenerationKind, HitSource, PassLabel, Restored, Result, RowId, Rows, SearchHit, SessionInfo,
    Snapshot, Store, StoreError, StoreOptions, StoredRow, TranscriptStore, Written,
};

/// Runs a future to completion on this thread (no runtime).
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark()
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

// ---------------------------------------------------------------------------------------------
// The store.

#[derive(Clone, Debug)]
struct Row {
    id: RowId,
    message: Message,
    active: bool,
    compacted: bool,
    generation: u64,
    archived_generation: Option<u64>,
    pass_generation: Option<u64>,
}

#[derive(Clone, Debug, Default)]
struct Sess {
    generation: u64,
    /// In transcript order (the index is the ordering key).
    rows: Vec<Row>,
    history: Vec<GenerationInfo>,
    state: CompactionState,
    originals: BTreeMap<String, Message>,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: BTreeMap<String, Sess>,
    next_id: RowId,
}

/// Every session in one map behind one lock: each method is one "transaction".
#[derive(Debug, Default)]
struct MemoryStore(Mutex<Inner>);

fn check_id(session: &str) -> Result<()> {
    if session.is_empty() || session.len() > 256 || session.chars().any(char::is_control) {
        return Err(StoreError::InvalidSessionId);
    }
    Ok(())
}

fn unknown(session: &str) -> StoreError {
    StoreError::UnknownSession {
        session: session.to_owned(),
    }
}

fn stale(session: &str, expected: u64, actual: u64) -> StoreError {
    StoreError::StaleGeneration {
        session: session.to_owned(),
        expected,
        actual,
    }
}

fn stamped(row: &Row) -> Message {
    let mut m = row.message.clone();
    m.meta_mut().row_id = Some(row.id);
    m
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Inner {
    fn info(id: &str, s: &Sess) -> SessionInfo {
        SessionInfo {
            id: id.to_owned(),
            generation: s.generation,
            created_at_ms: 0,
        }
    }

    fn get(&mut self, session: &str) -> Result<&mut Sess> {
        check_id(session)?;
        self.sessions
            .get_mut(session)
            .ok_or_else(|| unknown(session))
    }

    fn create(&mut self, session: &str) -> Result<SessionInfo> {
        check_id(session)?;
        if self.sessions.contains_key(session) {
            return Err(StoreError::SessionExists {
                session: session.to_owned(),
            });
        }
        let sess = Sess {
            history: vec![GenerationInfo::new(
                0,
                PassLabel::new(GenerationKind::Created),
            )],
            ..Sess::default()
        };
        let info = Inner::info(session, &sess);
        self.sessions.insert(session.to_owned(), sess);
        Ok(info)
    }

    fn ids(&mut self, n: usize) -> Vec<RowId> {
        let first = self.next_id + 1;
        self.next_id += n as RowId;
        (first..=self.next_id).collect()
    }

    fn append(
        &mut self,
        session: &str,
        expected: Option<u64>,
        messages: &mut [Message],
    ) -> Result<Vec<RowId>> {
        let todo: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].row_id().is_none())
            .collect();
        let actual = self.get(session)?.generation;
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(stale(session, expected, actual));
        }
        let ids = self.ids(todo.len());
        let sess = self.get(session)?;
        for (&i, &id) in todo.iter().zip(&ids) {
            messages[i].meta_mut().row_id = Some(id);
            sess.rows.push(Row {
                id,
                message: messages[i].clone(),
                active: true,
                compacted: false,
                generation: sess.generation,
                archived_generation: None,
                pass_generation: None,
            });
        }
        Ok(ids)
    }

    /// Checks and applies a commit to a copy of the session, which replaces it on success.
    fn commit(&mut self, session: &str, commit: &mut Commit) -> Result<Vec<RowId>> {
        let sess = self.get(session)?;
        if commit.generation != sess.generation {
            return Err(stale(session, commit.generation, sess.generation));
        }
        if commit.is_empty() {
            return Err(StoreError::EmptyCommit);
        }
        let mut rows = sess.rows.clone();
        let next = sess.generation + 1;
        let index = |rows: &[Row], id: RowId| rows.iter().position(|r| r.id == id);
        // Validate against the rows as they are, splice by splice, in order.
        let mut last: Option<usize> = None;
        let mut anchors = Vec::new();
        for (n, splice) in commit.splices.iter().enumerate() {
            let active: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].active).collect();
            let anchor = if let Some(&first) = splice.archive.first() {
                for &row in &splice.archive {
                    let i =
                        index(&rows, row).ok_or(StoreError::RowNotInSession { splice: n, row })?;
                    if !rows[i].active {
                        return Err(StoreError::RowNotActive { splice: n, row });
                    }
                }
                let start = index(&rows, first).unwrap_or_default();
                let k = active.iter().position(|&i| i == start).unwrap_or_default();
                let run: Vec<RowId> = active[k..].iter().map(|&i| rows[i].id).collect();
                if !run.starts_with(&splice.archive) {
                    return Err(StoreError::NotContiguous { splice: n });
                }
                if last.is_some_and(|l| start <= l) {
                    return Err(StoreError::SplicesOutOfOrder { splice: n });
                }
                last = index(&rows, *splice.archive.last().unwrap_or(&first));
                last
            } else {
                let at = match splice.insert_after {
                    Some(row) => {
                        let i = index(&rows, row)
                            .ok_or(StoreError::RowNotInSession { splice: n, row })?;
                        if !rows[i].active {
                            return Err(StoreError::RowNotActive { splice: n, row });
                        }
                        Some(i)
                    }
                    None => None,
                };
                if last.is_some() && at < last {
                    return Err(StoreError::SplicesOutOfOrder { splice: n });
                }
                at
            };
            anchors.push(anchor.map(|i| rows[i].id));
        }
        // Apply: archive, then insert after each splice's anchor row (or at the start).
        let (mut archived, mut inserted) = (0, 0);
        for splice in &commit.splices {
            for &row in &splice.archive {
                let i = index(&rows, row).unwrap_or_default();
                let r = &mut rows[i];
                r.active = false;
                r.compacted = true;
                r.archived_generation = Some(next);
                archived += 1;
            }
        }
        let mut out = Vec::new();
        for (splice, anchor) in commit.splices.iter_mut().zip(anchors) {
            let ids = self.ids(splice.insert.len());
            let at = anchor.map_or(0, |id| index(&rows, id).unwrap_or_default() + 1);
            let new_rows: Vec<Row> = splice
                .insert
                .iter_mut()
                .zip(&ids)
                .map(|(message, &id)| {
                    message.meta_mut().row_id = Some(id);
                    Row {
                        id,
                        message: message.clone(),
                        active: true,
                        compacted: false,
                        generation: next,
                        archived_generation: None,
                        pass_generation: Some(next),
                    }
                })
                .collect();
            inserted += new_rows.len() as u64;
            rows.splice(at..at, new_rows);
            out.extend(ids);
        }
        let sess = self.get(session)?;
        sess.rows = rows;
        sess.generation = next;
        let mut info = GenerationInfo::new(next, commit.label);
        info.archived = archived;
        info.inserted = inserted;
        sess.history.push(info);
        Ok(out)
    }

    fn restore(&mut self, session: &str, expected: u64, target: u64) -> Result<Restored> {
        let sess = self.get(session)?;
        let current = sess.generation;
        if expected != current {
            return Err(stale(session, expected, current));
        }
        if target > current {
            return Err(StoreError::UnknownGeneration {
                generation: target,
                current,
            });
        }
        if target == current {
            return Ok(Restored::new(current, 0, 0));
        }
        let next = current + 1;
        let was_active =
            |r: &Row| r.generation <= target && r.archived_generation.is_none_or(|g| g > target);
        let back: Vec<RowId> = sess
            .rows
            .iter()
            .filter(|r| was_active(r) && !r.active)
            .map(|r| r.id)
            .collect();
        let mut archived = 0;
        for r in sess.rows.iter_mut().filter(|r| r.active && !was_active(r)) {
            r.active = false;
            r.archived_generation = Some(next);
            archived += 1;
        }
        let ids = self.ids(back.len());
        let sess = self.get(session)?;
        for (old, id) in back.iter().zip(ids) {
            let at = sess
                .rows
                .iter()
                .position(|r| r.id == *old)
                .unwrap_or_default();
            let copy = Row {
                id,
                active: true,
                compacted: false,
                generation: next,
                archived_generation: None,
                pass_generation: Some(next),
                ..sess.rows[at].clone()
            };
            sess.rows.insert(at + 1, copy);
        }
        sess.generation = next;
        let mut info = GenerationInfo::new(next, PassLabel::new(GenerationKind::Restore));
        info.restored_to = Some(target);
        info.archived = archived;
        info.inserted = back.len() as u64;
        sess.history.push(info);
        Ok(Restored::new(next, archived, back.len() as u64))
    }
}

impl Inner {
    fn keep_original(&mut self, session: &str, handle: &str, original: &Message) -> Result<()> {
        let sess = self.get(session)?;
        if handle.is_empty() || handle.len() > 128 || handle.chars().any(char::is_control) {
            return Err(StoreError::InvalidHandle);
        }
        // Only the wire body is kept, as the SQL backends keep it.
        let body =
            Message::from_json(&original.to_wire_json()).map_err(|e| StoreError::CorruptRow {
                row: 0,
                reason: e.to_string(),
            })?;
        match sess.originals.get(handle) {
            Some(kept) if kept.to_wire_json() != body.to_wire_json() => {
                Err(StoreError::HandleConflict {
                    handle: handle.to_owned(),
                })
            }
            Some(_) => Ok(()),
            None => {
                sess.originals.insert(handle.to_owned(), body);
                Ok(())
            }
        }
    }
}

fn stored(position: usize, r: &Row) -> StoredRow {
    StoredRow {
        id: r.id,
        position: position as i64,
        message: stamped(r),
        kind: r.message.marker_kind(),
        active: r.active,
        compacted: r.compacted,
        generation: r.generation,
        created_at_ms: 0,
        archived_at_ms: r.archived_generation.map(|_| 0),
        archived_generation: r.archived_generation,
        pass_generation: r.pass_generation,
    }
}

impl MemoryStore {
    /// Runs `f` on the locked state, as one ready future.
    fn with<'a, T: Send + 'a>(
        &'a self,
        f: impl FnOnce(&mut Inner) -> Result<T> + Send + 'a,
    ) -> BoxFuture<'a, Result<T>> {
        Box::pin(async move {
            let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut inner)
        })
    }
}

/// The store's row of the backend table: `memory:` URLs, each connect a fresh empty store.
const MEMORY: Backend = Backend::new("memory", &["memory"], connect_memory);

fn connect_memory<'a>(_url: &'a str, _options: &'a StoreOptions) -> BoxFuture<'a, Result<Store>> {
    Box::pin(async { Ok(Store::new(MemoryStore::default())) })
}

/// The eight primitives; every other method of the trait is provided on top of them.
impl TranscriptStore for MemoryStore {
    fn open<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        self.with(move |s| Ok(Inner::info(session, s.get(session)?)))
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        self.with(|s| {
            Ok(s.sessions
                .iter()
                .map(|(id, sess)| Inner::info(id, sess))
                .collect())
        })
    }

    fn load<'a>(&'a self, session: &'a str, rows: Rows<'a>) -> BoxFuture<'a, Result<Snapshot>> {
        self.with(move |s| {
            let sess = s.get(session)?;
            let wanted = |r: &Row| match rows {
                Rows::Active => r.active,
                Rows::All => true,
                Rows::Ids(ids) => ids.contains(&r.id),
            };
            let found = sess
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| wanted(r))
                .map(|(i, r)| stored(i, r))
                .collect();
            Ok(Snapshot::new(sess.generation, found))
        })
    }

    fn write<'a>(&'a self, session: &'a str, change: Change<'a>) -> BoxFuture<'a, Result<Written>> {
        self.with(move |s| match change {
            Change::Create { messages } => {
                check_id(session)?;
                if s.sessions.contains_key(session) {
                    return Err(StoreError::SessionExists {
                        session: session.to_owned(),
                    });
                }
                s.create(session)?;
                for m in messages.iter_mut() {
                    m.meta_mut().row_id = None;
                }
                Ok(Written::rows(Some(0), s.append(session, None, messages)?))
            }
            Change::Append { expected, messages } => {
                Ok(Written::rows(None, s.append(session, expected, messages)?))
            }
            Change::Commit(commit) => {
                let ids = s.commit(session, commit)?;
                let mut done = Written::rows(Some(commit.generation + 1), ids);
                done.archived = commit.archived_len() as u64;
                Ok(done)
            }
            Change::Restore { expected, target } => {
                let restored = s.restore(session, expected, target)?;
                let mut done = Written::rows(Some(restored.generation), Vec::new());
                done.archived = restored.archived;
                done.reactivated = restored.reactivated;
                Ok(done)
            }
            Change::State(state) => {
                s.get(session)?.state = state.clone();
                Ok(Written::new())
            }
            Change::Original { handle, message } => {
                s.keep_original(session, handle, message)?;
                Ok(Written::new())
            }
        })
    }

    fn history<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<GenerationInfo>>> {
        self.with(move |s| Ok(s.get(session)?.history.clone()))
    }

    fn compaction_state<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<CompactionState>> {
        self.with(move |s| Ok(s.get(session)?.state.clone()))
    }

    fn load_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
    ) -> BoxFuture<'a, Result<Option<Message>>> {
        self.with(move |s| Ok(s.get(session)?.originals.get(handle).cloned()))
    }

    fn search_archived<'a>(
        &'a self,
        session: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>>> {
        self.with(move |s| {
            let sess = s.get(session)?;
            let wanted = words(query);
            let found = |m: &Message| {
                let have = words(&m.text());
                !wanted.is_empty() && wanted.iter().all(|w| have.contains(w))
            };
            let rows = sess
                .rows
                .iter()
                .filter(|r| !r.active && found(&r.message))
                .map(|r| SearchHit {
                    source: HitSource::Row(r.id),
                    message: stamped(r),
                });
            let originals = sess
                .originals
                .iter()
                .filter(|(_, m)| found(m))
                .map(|(h, m)| SearchHit {
                    source: HitSource::Original(h.clone()),
                    message: m.clone(),
                });
            Ok(rows.chain(originals).take(limit).collect())
        })
    }

    fn backend(&self) -> Option<Backend> {
        Some(MEMORY)
    }
}

// ---------------------------------------------------------------------------------------------
// The contract, for any store.

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.text().into_owned()).collect()
}

macro_rules! fails {
    ($e:expr, $p:pat) => {{
        let e = $e.await.unwrap_err();
        assert!(matches!(e, $p), "{e:?}");
    }};
}

fn send<T: Send>(t: T) -> T {
    t
}

/// What every [`TranscriptStore`] promises, driven through the trait object and its session
/// handle only.
async fn contract(store: Arc<dyn TranscriptStore>) {
    // Session ids.
    for bad in ["", "a\nb", &"x".repeat(257)] {
        fails!(store.create_session(bad), StoreError::InvalidSessionId);
    }
    fails!(store.open("nobody"), StoreError::UnknownSession { .. });
    fails!(
        store.session("nobody").load_active(),
        StoreError::UnknownSession { .. }
    );
    fails!(
        store.session("nobody").append(&mut [Message::user("x")]),
        StoreError::UnknownSession { .. }
    );
    assert_eq!(store.create_session("s1").await.unwrap().generation, 0);
    fails!(store.create_session("s1"), StoreError::SessionExists { .. });
    assert_eq!(store.open_or_create("s2").await.unwrap().id, "s2");
    assert_eq!(store.open_or_create("s2").await.unwrap().generation, 0);
    let listed: Vec<String> = store
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["s1", "s2"]);

    // Appends stamp row ids, skip what is stamped and leave the generation alone.
    let s1 = store.session("s1");
    assert_eq!(s1.id(), "s1");
    let mut messages = vec![
        Message::user("alpha apple"),
        Message::assistant("beta banana"),
        Message::user("gamma grape"),
    ];
    // The handle's futures are `Send` (an agent spawns them on a multi-threaded runtime).
    let ids = send(s1.append(&mut messages)).await.unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(
        messages
            .iter()
            .map(|m| m.row_id().unwrap())
            .collect::<Vec<_>>(),
        ids
    );
    assert!(s1.append(&mut messages).await.unwrap().is_empty());
    assert_eq!(s1.generation().await.unwrap(), 0);
    let mut late = vec![Message::user("late")];
    fails!(
        s1.append_at(7, &mut late),
        StoreError::StaleGeneration {
            expected: 7,
            actual: 0,
            ..
        }
    );
    assert_eq!(late[0].row_id(), None, "a refused append stamps nothing");
    let active = s1.load_active().await.unwrap();
    assert_eq!(texts(&active), texts(&messages));
    assert_eq!(active[2].row_id(), Some(ids[2]));

    // A commit archives what it replaced and inserts at its place, as one new generation.
    let (before, generation) = s1.load_active_with_generation().await.unwrap();
    let summary = marker::render(MarkerKind::Micro, Role::Assistant, "the first two");
    let edit = Edit::single(0..2, vec![summary]);
    let mut commit = Commit::from_edit(generation, &edit, &before)
        .unwrap()
        .with_label(PassLabel::new(GenerationKind::Micro).with_tokens(40, 10));
    let stale_copy = commit.clone();
    let new_ids = s1.archive_and_compact(&mut commit).await.unwrap();
    assert_eq!(new_ids.len(), 1);
    assert_eq!(commit.splices[0].insert[0].row_id(), Some(new_ids[0]));
    assert_eq!(s1.generation().await.unwrap(), 1);
    let active = s1.load_active().await.unwrap();
    assert_eq!(active.len(), 2);
    assert_eq!(active[0].marker_kind(), Some(MarkerKind::Micro));
    assert_eq!(active[0].row_id(), Some(new_ids[0]));
    assert_eq!(active[1].text(), "gamma grape");

    // Refused commits change nothing.
    let mut replay = stale_copy;
    fails!(
        s1.archive_and_compact(&mut replay),
        StoreError::StaleGeneration {
            expected: 0,
            actual: 1,
            ..
        }
    );
    let splice = |archive: Vec<RowId>| Commit {
        generation: 1,
        splices: vec![CommitSplice {
            archive,
            insert_after: None,
            insert: vec![Message::assistant("x")],
        }],
        label: PassLabel::default(),
    };
    fails!(
        s1.archive_and_compact(&mut splice(vec![ids[0]])),
        StoreError::RowNotActive { splice: 0, .. }
    );
    fails!(
        s1.archive_and_compact(&mut splice(vec![RowId::MAX])),
        StoreError::RowNotInSession { splice: 0, .. }
    );
    fails!(
        s1.archive_and_compact(&mut splice(vec![ids[2], new_ids[0]])),
        StoreError::NotContiguous { splice: 0 }
    );
    fails!(
        s1.archive_and_compact(&mut Commit {
            generation: 1,
            ..Commit::default()
        }),
        StoreError::EmptyCommit
    );
    assert_eq!(s1.generation().await.unwrap(), 1);
    assert_eq!(texts(&s1.load_active().await.unwrap()), texts(&active));

    // The archive keeps everything, in order.
    let all = s1.load_all().await.unwrap();
    assert_eq!(all.len(), 4);
    let archived: Vec<&StoredRow> = all.iter().filter(|r| !r.active).collect();
    assert_eq!(archived.iter().map(|r| r.id).collect::<Vec<_>>(), &ids[..2]);
    assert!(
        archived
            .iter()
            .all(|r| r.compacted && r.archived_generation == Some(1))
    );
    let summary_row = all.iter().find(|r| r.id == new_ids[0]).unwrap();
    assert_eq!(summary_row.pass_generation, Some(1));
    assert_eq!(summary_row.kind, Some(MarkerKind::Micro));
    // Ordering keys only order (an archived row may share its key with its replacement).
    assert!(all.windows(2).all(|w| w[0].position <= w[1].position));
    let rows = s1.load_rows(&[ids[2], RowId::MAX, ids[0]]).await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.id).collect::<Vec<_>>(),
        [ids[0], ids[2]]
    );

    // History, pinning, undo.
    let history = s1.history().await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].label.kind, GenerationKind::Created);
    assert_eq!(history[1].label.kind, GenerationKind::Micro);
    assert_eq!((history[1].archived, history[1].inserted), (2, 1));
    assert_eq!(history[1].label.tokens_after, Some(10));
    let (pinned, generation) = s1.set_pinned(1, ids[2], true).await.unwrap();
    assert_eq!(generation, 2);
    assert_ne!(pinned, ids[2], "a pin writes a copy");
    assert!(s1.load_active().await.unwrap()[1].is_pinned());
    assert_eq!(
        s1.set_pinned(2, pinned, true).await.unwrap(),
        (pinned, 2),
        "already pinned: nothing written"
    );
    fails!(
        s1.set_pinned(1, pinned, false),
        StoreError::StaleGeneration { .. }
    );
    fails!(s1.restore(1, 0), StoreError::StaleGeneration { .. });
    fails!(
        s1.restore(2, 9),
        StoreError::UnknownGeneration {
            generation: 9,
            current: 2
        }
    );
    assert_eq!(s1.restore(2, 2).await.unwrap(), Restored::new(2, 0, 0));
    assert_eq!(s1.restore(2, 0).await.unwrap(), Restored::new(3, 2, 3));
    let back = s1.load_active().await.unwrap();
    assert_eq!(texts(&back), texts(&messages));
    assert!(!back[2].is_pinned());
    let history = s1.history().await.unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[3].label.kind, GenerationKind::Restore);
    assert_eq!(history[3].restored_to, Some(0));

    // Durable state and trimmed originals.
    assert_eq!(
        s1.compaction_state().await.unwrap(),
        CompactionState::default()
    );
    let state = CompactionState {
        cooldown_until_ms: Some(1_000),
        ineffective_count: 2,
        extra: serde_json::json!({"k": 1}),
    };
    s1.set_compaction_state(&state).await.unwrap();
    assert_eq!(s1.compaction_state().await.unwrap(), state);
    assert_eq!(
        store.session("s2").compaction_state().await.unwrap(),
        CompactionState::default()
    );
    let original = Message::tool_result("call_1", "delta durian ".repeat(50));
    s1.store_original("h1", &original).await.unwrap();
    s1.store_original("h1", &original).await.unwrap();
    fails!(
        s1.store_original("h1", &Message::user("other")),
        StoreError::HandleConflict { .. }
    );
    fails!(s1.store_original("", &original), StoreError::InvalidHandle);
    let kept = s1.load_original("h1").await.unwrap().unwrap();
    assert_eq!(kept.to_wire_json(), original.to_wire_json());
    assert_eq!(s1.load_original("h2").await.unwrap(), None);

    // Search covers what compaction removed, in this session only.
    let hits = s1.search_archived("BANANA", 10).await.unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].source, HitSource::Row(ids[1]));
    assert_eq!(hits[0].message.text(), "beta banana");
    let hits = s1.search_archived("durian", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].source, HitSource::Original("h1".into()));
    assert!(
        s1.search_archived("banana durian", 10)
            .await
            .unwrap()
            .is_empty()
    );
    let s2 = store.session("s2");
    assert!(s2.search_archived("banana", 10).await.unwrap().is_empty());
    assert!(s2.load_rows(&ids).await.unwrap().is_empty());
    assert!(s2.load_active().await.unwrap().is_empty());
    assert_eq!(s2.load_original("h1").await.unwrap(), None);

    // The controls composed from the trait (`Session::diff`, `undo`, `pin_at`) work on any
    // store, this one included.
    let d = s1.diff(1).await.unwrap();
    assert_eq!((d.archived.len(), d.inserted.len()), (2, 1));
    fails!(
        s1.diff(9),
        StoreError::UnknownGeneration { generation: 9, .. }
    );
    fails!(
        s1.pin_at(back.len(), true),
        StoreError::IndexOutOfRange { .. }
    );
    let undone = s1.undo(None).await.unwrap();
    assert_eq!(
        (undone.from, undone.target, undone.restored.generation),
        (3, 2, 4)
    );
    assert!(s1.load_active().await.unwrap()[1].is_pinned());
    let unpinned = s1.pin_at(1, false).await.unwrap();
    assert_eq!((unpinned.generation_before, unpinned.generation), (4, 5));
    assert!(!s1.load_active().await.unwrap()[1].is_pinned());

    // Import is whole or nothing.
    let mut imported = vec![Message::user("one"), Message::assistant("two")];
    let ids3 = store.import_session("s3", &mut imported).await.unwrap();
    assert_eq!(ids3.len(), 2);
    assert_eq!(store.session("s3").load_active().await.unwrap().len(), 2);
    fails!(
        store.import_session("s1", &mut imported),
        StoreError::SessionExists { .. }
    );
    assert_eq!(store.session("s1").info().await.unwrap().generation, 5);
}

#[test]
fn an_in_memory_store_keeps_the_contract() {
    // A concrete store of its own gets the handle from `Session::new`.
    let own = MemoryStore::default();
    assert_eq!(compaction_store::Session::new(&own, "x").id(), "x");
    // It joins the backend table, and `Store::connect` reaches it by its URL scheme.
    MEMORY.register().unwrap();
    assert_eq!(Backend::for_url("memory:"), Some(MEMORY));
    let store = block_on(Store::connect("memory:")).unwrap();
    assert_eq!(store.backend(), Some(MEMORY));
    assert!(store.downcast_ref::<MemoryStore>().is_some());
    block_on(contract(store.into_dyn()));
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_keeps_the_same_contract() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        assert_eq!(store.backend(), Some(Backend::SQLITE));
        contract(store.into_dyn()).await;
    });
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_keeps_the_same_contract() {
    let Some(url) = test_support::postgres_only_url("postgres_keeps_the_same_contract") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let options = StoreOptions {
            postgres_schema: Some(format!("hermes_t_contract_{}", std::process::id())),
            ..Default::default()
        };
        let store = Store::connect_with(&url, &options).await.unwrap();
        assert_eq!(store.backend(), Some(Backend::POSTGRES));
        contract(store.clone().into_dyn()).await;
        if let Some(pg) = store.downcast_ref::<compaction_store::PostgresStore>() {
            pg.drop_schema().await.unwrap();
        }
    });
}

/// Without a runtime: a URL is sorted by the backend table before anything connects, so a
/// backend left out of the build names its feature and an unknown scheme lists the known ones,
/// neither quoting the URL.
#[test]
fn urls_are_sorted_by_the_backend_table() {
    for backend in Backend::all() {
        assert!(!backend.schemes().is_empty());
        for scheme in backend.schemes() {
            let url = format!("{scheme}://user:secret@127.0.0.1:1/x");
            assert_eq!(Backend::for_url(&url), Some(backend));
            if backend.is_compiled() {
                continue;
            }
            let e = block_on(Store::connect(&url)).unwrap_err();
            assert!(
                matches!(e, StoreError::BackendDisabled { backend: b } if b == backend.name()),
                "{e:?}"
            );
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
    for url in ["mysql://user:secret@h/db", "no-scheme", "", "://x"] {
        let e = block_on(Store::connect(url)).unwrap_err();
        assert!(
            matches!(e, StoreError::UnsupportedUrl { .. }),
            "{url}: {e:?}"
        );
        let text = e.to_string();
        assert!(text.contains("sqlite:, postgres:, postgresql:"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }
}
