//! Secret redaction: pure text in, text out.
//!
//! [`redact`] replaces credentials with [`REDACTED`] in everything that leaves the process
//! (summarizer material and messages, summaries, the ledger, prune one-liners and shortened
//! arguments, recall results). It is one engine with two layers of detection:
//!
//! 1. **A maintained ruleset.** The provider-specific shapes (AWS, Google, GitHub, GitLab,
//!    Stripe, Slack, npm, PyPI, Twilio, SendGrid, database URIs, …) come from the rule data of
//!    the `nosecrets-rules` crate (pinned in the workspace; see docs/ARCHITECTURE.md for why
//!    this crate and how it is updated): each rule's keywords gate it, its regex finds the
//!    secret in its capture group, and its allowlist is honoured. None of its rules is copied
//!    here.
//! 2. **The library's own context rules**, for what a scanner of source files does not see in
//!    a transcript:
//!    - assignments and name/value pairs whose name is a credential (`DB_PASS=`, `*_KEY=`,
//!      `"api_key": "…"`, YAML, Terraform `variable "x" { default = … }`, Kubernetes
//!      `name:`/`value:`, CSV exports whose header names a secret column), judged by the
//!      words of the name (`secretName`, `token_type`, `api_key_env`, `password_min_length`
//!      name something *about* a secret and are left alone) and the shape of the value (code
//!      such as `os.environ["X"]`, references such as `$X` or `${{ secrets.X }}`, environment
//!      variable names, numbers and booleans are not secrets);
//!    - command-line flags that take a password (`--password=`, `--token`, `curl -u user:pass`,
//!      `mysql -pSECRET`, `sshpass -p`, `docker login -p`, `redis-cli -a`);
//!    - URL userinfo: everything between the first `:` and the *last* `@` before the host
//!      (passwords holding `/`, `:` or `@`), and a key-shaped user with no password (Sentry
//!      DSNs);
//!    - `Authorization:` values, `Bearer` and `Basic` credentials, JSON Web Tokens;
//!    - vendor tokens of the common shape *letters, separator, long random body*
//!      (`xxxx_live_…`, `xxxx-…`): a family rule, so a provider's new prefix is caught too;
//!    - PEM and PGP private-key blocks and PuTTY key files. A block split across two texts
//!      (two messages, or a cut) is redacted from its `BEGIN` line to the end of the first
//!      and from the start of the second to its `END` line.
//!
//! Every rule runs on the text as written and on a decoded view of it: JSON escapes at every
//! depth collapsed (`\\\"` is `"`, `\u0073` is `s`), percent-encoding decoded, full-width
//! punctuation (`：`, `＝`) read as ASCII and other non-ASCII characters (CJK neighbours such
//! as `使用token=…`) read as separators. A secret found in the view is mapped back to the
//! bytes that spell it, so the escapes themselves are redacted with it.
//!
//! Ordinary text is not touched: git hashes, UUIDs, lockfile hashes, long paths and base64
//! `data:` URLs (image payloads, skipped as a whole) pass through byte-identical. Redaction is
//! idempotent: `redact(redact(x)) == redact(x)`.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde_json::Value;

use crate::message::{Content, Message};

/// The replacement text for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces every recognised secret in `text` with [`REDACTED`] (see the [module docs](self)).
///
/// Returns the input borrowed when nothing was replaced.
///
/// ```
/// use compaction_core::redact::redact;
///
/// let key = ["sk_live_", "4eC39HqLyjWDarjtT1zdp7dc"].concat();
/// assert_eq!(redact(&format!("STRIPE={key} ok")), "STRIPE=[REDACTED] ok");
/// // Code that merely names a secret survives.
/// let code = r#"SECRET_KEY = os.environ["SECRET_KEY"]"#;
/// assert_eq!(redact(code), code);
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    let spans = secret_spans(text);
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = replace_spans(text, &spans);
    // A redaction shortens the text, which can bring a credential's name within reach of a
    // value that was too far from it (the window of a name/value pair): redact again until
    // nothing is found, so `redact` is idempotent and nothing it recognises survives. Only
    // text that held a secret pays for the extra round; each round only replaces text with
    // the marker, and rounds converge at once in practice.
    for _ in 0..MAX_REDACT_ROUNDS {
        let spans = secret_spans(&out);
        if spans.is_empty() {
            break;
        }
        out = replace_spans(&out, &spans);
    }
    Cow::Owned(out)
}

/// Bound on the extra rounds of [`redact`] (a safety net: one is the most seen).
const MAX_REDACT_ROUNDS: usize = 8;

fn replace_spans(text: &str, spans: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for &(s, e) in spans {
        out.push_str(&text[last..s]);
        out.push_str(REDACTED);
        last = e;
    }
    out.push_str(&text[last..]);
    out
}

/// Whether `text` contains anything [`redact`] would replace.
pub fn contains_secret(text: &str) -> bool {
    !secret_spans(text).is_empty()
}

/// The first `n` characters of `text` after redaction, for cutting long text safely.
///
/// The redaction runs before the cut, over the kept part plus a margin of [`CUT_MARGIN`]
/// characters, so a secret straddling the cut is recognised whole (a cut never turns a key
/// into a fragment the patterns no longer match), and the cost follows `n`, not the length
/// of `text`. A run of key characters split by the cut is dropped when it is short (under 128
/// characters) or starts like a key, so a cut never ends in part of a key either.
pub fn redacted_head(text: &str, n: usize) -> String {
    let window = match text.char_indices().nth(n.saturating_add(CUT_MARGIN)) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let red = redact(window);
    let cut = match red.char_indices().nth(n) {
        Some((i, _)) => i,
        None => return settle(red.into_owned(), n, Side::Head),
    };
    let head = &red[..cut];
    let split = red[cut..].starts_with(is_key_char) && head.ends_with(is_key_char);
    let keep = if split {
        let run_start = head.trim_end_matches(is_key_char).len();
        let run = &head[run_start..];
        let rest = &red[cut..];
        let whole = run.len() + rest.len() - rest.trim_start_matches(is_key_char).len();
        if whole < 128 || starts_like_key(run) {
            run_start
        } else {
            cut
        }
    } else {
        cut
    };
    settle(red[..keep].to_owned(), n, Side::Head)
}

/// The last `n` characters of `text` after redaction; the counterpart of [`redacted_head`].
pub fn redacted_tail(text: &str, n: usize) -> String {
    let window = match text.char_indices().rev().nth(n.saturating_add(CUT_MARGIN)) {
        Some((i, c)) => &text[i + c.len_utf8()..],
        None => text,
    };
    if n == 0 {
        return String::new();
    }
    let red = redact(window);
    let cut = match red.char_indices().rev().nth(n - 1) {
        Some((i, _)) if i > 0 => i,
        _ => return settle(red.into_owned(), n, Side::Tail),
    };
    let tail = &red[cut..];
    let split = red[..cut].ends_with(is_key_char) && tail.starts_with(is_key_char);
    let keep = if split {
        let run_end = tail.len() - tail.trim_start_matches(is_key_char).len();
        let before = &red[..cut];
        let whole = run_end + before.len() - before.trim_end_matches(is_key_char).len();
        if whole < 128 { cut + run_end } else { cut }
    } else {
        cut
    };
    settle(red[keep..].to_owned(), n, Side::Tail)
}

/// Which end of a text a cut keeps.
#[derive(Clone, Copy)]
enum Side {
    Head,
    Tail,
}

/// A cut can make a pattern that its wider context did not (a value's opening quote cut
/// away, an escape cut in half): redact the cut again and cut it back to `n` characters until
/// nothing recognisable is left, and keep nothing when that does not settle (found by the
/// `redact` fuzz target).
fn settle(mut cut: String, n: usize, side: Side) -> String {
    for _ in 0..4 {
        if !contains_secret(&cut) {
            return cut;
        }
        let red = redact(&cut);
        cut = match side {
            Side::Head => red.chars().take(n).collect(),
            Side::Tail => {
                let skip = red.chars().count().saturating_sub(n);
                red.chars().skip(skip).collect()
            }
        };
    }
    if contains_secret(&cut) {
        String::new()
    } else {
        cut
    }
}

/// A copy of `m` for a summarizer: its text (string content and text parts) and its
/// tool-call arguments redacted. Other fields are kept; an unchanged message is a cheap clone
/// (bodies are shared).
pub fn redact_message(m: &Message) -> Message {
    let content = match m.content() {
        Some(Content::Text(t)) => match redact(t) {
            Cow::Owned(r) => Some(Content::Text(r)),
            Cow::Borrowed(_) => None,
        },
        Some(Content::Parts(parts)) => {
            let mut changed = false;
            let parts = parts
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if let Some(Value::String(t)) = p.0.get_mut("text")
                        && let Cow::Owned(r) = redact(t)
                    {
                        *t = r;
                        changed = true;
                    }
                    p
                })
                .collect();
            changed.then_some(Content::Parts(parts))
        }
        _ => None,
    };
    let mut out = match content {
        Some(c) => m.with_content(Some(c)),
        None => m.clone(),
    };
    if m.tool_calls()
        .iter()
        .any(|c| contains_secret(&c.function.arguments))
    {
        for c in out.tool_calls_mut().into_iter().flatten() {
            if let Cow::Owned(r) = redact(&c.function.arguments) {
                c.function.arguments = r;
            }
        }
    }
    out
}

/// Characters redacted beyond a cut by [`redacted_head`] and [`redacted_tail`]: longer than
/// any key, token or PEM block the patterns know, so a secret straddling a cut is seen whole.
pub const CUT_MARGIN: usize = 16 * 1024;

/// How many rules of the maintained ruleset are in force (those whose regex compiles here),
/// and how many it ships; for tests and diagnostics.
pub fn ruleset_size() -> (usize, usize) {
    (RULESET.rules.len(), RULESET.shipped)
}

// ---------------------------------------------------------------------------------------------
// The engine: every detector reports byte ranges of secrets; the ranges are merged and each
// is written as one `[REDACTED]`.

type Spans = Vec<(usize, usize)>;

/// The merged, sorted secret ranges of `text`, outside `data:` URLs.
fn secret_spans(text: &str) -> Spans {
    if text.is_empty() {
        return Vec::new();
    }
    let mut spans = Vec::new();
    if needs_view(text) {
        let view = View::build(text);
        let mut vs = Vec::new();
        detect(&view.text, &mut vs);
        spans.extend(
            vs.into_iter()
                .map(|(s, e)| (view.starts[s], view.starts[e])),
        );
        // The text as written too, for what the view flattens: a value holding escaped quotes
        // (JSON inside JSON), values spelled in non-ASCII characters, and `\\r` read as a
        // backslash and a letter rather than an escape.
        detect(text, &mut spans);
    } else {
        detect(text, &mut spans);
    }
    if spans.is_empty() {
        return spans;
    }
    if text.contains("data:") {
        let images: Spans = DATA_URL
            .find_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
        spans.retain(|&(s, e)| !images.iter().any(|&(a, b)| s < b && a < e));
    }
    merge(spans)
}

fn merge(mut spans: Spans) -> Spans {
    spans.retain(|&(s, e)| s < e);
    spans.sort_unstable();
    let mut out: Spans = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// One scan that every context rule needs to match somewhere: text without any of these has
/// nothing for them, and only the ruleset (gated by its own keywords) runs on it.
static CONTEXT_TRIGGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i:pass|pwd|secret|token|key|auth|credential|sig|bearer|basic|value|default",
        r"|mysql|mariadb|login|machine|redis-cli|putty|private-)",
        r"|-----|://|eyJ|-u|--user|[A-Za-z0-9_-]{20}",
    ))
    .expect("valid trigger regex")
});

/// Every detector over one text (the text as written, or its view).
fn detect(t: &str, out: &mut Spans) {
    ruleset_spans(t, out);
    if !CONTEXT_TRIGGER.is_match(t) {
        return;
    }
    key_block_spans(t, out);
    url_spans(t, out);
    header_spans(t, out);
    token_spans(t, out);
    flag_spans(t, out);
    assignment_spans(t, out);
    name_value_spans(t, out);
    csv_spans(t, out);
}

// ---------------------------------------------------------------------------------------------
// The decoded view.

/// Whether a text has anything the view decodes: a backslash, a percent sign, or a non-ASCII
/// character.
fn needs_view(text: &str) -> bool {
    text.bytes().any(|b| b == b'\\' || b == b'%' || b >= 0x80)
}

/// An ASCII reading of a text: JSON escapes collapsed at every depth, `%XX` decoded,
/// full-width ASCII read as ASCII, other non-ASCII characters read as a space. `starts[j]` is
/// the byte of the original text where view byte `j` comes from (`starts[len]` is the
/// original length), so a range of the view maps back to the bytes that spell it.
struct View {
    text: String,
    starts: Vec<usize>,
}

impl View {
    fn build(src: &str) -> View {
        let b = src.as_bytes();
        let mut text = String::with_capacity(src.len());
        let mut starts = Vec::with_capacity(src.len() + 1);
        let mut i = 0;
        while i < b.len() {
            let start = i;
            let c = b[i];
            let decoded: char = if c == b'\\' {
                let run = b[i..].iter().take_while(|&&x| x == b'\\').count();
                let j = i + run;
                match b.get(j) {
                    None => {
                        i = j;
                        ' '
                    }
                    Some(&e) => {
                        i = j + 1;
                        match e {
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'b' | b'f' => ' ',
                            b'u' if b.len() >= j + 5
                                && b[j + 1..j + 5].iter().all(u8::is_ascii_hexdigit) =>
                            {
                                i = j + 5;
                                let code =
                                    u32::from_str_radix(&src[j + 1..j + 5], 16).unwrap_or(32);
                                ascii_reading(char::from_u32(code).unwrap_or(' '))
                            }
                            b'"' | b'\'' | b'/' => e as char,
                            _ => {
                                // Backslashes before a character that is no escape: a
                                // separator, and the character is read on its own.
                                i = j;
                                ' '
                            }
                        }
                    }
                }
            } else if c == b'%'
                && b.len() >= i + 3
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit()
                && b[i + 1] < b'8'
            {
                i += 3;
                let v = u8::from_str_radix(&src[start + 1..start + 3], 16).unwrap_or(b' ');
                if v.is_ascii_graphic() || v == b' ' || v == b'\n' {
                    v as char
                } else {
                    ' '
                }
            } else if c < 0x80 {
                i += 1;
                c as char
            } else {
                let ch = src[i..].chars().next().unwrap_or(' ');
                i += ch.len_utf8();
                ascii_reading(ch)
            };
            starts.push(start);
            text.push(decoded);
        }
        starts.push(src.len());
        View { text, starts }
    }
}

/// One ASCII character for `c`: itself when ASCII, the ASCII twin of a full-width form, else
/// a space (a separator, so a token glued to CJK text stands alone).
fn ascii_reading(c: char) -> char {
    match c as u32 {
        0..=0x7f => c,
        0xff01..=0xff5e => char::from_u32(c as u32 - 0xfee0).unwrap_or(' '),
        _ => ' ',
    }
}

// ---------------------------------------------------------------------------------------------
// Layer 1: the maintained ruleset.

struct Rule {
    re: Regex,
    group: usize,
    keywords: Vec<usize>,
    allow: Vec<Regex>,
    allow_values: Vec<String>,
}

struct Ruleset {
    rules: Vec<Rule>,
    /// How many rules the crate ships (some may not compile under this regex engine).
    shipped: usize,
    /// One pattern of every keyword (case-insensitive), and each keyword in lower case in
    /// the order of the pattern's alternation.
    keywords: Option<RegexSet>,
    /// Whether any keyword occurs at all: one literal search, much cheaper than the set.
    any_keyword: Option<Regex>,
    keyword_list: Vec<String>,
}

/// A rule's regexes may be large; the default 10 MB program limit is raised so none is lost.
const RULE_SIZE_LIMIT: usize = 64 << 20;

static RULESET: LazyLock<Ruleset> = LazyLock::new(|| {
    let shipped = nosecrets_rules::load_builtin_rules().unwrap_or_default();
    let mut keyword_list: Vec<String> = Vec::new();
    let mut rules = Vec::new();
    for r in &shipped {
        let Ok(re) = RegexBuilder::new(&r.pattern)
            .size_limit(RULE_SIZE_LIMIT)
            .build()
        else {
            continue;
        };
        let keywords = r
            .keywords
            .iter()
            .map(|k| {
                let k = k.to_lowercase();
                match keyword_list.iter().position(|x| *x == k) {
                    Some(i) => i,
                    None => {
                        keyword_list.push(k);
                        keyword_list.len() - 1
                    }
                }
            })
            .collect();
        let (allow, allow_values) = match &r.allow {
            Some(a) => (
                a.patterns
                    .iter()
                    .filter_map(|p| Regex::new(p).ok())
                    .collect(),
                a.values.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let group = if re.captures_len() > r.capture {
            r.capture
        } else {
            0
        };
        rules.push(Rule {
            re,
            group,
            keywords,
            allow,
            allow_values,
        });
    }
    // A set, not one alternation: keywords overlap (`discord` and `discord.com/api/webhooks`)
    // and each must be seen.
    let keywords = (!keyword_list.is_empty()).then(|| {
        RegexSetBuilder::new(keyword_list.iter().map(|k| regex::escape(k)))
            .case_insensitive(true)
            .build()
            .expect("escaped keywords form a valid regex set")
    });
    let any_keyword = (!keyword_list.is_empty()).then(|| {
        let alternation: Vec<String> = keyword_list.iter().map(|k| regex::escape(k)).collect();
        RegexBuilder::new(&alternation.join("|"))
            .case_insensitive(true)
            .build()
            .expect("escaped keywords form a valid regex")
    });
    Ruleset {
        rules,
        shipped: shipped.len(),
        keywords,
        any_keyword,
        keyword_list,
    }
});

fn ruleset_spans(t: &str, out: &mut Spans) {
    let set = &*RULESET;
    let mut present = vec![false; set.keyword_list.len()];
    if let Some(k) = &set.keywords
        && set.any_keyword.as_ref().is_none_or(|a| a.is_match(t))
    {
        for i in k.matches(t).iter() {
            present[i] = true;
        }
    }
    for rule in &set.rules {
        if !rule.keywords.is_empty() && !rule.keywords.iter().any(|&k| present[k]) {
            continue;
        }
        for c in rule.re.captures_iter(t) {
            let Some(m) = c.get(rule.group).or_else(|| c.get(0)) else {
                continue;
            };
            let secret = m.as_str();
            if secret.is_empty()
                || secret.contains(REDACTED)
                || is_placeholder(secret)
                || rule.allow_values.iter().any(|v| v == secret)
                || rule.allow.iter().any(|a| a.is_match(secret))
            {
                continue;
            }
            out.push((m.start(), m.end()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Layer 2: context rules.

static DATA_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[A-Za-z0-9.+/-]+(?:;[A-Za-z0-9=.-]+)*;base64,[A-Za-z0-9+/=]+")
        .expect("valid data URL regex")
});

static KEY_BEGIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[0-9]+:")
        .expect("valid key-begin regex")
});

static KEY_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|Private-MAC:[ \t]*[0-9A-Fa-f]*",
    )
    .expect("valid key-end regex")
});

/// Private-key blocks: `BEGIN` to `END`; a `BEGIN` with no `END` runs to the end of the text,
/// and an `END` with no `BEGIN` (the second half of a split block) from the start of the text
/// or the previous block. A marker written as a quoted string in code (`"-----BEGIN …-----"`)
/// is a mention, not a key.
fn key_block_spans(t: &str, out: &mut Spans) {
    if !t.contains("-----BEGIN")
        && !t.contains("-----END")
        && !t.contains("PuTTY")
        && !t.contains("Private-")
    {
        return;
    }
    let mut covered = 0;
    let mut pos = 0;
    loop {
        let begin = KEY_BEGIN.find_at(t, pos);
        let end = KEY_END.find_at(t, pos);
        match (begin, end) {
            (Some(b), e) if e.is_none_or(|e| b.start() < e.start()) => {
                if is_mention(t, b.start(), b.end()) {
                    pos = b.end();
                    continue;
                }
                // No `END`: to the end of the text, or of the string it is quoted in (a key
                // body holds no quote, so a JSON document stays valid).
                let stop = KEY_END.find_at(t, b.end()).map_or_else(
                    || t[b.end()..].find('"').map_or(t.len(), |q| b.end() + q),
                    |e| e.end(),
                );
                out.push((b.start(), stop));
                covered = stop;
                pos = stop;
            }
            (_, Some(e)) => {
                pos = e.end();
                if is_mention(t, e.start(), e.end()) || !key_body_before(&t[covered..e.start()]) {
                    continue;
                }
                let from = t[covered..e.start()]
                    .rfind('"')
                    .map_or(covered, |q| covered + q + 1);
                out.push((from, e.end()));
                covered = e.end();
            }
            _ => break,
        }
        if pos >= t.len() {
            break;
        }
    }
}

/// Whether the marker at `s..e` is quoted on both sides (a string constant in code).
fn is_mention(t: &str, s: usize, e: usize) -> bool {
    let before = t[..s].trim_end_matches('\\');
    let after = t[e..].trim_start_matches('\\');
    let q = |c: char| matches!(c, '"' | '\'' | '`');
    before.ends_with(q) && after.starts_with(q)
}

/// Whether the text before an `END` marker ends with a line of key material (base64).
fn key_body_before(before: &str) -> bool {
    let trimmed = before
        .trim_end()
        .trim_end_matches("\\n")
        .trim_end_matches("\\r")
        .trim_end();
    let line = trimmed
        .rsplit(['\n', '\r'])
        .next()
        .unwrap_or("")
        .rsplit("\\n")
        .next()
        .unwrap_or("");
    line.len() >= 4
        && line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

static URL_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9+.-]*://").expect("valid URL regex"));

/// URL userinfo: the password runs from the first `:` to the last `@` before the host; a
/// user with no password is a secret when it is key-shaped (a Sentry DSN's public key).
fn url_spans(t: &str, out: &mut Spans) {
    if !t.contains("://") {
        return;
    }
    let b = t.as_bytes();
    for m in URL_START.find_iter(t) {
        let from = m.end();
        let run = b[from..]
            .iter()
            .position(|&c| {
                c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\')
            })
            .map_or(b.len(), |p| from + p);
        let auth = &t[from..run];
        let Some(at) = auth.rfind('@') else { continue };
        let userinfo = &auth[..at];
        let host = &auth[at + 1..];
        if !host.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[') {
            continue;
        }
        match userinfo.find(':') {
            Some(c) => {
                if userinfo[..c].contains(['/', '?', '#']) {
                    continue;
                }
                let pass = &userinfo[c + 1..];
                // `host:8080/path@x`: a port, not a password.
                let digits = pass.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && pass[digits..].starts_with('/') {
                    continue;
                }
                if pass.is_empty() || pass == REDACTED || is_placeholder(pass) {
                    continue;
                }
                out.push((from + c + 1, from + at));
            }
            None => {
                if userinfo.contains(['/', '?', '#']) {
                    continue;
                }
                if userinfo.len() >= 16 && is_random(userinfo) {
                    out.push((from, from + at));
                }
            }
        }
    }
}

/// What may precede a token: the start, or a character that is not a word character (ASCII
/// letters, digits, `_`). Captured as group 1.
macro_rules! boundary {
    () => {
        r"(^|[^A-Za-z0-9_])"
    };
}

static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)"#,
        boundary!(),
        r#"((?:proxy-)?authorization(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)((?:bearer|basic|token|bot|digest|apikey|sso-key)\s+)?([^\s"',;\\]+)"#
    ))
    .expect("valid auth header regex")
});

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        boundary!(),
        r"([Bb]earer\s+)([A-Za-z0-9._~+/=-]{12,})"
    ))
    .expect("valid bearer regex")
});

static BASIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        boundary!(),
        r"([Bb]asic\s+)([A-Za-z0-9+/]{8,}={0,2})"
    ))
    .expect("valid basic regex")
});

static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(^|[^A-Za-z0-9_-])",
        r"(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)"
    ))
    .expect("valid JWT regex")
});

fn header_spans(t: &str, out: &mut Spans) {
    for c in AUTH_HEADER.captures_iter(t) {
        let v = &c[4];
        // Already redacted, or only the scheme (`Authorization: Bearer` at the end of a cut).
        let scheme_only = c.get(3).is_none()
            && ["bearer", "basic", "token", "bot", "digest"]
                .iter()
                .any(|w| v.eq_ignore_ascii_case(w));
        if v.starts_with('[') || scheme_only || is_placeholder(v) {
            continue;
        }
        let m = c.get(4).expect("group 4 always takes part");
        out.push((m.start(), m.end()));
    }
    if t.contains("earer") {
        for c in BEARER.captures_iter(t) {
            let m = c.get(3).expect("group 3 always takes part");
            out.push((m.start(), m.end()));
        }
    }
    if t.contains("asic") {
        for c in BASIC.captures_iter(t) {
            if looks_like_credentials(&c[3]) {
                let m = c.get(3).expect("group 3 always takes part");
                out.push((m.start(), m.end()));
            }
        }
    }
    if t.contains("eyJ") {
        for c in JWT.captures_iter(t) {
            let m = c.get(2).expect("group 2 always takes part");
            out.push((m.start(), m.end()));
        }
    }
}

static TOKEN_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9_-]{19,}").expect("valid token-run regex"));

/// Vendor tokens of the shape *letters, separator, long random body*: `xxxx_live_…`,
/// `xxxx-proj-…`, `xxxx_pat_…`, `xxxx-1-…`. The body (the longest part between separators)
/// must be at least 20 characters of random-looking text (digits and letters, mixed case or
/// many digits, high entropy), so identifiers, branch names and hashes of build outputs
/// (`libfoo-3f2a9b8c7d6e5f40`) are left alone.
fn token_spans(t: &str, out: &mut Spans) {
    let b = t.as_bytes();
    for m in TOKEN_RUN.find_iter(t) {
        // A run must stand alone: not the tail of a longer word.
        if m.start() > 0 && is_run_byte(b[m.start() - 1]) {
            continue;
        }
        let mut start = m.start();
        // The letter of a JSON escape is not part of the token (`\nsk_live_…`).
        if start > 0 && b[start - 1] == b'\\' {
            let run = m.as_str();
            if run.len() > 5
                && run.starts_with('u')
                && run[1..5].bytes().all(|x| x.is_ascii_hexdigit())
            {
                start += 5;
            } else if run.starts_with(['n', 'r', 't', 'b', 'f']) {
                start += 1;
            }
        }
        let run = &t[start..m.end()];
        if is_prefixed_token(run) || is_upper_key(run) || is_aws_key_id(run) {
            out.push((start, m.end()));
        }
    }
}

fn is_run_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// Prefixes of identifiers that are not credentials: API object ids (tool calls, messages,
/// completions, runs, files; payment objects), which look like tokens and are everywhere in
/// an agent's transcript.
const ID_PREFIXES: [&str; 24] = [
    "call", "toolu", "msg", "chatcmpl", "cmpl", "run", "thread", "asst", "file", "batch", "req",
    "resp", "evt", "cus", "sub", "price", "prod", "pi", "ch", "in", "txn", "conv", "step", "fc",
];

fn is_prefixed_token(run: &str) -> bool {
    let mut parts = run.split(['_', '-']).filter(|p| !p.is_empty());
    let Some(prefix) = parts.next() else {
        return false;
    };
    // Letters, with at most two digits after the first (`r8_`, `fm2_`); hash names are no
    // vendor prefix (`sha512-…` in lockfiles, `md5-…`).
    let digits = prefix.bytes().filter(u8::is_ascii_digit).count();
    if !(2..=12).contains(&prefix.len())
        || !prefix.starts_with(|c: char| c.is_ascii_alphabetic())
        || !prefix.bytes().all(|c| c.is_ascii_alphanumeric())
        || digits > 2
        || prefix.starts_with("sha")
        || prefix.starts_with("md")
        || ID_PREFIXES.contains(&prefix)
    {
        return false;
    }
    let vendor =
        VENDOR_PREFIXES.contains(&prefix) || (prefix == "github" && run[6..].starts_with("_pat_"));
    let Some(body) = parts.max_by_key(|p| p.len()) else {
        return false;
    };
    if vendor {
        // A prefix only its vendor issues: the body's shape is enough, whatever its entropy
        // (a random body can come out with few distinct characters).
        return body.len() >= 16 && is_token_body(body);
    }
    body.len() >= 20 && is_random(body)
}

/// Prefixes that only their vendor issues (Slack, GitHub, GitLab, OpenAI and Anthropic,
/// Hugging Face, npm, PyPI, Shopify, DigitalOcean, Grafana, Groq, xAI, Stripe restricted keys).
const VENDOR_PREFIXES: [&str; 24] = [
    "xoxb", "xoxp", "xoxa", "xoxr", "xoxs", "xoxe", "xapp", "ghp", "gho", "ghu", "ghs", "ghr",
    "glpat", "sk", "hf", "npm", "pypi", "shpat", "shpss", "dop", "doo", "glsa", "gsk", "xai",
];

/// A token body: letters and digits only, with a digit or both cases, not one repeated
/// character.
fn is_token_body(body: &str) -> bool {
    let b = body.as_bytes();
    let all_alnum = b.iter().all(u8::is_ascii_alphanumeric);
    let digit = b.iter().any(u8::is_ascii_digit);
    let upper = b.iter().any(u8::is_ascii_uppercase);
    let lower = b.iter().any(u8::is_ascii_lowercase);
    all_alnum && (digit || (upper && lower)) && b.iter().any(|&c| c != b[0])
}

/// An AWS key id by its prefix (`AKIA`, `ASIA`, ...) and 16 upper-case letters or digits,
/// whatever its letters and digits (a digit-heavy id has too few letters for
/// [`is_upper_key`], and the ruleset reads only real base32 ids; redacting a look-alike costs
/// nothing).
fn is_aws_key_id(run: &str) -> bool {
    const PREFIXES: [&str; 10] = [
        "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "ABIA", "ACCA",
    ];
    run.len() == 20
        && PREFIXES.iter().any(|p| run.starts_with(p))
        && run[4..]
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// An upper-case key id (`AKIA…`-like, base32 secrets): 20 to 64 upper-case letters and
/// digits, at least one digit and eight letters, not a hexadecimal hash.
fn is_upper_key(run: &str) -> bool {
    if run.len() > 64
        || !run
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return false;
    }
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    let hex = run.bytes().all(|c| c.is_ascii_hexdigit());
    digits >= 1 && run.len() - digits >= 8 && !hex && entropy(run) >= 2.5
}

/// Random-looking: letters and not only letters of one case in words, judged by how often
/// the character class (upper, lower, digit) changes from one character to the next (about
/// 60% in random base62, 47% in hexadecimal, under 30% in `CamelCase` identifiers) or by many
/// digits, and a Shannon entropy of at least 3.3 bits per character.
fn is_random(s: &str) -> bool {
    let class = |c: u8| match c {
        b'A'..=b'Z' => 1u8,
        b'a'..=b'z' => 2,
        b'0'..=b'9' => 3,
        _ => 0,
    };
    let b = s.as_bytes();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    if letters < 2 || digits == b.len() || b.len() < 8 {
        return false;
    }
    let switches = b.windows(2).filter(|w| class(w[0]) != class(w[1])).count();
    let ratio = switches as f64 / (b.len() - 1) as f64;
    (ratio >= 0.35 || digits >= 4) && entropy(s) >= 3.3
}

/// Shannon entropy in bits per byte.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

static LONG_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s"'(=])--([A-Za-z][A-Za-z0-9_-]*)(?:=|[ \t]+)"#).expect("valid flag regex")
});

/// Short flags that take a password, each after the command it belongs to, and the other
/// places a password follows a fixed word (`.netrc`, XML elements).
static SHORT_FLAGS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // --user user:pass (the password after the first colon), anywhere.
        r#"(?:^|[\s"'])--user(?:=|[ \t]+)['"]?[^\s'":]+:([^\s'"]+)"#,
        // curl -u user:pass, -uuser:pass: `-u` means this only after curl.
        r#"\bcurl\b[^\n|;&]*?[ \t]-u(?:[ \t]+)?['"]?[^\s'":]+:([^\s'"]+)"#,
        // mysql -pSECRET (glued; `-p` alone prompts).
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]*?[ \t]-p([^\s'\x22]+)",
        // sshpass -p SECRET, -pSECRET.
        r"\bsshpass\b[^\n|;&]*?[ \t]-p[ \t]*['\x22]?([^\s'\x22]+)",
        // docker/podman/helm/… login -p SECRET.
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm|crane)\b[^\n|;&]*?\blogin\b[^\n|;&]*?[ \t]-p[ \t]+['\x22]?([^\s'\x22]+)",
        // redis-cli -a SECRET.
        r"\bredis-cli\b[^\n|;&]*?[ \t]-a[ \t]+['\x22]?([^\s'\x22]+)",
        // A .netrc entry: machine HOST login USER password SECRET.
        r"\bmachine[ \t]+\S+[ \t\n]+login[ \t]+\S+[ \t\n]+password[ \t]+([^\s'\x22]+)",
        // An XML element whose name is a credential: <password>SECRET</password>.
        r"(?i)<[A-Za-z_.:-]*(?:password|passwd|secret|token|apikey|api_key|accesskey)>([^<\s]{4,})</",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("valid short-flag regex"))
    .collect()
});

fn flag_spans(t: &str, out: &mut Spans) {
    if t.contains("--") {
        for c in LONG_FLAG.captures_iter(t) {
            let name = c.get(1).expect("group 1 always takes part");
            if !key_is_secret(name.as_str()) {
                continue;
            }
            let at = c.get(0).expect("whole match").end();
            if t[at..].starts_with('-') {
                continue;
            }
            let (s, e) = value_span(t, at);
            if s < e && !is_plain_value(&t[s..e], name.as_str()) {
                out.push((s, e));
            }
        }
    }
    for re in SHORT_FLAGS.iter() {
        for c in re.captures_iter(t) {
            let m = c.get(1).expect("group 1 always takes part");
            let v = m.as_str();
            // A value with no letter or digit (`-u:(`) is punctuation, not a password.
            if v.starts_with('-')
                || !v.bytes().any(|c| c.is_ascii_alphanumeric())
                || is_placeholder(v)
                || v.contains(REDACTED)
            {
                continue;
            }
            out.push((m.start(), m.end()));
        }
    }
}

/// The key of an assignment and its operator, up to where the value starts. A closing quote
/// of the key may be escaped (JSON inside a JSON string).
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)([A-Za-z0-9_.-]*(?:pass|pwd|secret|token|key|auth|credential|sig)[A-Za-z0-9_.-]*)(?:\\*["'])?[ \t]*(?:=>|:=|[:=])[ \t]*"#,
    )
    .expect("valid assignment regex")
});

/// Values of assignments whose name is a credential.
fn assignment_spans(t: &str, out: &mut Spans) {
    let b = t.as_bytes();
    let mut pos = 0;
    while let Some(c) = ASSIGNMENT_KEY.captures_at(t, pos) {
        let whole = c.get(0).expect("whole match");
        let key = c.get(1).expect("group 1 always takes part");
        pos = whole.end().max(pos + 1);
        let mut name = key.as_str();
        // The letter of a JSON escape is not part of the name (`\napi_key=`).
        if key.start() > 0 && b[key.start() - 1] == b'\\' {
            if name.len() > 5
                && name.starts_with('u')
                && name[1..5].bytes().all(|x| x.is_ascii_hexdigit())
            {
                name = &name[5..];
            } else if name.starts_with(['n', 'r', 't', 'b', 'f']) {
                name = &name[1..];
            }
        }
        if !key_is_secret(name) {
            continue;
        }
        // `a == b` and `x => y` in code are comparisons and arrows, not assignments.
        if b.get(whole.end()) == Some(&b'=') {
            continue;
        }
        let (s, e) = value_span(t, whole.end());
        pos = pos.max(e);
        if s < e && !is_plain_value(&t[s..e], name) {
            out.push((s, e));
        }
    }
}

static NAME_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:["']?\b(?:name|key|parameterkey|parametername|variable)["']?[ \t]*[:=][ \t]*|\bvariable[ \t]+)["']?([A-Za-z_][A-Za-z0-9_.-]*)"#,
    )
    .expect("valid name regex")
});

static VALUE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)["']?\b(?:value|default|parametervalue)["']?[ \t]*[:=][ \t]*"#)
        .expect("valid value regex")
});

/// Name/value pairs (Kubernetes `env`, ECS and GitLab variables, CloudFormation parameters,
/// Terraform `variable` defaults): when the name is a credential, the value that follows it
/// (within a few lines) is a secret.
fn name_value_spans(t: &str, out: &mut Spans) {
    let names: Vec<_> = NAME_KEY.captures_iter(t).collect();
    for (i, c) in names.iter().enumerate() {
        let name = c.get(1).expect("group 1 always takes part");
        if !key_is_secret(name.as_str()) {
            continue;
        }
        let from = name.end();
        // The value belongs to this name only up to the next name.
        let next = names
            .get(i + 1)
            .map_or(t.len(), |n| n.get(0).expect("whole match").start());
        let mut to = (from + 300).min(next).max(from);
        while !t.is_char_boundary(to) {
            to -= 1;
        }
        let Some(v) = VALUE_KEY.find(&t[from..to]) else {
            continue;
        };
        let at = from + v.end();
        let (s, e) = value_span(t, at);
        if s < e && !is_plain_value(&t[s..e], name.as_str()) {
            out.push((s, e));
        }
    }
}

/// CSV exports (an AWS console credentials file): when a header line names a secret column,
/// that column of the following rows is a secret.
fn csv_spans(t: &str, out: &mut Spans) {
    if !t.contains(',') {
        return;
    }
    let mut header: Option<(usize, Vec<usize>)> = None;
    let mut offset = 0;
    for line in t.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some((cols, secret)) = &header {
            let cells = cells(body, start);
            if cells.len() == *cols && !body.trim().is_empty() {
                for &i in secret {
                    let (s, e) = cells[i];
                    let v = &t[s..e];
                    if !v.is_empty() && !is_plain_value(v, "") {
                        out.push((s, e));
                    }
                }
                continue;
            }
            header = None;
        }
        if body.len() > 400 || !body.contains(',') {
            continue;
        }
        let mut cells = cells(body, start);
        // The first label may follow other text on its line (`{"content": "User name,…`).
        if let Some(first) = cells.first_mut() {
            let c = &t[first.0..first.1];
            let label = c
                .rfind(|x: char| !(x.is_ascii_alphanumeric() || matches!(x, ' ' | '_' | '-' | '.')))
                .map_or(0, |i| i + c[i..].chars().next().map_or(1, char::len_utf8));
            first.0 += label;
            first.0 += t[first.0..first.1].len() - t[first.0..first.1].trim_start().len();
        }
        let labels = cells.iter().all(|&(s, e)| {
            let c = &t[s..e];
            !c.is_empty()
                && c.len() <= 40
                && c.starts_with(|x: char| x.is_ascii_alphabetic())
                && c.bytes()
                    .all(|x| x.is_ascii_alphanumeric() || matches!(x, b' ' | b'_' | b'-' | b'.'))
        });
        if !labels {
            continue;
        }
        let secret: Vec<usize> = cells
            .iter()
            .enumerate()
            .filter(|&(_, &(s, e))| key_is_secret(&t[s..e]))
            .map(|(i, _)| i)
            .collect();
        if !secret.is_empty() {
            header = Some((cells.len(), secret));
        }
    }
}

/// The byte ranges of the cells of one CSV line (trimmed, outer quotes removed).
fn cells(line: &str, offset: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut s = 0;
    for cell in line.split(',') {
        let lead = cell.len() - cell.trim_start().len();
        let trimmed = cell.trim();
        let (a, z) = if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
            (lead + 1, lead + trimmed.len() - 1)
        } else {
            (lead, lead + trimmed.len())
        };
        out.push((offset + s + a, offset + s + z));
        s += cell.len() + 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Names and values.

/// Words that make a name a credential when a word of the name ends with them.
const SECRET_WORDS: [&str; 7] = [
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "credential",
];

/// Words that make a name a credential when they are a whole word of it.
const SECRET_EXACT: [&str; 6] = ["pass", "pwd", "apikey", "auth", "sig", "credentials"];

/// Words before `key` that make it a credential (`access_key`, `AccountKey`).
const KEY_QUALIFIERS: [&str; 24] = [
    "api",
    "access",
    "private",
    "secret",
    "client",
    "master",
    "signing",
    "encryption",
    "account",
    "shared",
    "app",
    "auth",
    "license",
    "session",
    "service",
    "webhook",
    "deploy",
    "consumer",
    "admin",
    "storage",
    "subscription",
    "hmac",
    "crypt",
    "x",
];

/// Last words that make a name *about* a credential, not one (`token_type`, `secretName`,
/// `api_key_env`, `password_min_length`, `token_url`).
const META_WORDS: [&str; 64] = [
    "env",
    "var",
    "vars",
    "variable",
    "name",
    "names",
    "file",
    "files",
    "path",
    "paths",
    "dir",
    "type",
    "types",
    "kind",
    "format",
    "length",
    "len",
    "min",
    "max",
    "size",
    "count",
    "limit",
    "url",
    "uri",
    "endpoint",
    "host",
    "port",
    "field",
    "header",
    "prefix",
    "suffix",
    "ttl",
    "expiry",
    "expires",
    "expiration",
    "lifetime",
    "timeout",
    "ref",
    "arn",
    "policy",
    "rotation",
    "enabled",
    "required",
    "hint",
    "label",
    "mode",
    "source",
    "provider",
    "location",
    "method",
    "scheme",
    "strategy",
    "version",
    "algorithm",
    "helper",
    "usage",
    "stdin",
    "prompt",
    "placeholder",
    "pattern",
    "rule",
    "id",
    "at",
    "in",
];

/// Whether a name (an assignment key, a flag, a CSV column) names a credential itself.
fn key_is_secret(name: &str) -> bool {
    let words = words(name);
    let Some(last) = words.last() else {
        return false;
    };
    if META_WORDS.contains(&last.as_str()) {
        return false;
    }
    if words
        .iter()
        .any(|w| SECRET_EXACT.contains(&w.as_str()) || SECRET_WORDS.iter().any(|s| w.ends_with(s)))
    {
        return true;
    }
    // `key` after a qualifier (`api_key`, `SecretAccessKey`), or an environment name ending
    // in `_KEY` (`STRIPE_KEY`).
    let key_at = words.iter().rposition(|w| w == "key" || w == "keys");
    match key_at {
        Some(i)
            if i > 0
                && words[..i]
                    .iter()
                    .any(|w| KEY_QUALIFIERS.contains(&w.as_str())) =>
        {
            true
        }
        Some(i) if i > 0 => name.contains('_') && !name.bytes().any(|c| c.is_ascii_lowercase()),
        _ => false,
    }
}

/// The lower-case words of a name: split at `_`, `-`, `.`, spaces and camel-case humps.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Assignment values that are plainly not secrets: numbers, booleans, `null`, values shorter
/// than 4 characters, references (`$VAR`, `%VAR%`, `${{ … }}`, `<placeholder>`), structured
/// values (`[`, `{`, `(`), code (`os.environ["X"]`, `getenv(…)`, `settings.X`), environment
/// variable names (`OPENAI_API_KEY`), paths, and the name itself (`password=password`).
fn is_plain_value(v: &str, name: &str) -> bool {
    static CODE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*[(\[]",
            r"|^(?:os|process|env|self|this|settings|config|cfg|conf|secrets|vars|ENV|System|Environment|context|ctx|params|args|options|opts|props|request|req|app|window|import\.meta)\.[A-Za-z_][A-Za-z0-9_.]*$",
            r"|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$",
        ))
        .expect("valid code regex")
    });
    let v = v.trim();
    // A type in a signature (`password: string`, `token: Option<String>`), a capitalised word.
    const TYPES: [&str; 14] = [
        "string", "str", "number", "int", "integer", "bool", "boolean", "bytes", "any", "unknown",
        "object", "float", "char", "text",
    ];
    let word = v.trim_end_matches([',', ';', ')', ':', '{']);
    if TYPES.iter().any(|t| word.eq_ignore_ascii_case(t))
        || (word.len() <= 12
            && word.starts_with(|c: char| c.is_ascii_uppercase())
            && word[1..].bytes().all(|c| c.is_ascii_lowercase()))
    {
        return true;
    }
    // The name of a secret object rather than its value (`existingSecret: my-secret`,
    // `API_KEY=your-api-key-here`): lower-case words, one of them a credential word.
    if v.bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.'))
        && words(v).iter().any(|w| {
            SECRET_WORDS.contains(&w.as_str())
                || SECRET_EXACT.contains(&w.as_str())
                || w == "key"
                || w == "creds"
        })
    {
        return true;
    }
    v.len() < 4
        || v.contains(REDACTED)
        || v.starts_with(['[', '{', '(', '$', '%', '<'])
        // A YAML tag (`!Ref DbPassword`), a borrowed type (`&str`, `&[u8]`).
        || (v.starts_with('!') && v[1..].bytes().all(|c| c.is_ascii_alphabetic()))
        || (v.starts_with('&')
            && v[1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '[' || c == '\'')
            && !v.bytes().any(|c| c.is_ascii_digit()))
        || v.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        || [
            "true",
            "false",
            "null",
            "nil",
            "none",
            "undefined",
            "required",
            "optional",
            "redacted",
        ]
        .iter()
        .any(|w| v.eq_ignore_ascii_case(w))
        || (!name.is_empty() && v.eq_ignore_ascii_case(name))
        || is_placeholder(v)
        || CODE.is_match(v)
        || ((v.starts_with('/') || v.starts_with("./") || v.starts_with("~/") || v.starts_with("../"))
            && !v.contains(char::is_whitespace))
}

/// Values that stand for a secret without being one: templates and masks.
fn is_placeholder(v: &str) -> bool {
    v.starts_with("${")
        || v.starts_with("{{")
        || (v.starts_with('<') && v.ends_with('>'))
        || (v.len() >= 3 && v.bytes().all(|b| b == v.as_bytes()[0]))
        || (v.starts_with('$')
            && v[1..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

/// The byte range of the secret value that starts at `at` (after the operator): the inside of
/// its quotes, or the bare value without trailing punctuation.
fn value_span(text: &str, at: usize) -> (usize, usize) {
    let b = text.as_bytes();
    let rest = &b[at..];
    if rest.starts_with(b"\\\"") {
        // A value inside a JSON string: ends at the next `\"`; `\\\"` is an escaped quote of
        // the inner string and belongs to the value.
        let start = at + 2;
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'\n' | b'"' => break,
                b'\\' => {
                    let run = b[i..].iter().take_while(|&&c| c == b'\\').count();
                    let quote = b.get(i + run) == Some(&b'"');
                    if quote && run == 1 {
                        break;
                    }
                    // An odd run before a quote escapes it for the inner string.
                    i += run + usize::from(quote && run % 2 == 1);
                }
                _ => i += 1,
            }
        }
        return (start, i);
    }
    if let Some(&q) = rest.first().filter(|&&c| c == b'"' || c == b'\'') {
        let start = at + 1;
        let mut i = start;
        while i < b.len() && b[i] != q && b[i] != b'\n' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        return (start, i.min(b.len()));
    }
    let mut i = at;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => break,
            b'"' | b'\'' | b'`' | b'<' | b'>' => break,
            b'\\' if matches!(b.get(i + 1), Some(b'n' | b'r' | b't' | b'"' | b'\'')) => break,
            b';' | b'&' | b',' if starts_pair(&b[i + 1..]) => break,
            _ => i += 1,
        }
    }
    let mut end = i;
    while end > at && matches!(b[end - 1], b',' | b';' | b'.' | b')' | b']' | b'}') {
        end -= 1;
    }
    (at, end)
}

/// Whether `b` starts with `name=` (a name of letters, digits, `_`, `.`, `-` or spaces).
fn starts_pair(b: &[u8]) -> bool {
    let name = b
        .iter()
        .take(64)
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b' '))
        .count();
    name > 0 && b[0].is_ascii_alphabetic() && b.get(name) == Some(&b'=')
}

/// Characters a key or token can be made of.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.' | '~')
}

/// Whether `run` begins like a key: a short all-letter prefix and a separator (`xxxx_…`,
/// `xxxx-…`), a JSON Web Token, a key block, or a random-looking run.
fn starts_like_key(run: &str) -> bool {
    let prefix = run.bytes().take_while(u8::is_ascii_alphabetic).count();
    ((2..=12).contains(&prefix) && matches!(run.as_bytes().get(prefix), Some(b'_' | b'-')))
        || run.starts_with("eyJ")
        || run.starts_with("-----BEGIN")
        || (run.len() >= 16 && is_random(run))
}

/// `Basic` followed by base64 credentials rather than an English word: at least two upper-case
/// and two lower-case letters, or a digit, `+`, `/` or `=` padding.
fn looks_like_credentials(s: &str) -> bool {
    let upper = s.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = s.bytes().filter(u8::is_ascii_lowercase).count();
    (upper >= 2 && lower >= 2) || s.bytes().any(|b| b.is_ascii_digit() || b"+/=".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(redact(input), expected, "input: {input}");
        // Idempotent.
        assert_eq!(redact(expected), expected);
    }

    fn unchanged(input: &str) {
        assert!(
            matches!(redact(input), Cow::Borrowed(_)),
            "mangled: {input} -> {}",
            redact(input)
        );
    }

    #[test]
    fn provider_keys() {
        check(
            "key sk-proj-AbCdEf0123456789AbCdEf0123 here",
            "key [REDACTED] here",
        );
        check(
            "export ANTHROPIC=sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
            "export ANTHROPIC=[REDACTED]",
        );
        check(
            "g=AIzaSyA1234567890abcdefghijklmnopqrstuv!",
            "g=[REDACTED]!",
        );
        // Found by the property test: a vendor prefix with a low-entropy body.
        check("t xoxb-aaaaaa0AAAaaa0aaaAAaAAAA t", "t [REDACTED] t");
        check("t sk-aaaaaaaaaaaaAAAAaaaaaaaaaaaaaaaa t", "t [REDACTED] t");
        check(
            "t github_pat_aaaaaaaaaaaaaaaaaaaa0aaaaaaaaa t",
            "t [REDACTED] t",
        );
        // ... but not a word after it.
        check(
            "t sk-learn-and-scikit-image t",
            "t sk-learn-and-scikit-image t",
        );
        // Found by the fuzzer: the first redaction shortens the text and brings `Value:` within
        // the window of the credential's name; one call redacts both.
        let far = format!(
            "name:pass={} xx(Value:xxxt",
            "x".repeat(16) + "-" + &"x".repeat(330)
        );
        let once = redact(&far).into_owned();
        assert_eq!(once, "name:pass=[REDACTED] xx(Value:[REDACTED]");
        assert_eq!(redact(&once), once);
        // Found by the property test: `-u:(` is no `curl -u user:pass`.
        check("-u:(\nx", "-u:(\nx");
        check("x -u0:(0 y", "x -u0:(0 y");
        check("curl -u0:pw0 y", "curl -u0:[REDACTED] y");
        check("id AKIA2OGYBAH6TZJVMXQE.", "id [REDACTED].");
        // Digit-heavy ids (too few letters for the upper-key shape) by their prefix.
        check("id AKIA715581H9H4283371.", "id [REDACTED].");
        check("\\nASIA000000A0A0000000", "\\n[REDACTED]");
        check(
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok",
            "[REDACTED] ok",
        );
        check(
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "[REDACTED]",
        );
        check(
            "slack xoxb-2837465019-4829301746523-Ab3dEf9hIj2kLm8nOp4qRs7t end",
            "slack [REDACTED] end",
        );
    }

    #[test]
    fn authorization_values() {
        check(
            "Authorization: Bearer abc.def-ghi_jkl012",
            "Authorization: Bearer [REDACTED]",
        );
        check(
            "curl -H 'Authorization: Basic dXNlcjpwYXNz'",
            "curl -H 'Authorization: Basic [REDACTED]'",
        );
        check(
            "use bearer AbCdEfGhIjKlMnOp1234 for it",
            "use bearer [REDACTED] for it",
        );
        check("Basic dXNlcjpwYXNzd29yZA== x", "Basic [REDACTED] x");
        // Prose is not credentials.
        unchanged("Basic understanding of the bearer of news.");
    }

    #[test]
    fn jwt_pem_urls_and_assignments() {
        check(
            "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
            "t=[REDACTED];",
        );
        check(
            "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbC==\n-----END RSA PRIVATE KEY-----\nb",
            "a\n[REDACTED]\nb",
        );
        check(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n",
            "[REDACTED]",
        );
        check(
            "postgres://admin:hunter2@db.local:5432/app",
            "postgres://admin:[REDACTED]@db.local:5432/app",
        );
        check("redis://:s3cr3t@cache", "redis://:[REDACTED]@cache");
        check(
            "Server=x;User Id=sa;Password=Pa55word!;Database=d",
            "Server=x;User Id=sa;Password=[REDACTED];Database=d",
        );
        check(
            r#"{"api_key": "abcd1234efgh"}"#,
            r#"{"api_key": "[REDACTED]"}"#,
        );
        check(
            "GITHUB_TOKEN=whatever123 make",
            "GITHUB_TOKEN=[REDACTED] make",
        );
        check("secret: hunter22", "secret: [REDACTED]");
        // Not secrets.
        unchanged("max_tokens=4096, tokens_before: 120, password: true, token=$TOKEN");
        unchanged(r#"{"tokens": [1, 2, 3], "key": null}"#);
    }

    #[test]
    fn ordinary_text_is_untouched() {
        unchanged("commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@b.c>");
        unchanged("id 123e4567-e89b-12d3-a456-426614174000 ok");
        unchanged("see https://example.com/path?q=1 and ssh://host/x");
        unchanged("![img](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAKIAIOSFODNN7EXAMPLEAAAA==)");
        unchanged("plain text without any trigger at all");
    }

    #[test]
    fn data_urls_are_kept_around_redactions() {
        check(
            "a sk-proj-Zx81Qm3kLp09TrWv56Yb data:image/png;base64,AKIAIOSFODNN7EXAMPLE== b password=hunter22",
            "a [REDACTED] data:image/png;base64,AKIAIOSFODNN7EXAMPLE== b password=[REDACTED]",
        );
    }

    #[test]
    fn a_cut_never_holds_a_secret_its_context_did_not_show() {
        // Found by the `redact` fuzz target: cutting away the start of a quoted value made the
        // rest read as a fresh assignment with a secret in it.
        let text = "{\"api_key\": \"abc\\c\\\"defSECRETTAI\"defSECRETTAIody\": \"{\\\"api_key\\\": \\\"abc\\\\\\\"def\\\"}\"}";
        for n in 0..=text.chars().count() + 1 {
            for cut in [redacted_head(text, n), redacted_tail(text, n)] {
                assert!(cut.chars().count() <= n, "cut longer than {n}");
                assert!(!contains_secret(&cut), "a cut of {n} holds a secret");
            }
        }
    }

    #[test]
    fn keys_after_json_escapes() {
        // Issue 14, item 1: the letter of an escape is not part of the key's word.
        check(
            r##"{"file_path": "/app/.env.keys", "content": "# keys\nsk-proj-NEWLINEKEY0123456789abcdefABCDEF0123\n"}"##,
            r##"{"file_path": "/app/.env.keys", "content": "# keys\n[REDACTED]\n"}"##,
        );
        check(
            r#"{"command": "printf 'id\tAKIAJSONTABESCAPE234\n'"}"#,
            r#"{"command": "printf 'id\t[REDACTED]\n'"}"#,
        );
        check(
            r"a\r\nghp_abcdefghijklmnopqrstuvwxyz0123456789",
            r"a\r\n[REDACTED]",
        );
        check(
            r"x\u00a0xoxb-2837465019-4829301746523-Ab3dEf9hIj2kLm8nOp4qRs7t\bBearer abcdefghijkl0123",
            r"x\u00a0[REDACTED]\bBearer [REDACTED]",
        );
        check(
            r#"-H \"Accept: x\"\nAuthorization: token abcdef0123456789"#,
            r#"-H \"Accept: x\"\nAuthorization: token [REDACTED]"#,
        );
        check(
            r"\teyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
            r"\t[REDACTED]",
        );
    }

    #[test]
    fn assignment_values_run_to_the_end_of_their_quoting_or_whitespace() {
        // Issue 14, item 3.
        check("password=Tr0ub4dor&3xyzZ next", "password=[REDACTED] next");
        check("db_password=s3cr3t;P4ssw0rdTail", "db_password=[REDACTED]");
        check(
            r#"{"api_key": "abc\"defSECRETTAIL99"}"#,
            r#"{"api_key": "[REDACTED]"}"#,
        );
        check("password: Tr0ub4dor&3xyz", "password: [REDACTED]");
        // JSON inside a JSON string: the inner escaped quote is part of the value.
        check(
            r#"{"body": "{\"api_key\": \"abc\\\"defSECRETTAIL99\", \"n\": 1}"}"#,
            r#"{"body": "{\"api_key\": \"[REDACTED]\", \"n\": 1}"}"#,
        );
        // Escaped whitespace and quotes end an unquoted value inside a JSON string.
        check(
            r#"{"command": "export API_TOKEN=abcdef123\nmake"}"#,
            r#"{"command": "export API_TOKEN=[REDACTED]\nmake"}"#,
        );
        check("secret='it is a secret' rest", "secret='[REDACTED]' rest");
        // The next `name=` of a connection string or query ends the value.
        check(
            "https://h/x?token=abcdef12&page=2 and user=a;password=hunter22;host=db",
            "https://h/x?token=[REDACTED]&page=2 and user=a;password=[REDACTED];host=db",
        );
        check(
            "token=abcdef12;password=ghijkl34",
            "token=[REDACTED];password=[REDACTED]",
        );
        // Trailing punctuation is not part of a value; plain values stay.
        check(
            "call(password=hunter22, x=1)",
            "call(password=[REDACTED], x=1)",
        );
        unchanged("max_tokens=4096, tokens_before: 120. password: true; secret: null.");
    }

    #[test]
    fn cuts_redact_first_and_never_end_inside_a_key() {
        let key = "sk-proj-STRADDLE0123456789abcdefABCDEF";
        let text = format!("{}{key}{}", "a ".repeat(50), " b".repeat(50));
        for n in 90..140 {
            let head = redacted_head(&text, n);
            let tail = redacted_tail(&text, n);
            for piece in [&head, &tail] {
                assert!(piece.chars().count() <= n);
                assert!(!piece.contains("STRADDLE"), "{n}: {piece}");
                assert!(!piece.contains("sk-proj"), "{n}: {piece}");
            }
        }
        // A long key-shaped run that is not a key is cut, not dropped.
        let long = "x".repeat(500);
        assert_eq!(redacted_head(&long, 100), "x".repeat(100));
        assert_eq!(redacted_tail(&long, 100), "x".repeat(100));
        assert_eq!(redacted_head("short", 100), "short");
        assert_eq!(redacted_tail("short", 0), "");
        // Found by the fuzzer: a head cut ending right after the scheme is not a secret.
        let text = "x Authorization: Bearer efghijkl0123 y";
        let head = redacted_head(text, 22);
        assert_eq!(head, "x Authorization: ", "a split word is dropped");
        let head = redacted_head(text, 23);
        assert_eq!(head, "x Authorization: Bearer");
        assert!(!contains_secret(&head));
    }

    /// Secrets of every pattern, with the part that must never survive.
    fn secret() -> impl Strategy<Value = (String, String)> {
        let tok =
            |n: usize| proptest::string::string_regex(&format!("[A-Za-z0-9]{{{n}}}")).unwrap();
        let upper = |n: usize| proptest::string::string_regex(&format!("[A-Z2-7]{{{n}}}")).unwrap();
        prop_oneof![
            tok(32).prop_map(|t| (format!("sk-{t}"), t)),
            tok(32).prop_map(|t| (format!("sk-ant-api03-{t}"), t)),
            tok(35).prop_map(|t| (format!("AIza{t}"), t)),
            upper(16).prop_map(|t| (format!("AKIA{t}"), t)),
            tok(36).prop_map(|t| (format!("ghp_{t}"), t)),
            tok(30).prop_map(|t| (format!("github_pat_{t}"), t)),
            tok(24).prop_map(|t| (format!("xoxb-{t}"), t)),
            tok(24).prop_map(|t| (format!("Authorization: Bearer {t}"), t)),
            tok(24).prop_map(|t| (format!("Bearer {t}"), t)),
            (tok(20), tok(20), tok(20))
                .prop_map(|(a, b, c)| (format!("eyJ{a}.eyJ{b}.{c}"), format!("{b}.{c}"))),
            tok(40).prop_map(|t| (
                format!("-----BEGIN PRIVATE KEY-----\n{t}\n-----END PRIVATE KEY-----"),
                t
            )),
            tok(12).prop_map(|t| (format!("postgres://user:{t}@host/db"), t)),
            tok(12).prop_map(|t| (format!("password={t}"), t)),
            tok(12).prop_map(|t| (format!("db_secret: \"{t}\""), t)),
            tok(12).prop_map(|t| (format!("API_TOKEN={t}"), t)),
        ]
    }

    fn filler() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-z0-9 .,:;()\\n-]{0,80}").unwrap()
    }

    proptest! {
        #[test]
        fn planted_secrets_never_survive(
            a in filler(), b in filler(), (s, core) in secret()
        ) {
            let text = format!("{a} {s} {b}");
            let out = redact(&text);
            prop_assert!(!out.contains(&core), "survived: {core} in {out}");
            prop_assert!(out.contains(REDACTED));
            prop_assert_eq!(redact(&out), out.clone());
        }

        #[test]
        fn hashes_uuids_and_images_survive(
            hash in "[0-9a-f]{40}",
            uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            b64 in "[A-Za-z0-9+/]{16,200}={0,2}",
            a in filler(),
        ) {
            let text = format!(
                "{a}\ncommit {hash}\nid {uuid}\n![x](data:image/jpeg;base64,{b64})\n"
            );
            prop_assert_eq!(redact(&text), text.clone());
        }
    }
}
