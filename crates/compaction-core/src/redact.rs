//! Secret redaction: pure text in, text out.
//!
//! [`redact`] replaces credentials with [`REDACTED`] before anything is sent to a summarizer,
//! and again on what the summarizer returns. The recognised patterns:
//!
//! - provider API keys: OpenAI and Anthropic (`sk-…`), Google (`AIza…`), AWS access key ids
//!   (`AKIA…`, `ASIA…`), GitHub tokens (`ghp_…`, `gho_…`, `ghu_…`, `ghs_…`, `ghr_…`,
//!   `github_pat_…`), Slack tokens (`xoxb-…` and friends);
//! - the value of an `Authorization:` header, `Bearer <token>`, and `Basic <credentials>`;
//! - JSON Web Tokens (three base64url segments, the first two starting `eyJ`);
//! - PEM private-key blocks (`-----BEGIN … PRIVATE KEY-----` to the matching end line);
//! - the password in a URL or connection string (`scheme://user:password@host`);
//! - the value of an assignment whose key names a credential (`password=`, `secret:`,
//!   `"api_key": "…"`, `GITHUB_TOKEN=…`, `aws_secret_access_key = …`). Values that are plainly
//!   not secrets are left alone: numbers, booleans, `null`, values shorter than 4 characters,
//!   environment references (`$VAR`), and structured values (`[`, `{`, `(`).
//!
//! Ordinary text is not touched: git hashes, UUIDs, and base64 `data:` URLs (image payloads)
//! pass through byte-identical; `data:` URLs are skipped as a whole, so a key-shaped run of
//! characters inside image data is never rewritten. Text with none of the trigger substrings
//! is returned borrowed after one fast scan, so redacting megabytes of ordinary text is cheap.
//! Redaction is idempotent: `redact(redact(x)) == redact(x)`.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

use crate::message::{Content, Message};

/// The replacement text for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces every recognised secret in `text` with [`REDACTED`] (see the [module docs](self)).
///
/// Returns the input borrowed when nothing was replaced.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !TRIGGER.is_match(text) {
        return Cow::Borrowed(text);
    }
    // Split around base64 data URLs, which are copied verbatim.
    let mut out = String::new();
    let mut changed = false;
    let mut last = 0;
    for m in DATA_URL.find_iter(text) {
        let red = redact_plain(&text[last..m.start()]);
        changed |= matches!(red, Cow::Owned(_));
        out.push_str(&red);
        out.push_str(m.as_str());
        last = m.end();
    }
    let red = redact_plain(&text[last..]);
    if !changed && matches!(red, Cow::Borrowed(_)) {
        return Cow::Borrowed(text);
    }
    out.push_str(&red);
    Cow::Owned(out)
}

/// Whether `text` contains anything [`redact`] would replace.
pub fn contains_secret(text: &str) -> bool {
    matches!(redact(text), Cow::Owned(_))
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

// ---------------------------------------------------------------------------------------------

/// Cheap pre-check: every pattern below needs one of these substrings.
static TRIGGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i:pass|pwd|secret|token|key|auth|bearer|basic)|sk-|AIza|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|xox[abposr]-|eyJ|-----BEGIN|://",
    )
    .expect("valid trigger regex")
});

/// What may precede a key: the start, a character that is not a word character (ASCII
/// letters, digits, `_`), or a JSON escape whose letter would otherwise glue the key to it
/// (`\n`, `\t`, `\r`, `\b`, `\f`, `\u00a0`). Captured as group 1 and written back.
macro_rules! boundary {
    () => {
        r"(^|[^A-Za-z0-9_]|\\[nrtbf]|\\u[0-9A-Fa-f]{4})"
    };
}

static DATA_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[A-Za-z0-9.+/-]+(?:;[A-Za-z0-9=.-]+)*;base64,[A-Za-z0-9+/=]+")
        .expect("valid data URL regex")
});

static PEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\n]*)",
    )
    .expect("valid PEM regex")
});

static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)@").expect("valid URL regex")
});

static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)"#,
        boundary!(),
        r#"((?:proxy-)?authorization(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)((?:bearer|basic|token|bot)\s+)?([^\s"',;\\]+)"#
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

static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        boundary!(),
        r"(?:eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?",
        r"|sk-[A-Za-z0-9_-]{20,}",
        r"|AIza[0-9A-Za-z_-]{35}",
        r"|(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        r"|gh[pousr]_[A-Za-z0-9]{30,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[abposr]-[A-Za-z0-9-]{10,})",
    ))
    .expect("valid token regex")
});

/// The key of an assignment and its operator, up to where the value starts. A closing quote
/// of the key may be escaped (JSON inside a JSON string).
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?key)[A-Za-z0-9_.-]*(?:\\?["'])?[ \t]*[:=][ \t]*"#,
    )
    .expect("valid assignment regex")
});

fn redact_plain(text: &str) -> Cow<'_, str> {
    if !TRIGGER.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut cur: Cow<'_, str> = Cow::Borrowed(text);
    cur = apply(cur, &PEM, |_| REDACTED.to_owned());
    cur = apply(cur, &URL_PASSWORD, |c| format!("{}{REDACTED}@", &c[1]));
    cur = apply(cur, &AUTH_HEADER, |c| {
        // Already redacted, or only the scheme (`Authorization: Bearer` at the end of a cut).
        let scheme_only = c.get(3).is_none()
            && ["bearer", "basic", "token", "bot"]
                .iter()
                .any(|w| c[4].eq_ignore_ascii_case(w));
        if c[4].starts_with('[') || scheme_only {
            return c[0].to_owned();
        }
        let scheme = c.get(3).map_or("", |m| m.as_str());
        format!("{}{}{scheme}{REDACTED}", &c[1], &c[2])
    });
    cur = apply(cur, &BEARER, |c| format!("{}{}{REDACTED}", &c[1], &c[2]));
    cur = apply(cur, &BASIC, |c| {
        if looks_like_credentials(&c[3]) {
            format!("{}{}{REDACTED}", &c[1], &c[2])
        } else {
            c[0].to_owned()
        }
    });
    cur = apply(cur, &TOKENS, |c| format!("{}{REDACTED}", &c[1]));
    match assignments(&cur) {
        Some(out) => Cow::Owned(out),
        None => cur,
    }
}

/// Replaces the values of credential assignments; `None` when nothing was replaced.
///
/// A value runs to the end of its quoting (escaped quotes included, at one or two levels of
/// JSON escaping), or, unquoted, to whitespace, a quote, an escaped newline, tab or quote, or a
/// `;`, `&` or `,` that starts the next `name=` pair (`Server=x;Password=p;Database=d`).
fn assignments(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut pos = 0;
    while let Some(m) = ASSIGNMENT_KEY.find_at(text, pos) {
        let (start, end) = value_span(text, m.end());
        pos = end.max(m.end());
        if start >= end || is_plain_value(&text[start..end]) {
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
        o.push_str(&text[copied..start]);
        o.push_str(REDACTED);
        copied = end;
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
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

/// Runs one replacement, keeping the borrow when nothing matched or nothing changed.
fn apply<'t>(
    text: Cow<'t, str>,
    re: &Regex,
    rep: impl Fn(&Captures<'_>) -> String,
) -> Cow<'t, str> {
    let replaced = match re.replace_all(&text, |c: &Captures<'_>| rep(c)) {
        Cow::Borrowed(_) => return text,
        Cow::Owned(s) => s,
    };
    if replaced == *text {
        text
    } else {
        Cow::Owned(replaced)
    }
}

/// Characters a key or token can be made of.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.' | '~')
}

/// Whether `run` begins with the prefix of a key shape [`redact`] knows.
fn starts_like_key(run: &str) -> bool {
    const PREFIXES: [&str; 15] = [
        "sk-",
        "AIza",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "xox",
        "eyJ",
        "-----BEGIN",
    ];
    PREFIXES.iter().any(|p| run.starts_with(p))
}

/// `Basic` followed by base64 credentials rather than an English word: at least two upper-case
/// and two lower-case letters, or a digit, `+`, `/` or `=` padding.
fn looks_like_credentials(s: &str) -> bool {
    let upper = s.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = s.bytes().filter(u8::is_ascii_lowercase).count();
    (upper >= 2 && lower >= 2) || s.bytes().any(|b| b.is_ascii_digit() || b"+/=".contains(&b))
}

/// Assignment values that are plainly not secrets.
fn is_plain_value(v: &str) -> bool {
    v.len() < 4
        || v.starts_with(['[', '{', '(', '$', '%'])
        || v.bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        || [
            "true",
            "false",
            "null",
            "none",
            "undefined",
            "required",
            "optional",
        ]
        .iter()
        .any(|w| v.eq_ignore_ascii_case(w))
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
        check("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED].");
        check(
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok",
            "[REDACTED] ok",
        );
        check(
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "[REDACTED]",
        );
        check(
            "slack xoxb-1234567890-abcdefghij end",
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
            "a sk-abcdefghijklmnopqrstuvwxyz data:image/png;base64,AKIAIOSFODNN7EXAMPLE== b password=hunter22",
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
            r#"{"command": "printf 'id\tAKIAJSONTABESCAPE123\n'"}"#,
            r#"{"command": "printf 'id\t[REDACTED]\n'"}"#,
        );
        check(
            r"a\r\nghp_abcdefghijklmnopqrstuvwxyz0123456789",
            r"a\r\n[REDACTED]",
        );
        check(
            r"x\u00a0xoxb-1234567890-abcdefghij\bBearer abcdefghijkl0123",
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
        let upper = |n: usize| proptest::string::string_regex(&format!("[A-Z0-9]{{{n}}}")).unwrap();
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
