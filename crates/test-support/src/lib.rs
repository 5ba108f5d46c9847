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
//! A skip prints one `skipped: …` line to the test's stderr and, when `HERMES_SKIP_LOG` names a
//! file (`cargo xtask test` and `cargo xtask ci` set it), appends one line to it: whether the
//! whole test was skipped or only its PostgreSQL part, and which test. `cargo xtask` counts a
//! wholly skipped test as skipped rather than passed and names the skipped groups, so a run
//! without them is never mistaken for full coverage.
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
        Skip::Whole,
        &format!("skipped: shared fixtures not found at {}", dir.display()),
    );
    None
}

/// The raw agent logs directory (`fixtures/raw`: Claude Code and pi logs as the agents wrote
/// them), or `None` as [`fixtures_dir`].
pub fn raw_fixtures_dir() -> Option<PathBuf> {
    let dir = shared_dir().join("fixtures").join("raw");
    if dir.is_dir() {
        return Some(dir);
    }
    skip_or_fail(
        "HERMES_REQUIRE_SHARED",
        Skip::Whole,
        &format!("skipped: raw agent logs not found at {}", dir.display()),
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

/// The PostgreSQL URL for the PostgreSQL part of a test that also runs on SQLite, or `None`
/// after printing `skipped: HERMES_TEST_DATABASE_URL not set (TEST: PostgreSQL part)` (a panic
/// when `HERMES_REQUIRE_POSTGRES=1`). `test` names the test in the skip line. The test still
/// counts as passed (it ran its SQLite part); `cargo xtask` says how many ran without their
/// PostgreSQL part.
pub fn postgres_url(test: &str) -> Option<String> {
    postgres(test, Skip::Part)
}

/// The PostgreSQL URL for a test that runs on PostgreSQL only, or `None` after printing
/// `skipped: HERMES_TEST_DATABASE_URL not set (TEST)` (a panic when
/// `HERMES_REQUIRE_POSTGRES=1`): the whole test is then counted as skipped.
pub fn postgres_only_url(test: &str) -> Option<String> {
    postgres(test, Skip::Whole)
}

/// How much of a test a skip leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The test did nothing else: it is counted as skipped, not passed.
    Whole,
    /// Only its PostgreSQL part: it ran the rest (SQLite) and counts as passed.
    Part,
}

/// Says that (part of) the running test is skipped: prints `msg` to stderr and records it in
/// `HERMES_SKIP_LOG` (see the crate docs). For skips this crate does not look up itself, e.g.
/// a cargo feature that is off.
pub fn skip(kind: Skip, msg: &str) {
    eprintln!("{msg}");
    let Some(log) = std::env::var_os("HERMES_SKIP_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let kind = match kind {
        Skip::Whole => "whole",
        Skip::Part => "part",
    };
    // The test binary (without cargo's hash suffix) and libtest's thread name (the test's
    // path) identify the test; a test run on the main thread falls back to the message.
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
            _ => s,
        })
        .unwrap_or_default();
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => msg.to_owned(),
    };
    let line = format!("{kind}\t{binary}::{test}\n").replace(['\r'], " ");
    use std::io::Write as _;
    // One short append per skip: O_APPEND keeps lines from parallel tests whole.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

fn postgres(test: &str, kind: Skip) -> Option<String> {
    match std::env::var("HERMES_TEST_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if required("HERMES_REQUIRE_POSTGRES") {
                panic!("HERMES_TEST_DATABASE_URL not set (HERMES_REQUIRE_POSTGRES=1)");
            }
            let what = match kind {
                Skip::Whole => test.to_owned(),
                Skip::Part => format!("{test}: PostgreSQL part"),
            };
            skip(
                kind,
                &format!("skipped: HERMES_TEST_DATABASE_URL not set ({what})"),
            );
            None
        }
    }
}

/// Whether the variable `name` is `1`.
fn required(name: &str) -> bool {
    std::env::var(name).as_deref() == Ok("1")
}

fn skip_or_fail(requirement: &str, kind: Skip, msg: &str) {
    if required(requirement) {
        panic!("{msg} ({requirement}=1)");
    }
    skip(kind, msg);
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
