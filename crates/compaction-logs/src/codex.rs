//! Codex rollouts.
//!
//! Each line is `{timestamp, type, payload}`. `response_item` payloads are the conversation as
//! the Responses API holds it: `message` (roles `user`, `assistant`, `developer`, `system`;
//! content items `input_text`, `output_text`, `input_image`), `function_call` /
//! `custom_tool_call` / `local_shell_call` (paired with their output by `call_id`),
//! `function_call_output` / `custom_tool_call_output`, and `reasoning` (encrypted; skipped).
//! `compacted` lines are Codex's own compaction summaries. `session_meta`, `turn_context` and
//! `event_msg` lines (UI events that repeat the response items) are skipped. Rollouts written
//! before the `{type, payload}` wrapper hold the response items bare, after a header line
//! without a `type`; they are read the same way.
//!
//! Calls of one reply (an assistant message followed by its calls) form one assistant
//! message; each call's id is its `call_id`, so the results pair with it.

use compaction_core::{Content, Part};
use compaction_core::{Message, Role, ToolCall};
use serde_json::{Map, Value};

use crate::error::{Error, Reason};
use crate::json::{arguments, block_type, blocks, opt_str, req_str};
use crate::out::{self, Assistant, Out};
use crate::read::{JsonLines, LineState, LogReader};
use crate::{Log, Options};

#[derive(Debug, Default)]
pub(crate) struct State {
    out: Out,
    open: Option<Assistant>,
}

impl State {
    pub(crate) fn push(
        &mut self,
        at: usize,
        line: Map<String, Value>,
        options: Options,
    ) -> Result<(), Reason> {
        match opt_str(&line, "type")? {
            Some("response_item") => match line.get("payload") {
                Some(Value::Object(item)) => self.item(at, item),
                _ => Err(Reason::field("payload", "must be an object")),
            },
            Some("compacted") => match line.get("payload") {
                Some(Value::Object(p)) => {
                    self.flush();
                    let text = opt_str(p, "message")?.unwrap_or("").to_owned();
                    self.out.summary(at, text, options);
                    Ok(())
                }
                _ => Err(Reason::field("payload", "must be an object")),
            },
            // The earlier rollouts: a response item per line, no wrapper.
            Some(_) if !line.contains_key("payload") => self.item(at, &line),
            _ => Ok(()),
        }
    }

    fn item(&mut self, at: usize, item: &Map<String, Value>) -> Result<(), Reason> {
        match opt_str(item, "type")?.unwrap_or("") {
            "message" => {
                let role = Role::parse(req_str(item, "role")?);
                let (texts, images) = content_items(item, "content")?;
                if role == Role::Assistant && images.is_empty() {
                    match &mut self.open {
                        Some(reply) if reply.calls.is_empty() => reply.texts.extend(texts),
                        _ => {
                            self.flush();
                            let mut reply = Assistant::new(at);
                            reply.texts = texts;
                            self.open = Some(reply);
                        }
                    }
                    return Ok(());
                }
                self.flush();
                let mut m = Message::new(role, "");
                m.set_content(Some(out::content(texts, images, "\n\n")));
                self.out.push(at, m);
            }
            "function_call" => {
                let call = ToolCall::function(
                    req_str(item, "call_id")?,
                    req_str(item, "name")?,
                    opt_str(item, "arguments")?.unwrap_or(""),
                );
                self.call(at, call);
            }
            "custom_tool_call" => {
                let call = ToolCall::function(
                    req_str(item, "call_id")?,
                    req_str(item, "name")?,
                    opt_str(item, "input")?.unwrap_or(""),
                );
                self.call(at, call);
            }
            "local_shell_call" => {
                let id = match opt_str(item, "call_id")? {
                    Some(id) => id,
                    None => req_str(item, "id")?,
                };
                let action = item
                    .get("action")
                    .cloned()
                    .unwrap_or(Value::Object(Map::new()));
                self.call(
                    at,
                    ToolCall::function(id, "local_shell", arguments(&action)),
                );
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.flush();
                let id = req_str(item, "call_id")?;
                let mut m = Message::tool_result(id, "");
                m.set_content(Some(output(item)?));
                self.out.push(at, m);
            }
            // reasoning (encrypted), web_search_call, ghost snapshots, newer kinds.
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, at: usize, call: ToolCall) {
        self.open
            .get_or_insert_with(|| Assistant::new(at))
            .calls
            .push(call);
    }

    fn flush(&mut self) {
        if let Some(reply) = self.open.take() {
            let line = reply.line;
            if let Some(m) = reply.build(false) {
                self.out.push(line, m);
            }
        }
    }

    pub(crate) fn finish(mut self) -> Log {
        self.flush();
        self.out.finish()
    }
}

/// The texts and images of a list of content items.
fn content_items(
    item: &Map<String, Value>,
    field: &'static str,
) -> Result<(Vec<String>, Vec<Part>), Reason> {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    if let Some(Value::String(s)) = item.get(field) {
        return Ok((vec![s.clone()], images));
    }
    for b in blocks(item, field)? {
        match block_type(b) {
            "input_text" | "output_text" | "text" => texts.push(req_str(b, "text")?.to_owned()),
            "input_image" => {
                if let Some(url) = opt_str(b, "image_url")? {
                    images.push(out::image_part(url.to_owned()));
                }
            }
            _ => {}
        }
    }
    Ok((texts, images))
}

/// A call's output: a string; `{content, success}`; or a list of content items.
fn output(item: &Map<String, Value>) -> Result<Content, Reason> {
    Ok(match item.get("output") {
        None | Some(Value::Null) => Content::Text(String::new()),
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(Value::Object(o)) => match o.get("content") {
            Some(Value::String(s)) => Content::Text(s.clone()),
            Some(Value::Array(_)) => {
                let (texts, images) = content_items(o, "content")?;
                out::content(texts, images, "\n")
            }
            _ => {
                return Err(Reason::field(
                    "output",
                    "must be a string, {content} or a list",
                ));
            }
        },
        Some(Value::Array(_)) => {
            let (texts, images) = content_items(item, "output")?;
            out::content(texts, images, "\n")
        }
        Some(_) => {
            return Err(Reason::field(
                "output",
                "must be a string, {content} or a list",
            ));
        }
    })
}

/// The [`Format::CODEX`](crate::Format::CODEX) row's line test: a rollout line `{type,
/// payload}` of a rollout type, or the earlier header `{id, timestamp, instructions}`.
pub(crate) fn is_line(obj: &Map<String, Value>) -> bool {
    let kind = obj.get("type").and_then(Value::as_str);
    (obj.contains_key("payload")
        && matches!(
            kind,
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
        ))
        || (kind.is_none()
            && obj.contains_key("instructions")
            && obj.contains_key("id")
            && obj.contains_key("timestamp"))
}

/// The [`Format::CODEX`](crate::Format::CODEX) row's reader.
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
