//! Token shapes: vendor tokens (*letters, separator, long random body*), upper-case key
//! ids, and what random-looking text is.

use std::sync::LazyLock;

use regex::Regex;

use super::Spans;

static TOKEN_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9_-]{19,}").expect("valid token-run regex"));

/// Vendor tokens of the shape *letters, separator, long random body*: `xxxx_live_…`,
/// `xxxx-proj-…`, `xxxx_pat_…`, `xxxx-1-…`. The body (the longest part between separators)
/// must be at least 20 characters of random-looking text (digits and letters, mixed case or
/// many digits, high entropy), so identifiers, branch names and hashes of build outputs
/// (`libfoo-3f2a9b8c7d6e5f40`) are left alone.
pub(super) fn token_spans(t: &str, out: &mut Spans) {
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

/// The length of the vendor prefix and its separator that `word` starts with (`ghp_`,
/// `xoxb-`, `sk_`), if any.
pub(super) fn vendor_prefix_len(word: &str) -> Option<usize> {
    let n = word.bytes().take_while(u8::is_ascii_alphanumeric).count();
    (VENDOR_PREFIXES.contains(&&word[..n]) && matches!(word.as_bytes().get(n), Some(b'_' | b'-')))
        .then_some(n + 1)
}

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
pub(super) fn is_random(s: &str) -> bool {
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
