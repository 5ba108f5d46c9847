//! hermes-compaction for [rig](https://docs.rs/rig-core/0.44.0): a durable, compacting
//! [`ConversationMemory`](rig_core::memory::ConversationMemory) over the library's session
//! store, and a lossless conversion between rig's `Message` and the library's.
//!
//! - [`CompactingMemory`]: `append` stores a turn's messages in one transaction (SQLite by
//!   default, PostgreSQL by URL with feature `postgres`); `load` runs the compressor's
//!   before-request check, commits its pass, and returns what it keeps; `clear` archives (a
//!   `restore` of the store brings it back). Two loads of one conversation never compact it
//!   twice: the second one's commit is refused as stale, and it reloads the first one's rows.
//! - [`CompactingLayer`]: the same check between the tool rounds of one prompt, as a rig
//!   handler layer ([`Intercept`](rig_core::serve::Intercept)) around the model: each
//!   completion request's history is compacted before the model sees it when it reaches the
//!   threshold, never with a call waiting for its result.
//! - [`convert`]: rig messages to the library's and back, through the library's Anthropic
//!   dialect (signed thinking stays byte for byte what the provider signed).
//!
//! rig-core 0.44 is pinned: its `rust-version` is 1.95, the toolchain this workspace builds
//! with (0.45 and 0.46 declare 1.97.1). rig-core 0.44 has no agent loop (it lives in the
//! `rig-agent` companion crate); the memory seam is `rig_core::memory::ConversationMemory`,
//! which a runtime calls before a prompt (`load`) and after a turn (`append`).
//!
//! The README's "Using it from rig" (a test checks they are the same):
//!
//! ```
//! use hermes_compaction::Config;
//! use hermes_compaction_rig::CompactingMemory;
//! use rig_core::completion::Message;
//! use rig_core::memory::ConversationMemory;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut config = Config::default();
//! config.model.context_length = 32_000; // the model's window
//! // SQLite (created when missing); a postgres:// URL with feature `postgres`.
//! let db = std::env::temp_dir().join("rig-sessions.db");
//! let memory = CompactingMemory::connect(&format!("sqlite://{}", db.display()), config)
//!     .await
//!     .unwrap();
//! let id = "thread-1".into();
//! memory.clear(&id).await.unwrap(); // archives (`session undo` brings it back), never deletes
//!
//! // What a rig runtime does around each prompt: load before it (the memory compacts and
//! // commits first when the conversation is over the threshold), append the turn after it.
//! let history = memory.load(&id).await.unwrap();
//! assert!(history.is_empty());
//! let turn = vec![Message::user("My name is Alice."), Message::assistant("Hello, Alice!")];
//! memory.append(&id, turn.clone()).await.unwrap(); // one transaction
//! assert_eq!(memory.load(&id).await.unwrap(), turn);
//!
//! // Another process (or handle) resumes the conversation from the store alone.
//! let url = format!("sqlite://{}", db.display());
//! let resumed = CompactingMemory::connect(&url, Config::default()).await.unwrap();
//! assert_eq!(resumed.load(&id).await.unwrap(), turn);
//! # });
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod convert;
pub mod layer;
pub mod memory;

pub use convert::{from_rig, to_rig};
pub use layer::CompactingLayer;
pub use memory::{CompactingMemory, Loaded};

/// What can go wrong in this crate. Errors name a message index and what was wrong, never
/// message content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message could not be converted: its index in the transcript given, and why.
    #[error("message {index}: {reason}")]
    Convert {
        /// The index of the message (rig's, or the library's) in the slice converted.
        index: usize,
        /// Why, in words of this crate (no content).
        reason: String,
    },
    /// The session store failed.
    #[error("session store: {0}")]
    Store(#[from] hermes_compaction::store::StoreError),
    /// The configuration was refused when the compressor was built (the error names the key).
    #[error("configuration: {0}")]
    Config(#[from] hermes_compaction::ConfigError),
}

impl Error {
    pub(crate) fn convert(index: usize, reason: &str) -> Error {
        Error::Convert {
            index,
            reason: reason.to_owned(),
        }
    }
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
