//! The `HERMES_COMPACTION__*` environment overrides as a figment provider.
//!
//! figment's own `Env` provider needs its `env` feature, which brings the `pear` parser and
//! `yansi`; yansi's blanket `Paint` trait (implemented for every type) would then list some 70
//! colouring methods on the rustdoc page of every public type of this crate, burying their
//! own methods. This provider reads the same variables the same way without them:
//!
//! - the prefix is matched case-insensitively and stripped; `__` separates levels; keys are
//!   lowercased (`HERMES_COMPACTION__COMPRESSION__THRESHOLD` sets `compression.threshold`);
//! - a key the key table says is text (`Config::keys`, passed in as
//!   [`EnvOverrides::with_text_keys`]) takes the value as written (quotes around it removed),
//!   so `HERMES_COMPACTION__MODEL__NAME=4` is the model `"4"`, not a number;
//! - any other value is a boolean (`true`/`false`), an integer, a float (when it has a `.`, `e`
//!   or `E`), a list (`[a, b]`, elements parsed the same way, quotes around an element
//!   removed), or else a string.

use std::collections::BTreeSet;

use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};

/// Environment variables under a prefix, nested on `__`.
#[derive(Clone, Debug)]
pub(crate) struct EnvOverrides {
    prefix: &'static str,
    text: BTreeSet<String>,
}

impl EnvOverrides {
    pub(crate) fn prefixed(prefix: &'static str) -> EnvOverrides {
        EnvOverrides {
            prefix,
            text: BTreeSet::new(),
        }
    }

    /// The dotted paths of the keys whose values are text.
    pub(crate) fn with_text_keys(mut self, text: BTreeSet<String>) -> EnvOverrides {
        self.text = text;
        self
    }

    /// The overrides as a nested dictionary, read now.
    fn dict(&self) -> Dict {
        let mut dict = Dict::new();
        for (key, value) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let key = key.trim();
            let Some(head) = key.get(..self.prefix.len()) else {
                continue;
            };
            if !head.eq_ignore_ascii_case(self.prefix) {
                continue;
            }
            let path: Vec<String> = key[self.prefix.len()..]
                .split("__")
                .map(str::to_ascii_lowercase)
                .collect();
            if path.iter().any(String::is_empty) {
                continue;
            }
            let value = value.to_string_lossy();
            let value = value.trim();
            let value = if self.text.contains(&path.join(".")) {
                Value::from(unquote(value).to_owned())
            } else {
                parse(value)
            };
            insert(&mut dict, &path, value);
        }
        dict
    }
}

impl Provider for EnvOverrides {
    fn metadata(&self) -> Metadata {
        Metadata::named(format!("`{}` environment variable(s)", self.prefix))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        Ok(Profile::Default.collect(self.dict()))
    }
}

fn insert(dict: &mut Dict, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            dict.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let entry = dict
                .entry(first.clone())
                .or_insert_with(|| Value::from(Dict::new()));
            if !matches!(entry, Value::Dict(..)) {
                *entry = Value::from(Dict::new());
            }
            if let Value::Dict(_, inner) = entry {
                insert(inner, rest, value);
            }
        }
    }
}

fn parse(s: &str) -> Value {
    if let Some(inner) = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let items: Vec<Value> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            inner.split(',').map(|e| parse_scalar(e.trim())).collect()
        };
        return Value::from(items);
    }
    parse_scalar(s)
}

fn parse_scalar(s: &str) -> Value {
    match s {
        "true" => return Value::from(true),
        "false" => return Value::from(false),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return Value::from(i);
    }
    if s.contains(['.', 'e', 'E'])
        && let Ok(f) = s.parse::<f64>()
        && f.is_finite()
    {
        return Value::from(f);
    }
    Value::from(unquote(s).to_owned())
}

/// `s` without one pair of surrounding quotes, double or single.
fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_like_figments_env() {
        assert_eq!(parse("true"), Value::from(true));
        assert_eq!(parse("-3"), Value::from(-3i64));
        assert_eq!(parse("0.7"), Value::from(0.7));
        assert_eq!(parse("1e3"), Value::from(1000.0));
        assert_eq!(parse("inf"), Value::from("inf".to_owned()));
        assert_eq!(
            parse("sqlite://x.db"),
            Value::from("sqlite://x.db".to_owned())
        );
        assert_eq!(
            parse("[read_file, \"grep\"]"),
            Value::from(vec![
                Value::from("read_file".to_owned()),
                Value::from("grep".to_owned())
            ])
        );
        assert_eq!(parse("[]"), Value::from(Vec::<Value>::new()));
    }

    #[test]
    fn keys_nest_on_double_underscore() {
        let mut d = Dict::new();
        insert(&mut d, &["a".into(), "b".into()], Value::from(1i64));
        insert(&mut d, &["a".into(), "c".into()], Value::from(2i64));
        let Some(Value::Dict(_, a)) = d.get("a") else {
            panic!("nested dict expected: {d:?}");
        };
        assert_eq!(a.len(), 2);
    }
}
