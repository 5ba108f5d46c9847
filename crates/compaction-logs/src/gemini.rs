//! Gemini CLI chat recordings.
//!
//! One JSON document per session (`ConversationRecord`: `sessionId`, `projectHash`,
//! `startTime`, `lastUpdated`, `messages`). A record of type `user` is a user message, one of
//! type `gemini` an assistant message whose `toolCalls` (`id`, `name`, `args`, `result`,
//! `status`) each carry their own result: the calls go on the assistant message and each
//! result follows as a tool message answering the call's `id`. `thoughts` are skipped, as are
//! records of type `info`, `error` and `warning` (the CLI's notices). Content and results are
//! Gemini `PartListUnion`s: a string, a part or a list of parts (`text`, `functionResponse`).
//! The document is read whole at [`Reader::finish`](crate::Reader::finish); errors name the
//! record (`messages[INDEX]`).

use compaction_core::Content;
use compaction_core::{Message, ToolCall};
use serde_json::{Map, Value};

use crate::Log;
use crate::error::{Error, Position, Reason};
use crate::json::{arguments, blocks, json_reason, kind, opt_str, req_str};
use crate::out::{Assistant, Out};
use crate::read::LogReader;

#[derive(Debug, Default)]
pub(crate) struct State {
    text: String,
}

impl State {
    pub(crate) fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    pub(crate) fn finish(self) -> Result<Log, Error> {
        let file = |reason| Error {
            position: Position::File,
            reason,
        };
        let doc: Value = serde_json::from_str(&self.text).map_err(|e| Error {
            position: Position::Line(e.line().max(1)),
            reason: json_reason(&e),
        })?;
        let Value::Object(doc) = doc else {
            return Err(file(Reason::NotAnObject { found: kind(&doc) }));
        };
        let records = blocks(&doc, "messages").map_err(file)?;
        let mut out = Out::default();
        for (i, record) in records.into_iter().enumerate() {
            record_into(&mut out, i + 1, record).map_err(|reason| Error {
                position: Position::Record(i),
                reason,
            })?;
        }
        Ok(out.finish())
    }
}

fn record_into(out: &mut Out, at: usize, record: &Map<String, Value>) -> Result<(), Reason> {
    match req_str(record, "type")? {
        "user" => out.push(
            at,
            Message::user(parts_text(record.get("content"), "\n\n")?),
        ),
        "gemini" => {
            let mut reply = Assistant::new(at);
            let text = parts_text(record.get("content"), "\n\n")?;
            if !text.is_empty() {
                reply.texts.push(text);
            }
            let mut results = Vec::new();
            for call in blocks(record, "toolCalls")? {
                let id = req_str(call, "id")?;
                let args = call
                    .get("args")
                    .cloned()
                    .unwrap_or(Value::Object(Map::new()));
                reply.calls.push(ToolCall::function(
                    id,
                    req_str(call, "name")?,
                    arguments(&args),
                ));
                match call.get("result") {
                    None | Some(Value::Null) => {}
                    Some(result) => {
                        let mut m = Message::tool_result(id, "");
                        m.set_content(Some(Content::Text(result_text(result)?)));
                        results.push(m);
                    }
                }
            }
            if let Some(m) = reply.build(false) {
                out.push(at, m);
            }
            for m in results {
                out.push(at, m);
            }
        }
        _ => {}
    }
    Ok(())
}

/// The text of a `PartListUnion`: a string, or the `text` of each part joined by `sep`.
fn parts_text(content: Option<&Value>, sep: &str) -> Result<String, Reason> {
    let parts: Vec<&Value> = match content {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        Some(_) => {
            return Err(Reason::field(
                "content",
                "must be a string or a list of parts",
            ));
        }
    };
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) => o.get("text").and_then(Value::as_str),
            _ => None,
        })
        .collect();
    Ok(texts.join(sep))
}

/// A tool result: text parts, and each `functionResponse`'s `response.output` (or `error`,
/// or the whole response as JSON), joined by newlines.
fn result_text(result: &Value) -> Result<String, Reason> {
    let parts: Vec<&Value> = match result {
        Value::String(s) => return Ok(s.clone()),
        Value::Array(items) => items.iter().collect(),
        one @ Value::Object(_) => vec![one],
        _ => {
            return Err(Reason::field(
                "result",
                "must be a string or a list of parts",
            ));
        }
    };
    let mut texts = Vec::new();
    for p in parts {
        match p {
            Value::String(s) => texts.push(s.clone()),
            Value::Object(o) => {
                if let Some(t) = o.get("text").and_then(Value::as_str) {
                    texts.push(t.to_owned());
                } else if let Some(Value::Object(fr)) = o.get("functionResponse") {
                    let response = fr.get("response");
                    let text = match response {
                        Some(Value::Object(r)) => {
                            match (opt_str(r, "output")?, opt_str(r, "error")?) {
                                (Some(o), _) => o.to_owned(),
                                (None, Some(e)) => e.to_owned(),
                                _ => arguments(&Value::Object(r.clone())),
                            }
                        }
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => arguments(other),
                        None => String::new(),
                    };
                    texts.push(text);
                }
            }
            _ => {}
        }
    }
    Ok(texts.join("\n"))
}

/// The [`Format::GEMINI`](crate::Format::GEMINI) row's line test: a recording written on one
/// line (`sessionId` and a `messages` list).
pub(crate) fn is_line(obj: &Map<String, Value>) -> bool {
    obj.contains_key("sessionId") && obj.get("messages").is_some_and(Value::is_array)
}

/// The row's document test: a multi-line document whose top-level keys (found without
/// parsing the whole document) include `sessionId` and `messages`.
pub(crate) fn is_document(text: &str) -> bool {
    let head: String = text.chars().take(64 * 1024).collect();
    head.contains("\"sessionId\"") && head.contains("\"messages\"")
}

/// The [`Format::GEMINI`](crate::Format::GEMINI) row's reader: every line kept, the document
/// read at the end.
pub(crate) fn reader(_: crate::Options) -> Box<dyn LogReader> {
    Box::new(State::default())
}

impl LogReader for State {
    fn push_line(&mut self, _: usize, line: &str) -> Result<(), Error> {
        self.push(line);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Log, Error> {
        State::finish(*self)
    }
}
