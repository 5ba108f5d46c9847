//! The one-line form of events, their emission through `tracing`, and (feature `subscriber`)
//! a subscriber helper for binaries.
//!
//! A line is the event's prefix followed by a compact JSON object with sorted keys, the same
//! form Hermes Agent writes with `json.dumps(payload, sort_keys=True, separators=(",", ":"))`:
//!
//! ```
//! use compaction_telemetry::{format_line, Turn};
//!
//! let turn = Turn::new("s1", 3, Some(4000), 3900, None);
//! assert_eq!(
//!     format_line(&turn),
//!     "compaction turn telemetry: {\"context_limit\":null,\"estimated_tokens\":3900,\
//!      \"event\":\"compaction_turn\",\"occupancy_pct\":null,\"prompt_tokens\":4000,\
//!      \"session_id\":\"s1\",\"threshold_tokens\":null,\"turn\":3}"
//! );
//! ```

use serde_json::{Map, Value};

use crate::event::{BatchAttempt, MicroPass, TelemetryEvent, Trim, Turn};

/// The `tracing` target every telemetry line is logged under.
pub const TARGET: &str = "hermes_compaction::telemetry";

/// The line of `event`: its prefix, then its JSON object with keys sorted (byte order, which
/// is code-point order) and no spaces.
///
/// The workspace builds serde_json with `preserve_order`, so the keys are sorted explicitly
/// here rather than relying on the map type.
pub fn format_line<E: TelemetryEvent>(event: &E) -> String {
    let mut object = match serde_json::to_value(event) {
        Ok(Value::Object(map)) => map,
        // Derived `Serialize` on a struct always yields an object; stay total regardless.
        _ => Map::new(),
    };
    object.insert("event".into(), Value::from(E::EVENT));
    event.derived_fields(&mut object);
    let json = Value::Object(object);
    format!("{}{}", E::PREFIX, sorted(json))
}

/// Logs `event` as one line at INFO level under [`TARGET`].
pub fn emit<E: TelemetryEvent>(event: &E) {
    if tracing::enabled!(target: TARGET, tracing::Level::INFO) {
        let line = format_line(event);
        tracing::info!(target: TARGET, "{line}");
    }
}

/// Logs a micro pass: `micro compaction telemetry: {json}`.
pub fn emit_micro(pass: &MicroPass) {
    emit(pass);
}

/// Logs a batch attempt: `context compression attempt telemetry: {json}`.
pub fn emit_batch(attempt: &BatchAttempt) {
    emit(attempt);
}

/// Logs a turn: `compaction turn telemetry: {json}`.
pub fn emit_turn(turn: &Turn) {
    emit(turn);
}

/// Logs an insertion-time trim that was due: `insert trim telemetry: {json}`.
pub fn emit_trim(trim: &Trim) {
    emit(trim);
}

/// Output format of [`init_subscriber`] (feature `subscriber`; an emit-only build links no
/// subscriber).
///
/// ```
/// use compaction_telemetry::{LogFormat, init_subscriber};
///
/// assert_eq!(LogFormat::default(), LogFormat::Human);
/// // A bad directive is an error, never a panic.
/// assert!(init_subscriber(LogFormat::Json, "hermes_compaction=loud").is_err());
/// ```
#[cfg(feature = "subscriber")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable text lines.
    #[default]
    Human,
    /// JSON lines from the tracing JSON formatter (the message lands in `fields.message`).
    Json,
}

/// Installs a global subscriber writing to stderr, for binaries.
///
/// `filter` is an env-filter directive such as `"info"` or
/// `"warn,hermes_compaction::telemetry=info"`; pass `RUST_LOG` through it if you want the
/// environment to decide. Returns [`Error::Filter`](crate::Error::Filter) for a bad directive
/// and [`Error::SubscriberAlreadySet`](crate::Error::SubscriberAlreadySet) when a global subscriber (or `log` logger) already exists;
/// it never panics.
#[cfg(feature = "subscriber")]
pub fn init_subscriber(format: LogFormat, filter: &str) -> crate::Result<()> {
    use crate::Error;
    let filter = tracing_subscriber::EnvFilter::try_new(filter).map_err(Error::Filter)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(Error::SubscriberAlreadySet)
}

/// `value` with every object's keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorting_is_recursive_and_bytewise() {
        let v = json!({"b": 1, "a": {"z": 1, "y": [ {"d": 1, "c": 2} ]}, "B": 0});
        assert_eq!(
            sorted(v).to_string(),
            r#"{"B":0,"a":{"y":[{"c":2,"d":1}],"z":1},"b":1}"#
        );
    }
}
