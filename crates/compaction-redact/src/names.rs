//! Names and values: whether a name is a credential, and whether a value is plainly not a
//! secret.

use std::sync::LazyLock;

use regex::Regex;

use super::REDACTED;

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
pub(super) fn key_is_secret(name: &str) -> bool {
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
pub(super) fn is_plain_value(v: &str, name: &str) -> bool {
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
pub(super) fn is_placeholder(v: &str) -> bool {
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
pub(super) fn value_span(text: &str, at: usize) -> (usize, usize) {
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

/// Whether `word` looks like a token rather than a name: a part (between `_`, `-`, `.`, `/`)
/// of at least 20 characters that is random-looking letters and digits (12 with two digits
/// and both cases; not hexadecimal: commit and content hashes are names), a vendor prefix
/// with part of a body (`ghp_…`), or a whole word of at least 32 such characters with both
/// cases and digits. The names indexes leave such
/// words out, so a fragment of a credential no rule knows (half of a split key, a vendor
/// format newer than the ruleset) is not copied into a rewritten message.
///
/// ```
/// use compaction_redact::looks_like_token;
///
/// assert!(looks_like_token(&["aB3x", "Qz9LmN2pR7sT4vW8yK1cD5"].concat()));
/// assert!(!looks_like_token("src/compaction_core/redact_names.rs"));
/// assert!(!looks_like_token("parse_arguments_v2"));
/// ```
pub fn looks_like_token(word: &str) -> bool {
    let part_random = word.split(['_', '-', '.', '/']).any(|p| {
        let b = p.as_bytes();
        let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
        let mixed = b.iter().any(u8::is_ascii_uppercase) && b.iter().any(u8::is_ascii_lowercase);
        b.iter().all(u8::is_ascii_alphanumeric)
            && !b.iter().all(u8::is_ascii_hexdigit)
            && (b.len() >= 20 || (b.len() >= 12 && digits >= 2 && mixed))
            && super::shapes::is_random(p)
    });
    // A vendor prefix and part of a body: the first half of a split token.
    let vendor_fragment = super::shapes::vendor_prefix_len(word).is_some_and(|n| {
        let body = &word[n..];
        body.len() >= 8 && body.bytes().all(|c| c.is_ascii_alphanumeric())
    });
    let b = word.as_bytes();
    let whole = b.len() >= 32
        && b.iter().any(u8::is_ascii_digit)
        && b.iter().any(u8::is_ascii_uppercase)
        && b.iter().any(u8::is_ascii_lowercase)
        && b.iter().filter(|c| c.is_ascii_alphanumeric()).count() * 10 >= b.len() * 9;
    part_random || whole || vendor_fragment
}
