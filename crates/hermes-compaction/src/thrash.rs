//! The compressor's durable anti-thrash and cooldown state ([`ThrashState`]) and, with a
//! store, its mapping onto the session's `CompactionState`. A leaf: the compressor, the
//! store writes and the undo all read it, and it names none of them.

/// Durable anti-thrash and cooldown state.
///
/// It survives a restart through the store: [`Compressor::flush`](crate::Compressor::flush) writes it into the
/// session's [`CompactionState`](compaction_store::CompactionState) (mapping:
/// [`ThrashState::write_to`]) and [`Compressor::reload`](crate::Compressor::reload) reads it back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThrashState {
    /// Whether the session has been compacted (head protection decays).
    pub compacted: bool,
    /// Consecutive failed attempts.
    pub consecutive_failures: u32,
    /// No automatic attempt before this time (unix ms).
    pub cooldown_until_ms: Option<u64>,
    /// Ineffective compactions in a row.
    pub ineffective: u32,
    /// Automatic compaction paused until this time (unix ms).
    pub paused_until_ms: Option<u64>,
}

/// The key of [`CompactionState::extra`](compaction_store::CompactionState::extra) that holds
/// the part of [`ThrashState`] the store has no column for.
#[cfg(feature = "store")]
pub const THRASH_STATE_KEY: &str = "thrash";

#[cfg(feature = "store")]
impl ThrashState {
    /// The state as stored in a session's
    /// [`CompactionState`](compaction_store::CompactionState): `cooldown_until_ms` and
    /// `ineffective` in its columns, `compacted`, `consecutive_failures` and
    /// `paused_until_ms` under the key [`THRASH_STATE_KEY`] of `extra`. Other keys of
    /// `extra` are kept; an `extra` that is not a JSON object is kept under `"value"`.
    /// [`Compressor::flush`](crate::Compressor::flush) writes it.
    ///
    /// ```
    /// use hermes_compaction::compressor::ThrashState;
    /// use hermes_compaction::store::CompactionState;
    ///
    /// let state = ThrashState { compacted: true, paused_until_ms: Some(5), ..Default::default() };
    /// let mut stored = CompactionState::default();
    /// state.write_to(&mut stored);
    /// assert_eq!(ThrashState::read_from(&stored), state);
    /// ```
    pub fn write_to(&self, stored: &mut compaction_store::CompactionState) {
        stored.cooldown_until_ms = self
            .cooldown_until_ms
            .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        stored.ineffective_count = self.ineffective;
        let mut extra = match std::mem::take(&mut stored.extra) {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => serde_json::Map::new(),
            other => serde_json::Map::from_iter([("value".to_owned(), other)]),
        };
        extra.insert(
            THRASH_STATE_KEY.to_owned(),
            serde_json::json!({
                "compacted": self.compacted,
                "consecutive_failures": self.consecutive_failures,
                "paused_until_ms": self.paused_until_ms,
            }),
        );
        stored.extra = serde_json::Value::Object(extra);
    }

    /// The state a session's [`CompactionState`](compaction_store::CompactionState) holds
    /// (the inverse of [`write_to`](Self::write_to)). What is missing or malformed reads as
    /// its default (a negative cooldown as none), so a state written by another version or
    /// by hand never fails a resume. [`Compressor::reload`](crate::Compressor::reload)
    /// reads it.
    pub fn read_from(stored: &compaction_store::CompactionState) -> Self {
        let thrash = stored.extra.get(THRASH_STATE_KEY);
        let field = |name: &str| thrash.and_then(|t| t.get(name));
        Self {
            compacted: field("compacted")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            consecutive_failures: field("consecutive_failures")
                .and_then(serde_json::Value::as_u64)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            cooldown_until_ms: stored
                .cooldown_until_ms
                .and_then(|ms| u64::try_from(ms).ok()),
            ineffective: stored.ineffective_count,
            paused_until_ms: field("paused_until_ms").and_then(serde_json::Value::as_u64),
        }
    }
}
