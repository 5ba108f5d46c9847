//! Claude Code project logs.
//!
//! One event per line. `user` and `assistant` lines carry an Anthropic Messages `message`;
//! every other type (`progress`, `system`, `summary` titles, `file-history-snapshot`,
//! `queue-operation`, ...) is UI state and skipped. Claude Code writes one line per content
//! block of a streamed reply, all with the reply's `message.id`, and writes a tool's result as
//! soon as it ran, even before the reply's next block: lines of one `message.id` are merged
//! into one assistant message, and the results that arrived meanwhile follow it in call order.
//! `isSidechain` lines belong to a subagent: skipped in a session log, read in a subagent log
//! (a file whose lines are all sidechain). A user line with `isCompactSummary` is Claude Code's
//! own compaction summary.

use compaction_core::{Message, ToolCall};
use serde_json::{Map, Value};

use crate::error::{Error, Reason};
use crate::json::{arguments, block_type, blocks, flag, joined_text, opt_str, req_obj, req_str};
use crate::out::{self, Assistant, Out};
use crate::read::{JsonLines, LineState, LogReader};
use crate::{Log, Options};

#[derive(Debug, Default)]
pub(crate) struct State {
    main: Chain,
    side: Chain,
}

#[derive(Debug, Default)]
struct Chain {
    out: Out,
    /// The reply being merged: its `message.id` and what it holds so far.
    open: Option<(Option<String>, Assistant)>,
    /// Results read since the reply opened: (line, answered id, message).
    pending: Vec<(usize, String, Message)>,
}

impl State {
    pub(crate) fn push(
        &mut self,
        at: usize,
        line: Map<String, Value>,
        options: Options,
    ) -> Result<(), Reason> {
        let kind = opt_str(&line, "type")?;
        if !matches!(kind, Some("user" | "assistant")) {
            return Ok(());
        }
        let chain = if flag(&line, "isSidechain")? {
            &mut self.side
        } else {
            &mut self.main
        };
        let message = req_obj(&line, "message")?;
        if kind == Some("assistant") {
            return chain.assistant(at, message);
        }
        if flag(&line, "isCompactSummary")? {
            chain.flush();
            let text = joined_text(message.get("content"), "\n\n");
            chain.out.summary(at, text, options);
            return Ok(());
        }
        chain.user(at, message)
    }

    pub(crate) fn finish(mut self) -> Log {
        self.main.flush();
        self.side.flush();
        if self.main.out.len() > 0 || self.side.out.len() == 0 {
            self.main.out.finish()
        } else {
            self.side.out.finish()
        }
    }
}

impl Chain {
    fn assistant(&mut self, at: usize, message: &Map<String, Value>) -> Result<(), Reason> {
        let id = opt_str(message, "id")?.map(str::to_owned);
        let same = matches!(&self.open, Some((open, _)) if open.is_some() && *open == id);
        if !same {
            self.flush();
            self.open = Some((id, Assistant::new(at)));
        }
        let Some((_, reply)) = self.open.as_mut() else {
            return Ok(());
        };
        match message.get("content") {
            Some(Value::String(s)) => reply.texts.push(s.clone()),
            _ => {
                for block in blocks(message, "content")? {
                    match block_type(block) {
                        "text" => reply.texts.push(req_str(block, "text")?.to_owned()),
                        "tool_use" => reply.calls.push(tool_use(block)?),
                        // thinking, redacted_thinking, server tools: nothing a chat turn holds.
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    fn user(&mut self, at: usize, message: &Map<String, Value>) -> Result<(), Reason> {
        if let Some(Value::String(s)) = message.get("content") {
            self.flush();
            self.out.push(at, Message::user(s.clone()));
            return Ok(());
        }
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for block in blocks(message, "content")? {
            match block_type(block) {
                "tool_result" => {
                    let id = req_str(block, "tool_use_id")?.to_owned();
                    let result = tool_result(block)?;
                    let mut m = Message::tool_result(id.clone(), "");
                    m.set_content(Some(result));
                    self.pending.push((at, id, m));
                }
                "text" => texts.push(req_str(block, "text")?.to_owned()),
                "image" => images.extend(out::source_url(block).map(out::image_part)),
                _ => {}
            }
        }
        if !texts.is_empty() || !images.is_empty() {
            self.flush();
            let mut m = Message::user("");
            m.set_content(Some(out::content(texts, images, "\n\n")));
            self.out.push(at, m);
        }
        Ok(())
    }

    /// Ends the open reply: the assistant message, then the results read meanwhile, in the
    /// order of the calls they answer (results of other calls after them, as read).
    fn flush(&mut self) {
        let mut order = Vec::new();
        if let Some((_, reply)) = self.open.take() {
            order = reply.calls.iter().map(|c| c.id.clone()).collect();
            let line = reply.line;
            if let Some(m) = reply.build(false) {
                self.out.push(line, m);
            }
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|(_, id, _)| order.iter().position(|c| c == id).unwrap_or(usize::MAX));
        for (line, _, m) in pending {
            self.out.push(line, m);
        }
    }
}

fn tool_use(block: &Map<String, Value>) -> Result<ToolCall, Reason> {
    let id = req_str(block, "id")?;
    let name = req_str(block, "name")?;
    let input = block
        .get("input")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    Ok(ToolCall::function(id, name, arguments(&input)))
}

/// A `tool_result`'s content: a string as it is; a list's text blocks joined by a newline
/// (with its images as image parts); nothing at all is the empty string.
fn tool_result(block: &Map<String, Value>) -> Result<compaction_core::Content, Reason> {
    Ok(match block.get("content") {
        None | Some(Value::Null) => compaction_core::Content::Text(String::new()),
        Some(Value::String(s)) => compaction_core::Content::Text(s.clone()),
        Some(Value::Array(_)) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for b in blocks(block, "content")? {
                match block_type(b) {
                    "text" => texts.push(req_str(b, "text")?.to_owned()),
                    "image" => images.extend(out::source_url(b).map(out::image_part)),
                    _ => {}
                }
            }
            out::content(texts, images, "\n")
        }
        Some(_) => {
            return Err(Reason::field(
                "content",
                "must be a string or a list of blocks",
            ));
        }
    })
}

/// The [`Format::CLAUDE_CODE`](crate::Format::CLAUDE_CODE) row's line test: an event line
/// with a `uuid`/`sessionId`/`messageId` and a Claude Code event type, or a summary line with
/// its `leafUuid` (a one-line Gemini recording, which also has a `sessionId`, is not one).
pub(crate) fn is_line(obj: &Map<String, Value>) -> bool {
    let kind = obj.get("type").and_then(Value::as_str);
    if crate::gemini::is_line(obj) {
        return false;
    }
    ((obj.contains_key("uuid") || obj.contains_key("sessionId") || obj.contains_key("messageId"))
        && matches!(
            kind,
            Some(
                "user"
                    | "assistant"
                    | "progress"
                    | "system"
                    | "summary"
                    | "file-history-snapshot"
                    | "queue-operation"
            )
        ))
        || (kind == Some("summary") && obj.contains_key("leafUuid"))
}

/// The [`Format::CLAUDE_CODE`](crate::Format::CLAUDE_CODE) row's reader.
pub(crate) fn reader(options: Options) -> Box<dyn LogReader> {
    JsonLines::<State>::reader(options)
}

impl LineState for State {
    fn push(
        &mut self,
        at: usize,
        line: Map<String, Value>,
        options: Options,
    ) -> Result<(), Reason> {
        State::push(self, at, line, options)
    }

    fn finish(self, _: Options) -> Result<Log, Error> {
        Ok(State::finish(self))
    }
}
