//! The key table: every configuration key, read from [`Config::default`] serialized (so it is
//! the code's own list, not a copy), with its kind, its default and the range
//! [`Config::validate`] allows. The environment overrides type their values by it,
//! `config/default.toml` is checked against it (`tests/config_keys.rs`), and the validator's
//! range tables are joined into it.

use serde_json::Value;

use super::Config;
use super::validate::{F64_RANGES, U64_RANGES};

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyKind {
    /// `true` or `false`.
    Bool,
    /// A whole number (some, like `micro_compact_min_reclaim_tokens`, also take a word).
    Integer,
    /// A number with a fraction.
    Float,
    /// Text: an environment value is taken as written, even when it looks like a number.
    Text,
    /// A list.
    List,
    /// A table whose keys are the user's (`[profiles]`).
    Table,
}

/// The range [`Config::validate`] allows a key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyRange {
    /// A fractional key: from, to (inclusive).
    Float(f64, f64),
    /// A count: from, to (inclusive).
    Count(u64, u64),
}

/// A row of the key table ([`Config::keys`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigKey {
    /// The dotted path (`compression.threshold`).
    pub path: String,
    /// What it holds.
    pub kind: KeyKind,
    /// Its default, as JSON.
    pub default: Value,
    /// The range the validator allows, for the keys it checks by a range table.
    pub range: Option<KeyRange>,
}

impl ConfigKey {
    /// The environment variable that overrides it (`HERMES_COMPACTION__COMPRESSION__THRESHOLD`).
    pub fn env_var(&self) -> String {
        format!(
            "{}{}",
            super::ENV_PREFIX,
            self.path.to_ascii_uppercase().replace('.', "__")
        )
    }
}

impl Config {
    /// Every configuration key, in path order.
    ///
    /// ```
    /// use hermes_compaction::config::{KeyKind, KeyRange};
    /// use hermes_compaction::Config;
    ///
    /// let keys = Config::keys();
    /// let t = keys.iter().find(|k| k.path == "compression.threshold").unwrap();
    /// assert_eq!(t.kind, KeyKind::Float);
    /// assert_eq!(t.range, Some(KeyRange::Float(0.05, 0.95)));
    /// assert_eq!(t.env_var(), "HERMES_COMPACTION__COMPRESSION__THRESHOLD");
    /// let name = keys.iter().find(|k| k.path == "model.name").unwrap();
    /// assert_eq!(name.kind, KeyKind::Text);
    /// ```
    pub fn keys() -> Vec<ConfigKey> {
        let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        let mut out = Vec::new();
        leaves(&defaults, "", &mut out);
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

/// Keys whose value is a whole number or a word (`"auto"`).
const NUMBER_OR_WORD: [&str; 1] = ["compression.micro_compact_min_reclaim_tokens"];

fn leaves(value: &Value, prefix: &str, out: &mut Vec<ConfigKey>) {
    if let Value::Object(map) = value
        && prefix != "profiles"
    {
        for (k, v) in map {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            leaves(v, &path, out);
        }
        return;
    }
    let kind = match value {
        Value::Bool(_) => KeyKind::Bool,
        Value::Number(n) if n.is_f64() => KeyKind::Float,
        Value::Number(_) => KeyKind::Integer,
        Value::Array(_) => KeyKind::List,
        Value::Object(_) => KeyKind::Table,
        // A key that takes a whole number or a word is typed as a number whatever its
        // default is, so the environment layer reads `6000` as a number and `auto` as a word.
        Value::String(_) if NUMBER_OR_WORD.contains(&prefix) => KeyKind::Integer,
        Value::String(_) | Value::Null => KeyKind::Text,
    };
    let range = F64_RANGES
        .iter()
        .find(|(k, ..)| *k == prefix)
        .map(|&(_, lo, hi, _)| KeyRange::Float(lo, hi))
        .or_else(|| {
            U64_RANGES
                .iter()
                .find(|(k, ..)| *k == prefix)
                .map(|&(_, lo, hi, _)| KeyRange::Count(lo, hi))
        });
    out.push(ConfigKey {
        path: prefix.to_owned(),
        kind,
        default: value.clone(),
        range,
    });
}

/// The dotted paths of the keys whose values are text, for the environment overrides.
#[cfg(feature = "config")]
pub(super) fn text_keys() -> std::collections::BTreeSet<String> {
    Config::keys()
        .into_iter()
        .filter(|k| k.kind == KeyKind::Text)
        .map(|k| k.path)
        .collect()
}
