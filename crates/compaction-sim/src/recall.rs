//! Far recall: of the identifiers the agent goes on to use from long ago, the share the prompt
//! still holds.
//!
//! Retention ([`retention`](crate::retention)) counts the facts the ledger copies verbatim, so
//! a ledger satisfies it by construction. Far recall looks at what the recorded session did
//! next instead:
//!
//! - An *identifier* is a run of at least [`MIN_IDENTIFIER_CHARS`] characters of
//!   `[A-Za-z0-9_./-]` that starts and ends with `[A-Za-z0-9_]` (a maximal run with its leading
//!   and trailing `.`, `/`, `-` removed) and contains `_`, `.`, `/`, a digit, or a lower-to-upper
//!   camel step (`fooBar`). Identifiers are taken from the JSON string values of a message's
//!   compact wire JSON (not its keys); a string that is itself a JSON object or array (tool-call
//!   arguments) is searched through its own string values.
//! - For request `r`, answered in the recorded session by assistant message `A_r`: `W_r` is
//!   the set of identifiers of `A_r`'s content and tool-call arguments that occur in some
//!   message before `A_r` (the recorded session, untrimmed). The *far* ones are those of `W_r`
//!   that occur in none of the [`NEAR_MESSAGES`] messages just before `A_r`.
//! - A far identifier is *recalled* when it is an identifier of some message of request `r`'s
//!   prompt as sent (*with summaries*), or of some prompt message that is not a summary marker
//!   (*verbatim*). Occurrence is identity of identifiers, not substring: `lib.rs` is not recalled
//!   by `src/lib.rs`.
//! - Far recall = recalled / far, pooled over all requests; the per-request mean averages the
//!   share over the requests that have far identifiers.
//!
//! Each distinct message (by wire digest) is parsed once per replay; the prompt's identifiers
//! are kept as counts, updated from the first message that changed since the previous request,
//! so a request costs its new messages and its far identifiers, not the whole prompt.

use std::borrow::Cow;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet};

use hermes_compaction::core::{MarkerKind, Message, ledger, marker};
use serde_json::Value;

use crate::retention::{Wire, digest};

/// Shortest identifier, in characters.
pub const MIN_IDENTIFIER_CHARS: usize = 6;

/// Messages just before `A_r` whose identifiers are near (not counted as far).
pub const NEAR_MESSAGES: usize = 10;

/// The identifiers of `text` (see the module docs), in order of appearance, repeats kept.
pub fn identifiers(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let run_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-');
    let edge_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !run_char(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && run_char(bytes[i]) {
            i += 1;
        }
        let mut s = start;
        let mut e = i;
        while s < e && !edge_char(bytes[s]) {
            s += 1;
        }
        while e > s && !edge_char(bytes[e - 1]) {
            e -= 1;
        }
        // ASCII only, so bytes are characters.
        if e - s >= MIN_IDENTIFIER_CHARS && qualifies(&bytes[s..e]) {
            out.push(&text[s..e]);
        }
    }
    out
}

fn qualifies(run: &[u8]) -> bool {
    run.iter()
        .any(|b| matches!(b, b'_' | b'.' | b'/') || b.is_ascii_digit())
        || run
            .windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
}

/// Calls `f` with every string value of `v`, descending into strings that hold JSON
/// containers.
fn strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => match nested(s) {
            Some(inner) => strings(&inner, f),
            None => f(s),
        },
        Value::Array(items) => items.iter().for_each(|x| strings(x, f)),
        Value::Object(map) => map.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}

/// `s` parsed, when it is a JSON object or array.
fn nested(s: &str) -> Option<Value> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(s)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

/// A visitor of strings.
type Visit<'a> = &'a mut dyn FnMut(&str);

fn digests(texts: &mut dyn FnMut(Visit<'_>)) -> Box<[u64]> {
    let mut ids: Vec<u64> = Vec::new();
    texts(&mut |s| ids.extend(identifiers(s).into_iter().map(digest)));
    ids.sort_unstable();
    ids.dedup();
    ids.into_boxed_slice()
}

/// What one distinct message contributes.
#[derive(Debug)]
struct Parsed {
    /// Digests of every identifier of the message, sorted, unique.
    all: Box<[u64]>,
    /// Digests of the identifiers of its content and tool-call arguments (assistant
    /// messages; empty otherwise).
    used: Box<[u64]>,
    /// Digests of the identifiers the message holds outside the library's names indexes
    /// ([`without_name_indexes`](hermes_compaction::core::ledger::without_name_indexes)).
    unindexed: Box<[u64]>,
    /// Whether it is a summary marker.
    marker: bool,
}

fn parse(json: &str) -> Parsed {
    let Ok(v) = serde_json::from_str::<Value>(json) else {
        return Parsed {
            all: Box::new([]),
            used: Box::new([]),
            unindexed: Box::new([]),
            marker: false,
        };
    };
    let role = v.get("role").and_then(Value::as_str).unwrap_or_default();
    // The continuation (issue 21, item 14) is fixed library text: it holds nothing of the
    // session, neither verbatim nor summarized.
    if role == "user"
        && first_text(&v).is_some_and(|t| classify_text(t) == Some(MarkerKind::Continuation))
    {
        return Parsed {
            all: Box::new([]),
            used: Box::new([]),
            unindexed: Box::new([]),
            marker: false,
        };
    }
    let all = digests(&mut |f| strings(&v, f));
    // A message whose text holds no index strips to itself (borrowed, nothing allocated):
    // its digests are the same.
    let unindexed = if matches!(ledger::without_name_indexes(json), Cow::Owned(_)) {
        digests(&mut |f| strings(&v, &mut |s| f(&ledger::without_name_indexes(s))))
    } else {
        all.clone()
    };
    let calls = v
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let used = if role == "assistant" {
        digests(&mut |f| {
            if let Some(c) = v.get("content") {
                strings(c, f);
            }
            for call in calls {
                if let Some(a) = call.get("function").and_then(|x| x.get("arguments")) {
                    strings(a, f);
                }
            }
        })
    } else {
        Box::new([])
    };
    let marker = role != "tool" && calls.is_empty() && first_text(&v).is_some_and(is_marker);
    Parsed {
        all,
        used,
        unindexed,
        marker,
    }
}

/// The identifier digests of one message: all of them, and those its content and tool-call
/// arguments use when it is an assistant message (empty otherwise): what
/// [`foresight`](crate::foresight) reads the recorded session's needs from.
pub(crate) fn identifier_digests(w: &Wire) -> (Box<[u64]>, Box<[u64]>) {
    let p = parse(&w.json);
    (p.all, p.used)
}

fn first_text(v: &Value) -> Option<&str> {
    match v.get("content")? {
        Value::String(s) => Some(s),
        Value::Array(parts) => parts
            .iter()
            .find_map(|p| p.get("text").and_then(Value::as_str)),
        _ => None,
    }
}

/// A summary marker: what it holds is held, not verbatim.
fn is_marker(text: &str) -> bool {
    classify_text(text).is_some_and(MarkerKind::is_summary)
}

/// The marker kind of a message's text alone (no metadata, no tool calls).
fn classify_text(text: &str) -> Option<MarkerKind> {
    marker::classify(&Message::user(text))
}

/// The far-recall counts of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestRecall {
    /// Far identifiers of the request.
    pub far: u64,
    /// Of those, in the prompt (summaries included).
    pub held: u64,
    /// Of those, in a prompt message that is not a summary marker.
    pub held_verbatim: u64,
    /// Of those, in the prompt outside the library's names indexes (summaries included).
    pub held_unindexed: u64,
    /// Of those, in an unchanged original message of the prompt (its wire JSON identical to
    /// a recorded message's): content, not a name in a summary, a ledger, an index or a
    /// pruned one-liner.
    pub held_content: u64,
}

/// The far-recall state of one replay.
#[derive(Debug, Default)]
pub struct Recall {
    parsed: HashMap<u64, Parsed>,
    /// Identifier digest -> index of the last recorded message holding it.
    last_seen: HashMap<u64, usize>,
    /// Recorded messages observed so far.
    observed: usize,
    /// Wire digests of the prompt the counts below describe.
    prompt: Vec<u64>,
    present: HashMap<u64, u32>,
    present_verbatim: HashMap<u64, u32>,
    present_unindexed: HashMap<u64, u32>,
    /// Identifiers of the prompt's unchanged original messages.
    present_content: HashMap<u64, u32>,
    /// Wire digests of the recorded messages observed so far (their original forms).
    originals: HashSet<u64>,
    /// Per recorded message observed: its wire digest and its size in the issue units.
    observed_messages: Vec<(u64, u64)>,
    /// Identifiers of the content re-read since the last rewrite (see [`reread`](crate::reread)).
    carried: HashSet<u64>,
    /// The recorded messages re-read since the last rewrite.
    carried_sources: HashSet<usize>,
    /// Their size in the issue units.
    carried_units: u64,
}

impl Recall {
    fn parsed(&mut self, w: &Wire) -> &Parsed {
        self.parsed.entry(w.hash).or_insert_with(|| parse(&w.json))
    }

    /// Records the next message of the recorded session, as the agent appended it (before
    /// any trimming).
    pub fn observe(&mut self, original: &Wire) {
        let index = self.observed;
        self.observed += 1;
        self.originals.insert(original.hash);
        self.observed_messages
            .push((original.hash, original.units()));
        let ids = self.parsed(original).all.clone();
        for id in ids.iter() {
            self.last_seen.insert(*id, index);
        }
    }

    /// The counts of the request answered by `answer` (the next recorded message, not yet
    /// observed) with `prompt` as sent.
    pub fn request(&mut self, answer: &Wire, prompt: &[Wire]) -> RequestRecall {
        let at = self.observed;
        let used = self.parsed(answer).used.clone();
        let far: Vec<u64> = used
            .iter()
            .copied()
            .filter(|id| {
                self.last_seen
                    .get(id)
                    .is_some_and(|&last| last + NEAR_MESSAGES < at)
            })
            .collect();
        self.sync(prompt);
        let mut r = RequestRecall {
            far: far.len() as u64,
            ..RequestRecall::default()
        };
        for id in &far {
            r.held += u64::from(self.present.get(id).is_some_and(|&n| n > 0));
            r.held_verbatim += u64::from(self.present_verbatim.get(id).is_some_and(|&n| n > 0));
            r.held_unindexed += u64::from(self.present_unindexed.get(id).is_some_and(|&n| n > 0));
            r.held_content += u64::from(self.present_content.contains_key(id));
        }
        r
    }

    /// After [`request`](Self::request) with the same `answer`: the recorded messages the
    /// agent has to fetch again to write it (see [`reread`](crate::reread)), in order. An
    /// identifier of the answer that occurs in an earlier recorded message is *needed*; it
    /// is missing when neither an unchanged original message of the prompt nor the content
    /// re-read since the last rewrite holds it; its source is the latest recorded message
    /// holding it. Sources already re-read since the last rewrite are not fetched again.
    pub fn missing_sources(&mut self, answer: &Wire) -> Vec<usize> {
        let used = self.parsed(answer).used.clone();
        let mut sources: Vec<usize> = used
            .iter()
            .filter(|id| !self.present_content.contains_key(id) && !self.carried.contains(id))
            .filter_map(|id| self.last_seen.get(id).copied())
            .filter(|i| !self.carried_sources.contains(i))
            .collect();
        sources.sort_unstable();
        sources.dedup();
        sources
    }

    /// Re-reads `sources` (indexes of recorded messages): their identifiers count as held
    /// for later re-read decisions until the next rewrite. Returns their size in the issue
    /// units.
    pub fn fetch(&mut self, sources: &[usize]) -> u64 {
        let mut units = 0;
        for &i in sources {
            let Some(&(hash, size)) = self.observed_messages.get(i) else {
                continue;
            };
            if !self.carried_sources.insert(i) {
                continue;
            }
            units += size;
            if let Some(p) = self.parsed.get(&hash) {
                self.carried.extend(p.all.iter().copied());
            }
        }
        self.carried_units += units;
        units
    }

    /// The size of the content re-read since the last rewrite, in the issue units: what
    /// the next prompt carries beside the policy's own.
    pub fn carried_units(&self) -> u64 {
        self.carried_units
    }

    /// Brings the prompt counts in step with `prompt`, from its first changed message.
    fn sync(&mut self, prompt: &[Wire]) {
        let common = self
            .prompt
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| **a == b.hash)
            .count();
        let removed: Vec<u64> = self.prompt.drain(common..).collect();
        if !removed.is_empty() {
            // A rewrite: what was re-read before it is gone with the messages around it.
            self.carried.clear();
            self.carried_sources.clear();
            self.carried_units = 0;
        }
        for hash in removed {
            let original = self.originals.contains(&hash);
            if let Some(p) = self.parsed.get(&hash) {
                if original {
                    for id in p.all.iter() {
                        decrement(&mut self.present_content, *id);
                    }
                }
                let verbatim = !p.marker;
                for id in p.all.iter() {
                    decrement(&mut self.present, *id);
                    if verbatim {
                        decrement(&mut self.present_verbatim, *id);
                    }
                }
                for id in p.unindexed.iter() {
                    decrement(&mut self.present_unindexed, *id);
                }
            }
        }
        for w in &prompt[common..] {
            self.parsed.entry(w.hash).or_insert_with(|| parse(&w.json));
            let p = &self.parsed[&w.hash];
            if self.originals.contains(&w.hash) {
                for id in p.all.iter() {
                    *self.present_content.entry(*id).or_default() += 1;
                }
            }
            for id in p.all.iter() {
                *self.present.entry(*id).or_default() += 1;
                if !p.marker {
                    *self.present_verbatim.entry(*id).or_default() += 1;
                }
            }
            for id in p.unindexed.iter() {
                *self.present_unindexed.entry(*id).or_default() += 1;
            }
            self.prompt.push(w.hash);
        }
    }
}

fn decrement(map: &mut HashMap<u64, u32>, id: u64) {
    if let MapEntry::Occupied(mut e) = map.entry(id) {
        *e.get_mut() -= 1;
        if *e.get() == 0 {
            e.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_compaction::core::{Message, ToolCall};

    /// Issue 21, item 14: the continuation holds nothing of the session; a summary holds what
    /// it names, not verbatim.
    #[test]
    fn the_continuation_holds_nothing_and_is_no_summary() {
        let c = parse(&marker::continuation().to_wire_json());
        assert!(c.all.is_empty() && !c.marker, "{c:?}");
        let s = marker::render(
            MarkerKind::Batch,
            hermes_compaction::core::Role::User,
            "src/lib.rs",
        );
        let s = parse(&s.to_wire_json());
        assert!(!s.all.is_empty() && s.marker, "{s:?}");
    }

    #[test]
    fn identifiers_follow_the_definition() {
        let text = "see src/lib.rs, run cargo_test and parseJson; not plain words, \
                    not abc12 (5), but abcd12 and -./foo.bar./- and 2026-12-01, ...x... Name";
        assert_eq!(
            identifiers(text),
            vec![
                "src/lib.rs",
                "cargo_test",
                "parseJson",
                "abcd12",
                "foo.bar",
                "2026-12-01"
            ]
        );
        // No camel step from upper to lower, no marker character: not an identifier.
        assert!(identifiers("Hermes Agent README COMPACTION").is_empty());
        // Non-ASCII characters end a run.
        assert_eq!(identifiers("é/src/a.rsé"), vec!["src/a.rs"]);
    }

    #[test]
    fn tool_call_arguments_are_searched_as_json() {
        let m = Message::assistant_tool_calls(
            "reading it",
            vec![ToolCall::function(
                "call_1",
                "read",
                r#"{"path":"src/main.rs","cmd":"ls\ncrates/core"}"#,
            )],
        );
        let p = parse(&m.to_wire_json());
        let mut want: Vec<u64> = ["src/main.rs", "crates/core"]
            .iter()
            .map(|s| digest(s))
            .collect();
        want.sort_unstable();
        assert_eq!(&*p.used, &want[..]);
        // The call id is a string value of the message, not of its content or arguments.
        assert!(p.all.contains(&digest("call_1")));
        assert!(!p.used.contains(&digest("call_1")));
        // The escaped newline does not glue `ls` to the path.
        assert!(!p.all.contains(&digest("ncrates/core")));
    }

    /// A far identifier that only a names index holds counts as held, but not as held
    /// outside the indexes: the figure that tells content from an index naming it.
    #[test]
    fn names_indexes_are_told_apart_from_content() {
        let pruned = Message::tool_result(
            "c1",
            "[pruned] grep `x`: 900 chars, 30 lines of output; names: handler_fn, src/kept.rs",
        );
        let p = parse(&pruned.to_wire_json());
        assert!(p.all.contains(&digest("handler_fn")));
        assert!(!p.unindexed.contains(&digest("handler_fn")));
        assert!(!p.unindexed.contains(&digest("src/kept.rs")));
        let plain = Message::tool_result("c1", "handler_fn is defined in src/kept.rs");
        let q = parse(&plain.to_wire_json());
        assert_eq!(q.all, q.unindexed);
        assert!(q.unindexed.contains(&digest("handler_fn")));
    }
}
