//! A compaction the agent's model can ask for, as a tool the agent registers beside
//! [`recall_tool_definition`](crate::recall::recall_tool_definition).
//!
//! [`compact_tool_definition`] is an OpenAI function tool, `compact_context`, with an optional
//! `focus`. When the model calls it, the agent passes the call's arguments to
//! [`Compressor::request_compaction`] and returns the text it gives as the tool result; the
//! compaction runs at the next [`before_request`](Compressor::before_request), forced (even
//! below the threshold) but bounded like any automatic pass: it waits out a failure cooldown
//! or anti-thrash pause (the pass is then reported `skipped`), and the model gets at most one
//! honoured request per user turn, so it cannot loop it.
//!
//! ```
//! use std::sync::Arc;
//! use hermes_compaction::compact_tool::compact_tool_definition;
//! use hermes_compaction::core::{Estimator, Message};
//! use hermes_compaction::llm::ExtractiveSummarizer;
//! use hermes_compaction::{Compressor, Config};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! assert_eq!(compact_tool_definition()["function"]["name"], "compact_context");
//! let mut c = Compressor::builder(Config::default())
//!     .summarizer(Arc::new(ExtractiveSummarizer::default()))
//!     .counter(Arc::new(Estimator::default()))
//!     .session("s1")
//!     .build()
//!     .unwrap();
//! let mut msgs = vec![Message::system("You are a coding agent.")];
//! for i in 0..40 {
//!     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(40))));
//!     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(40))));
//! }
//! let mut t = c.transcript(msgs);
//! // Far below the threshold, but the model asked.
//! let answer = c.request_compaction(&t, r#"{"focus":"the parser rewrite"}"#);
//! assert!(answer.starts_with("Compaction requested"));
//! let (_ticket, report) = c.before_request(&mut t).await;
//! assert!(report.is_some());
//! # });
//! ```

use serde::Deserialize;
use serde_json::{Value, json};

use compaction_core::Transcript;

use crate::compressor::{Compressor, Requested};

/// The tool's name.
pub const COMPACT_TOOL_NAME: &str = "compact_context";

/// Characters of a requested focus kept (redacted, cut in the middle).
pub const MAX_FOCUS_CHARS: usize = 300;

/// The `compact_context` tool, in the OpenAI chat-completions `tools` format.
pub fn compact_tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": COMPACT_TOOL_NAME,
            "description": "Compact the conversation now to free context: older messages are \
                summarized (nothing is lost: compacted content stays recallable). Use it before \
                a large task when the context is full of finished work. At most once per user \
                turn; it takes effect before your next request.",
            "parameters": {
                "type": "object",
                "properties": {
                    "focus": {
                        "type": "string",
                        "description": "What the summary should keep in most detail (a topic, a file, a goal)."
                    }
                },
                "additionalProperties": false
            }
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    focus: Option<String>,
}

impl Compressor {
    /// Handles a `compact_context` call (`arguments_json` is its `function.arguments`) and
    /// returns the tool result text for the model. A well-formed call schedules one forced
    /// pass for the next [`before_request`](Self::before_request), with its focus (redacted,
    /// at most [`MAX_FOCUS_CHARS`]); a call while one is pending, or after one was honoured
    /// in the same user turn (the latest real user message of `t` is the same message), is declined.
    /// Malformed arguments are explained, never an error. Never runs a pass itself.
    pub fn request_compaction(&mut self, t: &Transcript, arguments_json: &str) -> String {
        let args = if arguments_json.trim().is_empty() {
            Args { focus: None }
        } else {
            match serde_json::from_str::<Args>(arguments_json) {
                Ok(a) => a,
                Err(_) => {
                    return format!(
                        "{COMPACT_TOOL_NAME}: the arguments must be a JSON object with an optional string `focus`; nothing was scheduled."
                    );
                }
            }
        };
        if self.rt.compaction_requested() {
            return "A compaction is already scheduled before your next request.".into();
        }
        // The turn is named by its user message's content: indices move when a pass runs.
        let turn = t.last_real_user().map(|i| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            t.messages()[i].to_wire_json().hash(&mut h);
            h.finish()
        });
        if self.rt.requested_turn() == Some(turn) {
            return "Not now: a compaction already ran for this user turn. Continue with the task."
                .into();
        }
        let focus = args
            .focus
            .map(|f| compaction_redact::redact(f.trim()).into_owned())
            .filter(|f| !f.is_empty())
            .map(|f| compaction_core::material::cut_middle(&f, MAX_FOCUS_CHARS));
        self.rt.request(Requested { focus }, turn);
        "Compaction requested: it runs before your next request. Continue with the task.".into()
    }
}
