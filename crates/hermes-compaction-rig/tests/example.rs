//! The example, run as a test: a long tool loop under a small window, then resumed from the
//! store with a new store handle, on SQLite and (when configured) PostgreSQL.

#[allow(dead_code)]
#[path = "../examples/rig_agent.rs"]
mod rig_agent;

async fn run_and_resume(url: &str) {
    let first = rig_agent::run(url, 0).await;
    assert!(first.passes >= 1, "{first:?}");
    assert!(first.largest_request <= rig_agent::CONTEXT);
    assert!(first.signed_checked > 0, "{first:?}");
    // A new store handle (what a new process has): the conversation goes on from the store.
    let resumed = rig_agent::run(url, rig_agent::PROMPTS).await;
    assert!(resumed.largest_request <= rig_agent::CONTEXT);
    assert!(resumed.passes >= 1, "{resumed:?}");
    assert!(resumed.signed_checked > 0, "{resumed:?}");
    assert!(
        first.summarized + resumed.summarized >= 1,
        "{first:?} {resumed:?}"
    );
}

/// Issue 33, item 7: at a 16K window with the defaults, no request of the tool loop (its
/// preamble and tool definitions counted) is over the window, over 40 prompts.
#[tokio::test]
async fn a_16k_window_at_the_defaults_never_overflows() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("rig16.db").display());
    let mut largest = 0;
    for first in (0..40).step_by(rig_agent::PROMPTS) {
        let s = rig_agent::run_with(&url, first, rig_agent::config_at(16_000)).await;
        assert!(s.largest_request <= 16_000, "{s:?}");
        largest = largest.max(s.largest_request);
    }
    assert!(
        largest > 11_200,
        "the loop went past the threshold: {largest}"
    );
}

#[tokio::test]
async fn the_example_resumes_from_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_and_resume(&format!("sqlite://{}", dir.path().join("rig.db").display())).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_example_resumes_from_postgres() {
    let Some(url) = test_support::postgres_only_url("the_example_resumes_from_postgres") else {
        return;
    };
    // A clean conversation: the example's id on this database.
    let memory = hermes_compaction_rig::CompactingMemory::connect(&url, rig_agent::config())
        .await
        .unwrap();
    memory.clear_session("rig-demo").await.unwrap();
    run_and_resume(&url).await;
}

#[cfg(not(feature = "postgres"))]
#[test]
fn the_example_resumes_from_postgres() {
    test_support::skip(
        test_support::Skip::Whole,
        "skipped: feature `postgres` is off (the_example_resumes_from_postgres)",
    );
}

/// The README's "Using it from rig" example is the crate doc's, which runs as a doctest.
#[test]
fn the_readme_example_is_the_doctest() {
    let readme = std::fs::read_to_string(test_support::workspace_root().join("README.md")).unwrap();
    let section = &readme[readme.find("## Using it from rig").expect("the section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let lib = include_str!("../src/lib.rs");
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l).to_owned() + "\n")
        .collect();
    assert!(
        doc.contains(block),
        "README block differs from the crate doc"
    );
}
