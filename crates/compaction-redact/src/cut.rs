//! Cutting redacted text: [`redacted_head`] and [`redacted_tail`] redact before they cut,
//! and a cut never ends inside a key.

use super::shapes::is_random;
use super::{REDACTED, contains_secret, redact};

/// The first `n` characters of `text` after redaction, for cutting long text safely.
///
/// The redaction runs before the cut, over the kept part plus a margin of 16 K characters
/// (longer than any key, token or PEM block the patterns know), so a secret straddling the
/// cut is recognised whole (a cut never turns a key into a fragment the patterns no longer
/// match), and the cost follows `n`, not the length of `text`. A run of key characters split
/// by the cut is dropped when it is short (under 128 characters) or starts like a key, so a
/// cut never ends in part of a key either.
pub fn redacted_head(text: &str, n: usize) -> String {
    let window = match text.char_indices().nth(n.saturating_add(CUT_MARGIN)) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    let red = redact(window);
    let cut = match red.char_indices().nth(n) {
        Some((i, _)) => placeholder_start(&red, i),
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
        Some((i, _)) if i > 0 => placeholder_end(&red, i),
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

/// `cut`, or the start of the [`REDACTED`] placeholder it falls inside: a placeholder cut in
/// half (`password=[REDACTED`) reads as a value again, and every further redaction and cut
/// would rebuild it, so the head keeps none of it.
fn placeholder_start(red: &str, cut: usize) -> usize {
    red.match_indices(REDACTED)
        .map(|(s, _)| s)
        .take_while(|&s| s < cut)
        .find(|&s| cut < s + REDACTED.len())
        .unwrap_or(cut)
}

/// `cut`, or the end of the [`REDACTED`] placeholder it falls inside; the counterpart of
/// [`placeholder_start`] for a tail.
fn placeholder_end(red: &str, cut: usize) -> usize {
    red.match_indices(REDACTED)
        .map(|(s, _)| s)
        .take_while(|&s| s < cut)
        .find(|&s| cut < s + REDACTED.len())
        .map_or(cut, |s| s + REDACTED.len())
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

/// Characters redacted beyond a cut by [`redacted_head`] and [`redacted_tail`]: longer than
/// any key, token or PEM block the patterns know, so a secret straddling a cut is seen whole.
const CUT_MARGIN: usize = 16 * 1024;

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
