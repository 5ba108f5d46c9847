//! The transcript a reader builds: messages, their source lines, the native summaries.

use compaction_core::{Content, Part};
use compaction_core::{MarkerKind, Message, ToolCall};
use serde_json::{Map, Value};

use crate::{Log, NativeSummary, Options};

/// A transcript under construction.
#[derive(Debug, Default)]
pub(crate) struct Out {
    log: Log,
}

impl Out {
    pub(crate) fn push(&mut self, line: usize, message: Message) {
        self.log.messages.push(message);
        self.log.lines.push(line);
    }

    pub(crate) fn len(&self) -> usize {
        self.log.messages.len()
    }

    /// One of the agent's own summaries, at the current end.
    pub(crate) fn summary(&mut self, line: usize, text: String, options: Options) {
        if options.summaries_as_markers {
            let mut m = Message::user(text.clone());
            m.meta_mut().marker = Some(MarkerKind::Batch);
            self.push(line, m);
        }
        let before_message = self.len();
        self.log.summaries.push(NativeSummary {
            before_message,
            line,
            text,
        });
    }

    pub(crate) fn finish(self) -> Log {
        self.log
    }
}

/// An assistant message being assembled from several lines or blocks.
#[derive(Debug)]
pub(crate) struct Assistant {
    pub(crate) line: usize,
    pub(crate) texts: Vec<String>,
    pub(crate) calls: Vec<ToolCall>,
}

impl Assistant {
    pub(crate) fn new(line: usize) -> Assistant {
        Assistant {
            line,
            texts: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// The message: texts joined by a blank line, then the calls; `None` when it has neither
    /// text nor calls (a reply that produced nothing a chat transcript holds).
    pub(crate) fn build(self, keep_empty: bool) -> Option<Message> {
        let text = self.texts.join("\n\n");
        if !keep_empty && text.is_empty() && self.calls.is_empty() {
            return None;
        }
        Some(if self.calls.is_empty() {
            Message::assistant(text)
        } else {
            Message::assistant_tool_calls(text, self.calls)
        })
    }
}

/// `{"type":"image_url","image_url":{"url":URL}}`
pub(crate) fn image_part(url: String) -> Part {
    let mut inner = Map::new();
    inner.insert("url".into(), Value::String(url));
    let mut m = Map::new();
    m.insert("type".into(), Value::String("image_url".into()));
    m.insert("image_url".into(), Value::Object(inner));
    Part(Value::Object(m))
}

/// Content from texts and images: the texts joined by `sep` when there is no image, else text
/// parts followed by the image parts.
pub(crate) fn content(texts: Vec<String>, images: Vec<Part>, sep: &str) -> Content {
    if images.is_empty() {
        return Content::Text(texts.join(sep));
    }
    let mut parts: Vec<Part> = texts.into_iter().map(Part::text_part).collect();
    parts.extend(images);
    Content::Parts(parts)
}

/// A data URL of an Anthropic-style `source` (`base64` data or a `url`).
pub(crate) fn source_url(block: &Map<String, Value>) -> Option<String> {
    let source = block.get("source")?.as_object()?;
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media = source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            let data = source.get("data").and_then(Value::as_str)?;
            Some(format!("data:{media};base64,{data}"))
        }
        Some("url") => source.get("url").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}
