//! Token accounting: the [`TokenCounter`] extension point and the default [`Estimator`].
//!
//! The estimator follows spec section 3: narrow text costs `ceil(chars / 4)`; CJK ideographs,
//! Hangul, Kana and full-width forms cost one token per code point; every image costs a fixed
//! amount. Messages are counted as sent: content, tool-call envelopes (ids, names, arguments),
//! `tool_call_id`, `name` and every extra field (reasoning text, provider replay items), plus a
//! small per-message overhead. Library metadata is never counted.

use crate::message::{Content, Message};

/// Counts tokens. Implement it to bring an exact tokenizer for your model.
///
/// A counter for a model whose tokenizer you hold (here: one token per whitespace-separated
/// word, images at 1,000):
///
/// ```
/// use compaction_core::{Message, TokenCounter, Transcript};
///
/// struct Words;
///
/// impl TokenCounter for Words {
///     fn count_text(&self, text: &str) -> u64 {
///         text.split_whitespace().count() as u64
///     }
///     fn image_tokens(&self) -> u64 {
///         1_000
///     }
/// }
///
/// let m = Message::user("three small words");
/// assert_eq!(Words.count_text(&m.text()), 3);
/// // count_message adds the envelope overhead.
/// assert!(Words.count_message(&m) > 3);
/// let t = Transcript::new(vec![m], &Words);
/// assert_eq!(t.estimated_total(), Words.count_message(&t.messages()[0]));
/// ```
pub trait TokenCounter: Send + Sync {
    /// Tokens in a piece of text.
    fn count_text(&self, text: &str) -> u64;

    /// Tokens one image part costs (default 1,500).
    fn image_tokens(&self) -> u64 {
        DEFAULT_IMAGE_TOKENS
    }

    /// Fixed cost of one message's envelope (role, separators; default 4).
    fn message_overhead(&self) -> u64 {
        MESSAGE_OVERHEAD_TOKENS
    }

    /// Tokens one message costs as sent to a model.
    fn count_message(&self, m: &Message) -> u64 {
        let mut n = self.message_overhead();
        match m.content() {
            Some(Content::Text(s)) => n += self.count_text(s),
            Some(Content::Parts(parts)) => {
                for p in parts {
                    if let Some(t) = p.text() {
                        n += self.count_text(t);
                    } else if p.is_image() {
                        n += self.image_tokens();
                    } else {
                        n += self.count_text(&p.0.to_string());
                    }
                }
            }
            Some(Content::Null) | None => {}
        }
        for call in m.tool_calls() {
            n += TOOL_CALL_OVERHEAD_TOKENS;
            n += self.count_text(&call.id);
            n += self.count_text(&call.function.name);
            n += self.count_text(&call.function.arguments);
        }
        if let Some(id) = m.tool_call_id() {
            n += self.count_text(id);
        }
        if let Some(name) = m.name() {
            n += self.count_text(name);
        }
        for (k, v) in m.extra_fields() {
            n += self.count_text(k) + self.count_text(v);
        }
        n
    }
}

/// Default cost of one image part.
const DEFAULT_IMAGE_TOKENS: u64 = 1_500;
/// Default per-message envelope cost.
const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Default per-tool-call envelope cost (type, function wrapper).
const TOOL_CALL_OVERHEAD_TOKENS: u64 = 8;

/// The default estimator of spec section 3.
#[derive(Clone, Debug)]
pub struct Estimator {
    /// Tokens per image part (default 1,500).
    pub image_tokens: u64,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator {
            image_tokens: DEFAULT_IMAGE_TOKENS,
        }
    }
}

impl TokenCounter for Estimator {
    fn count_text(&self, text: &str) -> u64 {
        estimate_text(text)
    }

    fn image_tokens(&self) -> u64 {
        self.image_tokens
    }
}

/// `ceil(narrow_chars / 4) + wide_chars` over `text`.
pub fn estimate_text(text: &str) -> u64 {
    let bytes = text.as_bytes();
    if bytes.is_ascii() {
        return (bytes.len() as u64).div_ceil(4);
    }
    let mut narrow: u64 = 0;
    let mut wide: u64 = 0;
    for c in text.chars() {
        if is_wide(c) {
            wide += 1;
        } else {
            narrow += 1;
        }
    }
    narrow.div_ceil(4) + wide
}

/// CJK ideographs, Hangul, Kana, and full-width forms: one token per code point.
pub(crate) fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF        // Hangul Jamo
        | 0x2E80..=0x9FFF      // CJK radicals, punctuation, Kana, Bopomofo, ideographs
        | 0xA960..=0xA97F      // Hangul Jamo extended A
        | 0xAC00..=0xD7FF      // Hangul syllables and Jamo extended B
        | 0xF900..=0xFAFF      // CJK compatibility ideographs
        | 0xFE30..=0xFE4F      // CJK compatibility forms
        | 0xFF00..=0xFFEF      // half-width and full-width forms
        | 0x20000..=0x3FFFF    // CJK extensions B and beyond
    )
}

#[cfg(feature = "tiktoken")]
pub use exact::Tiktoken;

#[cfg(feature = "tiktoken")]
mod exact {
    use super::{DEFAULT_IMAGE_TOKENS, TokenCounter};

    /// An exact BPE tokenizer (o200k or cl100k). The tables ship inside the binary.
    pub struct Tiktoken {
        bpe: tiktoken_rs::CoreBPE,
        /// Tokens per image part.
        pub image_tokens: u64,
    }

    impl std::fmt::Debug for Tiktoken {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Tiktoken")
                .field("image_tokens", &self.image_tokens)
                .finish_non_exhaustive()
        }
    }

    impl Tiktoken {
        /// The o200k_base encoding (GPT-4o and later).
        pub fn o200k() -> Tiktoken {
            Tiktoken {
                bpe: tiktoken_rs::o200k_base().expect("o200k tables are compiled in"),
                image_tokens: DEFAULT_IMAGE_TOKENS,
            }
        }

        /// The cl100k_base encoding (GPT-4, GPT-3.5).
        pub fn cl100k() -> Tiktoken {
            Tiktoken {
                bpe: tiktoken_rs::cl100k_base().expect("cl100k tables are compiled in"),
                image_tokens: DEFAULT_IMAGE_TOKENS,
            }
        }
    }

    impl TokenCounter for Tiktoken {
        fn count_text(&self, text: &str) -> u64 {
            self.bpe.encode_ordinary(text).len() as u64
        }

        fn image_tokens(&self) -> u64 {
            self.image_tokens
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolCall};

    #[test]
    fn narrow_and_wide_text() {
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("abcd"), 1);
        assert_eq!(estimate_text("abcde"), 2);
        assert_eq!(estimate_text("你好世界"), 4);
        assert_eq!(estimate_text("안녕"), 2);
        assert_eq!(estimate_text("カタカナ"), 4);
        assert_eq!(estimate_text("ＡＢ"), 2);
        // Mixed: 3 narrow (é counts narrow) -> 1, plus 2 wide.
        assert_eq!(estimate_text("é你a好b"), 3);
    }

    #[test]
    fn messages_count_envelopes_and_extras() {
        let e = Estimator::default();
        let plain = Message::user("abcdefgh");
        assert_eq!(e.count_message(&plain), MESSAGE_OVERHEAD_TOKENS + 2);
        let call = Message::assistant_tool_calls(
            "",
            vec![ToolCall::function("abcd", "ls", "{\"path\":\"/tmp\"}")],
        );
        // 4 overhead + 8 call + id 1 + name 1 + args 4
        assert_eq!(e.count_message(&call), 4 + 8 + 1 + 1 + 4);
        let with_reasoning = Message::from_json(
            r#"{"role":"assistant","content":"","reasoning_content":"abcdefgh"}"#,
        )
        .unwrap();
        // key "reasoning_content" (17 chars) = 5, value "\"abcdefgh\"" (10 chars) = 3
        assert_eq!(e.count_message(&with_reasoning), 4 + 5 + 3);
        let image = Message::from_json(
            r#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}"#,
        )
        .unwrap();
        assert_eq!(e.count_message(&image), 4 + DEFAULT_IMAGE_TOKENS);
    }
}
