//! Secret redaction for hermes-compaction: pure text in, text out.
//!
//! This crate knows nothing of messages, transcripts, async, I/O, HTTP or SQL: it takes and
//! returns strings. compaction-core redacts the messages it hands a summarizer with it, and the
//! adapters and the facade redact what they log, store or return.
//!
//! [`redact`] replaces credentials with [`REDACTED`] in everything that leaves the process
//! (summarizer material and messages, summaries, the ledger, prune one-liners and shortened
//! arguments, recall results). It is one engine with two layers of detection:
//!
//! 1. **A ruleset in gitleaks' format** ([`Ruleset`]). The provider-specific shapes (cloud,
//!    source hosting, CI, AI providers, payments, messaging and mail, Vault, Doppler, Okta,
//!    …) are rules in the format of gitleaks' configuration: each rule's keywords gate it (one
//!    Aho-Corasick pass finds which keywords occur), its regex finds the secret in its secret
//!    group, its entropy floor and allowlists are honoured. The bundled ruleset
//!    ([`bundled`], written for this project) is used unless another is
//!    [`install`]ed (the facade's `compression.redaction_rules`, which takes gitleaks' own
//!    file as it is). A rule that cannot be used is listed in [`Ruleset::skipped`] with its
//!    reason, never dropped silently.
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
//!    - `Cookie:`/`Set-Cookie:` values and curl's `-b`/`--cookie`; the credential after an
//!      `Authorization:` scheme the rules do not name (`SSWS`, `Negotiate`), the scheme word
//!      kept; the private members of a JSON Web Key (`d`, `p`, `q`, `dp`, `dq`, `qi`, `k`);
//!    - base64 blobs (bounded in length and number) that decode to text holding a secret or
//!      a `user:password` pair: a `.dockerconfigjson`, `echo … | base64 -d`; the whole blob;
//!    - a secret split across two neighbouring texts (the end of one tool output and the
//!      start of the next): [`redact_adjacent`] scans the junction and redacts both halves;
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

use regex::Regex;

use context::{
    DATA_URL, assignment_spans, cookie_spans, csv_spans, flag_spans, header_spans, jwk_spans,
    key_block_spans, name_value_spans, url_spans,
};
use shapes::token_spans;
use view::{View, needs_view};

mod context;
mod cut;
mod encoded;
mod error;
mod junction;
mod names;
mod ruleset;
mod shapes;
mod view;

pub use cut::{redacted_head, redacted_tail};
pub use error::{Error, Result};
pub use junction::{redact_adjacent, redact_junctions};
pub use names::looks_like_token;
pub use ruleset::{Finding, Ruleset, SkippedRule, bundled, install, installed};

/// The replacement text for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces every recognised secret in `text` with [`REDACTED`] (see the [crate docs](crate)).
///
/// Returns the input borrowed when nothing was replaced.
///
/// ```
/// use compaction_redact::redact;
///
/// let key = ["sk_live_", "4eC39HqLyjWDarjtT1zdp7dc"].concat();
/// assert_eq!(redact(&format!("STRIPE={key} ok")), "STRIPE=[REDACTED] ok");
/// // Code that merely names a secret survives.
/// let code = r#"SECRET_KEY = os.environ["SECRET_KEY"]"#;
/// assert_eq!(redact(code), code);
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_with(&installed(), text)
}

/// [`redact`] with `rules` in place of the installed ruleset.
pub(crate) fn redact_with<'t>(rules: &Ruleset, text: &'t str) -> Cow<'t, str> {
    let spans = secret_spans(rules, text);
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
        let spans = secret_spans(rules, &out);
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
    !secret_spans(&installed(), text).is_empty()
}

// ---------------------------------------------------------------------------------------------
// The engine: every detector reports byte ranges of secrets; the ranges are merged and each
// is written as one `[REDACTED]`.

type Spans = Vec<(usize, usize)>;

/// The merged, sorted secret ranges of `text`, outside `data:` URLs.
fn secret_spans(rules: &Ruleset, text: &str) -> Spans {
    secret_spans_at(rules, text, 0)
}

/// [`secret_spans`] at a depth of base64 decoding (`depth` blobs already decoded around it).
fn secret_spans_at(rules: &Ruleset, text: &str, depth: usize) -> Spans {
    if text.is_empty() {
        return Vec::new();
    }
    let mut spans = Vec::new();
    let runs = Runs::of(text);
    if needs_view(text) {
        let view = View::build(text);
        let mut vs = Vec::new();
        detect(rules, &view.text, Runs::of(&view.text), &mut vs);
        spans.extend(
            vs.into_iter()
                .map(|(s, e)| (view.starts[s], view.starts[e])),
        );
        // The text as written too, for what the view flattens: a value holding escaped quotes
        // (JSON inside JSON), values spelled in non-ASCII characters, and `\\r` read as a
        // backslash and a letter rather than an escape.
        detect(rules, text, runs, &mut spans);
    } else {
        detect(rules, text, runs, &mut spans);
    }
    // Base64 blobs that decode to text holding a secret (a `.dockerconfigjson`, `echo … |
    // base64 -d`): the whole blob.
    encoded::encoded_spans(rules, text, depth, runs.blob, &mut spans);
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
/// nothing for them, and only the ruleset (gated by its own keywords) runs on it. On ASCII
/// text the same gate is read off the ruleset's keyword scan, which holds these literals
/// ([`CONTEXT_LITERALS`], any ASCII case: a little wider, which only runs the detectors more
/// often), and a run of [`CONTEXT_RUN`] identifier characters; this regex serves the rest
/// (its case-insensitive letters also match non-ASCII folds such as the Kelvin sign).
static CONTEXT_TRIGGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i:pass|pwd|secret|token|key|auth|credential|sig|bearer|basic|value|default",
        r"|mysql|mariadb|login|machine|redis-cli|putty|private-|cookie|kty|ssws)",
        r"|-----|://|eyJ|-u|--user|[A-Za-z0-9_-]{20}",
    ))
    .expect("valid trigger regex")
});

/// The literals of [`CONTEXT_TRIGGER`], as its keyword scan's patterns.
pub(crate) const CONTEXT_LITERALS: [&str; 27] = [
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
    "sig",
    "bearer",
    "basic",
    "value",
    "default",
    "mysql",
    "mariadb",
    "login",
    "machine",
    "redis-cli",
    "putty",
    "private-",
    "cookie",
    "kty",
    "ssws",
    "-----",
    "://",
    "eyJ",
    "-u",
    "--user",
];

/// The run of `[A-Za-z0-9_-]` characters that opens [`CONTEXT_TRIGGER`] by itself.
const CONTEXT_RUN: usize = 20;

/// Classes of the two runs the gates look for: bit 0 `[A-Za-z0-9_-]` (the context gate's
/// run), bit 1 `[A-Za-z0-9+/_-]` (a base64 blob's alphabet).
static RUN_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let word = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        table[i] = word as u8 | (((word || c == b'+' || c == b'/') as u8) << 1);
        i += 1;
    }
    table
};

/// Which of the two runs a text holds, found in one byte scan that stops once both are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Runs {
    /// [`CONTEXT_RUN`] characters of `[A-Za-z0-9_-]`.
    context: bool,
    /// [`encoded::BLOB_MIN_RUN`] characters of `[A-Za-z0-9+/_-]`.
    blob: bool,
}

impl Runs {
    pub(crate) fn of(t: &str) -> Runs {
        let (mut word, mut blob) = (0usize, 0usize);
        let mut runs = Runs {
            context: false,
            blob: false,
        };
        for &b in t.as_bytes() {
            let class = RUN_CLASS[b as usize];
            word = if class & 1 != 0 { word + 1 } else { 0 };
            blob = if class & 2 != 0 { blob + 1 } else { 0 };
            runs.context |= word >= CONTEXT_RUN;
            runs.blob |= blob >= encoded::BLOB_MIN_RUN;
            if runs.context && runs.blob {
                break;
            }
        }
        runs
    }
}

/// Whether the context detectors may find something in `t`: [`CONTEXT_TRIGGER`], read off the
/// keyword scan's result (`literal`) and the runs of `t` on ASCII text.
fn context_triggered(t: &str, literal: Option<bool>, runs: Runs) -> bool {
    match literal {
        Some(literal) if t.is_ascii() => literal || runs.context,
        _ => CONTEXT_TRIGGER.is_match(t),
    }
}

/// Every detector over one text (the text as written, or its view).
fn detect(rules: &Ruleset, t: &str, runs: Runs, out: &mut Spans) {
    let literal = rules.spans(t, out);
    if !context_triggered(t, literal, runs) {
        return;
    }
    key_block_spans(t, out);
    url_spans(t, out);
    header_spans(t, out);
    cookie_spans(t, out);
    jwk_spans(t, out);
    token_spans(t, out);
    flag_spans(t, out);
    assignment_spans(t, out);
    name_value_spans(t, out);
    csv_spans(t, out);
}

#[cfg(test)]
mod tests;
