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
//! strings joined by spaces) is a command. Entries are trimmed, redacted ([`redact::redact`];
//! a command longer than [`MAX_ENTRY_CHARS`] characters is redacted before it is cut, with
//! [`redact::redacted_head`], so a key straddling the cut never leaves a fragment; longer
//! paths are skipped), and kept once; naming one again moves it to the newest end.
//!
//! The rendered section is bounded ([`Ledger::render`]): when it does not fit, the oldest
//! commands go first, then the oldest files, and the section says how many were dropped.
//!
//! ```
//! use compaction_core::ledger::Ledger;
//! use compaction_core::{Message, ToolCall};
//!
//! let call = Message::assistant_tool_calls(
//!     "",
//!     vec![ToolCall::function("c1", "bash", r#"{"command":"cargo test -p core\necho done"}"#)],
//! );
//! let mut ledger = Ledger::default();
//! ledger.observe(&call);
//! assert_eq!(ledger.commands(), ["cargo test -p core"]);
//!
//! // A summary body with the ledger attached, and split again.
//! let body = ledger.attach("## Active task\n- fix the parser", 500);
//! let (text, again) = Ledger::split(&body);
//! assert_eq!(text, "## Active task\n- fix the parser");
//! assert_eq!(again, ledger);
//! ```

use serde_json::Value;

use crate::message::Message;
use crate::redact;
use crate::tokens::estimate_text;

/// Longest entry kept, in characters.
pub const MAX_ENTRY_CHARS: usize = 200;

/// The heading that opens the ledger section of a summary body.
pub const HEADING: &str = "## Ledger (kept by the library, not the summarizer: files named and commands run by the summarized tool calls, verbatim, oldest first)";

const FILES: &str = "Files:";
const COMMANDS: &str = "Commands:";
const DROPPED: &str = "- (older entries dropped to fit: ";

/// Files and commands, oldest first, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    files: Vec<String>,
    commands: Vec<String>,
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

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.commands.is_empty()
    }

    /// Records the files and commands of `m`'s tool calls (arguments that are not a JSON
    /// object are ignored).
    pub fn observe(&mut self, m: &Message) {
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
                        push(
                            &mut self.commands,
                            &redact::redacted_head(line, MAX_ENTRY_CHARS),
                        );
                    }
                } else if key.ends_with("path") || key == "file" || key == "filename" {
                    if let Value::String(s) = value {
                        push_path(&mut self.files, s);
                    }
                } else if key == "paths" || key == "files" {
                    match value {
                        Value::Array(items) => {
                            for s in items.iter().filter_map(Value::as_str) {
                                push_path(&mut self.files, s);
                            }
                        }
                        Value::String(s) => push_path(&mut self.files, s),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Appends `newer`'s entries after this ledger's (an entry in both moves to the newest
    /// end).
    pub fn extend(&mut self, newer: &Ledger) {
        for f in &newer.files {
            push(&mut self.files, f);
        }
        for c in &newer.commands {
            push(&mut self.commands, c);
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
        let mut into_commands = false;
        for line in body[at + HEADING.len()..].lines() {
            let line = line.trim_end();
            if line == FILES {
                into_commands = false;
            } else if line == COMMANDS {
                into_commands = true;
            } else if line.starts_with(DROPPED) {
                continue;
            } else if let Some(entry) = line.strip_prefix("- ") {
                let list = if into_commands {
                    &mut ledger.commands
                } else {
                    &mut ledger.files
                };
                push(list, entry);
            }
        }
        (body[..at].trim_end(), ledger)
    }

    /// The ledger section, at most `budget_tokens` (estimated), or `None` when there is
    /// nothing to show or no budget. The oldest commands go first, then the oldest files.
    pub fn render(&self, budget_tokens: u64) -> Option<String> {
        if self.is_empty() || budget_tokens == 0 {
            return None;
        }
        // Entries' estimated sizes, each with its line's dash, space and newline.
        let cost = |s: &String| estimate_text(s) + 1;
        let fixed = estimate_text(HEADING) + 2 * estimate_text(COMMANDS) + 16;
        let mut total: u64 = fixed
            + self.files.iter().map(cost).sum::<u64>()
            + self.commands.iter().map(cost).sum::<u64>();
        let (mut skip_commands, mut skip_files) = (0usize, 0usize);
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
        if files.is_empty() && commands.is_empty() {
            return None;
        }
        let mut s = String::from(HEADING);
        if skip_files + skip_commands > 0 {
            s.push('\n');
            s.push_str(&format!(
                "{DROPPED}{skip_files} files, {skip_commands} commands)"
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
        Some(s)
    }

    /// `text` (any earlier ledger section removed) followed by this ledger's section, bounded
    /// by `budget_tokens`; `text` alone when nothing is rendered.
    pub fn attach(&self, text: &str, budget_tokens: u64) -> String {
        let (text, _) = Ledger::split(text);
        match self.render(budget_tokens) {
            Some(section) if text.trim().is_empty() => section,
            Some(section) => format!("{}\n\n{section}", text.trim_end()),
            None => text.to_owned(),
        }
    }
}

fn push_path(list: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if !s.is_empty() && !s.contains('\n') && s.chars().count() <= MAX_ENTRY_CHARS {
        push(list, s);
    }
}

/// Adds `entry` (redacted) at the newest end, removing an earlier copy.
fn push(list: &mut Vec<String>, entry: &str) {
    let entry = entry.trim();
    // A repeat (the common case: the same command run again) is found before redacting: an
    // entry equal to a kept one is that entry, already redacted.
    if let Some(i) = list.iter().rposition(|e| e == entry) {
        let e = list.remove(i);
        list.push(e);
        return;
    }
    let entry = redact::redact(entry);
    if entry.is_empty() || entry.contains('\n') {
        return;
    }
    if let Some(i) = list.iter().position(|e| *e == *entry) {
        let e = list.remove(i);
        list.push(e);
    } else {
        list.push(entry.into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(args: &str) -> Message {
        Message::assistant_tool_calls("", vec![ToolCall::function("c", "tool", args)])
    }

    #[test]
    fn paths_commands_and_recency() {
        let mut l = Ledger::default();
        l.observe(&call(
            r#"{"file_path":"src/a.rs","command":"  ls -la  \nmore"}"#,
        ));
        l.observe(&call(
            r#"{"paths":["b.rs","src/a.rs"],"cmd":["git","status"]}"#,
        ));
        l.observe(&call(
            r#"{"path":"multi\nline","filename":"   ","query":"x"}"#,
        ));
        l.observe(&call("not json"));
        assert_eq!(l.files(), ["b.rs", "src/a.rs"]);
        assert_eq!(l.commands(), ["ls -la", "git status"]);
    }

    #[test]
    fn long_commands_are_cut_and_long_paths_skipped() {
        let mut l = Ledger::default();
        let long = "é".repeat(MAX_ENTRY_CHARS + 5);
        l.observe(&call(&format!(r#"{{"command":"{long}","path":"{long}"}}"#)));
        assert_eq!(l.commands()[0].chars().count(), MAX_ENTRY_CHARS);
        assert!(l.files().is_empty());
    }

    #[test]
    fn secrets_in_commands_are_redacted() {
        let mut l = Ledger::default();
        let key = format!("sk-proj-{}", "a1B2c3D4e5F6g7H8".repeat(3));
        l.observe(&call(&format!(
            r#"{{"command":"curl -H 'Authorization: Bearer {key}' https://x"}}"#
        )));
        let rendered = l.render(1_000).unwrap();
        assert!(!rendered.contains(&key), "{rendered}");
        assert!(!rendered.contains("a1B2c3D4e5F6g7H8"), "{rendered}");
    }

    #[test]
    fn a_secret_straddling_the_cut_leaves_no_fragment() {
        let body = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz";
        for at in [
            MAX_ENTRY_CHARS - 30,
            MAX_ENTRY_CHARS - 8,
            MAX_ENTRY_CHARS - 1,
        ] {
            let mut l = Ledger::default();
            let pad = "a".repeat(at);
            for key in [
                format!("sk-proj-{body}{body}"),
                format!("ghp_{body}"),
                format!("AKIA{}", &body[..16].to_ascii_uppercase()),
            ] {
                // JSON-escaped quotes and a backslash around the key: the parser unescapes
                // them, the redaction sees the key as the shell would.
                let args = serde_json::json!({ "command": format!("{pad} \"{key}\"\\ tail") });
                l.observe(&call(&args.to_string()));
                let rendered = l.render(10_000).unwrap();
                for frag in [&key[..8], &body[..6]] {
                    assert!(!rendered.contains(frag), "at {at}: {frag} in {rendered}");
                }
            }
        }
    }

    #[test]
    fn render_split_round_trip_and_budget_drops_oldest_commands_first() {
        let mut l = Ledger::default();
        for i in 0..50 {
            l.observe(&call(&format!(
                r#"{{"path":"src/file{i}.rs","command":"cargo test --package crate{i} -- --nocapture"}}"#
            )));
        }
        let full = l.render(100_000).unwrap();
        let (text, back) = Ledger::split(&full);
        assert_eq!(text, "");
        assert_eq!(back, l);

        let small = l.render(300).unwrap();
        assert!(estimate_text(&small) <= 300, "{}", estimate_text(&small));
        let (_, kept) = Ledger::split(&small);
        // Every file survives before any command does, and the newest commands are the kept ones.
        assert_eq!(kept.files(), l.files());
        assert!(kept.commands().len() < 50);
        assert!(l.commands().ends_with(kept.commands()));
        assert!(small.contains("older entries dropped to fit"));

        assert_eq!(l.render(0), None);
        assert_eq!(Ledger::default().render(1_000), None);
    }

    #[test]
    fn attach_replaces_an_earlier_section_and_split_takes_the_last() {
        let mut a = Ledger::default();
        a.observe(&call(r#"{"path":"old.rs"}"#));
        let mut b = Ledger::default();
        b.observe(&call(r#"{"path":"new.rs"}"#));
        let once = a.attach("summary text", 1_000);
        let twice = b.attach(&once, 1_000);
        let (text, got) = Ledger::split(&twice);
        assert_eq!(text, "summary text");
        assert_eq!(got, b);
        // A heading inside a line is not a section.
        let inline = format!("see {HEADING}\n- x.rs");
        assert_eq!(Ledger::split(&inline).1, Ledger::default());
    }

    #[test]
    fn extend_keeps_order_and_moves_repeats_to_the_end() {
        let mut a = Ledger::default();
        a.observe(&call(r#"{"path":"a","command":"x"}"#));
        a.observe(&call(r#"{"path":"b","command":"y"}"#));
        let mut b = Ledger::default();
        b.observe(&call(r#"{"path":"a","command":"z"}"#));
        a.extend(&b);
        assert_eq!(a.files(), ["b", "a"]);
        assert_eq!(a.commands(), ["x", "y", "z"]);
    }
}
