//! Pure transcript algebra for hermes-compaction.
//!
//! This crate knows nothing of async, I/O, HTTP, SQL or tracing subscribers: plain data in,
//! plain data out. It owns the lossless [message model](message), [parsing](parse),
//! [validation](validate), [token accounting](tokens), the [head/middle/tail
//! partition](regions), [exchanges](exchange), [summary markers](marker), and
//! [edits](edit), the one description of what a pass changes.
//!
//! ```
//! use compaction_core::{parse, regions, tokens::Estimator, transcript::Transcript};
//!
//! let jsonl = r#"{"role":"system","content":"You are terse."}
//! {"role":"user","content":"hi","ts":1700000000}
//! {"role":"assistant","content":"hello"}
//! "#;
//! let messages = parse::parse_jsonl(jsonl).unwrap();
//! // Unknown fields survive byte-for-byte.
//! assert_eq!(parse::to_jsonl(&messages), jsonl);
//!
//! let t = Transcript::new(messages, &Estimator::default());
//! let window = regions::WindowConfig::for_context(128_000);
//! let r = regions::partition(&t, window.threshold_tokens(), &Default::default(), false);
//! assert_eq!(r.head, 0..3);
//! ```

pub mod batch;
pub mod edit;
pub mod exchange;
pub mod marker;
pub mod material;
pub mod message;
pub mod micro;
pub mod parse;
pub mod prune;
pub mod redact;
pub mod regions;
pub mod tokens;
pub mod transcript;
pub mod validate;

pub use edit::{Edit, Splice};
pub use message::{Content, MarkerKind, Message, Meta, Part, Role, ToolCall};
pub use tokens::{Estimator, TokenCounter};
pub use transcript::Transcript;
