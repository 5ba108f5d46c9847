//! Backend-independent row helpers: encoding messages into column values and back, ordering
//! keys, SQL text built from placeholders only.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use compaction_core::{MarkerKind, Message, Meta};

use crate::{FaultPoint, Result, RowId, StoreError};

/// Distance between the ordering keys of consecutive appended rows. A commit places its rows
/// between two neighbours by subdividing the gap, so 32 bits leave room for 32 nested
/// subdivisions and 2^31 appends per session.
pub(crate) const STRIDE: i64 = 1 << 32;

/// Rows per multi-row INSERT (5 bound values per row, plus 3 shared). Measured on SQLite:
/// 50 rows per statement append about 5x faster than 500 (per-statement cost grows faster
/// than linearly with the number of bound values).
pub(crate) const INSERT_CHUNK: usize = 50;

/// One message ready to insert.
pub(crate) struct Prepared {
    pub role: String,
    pub kind: &'static str,
    pub body: Vec<u8>,
    pub meta: Option<String>,
}

/// Column values of a message: the wire body, the kind, and whatever metadata is left once
/// row id and marker kind (held in their own columns) are taken out.
pub(crate) fn prepare(m: &Message) -> Result<Prepared> {
    let meta = match m.meta() {
        Some(meta) => {
            let mut rest = meta.clone();
            rest.row_id = None;
            rest.marker = None;
            if rest.is_empty() {
                None
            } else {
                Some(serde_json::to_string(&rest).map_err(StoreError::Meta)?)
            }
        }
        None => None,
    };
    Ok(Prepared {
        role: m.role().as_str().to_owned(),
        kind: kind_name(m.marker_kind()),
        body: m.to_wire_json().into_bytes(),
        meta,
    })
}

/// Rebuilds a message from its columns and stamps row id and marker kind.
pub(crate) fn decode(
    id: RowId,
    kind: &str,
    body: Vec<u8>,
    meta: Option<String>,
) -> Result<(Message, Option<MarkerKind>)> {
    let corrupt = |reason: String| StoreError::CorruptRow { row: id, reason };
    let kind = parse_kind(kind).ok_or_else(|| corrupt("unknown kind".into()))?;
    let text = String::from_utf8(body).map_err(|_| corrupt("body is not UTF-8".into()))?;
    let mut m = Message::from_json(&text).map_err(|e| corrupt(e.to_string()))?;
    if let Some(meta) = meta {
        let meta: Meta =
            serde_json::from_str(&meta).map_err(|_| corrupt("metadata is not valid".into()))?;
        *m.meta_mut() = meta;
    }
    let stamp = m.meta_mut();
    stamp.row_id = Some(id);
    stamp.marker = kind;
    Ok((m, kind))
}

pub(crate) fn kind_name(kind: Option<MarkerKind>) -> &'static str {
    match kind {
        None => "normal",
        Some(k) => k.as_str(),
    }
}

fn parse_kind(s: &str) -> Option<Option<MarkerKind>> {
    Some(match s {
        "normal" => None,
        "batch" => Some(MarkerKind::Batch),
        "micro" => Some(MarkerKind::Micro),
        "progress" => Some(MarkerKind::Progress),
        "continuation" => Some(MarkerKind::Continuation),
        _ => return None,
    })
}

/// `m` ordering keys evenly spaced strictly between `lo` and `hi`.
pub(crate) fn spread(lo: i64, hi: i64, m: usize, splice: usize) -> Result<Vec<i64>> {
    let step = (i128::from(hi) - i128::from(lo)) / (m as i128 + 1);
    if step < 1 {
        return Err(StoreError::KeysExhausted { splice });
    }
    Ok((1..=m as i128)
        .map(|i| (i128::from(lo) + step * i) as i64)
        .collect())
}

/// Unix time in milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(crate) fn check_session_id(session: &str) -> Result<()> {
    match session_id_problem(session) {
        Some(_) => Err(StoreError::InvalidSessionId),
        None => Ok(()),
    }
}

/// Why no store accepts `id` as a session id ([`StoreError::InvalidSessionId`]), or `None`
/// when it is one: 1-256 bytes without control characters.
///
/// ```
/// use compaction_store::session_id_problem;
///
/// assert_eq!(session_id_problem("s-1"), None);
/// assert_eq!(session_id_problem(""), Some("it is empty"));
/// assert_eq!(session_id_problem("a\tb"), Some("it contains a control character"));
/// ```
pub fn session_id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("it is empty")
    } else if id.len() > 256 {
        Some("it is longer than 256 bytes")
    } else if id.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

pub(crate) fn to_i64(v: u64, what: &'static str) -> Result<i64> {
    i64::try_from(v).map_err(|_| StoreError::OutOfRange { what })
}

/// `$first, $first+1, ...` for `n` values.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    let mut s = String::with_capacity(n * 5);
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('$');
        s.push_str(&(first + i).to_string());
    }
    s
}

/// A multi-row INSERT of `n` messages. `$1` session, `$2` generation, `$3` created_at are
/// shared; each row binds pos, role, kind, body, meta.
pub(crate) fn insert_sql(n: usize) -> String {
    let mut s = String::from(
        "INSERT INTO hermes_messages \
         (session_id, generation, created_at, pos, role, kind, body, meta, active, compacted) \
         VALUES ",
    );
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        let b = 4 + i * 5;
        s.push_str(&format!(
            "($1, $2, $3, ${}, ${}, ${}, ${}, ${}, TRUE, FALSE)",
            b,
            b + 1,
            b + 2,
            b + 3,
            b + 4
        ));
    }
    s.push_str(" RETURNING id, pos");
    s
}

/// The embedded migrations of one backend, `(version, description, sql)` in order. The
/// bookkeeping table has its own name so it never collides with a host application's own sqlx
/// migrations in the same database.
#[cfg(feature = "engine")]
pub(crate) fn migrator(steps: &[(i64, &'static str, &'static str)]) -> sqlx::migrate::Migrator {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let mut m = Migrator::with_migrations(
        steps
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    description.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    );
    m.dangerous_set_table_name("hermes_schema_migrations");
    m
}

/// Most characters of index text written for one message (separating spaces included). Text
/// outside CJK runs maps one to one, so this is the longest prefix read of ordinary text; a
/// CJK run takes about five characters per source character (three for its bigram, two for
/// its unigram). PostgreSQL refuses a tsvector whose words take more than 1 MB: each
/// distinct word of `k` characters costs at most `4k` bytes of UTF-8, one byte of alignment
/// and two for its position count, and each occurrence two more for its position, so a word
/// costs at most `4k + 5` bytes for the `k + 1` characters (separator included) it takes of
/// this budget. That is 4.5 bytes per character at worst (a unigram: 9 bytes for 2
/// characters), 900,000 bytes for the whole budget. The full text stays retrievable by row
/// id or handle.
pub(crate) const SEARCH_TEXT_MAX_CHARS: usize = 200_000;

/// One document for the search index: an archived row or a trimmed original.
pub struct Doc {
    pub row_id: Option<RowId>,
    pub handle: Option<String>,
    pub text: String,
}

impl std::fmt::Debug for Doc {
    /// Names the source and the text's length, never the text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doc")
            .field("row_id", &self.row_id)
            .field("handle", &self.handle)
            .field("text_len", &self.text.len())
            .finish()
    }
}

/// Documents per multi-row INSERT into the search index.
pub(crate) const DOC_CHUNK: usize = 100;

/// Most index words a search query uses (its words, the bigrams of its CJK runs and its
/// single CJK characters), the first ones of the query. A phrase that would go past the limit
/// is cut to its first bigrams: a CJK run of more than 17 characters only narrows the search
/// by its first 17 (fewer when words come before it), and the terms after it are dropped.
pub(crate) const SEARCH_MAX_TERMS: usize = 16;

/// Longest query word outside CJK runs, in characters (longer words are cut).
const SEARCH_TERM_MAX_CHARS: usize = 64;

/// What the search index reads of a message: its visible text and its tool calls (name and
/// arguments), with every character that is not a letter or digit turned into a space, so
/// both backends split words the same way (paths, URLs and identifiers become their parts).
///
/// Scripts written without spaces between words (see [`is_cjk`]) are indexed as overlapping
/// bigrams at consecutive positions, followed by each character of the run alone: a run
/// `数据库` becomes `数据 据库 数 据 库`, a run of one character stays itself, and a run is
/// separated from letters or digits of other scripts next to it (`test数据库` becomes
/// `test 数据 据库 数 据 库`). A query phrase of the bigrams then finds exactly the runs
/// holding that substring, and a unigram any character of a run. Text without CJK
/// characters comes out as before bigrams existed. At most [`SEARCH_TEXT_MAX_CHARS`]
/// characters; a bigram or unigram that does not fit whole is left out with everything after
/// it.
pub(crate) fn search_text(m: &Message) -> String {
    let mut out = IndexText {
        text: String::new(),
        budget: SEARCH_TEXT_MAX_CHARS,
    };
    out.segment(&m.text());
    for call in m.tool_calls() {
        out.segment(&call.function.name);
        out.segment(&call.function.arguments);
    }
    out.text
}

/// One term of a search query: index words that must appear at consecutive positions, in
/// this order. A word outside CJK runs and a single CJK character are one-word terms; a CJK
/// run of two or more characters is the phrase of its bigrams. Every word consists of letters
/// and digits only (see [`search_terms`]).
pub type Term = Vec<String>;

/// The terms of a search query, lower-cased, all of which must match: its words (letters and
/// digits, each at most 64 characters), and each CJK run split the way [`search_text`]
/// splits it. A run of two or more characters becomes the phrase of its bigrams, so it
/// matches exactly the text holding those characters consecutively (`数据库` finds
/// `数据库迁移`, not `数据` and `据库` apart); a single CJK character matches it anywhere
/// in a run. At most [`SEARCH_MAX_TERMS`] words in all, the first ones: a phrase that would
/// exceed them is cut to its first bigrams and nothing after it is used.
pub(crate) fn search_terms(query: &str) -> Vec<Term> {
    let mut terms: Vec<Term> = Vec::new();
    let mut room = SEARCH_MAX_TERMS;
    let words = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty());
    for word in words {
        for (class, run) in runs(word) {
            let mut term = match class {
                Class::Plain => vec![
                    run.chars()
                        .take(SEARCH_TERM_MAX_CHARS)
                        .collect::<String>()
                        .to_lowercase(),
                ],
                Class::Cjk => cjk_terms(run),
                Class::Separator => continue,
            };
            let cut = term.len() > room;
            term.truncate(room);
            room -= term.len();
            terms.push(term);
            if cut || room == 0 {
                return terms;
            }
        }
    }
    terms
}

/// Whether `c` belongs to a script written without spaces between words: Han ideographs
/// (unified, extensions A to I, compatibility), Hiragana, Katakana (also halfwidth), Bopomofo,
/// Hangul syllables and jamo, and the CJK symbols block (iteration marks such as `々`,
/// ideographic numerals). Only letters and digits among them are indexed: CJK punctuation is
/// a separator like any other.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(
        u32::from(c),
        0x1100..=0x11FF // Hangul jamo
            | 0x3000..=0x303F // CJK symbols and punctuation
            | 0x3040..=0x30FF // Hiragana, Katakana
            | 0x3100..=0x312F // Bopomofo
            | 0x3130..=0x318F // Hangul compatibility jamo
            | 0x31A0..=0x31BF // Bopomofo extended
            | 0x31F0..=0x31FF // Katakana phonetic extensions
            | 0x3400..=0x4DBF // Han extension A
            | 0x4E00..=0x9FFF // Han unified ideographs
            | 0xA960..=0xA97F // Hangul jamo extended A
            | 0xAC00..=0xD7FF // Hangul syllables, jamo extended B
            | 0xF900..=0xFAFF // Han compatibility ideographs
            | 0xFF66..=0xFFDC // halfwidth Katakana and Hangul
            | 0x1AFF0..=0x1B16F // Kana extended B, supplement, extended A, small kana
            | 0x20000..=0x2FA1F // Han extensions B to F and I, compatibility supplement
            | 0x30000..=0x323AF // Han extensions G and H
    )
}

/// How the search index treats a character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// Neither letter nor digit: a space in the index.
    Separator,
    /// A letter or digit of a script that separates words.
    Plain,
    /// A letter or digit of a CJK script: indexed as bigrams and unigrams.
    Cjk,
}

fn class(c: char) -> Class {
    if !c.is_alphanumeric() {
        Class::Separator
    } else if is_cjk(c) {
        Class::Cjk
    } else {
        Class::Plain
    }
}

/// The maximal runs of characters of one class in `s`, in order.
fn runs(s: &str) -> impl Iterator<Item = (Class, &str)> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let kind = class(first);
        let end = rest
            .char_indices()
            .find(|&(_, c)| class(c) != kind)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((kind, run))
    })
}

/// The overlapping bigrams of a CJK run, in order (the run itself when it is one character).
fn cjk_terms(run: &str) -> Vec<String> {
    let chars: Vec<char> = run.chars().collect();
    if chars.len() < 2 {
        return vec![run.to_owned()];
    }
    chars.windows(2).map(|w| w.iter().collect()).collect()
}

/// Index text being written, with the characters it may still take.
struct IndexText {
    text: String,
    budget: usize,
}

impl IndexText {
    /// Writes one part of a message (its text, a tool name, tool arguments) and a space.
    fn segment(&mut self, s: &str) {
        let mut prev = Class::Separator;
        for (class, run) in runs(s) {
            if prev != Class::Separator && class != Class::Separator {
                // A CJK run next to letters of another script: split them.
                self.push(' ');
            }
            match class {
                Class::Separator => run.chars().for_each(|_| self.push(' ')),
                Class::Plain => run.chars().for_each(|c| self.push(c)),
                Class::Cjk => self.cjk_run(run),
            }
            prev = class;
        }
        self.push(' ');
    }

    fn push(&mut self, c: char) {
        if self.budget > 0 {
            self.budget -= 1;
            self.text.push(c);
        }
    }

    /// Writes a CJK run as space-separated bigrams (consecutive words, so a query phrase can
    /// require them in order) and then each of its characters alone; a run of one character
    /// is that character. The first word that does not fit whole ends the text.
    fn cjk_run(&mut self, run: &str) {
        let chars: Vec<char> = run.chars().collect();
        if chars.len() < 2 {
            chars.iter().for_each(|&c| self.push(c));
            return;
        }
        let bigrams = chars.windows(2);
        let unigrams = chars.chunks(1);
        for (i, word) in bigrams.chain(unigrams).enumerate() {
            // A space before every word but the first.
            let need = word.len() + usize::from(i > 0);
            if self.budget < need {
                self.budget = 0;
                return;
            }
            if i > 0 {
                self.push(' ');
            }
            word.iter().for_each(|&c| self.push(c));
        }
    }
}

/// A handle is 1-128 bytes without control characters.
pub(crate) fn check_handle(handle: &str) -> Result<()> {
    if handle.is_empty() || handle.len() > 128 || handle.chars().any(char::is_control) {
        return Err(StoreError::InvalidHandle);
    }
    Ok(())
}

fn fault_bit(point: FaultPoint) -> u8 {
    match point {
        FaultPoint::AfterArchive => 1,
        FaultPoint::BeforeImportCommit => 2,
        FaultPoint::AfterRestoreArchive => 4,
        FaultPoint::AfterCommit => 8,
        FaultPoint::GenerationRead => 16,
    }
}

/// One-shot fault injection shared by clones of a store (one bit per armed point).
#[derive(Clone, Debug, Default)]
pub(crate) struct Faults(Arc<AtomicU8>);

impl Faults {
    pub fn arm(&self, point: FaultPoint) {
        self.0.fetch_or(fault_bit(point), Ordering::SeqCst);
    }

    /// Fails (once) if `point` is armed.
    pub fn check(&self, point: FaultPoint) -> Result<()> {
        let bit = fault_bit(point);
        if self.0.fetch_and(!bit, Ordering::SeqCst) & bit != 0 {
            Err(StoreError::InjectedFault)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_stays_strictly_inside() {
        assert_eq!(spread(0, 10, 1, 0).unwrap(), vec![5]);
        assert_eq!(spread(0, 10, 3, 0).unwrap(), vec![2, 4, 6]);
        assert_eq!(spread(-10, 10, 1, 0).unwrap(), vec![0]);
        assert!(matches!(
            spread(4, 5, 1, 2),
            Err(StoreError::KeysExhausted { splice: 2 })
        ));
        let wide = spread(i64::MIN + 1, i64::MAX, 2, 0).unwrap();
        assert!(wide[0] < wide[1]);
    }

    /// Each term as its words joined by spaces.
    fn flat(terms: Vec<Term>) -> Vec<String> {
        terms.iter().map(|t| t.join(" ")).collect()
    }

    #[test]
    fn search_text_and_terms_split_alike() {
        let m = Message::assistant_tool_calls(
            "see src/main.rs:12",
            vec![compaction_core::ToolCall::function(
                "c",
                "read_file",
                r#"{"path":"a_b.rs"}"#,
            )],
        );
        assert_eq!(
            search_text(&m),
            "see src main rs 12 read file   path   a b rs   "
        );
        assert_eq!(
            search_terms("Main.RS, \"a_b\"!"),
            [["main"], ["rs"], ["a"], ["b"]]
        );
        assert!(search_terms(" -- ").is_empty());
        assert_eq!(search_terms(&"w ".repeat(40)).len(), SEARCH_MAX_TERMS);
        let long = Message::user("x".repeat(SEARCH_TEXT_MAX_CHARS + 10));
        assert_eq!(search_text(&long).chars().count(), SEARCH_TEXT_MAX_CHARS);
        assert!(check_handle("trim-0011").is_ok());
        assert!(check_handle("").is_err() && check_handle("a\nb").is_err());
    }

    /// What the old tokenizer wrote for one part of a message: every character that is not a
    /// letter or digit as a space, then a space.
    fn mapped(s: &str) -> String {
        let mut out: String = s
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        out.push(' ');
        out
    }

    #[test]
    fn text_without_cjk_is_indexed_as_before() {
        for s in [
            "plain ascii, with punctuation: a/b.c",
            "École naïve ÀÉÎ ß ﬁ",
            "Привет мир; مرحبا بالعالم; שלום; नमस्ते दुनिया; ไทย",
            "fullwidth ＡＢＣ１２３ and emoji 🦀 and ①②",
            "",
        ] {
            assert_eq!(search_text(&Message::user(s)), mapped(s), "{s}");
            let words: Vec<String> = s
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .take(SEARCH_MAX_TERMS)
                .collect();
            assert_eq!(flat(search_terms(s)), words, "{s}");
            assert!(search_terms(s).iter().all(|t| t.len() == 1), "{s}");
        }
        let long = "x".repeat(100);
        assert_eq!(search_terms(&long), [["x".repeat(64)]]);
    }

    #[test]
    fn cjk_runs_become_bigrams_then_unigrams() {
        let check = |text: &str, expected: &str| {
            assert_eq!(search_text(&Message::user(text)), expected, "{text}");
        };
        check(
            "数据库迁移失败",
            "数据 据库 库迁 迁移 移失 失败 数 据 库 迁 移 失 败 ",
        );
        check("数", "数 ");
        check("好的", "好的 好 的 ");
        check("test数据库", "test 数据 据库 数 据 库 ");
        check("数据库test 2", "数据 据库 数 据 库 test 2 ");
        check("版本2更新", "版本 版 本 2 更新 更 新 ");
        // CJK punctuation separates like any other: the run after it is a unigram.
        check("数据，库。", "数据 数 据 库  ");
        // Kana and kanji form one run; the prolonged sound mark belongs to it.
        check(
            "データの移行",
            "デー ータ タの の移 移行 デ ー タ の 移 行 ",
        );
        check("실패 성공", "실패 실 패 성공 성 공 ");
        check("人々〇", "人々 々〇 人 々 〇 ");
        check("ﾃﾞｰﾀ", "ﾃﾞ ﾞｰ ｰﾀ ﾃ ﾞ ｰ ﾀ ");
        check("𠀀𠀁㐀", "𠀀𠀁 𠀁㐀 𠀀 𠀁 㐀 ");
        // Each part of a message is its own run.
        let m = Message::assistant_tool_calls(
            "日本",
            vec![compaction_core::ToolCall::function(
                "c",
                "検索",
                r#"{"q":"東"}"#,
            )],
        );
        assert_eq!(search_text(&m), "日本 日 本 検索 検 索   q   東   ");
    }

    #[test]
    fn cjk_query_runs_become_phrases() {
        assert_eq!(search_terms("数据库"), [["数据", "据库"]]);
        assert_eq!(search_terms("数"), [["数"]]);
        assert_eq!(
            flat(search_terms("Test数据库, OK 库")),
            ["test", "数据 据库", "ok", "库"]
        );
        assert_eq!(search_terms("실패"), [["실패"]]);
        assert_eq!(search_terms("「移行」"), [["移行"]]);
        // A long run keeps its first bigrams only, and nothing after it is used.
        let run: String = ('一'..).take(40).collect();
        let chars: Vec<char> = run.chars().collect();
        let terms = search_terms(&format!("{run} zz"));
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].len(), SEARCH_MAX_TERMS);
        assert_eq!(terms[0][0], "一丁");
        assert_eq!(terms[0][15], chars[15..17].iter().collect::<String>());
        let terms = search_terms(&format!("ab {run}"));
        assert_eq!(terms.len(), 2);
        assert_eq!(terms[0], ["ab"]);
        assert_eq!(terms[1].len(), SEARCH_MAX_TERMS - 1);
        // Words count one each, a phrase its bigrams: 14 words and a phrase of two fill it.
        let query = format!("{}数据库 zz", "w ".repeat(14));
        let terms = search_terms(&query);
        assert_eq!(terms.len(), 15);
        assert_eq!(terms[14], ["数据", "据库"]);
        // Words are letters and digits only: nothing a query syntax would read as an operator.
        let all = "数据库 ﾃﾞｰﾀ ガギグ 데이터 ᄀᄁ 人々 〇一 A-b_c ＡＢ１ 57P01";
        for word in search_terms(all).iter().flatten() {
            assert!(word.chars().all(char::is_alphanumeric), "{word}");
        }
    }

    /// Whether `phrase` appears in `words` at consecutive positions, in order.
    fn has_phrase(words: &[&str], phrase: &[String]) -> bool {
        words.windows(phrase.len()).any(|w| w == phrase)
    }

    #[test]
    fn cjk_query_matches_exactly_the_substrings() {
        let text = "数据库迁移失败：连接超时 データベースの移行 데이터베이스";
        let indexed = search_text(&Message::user(text));
        let words: Vec<&str> = indexed.split(' ').collect();
        let chars: Vec<char> = text.chars().collect();
        // Every substring of one or more characters: each term is in the index.
        for i in 0..chars.len() {
            for j in i + 1..=chars.len() {
                let sub: String = chars[i..j].iter().collect();
                for term in search_terms(&sub) {
                    assert!(has_phrase(&words, &term), "{sub}: {term:?}");
                }
            }
        }
        // The bigrams of 数据库 apart, and the characters of a run out of order, do not.
        let apart = search_text(&Message::user("数据表 证据库"));
        let words: Vec<&str> = apart.split(' ').collect();
        let terms = search_terms("数据库");
        assert!(terms[0].iter().all(|w| words.contains(&w.as_str())));
        assert!(!has_phrase(&words, &terms[0]));
        assert!(has_phrase(&words, &search_terms("据")[0]));
        // A unigram never sits between the bigrams of its run.
        assert!(!has_phrase(&words, &search_terms("据表证")[0]));
    }

    #[test]
    fn cjk_index_text_stays_within_budget() {
        let run: String = ('一'..='龥').cycle().take(SEARCH_TEXT_MAX_CHARS).collect();
        let text = search_text(&Message::user(run));
        assert!(text.chars().count() <= SEARCH_TEXT_MAX_CHARS);
        assert!(text.chars().count() > SEARCH_TEXT_MAX_CHARS - 3);
        // Only whole bigrams, no fragment at the cut: the run is cut within its bigrams.
        assert!(
            text.split(' ')
                .all(|w| w.is_empty() || w.chars().count() == 2)
        );
        // Many shorter runs, each bigrams then unigrams: still whole words only.
        let runs: String = ('一'..='龥')
            .take(50)
            .collect::<String>()
            .repeat(SEARCH_TEXT_MAX_CHARS / 100);
        let runs = runs
            .chars()
            .collect::<Vec<_>>()
            .chunks(50)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join(" ");
        let text = search_text(&Message::user(runs));
        assert!(text.chars().count() <= SEARCH_TEXT_MAX_CHARS);
        assert!(text.split(' ').all(|w| w.chars().count() <= 2));
        let cut = |room: usize| {
            let a = "a".repeat(SEARCH_TEXT_MAX_CHARS - room);
            let text = search_text(&Message::user(format!("{a}数据库")));
            (text.chars().count(), text[a.len()..].to_owned())
        };
        assert_eq!(
            cut(13),
            (SEARCH_TEXT_MAX_CHARS, " 数据 据库 数 据 库 ".to_owned())
        );
        assert_eq!(
            cut(12),
            (SEARCH_TEXT_MAX_CHARS, " 数据 据库 数 据 库".to_owned())
        );
        assert_eq!(
            cut(11),
            (SEARCH_TEXT_MAX_CHARS - 1, " 数据 据库 数 据".to_owned())
        );
        assert_eq!(
            cut(10),
            (SEARCH_TEXT_MAX_CHARS, " 数据 据库 数 据".to_owned())
        );
        assert_eq!(cut(7), (SEARCH_TEXT_MAX_CHARS - 1, " 数据 据库".to_owned()));
        assert_eq!(cut(6), (SEARCH_TEXT_MAX_CHARS, " 数据 据库".to_owned()));
        assert_eq!(cut(5), (SEARCH_TEXT_MAX_CHARS - 2, " 数据".to_owned()));
        assert!(is_cjk('가') && is_cjk('ア') && is_cjk('豈') && !is_cjk('a') && !is_cjk('Ａ'));
    }

    #[test]
    fn insert_sql_numbers_placeholders() {
        let sql = insert_sql(2);
        assert!(sql.contains("($1, $2, $3, $4, $5, $6, $7, $8, TRUE, FALSE)"));
        assert!(sql.contains("($1, $2, $3, $9, $10, $11, $12, $13, TRUE, FALSE)"));
        assert_eq!(placeholders(3, 3), "$3, $4, $5");
    }

    #[test]
    fn prepare_and_decode_round_trip_meta() {
        let mut m = compaction_core::marker::render(
            MarkerKind::Micro,
            compaction_core::Role::Assistant,
            "body",
        );
        m.meta_mut().trimmed_handle = Some("h1".into());
        m.meta_mut().row_id = Some(3);
        let p = prepare(&m).unwrap();
        assert_eq!(p.kind, "micro");
        assert_eq!(p.meta.as_deref(), Some(r#"{"trimmed_handle":"h1"}"#));
        let (back, kind) = decode(9, p.kind, p.body, p.meta).unwrap();
        assert_eq!(kind, Some(MarkerKind::Micro));
        assert_eq!(back.row_id(), Some(9));
        assert_eq!(back.meta().unwrap().trimmed_handle.as_deref(), Some("h1"));
        assert_eq!(back.to_wire_json(), m.to_wire_json());
        // Every marker kind round-trips through its column, the continuation included.
        for kind in [
            MarkerKind::Batch,
            MarkerKind::Micro,
            MarkerKind::Progress,
            MarkerKind::Continuation,
        ] {
            let m = compaction_core::marker::render(kind, compaction_core::Role::User, "b");
            let p = prepare(&m).unwrap();
            assert_eq!(p.kind, kind.as_str());
            let (back, got) = decode(1, p.kind, p.body, p.meta).unwrap();
            assert_eq!((got, back.marker_kind()), (Some(kind), Some(kind)));
        }
        assert!(matches!(
            decode(4, "weird", b"{}".to_vec(), None),
            Err(StoreError::CorruptRow { row: 4, .. })
        ));
    }
}
