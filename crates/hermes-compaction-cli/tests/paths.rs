//! The command-line path checks (`hermes_compaction_cli::paths`), called directly: session ids
//! by the store's rule, and two paths naming one file (moved from `src/paths.rs`).

use std::path::Path;

use hermes_compaction_cli::paths::{refuse_same_file, session_id};

fn same_file(a: &Path, b: &Path) -> bool {
    refuse_same_file(a, "--telemetry", b, "the input").is_err()
}

#[test]
fn session_ids() {
    assert!(session_id("s-1").is_ok());
    for bad in [String::new(), "a\tb".into(), "x".repeat(300)] {
        let e = session_id(&bad).unwrap_err();
        assert!(e.starts_with("invalid session id"), "{e}");
        assert!(!e.contains(&bad) || bad.is_empty());
    }
}

#[test]
fn same_files_through_links_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    std::fs::write(&a, "x").unwrap();
    let dotted = dir.path().join(".").join("a.jsonl");
    assert!(same_file(&a, &dotted));
    let missing = dir.path().join("new.log");
    assert!(same_file(&missing, &dir.path().join("./new.log")));
    assert!(!same_file(&a, &missing));
    #[cfg(unix)]
    {
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&a, &hard).unwrap();
        assert!(same_file(&hard, &a));
        let soft = dir.path().join("soft.jsonl");
        std::os::unix::fs::symlink(&a, &soft).unwrap();
        assert!(same_file(&soft, &a));
    }
    let e = refuse_same_file(&dotted, "--telemetry", &a, "the input").unwrap_err();
    assert!(e.to_string().starts_with("--telemetry "), "{e}");
    assert!(e.to_string().ends_with("; choose another file"), "{e}");
}
