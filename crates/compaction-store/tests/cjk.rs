//! Search over Chinese, Japanese and Korean text: runs of CJK characters are indexed as
//! overlapping bigrams followed by their single characters, and a query run is the phrase of
//! its bigrams (or one character), so exactly the texts holding a query's characters
//! consecutively are found, whatever the number of characters.

#![allow(clippy::print_stderr)]

use compaction_core::Message;
use std::slice::from_ref;

use compaction_store::{HitSource, Store, TranscriptStore};

use crate::common::{archived_session, conversation, tool_turn};

const CHINESE: &str = "pg_dump 数据库迁移失败：连接超时（错误码 57P01）。结论：慢";
const JAPANESE: &str = "データベースの移行に失敗しました。再試行してください";
const KOREAN: &str = "데이터베이스 마이그레이션 실패: 연결 시간 초과";

/// A session whose tool turns (Chinese, Japanese, Korean output) are archived behind a micro
/// marker; the last message, Chinese too, stays active. Returns the archived outputs' row
/// ids in that order.
async fn cjk_session(store: &dyn TranscriptStore, session: &str, tag: &str) -> Vec<i64> {
    let mut messages = conversation(1);
    for (i, output) in [CHINESE, JAPANESE, KOREAN].iter().enumerate() {
        messages.extend(tool_turn(
            &format!("t{i}"),
            "migrate",
            &format!("{output} {tag}"),
        ));
    }
    messages.push(Message::user("下一步计划"));
    let messages = archived_session(store, session, messages, 5..11).await;
    [6, 8, 10]
        .iter()
        .map(|&i| messages[i].row_id().unwrap())
        .collect()
}

/// The sources of a search's hits.
async fn sources(store: &dyn TranscriptStore, session: &str, query: &str) -> Vec<HitSource> {
    let hits = store.search_archived(session, query, 10).await.unwrap();
    hits.into_iter().map(|h| h.source).collect()
}

/// The texts of the archived tool outputs of [`cjk_session`], in that order.
const TEXTS: [&str; 3] = [CHINESE, JAPANESE, KOREAN];

/// Every substring (one or more characters) of the runs of non-ASCII letters and digits of
/// `text`: the CJK runs of this file's texts.
fn cjk_substrings(text: &str) -> Vec<String> {
    let mut subs = Vec::new();
    let runs = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.contains(|c: char| c.is_ascii()));
    for run in runs {
        let chars: Vec<char> = run.chars().collect();
        for i in 0..chars.len() {
            for j in i + 1..=chars.len() {
                subs.push(chars[i..j].iter().collect());
            }
        }
    }
    subs
}

/// The sources of a search's hits, sorted.
async fn sorted_sources(store: &dyn TranscriptStore, session: &str, query: &str) -> Vec<HitSource> {
    let mut found = sources(store, session, query).await;
    found.sort_by_key(|h| format!("{h:?}"));
    found
}

on_both_backends! {
    /// Every substring of one or more characters of an archived CJK text finds exactly the
    /// texts holding it, in each of the three languages; characters not in that order do not;
    /// results stay in their session; ASCII words next to CJK text are found as before.
    async fn cjk_substrings_find_archived_text(b) {
        let s = &*b.store;
        let ids = cjk_session(s, "zh", "alpha").await;
        let other = cjk_session(s, "other", "beta").await;
        let (zh, ja, ko) = (HitSource::Row(ids[0]), HitSource::Row(ids[1]), HitSource::Row(ids[2]));
        let rows = [zh.clone(), ja.clone(), ko.clone()];

        let mut checked = 0;
        for text in TEXTS {
            for sub in cjk_substrings(text) {
                let mut expected: Vec<HitSource> = TEXTS
                    .iter()
                    .zip(&rows)
                    .filter(|(t, _)| t.contains(sub.as_str()))
                    .map(|(_, row)| row.clone())
                    .collect();
                expected.sort_by_key(|h| format!("{h:?}"));
                assert_eq!(sorted_sources(s, "zh", &sub).await, expected, "{sub}");
                checked += 1;
            }
        }
        assert!(checked > 250, "{checked} substrings");
        for query in ["数据库迁移失败：连接超时", "57P01", "시간 초과", "データベースの移行"] {
            let expected = rows.iter().zip(TEXTS).find(|(_, t)| t.contains(query)).unwrap().0;
            assert_eq!(sources(s, "zh", query).await, from_ref(expected), "{query}");
        }
        // A character of a longer run, found in every text holding it.
        assert_eq!(sources(s, "zh", "慢").await, from_ref(&zh));
        assert_eq!(sources(s, "zh", "库").await, from_ref(&zh));
        assert_eq!(sources(s, "zh", "베").await, from_ref(&ko));
        assert_eq!(sorted_sources(s, "zh", "失").await, [zh.clone(), ja.clone()]);
        // Characters that are not consecutive in the text, or not there at all.
        for query in ["数据表", "失败了", "迁失", "移動", "성공", "데베", "计划", "划", "据迁"] {
            assert!(sources(s, "zh", query).await.is_empty(), "{query}");
        }
        // A CJK run glued to ASCII, ASCII alone, ASCII and CJK together.
        assert_eq!(sources(s, "zh", "pg_dump数据库").await, from_ref(&zh));
        assert_eq!(sources(s, "zh", "PG_DUMP").await, from_ref(&zh));
        assert_eq!(sources(s, "zh", "alpha 失败").await, from_ref(&zh));
        assert_eq!(sources(s, "zh", "alpha 败").await, from_ref(&zh));
        assert!(sources(s, "zh", "beta 败").await.is_empty());
        assert_eq!(sources(s, "zh", "migrate").await.len(), 3, "the three tool calls");
        // The same text in another session is never returned.
        assert_eq!(sources(s, "other", "数据库").await, [HitSource::Row(other[0])]);
        assert_eq!(sources(s, "other", "慢").await, [HitSource::Row(other[0])]);
        assert!(sources(s, "zh", "beta").await.is_empty());
        assert!(sources(s, "other", "alpha").await.is_empty());

        // A trimmed original in Japanese is found as soon as it is stored, and only once.
        let original = Message::tool_result("t9", "ログ：インデックスの再構築が完了");
        s.store_original("zh", "trim-00000000000000c1", &original).await.unwrap();
        let handle = HitSource::Original("trim-00000000000000c1".into());
        assert_eq!(sources(s, "zh", "再構築").await, from_ref(&handle));
        assert_eq!(sources(s, "zh", "インデックス").await, from_ref(&handle));
        assert_eq!(sources(s, "zh", "築").await, [handle]);
        assert!(sources(s, "other", "再構築").await.is_empty());
    }
}

on_both_backends! {
    /// A query's bigrams standing apart in a text (`数据` and `据库`, never `数据库`) do not
    /// find it: the bigrams of a run must appear consecutively, in order.
    async fn cjk_bigrams_apart_do_not_match(b) {
        let s = &*b.store;
        s.create_session("apart").await.unwrap();
        let original = Message::tool_result("c", "数据表已更新，证据库为空。데이 이터");
        s.store_original("apart", "trim-00000000000000a1", &original).await.unwrap();
        let handle = HitSource::Original("trim-00000000000000a1".into());
        for query in ["数据库", "据库数", "表已证", "데이터", "이이"] {
            assert!(sources(s, "apart", query).await.is_empty(), "{query}");
        }
        for query in ["数据", "据库", "证据库", "数据表", "据", "데이", "이터", "이"] {
            assert_eq!(sources(s, "apart", query).await, from_ref(&handle), "{query}");
        }
        // Each half alone still finds it, and both together as two words.
        assert_eq!(sources(s, "apart", "数据 据库").await, [handle]);
    }
}

/// The words a backend's search index holds for the session, sorted, each once.
async fn index_words(store: &Store, session: &str) -> Vec<String> {
    let mut words: Vec<String> = match crate::common::engine(store) {
        crate::common::Engine::Sqlite(sq) => {
            let mut conn = sq.pool().acquire().await.unwrap();
            sqlx::query(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.hermes_words \
                 USING fts5vocab(main, hermes_search, instance)",
            )
            .execute(&mut *conn)
            .await
            .unwrap();
            sqlx::query_scalar(
                "SELECT w.term FROM temp.hermes_words w \
                 JOIN hermes_search_docs d ON d.id = w.doc WHERE d.session_id = $1",
            )
            .bind(session)
            .fetch_all(&mut *conn)
            .await
            .unwrap()
        }
        #[cfg(feature = "postgres")]
        crate::common::Engine::Postgres(pg) => sqlx::query_scalar(
            "SELECT u.lexeme FROM hermes_search s, unnest(s.tsv) u WHERE s.session_id = $1",
        )
        .bind(session)
        .fetch_all(pg.pool())
        .await
        .unwrap(),
    };
    words.sort();
    words.dedup();
    words
}

on_both_backends! {
    /// Each bigram and each unigram the store writes is one word of the backend's index,
    /// unchanged (FTS5 `unicode61 remove_diacritics 2`, PostgreSQL `to_tsvector('simple')`),
    /// and each query bigram or character one query word (an FTS5 phrase, a `to_tsquery`
    /// operand): over Han (unified, extensions A, B, E, G, compatibility), kana with voiced
    /// marks and the prolonged sound mark (halfwidth too), Hangul syllables and jamo,
    /// iteration marks, ideographic numerals, Bopomofo.
    async fn backends_keep_each_bigram_and_unigram_one_word(b) {
        let s = &*b.store;
        s.create_session("w").await.unwrap();
        let text = "数据 㐀㐁 豈更 𠀀𠀁 𫝀𫝁 𰀀𰀁 鿕鿖 データ ガギ ﾃﾞｰ 데이 ᄀᄁ ㄱㄲ 人々 〇一 ㄅㄆ 〡〢 ABC";
        let original = Message::tool_result("c", text);
        s.store_original("w", "trim-0000000000000077", &original).await.unwrap();
        // "データ" is written as "デー ータ デ ー タ", "ﾃﾞｰ" as "ﾃﾞ ﾞｰ ﾃ ﾞ ｰ".
        let bigrams = [
            "〇一", "〡〢", "ガギ", "デー", "ータ", "ㄅㄆ", "ㄱㄲ", "㐀㐁", "人々", "数据",
            "豈更", "鿕鿖", "데이", "ᄀᄁ", "ﾃﾞ", "ﾞｰ", "𠀀𠀁", "𫝀𫝁", "𰀀𰀁",
        ];
        let unigrams: Vec<String> = text
            .chars()
            .filter(|c| c.is_alphanumeric() && !c.is_ascii())
            .map(String::from)
            .collect();
        let mut expected: Vec<String> = bigrams.iter().map(|w| w.to_string()).collect();
        expected.extend(unigrams.iter().cloned());
        expected.push("abc".into());
        expected.sort();
        expected.dedup();
        assert_eq!(expected.len(), bigrams.len() + 1 + 36);
        assert_eq!(index_words(&b.store, "w").await, expected);
        let handle = HitSource::Original("trim-0000000000000077".into());
        for word in expected.iter().filter(|w| w.as_str() != "abc") {
            assert_eq!(sources(s, "w", word).await, from_ref(&handle), "{word}");
        }
        // A phrase of two bigrams from different runs is not there.
        assert!(sources(s, "w", "数据㐀").await.is_empty());
        assert_eq!(sources(s, "w", "データ").await, [handle]);
    }
}

/// Fills a database at schema version 2 (`$pool`) the way that version left it: sessions
/// `old` and `next`, archived rows and a trimmed original marked indexed, and their index
/// documents written with `$index` from schema 2's text (each CJK run one word). Closes the
/// pool; returns the row ids and the original.
macro_rules! old_index_fixture {
    ($pool:expr, $index:ident) => {{
        let pool = $pool;
        sqlx::query(
            "INSERT INTO hermes_sessions (id, created_at, updated_at) \
             VALUES ('old', 0, 0), ('next', 0, 0)",
        )
        .execute(&pool)
        .await
        .unwrap();
        let rows = [
            ("old", Message::tool_result("c1", OLD_ROW), false),
            ("old", Message::user("live 数据库 okapi"), true),
            ("next", Message::tool_result("c2", OLD_ROW), false),
        ];
        let mut ids = Vec::new();
        for (pos, (session, m, active)) in rows.iter().enumerate() {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO hermes_messages (session_id, pos, role, kind, body, active, \
                 compacted, generation, created_at, search_indexed) \
                 VALUES ($1, $2, $3, 'normal', $4, $5, $6, 0, 0, $6) RETURNING id",
            )
            .bind(*session)
            .bind(pos as i64)
            .bind(m.role().as_str())
            .bind(m.to_wire_json().into_bytes())
            .bind(*active)
            .bind(!*active)
            .fetch_one(&pool)
            .await
            .unwrap();
            ids.push(id);
        }
        let original = Message::tool_result("c3", OLD_ORIGINAL);
        sqlx::query(
            "INSERT INTO hermes_originals (session_id, handle, body, created_at) \
             VALUES ('old', 'trim-00000000000000d0', $1, 0)",
        )
        .bind(original.to_wire_json().into_bytes())
        .execute(&pool)
        .await
        .unwrap();
        // What schema 2 indexed: each CJK run as one word.
        let old_text = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_alphanumeric() { c } else { ' ' })
                .collect()
        };
        $index(&pool, "old", Some(ids[0]), None, &old_text(OLD_ROW)).await;
        $index(&pool, "next", Some(ids[2]), None, &old_text(OLD_ROW)).await;
        $index(
            &pool,
            "old",
            None,
            Some("trim-00000000000000d0"),
            &old_text(OLD_ORIGINAL),
        )
        .await;
        pool.close().await;
        (ids, original)
    }};
}

const OLD_ROW: &str = "okapi 数据库迁移失败";
const OLD_ORIGINAL: &str = "okapi 索引重建完成";

/// Schema versions 1 and 2 of one backend, as recorded before migration 3 existed.
fn migrator_v2(sql: [&'static str; 2]) -> sqlx::migrate::Migrator {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let names = [
        "sessions and messages",
        "recall: originals and search index",
    ];
    let steps = sql
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (sql, name))| {
            Migration::new(
                i as i64 + 1,
                name.into(),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    let mut m = Migrator::with_migrations(steps);
    m.dangerous_set_table_name("hermes_schema_migrations");
    m
}

async fn sqlite_index(
    pool: &sqlx::SqlitePool,
    session: &str,
    row: Option<i64>,
    handle: Option<&str>,
    text: &str,
) {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO hermes_search_docs (session_id, row_id, handle) VALUES ($1, $2, $3) \
         RETURNING id",
    )
    .bind(session)
    .bind(row)
    .bind(handle)
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO hermes_search (rowid, body_text) VALUES ($1, $2)")
        .bind(id)
        .bind(text)
        .execute(pool)
        .await
        .unwrap();
}

#[cfg(feature = "postgres")]
async fn postgres_index(
    pool: &sqlx::PgPool,
    session: &str,
    row: Option<i64>,
    handle: Option<&str>,
    text: &str,
) {
    sqlx::query(
        "INSERT INTO hermes_search (session_id, row_id, handle, tsv) \
         VALUES ($1, $2, $3, to_tsvector('simple', $4))",
    )
    .bind(session)
    .bind(row)
    .bind(handle)
    .bind(text)
    .execute(pool)
    .await
    .unwrap();
}

/// How many index documents a session has.
async fn doc_count(store: &Store, session: &str) -> i64 {
    match crate::common::engine(store) {
        crate::common::Engine::Sqlite(sq) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM hermes_search_docs WHERE session_id = $1")
                .bind(session)
                .fetch_one(sq.pool())
                .await
                .unwrap()
        }
        #[cfg(feature = "postgres")]
        crate::common::Engine::Postgres(pg) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM hermes_search WHERE session_id = $1")
                .bind(session)
                .fetch_one(pg.pool())
                .await
                .unwrap()
        }
    }
}

/// A database whose search index was written before migration 3 (CJK runs as single words,
/// archived rows and originals marked indexed) is rebuilt: after the upgrade, the next search
/// of each session indexes its archived rows and trimmed originals again, each once, with
/// bigrams and unigrams, and finds them by a CJK substring. Runs on SQLite, and on PostgreSQL when
/// `HERMES_TEST_DATABASE_URL` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_written_before_migration_3_is_rebuilt() {
    let mut upgraded = Vec::new();

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v2.db");
    let connect = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&file)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(connect).await.unwrap();
    migrator_v2([
        include_str!("../migrations/sqlite/0001_init.sql"),
        include_str!("../migrations/sqlite/0002_recall.sql"),
    ])
    .run(&pool)
    .await
    .unwrap();
    let (ids, original) = old_index_fixture!(pool.clone(), sqlite_index);
    let url = format!("sqlite:{}", file.display());
    let store = Store::connect(&url).await.unwrap();
    upgraded.push((store, ids, original));

    #[cfg(feature = "postgres")]
    if let Some(url) = crate::common::postgres_url("index_written_before_migration_3_is_rebuilt") {
        let schema = format!("hermes_t_premigration3_{}", std::process::id());
        let admin = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
        )))
        .execute(&admin)
        .await
        .unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .execute(&admin)
            .await
            .unwrap();
        admin.close().await;
        let connect = url
            .parse::<sqlx::postgres::PgConnectOptions>()
            .unwrap()
            .options([("search_path", schema.as_str())]);
        let pool = sqlx::PgPool::connect_with(connect).await.unwrap();
        migrator_v2([
            include_str!("../migrations/postgres/0001_init.sql"),
            include_str!("../migrations/postgres/0002_recall.sql"),
        ])
        .run(&pool)
        .await
        .unwrap();
        let (ids, original) = old_index_fixture!(pool.clone(), postgres_index);
        let options = compaction_store::StoreOptions {
            postgres_schema: Some(schema),
            ..Default::default()
        };
        let store = Store::connect_with(&url, &options).await.unwrap();
        upgraded.push((store, ids, original));
    }
    #[cfg(not(feature = "postgres"))]
    let _ = crate::common::postgres_url("index_written_before_migration_3_is_rebuilt");

    for (store, ids, original) in upgraded {
        eprintln!(
            "index_written_before_migration_3_is_rebuilt: checking {:?}",
            store.backend()
        );
        assert_eq!(
            doc_count(&store, "old").await,
            0,
            "migration 3 empties the index"
        );
        let row = HitSource::Row(ids[0]);
        let trimmed = HitSource::Original("trim-00000000000000d0".into());
        assert_eq!(sources(&*store, "old", "数据库").await, from_ref(&row));
        assert_eq!(sources(&*store, "old", "迁移失败").await, from_ref(&row));
        assert_eq!(sources(&*store, "old", "败").await, from_ref(&row));
        let hits = store.search_archived("old", "索引重建", 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].source, trimmed);
        assert_eq!(hits[0].message.to_wire_json(), original.to_wire_json());
        // ASCII words still match; each document is in the index once.
        let mut both = sources(&*store, "old", "okapi").await;
        both.sort_by_key(|h| matches!(h, HitSource::Original(_)));
        assert_eq!(both, [row.clone(), trimmed.clone()]);
        assert_eq!(doc_count(&store, "old").await, 2);
        assert_eq!(sources(&*store, "old", "okapi").await.len(), 2);
        assert_eq!(doc_count(&store, "old").await, 2);
        // The other session is rebuilt by its own search, and keeps to itself.
        assert_eq!(doc_count(&store, "next").await, 0);
        assert_eq!(
            sources(&*store, "next", "数据库").await,
            [HitSource::Row(ids[2])]
        );
        assert_eq!(store.load_active("old").await.unwrap().len(), 1);
        // An original stored after the upgrade is indexed at once, and not again later.
        let fresh = Message::tool_result("c4", "新しい原本");
        store
            .store_original("old", "trim-00000000000000d1", &fresh)
            .await
            .unwrap();
        assert_eq!(doc_count(&store, "old").await, 3);
        assert_eq!(sources(&*store, "old", "原本").await.len(), 1);
        assert_eq!(doc_count(&store, "old").await, 3);
        #[cfg(feature = "postgres")]
        if let crate::common::Engine::Postgres(pg) = crate::common::engine(&store) {
            pg.drop_schema().await.unwrap();
        }
    }
}

on_both_backends! {
    /// A CJK run standing far into a long text (past the positions a PostgreSQL tsvector
    /// keeps: 16,383 words, 255 occurrences of one word) is still found, and a short text
    /// still needs the run itself, not its pairs apart.
    async fn a_run_far_into_a_long_text_is_found(b) {
        let s = &*b.store;
        s.create_session("long").await.unwrap();
        // 20,000 distinct words, then the run: its pairs sit past position 16,383.
        let filler: String = (0..20_000).map(|i| format!("w{i} ")).collect();
        let long = Message::tool_result("c1", format!("{filler}迁移数据库失败"));
        s.store_original("long", "trim-00000000000000a1", &long).await.unwrap();
        // One word 300 times, then the run.
        let repeated = Message::tool_result("c2", format!("{}据库 数据库迁移", "数据 ".repeat(300)));
        s.store_original("long", "trim-00000000000000a2", &repeated).await.unwrap();
        // Short: the pairs of 数据库 apart, never the run.
        let apart = Message::tool_result("c3", "数据表 证据库");
        s.store_original("long", "trim-00000000000000a3", &apart).await.unwrap();
        let handle = |h: &str| HitSource::Original(h.into());
        assert_eq!(
            sorted_sources(s, "long", "数据库失败").await,
            [handle("trim-00000000000000a1")]
        );
        assert_eq!(
            sorted_sources(s, "long", "数据库迁移").await,
            [handle("trim-00000000000000a2")]
        );
        let found = sorted_sources(s, "long", "数据库").await;
        assert!(!found.contains(&handle("trim-00000000000000a3")), "{found:?}");
        assert!(found.contains(&handle("trim-00000000000000a1")), "{found:?}");
    }
}
