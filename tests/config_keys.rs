//! `config/default.toml` documents exactly the keys the code reads.
//!
//! Two directions, both decided by serde rather than by reading source text:
//!
//! 1. Every key in the file is a field of the facade's `Config`: the file deserializes with
//!    `deny_unknown_fields` on every table (a key no field reads is an error naming it).
//! 2. Every field of `Config` is in the file: the key table's paths (`Config::keys`, read from
//!    `Config::default()` serialized) equal the key paths of the file, so nothing is read that
//!    the file does not document.
//!
//! A third, weaker check looks at the sources: each documented key's field must be read
//! somewhere as `.field` in non-test code (declarations and `Default` initializers have no
//! dot). A field whose name no code reads fails it; a name as common as `url` or `name` passes
//! it by accident (the removed `[store] url` would have: `.url` is read in the OpenAI
//! adapter), so directions 1 and 2 carry the guarantee and a documented key that nothing
//! uses is a review matter. `cargo xtask ci` runs this module as its own step.

use std::collections::BTreeSet;

use figment::Figment;
use figment::providers::{Format, Toml};
use hermes_compaction::config::KeyKind;
use hermes_compaction::{Config, ConfigLoader};
use serde_json::Value;

fn default_toml() -> String {
    let path = test_support::workspace_root().join("config/default.toml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Dotted paths of the leaves of a JSON value (arrays are leaves).
fn leaves(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(v, &path, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned());
        }
    }
}

fn file_keys() -> BTreeSet<String> {
    let value: Value = Figment::from(Toml::string(&default_toml()))
        .extract()
        .expect("default.toml is TOML");
    let mut out = BTreeSet::new();
    leaves(&value, "", &mut out);
    out
}

/// The key table's paths (`Config::keys`, read from `Config::default()` serialized), less the
/// tables whose keys are the user's (`[profiles]`).
fn config_keys() -> BTreeSet<String> {
    Config::keys()
        .into_iter()
        .filter(|k| k.kind != KeyKind::Table)
        .map(|k| k.path)
        .collect()
}

#[test]
fn every_key_in_default_toml_deserializes_into_config() {
    let cfg = ConfigLoader::new()
        .toml(&default_toml())
        .load()
        .map(|(c, _)| c)
        .unwrap_or_else(|e| panic!("default.toml has a key Config does not read: {e}"));
    assert_eq!(
        cfg,
        Config::default(),
        "default.toml and Config::default differ"
    );
    // deny_unknown_fields is what makes the line above a check: an unread key is refused,
    // in a nested table as at the top.
    let unknown = ConfigLoader::new()
        .toml("[compression]\nno_such_key = 1\n")
        .load()
        .unwrap_err();
    assert!(unknown.to_string().contains("no_such_key"), "{unknown}");
    let unknown = ConfigLoader::new()
        .toml("[store]\nurl = \"sqlite://x.db\"\n")
        .load()
        .unwrap_err();
    assert!(unknown.to_string().contains("store"), "{unknown}");
}

#[test]
fn every_config_field_is_documented_in_default_toml() {
    let file = file_keys();
    let code = config_keys();
    let undocumented: Vec<_> = code.difference(&file).collect();
    let unread: Vec<_> = file.difference(&code).collect();
    assert!(
        undocumented.is_empty() && unread.is_empty(),
        "Config fields missing from default.toml: {undocumented:?}; default.toml keys Config lacks: {unread:?}"
    );
}

/// Non-test Rust source of every crate, with `#[cfg(test)]` tails cut off.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
                out.push((p.display().to_string(), code));
            }
        }
    }
    let mut out = Vec::new();
    let crates = test_support::workspace_root().join("crates");
    for e in std::fs::read_dir(&crates).unwrap().filter_map(Result::ok) {
        walk(&e.path().join("src"), &mut out);
    }
    out
}

/// Whether `code` reads `.field` (not a method call `.field(`).
fn reads_field(code: &str, field: &str) -> bool {
    let pat = format!(".{field}");
    code.match_indices(&pat).any(|(i, _)| {
        let next = code[i + pat.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '(')
    })
}

#[test]
fn every_documented_key_is_read_by_some_code() {
    let sources = sources();
    let unread: Vec<String> = file_keys()
        .into_iter()
        .filter(|key| {
            let field = key.rsplit('.').next().unwrap_or(key);
            !sources.iter().any(|(_, code)| reads_field(code, field))
        })
        .collect();
    assert!(unread.is_empty(), "keys no code reads: {unread:?}");
}
