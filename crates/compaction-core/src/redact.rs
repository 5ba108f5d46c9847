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

// ---------------------------------------------------------------------------------------------

/// Cheap pre-check: every pattern below needs one of these substrings.
static TRIGGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i:pass|pwd|secret|token|key|auth|bearer|basic)|sk-|AIza|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abposr]-|eyJ|-----BEGIN|://",
    )
    .expect("valid trigger regex")
});

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
    Regex::new(
        r#"(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|bot)\s+)?([^\s"',;]+)"#,
    )
    .expect("valid auth header regex")
});

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\b[Bb]earer\s+)([A-Za-z0-9._~+/=-]{12,})").expect("valid bearer regex")
});

static BASIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\b[Bb]asic\s+)([A-Za-z0-9+/]{8,}={0,2})").expect("valid basic regex")
});

static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        r"|\bsk-[A-Za-z0-9_-]{20,}",
        r"|\bAIza[0-9A-Za-z_-]{35}",
        r"|\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{30,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{22,}",
        r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
    ))
    .expect("valid token regex")
});

static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(\b[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?key)[A-Za-z0-9_.-]*["']?\s*[:=]\s*["']?)([^\s"',;&<>]+)"#,
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
        if c[3].starts_with('[') {
            return c[0].to_owned();
        }
        let scheme = c.get(2).map_or("", |m| m.as_str());
        format!("{}{scheme}{REDACTED}", &c[1])
    });
    cur = apply(cur, &BEARER, |c| format!("{}{REDACTED}", &c[1]));
    cur = apply(cur, &BASIC, |c| {
        if looks_like_credentials(&c[2]) {
            format!("{}{REDACTED}", &c[1])
        } else {
            c[0].to_owned()
        }
    });
    cur = apply(cur, &TOKENS, |_| REDACTED.to_owned());
    cur = apply(cur, &ASSIGNMENT, |c| {
        if is_plain_value(&c[2]) {
            c[0].to_owned()
        } else {
            format!("{}{REDACTED}", &c[1])
        }
    });
    cur
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
