//! Secrets split across neighbouring texts: the end of one tool output and the start of the
//! next (a token cut by a pager, a key printed in two chunks). Each text alone may hold only
//! a fragment no rule knows; the junction of the two is scanned, and what crosses it is
//! redacted on both sides.

use std::borrow::Cow;

use super::{REDACTED, installed, redact, secret_spans};

/// Bytes of each side of a junction that are scanned together.
const JUNCTION_BYTES: usize = 1024;

/// Each of `texts` redacted as by [`redact`](super::redact), and a secret that runs from the
/// end of one text into the start of the next redacted in both.
///
/// ```
/// use compaction_redact::redact_adjacent;
///
/// let token = ["ghp_", "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j"].concat();
/// let (a, b) = token.split_at(20);
/// let (first, second) = (format!("output: {a}"), format!("{b} done"));
/// let out = redact_adjacent(&[&first, &second]);
/// assert!(!out[0].contains(&a[4..]) && !out[1].contains(b), "{out:?}");
/// ```
pub fn redact_adjacent<'a>(texts: &[&'a str]) -> Vec<Cow<'a, str>> {
    redact_junctions(texts)
        .into_iter()
        .map(|t| match t {
            Cow::Borrowed(t) => redact(t),
            Cow::Owned(s) => Cow::Owned(redact(&s).into_owned()),
        })
        .collect()
}

/// Each of `texts` with only what a secret crossing a junction holds replaced by
/// [`REDACTED`](crate::REDACTED): the part of a secret begun in the previous text at its
/// start, the part of one that continues in the next at its end. The rest is returned as
/// written, not redacted, and a text no junction secret reaches is borrowed: for callers that
/// redact each text afterwards in their own way (compaction-core redacts a message's text
/// parts and arguments). [`redact_adjacent`] is this followed by [`redact`](super::redact).
///
/// ```
/// use compaction_redact::redact_junctions;
///
/// let token = ["ghp_", "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j"].concat();
/// let (a, b) = token.split_at(20);
/// let (first, second) = (format!("output: {a}"), format!("{b} done"));
/// let out = redact_junctions(&[&first, &second, "unrelated"]);
/// assert_eq!(out[0], "output: [REDACTED]");
/// assert_eq!(out[1], "[REDACTED] done");
/// assert!(matches!(out[2], std::borrow::Cow::Borrowed("unrelated")));
/// ```
pub fn redact_junctions<'a>(texts: &[&'a str]) -> Vec<Cow<'a, str>> {
    let cuts = junction_cuts(texts);
    texts
        .iter()
        .zip(cuts)
        .map(|(t, (head, tail))| {
            if head == 0 && tail == t.len() {
                return Cow::Borrowed(*t);
            }
            let mut s = String::with_capacity(t.len());
            if head > 0 {
                s.push_str(REDACTED);
            }
            s.push_str(&t[head..tail.max(head)]);
            if tail < t.len() {
                s.push_str(REDACTED);
            }
            Cow::Owned(s)
        })
        .collect()
}

/// For each text, the byte range that survives the junctions: `(head, tail)` where
/// `..head` belongs to a secret begun in the previous text and `tail..` to one that
/// continues in the next.
fn junction_cuts(texts: &[&str]) -> Vec<(usize, usize)> {
    let mut cuts: Vec<(usize, usize)> = texts.iter().map(|t| (0, t.len())).collect();
    if texts.len() < 2 {
        return cuts;
    }
    let rules = installed();
    for i in 0..texts.len() - 1 {
        let (a, b) = (texts[i], texts[i + 1]);
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let mut from = a.len().saturating_sub(JUNCTION_BYTES);
        while !a.is_char_boundary(from) {
            from += 1;
        }
        let mut to = b.len().min(JUNCTION_BYTES);
        while !b.is_char_boundary(to) {
            to -= 1;
        }
        let tail = &a[from..];
        let joined = format!("{tail}{}", &b[..to]);
        let edge = tail.len();
        for (s, e) in secret_spans(&rules, &joined) {
            if s <= edge && e > edge {
                if s < edge {
                    cuts[i].1 = cuts[i].1.min(from + s);
                }
                cuts[i + 1].0 = cuts[i + 1].0.max(e - edge);
            }
        }
    }
    cuts
}
