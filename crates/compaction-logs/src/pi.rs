//! pi coding-agent sessions.
//!
//! One entry per line. Version 1 sessions are a flat list (`session` header, `message`,
//! `model_change`, `thinking_level_change`); versions 2 and 3 give every entry an `id` and a
//! `parentId`, so one file holds a tree (a user who went back and continued from an earlier
//! point leaves the abandoned branch in the file). The session is the path from the last entry
//! back to the root, resolved at the end. `compaction` entries (pi's own summary of what came
//! before `firstKeptEntryId`) and `branch_summary` entries are summaries. Message roles:
//! `user`, `assistant` (blocks `text`, `thinking`, `toolCall`), `toolResult`, and
//! `bashExecution` (a command the user ran), which becomes a user message; `custom_message`
//! entries are user messages too. The tool calls of an assistant message that ended in
//! `error` or `aborted` never ran and are dropped; an assistant message left with nothing is
//! dropped.

use std::collections::HashMap;

use compaction_core::{Message, ToolCall};
use serde_json::{Map, Value};

use crate::error::{Error, Position, Reason};
use crate::json::{arguments, block_type, blocks, opt_str, req_obj, req_str};
use crate::out::{self, Assistant, Out};
use crate::read::{JsonLines, LineState, LogReader};
use crate::{Log, Options};

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Entries of a tree session, in file order.
    nodes: Vec<Node>,
    /// Flat (version 1) items, in file order.
    flat: Vec<(usize, Item)>,
}

#[derive(Debug)]
struct Node {
    id: String,
    parent: Option<String>,
    line: usize,
    item: Item,
}

#[derive(Debug)]
enum Item {
    Message(Message),
    Summary(String),
    Nothing,
}

impl State {
    pub(crate) fn push(&mut self, at: usize, entry: Map<String, Value>) -> Result<(), Reason> {
        let kind = opt_str(&entry, "type")?.unwrap_or("");
        let item = match kind {
            "message" => match message(req_obj(&entry, "message")?)? {
                Some(m) => Item::Message(m),
                None => Item::Nothing,
            },
            "custom_message" => Item::Message(user(&entry)?),
            "compaction" | "branch_summary" => {
                Item::Summary(req_str(&entry, "summary")?.to_owned())
            }
            _ => Item::Nothing,
        };
        let id = match kind {
            "session" => None,
            _ => opt_str(&entry, "id")?,
        };
        match id {
            Some(id) => self.nodes.push(Node {
                id: id.to_owned(),
                parent: opt_str(&entry, "parentId")?.map(str::to_owned),
                line: at,
                item,
            }),
            None => self.flat.push((at, item)),
        }
        Ok(())
    }

    pub(crate) fn finish(self, options: Options) -> Result<Log, Error> {
        let mut out = Out::default();
        let emit = |out: &mut Out, line: usize, item: Item| match item {
            Item::Message(m) => out.push(line, m),
            Item::Summary(text) => out.summary(line, text, options),
            Item::Nothing => {}
        };
        for (line, item) in self.flat {
            emit(&mut out, line, item);
        }
        if let Some(last) = self.nodes.last() {
            let index: HashMap<&str, usize> = self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.as_str(), i))
                .collect();
            let mut path = vec![self.nodes.len() - 1];
            let mut parent = last.parent.as_deref();
            while let Some(p) = parent {
                let broken = Error {
                    position: Position::Line(self.nodes[*path.last().unwrap_or(&0)].line),
                    reason: Reason::BrokenTree,
                };
                let &i = index.get(p).ok_or(broken.clone())?;
                if path.len() > self.nodes.len() {
                    return Err(broken);
                }
                path.push(i);
                parent = self.nodes[i].parent.as_deref();
            }
            let mut nodes: Vec<Option<Node>> = self.nodes.into_iter().map(Some).collect();
            for i in path.into_iter().rev() {
                if let Some(n) = nodes[i].take() {
                    emit(&mut out, n.line, n.item);
                }
            }
        }
        Ok(out.finish())
    }
}

fn message(m: &Map<String, Value>) -> Result<Option<Message>, Reason> {
    Ok(match req_str(m, "role")? {
        "user" => Some(user(m)?),
        "assistant" => {
            let failed = matches!(opt_str(m, "stopReason")?, Some("error" | "aborted"));
            let mut reply = Assistant::new(0);
            match m.get("content") {
                Some(Value::String(s)) => reply.texts.push(s.clone()),
                _ => {
                    for b in blocks(m, "content")? {
                        match block_type(b) {
                            "text" => reply.texts.push(req_str(b, "text")?.to_owned()),
                            "toolCall" if !failed => {
                                let input = b
                                    .get("arguments")
                                    .cloned()
                                    .unwrap_or(Value::Object(Map::new()));
                                reply.calls.push(ToolCall::function(
                                    req_str(b, "id")?,
                                    req_str(b, "name")?,
                                    arguments(&input),
                                ));
                            }
                            _ => {}
                        }
                    }
                }
            }
            reply.build(false)
        }
        "toolResult" => {
            let id = req_str(m, "toolCallId")?;
            let (texts, images) = texts_and_images(m)?;
            let mut msg = Message::tool_result(id, "");
            msg.set_content(Some(out::content(texts, images, "\n")));
            Some(msg)
        }
        "bashExecution" => {
            let command = opt_str(m, "command")?.unwrap_or("");
            let output = opt_str(m, "output")?.unwrap_or("");
            Some(Message::user(format!("Ran `{command}`\n{output}")))
        }
        // Summary roles of newer versions duplicate their entries; unknown roles carry nothing
        // this reader can place.
        _ => None,
    })
}

fn user(m: &Map<String, Value>) -> Result<Message, Reason> {
    if let Some(Value::String(s)) = m.get("content") {
        return Ok(Message::user(s.clone()));
    }
    let (texts, images) = texts_and_images(m)?;
    let mut msg = Message::user("");
    msg.set_content(Some(out::content(texts, images, "\n\n")));
    Ok(msg)
}

/// The text blocks and the image blocks (`{type: image, data, mimeType}`) of `content`.
fn texts_and_images(
    m: &Map<String, Value>,
) -> Result<(Vec<String>, Vec<compaction_core::Part>), Reason> {
    if let Some(Value::String(s)) = m.get("content") {
        return Ok((vec![s.clone()], Vec::new()));
    }
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for b in blocks(m, "content")? {
        match block_type(b) {
            "text" => texts.push(req_str(b, "text")?.to_owned()),
            "image" => {
                let mime = opt_str(b, "mimeType")?.unwrap_or("image/png");
                if let Some(data) = opt_str(b, "data")? {
                    images.push(out::image_part(format!("data:{mime};base64,{data}")));
                }
            }
            _ => {}
        }
    }
    Ok((texts, images))
}

/// The [`Format::PI`](crate::Format::PI) row's line test: a `{type: "session"}` header with
/// `cwd`, or a `message` entry with a `parentId`, a pi-only role (`toolResult`,
/// `bashExecution`) or a message object and a `timestamp` (a one-line Gemini recording is not
/// one).
pub(crate) fn is_line(obj: &Map<String, Value>) -> bool {
    let kind = obj.get("type").and_then(Value::as_str);
    if crate::gemini::is_line(obj) {
        return false;
    }
    if kind == Some("session") && obj.contains_key("cwd") {
        return true;
    }
    if kind != Some("message") {
        return false;
    }
    let role = obj
        .get("message")
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str);
    obj.contains_key("parentId")
        || matches!(role, Some("toolResult" | "bashExecution"))
        || (obj.get("message").is_some_and(Value::is_object) && obj.contains_key("timestamp"))
}

/// The [`Format::PI`](crate::Format::PI) row's reader.
pub(crate) fn reader(options: Options) -> Box<dyn LogReader> {
    JsonLines::<State>::reader(options)
}

impl LineState for State {
    fn push(&mut self, at: usize, line: Map<String, Value>, _: Options) -> Result<(), Reason> {
        State::push(self, at, line)
    }

    fn finish(self, options: Options) -> Result<Log, Error> {
        State::finish(self, options)
    }
}
