//! Test helpers of the hermes-compaction workspace, written once for every test binary.
//!
//! Two things a test may need are outside the repository: the shared fixture transcripts and a
//! PostgreSQL server. Both are looked up here, from the environment:
//!
//! - `HERMES_SHARED_DIR`: the shared directory (default: `../shared` next to the workspace
//!   root); the fixtures are its `fixtures/transcripts/*.jsonl`.
//! - `HERMES_TEST_DATABASE_URL`: a PostgreSQL URL for the tests that run on both backends.
//! - `HERMES_REQUIRE_SHARED=1`, `HERMES_REQUIRE_POSTGRES=1`: turn a missing one into a
//!   failure instead of a skip (CI sets both).
//!
//! A skip prints one `skipped: …` line to the test's stderr; `cargo xtask test` then names the
//! skipped groups (it checks the same variables), so a run without them is never mistaken
//! for full coverage.
//!
//! The crate has no dependencies, is a dev-dependency only, and is never published
//! (`publish = false`; cargo drops path-only dev-dependencies when it packages a crate).
#![allow(clippy::print_stderr, reason = "a skipped test says so on stderr")]

use std::path::{Path, PathBuf};

/// The workspace root (this crate sits at `crates/test-support`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/test-support sits two levels below the workspace root")
        .to_path_buf()
}

/// The shared directory: `HERMES_SHARED_DIR`, or `../shared` next to the workspace root.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("HERMES_SHARED_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("../shared"),
    }
}

/// The shared fixture transcripts directory, or `None` after printing
/// `skipped: shared fixtures not found at DIR` (a panic with that message when
/// `HERMES_REQUIRE_SHARED=1`).
pub fn fixtures_dir() -> Option<PathBuf> {
    let dir = shared_dir().join("fixtures").join("transcripts");
    if dir.is_dir() {
        return Some(dir);
    }
    skip_or_fail(
        "HERMES_REQUIRE_SHARED",
        &format!("skipped: shared fixtures not found at {}", dir.display()),
    );
    None
}

/// The shared fixture files (`*.jsonl`), sorted by name, or `None` as [`fixtures_dir`].
///
/// # Panics
///
/// When the directory exists but holds no `.jsonl` file or cannot be listed: a broken
/// fixture set is a failure, not a skip.
pub fn fixture_files() -> Option<Vec<PathBuf>> {
    let dir = fixtures_dir()?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .jsonl fixtures in {}", dir.display());
    Some(files)
}

/// The shared fixtures as `(file name, bytes)`, sorted by name, or `None` as [`fixtures_dir`].
///
/// # Panics
///
/// As [`fixture_files`], and when a fixture cannot be read.
pub fn fixture_bytes() -> Option<Vec<(String, Vec<u8>)>> {
    let files = fixture_files()?;
    Some(
        files
            .iter()
            .map(|p| {
                let bytes =
                    std::fs::read(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
                (file_name(p), bytes)
            })
            .collect(),
    )
}

/// The file name of `path` as text (`""` when it has none).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The PostgreSQL URL for tests, or `None` after printing
/// `skipped: HERMES_TEST_DATABASE_URL not set (TEST: PostgreSQL part)` (a panic when
/// `HERMES_REQUIRE_POSTGRES=1`). `test` names the test in the skip line.
pub fn postgres_url(test: &str) -> Option<String> {
    match std::env::var("HERMES_TEST_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if required("HERMES_REQUIRE_POSTGRES") {
                panic!("HERMES_TEST_DATABASE_URL not set (HERMES_REQUIRE_POSTGRES=1)");
            }
            eprintln!("skipped: HERMES_TEST_DATABASE_URL not set ({test}: PostgreSQL part)");
            None
        }
    }
}

/// Whether the variable `name` is `1`.
fn required(name: &str) -> bool {
    std::env::var(name).as_deref() == Ok("1")
}

fn skip_or_fail(requirement: &str, msg: &str) {
    if required(requirement) {
        panic!("{msg} ({requirement}=1)");
    }
    eprintln!("{msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"), "{manifest}");
    }
}

pub mod secrets;
