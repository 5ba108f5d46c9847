//! The prune planner (phase 1 of batch compaction, no model call).
//!
//! Over the rewritable ranges only:
//! 1. an older copy of a large tool output that appears again later, byte-identical, becomes a
//!    one-line back-reference to the newer copy;
//! 2. an old tool output above a size becomes one informative line: the tool, its key argument
//!    (path, command, pattern, URL), the size, and the exit status when the output shows one;
//! 3. huge string arguments of old tool calls are shortened, and the arguments stay valid JSON
//!    (a freeform tool's raw input, not JSON, is left to the summary; only the last-resort
//!    demotion of a protected call cuts it, as it cuts a long string).
//!
//! Outputs of protected tools are kept. Each rewritten message keeps every field but the one
//! rewritten, so tool pairing is untouched. Pruning is idempotent: a one-liner is never pruned
//! again.

use foldhash::HashMap;
use foldhash::HashMapExt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

use crate::defaults;
use crate::edit::{Edit, Splice};
use crate::message::{Content, Message};
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// Prefix of every line the pruner writes.
pub(crate) const PRUNED_PREFIX: &str = "[pruned]";

/// Prune policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PruneConfig {
    /// Tool outputs above this many tokens become one line. Default 200.
    pub tool_output_min_tokens: u64,
    /// String arguments above this many characters are shortened. Default 2,000.
    pub argument_max_chars: usize,
    /// Tools whose outputs are not pruned, unless a newer large result of the same call (the
    /// same tool, the same arguments in any key order) supersedes one: that output becomes a
    /// back-reference to the newer result, as an identical copy does. Default `memory`,
    /// `clarify`, `skill_view`, `todo` (file reads are not protected: docs/ECONOMICS.md,
    /// "Protected reads").
    pub protected_tools: Vec<String>,
    /// Reference-aware pruning: a tool output that later assistant messages cite (use an
    /// identifier of it that its call did not name: a path, symbol, version or id) is live
    /// state, pruned only after the uncited ones. A prune-only pass keeps it; a threshold pass
    /// prunes it only when pruning the uncited outputs alone does not reach the low-water
    /// mark. Default true.
    pub keep_cited: bool,
    /// Characters of the names index that a pruned tool output's line and an elided argument
    /// keep of what they removed: the paths, symbols and ids in it, most frequent first, so a
    /// later step can still name (and re-read) them. 0 keeps none. Default 0 (off: on the
    /// sessions it was not tuned on it cost more and kept less content than no index; 400
    /// turns it on as it was before).
    pub names_max_chars: usize,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            tool_output_min_tokens: defaults::PRUNE_TOOL_OUTPUT_MIN_TOKENS,
            argument_max_chars: defaults::PRUNE_ARGUMENT_MAX_CHARS,
            protected_tools: defaults::protected_tools(),
            keep_cited: defaults::PRUNE_KEEP_CITED,
            names_max_chars: defaults::PRUNE_NAMES_MAX_CHARS,
        }
    }
}

/// What a prune plan would do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrunePlan {
    /// One-for-one replacements of the rewritten messages.
    pub edit: Edit,
    /// Estimated tokens the edit reclaims.
    pub reclaimed_tokens: u64,
    /// Tool outputs turned into a back-reference to a newer copy: an identical output, or an
    /// output of a protected tool that a newer result of the same call supersedes.
    pub deduplicated: usize,
    /// Tool outputs turned into one informative line.
    pub summarized_outputs: usize,
    /// Tool calls whose arguments were shortened.
    pub shortened_calls: usize,
    /// Messages (indices, ascending) whose rewrite does not carry its names index yet:
    /// planning leaves it out, since most rewrites of a summary pass are summarized away, and
    /// the batch planner adds it to the ones that stay (all of them in a prune-only pass).
    pub names_pending: Vec<usize>,
}

/// Plans pruning of `ranges` (ascending, disjoint; typically the middle and the older part of
/// a long turn).
pub(crate) fn plan_prune(
    t: &Transcript,
    ranges: &[Range<usize>],
    cfg: &PruneConfig,
    counter: &dyn TokenCounter,
) -> PrunePlan {
    let calls = CallIndex::build(t.messages());
    let mut plan = plan_prune_split(t, ranges, cfg, counter, &calls, &[]).0;
    plan.add_names(t, cfg, counter, |_| true);
    plan
}

/// [`plan_prune`] in one walk, as two plans: the rewrites of everything but the tool outputs
/// at `held` (ascending indices; with [`cited_outputs`], the cited ones), and the rewrites of
/// those outputs alone (`calls` indexes `t`'s tool calls). The first is a plan that keeps
/// `held` as it is;
/// [`merged`](PrunePlan::merged) with the second and given its names indexes
/// ([`PrunePlan::add_names`]), it is exactly [`plan_prune`]'s plan.
pub(crate) fn plan_prune_split(
    t: &Transcript,
    ranges: &[Range<usize>],
    cfg: &PruneConfig,
    counter: &dyn TokenCounter,
    calls: &CallIndex<'_>,
    held: &[usize],
) -> (PrunePlan, PrunePlan) {
    let msgs = t.messages();
    let mut plan = PrunePlan::default();
    let mut held_plan = PrunePlan::default();

    // For each large tool output with a byte-identical newer copy, the newest copy's index,
    // for back-references: one walk back from the end, one map operation per output.
    let mut newest: HashMap<ContentKey<'_>, usize> = HashMap::new();
    let mut newer_copy: HashMap<usize, usize> = HashMap::new();
    for (i, m) in msgs.iter().enumerate().rev() {
        if m.is_tool()
            && let Some(Content::Text(s)) = m.content()
            && t.tokens_of(i) > cfg.tool_output_min_tokens
        {
            match newest.entry(ContentKey(s.as_str())) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    newer_copy.insert(i, *e.get());
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
    }

    let newer_call = superseded_protected(t, calls, cfg);

    for range in ranges {
        for i in range.clone() {
            let m = &msgs[i];
            let target = if m.is_tool() && held.binary_search(&i).is_ok() {
                &mut held_plan
            } else {
                &mut plan
            };
            let before_summarized = target.summarized_outputs;
            let replacement = if m.is_tool() {
                prune_tool_output(t, i, calls, &newer_copy, &newer_call, cfg, target)
            } else if m.has_tool_calls() {
                shorten_arguments_with(m, cfg, 0, false).inspect(|_| target.shortened_calls += 1)
            } else {
                None
            };
            let indexed = !m.is_tool() || target.summarized_outputs > before_summarized;
            if let Some(new) = replacement {
                let before = t.tokens_of(i);
                let after = counter.count_message(&new);
                if after < before {
                    target.reclaimed_tokens += before - after;
                    target.edit.splices.push(Splice {
                        range: i..i + 1,
                        replacement: vec![new],
                    });
                    if indexed && cfg.names_max_chars > 0 {
                        target.names_pending.push(i);
                    }
                }
            }
        }
    }
    (plan, held_plan)
}

impl PrunePlan {
    /// Both plans' rewrites, in transcript order, and the sums of their counts (the two
    /// halves of [`plan_prune_split`] give back [`plan_prune`]'s plan).
    pub(crate) fn merged(mut self, other: PrunePlan) -> PrunePlan {
        self.edit.splices.extend(other.edit.splices);
        self.edit.splices.sort_by_key(|s| s.range.start);
        self.reclaimed_tokens += other.reclaimed_tokens;
        self.deduplicated += other.deduplicated;
        self.summarized_outputs += other.summarized_outputs;
        self.shortened_calls += other.shortened_calls;
        self.names_pending.extend(other.names_pending);
        self.names_pending.sort_unstable();
        self
    }

    /// Gives the pending rewrites at the indices `keep` accepts their names index (a pruned
    /// output's line its `; names: ` index, an elided
    /// argument its `; names in it: ` one) and updates
    /// `reclaimed_tokens`; the others stay as planned. Nothing is pending afterwards.
    pub(crate) fn add_names(
        &mut self,
        t: &Transcript,
        cfg: &PruneConfig,
        counter: &dyn TokenCounter,
        keep: impl Fn(usize) -> bool,
    ) {
        let pending = std::mem::take(&mut self.names_pending);
        if pending.is_empty() || cfg.names_max_chars == 0 {
            return;
        }
        let msgs = t.messages();
        for s in &mut self.edit.splices {
            let i = s.range.start;
            if s.replacement.len() != 1 || pending.binary_search(&i).is_err() || !keep(i) {
                continue;
            }
            let original = &msgs[i];
            let new = if original.is_tool() {
                let mut new = s.replacement[0].clone();
                new.set_text(with_names(new.text().into_owned(), &original.text(), cfg));
                new
            } else {
                match shorten_arguments_with(original, cfg, cfg.names_max_chars, false) {
                    Some(new) => new,
                    None => continue,
                }
            };
            let (old, now) = (
                counter.count_message(&s.replacement[0]),
                counter.count_message(&new),
            );
            if now >= t.tokens_of(i) {
                continue;
            }
            self.reclaimed_tokens = (self.reclaimed_tokens + old).saturating_sub(now);
            s.replacement[0] = new;
        }
    }
}

/// The tool outputs of `ranges` (ascending indices) that a later assistant message cites: its
/// content or a tool call's arguments use an identifier of the output that the call it answers
/// did not already name. An *identifier* is a run of at least
/// [`MIN_NAME_CHARS`](crate::ledger::MIN_NAME_CHARS) characters of `[A-Za-z0-9_./-]`, trimmed
/// to start and end with `[A-Za-z0-9_]`, holding `_`, `.`, `/`, a digit or a lower-to-upper
/// camel step: paths, symbols, ids, versions, not plain words. An output the agent went on to
/// use is live state; one nobody cited is the first to go. One pass back from the end,
/// O(characters after the first range); `calls` indexes the tool calls of `msgs`.
pub(crate) fn cited_outputs(
    msgs: &[Message],
    ranges: &[Range<usize>],
    calls: &CallIndex<'_>,
) -> Vec<usize> {
    let Some(first) = ranges.iter().map(|r| r.start).min() else {
        return Vec::new();
    };
    let mut later: foldhash::HashSet<&str> = foldhash::HashSet::default();
    let mut out = Vec::new();
    for i in (first..msgs.len()).rev() {
        let m = &msgs[i];
        if m.is_tool() && ranges.iter().any(|r| r.contains(&i)) && !later.is_empty() {
            let named: Vec<&str> = calls
                .for_result(m)
                .map(|c| crate::ledger::identifiers(c.arguments).collect())
                .unwrap_or_default();
            let text = m.text();
            if crate::ledger::identifiers(&text).any(|w| later.contains(w) && !named.contains(&w)) {
                out.push(i);
            }
        } else if m.is_assistant() {
            if let Some(Content::Text(s)) = m.content() {
                later.extend(crate::ledger::identifiers(s));
            } else if let Some(Content::Parts(parts)) = m.content() {
                later.extend(
                    parts
                        .iter()
                        .filter_map(crate::message::Part::text)
                        .flat_map(crate::ledger::identifiers),
                );
            }
            for c in m.tool_calls() {
                later.extend(crate::ledger::identifiers(&c.function.arguments));
            }
        }
    }
    out.reverse();
    out
}

/// The informative one-line description of a tool output, as pruning writes it. The line is
/// redacted ([`crate::redact`]) as a whole, so an argument's name and its value are judged
/// together (`password=…`).
pub(crate) fn describe_tool_output(tool: Option<&ToolInfo<'_>>, output: &str) -> String {
    let line = describe_unredacted(tool, output);
    match crate::redact::redact(&line) {
        Cow::Borrowed(_) => line,
        Cow::Owned(r) => r,
    }
}

fn describe_unredacted(tool: Option<&ToolInfo<'_>>, output: &str) -> String {
    let (chars, lines) = chars_and_lines(output);
    let exit = exit_status(output)
        .map(|c| format!(", exit {c}"))
        .unwrap_or_default();
    let Some(info) = tool else {
        return format!("{PRUNED_PREFIX} tool output ({chars} chars, {lines} lines{exit})");
    };
    let args = serde_json::from_str::<ArgFields<'_>>(info.arguments).ok();
    let arg = |keys: &[&str]| -> Option<String> {
        let args = args.as_ref()?;
        keys.iter()
            .find_map(|k| args.get(k))
            .map(|v| shown_value(v, 160))
    };
    let name = info.name;
    let lower = name.to_ascii_lowercase();
    match tool_family(&lower) {
        Family::Shell => {
            let cmd = arg(&["command", "cmd", "script", "code", "input"]).unwrap_or_default();
            format!("{PRUNED_PREFIX} {name} `{cmd}`: {chars} chars, {lines} lines of output{exit}")
        }
        Family::Read => {
            let path =
                arg(&["path", "file_path", "file", "filename", "target_file"]).unwrap_or_default();
            let range = match (
                arg(&["offset", "start_line", "view_range", "line"]),
                arg(&["limit", "end_line"]),
            ) {
                (Some(a), Some(b)) => format!(" (from {a}, {b} lines)"),
                (Some(a), None) => format!(" (from {a})"),
                _ => String::new(),
            };
            format!("{PRUNED_PREFIX} {name} {path}{range}: {chars} chars, {lines} lines")
        }
        Family::Write => {
            let path =
                arg(&["path", "file_path", "file", "filename", "target_file"]).unwrap_or_default();
            format!("{PRUNED_PREFIX} {name} {path}: {chars} chars of output{exit}")
        }
        Family::Search => {
            let pattern =
                arg(&["pattern", "query", "regex", "q", "search", "glob"]).unwrap_or_default();
            let path = arg(&["path", "dir", "directory", "include"])
                .map(|p| format!(" in {p}"))
                .unwrap_or_default();
            format!(
                "{PRUNED_PREFIX} {name} \"{pattern}\"{path}: {lines} result lines, {chars} chars"
            )
        }
        Family::Web => {
            let url = arg(&["url", "uri", "href", "query", "q"]).unwrap_or_default();
            format!("{PRUNED_PREFIX} {name} {url}: {chars} chars fetched")
        }
        Family::Other => {
            let kv = args
                .as_ref()
                .map(|a| {
                    a.first_fields(3)
                        .into_iter()
                        .map(|(k, v)| format!(" {k}={}", shown_value(v, 60)))
                        .collect::<String>()
                })
                .unwrap_or_default();
            format!("{PRUNED_PREFIX} {name}{kv} ({chars} chars{exit})")
        }
    }
}

/// The top-level fields of a call's JSON arguments, in their order, each value left as its
/// raw JSON until a description shows it: describing an output decodes only the one or three
/// values its line names, not the whole call. Not an object (or not JSON): no fields.
struct ArgFields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> ArgFields<'a> {
    /// The value of `key`; of a key given twice, the later value, as a JSON map keeps it.
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The first `n` distinct keys in the order they first appear, each with its value (the
    /// later one of a key given twice), as a JSON map's iteration gives them.
    fn first_fields(&self, n: usize) -> Vec<(&str, &'a RawValue)> {
        let mut out: Vec<(&str, &'a RawValue)> = Vec::with_capacity(n);
        for (k, v) in &self.0 {
            if out.len() == n {
                break;
            }
            if !out.iter().any(|(seen, _)| seen == k) {
                out.push((k, self.get(k).unwrap_or(v)));
            }
        }
        out
    }
}

impl<'de> Deserialize<'de> for ArgFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ArgFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some((Key(k), v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    fields.push((k, v));
                }
                Ok(ArgFields(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// An object key, borrowed from the arguments unless it holds an escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> serde::de::Visitor<'de> for K {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(K)
    }
}

/// An argument's value as a description shows it, clipped to `max` characters: a string's
/// text, anything else as compact JSON.
fn shown_value(v: &RawValue, max: usize) -> String {
    let raw = v.get();
    if raw.starts_with('"')
        && let Ok(s) = serde_json::from_str::<String>(raw)
    {
        return clip(&s, max);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => clip(&v.to_string(), max),
        Err(_) => clip(raw, max),
    }
}

/// What pruning knows about the call a tool output answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolInfo<'a> {
    /// Tool name.
    pub name: &'a str,
    /// The call's arguments: JSON, or a freeform tool's raw input.
    pub arguments: &'a str,
}

/// Maps tool-call ids to the call's name and arguments.
#[derive(Debug, Default)]
pub struct CallIndex<'a> {
    by_id: HashMap<&'a str, ToolInfo<'a>>,
}

impl<'a> CallIndex<'a> {
    /// Indexes every tool call in `messages`.
    pub fn build(messages: &'a [Message]) -> CallIndex<'a> {
        let mut by_id = HashMap::new();
        for m in messages {
            for c in m.tool_calls() {
                by_id.insert(
                    c.call_id(),
                    ToolInfo {
                        name: c.function.name.as_str(),
                        arguments: c.function.arguments.as_str(),
                    },
                );
            }
        }
        CallIndex { by_id }
    }

    /// The call a tool result answers.
    pub fn for_result(&self, m: &Message) -> Option<&ToolInfo<'a>> {
        self.by_id.get(m.tool_call_id()?)
    }
}

/// Whether a tool is protected by `cfg`.
pub(crate) fn is_protected(cfg: &PruneConfig, tool: &str) -> bool {
    cfg.protected_tools.iter().any(|p| p == tool)
}

/// A tool output as a map key: hashes its length and both ends only (equality still compares
/// the whole text), so indexing megabytes of outputs costs little.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ContentKey<'a>(&'a str);

impl std::hash::Hash for ContentKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let b = self.0.as_bytes();
        b.len().hash(h);
        b[..b.len().min(64)].hash(h);
        b[b.len().saturating_sub(64)..].hash(h);
    }
}

/// For each large output of a protected tool that a newer large output of the same call
/// (the same tool, the same arguments) supersedes, the newest such output's index: the newer
/// result is the current state of what was read (a file read again after an edit, the memory
/// or the to-do list shown again), so the older one is no longer what protection keeps. The
/// newer result must be large as well: a short one (an error, a timeout) supersedes nothing.
/// One walk back from the end, over the whole transcript (a newer copy in the tail counts).
fn superseded_protected(
    t: &Transcript,
    calls: &CallIndex<'_>,
    cfg: &PruneConfig,
) -> HashMap<usize, usize> {
    let mut out = HashMap::new();
    if cfg.protected_tools.is_empty() {
        return out;
    }
    let mut newest: HashMap<(&str, String), usize> = HashMap::new();
    for (i, m) in t.messages().iter().enumerate().rev() {
        if !m.is_tool() || t.tokens_of(i) <= cfg.tool_output_min_tokens {
            continue;
        }
        let Some(info) = calls.for_result(m).filter(|c| is_protected(cfg, c.name)) else {
            continue;
        };
        if m.text().starts_with(PRUNED_PREFIX) {
            continue;
        }
        match newest.entry((info.name, canonical_arguments(info.arguments))) {
            std::collections::hash_map::Entry::Occupied(e) => {
                out.insert(i, *e.get());
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
            }
        }
    }
    out
}

/// A call's arguments in a form where the same arguments compare equal however their object
/// keys are ordered and spaced; arguments that are not JSON (a freeform tool's input) as
/// written, trimmed.
fn canonical_arguments(raw: &str) -> String {
    fn sorted(v: Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => sorted(v).to_string(),
        Err(_) => raw.trim().to_owned(),
    }
}

fn prune_tool_output(
    t: &Transcript,
    i: usize,
    calls: &CallIndex<'_>,
    newer_copy: &HashMap<usize, usize>,
    newer_call: &HashMap<usize, usize>,
    cfg: &PruneConfig,
    plan: &mut PrunePlan,
) -> Option<Message> {
    let m = &t.messages()[i];
    let info = calls.for_result(m);
    let superseded_by = newer_call.get(&i).copied();
    if info.is_some_and(|c| is_protected(cfg, c.name)) && superseded_by.is_none() {
        return None;
    }
    if t.tokens_of(i) <= cfg.tool_output_min_tokens {
        return None;
    }
    let text = m.text();
    if text.starts_with(PRUNED_PREFIX) {
        return None;
    }
    if let Some(j) = superseded_by {
        plan.deduplicated += 1;
        let name = info.map_or("tool", |c| c.name);
        let line = format!(
            "{PRUNED_PREFIX} {name} output superseded by the newer result of the same call at message {j} ({} chars)",
            text.chars().count()
        );
        return Some(m.with_content(Some(Content::Text(line))));
    }
    let line = match m.content() {
        Some(Content::Text(s)) => match newer_copy.get(&i) {
            Some(&j) => {
                plan.deduplicated += 1;
                let name = info.map(|c| c.name).unwrap_or("tool");
                format!(
                    "{PRUNED_PREFIX} {name} output identical to the newer copy at message {j} ({} chars)",
                    s.chars().count()
                )
            }
            _ => {
                plan.summarized_outputs += 1;
                describe_tool_output(info, s)
            }
        },
        _ => {
            plan.summarized_outputs += 1;
            describe_tool_output(info, &text)
        }
    };
    Some(m.with_content(Some(Content::Text(line))))
}

/// `line` followed by the names index of `removed`, when it has one.
pub(crate) fn with_names(mut line: String, removed: &str, cfg: &PruneConfig) -> String {
    let index = crate::ledger::names_index(removed, cfg.names_max_chars);
    if !index.is_empty() {
        line.push_str(crate::ledger::PRUNED_NAMES);
        line.push_str(&index);
    }
    line
}

/// `m` with its tool calls' long arguments shortened, a freeform tool's raw input as well as
/// JSON strings: the last-resort demotion of a protected message.
pub(crate) fn shorten_arguments(m: &Message, cfg: &PruneConfig) -> Option<Message> {
    shorten_arguments_with(m, cfg, cfg.names_max_chars, true)
}

/// [`shorten_arguments`] with a names index of at most `names_max` characters per elided
/// string (0: none); a freeform tool's raw input is shortened only when `raw` is set (pruning
/// leaves it to the summary: shortening old patches as well cost more and kept less content on
/// the validation split at 128K, +1.1% and -1.4 points).
fn shorten_arguments_with(
    m: &Message,
    cfg: &PruneConfig,
    names_max: usize,
    raw: bool,
) -> Option<Message> {
    // Most calls are short: nothing to copy then.
    if m.tool_calls()
        .iter()
        .all(|c| c.function.arguments.len() <= cfg.argument_max_chars)
    {
        return None;
    }
    let mut changed = false;
    let mut calls = m.tool_calls().to_vec();
    for c in &mut calls {
        if c.function.arguments.len() <= cfg.argument_max_chars {
            continue;
        }
        let Ok(mut v) = serde_json::from_str::<Value>(&c.function.arguments) else {
            // The raw input of a freeform tool (a patch, a script: a custom tool's grammar
            // input, Codex's `apply_patch` or `exec`), not JSON: shortened as one long string
            // value would be, and it stays what it was, text. Left whole, a call of this kind
            // in the protected tail could keep the prompt over the window whatever the pass did.
            if raw && c.function.arguments.chars().count() > cfg.argument_max_chars {
                c.function.arguments =
                    shortened(&c.function.arguments, cfg.argument_max_chars, names_max);
                changed = true;
            }
            continue;
        };
        if shorten_strings(&mut v, cfg.argument_max_chars, names_max)
            && let Ok(s) = serde_json::to_string(&v)
        {
            c.function.arguments = s;
            changed = true;
        }
    }
    changed.then(|| {
        let mut new = m.clone();
        new.set_tool_calls(Some(calls));
        new
    })
}

/// Shortens the long strings of `v` (their head redacted before the cut); the other strings
/// of a call that is rewritten are redacted too, since the rewritten message is written text.
fn shorten_strings(v: &mut Value, max: usize, names_max: usize) -> bool {
    match v {
        Value::String(s) if s.chars().count() > max => {
            *s = shortened(s, max, names_max);
            true
        }
        Value::String(s) => {
            if let Cow::Owned(r) = crate::redact::redact(s) {
                *s = r;
            }
            false
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, x| shorten_strings(x, max, names_max) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, x| shorten_strings(x, max, names_max) | acc),
        _ => false,
    }
}

/// `s` (longer than `max` characters) cut to its redacted head of `max / 2` characters and a
/// note of what was elided, with the names index of the whole string when `names_max > 0`.
fn shortened(s: &str, max: usize, names_max: usize) -> String {
    let total = s.chars().count();
    let keep = max / 2;
    let head = crate::redact::redacted_head(s, keep);
    // The whole string, so a secret straddling the cut is judged in its context.
    let index = crate::ledger::names_index(s, names_max);
    let names = if index.is_empty() {
        String::new()
    } else {
        format!("{}{index}", crate::ledger::ELIDED_NAMES)
    };
    format!(
        "{head}…[{} of {total} chars elided by compaction{names}]",
        total - keep
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Shell,
    Read,
    Write,
    Search,
    Web,
    Other,
}

pub(crate) fn tool_family(lower: &str) -> Family {
    const SHELL: [&str; 9] = [
        "bash",
        "shell",
        "terminal",
        "run_command",
        "execute_bash",
        "exec_command",
        "exec",
        "run",
        "cmd",
    ];
    const READ: [&str; 5] = ["read", "read_file", "view", "cat", "open_file"];
    const WRITE: [&str; 10] = [
        "write",
        "write_file",
        "edit",
        "edit_file",
        "str_replace",
        "str_replace_editor",
        "apply_patch",
        "create",
        "create_file",
        "multiedit",
    ];
    const SEARCH: [&str; 9] = [
        "grep",
        "glob",
        "search",
        "find",
        "rg",
        "ripgrep",
        "search_files",
        "find_file",
        "search_dir",
    ];
    const WEB: [&str; 7] = [
        "web_fetch",
        "fetch",
        "webfetch",
        "browse",
        "web_search",
        "websearch",
        "http_get",
    ];
    if SHELL.contains(&lower) {
        Family::Shell
    } else if READ.contains(&lower) {
        Family::Read
    } else if WRITE.contains(&lower) {
        Family::Write
    } else if SEARCH.contains(&lower) {
        Family::Search
    } else if WEB.contains(&lower) || lower.starts_with("browser") {
        Family::Web
    } else {
        Family::Other
    }
}

/// The exit status an output reports, if it shows one in a common form.
pub(crate) fn exit_status(output: &str) -> Option<i64> {
    static EXIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r#"(?i)(?:exit code|exit status|exit_code|returncode|exited with)[:= "]*(-?[0-9]+)"#,
        )
        .expect("valid exit-status pattern")
    });
    // Look at the last few hundred bytes, where shells and harnesses print it.
    let start = output.len().saturating_sub(400);
    let start = (start..output.len())
        .find(|&i| output.is_char_boundary(i))
        .unwrap_or(output.len());
    let tail = &output[start..];
    // Most outputs show none: a match test allocates nothing, a capture search does.
    if !EXIT.is_match(tail) {
        return None;
    }
    EXIT.captures_iter(tail)
        .last()
        .and_then(|c| c[1].parse().ok())
}

/// Characters (as `chars().count()`) and lines (as `str::lines` counts them), by
/// vectorizable byte counts.
fn chars_and_lines(s: &str) -> (usize, usize) {
    if s.is_empty() {
        return (0, 0);
    }
    // Byte-wide counters over chunks of at most 255 bytes vectorize well.
    let count = |hit: fn(u8) -> bool| -> usize {
        s.as_bytes()
            .chunks(255)
            .map(|c| c.iter().fold(0u8, |n, &b| n + u8::from(hit(b))) as usize)
            .sum()
    };
    let chars = if s.is_ascii() {
        s.len()
    } else {
        // A character is a byte that does not continue a UTF-8 sequence (`10xxxxxx`).
        s.len() - count(|b| b & 0xC0 == 0x80)
    };
    let newlines = count(|b| b == b'\n');
    (chars, newlines + usize::from(!s.ends_with('\n')))
}

/// One line of at most `max` characters (and an ellipsis), redacted whatever its length: the
/// redaction runs on the whole text before newlines are joined and before the cut, so the cut
/// never leaves part of a key.
fn clip(s: &str, max: usize) -> String {
    let one_line = crate::redact::redact(s).replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut out = crate::redact::redacted_head(&one_line, max);
        out.push('…');
        out
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests;
