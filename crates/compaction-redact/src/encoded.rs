//! Base64-wrapped credentials: a bounded blob that decodes to text holding a secret (a
//! Kubernetes `.dockerconfigjson`, `echo … | base64 -d`, a `Basic`-style `user:password`) is
//! redacted whole.

use std::sync::LazyLock;

use regex::Regex;

use super::{Ruleset, Spans, secret_spans_at};

/// A base64 or base64url run long enough to hold a credential.
static BLOB: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_-]{16,}={0,2}").expect("valid blob regex"));

/// The shortest run [`BLOB`] matches.
pub(super) const BLOB_MIN_RUN: usize = 16;

/// The longest blob decoded (longer ones are images and archives, not configuration).
const MAX_BLOB_CHARS: usize = 64 * 1024;
/// At most this many blobs of one text are decoded (a bound on the work per text).
const MAX_BLOBS: usize = 256;
/// Blobs inside blobs: a `.dockerconfigjson` holds base64 `auth` values.
const MAX_DEPTH: usize = 2;

/// The blobs of `t` that decode to a secret; `blob_run`: whether `t` holds a run of
/// [`BLOB_MIN_RUN`] characters of [`BLOB`]'s alphabet ([`Runs`](super::Runs)), without which
/// the blob search is skipped.
pub(super) fn encoded_spans(
    rules: &Ruleset,
    t: &str,
    depth: usize,
    blob_run: bool,
    out: &mut Spans,
) {
    if depth >= MAX_DEPTH || !blob_run {
        return;
    }
    for m in BLOB.find_iter(t).take(MAX_BLOBS) {
        let run = m.as_str();
        if run.len() > MAX_BLOB_CHARS || !plausible(run) {
            continue;
        }
        // Already inside a span found as written.
        if out.iter().any(|&(s, e)| s <= m.start() && m.end() <= e) {
            continue;
        }
        let Some(decoded) = decode(run) else { continue };
        let Ok(text) = std::str::from_utf8(&decoded) else {
            continue;
        };
        if !mostly_printable(text) {
            continue;
        }
        if is_user_password(text) || !secret_spans_at(rules, text, depth + 1).is_empty() {
            out.push((m.start(), m.end()));
        }
    }
}

/// A run that can be base64 of text: one alphabet (not `+`/`/` with `-`/`_`), a length that
/// decodes, letters of both cases (base64 of text always has them), not a path or an
/// identifier (`snake_case_words`, `a/b/c`).
fn plausible(run: &str) -> bool {
    let body = run.trim_end_matches('=');
    let b = body.as_bytes();
    let std = b.iter().any(|c| matches!(c, b'+' | b'/'));
    let url = b.iter().any(|c| matches!(c, b'-' | b'_'));
    if (std && url) || body.len() % 4 == 1 {
        return false;
    }
    let upper = b.iter().filter(|c| c.is_ascii_uppercase()).count();
    let lower = b.iter().filter(|c| c.is_ascii_lowercase()).count();
    let seps = b.iter().filter(|c| matches!(c, b'/' | b'_' | b'-')).count();
    upper >= 2 && lower >= 2 && seps * 6 < b.len()
}

/// Decodes standard or URL-safe base64, padding optional.
fn decode(run: &str) -> Option<Vec<u8>> {
    let body = run.trim_end_matches('=');
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in body.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Text, not binary: at least 8 characters, nearly all printable.
fn mostly_printable(t: &str) -> bool {
    let n = t.chars().count();
    let printable = t
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .count();
    n >= 8 && printable * 20 >= n * 19
}

/// `user:password` as `Basic` credentials and registry `auth` values hold it: one line, a
/// user of name characters, a password of at least 6 characters that is not a port or a
/// plain word.
fn is_user_password(t: &str) -> bool {
    let t = t.trim_end_matches(['\n', '\r']);
    let Some((user, pass)) = t.split_once(':') else {
        return false;
    };
    !user.is_empty()
        && user.len() <= 128
        && user
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'@' | b'+'))
        && pass.len() >= 6
        && !pass.contains(char::is_whitespace)
        && !pass.bytes().all(|c| c.is_ascii_digit())
        && (pass.bytes().any(|c| !c.is_ascii_alphabetic())
            || (pass.bytes().any(|c| c.is_ascii_uppercase())
                && pass.bytes().any(|c| c.is_ascii_lowercase())))
}
