//! The deterministic extractive summarizer: no network, no model, the same section structure
//! as the prompts ([`SECTIONS`]).
//!
//! It copies facts rather than interpreting them: the latest user requests verbatim, the tool
//! calls made with their key arguments (paths, commands, URLs) and outcomes, files touched,
//! errors seen, and the assistant's latest reply. It works from [`SummaryRequest::messages`]
//! when present, else from the serialized [`SummaryRequest::material`]. Output is bounded by
//! [`SummaryRequest::budget_tokens`] (oldest items go first) and opens with [`EXTRACTIVE_NOTE`].
//!
//! A batch summary's active-request section points at the latest user request, which the
//! caller keeps verbatim after the summary ([`ACTIVE_POINTER`]), then quotes the last request
//! of the summarized part as such.
//!
//! For [`SummaryKind::Defrag`] it shortens the summary it is given to at most half its length,
//! keeping section headings and dropping the oldest lines first, so a defrag through the
//! extractive summarizer always shrinks. Update kinds (batch update, micro merge, turn
//! progress) merge new facts into the previous summary's sections. With
//! [`SummaryRequest::ledger_kept`] it leaves out the file paths and commands the caller's
//! ledger lists verbatim.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use compaction_core::marker;
use compaction_core::tokens::estimate_text;
use compaction_core::{Message, Role};
use compaction_redact::{redact, redacted_head};
use regex::Regex;
use serde_json::Value;

use crate::error::Result;
use crate::prompts::SECTIONS;
use crate::summarizer::{Summarizer, SummaryFuture, SummaryKind, SummaryRequest, SummaryResponse};

/// The first line of every extractive summary.
pub const EXTRACTIVE_NOTE: &str =
    "_Extractive summary: facts copied from the conversation without a model, not interpreted._";

/// The model name extractive responses carry.
pub const EXTRACTIVE_MODEL: &str = "extractive";

/// The deterministic extractive summarizer.
#[derive(Clone, Debug)]
pub struct ExtractiveSummarizer {
    /// Summaries never go below this many tokens of budget, however small the request's.
    pub min_budget_tokens: u32,
    /// Longest verbatim user request kept, in characters.
    pub max_request_chars: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        ExtractiveSummarizer {
            min_budget_tokens: 128,
            max_request_chars: 2_000,
        }
    }
}

impl ExtractiveSummarizer {
    /// The summary text for `req`, synchronously.
    pub fn summarize_text(&self, req: &SummaryRequest) -> String {
        let text = match req.kind {
            SummaryKind::Defrag => {
                let input = req
                    .previous_summary
                    .as_deref()
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or(&req.material);
                shrink_to_half(input)
            }
            _ => {
                let mut facts = if req.messages.is_empty() {
                    facts_from_material(&req.material, self.max_request_chars)
                } else {
                    facts_from_messages(&req.messages, self.max_request_chars)
                };
                if matches!(req.kind, SummaryKind::BatchFirst | SummaryKind::BatchUpdate) {
                    // A batch summary never holds the latest request (the caller keeps it
                    // verbatim after the summary): point at it, and quote the last request of
                    // the summarized part as what it is.
                    let quoted = std::mem::take(&mut facts.items[ACTIVE]);
                    let mut lines = vec![ACTIVE_POINTER.to_owned()];
                    if !quoted.is_empty() {
                        lines.push(LAST_IN_SPAN.to_owned());
                        lines.extend(quoted);
                    }
                    facts.items[ACTIVE] = lines;
                }
                if req.ledger_kept {
                    // The caller's ledger lists every path and command verbatim: point there
                    // rather than say none were recorded.
                    let touched = !facts.items[FILES].is_empty();
                    facts.items[FILES].clear();
                    if touched {
                        facts.items[FILES].push(IN_LEDGER.to_owned());
                    }
                    facts.items[CONTEXT].retain(|l| !l.starts_with(RAN));
                }
                // What the conversation keeps naming is what the span was about, with or
                // without a ledger (which lists the tool calls' paths and the agent's names).
                let mentioned = std::mem::take(&mut facts.items[MENTIONED]);
                for p in mentioned {
                    push_unique(&mut facts.items[FILES], p);
                }
                let mut doc = match req.previous_summary.as_deref() {
                    Some(prev) if !prev.trim().is_empty() => Doc::parse(prev),
                    _ => Doc::default(),
                };
                doc.merge(facts);
                let budget = u64::from(req.budget_tokens.max(self.min_budget_tokens));
                doc.bound(budget);
                doc.render()
            }
        };
        redact(&text).into_owned()
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> &str {
        EXTRACTIVE_MODEL
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        let out: Result<SummaryResponse> = Ok(SummaryResponse {
            text: self.summarize_text(req),
            model: EXTRACTIVE_MODEL.to_owned(),
            usage: None,
            extractive: true,
            fallback: None,
        });
        Box::pin(std::future::ready(out))
    }
}

/// Shortens a summary to at most half its characters: headings stay, the oldest lines of the
/// fullest sections go first, the active request goes last; if headings alone are too long the
/// text is cut at a character boundary.
pub fn shrink_to_half(summary: &str) -> String {
    let limit = summary.chars().count() / 2;
    let mut doc = Doc::parse(summary);
    doc.preface.retain(|l| l != EXTRACTIVE_NOTE);
    doc.preface.insert(0, EXTRACTIVE_NOTE.to_owned());
    if doc.render().chars().count() > limit {
        doc.preface.remove(0);
    }
    while doc.render().chars().count() > limit {
        if doc.drop_oldest(true).is_none() {
            break;
        }
    }
    let out = doc.render();
    if out.chars().count() <= limit {
        return out;
    }
    redacted_head(&out, limit)
}

// ---------------------------------------------------------------------------------------------

const NONE: &str = "- none recorded";
/// The first line of a batch summary's active-request section.
pub const ACTIVE_POINTER: &str = "- The active task is the most recent user message with text \
after this summary, kept there verbatim.";
const LAST_IN_SPAN: &str = "- The last request inside the summarized part was:";
const RAN: &str = "- ran `";
const IN_LEDGER: &str = "- the files and commands of this part are listed verbatim in the ledger \
at the end of this summary";
/// What earlier passes leave in place of content (prune one-liners, trimmed outputs, image
/// placeholders): never quoted as an output's first line.
const MARKER_PREFIXES: [&str; 3] = ["[pruned]", "[trimmed]", "[image removed after compaction:"];
const ACTIVE: usize = 0;
const GOAL: usize = 1;
const CONSTRAINTS: usize = 2;
const COMPLETED: usize = 3;
const STATE: usize = 4;
const BLOCKERS: usize = 5;
const DECISIONS: usize = 6;
const FILES: usize = 8;
const CONTEXT: usize = 9;
const MENTIONED: usize = 10;

/// Facts extracted from one span, one list per section of [`SECTIONS`], then the paths the
/// conversation names ([`MENTIONED`], added to the files section after the ledger's are).
#[derive(Default)]
struct Facts {
    items: [Vec<String>; 11],
}

/// A summary as headed sections.
#[derive(Default)]
struct Doc {
    preface: Vec<String>,
    sections: Vec<(String, Vec<String>)>,
}

impl Doc {
    fn parse(text: &str) -> Doc {
        let mut doc = Doc::default();
        for line in text.lines() {
            if line.starts_with('#') {
                doc.sections.push((line.trim_end().to_owned(), Vec::new()));
            } else if let Some((_, lines)) = doc.sections.last_mut() {
                if !line.trim().is_empty() {
                    lines.push(line.to_owned());
                }
            } else if !line.trim().is_empty() {
                doc.preface.push(line.to_owned());
            }
        }
        doc
    }

    fn section_mut(&mut self, heading: &str) -> &mut Vec<String> {
        let i = match self.sections.iter().position(|(h, _)| h == heading) {
            Some(i) => i,
            None => {
                self.sections.push((heading.to_owned(), Vec::new()));
                self.sections.len() - 1
            }
        };
        &mut self.sections[i].1
    }

    /// Adds new facts: the active request is replaced when the span has one; other items are
    /// appended after what the previous summary held, without duplicates.
    fn merge(&mut self, facts: Facts) {
        self.preface.retain(|l| l != EXTRACTIVE_NOTE);
        self.preface.insert(0, EXTRACTIVE_NOTE.to_owned());
        // Canonical order: known headings first, in order, then anything else.
        for h in SECTIONS {
            self.section_mut(h);
        }
        self.sections.sort_by_key(|(h, _)| {
            SECTIONS
                .iter()
                .position(|s| s == h)
                .unwrap_or(SECTIONS.len())
        });
        for (i, new) in facts.items.into_iter().enumerate().take(SECTIONS.len()) {
            let lines = self.section_mut(SECTIONS[i]);
            if new.is_empty() {
                continue;
            }
            lines.retain(|l| l != NONE);
            if i == ACTIVE {
                *lines = new;
                continue;
            }
            // The session's task is set once: a later span's first request is no new goal.
            if i == GOAL && !lines.is_empty() {
                continue;
            }
            let seen: HashSet<String> = lines.iter().cloned().collect();
            lines.extend(new.into_iter().filter(|l| !seen.contains(l)));
        }
        for (_, lines) in &mut self.sections {
            if lines.is_empty() {
                lines.push(NONE.to_owned());
            }
        }
    }

    /// Drops the oldest lines of the fullest sections until the text fits `budget` tokens.
    fn bound(&mut self, budget: u64) {
        // Cheap phase: `sum - lines` (per-line estimates minus their rounding) is a lower bound
        // of the rendered size, so while it exceeds the budget a line must go anyway.
        let all = || {
            self.preface.iter().chain(
                self.sections
                    .iter()
                    .flat_map(|(h, l)| std::iter::once(h).chain(l)),
            )
        };
        let mut sum: u64 = all().map(|l| estimate_text(l)).sum();
        let mut lines = all().count() as u64;
        while sum.saturating_sub(lines) > budget {
            match self.drop_oldest(false) {
                Some(t) => {
                    sum = sum.saturating_sub(t);
                    lines = lines.saturating_sub(1);
                }
                None => break,
            }
        }
        // Exact phase.
        while estimate_text(&self.render()) > budget {
            if self.drop_oldest(false).is_none() {
                let cut = redacted_head(&self.render(), (budget * 4) as usize);
                *self = Doc::parse(&cut);
                return;
            }
        }
    }

    /// Removes the first content line of the section with the most content and returns its
    /// estimated tokens. The active request is touched only when `allow_active` and nothing
    /// else is left.
    fn drop_oldest(&mut self, allow_active: bool) -> Option<u64> {
        let fullest = self
            .sections
            .iter_mut()
            .filter(|(h, l)| {
                h != SECTIONS[ACTIVE] && !l.is_empty() && !(l.len() == 1 && l[0] == NONE)
            })
            .max_by_key(|(_, l)| l.iter().map(String::len).sum::<usize>());
        if let Some((_, lines)) = fullest {
            let gone = lines.remove(0);
            if lines.is_empty() {
                lines.push(NONE.to_owned());
            }
            return Some(estimate_text(&gone));
        }
        if !self.preface.is_empty() {
            return Some(estimate_text(&self.preface.remove(0)));
        }
        if allow_active {
            for (_, lines) in &mut self.sections {
                if let Some(pos) = lines.iter().position(|l| l != NONE) {
                    return Some(estimate_text(&lines.remove(pos)));
                }
            }
            for (_, lines) in &mut self.sections {
                if !lines.is_empty() {
                    lines.clear();
                    return Some(0);
                }
            }
        }
        None
    }

    fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.preface {
            s.push_str(l);
            s.push('\n');
        }
        for (h, lines) in &self.sections {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(h);
            s.push('\n');
            for l in lines {
                s.push_str(l);
                s.push('\n');
            }
        }
        s.truncate(s.trim_end().len());
        s
    }
}

fn facts_from_messages(messages: &[Message], max_request_chars: usize) -> Facts {
    let mut f = Facts::default();
    let mut requests: Vec<String> = Vec::new();
    let mut call_index: HashMap<String, usize> = HashMap::new();
    let mut actions: Vec<String> = Vec::new();
    let mut last_reply: Option<String> = None;
    // Paths the conversation itself names (not only tool arguments), most named first.
    let mut mentioned: Vec<(String, usize)> = Vec::new();
    for m in messages {
        if marker::classify(m).is_some() {
            continue;
        }
        match m.role() {
            Role::User => {
                let text = without_media(&m.text());
                mentioned_paths(&text, &mut mentioned);
                if let Some(t) = users_own(&text) {
                    requests.push(t);
                }
            }
            Role::Assistant => {
                let text = without_media(&m.text());
                mentioned_paths(&text, &mut mentioned);
                if !text.trim().is_empty() && m.has_visible_text() {
                    for d in decisions_in(&text) {
                        push_unique(&mut f.items[DECISIONS], format!("- {}", clip(&d, 240)));
                    }
                    last_reply = Some(text.trim().to_owned());
                }
                for call in m.tool_calls() {
                    let args: Option<Value> = serde_json::from_str(&call.function.arguments).ok();
                    let key = args.as_ref().and_then(key_argument);
                    if let Some(a) = &args {
                        for p in paths_in_args(a) {
                            push_unique(&mut f.items[FILES], format!("- {p}"));
                        }
                        for c in commands_in_args(a) {
                            push_unique(&mut f.items[CONTEXT], format!("{RAN}{}`", clip(&c, 160)));
                        }
                    }
                    let label = match key {
                        Some(k) => format!("{}({})", call.function.name, clip(&k, 120)),
                        None => format!("{}()", call.function.name),
                    };
                    call_index.insert(call.call_id().to_owned(), actions.len());
                    actions.push(label);
                }
            }
            Role::Tool => {
                let text = without_media(&m.text());
                let outcome = outcome_of(&text);
                if let Some(err) = first_error_line(&text) {
                    push_unique(&mut f.items[BLOCKERS], format!("- {}", clip(err, 200)));
                }
                if let Some(i) = m.tool_call_id().and_then(|id| call_index.get(id)) {
                    actions[*i] = format!("{} → {outcome}", actions[*i]);
                }
            }
            _ => {}
        }
    }
    fill_requests(&mut f, &requests, max_request_chars);
    // The 12 most named, the most named last (a bound drops a section's first lines first).
    mentioned.sort_by_key(|m| std::cmp::Reverse(m.1));
    mentioned.truncate(12);
    f.items[MENTIONED] = mentioned
        .into_iter()
        .rev()
        .map(|(p, _)| format!("- {p}"))
        .collect();
    f.items[COMPLETED] = actions
        .into_iter()
        .enumerate()
        .map(|(i, a)| format!("{}. {a}", i + 1))
        .collect();
    if let Some(r) = last_reply {
        f.items[STATE].push(format!(
            "- last assistant reply: {}",
            clip(&one_line(&r), 400)
        ));
    }
    f
}

fn facts_from_material(material: &str, max_request_chars: usize) -> Facts {
    let mut f = Facts::default();
    let mut requests: Vec<String> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in material.lines() {
        if let Some(c) = ROLE_TAG.captures(line) {
            if let Some(b) = current.take() {
                blocks.push(b);
            }
            let rest = line[c.get(0).map_or(0, |m| m.end())..].trim().to_owned();
            current = Some((c[1].to_ascii_lowercase(), rest));
        } else if let Some((_, body)) = current.as_mut() {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(line);
        } else {
            blocks.push(("text".to_owned(), line.to_owned()));
        }
    }
    blocks.extend(current);
    let mut n = 0;
    let mut last_reply = None;
    for (role, body) in &blocks {
        match role.as_str() {
            "user" => requests.extend(users_own(body)),
            "assistant" => {
                for l in body.lines() {
                    if let Some(c) = CALL_LINE.captures(l) {
                        n += 1;
                        f.items[COMPLETED].push(format!("{n}. {}({})", &c[1], clip(&c[2], 120)));
                    } else if !l.trim().is_empty() {
                        for d in decisions_in(l) {
                            push_unique(&mut f.items[DECISIONS], format!("- {}", clip(&d, 240)));
                        }
                        last_reply = Some(l.trim().to_owned());
                    }
                }
            }
            _ => {}
        }
        for l in body.lines() {
            if is_error_line(l) {
                push_unique(&mut f.items[BLOCKERS], format!("- {}", clip(l.trim(), 200)));
            }
        }
    }
    for m in PATH.find_iter(material) {
        push_unique(&mut f.items[FILES], format!("- {}", m.as_str()));
    }
    fill_requests(&mut f, &requests, max_request_chars);
    if let Some(r) = last_reply {
        f.items[STATE].push(format!("- last assistant reply: {}", clip(&r, 400)));
    }
    f
}

fn fill_requests(f: &mut Facts, requests: &[String], max_chars: usize) {
    let Some(last) = requests.last() else {
        return;
    };
    f.items[ACTIVE] = clip(last, max_chars)
        .lines()
        .map(|l| format!("> {l}"))
        .collect();
    // The task: the first of the user's own requests (an only request is the task too).
    f.items[GOAL].push(format!(
        "- the user's first request: \"{}\"",
        clip(&one_line(&requests[0]), 300)
    ));
    if requests.len() > 1 {
        for r in &requests[1..requests.len() - 1] {
            f.items[CONSTRAINTS].push(format!("- user said: \"{}\"", clip(&one_line(r), 300)));
        }
    }
}

/// The argument that identifies what a tool call acted on.
fn key_argument(args: &Value) -> Option<String> {
    let obj = args.as_object()?;
    for k in KEY_ARGS {
        if let Some(v) = obj.get(*k) {
            return Some(match v {
                Value::String(s) => one_line(s),
                other => other.to_string(),
            });
        }
    }
    obj.values().find_map(|v| v.as_str().map(one_line))
}

const KEY_ARGS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "command",
    "cmd",
    "url",
    "query",
    "pattern",
    "target",
    "directory",
    "dir",
    "name",
];

fn paths_in_args(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(obj) = args.as_object() {
        for k in [
            "path",
            "file_path",
            "filepath",
            "file",
            "filename",
            "paths",
            "files",
        ] {
            match obj.get(k) {
                Some(Value::String(s)) => out.push(s.clone()),
                Some(Value::Array(a)) => {
                    out.extend(a.iter().filter_map(|v| v.as_str().map(str::to_owned)))
                }
                _ => {}
            }
        }
    }
    out
}

fn commands_in_args(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(obj) = args.as_object() {
        for k in ["command", "cmd", "url"] {
            if let Some(Value::String(s)) = obj.get(k) {
                out.push(one_line(s));
            }
        }
    }
    out
}

fn outcome_of(result: &str) -> String {
    // What an earlier pass left in place of the output is no output's content.
    let trimmed = result.trim_start();
    if MARKER_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
        return "ok (output removed by an earlier pass)".to_owned();
    }
    if let Some(e) = first_error_line(result) {
        return format!("failed: {}", clip(e, 120));
    }
    match result.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(l) => format!("ok ({} chars; first line: {})", result.len(), clip(l, 80)),
        None => "ok (no output)".to_owned(),
    }
}

fn first_error_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| is_error_line(l))
}

fn is_error_line(l: &str) -> bool {
    ERROR_LINE.is_match(l)
}

/// Whether a user message's text is the user's own words: not blank, not an interruption
/// notice (`[Request interrupted by user…]`), not text an agent harness writes into the user
/// role (a command caveat, a whole message of tagged blocks such as `<command-name>`,
/// `<system-reminder>`, `<environment_context>`, an instructions file, a continuation
/// notice).
/// Returns those words (a slash command's arguments when the message is a command), or `None`.
fn users_own(text: &str) -> Option<String> {
    let t = text.trim();
    if let Some(c) = COMMAND_ARGS.captures(t) {
        let args = c[1].trim();
        return (!args.is_empty()).then(|| args.to_owned());
    }
    is_users_own(t).then(|| t.to_owned())
}

fn is_users_own(t: &str) -> bool {
    if t.is_empty() {
        return false;
    }
    // A bare slash command (`/mode`, `/clear`) is no request.
    if t.starts_with('/') && !t.contains(char::is_whitespace) {
        return false;
    }
    const HARNESS: [&str; 6] = [
        "[Request interrupted by user",
        "[Request cancelled by user",
        "Caveat: The messages below were generated by the user while running local commands",
        "This session is being continued from a previous conversation",
        "# AGENTS.md instructions",
        "<turn_aborted>",
    ];
    if HARNESS.iter().any(|h| t.starts_with(h)) {
        return false;
    }
    // A message made only of tagged blocks is the harness's.
    !(TAG_OPEN.is_match(t) && t.ends_with('>'))
}

/// `text` without `MEDIA:<path>` directive lines (Hermes Agent's attachment convention: the
/// platform delivers the file; the line is no conversation).
fn without_media(text: &str) -> String {
    if !text.contains("MEDIA:") {
        return text.to_owned();
    }
    text.lines()
        .filter(|l| {
            l.trim()
                .strip_prefix("MEDIA:")
                .is_none_or(|target| target.trim().is_empty())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Counts the paths `text` names into `seen` (first-seen order kept for ties).
fn mentioned_paths(text: &str, seen: &mut Vec<(String, usize)>) {
    let mut here: HashSet<&str> = HashSet::new();
    for m in PATH.find_iter(text) {
        let p = m.as_str().trim_end_matches(['.', ',', ':', ';']);
        if !here.insert(p) {
            continue;
        }
        match seen.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => seen.push((p.to_owned(), 1)),
        }
    }
}

/// Sentences of an assistant reply that state a choice (`I'll use …`, `instead`, `decided`).
fn decisions_in(text: &str) -> Vec<String> {
    text.split(['\n', '.', '!', '?'])
        .map(str::trim)
        .filter(|s| s.len() >= 12 && DECISION.is_match(s))
        .map(one_line)
        .take(3)
        .collect()
}

fn push_unique(v: &mut Vec<String>, item: String) {
    if !v.contains(&item) {
        v.push(item);
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, with an explicit note when cut.
fn clip(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    // Redacted before the cut, so the cut never leaves part of a key.
    let mut out = redacted_head(s, max);
    out.push_str(&format!(" […{} more chars]", n - max));
    out
}

static ROLE_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:\[|<|#+\s*)?(user|assistant|tool|system)(?:\s*\([^)]*\))?(?:\]|>|:)")
        .expect("valid role regex")
});

static CALL_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*>]\s*|→\s*|->\s*)?(?:tool call:\s*)?([A-Za-z_][\w.-]*)\((.*)\)\s*$")
        .expect("valid call regex")
});

static TAG_OPEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^<[A-Za-z][\w:-]*[^<>]*>").expect("valid tag regex"));

static COMMAND_ARGS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)^<command-(?:message|name)>.*<command-args>(.*?)</command-args>")
        .expect("valid command regex")
});

static DECISION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:i(?:'ll| will) (?:use|go with|switch|keep|instead)|(?:we|i) decided|decided to|decision:|going with|instead of|rather than|switch(?:ed|ing)? to)(?-u:\b)")
        .expect("valid decision regex")
});

static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:error|failed|failure|panicked|traceback|exception|fatal)(?-u:\b)|exit (?:code|status):? [1-9]")
        .expect("valid error regex")
});

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:~|\.{1,2})?(?:/[\w.@-]+){2,}|\b[\w-]+(?:/[\w.-]+)+\.\w{1,6}\b")
        .expect("valid path regex")
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrink_to_half_keeps_headings_and_newest_lines() {
        let summary = "## Active request\n> fix it\n\n## Completed actions\n1. old one\n2. middle one\n3. newest one with a long description\n\n## Relevant files\n- src/a.rs\n- src/b.rs\n- src/c.rs";
        let out = shrink_to_half(summary);
        assert!(out.chars().count() <= summary.chars().count() / 2, "{out}");
        assert!(out.contains("## Active request"));
        assert!(!out.contains("1. old one"));
    }

    #[test]
    fn shrink_to_half_always_shrinks() {
        for s in [
            "",
            "x",
            "## A\n## B\n## C",
            "no headings at all but a long line of text",
        ] {
            let out = shrink_to_half(s);
            assert!(
                out.chars().count() <= s.chars().count() / 2,
                "{s:?} -> {out:?}"
            );
        }
    }
}
