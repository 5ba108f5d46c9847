//! Insertion-time trimming: the pure decision of what a giant tool result (or, optionally, a
//! giant user paste) looks like in the live transcript.
//!
//! Pruning rewrites old history, and every rewrite breaks the provider's prompt cache at the
//! first changed message. Trimming happens once, *before* the message becomes durable history:
//! the transcript receives a compact form from the first request on, so the prompt prefix
//! never changes because of that blob. The compact form is
//!
//! 1. a header line in the shape pruning writes (tool, key argument such as the command or
//!    the path and line range, size, exit status), starting with `[trimmed]`;
//! 2. a head excerpt, cut at a line boundary;
//! 3. an explicit elision note with the number of lines and characters left out and the
//!    handle of the full text;
//! 4. a tail excerpt, cut at a line boundary.
//!
//! Command output keeps most of its budget for the tail (the last lines and the exit status
//! are what an agent reads); other outputs split it as configured.
//!
//! The decision is deterministic: the same message always gives the same compact form and the
//! same handle (`trim-` and 16 hex digits of a hash of the call id, role and content), so a
//! replay builds the same prompt. The caller persists the full original under the handle
//! *before* it uses the compact form, and keeps the original when that write fails.
//!
//! Laws: the compact message keeps every field but `content` (so `tool_call_id`, `name` and
//! unknown fields are untouched and tool pairing holds); its metadata carries the handle
//! ([`Meta::trimmed_handle`](crate::Meta::trimmed_handle)); a trimmed message is never trimmed
//! again; outputs of protected tools, summary markers, pruned one-liners and messages that are
//! already persisted are never trimmed.
//!
//! ```
//! use compaction_core::prune::ToolInfo;
//! use compaction_core::trim::{TrimConfig, plan_trim};
//! use compaction_core::{Estimator, Message};
//!
//! let output: String = (0..2_000).map(|i| format!("test case {i} ok\n")).collect::<String>()
//!     + "test result: FAILED\nexit code: 101";
//! let result = Message::tool_result("call_1", output.clone());
//! let tool = ToolInfo { name: "bash", arguments: r#"{"command":"cargo test"}"# };
//! let cfg = TrimConfig { max_tokens: 2_000, ..TrimConfig::default() };
//! let trimmed = plan_trim(&result, Some(&tool), &cfg, &Estimator::default()).unwrap();
//! let text = trimmed.message.text();
//! assert!(text.starts_with("[trimmed] bash `cargo test`:"));
//! assert!(text.ends_with("test result: FAILED\nexit code: 101"));
//! assert_eq!(trimmed.message.tool_call_id(), Some("call_1"));
//! assert_eq!(trimmed.message.meta().unwrap().trimmed_handle.as_deref(), Some(trimmed.handle.as_str()));
//! // Idempotent: the compact form is never trimmed again.
//! assert!(plan_trim(&trimmed.message, Some(&tool), &cfg, &Estimator::default()).is_none());
//! ```

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::marker;
use crate::message::{Content, Message, Role};
use crate::prune::{self, Family, PRUNED_PREFIX, ToolInfo};
use crate::tokens::TokenCounter;

/// First characters of every compact form this module writes.
pub(crate) const TRIMMED_PREFIX: &str = "[trimmed]";

/// First characters of every trim handle.
const HANDLE_PREFIX: &str = "trim-";

/// Name of the recall tool the elision note points to.
pub const RECALL_TOOL_NAME: &str = "recall_compacted";

/// Trimming policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrimConfig {
    /// Messages above this many tokens are trimmed; 0 turns trimming off. Default 0.
    pub max_tokens: u64,
    /// Characters of the head excerpt. Default 2,000.
    pub head_chars: usize,
    /// Characters of the tail excerpt. Default 2,000. Command output moves three quarters of
    /// the head budget to the tail.
    pub tail_chars: usize,
    /// Tools whose outputs are never trimmed (the pruning list by default).
    pub protected_tools: Vec<String>,
}

impl Default for TrimConfig {
    fn default() -> Self {
        TrimConfig {
            max_tokens: defaults::INSERT_TRIM_TOKENS,
            head_chars: defaults::INSERT_TRIM_HEAD_CHARS,
            tail_chars: defaults::INSERT_TRIM_TAIL_CHARS,
            protected_tools: defaults::protected_tools(),
        }
    }
}

/// A trimmed message and what the caller must persist for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trimmed {
    /// The compact form: the original with only its content replaced and
    /// [`Meta::trimmed_handle`](crate::Meta::trimmed_handle) set.
    pub message: Message,
    /// The handle to store the full original under.
    pub handle: String,
    /// Tokens of the original message.
    pub original_tokens: u64,
    /// Tokens of the compact form.
    pub trimmed_tokens: u64,
    /// Characters left out of the excerpts.
    pub elided_chars: usize,
    /// Lines left out of the excerpts.
    pub elided_lines: usize,
}

/// Plans trimming of one message about to be appended: a tool result (with the call it
/// answers, when known) or a user message. Returns `None` when the message stays as it is:
/// trimming is off, the message is at or under the limit, it is not a tool result or user
/// message, its tool is protected, it is a marker, a pruned or trimmed form, already persisted,
/// holds non-text parts (images), is [pinned](Message::is_pinned), or the compact form would
/// not be smaller.
pub fn plan_trim(
    message: &Message,
    tool: Option<&ToolInfo<'_>>,
    cfg: &TrimConfig,
    counter: &dyn TokenCounter,
) -> Option<Trimmed> {
    if cfg.max_tokens == 0
        || is_trimmed(message)
        || message.row_id().is_some()
        || message.is_pinned()
    {
        return None;
    }
    let is_result = match message.role() {
        Role::Tool => true,
        Role::User => false,
        _ => return None,
    };
    if let Some(info) = tool
        && is_result
        && cfg.protected_tools.iter().any(|p| p == info.name)
    {
        return None;
    }
    if !is_result && marker::classify(message).is_some() {
        return None;
    }
    let text = trimmable_text(message)?;
    if text.starts_with(PRUNED_PREFIX) || text.starts_with(TRIMMED_PREFIX) {
        return None;
    }
    let original_tokens = counter.count_message(message);
    if original_tokens <= cfg.max_tokens {
        return None;
    }

    let shell = is_result
        && tool.is_some_and(|t| prune::tool_family(&t.name.to_ascii_lowercase()) == Family::Shell);
    let (head_budget, tail_budget) = if shell {
        let head = cfg.head_chars / 4;
        (head, cfg.tail_chars + (cfg.head_chars - head))
    } else {
        (cfg.head_chars, cfg.tail_chars)
    };
    let head_end = head_cut(&text, head_budget);
    let tail_start = tail_cut(&text, tail_budget).max(head_end);
    let elided = &text[head_end..tail_start];
    let elided_chars = elided.chars().count();
    if elided_chars == 0 {
        return None;
    }
    let elided_lines = elided.matches('\n').count().max(1);

    let handle = handle_for(message);
    let header = if is_result {
        let described = prune::describe_tool_output(tool, &text);
        match described.strip_prefix(PRUNED_PREFIX) {
            Some(rest) => format!("{TRIMMED_PREFIX}{rest}"),
            None => described,
        }
    } else {
        format!(
            "{TRIMMED_PREFIX} pasted text ({} chars, {} lines)",
            text.chars().count(),
            text.lines().count()
        )
    };
    let head = text[..head_end].trim_end_matches(['\n', '\r']);
    let tail = text[tail_start..].trim_start_matches(['\n', '\r']);
    let mut compact = String::with_capacity(header.len() + head.len() + tail.len() + 256);
    compact.push_str(&header);
    compact.push('\n');
    if !head.is_empty() {
        compact.push_str(head);
        compact.push('\n');
    }
    compact.push_str(&elision_note(elided_lines, elided_chars, &handle));
    if !tail.is_empty() {
        compact.push('\n');
        compact.push_str(tail);
    }

    let mut new = message.clone();
    new.set_text(compact);
    new.meta_mut().trimmed_handle = Some(handle.clone());
    let trimmed_tokens = counter.count_message(&new);
    if trimmed_tokens >= original_tokens {
        return None;
    }
    Some(Trimmed {
        message: new,
        handle,
        original_tokens,
        trimmed_tokens,
        elided_chars,
        elided_lines,
    })
}

/// The deterministic handle of a message's content: [`HANDLE_PREFIX`] and 16 hex digits of a
/// 64-bit hash (FNV-1a, then a SplitMix64 finalizer) of the tool call id, the role and the
/// visible text. Stable across platforms and releases.
fn handle_for(message: &Message) -> String {
    let mut h = Fnv::new();
    h.write(message.tool_call_id().unwrap_or("").as_bytes());
    h.write(&[0x1f]);
    h.write(message.role().as_str().as_bytes());
    h.write(&[0x1f]);
    match message.content() {
        Some(Content::Text(s)) => h.write(s.as_bytes()),
        Some(c) => h.write(c.text().as_bytes()),
        None => {}
    }
    format!("{HANDLE_PREFIX}{:016x}", splitmix(h.0))
}

/// Whether a message is a compact form written by [`plan_trim`] (by metadata or by its text).
fn is_trimmed(message: &Message) -> bool {
    message.meta().is_some_and(|m| m.trimmed_handle.is_some())
        || matches!(message.content(), Some(Content::Text(s)) if s.starts_with(TRIMMED_PREFIX))
}

fn elision_note(lines: usize, chars: usize, handle: &str) -> String {
    let line_word = if lines == 1 { "line" } else { "lines" };
    format!(
        "[… {lines} {line_word} ({chars} chars) elided at insertion; the full text is stored as \
         {handle}: call {RECALL_TOOL_NAME} with {{\"handle\":\"{handle}\"}} to read it …]"
    )
}

/// The text to trim: a string, or parts that are all text. `None` for anything holding
/// images or other non-text parts, and for empty content.
fn trimmable_text(m: &Message) -> Option<Cow<'_, str>> {
    match m.content()? {
        Content::Text(s) => Some(Cow::Borrowed(s.as_str())),
        Content::Parts(parts) if !parts.is_empty() && parts.iter().all(|p| p.text().is_some()) => {
            Some(m.text())
        }
        _ => None,
    }
}

/// Byte index ending the head: the longest run of whole lines within `budget` characters, or
/// exactly `budget` characters when the first line alone is longer.
fn head_cut(text: &str, budget: usize) -> usize {
    let end = text
        .char_indices()
        .nth(budget)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    if end == text.len() {
        return end;
    }
    match text[..end].rfind('\n') {
        Some(nl) => nl + 1,
        None => end,
    }
}

/// Byte index starting the tail: the longest run of whole lines within `budget` characters at
/// the end, or exactly the last `budget` characters when the last line alone is longer.
fn tail_cut(text: &str, budget: usize) -> usize {
    if budget == 0 {
        return text.len();
    }
    let start = text
        .char_indices()
        .rev()
        .nth(budget - 1)
        .map(|(i, _)| i)
        .unwrap_or(0);
    if start == 0 {
        return 0;
    }
    // Starting right after a newline is already a line boundary.
    if text[..start].ends_with('\n') {
        return start;
    }
    match text[start..].find('\n') {
        Some(nl) if start + nl + 1 < text.len() => start + nl + 1,
        _ => start,
    }
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// SplitMix64 finalizer: spreads FNV's weak low bits over the whole word.
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimator;
    use proptest::prelude::*;
    use serde_json::Value;

    /// Whether `s` has the shape of a trim handle (`trim-` and 16 lower-case hex digits).
    fn is_handle(s: &str) -> bool {
        s.strip_prefix(HANDLE_PREFIX).is_some_and(|hex| {
            hex.len() == 16
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    }

    /// The wire object of a message without its `content`.
    fn without_content(m: &Message) -> Value {
        let mut v = m.to_wire_value();
        v.as_object_mut().unwrap().remove("content");
        v
    }

    fn cfg(max_tokens: u64) -> TrimConfig {
        TrimConfig {
            max_tokens,
            head_chars: 40,
            tail_chars: 40,
            ..TrimConfig::default()
        }
    }

    #[test]
    fn cuts_snap_to_line_boundaries() {
        let text = "aaaa\nbbbb\ncccc\ndddd\neeee";
        assert_eq!(&text[..head_cut(text, 12)], "aaaa\nbbbb\n");
        assert_eq!(&text[tail_cut(text, 12)..], "dddd\neeee");
        // One long line: exact character cut, on a char boundary.
        let long = "é".repeat(30);
        assert_eq!(head_cut(&long, 5), "é".len() * 5);
        assert_eq!(tail_cut(&long, 5), long.len() - "é".len() * 5);
        assert_eq!(head_cut("short", 10), 5);
        assert_eq!(tail_cut("short", 10), 0);
        assert_eq!(tail_cut("abc", 0), 3);
    }

    #[test]
    fn handles_are_stable_and_distinguish_call_ids() {
        let a = Message::tool_result("c1", "same output");
        let b = Message::tool_result("c2", "same output");
        assert_eq!(handle_for(&a), handle_for(&a.clone()));
        assert_ne!(handle_for(&a), handle_for(&b));
        assert!(is_handle(&handle_for(&a)));
        // Pinned: the hash must never change between releases.
        assert_eq!(
            handle_for(&Message::tool_result("", "")),
            "trim-b95781ef84dc9324"
        );
        assert!(!is_handle("trim-XYZ"));
    }

    #[test]
    fn user_pastes_get_their_own_header_and_markers_are_left_alone() {
        let paste = "pasted log line\n".repeat(100);
        let m = Message::user(paste);
        let t = plan_trim(&m, None, &cfg(50), &Estimator::default()).unwrap();
        assert!(
            t.message
                .text()
                .starts_with("[trimmed] pasted text (1600 chars, 100 lines)\n")
        );
        let marker = marker::render(
            crate::MarkerKind::Batch,
            Role::User,
            &"summary line\n".repeat(100),
        );
        assert!(plan_trim(&marker, None, &cfg(50), &Estimator::default()).is_none());
        let assistant = Message::assistant("x\n".repeat(500));
        assert!(plan_trim(&assistant, None, &cfg(50), &Estimator::default()).is_none());
        let mut pinned = m.clone();
        pinned.meta_mut().pinned = true;
        assert!(plan_trim(&pinned, None, &cfg(50), &Estimator::default()).is_none());
    }

    fn tool_names() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "bash",
            "read_file",
            "Read",
            "grep",
            "web_fetch",
            "deploy",
            "memory",
            "terminal",
        ])
    }

    fn output() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                "[a-z ]{0,80}",
                "[\\PC]{0,40}",
                Just(String::new()),
                Just("exit code: 2".to_owned()),
                "日本語[a-z]{0,10}",
            ],
            0..400,
        )
        .prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Pairing and every field but content untouched; idempotent; deterministic; excerpts
        /// are a prefix and a suffix of the original; smaller; protected and small outputs kept.
        #[test]
        fn trimming_laws(
            tool in tool_names(),
            id in "[a-zA-Z0-9_]{1,12}",
            out in output(),
            max_tokens in 1u64..2_000,
            head in 0usize..800,
            tail in 0usize..800,
            extra in prop::option::of("[a-z]{1,8}"),
        ) {
            let e = Estimator::default();
            let cfg = TrimConfig { max_tokens, head_chars: head, tail_chars: tail, ..TrimConfig::default() };
            let mut line = format!(r#"{{"role":"tool","tool_call_id":{},"content":{}"#,
                serde_json::to_string(&id).unwrap(), serde_json::to_string(&out).unwrap());
            if let Some(x) = &extra {
                line.push_str(&format!(r#","name":"{x}","ts":1.50"#));
            }
            line.push('}');
            let m = Message::from_json(&line).unwrap();
            let args = r#"{"command":"make","path":"a.txt"}"#;
            let info = ToolInfo { name: tool, arguments: args };
            let planned = plan_trim(&m, Some(&info), &cfg, &e);
            let tokens = TokenCounter::count_message(&e, &m);
            if tokens <= max_tokens || cfg.protected_tools.iter().any(|p| p == tool) {
                prop_assert!(planned.is_none());
            }
            let Some(t) = planned else { return Ok(()) };
            // Pairing and every other field.
            prop_assert_eq!(t.message.tool_call_id(), Some(id.as_str()));
            prop_assert_eq!(without_content(&t.message), without_content(&m));
            prop_assert_eq!(t.message.role(), m.role());
            // Metadata carries the handle; the handle is the content's.
            prop_assert_eq!(t.message.meta().unwrap().trimmed_handle.as_deref(), Some(t.handle.as_str()));
            prop_assert_eq!(&t.handle, &handle_for(&m));
            prop_assert!(is_handle(&t.handle));
            // Smaller, labelled, and honest about what it left out.
            prop_assert!(t.trimmed_tokens < t.original_tokens);
            let text = t.message.text().into_owned();
            prop_assert!(text.starts_with(TRIMMED_PREFIX));
            let note = format!("chars) elided at insertion; the full text is stored as {}", t.handle);
            prop_assert!(text.contains(&note));
            prop_assert!(t.elided_chars > 0);
            // Head and tail excerpts come from the original.
            let body = text.split_once('\n').unwrap().1;
            let (head, rest) = body.split_once("[… ").unwrap();
            prop_assert!(out.starts_with(head.trim_end_matches('\n')));
            let tail = rest.split_once("…]").unwrap().1.trim_start_matches('\n');
            prop_assert!(out.ends_with(tail));
            // Idempotent, also when the metadata is lost (text prefix).
            prop_assert!(plan_trim(&t.message, Some(&info), &cfg, &e).is_none());
            let mut bare = t.message.clone();
            *bare.meta_mut() = Default::default();
            prop_assert!(plan_trim(&bare, Some(&info), &cfg, &e).is_none());
            // Deterministic.
            let again = plan_trim(&m.clone(), Some(&info), &cfg, &e).unwrap();
            prop_assert_eq!(again.message.to_json(), t.message.to_json());
        }
    }
}
