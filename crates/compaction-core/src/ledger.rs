//! The ledger: the files and commands a summarized span's tool calls named, kept verbatim.
//!
//! A summary loses detail by design, and what an agent most often needs back after a
//! compaction is exact: which files it touched and which commands it ran. A model asked to
//! list them spends output tokens (the dearest kind) and still paraphrases or forgets; a
//! summary bounded by size drops the oldest ones first. So the library keeps them itself: a
//! pass that writes a summary appends a ledger section built from the tool-call arguments of
//! the span it replaces, merged with the ledger of any summary inside that span. The
//! summarizer never sees the ledger (it is split off the previous summary before the request)
//! and never has to write it.
//!
//! What counts, from each tool call's JSON arguments: a string under a key ending in `path`,
//! or named `file`, `filename`, `paths` or `files` (a list of strings for the last two) is a
//! file; the first non-empty line of a `command` or `cmd` argument (a string, or a list of
//! strings joined by spaces) is a command. Entries are trimmed, redacted ([`redact`](compaction_redact::redact);
//! a command longer than 200 characters is redacted before it is cut, with
//! [`redacted_head`](compaction_redact::redacted_head), so a key straddling the cut never leaves a fragment; longer
//! paths are skipped), and kept once; naming one again moves it to the newest end.
//!
//! The rendered section is bounded: when it does not fit, the oldest
//! commands go first, then the oldest files, and the section says how many were dropped.
//!
//! The library builds, bounds and attaches the section itself; a caller reads one back with
//! [`Ledger::split`]:
//!
//! ```
//! use compaction_core::ledger::Ledger;
//!
//! // A summary body without a ledger section is all summary.
//! let (text, ledger) = Ledger::split("## Active task\n- fix the parser");
//! assert_eq!(text, "## Active task\n- fix the parser");
//! assert!(ledger.files().is_empty() && ledger.commands().is_empty());
//! ```

use serde_json::Value;

use crate::message::Message;
use crate::redact;
use crate::tokens::estimate_text;

/// Longest entry kept, in characters.
const MAX_ENTRY_CHARS: usize = 200;

/// The heading that opens the ledger section of a summary body.
pub(crate) const HEADING: &str = "## Ledger (kept by the library, not the summarizer: files named and commands run by the summarized tool calls, verbatim, oldest first)";

const FILES: &str = "Files:";
const COMMANDS: &str = "Commands:";
const DROPPED: &str = "- (older entries dropped to fit: ";

/// What a pruned tool output's line puts before its names index.
pub(crate) const PRUNED_NAMES: &str = "; names: ";

/// What an elided argument's note puts before its names index (the note ends with `]`).
pub(crate) const ELIDED_NAMES: &str = "; names in it: ";

/// The label of the names list inside the ledger section.
pub(crate) const NAMES: &str = "Names the agent wrote (its replies and call arguments):";

/// Names per rendered line.
const NAMES_PER_LINE: usize = 12;

/// Shortest name, in characters.
pub(crate) const MIN_NAME_CHARS: usize = 6;

/// Longest name, in characters (longer runs are data, not names).
const MAX_NAME_CHARS: usize = 100;

/// Most names a ledger keeps (the newest); far more than a rendered section shows.
const MAX_NAMES: usize = 4_096;

/// Files, commands and names, oldest first, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    files: Vec<String>,
    commands: Vec<String>,
    names: NameList,
    /// The names the files and commands show, which the names list does not repeat.
    shown: std::collections::HashSet<String>,
}

impl Ledger {
    /// Files, oldest first.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Commands, oldest first.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    /// Names, oldest first: the code-like tokens the agent itself wrote in its replies and
    /// tool-call arguments (paths, symbols, versions and ids, as the [module docs](self) say).
    pub fn names(&self) -> Vec<&str> {
        self.names.ordered()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.commands.is_empty() && self.names.is_empty()
    }

    /// Records the files and commands of `m`'s tool calls (arguments that are not a JSON
    /// object are ignored) and, for an assistant message, the names in its text and in its
    /// calls' arguments.
    pub(crate) fn observe(&mut self, m: &Message) {
        if m.is_assistant() {
            // Names are taken from the redacted text, so a secret is judged in its context
            // (`secret: value`) and no fragment of one becomes a name.
            let mut found: Vec<String> = Vec::new();
            let mut take = |s: &str| {
                let clean = redact::redact(s);
                found.extend(names_in(&clean).into_iter().map(str::to_owned));
            };
            take(&m.text());
            for call in m.tool_calls() {
                match serde_json::from_str::<Value>(&call.function.arguments) {
                    Ok(v) => strings(&v, &mut take),
                    Err(_) => take(&call.function.arguments),
                }
            }
            // From names_in of redacted text: valid names, judged in context already.
            for name in &found {
                self.add_name(name);
            }
        }
        for call in m.tool_calls() {
            let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.function.arguments)
            else {
                continue;
            };
            for (key, value) in &args {
                let key = key.to_ascii_lowercase();
                if key == "command" || key == "cmd" {
                    let joined = match value {
                        Value::String(s) => s.clone(),
                        Value::Array(items) => items
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(" "),
                        _ => continue,
                    };
                    if let Some(line) = joined.lines().map(str::trim).find(|l| !l.is_empty()) {
                        // Redacted before the cut, so a key straddling it is recognised whole.
                        self.add_command(&redact::redacted_head(line, MAX_ENTRY_CHARS));
                    }
                } else if key.ends_with("path") || key == "file" || key == "filename" {
                    if let Value::String(s) = value {
                        self.add_path(s);
                    }
                } else if key == "paths" || key == "files" {
                    match value {
                        Value::Array(items) => {
                            for s in items.iter().filter_map(Value::as_str) {
                                self.add_path(s);
                            }
                        }
                        Value::String(s) => self.add_path(s),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Appends `newer`'s entries after this ledger's (an entry in both moves to the newest
    /// end).
    pub(crate) fn extend(&mut self, newer: &Ledger) {
        for f in &newer.files {
            self.add_file(f);
        }
        for c in &newer.commands {
            self.add_command(c);
        }
        for n in newer.names.ordered() {
            self.add_name(n);
        }
    }

    fn add_path(&mut self, s: &str) {
        let s = s.trim();
        if !s.is_empty() && !s.contains('\n') && s.chars().count() <= MAX_ENTRY_CHARS {
            self.add_file(s);
        }
    }

    fn add_file(&mut self, entry: &str) {
        if let Some(kept) = push(&mut self.files, entry) {
            self.show(&kept);
        }
    }

    fn add_command(&mut self, entry: &str) {
        if let Some(kept) = push(&mut self.commands, entry) {
            self.show(&kept);
        }
    }

    /// Records the names `entry` shows and takes them off the names list.
    fn show(&mut self, entry: &str) {
        for n in names_in(entry) {
            if self.shown.insert(n.to_owned()) {
                self.names.remove(n);
            }
        }
    }

    fn add_name(&mut self, name: &str) {
        // A token-shaped word is no name (a fragment of a key no rule knows).
        if !self.shown.contains(name) && !redact::looks_like_token(name) {
            self.names.push(name);
        }
    }

    /// Splits a summary body into its text before the ledger section and the ledger that
    /// section carries (empty when there is none). Only the last section counts, so a
    /// summarizer that echoed a ledger heading cannot shadow the real one.
    pub fn split(body: &str) -> (&str, Ledger) {
        let Some(at) = body.rfind(HEADING) else {
            return (body, Ledger::default());
        };
        let starts_line = at == 0 || body[..at].ends_with('\n');
        if !starts_line {
            return (body, Ledger::default());
        }
        let mut ledger = Ledger::default();
        #[derive(PartialEq)]
        enum In {
            Files,
            Commands,
            Names,
        }
        let mut into = In::Files;
        for line in body[at + HEADING.len()..].lines() {
            let line = line.trim_end();
            if line == FILES {
                into = In::Files;
            } else if line == COMMANDS {
                into = In::Commands;
            } else if line == NAMES {
                into = In::Names;
            } else if line.starts_with(DROPPED) {
                continue;
            } else if let Some(entry) = line.strip_prefix("- ") {
                match into {
                    In::Files => ledger.add_file(entry),
                    In::Commands => ledger.add_command(entry),
                    In::Names => {
                        // Text of a summary body: only what is a name and no secret. A line
                        // the redaction leaves as it is needs no check name by name.
                        let clean = redact::redact(entry) == entry;
                        for name in entry.split(", ") {
                            if names_in(name) == [name] && (clean || redact::redact(name) == name) {
                                ledger.add_name(name);
                            }
                        }
                    }
                }
            }
        }
        (body[..at].trim_end(), ledger)
    }

    /// The ledger section, at most `budget_tokens` (estimated), or `None` when there is
    /// nothing to show or no budget. The oldest names go first, then the oldest commands, then
    /// the oldest files. A name that a kept file or command already shows is not repeated.
    pub(crate) fn render(&self, budget_tokens: u64) -> Option<String> {
        if self.is_empty() || budget_tokens == 0 {
            return None;
        }
        // Entries' estimated sizes, each with its line's dash, space and newline; a name with
        // its separator.
        let cost = |s: &String| estimate_text(s) + 1;
        let name_cost = |s: &&str| estimate_text(s) + 1;
        let names: Vec<&str> = self.names.ordered();
        let fixed = estimate_text(HEADING)
            + 2 * estimate_text(COMMANDS)
            + 16
            + if names.is_empty() {
                0
            } else {
                estimate_text(NAMES) + 8
            };
        let mut total: u64 = fixed
            + self.files.iter().map(cost).sum::<u64>()
            + self.commands.iter().map(cost).sum::<u64>()
            + names.iter().map(name_cost).sum::<u64>()
            + (names.len() / NAMES_PER_LINE) as u64;
        let (mut skip_commands, mut skip_files, mut skip_names) = (0usize, 0usize, 0usize);
        while total > budget_tokens && skip_names < names.len() {
            total -= name_cost(&names[skip_names]);
            skip_names += 1;
        }
        while total > budget_tokens && skip_commands < self.commands.len() {
            total -= cost(&self.commands[skip_commands]);
            skip_commands += 1;
        }
        while total > budget_tokens && skip_files < self.files.len() {
            total -= cost(&self.files[skip_files]);
            skip_files += 1;
        }
        let files = &self.files[skip_files..];
        let commands = &self.commands[skip_commands..];
        let names = &names[skip_names..];
        if files.is_empty() && commands.is_empty() && names.is_empty() {
            return None;
        }
        let mut s = String::from(HEADING);
        if skip_files + skip_commands + skip_names > 0 {
            s.push('\n');
            s.push_str(&format!(
                "{DROPPED}{skip_files} files, {skip_commands} commands, {skip_names} names)"
            ));
        }
        for (title, list) in [(FILES, files), (COMMANDS, commands)] {
            if list.is_empty() {
                continue;
            }
            s.push('\n');
            s.push_str(title);
            for e in list {
                s.push_str("\n- ");
                s.push_str(e);
            }
        }
        if !names.is_empty() {
            s.push('\n');
            s.push_str(NAMES);
            for line in names.chunks(NAMES_PER_LINE) {
                s.push_str("\n- ");
                for (i, n) in line.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    s.push_str(n);
                }
            }
        }
        Some(s)
    }

    /// `text` (any earlier ledger section removed) followed by this ledger's section, bounded
    /// by `budget_tokens`; `text` alone when nothing is rendered.
    pub(crate) fn attach(&self, text: &str, budget_tokens: u64) -> String {
        let (text, _) = Ledger::split(text);
        match self.render(budget_tokens) {
            Some(section) if text.trim().is_empty() => section,
            Some(section) => format!("{}\n\n{section}", text.trim_end()),
            None => text.to_owned(),
        }
    }
}

/// The names of `text`, in order of appearance, repeats kept: maximal runs of
/// `[A-Za-z0-9_./-]` with leading and trailing `.`, `/` and `-` removed, of
/// [`MIN_NAME_CHARS`] to [`MAX_NAME_CHARS`] characters, holding a letter and one of `_`, `.`,
/// `/`, a digit or a lower-to-upper camel step (`src/lib.rs`, `parse_args`, `fooBar`,
/// `v1.2.3`), the shapes of paths, symbols, versions and ids that a later step names again.
pub(crate) fn names_in(text: &str) -> Vec<&str> {
    // The identifiers pruning's citation check uses, bounded and holding a letter.
    identifiers(text)
        .filter(|w| w.len() <= MAX_NAME_CHARS && w.bytes().any(|b| b.is_ascii_alphabetic()))
        .collect()
}

/// The identifiers of `text`, in order, repeats kept: the shape [`names_in`] bounds and
/// pruning's citation check ([`crate::prune::cited_outputs`]) matches.
pub(crate) fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let run = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-');
    let edge = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.split(move |c: char| !run(c)).filter_map(move |w| {
        let w = w.trim_matches(|c: char| !edge(c));
        let b = w.as_bytes();
        (b.len() >= MIN_NAME_CHARS
            && (b
                .iter()
                .any(|c| matches!(c, b'_' | b'.' | b'/') || c.is_ascii_digit())
                || b.windows(2)
                    .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())))
        .then_some(w)
    })
}

/// The distinct names of `text` ([`names_in`]) once redacted (a secret is judged in its
/// context, so no fragment of one is a name), most frequent first (ties: first seen first),
/// joined by `, `, at most `max_chars` characters. What pruning keeps of an output or argument
/// it removes.
pub(crate) fn names_index(text: &str, max_chars: usize) -> String {
    if max_chars == 0 || !may_hold_names(text) {
        return String::new();
    }
    ranked_names(&redact::redact(text), max_chars)
}

/// The ranking and bound of [`names_index`], over text already redacted.
fn ranked_names(text: &str, max_chars: usize) -> String {
    let mut counts: std::collections::HashMap<&str, (usize, usize)> =
        std::collections::HashMap::new();
    for (i, n) in names_in(text).into_iter().enumerate() {
        counts.entry(n).or_insert((0, i)).0 += 1;
    }
    let mut ranked: Vec<(&str, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    let mut out = String::new();
    for (name, _) in ranked {
        let extra = name.len() + if out.is_empty() { 0 } else { 2 };
        if out.len() + extra > max_chars {
            continue;
        }
        if redact::looks_like_token(name) || redact::redact(name) != name {
            continue;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

/// Whether `text` has a run of identifier characters (`[A-Za-z0-9_./-]`) of at least
/// [`MIN_NAME_CHARS`] bytes holding a letter and a mark (`_`, `.`, `/`, a digit or a
/// lower-to-upper camel step): the cheap test before [`names_index`] redacts. Redaction only
/// replaces byte ranges by `[REDACTED]`, whose brackets end a run and whose word is no name,
/// so every run of the redacted text is a piece of a run of `text`, and a name (a trimmed
/// piece of such a run) needs a run like this. Without one the index is empty, redacted or
/// not.
///
/// Such a run holds two neighbours that [`joins_name`] accepts (walking inside it from a
/// letter towards a mark, the first byte that is not a letter is a mark or `-`), so a
/// vectorized search for such a pair rules most plain text out first; the exact scan runs
/// only where one is found. No allocation.
fn may_hold_names(text: &str) -> bool {
    /// Bytes per step of the pair search (one early exit per block).
    const BLOCK: usize = 64;
    let b = text.as_bytes();
    if b.len() < MIN_NAME_CHARS {
        return false;
    }
    let (left, right) = (&b[..b.len() - 1], &b[1..]);
    let (mut lc, mut rc) = (left.chunks_exact(BLOCK), right.chunks_exact(BLOCK));
    let mut found = false;
    for (l, r) in (&mut lc).zip(&mut rc) {
        // Without a branch per byte, so that it is vectorized.
        if l.iter()
            .zip(r)
            .fold(0u8, |acc, (&p, &q)| acc | joins_name(p, q))
            != 0
        {
            found = true;
            break;
        }
    }
    found = found
        || lc
            .remainder()
            .iter()
            .zip(rc.remainder())
            .any(|(&p, &q)| joins_name(p, q) != 0);
    found && has_name_run(b)
}

/// 1 when bytes `p` then `q` are a letter and a mark (a digit, `_`, `.`, `/` or `-`) in either
/// order, or a lower-to-upper camel step; else 0.
#[inline(always)]
fn joins_name(p: u8, q: u8) -> u8 {
    let letter = |c: u8| u8::from((c | 0x20).wrapping_sub(b'a') < 26);
    // `-`, `.` and `/` are 0x2D to 0x2F.
    let mark = |c: u8| {
        u8::from(c.wrapping_sub(b'0') < 10)
            | u8::from(c == b'_')
            | u8::from(c.wrapping_sub(b'-') < 3)
    };
    let camel = u8::from(p.wrapping_sub(b'a') < 26) & u8::from(q.wrapping_sub(b'A') < 26);
    (letter(p) & mark(q)) | (mark(p) & letter(q)) | camel
}

/// The exact test of [`may_hold_names`]: one pass over the runs.
fn has_name_run(b: &[u8]) -> bool {
    let (mut len, mut letter, mut mark, mut lower) = (0usize, false, false, false);
    for &c in b {
        match c {
            b'a'..=b'z' => {
                letter = true;
                lower = true;
            }
            b'A'..=b'Z' => {
                letter = true;
                mark |= lower;
                lower = false;
            }
            b'0'..=b'9' | b'_' | b'.' | b'/' => {
                mark = true;
                lower = false;
            }
            b'-' => lower = false,
            _ => {
                (len, letter, mark, lower) = (0, false, false, false);
                continue;
            }
        }
        len += 1;
        if len >= MIN_NAME_CHARS && letter && mark {
            return true;
        }
    }
    false
}

/// `text` without the names indexes the library writes (the ledger's names list, a pruned
/// line's `; names: ` index, an elided argument's `; names in it: ` index): what a
/// measure of recall uses to tell what the content still holds from what only an index
/// names. Borrowed, nothing allocated, when `text` holds none of the labels that open an
/// index (as written or inside a message's JSON): so a caller can test cheaply whether there
/// is anything to strip.
///
/// ```
/// use compaction_core::ledger::without_name_indexes;
///
/// let line = "[pruned] bash `ls`: 90 chars, 3 lines of output; names: src/a.rs, parse_args";
/// assert_eq!(without_name_indexes(line), "[pruned] bash `ls`: 90 chars, 3 lines of output");
/// let arg = "# Plan…[900 of 1000 chars elided by compaction; names in it: step_one] tail";
/// assert_eq!(without_name_indexes(arg), "# Plan…[900 of 1000 chars elided by compaction] tail");
/// assert_eq!(without_name_indexes("plain text"), "plain text");
/// assert!(matches!(without_name_indexes("plain text"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn without_name_indexes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(PRUNED_NAMES) && !text.contains(ELIDED_NAMES) && !text.contains(NAMES) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_names = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == NAMES {
            in_names = true;
            continue;
        }
        if in_names && bare.starts_with("- ") {
            continue;
        }
        in_names = false;
        // One pass over the line: each elided argument's index is cut up to its `]`.
        let mut l = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(at) = rest.find(ELIDED_NAMES) {
            l.push_str(&rest[..at]);
            rest = &rest[at..];
            rest = &rest[rest.find(']').unwrap_or(rest.len())..];
        }
        l.push_str(rest);
        if let Some(at) = l.find(PRUNED_NAMES) {
            let newline = l.ends_with('\n');
            l.truncate(at);
            if newline {
                l.push('\n');
            }
        }
        out.push_str(&l);
    }
    std::borrow::Cow::Owned(out)
}

/// Calls `f` with every string value of `v`, descending into strings that hold JSON objects
/// or arrays (arguments nested as text).
fn strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => {
            let t = s.trim_start();
            if (t.starts_with('{') || t.starts_with('['))
                && let Ok(inner @ (Value::Object(_) | Value::Array(_))) =
                    serde_json::from_str::<Value>(s)
            {
                strings(&inner, f);
            } else {
                f(s);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| strings(x, f)),
        Value::Object(map) => map.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}

/// The names list: each name once, ordered by its latest push, the newest [`MAX_NAMES`] kept;
/// a push is O(1), so a message with a million names costs a million steps, not their square.
#[derive(Clone, Debug, Default)]
struct NameList {
    clock: u64,
    stamps: std::collections::HashMap<String, u64>,
}

impl NameList {
    /// Adds `name` at the newest end (an earlier copy moves).
    fn push(&mut self, name: &str) {
        self.clock += 1;
        if let Some(s) = self.stamps.get_mut(name) {
            *s = self.clock;
            return;
        }
        self.stamps.insert(name.to_owned(), self.clock);
        if self.stamps.len() > 2 * MAX_NAMES {
            let mut by_age: Vec<u64> = self.stamps.values().copied().collect();
            by_age.sort_unstable();
            let cut = by_age[by_age.len() - MAX_NAMES];
            self.stamps.retain(|_, s| *s >= cut);
        }
    }

    fn remove(&mut self, name: &str) {
        self.stamps.remove(name);
    }

    fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }

    /// Oldest first, at most the newest [`MAX_NAMES`].
    fn ordered(&self) -> Vec<&str> {
        let mut v: Vec<(&str, u64)> = self.stamps.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        v.sort_unstable_by_key(|(_, s)| *s);
        let skip = v.len().saturating_sub(MAX_NAMES);
        v.into_iter().skip(skip).map(|(n, _)| n).collect()
    }
}

impl PartialEq for NameList {
    fn eq(&self, other: &NameList) -> bool {
        self.ordered() == other.ordered()
    }
}

impl Eq for NameList {}

/// Adds `entry` (redacted) at the newest end, removing an earlier copy; the entry as kept,
/// or `None` when it was not kept (empty, or more than one line once redacted) or was
/// already there.
fn push(list: &mut Vec<String>, entry: &str) -> Option<String> {
    let entry = entry.trim();
    // A repeat (the common case: the same command run again) is found before redacting: an
    // entry equal to a kept one is that entry, already redacted.
    if let Some(i) = list.iter().rposition(|e| e == entry) {
        let e = list.remove(i);
        list.push(e);
        return None;
    }
    let entry = redact::redact(entry);
    if entry.is_empty() || entry.contains('\n') {
        return None;
    }
    if let Some(i) = list.iter().position(|e| *e == *entry) {
        let e = list.remove(i);
        list.push(e);
        None
    } else {
        list.push(entry.into_owned());
        list.last().cloned()
    }
}

#[cfg(test)]
mod tests;
