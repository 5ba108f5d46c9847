//! Bad input: clear errors, nothing changed.

use compaction_core::{Edit, Message};
use compaction_store::{Commit, CommitSplice, CompactionState, Store, StoreError};

use crate::common::{conversation, snapshot};

/// Recognizes the expected error.
type Check = fn(&StoreError) -> bool;

fn is_unknown<T: std::fmt::Debug>(r: Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::UnknownSession { ref session }) if session == "nope")
}

on_both_backends! {
    async fn unknown_session_everywhere(b) {
        let st = &b.store;
        assert!(is_unknown(st.open("nope").await));
        assert!(is_unknown(st.generation("nope").await));
        assert!(is_unknown(st.load_active("nope").await));
        assert!(is_unknown(st.load_all("nope").await));
        assert!(is_unknown(st.append("nope", &mut conversation(1)).await));
        assert!(is_unknown(st.append("nope", &mut []).await));
        assert!(is_unknown(st.compaction_state("nope").await));
        assert!(is_unknown(st.set_compaction_state("nope", &CompactionState::default()).await));
        let mut c = Commit {
            generation: 0,
            splices: vec![CommitSplice { insert: vec![Message::user("x")], ..Default::default() }],
            ..Default::default()
        };
        assert!(is_unknown(st.archive_and_compact("nope", &mut c).await));
        assert!(st.list_sessions().await.unwrap().is_empty(), "nothing was created");
    }
}

on_both_backends! {
    async fn invalid_ids_and_duplicates(b) {
        for bad in ["", "a\u{0}b", "tab\there", &"x".repeat(300)] {
            assert!(matches!(b.store.create_session(bad).await, Err(StoreError::InvalidSessionId)));
        }
        b.store.create_session("dup").await.unwrap();
        assert!(matches!(
            b.store.create_session("dup").await,
            Err(StoreError::SessionExists { ref session }) if session == "dup"
        ));
        assert_eq!(b.store.list_sessions().await.unwrap().len(), 1);
    }
}

on_both_backends! {
    /// Rows of another session, archived rows, gaps, wrong order, an empty commit and a
    /// stale generation: each refused with its own error, nothing changed.
    async fn bad_commits_change_nothing(b) {
        let st = &b.store;
        st.create_session("mine").await.unwrap();
        st.create_session("theirs").await.unwrap();
        let mut mine = conversation(3);
        let mut theirs = conversation(2);
        st.append("mine", &mut mine).await.unwrap();
        st.append("theirs", &mut theirs).await.unwrap();
        // Archive something once, so there are archived rows to name.
        let mut first = Commit::from_edit(0, &Edit::single(2..5, vec![]), &mine).unwrap();
        st.archive_and_compact("mine", &mut first).await.unwrap();
        let archived = mine[2].row_id().unwrap();
        let ours = |i: usize| mine[i].row_id().unwrap();

        let mine_rows = snapshot(&st.load_all("mine").await.unwrap());
        let their_rows = snapshot(&st.load_all("theirs").await.unwrap());
        let splice = |archive: Vec<i64>| CommitSplice { archive, insert: vec![Message::user("s")], ..Default::default() };
        let cases: Vec<(Commit, Check)> = vec![
            (Commit { generation: 1, splices: vec![splice(vec![theirs[1].row_id().unwrap()])], ..Default::default() },
             |e| matches!(e, StoreError::RowNotInSession { splice: 0, .. })),
            (Commit { generation: 1, splices: vec![splice(vec![999_999])], ..Default::default() },
             |e| matches!(e, StoreError::RowNotInSession { row: 999_999, .. })),
            (Commit { generation: 1, splices: vec![splice(vec![ours(1), archived])], ..Default::default() },
             |e| matches!(e, StoreError::RowNotActive { .. })),
            (Commit { generation: 1, splices: vec![splice(vec![ours(5), ours(7)])], ..Default::default() },
             |e| matches!(e, StoreError::NotContiguous { splice: 0 })),
            (Commit { generation: 1, splices: vec![splice(vec![ours(6), ours(5)])], ..Default::default() },
             |e| matches!(e, StoreError::NotContiguous { splice: 0 })),
            (Commit { generation: 1, splices: vec![splice(vec![ours(7)]), splice(vec![ours(5)])], ..Default::default() },
             |e| matches!(e, StoreError::SplicesOutOfOrder { splice: 1 })),
            (Commit { generation: 1, splices: vec![CommitSplice { insert_after: Some(archived), insert: vec![Message::user("i")], ..Default::default() }], ..Default::default() },
             |e| matches!(e, StoreError::RowNotActive { .. })),
            (Commit { generation: 1, splices: vec![CommitSplice::default(), CommitSplice::default()], ..Default::default() },
             |e| matches!(e, StoreError::EmptyCommit)),
            (Commit { generation: 1, splices: vec![], ..Default::default() },
             |e| matches!(e, StoreError::EmptyCommit)),
            (Commit { generation: 0, splices: vec![splice(vec![ours(5)])], ..Default::default() },
             |e| matches!(e, StoreError::StaleGeneration { expected: 0, actual: 1, .. })),
        ];
        for (i, (mut commit, expected)) in cases.into_iter().enumerate() {
            let err = st.archive_and_compact("mine", &mut commit).await.unwrap_err();
            assert!(expected(&err), "case {i}: {err:?}");
            assert!(!err.to_string().contains("request"), "errors carry no transcript text");
            assert_eq!(snapshot(&st.load_all("mine").await.unwrap()), mine_rows, "case {i}");
            assert_eq!(snapshot(&st.load_all("theirs").await.unwrap()), their_rows, "case {i}");
            assert_eq!(st.generation("mine").await.unwrap(), 1, "case {i}");
            assert_eq!(st.generation("theirs").await.unwrap(), 0, "case {i}");
        }
        // A commit planned against messages that were never appended cannot be built.
        let mut unsaved = mine.clone();
        unsaved.push(Message::user("not flushed"));
        let e = Commit::from_edit(1, &Edit::single(5..unsaved.len(), vec![]), &unsaved).unwrap_err();
        assert!(matches!(e, StoreError::MissingRowId { index } if index == unsaved.len() - 1), "{e:?}");
    }
}

#[tokio::test]
async fn unsupported_urls_name_only_the_scheme() {
    let e = Store::connect("mysql://user:secret@host/db")
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::UnsupportedUrl { ref scheme, .. } if scheme == "mysql"));
    assert!(!e.to_string().contains("secret"));
    let e = Store::connect("no-scheme-here").await.unwrap_err();
    assert!(matches!(e, StoreError::UnsupportedUrl { .. }));
    let options = compaction_store::StoreOptions {
        postgres_schema: Some("Bad-Name".into()),
        ..Default::default()
    };
    let e = Store::connect_with("postgres://127.0.0.1:1/x", &options)
        .await
        .unwrap_err();
    #[cfg(feature = "postgres")]
    assert!(matches!(e, StoreError::InvalidSchemaName), "{e:?}");
    // A URL whose backend is compiled out names the feature to enable, not the URL.
    #[cfg(not(feature = "postgres"))]
    {
        assert!(
            matches!(
                e,
                StoreError::BackendDisabled {
                    backend: "postgres"
                }
            ),
            "{e:?}"
        );
        let text = Store::connect("postgresql://user:secret@127.0.0.1:1/x")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("`postgres` feature") && !text.contains("secret"),
            "{text}"
        );
    }
}

on_both_backends! {
    /// `append_at` writes only while the session is at the generation named: a writer whose
    /// view is stale (another writer compacted, or it resumed from an old snapshot) is refused
    /// and nothing is written or stamped, also when there is nothing to write.
    async fn append_at_refuses_a_stale_generation(b) {
        let st = &b.store;
        st.create_session("s").await.unwrap();
        let mut first = conversation(2);
        assert_eq!(st.append_at("s", 0, &mut first).await.unwrap().len(), first.len());
        let edit = Edit::single(0..1, vec![]);
        let mut commit = Commit::from_edit(0, &edit, &first).unwrap();
        st.archive_and_compact("s", &mut commit).await.unwrap();
        let before = snapshot(&st.load_all("s").await.unwrap());
        for stale in [0, 2, u64::MAX] {
            let mut more = vec![Message::user("late"), Message::assistant("later")];
            let e = st.append_at("s", stale, &mut more).await.unwrap_err();
            assert!(
                matches!(e, StoreError::StaleGeneration { expected, actual: 1, ref session } if expected == stale && session == "s"),
                "{stale}: {e:?}"
            );
            assert!(more.iter().all(|m| m.row_id().is_none()), "{stale}: nothing stamped");
            assert_eq!(snapshot(&st.load_all("s").await.unwrap()), before, "{stale}");
            let e = st.append_at("s", stale, &mut first).await.unwrap_err();
            assert!(matches!(e, StoreError::StaleGeneration { .. }), "{stale}, nothing new: {e:?}");
        }
        let mut more = vec![Message::user("on time")];
        assert_eq!(st.append_at("s", 1, &mut more).await.unwrap().len(), 1);
        assert!(more[0].row_id().is_some());
        assert_eq!(st.generation("s").await.unwrap(), 1, "appends leave the generation");
        assert!(matches!(st.append_at("nope", 0, &mut more).await, Err(StoreError::UnknownSession { .. })));
    }
}
