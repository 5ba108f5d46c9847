//! Pure transcript algebra for hermes-compaction.
//!
//! This crate knows nothing of async, I/O, HTTP, SQL or tracing subscribers: plain data in,
//! plain data out. It owns the lossless [message model](Message), [parsing](parse),
//! [validation](validate), [token accounting](tokens), the [head/middle/tail
//! partition](regions), [exchanges](exchange), [summary markers](marker), and
//! [edits](Edit), the one description of what a pass changes. The [laws] of the
//! behaviour spec are a public checker, and behind cargo feature `proptest` the
//! [strategies](crate#property-testing-your-own-transcript-code) that generate valid
//! transcripts are public too.
//!
//! ```
//! use compaction_core::{Transcript, parse, regions, tokens::Estimator};
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
//!
//! # Checking a pass against the laws
//!
//! [`laws::check`] compares the transcript before and after any pass and names every broken
//! law, by number and message index:
//!
//! ```
//! use compaction_core::laws::{self, Law, Pass, PassKind, Protected};
//! use compaction_core::{Estimator, Message};
//!
//! let before = vec![
//!     Message::system("sys"),
//!     Message::user("first request"),
//!     Message::assistant("first answer"),
//!     Message::user("second request"),
//! ];
//! // A broken pass that rewrote the protected head.
//! let mut after = before.clone();
//! after[1] = Message::user("paraphrased request");
//! let pass = Pass::new(PassKind::Batch, Protected { head: 2, tail: 1, pinned: None });
//! let violations = laws::check(&before, &after, &pass, &Estimator::default());
//! assert_eq!(violations.len(), 1);
//! assert_eq!(violations[0].law(), Law::HeadAndTail);
//! assert_eq!(violations[0].to_string(), "law 1 (head and tail are untouched): head message 1 changed");
//! ```
//!
//! # Property-testing your own transcript code
//!
//! With feature `proptest`, the `strategies` module generates valid transcripts (tool loops,
//! parallel calls, images, CJK, huge outputs, unknown fields) and budgets:
//!
//! ```
//! # #[cfg(feature = "proptest")] {
//! use compaction_core::{regions, strategies, Estimator, Transcript};
//! use proptest::prelude::*;
//!
//! proptest!(ProptestConfig::with_cases(16), |(msgs in strategies::transcript(), b in strategies::budget())| {
//!     let t = Transcript::new(msgs, &Estimator::default());
//!     let r = regions::partition(&t, b.threshold_tokens, &b.regions, b.compacted);
//!     prop_assert_eq!(r.tail.end, t.len());
//! });
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod batch;
mod defaults;
mod devec;
mod edit;
mod error;
pub mod exchange;
mod images;
pub mod laws;
pub mod ledger;
pub mod marker;
pub mod material;
mod message;
mod message_serde;
pub mod micro;
pub mod parse;
mod pins;
pub mod preview;
pub mod prune;
mod redact;
pub mod regions;
pub mod stats;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod tokens;
mod transcript;
pub mod trim;
pub mod validate;

pub use edit::{Edit, Splice};
pub use error::{Error, Location, Result};
pub use message::Message;
pub use message::fields::{Content, FunctionCall, MarkerKind, Meta, Part, Role, ToolCall};
pub use tokens::{Estimator, TokenCounter};
pub use transcript::{Calibration, Transcript};
