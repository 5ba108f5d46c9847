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

/// Runs `compact` of a small session with `--output out` (issue 33, item 3).
#[cfg(unix)]
fn compact_to(dir: &Path, out: &Path) -> std::process::Output {
    let input = crate::common::write_jsonl(dir, "in.jsonl", &crate::common::tool_session(4, 30));
    crate::common::run(&[
        "compact",
        "--input",
        crate::common::s(&input),
        "--output",
        crate::common::s(out),
        "--mode",
        "prune",
    ])
}

/// `mknod PATH KIND MAJOR MINOR`, or `None` with a skip line when this process may not make
/// device nodes (not root, or a container without the capability).
#[cfg(unix)]
fn mknod(path: &Path, kind: &str, major: u32, minor: u32) -> Option<()> {
    let made = std::process::Command::new("mknod")
        .arg(path)
        .args([kind, &major.to_string(), &minor.to_string()])
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        eprintln!("skipped: cannot make a device node with mknod (needs root)");
    }
    made.then_some(())
}

#[cfg(unix)]
#[test]
fn a_character_device_output_is_written_through_not_replaced() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    if mknod(&null, "c", 1, 3).is_none() {
        return;
    }
    let before = std::fs::metadata(&null).unwrap();
    let o = compact_to(dir.path(), &null);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::common::texts(&o));
    let after = std::fs::symlink_metadata(&null).unwrap();
    assert!(after.file_type().is_char_device(), "replaced by a file");
    assert_eq!((after.ino(), after.rdev()), (before.ino(), before.rdev()));
    // Through a symbolic link too.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    let o = compact_to(dir.path(), &link);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::common::texts(&o));
    assert!(
        std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device()
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    // The telemetry lines go through it too (a device has nothing to sync).
    let input = dir.path().join("in.jsonl");
    let o = crate::common::run(&[
        "compact",
        "--input",
        crate::common::s(&input),
        "--output",
        crate::common::s(&dir.path().join("ok.jsonl")),
        "--mode",
        "prune",
        "--telemetry",
        crate::common::s(&null),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::common::texts(&o));
    assert!(
        std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_output_is_written_through_to_its_reader() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo");
    // The reader opens the FIFO (which blocks until the writer opens it) and reads to the end.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(&fifo).unwrap())
    };
    let o = compact_to(dir.path(), &fifo);
    assert_eq!(o.status.code(), Some(0), "{:?}", crate::common::texts(&o));
    let text = reader.join().unwrap();
    assert_eq!(text.lines().count(), 17, "{text}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[cfg(unix)]
#[test]
fn a_block_device_socket_or_directory_is_refused_with_exit_2() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let subdir = dir.path().join("sub");
    std::fs::create_dir(&subdir).unwrap();
    let mut cases = vec![
        (socket.clone(), "a socket"),
        (subdir.clone(), "a directory"),
    ];
    // A loop device number no test machine uses: it is never opened, only refused.
    let block = dir.path().join("block");
    if mknod(&block, "b", 7, 250).is_some() {
        cases.push((block.clone(), "a block device"));
    }
    for (path, what) in &cases {
        let o = compact_to(dir.path(), path);
        let (_, stderr) = crate::common::texts(&o);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--output {}: is {what}", path.display())),
            "{stderr}"
        );
        // --telemetry and simulate's outputs are refused the same way.
        let input = dir.path().join("in.jsonl");
        let o = crate::common::run(&[
            "compact",
            "--input",
            crate::common::s(&input),
            "--output",
            crate::common::s(&dir.path().join("ok.jsonl")),
            "--telemetry",
            crate::common::s(path),
        ]);
        let (_, stderr) = crate::common::texts(&o);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--telemetry"), "{stderr}");
        let o = crate::common::run(&[
            "simulate",
            "--input",
            crate::common::s(&input),
            "--json",
            crate::common::s(path),
        ]);
        let (_, stderr) = crate::common::texts(&o);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--json"), "{stderr}");
    }
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert!(subdir.is_dir());
    if cases.len() == 3 {
        assert!(
            std::fs::symlink_metadata(&block)
                .unwrap()
                .file_type()
                .is_block_device()
        );
    }
    assert!(!dir.path().join("ok.jsonl").exists());
}

/// A SQLite `--db` naming a device, a FIFO, a socket or a directory is refused with exit 2
/// before SQLite opens it: nothing is created beside it (SQLite would write `NAME-journal`
/// next to `/dev/null`) and the node stays what it was; a plain path and a `sqlite:` URL alike.
#[cfg(unix)]
#[test]
fn a_db_that_is_not_a_regular_file_is_refused_and_nothing_is_written_beside_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let input =
        crate::common::write_jsonl(dir.path(), "in.jsonl", &crate::common::tool_session(2, 10));
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let socket = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let subdir = dir.path().join("sub");
    std::fs::create_dir(&subdir).unwrap();
    let mut cases = vec![
        (fifo.clone(), "a FIFO"),
        (socket.clone(), "a socket"),
        (subdir.clone(), "a directory"),
    ];
    let null = dir.path().join("null");
    if mknod(&null, "c", 1, 3).is_some() {
        cases.push((null.clone(), "a character device"));
    }
    let kinds = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
    for (path, what) in &cases {
        let before = kinds(path);
        for db in [
            crate::common::s(path).to_owned(),
            format!("sqlite:{}", crate::common::s(path)),
        ] {
            for args in [
                vec!["session", "import", "--db", &db, crate::common::s(&input)],
                vec!["session", "history", "--db", &db, "--session", "s"],
            ] {
                let o = crate::common::run(&args);
                let (_, stderr) = crate::common::texts(&o);
                assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
                assert!(
                    stderr.contains(&format!("--db {}: is {what}", path.display())),
                    "{args:?}: {stderr}"
                );
            }
        }
        let after = kinds(path);
        assert_eq!(
            (
                after.is_fifo(),
                after.is_socket(),
                after.is_dir(),
                after.is_char_device()
            ),
            (
                before.is_fifo(),
                before.is_socket(),
                before.is_dir(),
                before.is_char_device()
            ),
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names
            .iter()
            .all(|n| !n.contains("-journal") && !n.contains("-wal")),
        "{names:?}"
    );
    assert!(std::fs::read_dir(&subdir).unwrap().next().is_none());
}
